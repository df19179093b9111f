/* Futures, signals, channels and the combinators first/all/timeout as Lua
   values a task can wait on. */
#include <math.h>
#include <string.h>

#include "sync.h"
#include "group.h"
#include "report.h"
#include "sites.h"
#include "task.h"
#include "wait.h"

#define FUTURE_MT "weft.future"
#define SIGNAL_MT "weft.signal"
#define CHANNEL_MT "weft.channel"
#define CONN_MT "weft.connection"

enum { K_SIGNAL = 2, K_CHANNEL = 3 }; /* pooled handle kinds (futures live in their handles) */
enum { C_FIRST = 1, C_ALL, C_TIMEOUT };

typedef struct shandle {
  weft_id id;
  uint8_t kind;
  uint8_t firing; /* signals: inside fire, connections are not compacted */
} shandle;

/* A future lives in its handle: no pool slot and no __gc, so the
   collector frees it like a table. (Lua 5.4 runs only a few finalizers per
   collection step, and games make futures by the thousand.) Waiters hold
   it on their stacks, so it cannot go while it has any. */
typedef struct fhandle {
  weft_wlist waiters;
  weft_id cid;    /* its id for C (weft_future_new), 0 if none */
  uint8_t state;  /* WEFT_FUTURE_* */
  uint8_t packed; /* how its values are kept: see complete_future */
  uint8_t nuv;    /* user values: 2, or 4 for a combinator's future */
  char name[22];  /* for weft.tasks(); "" if none */
} fhandle;

typedef struct conn {
  weft_id signal;
  weft_id group;
  uint32_t cancels; /* the group's cancel count when connected */
  uint8_t live;
} conn;

static inline ltask *LT(weft_state *W, weft_id id) { return weft_task_udata(W->S, id); }

/* ---- handles ---- */

static lua_Integer cache_key(int kind, weft_id id) {
  return (lua_Integer)WEFT_ID_INDEX(id) * 4 + kind;
}

/* Creates a handle for a new object and caches it (weakly). */
static shandle *new_handle(weft_state *W, lua_State *L, const char *mt, int kind, int nuv) {
  shandle *h = lua_newuserdatauv(L, sizeof *h, nuv);
  memset(h, 0, sizeof *h);
  h->kind = (uint8_t)kind;
  luaL_setmetatable(L, mt);
  (void)W;
  return h;
}

static void cache_handle(weft_state *W, lua_State *L, int idx, shandle *h) {
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_syncs);
  lua_pushvalue(L, idx);
  lua_rawseti(L, -2, cache_key(h->kind, h->id));
  lua_pop(L, 1);
}

/* Pushes the cached handle of a live object, or nil. */
static shandle *push_handle(weft_state *W, lua_State *L, int kind, weft_id id) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_syncs);
  lua_rawgeti(L, -1, cache_key(kind, id));
  lua_remove(L, -2);
  shandle *h = lua_touserdata(L, -1);
  if (!h || h->id != id || h->kind != kind) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return NULL;
  }
  return h;
}

static shandle *check_live(lua_State *L, int idx, const char *mt, const char *what) {
  shandle *h = luaL_checkudata(L, idx, mt);
  if (!h->id) luaL_argerror(L, idx, lua_pushfstring(L, "dead %s", what));
  return h;
}

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

static void set_name(fhandle *f, const char *name) {
  snprintf(f->name, sizeof f->name, "%s", name ? name : "");
}

/* Pushes a new pending future; name (may be NULL) shows in weft.tasks().
   User value 1 holds its value(s), 2 its on_done callbacks; a
   combinator's future has two more (see combinator). */
static fhandle *new_future_uv(weft_state *W, lua_State *L, const char *name, int nuv) {
  fhandle *f = lua_newuserdatauv(L, sizeof *f, nuv);
  memset(f, 0, sizeof *f);
  f->state = WEFT_FUTURE_PENDING;
  f->nuv = (uint8_t)nuv;
  set_name(f, name);
  weft_set_meta(L, W->ref_future_mt);
  return f;
}

static fhandle *new_future(weft_state *W, lua_State *L, const char *name) {
  return new_future_uv(W, L, name, 2);
}

/* Runs on_done(fn) for the future as a task spawned where on_done was
   called: fn at 1, the handle at 2, that site at 3. */
static int l_spawn_done(lua_State *L) {
  weft_state *W = weft_get(L);
  uint32_t site = (uint32_t)lua_tointeger(L, 3);
  lua_settop(L, 2);
  /* a callback that completes the next future nests four C calls a level */
  if (W->run_depth >= MAX_RUN_DEPTH / 4)
    return luaL_error(L,
                      "on_done callback set at %s: callbacks completing futures inside each "
                      "other too deep (over %d)",
                      weft_site_where(W->sites, site), MAX_RUN_DEPTH / 4);
  weft_id t = weft_new_task(W, L, 1, 1, weft_sched_root(W->S), 0);
  weft_task_set_site(W, L, t, site);
  weft_run_now(W, t);
  return 0;
}

/* Completes the future whose handle is at L[hidx] with n values at
   L[vidx] (the error value for FAILED and CANCELLED). Returns WEFT_ESTATE
   when it was already complete. */
static int complete_future(weft_state *W, lua_State *L, int hidx, int state, int vidx, int n) {
  hidx = lua_absindex(L, hidx);
  vidx = lua_absindex(L, vidx);
  fhandle *h = lua_touserdata(L, hidx);
  if (h->state != WEFT_FUTURE_PENDING) return WEFT_ESTATE;
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
  weft_complete_all(W, &h->waiters, L, vidx, n, state != WEFT_FUTURE_RESOLVED);
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
        weft_report(W, L, -1, 0, NULL);
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
                   e, weft_site_where(W->sites, site));
          weft_report(W, L, -1, 0, what);
          lua_pop(L, 1);
        }
      }
    }
  }
  lua_pop(L, 1);
  return WEFT_OK;
}

static const char *const future_states[] = {"?", "pending", "resolved", "failed", "cancelled"};

static int l_future_new(lua_State *L) {
  const char *name = luaL_optstring(L, 1, NULL);
  new_future(weft_get(L), L, name);
  return 1;
}

static fhandle *check_future(lua_State *L, int idx) { return luaL_checkudata(L, idx, FUTURE_MT); }

static int future_complete(lua_State *L, int state, int vidx, int n) {
  weft_state *W = weft_get(L);
  fhandle *f = check_future(L, 1);
  if (complete_future(W, L, 1, state, vidx, n) == WEFT_ESTATE)
    return luaL_error(L, "future already completed (%s)", future_states[f->state]);
  weft_yield_if_doomed(W, L); /* an on_done callback may have cancelled the caller */
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
  weft_state *W = weft_get(L);
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
  weft_state *W = weft_get(L);
  fhandle *h = check_future(L, 1);
  if (lua_type(L, 2) != LUA_TFUNCTION && luaL_getmetafield(L, 2, "__call") == LUA_TNIL)
    luaL_typeerror(L, 2, "function");
  lua_settop(L, 2);
  uint32_t site = weft_caller_site(W, L);
  if (h->state != WEFT_FUTURE_PENDING) {
    lua_pushvalue(L, 1);
    weft_id t = weft_new_task(W, L, 2, 1, weft_sched_root(W->S), 0);
    weft_task_set_site(W, L, t, site);
    weft_run_now(W, t);
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
  static const luaL_Reg m[] = {{"resolve", l_future_resolve},
                               {"fail", l_future_fail},
                               {"cancel", l_future_cancel},
                               {"result", l_future_result},
                               {"done", l_future_done},
                               {"on_done", l_future_on_done},
                               {NULL, NULL}};
  for (const luaL_Reg *r = m; r->name; r++)
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
  keep_future(weft_get(L), L, 1, f->cid, 1);
  return 0;
}

weft_id weft_cfuture_new(weft_state *W) {
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

weft_future weft_future_new(weft_state *W) { return (weft_future){W ? weft_cfuture_new(W) : 0}; }

void weft_push_future(weft_state *W, lua_State *L, weft_future f) { push_cfuture(W, L, f.id); }

void weft_cfuture_push(weft_state *W, lua_State *L, weft_id cid) { push_cfuture(W, L, cid); }

void weft_future_set_name(weft_state *W, weft_future f, const char *name) {
  weft_cfuture_set_name(W, f.id, name);
}

void weft_cfuture_set_name(weft_state *W, weft_id cid, const char *name) {
  fhandle *f = lua_checkstack(W->L, 2) ? push_cfuture(W, W->L, cid) : NULL;
  if (f) set_name(f, name);
  lua_pop(W->L, 1);
}

typedef struct ccomplete {
  weft_id id;
  int state, n;
} ccomplete;

static int l_ccomplete(lua_State *L) {
  weft_state *W = weft_get(L);
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
  int rc = complete_future(W, L, 2, c->state, 3, n);
  lua_pushinteger(L, rc);
  return 1;
}

int weft_cfuture_complete(weft_state *W, weft_id id, int state, int nvalues) {
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
  return weft_cfuture_complete(W, f.id, WEFT_FUTURE_RESOLVED, nvalues);
}

int weft_future_fail(weft_state *W, weft_future f) {
  return weft_cfuture_complete(W, f.id, WEFT_FUTURE_FAILED, 1);
}

int weft_future_cancel(weft_state *W, weft_future f) {
  return weft_cfuture_complete(W, f.id, WEFT_FUTURE_CANCELLED, 0);
}

int weft_future_state_of(weft_state *W, weft_id cid) {
  fhandle *f = lua_checkstack(W->L, 2) ? push_cfuture(W, W->L, cid) : NULL;
  int st = f ? f->state : WEFT_ESTALE;
  lua_pop(W->L, 1);
  return st;
}

/* ---- signals ---- */

static int l_signal_new(lua_State *L) {
  weft_state *W = weft_get(L);
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TSTRING);
  lua_settop(L, 1);
  shandle *h = new_handle(W, L, SIGNAL_MT, K_SIGNAL, 3);
  weft_id id;
  if (weft_signal_create(W->Y, &id) != WEFT_OK) return luaL_error(L, "not enough memory");
  h->id = id;
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 3);
  cache_handle(W, L, -1, h);
  return 1;
}

/* Drops disconnected entries from the connection list at L[t]. */
static void compact(lua_State *L, int t) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, t), k = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, t, i);
    conn *c = lua_touserdata(L, -1);
    if (c && c->live)
      lua_rawseti(L, t, ++k);
    else
      lua_pop(L, 1);
  }
  for (lua_Integer i = k + 1; i <= n; i++) {
    lua_pushnil(L);
    lua_rawseti(L, t, i);
  }
}

/* Fires: wakes the current waiters with L[2..top], then starts each live
   connection as a task in the group it was connected from. */
static void fire(weft_state *W, lua_State *L, shandle *h) {
  int n = lua_gettop(L) - 1;
  weft_complete_all(W, weft_signal_waiters(W->Y, h->id), L, 2, n, 0);
  if (lua_getiuservalue(L, 1, 2) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  int t = lua_gettop(L);
  lua_Integer k = (lua_Integer)lua_rawlen(L, t);
  h->firing++;
  for (lua_Integer i = 1; i <= k; i++) {
    lua_rawgeti(L, t, i);
    conn *c = lua_touserdata(L, -1);
    if (!c || !c->live) {
      lua_pop(L, 1);
      continue;
    }
    if (!weft_group_live(W->S, c->group) || weft_group_cancels(W->S, c->group) != c->cancels) {
      c->live = 0; /* its group was cancelled */
      lua_pop(L, 1);
      continue;
    }
    lua_getiuservalue(L, -1, 1);
    for (int a = 0; a < n; a++) lua_pushvalue(L, 2 + a);
    weft_id task = weft_new_task(W, L, -(n + 1), n, c->group, 0);
    lua_settop(L, t);
    weft_run_now(W, task);
  }
  h->firing--;
  if (!h->firing) compact(L, t);
  lua_settop(L, t - 1);
}

static int l_signal_fire(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, SIGNAL_MT, "signal");
  fire(W, L, h);
  weft_yield_if_doomed(W, L); /* a connection may have cancelled the caller */
  return 0;
}

static int l_signal_set(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, SIGNAL_MT, "signal");
  int n = lua_gettop(L) - 1;
  lua_createtable(L, n, 1);
  for (int i = 0; i < n; i++) {
    lua_pushvalue(L, 2 + i);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  lua_setiuservalue(L, 1, 1);
  weft_signal_set_latched(W->Y, h->id, 1);
  fire(W, L, h);
  weft_yield_if_doomed(W, L);
  return 0;
}

static int l_signal_reset(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, SIGNAL_MT, "signal");
  weft_signal_set_latched(W->Y, h->id, 0);
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1);
  return 0;
}

static int l_signal_connect(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, SIGNAL_MT, "signal");
  if (lua_type(L, 2) != LUA_TFUNCTION && luaL_getmetafield(L, 2, "__call") == LUA_TNIL)
    luaL_typeerror(L, 2, "function");
  lua_settop(L, 2);
  conn *c = lua_newuserdatauv(L, sizeof *c, 2);
  c->signal = h->id;
  c->group = W->cur ? weft_task_group(W->S, W->cur) : weft_sched_root(W->S);
  c->cancels = weft_group_cancels(W->S, c->group);
  c->live = 1;
  luaL_setmetatable(L, CONN_MT);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, 1);
  /* The connection keeps its group: a cancel of the group (or a
     disconnect) ends it, not the collector finding the handle unused. */
  weft_push_group(W, L, c->group);
  lua_setiuservalue(L, -2, 2);
  if (lua_getiuservalue(L, 1, 2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, 1, 2);
  }
  if (!h->firing) compact(L, lua_gettop(L));
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 1);
  return 1;
}

static int l_conn_disconnect(lua_State *L) {
  conn *c = luaL_checkudata(L, 1, CONN_MT);
  c->live = 0;
  return 0;
}

static int l_conn_index(lua_State *L) {
  conn *c = luaL_checkudata(L, 1, CONN_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "disconnect") == 0)
    lua_pushcfunction(L, l_conn_disconnect);
  else if (strcmp(k, "connected") == 0)
    lua_pushboolean(L, c->live);
  else
    lua_pushnil(L);
  return 1;
}

static int poll_signal(weft_state *W, lua_State *L, int idx, int one, weft_wlist **list) {
  shandle *h = lua_touserdata(L, idx);
  if (!h->id) {
    lua_pushliteral(L, "dead signal");
    return -1;
  }
  if (!weft_signal_latched(W->Y, h->id)) {
    *list = weft_signal_waiters(W->Y, h->id);
    return 0;
  }
  lua_getiuservalue(L, idx, 1);
  int t = lua_gettop(L);
  lua_getfield(L, t, "n");
  int n = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (one) n = 1;
  luaL_checkstack(L, n, NULL);
  for (int i = 1; i <= n; i++) lua_rawgeti(L, t, i);
  lua_remove(L, t);
  return 1;
}

static int l_signal_index(lua_State *L) {
  luaL_checkudata(L, 1, SIGNAL_MT);
  const char *k = luaL_checkstring(L, 2);
  static const luaL_Reg m[] = {{"fire", l_signal_fire},
                               {"set", l_signal_set},
                               {"reset", l_signal_reset},
                               {"connect", l_signal_connect},
                               {NULL, NULL}};
  for (const luaL_Reg *r = m; r->name; r++)
    if (strcmp(k, r->name) == 0) {
      lua_pushcfunction(L, r->func);
      return 1;
    }
  if (strcmp(k, "name") == 0)
    lua_getiuservalue(L, 1, 3);
  else if (strcmp(k, "is_set") == 0) {
    shandle *h = lua_touserdata(L, 1);
    lua_pushboolean(L, h->id && weft_signal_latched(weft_get(L)->Y, h->id));
  } else
    lua_pushnil(L);
  return 1;
}

static int l_signal_tostring(lua_State *L) {
  luaL_checkudata(L, 1, SIGNAL_MT);
  lua_getiuservalue(L, 1, 3);
  lua_pushfstring(L, "signal %s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "(unnamed)");
  return 1;
}

static int l_signal_gc(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = lua_touserdata(L, 1);
  if (h->id && W->Y) weft_signal_destroy(W->Y, h->id);
  h->id = 0;
  return 0;
}

/* ---- channels ---- */

static int l_channel_new(lua_State *L) {
  weft_state *W = weft_get(L);
  uint32_t cap = WEFT_UNBOUNDED;
  if (!lua_isnoneornil(L, 1)) {
    lua_Integer c = luaL_checkinteger(L, 1);
    if (c < 0 || c > 0x7fffffff) return luaL_argerror(L, 1, "capacity must be >= 0");
    cap = (uint32_t)c;
  }
  shandle *h = new_handle(W, L, CHANNEL_MT, K_CHANNEL, 1);
  weft_id id;
  if (weft_channel_create(W->Y, cap, &id) != WEFT_OK) return luaL_error(L, "not enough memory");
  h->id = id;
  cache_handle(W, L, -1, h);
  return 1;
}

static const weft_waitable channel_send_what = {NULL, "channel send", NULL};

static void push_ref(weft_state *W, lua_State *L, int ref) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_values);
  lua_rawgeti(L, -1, ref);
  lua_remove(L, -2);
}

static void unref(weft_state *W, lua_State *L, int ref) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_values);
  luaL_unref(L, -1, ref);
  lua_pop(L, 1);
}

static int make_ref(weft_state *W, lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_values);
  lua_pushvalue(L, idx);
  int r = luaL_ref(L, -2);
  lua_pop(L, 1);
  return r;
}

static void drop_sender(weft_state *W, lua_State *L, weft_id task) {
  ltask_cold *c = weft_cold_if(W, task, LT(W, task));
  if (!c) return;
  if (c->chval > 0) unref(W, L, c->chval);
  c->chval = 0;
}

/* Takes the oldest waiting sender's value: into the buffer when `buffer`,
   else pushed on L. The sender wakes. Returns 0 when none waits. */
static int take_sender(weft_state *W, lua_State *L, weft_id ch, int buffer) {
  weft_wlist *senders = weft_channel_senders(W->Y, ch);
  weft_rec r = weft_wlist_head(senders);
  if (!r) return 0;
  weft_id w = weft_rec_waiter(W->S, r);
  ltask_cold *c = weft_cold_if(W, w, LT(W, w)); /* made when it began to wait */
  int ref = c->chval;
  c->chval = 0;
  if (buffer) {
    weft_channel_push(W->Y, ch, (uint64_t)ref);
  } else {
    push_ref(W, L, ref);
    unref(W, L, ref);
  }
  weft_complete(W, r, L, lua_gettop(L), 0, 0);
  return 1;
}

/* Tries to hand v (at L[idx]) over without waiting: to the oldest waiting
   receiver, else into the buffer. Returns WEFT_OK, WEFT_ELIMIT (full) or
   WEFT_ECLOSED. */
static int offer(weft_state *W, lua_State *L, weft_id ch, int idx) {
  if (weft_channel_closed(W->Y, ch)) return WEFT_ECLOSED;
  weft_rec r = weft_wlist_head(weft_channel_receivers(W->Y, ch));
  if (r) {
    weft_id w = weft_rec_waiter(W->S, r);
    ltask_cold *c = weft_cold_if(W, w, LT(W, w)); /* made when it began to wait */
    c->chrecv = ch;
    c->chslot = weft_rec_slot(W->S, r);
    weft_complete(W, r, L, idx, 1, 0);
    return WEFT_OK;
  }
  if (weft_channel_count(W->Y, ch) >= weft_channel_capacity(W->Y, ch)) return WEFT_ELIMIT;
  int ref = make_ref(W, L, idx);
  int rc = weft_channel_push(W->Y, ch, (uint64_t)ref);
  if (rc != WEFT_OK) {
    unref(W, L, ref);
    if (rc == WEFT_ENOMEM) luaL_error(L, "not enough memory");
  }
  return rc;
}

static void return_value(weft_state *W, lua_State *L, weft_id task, ltask *lt) {
  ltask_cold *c = weft_cold_if(W, task, lt);
  if (!c) return;
  weft_id ch = c->chrecv;
  c->chrecv = 0;
  if (!ch || !lt->co || !weft_channel_live(W->Y, ch) || !lua_checkstack(L, 4)) return;
  lua_pushvalue(lt->co, lt->base + (lt->single ? 0 : c->chslot));
  lua_xmove(lt->co, L, 1);
  weft_rec r = weft_wlist_head(weft_channel_receivers(W->Y, ch));
  if (r) {
    weft_id w = weft_rec_waiter(W->S, r);
    ltask_cold *next = weft_cold_if(W, w, LT(W, w)); /* made when it began to wait */
    next->chrecv = ch;
    next->chslot = weft_rec_slot(W->S, r);
    weft_complete(W, r, L, lua_gettop(L), 1, 0);
  } else {
    int ref = make_ref(W, L, -1);
    if (weft_channel_unshift(W->Y, ch, (uint64_t)ref) != WEFT_OK) unref(W, L, ref);
  }
  lua_pop(L, 1);
}

/* Tries to take a value without waiting; pushes it and returns 1, or
   returns 0 (empty). */
static int take(weft_state *W, lua_State *L, weft_id ch) {
  uint64_t v;
  if (weft_channel_pop(W->Y, ch, &v) == WEFT_OK) {
    push_ref(W, L, (int)v);
    unref(W, L, (int)v);
    take_sender(W, L, ch, 1); /* a waiting sender fills the freed room */
    return 1;
  }
  return take_sender(W, L, ch, 0);
}

static int send_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  weft_state *W = weft_get(L);
  ltask *lt = LT(W, weft_thread_task(L));
  if (lt->raise) {
    lt->raise = 0;
    return luaL_error(L, "send on a closed channel");
  }
  return 0;
}

static int l_channel_send(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, CHANNEL_MT, "channel");
  luaL_checkany(L, 2);
  if (lua_isnil(L, 2)) return luaL_argerror(L, 2, "cannot send nil");
  lua_settop(L, 2);
  int rc = offer(W, L, h->id, 2);
  if (rc == WEFT_OK) return 0;
  if (rc == WEFT_ECLOSED) return luaL_error(L, "send on a closed channel");
  weft_id id = weft_thread_task(L);
  if (!id || id != W->cur || !lua_isyieldable(L))
    return luaL_error(L, "channel is full and send can only wait inside a task (use try_send)");
  ltask_cold *c = weft_cold(W, id, LT(W, id));
  if (!c) return luaL_error(L, "not enough memory");
  weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
  if (weft_wait_on(W->S, id, 0, weft_channel_senders(W->Y, h->id)) != WEFT_OK)
    return luaL_error(L, "not enough memory");
  c->chval = make_ref(W, L, 2);
  c->wwhat = &channel_send_what;
  c->wobj = h->id;
  return weft_wait_yield(W, L, id, 1, lua_gettop(L) + 1, send_k);
}

static int l_channel_try_send(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, CHANNEL_MT, "channel");
  luaL_checkany(L, 2);
  if (lua_isnil(L, 2)) return luaL_argerror(L, 2, "cannot send nil");
  int rc = offer(W, L, h->id, 2);
  lua_pushboolean(L, rc == WEFT_OK);
  if (rc == WEFT_OK) return 1;
  lua_pushstring(L, rc == WEFT_ECLOSED ? "closed" : "full");
  return 2;
}

static int poll_channel(weft_state *W, lua_State *L, int idx, int one, weft_wlist **list) {
  shandle *h = lua_touserdata(L, idx);
  (void)one;
  if (!h->id) {
    lua_pushliteral(L, "dead channel");
    return -1;
  }
  if (take(W, L, h->id)) return 1;
  if (weft_channel_closed(W->Y, h->id)) {
    lua_pushnil(L);
    if (!one) {
      lua_pushliteral(L, "closed");
    }
    return 1;
  }
  *list = weft_channel_receivers(W->Y, h->id);
  return 0;
}

static int l_channel_recv(lua_State *L) {
  check_live(L, 1, CHANNEL_MT, "channel");
  lua_settop(L, 1);
  return weft_l_wait(L);
}

static int l_channel_try_recv(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, CHANNEL_MT, "channel");
  if (take(W, L, h->id)) return 1;
  lua_pushnil(L);
  lua_pushstring(L, weft_channel_closed(W->Y, h->id) ? "closed" : "empty");
  return 2;
}

static int l_channel_close(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, CHANNEL_MT, "channel");
  if (weft_channel_closed(W->Y, h->id)) return 0;
  weft_channel_close(W->Y, h->id);
  lua_settop(L, 1);
  /* Receivers only wait on an empty channel: they all get nil, "closed". */
  lua_pushnil(L);
  lua_pushliteral(L, "closed");
  weft_complete_all(W, weft_channel_receivers(W->Y, h->id), L, 2, 2, 0);
  lua_pushliteral(L, "send on a closed channel");
  weft_wlist *senders = weft_channel_senders(W->Y, h->id);
  weft_rec r;
  while ((r = weft_wlist_head(senders)) != 0) {
    drop_sender(W, L, weft_rec_waiter(W->S, r));
    weft_complete(W, r, L, 4, 1, 1);
  }
  return 0;
}

static int l_channel_len(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = check_live(L, 1, CHANNEL_MT, "channel");
  lua_pushinteger(L, weft_channel_count(W->Y, h->id));
  return 1;
}

static int l_channel_index(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = luaL_checkudata(L, 1, CHANNEL_MT);
  const char *k = luaL_checkstring(L, 2);
  static const luaL_Reg m[] = {{"send", l_channel_send},         {"recv", l_channel_recv},
                               {"try_send", l_channel_try_send}, {"try_recv", l_channel_try_recv},
                               {"close", l_channel_close},       {NULL, NULL}};
  for (const luaL_Reg *r = m; r->name; r++)
    if (strcmp(k, r->name) == 0) {
      lua_pushcfunction(L, r->func);
      return 1;
    }
  if (strcmp(k, "closed") == 0)
    lua_pushboolean(L, !h->id || weft_channel_closed(W->Y, h->id));
  else if (strcmp(k, "capacity") == 0) {
    uint32_t c = h->id ? weft_channel_capacity(W->Y, h->id) : 0;
    if (c == WEFT_UNBOUNDED)
      lua_pushnil(L);
    else
      lua_pushinteger(L, c);
  } else
    lua_pushnil(L);
  return 1;
}

static void drop_value(void *ud, uint64_t v) {
  weft_state *W = ud;
  unref(W, W->L, (int)v);
}

static int l_channel_gc(lua_State *L) {
  weft_state *W = weft_get(L);
  shandle *h = lua_touserdata(L, 1);
  if (h->id && W->Y) weft_channel_destroy(W->Y, h->id, drop_value, W);
  h->id = 0;
  return 0;
}

/* ---- combinators ---- */

static void comb_resume(weft_sched *S, weft_id id, void *ud);
static void comb_cancel(weft_sched *S, weft_id id, void *ud);
static const weft_task_class comb_class = {comb_resume, comb_cancel, NULL};

/* A combinator's Lua data is its out future, anchored in the registry at
   its cold record's ref while it runs, with the list in user value 3
   (timeout: x in 3 and the seconds in 4) and all's results in 4. */
enum { COMB_OUT = 0, COMB_LIST = 3, COMB_RESULTS = 4 };

static void push_comb(weft_state *W, lua_State *L, weft_id id, int field) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, weft_cold_if(W, id, LT(W, id))->ref);
  if (field == COMB_OUT) return;
  lua_getiuservalue(L, -1, field);
  lua_remove(L, -2);
}

/* Lets go of a combinator's data: the out future no longer keeps the
   list (nor all's results, unless they are its value). */
static void comb_release(weft_state *W, lua_State *L, weft_id id) {
  ltask_cold *c = weft_cold_if(W, id, LT(W, id));
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
  complete_future(a->W, L, 2, a->state, 3, a->n);
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
      complete_future(W, L, out, WEFT_FUTURE_FAILED, -1, 1);
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
  weft_task_finish(W->S, id, WEFT_TASK_DONE);
}

static void comb_resume(weft_sched *S, weft_id id, void *ud) {
  weft_state *W = weft_sched_user(S);
  ltask *lt = ud;
  lua_State *L = W->curL;
  lua_checkstack(L, 8);
  if (lt->comb == C_ALL) {
    push_comb(W, L, id, COMB_OUT);
    fhandle *h = lua_touserdata(L, -1);
    if (h && h->state == WEFT_FUTURE_PENDING) {
      push_comb(W, L, id, COMB_RESULTS);
      complete_future(W, L, -2, WEFT_FUTURE_RESOLVED, -1, 1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  comb_finish(W, id, L);
}

static void comb_cancel(weft_sched *S, weft_id id, void *ud) {
  weft_state *W = weft_sched_user(S);
  lua_State *L = W->curL;
  (void)ud;
  lua_checkstack(L, 8);
  push_comb(W, L, id, COMB_OUT);
  fhandle *h = lua_touserdata(L, -1);
  if (h && h->state == WEFT_FUTURE_PENDING) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
    complete_future(W, L, -2, WEFT_FUTURE_CANCELLED, -1, 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  comb_release(W, L, id);
}

/* Builds a combinator over the list at L[list] (timeout: x at L[list] and
   seconds at L[list+1]). Pushes the out future. */
static void combinator(weft_state *W, lua_State *L, int list, int mode) {
  list = lua_absindex(L, list);
  int n = mode == C_TIMEOUT ? 2 : (int)lua_rawlen(L, list);
  if (n > WEFT_WAIT_MAX) luaL_argerror(L, 1, "list too long");
  luaL_checkstack(L, 16, NULL);
  static const char *const names[] = {NULL, "first", "all", "timeout"};
  fhandle *out = new_future_uv(W, L, names[mode], 4);
  int outi = lua_gettop(L);
  lua_pushvalue(L, list);
  lua_setiuservalue(L, outi, COMB_LIST);
  if (mode == C_TIMEOUT) {
    lua_pushvalue(L, list + 1);
    lua_setiuservalue(L, outi, COMB_RESULTS);
  } else if (mode == C_ALL) {
    if (n == 0) {
      lua_newtable(L);
      complete_future(W, L, outi, WEFT_FUTURE_RESOLVED, -1, 1);
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
  weft_id g = W->cur ? weft_task_group(W->S, W->cur) : 0;
  int rc = weft_task_create(W->S, g, 0, &comb_class, &task, (void **)&lt);
  if (rc != WEFT_OK) luaL_error(L, "cannot create combinator: %s", weft_strerror(rc));
  ltask_cold *c = weft_cold(W, task, lt);
  if (!c) {
    weft_task_finish(W->S, task, WEFT_TASK_CANCELLED);
    luaL_error(L, "not enough memory");
  }
  W->spawned++;
  c->deliver = comb_deliver;
  lt->comb = (unsigned)mode;
  lua_pushvalue(L, outi);
  c->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  weft_wait_begin(W->S, task, mode == C_ALL ? WEFT_WAIT_ALL : WEFT_WAIT_FIRST);
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
    int r = weft_wait_add(W, L, task, top + 2, i, mode == C_ALL, 1);
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
    weft_wait_abort(W, task);
    if (out->state == WEFT_FUTURE_PENDING && mode == C_ALL) {
      lua_getiuservalue(L, outi, COMB_RESULTS);
      complete_future(W, L, outi, WEFT_FUTURE_RESOLVED, -1, 1);
      lua_pop(L, 1);
    }
    comb_finish(W, task, L);
  } else {
    weft_wait_commit(W->S, task);
  }
  lua_settop(L, outi);
}

static void check_list(lua_State *L, int idx, const char *name) {
  if (lua_type(L, idx) != LUA_TTABLE || weft_waitable_of(L, idx))
    luaL_error(L, "bad argument #1 to '%s' (list expected, got %s)", name, luaL_typename(L, idx));
}

static int l_first(lua_State *L) {
  check_list(L, 1, "first");
  if (lua_rawlen(L, 1) == 0) return luaL_argerror(L, 1, "empty list: nothing can finish first");
  combinator(weft_get(L), L, 1, C_FIRST);
  return 1;
}

static int l_all(lua_State *L) {
  check_list(L, 1, "all");
  combinator(weft_get(L), L, 1, C_ALL);
  return 1;
}

static int l_timeout(lua_State *L) {
  /* wait(nil) is a frame, but timeout(nil, s) is a typo (a misspelt
     field): there is nothing to time out. */
  if (lua_isnoneornil(L, 1)) return luaL_argerror(L, 1, "something to wait on expected, got nil");
  double s = luaL_checknumber(L, 2);
  if (isnan(s)) return luaL_argerror(L, 2, "seconds must not be NaN");
  lua_settop(L, 2);
  combinator(weft_get(L), L, 1, C_TIMEOUT);
  return 1;
}

void weft_push_all(weft_state *W, lua_State *L, int list) { combinator(W, L, list, C_ALL); }

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

static void signal_name(weft_state *W, lua_State *L, weft_id id, const void *ptr) {
  (void)ptr;
  if (push_handle(W, L, K_SIGNAL, id)) {
    lua_getiuservalue(L, -1, 3);
    lua_remove(L, -2);
  }
}

static const weft_waitable future_waitable = {poll_future, "future", future_name};
static const weft_waitable signal_waitable = {poll_signal, "signal", signal_name};
static const weft_waitable channel_waitable = {poll_channel, "channel recv", NULL};

/* A cancelled task gives back what channels gave it or hold for it. */
static void give_back(weft_state *W, lua_State *L, weft_id task, ltask *lt) {
  drop_sender(W, L, task);
  return_value(W, L, task, lt);
}

void weft_open_sync(weft_state *W, lua_State *L) {
  W->give_back = give_back;
  W->push_all = weft_push_all;
  W->ref_future_mt = weft_new_meta(L, FUTURE_MT, l_future_index, l_future_tostring, NULL,
                                   &future_waitable, "future");
  lua_pop(L, 1);
  weft_new_meta(L, SIGNAL_MT, l_signal_index, l_signal_tostring, l_signal_gc, &signal_waitable,
                "signal");
  lua_pop(L, 1);
  weft_new_meta(L, CHANNEL_MT, l_channel_index, NULL, l_channel_gc, &channel_waitable, "channel");
  lua_pushcfunction(L, l_channel_len);
  lua_setfield(L, -2, "__len");
  lua_pop(L, 1);
  weft_new_meta(L, CONN_MT, l_conn_index, NULL, NULL, NULL, "connection");
  lua_pop(L, 1);
  static const luaL_Reg api[] = {{"future", l_future_new},
                                 {"signal", l_signal_new},
                                 {"channel", l_channel_new},
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
