/* Saving and loading graphs of Lua values (persist.h): the names set
   both sides build, the names of Lua's own libraries, and the protected
   runs of the writer (persist_save.c) and the reader (persist_load.c). */
#include "persist.h"

#include "persist_fmt.h"
#include "persist_load.h"
#include "persist_save.h"

void weft__persist_names(lua_State *L) {
  lua_createtable(L, N_COUNT, 0);
  for (int i = 1; i <= N_COUNT; i++) {
    lua_newtable(L);
    lua_rawseti(L, -2, i);
  }
}

/* set[slot][key at k] = value at v */
static void put(lua_State *L, int names, int slot, int k, int v) {
  k = lua_absindex(L, k);
  v = lua_absindex(L, v);
  lua_rawgeti(L, names, slot);
  lua_pushvalue(L, k);
  lua_pushvalue(L, v);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* Whether set[slot][key at k] is there. */
static int has(lua_State *L, int names, int slot, int k) {
  k = lua_absindex(L, k);
  lua_rawgeti(L, names, slot);
  lua_pushvalue(L, k);
  int t = lua_rawget(L, -2);
  lua_pop(L, 2);
  return t != LUA_TNIL;
}

static int nameable(lua_State *L, int idx) {
  switch (lua_type(L, idx)) {
  case LUA_TTABLE:
  case LUA_TUSERDATA:
  case LUA_TFUNCTION:
  case LUA_TLIGHTUSERDATA:
  case LUA_TTHREAD:
    return 1;
  default:
    return 0;
  }
}

/* Names the value at v (name at k): byname always when force, else
   when the name is free; byvalue when the value has no name yet (or
   force); a C closure's function pointer too, when it has none. */
static void name(lua_State *L, int names, int k, int v, int force) {
  if (force || !has(L, names, N_BYNAME, k)) put(L, names, N_BYNAME, k, v);
  if (force || !has(L, names, N_BYVALUE, v)) put(L, names, N_BYVALUE, v, k);
  if (lua_iscfunction(L, v)) {
    lua_pushcfunction(L, lua_tocfunction(L, v));
    int f = lua_gettop(L);
    if (!has(L, names, N_BYVALUE, f)) put(L, names, N_BYVALUE, f, k);
    lua_pop(L, 1);
  }
}

void weft__persist_name(lua_State *L, int names, const char *name_, int idx) {
  names = lua_absindex(L, names);
  idx = lua_absindex(L, idx);
  if (!nameable(L, idx))
    luaL_error(L, "weft__persist_name: a %s has no name", luaL_typename(L, idx));
  luaL_checkstack(L, 6, NULL);
  lua_pushstring(L, name_);
  name(L, names, lua_gettop(L), idx, 1);
  lua_pop(L, 1);
}

void weft__persist_name_k(lua_State *L, int names, const char *name_, lua_KFunction k) {
  names = lua_absindex(L, names);
  luaL_checkstack(L, 6, NULL);
  lua_pushstring(L, name_);
  lua_pushcfunction(L, persist_kfn(k));
  put(L, names, N_KBYNAME, -2, -1);
  put(L, names, N_KBYPTR, -1, -2);
  lua_pop(L, 2);
}

static int bytes_order(const void *a, const void *b) {
  const TString *x = *(TString *const *)a, *y = *(TString *const *)b;
  size_t lx = tsslen(x), ly = tsslen(y);
  int c = memcmp(getstr(x), getstr(y), lx < ly ? lx : ly);
  return c ? c : (lx > ly) - (lx < ly);
}

/* Pushes the string keys of the table at t, in byte order, in a new
   table (a sequence). */
static void sorted_keys(lua_State *L, int t) {
  lua_Integer n = 0;
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, -3, ++n);
    }
  }
  TString **key = lua_newuserdatauv(L, (size_t)n * sizeof *key + 1, 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, -2, i + 1);
    key[i] = tsvalue(s2v(L->top - 1));
    lua_pop(L, 1);
  }
  qsort(key, (size_t)n, sizeof *key, bytes_order);
  for (lua_Integer i = 0; i < n; i++) {
    setsvalue2s(L, L->top, key[i]);
    L->top++;
    lua_rawseti(L, -3, i + 1);
  }
  lua_pop(L, 1);
}

/* name_tree, down to depth levels below the table (-1: all); onlyc:
   naming its C functions alone. */
static void tree(lua_State *L, int names, int idx, const char *prefix, int depth, int onlyc) {
  names = lua_absindex(L, names);
  idx = lua_absindex(L, idx);
  luaL_checkstack(L, 12, NULL);
  int mark = lua_gettop(L);
  lua_newtable(L); /* the queue: table, path, depth, ... */
  int q = mark + 1;
  lua_pushvalue(L, idx);
  lua_rawseti(L, q, 1);
  lua_pushstring(L, prefix);
  lua_rawseti(L, q, 2);
  lua_pushinteger(L, 0);
  lua_rawseti(L, q, 3);
  if (*prefix) {
    lua_pushstring(L, prefix);
    name(L, names, q + 1, idx, 0);
    lua_settop(L, q);
  }
  lua_Integer tail = 3;
  for (lua_Integer head = 1; head < tail; head += 3) {
    lua_rawgeti(L, q, head);     /* q+1: the table */
    lua_rawgeti(L, q, head + 1); /* q+2: its path */
    lua_Integer d = (lua_rawgeti(L, q, head + 2), lua_tointeger(L, -1));
    lua_pop(L, 1);
    sorted_keys(L, q + 1); /* q+3 */
    for (lua_Integer i = 1; lua_rawgeti(L, q + 3, i) == LUA_TSTRING; i++) {
      lua_pushvalue(L, -1);
      lua_rawget(L, q + 1); /* q+5: the value */
      int v = q + 5;
      int ok = onlyc ? lua_iscfunction(L, v)
                     : nameable(L, v) && lua_type(L, v) != LUA_TTHREAD &&
                           !(lua_type(L, v) == LUA_TFUNCTION && !lua_iscfunction(L, v));
      if (ok) {
        if (lua_rawlen(L, q + 2) > 0)
          lua_pushfstring(L, "%s.%s", lua_tostring(L, q + 2), lua_tostring(L, q + 4));
        else
          lua_pushvalue(L, q + 4);
        int fresh = !has(L, names, N_BYVALUE, v);
        name(L, names, v + 1, v, 0);
        if (fresh && lua_type(L, v) == LUA_TTABLE && (depth < 0 || d < depth)) {
          lua_pushvalue(L, v);
          lua_rawseti(L, q, ++tail);
          lua_pushvalue(L, v + 1);
          lua_rawseti(L, q, ++tail);
          lua_pushinteger(L, d + 1);
          lua_rawseti(L, q, ++tail);
        }
      }
      lua_settop(L, q + 3);
    }
    lua_settop(L, q);
  }
  lua_settop(L, mark);
}

void weft__persist_name_tree(lua_State *L, int names, int idx, const char *prefix) {
  tree(L, names, idx, prefix, -1, 0);
}

static void yield_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_yield(L, 0);
}

/* Pushes the C function _G[fname] (nil when it is not one). */
static lua_CFunction global_c(lua_State *L, int g, const char *fname) {
  lua_getfield(L, g, fname);
  lua_CFunction f = lua_tocfunction(L, -1);
  lua_pop(L, 1);
  return f;
}

/* Runs fn(arg) in a scratch coroutine (a count hook on when hooked) and
   names, as kname, the continuation of the frame of fn it suspends in,
   with the rules its frames follow ({function, context, callee offset,
   results} each; the first rule's function is fn). */
static void find_k(lua_State *L, int names, lua_CFunction fn, int arg, int hooked,
                   const char *kname, const lua_Integer (*rules)[4], const lua_CFunction *rfn,
                   int nrules) {
  int mark = lua_gettop(L);
  lua_State *co = lua_newthread(L);
  lua_sethook(co, hooked ? yield_hook : NULL, hooked ? LUA_MASKCOUNT : 0, 1);
  lua_pushcfunction(co, fn);
  lua_pushvalue(L, arg);
  lua_xmove(L, co, 1);
  int n;
  if (lua_resume(co, L, 1, &n) == LUA_YIELD && co->ci->previous != &co->base_ci) {
    CallInfo *ci = co->ci->previous;
    const TValue *f = s2v(ci->func);
    if (!isLua(ci) && ttislcf(f) && fvalue(f) == fn && ci->u.c.k) {
      weft__persist_name_k(L, names, kname, ci->u.c.k);
      lua_rawgeti(L, names, N_KRULES);
      lua_createtable(L, nrules, 0);
      for (int i = 0; i < nrules; i++) {
        lua_createtable(L, 4, 0);
        lua_pushcfunction(L, rfn[i]);
        lua_rawseti(L, -2, 1);
        for (int j = 1; j < 4; j++) {
          lua_pushinteger(L, rules[i][j]);
          lua_rawseti(L, -2, j + 1);
        }
        lua_rawseti(L, -2, i + 1);
      }
      lua_setfield(L, -2, kname);
    }
  }
  lua_settop(L, mark);
}

static const char *const libs[] = {"package", "coroutine", "table", "io",    "os",
                                   "string",  "math",      "utf8",  "debug", NULL};

void weft__persist_name_lua(lua_State *L, int names) {
  names = lua_absindex(L, names);
  luaL_checkstack(L, 12, NULL);
  int mark = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  int g = lua_gettop(L);
  weft__persist_name(L, names, "_G", g);
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  for (int i = 0; libs[i]; i++) { /* the tables first, so no walk names them by another path */
    if (lua_getfield(L, g + 1, libs[i]) == LUA_TTABLE) weft__persist_name(L, names, libs[i], -1);
    lua_pop(L, 1);
  }
  tree(L, names, g, "_G", 0, 1);
  for (int i = 0; libs[i]; i++) {
    if (lua_getfield(L, g + 1, libs[i]) == LUA_TTABLE) tree(L, names, -1, libs[i], 0, 0);
    lua_pop(L, 1);
  }
  /* the C functions the libraries hand out but keep in no table, which a
     suspended loop holds: ipairs's iterator, coroutine.wrap's function,
     utf8.codes's iterators */
  static const char *const made[][3] = {{"_G", "ipairs", "lua.ipairsaux"},
                                        {"coroutine", "wrap", "lua.auxwrap"},
                                        {"utf8", "codes", "lua.codes"},
                                        {"utf8", "codes", "lua.codeslax"}};
  for (int i = 0; i < 4; i++) {
    lua_settop(L, g + 1);
    if (i == 0)
      lua_pushvalue(L, g);
    else
      lua_getfield(L, g + 1, made[i][0]);
    if (!lua_istable(L, -1) || lua_getfield(L, -1, made[i][1]) != LUA_TFUNCTION) continue;
    if (i == 1)
      lua_pushcfunction(L, lua_tocfunction(L, -1)); /* any function will do */
    else
      lua_pushliteral(L, "");
    lua_pushboolean(L, i == 3); /* utf8.codes(s, lax) */
    if (lua_pcall(L, 2, 1, 0) == LUA_OK && lua_tocfunction(L, -1)) {
      lua_pushcfunction(L, lua_tocfunction(L, -1));
      weft__persist_name(L, names, made[i][2], -1);
    }
  }
  lua_settop(L, g + 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  weft__persist_name(L, names, "lua.main", -1);
  weft__persist_name(L, names, "lua.registry", LUA_REGISTRYINDEX);
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1)) weft__persist_name(L, names, "lua.stringmt", -1);
  lua_settop(L, g);
  /* the continuations: each suspended once, in its frame */
  lua_CFunction pcall = global_c(L, g, "pcall"), xpcall = global_c(L, g, "xpcall"),
                pairs = global_c(L, g, "pairs"), dofile = global_c(L, g, "dofile");
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "coroutine");
  int yield = lua_istable(L, -1) && lua_getfield(L, -1, "yield") == LUA_TFUNCTION;
  if (yield && pcall && xpcall) {
    static const lua_Integer r[2][4] = {{0, 0, 2, LUA_MULTRET}, {0, 2, 4, LUA_MULTRET}};
    const lua_CFunction f[2] = {pcall, xpcall};
    find_k(L, names, pcall, lua_gettop(L), 0, "lua.pcallk", r, f, 2);
  }
  if (yield && pairs) {
    static const lua_Integer r[1][4] = {{0, 0, 2, 3}};
    lua_newtable(L); /* a table whose __pairs yields */
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__pairs");
    lua_setmetatable(L, -2);
    find_k(L, names, pairs, lua_gettop(L), 0, "lua.pairsk", r, &pairs, 1);
    lua_pop(L, 1);
  }
  if (dofile) {
    static const lua_Integer r[1][4] = {{0, 0, 2, LUA_MULTRET}};
#if defined(_WIN32)
    lua_pushliteral(L, "NUL");
#else
    lua_pushliteral(L, "/dev/null");
#endif
    find_k(L, names, dofile, lua_gettop(L), 1, "lua.dofilek", r, &dofile, 1);
  }
  lua_settop(L, mark);
}

void weft__persist_type(lua_State *L, int names, const char *name_, int mt,
                        const weft__persist_saver *type) {
  names = lua_absindex(L, names);
  mt = lua_absindex(L, mt);
  luaL_checkstack(L, 6, NULL);
  weft__persist_name(L, names, name_, mt);
  persist_tinfo *ti = lua_newuserdatauv(L, sizeof *ti, 1);
  memset(ti, 0, sizeof *ti);
  if (type) {
    ti->save = type->save;
    ti->load = type->load;
    ti->ud = type->ud;
    ti->size = type->size;
  } else
    ti->plain = 1;
  lua_pushstring(L, name_);
  lua_setiuservalue(L, -2, 1);
  lua_pushstring(L, name_);
  put(L, names, N_TYPES, -1, -2);
  put(L, names, N_TYPEMT, mt, -2);
  lua_pop(L, 2);
}

void weft__persist_source(lua_State *L, int names, const char *chunk, const char *text,
                          size_t len) {
  names = lua_absindex(L, names);
  luaL_checkstack(L, 4, NULL);
  lua_pushstring(L, chunk);
  lua_pushlstring(L, text, len);
  put(L, names, N_SOURCES, -2, -1);
  lua_pop(L, 2);
}

void weft__persist_shared(lua_State *L, int names, const char *chunk, const char *text,
                          size_t len) {
  names = lua_absindex(L, names);
  luaL_checkstack(L, 4, NULL);
  lua_pushstring(L, chunk);
  lua_pushlstring(L, text, len);
  put(L, names, N_SOURCES, -2, -1);
  put(L, names, N_SHARED, -2, -1);
  put(L, names, N_SHAREDBY, -1, -2);
  lua_pop(L, 2);
}

/* Runs f over the nargs arguments on top, protected, the collector
   stopped (and started again if it ran). */
static int run(lua_State *L, int nargs) {
  int gc = lua_gc(L, LUA_GCISRUNNING);
  if (gc == 1) lua_gc(L, LUA_GCSTOP);
  int status = lua_pcall(L, nargs, 1, 0);
  if (gc == 1) lua_gc(L, LUA_GCRESTART);
  return status;
}

int weft__persist_save(lua_State *L, int names, int root) {
  names = lua_absindex(L, names);
  root = lua_absindex(L, root);
  if (!lua_checkstack(L, 4)) return LUA_ERRMEM;
  lua_pushcfunction(L, weft__persist_write);
  lua_pushvalue(L, names);
  lua_pushvalue(L, root);
  return run(L, 2);
}

int weft__persist_load(lua_State *L, int names, const void *data, size_t len) {
  names = lua_absindex(L, names);
  if (!lua_checkstack(L, 4)) return LUA_ERRMEM;
  lua_pushcfunction(L, weft__persist_read);
  lua_pushvalue(L, names);
  lua_pushlightuserdata(L, (void *)(uintptr_t)data);
  lua_pushinteger(L, (lua_Integer)len);
  return run(L, 3);
}
