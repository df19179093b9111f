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
  if (!t->blocks[c]) {
    t->blocks[c] = alloc(alloc_ud, NULL, 0, (size_t)t->elem_size * WEFT_POOL_CHUNK);
    if (!t->blocks[c]) return NULL;
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
