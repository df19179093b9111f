/* libFuzzer target: any bytes as a save (bindings/base/persist.h). The
   CRC-32 of an input that starts with a save's header is set right
   first, so the fuzzer reaches the records behind it; so is the body's
   length when its low bit is clear, and the string hash seed when its
   low bit is clear (the loader then lays tables out node for node, and
   checks that layout). A save that
   loads is collected, saved again, and run: each coroutine it holds is
   resumed twice and closed, each function called, under an instruction
   budget and a memory cap, then the state is closed (its finalizers
   run). Refusals are expected; a crash, a sanitizer report, a hang or a
   leak (a block left after lua_close) is a finding.

   With WEFT_FUZZ_SEEDS=DIR set, it first writes saves of coroutines in
   every kind of frame into DIR, as seeds (make fuzz-save does); with
   WEFT_FUZZ_VERBOSE set, it says what became of each input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "../../bindings/base/persist.h"
#include "lstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

typedef struct mem {
  size_t used, cap;
} mem;

static void *fz_alloc(void *ud, void *p, size_t o, size_t n) {
  mem *m = ud;
  if (p == NULL) o = 0;
  if (n == 0) {
    m->used -= o;
    free(p);
    return NULL;
  }
  if (n > o && m->used + (n - o) > m->cap) return NULL;
  void *q = realloc(p, n);
  if (q) m->used = m->used - o + n;
  return q;
}

static void budget(lua_State *L, lua_Debug *ar) {
  (void)ar;
  luaL_error(L, "out of budget");
}

/* A typed userdata: its block is 8 bytes, saved as a string. */
static void pair_save(lua_State *L, void *block, size_t size, void *ud) {
  (void)ud;
  lua_pushlstring(L, block, size);
}

static void pair_load(lua_State *L, void *block, size_t size, void *ud) {
  (void)ud;
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  if (s && len == size) memcpy(block, s, size);
}

static int pair_new(lua_State *L) {
  size_t len;
  const char *s = luaL_optlstring(L, 1, "12345678", &len);
  char *b = lua_newuserdatauv(L, 8, 1);
  memset(b, 0, 8);
  memcpy(b, s, len < 8 ? len : 8);
  luaL_setmetatable(L, "fz.pair");
  return 1;
}

static int pair_get(lua_State *L) {
  lua_pushlstring(L, luaL_checkudata(L, 1, "fz.pair"), 8);
  return 1;
}

static int plain_new(lua_State *L) {
  lua_Number x = luaL_optnumber(L, 1, 0);
  double *d = lua_newuserdatauv(L, sizeof *d, 0);
  *d = x;
  luaL_setmetatable(L, "fz.plain");
  return 1;
}

static int quiet(lua_State *L) {
  (void)L;
  return 0;
}

static int kyield_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  lua_pushinteger(L, (lua_Integer)ctx);
  return 1;
}

static int kyield(lua_State *L) { return lua_yieldk(L, 0, 7, kyield_k); }

/* A state with Lua's libraries and the harness's own names. */
static lua_State *open_state(mem *m) {
  lua_State *L = lua_newstate(fz_alloc, m);
  if (!L) return NULL;
  /* the code a save holds is the fuzzer's: no library that reaches
     files, processes or hooks (no io, os, debug, package) */
  static const luaL_Reg libs[] = {
      {LUA_GNAME, luaopen_base},       {LUA_COLIBNAME, luaopen_coroutine},
      {LUA_TABLIBNAME, luaopen_table}, {LUA_STRLIBNAME, luaopen_string},
      {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8}};
  for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
    luaL_requiref(L, libs[i].name, libs[i].func, 1);
    lua_pop(L, 1);
  }
  lua_pushcfunction(L, quiet);
  lua_setglobal(L, "print");
  lua_pushnil(L);
  lua_setglobal(L, "dofile");
  lua_pushnil(L);
  lua_setglobal(L, "loadfile");
  weft__persist_names(L);
  weft__persist_name_lua(L, 1);
  static const weft__persist_saver pair = {pair_save, pair_load, NULL, 8};
  luaL_newmetatable(L, "fz.pair");
  lua_pushcfunction(L, pair_get);
  lua_setfield(L, -2, "__index");
  weft__persist_type(L, 1, "fz.pair", -1, &pair);
  lua_getfield(L, -1, "__index");
  weft__persist_name(L, 1, "fz.pair.get", -1);
  lua_pop(L, 2);
  luaL_newmetatable(L, "fz.plain");
  weft__persist_type(L, 1, "fz.plain", -1, NULL);
  lua_pop(L, 1);
  static const struct {
    const char *name;
    lua_CFunction f;
  } fns[] = {{"pair", pair_new}, {"plain", plain_new}, {"kyield", kyield}};
  for (int i = 0; i < 3; i++) {
    lua_pushcfunction(L, fns[i].f);
    weft__persist_name(L, 1, fns[i].name, -1);
    lua_setglobal(L, fns[i].name);
  }
  weft__persist_name_k(L, 1, "fz.kyield", kyield_k);
  return L;
}

/* The seeds: coroutines suspended in every kind of frame, tables of
   every layout, userdata of both kinds. */
static const char *const seeds[] = {
    "local up = 0 local co = coroutine.create(function(a, ...) local t = {a, ...}"
    " for i = 1, 3 do up = up + coroutine.yield(i) end return t end) coroutine.resume(co, 1, 2)"
    " return {co, function() return up end, setmetatable({x = 1}, {__index = string})}",
    "local co = coroutine.create(function() local ok, e = pcall(function()"
    " local x <close> = setmetatable({}, {__close = function() end}) coroutine.yield(1) error('e')"
    " end) return xpcall(function() coroutine.yield(2) error({}) end, function(m) return m end) "
    "end)"
    " coroutine.resume(co) return {co}",
    "local t = {} for i = 1, 40 do t['k' .. i] = i t[i * 0.5] = i end for i = 1, 40, 3 do"
    " t['k' .. i] = nil end local w = coroutine.wrap(function() for k in pairs(t) do t[k] = nil"
    " coroutine.yield(k) end end) w() collectgarbage() return {t, w, {[t] = 1, [print] = 2}}",
    "local co = coroutine.create(function() local p, q = pair('abcdefgh'), plain(2.5)"
    " local s = setmetatable({}, {__pairs = function(t) coroutine.yield('p') return next, t end})"
    " for k in pairs(s) do end local r = kyield() return p, q, r end) coroutine.resume(co)"
    " coroutine.resume(co) return {co, pair(), plain(1)}",
    "local inner = coroutine.create(function(...) local n = select('#', ...)"
    " local function f(...) return coroutine.yield(...) end return f(n, ...) end)"
    " coroutine.resume(inner, 1, nil, 3) local outer = coroutine.create(function()"
    " local t = setmetatable({}, {__index = function(_, k) return coroutine.yield(k) end})"
    " return t.x .. coroutine.resume(inner) end) coroutine.resume(outer)"
    " local dead = coroutine.create(function() error('x') end) coroutine.resume(dead)"
    " return {outer, dead, coroutine.create(print)}",
};

static void write_seeds(const char *dir) {
  mem m = {0, (size_t)256 << 20};
  lua_State *L = open_state(&m);
  if (!L) return;
  for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
    if (luaL_dostring(L, seeds[i]) != LUA_OK || weft__persist_save(L, 1, -1) != LUA_OK) {
      fprintf(stderr, "seed %zu: %s\n", i, lua_tostring(L, -1));
      lua_settop(L, 1);
      continue;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/seed%zu.save", dir, i);
    FILE *f = fopen(path, "wb");
    size_t len;
    const char *p = lua_tolstring(L, -1, &len);
    if (f) {
      fwrite(p, 1, len, f);
      fclose(f);
    }
    lua_settop(L, 1);
  }
  lua_close(L);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *dir = getenv("WEFT_FUZZ_SEEDS");
  if (dir) write_seeds(dir);
  return 0;
}

static uint32_t crc32(const unsigned char *p, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Runs what a loaded root holds (protected: lua_next and the values'
   code may raise). */
static int exercise(lua_State *L) {
  int root = 1;
  lua_gc(L, LUA_GCCOLLECT);
  lua_getfield(L, LUA_REGISTRYINDEX, "names");
  if (weft__persist_save(L, -1, root) != LUA_OK) lua_pop(L, 1);
  lua_settop(L, root);
  lua_newtable(L); /* the values to run: the root, or what it holds */
  if (lua_istable(L, root)) {
    lua_Integer n = 0;
    lua_pushnil(L);
    while (lua_next(L, root) && n < 64) lua_rawseti(L, 2, ++n);
  } else {
    lua_pushvalue(L, root);
    lua_rawseti(L, 2, 1);
  }
  for (lua_Integer i = 1; lua_rawgeti(L, 2, i) != LUA_TNIL; i++) {
    lua_State *co = lua_tothread(L, -1);
    if (co && co != L) {
      for (int k = 0; k < 2; k++) {
        int n;
        if (lua_status(co) != LUA_YIELD && lua_status(co) != LUA_OK) break;
        lua_pushinteger(co, k);
        if (lua_resume(co, L, 1, &n) != LUA_YIELD) break;
        lua_pop(co, n);
      }
      lua_resetthread(co);
    } else if (lua_isfunction(L, -1)) {
      lua_pushvalue(L, -1);
      lua_pcall(L, 0, 0, 0);
    }
    lua_settop(L, 2);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mem m = {0, (size_t)128 << 20};
  lua_State *L = open_state(&m);
  if (!L) return 0;
  lua_pushvalue(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, "names");
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) abort();
  memcpy(buf, data, size);
  if (size >= 32 && memcmp(buf, "WEFTSAVE", 8) == 0) {
    if (!(buf[20] & 1)) put32(buf + 20, G(L)->seed);
    if (!(buf[24] & 1)) put32(buf + 24, (uint32_t)(size - 32));
    put32(buf + 28, crc32(buf + 32, size - 32, crc32(buf, 28, 0)));
  }
  lua_sethook(L, budget, LUA_MASKCOUNT, 20000); /* loaded coroutines inherit it */
  int status = weft__persist_load(L, 1, buf, size);
  if (getenv("WEFT_FUZZ_VERBOSE")) /* to see how far inputs get */
    fprintf(stderr, "%s\n", status == LUA_OK ? "loaded" : lua_tostring(L, -1));
  if (status == LUA_OK) {
    lua_pushcfunction(L, exercise);
    lua_rotate(L, -2, 1);
    lua_pcall(L, 1, 0, 0);
  }
  free(buf);
  lua_close(L);
  if (m.used != 0) abort(); /* a leak */
  return 0;
}
