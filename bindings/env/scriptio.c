/* The safe part of Lua's io for scripts: io.write and io.stdout/io.stderr
   write to the log and report sinks, a line at a time; io.open(path, "r"),
   io.lines and io.read read files under the scripts root (through the
   embedder's loader) or the assets root, whole, into the Lua heap.
   Anything that writes a file or runs a program raises, naming the
   rule. */
#include "scriptio.h"
#include "../base/names.h"
#include "../base/persist.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../base/load.h"
#include "../base/log.h"
#include "../accounts/tape.h"

#define FILE_MT "weft.file"
#define READ_ONLY "(scripts read files under the scripts and assets roots, and write none)"

enum { F_READ, F_STDOUT, F_STDERR, F_STDIN };

typedef struct sfile {
  int kind;
  int closed;
  size_t pos; /* read files: the next byte of uservalue 1, the text */
} sfile;

static const char input_key, out_buf_key, err_buf_key; /* registry keys */

static sfile *check_file(lua_State *L, int idx) {
  sfile *f = luaL_checkudata(L, idx, FILE_MT);
  if (f->closed) luaL_error(L, "attempt to use a closed file");
  return f;
}

/* ---- writing: whole lines to the sinks ---- */

/* Sends the complete lines of the kind's buffer plus s to its sink and
   keeps the rest. */
static void emit(lua_State *L, int kind, const char *s, size_t len) {
  weft_state *W = weft__get(L);
  const void *key = kind == F_STDOUT ? &out_buf_key : &err_buf_key;
  lua_rawgetp(L, LUA_REGISTRYINDEX, key);
  size_t have = 0;
  const char *old = lua_tolstring(L, -1, &have);
  if (!memchr(s, '\n', len)) { /* no line ends: only buffered */
    lua_pushlstring(L, old ? old : "", have);
    lua_pushlstring(L, s, len);
    lua_concat(L, 2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, key);
    lua_pop(L, 1);
    return;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  if (old) luaL_addlstring(&b, old, have);
  luaL_addlstring(&b, s, len);
  luaL_pushresult(&b);
  size_t n;
  const char *all = lua_tolstring(L, -1, &n), *p = all, *nl;
  while ((nl = memchr(p, '\n', n - (size_t)(p - all))) != NULL) {
    if (kind == F_STDOUT) {
      weft__log_print(W, p, (size_t)(nl - p));
    } else {
      lua_pushlstring(L, p, (size_t)(nl - p));
      weft__log_report(W, lua_tostring(L, -1), NULL);
      lua_pop(L, 1);
    }
    p = nl + 1;
  }
  lua_pushlstring(L, p, n - (size_t)(p - all));
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
  lua_pop(L, 2);
}

/* Writes the values from arg on to f, as Lua's io does (numbers with
   Lua's formats); returns f, or fail as Lua does for a read-only file. */
static int write_to(lua_State *L, sfile *f, int fidx, int arg) {
  int n = lua_gettop(L);
  if (f->kind == F_READ || f->kind == F_STDIN) {
    for (int i = arg; i <= n; i++) luaL_checklstring(L, i, NULL);
    luaL_pushfail(L);
    lua_pushliteral(L, "Bad file descriptor");
    lua_pushinteger(L, EBADF);
    return 3;
  }
  for (int i = arg; i <= n; i++) {
    size_t len;
    const char *s;
    char num[64];
    if (lua_type(L, i) == LUA_TNUMBER) {
      len = (size_t)(lua_isinteger(L, i)
                         ? snprintf(num, sizeof num, LUA_INTEGER_FMT, lua_tointeger(L, i))
                         : snprintf(num, sizeof num, LUA_NUMBER_FMT, lua_tonumber(L, i)));
      s = num;
    } else {
      s = luaL_checklstring(L, i, &len);
    }
    emit(L, f->kind, s, len);
  }
  lua_pushvalue(L, fidx);
  return 1;
}

void weft__io_print(lua_State *L, const char *s, size_t len) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &out_buf_key) != LUA_TSTRING || lua_rawlen(L, -1) == 0) {
    lua_pop(L, 1);
    weft__log_print(weft__get(L), s, len);
    return;
  }
  lua_pop(L, 1);
  emit(L, F_STDOUT, s, len);
  emit(L, F_STDOUT, "\n", 1);
}

static int f_write(lua_State *L) { return write_to(L, check_file(L, 1), 1, 2); }

static void push_std(lua_State *L, const char *name) { lua_getfield(L, lua_upvalueindex(1), name); }

static int io_write(lua_State *L) {
  push_std(L, "stdout");
  lua_insert(L, 1);
  return write_to(L, check_file(L, 1), 1, 2);
}

void weft__io_flush(weft_state *W) {
  lua_State *L = W->L;
  const void *keys[2] = {&out_buf_key, &err_buf_key};
  for (int i = 0; i < 2 && lua_checkstack(L, 2); i++) {
    size_t n = 0;
    const char *s =
        lua_rawgetp(L, LUA_REGISTRYINDEX, keys[i]) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
    if (s && n) {
      if (i == 0)
        weft__log_print(W, s, n);
      else
        weft__log_report(W, s, NULL);
    }
    lua_pop(L, 1);
  }
}

/* ---- opening files ---- */

/* Pushes a new read file holding the text on top (which it replaces). */
static void new_read_file(lua_State *L) {
  sfile *f = lua_newuserdatauv(L, sizeof *f, 1);
  *f = (sfile){F_READ, 0, 0};
  luaL_setmetatable(L, FILE_MT);
  lua_insert(L, -2);
  lua_setiuservalue(L, -2, 1);
}

/* Opens path for reading: pushes the file and returns 0, or pushes why
   not and returns it as an errno. The file read is the root's own path
   to it (root/clean path): a recording keys it so, the loader is given
   the clean part. */
static int try_open(lua_State *L, const char *path) {
  weft_state *W = weft__get(L);
  int base = lua_gettop(L), code = 0;
  int at = weft__path_place(L, path, strlen(path), WEFT_IN_SCRIPTS | WEFT_IN_ASSETS);
  if (!at) {
    lua_pushliteral(L, "not under the scripts or assets root " READ_ONLY);
    code = EACCES;
  } else {
    const char *full = lua_pushfstring(L, "%s/%s", at == WEFT_IN_SCRIPTS ? W->root : W->assets,
                                       lua_tostring(L, -1));
    /* A recording keeps what was read, so a replay reads the same. */
    int (*reader)(lua_State *, const char *) =
        at == WEFT_IN_SCRIPTS ? weft__push_script : weft__push_file;
    if (W->tape ? weft__tape_read_file(W, L, full, reader) : reader(L, full))
      new_read_file(L);
    else
      code = weft__push_why(L, -1, full);
  }
  if (lua_gettop(L) > base + 1) {
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
  }
  return code;
}

/* io.open's: the file (1), or fail, "path: why", errno (3), as Lua's. */
static int open_read(lua_State *L, const char *path) {
  int code = try_open(L, path);
  if (!code) return 1;
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: %s", path, lua_tostring(L, -2));
  lua_pushinteger(L, code);
  return 3;
}

/* io.lines' and io.input's: the file, or raises as Lua's do. */
static void open_check(lua_State *L, const char *path) {
  if (try_open(L, path)) luaL_error(L, "cannot open file '%s' (%s)", path, lua_tostring(L, -1));
}

/* Lua's check: [rwa]%+?b* */
static int valid_mode(const char *m) {
  if (*m == 0 || strchr("rwa", *m++) == NULL) return 0;
  if (*m == '+') m++;
  return strspn(m, "b") == strlen(m);
}

static int io_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  const char *mode = luaL_optstring(L, 2, "r");
  luaL_argcheck(L, valid_mode(mode), 2, "invalid mode");
  if (mode[0] != 'r' || strchr(mode, '+')) { /* Lua's fail, as when fopen is refused */
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: writing files is not available to scripts %s", path, READ_ONLY);
    lua_pushinteger(L, EACCES);
    return 3;
  }
  return open_read(L, path);
}

static int io_refuse_program(lua_State *L) {
  return luaL_error(L, "io.popen is not available to scripts (scripts run no programs)");
}

static int io_refuse_tmpfile(lua_State *L) {
  return luaL_error(L, "io.tmpfile is not available to scripts %s", READ_ONLY);
}

/* ---- reading ---- */

static int test_digits(const char *s, size_t n, size_t *i, int hex) {
  size_t start = *i;
  while (*i < n &&
         (hex ? strchr("0123456789abcdefABCDEF", s[*i]) != NULL : (s[*i] >= '0' && s[*i] <= '9')) &&
         s[*i])
    (*i)++;
  return *i > start;
}

/* "n": the longest numeral at pos (as Lua's read_number reads it). */
static int read_number(lua_State *L, const char *s, size_t n, size_t *pos) {
  size_t i = *pos;
  while (i < n && strchr(" \t\n\v\f\r", s[i]) && s[i]) i++;
  size_t start = i;
  if (i < n && (s[i] == '+' || s[i] == '-')) i++;
  int hex = 0;
  if (i + 1 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    i += 2;
    hex = 1;
  }
  int digits = test_digits(s, n, &i, hex);
  if (i < n && s[i] == '.') {
    i++;
    digits += test_digits(s, n, &i, hex);
  }
  if (digits && i < n && strchr(hex ? "pP" : "eE", s[i]) && s[i]) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    test_digits(s, n, &i, 0);
  }
  *pos = i;
  if (i - start >= 200) return 0;
  char buf[201];
  memcpy(buf, s + start, i - start);
  buf[i - start] = 0;
  return lua_stringtonumber(L, buf) != 0;
}

/* Reads by the formats from first on; returns the values as Lua does. */
static int read_from(lua_State *L, sfile *f, int fidx, int first) {
  if (f->kind == F_STDIN)
    return luaL_error(L, "standard input is not available to scripts %s", READ_ONLY);
  if (f->kind != F_READ) {
    luaL_pushfail(L);
    lua_pushliteral(L, "Bad file descriptor");
    lua_pushinteger(L, EBADF);
    return 3;
  }
  lua_getiuservalue(L, fidx, 1);
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  lua_pop(L, 1); /* the file's uservalue keeps it */
  int nargs = lua_gettop(L) - first + 1, count = 0, ok = 1;
  if (nargs <= 0) {
    lua_pushliteral(L, "l");
    nargs = 1;
  }
  luaL_checkstack(L, nargs + LUA_MINSTACK, "too many arguments");
  for (int i = first; ok && count < nargs; i++, count++) {
    if (lua_type(L, i) == LUA_TNUMBER) {
      lua_Integer k = luaL_checkinteger(L, i);
      size_t left = n - f->pos, take = k < 0 ? 0 : (size_t)k < left ? (size_t)k : left;
      if (k == 0) {
        ok = f->pos < n;
        lua_pushliteral(L, "");
      } else {
        ok = take > 0;
        lua_pushlstring(L, s + f->pos, take);
        f->pos += take;
      }
      continue;
    }
    const char *p = luaL_checkstring(L, i);
    if (*p == '*') p++;
    switch (*p) {
    case 'n': {
      size_t at = f->pos;
      ok = read_number(L, s, n, &at);
      f->pos = at;
      if (!ok) lua_pushnil(L);
      break;
    }
    case 'l':
    case 'L': {
      const char *nl = f->pos < n ? memchr(s + f->pos, '\n', n - f->pos) : NULL;
      size_t end = nl ? (size_t)(nl - s) : n;
      ok = f->pos < n;
      lua_pushlstring(L, s + f->pos, end - f->pos + (nl && *p == 'L'));
      f->pos = nl ? end + 1 : n;
      break;
    }
    case 'a':
      lua_pushlstring(L, s + f->pos, n - f->pos);
      f->pos = n;
      break;
    default:
      return luaL_argerror(L, i, "invalid format");
    }
  }
  if (!ok) {
    lua_pop(L, 1);
    luaL_pushfail(L);
  }
  return count;
}

static int f_read(lua_State *L) { return read_from(L, check_file(L, 1), 1, 2); }

static void push_input(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &input_key) == LUA_TNIL) {
    lua_pop(L, 1);
    push_std(L, "stdin");
  }
}

static int io_read(lua_State *L) {
  push_input(L);
  lua_insert(L, 1);
  return read_from(L, check_file(L, 1), 1, 2);
}

/* The iterator of lines: upvalues file, close-at-end, n formats. */
static int lines_next(lua_State *L) {
  sfile *f = luaL_checkudata(L, lua_upvalueindex(1), FILE_MT);
  if (f->closed) return luaL_error(L, "file is already closed");
  int n = (int)lua_tointeger(L, lua_upvalueindex(3));
  lua_settop(L, 0);
  lua_pushvalue(L, lua_upvalueindex(1));
  for (int i = 1; i <= n; i++) lua_pushvalue(L, lua_upvalueindex(3 + i));
  int got = read_from(L, f, 1, 2);
  if (lua_toboolean(L, -got)) return got;
  if (lua_toboolean(L, lua_upvalueindex(2))) f->closed = 1;
  return 0;
}

static int push_lines(lua_State *L, int fidx, int first, int close) {
  int n = lua_gettop(L) - first + 1;
  if (n < 0) n = 0;
  luaL_argcheck(L, n <= 250, 250 + first, "too many arguments");
  lua_pushvalue(L, fidx);
  lua_pushboolean(L, close);
  lua_pushinteger(L, n);
  for (int i = 0; i < n; i++) lua_pushvalue(L, first + i);
  lua_pushcclosure(L, lines_next, 3 + n);
  if (!close) return 1;
  lua_pushnil(L);
  lua_pushnil(L);
  lua_pushvalue(L, fidx); /* to-be-closed, as Lua's io.lines returns it */
  return 4;
}

static int f_lines(lua_State *L) {
  check_file(L, 1);
  return push_lines(L, 1, 2, 0);
}

static int io_lines(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, lua_gettop(L) < 1 ? 1 : lua_gettop(L));
    push_input(L);
    lua_replace(L, 1);
    check_file(L, 1);
    return push_lines(L, 1, 2, 0);
  }
  open_check(L, luaL_checkstring(L, 1));
  lua_replace(L, 1);
  return push_lines(L, 1, 2, 1);
}

static int io_input(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) {
    if (lua_type(L, 1) == LUA_TSTRING) {
      open_check(L, lua_tostring(L, 1));
    } else {
      check_file(L, 1);
      lua_pushvalue(L, 1);
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &input_key);
  }
  push_input(L);
  return 1;
}

static int io_output(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) {
    sfile *f = lua_type(L, 1) == LUA_TSTRING ? NULL : check_file(L, 1);
    if (!f || f->kind != F_STDOUT)
      return luaL_error(L, "io.output: writing files is not available to scripts %s", READ_ONLY);
  }
  push_std(L, "stdout");
  return 1;
}

static int f_close(lua_State *L) {
  sfile *f = check_file(L, 1);
  if (f->kind != F_READ) {
    luaL_pushfail(L);
    lua_pushliteral(L, "cannot close standard file");
    return 2;
  }
  f->closed = 1;
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1);
  lua_pushboolean(L, 1);
  return 1;
}

static int io_close(lua_State *L) {
  if (lua_isnone(L, 1)) push_std(L, "stdout");
  return f_close(L);
}

static int f_gc(lua_State *L) { /* __close: as Lua's, closes unless closed */
  sfile *f = luaL_checkudata(L, 1, FILE_MT);
  if (!f->closed && f->kind == F_READ) f->closed = 1;
  return 0;
}

static int f_seek(lua_State *L) {
  static const char *const modes[] = {"set", "cur", "end", NULL};
  sfile *f = check_file(L, 1);
  int op = luaL_checkoption(L, 2, "cur", modes);
  lua_Integer off = luaL_optinteger(L, 3, 0);
  if (f->kind != F_READ) {
    luaL_pushfail(L);
    lua_pushliteral(L, "Illegal seek");
    lua_pushinteger(L, ESPIPE);
    return 3;
  }
  lua_getiuservalue(L, 1, 1);
  lua_Integer size = (lua_Integer)lua_rawlen(L, -1);
  lua_Integer base = op == 0 ? 0 : op == 1 ? (lua_Integer)f->pos : size;
  /* Past either end of what a 64-bit position holds: as fseek, EINVAL
     (base + off would overflow). */
  if (off < -base || off > LUA_MAXINTEGER - base) {
    luaL_pushfail(L);
    lua_pushliteral(L, "Invalid argument");
    lua_pushinteger(L, EINVAL);
    return 3;
  }
  lua_Integer to = base + off;
  f->pos = (size_t)(to > size ? size : to); /* a read there is at the end */
  lua_pushinteger(L, to);
  return 1;
}

static int f_flush(lua_State *L) {
  check_file(L, 1);
  lua_pushvalue(L, 1);
  return 1;
}

static int f_setvbuf(lua_State *L) {
  static const char *const modes[] = {"no", "full", "line", NULL};
  check_file(L, 1);
  luaL_checkoption(L, 2, NULL, modes);
  lua_pushboolean(L, 1);
  return 1;
}

static int io_flush(lua_State *L) {
  push_std(L, "stdout");
  return 1;
}

static int f_tostring(lua_State *L) {
  sfile *f = luaL_checkudata(L, 1, FILE_MT);
  if (f->closed)
    lua_pushliteral(L, "file (closed)");
  else
    lua_pushfstring(L, "file (%p)", (void *)f);
  return 1;
}

static int io_type(lua_State *L) {
  luaL_checkany(L, 1);
  sfile *f = luaL_testudata(L, 1, FILE_MT);
  if (!f)
    luaL_pushfail(L);
  else if (f->closed)
    lua_pushliteral(L, "closed file");
  else
    lua_pushliteral(L, "file");
  return 1;
}

static void new_std(lua_State *L, int kind, const char *name, int io) {
  sfile *f = lua_newuserdatauv(L, sizeof *f, 1);
  *f = (sfile){kind, 0, 0};
  luaL_setmetatable(L, FILE_MT);
  lua_setfield(L, io, name);
}

void weft__open_io(lua_State *L, int api) {
  api = lua_absindex(L, api);
  luaL_newmetatable(L, FILE_MT);
  static const luaL_Reg methods[] = {{"read", f_read},       {"write", f_write}, {"lines", f_lines},
                                     {"close", f_close},     {"seek", f_seek},   {"flush", f_flush},
                                     {"setvbuf", f_setvbuf}, {NULL, NULL}};
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  weft__name_methods(L, "file", methods);
  lua_pushcfunction(L, f_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, f_gc);
  lua_setfield(L, -2, "__close");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable"); /* shared by every script: not theirs to change */
  lua_pop(L, 1);
  lua_createtable(L, 0, 16);
  int io = lua_gettop(L);
  new_std(L, F_STDOUT, "stdout", io);
  new_std(L, F_STDERR, "stderr", io);
  new_std(L, F_STDIN, "stdin", io);
  static const luaL_Reg fns[] = {{"write", io_write}, {"read", io_read},     {"lines", io_lines},
                                 {"input", io_input}, {"output", io_output}, {"close", io_close},
                                 {"flush", io_flush}, {NULL, NULL}};
  lua_pushvalue(L, io);
  luaL_setfuncs(L, fns, 1); /* the io table: its standard files */
  lua_pushcfunction(L, io_open);
  lua_setfield(L, io, "open");
  lua_pushcfunction(L, io_type);
  lua_setfield(L, io, "type");
  lua_pushcfunction(L, io_refuse_program);
  lua_setfield(L, io, "popen");
  lua_pushcfunction(L, io_refuse_tmpfile);
  lua_setfield(L, io, "tmpfile");
  lua_setfield(L, api, "io");
}

void weft__io_names(lua_State *L, int names) {
  lua_pushlightuserdata(L, (void *)&input_key);
  weft__persist_name(L, names, "io.input", -1);
  lua_pushlightuserdata(L, (void *)&out_buf_key);
  weft__persist_name(L, names, "io.outbuf", -1);
  lua_pushlightuserdata(L, (void *)&err_buf_key);
  weft__persist_name(L, names, "io.errbuf", -1);
  lua_pop(L, 3);
}
