/* Scripts' finalizers (__gc), as budgeted tasks: Lua never runs a
   script's __gc itself; a host object tells when the script's object has
   become unreachable, and its finalizer then runs as a task at a frame's
   start (or when a script's full collection returns).

   How: setmetatable marks a table whose metatable has a __gc field (as
   Lua marks it) by making a sentinel, a userdata with a C __gc that holds
   the table, kept in an ephemeron table under the table as key. The
   sentinel is reachable exactly while the table is; once both are not,
   Lua resurrects the sentinel (and so the table) to finalize it, and the
   sentinel's C __gc, inside the collector, only links it into the queue:
   it allocates nothing and runs no script code. The queue is drained
   outside the collector, each table's current __gc becoming a task under
   the budget, in the order Lua called the sentinels (the reverse of the
   marking order within a collection), so a finalizer that loops is
   preempted and killed like any task, at its file:line.

   The queue is a budgeted share of each frame: at most FIN_SHARE start a
   frame, fewer once the frame's time for tasks is spent; the rest wait
   their turn, in order, in a FIFO. A chain of finalizers that each make
   more objects with finalizers makes work faster than it finishes: past
   FIN_BACKLOG waiting, the newest are dropped without running, said once
   (a WARN log, not a report each). weft_close gives the finalizers still
   to run FIN_CLOSE_US in all. */
#include <stdlib.h>

#include "finalize.h"
#include "../base/persist.h"

#include "../base/log.h"
#include "../accounts/report.h"
#include "../core/task.h"

#define FIN_SHARE 256            /* finalizers started a frame at most */
#define FIN_BACKLOG 65536        /* finalizers waiting their turn at most */
#define FIN_CLOSE_US 200000      /* weft_close's time for the finalizers left */
#define FIN_CLOSE_SLICE_US 10000 /* ...a slice of each at most */

typedef struct sentinel {
  lua_Integer seq; /* marking order */
  int queued;      /* its object became unreachable: in the queue or run */
} sentinel;

/* Registry keys (their addresses). fifo_key: the sentinels waiting
   their turn, [W->fins.first .. W->fins.last], oldest first. */
static const char eph_key, mt_key, head_key, seq_key, fifo_key;

/* The sentinel's __gc, inside the collector: pushes it onto the queue
   (uservalue 2 is the next one). Existing keys and uservalues only: no
   allocation, nothing raises. */
static int l_sentinel_gc(lua_State *L) {
  sentinel *s = lua_touserdata(L, 1);
  if (!s || lua_getiuservalue(L, 1, 1) == LUA_TNIL) return 0; /* already run */
  s->queued = 1;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &head_key);
  lua_setiuservalue(L, 1, 2);
  lua_pushvalue(L, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &head_key);
  return 0;
}

void weft__fin_open(lua_State *L) {
  weft_state *W = weft__get(L);
  W->fins.first = 1; /* empty, before anything that may fail */
  W->fins.last = 0;
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &eph_key);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, l_sentinel_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &mt_key);
  lua_pushboolean(L, 0);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &head_key);
  lua_pushinteger(L, 0);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &seq_key);
  lua_newtable(L); /* last: its presence says the rest is there */
  lua_rawsetp(L, LUA_REGISTRYINDEX, &fifo_key);
}

void weft__fin_mark(lua_State *L, int obj) {
  obj = lua_absindex(L, obj);
  luaL_checkstack(L, 6, NULL);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &eph_key);
  lua_pushvalue(L, obj);
  sentinel *old = lua_rawget(L, -2) == LUA_TUSERDATA ? lua_touserdata(L, -1) : NULL;
  lua_pop(L, 1);
  if (old && !old->queued) { /* marked already: Lua marks once */
    lua_pop(L, 1);
    return;
  }
  sentinel *s = lua_newuserdatauv(L, sizeof *s, 2);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &seq_key);
  s->seq = lua_tointeger(L, -1) + 1;
  s->queued = 0;
  lua_pop(L, 1);
  lua_pushinteger(L, s->seq);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &seq_key);
  lua_pushvalue(L, obj);
  lua_setiuservalue(L, -2, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_key);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, obj);
  lua_insert(L, -2);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* Protected: starts the finalizer of the sentinel at 1's object, if its
   metatable still has a callable __gc (the one there now, as in Lua). */
static int l_start_one(lua_State *L) {
  weft_state *W = weft__get(L);
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, 1); /* 2: the object */
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1); /* the sentinel lets go of it */
  if (lua_isnil(L, 2) || !lua_getmetatable(L, 2)) return 0;
  lua_pushliteral(L, "__gc");
  int t = lua_rawget(L, -2); /* 4: __gc */
  if (t != LUA_TFUNCTION) {
    if (t == LUA_TNIL || luaL_getmetafield(L, 4, "__call") == LUA_TNIL)
      return 0; /* Lua ignores it */
    lua_pop(L, 1);
  }
  lua_pushvalue(L, 2);
  weft__run_now(W, weft__new_task(W, L, 4, 1, weft__sched_root(W->S), 0));
  return 0;
}

/* A sentinel and where it goes (in_marking_order). */
typedef struct fin_at {
  lua_Integer seq;
  int ref; /* its place in the scratch table */
} fin_at;

static int newer_first(const void *a, const void *b) {
  lua_Integer x = ((const fin_at *)a)->seq, y = ((const fin_at *)b)->seq;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Puts the FIFO's [from, to] in the order Lua calls the finalizers of
   one collection: the newest marked first. Lua calls them in the order
   their sentinels were marked, which in a state loaded from a save is
   the order the load set them up in, not the order the scripts marked
   their objects; sorting by the marking sequence the sentinels carry
   makes both the scripts' order. */
static void in_marking_order(lua_State *L, lua_Integer from, lua_Integer to) {
  if (to - from < 1 || to - from > FIN_BACKLOG) return;
  size_t n = (size_t)(to - from + 1);
  if (!lua_checkstack(L, 4)) return;
  fin_at *v = lua_newuserdatauv(L, n * sizeof *v, 1); /* raises only on memory, in a step */
  lua_createtable(L, (int)n, 0);
  lua_setiuservalue(L, -2, 1);
  lua_getiuservalue(L, -1, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &fifo_key);
  int sorted = 1;
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, -1, from + (lua_Integer)i);
    sentinel *s = lua_touserdata(L, -1);
    v[i] = (fin_at){s ? s->seq : 0, (int)i + 1};
    if (i && v[i].seq > v[i - 1].seq) sorted = 0;
    lua_rawseti(L, -3, (lua_Integer)i + 1);
  }
  if (!sorted) {
    qsort(v, n, sizeof *v, newer_first);
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, -2, v[i].ref);
      lua_rawseti(L, -2, from + (lua_Integer)i);
    }
  }
  lua_pop(L, 3);
}

/* Moves what the collector queued (a list, newest first) to the end of
   the FIFO, oldest first: each sentinel is moved once. Past FIN_BACKLOG
   waiting, the newest are let go unrun (their objects are freed without
   their finalizers), said once. */
static void take_queued(weft_state *W, lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &head_key);
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_pushboolean(L, 0);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &head_key);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &fifo_key);
  lua_insert(L, -2); /* fifo, list */
  int fifo = lua_gettop(L) - 1;
  /* Newest first in the list: count it, then write it backwards. */
  lua_Integer n = 0;
  lua_pushvalue(L, -1);
  while (lua_toboolean(L, -1)) {
    n++;
    lua_getiuservalue(L, -1, 2);
    lua_remove(L, -2);
  }
  lua_pop(L, 1);
  lua_Integer room = FIN_BACKLOG - (W->fins.last - W->fins.first + 1);
  lua_Integer at = W->fins.last + n;
  while (lua_toboolean(L, -1)) {
    int nd = lua_gettop(L);
    lua_getiuservalue(L, nd, 2); /* the next, older one */
    lua_pushnil(L);
    lua_setiuservalue(L, nd, 2);
    if (at - W->fins.last <= room) {
      lua_pushvalue(L, nd);
      lua_rawseti(L, fifo, at);
    } else { /* no room: the newest go unrun */
      lua_pushnil(L);
      lua_setiuservalue(L, nd, 1);
      W->fins.dropped++;
    }
    at--;
    lua_remove(L, nd);
  }
  lua_pop(L, 2); /* the list's end, the fifo */
  lua_Integer last = W->fins.last + (n < room ? n : room);
  in_marking_order(L, W->fins.last + 1, last);
  if (n > room) {
    if (!W->fins.said)
      weft__logf(W, WEFT_LOG_WARN, WEFT_LOG_FINALIZERS,
                 "finalizers are made faster than they run (a __gc that makes objects with "
                 "__gc?): %lld waiting, the newest let go without running",
                 (long long)FIN_BACKLOG);
    W->fins.said = 1;
  }
  W->fins.last = last;
}

/* Starts the FIFO's first finalizer. */
static void start_first(weft_state *W, lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &fifo_key);
  lua_Integer at = W->fins.first++;
  lua_pushcfunction(L, l_start_one);
  lua_rawgeti(L, -2, at);
  lua_pushnil(L);
  lua_rawseti(L, -4, at);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    weft__report(W, L, -1, 0, NULL);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* Starts up to `most` waiting finalizers, oldest first, while `more`
   says there is time. */
static int start_some(weft_state *W, lua_State *L, int most, int (*more)(weft_state *W)) {
  take_queued(W, L);
  int n = 0;
  while (n < most && W->fins.first <= W->fins.last && more(W)) {
    start_first(W, L);
    n++;
  }
  return n;
}

/* The frame's time for tasks is not spent (watched; counted frames have
   no time, only the share). */
static int frame_has_time(weft_state *W) {
  return !W->watching || !atomic_load_explicit(&W->wd.frame_over, memory_order_relaxed);
}

int weft__fin_run(weft_state *W, lua_State *L) {
  if (W->run_depth >= MAX_RUN_DEPTH || !lua_checkstack(L, 8)) return 0;
  if (W->fins.frame != W->cost.frame) { /* a new frame's share */
    W->fins.frame = W->cost.frame;
    W->fins.started = 0;
  }
  int n = start_some(W, L, FIN_SHARE - W->fins.started, frame_has_time);
  W->fins.started += n;
  return n;
}

int weft__fin_pending(lua_State *L) {
  int t = lua_rawgetp(L, LUA_REGISTRYINDEX, &head_key);
  lua_pop(L, 1);
  return t == LUA_TUSERDATA;
}

/* Protected: queues the sentinel of every marked object not yet queued,
   newest marked first, as lua_close finalizes them. */
static int l_queue_all(lua_State *L) {
  lua_settop(L, 0);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &eph_key); /* 1 */
  lua_newtable(L);                             /* 2: by seq */
  lua_Integer max = 0;
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    sentinel *s = lua_touserdata(L, -1);
    if (s && !s->queued) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, 2, s->seq);
      if (s->seq > max) max = s->seq;
    }
    lua_pop(L, 1);
  }
  for (lua_Integer i = max; i >= 1; i--) {
    if (lua_rawgeti(L, 2, i) == LUA_TUSERDATA) {
      lua_pushcfunction(L, l_sentinel_gc);
      lua_insert(L, -2);
      lua_call(L, 1, 0);
    } else {
      lua_pop(L, 1);
    }
  }
  return 0;
}

static int close_has_time(weft_state *W) { return weft__clock_ns() < W->fins.until; }

void weft__fin_close(weft_state *W) {
  lua_State *L = W->L;
  if (!lua_checkstack(L, 8)) return;
  int opened = lua_rawgetp(L, LUA_REGISTRYINDEX, &fifo_key) == LUA_TTABLE;
  lua_pop(L, 1);
  if (!opened) return; /* a state that failed to open */
  W->fins.until = weft__clock_ns() + (uint64_t)FIN_CLOSE_US * 1000u;
  /* Each runs in slices of at most FIN_CLOSE_SLICE_US: one that loops is
     preempted there (and cancelled with every task after), so one with
     a long slice leaves time for the others. */
  if (W->task_us > FIN_CLOSE_SLICE_US) W->task_us = FIN_CLOSE_SLICE_US;
  start_some(W, L, INT32_MAX, close_has_time); /* those already unreachable first */
  lua_pushcfunction(L, l_queue_all);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
    weft__report(W, L, -1, 0, NULL);
    lua_pop(L, 1);
  }
  /* Those the ones run made, too, while there is time. */
  while (W->fins.first <= W->fins.last || weft__fin_pending(L))
    if (!start_some(W, L, INT32_MAX, close_has_time)) break;
  lua_Integer left = W->fins.last - W->fins.first + 1;
  if (left > 0)
    weft__logf(W, WEFT_LOG_WARN, WEFT_LOG_FINALIZERS,
               "weft_close: %lld finalizers not run (their time at close, %d ms, was spent)",
               (long long)left, FIN_CLOSE_US / 1000);
}

void weft__fin_names(lua_State *L, int names) {
  static const struct {
    const char *name;
    const void *key;
  } keys[] = {{"fin.eph", &eph_key},
              {"fin.mt", &mt_key},
              {"fin.head", &head_key},
              {"fin.seq", &seq_key},
              {"fin.fifo", &fifo_key}};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    lua_pushlightuserdata(L, (void *)keys[i].key);
    weft__persist_name(L, names, keys[i].name, -1);
    lua_pop(L, 1);
  }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_key);
  if (lua_istable(L, -1)) weft__persist_type(L, names, "fin.sentinel", -1, NULL);
  lua_pop(L, 1);
}
