/* Futures as Lua values a task can wait on, and the C API over them
   (weft_future_* in weft.h). */
#include <stdio.h>
#include <string.h>

#include "future.h"
#include "../base/names.h"
#include "../accounts/report.h"
#include "../base/sites.h"
#include "../core/task.h"
#include "../core/wait.h"

#define FUTURE_MT "weft.future"

/* ---- futures ---- */

/* A future made by C is anchored while pending (on), then only weakly
   known by its id (off): C can still reach it while a script holds it. */
static void keep_future(weft_state *W, lua_State *L, int idx, weft_id cid, int on) {
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, on ? W->ref_kept : W->ref_cweak);
  lua_pushvalue(L, idx);
  lua_rawseti(L, -2, -(lua_Integer)cid);
  lua_pop(L, 1);
  if (!on) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_kept);
    lua_pushnil(L);
    lua_rawseti(L, -2, -(lua_Integer)cid);
    lua_pop(L, 1);
  }
}

/* Pushes the future C made with this id, or nil; returns it. */
static fhandle *push_cfuture(weft_state *W, lua_State *L, weft_id cid) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_kept);
  if (lua_rawgeti(L, -1, -(lua_Integer)cid) == LUA_TNIL) {
    lua_pop(L, 2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cweak);
    lua_rawgeti(L, -1, -(lua_Integer)cid);
  }
  lua_remove(L, -2);
  return luaL_testudata(L, -1, FUTURE_MT);
}

/* Keeps name's first bytes: a plain copy, as snprintf's set-up cost more
   than the rest of making a future. */
static void set_name(fhandle *f, const char *name) {
  size_t n = name ? strnlen(name, sizeof f->name - 1) : 0;
  if (n) memcpy(f->name, name, n);
  f->name[n] = '\0';
}

fhandle *weft__fhandle_new(weft_state *W, lua_State *L, const char *name, int nuv) {
  fhandle *f = lua_newuserdatauv(L, sizeof *f, nuv);
  memset(f, 0, sizeof *f);
  f->state = WEFT_FUTURE_PENDING;
  f->nuv = (uint8_t)nuv;
  set_name(f, name);
  weft__set_meta(L, W->ref_future_mt);
  return f;
}

static fhandle *new_future(weft_state *W, lua_State *L, const char *name) {
  return weft__fhandle_new(W, L, name, 2);
}

/* Runs on_done(fn) for the future as a task spawned where on_done was
   called: fn at 1, the handle at 2, that site at 3. */
static int l_spawn_done(lua_State *L) {
  weft_state *W = weft__get(L);
  uint32_t site = (uint32_t)lua_tointeger(L, 3);
  lua_settop(L, 2);
  /* a callback that completes the next future nests four C calls a level */
  if (W->run_depth >= MAX_RUN_DEPTH / 4)
    return luaL_error(L,
                      "on_done callback set at %s: callbacks completing futures inside each "
                      "other too deep (over %d)",
                      weft__site_where(W->sites, site), MAX_RUN_DEPTH / 4);
  weft_id t = weft__new_task(W, L, 1, 1, weft__sched_root(W->S), 0);
  weft__task_set_site(W, L, t, site);
  weft__run_now(W, t);
  return 0;
}

int weft__fhandle_complete(weft_state *W, lua_State *L, int hidx, int state, int vidx, int n) {
  hidx = lua_absindex(L, hidx);
  vidx = lua_absindex(L, vidx);
  fhandle *h = lua_touserdata(L, hidx);
  if (h->state != WEFT_FUTURE_PENDING) return WEFT_ESTATE;
  WEFT_CHECKED(int top0 = lua_gettop(L);)
  /* Everything that may allocate (and raise) comes before the state
     changes, so a failure leaves the future pending and its waiters as
     they were. */
  luaL_checkstack(L, 8, NULL);
  /* packed: 0 = the one value (nil too) in user value 1; 1 = a table
     {n=..., ...} there; 2 = two values, in user values 1 and 4 (a
     combinator's future, whose 4th is free once it completes: first's
     index and value need no table); 3 = no value (nil there). */
  int packed = 0;
  if (n == 1) {
    lua_pushvalue(L, vidx);
  } else if (n == 2 && h->nuv == 4) {
    lua_pushvalue(L, vidx + 1);
    lua_setiuservalue(L, hidx, 4);
    lua_pushvalue(L, vidx);
    packed = 2;
  } else if (n > 1) {
    lua_createtable(L, n, 1);
    for (int i = 0; i < n; i++) {
      lua_pushvalue(L, vidx + i);
      lua_rawseti(L, -2, i + 1);
    }
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "n");
    packed = 1;
  } else {
    lua_pushnil(L);
    packed = 3;
  }
  h->state = (uint8_t)state;
  h->packed = (uint8_t)packed;
  lua_setiuservalue(L, hidx, 1);
  weft__complete_all(W, &h->waiters, L, vidx, n, state != WEFT_FUTURE_RESOLVED);
  if (h->cid) keep_future(W, L, hidx, h->cid, 0); /* C is done with it */
  /* on_done callbacks run as new tasks, oldest first. Past this point
     nothing may raise: a callback that cannot get a task (out of memory)
     is called directly, and if even that fails the report names the
     callback and says why. */
  if (lua_getiuservalue(L, hidx, 2) == LUA_TTABLE) {
    lua_pushnil(L);
    lua_setiuservalue(L, hidx, 2);
    lua_Integer k = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i < k; i += 2) { /* fn, site */
      lua_pushcfunction(L, l_spawn_done);
      lua_rawgeti(L, -2, i);
      lua_pushvalue(L, hidx);
      lua_rawgeti(L, -4, i + 1);
      int st = lua_pcall(L, 3, 0, 0);
      if (st != LUA_OK && st != LUA_ERRMEM) { /* not started, not for memory: say why */
        weft__report(W, L, -1, 0, NULL);
        lua_pop(L, 1);
      } else if (st != LUA_OK) {
        lua_pop(L, 1);
        lua_rawgeti(L, -1, i);
        lua_pushvalue(L, hidx);
        if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
          char what[300];
          lua_rawgeti(L, -2, i + 1);
          uint32_t site = (uint32_t)lua_tointeger(L, -1);
          lua_pop(L, 1);
          const char *e = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error";
          snprintf(what, sizeof what,
                   "%s\non_done callback set at %s, called without a task "
                   "(out of memory)",
                   e, weft__site_where(W->sites, site));
          weft__report(W, L, -1, 0, what);
          lua_pop(L, 1);
        }
      }
    }
  }
  lua_pop(L, 1);
  WEFT_CHECKED(
      WEFT_ASSERT(lua_gettop(L) == top0 && h->state == state && weft__wlist_empty(&h->waiters));)
  return WEFT_OK;
}

static const char *const future_states[] = {"?", "pending", "resolved", "failed", "cancelled"};

static int l_future_new(lua_State *L) {
  const char *name = luaL_optstring(L, 1, NULL);
  new_future(weft__get(L), L, name);
  return 1;
}

static fhandle *check_future(lua_State *L, int idx) { return luaL_checkudata(L, idx, FUTURE_MT); }

static int future_complete(lua_State *L, int state, int vidx, int n) {
  weft_state *W = weft__get(L);
  fhandle *f = check_future(L, 1);
  if (weft__fhandle_complete(W, L, 1, state, vidx, n) == WEFT_ESTATE)
    return luaL_error(L, "future already completed (%s)", future_states[f->state]);
  weft__yield_if_doomed(W, L); /* an on_done callback may have cancelled the caller */
  return 0;
}

static int l_future_resolve(lua_State *L) {
  check_future(L, 1);
  return future_complete(L, WEFT_FUTURE_RESOLVED, 2, lua_gettop(L) - 1);
}

static int l_future_fail(lua_State *L) {
  check_future(L, 1);
  lua_settop(L, 2);
  return future_complete(L, WEFT_FUTURE_FAILED, 2, 1);
}

static int l_future_cancel(lua_State *L) {
  weft_state *W = weft__get(L);
  fhandle *h = check_future(L, 1);
  if (h->state != WEFT_FUTURE_PENDING) return 0; /* like a finished task */
  lua_settop(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
  return future_complete(L, WEFT_FUTURE_CANCELLED, 2, 1);
}

/* Pushes a done future's values (all, or the first when `one`). */
static int push_future_values(lua_State *L, int idx, fhandle *h, int one) {
  lua_getiuservalue(L, idx, 1);
  if (h->packed == 2) {
    if (one) return 1;
    lua_getiuservalue(L, idx, 4);
    return 2;
  }
  if (h->packed == 0 || (h->packed == 3 && one)) return 1;
  if (h->packed == 3) {
    lua_pop(L, 1);
    return 0;
  }
  int t = lua_gettop(L);
  lua_getfield(L, t, "n");
  int n = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (one) n = 1;
  luaL_checkstack(L, n, "too many values");
  for (int i = 1; i <= n; i++) lua_rawgeti(L, t, i);
  lua_remove(L, t);
  return n;
}

static int poll_future(weft_state *W, lua_State *L, int idx, int one, weft_wlist **list) {
  (void)W;
  fhandle *h = lua_touserdata(L, idx);
  int st = h->state;
  if (st == WEFT_FUTURE_PENDING) {
    *list = &h->waiters;
    return 0;
  }
  if (st == WEFT_FUTURE_RESOLVED) {
    push_future_values(L, idx, h, one);
    return 1;
  }
  lua_getiuservalue(L, idx, 1);
  return -1;
}

static int l_future_result(lua_State *L) {
  fhandle *h = check_future(L, 1);
  int st = h->state;
  if (st == WEFT_FUTURE_PENDING) return luaL_error(L, "future is still pending");
  if (st != WEFT_FUTURE_RESOLVED) {
    lua_getiuservalue(L, 1, 1);
    return lua_error(L);
  }
  return push_future_values(L, 1, h, 0);
}

static int l_future_done(lua_State *L) {
  fhandle *h = check_future(L, 1);
  lua_pushboolean(L, h->state != WEFT_FUTURE_PENDING);
  return 1;
}

/* t[#t + 1], t[#t + 2] = a, b for (t, a, b) at 1..3. */
static int l_append_pair(lua_State *L) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  lua_pushvalue(L, 2);
  lua_rawseti(L, 1, n + 1);
  lua_pushvalue(L, 3);
  lua_rawseti(L, 1, n + 2);
  return 0;
}

static int l_future_on_done(lua_State *L) {
  weft_state *W = weft__get(L);
  fhandle *h = check_future(L, 1);
  if (lua_type(L, 2) != LUA_TFUNCTION && luaL_getmetafield(L, 2, "__call") == LUA_TNIL)
    luaL_typeerror(L, 2, "function");
  lua_settop(L, 2);
  uint32_t site = weft__caller_site(W, L);
  if (h->state != WEFT_FUTURE_PENDING) {
    lua_pushvalue(L, 1);
    weft_id t = weft__new_task(W, L, 2, 1, weft__sched_root(W->S), 0);
    weft__task_set_site(W, L, t, site);
    weft__run_now(W, t);
    return 0;
  }
  if (lua_getiuservalue(L, 1, 2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, 1, 2);
  }
  /* callbacks[n + 1], [n + 2] = fn, site; protected, as a half-added pair
     would shift every later one. */
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  lua_pushcfunction(L, l_append_pair);
  lua_pushvalue(L, -2);
  lua_pushvalue(L, 2);
  lua_pushinteger(L, site);
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
    lua_pushnil(L);
    lua_rawseti(L, -3, n + 1); /* an existing key, or none: no allocation */
    return lua_error(L);
  }
  return 0;
}

static const luaL_Reg future_methods[] = {{"resolve", l_future_resolve},
                                          {"fail", l_future_fail},
                                          {"cancel", l_future_cancel},
                                          {"result", l_future_result},
                                          {"done", l_future_done},
                                          {"on_done", l_future_on_done},
                                          {NULL, NULL}};

static int l_future_index(lua_State *L) {
  fhandle *h = check_future(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "name") == 0) {
    if (h->name[0])
      lua_pushstring(L, h->name);
    else
      lua_pushnil(L);
    return 1;
  }
  for (const luaL_Reg *r = future_methods; r->name; r++)
    if (strcmp(k, r->name) == 0) {
      lua_pushcfunction(L, r->func);
      return 1;
    }
  if (strcmp(k, "state") == 0) {
    lua_pushstring(L, future_states[h->state]);
  } else if (strcmp(k, "error") == 0) {
    if (h->state == WEFT_FUTURE_FAILED || h->state == WEFT_FUTURE_CANCELLED)
      lua_getiuservalue(L, 1, 1);
    else
      lua_pushnil(L);
  } else {
    lua_pushnil(L);
  }
  return 1;
}

static int l_future_tostring(lua_State *L) {
  fhandle *h = check_future(L, 1);
  if (h->name[0])
    lua_pushfstring(L, "future %s (%s)", h->name, future_states[h->state]);
  else
    lua_pushfstring(L, "future (%s)", future_states[h->state]);
  return 1;
}

/* ---- C API for futures ---- */

/* Protected: anchors the future at 1 under its cid. */
static int l_keep(lua_State *L) {
  fhandle *f = lua_touserdata(L, 1);
  keep_future(weft__get(L), L, 1, f->cid, 1);
  return 0;
}

weft_id weft__cfuture_new(weft_state *W) {
  lua_State *L = W->L;
  if (!lua_checkstack(L, 4)) return 0;
  lua_pushcfunction(L, l_future_new);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    lua_pop(L, 1);
    return 0;
  }
  fhandle *f = lua_touserdata(L, -1);
  f->cid = ++W->fserial;
  lua_pushcfunction(L, l_keep);
  lua_pushvalue(L, -2);
  int st = lua_pcall(L, 1, 0, 0); /* the anchor may allocate */
  lua_pop(L, st == LUA_OK ? 1 : 2);
  return st == LUA_OK ? f->cid : 0;
}

weft_future weft_future_new(weft_state *W) { return (weft_future){W ? weft__cfuture_new(W) : 0}; }

void weft_push_future(weft_state *W, lua_State *L, weft_future f) { push_cfuture(W, L, f.id); }

void weft__cfuture_push(weft_state *W, lua_State *L, weft_id cid) { push_cfuture(W, L, cid); }

void weft_future_set_name(weft_state *W, weft_future f, const char *name) {
  weft__cfuture_set_name(W, f.id, name);
}

void weft__cfuture_set_name(weft_state *W, weft_id cid, const char *name) {
  fhandle *f = lua_checkstack(W->L, 2) ? push_cfuture(W, W->L, cid) : NULL;
  if (f) set_name(f, name);
  lua_pop(W->L, 1);
}

typedef struct ccomplete {
  weft_id id;
  int state, n;
} ccomplete;

static int l_ccomplete(lua_State *L) {
  weft_state *W = weft__get(L);
  ccomplete *c = lua_touserdata(L, 1);
  int n = c->n;
  if (!push_cfuture(W, L, c->id)) {
    lua_pushinteger(L, WEFT_ESTALE); /* collected after C completed it, or never made */
    return 1;
  }
  lua_insert(L, 2);                        /* handle below the values */
  if (c->state == WEFT_FUTURE_CANCELLED) { /* waiters get the one cancellation error */
    lua_settop(L, 2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
    n = 1;
  }
  int rc = weft__fhandle_complete(W, L, 2, c->state, 3, n);
  lua_pushinteger(L, rc);
  return 1;
}

int weft__cfuture_complete(weft_state *W, weft_id id, int state, int nvalues) {
  if (!W) return WEFT_EINVAL;
  lua_State *L = W->L;
  if (state != WEFT_FUTURE_RESOLVED && state != WEFT_FUTURE_FAILED &&
      state != WEFT_FUTURE_CANCELLED)
    return WEFT_EINVAL;
  if (nvalues < 0 || nvalues > lua_gettop(L) || (state == WEFT_FUTURE_FAILED && nvalues != 1))
    return WEFT_EINVAL;
  ccomplete c = {id, state, nvalues};
  if (!lua_checkstack(L, nvalues + 8)) return WEFT_ENOMEM;
  lua_pushcfunction(L, l_ccomplete);
  lua_pushlightuserdata(L, &c);
  lua_rotate(L, -(nvalues + 2), 2);
  int st = lua_pcall(L, nvalues + 1, 1, 0);
  if (st != LUA_OK) {
    lua_pop(L, 1);
    return st == LUA_ERRMEM ? WEFT_ENOMEM : WEFT_ESTALE;
  }
  int rc = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return rc;
}

int weft_future_resolve(weft_state *W, weft_future f, int nvalues) {
  return weft__cfuture_complete(W, f.id, WEFT_FUTURE_RESOLVED, nvalues);
}

int weft_future_fail(weft_state *W, weft_future f) {
  return weft__cfuture_complete(W, f.id, WEFT_FUTURE_FAILED, 1);
}

int weft_future_cancel(weft_state *W, weft_future f) {
  return weft__cfuture_complete(W, f.id, WEFT_FUTURE_CANCELLED, 0);
}

int weft__future_state_of(weft_state *W, weft_id cid) {
  fhandle *f = lua_checkstack(W->L, 2) ? push_cfuture(W, W->L, cid) : NULL;
  int st = f ? f->state : WEFT_ESTALE;
  lua_pop(W->L, 1);
  return st;
}

/* ---- registration ---- */

static void future_name(weft_state *W, lua_State *L, weft_id id, const void *ptr) {
  (void)W;
  (void)id;
  const fhandle *f = ptr;
  if (f->name[0])
    lua_pushstring(L, f->name);
  else
    lua_pushnil(L);
}

static const weft_waitable future_waitable = {poll_future, "future", future_name};

void weft__open_futures(weft_state *W, lua_State *L) {
  W->ref_future_mt = weft__new_meta(L, FUTURE_MT, l_future_index, l_future_tostring, NULL,
                                    &future_waitable, "future");
  lua_pop(L, 1);
  static const luaL_Reg api[] = {{"future", l_future_new}, {NULL, NULL}};
  luaL_setfuncs(L, api, 0);
  weft__name_methods(L, "future", future_methods);
  weft__name_c(L, "future.spawn_done", l_spawn_done);
  weft__name_c(L, "future.append_pair", l_append_pair);
  weft__name_c(L, "future.keep", l_keep);
  weft__name_c(L, "future.ccomplete", l_ccomplete);
}
