/* Two weft states on two threads at once, built for ThreadSanitizer (make
   tsan, tests/tsan/run.sh). Each runs runaways its watchdog must stop (a
   plain loop, one in a coroutine, in a pcall, in a coroutine inside a
   pcall, one that waits first, and a weft_call between frames); tasks
   that wait (a frame, a timer, a child task, work preempted inside a
   coroutine, jobs: read_file, find_path and a kind registered here, on
   weft's workers for one state and an engine's job system for the
   other); a profile for part of the run; and pauses long enough for the
   watchdogs to nap. Every stop goes through the one process-wide count
   (mk/lua/weft_luai.h), so each state's thread also sees the other's
   asks. Asserted: every runaway failed with "ran too long", the waiting
   tasks still run and made progress, nothing leaked; TSan asserts that no
   two threads touched the same memory unordered. */
#define _DEFAULT_SOURCE /* mkdtemp, usleep */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../../bindings/weft.h"

#define DT60 (1.0 / 60.0)
#define FRAMES 300            /* frames each state steps */
#define RUNAWAY_US 20000      /* 20 ms of script time: runaways die quickly */
#define RUNAWAY_EVERY 30      /* frames between two batches of runaways */
#define PROFILE_FROM 60       /* the first frame with the profile on */
#define PROFILE_TO 180        /* ...the first without */
#define NAP_AT 100            /* a frame after which the thread pauses */
#define NAP_AT2 200           /* ...and another */
#define NAP_US 150000         /* long enough for its watchdog to nap (64 idle ticks) */
#define MAX_RUNAWAYS 64       /* runaways a state starts, at most */
#define MAX_EXTRA_FRAMES 3000 /* after FRAMES: until every runaway ended */
#define DATA_LEN 4096         /* bytes of the file job("read_file") reads */

/* Lua's twin of mix() below: the script checks a job's result with it. */
#define LUA_MIX                                                                                    \
  "local function mix(x)\n"                                                                        \
  "  for i = 0, 63 do\n"                                                                           \
  "    x = x + i\n"                                                                                \
  "    x = x ~ (x >> 33); x = x * 0xff51afd7ed558ccd\n"                                            \
  "    x = x ~ (x >> 33); x = x * 0xc4ceb9fe1a85ec53\n"                                            \
  "    x = x ~ (x >> 33)\n"                                                                        \
  "  end\n"                                                                                        \
  "  return x\n"                                                                                   \
  "end\n"

/* The runaways, each on its own lines so the kill names one; probe.escaped
   counts code that ran on after one was killed (it must stay 0). */
static const char *const runaways[] = {
    "local n = 0\nwhile true do n = n + 1 end\n",
    "local co = coroutine.create(function()\n  while true do end\nend)\n"
    "coroutine.resume(co)\nprobe.escaped = probe.escaped + 1\n",
    "pcall(function()\n  while true do end\nend)\nprobe.escaped = probe.escaped + 1\n",
    "pcall(coroutine.wrap(function()\n  while true do end\nend))\n"
    "probe.escaped = probe.escaped + 1\n",
    "wait()\nlocal t = {}\nwhile true do t[1] = #t end\n",
};
#define NKINDS (sizeof runaways / sizeof runaways[0])

/* The tasks that wait; they run until the state closes. */
static const char waiters[] = LUA_MIX
    "spawn(function() while true do wait() probe.ticks = probe.ticks + 1 end end)\n"
    "spawn(function() while true do wait(0.05) probe.sleeps = probe.sleeps + 1 end end)\n"
    "spawn(function()\n"
    "  while true do\n"
    "    local t = spawn(function() wait(0.02) return 7 end)\n"
    "    assert(wait(t) == 7)\n"
    "    probe.children = probe.children + 1\n"
    "  end\n"
    "end)\n"
    "spawn(function()\n"
    "  while true do\n"
    "    local text = wait(job('read_file', 'data.txt'))\n"
    "    assert(#text == probe.data_len and text:sub(1, 4) == 'weft')\n"
    "    probe.reads = probe.reads + 1\n"
    "    local x = probe.reads * 1000003\n"
    "    assert(wait(job('mix', x)) == mix(x))\n"
    "    local path = wait(job('find_path', {'....', '.##.', '....'}, 1, 1, 4, 3))\n"
    "    assert(#path == 6 and path[6].x == 4 and path[6].y == 3)\n"
    "    probe.mixes = probe.mixes + 1\n"
    "  end\n"
    "end)\n"
    /* work past a slice inside a coroutine: preempted (not killed: a
       stretch is at most 6 ms of the process's processor time), goes on */
    "spawn(function()\n"
    "  local co = coroutine.wrap(function()\n"
    "    while true do\n"
    "      local e = os.clock() + 0.006 while os.clock() < e do end\n"
    "      coroutine.yield()\n"
    "    end\n"
    "  end)\n"
    "  while true do co() probe.slices = probe.slices + 1 wait() end\n"
    "end)\n"
    /* the C library under Lua's os, string and table, from both threads */
    "spawn(function()\n"
    "  while true do\n"
    "    local s = string.format('%5.2f %s %g', os.clock(), os.date('%Y-%m-%d %H:%M:%S'), 1.5)\n"
    "    local t = {} for i = 1, 50 do t[i] = (i * 7919) % 101 end table.sort(t)\n"
    "    assert(#s > 20 and t[1] <= t[50] and tostring(0.25) == '0.25')\n"
    "    probe.libs = probe.libs + 1\n"
    "    wait()\n"
    "  end\n"
    "end)\n"
    "while true do wait(math.huge) end\n";

/* ---- a job kind registered from C: mixes a number on a worker ---- */

typedef struct mixjob {
  lua_Integer in, out;
} mixjob;

static uint64_t mix(uint64_t x) {
  for (uint64_t i = 0; i < 64; i++) {
    x += i;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
  }
  return x;
}

static void *mix_prepare(lua_State *L, int first, int n, void *user) {
  (void)user;
  lua_Integer in = n >= 1 ? luaL_checkinteger(L, first) : 0;
  mixjob *j = malloc(sizeof *j);
  if (j) j->in = in;
  return j;
}
static void mix_run(void *data) {
  mixjob *j = data;
  j->out = (lua_Integer)mix((uint64_t)j->in);
}
static int mix_finish(lua_State *L, void *data) {
  lua_pushinteger(L, ((mixjob *)data)->out);
  return 1;
}
static void mix_free(void *data) { free(data); }

/* ---- an engine's job system (desc.job_submit): one thread of its own ---- */

#define ENGINE_CAP 64

typedef struct engine {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  void (*work[ENGINE_CAP])(void *arg);
  void *arg[ENGINE_CAP];
  int head, count, quit;
} engine;

static void *engine_main(void *p) {
  engine *e = p;
  pthread_mutex_lock(&e->mu);
  for (;;) {
    while (!e->quit && !e->count) pthread_cond_wait(&e->cv, &e->mu);
    if (!e->count) break; /* quit, and nothing is left */
    void (*work)(void *) = e->work[e->head];
    void *arg = e->arg[e->head];
    e->head = (e->head + 1) % ENGINE_CAP;
    e->count--;
    pthread_mutex_unlock(&e->mu);
    work(arg);
    pthread_mutex_lock(&e->mu);
  }
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

static void engine_submit(void *user, void (*work)(void *arg), void *arg) {
  engine *e = user;
  pthread_mutex_lock(&e->mu);
  if (e->count == ENGINE_CAP) { /* full: run it here, as weft allows */
    pthread_mutex_unlock(&e->mu);
    work(arg);
    return;
  }
  int at = (e->head + e->count) % ENGINE_CAP;
  e->work[at] = work;
  e->arg[at] = arg;
  e->count++;
  pthread_cond_signal(&e->cv);
  pthread_mutex_unlock(&e->mu);
}

static int engine_start(engine *e) {
  memset(e, 0, sizeof *e);
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  return pthread_create(&e->thread, NULL, engine_main, e);
}

static void engine_stop(engine *e) {
  pthread_mutex_lock(&e->mu);
  e->quit = 1;
  pthread_cond_signal(&e->cv);
  pthread_mutex_unlock(&e->mu);
  pthread_join(e->thread, NULL);
  pthread_cond_destroy(&e->cv);
  pthread_mutex_destroy(&e->mu);
}

/* ---- one side: a state on its own thread ---- */

typedef struct side {
  int index;
  const char *dir;          /* the assets root: data.txt */
  engine *jobs;             /* NULL: weft's own workers; else the engine's job system */
  uint32_t time_budget_us;  /* desc.time_budget_us (0: 5 ms) */
  pthread_barrier_t *start; /* both sides step at once */
  char fail[512];           /* the first thing that went wrong ("" if none) */
  int runaways, killed;     /* runaways started, ...that failed "ran too long" */
  int calls_killed;         /* weft_call runaways that returned "ran too long" */
  lua_Integer ticks, sleeps, children, reads, mixes, slices, libs, escaped;
  int waiting;             /* the waiting script still running at the end */
  int profiled;            /* weft_profile_start and _stop returned WEFT_OK (and it was written) */
  int leaked;              /* weft_close's count */
  int extra;               /* frames stepped after FRAMES for the last runaways */
  int reports;             /* error reports (the runaways') */
  char waiter_failed[256]; /* the first report of a waiting task ("" if none) */
} side;

static void quiet_log(void *user, const char *line, size_t len) {
  (void)user;
  (void)line;
  (void)len;
}
/* A report comes on the state's own thread: its side alone counts it. */
static void on_report(void *user, const char *msg, const char *trace) {
  side *s = user;
  (void)trace;
  s->reports++;
  if (strstr(msg, "waiters.lua") && !s->waiter_failed[0])
    snprintf(s->waiter_failed, sizeof s->waiter_failed, "%s", msg);
}

/* Records the first failure (the thread goes on, the main thread asserts). */
static void failf(side *s, const char *fmt, ...) {
  if (s->fail[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->fail, sizeof s->fail, fmt, ap);
  va_end(ap);
}

/* A number the scripts left in the api table's probe. */
static lua_Integer probe(weft_state *W, const char *field) {
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_getfield(L, -1, "probe");
  lua_getfield(L, -1, field);
  lua_Integer v = lua_tointeger(L, -1);
  lua_pop(L, 3);
  return v;
}

static weft_task start(side *s, weft_state *W, const char *name, const char *src) {
  weft_task t = {0};
  const char *err = NULL;
  if (weft_run_string(W, name, src, strlen(src), &t, &err) != WEFT_OK)
    failf(s, "%s: %s", name, err ? err : "?");
  return t;
}

/* A runaway called from C between frames: weft_call kills it. */
static void call_runaway(side *s, weft_state *W) {
  lua_State *L = weft_lua(W);
  if (luaL_loadstring(L, "local n = 0\nwhile true do n = n + 1 end\n") != LUA_OK) {
    failf(s, "call: %s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return;
  }
  int rc = weft_call(W, 0, 0);
  const char *e = rc == WEFT_ESCRIPT ? lua_tostring(L, -1) : NULL;
  if (e && strstr(e, "ran too long"))
    s->calls_killed++;
  else
    failf(s, "weft_call of a runaway: %d, %s", rc, e ? e : "(no message)");
  if (rc == WEFT_ESCRIPT) lua_pop(L, 1);
}

static weft_state *open_side(side *s) {
  weft_desc d = WEFT_DESC_INIT;
  d.runaway_us = RUNAWAY_US;
  d.time_budget_us = s->time_budget_us;
  if (s->jobs) {
    d.job_submit = engine_submit;
    d.job_submit_ud = s->jobs;
  }
  d.assets_root = s->dir;
  d.log = quiet_log;
  d.report = on_report;
  d.user = s;
  d.slow_task_us = UINT32_MAX; /* runaways are slow by design: no warnings */
  weft_state *W = weft_open(&d);
  if (!W) return NULL;
  weft_job_kind k = {
      sizeof(weft_job_kind), "mix", mix_prepare, mix_run, mix_finish, mix_free, NULL};
  if (weft_register_job(W, &k) != WEFT_OK) failf(s, "weft_register_job failed");
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_newtable(L);
  const char *const zero[] = {"ticks", "sleeps", "children", "reads",
                              "mixes", "slices", "libs",     "escaped"};
  for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
    lua_pushinteger(L, 0);
    lua_setfield(L, -2, zero[i]);
  }
  lua_pushinteger(L, DATA_LEN);
  lua_setfield(L, -2, "data_len");
  lua_setfield(L, -2, "probe");
  lua_pop(L, 1);
  return W;
}

static void *run_side(void *arg) {
  side *s = arg;
  weft_state *W = open_side(s); /* on this thread: its clocks are this thread's */
  pthread_barrier_wait(s->start);
  if (!W) {
    failf(s, "weft_open failed");
    return NULL;
  }
  weft_task waiting = start(s, W, "@waiters.lua", waiters);
  weft_task run[MAX_RUNAWAYS];
  char profile[512];
  snprintf(profile, sizeof profile, "%s/profile-%d.json", s->dir, s->index);
  for (int f = 0; f < FRAMES && !s->fail[0]; f++) {
    if (f % RUNAWAY_EVERY == s->index * 7) { /* the two sides' batches apart, and overlapping */
      for (size_t k = 0; k < NKINDS && s->runaways < MAX_RUNAWAYS; k++) {
        char name[32];
        snprintf(name, sizeof name, "@runaway%zu.lua", k);
        run[s->runaways++] = start(s, W, name, runaways[k]);
      }
      call_runaway(s, W);
    }
    if (f == PROFILE_FROM && weft_profile_start(W, profile) != WEFT_OK) failf(s, "profile_start");
    if (f == PROFILE_TO) {
      if (weft_profile_stop(W) != WEFT_OK)
        failf(s, "profile_stop");
      else
        s->profiled = 1;
    }
    if (f == NAP_AT || f == NAP_AT2) usleep(NAP_US);
    int rc = weft_step(W, DT60);
    if (rc != WEFT_OK) failf(s, "weft_step: %d at frame %d", rc, f);
  }
  /* The last batch may still run: step on until every runaway ended. */
  for (int i = 0; i < s->runaways && !s->fail[0]; i++) {
    while (weft_task_result(W, run[i]) == WEFT_RUNNING && s->extra < MAX_EXTRA_FRAMES) {
      if (weft_step(W, DT60) != WEFT_OK) failf(s, "weft_step failed");
      s->extra++;
    }
    int r = weft_task_result(W, run[i]);
    const char *e = weft_task_error(W, run[i]);
    if (r == WEFT_FAILED && e && strstr(e, "ran too long"))
      s->killed++;
    else
      failf(s, "runaway %d (kind %d): outcome %d, error %s", i, i % (int)NKINDS, r,
            e && *e ? e : "(none)");
    weft_task_drop(W, run[i]);
  }
  s->waiting = weft_task_result(W, waiting) == WEFT_RUNNING;
  if (!s->waiting) failf(s, "the waiting script ended: %s", weft_task_error(W, waiting));
  s->ticks = probe(W, "ticks");
  s->sleeps = probe(W, "sleeps");
  s->children = probe(W, "children");
  s->reads = probe(W, "reads");
  s->mixes = probe(W, "mixes");
  s->slices = probe(W, "slices");
  s->libs = probe(W, "libs");
  s->escaped = probe(W, "escaped");
  weft_task_drop(W, waiting);
  s->leaked = weft_close(W);
  return NULL;
}

static void write_data(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/data.txt", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  for (int i = 0; i < DATA_LEN; i++) fputc(i < 4 ? "weft"[i] : 'a' + i % 26, f);
  assert_int_equal(fclose(f), 0);
}

/* Removes dir's files (data.txt, the profiles) and dir. */
static void remove_dir(const char *dir) {
  const char *const files[] = {"data.txt", "profile-0.json", "profile-0.speedscope.json",
                               "profile-1.json", "profile-1.speedscope.json"};
  char path[512];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}

static void two_states_on_two_threads_stop_their_runaways_and_keep_the_rest(void **state) {
  (void)state;
  char dir[] = "/tmp/weft-tsan-XXXXXX";
  assert_non_null(mkdtemp(dir));
  write_data(dir);
  pthread_barrier_t start;
  assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
  side sides[2];
  pthread_t th[2];
  engine eng;
  assert_int_equal(engine_start(&eng), 0);
  for (int i = 0; i < 2; i++) {
    memset(&sides[i], 0, sizeof sides[i]);
    sides[i].index = i;
    sides[i].dir = dir;
    sides[i].start = &start;
    /* the second: 2 ms slices (stops come more often), the engine's jobs */
    sides[i].time_budget_us = i ? 2000 : 0;
    sides[i].jobs = i ? &eng : NULL;
    assert_int_equal(pthread_create(&th[i], NULL, run_side, &sides[i]), 0);
  }
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  pthread_barrier_destroy(&start);
  engine_stop(&eng);            /* weft_close waited for every work it handed out */
  for (int i = 0; i < 2; i++) { /* each profile was written */
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/profile-%d.json", dir, i);
    sides[i].profiled = sides[i].profiled && stat(path, &st) == 0 && st.st_size > 0;
  }
  remove_dir(dir);
  for (int i = 0; i < 2; i++) {
    side *s = &sides[i];
    printf("state %d: %d runaways killed, %d weft_calls killed, %d frames more for the last; "
           "ticks %lld, sleeps %lld, children %lld, read_file %lld, mix %lld, slices %lld, "
           "libs %lld; %d reports\n",
           i, s->killed, s->calls_killed, s->extra, (long long)s->ticks, (long long)s->sleeps,
           (long long)s->children, (long long)s->reads, (long long)s->mixes, (long long)s->slices,
           (long long)s->libs, s->reports);
    if (s->fail[0]) fail_msg("state %d: %s", i, s->fail);
    assert_int_equal(s->killed, s->runaways);
    assert_int_equal(s->runaways, (int)NKINDS * (FRAMES / RUNAWAY_EVERY));
    assert_int_equal(s->calls_killed, FRAMES / RUNAWAY_EVERY);
    assert_int_equal(s->escaped, 0);
    /* no waiting task failed beside the runaways */
    if (s->waiter_failed[0]) fail_msg("state %d: a waiting task failed: %s", i, s->waiter_failed);
    assert_true(s->waiting);
    assert_true(s->reports >= s->runaways);
    assert_true(s->profiled);
    /* the waiting tasks made progress: fewer rounds than frames, as a
       frame whose time is spent (runaways, a loaded machine) leaves the
       rest for the next, but never none */
    assert_true(s->ticks >= 10 && s->libs >= 10 && s->sleeps >= 5 && s->children >= 5);
    assert_true(s->reads >= 5 && s->mixes >= 5 && s->slices >= 5);
    assert_int_equal(s->leaked, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(two_states_on_two_threads_stop_their_runaways_and_keep_the_rest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
