/* Every byte weft takes, through the embedder's allocator: Lua's heap
   under its limit (with a reserve for undoing a failed reload) and the
   host's blocks, counted together for weft_get_stats. */
#include "mem.h"

#include <string.h>

#include "../../host/pool.h"
#include "../../host/weft_assert.h"
#include "internal.h"
#include "plat.h"

#define HEADROOM (1u << 20) /* bytes past the limit allowed while reporting */

void weft__mem_init(weft_memory *m, const weft_desc *d) {
  memset(m, 0, sizeof *m);
  m->alloc = d->alloc ? d->alloc : weft__default_alloc; /* realloc and free */
  m->ud = d->alloc ? d->alloc_ud : NULL;
  m->limit = d->memory_limit;
}

/* ---- the reserve ----

   Memory kept aside for putting things back: while W->mem.in_rollback is
   set (a failed reload undoing its merges), an allocation that fails is
   served from this block instead, bump-allocated; its blocks are given
   back as Lua frees them, and the block is reused once all are. Taken
   when the state opens and never touched until needed, so it is not
   resident. */
#define RESERVE (256u << 10)

int weft__mem_open_reserve(weft_state *W) {
  W->mem.reserve = W->mem.alloc(W->mem.ud, NULL, 0, RESERVE);
  return W->mem.reserve != NULL;
}

void weft__mem_close_reserve(weft_state *W) {
  if (W->mem.reserve) W->mem.alloc(W->mem.ud, W->mem.reserve, RESERVE, 0);
  W->mem.reserve = NULL;
}

static int in_reserve(const weft_state *W, const void *p) {
  return W->mem.reserve && (const char *)p >= W->mem.reserve &&
         (const char *)p < W->mem.reserve + RESERVE;
}

static void *reserve_take(weft_state *W, size_t n) {
  size_t at = (W->mem.reserve_used + 15) & ~(size_t)15;
  if (!W->mem.reserve || at > RESERVE || n > RESERVE - at) return NULL;
  W->mem.reserve_used = at + n;
  W->mem.reserve_live++;
  return W->mem.reserve + at;
}

static void reserve_give(weft_state *W) {
  WEFT_ASSERT(W->mem.reserve_live > 0);
  if (--W->mem.reserve_live == 0) W->mem.reserve_used = 0;
}

static int refused(weft_state *W, size_t nsize) {
  return W->mem.fail && W->mem.fail(W->mem.fail_user, nsize);
}

void *weft__lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  weft_state *W = ud;
  weft_memory *m = &W->mem;
  size_t old = ptr ? osize : 0;
  WEFT_ASSERT(m->used >= old); /* Lua frees what it took, with its size */
  int reserved = ptr && in_reserve(W, ptr);
  if (reserved && nsize <= old && nsize > 0) { /* shrinking: stays where it is */
    m->used -= old - nsize;
    return ptr;
  }
  if (nsize == 0) {
    if (reserved)
      reserve_give(W);
    else if (ptr)
      m->alloc(m->ud, ptr, old, 0);
    m->used -= old;
    return NULL;
  }
  void *p = NULL;
  int no = 0;
  if (nsize > old) {
    size_t limit = m->limit + (m->in_report ? HEADROOM : 0);
    no = m->used - old + nsize > limit || refused(W, nsize);
  }
  if (!no) p = reserved ? m->alloc(m->ud, NULL, 0, nsize) : m->alloc(m->ud, ptr, old, nsize);
  if (!p && m->in_rollback) p = reserve_take(W, nsize);
  if (!p) return NULL;
  if (reserved || (ptr && in_reserve(W, p))) { /* moved into or out of the reserve */
    memcpy(p, ptr, old < nsize ? old : nsize);
    if (reserved)
      reserve_give(W);
    else
      m->alloc(m->ud, ptr, old, 0);
  }
  m->allocs++;
  if (nsize > old) m->alloc_bytes += nsize - old;
  m->used = m->used - old + nsize;
  if (m->used > m->peak) m->peak = m->used;
  return p;
}

/* ---- pressure ---- */

static size_t margin(const weft_memory *m) {
  size_t r = m->limit / 16;
  if (r < ((size_t)256 << 10)) r = (size_t)256 << 10;
  if (r > ((size_t)16 << 20)) r = (size_t)16 << 20;
  return r;
}

static int roomy(const weft_memory *m) {
  size_t mg = margin(m);
  return m->limit > mg && m->used <= m->limit - mg;
}

int weft__mem_room(weft_state *W) {
  weft_memory *m = &W->mem;
  if (roomy(m)) return 1;
  uint64_t f = weft__sched_frame(W->S) + 1;
  if (m->squeezed == f && !m->died) { /* collected this frame already: no storm */
    weft__mem_owe(W);
    return 0;
  }
  m->squeezed = f;
  m->died = 0;
  lua_gc(W->L, LUA_GCCOLLECT);
  if (roomy(m)) return 1;
  weft__mem_owe(W); /* what the asker made becomes garbage when it fails */
  return 0;
}

void weft__mem_owe(weft_state *W) { W->mem.reclaim = 2; }

void weft__mem_died(weft_state *W) {
  W->mem.reclaim = 2;
  W->mem.died = 1;
}

/* Recording or replaying, the work is counted, not timed: the collector
   then runs the same in the replay, and weak tables empty at the same
   frames. */
#define RECLAIM_STEPS 32 /* steps of 64 KB a frame, counted */

void weft__mem_reclaim(weft_state *W, uint32_t us) {
  weft_memory *m = &W->mem;
  if (!m->reclaim) return;
  uint64_t end = weft__clock_ns() + (uint64_t)us * 1000u;
  for (int n = 0;; n++) {
    if (lua_gc(W->L, LUA_GCSTEP, 64) && --m->reclaim == 0) return;
    if (W->tape ? n + 1 >= RECLAIM_STEPS : weft__clock_ns() >= end) return;
  }
}

void *weft__host_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  weft_state *W = ud;
  weft_memory *m = &W->mem;
  size_t old = ptr ? osize : 0;
  WEFT_ASSERT(m->host >= old); /* a block freed with the size it was taken with */
  if (nsize == 0) {
    if (ptr) {
      m->alloc(m->ud, ptr, old, 0);
      m->host -= old;
    }
    return NULL;
  }
  if (refused(W, nsize)) return NULL;
  void *p = m->alloc(m->ud, ptr, old, nsize);
  if (p) {
    m->allocs++;
    if (nsize > old) m->alloc_bytes += nsize - old;
    m->host = m->host - old + nsize;
  }
  return p;
}

void *weft__mem_alloc(weft_state *W, size_t n) { return weft__host_alloc(W, NULL, 0, n ? n : 1); }

void *weft__mem_calloc(weft_state *W, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  size_t n = count * size;
  void *p = weft__mem_alloc(W, n);
  if (p) memset(p, 0, n ? n : 1);
  return p;
}

void *weft__mem_realloc(weft_state *W, void *p, size_t osize, size_t nsize) {
  return weft__host_alloc(W, p, osize, nsize ? nsize : 1);
}

void weft__mem_free(weft_state *W, void *p, size_t n) {
  if (p) weft__host_alloc(W, p, n ? n : 1, 0);
}

char *weft__mem_strdup(weft_state *W, const char *s) {
  return weft__str_join(weft__host_alloc, W, s, "");
}

char *weft__mem_join(weft_state *W, const char *a, const char *b) {
  return weft__str_join(weft__host_alloc, W, a, b);
}

void weft__mem_free_str(weft_state *W, char *s) { weft__str_free(weft__host_alloc, W, s); }
