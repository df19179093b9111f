/* Modules and hot reload: require under the scripts root, weft.start,
   persist, and reload transactions driven by the file watcher. The
   bookkeeping is Lua (bindings/lua/modules.lua: which modules, in what
   order, and restarting their tasks); C gives it text-only loading,
   staging a module's new version under a budget, the transaction's
   commit, error reports and the watcher. The two meet once, when the
   state opens: C hands modules.lua one table of what it offers and gets
   one table back (open_modules). */
#include <stdio.h>
#include <string.h>

#include "../../host/watch.h"
#include "reload.h"
#include "../accounts/handles.h"
#include "../base/load.h"
#include "../accounts/budget.h"
#include "../base/chunks.h"
#include "../base/names.h"
#include "../accounts/report.h"
#include "sandbox.h"
#include "../accounts/tape.h"

#include "lua_modules.h" /* generated: bindings/lua/modules.lua */

/* ---- the reload transaction ----

   commit(list, broken) stages each module record of `list` in order
   (l_stage: its new value, or it raises) and merges the value
   into the live module at once, so the modules staged after it see it.
   A plain table merges into the live table: new values win, removed keys
   go, nested plain tables merge in place, so references into a module
   stay valid. Any other value replaces rec.M.

   A failure at any point (a script error, the budget, memory) must leave
   every module as it was, even when no allocation succeeds any more:
   - planning (protected; changes nothing): every write the merge makes
     goes into a log as (table, key, old value, new value);
   - applying (protected): the logged writes in order;
   - undoing, on failure: the applied writes backwards, each
     table[key] = old. Most undo writes overwrite a value in place, but one
     that puts back a removed key (or a key a later module's top level
     removed) may need the table to grow: the undo runs with the state's
     reserve open (see state.c), so it gets memory when nothing else
     does, and each write is protected, so an exhausted reserve leaves a
     report rather than a half-done undo;
   - committing (allocates nothing): the version numbers and the modules'
     broken marks. */

#define MERGE_DEPTH 100 /* deeper nested tables are replaced, not merged */
#define LOG_STRIDE 4    /* table, key, old, new */

static const char absent; /* lightuserdata in the log: "no value" */

typedef struct txn {
  lua_Integer logged;  /* writes in the log */
  lua_Integer applied; /* writes applied, from the first */
} txn;

typedef struct planner {
  int log, seen, map;
  txn *x;
} planner;

static int is_plain(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return 0;
  if (!lua_getmetatable(L, idx)) return 1;
  lua_pop(L, 1);
  return 0;
}

/* The same value, as a merge sees it: 1 and 1.0, or 0.0 and -0.0, differ
   (an edit from one to the other is an edit); NaN is itself. */
static int same_value(lua_State *L, int a, int b) {
  if (lua_type(L, a) != lua_type(L, b)) return 0;
  if (lua_type(L, a) != LUA_TNUMBER) return lua_rawequal(L, a, b);
  if (lua_isinteger(L, a) != lua_isinteger(L, b)) return 0;
  if (lua_isinteger(L, a)) return lua_tointeger(L, a) == lua_tointeger(L, b);
  lua_Number x = lua_tonumber(L, a), y = lua_tonumber(L, b);
  return memcmp(&x, &y, sizeof x) == 0;
}

/* Appends a write (t[k]: old -> new, each a stack index) to the log. */
static void log_write(lua_State *L, planner *p, int t, int k, int old, int nw) {
  const int idx[LOG_STRIDE] = {t, k, old, nw};
  lua_Integer at = p->x->logged * LOG_STRIDE;
  for (int i = 0; i < LOG_STRIDE; i++) {
    if (lua_isnil(L, idx[i]))
      lua_pushlightuserdata(L, (void *)&absent);
    else
      lua_pushvalue(L, idx[i]);
    lua_rawseti(L, p->log, at + i + 1);
  }
  p->x->logged++;
}

static void plan_table(lua_State *L, planner *p, int live, int nw, int depth) {
  luaL_checkstack(L, 8, NULL);
  lua_pushvalue(L, live);
  lua_pushboolean(L, 1);
  lua_rawset(L, p->seen);
  lua_pushvalue(L, nw); /* the new table stands for the live one (see p_rebind) */
  lua_pushvalue(L, live);
  lua_rawset(L, p->map);
  lua_pushnil(L);
  while (lua_next(L, live)) { /* k lv: keys the new version drops */
    int k = lua_gettop(L) - 1;
    lua_pushvalue(L, k);
    if (lua_rawget(L, nw) == LUA_TNIL) log_write(L, p, live, k, k + 1, k + 2);
    lua_pop(L, 2);
  }
  lua_pushnil(L);
  while (lua_next(L, nw)) { /* k v */
    int k = lua_gettop(L) - 1, v = k + 1, lv = k + 2;
    lua_pushvalue(L, k);
    lua_rawget(L, live);
    if (!same_value(L, v, lv)) {
      int nested = depth < MERGE_DEPTH && is_plain(L, v) && is_plain(L, lv);
      if (nested) {
        lua_pushvalue(L, lv);
        nested = lua_rawget(L, p->seen) == LUA_TNIL;
        lua_pop(L, 1);
      }
      if (nested)
        plan_table(L, p, lv, v, depth + 1);
      else
        log_write(L, p, live, k, lv, v);
    }
    lua_pop(L, 2);
  }
}

/* Protected: plan(rec, M, log, txn, "M") logs the writes that put M into
   rec. */
static int p_plan(lua_State *L) {
  planner p = {3, 0, 7, lua_touserdata(L, 4)};
  lua_pushvalue(L, 5);
  lua_rawget(L, 1);          /* 6: rec.M */
  lua_getfield(L, 3, "map"); /* 7 */
  if (is_plain(L, 6) && is_plain(L, 2)) {
    if (!lua_rawequal(L, 6, 2)) {
      lua_newtable(L);
      p.seen = lua_gettop(L);
      plan_table(L, &p, 6, 2, 0);
    }
  } else {
    log_write(L, &p, 1, 5, 6, 2);
  }
  return 0;
}

/* Pushes field i of log entry `at`, nil for `absent`. */
static void log_get(lua_State *L, int log, lua_Integer at, int i) {
  lua_rawgeti(L, log, at * LOG_STRIDE + i + 1);
  if (lua_touserdata(L, -1) == &absent) {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
}

/* Protected: apply(log, txn) makes the logged writes not yet applied. */
static int p_apply(lua_State *L) {
  txn *x = lua_touserdata(L, 2);
  luaL_checkstack(L, 4, NULL);
  while (x->applied < x->logged) {
    lua_Integer at = x->applied++; /* counted first: undo covers a write that fails */
    log_get(L, 1, at, 0);
    log_get(L, 1, at, 1);
    log_get(L, 1, at, 3);
    lua_rawset(L, -3);
    lua_pop(L, 1);
  }
  return 0;
}

/* Points the upvalues of the Lua function at L[f] (and of the Lua
   functions it holds in upvalues) that hold a new table merged into a
   live one at the live one instead. The new module's functions capture
   its own tables (`local M = {}` ... `function M.bump() M.n = ... end`);
   once merged they must work on the live tables, or their writes would
   go to a copy nobody reads. Upvalues are shared between the closures
   that capture one local, so fixing it through one fixes it for all. */
static void rebind(lua_State *L, int f, int map, int seen, int depth) {
  luaL_checkstack(L, 4, NULL);
  lua_pushvalue(L, f);
  lua_pushboolean(L, 1);
  lua_rawset(L, seen);
  for (int i = 1; lua_getupvalue(L, f, i); i++) {
    int v = lua_gettop(L);
    if (lua_type(L, v) == LUA_TTABLE) {
      lua_pushvalue(L, v);
      if (lua_rawget(L, map) == LUA_TTABLE)
        lua_setupvalue(L, f, i);
      else
        lua_pop(L, 1);
    } else if (lua_type(L, v) == LUA_TFUNCTION && !lua_iscfunction(L, v) && depth < MERGE_DEPTH) {
      lua_pushvalue(L, v);
      if (lua_rawget(L, seen) == LUA_TNIL) rebind(L, v, map, seen, depth + 1);
      lua_pop(L, 1);
    }
    lua_settop(L, v - 1);
  }
}

/* Rebinds the Lua function at L[v], or the functions in the plain table
   at L[v] and its nested plain tables (a table the merge put in whole). */
static void rebind_value(lua_State *L, int v, int map, int seen, int depth) {
  luaL_checkstack(L, 4, NULL);
  int t = lua_type(L, v);
  if (t == LUA_TFUNCTION ? lua_iscfunction(L, v) : !(t == LUA_TTABLE && is_plain(L, v))) return;
  if (depth >= MERGE_DEPTH) return;
  lua_pushvalue(L, v);
  int was = lua_rawget(L, seen) != LUA_TNIL;
  lua_pop(L, 1);
  if (was) return;
  if (t == LUA_TFUNCTION) {
    rebind(L, v, map, seen, 0);
    return;
  }
  lua_pushvalue(L, v);
  lua_pushboolean(L, 1);
  lua_rawset(L, seen);
  lua_pushnil(L);
  while (lua_next(L, v)) {
    rebind_value(L, lua_gettop(L), map, seen, depth + 1);
    lua_pop(L, 1);
  }
}

/* Protected: rebind(log, txn, from) rebinds the Lua functions the writes
   from entry `from` on put in place, and those in tables they put in. */
static int p_rebind(lua_State *L) {
  txn *x = lua_touserdata(L, 2);
  lua_Integer from = lua_tointeger(L, 3);
  lua_getfield(L, 1, "map"); /* 4 */
  lua_newtable(L);           /* 5: functions and tables seen */
  for (lua_Integer at = from; at < x->applied; at++) {
    log_get(L, 1, at, 3);
    rebind_value(L, lua_gettop(L), 4, 5, 0);
    lua_pop(L, 1);
  }
  return 0;
}

/* Protected: t[k] = v for (t, k, v) at 1..3. */
static int p_set(lua_State *L) {
  lua_rawset(L, 1);
  return 0;
}

/* Undoes the applied writes, newest first, with the reserve open. Returns
   0 when one of them could not be made. */
static int undo(lua_State *L, int log, txn *x) {
  weft_state *W = weft__get(L);
  int complete = 1;
  W->mem.in_rollback++;
  while (x->applied > 0) {
    lua_Integer at = --x->applied;
    lua_pushcfunction(L, p_set);
    log_get(L, log, at, 0); /* t */
    log_get(L, log, at, 1); /* k */
    log_get(L, log, at, 2); /* old */
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
      lua_pop(L, 1);
      complete = 0;
    }
  }
  W->mem.in_rollback--;
  return complete;
}

/* The rest of a failed commit: puts everything back and returns
   false, rec, err (the error at the top, rec at 8). */
static int abort_commit(lua_State *L, txn *x) {
  weft_state *W = weft__get(L);
  int err = lua_gettop(L);
  if (!undo(L, 4, x))
    weft__report(W, L, err, 0,
                 "a failed reload could not put every module back (not enough memory)");
  lua_pushboolean(L, 0);
  lua_pushvalue(L, 8);
  lua_pushvalue(L, err);
  return 3;
}

static int l_stage(lua_State *L);

/* commit(list, broken): true, or false, rec, err. */
static int l_commit(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_pushcfunction(L, l_stage); /* 2: stage, 3: broken */
  lua_insert(L, 2);
  /* Everything that may raise comes first; past the first merge only
     protected calls may fail. */
  luaL_checkstack(L, 24, NULL);
  lua_newtable(L); /* 4: the log, and log.map: new table -> live table */
  lua_newtable(L);
  lua_setfield(L, 4, "map");
  lua_pushliteral(L, "M");       /* 5 */
  lua_pushliteral(L, "version"); /* 6 */
  lua_pushliteral(L, "file");    /* 7 */
  txn x = {0, 0};
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_settop(L, 7);
    lua_rawgeti(L, 1, i); /* 8: rec */
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 8);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) return abort_commit(L, &x);
    lua_pushcfunction(L, p_plan); /* 9: M */
    lua_pushvalue(L, 8);
    lua_pushvalue(L, 9);
    lua_pushvalue(L, 4);
    lua_pushlightuserdata(L, &x);
    lua_pushvalue(L, 5);
    if (lua_pcall(L, 5, 0, 0) != LUA_OK) return abort_commit(L, &x);
    lua_Integer from = x.applied;
    lua_pushcfunction(L, p_apply);
    lua_pushvalue(L, 4);
    lua_pushlightuserdata(L, &x);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) return abort_commit(L, &x);
    lua_pushcfunction(L, p_rebind);
    lua_pushvalue(L, 4);
    lua_pushlightuserdata(L, &x);
    lua_pushinteger(L, from);
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) return abort_commit(L, &x);
  }
  /* Committed: count the versions, clear the broken marks. */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_settop(L, 7);
    lua_rawgeti(L, 1, i); /* 8: rec */
    lua_pushvalue(L, 6);
    lua_pushvalue(L, 6);
    lua_rawget(L, 8);
    lua_pushinteger(L, lua_tointeger(L, -1) + 1);
    lua_remove(L, -2);
    lua_rawset(L, 8);
    lua_pushvalue(L, 7);
    if (lua_rawget(L, 8) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      if (lua_rawget(L, 3) != LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushnil(L);
        lua_rawset(L, 3);
      }
    }
  }
  lua_settop(L, 7);
  weft__get(L)->mods.reloads++; /* committed, whatever happens after */
  lua_pushboolean(L, 1);
  return 1;
}

/* Calls the function below nargs arguments, protected, as a module's top
   level: it cannot be preempted (it runs from C), so it runs on past its
   slices, a stretch of its own, the same on a first require and on a
   reload; a runaway (past desc.runaway_us) fails at its line, and keeps
   failing (no pcall inside it can go on). */
static int load_call(lua_State *L, int nargs) {
  weft_state *W = weft__get(L);
  W->mods.loading++;
  int st = weft__budget_pcall(W, L, nargs, 1, 0,
                              "module took too long to load (a runaway: it never finished)", 0);
  W->mods.loading--;
  return st;
}

/* load_module(fn, given, loading, path, name): runs a module's top level
   with (given, path) as Lua's require gives them (the name as the script
   spelt it), protected, marked in `loading` under name meanwhile; true, M
   or false, err. From C, so the
   mark goes even when the load was killed by the budget (every
   instruction raises then), and so the top level cannot wait: a module
   loads within one go. */
static int l_load_module(lua_State *L) {
  lua_settop(L, 5);
  lua_pushvalue(L, 5);
  lua_pushboolean(L, 1);
  lua_rawset(L, 3);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 4);
  int st = load_call(L, 2);
  lua_pushvalue(L, 5);
  lua_pushnil(L);
  lua_rawset(L, 3); /* an existing key: no allocation */
  lua_pushboolean(L, st == LUA_OK);
  lua_insert(L, -2);
  return 2;
}

/* A plain table: a table with no metatable. */
static int plain(lua_State *L, int idx) {
  if (!lua_istable(L, idx) || !lua_getmetatable(L, idx)) return lua_istable(L, idx);
  lua_pop(L, 1);
  return 0;
}

/* Sets the package.path of the environment at env (a script's own copy
   of package) to the string at path, when it is one: a module gets the
   search path it was found with, so its own requires find its
   neighbours, as under Lua's one package.path. */
static void set_package_path(lua_State *L, int env, int path) {
  env = lua_absindex(L, env);
  path = lua_absindex(L, path);
  if (lua_type(L, path) != LUA_TSTRING) return;
  if (lua_getfield(L, env, "package") == LUA_TTABLE) {
    lua_pushvalue(L, path);
    lua_setfield(L, -2, "path");
  }
  lua_pop(L, 1);
}

/* stage(rec): a module's new value: its file (rec.file) read through the
   loader, its top level run with (rec.name, rec.file) under the loading
   budget, as a first require runs it (its package.path rec.path, the one
   it was found with). Raises the error that stopped it,
   or when a module that was a plain table no longer returns one (its
   dependents hold the table). */
static int l_stage(lua_State *L) {
  weft_state *W = weft__get(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_getfield(L, 1, "file"); /* 2 */
  lua_getfield(L, 1, "name"); /* 3 */
  const char *file = luaL_checkstring(L, 2);
  if (!weft__load_script(W, L, file)) return lua_error(L);
  lua_getfield(L, 1, "path"); /* the package.path it was first found with */
  set_package_path(L, -3, -1);
  lua_pop(L, 1);
  lua_remove(L, -2); /* the environment: 4 is the chunk */
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 2);
  if (load_call(L, 2) != LUA_OK) return lua_error(L);
  if (lua_isnil(L, 4)) { /* a module that returns nothing is true, as require has it */
    lua_pushboolean(L, 1);
    lua_replace(L, 4);
  }
  lua_getfield(L, 1, "M");
  if (plain(L, 5) && !plain(L, 4)) return luaL_error(L, "%s: the module must return a table", file);
  lua_settop(L, 4);
  return 1;
}

/* loadfile(path [, package_path]): a script's chunk in a new environment
   (its package.path set to package_path, when given), or nil and the
   message. */
static int l_loadfile(lua_State *L) {
  weft_state *W = weft__get(L);
  const char *path = luaL_checkstring(L, 1);
  lua_settop(L, 2);
  if (!weft__load_script(W, L, path)) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  set_package_path(L, -2, 2);
  lua_remove(L, -2); /* env */
  return 1;
}

/* place(path): the root's own path to path (root/clean path) when it
   lies under the scripts root by its letters, else nil. */
static int l_place(lua_State *L) {
  weft_state *W = weft__get(L);
  size_t len;
  const char *path = luaL_checklstring(L, 1, &len);
  if (!weft__path_place(L, path, len, WEFT_IN_SCRIPTS)) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushfstring(L, "%s/%s", W->root, lua_tostring(L, -1));
  return 1;
}

/* cancels(g): how many times group g was cancelled, itself or through
   a group around it (a start whose group someone else cancelled is
   over: no save restarts it). */
static int l_cancels(lua_State *L) {
  ghandle *g = luaL_checkudata(L, 1, WEFT_GROUP_MT);
  lua_pushinteger(L, (lua_Integer)weft__group_cancels(weft__get(L)->S, g->id));
  return 1;
}

/* new_env(): a script environment of its own (package.loaded's _G). */
static int l_new_env(lua_State *L) {
  weft__new_env(weft__get(L), L);
  return 1;
}

static int l_report(lua_State *L) {
  weft__report(weft__get(L), L, 1, 0, NULL);
  return 0;
}

/* g:start(name, state, ...) */
int weft__l_group_start(lua_State *L) {
  weft_state *W = weft__get(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->mods.ref_group_start);
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* Sets t[name] (t on top) to the C function f. */
static void set_fn(lua_State *L, const char *name, lua_CFunction f) {
  char full[64];
  snprintf(full, sizeof full, "modules.%s", name);
  weft__name_c(L, full, f); /* modules.lua keeps them in upvalues */
  lua_pushcfunction(L, f);
  lua_setfield(L, -2, name);
}

/* Runs modules.lua with one table of what C offers it, and keeps the
   three functions of the table it returns. */
static int open_modules(lua_State *L) {
  weft_state *W = weft__get(L);
  weft__source_keep(L, WEFT_CHUNK_MODULES, (const char *)weft_lua_modules, weft_lua_modules_len);
  if (luaL_loadbufferx(L, (const char *)weft_lua_modules, weft_lua_modules_len, WEFT_CHUNK_MODULES,
                       "t") != LUA_OK)
    return lua_error(L);
  lua_createtable(L, 0, 8);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
  lua_setfield(L, -2, "api"); /* the script API, which it adds require and weft.start to */
  lua_pushstring(L, W->root);
  lua_setfield(L, -2, "root");
  set_fn(L, "loadfile", l_loadfile); /* a script's chunk, or nil and the message */
  set_fn(L, "load_module", l_load_module);
  set_fn(L, "searchpath", weft__l_searchpath);
  set_fn(L, "place", l_place);
  set_fn(L, "caller_env", weft__l_caller_env);
  set_fn(L, "new_env", l_new_env);
  set_fn(L, "commit", l_commit);
  set_fn(L, "report", l_report);
  set_fn(L, "cancels", l_cancels);
  lua_getglobal(L, "debug");
  lua_getfield(L, -1, "getinfo");
  if (lua_tocfunction(L, -1)) weft__name_c(L, "modules.getinfo", lua_tocfunction(L, -1));
  lua_setfield(L, -3, "getinfo");
  lua_pop(L, 1);
  lua_newtable(L); /* the groups weft.start makes, weakly: see weft__push_who */
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, WEFT_START_GROUPS);
  lua_setfield(L, -2, "start_groups");
  lua_call(L, 1, 1);
  luaL_checktype(L, -1, LUA_TTABLE);
  /* Error messages name package's functions as they name string's (see
     weft__open_sandbox): package.loaded holds the package it made. */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
  lua_getfield(L, -1, "package");
  lua_setfield(L, -3, "package");
  lua_pop(L, 2);
  lua_getfield(L, -1, "group_start");
  W->mods.ref_group_start = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "reload");
  W->mods.ref_reload = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "changed");
  W->mods.ref_changed = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "note_spawn");
  W->mods.ref_note_spawn = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int weft__open_modules(weft_state *W) {
  lua_State *L = W->L;
  lua_pushcfunction(L, open_modules);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
    lua_pop(L, 1);
    return WEFT_ENOMEM;
  }
  return WEFT_OK;
}

/* Protected: calls the function at 1 with the C string at 2. */
static int l_call_with_string(lua_State *L) {
  lua_pushstring(L, (const char *)lua_touserdata(L, 2));
  lua_replace(L, 2);
  lua_call(L, 1, 1);
  return 1;
}

/* Calls the module system's changed(path) or reload(name); true when a
   transaction committed (even if restarting its tasks then failed). */
static int call_reload(weft_state *W, int ref, const char *arg) {
  lua_State *L = W->L;
  uint32_t before = W->mods.reloads;
  if (!lua_checkstack(L, 4)) return 0;
  lua_pushcfunction(L, l_call_with_string);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_pushlightuserdata(L, (void *)arg);
  /* A stretch of its own: a script's metamethod reached from the module
     system (its package table's, a module table's) runs budgeted. */
  if (weft__budget_pcall(W, L, 2, 1, 0, "a reload ran too long (a runaway)", 0) != LUA_OK)
    weft__report(W, L, -1, 0, NULL);
  lua_pop(L, 1);
  return W->mods.reloads != before;
}

int weft_reload_module(weft_state *W, const char *name) {
  return call_reload(W, W->mods.ref_reload, name) ? WEFT_OK : WEFT_EINVAL;
}

int weft_reload_file(weft_state *W, const char *relpath) {
  return call_reload(W, W->mods.ref_changed, relpath) ? WEFT_OK : WEFT_EINVAL;
}

static void on_change(void *ud, const char *path) {
  weft_state *W = ud;
  if (W->tape) weft__tape_reload(W, path);
  call_reload(W, W->mods.ref_changed, path);
}

/* A replay has no watcher: the recorded saves land instead. */
int weft_watch_scripts(weft_state *W, int on) {
  if (on && weft__tape_replaying(W)) return WEFT_OK;
  if (!on) {
    weft__watch_close(W->mods.watch);
    W->mods.watch = NULL;
    return WEFT_OK;
  }
  if (W->mods.watch) return WEFT_OK;
  weft_watch_desc wd = {0};
  wd.force_poll = W->desc.watch_poll != 0;
  return weft__watch_open(W->root, &wd, weft__host_alloc, W, &W->mods.watch);
}

void weft__poll_reload(weft_state *W) {
  if (weft__tape_replaying(W)) {
    const char *path;
    while ((path = weft__tape_next_reload(W)) != NULL) call_reload(W, W->mods.ref_changed, path);
  } else if (W->mods.watch) {
    weft__watch_poll(W->mods.watch, weft__watch_clock(), on_change, W);
  }
}

uint32_t weft_reload_count(const weft_state *W) { return W->mods.reloads; }
