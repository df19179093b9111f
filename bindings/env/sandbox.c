/* The script environment: the allow-list of Lua's base library, library
   tables copied into every environment, and the few built-ins weft must
   change (print, load, getmetatable, setmetatable, collectgarbage) made to
   behave, and to fail, exactly as Lua's own do.

   How the wrapped built-ins stay faithful: a wrapper does its own check and
   then calls Lua's C function directly through its pointer, on the same
   call frame, never through lua_call. So an error Lua's function raises
   names the function as the script called it ('find', not 'string.find'),
   counts method arguments the way Lua does, and carries the script's
   file:line; and no wrapper costs a C-stack level. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <lualib.h>

#include "sandbox.h"
#include "../accounts/budget.h"
#include "../base/chunks.h"
#include "../base/names.h"
#include "../base/watchdog.h"
#include "../waitables/finalize.h"
#include "../base/load.h"
#include "../base/log.h"
#include "patterns.h"
#include "scriptio.h"
#include "../accounts/tape.h"

/* The libraries every environment gets its own copy of: a script may
   read, iterate, rawget and change its copy, and no change reaches another
   script or the host. */
static const char *const copied_libs[] = {"string", "table", "math",    "utf8", "coroutine", "os",
                                          "debug",  "io",    "package", "weft", NULL};

static int is_copied_lib(const char *name) {
  for (const char *const *n = copied_libs; *n; n++)
    if (strcmp(*n, name) == 0) return 1;
  return 0;
}

/* Lua's own function kept as upvalue 1 of a wrapper. */
static lua_CFunction original(lua_State *L) { return lua_tocfunction(L, lua_upvalueindex(1)); }

/* Sets api[name] to f with Lua's function api[name] as its upvalue. */
static void wrap(lua_State *L, int api, const char *name, lua_CFunction f) {
  lua_getfield(L, api, name);
  lua_pushcclosure(L, f, 1);
  lua_setfield(L, api, name);
}

/* ---- environments ---- */

/* The number of entries of the table at idx. */
static int count(lua_State *L, int idx) {
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    n++;
  }
  return n;
}

/* Pushes a shallow copy of the table at idx, sized to fit. */
static void copy_table(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_createtable(L, 0, count(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
}

/* The environment's hidden metatable reaches names the host adds to the
   API after the environment was made. getmetatable does not show it, and
   a script's own setmetatable(_ENV, mt) replaces it. */
void weft__new_env(weft_state *W, lua_State *L) {
  luaL_checkstack(L, 8, NULL);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
  int api = lua_gettop(L);
  lua_createtable(L, 0, count(L, api) + 1);
  int env = api + 1;
  lua_pushnil(L);
  while (lua_next(L, api)) {
    if (lua_type(L, -1) == LUA_TTABLE && lua_type(L, -2) == LUA_TSTRING &&
        is_copied_lib(lua_tostring(L, -2))) {
      copy_table(L, -1);
      lua_replace(L, -2);
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, env);
  }
  lua_pushvalue(L, env);
  lua_setfield(L, env, "_G");
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_env_mt);
  lua_setmetatable(L, env);
  lua_remove(L, api);
}

/* Pushes the text of the script at path, read through the loader (and
   the recording, when one is made or replayed); 0 with the message pushed
   when it cannot be read. */
static int push_source(weft_state *W, lua_State *L, const char *path) {
  return W->tape ? weft__tape_read_file(W, L, path, weft__push_script) : weft__push_script(L, path);
}

static int load_text(weft_state *W, lua_State *L, const char *s, size_t len, const char *name,
                     const char *mode);

/* Where a file's chunk starts, as luaL_loadfilex reads one: past a UTF-8
   byte-order mark, and past a first line starting with '#' (an
   executable's "#!" line) up to its newline, which stays so that line
   numbers hold. *code: the offset of the first byte after that line,
   where Lua looks for a binary chunk's signature. */
static size_t chunk_start(const char *s, size_t len, size_t *code) {
  size_t i = len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  *code = i;
  if (i < len && s[i] == '#') {
    while (i < len && s[i] != '\n') i++;
    *code = i < len ? i + 1 : i;
  }
  return i;
}

/* Loads path as a chunk named "@path" in a fresh environment (pushed
   below the function). Returns 0 with the message pushed on failure. */
int weft__load_script(weft_state *W, lua_State *L, const char *path) {
  if (!push_source(W, L, path)) return 0;
  size_t len, code;
  const char *src = lua_tolstring(L, -1, &len);
  size_t at = chunk_start(src, len, &code);
  src += at;
  len -= at;
  lua_pushfstring(L, "@%s", path);
  int st = load_text(W, L, src, len, lua_tostring(L, -1), "t");
  lua_remove(L, -2); /* chunk name */
  lua_remove(L, -2); /* source */
  if (st != LUA_OK) {
    /* Syntax errors name the file already; others (a binary chunk) not. */
    const char *msg = lua_tostring(L, -1);
    if (msg && strncmp(msg, path, strlen(path)) != 0) {
      lua_pushfstring(L, "%s: %s", path, msg);
      lua_remove(L, -2);
    }
    return 0;
  }
  weft__new_env(W, L);
  lua_pushvalue(L, -1);
  lua_setupvalue(L, -3, 1);
  lua_insert(L, -2); /* env, fn */
  return 1;
}

static int is_env_mt(weft_state *W, lua_State *L, int idx) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_env_mt);
  int eq = lua_rawequal(L, idx < 0 ? idx - 1 : idx, -1);
  lua_pop(L, 1);
  return eq;
}

/* ---- getmetatable / setmetatable ---- */

static int l_getmetatable(lua_State *L) {
  weft_state *W = weft__get(L);
  luaL_checkany(L, 1);
  if (lua_getmetatable(L, 1)) {
    int hidden = is_env_mt(W, L, -1);
    lua_pop(L, 1);
    if (hidden) {
      lua_pushnil(L);
      return 1;
    }
  }
  return original(L)(L);
}

static int set_finalized(lua_State *L);

/* Lua runs __gc inside the collector with hooks off, where no budget can
   stop a loop, whenever the collector happens to run. So Lua never sees a
   script's __gc: it is hidden while the metatable is set (the object is
   never marked by Lua), and the object is marked for weft's own
   finalization instead (finalize.c), which runs the finalizer as a task
   under the budget. The metatable itself is left as the script wrote
   it. */
static int l_setmetatable(lua_State *L) {
  if (lua_type(L, 1) != LUA_TTABLE || lua_type(L, 2) != LUA_TTABLE ||
      luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
    return original(L)(L); /* Lua's own checks and errors */
  lua_settop(L, 2);
  lua_pushliteral(L, "__gc");
  if (lua_rawget(L, 2) == LUA_TNIL) {
    lua_pop(L, 1);
    return original(L)(L);
  }
  return set_finalized(L);
}

/* Gives table 1 metatable 2, whose __gc field (at 3) is not nil, marking
   the table for weft's finalization with the __gc hidden from Lua (see
   l_setmetatable). Returns table 1. */
static int set_finalized(lua_State *L) {
  weft__fin_mark(L, 1); /* first: it may fail (memory), the rest cannot */
  lua_pushliteral(L, "__gc");
  lua_pushnil(L);
  lua_rawset(L, 2); /* an existing key: no allocation, nothing can fail */
  lua_pushvalue(L, 2);
  lua_setmetatable(L, 1);
  lua_pushliteral(L, "__gc");
  lua_insert(L, 3);
  lua_rawset(L, 2); /* put back into the same slot */
  lua_settop(L, 1);
  return 1;
}

/* ---- print ---- */

static int l_print(lua_State *L) {
  int n = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; i++) {
    /* The separator first: luaL_addvalue is the one buffer call that may
       have the value above the buffer's own stack slots. */
    if (i > 1) luaL_addchar(&b, '\t');
    luaL_tolstring(L, i, NULL);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  weft__io_print(L, s, len);
  return 0;
}

/* ---- warn ---- */

/* warn(msg1, ...) as Lua's with lua.c's warning function: warnings are
   off until warn("@on"); a message of one piece that starts with '@' is
   a control ("@on", "@off", others ignored), never shown; the pieces
   are one message. Shown where weft's own warnings go (log.h's
   weft__log_warning), with the caller's file:line. The switch is the
   state's, as lua.c's is. */
static int l_warn(lua_State *L) {
  int n = lua_gettop(L);
  luaL_checkstring(L, 1); /* at least one piece, every piece a string */
  for (int i = 2; i <= n; i++) luaL_checkstring(L, i);
  weft_state *W = weft__get(L);
  const char *first = lua_tostring(L, 1);
  if (n == 1 && first[0] == '@') {
    if (strcmp(first + 1, "on") == 0) W->warn_on = 1;
    if (strcmp(first + 1, "off") == 0) W->warn_on = 0;
    return 0;
  }
  if (!W->warn_on) return 0;
  lua_concat(L, n);
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  lua_Debug ar;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
    weft__log_warning(W, msg, len, ar.short_src, (uint32_t)ar.currentline);
  else
    weft__log_warning(W, msg, len, NULL, 0);
  return 0;
}

/* ---- load ---- */

#define BINARY_REFUSED "attempt to load a binary chunk (binary chunks are not available to scripts)"

/* A chunk read from a function; refuses a binary chunk at its first byte
   (the piece is then dropped, so Lua sees an empty chunk). */
typedef struct reader {
  int slot;   /* stack slot that anchors the current piece */
  int first;  /* no piece read yet */
  int binary; /* the chunk was binary: refused */
} reader;

/* A runaway while the parser runs stops the load: raises at the loading
   line (load returns it). The parser runs no instruction, so nothing
   else can stop it; a reader function's few instructions between large
   pieces would not either. Compiling counts toward the stretch's runaway
   limit and nothing else: a chunk of any size (memory allows) loads. */
static void stop_if_overrun(weft_state *W, lua_State *L, const char *doing) {
  if (weft__budget_runaway(W)) luaL_error(L, "script ran too long (%s)", doing);
}

static const char *read_piece(lua_State *L, void *ud, size_t *size) {
  reader *r = ud;
  stop_if_overrun(weft__get(L), L, "load was still compiling its chunk");
  luaL_checkstack(L, 2, "too many nested functions");
  lua_pushvalue(L, 1);
  lua_call(L, 0, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    *size = 0;
    return NULL;
  }
  if (!lua_isstring(L, -1)) luaL_error(L, "reader function must return a string");
  lua_replace(L, r->slot);
  const char *s = lua_tolstring(L, r->slot, size);
  weft__budget_compiled(weft__get(L), *size);
  if (r->first && *size > 0) {
    r->first = 0;
    if (s[0] == LUA_SIGNATURE[0]) {
      r->binary = 1;
      *size = 0;
      return NULL;
    }
  }
  return s;
}

/* A string chunk larger than this is handed to Lua's parser in pieces
   this size, and between two a load whose stretch is past its time
   stops: no instruction runs while Lua parses, so nothing else can. */
#define LOAD_PIECE (64u << 10)

typedef struct pieces {
  weft_state *W;
  const char *s;
  size_t left;
} pieces;

static const char *read_string_piece(lua_State *L, void *ud, size_t *size) {
  pieces *p = ud;
  if (p->left == 0) {
    *size = 0;
    return NULL;
  }
  stop_if_overrun(p->W, L, "load was still compiling its chunk");
  size_t n = p->left < LOAD_PIECE ? p->left : LOAD_PIECE;
  weft__budget_compiled(p->W, n);
  const char *r = p->s;
  p->s += n;
  p->left -= n;
  *size = n;
  return r;
}

/* Loads text chunk s (Lua's lua_load result and stack), in pieces when
   it is large. */
static int load_text(weft_state *W, lua_State *L, const char *s, size_t len, const char *name,
                     const char *mode) {
  /* a file's text, for a save (a string's is its own name, unless named) */
  if (name[0] == '@') weft__source_keep(L, name, s, len);
  if (len <= LOAD_PIECE) return luaL_loadbufferx(L, s, len, name, mode);
  pieces p = {W, s, len};
  return lua_load(L, read_string_piece, &p, name, mode);
}

/* A load that failed (its message on top): fail, message. */
static int load_failed(lua_State *L) {
  luaL_pushfail(L);
  lua_insert(L, -2);
  return 2;
}

static void push_caller_env(weft_state *W, lua_State *L);

/* A chunk loaded by load or loadfile (on top) gets env (a stack index, 0:
   the globals of the script that loaded it). */
static int loaded(weft_state *W, lua_State *L, int env) {
  if (env)
    lua_pushvalue(L, env);
  else
    push_caller_env(W, L);
  if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  return 1;
}

/* Pushes the global table of the nearest calling Lua function (its _ENV),
   or a fresh environment when none can be found: a chunk loaded without
   an env argument sees the globals of the script that loaded it, as in
   plain Lua where every chunk shares _G. */
static void push_caller_env(weft_state *W, lua_State *L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "f", &ar)) break;
    if (!lua_iscfunction(L, -1)) {
      for (int i = 1;; i++) {
        const char *name = lua_getupvalue(L, -1, i);
        if (!name) break;
        if (strcmp(name, "_ENV") == 0) {
          lua_remove(L, -2);
          return;
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  weft__new_env(W, L);
}

/* load(chunk [, chunkname [, mode [, env]]]) as Lua's, but for binary
   chunks, which scripts cannot load. */
static int l_load(lua_State *L) {
  weft_state *W = weft__get(L);
  size_t len;
  const char *s = lua_tolstring(L, 1, &len);
  const char *mode = luaL_optstring(L, 3, "bt");
  int env = !lua_isnone(L, 4) ? 4 : 0;
  int st, binary;
  if (s) {
    const char *name = luaL_optstring(L, 2, s);
    binary = len > 0 && s[0] == LUA_SIGNATURE[0] && strchr(mode, 'b');
    st = binary ? LUA_ERRSYNTAX : load_text(W, L, s, len, name, mode);
  } else {
    const char *name = luaL_optstring(L, 2, "=(load)");
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 5); /* slot 5 anchors the piece being read */
    reader r = {5, 1, 0};
    st = lua_load(L, read_piece, &r, name, mode);
    binary = r.binary;
  }
  if (binary) {
    if (st == LUA_OK) lua_pop(L, 1);
    luaL_pushfail(L);
    lua_pushliteral(L, BINARY_REFUSED);
    return 2;
  }
  if (st != LUA_OK) return load_failed(L);
  return loaded(W, L, env);
}

/* ---- loadfile, dofile ---- */

/* A path loadfile may read: under the scripts root by its letters
   (weft__path_place). Pushes the root's own path to it (root/clean path:
   the loader gets the clean part), or returns NULL. */
static const char *script_path(weft_state *W, lua_State *L, const char *path) {
  if (!weft__path_place(L, path, strlen(path), WEFT_IN_SCRIPTS)) return NULL;
  const char *full = lua_pushfstring(L, "%s/%s", W->root, lua_tostring(L, -1));
  lua_remove(L, -2);
  return full;
}

/* loadfile(path [, mode [, env]]) as Lua's, for text files under the
   scripts root, read through the state's loader; a chunk loaded without
   env sees the globals of the script that loaded it (see l_load). */
static int l_loadfile(lua_State *L) {
  weft_state *W = weft__get(L);
  const char *path = luaL_optstring(L, 1, NULL);
  const char *mode = luaL_optstring(L, 2, "bt");
  int env = !lua_isnone(L, 3) ? 3 : 0;
  luaL_checkstack(L, 6, NULL);
  if (!path) {
    luaL_pushfail(L);
    lua_pushliteral(L, "cannot read stdin (standard input is not available to scripts)");
    return 2;
  }
  const char *full = script_path(W, L, path);
  if (!full) {
    luaL_pushfail(L);
    lua_pushfstring(L, "cannot open %s: not under the scripts root (scripts load only there)",
                    path);
    return 2;
  }
  if (!push_source(W, L, full)) { /* Lua's words: "cannot open path: why" */
    weft__push_why(L, -1, full);
    luaL_pushfail(L);
    lua_pushfstring(L, "cannot open %s: %s", path, lua_tostring(L, -2));
    return 2;
  }
  size_t len, code;
  const char *src = lua_tolstring(L, -1, &len);
  size_t at = chunk_start(src, len, &code);
  if (code < len && src[code] == LUA_SIGNATURE[0]) {
    luaL_pushfail(L);
    lua_pushliteral(L, BINARY_REFUSED);
    return 2;
  }
  src += at;
  len -= at;
  lua_pushfstring(L, "@%s", path);
  if (load_text(W, L, src, len, lua_tostring(L, -1), mode) != LUA_OK) return load_failed(L);
  return loaded(W, L, env);
}

/* package.searchpath(name, path [, sep [, rep]]) as Lua's: the first
   file the templates of path name that loadfile could read (read through
   the state's loader, under the scripts root), or nil and each file
   tried. */
int weft__l_searchpath(lua_State *L) {
  weft_state *W = weft__get(L);
  const char *name = luaL_checkstring(L, 1);
  const char *path = luaL_checkstring(L, 2);
  const char *sep = luaL_optstring(L, 3, ".");
  const char *rep = luaL_optstring(L, 4, "/"); /* package.config's, on every system */
  if (*sep) name = luaL_gsub(L, name, sep, rep);
  lua_newtable(L); /* the files tried */
  int tried = lua_gettop(L), n = 0;
  for (const char *p = path;;) { /* every ';'-separated template, empty ones too, as Lua */
    stop_if_overrun(W, L, "package.searchpath was still searching");
    const char *end = strchr(p, ';');
    lua_pushlstring(L, p, end ? (size_t)(end - p) : strlen(p));
    const char *file = luaL_gsub(L, lua_tostring(L, -1), "?", name);
    lua_remove(L, -2);
    const char *full = script_path(W, L, file);
    if (full) {
      int ok = push_source(W, L, full);
      lua_pop(L, 2);    /* the text or the message, and the path read */
      if (ok) return 1; /* the file's name, on top */
    }
    lua_rawseti(L, tried, ++n);
    if (!end) break;
    p = end + 1;
  }
  luaL_pushfail(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; i++) {
    luaL_addstring(&b, i > 1 ? "\n\tno file '" : "no file '");
    lua_rawgeti(L, tried, i);
    luaL_addvalue(&b);
    luaL_addchar(&b, '\'');
  }
  luaL_pushresult(&b);
  return 2;
}

int weft__l_caller_env(lua_State *L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sf", &ar)) break;
    if (strcmp(ar.what, "C") != 0 && !weft__chunk_embedded(ar.source)) {
      for (int i = 1;; i++) {
        const char *name = lua_getupvalue(L, -1, i);
        if (!name) break;
        if (strcmp(name, "_ENV") == 0) return 1;
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  return 1;
}

static int dofile_done(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  return lua_gettop(L);
}

/* dofile(path): loadfile's chunk, run; errors propagate, yields too. */
static int l_dofile(lua_State *L) {
  luaL_checkstring(L, 1);
  lua_settop(L, 1);
  if (l_loadfile(L) != 1) return lua_error(L);
  lua_replace(L, 1);
  lua_settop(L, 1);
  lua_callk(L, 0, LUA_MULTRET, 0, dofile_done);
  return dofile_done(L, 0, 0);
}

/* ---- debug: read-only introspection ---- */

/* debug.getmetatable: the metatable of a script's table, even behind a
   __metatable field, as Lua's; for the rest (strings, the host's handles,
   files and environments, and tables whose __metatable is false, as the
   host's own error values are: metatables every script shares) what
   getmetatable gives, so no script can change another's. */
static int l_debug_getmetatable(lua_State *L) {
  weft_state *W = weft__get(L);
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  if (lua_type(L, 1) == LUA_TTABLE && lua_getmetatable(L, 1)) {
    if (is_env_mt(W, L, -1)) {
      lua_pushnil(L);
      return 1;
    }
    lua_pushliteral(L, "__metatable");
    int guarded = lua_rawget(L, -2) == LUA_TBOOLEAN && !lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!guarded) return 1;
    lua_pop(L, 1);
  }
  lua_getglobal(L, "getmetatable"); /* the host's global table: Lua's own */
  lua_pushcclosure(L, l_getmetatable, 1);
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  return 1;
}

/* debug.setmetatable(t, mt): Lua's, past a __metatable field, for a
   script's tables (mt a table, with its __gc as setmetatable takes one,
   or nil). The metatables of the other types are shared by every script
   and the host, and so are those of tables whose __metatable is false
   (the host's convention, see l_debug_getmetatable): neither changes.
   Returns t. */
static int l_debug_setmetatable(lua_State *L) {
  int t = lua_type(L, 2);
  luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  if (lua_type(L, 1) != LUA_TTABLE) {
    const char *msg = lua_pushfstring(
        L, "table expected, got %s (the metatables of the other types are shared by every script)",
        luaL_typename(L, 1));
    return luaL_argerror(L, 1, msg);
  }
  lua_settop(L, 2);
  if (lua_getmetatable(L, 1)) {
    lua_pushliteral(L, "__metatable");
    if (lua_rawget(L, 3) == LUA_TBOOLEAN && !lua_toboolean(L, -1))
      return luaL_error(L, "cannot change a protected metatable");
    lua_settop(L, 2);
  }
  if (t == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL) return set_finalized(L);
    lua_pop(L, 1);
  }
  lua_setmetatable(L, 1);
  return 1;
}

/* Whether the Lua function on top is weft's own (its chunk "[weft ...]"). */
static int is_weft_code(lua_State *L) {
  lua_Debug ar;
  lua_pushvalue(L, -1);
  if (!lua_getinfo(L, ">S", &ar)) return 1;
  return strncmp(ar.source, "=[weft", 6) == 0 || strncmp(ar.source, "[weft", 5) == 0 ||
         strcmp(ar.what, "C") == 0;
}

/* debug.getinfo as Lua's, but for the function itself ('f') of a level
   that runs weft's own code or a C function: a script gets no handle on
   the host's internals through the stack. */
static int l_debug_getinfo(lua_State *L) {
  int arg = lua_type(L, 1) == LUA_TTHREAD ? 1 : 0;
  int n = original(L)(L);
  if (n != 1 || lua_type(L, -1) != LUA_TTABLE || lua_type(L, arg + 1) == LUA_TFUNCTION) return n;
  if (lua_getfield(L, -1, "func") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return 1;
  }
  int hide = is_weft_code(L);
  lua_pop(L, 1);
  if (hide) {
    lua_pushnil(L);
    lua_setfield(L, -2, "func");
  }
  return 1;
}

/* ---- collectgarbage ---- */

/* Every option Lua has, with Lua's results. The collector is the whole
   state's: "stop" holds it until "restart" or until the heap passes half
   the memory limit, where the next frame restarts it (weft__gc_frame), so
   a stopped collector cannot starve the other scripts (a host that stops
   it through lua_gc is left alone). A full collection
   ("collect") stalls the frame for the whole heap; the finalizers it
   finds run before it returns, as tasks (finalize.c). */
static int l_collectgarbage(lua_State *L) {
  static const char *const opts[] = {"stop",         "restart",     "collect",    "count",
                                     "step",         "setpause",    "setstepmul", "isrunning",
                                     "generational", "incremental", NULL};
  int o = luaL_checkoption(L, 1, "collect", opts);
  int n = original(L)(L);
  if (strcmp(opts[o], "collect") == 0 || strcmp(opts[o], "step") == 0)
    weft__fin_run(weft__get(L), L);
  if (strcmp(opts[o], "stop") == 0 || strcmp(opts[o], "restart") == 0)
    weft__get(L)->mem.gc_stopped = opts[o][0] == 's';
  return n;
}

void weft__gc_frame(weft_state *W) {
  lua_State *L = W->L;
  if (W->mem.gc_stopped && W->mem.used > W->desc.memory_limit / 2) { /* a script's stop only */
    lua_gc(L, LUA_GCRESTART);
    W->mem.gc_stopped = 0;
  }
  weft__fin_run(W, L);
}

/* ---- building the API ---- */

/* Copies the listed fields of the global library `lib` into api[name]. */
static void subset(lua_State *L, int api, const char *lib, const char *const *names) {
  lua_getglobal(L, lib);
  lua_createtable(L, 0, 4);
  for (const char *const *n = names; *n; n++) {
    lua_getfield(L, -2, *n);
    lua_setfield(L, -2, *n);
  }
  lua_setfield(L, api, lib);
  lua_pop(L, 1);
}

/* ---- os.date ---- */

/* Conversions formatted in one call of Lua's os.date: Lua's formats each
   with a strftime call, in C, so a format of millions of them held a
   frame for a quarter of a second. A longer format is formatted a piece
   at a time, the task yielding between two when its slice runs out. */
#define DATE_PIECE 4096

/* The whole format (slot 5) from byte slot 4 on, a piece of at most
   DATE_PIECE conversions at a time (each %c, %Ec or %Oc kept whole).
   Each piece is put in slot 1 and formatted by Lua's os.date (upvalue 1)
   called on this frame, as (piece, time = slot 2), so its errors name
   it as Lua's do; the results go in slot 3's table, joined at the end. */
static int date_on(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  size_t len;
  const char *f = lua_tolstring(L, 5, &len);
  int utc = f[0] == '!';
  size_t at = (size_t)lua_tointeger(L, 4);
  while (at < len) {
    size_t end = at;
    int n = 0;
    for (; end < len; end++) {
      if (f[end] != '%') continue;
      if (n++ == DATE_PIECE) break;
      end += end + 1 < len && (f[end + 1] == 'E' || f[end + 1] == 'O') ? 2 : 1;
    }
    if (utc && at > 0) lua_pushliteral(L, "!");
    lua_pushlstring(L, f + at, end - at);
    if (utc && at > 0) lua_concat(L, 2);
    lua_replace(L, 1);
    lua_tocfunction(L, lua_upvalueindex(1))(L);
    lua_rawseti(L, 3, (lua_Integer)lua_rawlen(L, 3) + 1);
    at = end;
    lua_pushinteger(L, (lua_Integer)at);
    lua_replace(L, 4);
    if (at < len && weft__budget_piece(weft__get(L), L, (long)n * 64))
      return lua_yieldk(L, 0, 0, date_on);
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (lua_Integer i = 1, k = (lua_Integer)lua_rawlen(L, 3); i <= k; i++) {
    lua_rawgeti(L, 3, i);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return 1;
}

/* os.date(format, time) as Lua's (upvalue 1, called on this frame so its
   errors name it); a format of more than DATE_PIECE conversions in
   pieces. */
static int l_date(lua_State *L) {
  size_t n = 0, len;
  const char *f = lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &len) : NULL;
  for (size_t i = 0; f && i < len && n <= DATE_PIECE; i++)
    if (f[i] == '%') n++, i++; /* "%%" is one */
  if (n <= DATE_PIECE || f[0] == '*' || (f[0] == '!' && f[1] == '*'))
    return lua_tocfunction(L, lua_upvalueindex(1))(L);
  lua_settop(L, 2);
  lua_newtable(L);       /* 3: the pieces' results */
  lua_pushinteger(L, 0); /* 4: where the next piece starts */
  lua_pushvalue(L, 1);   /* 5: the whole format */
  return date_on(L, LUA_OK, 0);
}

/* ---- xpcall ---- */

int weft__pcall_done(lua_State *L, int status, lua_KContext extra) {
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
  }
  return lua_gettop(L) - (int)extra;
}

int weft__l_xhandler(lua_State *L) {
  if (weft__budget_killing(weft__get(L))) { /* the kill goes on as it is */
    lua_settop(L, 1);
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int weft__xpcall_with(lua_State *L, lua_CFunction handler) {
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, handler, 1);
  lua_replace(L, 2);
  lua_pushboolean(L, 1);
  lua_pushvalue(L, 1);
  lua_rotate(L, 3, 2); /* f, handler, true, f, args... */
  int st = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, weft__pcall_done);
  return weft__pcall_done(L, st, 2);
}

/* xpcall(f, debug.traceback), the common case: Lua's traceback of where
   the error was raised, from the same level Lua's own handler starts at
   (the wrapper would add a level: "[C]: in ?"). */
static int l_xtraceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (weft__budget_killing(weft__get(L)) || (!msg && !lua_isnoneornil(L, 1))) {
    lua_settop(L, 1); /* a kill, or an error that is no string: as it is */
    return 1;
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int l_xpcall(lua_State *L) {
  weft_state *W = weft__get(L);
  int tb = W->traceback && lua_tocfunction(L, 2) == W->traceback;
  return weft__xpcall_with(L, tb ? l_xtraceback : weft__l_xhandler);
}

void weft__open_sandbox(weft_state *W, lua_State *L, int api) {
  api = lua_absindex(L, api);
  weft__name_k(W, "dofile.done", dofile_done);
  weft__name_k(W, "os.date_on", date_on);
  weft__name_k(W, "pcall.done", weft__pcall_done);
  weft__patterns_name_ks(W);
  weft__fin_open(L);
  static const char *const base[] = {
      "assert",   "error",  "ipairs", "next",   "pairs",          "pcall",        "rawequal",
      "rawget",   "rawlen", "rawset", "select", "setmetatable",   "getmetatable", "tonumber",
      "tostring", "type",   "xpcall", "load",   "collectgarbage", "_VERSION",     NULL};
  lua_pushglobaltable(L);
  for (const char *const *n = base; *n; n++) {
    lua_getfield(L, -1, *n);
    lua_setfield(L, api, *n);
  }
  lua_pop(L, 1);
  static const char *const libs[] = {"string", "table", "math", "utf8", "coroutine", NULL};
  for (const char *const *n = libs; *n; n++) {
    lua_getglobal(L, *n);
    copy_table(L, -1);
    lua_setfield(L, api, *n);
    lua_pop(L, 1);
  }
  static const char *const osf[] = {"clock", "time", "date", NULL};
  static const char *const dbgf[] = {"traceback", "getinfo", NULL};
  subset(L, api, "os", osf);
  lua_getfield(L, api, "os");
  wrap(L, lua_gettop(L), "date", l_date);
  lua_pop(L, 1);
  subset(L, api, "debug", dbgf);
  lua_getfield(L, api, "debug");
  lua_getfield(L, -1, "traceback");
  W->traceback = lua_tocfunction(L, -1);
  lua_pop(L, 2);
  wrap(L, api, "getmetatable", l_getmetatable);
  wrap(L, api, "setmetatable", l_setmetatable);
  wrap(L, api, "load", l_load);
  wrap(L, api, "collectgarbage", l_collectgarbage);
  weft__open_io(L, api);
  lua_pushcfunction(L, l_loadfile);
  lua_setfield(L, api, "loadfile");
  lua_pushcfunction(L, l_dofile);
  lua_setfield(L, api, "dofile");
  lua_getfield(L, api, "debug");
  lua_pushcfunction(L, l_debug_getmetatable);
  lua_setfield(L, -2, "getmetatable");
  lua_pushcfunction(L, l_debug_setmetatable);
  lua_setfield(L, -2, "setmetatable");
  wrap(L, lua_gettop(L), "getinfo", l_debug_getinfo);
  lua_pop(L, 1);
  lua_pushcfunction(L, l_print);
  lua_setfield(L, api, "print");
  lua_pushcfunction(L, l_warn);
  lua_setfield(L, api, "warn");
  lua_pushcfunction(L, l_xpcall);
  lua_setfield(L, api, "xpcall");
  /* No string.dump (it makes binary chunks); the pattern functions are
     guarded; strings' methods are this table's (the string metatable
     itself cannot be reached). */
  lua_getfield(L, api, "table");
  weft__guard_tables(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, api, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  weft__guard_patterns(L, -1);
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 3);
  /* Lua names a function in an error message it cannot name from the
     call ("bad argument #1 to 'string.find'", in pcall(string.find, ...))
     by finding it in package.loaded: that is now the scripts' API. */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushnil(L);
  while (lua_next(L, -2)) { /* io, package, ...: scripts cannot name them */
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, api);
  lua_setfield(L, -2, "_G");
  for (const char *const *n = copied_libs; *n; n++) {
    lua_getfield(L, api, *n);
    lua_setfield(L, -2, *n);
  }
  lua_pop(L, 1);
  /* The environments' hidden metatable: absent names fall through to the
     API (names a host adds after an environment was made). */
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, api);
  lua_setfield(L, -2, "__index");
  W->ref_env_mt = luaL_ref(L, LUA_REGISTRYINDEX);
}
