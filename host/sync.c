/* Signals and channels in generation-checked pools. */
#include "sync.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct signal_ {
  weft_slot h;
  weft_wlist waiters;
  uint8_t latched;
} signal_;

/* A channel buffers payloads in a ring that grows geometrically up to its
   capacity; it never shrinks while the channel lives. */
typedef struct channel {
  weft_slot h;
  weft_wlist senders, receivers;
  uint64_t *ring;
  uint32_t head, count, cap_ring, capacity;
  uint8_t closed;
} channel;

struct weft_sync {
  weft_pool signals, channels;
  weft_alloc_fn alloc;
  void *alloc_ud;
};

weft_sync *weft__sync_create(weft_alloc_fn alloc, void *alloc_ud) {
  if (!alloc) alloc = weft__default_alloc;
  weft_sync *y = alloc(alloc_ud, NULL, 0, sizeof *y);
  if (!y) return NULL;
  memset(y, 0, sizeof *y);
  y->alloc = alloc;
  y->alloc_ud = alloc_ud;
  weft__pool_init(&y->signals, sizeof(signal_), 0, alloc, alloc_ud);
  weft__pool_init(&y->channels, sizeof(channel), 0, alloc, alloc_ud);
  return y;
}

int weft__sync_destroy(weft_sync *y) {
  if (!y) return 0;
  int live = (int)weft__sync_count(y);
  for (uint32_t i = 0; i < weft__pool_capacity(&y->channels); i++) {
    channel *c = weft__pool_at(&y->channels, i);
    if (weft__slot_live(c) && c->ring)
      y->alloc(y->alloc_ud, c->ring, sizeof(uint64_t) * c->cap_ring, 0);
  }
  weft__pool_destroy(&y->signals);
  weft__pool_destroy(&y->channels);
  y->alloc(y->alloc_ud, y, sizeof *y, 0);
  return live;
}

uint32_t weft__sync_count(const weft_sync *y) { return y->signals.used + y->channels.used; }

/* ---- signals ---- */

int weft__signal_create(weft_sync *y, weft_id *out) {
  return weft__pool_alloc(&y->signals, out) ? WEFT_OK : WEFT_ENOMEM;
}

void weft__signal_destroy(weft_sync *y, weft_id id) { weft__pool_free(&y->signals, id); }

int weft__signal_live(const weft_sync *y, weft_id id) {
  return weft__pool_get(&y->signals, id) != NULL;
}

weft_wlist *weft__signal_waiters(weft_sync *y, weft_id id) {
  signal_ *s = weft__pool_get(&y->signals, id);
  return s ? &s->waiters : NULL;
}

int weft__signal_set_latched(weft_sync *y, weft_id id, int on) {
  signal_ *s = weft__pool_get(&y->signals, id);
  if (!s) return WEFT_ESTALE;
  s->latched = (uint8_t)(on != 0);
  return WEFT_OK;
}

int weft__signal_latched(const weft_sync *y, weft_id id) {
  signal_ *s = weft__pool_get(&y->signals, id);
  return s ? s->latched : 0;
}

/* ---- channels ---- */

int weft__channel_create(weft_sync *y, uint32_t capacity, weft_id *out) {
  channel *c = weft__pool_alloc(&y->channels, out);
  if (!c) return WEFT_ENOMEM;
  c->capacity = capacity;
  return WEFT_OK;
}

void weft__channel_destroy(weft_sync *y, weft_id id, void (*drop)(void *ud, uint64_t v), void *ud) {
  channel *c = weft__pool_get(&y->channels, id);
  if (!c) return;
  for (uint32_t i = 0; drop && c->ring && i < c->count; i++)
    drop(ud, c->ring[(c->head + i) % c->cap_ring]);
  if (c->ring) y->alloc(y->alloc_ud, c->ring, sizeof(uint64_t) * c->cap_ring, 0);
  weft__pool_free(&y->channels, id);
}

int weft__channel_live(const weft_sync *y, weft_id id) {
  return weft__pool_get(&y->channels, id) != NULL;
}

/* Makes room for one more payload; the ring may exceed the capacity by
   the values given back with weft__channel_unshift. */
static int reserve(weft_sync *y, channel *c) {
  if (c->count == c->cap_ring) {
    uint32_t n = c->cap_ring ? c->cap_ring * 2 : 8;
    if (n > c->capacity && c->count < c->capacity) n = c->capacity;
    uint64_t *r = y->alloc(y->alloc_ud, NULL, 0, sizeof(uint64_t) * n);
    if (!r) return WEFT_ENOMEM;
    for (uint32_t i = 0; i < c->count; i++) r[i] = c->ring[(c->head + i) % c->cap_ring];
    if (c->ring) y->alloc(y->alloc_ud, c->ring, sizeof(uint64_t) * c->cap_ring, 0);
    c->ring = r;
    c->cap_ring = n;
    c->head = 0;
  }
  return WEFT_OK;
}

int weft__channel_push(weft_sync *y, weft_id id, uint64_t v) {
  channel *c = weft__pool_get(&y->channels, id);
  if (!c) return WEFT_ESTALE;
  if (c->closed) return WEFT_ECLOSED;
  if (c->count >= c->capacity) return WEFT_ELIMIT;
  if (reserve(y, c) != WEFT_OK) return WEFT_ENOMEM;
  c->ring[(c->head + c->count++) % c->cap_ring] = v;
  return WEFT_OK;
}

int weft__channel_unshift(weft_sync *y, weft_id id, uint64_t v) {
  channel *c = weft__pool_get(&y->channels, id);
  if (!c) return WEFT_ESTALE;
  if (reserve(y, c) != WEFT_OK) return WEFT_ENOMEM;
  c->head = (c->head + c->cap_ring - 1) % c->cap_ring;
  c->ring[c->head] = v;
  c->count++;
  return WEFT_OK;
}

int weft__channel_pop(weft_sync *y, weft_id id, uint64_t *v) {
  channel *c = weft__pool_get(&y->channels, id);
  if (!c) return WEFT_ESTALE;
  if (c->count == 0) return WEFT_ELIMIT;
  *v = c->ring[c->head];
  c->head = (c->head + 1) % c->cap_ring;
  c->count--;
  return WEFT_OK;
}

int weft__channel_close(weft_sync *y, weft_id id) {
  channel *c = weft__pool_get(&y->channels, id);
  if (!c) return WEFT_ESTALE;
  c->closed = 1;
  return WEFT_OK;
}

int weft__channel_closed(const weft_sync *y, weft_id id) {
  channel *c = weft__pool_get(&y->channels, id);
  return c ? c->closed : 1;
}

uint32_t weft__channel_count(const weft_sync *y, weft_id id) {
  channel *c = weft__pool_get(&y->channels, id);
  return c ? c->count : 0;
}

uint32_t weft__channel_capacity(const weft_sync *y, weft_id id) {
  channel *c = weft__pool_get(&y->channels, id);
  return c ? c->capacity : 0;
}

weft_wlist *weft__channel_senders(weft_sync *y, weft_id id) {
  channel *c = weft__pool_get(&y->channels, id);
  return c ? &c->senders : NULL;
}

weft_wlist *weft__channel_receivers(weft_sync *y, weft_id id) {
  channel *c = weft__pool_get(&y->channels, id);
  return c ? &c->receivers : NULL;
}

/* ---- saving ---- */

#define KIND_SHIFT 28 /* a list's name: its kind above (bits 28, 29), the slot's index below */
enum { L_SIGNAL = 1, L_SENDERS, L_RECEIVERS };

static int channel_out(void *ud, void *copy) {
  (void)ud;
  ((channel *)copy)->ring = NULL; /* written after the pool */
  return 1;
}

static void channel_in(void *ud, void *slot) {
  (void)ud;
  ((channel *)slot)->ring = NULL; /* not an address: the ring is read after the pool */
}

int weft__sync_save(const weft_sync *y, weft_wire *w) {
  if (!weft__pool_save(&y->signals, w, NULL, NULL) ||
      !weft__pool_save(&y->channels, w, channel_out, NULL))
    return 0;
  for (uint32_t i = 0; i < weft__pool_capacity(&y->channels); i++) {
    channel *c = weft__pool_at(&y->channels, i);
    if (!weft__slot_live(c)) continue;
    for (uint32_t k = 0; k < c->count; k++) /* in order, from the front */
      if (!weft__wire_u64(w, &c->ring[(c->head + k) % c->cap_ring])) return 0;
  }
  return 1;
}

/* Refuses a load (why: w->err's, NULL when it is set): the live channels
   from index i on, whose rings were not read, are made empty and
   ringless, so that closing the state (finalizers may use them) reads no
   count over a ring that is not there. */
static int refuse(weft_sync *y, uint32_t i, weft_wire *w, const char *why) {
  for (; i < weft__pool_capacity(&y->channels); i++) {
    channel *c = weft__pool_at(&y->channels, i);
    if (!weft__slot_live(c)) continue;
    c->ring = NULL;
    c->head = c->count = c->cap_ring = 0;
  }
  return why ? weft__wire_fail(w, why) : 0;
}

int weft__sync_load(weft_sync *y, weft_wire *w) {
  if (y->signals.nchunks || y->channels.nchunks)
    return weft__wire_fail(w, "signals and channels to load into are not fresh");
  if (!weft__pool_load(&y->signals, w, NULL, NULL) ||
      !weft__pool_load(&y->channels, w, channel_in, NULL))
    return refuse(y, 0, w, NULL);
  for (uint32_t i = 0; i < weft__pool_capacity(&y->signals); i++) {
    signal_ *g = weft__pool_at(&y->signals, i);
    if (weft__slot_live(g) && g->latched > 1) return refuse(y, 0, w, "a signal is damaged");
  }
  for (uint32_t i = 0; i < weft__pool_capacity(&y->channels); i++) {
    channel *c = weft__pool_at(&y->channels, i);
    if (!weft__slot_live(c)) continue;
    if (c->count > c->cap_ring || c->cap_ring > (1u << 28) || c->closed > 1)
      return refuse(y, i, w, "a channel is damaged");
    uint32_t cap = c->cap_ring, n = c->count;
    c->cap_ring = c->count = c->head = 0; /* nothing to free until the ring is made */
    if (!cap) {
      if (n) return refuse(y, i + 1, w, "a channel is damaged");
      continue;
    }
    c->ring = y->alloc(y->alloc_ud, NULL, 0, sizeof(uint64_t) * cap);
    if (!c->ring) return refuse(y, i + 1, w, "out of memory");
    c->cap_ring = cap;
    for (; c->count < n; c->count++)
      if (!weft__wire_u64(w, &c->ring[c->count])) return refuse(y, i + 1, w, NULL);
  }
  return 1;
}

/* The index of the slot of pool p holding address a at offset off, + 1;
   0: none. */
static uint32_t slot_of(const weft_pool *p, const void *a, size_t off) {
  size_t bytes = (size_t)p->elem_size * WEFT_POOL_CHUNK;
  for (uint32_t c = 0; c < p->nchunks; c++) {
    const char *base = p->chunks[c];
    if ((const char *)a < base || (const char *)a >= base + bytes) continue;
    size_t at = (size_t)((const char *)a - base);
    uint32_t i = c * WEFT_POOL_CHUNK + (uint32_t)(at / p->elem_size);
    return at % p->elem_size == off && i < (1u << KIND_SHIFT) ? i + 1 : 0;
  }
  return 0;
}

uint32_t weft__sync_list_name(const weft_sync *y, const weft_wlist *l) {
  uint32_t i;
  if ((i = slot_of(&y->signals, l, offsetof(signal_, waiters))) != 0)
    return (uint32_t)L_SIGNAL << KIND_SHIFT | (i - 1);
  if ((i = slot_of(&y->channels, l, offsetof(channel, senders))) != 0)
    return (uint32_t)L_SENDERS << KIND_SHIFT | (i - 1);
  if ((i = slot_of(&y->channels, l, offsetof(channel, receivers))) != 0)
    return (uint32_t)L_RECEIVERS << KIND_SHIFT | (i - 1);
  return 0;
}

weft_wlist *weft__sync_list_at(weft_sync *y, uint32_t name) {
  uint32_t kind = name >> KIND_SHIFT, i = name & ((1u << KIND_SHIFT) - 1);
  const weft_pool *p = kind == L_SIGNAL ? &y->signals : &y->channels;
  if (kind < L_SIGNAL || kind > L_RECEIVERS || i >= weft__pool_capacity(p)) return NULL;
  void *e = weft__pool_at(p, i);
  if (!weft__slot_live(e)) return NULL;
  if (kind == L_SIGNAL) return &((signal_ *)e)->waiters;
  return kind == L_SENDERS ? &((channel *)e)->senders : &((channel *)e)->receivers;
}

int weft__sync_check(const weft_sync *y, const weft_sched *s) {
  for (uint32_t i = 0; i < weft__pool_capacity(&y->signals); i++) {
    signal_ *g = weft__pool_at(&y->signals, i);
    if (weft__slot_live(g) && !weft__wlist_check(s, &g->waiters)) return 0;
  }
  for (uint32_t i = 0; i < weft__pool_capacity(&y->channels); i++) {
    channel *c = weft__pool_at(&y->channels, i);
    if (weft__slot_live(c) &&
        (!weft__wlist_check(s, &c->senders) || !weft__wlist_check(s, &c->receivers)))
      return 0;
  }
  return 1;
}
