/* Introspection: weft.tasks(), a snapshot of every live task (name, who,
   group, status, what it waits on, where it is suspended, its spawn
   site, its resumes, its script time), for overlays, inspectors and debuggers. */
#include <stdio.h>
#include <string.h>

#include "inspect.h"
#include "handles.h"
#include "wait.h"
#include "cost.h"
#include "sites.h"

static inline ltask *LT(weft_state *W, weft_id id) { return weft_task_udata(W->S, id); }

typedef struct snap {
  weft_state *W;
  lua_State *L;
  int n;
} snap;


int weft_push_task_info(weft_state *W, lua_State *L, weft_id id) {
  ltask *lt = LT(W, id);
  if (!lt || !lt->co) return 0;
  weft_push_task(W, L, id);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  int h = lua_gettop(L);
  lua_createtable(L, 0, 9);
  lua_pushinteger(L, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  lua_setfield(L, -2, "id");
  lua_pushvalue(L, h);
  lua_setfield(L, -2, "task");
  lua_getfield(L, h, "name");
  lua_setfield(L, -2, "name");
  lua_getfield(L, h, "status");
  lua_setfield(L, -2, "status");
  if (weft_push_who(W, L, id)) lua_setfield(L, -2, "who");
  weft_push_group_id(W, L, weft_task_group(W->S, id));
  lua_getiuservalue(L, -1, 1);
  lua_setfield(L, -3, "group");
  lua_pop(L, 1);
  char buf[256];
  weft_wait_describe(W->S, id, buf, sizeof buf);
  const ltask_cold *c = weft_cold_if(W, id, lt);
  if (c && c->wwhat && strcmp(buf, "wait") == 0) {
    lua_pushstring(L, c->wwhat->what);
    if (c->wwhat->name) {
      c->wwhat->name(W, L, c->wobj, c->wptr);
      if (lua_isstring(L, -1)) {
        lua_pushliteral(L, " ");
        lua_insert(L, -2);
        lua_concat(L, 3);
      } else {
        lua_pop(L, 1);
      }
    }
  } else {
    lua_pushstring(L, buf);
  }
  lua_setfield(L, -2, "waiting");
  weft_where_suspended(lt->co, buf, sizeof buf);
  lua_pushstring(L, buf);
  lua_setfield(L, -2, "where");
  lua_pushstring(L, weft_site_where(W->sites, lt->site));
  lua_setfield(L, -2, "spawned");
  lua_pushinteger(L, weft_task_resumes(W->S, id));
  lua_setfield(L, -2, "resumes");
  double ms[3];
  weft_cost_of(W, id, &ms[0], &ms[1], &ms[2]);
  lua_pushnumber(L, ms[0]);
  lua_setfield(L, -2, "ms"); /* script time in the last frame */
  lua_pushnumber(L, ms[1]);
  lua_setfield(L, -2, "avg_ms");
  lua_pushnumber(L, ms[2]);
  lua_setfield(L, -2, "worst_ms");
  lua_remove(L, h);
  return 1;
}

static void snap_one(void *ud, weft_id id) {
  snap *sp = ud;
  if (weft_push_task_info(sp->W, sp->L, id)) lua_rawseti(sp->L, -2, ++sp->n);
}

static int l_tasks(lua_State *L) {
  weft_state *W = weft_get(L);
  lua_newtable(L);
  luaL_checkstack(L, 16, NULL);
  snap sp = {W, L, 0};
  weft_sched_each_task(W->S, snap_one, &sp);
  return 1;
}

void weft_open_inspect(weft_state *W, lua_State *L) {
  (void)W;
  lua_getfield(L, -1, "weft");
  lua_pushcfunction(L, l_tasks);
  lua_setfield(L, -2, "tasks");
  lua_pop(L, 1);
}
