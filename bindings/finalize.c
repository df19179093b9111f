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
   preempted and killed like any task, at its file:line. */
#include "finalize.h"

#include "report.h"
#include "task.h"

typedef struct sentinel {
  lua_Integer seq; /* marking order */
  int queued;      /* its object became unreachable: in the queue or run */
} sentinel;

/* Registry keys (their addresses). */
static const char eph_key, mt_key, head_key, seq_key;

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

void weft_fin_open(lua_State *L) {
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
}

void weft_fin_mark(lua_State *L, int obj) {
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
  weft_state *W = weft_get(L);
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, 1); /* 2: the object */
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1); /* the sentinel lets go of it */
  if (lua_isnil(L, 2) || !lua_getmetatable(L, 2)) return 0;
  lua_pushliteral(L, "__gc");
  int t = lua_rawget(L, -2); /* 4: __gc */
  if (t != LUA_TFUNCTION) {
    if (t == LUA_TNIL || luaL_getmetafield(L, 4, "__call") == LUA_TNIL) return 0; /* Lua ignores it */
    lua_pop(L, 1);
  }
  lua_pushvalue(L, 2);
  weft_run_now(W, weft_new_task(W, L, 4, 1, weft_sched_root(W->S), 0));
  return 0;
}

/* Starts the finalizers of the sentinels in the queue, oldest first.
   Returns how many the queue held. */
static int start_queue(weft_state *W, lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &head_key);
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pushboolean(L, 0);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &head_key);
  int n = 0;
  for (; lua_toboolean(L, -1); n++) { /* the list onto the stack, newest first */
    if (!lua_checkstack(L, 4)) break;
    lua_getiuservalue(L, -1, 2);
  }
  lua_pop(L, 1); /* the list's end */
  /* The first one queued is on top: it runs first. */
  int base = lua_gettop(L) - n + 1;
  for (int i = base; i < base + n; i++) {
    lua_pushnil(L);
    lua_setiuservalue(L, i, 2);
  }
  for (int i = base + n - 1; i >= base; i--) {
    lua_pushcfunction(L, l_start_one);
    lua_pushvalue(L, i);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
      weft_report(W, L, -1, 0, NULL);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, base - 1);
  return n;
}

int weft_fin_run(weft_state *W, lua_State *L) {
  if (W->run_depth >= MAX_RUN_DEPTH || !lua_checkstack(L, 8)) return 0;
  int total = 0;
  /* A finalizer may free (and so queue) more: a few rounds here, the rest
     at the next frame, so a chain of them cannot hold the frame. */
  for (int round = 0; round < 4; round++) {
    int n = start_queue(W, L);
    if (!n) break;
    total += n;
  }
  return total;
}

/* Protected: queues the sentinel of every marked object not yet queued,
   newest marked first, as lua_close finalizes them. */
static int l_queue_all(lua_State *L) {
  lua_settop(L, 0);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &eph_key); /* 1 */
  lua_newtable(L);                              /* 2: by seq */
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

void weft_fin_close(weft_state *W) {
  lua_State *L = W->L;
  if (!lua_checkstack(L, 4)) return;
  int opened = lua_rawgetp(L, LUA_REGISTRYINDEX, &eph_key) == LUA_TTABLE;
  lua_pop(L, 1);
  if (!opened) return; /* a state that failed to open */
  weft_fin_run(W, L); /* those already unreachable first */
  lua_pushcfunction(L, l_queue_all);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
    weft_report(W, L, -1, 0, NULL);
    lua_pop(L, 1);
  }
  weft_fin_run(W, L);
}
