/* Handles and names: the values scripts hold for tasks, groups, signals
   and channels (made once, cached weakly), the names a task goes by (who
   a report names, a profile's label), and the cold records of what few
   tasks use. */
#include <stdio.h>
#include <string.h>

#include "handles.h"
#include "../base/chunks.h"
#include "../base/sites.h"

/* ---- cold records ---- */

/* Cold records are side data of the task pool (weft_side): a game whose
   tasks only sleep makes none. A task's record is zeroed when it first
   asks (lt->cold is clear in every new task's data). */
ltask_cold *weft__cold_make(weft_state *W, weft_id id, ltask *lt) {
  ltask_cold *x = weft__side_make(&W->cold, WEFT_ID_INDEX(id), weft__host_alloc, W);
  if (x && !lt->cold) {
    memset(x, 0, sizeof *x);
    lt->cold = 1;
  }
  return x;
}

/* ---- task handles ---- */

/* A task's handle is made the first time something asks for it (spawn's
   result, current(), weft.tasks(), a report ...: all through
   weft__handle_make) and cached weakly in ref_handles[index + 1], so asking
   again while anyone holds it gives the same value. Nothing a task needs
   lives only in its handle: its thread is kept in its slot, and a
   handle that holds a name is pinned in ref_pinned until the task ends.
   Once the task ends its handle (if one is held) keeps the outcome. */

/* The spawn running task id at once, or NULL. */
weft_spawning *weft__spawning_of(weft_state *W, weft_id id) {
  for (int d = W->run_depth; d >= 0; d--)
    if (W->spawning[d].id == id) return &W->spawning[d];
  return NULL;
}

/* Pushes the handle made for task id while anyone still holds it and
   returns it; pushes nothing and returns NULL when there is none. */
thandle *weft__handle_if(weft_state *W, lua_State *L, weft_id id) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_handles);
  lua_rawgeti(L, -1, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  thandle *h = lua_touserdata(L, -1); /* the slot's last handle, maybe an earlier task's */
  if (h && h->id == id) {
    lua_remove(L, -2);
    return h;
  }
  lua_pop(L, 2);
  return NULL;
}

/* Pushes a new handle, not yet a task's, with nuv (0 or 2) user values. */
thandle *weft__handle_new(weft_state *W, lua_State *L, int nuv) {
  thandle *h = lua_newuserdatauv(L, sizeof *h, nuv);
  memset(h, 0, sizeof *h);
  h->bare = nuv == 0;
  weft__set_meta(L, W->ref_task_mt);
  return h;
}

/* t[k] = v for (t, k, v) at 1..3, run protected by store_handle. */
static int l_seti(lua_State *L) {
  lua_rawset(L, 1);
  return 0;
}

/* Makes the handle on top task id's. Overwriting a slot that holds a
   value cannot allocate; a new key may make the table grow, so that is
   protected: returns 0 with the error pushed when out of memory. */
static int store_handle(weft_state *W, lua_State *L, weft_id id) {
  lua_Integer slot = (lua_Integer)WEFT_ID_INDEX(id) + 1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_handles);
  if (lua_rawgeti(L, -1, slot) != LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, slot);
    lua_pop(L, 1);
    return 1;
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_seti);
  lua_insert(L, -2);
  lua_pushinteger(L, slot);
  lua_pushvalue(L, -4);
  return lua_pcall(L, 3, 0, 0) == LUA_OK;
}

/* Makes the handle of live task id: h (new_handle's, on top), or a new
   one pushed when h is NULL, becomes the task's and is cached in
   ref_handles. Every live task's handle is made here; a task that ended
   inside spawn gets its handle there. Returns 0 with the error pushed
   when out of memory (the caller undoes the task or raises). */
int weft__handle_make(weft_state *W, lua_State *L, weft_id id, thandle *h) {
  if (!h) h = weft__handle_new(W, L, 2);
  h->id = id;
  h->site = weft__site_of(LT(W, id));
  return store_handle(W, L, id);
}

void weft__push_task(weft_state *W, lua_State *L, weft_id id) {
  ltask *lt = id ? LT(W, id) : NULL;
  if (!lt || !lt->co) { /* not a live Lua task (ended, or a combinator) */
    lua_pushnil(L);
    return;
  }
  if (weft__handle_if(W, L, id)) return;
  if (!weft__handle_make(W, L, id, NULL)) lua_error(L);
  weft_spawning *sp = weft__spawning_of(W, id);
  if (sp) sp->made = 1;
}

int weft__push_task_name(weft_state *W, lua_State *L, weft_id id) {
  ltask *lt = id ? LT(W, id) : NULL;
  if (!lt || !lt->pinned || !weft__handle_if(W, L, id))
    return 0; /* only a named handle is pinned */
  if (lua_getiuservalue(L, -1, 2) == LUA_TSTRING) {
    lua_remove(L, -2);
    return 1;
  }
  lua_pop(L, 2);
  return 0;
}

int weft__new_meta(lua_State *L, const char *name, lua_CFunction index, lua_CFunction tostring,
                   lua_CFunction gc, const weft_waitable *w, const char *short_name) {
  luaL_newmetatable(L, name);
  lua_pushcfunction(L, index);
  lua_setfield(L, -2, "__index");
  if (tostring) {
    lua_pushcfunction(L, tostring);
    lua_setfield(L, -2, "__tostring");
  }
  if (gc) {
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
  }
  if (w) {
    lua_pushlightuserdata(L, (void *)w);
    lua_setfield(L, -2, "__wait");
  }
  lua_pushstring(L, short_name);
  lua_setfield(L, -2, "__name");
  lua_pushboolean(L, 0); /* scripts cannot reach or change it */
  lua_setfield(L, -2, "__metatable");
  lua_pushvalue(L, -1);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

/* ---- group handles ---- */

void weft__push_group_id(weft_state *W, lua_State *L, weft_id id) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_groups);
  lua_rawgeti(L, -1, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  ghandle *g = lua_touserdata(L, -1);
  if (g && g->id == id) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  g = lua_newuserdatauv(L, sizeof *g, 1);
  g->id = 0;
  luaL_setmetatable(L, WEFT_GROUP_MT);
  if (weft__group_retain(W->S, id) != WEFT_OK) {
    lua_pop(L, 2);
    lua_pushnil(L);
    return;
  }
  g->id = id;
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  lua_remove(L, -2);
}

/* ---- signal and channel handles ---- */

static lua_Integer cache_key(int kind, weft_id id) {
  return (lua_Integer)WEFT_ID_INDEX(id) * 4 + kind;
}

shandle *weft__sync_handle_new(weft_state *W, lua_State *L, const char *mt, int kind, int nuv) {
  shandle *h = lua_newuserdatauv(L, sizeof *h, nuv);
  memset(h, 0, sizeof *h);
  h->kind = (uint8_t)kind;
  luaL_setmetatable(L, mt);
  (void)W;
  return h;
}

void weft__sync_handle_cache(weft_state *W, lua_State *L, int idx, shandle *h) {
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_syncs);
  lua_pushvalue(L, idx);
  lua_rawseti(L, -2, cache_key(h->kind, h->id));
  lua_pop(L, 1);
}

/* Pushes the cached handle of a live object, or nil. */
shandle *weft__sync_handle_push(weft_state *W, lua_State *L, int kind, weft_id id) {
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

shandle *weft__sync_handle_check(lua_State *L, int idx, const char *mt, const char *what) {
  shandle *h = luaL_checkudata(L, idx, mt);
  if (!h->id) luaL_argerror(L, idx, lua_pushfstring(L, "dead %s", what));
  return h;
}

/* ---- names ---- */

/* Who a report names first: the name a script gave the task (t.name =
   ...; weft.start's own naming after the module does not count), else
   the innermost named group around it that weft.start did not make (the
   demo names each entity's group after the entity), else nobody. */
int weft__push_who(weft_state *W, lua_State *L, weft_id task) {
  weft_id g = task ? weft__task_group(W->S, task) : 0;
  if (!g) return 0;
  luaL_checkstack(L, 6, NULL);
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, WEFT_START_GROUPS);
  int starts = top + 1;
  if (weft__push_task_name(W, L, task)) {
    int explicit = 1;
    weft__push_group_id(W, L, g);
    if (lua_istable(L, starts) && lua_rawget(L, starts) != LUA_TNIL) { /* a start's own task? */
      weft__push_group_id(W, L, g);
      lua_getiuservalue(L, -1, 1);
      explicit = !lua_rawequal(L, -1, top + 2);
    }
    if (explicit) {
      lua_copy(L, top + 2, top + 1);
      lua_settop(L, top + 1);
      return 1;
    }
  }
  lua_settop(L, starts);
  for (weft_id root = weft__sched_root(W->S); g && g != root; g = weft__group_parent(W->S, g)) {
    weft__push_group_id(W, L, g);
    int skip = lua_istable(L, starts) && (lua_pushvalue(L, -1), lua_rawget(L, starts) != LUA_TNIL);
    if (lua_istable(L, starts)) lua_pop(L, 1);
    if (!skip && lua_getiuservalue(L, -1, 1) == LUA_TSTRING && lua_rawlen(L, -1) > 0) {
      lua_copy(L, -1, top + 1);
      lua_settop(L, top + 1);
      return 1;
    }
    lua_settop(L, starts);
  }
  lua_settop(L, top);
  return 0;
}

void weft__where_suspended(lua_State *co, char *buf, size_t n) {
  lua_Debug ar;
  buf[0] = 0;
  for (int level = 0; co && lua_getstack(co, level, &ar); level++) {
    if (!lua_getinfo(co, "Sl", &ar)) break;
    if (ar.currentline >= 0 && !weft__chunk_embedded(ar.source)) {
      snprintf(buf, n, "%s:%d", ar.short_src, ar.currentline);
      return;
    }
  }
}

void weft__frame_name(const lua_Debug *ar, char *out, size_t n) {
  if (ar->name)
    snprintf(out, n, "%s", ar->name);
  else if (strcmp(ar->what, "main") == 0)
    snprintf(out, n, "main chunk");
  else if (strcmp(ar->what, "C") == 0)
    snprintf(out, n, "[C]");
  else
    snprintf(out, n, "function <%s:%d>", ar->short_src, ar->linedefined);
}

/* Pushes "who spawn-site" for a task (protected: W at 1, id at 2): who a
   report names, else its name (a given one, else its spawn site), else
   where it is suspended; then its spawn site, unless that is the name. */
static int l_label(lua_State *L) {
  weft_state *W = lua_touserdata(L, 1);
  weft_id id = (weft_id)lua_tointeger(L, 2);
  ltask *lt = LT(W, id);
  if (!lt || !lt->co) return 0; /* gone: nil */
  const char *site = weft__site_where(W->sites, weft__site_of(lt));
  if (!weft__push_who(W, L, id) && !weft__push_task_name(W, L, id)) {
    char buf[256];
    if (strcmp(site, "?") != 0) {
      lua_pushstring(L, site);
    } else { /* no name (a file's task): where it is */
      weft__where_suspended(lt->co, buf, sizeof buf);
      lua_pushstring(L, buf);
    }
  }
  const char *who = lua_tostring(L, -1);
  if (!who || !*who || strcmp(who, "?") == 0) who = "task";
  if (strcmp(site, "?") != 0 && strcmp(site, who) != 0)
    lua_pushfstring(L, "%s %s", who, site);
  else
    lua_pushstring(L, who);
  return 1;
}

int weft__task_label(weft_state *W, lua_State *L, weft_id id, char *out, size_t n) {
  snprintf(out, n, "task");
  if (!lua_checkstack(L, 8)) return 0;
  int top = lua_gettop(L);
  lua_pushcfunction(L, l_label);
  lua_pushlightuserdata(L, W);
  lua_pushinteger(L, (lua_Integer)id);
  int ok = lua_pcall(L, 2, 1, 0) == LUA_OK && lua_isstring(L, -1);
  if (ok) snprintf(out, n, "%s", lua_tostring(L, -1));
  lua_settop(L, top);
  return ok;
}
