/* What a save names instead of writing: see names.h. */
#include <stdio.h>
#include <string.h>

#include "names.h"

/* Pushes registry[key], a table made on first use. */
static void registry_table(lua_State *L, const char *key) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

void weft__name_c(lua_State *L, const char *name, lua_CFunction f) {
  luaL_checkstack(L, 3, NULL);
  registry_table(L, WEFT_CNAMES);
  lua_pushcfunction(L, f);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

void weft__name_methods(lua_State *L, const char *prefix, const luaL_Reg *m) {
  for (; m->name; m++) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", prefix, m->name);
    weft__name_c(L, name, m->func);
  }
}

void weft__name_k(weft_state *W, const char *name, lua_KFunction k) {
  if (W->nknames < (int)(sizeof W->knames / sizeof W->knames[0]))
    W->knames[W->nknames++] = (weft_kname){name, k};
}

void weft__source_keep(lua_State *L, const char *chunk, const char *text, size_t len) {
  luaL_checkstack(L, 3, NULL);
  registry_table(L, WEFT_SOURCES);
  lua_pushlstring(L, text, len);
  lua_setfield(L, -2, chunk);
  lua_pop(L, 1);
}

void weft__name_pointer(lua_State *L, const char *name, void *p) {
  luaL_checkstack(L, 3, NULL);
  registry_table(L, WEFT_PNAMES);
  lua_pushlightuserdata(L, p);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

void weft__name_type(lua_State *L, const char *tname, const void *saver, size_t size) {
  luaL_checkstack(L, 3, NULL);
  registry_table(L, WEFT_TNAMES);
  if (saver)
    memcpy(lua_newuserdatauv(L, size, 0), saver, size);
  else
    lua_pushboolean(L, 0);
  lua_setfield(L, -2, tname);
  lua_pop(L, 1);
}
