/* What an engine does to scripts' objects from C: groups (the calling
   script's clock and rate, new groups, pause, resume, cancel, time
   scale), signals and channels an engine event feeds, a task's results,
   and calling a script function under the budget. Signals, channels and
   new groups are made and worked through the script API's own
   constructors and methods, so C and scripts see one behaviour; C holds
   what it made in a registry table until it drops it. */
#include <stdio.h>
#include <string.h>

#include "accounts/budget.h"
#include "accounts/handles.h"
#include "base/internal.h"
#include "accounts/report.h"
#include "state.h"

#define HELD "weft.cheld" /* registry: [kind][id] = handle C holds */

weft_group weft_current_group(weft_state *W) {
  weft_id g = W->cur ? weft__task_group(W->S, W->cur) : 0;
  return (weft_group){g ? g : weft__sched_root(W->S)};
}

double weft_group_time(weft_state *W, weft_group g) {
  if (!weft__group_live(W->S, g.id)) return -1.0;
  return weft__group_now(W->S, g.id);
}

double weft_group_rate(weft_state *W, weft_group g) {
  if (!weft__group_live(W->S, g.id)) return -1.0;
  if (weft__group_paused(W->S, g.id)) return 0.0; /* itself or an ancestor */
  double rate = 1.0;
  for (weft_id id = g.id; id; id = weft__group_parent(W->S, id))
    rate *= weft__group_scale(W->S, id);
  return rate;
}

/* ---- what C holds ---- */

enum { HELD_SIGNAL = 1, HELD_CHANNEL, HELD_GROUP };

/* Pushes held[kind] (made when missing). */
static void push_held(lua_State *L, int kind) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, HELD) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 3, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, HELD);
  }
  if (lua_rawgeti(L, -1, kind) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, kind);
  }
  lua_remove(L, -2);
}

/* Protected (kind, id at 1, 2; the handle at 3): held[kind][id] = handle. */
static int l_hold(lua_State *L) {
  push_held(L, (int)lua_tointeger(L, 1));
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_rawset(L, -3);
  return 0;
}

/* Protected (the API function's name at 1 as a light C string, then its
   arguments): calls it, leaves its first result. */
static int l_make(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_push_api(W);
  lua_getfield(L, -1, (const char *)lua_touserdata(L, 1));
  lua_replace(L, 1);
  lua_pop(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* Makes an object with api[ctor](the nargs values on top) and holds it
   as held[kind][serial]; returns the serial, 0 when it failed (the
   message in W->errbuf). */
static uint64_t make_held(weft_state *W, int kind, const char *ctor, int nargs) {
  lua_State *L = W->L;
  lua_pushcfunction(L, l_make);
  lua_pushlightuserdata(L, (void *)ctor);
  lua_rotate(L, -(nargs + 2), 2);
  if (lua_pcall(L, nargs + 1, 1, 0) != LUA_OK) {
    snprintf(W->errbuf, sizeof W->errbuf, "%s", weft__tostring(L, -1));
    lua_pop(L, 2);
    return 0;
  }
  uint64_t id = ++W->cserial;
  lua_pushcfunction(L, l_hold);
  lua_pushinteger(L, kind);
  lua_pushinteger(L, (lua_Integer)id);
  lua_pushvalue(L, -4);
  int st = lua_pcall(L, 3, 0, 0);
  lua_pop(L, st == LUA_OK ? 1 : 2);
  return st == LUA_OK ? id : 0;
}

/* Pushes the handle held as held[kind][id] onto L (nil when none);
   returns whether there is one. Allocates nothing. */
static int push_handle(lua_State *L, int kind, uint64_t id) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, HELD) == LUA_TTABLE) {
    if (lua_rawgeti(L, -1, kind) == LUA_TTABLE) {
      lua_rawgeti(L, -1, (lua_Integer)id);
      lua_replace(L, -3);
      lua_pop(L, 1);
      return !lua_isnil(L, -1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  return 0;
}

static void drop_handle(weft_state *W, int kind, uint64_t id) {
  lua_State *L = W->L;
  if (!lua_checkstack(L, 4)) return;
  if (!push_handle(L, kind, id)) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, HELD);
  lua_rawgeti(L, -1, kind);
  lua_pushnil(L);
  lua_rawseti(L, -2, (lua_Integer)id); /* an existing key: no allocation */
  lua_pop(L, 2);
}

/* Protected (the method's name at 1, the handle at 2, then arguments):
   handle:method(...), its first two results left. */
static int l_method(lua_State *L) {
  const char *m = lua_touserdata(L, 1);
  lua_getfield(L, 2, m);
  lua_replace(L, 1);
  lua_call(L, lua_gettop(L) - 1, 2);
  return 2;
}

/* Calls method on the object held as held[kind][id] with the nargs
   values on top of W->L, popped. WEFT_OK with its first two results
   pushed, WEFT_ESTALE (nothing popped), or WEFT_ESCRIPT (the message in
   W->errbuf, nothing pushed). */
static int call_method(weft_state *W, int kind, uint64_t id, const char *method, int nargs) {
  lua_State *L = W->L;
  if (nargs < 0 || lua_gettop(L) < nargs) return WEFT_EINVAL;
  if (!lua_checkstack(L, 4)) return WEFT_ENOMEM;
  if (!push_handle(L, kind, id)) {
    lua_pop(L, 1);
    return WEFT_ESTALE;
  }
  lua_pushcfunction(L, l_method);
  lua_pushlightuserdata(L, (void *)method);
  lua_rotate(L, -3, 2);           /* ..., l_method, name, handle */
  lua_rotate(L, -(nargs + 3), 3); /* l_method, name, handle, args... */
  if (lua_pcall(L, nargs + 2, 2, 0) != LUA_OK) {
    snprintf(W->errbuf, sizeof W->errbuf, "%s", weft__tostring(L, -1));
    lua_pop(L, 2);
    return WEFT_ESCRIPT;
  }
  return WEFT_OK;
}

/* call_method for what returns nothing C needs. */
static int call_void(weft_state *W, int kind, uint64_t id, const char *method, int nargs) {
  if (!W) return WEFT_EINVAL;
  int rc = call_method(W, kind, id, method, nargs);
  if (rc == WEFT_OK) lua_pop(W->L, 2);
  return rc;
}

/* ---- signals ---- */

weft_signal weft_signal_new(weft_state *W) {
  weft_signal s = {0};
  if (W && lua_checkstack(W->L, 8)) s.id = make_held(W, HELD_SIGNAL, "signal", 0);
  return s;
}

int weft_signal_fire(weft_state *W, weft_signal s, int nvalues) {
  return call_void(W, HELD_SIGNAL, s.id, "fire", nvalues);
}

void weft_push_signal(weft_state *W, lua_State *L, weft_signal s) {
  (void)W;
  push_handle(L, HELD_SIGNAL, s.id);
}

void weft_signal_drop(weft_state *W, weft_signal s) {
  if (W) drop_handle(W, HELD_SIGNAL, s.id);
}

/* ---- channels ---- */

weft_channel weft_channel_new(weft_state *W, uint32_t capacity) {
  weft_channel c = {0};
  if (!W || !lua_checkstack(W->L, 8)) return c;
  if (capacity)
    lua_pushinteger(W->L, capacity);
  else
    lua_pushnil(W->L);
  c.id = make_held(W, HELD_CHANNEL, "channel", 1);
  return c;
}

int weft_channel_send(weft_state *W, weft_channel c) {
  if (!W || lua_gettop(W->L) < 1) return WEFT_EINVAL;
  lua_State *L = W->L;
  if (!lua_checkstack(L, 2)) return WEFT_ENOMEM;
  lua_pushvalue(L, -1); /* the value stays until the channel took it */
  int rc = call_method(W, HELD_CHANNEL, c.id, "try_send", 1);
  if (rc == WEFT_ESTALE) lua_pop(L, 1);
  if (rc != WEFT_OK) return rc;
  int sent = lua_toboolean(L, -2);
  int closed =
      !sent && lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "closed") == 0;
  lua_pop(L, sent ? 3 : 2);
  return sent ? WEFT_OK : closed ? WEFT_ECLOSED : WEFT_ELIMIT;
}

int weft_channel_close(weft_state *W, weft_channel c) {
  return call_void(W, HELD_CHANNEL, c.id, "close", 0);
}

void weft_push_channel(weft_state *W, lua_State *L, weft_channel c) {
  (void)W;
  push_handle(L, HELD_CHANNEL, c.id);
}

void weft_channel_drop(weft_state *W, weft_channel c) {
  if (W) drop_handle(W, HELD_CHANNEL, c.id);
}

/* ---- groups ----
   Named by their scheduler ids, as weft_current_group names them; a
   group C made is held under that id. */

/* Protected (parent id at 1, name as a light C string or nil at 2):
   group{name =, parent =}, held; returns its id. */
static int l_group_new(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_id parent = (weft_id)lua_tointeger(L, 1);
  const char *name = lua_touserdata(L, 2);
  weft_push_api(W);
  lua_getfield(L, -1, "group");
  lua_createtable(L, 0, 2);
  if (name) {
    lua_pushstring(L, name);
    lua_setfield(L, -2, "name");
  }
  if (parent) {
    weft__push_group_id(W, L, parent);
    lua_setfield(L, -2, "parent");
  }
  lua_call(L, 1, 1);
  weft_id id = ((ghandle *)luaL_checkudata(L, -1, WEFT_GROUP_MT))->id;
  push_held(L, HELD_GROUP);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)id);
  lua_pushinteger(L, (lua_Integer)id);
  return 1;
}

weft_group weft_group_new(weft_state *W, weft_group parent, const char *name) {
  weft_group g = {0};
  if (!W || (parent.id && !weft__group_live(W->S, parent.id)) || !lua_checkstack(W->L, 8)) return g;
  lua_State *L = W->L;
  lua_pushcfunction(L, l_group_new);
  lua_pushinteger(L, (lua_Integer)parent.id);
  if (name)
    lua_pushlightuserdata(L, (void *)name);
  else
    lua_pushnil(L);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK)
    snprintf(W->errbuf, sizeof W->errbuf, "%s", weft__tostring(L, -1));
  else
    g.id = (weft_id)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return g;
}

int weft_group_pause(weft_state *W, weft_group g) {
  return W ? weft__sched_pause_group(W->S, g.id) : WEFT_EINVAL;
}

int weft_group_resume(weft_state *W, weft_group g) {
  return W ? weft__sched_resume_group(W->S, g.id) : WEFT_EINVAL;
}

int weft_group_cancel(weft_state *W, weft_group g) {
  if (!W) return WEFT_EINVAL;
  int rc = weft__sched_cancel_group(W->S, g.id);
  return rc == WEFT_EBUSY ? WEFT_OK : rc; /* a running task in it unwinds when it returns */
}

int weft_group_set_time_scale(weft_state *W, weft_group g, double scale) {
  return W ? weft__group_set_scale(W->S, g.id, scale) : WEFT_EINVAL;
}

void weft_push_group(weft_state *W, lua_State *L, weft_group g) {
  if (weft__group_live(W->S, g.id))
    weft__push_group_id(W, L, g.id);
  else
    lua_pushnil(L);
}

void weft_group_drop(weft_state *W, weft_group g) {
  if (W) drop_handle(W, HELD_GROUP, g.id);
}

/* ---- a task's results ---- */

int weft_task_push_results(weft_state *W, weft_task t) {
  if (!W) return WEFT_EINVAL;
  int r = weft_task_result(W, t);
  if (r != WEFT_DONE) return r < 0 ? r : WEFT_ESTATE;
  return weft__kept_results(W, t.id);
}

/* ---- calling a script function ---- */

int weft_call(weft_state *W, int nargs, int nresults) {
  if (!W || nargs < 0 || (nresults < 0 && nresults != LUA_MULTRET)) return WEFT_EINVAL;
  lua_State *L = W->L;
  if (lua_gettop(L) < nargs + 1 || !lua_isfunction(L, -(nargs + 1))) return WEFT_EINVAL;
  W->in_call++;
  int st = weft__budget_pcall(W, L, nargs, nresults, 0,
                              "a function called from C ran too long without returning", 0);
  W->in_call--;
  return st == LUA_OK ? WEFT_OK : WEFT_ESCRIPT;
}

/* ---- tasks: the running one, a script's handles, and modules ---- */

weft_task weft_current_task(weft_state *W) { return (weft_task){W ? W->cur : 0}; }

/* Protected (a task handle at 1): kept[its id] = it, so C holds it. */
static int l_hold_task(lua_State *L) {
  weft_state *W = weft__get(L);
  thandle *h = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_kept);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, (lua_Integer)h->id);
  return 0;
}

weft_task weft_task_from_lua(weft_state *W, lua_State *L, int idx) {
  weft_task none = {0};
  if (!W || !L) return none;
  thandle *h = luaL_testudata(L, idx, WEFT_TASK_MT);
  if (!h || !h->id || !lua_checkstack(L, 1) || !lua_checkstack(W->L, 3)) return none;
  lua_pushvalue(L, idx);
  if (L != W->L) lua_xmove(L, W->L, 1);
  lua_pushcfunction(W->L, l_hold_task);
  lua_insert(W->L, -2);
  if (lua_pcall(W->L, 1, 0, 0) != LUA_OK) {
    snprintf(W->errbuf, sizeof W->errbuf, "%s", weft__tostring(W->L, -1));
    lua_pop(W->L, 1);
    return none;
  }
  return (weft_task){h->id};
}

/* Protected (the task's id at 1): pushes its handle, made if need be. */
static int l_push_task(lua_State *L) {
  weft__push_task(weft__get(L), L, (weft_id)lua_tointeger(L, 1));
  return 1;
}

void weft_task_push(weft_state *W, lua_State *L, weft_task t) {
  if (!W || !L || !lua_checkstack(L, 3)) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_kept); /* held by C: ended ones too */
  lua_rawgeti(L, -1, (lua_Integer)t.id);
  lua_remove(L, -2);
  if (!t.id || !lua_isnil(L, -1) || weft__task_state(W->S, t.id) <= 0) return;
  lua_pop(L, 1);
  lua_pushcfunction(L, l_push_task);
  lua_pushinteger(L, (lua_Integer)t.id);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) { /* out of memory */
    lua_pop(L, 1);
    lua_pushnil(L);
  }
}

/* (the module's name at 1, a light C string): require(name). */
static int l_require(lua_State *L) {
  const char *name = lua_touserdata(L, 1);
  weft_push_api(weft__get(L));
  lua_getfield(L, -1, "require");
  lua_pushstring(L, name);
  lua_call(L, 1, 1);
  return 1;
}

int weft_require(weft_state *W, const char *name) {
  if (!W || !name) return WEFT_EINVAL;
  if (!lua_checkstack(W->L, 4)) return WEFT_ENOMEM;
  lua_pushcfunction(W->L, l_require);
  lua_pushlightuserdata(W->L, (void *)name);
  return weft_call(W, 1, 1);
}
