/* Groups and clocks: group handles (spawn, pause, resume, cancel, time
   scale, tasks), the global time scale and the clock readings scripts
   see (now, realtime, frame). */
#include <string.h>

#include "group.h"
#include "../base/names.h"
#include "../accounts/cost.h"
#include "reload.h"
#include "../core/task.h"

static ghandle *check_group(lua_State *L, int idx) {
  ghandle *g = luaL_checkudata(L, idx, WEFT_GROUP_MT);
  weft_state *W = weft__get(L);
  if (g->id != weft__sched_root(W->S) && !weft__group_live(W->S, g->id))
    luaL_argerror(L, idx, "dead group");
  return g;
}

static int l_group_gc(lua_State *L) {
  ghandle *g = lua_touserdata(L, 1);
  weft_state *W = weft__get(L);
  if (g->id && W->S) weft__group_release(W->S, g->id);
  g->id = 0;
  return 0;
}

static int l_group_new(lua_State *L) {
  weft_state *W = weft__get(L);
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  weft_id parent = W->cur ? weft__task_group(W->S, W->cur) : 0;
  if (lua_getfield(L, 1, "parent") != LUA_TNIL) {
    ghandle *p = luaL_testudata(L, 2, WEFT_GROUP_MT);
    if (!p || !weft__group_live(W->S, p->id))
      return luaL_error(L, "group: parent must be a live group");
    parent = p->id;
  }
  lua_pop(L, 1);
  double scale = 1.0;
  if (lua_getfield(L, 1, "time_scale") != LUA_TNIL) {
    if (!lua_isnumber(L, -1)) return luaL_error(L, "group: time_scale must be a number");
    scale = lua_tonumber(L, -1);
    if (!(scale >= 0 && scale <= WEFT_MAX_SCALE))
      return luaL_error(L, "group: time_scale must be between 0 and 1e6, got %f", scale);
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "name");
  if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
    return luaL_error(L, "group: name must be a string");
  weft_id g;
  ghandle *h = lua_newuserdatauv(L, sizeof *h, 1);
  h->id = 0;
  luaL_setmetatable(L, WEFT_GROUP_MT);
  if (weft__group_create(W->S, parent, &g) != WEFT_OK) return luaL_error(L, "cannot create group");
  h->id = g;
  weft__cost_new_group(W, g);
  weft__group_set_scale(W->S, g, scale);
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1); /* name */
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_groups);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)WEFT_ID_INDEX(g) + 1);
  lua_pop(L, 1);
  return 1;
}

static int l_group_spawn(lua_State *L) {
  weft_state *W = weft__get(L);
  ghandle *g = check_group(L, 1);
  luaL_checkany(L, 2);
  weft__spawn_in(L, 2, g->id, 0, 1);
  if (W->cur && W->mods.ref_note_spawn) { /* the module system ties it to a start */
    const thandle *h = lua_touserdata(L, -1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->mods.ref_note_spawn);
    lua_pushvalue(L, -2);
    lua_pushinteger(L, (lua_Integer)h->id);
    lua_pushinteger(L, (lua_Integer)W->cur);
    lua_pushboolean(L, weft__spawning_of(W, W->cur) != NULL); /* the spawner's first run */
    lua_pushboolean(L, W->run_depth == 0);                    /* no first run goes on */
    lua_call(L, 5, 0);
  }
  return 1;
}

static int l_group_pause(lua_State *L) {
  weft__sched_pause_group(weft__get(L)->S, check_group(L, 1)->id);
  return 0;
}

static int l_group_resume(lua_State *L) {
  weft__sched_resume_group(weft__get(L)->S, check_group(L, 1)->id);
  return 0;
}

static int l_group_cancel(lua_State *L) {
  weft_state *W = weft__get(L);
  weft__sched_cancel_group(W->S, check_group(L, 1)->id);
  weft__yield_if_doomed(W, L); /* the caller's group, or a cleanup cancelling it */
  return 0;
}

static int l_group_tasks(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_id g = check_group(L, 1)->id;
  uint32_t n = weft__group_tasks(W->S, g, NULL, 0);
  lua_createtable(L, (int)n, 0);
  if (n == 0) return 1;
  weft_id *ids = lua_newuserdatauv(L, sizeof(weft_id) * n, 0);
  weft__group_tasks(W->S, g, ids, n);
  int k = 0;
  for (uint32_t i = 0; i < n; i++) {
    ltask *lt = LT(W, ids[i]);
    if (!lt || !lt->co) continue;
    weft__push_task(W, L, ids[i]);
    lua_rawseti(L, -3, ++k);
  }
  lua_pop(L, 1);
  return 1;
}

static const luaL_Reg group_methods[] = {{"spawn", l_group_spawn},   {"pause", l_group_pause},
                                         {"resume", l_group_resume}, {"cancel", l_group_cancel},
                                         {"tasks", l_group_tasks},   {NULL, NULL}};

static int l_group_index(lua_State *L) {
  weft_state *W = weft__get(L);
  ghandle *gh = luaL_checkudata(L, 1, WEFT_GROUP_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "alive") == 0) {
    lua_pushboolean(L, gh->id == weft__sched_root(W->S) || weft__group_live(W->S, gh->id));
    return 1;
  }
  if (strcmp(k, "start") == 0) {
    lua_pushcfunction(L, weft__l_group_start);
    return 1;
  }
  ghandle *g = check_group(L, 1);
  for (const luaL_Reg *m = group_methods; m->name; m++)
    if (strcmp(k, m->name) == 0) {
      lua_pushcfunction(L, m->func);
      return 1;
    }
  if (strcmp(k, "time_scale") == 0)
    lua_pushnumber(L, weft__group_scale(W->S, g->id));
  else if (strcmp(k, "paused") == 0)
    lua_pushboolean(L, weft__group_paused(W->S, g->id));
  else if (strcmp(k, "now") == 0)
    lua_pushnumber(L, weft__group_now(W->S, g->id));
  else if (strcmp(k, "name") == 0)
    lua_getiuservalue(L, 1, 1);
  else if (strcmp(k, "ms") == 0 || strcmp(k, "avg_ms") == 0 || strcmp(k, "worst_ms") == 0) {
    double ms[3];
    weft__cost_of_group(W, g->id, &ms[0], &ms[1], &ms[2]);
    lua_pushnumber(L, ms[k[0] == 'm' ? 0 : k[0] == 'a' ? 1 : 2]);
  } else if (strcmp(k, "parent") == 0) {
    weft_id p = weft__group_parent(W->S, g->id);
    if (p)
      weft__push_group_id(W, L, p);
    else
      lua_pushnil(L);
  } else
    lua_pushnil(L);
  return 1;
}

static int l_group_newindex(lua_State *L) {
  weft_state *W = weft__get(L);
  ghandle *g = check_group(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "time_scale") == 0) {
    double s = luaL_checknumber(L, 3);
    if (weft__group_set_scale(W->S, g->id, s) != WEFT_OK)
      return luaL_argerror(L, 3, "time_scale must be between 0 and 1e6");
  } else if (strcmp(k, "name") == 0) {
    if (!lua_isnil(L, 3)) luaL_checktype(L, 3, LUA_TSTRING);
    lua_settop(L, 3);
    lua_setiuservalue(L, 1, 1);
  } else {
    return luaL_error(L, "group field '%s' cannot be set", k);
  }
  return 0;
}

static int l_group_tostring(lua_State *L) {
  check_group(L, 1);
  lua_getiuservalue(L, 1, 1);
  lua_pushfstring(L, "group %s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
  return 1;
}

/* ---- time ---- */

static int l_now(lua_State *L) {
  lua_pushnumber(L, weft__sched_now(weft__get(L)->S));
  return 1;
}

static int l_group_clock(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_id g = W->cur ? weft__task_group(W->S, W->cur) : 0;
  lua_pushnumber(L, weft__group_now(W->S, g));
  return 1;
}

static int l_realtime(lua_State *L) {
  lua_pushnumber(L, weft__sched_realtime(weft__get(L)->S));
  return 1;
}

static int l_frame(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)weft__sched_frame(weft__get(L)->S));
  return 1;
}

static int l_time_scale(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_id root = weft__sched_root(W->S);
  if (!lua_isnoneornil(L, 1)) {
    double s = luaL_checknumber(L, 1);
    if (weft__group_set_scale(W->S, root, s) != WEFT_OK)
      return luaL_argerror(L, 1, "time scale must be between 0 and 1e6");
  }
  lua_pushnumber(L, weft__group_scale(W->S, root));
  return 1;
}

void weft__open_groups(weft_state *W, lua_State *L) {
  weft__name_methods(L, "group", group_methods);
  weft__name_c(L, "group.start", weft__l_group_start);
  weft__new_meta(L, WEFT_GROUP_MT, l_group_index, l_group_tostring, l_group_gc, NULL, "group");
  lua_pushcfunction(L, l_group_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pop(L, 1);
  static const luaL_Reg api[] = {{"now", l_now},         {"realtime", l_realtime},
                                 {"frame", l_frame},     {"time_scale", l_time_scale},
                                 {"group", l_group_new}, {NULL, NULL}};
  luaL_setfuncs(L, api, 0);
  lua_getfield(L, -1, "weft");
  weft__name_c(L, "weft._gnow", l_group_clock); /* the prelude keeps it, the API does not */
  lua_pushcfunction(L, l_group_clock);
  lua_setfield(L, -2, "_gnow");
  weft__push_group_id(W, L, weft__sched_root(W->S));
  lua_pushliteral(L, "main");
  lua_setiuservalue(L, -2, 1);
  lua_setfield(L, -2, "root");
  lua_pop(L, 1);
}
