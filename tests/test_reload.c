/* Tests for hot reload through a weft_state: modules written to a fresh
   temporary scripts root, started with weft.start from a small Lua task,
   frames stepped with weft_step, reloads triggered with weft_reload_file
   (deterministic) and, in one case, through the real file watcher.

   Script state is read back one way only: the test evaluates a Lua
   expression on the main thread in an environment whose globals are the
   script API (weft_push_api), so `persist("e").speed` or
   `mod("ai.walker").version` reads exactly what the scripts see. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../bindings/testing.h"
#include "../bindings/weft.h"
#include "scratch_dir.h"

#define DT60 (1.0 / 60.0)

typedef struct rx {
  char root[64];
  weft_state *W;
  int env;           /* registry ref of the checking environment */
  int reports;       /* error reports received */
  char report[4096]; /* every report's message, one per line */
  char out[256];     /* the last string read by str() */
  int out_of_memory; /* every allocation fails (set by a module through oom()) */
} rx;

/* ---- sinks ---- */

static void on_report(void *user, const char *msg, const char *trace) {
  rx *x = user;
  (void)trace;
  x->reports++;
  size_t n = strlen(x->report);
  snprintf(x->report + n, sizeof x->report - n, "%s\n", msg);
}

static void on_log(void *user, const char *line, size_t len) {
  (void)len;
  (void)user;
  (void)line;
}

static int fail_alloc(void *user, size_t n) {
  (void)n;
  return ((rx *)user)->out_of_memory;
}

/* persist('test').oom(): from here on every allocation fails, until the
   test says otherwise. */
static int l_oom(lua_State *L) {
  rx *x = lua_touserdata(L, lua_upvalueindex(1));
  x->out_of_memory = 1;
  return 0;
}

/* ---- files ---- */

static void write_mod(rx *x, const char *rel, const char *text) {
  char full[256];
  snprintf(full, sizeof full, "%s/%s", x->root, rel);
  FILE *f = fopen(full, "wb");
  assert_non_null(f);
  size_t n = strlen(text);
  assert_int_equal(fwrite(text, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* ---- Lua from the test ---- */

/* Helpers every checking expression and starter may use. */
static const char env_lua[] =
    "function mod(name)\n"
    "  for _, m in ipairs(weft.modules()) do if m.name == name then return m end end\n"
    "end\n"
    "function join(t) return table.concat(t, ',') end\n";

/* Loads code as a chunk whose globals are a fresh table over the API. */
static void load_in_env(rx *x, const char *code, const char *name) {
  lua_State *L = weft_lua(x->W);
  if (luaL_loadbufferx(L, code, strlen(code), name, "t") != LUA_OK)
    fail_msg("test Lua does not compile: %s", lua_tostring(L, -1));
  lua_rawgeti(L, LUA_REGISTRYINDEX, x->env);
  lua_setupvalue(L, -2, 1);
}

/* Runs code on the main thread (outside any task); fails the test if it
   raises. */
static void exec(rx *x, const char *code) {
  lua_State *L = weft_lua(x->W);
  load_in_env(x, code, "=exec");
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) fail_msg("exec '%s': %s", code, lua_tostring(L, -1));
}

/* Evaluates an expression; leaves its value on the stack. */
static void eval(rx *x, const char *expr) {
  lua_State *L = weft_lua(x->W);
  char code[1024];
  snprintf(code, sizeof code, "return %s", expr);
  load_in_env(x, code, "=check");
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) fail_msg("check '%s': %s", expr, lua_tostring(L, -1));
}

static double num(rx *x, const char *expr) {
  lua_State *L = weft_lua(x->W);
  eval(x, expr);
  int isnum = 0;
  double v = lua_tonumberx(L, -1, &isnum);
  if (!isnum) {
    const char *s = luaL_tolstring(L, -1, NULL);
    char shown[128];
    snprintf(shown, sizeof shown, "%s", s);
    lua_pop(L, 2);
    fail_msg("check '%s' is %s, not a number", expr, shown);
  }
  lua_pop(L, 1);
  return v;
}

static const char *str(rx *x, const char *expr) {
  lua_State *L = weft_lua(x->W);
  eval(x, expr);
  snprintf(x->out, sizeof x->out, "%s", luaL_tolstring(L, -1, NULL));
  lua_pop(L, 2);
  return x->out;
}

static int truth(rx *x, const char *expr) {
  lua_State *L = weft_lua(x->W);
  eval(x, expr);
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Assertions on script state, reporting the caller's line. */
#define assert_num(x, expr, want) check_num(x, expr, want, __FILE__, __LINE__)
#define assert_str(x, expr, want) assert_string_equal(str(x, expr), want)
#define assert_lua(x, expr) check_true(x, expr, __FILE__, __LINE__)

static void check_num(rx *x, const char *expr, double want, const char *file, int line) {
  double got = num(x, expr);
  if (got != want) {
    print_error("%s is %.17g, expected %.17g\n", expr, got, want);
    _fail(file, line);
  }
}

#define assert_contains(hay, needle) check_contains(hay, needle, __FILE__, __LINE__)

static void check_contains(const char *hay, const char *needle, const char *file, int line) {
  if (!hay || !strstr(hay, needle)) {
    print_error("\"%s\" not found in:\n%s\n", needle, hay ? hay : "(null)");
    _fail(file, line);
  }
}

static void check_true(rx *x, const char *expr, const char *file, int line) {
  if (!truth(x, expr)) {
    print_error("%s is false (%s)\n", expr, str(x, expr));
    _fail(file, line);
  }
}

/* Starts code as a task in the root group (it runs up to its first wait
   at once) and checks it did not fail. */
static weft_task start(rx *x, const char *code) {
  load_in_env(x, code, "=starter");
  weft_task t = weft_spawn(x->W, 0);
  if (!t.id) fail_msg("spawn: %s", weft_task_error(x->W, (weft_task){0}));
  if (weft_task_result(x->W, t) == WEFT_FAILED)
    fail_msg("starter failed: %s", weft_task_error(x->W, t));
  return t;
}

static void step(rx *x, int frames) {
  for (int i = 0; i < frames; i++) assert_int_equal(weft_step(x->W, DT60), WEFT_OK);
}

static int reload(rx *x, const char *rel) { return weft_reload_file(x->W, rel); }

/* ---- fixture ---- */

static int setup(void **state) {
  rx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  snprintf(x->root, sizeof x->root, "/tmp/weft-reload-XXXXXX");
  if (!mkdtemp(x->root)) {
    free(x);
    return -1;
  }
  char sub[128];
  snprintf(sub, sizeof sub, "%s/ai", x->root);
  mkdir(sub, 0755);
  snprintf(sub, sizeof sub, "%s/lib", x->root);
  mkdir(sub, 0755);
  weft_desc d = WEFT_DESC_INIT;
  d.scripts_root = x->root;
  d.report = on_report;
  d.log = on_log;
  d.time_budget_us = WEFT_BUDGET_COUNTED; /* "within the budgets" is exact */
  d.user = x;
  x->W = weft_open(&d);
  if (!x->W) return -1;
  weft__testing_fail_alloc(x->W, fail_alloc, x);
  lua_State *L = weft_lua(x->W);
  lua_newtable(L);
  lua_newtable(L);
  weft_push_api(x->W);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_pushlightuserdata(L, x);
  lua_pushcclosure(L, l_oom, 1);
  lua_setfield(L, -2, "oom_fn");
  x->env = luaL_ref(L, LUA_REGISTRYINDEX);
  *state = x;
  exec(x, env_lua);
  exec(x, "persist('test').oom = oom_fn");
  return 0;
}

static int teardown(void **state) {
  rx *x = *state;
  int leaked = weft_close(x->W);
  rm_tree(x->root);
  free(x);
  assert_int_equal(leaked, 0);
  return 0;
}

/* ---- modules ---- */

/* ai/walker.lua: advances its entity by M.SPEED every frame. */
static const char *walker(int speed) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "local M = {}\n"
           "M.SPEED = %d\n"
           "function M.start(e)\n"
           "  e.starts = (e.starts or 0) + 1\n"
           "  local seen = persist('states', {})\n"
           "  seen[#seen + 1] = e\n"
           "  while true do\n"
           "    e.pos = (e.pos or 0) + M.SPEED\n"
           "    e.speed = M.SPEED\n"
           "    e.frames = (e.frames or 0) + 1\n"
           "    wait()\n"
           "  end\n"
           "end\n"
           "return M\n",
           speed);
  return buf;
}

static const char start_walker[] = "local e = persist('e', {name = 'w1'})\n"
                                   "weft.start('ai.walker', e)\n";

/* ---- the cases ---- */

static void constant_tweak_is_picked_up_next_frame_with_state_kept(void **state) {
  rx *x = *state;
  write_mod(x, "ai/walker.lua", walker(1));
  start(x, start_walker);
  step(x, 3);
  assert_num(x, "persist('e').speed", 1);
  assert_num(x, "persist('e').frames", 4);
  assert_num(x, "persist('e').pos", 4);

  write_mod(x, "ai/walker.lua", walker(5));
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_OK);
  step(x, 1);
  assert_num(x, "persist('e').speed", 5);
  /* The same state table, its contents kept: started again once (the
     restart runs at once, then one frame), one walker running. */
  assert_lua(x, "persist('states')[1] == persist('e') and persist('states')[2] == persist('e')");
  assert_num(x, "#persist('states')", 2);
  assert_num(x, "persist('e').starts", 2);
  assert_str(x, "persist('e').name", "w1");
  assert_num(x, "persist('e').frames", 6);
  assert_num(x, "persist('e').pos", 14);
  step(x, 2);
  assert_num(x, "persist('e').frames", 8);
  assert_num(x, "mod('ai.walker').version", 2);
  assert_num(x, "mod('ai.walker').tasks", 1);
  assert_int_equal(weft_reload_count(x->W), 1);
  assert_int_equal(x->reports, 0);
}

static void syntax_error_keeps_old_code_and_is_shown_until_fixed(void **state) {
  rx *x = *state;
  write_mod(x, "ai/walker.lua", walker(1));
  start(x, start_walker);
  step(x, 1);
  write_mod(x, "ai/walker.lua",
            "local M = {}\n"
            "M.SPEED = 3\n"
            "M.BROKEN = = 4\n"
            "return M\n");
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "ai/walker.lua:3:");
  /* The old code runs on, the same task. */
  step(x, 3);
  assert_num(x, "persist('e').speed", 1);
  assert_num(x, "persist('e').frames", 5);
  assert_num(x, "persist('e').starts", 1);
  assert_num(x, "mod('ai.walker').version", 1);
  assert_num(x, "mod('ai.walker').tasks", 1);
  /* Shown in weft.modules() and weft.reload_errors() while broken. */
  assert_lua(x, "mod('ai.walker').error ~= nil");
  assert_contains(str(x, "mod('ai.walker').error"), "ai/walker.lua:3:");
  assert_num(x, "#weft.reload_errors()", 1);
  assert_contains(str(x, "weft.reload_errors()[1].file"), "ai/walker.lua");
  step(x, 10);
  assert_lua(x, "mod('ai.walker').error ~= nil");
  assert_int_equal(weft_reload_count(x->W), 0);

  write_mod(x, "ai/walker.lua", walker(7));
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_OK);
  step(x, 1);
  assert_num(x, "persist('e').speed", 7);
  assert_lua(x, "mod('ai.walker').error == nil");
  assert_num(x, "#weft.reload_errors()", 0);
  assert_num(x, "mod('ai.walker').version", 2);
  assert_int_equal(x->reports, 1);
}

/* A designer saves a broken file that nothing has required yet: the
   error shows at once; the fixed file clears it and loads on require. */
static void syntax_error_in_a_module_not_yet_required_is_reported_on_save(void **state) {
  rx *x = *state;
  write_mod(x, "ai/later.lua", "local M = {}\nM.X = = 1\nreturn M\n");
  assert_int_equal(reload(x, "ai/later.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "ai/later.lua:2:");
  assert_num(x, "#weft.reload_errors()", 1);
  assert_contains(str(x, "weft.reload_errors()[1].file"), "ai/later.lua");
  write_mod(x, "ai/later.lua", "return {X = 1}\n");
  assert_int_equal(reload(x, "ai/later.lua"), WEFT_EINVAL); /* nothing to commit */
  assert_int_equal(x->reports, 1);
  assert_num(x, "#weft.reload_errors()", 0);
  assert_num(x, "require('ai.later').X", 1);
  /* A file that is gone (renamed away) is not an error. */
  assert_int_equal(reload(x, "ai/never_written.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 1);
}

static void top_level_error_after_partial_assignment_leaves_module_untouched(void **state) {
  rx *x = *state;
  write_mod(x, "ai/walker.lua", walker(1));
  start(x, start_walker);
  exec(x, "persist('ref').M = require('ai.walker')");
  write_mod(x, "ai/walker.lua",
            "local M = {}\n"
            "M.SPEED = 99\n"
            "M.EXTRA = true\n"
            "error('half-loaded')\n"
            "return M\n");
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "ai/walker.lua:4: half-loaded");
  assert_lua(x, "require('ai.walker') == persist('ref').M");
  assert_num(x, "require('ai.walker').SPEED", 1);
  assert_lua(x, "require('ai.walker').EXTRA == nil");
  assert_num(x, "mod('ai.walker').version", 1);
  step(x, 2);
  assert_num(x, "persist('e').speed", 1);
  assert_num(x, "persist('e').starts", 1);

  /* A top level that never finishes is stopped by the budget, likewise. */
  write_mod(x, "ai/walker.lua",
            "local M = {SPEED = 98}\n"
            "while true do end\n"
            "return M\n");
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 2);
  assert_num(x, "require('ai.walker').SPEED", 1);
  step(x, 1);
  assert_num(x, "persist('e').speed", 1);
  assert_num(x, "mod('ai.walker').version", 1);
  /* ...and reported at its file:line like any staging error. */
  assert_contains(strchr(x->report, '\n') + 1, "ai/walker.lua:2:");
}

static void module_table_keeps_identity_removed_keys_go_nested_updated_in_place(void **state) {
  rx *x = *state;
  write_mod(x, "ai/cfg.lua",
            "local M = {}\n"
            "M.OLD = 'gone soon'\n"
            "M.cfg = {a = 1, b = 2, deep = {x = 1}}\n"
            "function M.f() return 'f1' end\n"
            "return M\n");
  exec(x, "local M = require('ai.cfg')\n"
          "local r = persist('ref')\n"
          "r.M, r.cfg, r.deep = M, M.cfg, M.cfg.deep\n");
  write_mod(x, "ai/cfg.lua",
            "local M = {}\n"
            "M.cfg = {a = 5, c = 3, deep = {y = 2}}\n"
            "M.NEW = 'here'\n"
            "function M.f() return 'f2' end\n"
            "return M\n");
  assert_int_equal(reload(x, "ai/cfg.lua"), WEFT_OK);
  assert_lua(x, "require('ai.cfg') == persist('ref').M");
  assert_lua(x, "persist('ref').M.OLD == nil");
  assert_str(x, "persist('ref').M.NEW", "here");
  assert_str(x, "persist('ref').M.f()", "f2");
  assert_lua(x, "persist('ref').M.cfg == persist('ref').cfg");
  assert_num(x, "persist('ref').cfg.a", 5);
  assert_lua(x, "persist('ref').cfg.b == nil");
  assert_num(x, "persist('ref').cfg.c", 3);
  assert_lua(x, "persist('ref').cfg.deep == persist('ref').deep");
  assert_lua(x, "persist('ref').deep.x == nil");
  assert_num(x, "persist('ref').deep.y", 2);
}

static void version_increments_once_per_commit(void **state) {
  rx *x = *state;
  write_mod(x, "ai/walker.lua", walker(1));
  start(x, start_walker);
  assert_num(x, "mod('ai.walker').version", 1);
  assert_contains(str(x, "mod('ai.walker').file"), "ai/walker.lua");
  for (int k = 2; k <= 4; k++) {
    write_mod(x, "ai/walker.lua", walker(k));
    assert_int_equal(reload(x, "ai/walker.lua"), WEFT_OK);
    assert_num(x, "mod('ai.walker').version", k);
    assert_int_equal(weft_reload_count(x->W), (uint32_t)(k - 1));
  }
  write_mod(x, "ai/walker.lua", "return {");
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_EINVAL);
  assert_num(x, "mod('ai.walker').version", 4);
  assert_int_equal(weft_reload_count(x->W), 3);
  write_mod(x, "ai/walker.lua", walker(9));
  assert_int_equal(weft_reload_module(x->W, "ai.walker"), WEFT_OK);
  assert_num(x, "mod('ai.walker').version", 5);
  assert_int_equal(weft_reload_count(x->W), 4);
  /* Not loaded: nothing to reload, nothing counted. */
  write_mod(x, "ai/never.lua", "return {}\n");
  assert_int_equal(reload(x, "ai/never.lua"), WEFT_EINVAL);
  assert_int_equal(weft_reload_count(x->W), 4);
}

static const char *waiter(const char *tag) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "local M = {}\n"
           "function M.start(s)\n"
           "  local _ <close> = finally(function()\n"
           "    s.closed_%s = (s.closed_%s or 0) + 1\n"
           "  end)\n"
           "  s.began = (s.began or 0) + 1\n"
           "  local v = wait(s.f)\n"
           "  s.got = (s.got or '') .. '%s:' .. tostring(v) .. ';'\n"
           "  wait(math.huge)\n"
           "end\n"
           "return M\n",
           tag, tag, tag);
  return buf;
}

static void task_waiting_on_future_is_cancelled_and_never_resumed(void **state) {
  rx *x = *state;
  write_mod(x, "ai/waiter.lua", waiter("old"));
  start(x, "local s = persist('s', {})\n"
           "s.f = future()\n"
           "weft.start('ai.waiter', s)\n"
           "local o = persist('other', {wakes = 0})\n"
           "spawn(function()\n"
           "  local v = wait(s.f)\n"
           "  o.wakes = o.wakes + 1\n"
           "  o.v = v\n"
           "  wait(math.huge)\n"
           "end)\n");
  step(x, 2);
  assert_num(x, "persist('s').began", 1);
  assert_str(x, "persist('s').f.state", "pending");

  write_mod(x, "ai/waiter.lua", waiter("new"));
  assert_int_equal(reload(x, "ai/waiter.lua"), WEFT_OK);
  /* Cancelled synchronously: its <close> cleanup ran; the future it
     waited on is untouched; the new start waits on it again. */
  assert_num(x, "persist('s').closed_old", 1);
  assert_lua(x, "persist('s').closed_new == nil");
  assert_str(x, "persist('s').f.state", "pending");
  assert_num(x, "persist('s').began", 2);
  step(x, 2);
  assert_lua(x, "persist('s').got == nil");
  assert_num(x, "persist('other').wakes", 0);

  exec(x, "persist('s').f:resolve(42)");
  step(x, 3);
  assert_str(x, "persist('s').got", "new:42;");
  assert_num(x, "persist('other').wakes", 1);
  assert_num(x, "persist('other').v", 42);
  step(x, 30);
  assert_str(x, "persist('s').got", "new:42;");
  assert_num(x, "persist('other').wakes", 1);
  assert_num(x, "persist('s').closed_old", 1);
  assert_int_equal(x->reports, 0);
}

static const char *util(int base) {
  static char buf[512];
  snprintf(buf, sizeof buf,
           "local log = persist('loads', {})\n"
           "log[#log + 1] = 'lib.util'\n"
           "local M = {}\n"
           "M.BASE = %d\n"
           "return M\n",
           base);
  return buf;
}

static const char patrol[] = "local util = require 'lib.util'\n"
                             "local log = persist('loads', {})\n"
                             "log[#log + 1] = 'ai.patrol'\n"
                             "local M = {}\n"
                             "M.SPEED = util.BASE * 2\n"
                             "function M.start(e)\n"
                             "  e.starts = (e.starts or 0) + 1\n"
                             "  while true do\n"
                             "    e.base, e.speed = util.BASE, M.SPEED\n"
                             "    wait()\n"
                             "  end\n"
                             "end\n"
                             "return M\n";

static void dependency_edit_reloads_dependent_dependencies_first(void **state) {
  rx *x = *state;
  write_mod(x, "lib/util.lua", util(10));
  write_mod(x, "ai/patrol.lua", patrol);
  start(x, "weft.start('ai.patrol', persist('e', {}))\n");
  assert_str(x, "join(persist('loads'))", "lib.util,ai.patrol");
  assert_num(x, "persist('e').speed", 20);

  /* Editing the dependent alone leaves the dependency be. */
  assert_int_equal(reload(x, "ai/patrol.lua"), WEFT_OK);
  assert_str(x, "join(persist('loads'))", "lib.util,ai.patrol,ai.patrol");
  assert_num(x, "mod('lib.util').version", 1);
  assert_num(x, "mod('ai.patrol').version", 2);

  write_mod(x, "lib/util.lua", util(20));
  assert_int_equal(reload(x, "lib/util.lua"), WEFT_OK);
  assert_int_equal(weft_reload_count(x->W), 2); /* one transaction */
  assert_str(x, "join(persist('loads'))", "lib.util,ai.patrol,ai.patrol,lib.util,ai.patrol");
  assert_num(x, "mod('lib.util').version", 2);
  assert_num(x, "mod('ai.patrol').version", 3);
  assert_num(x, "persist('e').starts", 3);
  step(x, 1);
  assert_num(x, "persist('e').base", 20);
  /* The dependent's top level ran against the new dependency. */
  assert_num(x, "require('ai.patrol').SPEED", 40);
  assert_num(x, "persist('e').speed", 40);
}

/* A dependency required lazily (inside start, after the dependent
   loaded) is still staged before the dependent. */
static void lazy_dependency_is_staged_before_its_dependent(void **state) {
  rx *x = *state;
  write_mod(x, "lib/util.lua", util(10));
  write_mod(x, "ai/lazy.lua",
            "local log = persist('loads', {})\n"
            "log[#log + 1] = 'ai.lazy'\n"
            "local M = {}\n"
            "function M.start(e)\n"
            "  local util = require 'lib.util'\n"
            "  while true do e.base = util.BASE wait() end\n"
            "end\n"
            "return M\n");
  start(x, "weft.start('ai.lazy', persist('e', {}))\n");
  assert_str(x, "join(persist('loads'))", "ai.lazy,lib.util");
  write_mod(x, "lib/util.lua", util(30));
  assert_int_equal(reload(x, "lib/util.lua"), WEFT_OK);
  assert_num(x, "mod('ai.lazy').version", 2);
  step(x, 1);
  assert_num(x, "persist('e').base", 30);
  assert_str(x, "join(persist('loads'))", "ai.lazy,lib.util,lib.util,ai.lazy");
}

static const char *guard(int v, int fail_b) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "local M = {}\n"
           "function M.start(s)\n"
           "  if %s and s.kind == 'b' then error('guard cannot start ' .. s.kind) end\n"
           "  s.starts = (s.starts or 0) + 1\n"
           "  while true do\n"
           "    s.ver = %d\n"
           "    s.frames = (s.frames or 0) + 1\n"
           "    wait()\n"
           "  end\n"
           "end\n"
           "return M\n",
           fail_b ? "true" : "false", v);
  return buf;
}

static void error_in_new_start_stops_only_that_entity_and_is_retried(void **state) {
  rx *x = *state;
  write_mod(x, "ai/guard.lua", guard(1, 0));
  start(x, "weft.start('ai.guard', persist('a', {kind = 'a'}))\n"
           "weft.start('ai.guard', persist('b', {kind = 'b'}))\n");
  step(x, 2);
  assert_num(x, "persist('a').ver", 1);
  assert_num(x, "persist('b').ver", 1);

  write_mod(x, "ai/guard.lua", guard(2, 1));
  assert_int_equal(reload(x, "ai/guard.lua"), WEFT_OK);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "ai/guard.lua:3:");
  assert_contains(x->report, "guard cannot start b");
  double bframes = num(x, "persist('b').frames");
  double aframes = num(x, "persist('a').frames");
  step(x, 3);
  assert_num(x, "persist('a').ver", 2);
  assert_num(x, "persist('a').frames", aframes + 3);
  assert_num(x, "persist('b').ver", 1);
  assert_num(x, "persist('b').frames", bframes); /* stopped */
  assert_num(x, "mod('ai.guard').tasks", 1);
  assert_lua(x, "mod('ai.guard').error == nil"); /* the module loaded fine */

  write_mod(x, "ai/guard.lua", guard(3, 0));
  assert_int_equal(reload(x, "ai/guard.lua"), WEFT_OK);
  step(x, 2);
  assert_num(x, "persist('a').ver", 3);
  assert_num(x, "persist('b').ver", 3);
  assert_num(x, "persist('b').frames", bframes + 3);
  assert_num(x, "persist('b').starts", 2);
  assert_num(x, "mod('ai.guard').tasks", 2);
  assert_int_equal(x->reports, 1);
}

static const char *intro(const char *tag) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "local M = {reload = 'keep'}\n"
           "function M.start(s)\n"
           "  for i = 1, 3 do\n"
           "    s.log[#s.log + 1] = '%s:' .. i\n"
           "    wait()\n"
           "  end\n"
           "  s.done = true\n"
           "end\n"
           "return M\n",
           tag);
  return buf;
}

static void keep_lets_running_tasks_finish_on_old_code(void **state) {
  rx *x = *state;
  write_mod(x, "ai/intro.lua", intro("v1"));
  start(x, "persist('first', {log = {}}) weft.start('ai.intro', persist('first'))\n");
  step(x, 1);
  assert_str(x, "join(persist('first').log)", "v1:1,v1:2");
  write_mod(x, "ai/intro.lua", intro("v2"));
  assert_int_equal(reload(x, "ai/intro.lua"), WEFT_OK);
  assert_num(x, "mod('ai.intro').version", 2);
  assert_num(x, "mod('ai.intro').old", 1);
  assert_str(x, "join(persist('first').log)", "v1:1,v1:2"); /* not restarted */
  start(x, "persist('second', {log = {}}) weft.start('ai.intro', persist('second'))\n");
  step(x, 4);
  assert_str(x, "join(persist('first').log)", "v1:1,v1:2,v1:3");
  assert_lua(x, "persist('first').done");
  assert_str(x, "join(persist('second').log)", "v2:1,v2:2,v2:3");
  assert_lua(x, "persist('second').done");
  assert_num(x, "mod('ai.intro').tasks", 0);
}

static const char *hooked(int v, int with_hook) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "local M = {}\n"
           "function M.start(s)\n"
           "  s.starts = (s.starts or 0) + 1\n"
           "  while true do s.mode = 'start-v%d' wait() end\n"
           "end\n"
           "%s"
           "return M\n",
           v,
           with_hook ? "function M.on_reload(s, old)\n"
                       "  s.reloads = (s.reloads or 0) + 1\n"
                       "  s.old_version, s.self = old, s\n"
                       "  while true do s.mode = 'on_reload' wait() end\n"
                       "end\n"
                     : "");
  return buf;
}

static void on_reload_is_called_instead_of_start(void **state) {
  rx *x = *state;
  write_mod(x, "ai/hooked.lua", hooked(1, 0));
  start(x, "weft.start('ai.hooked', persist('s', {}))\n");
  write_mod(x, "ai/hooked.lua", hooked(2, 1));
  assert_int_equal(reload(x, "ai/hooked.lua"), WEFT_OK);
  step(x, 1);
  assert_num(x, "persist('s').starts", 1);
  assert_num(x, "persist('s').reloads", 1);
  assert_num(x, "persist('s').old_version", 1);
  assert_lua(x, "persist('s').self == persist('s')");
  assert_str(x, "persist('s').mode", "on_reload");
  assert_int_equal(reload(x, "ai/hooked.lua"), WEFT_OK);
  step(x, 1);
  assert_num(x, "persist('s').starts", 1);
  assert_num(x, "persist('s').reloads", 2);
  assert_num(x, "persist('s').old_version", 2);
  assert_num(x, "mod('ai.hooked').tasks", 1);
  /* New starts still use start. */
  start(x, "weft.start('ai.hooked', persist('t', {}))\n");
  assert_str(x, "persist('t').mode", "start-v2");
}

static const char *with_args(int v) {
  static char buf[512];
  snprintf(buf, sizeof buf,
           "local M = {}\n"
           "function M.start(s, dir, n)\n"
           "  s.starts = (s.starts or 0) + 1\n"
           "  s.got, s.me = 'v%d ' .. tostring(dir) .. ' ' .. tostring(n), current()\n"
           "  wait(math.huge)\n"
           "end\n"
           "return M\n",
           v);
  return buf;
}

/* weft.start returns the handle of the task running M.start, named after
   the module; a restart after a reload passes the same arguments again. */
static void start_returns_its_task_and_a_restart_gets_the_same_arguments(void **state) {
  rx *x = *state;
  write_mod(x, "ai/args.lua", with_args(1));
  start(x, "local s = persist('s', {})\n"
           "s.first = weft.start('ai.args', s, 'north', 3)\n");
  assert_lua(x, "persist('s').first == persist('s').me");
  assert_str(x, "persist('s').first.name", "ai.args");
  assert_str(x, "persist('s').got", "v1 north 3");
  write_mod(x, "ai/args.lua", with_args(2));
  assert_int_equal(reload(x, "ai/args.lua"), WEFT_OK);
  step(x, 1);
  assert_str(x, "persist('s').got", "v2 north 3");
  assert_num(x, "persist('s').starts", 2);
  assert_str(x, "persist('s').first.status", "cancelled");
  assert_str(x, "persist('s').me.status", "waiting");
  assert_str(x, "persist('s').me.name", "ai.args");
  assert_int_equal(x->reports, 0);
}

static void persist_returns_same_table_across_reloads(void **state) {
  rx *x = *state;
  const char *src = "local store = persist('walker.store', {loads = 0})\n"
                    "store.loads = store.loads + 1\n"
                    "local made = persist('made', function() local n = persist('inits', {n = 0}) "
                    "n.n = n.n + 1 return {} end)\n"
                    "return {store = store, made = made}\n";
  write_mod(x, "ai/kept.lua", src);
  exec(x, "persist('ref').store = require('ai.kept').store");
  for (int i = 0; i < 3; i++) assert_int_equal(reload(x, "ai/kept.lua"), WEFT_OK);
  assert_num(x, "persist('walker.store').loads", 4);
  assert_lua(x, "persist('walker.store') == persist('ref').store");
  assert_lua(x, "require('ai.kept').store == persist('ref').store");
  assert_lua(x, "require('ai.kept').made == persist('made')");
  assert_num(x, "persist('inits').n", 1);
}

static const char *idle(int k) {
  static char buf[512];
  snprintf(buf, sizeof buf,
           "local M = {K = %d, cfg = {k = %d}}\n"
           "function M.start(s)\n"
           "  local _ <close> = finally(function() s.closes = s.closes + 1 end)\n"
           "  s.k = M.K\n"
           "  wait(math.huge)\n"
           "end\n"
           "return M\n",
           k, k);
  return buf;
}

static void thousand_reloads_keep_memory_flat(void **state) {
  rx *x = *state;
  write_mod(x, "ai/idle.lua", idle(0));
  start(x, "local all = persist('all', {})\n"
           "for i = 1, 100 do\n"
           "  all[i] = {closes = 0}\n"
           "  weft.start('ai.idle', all[i])\n"
           "end\n");
  step(x, 1);
  lua_State *L = weft_lua(x->W);
  weft_stats s100 = WEFT_STATS_INIT, s1000 = WEFT_STATS_INIT;
  for (int k = 1; k <= 1000; k++) {
    write_mod(x, "ai/idle.lua", idle(k));
    assert_int_equal(reload(x, "ai/idle.lua"), WEFT_OK);
    step(x, 1);
    if (k == 100 || k == 1000) {
      lua_gc(L, LUA_GCCOLLECT, 0);
      lua_gc(L, LUA_GCCOLLECT, 0);
      weft_get_stats(x->W, k == 100 ? &s100 : &s1000);
    }
  }
  print_message("lua_bytes after 100 reloads: %zu, after 1000: %zu (%+lld); host_bytes %zu -> %zu; "
                "tasks %u -> %u\n",
                s100.lua_bytes, s1000.lua_bytes,
                (long long)s1000.lua_bytes - (long long)s100.lua_bytes, s100.host_bytes,
                s1000.host_bytes, s100.tasks, s1000.tasks);
  assert_num(x, "mod('ai.idle').version", 1001);
  assert_num(x, "mod('ai.idle').tasks", 100);
  assert_num(x, "persist('all')[1].closes", 1000);
  assert_num(x, "persist('all')[100].k", 1000);
  assert_int_equal(s1000.tasks, s100.tasks);
  /* Flat: within 2% (and 16 KiB) of the figure at reload 100. */
  size_t slack = s100.lua_bytes / 50 + 16384;
  assert_true(s1000.lua_bytes <= s100.lua_bytes + slack);
  assert_true(s1000.host_bytes <= s100.host_bytes + 16384);
  assert_int_equal(x->reports, 0);
}

static const char *grouped(int v) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "local M = {}\n"
           "function M.start(e)\n"
           "  e.starts = (e.starts or 0) + 1\n"
           "  while true do\n"
           "    local g = current().group\n"
           "    while g and g ~= persist('ref').g do g = g.parent end\n"
           "    e.ver, e.in_group = %d, g ~= nil -- g or a group under it\n"
           "    e.frames = (e.frames or 0) + 1\n"
           "    wait()\n"
           "  end\n"
           "end\n"
           "return M\n",
           v);
  return buf;
}

static void group_start_restarts_in_its_group_and_dead_groups_are_dropped(void **state) {
  rx *x = *state;
  write_mod(x, "ai/grouped.lua", grouped(1));
  start(x, "local g = group{name = 'enemy1'}\n"
           "persist('ref').g = g\n"
           "persist('ref').t = g:start('ai.grouped', persist('e', {}))\n");
  assert_lua(x, "persist('e').in_group");
  write_mod(x, "ai/grouped.lua", grouped(2));
  assert_int_equal(reload(x, "ai/grouped.lua"), WEFT_OK);
  step(x, 1);
  assert_num(x, "persist('e').ver", 2);
  assert_lua(x, "persist('e').in_group");
  assert_num(x, "persist('e').starts", 2);
  /* The entity dies with its group; a reload does not bring it back. */
  exec(x, "persist('ref').g:cancel()");
  double frames = num(x, "persist('e').frames");
  write_mod(x, "ai/grouped.lua", grouped(3));
  assert_int_equal(reload(x, "ai/grouped.lua"), WEFT_OK);
  step(x, 3);
  assert_num(x, "persist('e').starts", 2);
  assert_num(x, "persist('e').frames", frames);
  assert_num(x, "mod('ai.grouped').tasks", 0);
  assert_int_equal(x->reports, 0);
}

static const char *spawner(const char *tag) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "local M = {}\n"
           "function M.start(s)\n"
           "  s.starts = (s.starts or 0) + 1\n"
           "  spawn(function()\n"
           "    while true do s.%s = (s.%s or 0) + 1 wait() end\n"
           "  end)\n"
           "end\n"
           "return M\n",
           tag, tag);
  return buf;
}

/* A start that spawns its behaviour and returns: the child inherits the
   module as owner, so a reload replaces it too. */
static void children_of_a_started_task_are_replaced_on_reload(void **state) {
  rx *x = *state;
  write_mod(x, "ai/spawner.lua", spawner("v1"));
  start(x, "weft.start('ai.spawner', persist('s', {}))\n");
  step(x, 2);
  assert_num(x, "persist('s').v1", 3);
  write_mod(x, "ai/spawner.lua", spawner("v2"));
  assert_int_equal(reload(x, "ai/spawner.lua"), WEFT_OK);
  step(x, 3);
  assert_num(x, "persist('s').v1", 3); /* the old child was cancelled */
  assert_num(x, "persist('s').starts", 2);
  assert_num(x, "persist('s').v2", 4);
}

static void failing_dependent_aborts_the_whole_transaction(void **state) {
  rx *x = *state;
  write_mod(x, "lib/util.lua", util(10));
  write_mod(x, "ai/patrol.lua", patrol);
  start(x, "weft.start('ai.patrol', persist('e', {}))\n");
  write_mod(x, "ai/patrol.lua", "local util = require 'lib.util'\nlocal M = {\nreturn M\n");
  write_mod(x, "lib/util.lua", util(20));
  assert_int_equal(reload(x, "lib/util.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "ai/patrol.lua:3:");
  assert_num(x, "require('lib.util').BASE", 10);
  assert_num(x, "mod('lib.util').version", 1);
  assert_num(x, "mod('ai.patrol').version", 1);
  assert_lua(x, "mod('ai.patrol').error ~= nil");
  assert_lua(x, "mod('lib.util').error == nil");
  step(x, 2);
  assert_num(x, "persist('e').base", 10);
  assert_num(x, "persist('e').starts", 1);
  assert_int_equal(weft_reload_count(x->W), 0);
}

/* The dependent is staged after the new lib.cfg is merged (it sees the
   new values) and then fails: every key of lib.cfg that the merge added,
   changed or removed is put back, nested tables keep their identity. */
static void failing_dependent_puts_back_every_key_its_dependency_merged(void **state) {
  rx *x = *state;
  write_mod(
      x, "lib/cfg.lua",
      "return {SPEED = 1, OLD = 'old', list = {1, 2, 3}, nested = {a = 1, deep = {x = 1}}}\n");
  write_mod(x, "ai/user.lua", "local cfg = require 'lib.cfg'\nreturn {speed = cfg.SPEED}\n");
  exec(x, "local r = persist('ref')\n"
          "r.cfg = require('lib.cfg')\n"
          "r.list, r.nested, r.deep = r.cfg.list, r.cfg.nested, r.cfg.nested.deep\n"
          "require('ai.user')\n");
  write_mod(x, "lib/cfg.lua",
            "local M = {SPEED = 2, NEW = 'new', list = {4, 5, 6, 7, 8},\n"
            "           nested = {a = 2, b = 3, deep = {y = 2}}}\n"
            "for i = 1, 50 do M['k' .. i] = i end\n"
            "return M\n");
  write_mod(x, "ai/user.lua",
            "local cfg = require 'lib.cfg'\n"
            "persist('seen').speed, persist('seen').new = cfg.SPEED, cfg.NEW\n"
            "error('dependent broke')\n");
  assert_int_equal(reload(x, "lib/cfg.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "ai/user.lua:3: dependent broke");
  /* staged after the merge: it saw the new values */
  assert_num(x, "persist('seen').speed", 2);
  assert_str(x, "persist('seen').new", "new");
  /* and every one of them is back as it was */
  assert_lua(x, "require('lib.cfg') == persist('ref').cfg");
  assert_num(x, "require('lib.cfg').SPEED", 1);
  assert_str(x, "require('lib.cfg').OLD", "old");
  assert_lua(x, "require('lib.cfg').NEW == nil and require('lib.cfg').k1 == nil");
  assert_num(x,
             "(function() local n = 0 for _ in pairs(require('lib.cfg')) do n = n + 1 end "
             "return n end)()",
             4);
  assert_lua(x, "require('lib.cfg').list == persist('ref').list");
  assert_str(x, "table.concat(require('lib.cfg').list, ',')", "1,2,3");
  assert_lua(x, "require('lib.cfg').nested == persist('ref').nested");
  assert_lua(x, "persist('ref').nested.a == 1 and persist('ref').nested.b == nil");
  assert_lua(x, "persist('ref').nested.deep == persist('ref').deep");
  assert_lua(x, "persist('ref').deep.x == 1 and persist('ref').deep.y == nil");
  assert_num(x, "mod('lib.cfg').version", 1);
}

/* Nesting far past what is merged in place (100 levels) still reloads:
   the deeper part is replaced, and nothing overflows. */
static void deeply_nested_module_reloads(void **state) {
  rx *x = *state;
  static const char deep[] = "local M, t = {}, nil\n"
                             "t = M\n"
                             "for i = 1, 10000 do t.next = {i = i} t = t.next end\n"
                             "t.leaf = %d\n"
                             "return M\n";
  char src[256];
  snprintf(src, sizeof src, deep, 1);
  write_mod(x, "lib/deep.lua", src);
  exec(x, "persist('ref').M = require('lib.deep')");
  snprintf(src, sizeof src, deep, 2);
  write_mod(x, "lib/deep.lua", src);
  assert_int_equal(reload(x, "lib/deep.lua"), WEFT_OK);
  assert_int_equal(x->reports, 0);
  assert_lua(x, "require('lib.deep') == persist('ref').M");
  assert_num(x,
             "(function() local t = require('lib.deep') while t.next do t = t.next end "
             "return t.leaf end)()",
             2);
}

/* The dependent's top level removes a key the merge wrote, adds others
   (so the slot is taken), then every allocation fails: putting the key
   back needs the table to grow, and the reserve gives it the memory. */
static void undo_puts_back_a_key_a_later_module_removed_with_no_memory_left(void **state) {
  rx *x = *state;
  write_mod(x, "lib/a.lua", "return {'old', t = {x = 1}}\n");
  write_mod(x, "ai/b.lua", "local a = require 'lib.a'\nreturn {}\n");
  exec(x, "require('ai.b')");
  write_mod(x, "lib/a.lua", "return {'new', t = {x = 2}}\n");
  write_mod(x, "ai/b.lua",
            "local a = require 'lib.a'\n"
            "a.t.x = nil\n"
            "for i = 1, 8 do a.t['y' .. i] = i end\n"
            "persist('test').oom()\n"
            "return {}\n");
  int rc = reload(x, "lib/a.lua");
  x->out_of_memory = 0;
  assert_int_equal(rc, WEFT_EINVAL);
  assert_str(x, "require('lib.a')[1]", "old");
  assert_num(x, "require('lib.a').t.x", 1);
  assert_num(x, "mod('lib.a').version", 1);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "not enough memory");
}

/* A dependent that registers itself in a table of the reloaded module,
   as its top level runs again, finds the table as the new version has it. */
static void a_dependent_registering_into_a_reloaded_table_sees_the_new_version(void **state) {
  rx *x = *state;
  write_mod(x, "lib/a.lua", "return {handlers = {}}\n");
  write_mod(x, "ai/b.lua",
            "local a = require 'lib.a'\n"
            "table.insert(a.handlers, 'b')\n"
            "return {}\n");
  exec(x, "require('ai.b')");
  assert_str(x, "join(require('lib.a').handlers)", "b");
  write_mod(x, "lib/a.lua", "return {handlers = {}, more = true}\n");
  assert_int_equal(reload(x, "lib/a.lua"), WEFT_OK);
  assert_str(x, "join(require('lib.a').handlers)", "b");
  assert_num(x, "#require('lib.a').handlers", 1);
  assert_lua(x, "require('lib.a').more == true");
}

/* An edit from 1 to 1.0 (or 0.0 to -0.0) is an edit. */
static void an_integer_edited_to_a_float_reloads_as_a_float(void **state) {
  rx *x = *state;
  write_mod(x, "lib/a.lua", "return {speed = 1, zero = 0.0}\n");
  exec(x, "require('lib.a')");
  write_mod(x, "lib/a.lua", "return {speed = 1.0, zero = -0.0}\n");
  assert_int_equal(reload(x, "lib/a.lua"), WEFT_OK);
  assert_str(x, "math.type(require('lib.a').speed)", "float");
  assert_num(x, "1 / require('lib.a').zero", -HUGE_VAL);
}

/* A dependent staged after its dependency already misses what the new
   version dropped: a rename breaks it at once, naming it. */
static void a_dependent_staged_after_a_rename_fails_naming_itself(void **state) {
  rx *x = *state;
  write_mod(x, "lib/a.lua", "return {foo = function() return 1 end}\n");
  write_mod(x, "ai/b.lua",
            "local a = require 'lib.a'\nassert(a.foo, 'a.foo is gone')\nreturn {}\n");
  exec(x, "require('ai.b')");
  write_mod(x, "lib/a.lua", "return {bar = function() return 1 end}\n");
  assert_int_equal(reload(x, "lib/a.lua"), WEFT_EINVAL);
  assert_contains(x->report, "ai/b.lua:2: a.foo is gone");
  assert_lua(x, "require('lib.a').foo ~= nil and require('lib.a').bar == nil");
}

/* A module whose top level runs away (past the runaway limit: it cannot
   be preempted, so it runs on past its slices until then) fails at its
   own line, not the loader's, and a later require loads it again (no
   "require loop" left behind), once it is fixed too. A heavy one, many
   slices long, loads. */
/* package.loaded is the scripts' own to set a metatable on: a reload
   walks and writes it raw, so a __pairs or __newindex that loops is
   never run by weft, and the save lands. */
static void reload_runs_no_metamethod_of_package_loaded(void **state) {
  rx *x = *state;
  write_mod(x, "lib/m.lua", "return {v = 1}\n");
  exec(x, "require('lib.m') setmetatable(package.loaded, {"
          " __pairs = function() persist('r').ran = true while true do end end,"
          " __newindex = function() persist('r').ran = true while true do end end})");
  write_mod(x, "lib/m.lua", "return {v = 2}\n");
  assert_int_equal(reload(x, "lib/m.lua"), WEFT_OK);
  assert_lua(x, "require('lib.m').v == 2 and persist('r').ran == nil");
}

static void runaway_module_is_killed_at_its_line_and_can_be_required_again(void **state) {
  rx *x = *state;
  write_mod(x, "lib/boot.lua", "local n = 0\nwhile true do n = n + 1 end\n");
  weft_task t = start(x, "persist('r').t = spawn(function() return require('lib.boot') end)");
  step(x, 10);
  assert_str(x, "persist('r').t.status", "failed");
  assert_contains(str(x, "persist('r').t.error"), "lib/boot.lua:2: module took too long to load");
  write_mod(x, "lib/boot.lua", "return {ok = true}\n");
  assert_lua(x, "require('lib.boot').ok == true");
  /* about ten budgets (default 1e6 instructions) of work at load time */
  write_mod(x, "lib/heavy.lua",
            "local n = 0\nfor i = 1, 3500000 do n = n + i end\nreturn {n = n}\n");
  assert_lua(x, "require('lib.heavy').n > 0");
  weft_task_drop(x->W, t);
}

/* The kill of a runaway top level cannot be caught: a pcall around the
   loop inside the module does not let it go on, on a require as on a
   reload, and a coroutine the module runs is counted too. */
static void runaway_module_that_catches_its_kill_still_stops(void **state) {
  rx *x = *state;
  write_mod(x, "lib/stubborn.lua",
            "while true do pcall(function() while true do end end) end\nreturn {}\n");
  weft_task t = start(x, "persist('r').ok, persist('r').e = pcall(require, 'lib.stubborn')");
  assert_lua(x, "persist('r').ok == false");
  assert_contains(str(x, "persist('r').e"), "lib/stubborn.lua:1: module took too long to load");
  write_mod(x, "lib/coro.lua",
            "while true do coroutine.wrap(function() for i = 1, 900 do end end)() end\n"
            "return {}\n");
  exec(x, "persist('r').ok, persist('r').e = pcall(require, 'lib.coro')");
  assert_lua(x, "persist('r').ok == false");
  assert_contains(str(x, "persist('r').e"), "module took too long to load");
  write_mod(x, "lib/fine.lua", "return {v = 1}\n");
  assert_lua(x, "require('lib.fine').v == 1");
  write_mod(x, "lib/fine.lua",
            "while true do pcall(function() while true do end end) end\nreturn {v = 2}\n");
  assert_int_equal(reload(x, "lib/fine.lua"), WEFT_EINVAL);
  assert_lua(x, "require('lib.fine').v == 1");
  weft_task_drop(x->W, t);
}

/* A module loads within one go: its top level cannot wait, on the first
   require as on a reload, and says so. */
static void module_top_level_cannot_wait_and_says_so(void **state) {
  rx *x = *state;
  write_mod(x, "lib/slow.lua", "wait(1)\nreturn {}\n");
  weft_task t = start(x, "persist('r').ok, persist('r').e = pcall(require, 'lib.slow')");
  assert_lua(x, "persist('r').ok == false");
  assert_contains(str(x, "persist('r').e"),
                  "lib/slow.lua:1: wait cannot wait while a module loads");
  weft_task_drop(x->W, t);
}

/* The new version's functions work on the live module: their `M` (and
   the nested tables they captured) are the live tables after the merge,
   reload after reload. */
static void reloaded_functions_work_on_the_live_module_table(void **state) {
  rx *x = *state;
  static const char counter[] = "local M = {count = 0, label = '%s', cfg = {step = %d}}\n"
                                "local cfg = M.cfg\n"
                                "local function add(n) M.count = M.count + n end\n"
                                "function M.bump() add(cfg.step) end\n"
                                "function M.same() return require('lib.counter') == M end\n"
                                "return M\n";
  char src[512];
  snprintf(src, sizeof src, counter, "v1", 1);
  write_mod(x, "lib/counter.lua", src);
  exec(x, "local C = require('lib.counter') C.bump() C.bump()");
  for (int v = 2; v <= 3; v++) {
    snprintf(src, sizeof src, counter, v == 2 ? "v2" : "v3", 10);
    write_mod(x, "lib/counter.lua", src);
    assert_int_equal(reload(x, "lib/counter.lua"), WEFT_OK);
    exec(x, "require('lib.counter').bump()");
  }
  assert_lua(x, "require('lib.counter').same()");
  assert_str(x, "require('lib.counter').label", "v3");
  /* v3's count = 0 won (new values win), then one bump of 10 */
  assert_num(x, "require('lib.counter').count", 10);
  /* its captured cfg is the live nested table */
  exec(x, "local C = require('lib.counter') C.cfg.step = 100 C.bump()");
  assert_num(x, "require('lib.counter').count", 110);
  /* so is that of a function inside a table the new version added whole */
  write_mod(x, "lib/counter.lua",
            "local M = {cfg = {speed = 1}}\n"
            "local cfg = M.cfg\n"
            "M.ops = {set = function(v) cfg.speed = v end}\n"
            "return M\n");
  assert_int_equal(reload(x, "lib/counter.lua"), WEFT_OK);
  exec(x, "require('lib.counter').ops.set(7)");
  assert_num(x, "require('lib.counter').cfg.speed", 7);
}

/* A version without start (renamed, say) stops the module's entities
   with an error naming the file; the next version with start brings them
   back, state kept. */
static void version_without_start_stops_entities_until_one_has_it(void **state) {
  rx *x = *state;
  write_mod(x, "ai/walker.lua", walker(1));
  start(x, start_walker);
  step(x, 2);
  write_mod(x, "ai/walker.lua", "local M = {}\nfunction M.begin(e) end\nreturn M\n");
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_OK);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "ai/walker.lua: module 'ai.walker' has no start function any more");
  step(x, 2);
  write_mod(x, "ai/walker.lua", walker(5));
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_OK);
  step(x, 1);
  assert_num(x, "persist('e').starts", 2);
  assert_num(x, "persist('e').speed", 5);
}

/* A save whose transaction failed in a dependent is not lost: fixing the
   dependent reloads both, the earlier save included. */
static void save_whose_dependent_failed_lands_when_the_dependent_is_fixed(void **state) {
  rx *x = *state;
  write_mod(x, "lib/c.lua", "return {K = 1, tag = function() return 'c1' end}\n");
  write_mod(x, "ai/b.lua",
            "local c = require 'lib.c'\nlocal M = {}\nM.fromc = c.K * 10\nreturn M\n");
  exec(x, "require('ai.b')");
  write_mod(x, "lib/c.lua", "return {K = 'x', tag = function() return 'c2' end}\n");
  assert_int_equal(reload(x, "lib/c.lua"), WEFT_EINVAL);
  assert_contains(x->report, "ai/b.lua:3:");
  assert_str(x, "require('lib.c').tag()", "c1");
  write_mod(x, "ai/b.lua",
            "local c = require 'lib.c'\nlocal M = {}\nM.fromc = tostring(c.K) .. '!'\nreturn M\n");
  assert_int_equal(reload(x, "ai/b.lua"), WEFT_OK);
  assert_str(x, "require('lib.c').tag()", "c2");
  assert_str(x, "require('ai.b').fromc", "x!");
  assert_num(x, "mod('lib.c').version", 2);
  assert_num(x, "#weft.reload_errors()", 0);
}

static void binary_or_non_table_module_is_refused_naming_its_file(void **state) {
  rx *x = *state;
  write_mod(x, "ai/walker.lua", walker(1));
  start(x, start_walker);
  write_mod(x, "ai/walker.lua", "return 42\n");
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 1);
  assert_contains(x->report, "ai/walker.lua");
  assert_num(x, "require('ai.walker').SPEED", 1);
  /* Text mode only: a precompiled chunk is refused. */
  write_mod(x, "ai/walker.lua", "\x1bLua\x54");
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_EINVAL);
  assert_int_equal(x->reports, 2);
  assert_contains(x->report, "binary");
  assert_num(x, "mod('ai.walker').version", 1);
  step(x, 1);
  assert_num(x, "persist('e').speed", 1);
  /* ...and the report says which file it was. */
  assert_contains(strchr(x->report, '\n') + 1, "ai/walker.lua");
}

/* Through the watcher, end to end: an identical save of the dependency
   and then a real edit of the dependent. Frames are stepped (5 ms of real
   time apart: the watcher's quiet window is real time) until the edit
   lands; the identical save must not even be staged. */
static void watcher_lands_edit_within_frames_and_skips_identical_save(void **state) {
  rx *x = *state;
  write_mod(x, "lib/util.lua", util(10));
  write_mod(x, "ai/patrol.lua", patrol);
  start(x, "weft.start('ai.patrol', persist('e', {}))\n");
  assert_int_equal(weft_watch_scripts(x->W, 1), WEFT_OK);
  step(x, 2);
  assert_str(x, "join(persist('loads'))", "lib.util,ai.patrol");

  write_mod(x, "lib/util.lua", util(10)); /* identical save */
  char edited[sizeof patrol + 16];
  snprintf(edited, sizeof edited, "%s", patrol);
  char *p = strstr(edited, "util.BASE * 2");
  assert_non_null(p);
  p[strlen("util.BASE * ")] = '3';
  write_mod(x, "ai/patrol.lua", edited);

  int frames = 0;
  const struct timespec pause = {0, 5 * 1000 * 1000};
  while (frames < 400 && num(x, "persist('e').speed") != 30) {
    step(x, 1);
    frames++;
    nanosleep(&pause, NULL);
  }
  print_message("the edit landed after %d frames\n", frames);
  assert_true(frames < 400);
  assert_true(frames >= 2); /* not before the quiet window */
  assert_num(x, "persist('e').speed", 30);
  assert_num(x, "mod('ai.patrol').version", 2);
  assert_num(x, "mod('lib.util').version", 1);
  assert_str(x, "join(persist('loads'))", "lib.util,ai.patrol,ai.patrol");
  assert_int_equal(weft_reload_count(x->W), 1);
  step(x, 3);
  assert_int_equal(weft_reload_count(x->W), 1);
  assert_int_equal(weft_watch_scripts(x->W, 0), WEFT_OK);
  assert_int_equal(x->reports, 0);
}

/* A designer starts the game with a typo in a brain: every entity's
   start fails, and the error shows. The save that fixes the file starts
   each of them, in the order they were asked for, and clears the error;
   a brain whose dependency was the broken file starts too. */
static void brain_broken_at_its_first_load_starts_when_a_save_fixes_it(void **state) {
  rx *x = *state;
  write_mod(x, "ai/walker.lua", "local M = {}\nM.SPEED = = 2\nreturn M\n");
  write_mod(x, "ai/guard.lua",
            "local W = require 'ai.walker'\n"
            "return {start = function(e) e.guard = W.SPEED wait(math.huge) end}\n");
  lua_State *L = weft_lua(x->W);
  load_in_env(x,
              "local e1, e2 = persist('e', {name = 'w1'}), persist('e2', {name = 'w2'})\n"
              "local g = persist('g', {})\n"
              "assert(not pcall(weft.start, 'ai.walker', e1))\n"
              "assert(not pcall(weft.start, 'ai.walker', e2))\n"
              "assert(not pcall(weft.start, 'ai.guard', g))\n",
              "=starter");
  weft_task t = weft_spawn(x->W, 0);
  (void)L;
  assert_int_equal(weft_task_result(x->W, t), WEFT_DONE);
  step(x, 2);
  assert_lua(x, "persist('e').starts == nil");
  assert_num(x, "#weft.reload_errors()", 1);
  assert_contains(str(x, "weft.reload_errors()[1].error"), "ai/walker.lua:2:");

  write_mod(x, "ai/walker.lua", walker(3));
  reload(x, "ai/walker.lua");
  step(x, 1);
  assert_num(x, "persist('e').starts", 1);
  assert_num(x, "persist('e2').starts", 1);
  assert_num(x, "persist('states')[1] == persist('e') and 1 or 0", 1); /* the order asked */
  assert_num(x, "persist('g').guard", 3);
  assert_num(x, "#weft.reload_errors()", 0);
  assert_num(x, "mod('ai.walker').tasks", 2);
  /* Started once: a later save restarts them as any reload does. */
  write_mod(x, "ai/walker.lua", walker(4));
  assert_int_equal(reload(x, "ai/walker.lua"), WEFT_OK);
  step(x, 1);
  assert_num(x, "persist('e').starts", 2);
  assert_num(x, "persist('e').speed", 4);
}

/* A package's init.lua is its directory's module: a save of it reloads
   that module (and a slash name is the same module), and the chunk gets
   (name, path) as Lua's require gives them. */
static void init_lua_save_reloads_its_package(void **state) {
  rx *x = *state;
  char dir[300];
  snprintf(dir, sizeof dir, "%s/pkg", x->root);
  assert_int_equal(mkdir(dir, 0755), 0);
  write_mod(x, "pkg/init.lua",
            "local name, path = ...\nreturn {v = 1, name = name, path = path}\n");
  exec(x, "persist('r').m = require('pkg')\n");
  assert_str(x, "persist('r').m.name", "pkg");
  assert_lua(x, "persist('r').m.path:match('/pkg/init%.lua$') ~= nil");
  assert_lua(x, "require('pkg') == persist('r').m");
  write_mod(x, "pkg/init.lua", "return {v = 2}\n");
  assert_int_equal(reload(x, "pkg/init.lua"), WEFT_OK);
  assert_num(x, "persist('r').m.v", 2);
  assert_num(x, "mod('pkg').version", 2);
  assert_lua(x, "package.loaded.pkg == persist('r').m");
  assert_int_equal(x->reports, 0);
}

/* A behaviour that starts a helper in its entity's group (g:spawn: the
   entity's ears): a reload replaces the helper with the behaviour, rather
   than leaving one more copy on old code each save; cancelling the
   behaviour otherwise leaves it alone, as g:spawn promises. */
static void helper_spawned_into_the_entity_group_is_replaced_on_reload(void **state) {
  rx *x = *state;
  write_mod(x, "ai/ears.lua",
            "local M = {}\n"
            "function M.start(e)\n"
            "  e.me = current()\n"
            "  e.g:spawn(function() while true do wait(1) end end)\n"
            "  wait(math.huge)\n"
            "end\n"
            "return M\n");
  start(x, "local e = persist('e', {})\n"
           "e.g = group{name = 'entity'}\n"
           "e.t = e.g:start('ai.ears', e)\n");
  step(x, 1);
  assert_num(x, "#persist('e').g:tasks()", 1);
  for (int i = 0; i < 3; i++) {
    write_mod(x, "ai/ears.lua",
              i % 2 ? "local M = {}\n"
                      "function M.start(e)\n"
                      "  e.me = current()\n"
                      "  e.g:spawn(function() while true do wait(1) end end)\n"
                      "  wait(math.huge)\n"
                      "end\n"
                      "return M\n"
                    : "local M = {V = 2}\n"
                      "function M.start(e)\n"
                      "  e.me = current()\n"
                      "  e.g:spawn(function() while true do wait(2) end end)\n"
                      "  wait(math.huge)\n"
                      "end\n"
                      "return M\n");
    assert_int_equal(reload(x, "ai/ears.lua"), WEFT_OK);
    step(x, 1);
  }
  assert_num(x, "#persist('e').g:tasks()", 1);
  /* cancelling the behaviour itself is not a reload: its helper lives on */
  exec(x, "persist('e').me:cancel()");
  assert_str(x, "persist('e').me.status", "cancelled");
  step(x, 1);
  assert_num(x, "#persist('e').g:tasks()", 1);
  assert_int_equal(x->reports, 0);
}

/* What a start's helper g:spawns into the entity's group belongs to the
   start too: a reload replaces the helper and everything it spawned, so
   a save does not leave the old one's sleepers behind. */
static void helpers_spawns_are_replaced_on_reload(void **state) {
  rx *x = *state;
  static const char ears[] =
      "local M = {}\n"
      "function M.start(e)\n"
      "  e.g:spawn(function()\n"
      "    for i = 1, 2 do e.g:spawn(function() wait(1e9) end) end\n"
      "    e.g:spawn(function()\n" /* a helper of a helper's, in first runs */
      "      e.g:spawn(function() wait(1e9) end)\n"
      "      wait(1e9)\n"
      "    end)\n"
      "    wait(1e9)\n"
      "  end)\n"
      "  wait(math.huge)\n"
      "end\n"
      "return M\n";
  write_mod(x, "ai/ears.lua", ears);
  start(x, "local e = persist('e', {})\n"
           "e.g = group{name = 'entity'}\n"
           "e.t = e.g:start('ai.ears', e)\n");
  step(x, 1);
  assert_num(x, "#persist('e').g:tasks()", 5); /* the helper, its three, and one's own */
  for (int i = 0; i < 3; i++) {
    write_mod(x, "ai/ears.lua", ears);
    assert_int_equal(reload(x, "ai/ears.lua"), WEFT_OK);
    step(x, 1);
  }
  assert_num(x, "#persist('e').g:tasks()", 5);
  assert_int_equal(x->reports, 0);
}

/* weft.modules() gives each module's script time: its starts' own groups,
   the short tasks they start and end each frame included; a module
   whose starts only sleep costs nothing. Its tasks, which end at once,
   run 100,000 instructions a frame: counted, half a millisecond. */
static void module_rows_give_their_starts_script_time(void **state) {
  rx *x = *state;
  write_mod(x, "ai/busy.lua",
            "local M = {}\n"
            "function M.start(e)\n"
            "  while true do\n"
            "    spawn(function() for i = 1, 100000 do end end)\n"
            "    wait()\n"
            "  end\n"
            "end\n"
            "return M\n");
  write_mod(x, "ai/idle.lua",
            "local M = {}\n"
            "function M.start(e) while true do wait(1) end end\n"
            "return M\n");
  start(x, "weft.start('ai.busy', {}) weft.start('ai.idle', {})");
  step(x, 30);
  assert_lua(x, "mod('ai.busy').avg_ms > 0.3 and mod('ai.busy').ms > 0.45");
  assert_lua(x, "mod('ai.idle').avg_ms == 0 and mod('ai.idle').ms == 0");
  assert_num(x, "#weft.tasks()", 2); /* the busy work left no live task behind */
  assert_int_equal(x->reports, 0);
}

/* A module found through a script's package.path template (here one with
   a '..' that stays inside the root) is the watcher's module by its file
   under the root, and keeps that path across a reload: a require it makes
   later, from the new code, finds its neighbours as the first load did. */
static void module_found_through_package_path_keeps_it_across_a_reload(void **state) {
  rx *x = *state;
  write_mod(x, "lib/brain.lua",
            "local M = {V = 1}\n"
            "function M.helper() return require('helper').N end\n"
            "return M\n");
  write_mod(x, "lib/helper.lua", "return {N = 7}\n");
  char code[512];
  snprintf(code, sizeof code,
           "local p = {}\n"
           "for k, v in pairs(package) do p[k] = v end\n"
           "p.path = '%s/ai/../lib/?.lua;' .. p.path\n"
           "package = p\n"
           "B, B_FILE = require('brain')\n",
           x->root);
  exec(x, code);
  assert_num(x, "B.V", 1);
  assert_lua(x, "B_FILE:find('/ai/../lib/brain.lua', 1, true) ~= nil");
  write_mod(x, "lib/brain.lua",
            "local M = {V = 2}\n"
            "function M.helper() return require('helper').N * 2 end\n"
            "return M\n");
  assert_int_equal(reload(x, "lib/brain.lua"), WEFT_OK);
  assert_num(x, "B.V", 2);
  assert_num(x, "B.helper()", 14);
  assert_int_equal(x->reports, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
      T(constant_tweak_is_picked_up_next_frame_with_state_kept),
      T(init_lua_save_reloads_its_package),
      T(syntax_error_keeps_old_code_and_is_shown_until_fixed),
      T(syntax_error_in_a_module_not_yet_required_is_reported_on_save),
      T(brain_broken_at_its_first_load_starts_when_a_save_fixes_it),
      T(helper_spawned_into_the_entity_group_is_replaced_on_reload),
      T(module_rows_give_their_starts_script_time),
      T(helpers_spawns_are_replaced_on_reload),
      T(top_level_error_after_partial_assignment_leaves_module_untouched),
      T(module_table_keeps_identity_removed_keys_go_nested_updated_in_place),
      T(version_increments_once_per_commit),
      T(task_waiting_on_future_is_cancelled_and_never_resumed),
      T(dependency_edit_reloads_dependent_dependencies_first),
      T(lazy_dependency_is_staged_before_its_dependent),
      T(error_in_new_start_stops_only_that_entity_and_is_retried),
      T(keep_lets_running_tasks_finish_on_old_code),
      T(on_reload_is_called_instead_of_start),
      T(persist_returns_same_table_across_reloads),
      T(start_returns_its_task_and_a_restart_gets_the_same_arguments),
      T(group_start_restarts_in_its_group_and_dead_groups_are_dropped),
      T(children_of_a_started_task_are_replaced_on_reload),
      T(failing_dependent_aborts_the_whole_transaction),
      T(failing_dependent_puts_back_every_key_its_dependency_merged),
      T(deeply_nested_module_reloads),
      T(undo_puts_back_a_key_a_later_module_removed_with_no_memory_left),
      T(a_dependent_registering_into_a_reloaded_table_sees_the_new_version),
      T(an_integer_edited_to_a_float_reloads_as_a_float),
      T(a_dependent_staged_after_a_rename_fails_naming_itself),
      T(runaway_module_is_killed_at_its_line_and_can_be_required_again),
      T(reload_runs_no_metamethod_of_package_loaded),
      T(runaway_module_that_catches_its_kill_still_stops),
      T(module_top_level_cannot_wait_and_says_so),
      T(reloaded_functions_work_on_the_live_module_table),
      T(version_without_start_stops_entities_until_one_has_it),
      T(save_whose_dependent_failed_lands_when_the_dependent_is_fixed),
      T(binary_or_non_table_module_is_refused_naming_its_file),
      T(thousand_reloads_keep_memory_flat),
      T(watcher_lands_edit_within_frames_and_skips_identical_save),
      T(module_found_through_package_path_keeps_it_across_a_reload),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
