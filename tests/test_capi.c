/* Tests of what an engine does to scripts' objects from C (weft.h):
   signals it fires, channels it feeds, groups it makes and pauses, a
   task's results, and script functions it calls under the budget.
   Frames are stepped on a virtual clock; output comes through desc.log. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <weft.h>

#include "scratch_dir.h"

#define DT (1.0 / 60.0)

typedef struct out {
  char log[4096];
  size_t len;
  int reports;
} out;

static void on_log(void *user, const char *line, size_t len) {
  out *o = user;
  if (o->len + len + 2 < sizeof o->log) {
    memcpy(o->log + o->len, line, len);
    o->len += len;
    o->log[o->len++] = '\n';
    o->log[o->len] = 0;
  }
}

static void on_report(void *user, const char *msg, const char *trace) {
  (void)msg;
  (void)trace;
  ((out *)user)->reports++;
}

static weft_state *open_state(out *o) {
  weft_desc d = WEFT_DESC_INIT;
  d.log = on_log;
  d.report = on_report;
  d.user = o;
  d.time_budget_us = WEFT_BUDGET_COUNTED;
  d.instr_budget = 100000;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  return W;
}

/* Runs src as a task with the value on top of the stack as global `x`. */
static weft_task run_with(weft_state *W, const char *src) {
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_insert(L, -2);
  lua_setfield(L, -2, "x");
  lua_pop(L, 1);
  weft_task t;
  const char *err = NULL;
  assert_int_equal(weft_run_string(W, "=t", src, strlen(src), &t, &err), WEFT_OK);
  weft_push_api(W); /* only that script's globals keep it */
  lua_pushnil(L);
  lua_setfield(L, -2, "x");
  lua_pop(L, 1);
  return t;
}

static void steps(weft_state *W, int n) {
  for (int i = 0; i < n; i++) assert_int_equal(weft_step(W, DT), WEFT_OK);
}

/* An engine event as a signal: a task waiting on it gets the values C
   fires; a connection runs for each fire; a dropped signal is stale. */
static void test_signal_fired_from_c_wakes_its_waiters_with_values(void **state) {
  (void)state;
  out o = {0};
  weft_state *W = open_state(&o);
  lua_State *L = weft_lua(W);
  weft_signal s = weft_signal_new(W);
  assert_true(s.id != 0);
  weft_push_signal(W, L, s);
  weft_task t = run_with(W, "x:connect(function(a) print('heard', a) end)\n"
                            "local a, b = wait(x)\nprint('woke', a, b)\nreturn a + b");
  steps(W, 2);
  assert_int_equal(weft_task_result(W, t), WEFT_RUNNING);
  lua_pushinteger(L, 20);
  lua_pushinteger(L, 22);
  assert_int_equal(weft_signal_fire(W, s, 2), WEFT_OK);
  assert_int_equal(lua_gettop(L), 0);
  steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_non_null(strstr(o.log, "woke\t20\t22\n"));
  assert_non_null(strstr(o.log, "heard\t20\n"));
  assert_int_equal(weft_task_push_results(W, t), 1);
  assert_int_equal(lua_tointeger(L, -1), 42);
  lua_pop(L, 1);
  assert_int_equal(weft_signal_fire(W, s, 5), WEFT_EINVAL); /* more than the stack holds */
  weft_signal_drop(W, s);
  lua_pushinteger(L, 1);
  assert_int_equal(weft_signal_fire(W, s, 1), WEFT_ESTALE);
  assert_int_equal(lua_gettop(L), 1); /* nothing popped */
  lua_pop(L, 1);
  weft_push_signal(W, L, s);
  assert_true(lua_isnil(L, -1));
  lua_pop(L, 1);
  weft_task_drop(W, t);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* An engine's queue as a channel: a bounded one refuses when full (the
   value stays with C), a receiver takes what C sent, and a closed one
   refuses saying so. */
static void test_channel_fed_from_c(void **state) {
  (void)state;
  out o = {0};
  weft_state *W = open_state(&o);
  lua_State *L = weft_lua(W);
  weft_channel ch = weft_channel_new(W, 1);
  assert_true(ch.id != 0);
  lua_pushliteral(L, "first");
  assert_int_equal(weft_channel_send(W, ch), WEFT_OK);
  lua_pushliteral(L, "second");
  assert_int_equal(weft_channel_send(W, ch), WEFT_ELIMIT);
  assert_string_equal(lua_tostring(L, -1), "second");
  lua_pop(L, 1);
  weft_push_channel(W, L, ch);
  weft_task t = run_with(W, "local got = {}\n"
                            "while true do local v = x:recv() if v == nil then break end "
                            "got[#got + 1] = v end\n"
                            "return table.concat(got, ',')");
  lua_pushliteral(L, "third");
  assert_int_equal(weft_channel_send(W, ch), WEFT_OK);
  steps(W, 1);
  assert_int_equal(weft_channel_close(W, ch), WEFT_OK);
  lua_pushliteral(L, "late");
  assert_int_equal(weft_channel_send(W, ch), WEFT_ECLOSED);
  lua_pop(L, 1);
  steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_int_equal(weft_task_push_results(W, t), 1);
  assert_string_equal(lua_tostring(L, -1), "first,third");
  lua_pop(L, 1);
  weft_channel_drop(W, ch);
  lua_pushliteral(L, "x");
  assert_int_equal(weft_channel_send(W, ch), WEFT_ESTALE);
  lua_pop(L, 1);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
}

/* A group C makes (the UI's, a cutscene's): its tasks stop while C
   pauses it, run at its time scale, and end when C cancels it. */
static void test_group_made_and_driven_from_c(void **state) {
  (void)state;
  out o = {0};
  weft_state *W = open_state(&o);
  lua_State *L = weft_lua(W);
  weft_group root = {0};
  weft_group ui = weft_group_new(W, root, "ui");
  assert_true(ui.id != 0);
  weft_push_group(W, L, ui);
  weft_task t =
      run_with(W, "assert(x.name == 'ui')\n"
                  "x:spawn(function() local _ <close> = finally(function() print('closed') end)\n"
                  "  while true do wait(1) print('tick', x.now) end end)\n"
                  "return x");
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_int_equal(weft_task_push_results(W, t), 1); /* the same handle */
  weft_push_group(W, L, ui);
  assert_true(lua_rawequal(L, -1, -2));
  lua_pop(L, 2);
  steps(W, 60);
  assert_non_null(strstr(o.log, "tick\t1.0\n"));
  assert_int_equal(weft_group_pause(W, ui), WEFT_OK);
  assert_true(weft_group_rate(W, ui) == 0.0);
  steps(W, 120);
  assert_null(strstr(o.log, "tick\t2.0"));
  assert_int_equal(weft_group_resume(W, ui), WEFT_OK);
  assert_int_equal(weft_group_set_time_scale(W, ui, 2.0), WEFT_OK);
  assert_int_equal(weft_group_set_time_scale(W, ui, -1.0), WEFT_EINVAL);
  steps(W, 30); /* half a second of frames, a second of its time */
  assert_non_null(strstr(o.log, "tick\t2.0\n"));
  assert_int_equal(weft_group_cancel(W, ui), WEFT_OK);
  assert_non_null(strstr(o.log, "closed\n"));
  weft_group_drop(W, ui);
  weft_task_drop(W, t);
  lua_gc(L, LUA_GCCOLLECT);
  assert_int_equal(weft_group_pause(W, ui), WEFT_ESTALE);
  assert_true(weft_group_time(W, ui) == -1.0);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* A group's script time from C: what its tasks cost, those that ended
   too, summed into the groups around it; the root's (id 0) is every
   task's; a group that is gone is stale. Burns processor time, as the
   cost clock is the scripts thread's processor time (watched budgets). */
static void test_group_cost_read_from_c(void **state) {
  (void)state;
  out o = {0};
  weft_desc d = WEFT_DESC_INIT;
  d.log = on_log;
  d.report = on_report;
  d.user = &o;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  lua_State *L = weft_lua(W);
  weft_group root = {0};
  weft_group ai = weft_group_new(W, root, "ai");
  weft_group one = weft_group_new(W, ai, "one");
  weft_push_group(W, L, one);
  /* 4 ms a frame, in tasks that end at once (under the 5 ms a resume may
     run; a processor clock may tick as coarsely as 16 ms: Windows') */
  weft_task t = run_with(W, "for i = 1, 40 do\n"
                            "  x:spawn(function() local e = os.clock() + 0.004\n"
                            "    while os.clock() < e do end end)\n"
                            "  wait()\n"
                            "end");
  /* 42 frames on an idle machine; the frame's time (wall clock) holds
     tasks over to later frames on a busy one: when, never what */
  for (int i = 0; i < 4000 && weft_task_result(W, t) == WEFT_RUNNING; i++) steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_cost c1, c2, c0;
  assert_int_equal(weft_get_group_cost(W, one, &c1), WEFT_OK);
  /* a worst frame of at least half the burn; an average above nothing
     (a processor clock as coarse as Windows' 16 ms charges in lumps, and
     on a busy machine the frames after the last lump let it decay) */
  assert_true(c1.worst_ms >= 2.0 && c1.avg_ms > 0);
  assert_int_equal(weft_get_group_cost(W, ai, &c2), WEFT_OK);
  /* the averages are floats rolled at different times (and contracted
     into fused multiply-adds on some processors): equal to a rounding */
  assert_true(c2.avg_ms >= c1.avg_ms * 0.999 && c2.worst_ms >= c1.worst_ms);
  assert_int_equal(weft_get_group_cost(W, root, &c0), WEFT_OK);
  assert_true(c0.worst_ms >= c1.worst_ms);
  weft_task_cost tc;
  assert_int_equal(weft_get_task_cost(W, t, &tc), WEFT_ESTALE); /* it ended */
  weft_group_drop(W, one);
  weft_task_drop(W, t);
  lua_gc(L, LUA_GCCOLLECT);
  assert_int_equal(weft_get_group_cost(W, one, &c1), WEFT_ESTALE);
  assert_true(c1.avg_ms == 0 && c1.worst_ms == 0);
  assert_int_equal(weft_get_group_cost(W, ai, &c2), WEFT_OK); /* keeps what it was charged */
  assert_true(c2.worst_ms >= 2.0);
  weft_group_drop(W, ai);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* A C function that takes burn_ms of the processor's time (clock()) and
   runs no instruction of Lua. */
static double burn_ms;
static int l_burn(lua_State *L) {
  (void)L;
  clock_t end = clock() + (clock_t)(burn_ms * CLOCKS_PER_SEC / 1000);
  while (clock() < end) {
  }
  return 0;
}

/* One run of test_counted_costs_are_instructions: each figure after 20
   frames, those of tasks a to e and of the group d spawns into, and the
   least and most b was charged in a frame after its first; with a
   profile written to profile when it is not NULL. */
static void counted_costs(weft_task_cost got[6], double *bmin, double *bmax, const char *profile) {
  out o = {0};
  weft_desc d = WEFT_DESC_INIT;
  d.log = on_log;
  d.report = on_report;
  d.user = &o;
  d.time_budget_us = WEFT_BUDGET_COUNTED; /* 1,000,000 instructions a slice */
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  lua_State *L = weft_lua(W);
  lua_pushcfunction(L, l_burn); /* the last task's x */
  weft_group kids = weft_group_new(W, (weft_group){0}, "kids");
  weft_task t[5];
  lua_pushnil(L);
  t[0] = run_with(W, "while true do for i = 1, 100000 do end wait() end");
  lua_pushnil(L);
  t[1] = run_with(W, "while true do for i = 1, 200000 do end wait() end");
  lua_pushnil(L);
  t[2] = run_with(W, "local co = coroutine.wrap(function()\n"
                     "  while true do for i = 1, 200000 do end coroutine.yield() end end)\n"
                     "while true do co() wait() end");
  weft_push_group(W, L, kids);
  t[3] = run_with(W, "while true do\n"
                     "  for i = 1, 100000 do end\n"
                     "  x:spawn(function() for i = 1, 200000 do end end)\n"
                     "  wait()\n"
                     "end");
  t[4] = run_with(W, "while true do x() wait() end");
  *bmin = 1e9, *bmax = 0;
  if (profile) assert_int_equal(weft_profile_start(W, profile), WEFT_OK);
  for (int i = 0; i < 20; i++) { /* b's count runs out every fifth frame or so */
    steps(W, 1);
    assert_int_equal(weft_get_task_cost(W, t[1], &got[1]), WEFT_OK);
    if (i == 0) continue;
    if (got[1].frame_ms < *bmin) *bmin = got[1].frame_ms;
    if (got[1].frame_ms > *bmax) *bmax = got[1].frame_ms;
  }
  for (int i = 0; i < 5; i++) {
    assert_int_equal(weft_task_result(W, t[i]), WEFT_RUNNING);
    assert_int_equal(weft_get_task_cost(W, t[i], &got[i]), WEFT_OK);
    weft_task_drop(W, t[i]);
  }
  assert_int_equal(weft_get_group_cost(W, kids, &got[5]), WEFT_OK);
  if (profile) assert_int_equal(weft_profile_stop(W), WEFT_OK);
  weft_group_drop(W, kids);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* Counted (tests, recordings, replays), a task's script time is its
   instructions, WEFT_INSTR_PER_US a microsecond: twice the loop costs
   twice as much; a coroutine's work is the task's that runs it; a task
   spawned and run at once costs its group, not its spawner, which is
   charged its own work before the spawn; the time a
   C function takes is not counted; and every figure is the same in
   every run, however long the C function took and with a profile on. */
static void test_counted_costs_are_instructions(void **state) {
  (void)state;
  weft_task_cost a[6], b[6];
  double lo, hi, lo2, hi2;
  burn_ms = 0;
  counted_costs(a, &lo, &hi, NULL);
  char dir[] = "/tmp/weft-capi-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/p.json", dir);
  burn_ms = 3;
  counted_costs(b, &lo2, &hi2, path);
  rm_tree(dir);
  assert_true(lo == lo2 && hi == hi2);
  for (int i = 0; i < 6; i++) {
    assert_true(a[i].frame_ms == b[i].frame_ms);
    assert_true(a[i].avg_ms == b[i].avg_ms);
    assert_true(a[i].worst_ms == b[i].worst_ms);
  }
  /* 100,000 loop steps are 100,000 instructions: half a millisecond */
  assert_true(a[0].frame_ms > 0.45 && a[0].frame_ms < 0.55);
  assert_true(a[1].frame_ms > a[0].frame_ms * 1.9 && a[1].frame_ms < a[0].frame_ms * 2.1);
  assert_true(lo > 0.95 && hi < 1.05); /* every frame's, its count run out in it or not */
  assert_true(a[2].frame_ms > a[1].frame_ms * 0.95 && a[2].frame_ms < a[1].frame_ms * 1.05);
  assert_true(a[3].frame_ms > a[0].frame_ms * 0.99 && a[3].frame_ms < a[0].frame_ms * 1.01);
  assert_true(a[5].frame_ms > a[1].frame_ms * 0.95 && a[5].frame_ms < a[1].frame_ms * 1.05);
  assert_true(a[4].frame_ms < 0.05 && a[4].worst_ms < 0.05);
}

/* What the logger hears: SLOW_TASK lines with their file and line, and
   TASK_GROWTH lines the same way. */
typedef struct heard {
  int slow;
  char msg[512], file[64];
  uint32_t line;
  int growth;
  char grew[512], grew_file[64];
  uint32_t grew_line;
} heard;

static void on_logger(void *user, const char *tag, uint32_t level, uint32_t id, const char *msg,
                      const char *file, uint32_t line) {
  heard *h = user;
  (void)tag;
  (void)level;
  if (id == WEFT_LOG_TASK_GROWTH) {
    h->growth++;
    snprintf(h->grew, sizeof h->grew, "%s", msg);
    snprintf(h->grew_file, sizeof h->grew_file, "%s", file ? file : "");
    h->grew_line = line;
  }
  if (id != WEFT_LOG_SLOW_TASK) return;
  h->slow++;
  snprintf(h->msg, sizeof h->msg, "%s", msg);
  snprintf(h->file, sizeof h->file, "%s", file ? file : "");
  h->line = line;
}

static weft_state *open_heard(heard *h, uint32_t slice_us) {
  weft_desc d = WEFT_DESC_INIT;
  d.logger = on_logger;
  d.logger_ud = h;
  d.slow_task_us = 2000;
  d.time_budget_us = slice_us;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  return W;
}

static void run_to_end(weft_state *W, weft_task t) {
  for (int i = 0; i < 4000 && weft_task_result(W, t) == WEFT_RUNNING; i++) steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_drop(W, t);
}

/* A task that takes more than desc.slow_task_us of script time between
   two of its waits is named once, with the line it waits at (the
   logger's file and line); a long stretch the budget preempts (a set-up
   loop) goes a slice a frame by design and is not. Processor time
   (os.clock) and a wide margin: a busy machine changes nothing. */
static void test_slow_task_is_named_once_at_its_line_and_a_setup_loop_never(void **state) {
  (void)state;
  heard h = {0};
  weft_state *W = open_heard(&h, 200000); /* 200 ms slices: never preempted here */
  lua_pushnil(weft_lua(W));
  weft_task t =
      run_with(W, "for i = 1, 5 do local e = os.clock() + 0.02 while os.clock() < e do end\n"
                  "  wait()\n"
                  "end");
  run_to_end(W, t);
  assert_int_equal(h.slow, 1);
  assert_string_equal(h.file, "t");
  assert_int_equal(h.line, 2);
  assert_non_null(strstr(h.msg, "ms of script time between two waits"));
  assert_int_equal(weft_close(W), 0);

  heard h2 = {0};
  W = open_heard(&h2, 1000); /* 1 ms slices: preempted every frame */
  lua_pushnil(weft_lua(W));
  t = run_with(W, "local e = os.clock() + 0.05 while os.clock() < e do end\n"
                  "for i = 1, 3 do wait() end");
  run_to_end(W, t);
  assert_int_equal(h2.slow, 0);
  assert_int_equal(weft_close(W), 0);

  /* One long stretch whose last slice alone is over the threshold is
     still one slow stretch, not two. */
  heard h3 = {0};
  W = open_heard(&h3, 20000); /* 20 ms slices: 50 ms is two of them and a 10 ms end */
  lua_pushnil(weft_lua(W));
  t = run_with(W, "wait()\nlocal e = os.clock() + 0.05 while os.clock() < e do end\n"
                  "for i = 1, 3 do wait() end");
  run_to_end(W, t);
  assert_int_equal(h3.slow, 0);
  assert_int_equal(weft_close(W), 0);
}

/* A helper that spawns a task a frame and never ends them is named once,
   at its spawn's file and line, with the chain of spawns above it; a
   burst of tasks from one line that then stays (a set-up loop) is not. */
static void test_growing_spawn_site_is_named_once_and_a_burst_never(void **state) {
  (void)state;
  heard h = {0};
  weft_state *W = open_heard(&h, 0);
  lua_pushnil(weft_lua(W));
  weft_task t = run_with(W, "local keep = {}\n"
                            "for i = 1, 300 do keep[i] = spawn(wait, math.huge) end\n"
                            "local function helper() spawn(wait, math.huge) end\n"
                            "spawn(function()\n"
                            "  for f = 1, 60 * 14 do helper() wait() end\n"
                            "end)\n"
                            "wait(15)");
  run_to_end(W, t);
  assert_int_equal(h.growth, 1);
  assert_string_equal(h.grew_file, "t");
  assert_int_equal(h.grew_line, 3);
  assert_non_null(strstr(h.grew, "spawned at t:3 and growing"));
  assert_non_null(strstr(h.grew, ", spawned at t:4"));
  assert_int_equal(weft_close(W), 0);
}

/* A task's results from C: several values and nils in place; none for a
   task that failed or still runs. */
static void test_task_results_read_from_c(void **state) {
  (void)state;
  out o = {0};
  weft_state *W = open_state(&o);
  lua_State *L = weft_lua(W);
  weft_task t;
  static const char three[] = "return 1, nil, 'three'";
  assert_int_equal(weft_run_string(W, "=r", three, sizeof three - 1, &t, NULL), WEFT_OK);
  assert_int_equal(weft_task_push_results(W, t), 3);
  assert_int_equal(lua_tointeger(L, -3), 1);
  assert_true(lua_isnil(L, -2));
  assert_string_equal(lua_tostring(L, -1), "three");
  lua_pop(L, 3);
  weft_task_drop(W, t);
  static const char later[] = "wait(1) return 1";
  assert_int_equal(weft_run_string(W, "=w", later, sizeof later - 1, &t, NULL), WEFT_OK);
  assert_int_equal(weft_task_push_results(W, t), WEFT_ESTATE);
  weft_task_drop(W, t);
  assert_int_equal(weft_task_push_results(W, t), WEFT_ESTALE);
  static const char bad[] = "error('no')";
  assert_int_equal(weft_run_string(W, "=f", bad, sizeof bad - 1, &t, NULL), WEFT_OK);
  assert_int_equal(weft_task_push_results(W, t), WEFT_ESTATE);
  weft_task_drop(W, t);
  assert_int_equal(lua_gettop(L), 0);
  assert_int_equal(weft_close(W), 0);
}

/* A script function called from C returns its results; a runaway one
   fails with the budget's error instead of hanging the engine; one that
   waits fails saying why; no function is a clear refusal. */
static void test_call_runs_a_script_function_under_the_budget(void **state) {
  (void)state;
  out o = {0};
  weft_state *W = open_state(&o);
  lua_State *L = weft_lua(W);
  weft_task g;
  /* each script has its own globals: define and read in one chunk */
  static const char both[] = "function add(a, b) return a + b, 'sum' end\n"
                             "function spin() while true do end end\n"
                             "function nap() wait(1) end\n"
                             "return add, spin, nap";
  assert_int_equal(weft_run_string(W, "=both", both, sizeof both - 1, &g, NULL), WEFT_OK);
  assert_int_equal(weft_task_push_results(W, g), 3);
  int add = lua_absindex(L, -3), spin = lua_absindex(L, -2), nap = lua_absindex(L, -1);
  lua_pushvalue(L, add);
  lua_pushinteger(L, 40);
  lua_pushinteger(L, 2);
  assert_int_equal(weft_call(W, 2, LUA_MULTRET), WEFT_OK);
  assert_int_equal(lua_gettop(L), nap + 2);
  assert_int_equal(lua_tointeger(L, -2), 42);
  assert_string_equal(lua_tostring(L, -1), "sum");
  lua_pop(L, 2);
  lua_pushvalue(L, spin);
  assert_int_equal(weft_call(W, 0, 0), WEFT_ESCRIPT);
  assert_non_null(strstr(lua_tostring(L, -1), "too long"));
  lua_pop(L, 1);
  lua_pushvalue(L, nap);
  assert_int_equal(weft_call(W, 0, 0), WEFT_ESCRIPT);
  assert_non_null(strstr(lua_tostring(L, -1), "weft_call"));
  lua_pop(L, 1);
  lua_pushinteger(L, 7);
  assert_int_equal(weft_call(W, 0, 0), WEFT_EINVAL);  /* not a function */
  assert_int_equal(weft_call(W, 10, 0), WEFT_EINVAL); /* fewer values than that */
  assert_int_equal(lua_gettop(L), nap + 1);
  lua_settop(L, 0);
  weft_task_drop(W, g);
  steps(W, 1);
  assert_int_equal(weft_close(W), 0);
}

/* ---- the engine's job system ---- */

typedef struct engine_jobs {
  void (*work[8])(void *);
  void *arg[8];
  int n, submitted;
} engine_jobs;

static void engine_submit(void *ud, void (*work)(void *), void *arg) {
  engine_jobs *e = ud;
  assert_true(e->n < 8);
  e->work[e->n] = work;
  e->arg[e->n++] = arg;
  e->submitted++;
}

/* Runs what was handed to it, as its worker would. */
static void engine_run(engine_jobs *e) {
  for (int i = 0; i < e->n; i++) e->work[i](e->arg[i]);
  e->n = 0;
}

/* With desc.job_submit, a script's job runs on the engine's job system,
   not on a thread of weft's, and its result reaches the script. */
static void test_jobs_run_on_the_engines_job_system(void **state) {
  (void)state;
  out o = {0};
  engine_jobs e = {0};
  weft_desc d = WEFT_DESC_INIT;
  d.log = on_log;
  d.report = on_report;
  d.user = &o;
  d.job_submit = engine_submit;
  d.job_submit_ud = &e;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  static const char src[] =
      "local p = wait(job('find_path', {'....', '.##.', '....'}, 1, 1, 4, 3))\n"
      "print('steps', #p)";
  weft_task t;
  assert_int_equal(weft_run_string(W, "=j", src, sizeof src - 1, &t, NULL), WEFT_OK);
  assert_int_equal(e.submitted, 1);
  steps(W, 3);
  assert_int_equal(weft_task_result(W, t), WEFT_RUNNING); /* the engine has not run it yet */
  engine_run(&e);
  steps(W, 1);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_non_null(strstr(o.log, "steps\t6\n"));
  weft_task_drop(W, t);
  assert_int_equal(o.reports, 0);
  assert_int_equal(weft_close(W), 0);
}

/* A task C spawns into a group belongs to it: it stops while the group
   is paused, ends cancelled with it, and C reads its outcome. */
static void test_group_spawn_from_c_puts_the_task_in_the_group(void **state) {
  (void)state;
  out o = {0};
  weft_state *W = open_state(&o);
  lua_State *L = weft_lua(W);
  weft_group g = weft_group_new(W, (weft_group){0}, "enemy");
  /* (a chunk C loads reads the script API as its globals) */
  assert_int_equal(luaL_loadstring(L, "local n = ... for i = 1, n do wait() end return n * 2"),
                   LUA_OK);
  weft_push_api(W);
  lua_setupvalue(L, -2, 1);
  lua_pushinteger(L, 3);
  weft_task t = weft_group_spawn(W, g, 1);
  assert_true(t.id != 0);
  assert_int_equal(lua_gettop(L), 0);
  assert_int_equal(weft_group_pause(W, g), WEFT_OK);
  steps(W, 10);
  assert_int_equal(weft_task_result(W, t), WEFT_RUNNING); /* held by its group */
  assert_int_equal(weft_group_resume(W, g), WEFT_OK);
  steps(W, 4);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_int_equal(weft_task_push_results(W, t), 1);
  assert_int_equal(lua_tointeger(L, -1), 6);
  lua_pop(L, 1);
  weft_task_drop(W, t);
  /* cancelled with its group */
  assert_int_equal(luaL_loadstring(L, "wait(math.huge)"), LUA_OK);
  weft_push_api(W);
  lua_setupvalue(L, -2, 1);
  t = weft_group_spawn(W, g, 0);
  assert_int_equal(weft_group_cancel(W, g), WEFT_OK);
  assert_int_equal(weft_task_result(W, t), WEFT_CANCELLED);
  weft_task_drop(W, t);
  /* a gone group, a missing function: id 0 and why */
  weft_group_drop(W, g);
  lua_gc(L, LUA_GCCOLLECT);
  assert_int_equal(luaL_loadstring(L, "return 1"), LUA_OK);
  t = weft_group_spawn(W, g, 0);
  assert_int_equal(t.id, 0);
  assert_non_null(strstr(weft_task_error(W, t), "group is gone"));
  assert_int_equal(weft_group_spawn(W, (weft_group){0}, 2).id, 0);
  assert_int_equal(lua_gettop(L), 0);
  assert_int_equal(weft_close(W), 0);
}

static weft_task seen_current, kept_task;
/* x.whoami(): what C sees of the task calling it, as its handle. */
static int l_whoami(lua_State *L) {
  weft_state *W = *(weft_state **)lua_touserdata(L, lua_upvalueindex(1));
  seen_current = weft_current_task(W);
  weft_task_push(W, L, seen_current);
  return 1;
}
/* x.keep(t): C takes and holds the task of a script's handle. */
static int l_keep(lua_State *L) {
  weft_state *W = *(weft_state **)lua_touserdata(L, lua_upvalueindex(1));
  kept_task = weft_task_from_lua(W, L, 1);
  lua_pushboolean(L, kept_task.id != 0);
  return 1;
}

/* A script's task handle and C's weft_task are one task both ways: the
   handle C pushes for weft_current_task is current(), and a handle a
   script gives C is held, its outcome readable after it ended. */
static void test_task_handles_cross_between_c_and_scripts(void **state) {
  (void)state;
  out o = {0};
  weft_state *W = open_state(&o);
  lua_State *L = weft_lua(W);
  assert_int_equal(weft_current_task(W).id, 0); /* between frames */
  lua_newtable(L);
  *(weft_state **)lua_newuserdata(L, sizeof W) = W;
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, l_whoami, 1);
  lua_setfield(L, -3, "whoami");
  lua_pushcclosure(L, l_keep, 1);
  lua_setfield(L, -2, "keep");
  lua_pushvalue(L, -1); /* for the second script */
  weft_task t =
      run_with(W, "local me = x.whoami()\n"
                  "print(me == current(), me.status)\n"
                  "print(x.keep(spawn(function() wait(0.5) error('boom') end)), x.keep(42))\n");
  assert_true(seen_current.id == t.id && t.id != 0);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_drop(W, t);
  assert_string_equal(o.log, "true\trunning\ntrue\tfalse\n");
  assert_true(kept_task.id == 0); /* 42: no task handle */
  /* a worker C holds: its failure stays readable after it ended */
  t = run_with(W, "worker = spawn(function() wait(0.5) error('boom') end)\n"
                  "assert(x.keep(worker))\n");
  weft_task_drop(W, t);
  weft_task w = kept_task;
  assert_true(w.id != 0);
  assert_int_equal(weft_task_result(W, w), WEFT_RUNNING);
  steps(W, 40);
  assert_int_equal(weft_task_result(W, w), WEFT_FAILED);
  assert_non_null(strstr(weft_task_error(W, w), "boom"));
  /* and C pushes its handle back: the script's own value */
  weft_task_push(W, L, w);
  assert_int_equal(lua_getfield(L, -1, "status"), LUA_TSTRING);
  assert_string_equal(lua_tostring(L, -1), "failed");
  lua_pop(L, 2);
  weft_task_drop(W, w);
  weft_task_push(W, L, w); /* released and ended: nil */
  assert_true(lua_isnil(L, -1));
  lua_pop(L, 1);
  assert_int_equal(weft_task_result(W, w), WEFT_ESTALE);
  assert_int_equal(weft_close(W), 0);
}

/* weft_require gives C a module's table, its functions called with
   weft_call; a missing module is WEFT_ESCRIPT with the error. */
static void test_require_reaches_a_modules_functions(void **state) {
  (void)state;
  char dir[] = "/tmp/weft-capi-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/ai", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/ai/patrol.lua", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("local M = {}\nfunction M.alert(n) return 'alert ' .. n end\nreturn M\n", f);
  fclose(f);
  out o = {0};
  weft_desc d = WEFT_DESC_INIT;
  d.scripts_root = dir;
  d.log = on_log;
  d.user = &o;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  lua_State *L = weft_lua(W);
  assert_int_equal(weft_require(W, "ai.patrol"), WEFT_OK);
  assert_true(lua_istable(L, -1));
  lua_getfield(L, -1, "alert");
  lua_pushinteger(L, 7);
  assert_int_equal(weft_call(W, 1, 1), WEFT_OK);
  assert_string_equal(lua_tostring(L, -1), "alert 7");
  lua_pop(L, 1);
  assert_int_equal(weft_require(W, "ai.patrol"), WEFT_OK); /* the same, loaded once */
  assert_true(lua_rawequal(L, -1, -2));
  lua_pop(L, 2);
  assert_int_equal(weft_require(W, "ai.nothing"), WEFT_ESCRIPT);
  assert_non_null(strstr(lua_tostring(L, -1), "ai.nothing"));
  lua_pop(L, 1);
  assert_int_equal(weft_require(W, NULL), WEFT_EINVAL);
  assert_int_equal(lua_gettop(L), 0);
  assert_int_equal(weft_close(W), 0);
  rm_tree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_signal_fired_from_c_wakes_its_waiters_with_values),
      cmocka_unit_test(test_channel_fed_from_c),
      cmocka_unit_test(test_group_made_and_driven_from_c),
      cmocka_unit_test(test_group_cost_read_from_c),
      cmocka_unit_test(test_counted_costs_are_instructions),
      cmocka_unit_test(test_slow_task_is_named_once_at_its_line_and_a_setup_loop_never),
      cmocka_unit_test(test_growing_spawn_site_is_named_once_and_a_burst_never),
      cmocka_unit_test(test_task_results_read_from_c),
      cmocka_unit_test(test_call_runs_a_script_function_under_the_budget),
      cmocka_unit_test(test_jobs_run_on_the_engines_job_system),
      cmocka_unit_test(test_group_spawn_from_c_puts_the_task_in_the_group),
      cmocka_unit_test(test_task_handles_cross_between_c_and_scripts),
      cmocka_unit_test(test_require_reaches_a_modules_functions),
  };
  return cmocka_run_group_tests_name("capi", tests, NULL, NULL);
}
