/* What a script waits on together: wait{...} and a list nested in a
   wait, and the combinators first, all and timeout, each a C task waiting
   on a list, settling a future of its own. */
#include <math.h>

#include "combinators.h"
#include "../accounts/handles.h"
#include "../accounts/budget.h"
#include "future.h"
#include "../core/wait.h"
#include "../core/wait_fast.h"

enum { C_FIRST = 1, C_ALL, C_TIMEOUT }; /* ltask.comb */

static int comb_resume(weft_sched *S, weft_id id, void *ud, double slept);
static void comb_cancel(weft_sched *S, weft_id id, void *ud);
static const weft_task_class comb_class = {comb_resume, comb_cancel, NULL};

/* A combinator's Lua data is its out future, anchored in the registry at
   its cold record's ref while it runs, with the list in user value 3
   (timeout: x in 3 and the seconds in 4) and all's results in 4. */
enum { COMB_OUT = 0, COMB_LIST = 3, COMB_RESULTS = 4 };

static void push_comb(weft_state *W, lua_State *L, weft_id id, int field) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, weft__cold_if(W, id, LT(W, id))->ref);
  if (field == COMB_OUT) return;
  lua_getiuservalue(L, -1, field);
  lua_remove(L, -2);
}

/* Lets go of a combinator's data: the out future no longer keeps the
   list (nor all's results, unless they are its value). */
static void comb_release(weft_state *W, lua_State *L, weft_id id) {
  ltask_cold *c = weft__cold_if(W, id, LT(W, id));
  if (c->ref <= 0) return;
  if (lua_checkstack(L, 4)) {
    push_comb(W, L, id, COMB_OUT);
    fhandle *h = lua_touserdata(L, -1);
    lua_pushnil(L);
    lua_setiuservalue(L, -2, COMB_LIST);
    if (h && h->packed != 2) {
      lua_pushnil(L);
      lua_setiuservalue(L, -2, COMB_RESULTS);
    }
    lua_pop(L, 1);
  }
  luaL_unref(L, LUA_REGISTRYINDEX, c->ref);
  c->ref = LUA_NOREF;
}

typedef struct settle_args {
  weft_state *W;
  int state, n;
} settle_args;

static int l_settle(lua_State *L) {
  settle_args *a = lua_touserdata(L, 1);
  weft__fhandle_complete(a->W, L, 2, a->state, 3, a->n);
  return 0;
}

/* Completes a combinator's future from inside a delivery, where nothing
   may raise: if packing its values runs out of memory, the future fails
   with that error instead (one value, nothing to pack). */
static void settle_safe(weft_state *W, lua_State *L, int out, int state, int vidx, int n) {
  out = lua_absindex(L, out);
  vidx = lua_absindex(L, vidx);
  settle_args a = {W, state, n};
  if (!lua_checkstack(L, n + 8)) return;
  lua_pushcfunction(L, l_settle);
  lua_pushlightuserdata(L, &a);
  lua_pushvalue(L, out);
  for (int i = 0; i < n; i++) lua_pushvalue(L, vidx + i);
  if (lua_pcall(L, n + 2, 0, 0) != LUA_OK) {
    if (((fhandle *)lua_touserdata(L, out))->state == WEFT_FUTURE_PENDING)
      weft__fhandle_complete(W, L, out, WEFT_FUTURE_FAILED, -1, 1);
    lua_pop(L, 1);
  }
}

static void comb_deliver(weft_state *W, weft_id self, lua_State *from, int idx, int n, int slot,
                         int failed) {
  ltask *lt = LT(W, self);
  lua_State *L = from;
  if (!lua_checkstack(L, n + 8)) return;
  push_comb(W, L, self, COMB_OUT);
  int out = lua_gettop(L);
  fhandle *h = lua_touserdata(L, out);
  if (!h || h->state != WEFT_FUTURE_PENDING) {
    lua_settop(L, out - 1);
    return;
  }
  if (failed) {
    settle_safe(W, L, out, WEFT_FUTURE_FAILED, idx, 1);
  } else if (lt->comb == C_FIRST) {
    lua_pushinteger(L, slot + 1);
    for (int i = 0; i < n; i++) lua_pushvalue(L, idx + i);
    settle_safe(W, L, out, WEFT_FUTURE_RESOLVED, out + 1, n + 1);
  } else if (lt->comb == C_TIMEOUT) {
    if (slot == 0) {
      settle_safe(W, L, out, WEFT_FUTURE_RESOLVED, idx, n);
    } else {
      lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_timeout);
      settle_safe(W, L, out, WEFT_FUTURE_FAILED, -1, 1);
    }
  } else { /* C_ALL: keep the first value */
    push_comb(W, L, self, COMB_RESULTS);
    if (n > 0)
      lua_pushvalue(L, idx);
    else
      lua_pushnil(L);
    lua_rawseti(L, -2, slot + 1);
  }
  lua_settop(L, out - 1);
}

static void comb_finish(weft_state *W, weft_id id, lua_State *L) {
  comb_release(W, L, id);
  weft__task_finish(W->S, id, WEFT_TASK_DONE);
}

static int comb_resume(weft_sched *S, weft_id id, void *ud, double slept) {
  (void)slept;
  weft_state *W = weft__sched_user(S);
  ltask *lt = ud;
  lua_State *L = W->curL;
  lua_checkstack(L, 8);
  if (lt->comb == C_ALL) {
    push_comb(W, L, id, COMB_OUT);
    fhandle *h = lua_touserdata(L, -1);
    if (h && h->state == WEFT_FUTURE_PENDING) {
      push_comb(W, L, id, COMB_RESULTS);
      weft__fhandle_complete(W, L, -2, WEFT_FUTURE_RESOLVED, -1, 1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  comb_finish(W, id, L);
  return WEFT_RESUMED;
}

static void comb_cancel(weft_sched *S, weft_id id, void *ud) {
  weft_state *W = weft__sched_user(S);
  lua_State *L = W->curL;
  (void)ud;
  lua_checkstack(L, 8);
  push_comb(W, L, id, COMB_OUT);
  fhandle *h = lua_touserdata(L, -1);
  if (h && h->state == WEFT_FUTURE_PENDING) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
    weft__fhandle_complete(W, L, -2, WEFT_FUTURE_CANCELLED, -1, 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  comb_release(W, L, id);
}

static void combinator(weft_state *W, lua_State *L, int list, int mode);

/* Adds an element of a list to a wait being built (weft__wait_add): a
   plain list nested in it waits like all{...}. */
static int add_element(weft_state *W, lua_State *L, weft_id id, int idx, int slot, int one,
                       int argn) {
  if (lua_type(L, idx) == LUA_TTABLE && !weft__waitable_of(L, idx)) {
    combinator(W, L, idx, C_ALL);
    lua_replace(L, idx);
  }
  return weft__wait_add(W, L, id, idx, slot, one, argn);
}

/* Builds a combinator over the list at L[list] (timeout: x at L[list] and
   seconds at L[list+1]). Pushes the out future. */
static void combinator(weft_state *W, lua_State *L, int list, int mode) {
  list = lua_absindex(L, list);
  int n = mode == C_TIMEOUT ? 2 : (int)lua_rawlen(L, list);
  if (n > WEFT_WAIT_MAX) luaL_argerror(L, 1, "list too long");
  luaL_checkstack(L, 16, NULL);
  static const char *const names[] = {NULL, "first", "all", "timeout"};
  fhandle *out = weft__fhandle_new(W, L, names[mode], 4);
  int outi = lua_gettop(L);
  lua_pushvalue(L, list);
  lua_setiuservalue(L, outi, COMB_LIST);
  if (mode == C_TIMEOUT) {
    lua_pushvalue(L, list + 1);
    lua_setiuservalue(L, outi, COMB_RESULTS);
  } else if (mode == C_ALL) {
    if (n == 0) {
      lua_newtable(L);
      weft__fhandle_complete(W, L, outi, WEFT_FUTURE_RESOLVED, -1, 1);
      lua_settop(L, outi);
      lua_pushnil(L);
      lua_setiuservalue(L, outi, COMB_LIST);
      return;
    }
    lua_createtable(L, n, 0);
    lua_setiuservalue(L, outi, COMB_RESULTS);
  }
  weft_id task;
  ltask *lt;
  weft_id g = W->cur ? weft__task_group(W->S, W->cur) : 0;
  int rc = weft__task_create(W->S, g, 0, &comb_class, &task, (void **)&lt);
  if (rc != WEFT_OK) luaL_error(L, "cannot create combinator: %s", weft_strerror(rc));
  ltask_cold *c = weft__cold(W, task, lt);
  if (!c) {
    weft__task_finish(W->S, task, WEFT_TASK_CANCELLED);
    luaL_error(L, "not enough memory");
  }
  W->spawned++;
  c->deliver = comb_deliver;
  lt->comb = (unsigned)mode;
  lua_pushvalue(L, outi);
  c->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  weft__wait_begin(W->S, task, mode == C_ALL ? WEFT_WAIT_ALL : WEFT_WAIT_FIRST);
  int added = 0;
  for (int i = 0; i < n; i++) {
    if (out->state != WEFT_FUTURE_PENDING) break;
    int top = lua_gettop(L);
    if (mode == C_TIMEOUT) { /* x, then the seconds */
      lua_pushnil(L);
      lua_getiuservalue(L, outi, i == 0 ? COMB_LIST : COMB_RESULTS);
    } else {
      lua_getiuservalue(L, outi, COMB_LIST);
      lua_rawgeti(L, -1, i + 1);
    }
    int r = add_element(W, L, task, top + 2, i, mode == C_ALL, 1);
    if (r == 0)
      added++;
    else {
      int vn = lua_gettop(L) - (top + 2);
      comb_deliver(W, task, L, top + 3, vn, i, r < 0);
    }
    lua_settop(L, top);
  }
  if (out->state != WEFT_FUTURE_PENDING || !added) {
    /* settled at once (or nothing to wait for): finish now */
    weft__wait_abort(W, task);
    if (out->state == WEFT_FUTURE_PENDING && mode == C_ALL) {
      lua_getiuservalue(L, outi, COMB_RESULTS);
      weft__fhandle_complete(W, L, outi, WEFT_FUTURE_RESOLVED, -1, 1);
      lua_pop(L, 1);
    }
    comb_finish(W, task, L);
  } else {
    weft__wait_commit(W->S, task);
  }
  lua_settop(L, outi);
}

/* ---- wait ---- */

/* wait{...}: one value per element, in order. */
static int wait_list(weft_state *W, lua_State *L, weft_id id) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  if (n < 0 || n > WEFT_WAIT_MAX) return luaL_argerror(L, 1, "list too long");
  luaL_checkstack(L, (int)n + 8, "list too long");
  int base = lua_gettop(L) + 1;
  for (lua_Integer i = 0; i < n; i++) lua_pushnil(L);
  weft__wait_begin(W->S, id, WEFT_WAIT_ALL);
  int added = 0;
  for (lua_Integer i = 0; i < n; i++) {
    int top = lua_gettop(L);
    lua_rawgeti(L, 1, i + 1);
    int r = add_element(W, L, id, top + 1, (int)i, 1, 1);
    if (r < 0) {
      weft__wait_abort(W, id);
      return lua_error(L);
    }
    if (r > 0)
      lua_copy(L, top + 2, base + (int)i);
    else
      added++;
    lua_settop(L, top);
  }
  if (!added) {
    weft__task_waited(W, LT(W, id));
    return (int)n;
  }
  return weft__wait_yield(W, L, id, 0, base, NULL);
}

/* wait(x) for anything but a plain sleep. */
WEFT_NOINLINE static int wait_slow(lua_State *L) {
  if (lua_type(L, 1) != LUA_TTABLE || weft__waitable_of(L, 1)) return weft__wait_any(L);
  weft_state *W = weft__get(L);
  return wait_list(W, L, weft__wait_start(W, L));
}

/* wait(x): see the design's table of what x may be. The plain sleep
   takes a path with no more to save and restore than it needs. */
int weft__l_wait(lua_State *L) {
  if (weft__wait_fast(L)) return lua_yield(L, 0);
  return wait_slow(L);
}

/* ---- first, all, timeout ---- */

static void check_list(lua_State *L, int idx, const char *name) {
  if (lua_type(L, idx) != LUA_TTABLE || weft__waitable_of(L, idx))
    luaL_error(L, "bad argument #1 to '%s' (list expected, got %s)", name, luaL_typename(L, idx));
}

static int l_first(lua_State *L) {
  check_list(L, 1, "first");
  if (lua_rawlen(L, 1) == 0) return luaL_argerror(L, 1, "empty list: nothing can finish first");
  combinator(weft__get(L), L, 1, C_FIRST);
  return 1;
}

static int l_all(lua_State *L) {
  check_list(L, 1, "all");
  combinator(weft__get(L), L, 1, C_ALL);
  return 1;
}

static int l_timeout(lua_State *L) {
  /* wait(nil) is a frame, but timeout(nil, s) is a typo (a misspelt
     field): there is nothing to time out. */
  if (lua_isnoneornil(L, 1)) return luaL_argerror(L, 1, "something to wait on expected, got nil");
  double s = luaL_checknumber(L, 2);
  if (isnan(s)) return luaL_argerror(L, 2, "seconds must not be NaN");
  lua_settop(L, 2);
  combinator(weft__get(L), L, 1, C_TIMEOUT);
  return 1;
}

/* ---- registration ---- */

void weft__open_combinators(weft_state *W, lua_State *L) {
  static const luaL_Reg api[] = {{"wait", weft__l_wait},
                                 {"first", l_first},
                                 {"all", l_all},
                                 {"timeout", l_timeout},
                                 {NULL, NULL}};
  luaL_setfuncs(L, api, 0);
  lua_getfield(L, -1, "weft");
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_timeout);
  lua_setfield(L, -2, "TIMEOUT");
  lua_pop(L, 1);
}

const weft_task_class *weft__comb_class(void) { return &comb_class; }
weft_deliver_fn weft__comb_deliver(void) { return comb_deliver; }
