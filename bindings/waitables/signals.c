/* Signals as Lua values a task can wait on, and their connections: a
   function connected to a signal runs as a task of its own at each fire. */
#include <string.h>

#include "signals.h"
#include "../base/names.h"
#include "../core/task.h"
#include "../core/wait.h"

#define SIGNAL_MT "weft.signal"
#define CONN_MT "weft.connection"

typedef struct conn {
  weft_id signal;
  weft_id group;
  uint32_t cancels; /* the group's cancel count when connected */
  uint8_t live;
} conn;

static int l_signal_new(lua_State *L) {
  weft_state *W = weft__get(L);
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TSTRING);
  lua_settop(L, 1);
  shandle *h = weft__sync_handle_new(W, L, SIGNAL_MT, WEFT_K_SIGNAL, 3);
  weft_id id;
  if (weft__signal_create(W->sync, &id) != WEFT_OK) return luaL_error(L, "not enough memory");
  h->id = id;
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 3);
  weft__sync_handle_cache(W, L, -1, h);
  return 1;
}

/* Drops disconnected entries from the connection list at L[t]; O(its
   length). connect compacts only once the list has doubled since the
   last compaction, so a connect costs O(1) amortized and the list holds
   at most twice its live connections (plus a fire's worth). */
static void compact(lua_State *L, int t, shandle *h) {
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
  h->compact = k < 8 ? 16 : (uint32_t)(2 * k);
}

/* Fires: wakes the current waiters with L[2..top], then starts each live
   connection as a task in the group it was connected from. */
static void fire(weft_state *W, lua_State *L, shandle *h) {
  int n = lua_gettop(L) - 1;
  weft__complete_all(W, weft__signal_waiters(W->sync, h->id), L, 2, n, 0);
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
    if (!weft__group_live(W->S, c->group) || weft__group_cancels(W->S, c->group) != c->cancels) {
      c->live = 0; /* its group was cancelled */
      lua_pop(L, 1);
      continue;
    }
    lua_getiuservalue(L, -1, 1);
    for (int a = 0; a < n; a++) lua_pushvalue(L, 2 + a);
    weft_id task = weft__new_task(W, L, -(n + 1), n, c->group, 0);
    lua_settop(L, t);
    weft__run_now(W, task);
  }
  h->firing--;
  if (!h->firing) compact(L, t, h);
  lua_settop(L, t - 1);
}

static int l_signal_fire(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, SIGNAL_MT, "signal");
  fire(W, L, h);
  weft__yield_if_doomed(W, L); /* a connection may have cancelled the caller */
  return 0;
}

static int l_signal_set(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, SIGNAL_MT, "signal");
  int n = lua_gettop(L) - 1;
  lua_createtable(L, n, 1);
  for (int i = 0; i < n; i++) {
    lua_pushvalue(L, 2 + i);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  lua_setiuservalue(L, 1, 1);
  weft__signal_set_latched(W->sync, h->id, 1);
  fire(W, L, h);
  weft__yield_if_doomed(W, L);
  return 0;
}

static int l_signal_reset(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, SIGNAL_MT, "signal");
  weft__signal_set_latched(W->sync, h->id, 0);
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1);
  return 0;
}

static int l_signal_connect(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, SIGNAL_MT, "signal");
  if (lua_type(L, 2) != LUA_TFUNCTION && luaL_getmetafield(L, 2, "__call") == LUA_TNIL)
    luaL_typeerror(L, 2, "function");
  lua_settop(L, 2);
  conn *c = lua_newuserdatauv(L, sizeof *c, 2);
  c->signal = h->id;
  c->group = W->cur ? weft__task_group(W->S, W->cur) : weft__sched_root(W->S);
  c->cancels = weft__group_cancels(W->S, c->group);
  c->live = 1;
  luaL_setmetatable(L, CONN_MT);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, 1);
  /* The connection keeps its group: a cancel of the group (or a
     disconnect) ends it, not the collector finding the handle unused. */
  weft__push_group_id(W, L, c->group);
  lua_setiuservalue(L, -2, 2);
  if (lua_getiuservalue(L, 1, 2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, 1, 2);
  }
  if (!h->firing && lua_rawlen(L, -1) >= h->compact) compact(L, lua_gettop(L), h);
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
  if (!weft__signal_latched(W->sync, h->id)) {
    *list = weft__signal_waiters(W->sync, h->id);
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

static const luaL_Reg signal_methods[] = {{"fire", l_signal_fire},
                                          {"set", l_signal_set},
                                          {"reset", l_signal_reset},
                                          {"connect", l_signal_connect},
                                          {NULL, NULL}};

static int l_signal_index(lua_State *L) {
  luaL_checkudata(L, 1, SIGNAL_MT);
  const char *k = luaL_checkstring(L, 2);
  for (const luaL_Reg *r = signal_methods; r->name; r++)
    if (strcmp(k, r->name) == 0) {
      lua_pushcfunction(L, r->func);
      return 1;
    }
  if (strcmp(k, "name") == 0)
    lua_getiuservalue(L, 1, 3);
  else if (strcmp(k, "is_set") == 0) {
    shandle *h = lua_touserdata(L, 1);
    lua_pushboolean(L, h->id && weft__signal_latched(weft__get(L)->sync, h->id));
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
  weft_state *W = weft__get(L);
  shandle *h = lua_touserdata(L, 1);
  if (h->id && W->sync) weft__signal_destroy(W->sync, h->id);
  h->id = 0;
  return 0;
}

static void signal_name(weft_state *W, lua_State *L, weft_id id, const void *ptr) {
  (void)ptr;
  if (weft__sync_handle_push(W, L, WEFT_K_SIGNAL, id)) {
    lua_getiuservalue(L, -1, 3);
    lua_remove(L, -2);
  }
}

static const weft_waitable signal_waitable = {poll_signal, "signal", signal_name};

void weft__open_signals(weft_state *W, lua_State *L) {
  (void)W;
  weft__new_meta(L, SIGNAL_MT, l_signal_index, l_signal_tostring, l_signal_gc, &signal_waitable,
                 "signal");
  lua_pop(L, 1);
  weft__new_meta(L, CONN_MT, l_conn_index, NULL, NULL, NULL, "connection");
  weft__name_methods(L, "signal", signal_methods);
  weft__name_c(L, "connection.disconnect", l_conn_disconnect);
  lua_pop(L, 1);
  lua_pushcfunction(L, l_signal_new);
  lua_setfield(L, -2, "signal");
}
