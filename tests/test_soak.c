/* Soak: 100,000 frames (dt 1/60) of a script that keeps a seeded
   pseudo-random mix going: spawns, cancels, errors, waits on numbers,
   futures, signals, channels, tasks and lists, first/all/timeout, futures
   resolved, failed and cancelled, groups created, paused and cancelled.
   Every 10,000 frames the driver stops everything (it cancels every other
   task), the test steps a second of frames, runs a full collection and
   records the Lua and host bytes and the live tasks. From frame 20,000 on,
   once every pool has seen the steady population, the memory after a
   collection must stay flat. */
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
#include <lua.h>

#include "../bindings/weft.h"

#define DT60 (1.0 / 60.0)

/* The sanitized build (make asan: -fsanitize=address,undefined, detected
   with __SANITIZE_ADDRESS__) runs about 2.5 times slower, some 20 s for the
   full soak, so it soaks the same 100,000 frames; should that grow too
   slow, scale FRAMES and SAMPLE down under that define. */
#define FRAMES 100000
#define SAMPLE 10000
#define STEADY (2 * SAMPLE) /* the sample the later ones are compared with */
#define QUIET_FRAMES 60     /* frames stepped with the driver stopped before a sample */
#define NSAMPLES (FRAMES / SAMPLE)
#define FLAT_FRACTION 0.10 /* allowed growth after STEADY: 10% ... */
#define FLAT_BYTES 8192    /* ... or a few KB, whichever is larger */

typedef struct sink {
  int reports; /* reports no handler took (there should be none) */
  char first[256];
} sink;

static void on_report(void *user, const char *msg, const char *trace) {
  sink *k = user;
  (void)trace;
  if (k->reports++ == 0) snprintf(k->first, sizeof k->first, "%s", msg);
}

static void on_log(void *user, const char *line, size_t len) {
  (void)len;
  (void)user;
  (void)line;
}

/* The soak script. It runs as one driver task that acts a few times a
   frame; every random choice comes from its own LCG so the run is the
   same everywhere. Counters go to S (the argument) for the test to read. */
static const char soak_lua[] =
    "local S = ...\n"
    "local seed = 20261122\n"
    "local function rnd(n)\n"
    "  seed = (seed * 1664525 + 1013904223) % 4294967296\n"
    "  return seed // 65536 % n + 1\n"
    "end\n"
    "for _, k in ipairs{'spawned', 'cancelled', 'thrown', 'reported', 'resolved', 'failed',\n"
    "  'fcancelled', 'fired', 'sent', 'received', 'groups', 'gcancelled', 'finished'} do S[k] = 0 "
    "end\n"
    "S.unexpected = false\n"
    "local MAXLIVE, MAXFUT, MAXGROUPS = 400, 60, 8\n"
    "local live, futures, groups = {}, {}, {}\n"
    "local sigs = {signal('a'), signal('b'), signal('c')}\n"
    "local chans = {channel(4), channel(), channel(0)}\n"
    "\n"
    "weft.on_error(function(err)\n"
    "  S.reported = S.reported + 1\n"
    "  local e = type(err) == 'table' and err.code or tostring(err)\n"
    "  if e ~= 'boom-table' and not tostring(e):find('boom', 1, true) and not S.unexpected then\n"
    "    S.unexpected = tostring(e)\n"
    "  end\n"
    "end)\n"
    "\n"
    "local function pick(t) if #t > 0 then local i = rnd(#t) return i, t[i] end end\n"
    "local function remove_at(t, i) t[i] = t[#t]; t[#t] = nil end\n"
    "local function chan() return chans[rnd(#chans)] end\n"
    "\n"
    "local worker\n"
    "local kinds = {\n"
    "  function() wait(rnd(240) / 60) end,\n"
    "  function() local _, f = pick(futures) if f then pcall(wait, f) else wait() end end,\n"
    "  function() wait(sigs[rnd(3)]) end,\n"
    "  function() chan():recv() S.received = S.received + 1 end,\n"
    "  function() chan():send(rnd(100)) S.sent = S.sent + 1 end,\n"
    "  function() wait{rnd(10) / 60, sigs[rnd(3)]} end,\n"
    "  function() local _, f = pick(futures) pcall(wait, first{f or 0.1, rnd(20) / 60}) end,\n"
    "  function() local _, f = pick(futures) pcall(wait, timeout(f or 0.2, rnd(20) / 60)) end,\n"
    "  function() local _, f = pick(futures) pcall(wait, all{0.05, f or 0.1}) end,\n"
    "  function() wait(rnd(5) / 60) S.thrown = S.thrown + 1 error('boom ' .. rnd(100)) end,\n"
    "  function() wait() S.thrown = S.thrown + 1 error({code = 'boom-table'}) end,\n"
    "  function()\n"
    "    local _ <close> = finally(function() S.finished = S.finished + 1 end)\n"
    "    local a = spawn(worker, 1)\n"
    "    local b = spawn(worker, 3)\n"
    "    pcall(wait, {a, b})\n"
    "  end,\n"
    "  function() local _, t = pick(live) if t then pcall(wait, t) end end,\n"
    "  function() wait_frames(rnd(4)) local t = {} for i = 1, rnd(50) do t[i] = ('x'):rep(i) end "
    "end,\n"
    "}\n"
    "worker = function(kind) return kinds[kind]() end\n"
    "\n"
    "local function spawn_one()\n"
    "  local kind = rnd(#kinds)\n"
    "  local t\n"
    "  if #groups > 0 and rnd(4) == 1 then\n"
    "    local _, g = pick(groups)\n"
    "    t = g:spawn(worker, kind)\n"
    "  else\n"
    "    t = spawn(worker, kind)\n"
    "  end\n"
    "  S.spawned = S.spawned + 1\n"
    "  if t.status == 'waiting' then live[#live + 1] = t end\n"
    "end\n"
    "\n"
    "local actions = {\n"
    "  function() for _ = 1, rnd(3) do if #live < MAXLIVE then spawn_one() end end end,\n"
    "  function() for _ = 1, rnd(3) do if #live < MAXLIVE then spawn_one() end end end,\n"
    "  function() local i, t = pick(live) if t then t:cancel() remove_at(live, i) S.cancelled = "
    "S.cancelled + 1 end end,\n"
    "  function() if #futures < MAXFUT then futures[#futures + 1] = future() end end,\n"
    "  function() local i, f = pick(futures) if f then f:resolve(rnd(9), 'x') remove_at(futures, "
    "i) S.resolved = S.resolved + 1 end end,\n"
    "  function() local i, f = pick(futures) if f then f:fail('nope') remove_at(futures, i) "
    "S.failed = S.failed + 1 end end,\n"
    "  function() local i, f = pick(futures) if f and rnd(3) == 1 then f:cancel() "
    "remove_at(futures, i) S.fcancelled = S.fcancelled + 1 end end,\n"
    "  function() sigs[rnd(3)]:fire(rnd(5)) S.fired = S.fired + 1 end,\n"
    "  function() local ch = chan() if ch:try_send(rnd(7)) then S.sent = S.sent + 1 end end,\n"
    "  function() if chan():try_recv() then S.received = S.received + 1 end end,\n"
    "  function()\n"
    "    if #groups < MAXGROUPS then\n"
    "      groups[#groups + 1] = group{name = 'g' .. rnd(100), time_scale = rnd(3) / 2}\n"
    "      S.groups = S.groups + 1\n"
    "    end\n"
    "  end,\n"
    "  function()\n"
    "    local i, g = pick(groups)\n"
    "    if g and rnd(3) == 1 then g:cancel() remove_at(groups, i) S.gcancelled = S.gcancelled + "
    "1\n"
    "    elseif g then if g.paused then g:resume() else g:pause() end end\n"
    "  end,\n"
    "}\n"
    "\n"
    "-- Before each sample: everything stops, so the collection measures what\n"
    "-- the host keeps, not the population of the moment.\n"
    "local function quiesce()\n"
    "  S.population = #weft.tasks()\n"
    "  local me = current()\n"
    "  for _, info in ipairs(weft.tasks()) do if info.task ~= me then info.task:cancel() end end\n"
    "  for _, g in ipairs(groups) do g:cancel() end\n"
    "  for _, f in ipairs(futures) do f:resolve() end\n"
    "  for _, ch in ipairs(chans) do while ch:try_recv() do end end\n"
    "  live, futures, groups = {}, {}, {}\n"
    "  while S.quiesce do wait() end\n"
    "end\n"
    "\n"
    "while true do\n"
    "  if S.quiesce then quiesce() end\n"
    "  for _ = 1, rnd(5) do if #live < MAXLIVE then spawn_one() end end\n"
    "  for _ = 1, rnd(5) do actions[rnd(#actions)]() end\n"
    "  -- forget finished workers (a few per frame keeps the list short)\n"
    "  for _ = 1, 8 do\n"
    "    local i, t = pick(live)\n"
    "    if t and t.status ~= 'waiting' then remove_at(live, i) end\n"
    "  end\n"
    "  -- paused groups hold their tasks; let none stay paused for long\n"
    "  if frame() % 120 == 0 then for _, g in ipairs(groups) do g:resume() end end\n"
    "  for _, ch in ipairs(chans) do while #ch > 8 do ch:try_recv() end end\n"
    "  S.live = #live\n"
    "  wait()\n"
    "end\n";

typedef struct sample {
  long frame;
  size_t lua_bytes, host_bytes;
  uint32_t tasks, errors;
  uint64_t allocs;
  uint32_t population; /* live tasks before the driver stopped them */
} sample;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static lua_Integer field(lua_State *L, int S, const char *name) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, S);
  lua_getfield(L, -1, name);
  lua_Integer v = lua_tointeger(L, -1);
  lua_pop(L, 2);
  return v;
}

static void set_flag(lua_State *L, int S, const char *name, int on) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, S);
  lua_pushboolean(L, on);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

static void check_flat(const char *what, size_t steady, size_t last) {
  size_t allowed = (size_t)((double)steady * FLAT_FRACTION);
  if (allowed < FLAT_BYTES) allowed = FLAT_BYTES;
  if (last > steady + allowed) {
    print_error("%s grew from %zu bytes at frame %d to %zu at frame %d (allowed %zu)\n", what,
                steady, STEADY, last, FRAMES, allowed);
    fail();
  }
}

/* Prints the samples and what the soak script did. */
static void print_samples(lua_State *L, int S, const sample *samples, int n, double secs) {
  printf("soak: %d frames in %.1f s (%.1f us/frame)%s\n", FRAMES, secs, secs * 1e6 / FRAMES,
#if defined(__SANITIZE_ADDRESS__)
         " [ASan + UBSan build]"
#else
         ""
#endif
  );
  printf("  %8s %11s %10s %10s %7s %8s %12s\n", "frame", "population", "lua KB", "host KB", "tasks",
         "errors", "allocs");
  for (int i = 0; i < n; i++)
    printf("  %8ld %11u %10.1f %10.1f %7u %8u %12llu\n", samples[i].frame, samples[i].population,
           (double)samples[i].lua_bytes / 1024, (double)samples[i].host_bytes / 1024,
           samples[i].tasks, samples[i].errors, (unsigned long long)samples[i].allocs);
  printf("  (population: live tasks when the sample began; then every task but the driver was\n"
         "   cancelled, %d frames stepped, and two full collections run; tasks: what was left)\n",
         QUIET_FRAMES);
  printf("  spawned %lld, cancelled %lld, thrown %lld, reported %lld, futures resolved %lld /"
         " failed %lld / cancelled %lld, signals fired %lld, channel sends %lld / receives %lld,"
         " groups %lld (cancelled %lld), cleanups %lld\n",
         (long long)field(L, S, "spawned"), (long long)field(L, S, "cancelled"),
         (long long)field(L, S, "thrown"), (long long)field(L, S, "reported"),
         (long long)field(L, S, "resolved"), (long long)field(L, S, "failed"),
         (long long)field(L, S, "fcancelled"), (long long)field(L, S, "fired"),
         (long long)field(L, S, "sent"), (long long)field(L, S, "received"),
         (long long)field(L, S, "groups"), (long long)field(L, S, "gcancelled"),
         (long long)field(L, S, "finished"));
  fflush(stdout);
}

static void memory_stays_flat_over_100000_frames_of_random_work(void **state) {
  (void)state;
  sink k = {0, ""};
  weft_desc d = WEFT_DESC_INIT;
  d.report = on_report;
  d.log = on_log;
  d.time_budget_us = WEFT_BUDGET_COUNTED; /* the same run every time */
  d.user = &k;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  lua_State *L = weft_lua(W);

  /* the driver: soak_lua(S) as a task whose globals fall through to the API */
  lua_newtable(L);
  int S = luaL_ref(L, LUA_REGISTRYINDEX);
  assert_int_equal(luaL_loadbufferx(L, soak_lua, sizeof soak_lua - 1, "=soak", "t"), LUA_OK);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  weft_push_api(W);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_setupvalue(L, -2, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, S);
  weft_task driver = weft_spawn(W, 1);
  assert_true(driver.id != 0);

  sample samples[NSAMPLES];
  int n = 0;
  double t0 = now_s();
  for (long f = 1; f <= FRAMES; f++) {
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
    if (f % SAMPLE == 0) {
      /* stop the driver, let timers of the combinators it left run out */
      set_flag(L, S, "quiesce", 1);
      for (int i = 0; i < QUIET_FRAMES; i++) assert_int_equal(weft_step(W, DT60), WEFT_OK);
      lua_gc(L, LUA_GCCOLLECT, 0);
      lua_gc(L, LUA_GCCOLLECT, 0); /* a second pass frees what the first finalized */
      weft_stats st = WEFT_STATS_INIT;
      weft_get_stats(W, &st);
      samples[n].frame = f;
      samples[n].lua_bytes = st.lua_bytes;
      samples[n].host_bytes = st.host_bytes;
      samples[n].tasks = st.tasks;
      samples[n].errors = st.errors;
      samples[n].allocs = st.allocs;
      samples[n].population = (uint32_t)field(L, S, "population");
      n++;
      set_flag(L, S, "quiesce", 0);
      if (weft_task_result(W, driver) != WEFT_RUNNING) break;
    }
  }
  double secs = now_s() - t0;

  print_samples(L, S, samples, n, secs);

  /* the driver ran the whole soak */
  if (weft_task_result(W, driver) != WEFT_RUNNING)
    fail_msg("the driver ended: %s", weft_task_error(W, driver));
  assert_int_equal(n, NSAMPLES);
  /* every error was one the script threw on purpose, each reported once
     through weft.on_error (none fell through to desc.report) */
  lua_rawgeti(L, LUA_REGISTRYINDEX, S);
  lua_getfield(L, -1, "unexpected");
  if (lua_toboolean(L, -1)) fail_msg("unexpected error: %s", lua_tostring(L, -1));
  lua_pop(L, 2);
  if (k.reports) fail_msg("%d report(s) reached desc.report, first: %s", k.reports, k.first);
  assert_true(field(L, S, "thrown") > 1000);
  assert_int_equal(field(L, S, "reported"), field(L, S, "thrown"));
  /* the population was really churning */
  assert_true(field(L, S, "spawned") > FRAMES / 2);
  assert_true(field(L, S, "cancelled") > FRAMES / 50);

  /* each sample stopped everything: only the driver was left */
  for (int i = 0; i < n; i++) assert_int_equal(samples[i].tasks, 1);
  /* flat after the warm-up */
  const sample *steady = &samples[STEADY / SAMPLE - 1];
  const sample *last = &samples[n - 1];
  assert_int_equal(steady->frame, STEADY);
  check_flat("Lua memory after a full collection", steady->lua_bytes, last->lua_bytes);
  check_flat("host memory", steady->host_bytes, last->host_bytes);

  weft_task_drop(W, driver);
  luaL_unref(L, LUA_REGISTRYINDEX, S);
  assert_int_equal(weft_close(W), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(memory_stays_flat_over_100000_frames_of_random_work),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
