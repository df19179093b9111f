/* Tests for watched budgets (the default): a script that runs too long
   is preempted and killed by the watchdog as a counted budget would do
   it, whatever it runs in (a coroutine, a pcall, a C function calling
   back), while a task's thread carries no count hook at all and no signal
   handler is ever installed. Each runaway here runs until stopped, so
   what is asserted is that it is stopped and where, never how fast.
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
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../bindings/weft.h"

#define DT60 (1.0 / 60.0)
#define MAX_FRAMES 2000 /* a stopped runaway ends in max_overruns frames */

#ifndef _WIN32 /* SIGURG and sigaction are POSIX's; Windows has neither */
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

static weft_state *open_with(uint32_t time_us, uint32_t max_overruns) {
  weft_desc d = {0};
  d.time_budget_us = time_us;
  d.max_overruns = max_overruns;
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

/* Steps until t ended; returns the frames it took. */
static int frames_until_done(weft_state *W, weft_task t) {
  for (int i = 1; i <= MAX_FRAMES; i++) {
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
    if (weft_task_result(W, t) != WEFT_RUNNING) return i;
  }
  fail_msg("the task was never stopped");
  return 0;
}

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
  weft_release(W, t);
  assert_int_equal(weft_close(W), 0);

  W = open_with(WEFT_BUDGET_COUNTED, 0);
  t = run(W, "probe.mask = hookmask()");
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_int_equal(num(W, "probe.mask"), LUA_MASKCOUNT);
  weft_release(W, t);
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
  weft_release(W, t);
  assert_int_equal(weft_record_stop(W), WEFT_OK);
  assert_int_equal(weft_close(W), 0);
  unlink(path);
}

static void a_runaway_task_is_killed_at_its_line_and_the_others_go_on(void **state) {
  (void)state;
  weft_state *W = open_with(0, 0);
  weft_task ticker = run(W, "probe.ticks = 0 while true do wait() probe.ticks = probe.ticks + 1 end");
  weft_task t = run(W, "wait()\nlocal n = 0\nwhile true do n = n + 1 end\n");
  int frames = frames_until_done(W, t);
  expect_error(W, t, "watched.lua:3:");
  assert_true(strstr(last_report, "watched.lua:3:") != NULL);
  assert_true(frames >= 3); /* preempted twice (max_overruns 3), killed at the third */
  assert_int_equal(num(W, "probe.ticks"), frames);
  assert_int_equal(weft_task_result(W, ticker), WEFT_RUNNING);
  weft_release(W, t);
  weft_release(W, ticker);
  assert_int_equal(weft_close(W), 0);
}

static void a_long_loop_is_preempted_and_finishes_frames_later(void **state) {
  (void)state;
  weft_state *W = open_with(1000, 100000); /* 1 ms; never killed */
  /* 3e7 iterations are ~6e7 instructions: far over 1 ms on any machine */
  weft_task t = run(W, "local n = 0 for i = 1, 3e7 do n = n + 1 end probe.done = n\n");
  assert_int_equal(weft_task_result(W, t), WEFT_RUNNING);
  int frames = frames_until_done(W, t);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_true(frames >= 1);
  assert_int_equal(num(W, "probe.done"), 30000000);
  weft_release(W, t);
  assert_int_equal(weft_close(W), 0);
}

static void no_coroutine_pcall_or_c_call_hides_a_runaway(void **state) {
  (void)state;
  weft_state *W = open_with(0, 0);
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
  weft_release(W, a);
  weft_release(W, b);
  weft_release(W, c);
  weft_release(W, d);
  weft_release(W, e);
  assert_int_equal(weft_close(W), 0);
}

/* Past its time a stretch is stopped only once it has also run a whole
   budget of instructions: work that is slow but not a runaway (here a
   task that spawns 100,000 tasks, far longer than 1 ms, in far fewer than
   1,000,000 of its own instructions) finishes as it would when counted,
   even with no overrun allowed. */
static void a_watched_budget_is_never_stricter_than_a_counted_one(void **state) {
  (void)state;
  weft_state *W = open_with(1000, 1);
  weft_task t = run(W, "for i = 1, 100000 do spawn(function() end) end probe.done = 1\n");
  if (weft_task_result(W, t) == WEFT_RUNNING) frames_until_done(W, t);
  if (weft_task_result(W, t) != WEFT_DONE)
    fail_msg("the spawning task was stopped: %s", weft_task_error(W, t));
  assert_int_equal(num(W, "probe.done"), 1);
  weft_release(W, t);
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
  weft_state *W = open_with(0, 0);
  expect_dispositions(&before, "at open");
  weft_task t = run(W, "wait()\nlocal n = 0\nwhile true do n = n + 1 end\n");
  for (int i = 0; i < MAX_FRAMES && weft_task_result(W, t) == WEFT_RUNNING; i++) {
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
    expect_dispositions(&before, "while a runaway runs");
  }
  expect_error(W, t, "watched.lua:3:");
  weft_release(W, t);
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
  weft_release(W, t);
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
      cmocka_unit_test(a_watched_budget_is_never_stricter_than_a_counted_one),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
