/* Tests for watched budgets (the default): a script that runs too long
   is preempted and killed by the watchdog as a counted budget would do
   it, whatever it runs in (a coroutine, a pcall, a C function calling
   back), while a task's thread carries no count hook at all and no signal
   handler is ever installed; a frame whose time is spent leaves the
   rest of its tasks for the next. Each runaway here runs until stopped,
   so what is asserted is that it is stopped and where, never how fast.
   Most use a runaway limit of 50 ms of script time (RUNAWAY) so the
   suite stays short; one runs to the default.
   Counted budgets stay what tests and recordings use. */
#define _DEFAULT_SOURCE /* NSIG */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../bindings/weft.h"

#define DT60 (1.0 / 60.0)
#define MAX_FRAMES 2000 /* a runaway is killed after desc.runaway_us: ~200 frames at most */
#define RUNAWAY 50000   /* 50 ms of script time */
#define NEVER 10000000  /* 10 s: work that must finish is never near it */

#ifndef _WIN32                        /* SIGURG and sigaction are POSIX's; Windows has neither */
static volatile sig_atomic_t foreign; /* SIGURGs the embedder's handler got */
static void on_foreign(int sig) {
  (void)sig;
  foreign++;
}
#endif

static char last_report[1024];
static void on_report(void *user, const char *msg, const char *trace) {
  (void)user;
  (void)trace;
  snprintf(last_report, sizeof last_report, "%s", msg);
}
static void quiet_log(void *user, const char *line, size_t len) {
  (void)user;
  (void)line;
  (void)len;
}

/* The hook mask of the thread calling it: what a task's code pays per
   instruction. */
static int l_hookmask(lua_State *L) {
  lua_pushinteger(L, lua_gethookmask(L));
  return 1;
}

static weft_state *open_with(uint32_t time_us, uint32_t runaway_us) {
  weft_desc d = WEFT_DESC_INIT;
  d.time_budget_us = time_us;
  d.runaway_us = runaway_us;
  d.report = on_report;
  d.log = quiet_log;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_pushcfunction(L, l_hookmask);
  lua_setfield(L, -2, "hookmask");
  lua_newtable(L);
  lua_setfield(L, -2, "probe"); /* what scripts leave for the test to read */
  lua_pop(L, 1);
  return W;
}

static weft_task run(weft_state *W, const char *src) {
  weft_task t;
  const char *err = NULL;
  if (weft_run_string(W, "@watched.lua", src, strlen(src), &t, &err) != WEFT_OK)
    fail_msg("run: %s", err ? err : "?");
  return t;
}

/* Steps until t ended, at most max frames; returns the frames it took. */
static int frames_within(weft_state *W, weft_task t, int max) {
  for (int i = 1; i <= max; i++) {
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
    if (weft_task_result(W, t) != WEFT_RUNNING) return i;
  }
  fail_msg("the task was never stopped");
  return 0;
}
static int frames_until_done(weft_state *W, weft_task t) { return frames_within(W, t, MAX_FRAMES); }

/* Evaluates a Lua expression over the API table; returns it as integer. */
static lua_Integer num(weft_state *W, const char *expr) {
  lua_State *L = weft_lua(W);
  char src[256];
  snprintf(src, sizeof src, "return %s", expr);
  assert_int_equal(luaL_loadstring(L, src), LUA_OK);
  weft_push_api(W);
  lua_setupvalue(L, -2, 1);
  assert_int_equal(lua_pcall(L, 0, 1, 0), LUA_OK);
  lua_Integer v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

static void expect_error(weft_state *W, weft_task t, const char *where) {
  assert_int_equal(weft_task_result(W, t), WEFT_FAILED);
  const char *e = weft_task_error(W, t);
  if (!e || !strstr(e, where) || !strstr(e, "ran too long"))
    fail_msg("error %s, expected %s ... ran too long", e ? e : "(none)", where);
}

static void a_task_thread_carries_no_count_hook_unless_budgets_count(void **state) {
  (void)state;
  weft_state *W = open_with(0, 0);
  weft_task t = run(W, "probe.mask = hookmask() wait() probe.mask2 = hookmask()");
  assert_int_equal(frames_until_done(W, t), 1);
  assert_int_equal(num(W, "probe.mask"), 0);
  assert_int_equal(num(W, "probe.mask2"), 0);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);

  W = open_with(WEFT_BUDGET_COUNTED, 0);
  t = run(W, "probe.mask = hookmask()");
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_int_equal(num(W, "probe.mask"), LUA_MASKCOUNT);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

static void a_recording_counts_instructions(void **state) {
  (void)state;
  char path[] = "/tmp/weft-watch-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  weft_state *W = open_with(0, 0);
  assert_int_equal(weft_record(W, path, NULL, 0), WEFT_OK);
  weft_task t = run(W, "probe.mask = hookmask()");
  assert_int_equal(num(W, "probe.mask"), LUA_MASKCOUNT);
  weft_task_drop(W, t);
  assert_int_equal(weft_record_stop(W), WEFT_OK);
  assert_int_equal(weft_close(W), 0);
  unlink(path);
}

static void a_runaway_task_is_killed_at_its_line_and_the_others_go_on(void **state) {
  (void)state;
  weft_state *W = open_with(0, 0);
  weft_task ticker =
      run(W, "probe.ticks = 0 while true do wait() probe.ticks = probe.ticks + 1 end");
  weft_task t = run(W, "wait()\nlocal n = 0\nwhile true do n = n + 1 end\n");
  int frames = frames_until_done(W, t);
  expect_error(W, t, "watched.lua:3:");
  assert_true(strstr(last_report, "watched.lua:3:") != NULL);
  /* preempted at every slice (5 ms) until it has run a second: killed then */
  assert_true(frames >= 3);
  /* the ticker ran every frame: on a busy machine the runaway's slice may
     spend a frame's time (wall clock), and the ticker then runs first in
     the next frame, one behind */
  lua_Integer ticks = num(W, "probe.ticks");
  assert_true(ticks >= frames - 1 && ticks <= frames);
  assert_int_equal(weft_task_result(W, ticker), WEFT_RUNNING);
  weft_task_drop(W, t);
  weft_task_drop(W, ticker);
  assert_int_equal(weft_close(W), 0);
}

static void a_long_loop_is_preempted_and_finishes_frames_later(void **state) {
  (void)state;
  weft_state *W = open_with(1000, NEVER); /* 1 ms slices; never killed */
  /* 3e7 iterations are ~6e7 instructions: far over 1 ms on any machine */
  weft_task t = run(W, "local n = 0 for i = 1, 3e7 do n = n + 1 end probe.done = n\n");
  assert_int_equal(weft_task_result(W, t), WEFT_RUNNING);
  int frames = frames_until_done(W, t);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_true(frames >= 1);
  assert_int_equal(num(W, "probe.done"), 30000000);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

static void no_coroutine_pcall_or_c_call_hides_a_runaway(void **state) {
  (void)state;
  weft_state *W = open_with(0, RUNAWAY);
  weft_task a = run(W, "local c = coroutine.wrap(function()\n while true do end\nend)\nc()\n");
  weft_task b = run(W, "while true do\n pcall(function() while true do end end)\nend\n");
  weft_task c = run(W, "table.sort({3, 2, 1}, function(x, y)\n while true do end\nend)\n");
  weft_task d = run(W, "string.gsub('abc', '.', function()\n while true do end\nend)\n");
  /* each spawn is a short stretch of its own: the loop is still one */
  weft_task e = run(W, "local n = 0\nwhile true do\n n = n + 1 spawn(function() end)\nend\n");
  frames_until_done(W, a);
  frames_until_done(W, b);
  frames_until_done(W, c);
  frames_until_done(W, d);
  frames_until_done(W, e);
  expect_error(W, a, "watched.lua:2:");
  expect_error(W, b, "watched.lua:2:");
  expect_error(W, c, "watched.lua:2:");
  expect_error(W, d, "watched.lua:2:");
  expect_error(W, e, "watched.lua:");
  weft_task_drop(W, a);
  weft_task_drop(W, b);
  weft_task_drop(W, c);
  weft_task_drop(W, d);
  weft_task_drop(W, e);
  assert_int_equal(weft_close(W), 0);
}

/* A state with the given time budget, instruction budget, runaway limit
   and frame time (0s: defaults). */
static weft_state *open_full(uint32_t time_us, uint32_t instr, uint32_t runaway_us,
                             uint32_t frame_us) {
  weft_desc d = WEFT_DESC_INIT;
  d.time_budget_us = time_us;
  d.instr_budget = instr;
  d.runaway_us = runaway_us;
  d.frame_time_budget_us = frame_us;
  d.report = on_report;
  d.log = quiet_log;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  weft_push_api(W);
  lua_newtable(weft_lua(W));
  lua_setfield(weft_lua(W), -2, "probe");
  lua_pop(weft_lua(W), 1);
  return W;
}

/* Evaluates a Lua expression over the API table into buf. */
static const char *str(weft_state *W, const char *expr, char *buf, size_t n) {
  lua_State *L = weft_lua(W);
  char src[256];
  snprintf(src, sizeof src, "return tostring(%s)", expr);
  assert_int_equal(luaL_loadstring(L, src), LUA_OK);
  weft_push_api(W);
  lua_setupvalue(L, -2, 1);
  assert_int_equal(lua_pcall(L, 0, 1, 0), LUA_OK);
  snprintf(buf, n, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  return buf;
}

/* Past its time a stretch is stopped at once, also where it loops on
   engine calls (the instruction budget, here 100,000,000, is no grace:
   a loop given it would run some ten million times more). A runaway
   limit of 1 us kills it at its first stop. */
static void a_stop_is_prompt_in_a_loop_of_engine_calls(void **state) {
  (void)state;
  weft_state *W = open_full(1000, 100000000, 1, 0);
  weft_task t = run(W, "local s = signal() probe.n = 0\n"
                       "while true do s:fire() probe.n = probe.n + 1 end\n");
  if (weft_task_result(W, t) == WEFT_RUNNING) frames_until_done(W, t);
  expect_error(W, t, "watched.lua:2:");
  lua_Integer n = num(W, "probe.n");
  if (n >= 3000000) fail_msg("the loop ran %lld times past its time", (long long)n);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* Slow engine work that is not a runaway (100,000 spawns, far over 1 ms)
   is preempted and goes on next frame. */
static void slow_engine_work_is_preempted_and_finishes_later(void **state) {
  (void)state;
  weft_state *W = open_full(1000, 0, NEVER, 0);
  weft_task t = run(W, "for i = 1, 100000 do spawn(function() end) end probe.done = 1\n");
  /* a millisecond of spawns a frame: ~100 frames here, ~2,500 under
     ThreadSanitizer; what counts is that it ends, never killed */
  if (weft_task_result(W, t) == WEFT_RUNNING) frames_within(W, t, 50 * MAX_FRAMES);
  if (weft_task_result(W, t) != WEFT_DONE)
    fail_msg("the spawning task was stopped: %s", weft_task_error(W, t));
  assert_int_equal(num(W, "probe.done"), 1);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* The engine's own slow work calling back into a script, as a renderer
   drawing an overlay does: `engine(fn)` spins in C, calling fn after
   each half millisecond of its processor time, 40 times, 20 ms in all
   (where a task cannot yield). */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static int l_engine(lua_State *L) {
  for (int i = 0; i < 40; i++) { /* 40 x 0.5 ms of this thread's processor time */
    double next = cpu_s() + 0.0005;
    while (cpu_s() < next) {
    }
    lua_pushvalue(L, 1);
    lua_call(L, 0, 0);
  }
  return 0;
}

/* A stop that lands inside such a call back does not kill the task: it
   yields once its own code can, and goes on next frame. */
static void a_stop_inside_the_engines_call_back_preempts_not_kills(void **state) {
  (void)state;
  weft_state *W = open_full(1000, 0, NEVER, 0);
  weft_push_api(W);
  lua_pushcfunction(weft_lua(W), l_engine);
  lua_setfield(weft_lua(W), -2, "engine");
  lua_pop(weft_lua(W), 1);
  weft_task t = run(W, "probe.calls = 0\n"
                       "engine(function() probe.calls = probe.calls + 1 end)\n"
                       "probe.done = 1\n");
  if (weft_task_result(W, t) == WEFT_RUNNING) frames_until_done(W, t);
  if (weft_task_result(W, t) != WEFT_DONE)
    fail_msg("the task was stopped: %s", weft_task_error(W, t));
  assert_int_equal(num(W, "probe.done"), 1);
  assert_int_equal(num(W, "probe.calls"), 40);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* Eight tasks looping on engine calls without waiting: every one is
   killed at its line, and the other tasks go on (the figures, frame
   times included, are in `make stress`). */
static void eight_runaways_on_engine_calls_die_and_every_frame_goes_on(void **state) {
  (void)state;
  weft_state *W = open_full(0, 0, RUNAWAY, 0);
  weft_task ticker =
      run(W, "probe.ticks = 0 while true do wait() probe.ticks = probe.ticks + 1 end");
  weft_task r[8];
  for (int i = 0; i < 8; i++)
    r[i] = run(
        W,
        "wait()\nlocal s = signal()\nwhile true do s:fire() s:connect(print):disconnect() end\n");
  int frames = 0, left = 8;
  while (left && frames < MAX_FRAMES) {
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
    frames++;
    left = 0;
    for (int i = 0; i < 8; i++) left += weft_task_result(W, r[i]) == WEFT_RUNNING;
  }
  assert_int_equal(left, 0);
  for (int i = 0; i < 8; i++) {
    expect_error(W, r[i], "watched.lua:3:");
    weft_task_drop(W, r[i]);
  }
  /* The ticker took its turns meanwhile (a frame out of time leaves the
     rest for the next), and ticks every frame once they are gone. */
  lua_Integer ticks = num(W, "probe.ticks");
  assert_true(ticks >= 1 && ticks <= frames);
  for (int i = 0; i < 5; i++) assert_int_equal(weft_step(W, DT60), WEFT_OK);
  assert_true(num(W, "probe.ticks") >= ticks + 4);
  assert_int_equal(weft_task_result(W, ticker), WEFT_RUNNING);
  weft_task_drop(W, ticker);
  assert_int_equal(weft_close(W), 0);
}

/* A signal's listeners each run as a task of their own, started one
   after the other by fire (C): once the firing stretch's time is spent,
   the listeners not yet started begin stopped, for the frames after,
   rather than all running inside the one fire. */
static void listeners_past_the_firing_stretchs_time_run_in_later_frames(void **state) {
  (void)state;
  weft_state *W = open_full(0, 0, 0, 0);
  weft_task t = run(W, "wait()\n"
                       "probe.heard = 0\n"
                       "local s = signal()\n"
                       "for i = 1, 2000 do s:connect(function()\n"
                       "  local e = os.clock() + 0.0001 while os.clock() < e do end\n"
                       "  probe.heard = probe.heard + 1 end) end\n"
                       "s:fire()\n"
                       "probe.fired = 1\n");
  assert_int_equal(weft_step(W, DT60), WEFT_OK); /* 2000 x 0.1 ms: far over 5 ms */
  lua_Integer heard = num(W, "probe.heard");
  /* about 5 ms of them, fewer on a busy machine (the slice is wall
     time): not all 200 ms in the one fire */
  assert_true(heard < 2000);
  int frames = 1;
  while (num(W, "probe.heard") < 2000 && frames < MAX_FRAMES) {
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
    frames++;
  }
  assert_int_equal(num(W, "probe.heard"), 2000); /* every listener ran, later */
  assert_true(frames > 1);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* A runaway stopped inside weft's own Lua (the module system's note of a
   g:spawn, called from C) is named at the script's line. */
static void a_kill_inside_weft_lua_names_the_scripts_line(void **state) {
  (void)state;
  weft_state *W = open_with(0, RUNAWAY);
  weft_task t = run(W, "wait()\nlocal g = group{}\n"
                       "while true do g:spawn(function() wait(1e9) end) end\n");
  frames_until_done(W, t);
  expect_error(W, t, "watched.lua:3:");
  assert_null(strstr(weft_task_error(W, t), "[weft"));
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* A frame whose time is spent starts no more tasks: those left ready run
   first next frame, so the tasks keep their order. Six tasks of 2 ms a
   frame each against a 1 ms frame: frames run fewer than all six. */
static void a_frame_out_of_time_leaves_the_rest_for_next_frame_in_order(void **state) {
  (void)state;
  /* 1 s slices: a 2 ms burn is never preempted, even on a busy machine,
     where it may take tens of ms of wall time */
  weft_state *W = open_full(1000000, 0, 0, 1000);
  weft_task t[6];
  run(W, "probe.seq = '' probe.per = {}");
  for (int i = 0; i < 6; i++) {
    char src[400];
    snprintf(src, sizeof src,
             "wait()\nwhile true do\n"
             " local t0 = os.clock() while os.clock() - t0 < 0.002 do end\n"
             " probe.seq = probe.seq .. '%d'\n"
             " probe.per[frame()] = (probe.per[frame()] or 0) + 1\n"
             " wait()\nend\n",
             i + 1);
    t[i] = run(W, src);
  }
  for (int f = 0; f < 40; f++) assert_int_equal(weft_step(W, DT60), WEFT_OK);
  char seq[512], fewest[32];
  str(W, "probe.seq", seq, sizeof seq);
  assert_true(strlen(seq) >= 12);
  for (size_t i = 0; seq[i]; i++)
    if (seq[i] != (char)('1' + i % 6)) fail_msg("tasks ran out of order: %s", seq);
  /* A frame may run all six when the watchdog's thread got no processor
     in time (a loaded machine); not every frame does. */
  str(W,
      "(function() local m = 99 for _, n in pairs(probe.per) do m = math.min(m, n) end "
      "return m end)()",
      fewest, sizeof fewest);
  if (atoi(fewest) >= 6) fail_msg("every frame ran all six tasks: the frame's time was not kept");
  for (int i = 0; i < 6; i++) {
    assert_int_equal(weft_task_result(W, t[i]), WEFT_RUNNING);
    weft_task_drop(W, t[i]);
  }
  assert_int_equal(weft_close(W), 0);
}

#ifndef _WIN32
/* Every signal's disposition (handler, flags), to compare. */
typedef struct dispositions {
  struct sigaction sa[NSIG];
} dispositions;

static void take_dispositions(dispositions *d) {
  memset(d, 0, sizeof *d);
  for (int sig = 1; sig < NSIG; sig++) sigaction(sig, NULL, &d->sa[sig]);
}

static void expect_dispositions(const dispositions *before, const char *when) {
  dispositions now;
  take_dispositions(&now);
  for (int sig = 1; sig < NSIG; sig++)
    if (now.sa[sig].sa_handler != before->sa[sig].sa_handler ||
        now.sa[sig].sa_flags != before->sa[sig].sa_flags)
      fail_msg("signal %d's handler changed %s", sig, when);
}

/* weft installs no signal handler, ever: not at open, not while the
   watchdog stops a runaway, not at close. */
static void no_signal_handler_is_installed_at_any_point(void **state) {
  (void)state;
  dispositions before;
  take_dispositions(&before);
  weft_state *W = open_with(0, RUNAWAY);
  expect_dispositions(&before, "at open");
  weft_task t = run(W, "wait()\nlocal n = 0\nwhile true do n = n + 1 end\n");
  for (int i = 0; i < MAX_FRAMES && weft_task_result(W, t) == WEFT_RUNNING; i++) {
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
    expect_dispositions(&before, "while a runaway runs");
  }
  expect_error(W, t, "watched.lua:3:");
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
  expect_dispositions(&before, "at close");
}

/* A SIGURG the embedder receives reaches its own handler (weft has none)
   and stops nothing. */
static void a_sigurg_goes_to_the_embedders_handler(void **state) {
  (void)state;
  weft_state *W = open_with(0, 0);
  weft_task t = run(W, "probe.n = 0 while true do wait() probe.n = probe.n + 1 end");
  foreign = 0;
  for (int i = 0; i < 5; i++) {
    raise(SIGURG);
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
  }
  assert_int_equal(foreign, 5);
  assert_int_equal(num(W, "probe.n"), 5);
  assert_int_equal(weft_task_result(W, t), WEFT_RUNNING);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}
#endif

int main(void) {
#ifndef _WIN32
  /* The embedder's own handler, installed before any weft state. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_foreign;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGURG, &sa, NULL);
  alarm(300); /* a runaway the watchdog missed fails the run, not hangs it */
#endif
  const struct CMUnitTest tests[] = {
#ifndef _WIN32
      cmocka_unit_test(no_signal_handler_is_installed_at_any_point),
      cmocka_unit_test(a_sigurg_goes_to_the_embedders_handler),
#endif
      cmocka_unit_test(a_task_thread_carries_no_count_hook_unless_budgets_count),
      cmocka_unit_test(a_recording_counts_instructions),
      cmocka_unit_test(a_runaway_task_is_killed_at_its_line_and_the_others_go_on),
      cmocka_unit_test(a_long_loop_is_preempted_and_finishes_frames_later),
      cmocka_unit_test(no_coroutine_pcall_or_c_call_hides_a_runaway),
      cmocka_unit_test(a_stop_is_prompt_in_a_loop_of_engine_calls),
      cmocka_unit_test(slow_engine_work_is_preempted_and_finishes_later),
      cmocka_unit_test(a_stop_inside_the_engines_call_back_preempts_not_kills),
      cmocka_unit_test(eight_runaways_on_engine_calls_die_and_every_frame_goes_on),
      cmocka_unit_test(listeners_past_the_firing_stretchs_time_run_in_later_frames),
      cmocka_unit_test(a_kill_inside_weft_lua_names_the_scripts_line),
      cmocka_unit_test(a_frame_out_of_time_leaves_the_rest_for_next_frame_in_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
