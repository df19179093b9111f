/* The floor: the least any host must pay to run W0 and W1 on this Lua. A
   minimal C host: threads anchored in the registry, a binary heap of wake
   times holding the lua_State pointers, and a frame loop that resumes only
   the due threads (W1) or every thread (W0). No budget hook, no handles,
   no wait records. Prints one result line for the bench driver.

   usage: bench-floor DIR W0|W1 N WARM FRAMES */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#define DT (1.0 / 60)
#define EPS 1e-9 /* the wake rule weft uses: now >= due - 1e-9 */

typedef struct ent {
  double due;
  uint64_t seq; /* ties wake in the order they went to sleep, as in weft */
  lua_State *co;
} ent;

static ent *heap;
static size_t hn;
static uint64_t hseq;
static size_t mem, allocs, alloc_bytes;

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    free(ptr);
    mem -= old;
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (!p) return NULL;
  allocs++;
  if (nsize > old) alloc_bytes += nsize - old;
  mem = mem - old + nsize;
  return p;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int less(const ent *a, const ent *b) {
  return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void push(double due, lua_State *co) {
  size_t i = hn++;
  ent e = {due, hseq++, co};
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!less(&e, &heap[p])) break;
    heap[i] = heap[p];
    i = p;
  }
  heap[i] = e;
}

static ent pop(void) {
  ent top = heap[0], e = heap[--hn];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1;
    if (l >= hn) break;
    size_t m = (l + 1 < hn && less(&heap[l + 1], &heap[l])) ? l + 1 : l;
    if (!less(&heap[m], &e)) break;
    heap[i] = heap[m];
    i = m;
  }
  heap[i] = e;
  return top;
}

/* wait(s): hands s (or nothing) to the host. */
static int l_wait(lua_State *L) { return lua_yield(L, lua_gettop(L)); }

/* Resumes co once; returns the seconds it asked to sleep. */
static double resume(lua_State *L, lua_State *co, int nargs) {
  int nres = 0;
  int st = lua_resume(co, L, nargs, &nres);
  if (st != LUA_YIELD) {
    fprintf(stderr, "bench-floor: task stopped: %s\n", lua_tostring(co, -1));
    exit(1);
  }
  double s = nres > 0 ? lua_tonumber(co, -nres) : 0;
  lua_pop(co, nres);
  return s;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Pushes the workload's body (w0 or w1 of patrol.lua) with this host's
   wait; 0 with a message on stderr when it cannot load. */
static int push_body(lua_State *L, const char *dir, int every) {
  char path[4096];
  snprintf(path, sizeof path, "%s/patrol.lua", dir);
  if (luaL_loadfilex(L, path, "t") != LUA_OK) {
    fprintf(stderr, "bench-floor: %s\n", lua_tostring(L, -1));
    return 0;
  }
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, l_wait);
  lua_setfield(L, -2, "wait");
  lua_setupvalue(L, -2, 1);
  lua_call(L, 0, 1);
  lua_getfield(L, -1, every ? "w0" : "w1");
  lua_remove(L, -2);
  return 1;
}

/* The sum of the entities' counters: proof the bodies ran. */
static uint64_t entities_check(lua_State *L, int ents, int n) {
  uint64_t check = 0;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, ents, i);
    lua_getfield(L, -1, "n");
    check += (uint64_t)lua_tointeger(L, -1);
    lua_pop(L, 2);
  }
  return check;
}

/* The 99th percentile of the frame times (sorts them), in ms. */
static double p99_ms(uint64_t *ft, int frames) {
  if (frames <= 0) return 0;
  qsort(ft, (size_t)frames, sizeof *ft, cmp_u64);
  return (double)ft[(size_t)(frames * 0.99 < frames - 1 ? frames * 0.99 : frames - 1)] / 1e6;
}

/* Frame 1: a thread per entity runs the body up to its first wait;
   W0 keeps every thread in all, W1 puts each in the heap by its wake. */
static void spawn_all(lua_State *L, int body, int ents, int n, int every, lua_State **all,
                      double now) {
  for (int i = 1; i <= n; i++) {
    lua_State *co = lua_newthread(L);
    luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushvalue(L, body);
    lua_rawgeti(L, ents, i);
    lua_pushinteger(L, i);
    lua_xmove(L, co, 3);
    double s = resume(L, co, 2);
    if (every)
      all[i - 1] = co;
    else
      push(now + (s > 0 ? s : 0), co);
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: bench-floor DIR W0|W1 N WARM FRAMES\n");
    return 2;
  }
  const char *dir = argv[1];
  int every = strcmp(argv[2], "W0") == 0;
  int n = atoi(argv[3]), warm = atoi(argv[4]), frames = atoi(argv[5]);
  lua_State *L = lua_newstate(count_alloc, NULL);
  luaL_openlibs(L);

  /* The bodies, with this host's wait. */
  if (!push_body(L, dir, every)) return 1;
  int body = lua_gettop(L);

  /* The entities belong to the game: made before the baseline. */
  lua_createtable(L, n, 0);
  int ents = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    lua_createtable(L, 0, 1);
    lua_pushinteger(L, 0);
    lua_setfield(L, -2, "n");
    lua_rawseti(L, ents, i);
  }
  lua_State **all = malloc(sizeof *all * (size_t)n); /* W0: every thread */
  heap = malloc(sizeof *heap * (size_t)n);
  uint64_t *ft = malloc(sizeof *ft * (size_t)(frames > 0 ? frames : 1));
  lua_gc(L, LUA_GCCOLLECT, 0);
  size_t base = mem;

  /* Frame 1 spawns, like the weft run (same clock readings). */
  double now = DT;
  spawn_all(L, body, ents, n, every, all, now);
  lua_gc(L, LUA_GCCOLLECT, 0);
  double live = (double)(mem - base + (every ? sizeof *all : sizeof *heap) * (size_t)n) / n;
  uint64_t g0 = now_ns();
  lua_gc(L, LUA_GCCOLLECT, 0);
  double gc_ms = (double)(now_ns() - g0) / 1e6;

  uint64_t resumes = 0, t0 = 0, c0 = 0, a0 = 0, b0 = 0, r0 = 0, afr = 0, seen = 0;
  for (int f = 1; f <= warm + frames; f++) {
    if (f == warm + 1) {
      t0 = now_ns();
      c0 = cpu_ns();
      a0 = allocs;
      b0 = alloc_bytes;
      r0 = resumes;
    }
    uint64_t fs = now_ns();
    now += DT;
    if (every) {
      for (int i = 0; i < n; i++) resume(L, all[i], 0);
      resumes += (uint64_t)n;
    } else {
      while (hn > 0 && now >= heap[0].due - EPS) {
        ent e = pop();
        double s = resume(L, e.co, 0);
        push(now + (s > 0 ? s : 0), e.co);
        resumes++;
      }
    }
    if (f > warm) {
      ft[f - warm - 1] = now_ns() - fs;
      if (allocs != seen) afr++;
    }
    seen = allocs;
  }
  double secs = (double)(now_ns() - t0) / 1e9, cpu = (double)(cpu_ns() - c0) / 1e9;

  uint64_t check = entities_check(L, ents, n);
  double p99 = p99_ms(ft, frames);
  printf("secs=%.6f frames=%d resumes=%llu ops=%llu bytes=%llu allocs=%llu live=%.1f gc_ms=%.3f "
         "p99_ms=%.4f check=%llu afr=%llu cpu=%.6f\n",
         secs, frames, (unsigned long long)(resumes - r0), (unsigned long long)(resumes - r0),
         (unsigned long long)(alloc_bytes - b0), (unsigned long long)(allocs - a0), live, gc_ms,
         p99, (unsigned long long)check, (unsigned long long)afr, cpu);
  lua_close(L);
  free(all);
  free(heap);
  free(ft);
  return 0;
}
