/* Interned spawn-site chains: "spawned at file:line" for a task and each
   ancestor, stored once per distinct chain so a task carries one integer. */
#include <stdio.h>
#include <string.h>

#include "sites.h"
#include "log.h"
#include "mem.h"

#define MAX_SITES 65536u /* distinct chains; more collapse to "?" */
#define MAX_DEPTH 16     /* ancestors remembered per chain */
#define GROW_SAMPLES 6   /* live counts kept per site, GROW_STEP apart: 5 steps */
#define GROW_STEP 2.0    /* seconds of real time between two of them */
#define GROW_MIN 100     /* growth over the samples that is named */

typedef struct site {
  char *where;     /* "file:line", owned */
  uint32_t srclen; /* length of the file part of where */
  int line;
  uint32_t parent; /* chain above, 0: none */
  uint32_t hash;
  uint16_t depth;
  uint8_t nsamples, warned;
  uint32_t live;                 /* tasks spawned here and not ended */
  uint32_t sample[GROW_SAMPLES]; /* live counts, GROW_STEP apart, oldest first */
  double sampled;                /* real time of the newest sample */
} site;

#define RECENT 256 /* direct-mapped cache of recent lookups */

/* A recent lookup, keyed by the address of Lua's source string: a spawn
   line asked again (the common case) skips hashing the file name. The
   hit is still checked against the site's text, so a reused address can
   only miss. */
typedef struct recent {
  const char *key;
  int line;
  uint32_t parent, site;
} recent;

struct sites {
  recent recent[RECENT];
  weft_state *W;
  site *v; /* [1 .. n]; 0 is "unknown" */
  uint32_t n, cap;
  uint32_t *slots; /* open addressing: site index, 0 empty */
  uint32_t nslots;
};

struct sites *weft__sites_new(weft_state *W) {
  struct sites *st = weft__mem_calloc(W, 1, sizeof *st);
  if (st) st->W = W;
  return st;
}

void weft__sites_free(weft_state *W, struct sites *st) {
  if (!st) return;
  for (uint32_t i = 1; i <= st->n; i++) weft__mem_free_str(W, st->v[i].where);
  weft__mem_free(W, st->v, st->cap * sizeof *st->v);
  weft__mem_free(W, st->slots, st->nslots * sizeof *st->slots);
  weft__mem_free(W, st, sizeof *st);
}

static uint32_t hash_of(const char *src, int line, uint32_t parent) {
  uint32_t h = 2166136261u ^ (uint32_t)line * 16777619u ^ parent * 2654435761u;
  for (const unsigned char *p = (const unsigned char *)src; *p; p++) h = (h ^ *p) * 16777619u;
  return h ? h : 1;
}

static int rehash(struct sites *st) {
  uint32_t n = st->nslots ? st->nslots * 2 : 256;
  uint32_t *s = weft__mem_calloc(st->W, n, sizeof *s);
  if (!s) return 0;
  for (uint32_t i = 1; i <= st->n; i++) {
    uint32_t j = st->v[i].hash & (n - 1);
    while (s[j]) j = (j + 1) & (n - 1);
    s[j] = i;
  }
  weft__mem_free(st->W, st->slots, st->nslots * sizeof *st->slots);
  st->slots = s;
  st->nslots = n;
  return 1;
}

static int same(const site *x, const char *src, int line, uint32_t parent) {
  return x->parent == parent && x->line == line && strncmp(x->where, src, x->srclen) == 0 &&
         src[x->srclen] == 0;
}

static uint32_t intern(struct sites *st, const char *src, int line, uint32_t parent);

uint32_t weft__site_intern(struct sites *st, const char *source, const char *src, int line,
                           uint32_t parent) {
  if (!st) return 0;
  if (parent && st->v[parent].depth >= MAX_DEPTH) parent = st->v[parent].parent;
  uintptr_t a = (uintptr_t)source;
  recent *c = &st->recent[((a >> 4) ^ (a >> 12) ^ (uint32_t)line * 2654435761u ^ parent * 40503u) &
                          (RECENT - 1)];
  if (c->key == source && c->line == line && c->parent == parent && c->site &&
      same(&st->v[c->site], src, line, parent))
    return c->site;
  uint32_t i = intern(st, src, line, parent);
  *c = (recent){source, line, parent, i};
  return i;
}

static uint32_t intern(struct sites *st, const char *src, int line, uint32_t parent) {
  uint32_t h = hash_of(src, line, parent);
  if (st->nslots) {
    for (uint32_t j = h & (st->nslots - 1); st->slots[j]; j = (j + 1) & (st->nslots - 1)) {
      site *x = &st->v[st->slots[j]];
      if (x->hash == h && same(x, src, line, parent)) return st->slots[j];
    }
  }
  if (st->n + 1 >= MAX_SITES) return 0;
  if ((st->n + 1) * 2 >= st->nslots && !rehash(st)) return 0;
  if (st->n + 1 >= st->cap) {
    uint32_t nc = st->cap ? st->cap * 2 : 64;
    site *v = weft__mem_realloc(st->W, st->v, st->cap * sizeof *v, nc * sizeof *v);
    if (!v) return 0;
    st->v = v;
    st->cap = nc;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s:%d", src, line);
  char *w = weft__mem_strdup(st->W, buf);
  if (!w) return 0;
  uint32_t i = ++st->n;
  st->v[i] = (site){.where = w,
                    .srclen = (uint32_t)strlen(src),
                    .line = line,
                    .parent = parent,
                    .hash = h,
                    .depth = (uint16_t)(parent ? st->v[parent].depth + 1 : 1)};
  uint32_t j = h & (st->nslots - 1);
  while (st->slots[j]) j = (j + 1) & (st->nslots - 1);
  st->slots[j] = i;
  return i;
}

const char *weft__site_where(struct sites *st, uint32_t s) {
  return (st && s && s <= st->n) ? st->v[s].where : "?";
}

/* Names a site whose tasks keep piling up: where they were spawned (the
   chain), as the logger's file and line the spawn's own. */
static void grew(struct sites *st, site *x) {
  char msg[512], file[256];
  int n =
      snprintf(msg, sizeof msg, "%u live tasks spawned at %s and growing (+%u in %.0f s)",
               (unsigned)x->live, x->where, (unsigned)(x->sample[GROW_SAMPLES - 1] - x->sample[0]),
               GROW_STEP * (GROW_SAMPLES - 1));
  for (uint32_t p = x->parent; p && n > 0 && (size_t)n < sizeof msg; p = st->v[p].parent)
    n += snprintf(msg + n, sizeof msg - (size_t)n, ", spawned at %s", st->v[p].where);
  snprintf(file, sizeof file, "%.*s", (int)x->srclen, x->where);
  weft__log_at(st->W, WEFT_LOG_WARN, WEFT_LOG_TASK_GROWTH, msg, file, (uint32_t)x->line);
}

void weft__site_live(struct sites *st, uint32_t s, int delta, double now) {
  if (!st || !s || s > st->n) return;
  site *x = &st->v[s];
  if (delta < 0) {
    if (x->live) x->live--;
    return;
  }
  x->live++;
  if (x->nsamples && now < x->sampled + GROW_STEP) return;
  if (x->nsamples == GROW_SAMPLES)
    memmove(x->sample, x->sample + 1, sizeof x->sample[0] * (GROW_SAMPLES - 1));
  else
    x->nsamples++;
  x->sample[x->nsamples - 1] = x->live;
  x->sampled = now;
  if (x->warned || x->nsamples < GROW_SAMPLES) return;
  for (int i = 1; i < GROW_SAMPLES; i++)
    if (x->sample[i] <= x->sample[i - 1]) return; /* a step without growth: a burst, or steady */
  if (x->sample[GROW_SAMPLES - 1] - x->sample[0] < GROW_MIN) return;
  x->warned = 1;
  grew(st, x);
}

uint32_t weft__site_parent(struct sites *st, uint32_t s) {
  return (st && s && s <= st->n) ? st->v[s].parent : 0;
}

uint32_t weft__site_count(struct sites *st) { return st ? st->n : 0; }

uint32_t weft__site_live_of(struct sites *st, uint32_t s) {
  return (st && s && s <= st->n) ? st->v[s].live : 0;
}

int weft__site_grew(struct sites *st, uint32_t s) {
  return (st && s && s <= st->n) ? st->v[s].warned : 0;
}

/* ---- saving ---- */

/* A site as saved: its numbers, then its text. */
typedef struct site_rec {
  uint32_t len, srclen, parent, hash, live;
  int32_t line;
  uint16_t depth;
  uint8_t nsamples, warned;
  uint32_t sample[GROW_SAMPLES];
  double sampled;
} site_rec;

int weft__sites_save(struct sites *st, weft_wire *w) {
  uint32_t n = st ? st->n : 0;
  if (!weft__wire_u32(w, &n)) return 0;
  for (uint32_t i = 1; i <= n; i++) {
    const site *x = &st->v[i];
    site_rec r = {(uint32_t)strlen(x->where),
                  x->srclen,
                  x->parent,
                  x->hash,
                  x->live,
                  x->line,
                  x->depth,
                  x->nsamples,
                  x->warned,
                  {0},
                  x->sampled};
    memcpy(r.sample, x->sample, sizeof r.sample);
    if (!weft__wire_bytes(w, &r, sizeof r) || !weft__wire_bytes(w, x->where, r.len)) return 0;
  }
  return 1;
}

int weft__sites_load(struct sites *st, weft_wire *w) {
  uint32_t n;
  if (!weft__wire_u32(w, &n)) return 0;
  if (!st || st->n) return weft__wire_fail(w, "spawn sites to load into are not fresh");
  if (n >= MAX_SITES) return weft__wire_fail(w, "too many spawn sites");
  uint32_t cap = 64;
  while (cap <= n) cap *= 2;
  if (n && !(st->v = weft__mem_calloc(st->W, cap, sizeof *st->v)))
    return weft__wire_fail(w, "out of memory");
  if (n) st->cap = cap;
  for (uint32_t i = 1; i <= n; i++) {
    site_rec r;
    char buf[256];
    if (!weft__wire_bytes(w, &r, sizeof r)) return 0;
    if (r.len >= sizeof buf || r.srclen > r.len || r.parent >= i || r.nsamples > GROW_SAMPLES ||
        r.depth > MAX_DEPTH + 1 || !weft__wire_bytes(w, buf, r.len))
      return weft__wire_fail(w, w->err ? w->err : "a spawn site is damaged");
    buf[r.len] = 0;
    char *where = weft__mem_strdup(st->W, buf);
    if (!where) return weft__wire_fail(w, "out of memory");
    st->v[i] = (site){where,      r.srclen, r.line, r.parent, r.hash,   r.depth,
                      r.nsamples, r.warned, r.live, {0},      r.sampled};
    memcpy(st->v[i].sample, r.sample, sizeof r.sample);
    st->n = i;
  }
  return n == 0 || rehash(st) ? 1 : weft__wire_fail(w, "out of memory");
}
