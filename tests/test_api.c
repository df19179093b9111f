/* Tests of the C API a game uses (bindings/weft.h): futures completed
   from C, custom job kinds, shutdown with work in flight, and the
   no-allocation steady frame. Scripts are Lua strings; their output is
   captured through desc.log. No sleeps: loops step frames and yield. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "../bindings/testing.h"
#include "../bindings/weft.h"

#define DT60 (1.0 / 60.0)

/* ---- captured output ---- */

typedef struct out {
  char log[16384]; /* print lines, each ended by '\n' */
  size_t len;
  int lines;
  int reports; /* error reports no handler took */
  char last_report[512];
} out;

static void on_log(void *user, const char *line, size_t len) {
  out *o = user;
  size_t n = len;
  if (o->len + n + 2 < sizeof o->log) {
    memcpy(o->log + o->len, line, n);
    o->len += n;
    o->log[o->len++] = '\n';
    o->log[o->len] = 0;
  }
  o->lines++;
}

static void on_report(void *user, const char *msg, const char *trace) {
  out *o = user;
  (void)trace;
  o->reports++;
  snprintf(o->last_report, sizeof o->last_report, "%s", msg);
}

/* A desc whose log and report go to o (cleared). */
static weft_desc desc_to(out *o) {
  memset(o, 0, sizeof *o);
  weft_desc d = WEFT_DESC_INIT;
  d.log = on_log;
  d.report = on_report;
  d.user = o;
  return d;
}

static weft_state *open_state(out *o, uint32_t job_threads) {
  weft_desc d = desc_to(o);
  d.job_threads = job_threads;
  /* These tests count what each frame runs: a resume or a frame cut
     short by time on a loaded machine would move the counts
     (test_watchdog tests both times). */
  d.time_budget_us = 1000000;
  d.frame_time_budget_us = WEFT_BUDGET_OFF;
  d.slow_task_us = UINT32_MAX; /* a slow-task warning (logged, allocating) is no case's business */
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  return W;
}

/* Loads src as a script function whose globals fall through to the API
   (like a script file's environment) and starts it as a task. */
static weft_task spawn_src(weft_state *W, const char *src) {
  lua_State *L = weft_lua(W);
  int top = lua_gettop(L);
  if (luaL_loadstring(L, src) != LUA_OK) {
    print_error("load: %s\n", lua_tostring(L, -1));
    fail();
  }
  lua_newtable(L);          /* env */
  lua_createtable(L, 0, 1); /* its metatable */
  weft_push_api(W);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  assert_non_null(lua_setupvalue(L, -2, 1));
  weft_task t = weft_spawn(W, 0);
  if (!t.id) print_error("spawn: %s\n", weft_task_error(W, (weft_task){0}));
  assert_true(t.id != 0);
  assert_int_equal(lua_gettop(L), top);
  return t;
}

/* Sets API global `name` to the future f. */
static void expose_future(weft_state *W, const char *name, weft_future f) {
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  weft_push_future(W, L, f);
  assert_int_equal(lua_type(L, -1), LUA_TUSERDATA);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

static void steps(weft_state *W, int n) {
  for (int i = 0; i < n; i++) assert_int_equal(weft_step(W, DT60), WEFT_OK);
}

/* Steps until the task finished (jobs take real time); yields between. */
static int step_until_done(weft_state *W, weft_task t) {
  for (long i = 0; i < 50000000L; i++) {
    int r = weft_task_result(W, t);
    if (r != 0) return r;
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
    sched_yield();
  }
  fail_msg("task did not finish");
  return 0;
}

static void expect_log(const out *o, const char *want) {
  if (strcmp(o->log, want) != 0) print_error("log:\n%s---\nwant:\n%s---\n", o->log, want);
  assert_string_equal(o->log, want);
}

/* ---- futures from C ---- */

static void test_script_waits_on_a_future_completed_from_c(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_future f = weft_future_new(W);
  assert_true(f.id != 0);
  expose_future(W, "door", f);
  weft_task t = spawn_src(W, "local a, b, c, d = wait(door)\n"
                             "print('got', a, b, c, d, select('#', wait(door)))\n"
                             "return frame()\n");
  steps(W, 3);
  assert_int_equal(weft_task_result(W, t), 0);
  assert_int_equal(o.lines, 0);

  int top = lua_gettop(L);
  lua_pushstring(L, "open");
  lua_pushinteger(L, 3);
  lua_pushnil(L);
  lua_pushboolean(L, 1);
  assert_int_equal(weft_future_resolve(W, f, 4), WEFT_OK);
  assert_int_equal(lua_gettop(L), top);        /* the values were popped */
  assert_int_equal(weft_task_result(W, t), 0); /* it runs in the next frame */
  steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  expect_log(&o, "got\topen\t3\tnil\ttrue\t4\n");

  /* completing twice is refused and leaves the stack balanced */
  lua_pushstring(L, "again");
  assert_int_equal(weft_future_resolve(W, f, 1), WEFT_ESTATE);
  assert_int_equal(lua_gettop(L), top);
  lua_pushstring(L, "late failure");
  assert_int_equal(weft_future_fail(W, f), WEFT_ESTATE);
  assert_int_equal(lua_gettop(L), top);
  assert_int_equal(weft_future_cancel(W, f), WEFT_ESTATE);
  assert_int_equal(lua_gettop(L), top);

  weft_task_drop(W, t);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

static void test_failure_from_c_reaches_the_script_unchanged(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_future f = weft_future_new(W);
  expose_future(W, "gate", f);
  weft_task t = spawn_src(W, "local ok, err = pcall(wait, gate)\n"
                             "print(ok, type(err), err.code, err == gate_err)\n");
  steps(W, 1);
  lua_newtable(L);
  lua_pushinteger(L, 42);
  lua_setfield(L, -2, "code");
  weft_push_api(W);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "gate_err"); /* the same table, for identity */
  lua_pop(L, 1);
  assert_int_equal(weft_future_fail(W, f), WEFT_OK);
  steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  expect_log(&o, "false\ttable\t42\ttrue\n");
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

static void test_uncaught_failure_fails_the_task_and_is_reported_once(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_future f = weft_future_new(W);
  expose_future(W, "walk", f);
  weft_task t = spawn_src(W, "wait(walk)\nprint('not reached')\n");
  lua_pushstring(L, "path blocked");
  assert_int_equal(weft_future_fail(W, f), WEFT_OK);
  steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_FAILED);
  assert_non_null(strstr(weft_task_error(W, t), "path blocked"));
  assert_int_equal(o.reports, 1);
  assert_non_null(strstr(o.last_report, "path blocked"));
  assert_int_equal(o.lines, 0);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* docs/decisions.md, "Cancellation passing through a wait": a task that waits on a
   cancelled future and does not catch the error ends "cancelled", not
   "failed", and is not reported. Futures cancelled from C included. */
static void test_cancel_from_c_ends_the_waiting_task_cancelled(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_future f = weft_future_new(W);
  expose_future(W, "anim", f);
  weft_task t = spawn_src(W, "wait(anim)\n");
  weft_task w = spawn_src(W, "pcall(wait, anim) print(anim.state)\n");
  lua_pushstring(L, "interrupted");
  assert_int_equal(weft_future_cancel(W, f), WEFT_OK);
  steps(W, 1);
  assert_int_equal(weft_task_result(W, w), WEFT_DONE);
  expect_log(&o, "cancelled\n");
  assert_int_equal(weft_task_result(W, t), WEFT_CANCELLED);
  assert_int_equal(o.reports, 0); /* a cancellation passing through is not an error */
  weft_task_drop(W, t);
  weft_task_drop(W, w);
  assert_int_equal(weft_close(W), 0);
}

/* Collects the keys of the table at the top of L, sorted, joined by ' '. */
static void keys_of(lua_State *L, char *buf, size_t n) {
  const char *k[128];
  int nk = 0;
  lua_pushnil(L);
  while (lua_next(L, -2) && nk < 128) {
    lua_pop(L, 1);
    k[nk++] = lua_tostring(L, -1); /* keys stay alive in the table */
  }
  for (int i = 1; i < nk; i++)
    for (int j = i; j > 0 && strcmp(k[j - 1], k[j]) > 0; j--) {
      const char *x = k[j];
      k[j] = k[j - 1];
      k[j - 1] = x;
    }
  buf[0] = 0;
  for (int i = 0; i < nk; i++) {
    strncat(buf, k[i], n - strlen(buf) - 2);
    if (i + 1 < nk) strncat(buf, " ", n - strlen(buf) - 1);
  }
}

/* The sandbox is an allow-list: the script environment holds exactly
   these names, and os and debug exactly these fields. */
static void test_script_globals_are_exactly_the_allow_list(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  char buf[2048];
  weft_push_api(W);
  keys_of(L, buf, sizeof buf);
  assert_string_equal(buf,
                      "_VERSION after all assert channel collectgarbage coroutine current debug "
                      "defer dofile error every finally first frame future getmetatable group io "
                      "ipairs job load loadfile math next now os package pairs pcall persist print "
                      "rawequal rawget rawlen "
                      "rawset realtime require select setmetatable signal spawn string table "
                      "time_scale timeout tonumber tostring type utf8 wait wait_frames "
                      "wait_realtime wait_until wait_while warn weft xpcall");
  /* the sandboxed libraries hold only their allowed functions */
  static const char *const probe =
      "local function keys(t) local k = {} for n in pairs(t) do k[#k + 1] = n end "
      "table.sort(k) return table.concat(k, ' ') end "
      "return keys(os), keys(debug), type(io.popen), type(package.loadlib), type(os.execute), "
      "type(string.dump)";
  assert_int_equal(luaL_loadstring(L, probe), LUA_OK);
  lua_pushvalue(L, -2); /* the API as the chunk's environment */
  lua_setupvalue(L, -2, 1);
  assert_int_equal(lua_pcall(L, 0, 6, 0), LUA_OK);
  assert_string_equal(lua_tostring(L, -6), "clock date time");
  assert_string_equal(lua_tostring(L, -5), "getinfo getmetatable setmetatable traceback");
  assert_string_equal(lua_tostring(L, -4), "function"); /* it raises: see sandbox_test */
  for (int i = -3; i <= -1; i++) assert_string_equal(lua_tostring(L, i), "nil");
  lua_pop(L, 7);
  assert_int_equal(weft_close(W), 0);
}

/* Each script has its own copies of the library tables: what one script
   writes into them (or into its globals) reaches no other script. */
static void test_library_writes_stay_in_their_script(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  weft_task a, b;
  const char *err = NULL;
  static const char first[] = "string.upper = nil; math.pi = 3; print = nil; weft.tasks = 1\n"
                              "table.x = 1; shared = 1\n";
  assert_int_equal(weft_run_string(W, "@a.lua", first, sizeof first - 1, &a, &err), WEFT_OK);
  static const char second[] =
      "print(('x'):upper(), string.upper('y'), math.pi == math.acos(-1), type(weft.tasks),\n"
      "      table.x, shared)\n";
  assert_int_equal(weft_run_string(W, "@b.lua", second, sizeof second - 1, &b, &err), WEFT_OK);
  expect_log(&o, "X\tY\ttrue\tfunction\tnil\tnil\n");
  weft_task_drop(W, a);
  weft_task_drop(W, b);
  assert_int_equal(weft_close(W), 0);
}

/* weft_close runs the finalizers still pending and those of every object
   still marked, newest first, as lua_close does, each under the budget: a
   finalizer that loops is stopped and the close returns. What io.write
   left without a line end starts the next line, as on a terminal. */
static void test_close_runs_finalizers_under_the_budget(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  weft_task t;
  const char *err = NULL;
  static const char src[] = "local mt = {__gc = function(o) print('gc', o.n) end}\n"
                            "KEEP = {setmetatable({n = 1}, mt), setmetatable({n = 2}, mt)}\n"
                            "setmetatable({}, {__gc = function() while true do end end})\n"
                            "io.write('no line end')\n";
  assert_int_equal(weft_run_string(W, "@f.lua", src, sizeof src - 1, &t, &err), WEFT_OK);
  expect_log(&o, "");
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
  assert_string_equal(o.log, "no line endgc\t2\ngc\t1\n");
}

/* print hands the whole line to desc.log, zero bytes included. */
static void test_print_keeps_zero_bytes(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  weft_task t;
  const char *err = NULL;
  static const char src[] = "print('a\\0b', 1)\n";
  assert_int_equal(weft_run_string(W, "@p.lua", src, sizeof src - 1, &t, &err), WEFT_OK);
  assert_int_equal(o.len, 6);
  assert_memory_equal(o.log, "a\0b\t1\n", 6);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

static void test_future_owned_by_c_survives_collection_until_completed(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_future f = weft_future_new(W);
  assert_true(f.id != 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  weft_push_future(W, L, f); /* nobody in Lua held it: still there */
  assert_int_equal(lua_type(L, -1), LUA_TUSERDATA);
  lua_pop(L, 1);
  assert_int_equal(weft_future_resolve(W, f, 0), WEFT_OK);
  /* completed and unreferenced: collected, the id goes stale */
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  weft_push_future(W, L, f);
  assert_int_equal(lua_type(L, -1), LUA_TNIL);
  lua_pop(L, 1);
  int top = lua_gettop(L);
  lua_pushinteger(L, 1);
  assert_int_equal(weft_future_resolve(W, f, 1), WEFT_ESTALE);
  assert_int_equal(lua_gettop(L), top);
  /* an id never handed out is stale too */
  assert_int_equal(weft_future_resolve(W, (weft_future){123456789}, 0), WEFT_ESTALE);
  weft_push_future(W, L, (weft_future){0});
  assert_int_equal(lua_type(L, -1), LUA_TNIL);
  lua_pop(L, 1);
  assert_int_equal(weft_close(W), 0);
}

static void test_a_wait_after_completion_returns_at_once(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_future f = weft_future_new(W);
  expose_future(W, "loaded", f);
  lua_pushstring(L, "img");
  assert_int_equal(weft_future_resolve(W, f, 1), WEFT_OK);
  weft_task t = spawn_src(W, "print(wait(loaded), frame())\n");
  /* no step needed: it ran to the end inside weft_spawn */
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  expect_log(&o, "img\t0\n");
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* ---- custom job kinds ---- */

typedef struct dbl {
  lua_Integer in, out;
  pthread_t runner;
  int gated;
} dbl;

static pthread_t main_thread;
static atomic_int prepared, ran, finished, freed, started, gate;
static atomic_int prepare_off_main, finish_off_main;

static void reset_counters(void) {
  main_thread = pthread_self();
  atomic_store(&prepared, 0);
  atomic_store(&ran, 0);
  atomic_store(&finished, 0);
  atomic_store(&freed, 0);
  atomic_store(&started, 0);
  atomic_store(&gate, 0);
  atomic_store(&prepare_off_main, 0);
  atomic_store(&finish_off_main, 0);
}

static void *dbl_prepare(lua_State *L, int first, int n, void *user) {
  (void)n;
  if (!pthread_equal(pthread_self(), main_thread)) atomic_fetch_add(&prepare_off_main, 1);
  lua_Integer v = luaL_checkinteger(L, first); /* may raise: nothing allocated yet */
  dbl *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->in = v;
  d->gated = user != NULL;
  atomic_fetch_add(&prepared, 1);
  return d;
}

static void dbl_run(void *p) {
  dbl *d = p;
  d->runner = pthread_self();
  atomic_fetch_add(&started, 1);
  if (d->gated)
    while (!atomic_load(&gate)) sched_yield();
  d->out = d->in * 2;
  atomic_fetch_add(&ran, 1);
}

static int dbl_finish(lua_State *L, void *p) {
  dbl *d = p;
  if (!pthread_equal(pthread_self(), main_thread)) atomic_fetch_add(&finish_off_main, 1);
  atomic_fetch_add(&finished, 1);
  if (d->in < 0) {
    lua_pushfstring(L, "cannot double %d", (int)d->in);
    return -1;
  }
  lua_pushinteger(L, d->out);
  lua_pushboolean(L, !pthread_equal(d->runner, main_thread)); /* ran off the main thread */
  return 2;
}

static void dbl_free(void *p) {
  atomic_fetch_add(&freed, 1);
  free(p);
}

static void register_dbl(weft_state *W, const char *name, int gated) {
  static int gated_marker;
  weft_job_kind k = {sizeof(weft_job_kind),
                     name,
                     dbl_prepare,
                     dbl_run,
                     dbl_finish,
                     dbl_free,
                     gated ? (void *)&gated_marker : NULL};
  assert_int_equal(weft_register_job(W, &k), WEFT_OK);
}

/* ---- misuse from C ---- */

static void test_bad_completions_are_refused_and_leave_the_future_pending(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_future f = weft_future_new(W);
  expose_future(W, "door", f);
  weft_task t = spawn_src(W, "return wait(door)");
  int top = lua_gettop(L);
  lua_pushstring(L, "v");
  assert_int_equal(weft_future_resolve(W, f, -1), WEFT_EINVAL);
  assert_int_equal(weft_future_resolve(W, f, 1000), WEFT_EINVAL);
  assert_int_equal(weft_future_resolve(NULL, f, 1), WEFT_EINVAL);
  assert_int_equal(lua_gettop(L), top + 1); /* refused: nothing popped */
  steps(W, 2);
  assert_int_equal(weft_task_result(W, t), WEFT_RUNNING);
  lua_settop(L, 0); /* fail takes the error value on top: none there */
  assert_int_equal(weft_future_fail(W, f), WEFT_EINVAL);
  lua_pushstring(L, "v");
  assert_int_equal(weft_future_resolve(W, f, 1), WEFT_OK);
  steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

static void test_spawn_without_a_function_fails_with_a_message(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  lua_settop(L, 0);
  assert_true(weft_spawn(W, 0).id == 0);
  assert_non_null(strstr(weft_task_error(W, (weft_task){0}), "function expected"));
  lua_pushinteger(L, 1);
  assert_true(weft_spawn(W, 3).id == 0);
  assert_true(weft_spawn(W, -1).id == 0);
  lua_settop(L, 0);
  weft_task t = {0};
  const char *err = NULL;
  assert_int_equal(weft_run_file(W, NULL, &t, &err), WEFT_EINVAL);
  char buf[4] = "xyz";
  weft_describe_wait(W, (weft_task){0}, buf, 0);
  assert_string_equal(buf, "xyz");
  assert_int_equal(weft_step(NULL, DT60), WEFT_EINVAL);
  assert_int_equal(weft_close(W), 0);
}

static void test_cancel_from_c_runs_cleanups_and_ends_the_task_cancelled(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  weft_task t =
      spawn_src(W, "local _ <close> = finally(function() print('cleaned') end)\n"
                   "spawn(function() local _ <close> = finally(function() print('child') end)"
                   " wait(math.huge) end)\n"
                   "wait(math.huge)\n");
  steps(W, 2);
  assert_int_equal(weft_cancel(W, t), WEFT_OK);
  expect_log(&o, "child\ncleaned\n");
  assert_int_equal(weft_task_result(W, t), WEFT_CANCELLED);
  assert_int_equal(weft_cancel(W, t), WEFT_ESTALE);
  weft_task_drop(W, t);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* A verb that steps or closes the state it is called from. */
static int l_step_inside(lua_State *L) {
  weft_state *W = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushinteger(L, weft_step(W, DT60));
  lua_pushinteger(L, weft_close(W));
  return 2;
}

/* A report callback that tries to step or close the state reporting. */
typedef struct reentry {
  weft_state *W;
  int step_rc, close_rc, calls;
} reentry;

static void on_report_reenter(void *user, const char *msg, const char *trace) {
  reentry *r = user;
  (void)msg;
  (void)trace;
  r->calls++;
  r->step_rc = weft_step(r->W, DT60);
  r->close_rc = weft_close(r->W);
}

static void test_step_or_close_from_the_report_callback_is_refused(void **state) {
  (void)state;
  reentry r = {0};
  weft_desc d = WEFT_DESC_INIT;
  d.report = on_report_reenter;
  d.user = &r;
  r.W = weft_open(&d);
  assert_non_null(r.W);
  lua_State *L = weft_lua(r.W);
  assert_int_equal(luaL_loadstring(L, "error('boom')"), LUA_OK);
  weft_task t = weft_spawn(r.W, 0); /* fails at once, outside any frame */
  assert_int_equal(r.calls, 1);
  assert_int_equal(r.step_rc, WEFT_EBUSY);
  assert_int_equal(r.close_rc, WEFT_EBUSY);
  assert_int_equal(weft_task_result(r.W, t), WEFT_FAILED);
  weft_task_drop(r.W, t);
  assert_int_equal(weft_close(r.W), 0);
}

static void test_step_or_close_from_inside_a_task_is_refused(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_pushlightuserdata(L, W);
  lua_pushcclosure(L, l_step_inside, 1);
  lua_setfield(L, -2, "step_inside");
  lua_pop(L, 1);
  weft_task t = spawn_src(W, "local s, c = step_inside() print(s, c, frame())");
  char want[64];
  snprintf(want, sizeof want, "%d\t%d\t0\n", WEFT_EBUSY, WEFT_EBUSY);
  expect_log(&o, want);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

static void test_custom_job_runs_on_a_worker_and_finishes_on_main(void **state) {
  (void)state;
  reset_counters();
  out o;
  weft_state *W = open_state(&o, 2);
  register_dbl(W, "double", 0);
  weft_task t = spawn_src(W, "local f = job('double', 21)\n"
                             "print(f.state)\n"
                             "local v, off_main = wait(f)\n"
                             "print('double', v, off_main)\n"
                             "local ok, err = pcall(wait, job('double', -5))\n"
                             "print(ok, err)\n"
                             "local ok2, err2 = pcall(function() return job('double', 'x') end)\n"
                             "print(ok2, (err2:gsub('^.-: ', '')))\n");
  assert_int_equal(step_until_done(W, t), WEFT_DONE);
  expect_log(&o, "pending\n"
                 "double\t42\ttrue\n"
                 "false\tcannot double -5\n"
                 "false\tbad argument #2 to 'job' (number expected, got string)\n");
  assert_int_equal(atomic_load(&prepared), 2);
  assert_int_equal(atomic_load(&ran), 2);
  assert_int_equal(atomic_load(&finished), 2);
  assert_int_equal(atomic_load(&freed), 2); /* the refused call allocated nothing */
  assert_int_equal(atomic_load(&prepare_off_main), 0);
  assert_int_equal(atomic_load(&finish_off_main), 0);
  weft_task_drop(W, t);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(atomic_load(&freed), 2);
}

static void test_cancelled_job_future_skips_finish_and_frees(void **state) {
  (void)state;
  reset_counters();
  out o;
  weft_state *W = open_state(&o, 1);
  register_dbl(W, "slow", 1);
  register_dbl(W, "double", 0);
  weft_task t = spawn_src(W, "local f = job('slow', 1)\n"
                             "f:cancel()\n"
                             "print(f.state)\n"
                             "return 0\n");
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  atomic_store(&gate, 1);
  /* a later job on the single worker finishing proves the slow one ended */
  weft_task t2 = spawn_src(W, "print(wait(job('double', 4)))\n");
  assert_int_equal(step_until_done(W, t2), WEFT_DONE);
  steps(W, 2);
  expect_log(&o, "cancelled\n8\ttrue\n");
  assert_int_equal(atomic_load(&ran), 2);
  assert_int_equal(atomic_load(&finished), 1); /* only the live one */
  assert_int_equal(atomic_load(&freed), 2);
  weft_task_drop(W, t);
  weft_task_drop(W, t2);
  assert_int_equal(weft_close(W), 0);
}

static atomic_int closing;
static void *open_gate_when_closing(void *arg) {
  (void)arg;
  while (!atomic_load(&closing)) sched_yield();
  for (int i = 0; i < 100; i++) sched_yield();
  atomic_store(&gate, 1);
  return NULL;
}

static void test_close_with_jobs_in_flight_is_clean(void **state) {
  (void)state;
  reset_counters();
  out o;
  weft_state *W = open_state(&o, 2);
  register_dbl(W, "slow", 1);
  weft_task t = spawn_src(W, "local fs = {}\n"
                             "for i = 1, 6 do fs[i] = job('slow', i) end\n"
                             "wait(fs)\n"
                             "print('not reached')\n");
  while (atomic_load(&started) < 2) sched_yield(); /* two running, four queued */
  steps(W, 3);
  assert_int_equal(weft_task_result(W, t), 0);
  assert_int_equal(atomic_load(&prepared), 6);
  weft_task_drop(W, t);
  atomic_store(&closing, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, open_gate_when_closing, NULL), 0);
  atomic_store(&closing, 1);
  assert_int_equal(weft_close(W), 0); /* joins the workers, frees every job */
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(atomic_load(&freed), 6);
  assert_int_equal(atomic_load(&finished), 0);
  assert_int_equal(o.lines, 0);
}

static void test_register_job_checks_its_arguments_and_limit(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 1);
  weft_job_kind bad = {sizeof(weft_job_kind), "bad", dbl_prepare, NULL, dbl_finish, dbl_free, NULL};
  assert_int_equal(weft_register_job(W, &bad), WEFT_EINVAL);
  assert_int_equal(weft_register_job(W, NULL), WEFT_EINVAL);
  weft_job_kind noname = {
      sizeof(weft_job_kind), NULL, dbl_prepare, dbl_run, dbl_finish, dbl_free, NULL};
  assert_int_equal(weft_register_job(W, &noname), WEFT_EINVAL);
  /* two built in, so 30 more fit; re-registering a name replaces it */
  static char names[40][16];
  int ok = 0;
  for (int i = 0; i < 40; i++) {
    snprintf(names[i], sizeof names[i], "kind%d", i);
    weft_job_kind k = {
        sizeof(weft_job_kind), names[i], dbl_prepare, dbl_run, dbl_finish, dbl_free, NULL};
    int rc = weft_register_job(W, &k);
    if (rc == WEFT_OK)
      ok++;
    else
      assert_int_equal(rc, WEFT_ELIMIT);
  }
  assert_int_equal(ok, 30);
  weft_job_kind again = {
      sizeof(weft_job_kind), "kind3", dbl_prepare, dbl_run, dbl_finish, dbl_free, NULL};
  assert_int_equal(weft_register_job(W, &again), WEFT_OK);
  assert_int_equal(weft_close(W), 0);
}

/* ---- the steady frame ---- */

static void test_steady_frame_allocates_nothing(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_newtable(L);
  lua_setfield(L, -2, "probe");
  lua_pop(L, 1);
  weft_task t = spawn_src(W, "local sig = signal('tick')\n"
                             "local woke, slept = 0, 0\n"
                             "for i = 1, 1000 do\n"
                             "  spawn(function() while true do wait(sig) woke = woke + 1 end end)\n"
                             "  spawn(function() while true do wait() slept = slept + 1 end end)\n"
                             "end\n"
                             "spawn(function() while true do sig:fire() wait() end end)\n"
                             "probe.counts = function() return woke, slept end\n"
                             "wait(math.huge)\n");
  assert_int_equal(weft_task_result(W, t), 0);
  /* warm-up: pools, queues and Lua stacks reach their size (the cost
     table makes room in a frame by dropping records, never by growing) */
  steps(W, 200);
  weft_stats a = WEFT_STATS_INIT, b = WEFT_STATS_INIT;
  weft_get_stats(W, &a);
  assert_int_equal(a.tasks, 2002);
  steps(W, 100);
  weft_get_stats(W, &b);
  if (b.allocs != a.allocs)
    print_error("%llu allocations (%llu bytes) in 100 steady frames\n",
                (unsigned long long)(b.allocs - a.allocs),
                (unsigned long long)(b.alloc_bytes - a.alloc_bytes));
  assert_int_equal(b.allocs - a.allocs, 0);
  assert_int_equal(b.alloc_bytes - a.alloc_bytes, 0);
  assert_int_equal(b.tasks, 2002);
  assert_int_equal(b.errors, 0);
  /* the frames did the work: every waiter woke once per frame */
  weft_push_api(W);
  lua_getfield(L, -1, "probe");
  lua_getfield(L, -1, "counts");
  assert_int_equal(lua_type(L, -1), LUA_TFUNCTION);
  lua_call(L, 0, 2);
  lua_Integer woke = lua_tointeger(L, -2), slept = lua_tointeger(L, -1);
  lua_pop(L, 4);
  assert_int_equal(woke, 1000 * 301); /* fires in frame 0 (at spawn) and frames 1..300 */
  assert_int_equal(slept, 1000 * 300);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* The cost table keeps a share of the live tasks' records and makes room
   in a frame by dropping the cheapest: many tasks charged a little and
   a few charged much, frame after frame, and every task charged reads
   its charge at once, the costly ones keep theirs, nothing is mixed up
   (a record put where another was, read as the other's). */
static void test_cost_table_keeps_the_costly_and_reads_each_charge(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  enum { N = 2000, HOT = 8 };
  weft_task *t = malloc(N * sizeof *t);
  for (int i = 0; i < N; i++) t[i] = spawn_src(W, "wait(math.huge)");
  /* the costly are costly from the first frame on: a record is kept for
     what it cost lately, and a task's first charges of its first frame
     are not yet that */
  steps(W, 1);
  for (int h = 0; h < HOT; h++) weft__testing_charge(W, t[h], 20000);
  uint32_t seed = 12345;
  for (int frame = 0; frame < 60; frame++) {
    steps(W, 1);
    for (int k = 0; k < 300; k++) {
      seed = seed * 1664525u + 1013904223u;
      int i = HOT + (int)((seed >> 8) % (N - HOT));
      uint64_t us = 1 + (seed >> 20) % 4000;
      weft_task_cost before, after;
      assert_int_equal(weft_get_task_cost(W, t[i], &before), WEFT_OK);
      weft__testing_charge(W, t[i], us);
      assert_int_equal(weft_get_task_cost(W, t[i], &after), WEFT_OK);
      assert_true(after.frame_ms >= before.frame_ms + us / 1000.0 - 1e-9);
      if (k % 40 == 0)
        for (int h = 0; h < HOT; h++) weft__testing_charge(W, t[h], 2500);
    }
    for (int h = 0; h < HOT; h++) {
      weft_task_cost c;
      assert_int_equal(weft_get_task_cost(W, t[h], &c), WEFT_OK);
      assert_true(c.frame_ms >= 20.0 - 1e-9 && c.worst_ms >= 20.0 - 1e-9);
    }
  }
  for (int i = 0; i < N; i++) weft_task_drop(W, t[i]);
  free(t);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* With no budget (no watchdog, no count), resumes are timed by the
   coarse real clock, read once a resume: in a step each of the frame's
   begins where the one before ended, and one a task starts at once reads
   the clock. A cheap task resumed after one that burns 40 ms of
   processor time each frame is not charged the burn, nor is a task
   started at once after its starter burned, and the burners are charged
   at least half of it (real time on a busy machine is more than
   processor time, never less). */
static void test_costs_with_no_budget_go_to_the_task_that_ran(void **state) {
  (void)state;
  out o;
  weft_desc d = desc_to(&o);
  d.time_budget_us = WEFT_BUDGET_COUNTED;
  d.instr_budget = WEFT_BUDGET_OFF; /* the burn is not preempted: one stretch a frame */
  d.slow_task_us = UINT32_MAX;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  /* and inside a task: what it does between two tasks it starts at once
     is its own, not the second one's */
  weft_group inner = weft_group_new(W, (weft_group){0}, "inner");
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  weft_push_group(W, L, inner);
  lua_setfield(L, -2, "inner");
  lua_pop(L, 1);
  weft_task outer = spawn_src(W, "while true do\n"
                                 "  inner:spawn(function() end)\n"
                                 "  local e = os.clock() + 0.04\n"
                                 "  while os.clock() < e do end\n"
                                 "  inner:spawn(function() end)\n"
                                 "  wait()\n"
                                 "end\n");
  weft_task burner = spawn_src(W, "while true do\n"
                                  "  local e = os.clock() + 0.04\n"
                                  "  while os.clock() < e do end\n"
                                  "  wait()\n"
                                  "end\n");
  weft_task cheap = spawn_src(W, "local n = 0 while true do n = n + 1 wait() end");
  steps(W, 10); /* 40 ms a frame: at least two ticks of a 16 ms clock (Windows') */
  weft_task_cost b, c;
  assert_int_equal(weft_get_task_cost(W, burner, &b), WEFT_OK);
  assert_int_equal(weft_get_task_cost(W, cheap, &c), WEFT_OK);
  assert_true(b.worst_ms >= 20.0 && b.avg_ms >= 20.0);
  assert_true(c.avg_ms < b.avg_ms / 4);
  weft_task_cost ot, in;
  assert_int_equal(weft_get_task_cost(W, outer, &ot), WEFT_OK);
  assert_int_equal(weft_get_group_cost(W, inner, &in), WEFT_OK);
  assert_true(ot.avg_ms >= 20.0 && in.avg_ms < ot.avg_ms / 4);
  weft_task_drop(W, outer);
  weft_group_drop(W, inner);
  weft_task_drop(W, burner);
  weft_task_drop(W, cheap);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* spawn(f) as a statement takes no handle, so none is made: a thousand
   such spawns allocate at least 48 bytes a task less than a thousand
   kept in a local (the handle is made when something asks: current(),
   weft.tasks(), a C handle), and the tasks run the same. */
static size_t bytes_to_spawn(const char *src) {
  out o;
  weft_state *W = open_state(&o, 0);
  weft_stats a = WEFT_STATS_INIT, b = WEFT_STATS_INIT;
  weft_task t = spawn_src(W, "wait(math.huge)"); /* the API and the pools warm */
  weft_get_stats(W, &a);
  weft_task u = spawn_src(W, src);
  weft_get_stats(W, &b);
  assert_int_equal(b.tasks, a.tasks + 1001);
  steps(W, 2);
  weft_get_stats(W, &b);
  assert_int_equal(b.tasks, a.tasks + 1001);
  assert_int_equal(o.reports, 0);
  weft_task_drop(W, t);
  weft_task_drop(W, u);
  assert_int_equal(weft_close(W), 0);
  return (size_t)(b.alloc_bytes - a.alloc_bytes);
}

static void test_a_spawn_statement_makes_no_handle(void **state) {
  (void)state;
  size_t bare = bytes_to_spawn("for i = 1, 1000 do spawn(function() wait(math.huge) end) end\n"
                               "wait(math.huge)");
  size_t kept = bytes_to_spawn("for i = 1, 1000 do local t = spawn(function() wait(math.huge) "
                               "end) end\n"
                               "wait(math.huge)");
  assert_true(kept >= bare + 1000 * 48);
}

/* desc.frame_budget: a frame resumes at most that many tasks; the rest
   run next frame, first, before the tasks that frame wakes. */
static void test_frame_budget_caps_resumes_and_the_rest_run_first_next_frame(void **state) {
  (void)state;
  out o;
  weft_desc d = desc_to(&o);
  d.frame_budget = 3;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  weft_task t =
      spawn_src(W, "for i = 1, 5 do\n"
                   "  spawn(function() wait() print(i, frame()) wait() print(i, frame()) end)\n"
                   "end\n");
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  steps(W, 1);
  expect_log(&o, "1\t1\n2\t1\n3\t1\n");
  steps(W, 1); /* 4 and 5 are left from frame 1: they run before 1..3 wake again */
  expect_log(&o, "1\t1\n2\t1\n3\t1\n4\t2\n5\t2\n1\t2\n");
  steps(W, 2); /* 2 and 3 first, then 4 of those woken; 5 is left for frame 4 */
  expect_log(&o, "1\t1\n2\t1\n3\t1\n4\t2\n5\t2\n1\t2\n2\t3\n3\t3\n4\t3\n5\t4\n");
  weft_task_drop(W, t);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* ---- groups from C ---- */

static weft_state *probe_W;
static weft_group probed;

static int l_probe(lua_State *L) {
  (void)L;
  probed = weft_current_group(probe_W);
  return 0;
}

static void test_a_c_function_sees_its_callers_group_clock_and_rate(void **state) {
  (void)state;
  out o;
  weft_state *W = open_state(&o, 0);
  lua_State *L = weft_lua(W);
  probe_W = W;
  weft_push_api(W);
  lua_pushcfunction(L, l_probe);
  lua_setfield(L, -2, "probe");
  lua_pop(L, 1);
  weft_group root = weft_current_group(W); /* outside tasks: the root */
  assert_true(root.id != 0);
  assert_true(weft_group_rate(W, root) == 1.0);
  weft_task t = spawn_src(W, "local outer = group{time_scale = 0.5}\n"
                             "local inner = group{parent = outer, time_scale = 0.5}\n"
                             "inner:spawn(function() probe() wait(math.huge) end)\n"
                             "time_scale(2)\n"
                             "wait_frames(80)\n"
                             "outer:pause()\n"
                             "wait_frames(40)\n"
                             "outer:cancel()\n");
  steps(W, 1);
  weft_group g = probed;
  assert_true(g.id != 0 && g.id != root.id);
  assert_true(weft_group_rate(W, g) == 0.5); /* 2 * 0.5 * 0.5 */
  double t0 = weft_group_time(W, g);
  steps(W, 60);
  assert_true(fabs(weft_group_time(W, g) - t0 - 0.5) < 1e-9); /* a second at half speed */
  steps(W, 30);                                               /* paused at frame 80 */
  assert_true(weft_group_rate(W, g) == 0.0);
  t0 = weft_group_time(W, g);
  steps(W, 10);
  assert_true(weft_group_time(W, g) == t0);
  steps(W, 40); /* cancelled, the script ended: its handles go */
  lua_gc(L, LUA_GCCOLLECT);
  steps(W, 2);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_true(weft_group_rate(W, g) == -1.0);
  assert_true(weft_group_time(W, g) == -1.0);
  weft_task_drop(W, t);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_script_waits_on_a_future_completed_from_c),
      cmocka_unit_test(test_failure_from_c_reaches_the_script_unchanged),
      cmocka_unit_test(test_uncaught_failure_fails_the_task_and_is_reported_once),
      cmocka_unit_test(test_cancel_from_c_ends_the_waiting_task_cancelled),
      cmocka_unit_test(test_script_globals_are_exactly_the_allow_list),
      cmocka_unit_test(test_library_writes_stay_in_their_script),
      cmocka_unit_test(test_print_keeps_zero_bytes),
      cmocka_unit_test(test_close_runs_finalizers_under_the_budget),
      cmocka_unit_test(test_future_owned_by_c_survives_collection_until_completed),
      cmocka_unit_test(test_a_wait_after_completion_returns_at_once),
      cmocka_unit_test(test_custom_job_runs_on_a_worker_and_finishes_on_main),
      cmocka_unit_test(test_cancelled_job_future_skips_finish_and_frees),
      cmocka_unit_test(test_close_with_jobs_in_flight_is_clean),
      cmocka_unit_test(test_register_job_checks_its_arguments_and_limit),
      cmocka_unit_test(test_steady_frame_allocates_nothing),
      cmocka_unit_test(test_cost_table_keeps_the_costly_and_reads_each_charge),
      cmocka_unit_test(test_costs_with_no_budget_go_to_the_task_that_ran),
      cmocka_unit_test(test_a_spawn_statement_makes_no_handle),
      cmocka_unit_test(test_bad_completions_are_refused_and_leave_the_future_pending),
      cmocka_unit_test(test_spawn_without_a_function_fails_with_a_message),
      cmocka_unit_test(test_step_or_close_from_inside_a_task_is_refused),
      cmocka_unit_test(test_step_or_close_from_the_report_callback_is_refused),
      cmocka_unit_test(test_cancel_from_c_runs_cleanups_and_ends_the_task_cancelled),
      cmocka_unit_test(test_frame_budget_caps_resumes_and_the_rest_run_first_next_frame),
      cmocka_unit_test(test_a_c_function_sees_its_callers_group_clock_and_rate),
  };
  return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
