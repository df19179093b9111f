/* Slot pools with generation-checked handles. */
#include "pool.h"

#include <stdlib.h>
#include <string.h>

void *weft__default_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}

char *weft__str_join(weft_alloc_fn alloc, void *alloc_ud, const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), sep = la && lb;
  char *s = alloc(alloc_ud, NULL, 0, la + sep + lb + 1);
  if (!s) return NULL;
  memcpy(s, a, la);
  size_t k = la;
  if (sep) s[k++] = '/';
  memcpy(s + k, b, lb + 1);
  return s;
}

void weft__str_free(weft_alloc_fn alloc, void *alloc_ud, char *s) {
  if (s) alloc(alloc_ud, s, strlen(s) + 1, 0);
}

void weft__pool_init(weft_pool *p, uint32_t elem_size, uint32_t limit, weft_alloc_fn alloc,
                     void *alloc_ud) {
  memset(p, 0, sizeof *p);
  p->elem_size = (elem_size + 7u) & ~7u;
  p->limit = limit ? limit : UINT32_MAX / 2;
  p->alloc = alloc;
  p->alloc_ud = alloc_ud;
}

void weft__pool_destroy(weft_pool *p) {
  for (uint32_t i = 0; i < p->nchunks; i++)
    p->alloc(p->alloc_ud, p->chunks[i], (size_t)p->elem_size * WEFT_POOL_CHUNK, 0);
  if (p->chunks) p->alloc(p->alloc_ud, p->chunks, sizeof(void *) * p->cap_chunks, 0);
  p->chunks = NULL;
  p->nchunks = p->cap_chunks = 0;
  p->free_head = 0;
  p->used = 0;
}

/* Adds one chunk and threads its slots onto the free list in index order. */
static int grow(weft_pool *p) {
  if (p->nchunks == p->cap_chunks) {
    uint32_t ncap = p->cap_chunks ? p->cap_chunks * 2 : 4;
    void **nc =
        p->alloc(p->alloc_ud, p->chunks, sizeof(void *) * p->cap_chunks, sizeof(void *) * ncap);
    if (!nc) return 0;
    p->chunks = nc;
    p->cap_chunks = ncap;
  }
  char *chunk = p->alloc(p->alloc_ud, NULL, 0, (size_t)p->elem_size * WEFT_POOL_CHUNK);
  if (!chunk) return 0;
  uint32_t base = p->nchunks * WEFT_POOL_CHUNK;
  p->chunks[p->nchunks++] = chunk;
  for (uint32_t i = 0; i < WEFT_POOL_CHUNK; i++) {
    weft_slot *s = (weft_slot *)(chunk + (size_t)i * p->elem_size);
    s->gen = 0;
    s->next_free = (i + 1 < WEFT_POOL_CHUNK) ? base + i + 2 : p->free_head;
  }
  p->free_head = base + 1;
  return 1;
}

void *weft__pool_alloc(weft_pool *p, weft_id *id) {
  if (p->used >= p->limit) return NULL;
  if (!p->free_head && !grow(p)) return NULL;
  uint32_t idx = p->free_head - 1;
  weft_slot *s = weft__pool_at(p, idx);
  p->free_head = s->next_free;
  uint32_t gen = s->gen + 1;
  if (gen == UINT32_MAX) gen = 1; /* wraps only after 2^31 reuses of one slot */
  memset(s, 0, p->elem_size);
  s->gen = gen;
  s->next_free = idx;
  p->used++;
  *id = WEFT_ID_MAKE(idx, gen);
  return s;
}

void weft__pool_free(weft_pool *p, weft_id id) {
  weft_slot *s = weft__pool_get(p, id);
  if (!s) return;
  s->gen++;
  s->next_free = p->free_head;
  p->free_head = WEFT_ID_INDEX(id) + 1;
  p->used--;
}

void *weft__side_make(weft_side *t, uint32_t idx, weft_alloc_fn alloc, void *alloc_ud) {
  uint32_t c = idx >> WEFT_POOL_CHUNK_SHIFT;
  if (c >= t->nblocks) {
    uint32_t n = c + 1 > 2 * t->nblocks ? c + 1 : 2 * t->nblocks;
    void **v = alloc(alloc_ud, t->blocks, sizeof *v * t->nblocks, sizeof *v * n);
    if (!v) return NULL;
    memset(v + t->nblocks, 0, sizeof *v * (n - t->nblocks));
    t->blocks = v;
    t->nblocks = n;
  }
  if (!t->blocks[c]) { /* zeroed: a save writes what an element holds, in use or not */
    t->blocks[c] = alloc(alloc_ud, NULL, 0, (size_t)t->elem_size * WEFT_POOL_CHUNK);
    if (!t->blocks[c]) return NULL;
    memset(t->blocks[c], 0, (size_t)t->elem_size * WEFT_POOL_CHUNK);
  }
  return weft__side_at(t, idx);
}

size_t weft__side_bytes(const weft_side *t) {
  size_t n = sizeof(void *) * t->nblocks;
  for (uint32_t c = 0; c < t->nblocks; c++)
    if (t->blocks[c]) n += (size_t)t->elem_size * WEFT_POOL_CHUNK;
  return n;
}

void weft__side_free(weft_side *t, weft_alloc_fn alloc, void *alloc_ud) {
  for (uint32_t c = 0; c < t->nblocks; c++)
    if (t->blocks[c]) alloc(alloc_ud, t->blocks[c], (size_t)t->elem_size * WEFT_POOL_CHUNK, 0);
  if (t->blocks) alloc(alloc_ud, t->blocks, sizeof(void *) * t->nblocks, 0);
  t->blocks = NULL;
  t->nblocks = 0;
}

/* A slot goes out as its header (its generation and next free slot),
   then, when it is live, a bit for each byte of the rest that is not
   zero, and those bytes. A free slot is its header alone: the rest of
   it is not state, a slot being cleared when it is taken. A run of
   slots never taken, each still linked to the next as grow left it, is
   one header: generation RUN (no slot's: a free one's is even) and the
   run's length. */
#define RUN UINT32_MAX
#define BODY(p) ((p)->elem_size - sizeof(weft_slot))
#define PACKED(p) (sizeof(weft_slot) + (BODY(p) + 7) / 8 + BODY(p)) /* at most */

/* Whether slot index idx was never taken and links to the next one. */
static int untaken(const weft_pool *p, uint32_t idx) {
  const weft_slot *s = weft__pool_at(p, idx);
  return s->gen == 0 && s->next_free == idx + 2 && (idx + 1) % WEFT_POOL_CHUNK != 0;
}

/* Packs the live slot at slot into out: its bytes as written. */
static size_t pack(const weft_pool *p, const unsigned char *slot, unsigned char *out) {
  size_t nb = BODY(p), nmask = (nb + 7) / 8, n = sizeof(weft_slot) + nmask;
  const unsigned char *body = slot + sizeof(weft_slot);
  memcpy(out, slot, sizeof(weft_slot));
  unsigned char *mask = out + sizeof(weft_slot);
  for (size_t g = 0; g < nmask; g++) { /* eight bytes a mask byte */
    size_t k = nb - 8 * g < 8 ? nb - 8 * g : 8;
    uint64_t word = 0;
    memcpy(&word, body + 8 * g, k);
    unsigned m = 0;
    for (size_t i = 0; word && i < k; i++)
      if (body[8 * g + i]) {
        m |= 1u << i;
        out[n++] = body[8 * g + i];
      }
    mask[g] = (unsigned char)m;
  }
  return n;
}

int weft__pool_save(const weft_pool *p, weft_wire *w, int (*out)(void *ud, void *copy), void *ud) {
  uint32_t head[4] = {p->elem_size, p->nchunks, p->free_head, p->used};
  if (!weft__wire_bytes(w, head, sizeof head)) return 0;
  size_t size = p->elem_size + PACKED(p); /* a copy, then it packed */
  unsigned char *buf = p->nchunks ? p->alloc(p->alloc_ud, NULL, 0, size) : NULL;
  if (p->nchunks && !buf) return weft__wire_fail(w, "out of memory");
  unsigned char *packed = buf ? buf + p->elem_size : NULL;
  int ok = 1;
  for (uint32_t c = 0; ok && c < p->nchunks; c++) {
    const unsigned char *chunk = p->chunks[c];
    for (uint32_t i = 0; ok && i < WEFT_POOL_CHUNK; i++) {
      const unsigned char *slot = chunk + (size_t)i * p->elem_size;
      uint32_t idx = c * WEFT_POOL_CHUNK + i, n = 0;
      while (i + n < WEFT_POOL_CHUNK && untaken(p, idx + n)) n++;
      if (n > 1) {
        weft_slot run = {RUN, n};
        ok = weft__wire_bytes(w, &run, sizeof run);
        i += n - 1;
        continue;
      }
      if (!weft__slot_live(slot)) {
        ok = weft__wire_bytes(w, (void *)slot, sizeof(weft_slot));
        continue;
      }
      if (out) {
        memcpy(buf, slot, p->elem_size);
        if (!(ok = out(ud, buf))) break;
        slot = buf;
      }
      ok = weft__wire_bytes(w, packed, pack(p, slot, packed));
    }
  }
  if (buf) p->alloc(p->alloc_ud, buf, size, 0);
  return ok;
}

/* A chunk's slots as weft__pool_save wrote them; tmp holds a slot's
   packed bytes. */
static int chunk_in(weft_pool *p, weft_wire *w, uint32_t base, unsigned char *chunk,
                    unsigned char *tmp) {
  size_t nb = BODY(p), nmask = (nb + 7) / 8;
  memset(chunk, 0, (size_t)p->elem_size * WEFT_POOL_CHUNK);
  for (uint32_t i = 0; i < WEFT_POOL_CHUNK; i++) {
    unsigned char *slot = chunk + (size_t)i * p->elem_size, *body = slot + sizeof(weft_slot);
    if (!weft__wire_bytes(w, slot, sizeof(weft_slot))) return 0;
    weft_slot *h = (weft_slot *)slot;
    if (h->gen == RUN) { /* slots never taken */
      uint32_t n = h->next_free;
      if (n < 2 || n > WEFT_POOL_CHUNK - i) return weft__wire_fail(w, "a pool's run is damaged");
      for (uint32_t k = 0; k < n; k++, i++) {
        h = (weft_slot *)(chunk + (size_t)i * p->elem_size);
        h->gen = 0;
        h->next_free = base + i + 2;
      }
      i--;
      continue;
    }
    if (!weft__slot_live(slot)) continue;
    const unsigned char *mask = tmp, *byte = tmp + nmask;
    size_t n = 0;
    if (!weft__wire_bytes(w, tmp, nmask)) return 0;
    for (size_t k = 0; k < nmask; k++)
      for (unsigned b = mask[k]; b; b &= b - 1) n++;
    if (n > nb || !weft__wire_bytes(w, tmp + nmask, n)) return 0;
    for (size_t g = 0; g < nmask; g++)
      for (unsigned m = mask[g], b = 0; m; m >>= 1, b++)
        if ((m & 1) && 8 * g + b < nb) body[8 * g + b] = *byte++;
  }
  return 1;
}

int weft__pool_load(weft_pool *p, weft_wire *w, void (*in)(void *ud, void *slot), void *ud) {
  uint32_t head[4];
  if (!weft__wire_bytes(w, head, sizeof head)) return 0;
  if (p->nchunks || p->chunks) return weft__wire_fail(w, "a pool to load into is not empty");
  if (head[0] != p->elem_size) return weft__wire_fail(w, "a pool's slots are not this build's");
  if (head[1] > p->limit / WEFT_POOL_CHUNK + 1 || head[1] > (1u << 22))
    return weft__wire_fail(w, "a pool is larger than its limit");
  uint32_t cap = 4;
  while (cap < head[1]) cap *= 2;
  p->chunks = p->alloc(p->alloc_ud, NULL, 0, sizeof(void *) * cap);
  if (!p->chunks) return weft__wire_fail(w, "out of memory");
  p->cap_chunks = cap;
  size_t bytes = (size_t)p->elem_size * WEFT_POOL_CHUNK, tsize = PACKED(p);
  unsigned char *tmp = head[1] ? p->alloc(p->alloc_ud, NULL, 0, tsize) : NULL;
  if (head[1] && !tmp) return weft__wire_fail(w, "out of memory");
  int ok = 1;
  for (uint32_t c = 0; ok && c < head[1]; c++) {
    unsigned char *chunk = p->alloc(p->alloc_ud, NULL, 0, bytes);
    if (!chunk) {
      ok = weft__wire_fail(w, "out of memory");
      break;
    }
    p->chunks[p->nchunks++] = chunk;
    ok = chunk_in(p, w, c * WEFT_POOL_CHUNK, chunk, tmp);
    for (uint32_t i = 0; in && i < WEFT_POOL_CHUNK; i++) in(ud, chunk + (size_t)i * p->elem_size);
  }
  if (tmp) p->alloc(p->alloc_ud, tmp, tsize, 0);
  if (!ok) return 0;
  p->free_head = head[2];
  p->used = head[3];
  uint32_t n = weft__pool_capacity(p), nfree = 0, live = 0;
  for (uint32_t f = p->free_head; f; f = ((weft_slot *)weft__pool_at(p, f - 1))->next_free)
    if (f - 1 >= n || nfree++ >= n || weft__slot_live(weft__pool_at(p, f - 1)))
      return weft__wire_fail(w, "a pool's free list is broken");
  for (uint32_t i = 0; i < n; i++) {
    weft_slot *sl = weft__pool_at(p, i);
    if (!weft__slot_live(sl)) continue;
    if (sl->next_free != i) return weft__wire_fail(w, "a live slot does not name itself");
    live++;
  }
  if (live != p->used || live + nfree != n || p->used > p->limit)
    return weft__wire_fail(w, "a pool's counts do not add up");
  return 1;
}

/* Whether the n bytes at p are all zero. */
static int zero(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

/* A block: a bit for each element that is not all zero bytes, then those
   elements (the others are zero when loaded). */
int weft__side_save(const weft_side *t, weft_wire *w) {
  uint32_t head[2] = {t->elem_size, t->nblocks};
  if (!weft__wire_bytes(w, head, sizeof head)) return 0;
  for (uint32_t b = 0; b < t->nblocks; b++) {
    const unsigned char *block = t->blocks[b];
    uint32_t has = block != NULL;
    if (!weft__wire_u32(w, &has)) return 0;
    if (!has) continue;
    unsigned char bits[WEFT_POOL_CHUNK / 8] = {0};
    for (uint32_t i = 0; i < WEFT_POOL_CHUNK; i++)
      if (!zero(block + (size_t)i * t->elem_size, t->elem_size)) bits[i / 8] |= 1u << (i % 8);
    if (!weft__wire_bytes(w, bits, sizeof bits)) return 0;
    for (uint32_t i = 0; i < WEFT_POOL_CHUNK; i++)
      if ((bits[i / 8] >> (i % 8) & 1) &&
          !weft__wire_bytes(w, (void *)(block + (size_t)i * t->elem_size), t->elem_size))
        return 0;
  }
  return 1;
}

int weft__side_load(weft_side *t, weft_wire *w, uint32_t max_blocks, weft_alloc_fn alloc,
                    void *alloc_ud) {
  uint32_t head[2];
  if (!weft__wire_bytes(w, head, sizeof head)) return 0;
  if (t->nblocks) return weft__wire_fail(w, "side data to load into is not empty");
  if (head[0] != t->elem_size) return weft__wire_fail(w, "side data is not this build's");
  if (head[1] > max_blocks) return weft__wire_fail(w, "side data is larger than its pool");
  for (uint32_t b = 0; b < head[1]; b++) {
    uint32_t has;
    if (!weft__wire_u32(w, &has)) return 0;
    if (!has) continue;
    unsigned char *e = weft__side_make(t, b * WEFT_POOL_CHUNK, alloc, alloc_ud);
    if (!e) return weft__wire_fail(w, "out of memory");
    unsigned char bits[WEFT_POOL_CHUNK / 8];
    if (!weft__wire_bytes(w, bits, sizeof bits)) return 0;
    for (uint32_t i = 0; i < WEFT_POOL_CHUNK; i++)
      if ((bits[i / 8] >> (i % 8) & 1) &&
          !weft__wire_bytes(w, e + (size_t)i * t->elem_size, t->elem_size))
        return 0;
  }
  return 1;
}
