/* An engine's embedding: its own allocator for every byte weft takes,
   its own loader for every script, its own logger for everything weft
   says. Linked with --wrap for the C library's allocator (Makefile), so
   a block weft takes from malloc instead of desc.alloc is counted here;
   this file itself never calls malloc. */
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

#include <weft.h>

#include "scratch_dir.h"

/* ---- the C library's allocator, watched ---- */

static unsigned long libc_calls; /* blocks weft asked the C library for */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
#ifndef _WIN32 /* Windows has no strndup */
char *__real_strndup(const char *s, size_t n);
#endif
FILE *__real_fopen(const char *path, const char *mode);
FILE *__wrap_fopen(const char *path, const char *mode);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
#ifndef _WIN32
char *__wrap_strndup(const char *s, size_t n);
#endif

/* Files weft opened with the C library (the debugger's and recordings'
   aside, none in these tests). */
static unsigned long fopen_calls;
FILE *__wrap_fopen(const char *path, const char *mode) {
  fopen_calls++;
  return __real_fopen(path, mode);
}

void *__wrap_malloc(size_t n) {
  libc_calls++;
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m) {
  libc_calls++;
  return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n) {
  libc_calls++;
  return __real_realloc(p, n);
}
void __wrap_free(void *p) {
  if (p) libc_calls++;
  __real_free(p);
}
char *__wrap_strdup(const char *s) {
  libc_calls++;
  return __real_strdup(s);
}
#ifndef _WIN32
char *__wrap_strndup(const char *s, size_t n) {
  libc_calls++;
  return __real_strndup(s, n);
}
#endif

/* ---- the engine's allocator: counts, and checks every osize ---- */

typedef struct ledger {
  size_t live;         /* bytes held now */
  unsigned long calls; /* allocations and resizes */
  unsigned long bad;   /* frees or resizes given a wrong osize */
  long fail_after;     /* calls that succeed before every later one fails; -1: none */
} ledger;

/* A 16-byte header holds the block's size. */
static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  ledger *a = ud;
  size_t *h = ptr ? (size_t *)ptr - 2 : NULL;
  if (h && h[0] != osize) a->bad++;
  if (nsize == 0) {
    if (h) {
      a->live -= h[0];
      __real_free(h);
    }
    return NULL;
  }
  if (a->fail_after >= 0 && (long)a->calls >= a->fail_after) return NULL;
  size_t old = h ? h[0] : 0;
  size_t *n = __real_realloc(h, nsize + 2 * sizeof(size_t));
  if (!n) return NULL;
  a->calls++;
  a->live = a->live - old + nsize;
  n[0] = nsize;
  return n + 2;
}

/* ---- the engine's loader: scripts in memory ---- */

typedef struct file {
  const char *path, *text;
} file;

static const file pak[] = {
    {"main.lua", "local greet = require 'lib.greet'\n"
                 "print(greet.hello('engine'))\n"
                 "local t = weft.start('ai.walker', {steps = 0}, 3)\n"
                 "print('walked', wait(t))\n"},
    {"lib/greet.lua", "local M = {}\n"
                      "function M.hello(n) return 'hello ' .. n end\n"
                      "return M\n"},
    {"ai/walker.lua", "local M = {}\n"
                      "function M.start(s, n)\n"
                      "  for _ = 1, n do wait(0.1) s.steps = s.steps + 1 end\n"
                      "  return s.steps\n"
                      "end\n"
                      "return M\n"},
    {"broken.lua", "local x = = 1\n"},
    {"missing_dep.lua", "require 'no.such.module'\n"},
};

typedef struct loader {
  ledger *a;
  char asked[16][64]; /* the paths asked for, in order */
  int n;
} loader;

static void *pak_load(void *ud, const char *path, size_t *size) {
  loader *ld = ud;
  if (ld->n < 16) snprintf(ld->asked[ld->n++], 64, "%s", path);
  for (size_t i = 0; i < sizeof pak / sizeof pak[0]; i++) {
    if (strcmp(pak[i].path, path) != 0) continue;
    size_t n = strlen(pak[i].text);
    char *p = count_alloc(ld->a, NULL, 0, n ? n : 1);
    if (!p) return NULL;
    memcpy(p, pak[i].text, n);
    *size = n;
    return p;
  }
  return NULL;
}

/* The engine's assets, in memory too. */
static const file assets[] = {
    {"levels/1.txt", "wall wall door\n"},
    {"empty.txt", ""},
};

static void *pak_load_asset(void *ud, const char *path, size_t *size) {
  loader *ld = ud;
  if (ld->n < 16) snprintf(ld->asked[ld->n++], 64, "asset:%s", path);
  for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++) {
    if (strcmp(assets[i].path, path) != 0) continue;
    size_t n = strlen(assets[i].text);
    char *p = count_alloc(ld->a, NULL, 0, n ? n : 1);
    if (!p) return NULL;
    memcpy(p, assets[i].text, n);
    *size = n;
    return p;
  }
  return NULL;
}

static int asked_for(const loader *ld, const char *path) {
  for (int i = 0; i < ld->n; i++)
    if (strcmp(ld->asked[i], path) == 0) return 1;
  return 0;
}

/* Whether every path the loader was asked for is clean and relative: not
   absolute, no empty, "." or ".." part. */
static int all_clean(const loader *ld) {
  for (int i = 0; i < ld->n; i++) {
    const char *p = ld->asked[i];
    if (p[0] == '/' || p[0] == 0 || p[strlen(p) - 1] == '/' || strstr(p, "//")) return 0;
    for (const char *part = p; part; part = strchr(part, '/') ? strchr(part, '/') + 1 : NULL)
      if (strncmp(part, "./", 2) == 0 || strcmp(part, ".") == 0 || strncmp(part, "../", 3) == 0 ||
          strcmp(part, "..") == 0)
        return 0;
  }
  return 1;
}

/* ---- the engine's logger ---- */

typedef struct logbook {
  char text[8192]; /* "level id msg\n" lines */
  size_t len;
  int by_id[16];
  char where[64]; /* the last message's file:line, when it named one */
} logbook;

static void on_log(void *user, const char *tag, uint32_t level, uint32_t id, const char *msg,
                   const char *where, uint32_t line) {
  logbook *b = user;
  if (where) snprintf(b->where, sizeof b->where, "%s:%u", where, (unsigned)line);
  assert_string_equal(tag, "weft");
  if (id < 16) b->by_id[id]++;
  int n = snprintf(b->text + b->len, sizeof b->text - b->len, "%u %u %s\n", level, id, msg);
  if (n > 0 && (size_t)n < sizeof b->text - b->len) b->len += (size_t)n;
}

static weft_desc engine_desc(ledger *a, loader *ld, logbook *b) {
  weft_desc d = WEFT_DESC_INIT;
  d.scripts_root = "pak"; /* no such directory: every script comes from the loader */
  d.alloc = count_alloc;
  d.alloc_ud = a;
  d.load = pak_load;
  d.load_ud = ld;
  d.logger = on_log;
  d.logger_ud = b;
  d.job_threads = WEFT_JOBS_INLINE;
  return d;
}

/* The engine's assets reach scripts through its loader: io.open,
   io.lines and job("read_file") of paths under assets_root, a missing
   one and one leaving the root; no file opened by the C library, every
   byte the engine's, nothing left after close. */
static void test_assets_come_through_the_engines_loader(void **state) {
  (void)state;
  ledger a = {.fail_after = -1};
  loader ld = {.a = &a};
  logbook b = {0};
  weft_desc d = engine_desc(&a, &ld, &b);
  d.assets_root = "data"; /* no such directory either */
  d.load_asset = pak_load_asset;
  unsigned long files_before = fopen_calls, libc_before = libc_calls;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  static const char src[] =
      "local f = assert(io.open('data/levels/1.txt'))\n"
      "print('open', f:read('l'))\n"
      "f:close()\n"
      "for line in io.lines('data/./levels//1.txt') do print('lines', line) end\n"
      "print('empty', #assert(io.open('data/empty.txt')):read('a'))\n"
      "print('missing', io.open('data/nope.txt'))\n"
      "print('outside', io.open('data/../etc/passwd'))\n"
      "print('job', wait(job('read_file', 'levels/1.txt')))\n"
      "print('job missing', pcall(wait, job('read_file', 'nope.txt')))\n";
  weft_task t;
  assert_int_equal(weft_run_string(W, "=assets", src, sizeof src - 1, &t, NULL), WEFT_OK);
  for (int i = 0; i < 60 && weft_task_result(W, t) == WEFT_RUNNING; i++) weft_step(W, 1.0 / 60);
  if (weft_task_result(W, t) != WEFT_DONE) fail_msg("%s", weft_task_error(W, t));
  weft_task_drop(W, t);
  assert_non_null(strstr(b.text, "open\twall wall door\n"));
  assert_non_null(strstr(b.text, "lines\twall wall door\n"));
  assert_non_null(strstr(b.text, "empty\t0\n"));
  assert_non_null(strstr(b.text, "missing\tnil\tdata/nope.txt: no such asset\t2\n"));
  assert_non_null(strstr(b.text, "outside\tnil\t"));
  assert_non_null(strstr(b.text, "job\twall wall door\n\n"));
  assert_non_null(strstr(b.text, "job missing\tfalse\tcannot read data/nope.txt: no such asset\n"));
  assert_true(asked_for(&ld, "asset:levels/1.txt") && asked_for(&ld, "asset:empty.txt"));
  assert_false(asked_for(&ld, "asset:../etc/passwd"));
  for (int i = 0; i < ld.n; i++)
    if (strncmp(ld.asked[i], "asset:", 6) == 0) assert_null(strstr(ld.asked[i], ".."));
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(fopen_calls, files_before); /* the C library opened no file */
  assert_int_equal(libc_calls, libc_before);
  assert_int_equal(a.live, 0);
  assert_int_equal(a.bad, 0);
}

/* A profile takes its blocks from the engine's allocator too: none from
   the C library's, nothing left after close (its files are written with
   the C library's stdio, as a profile is a file). */
static void test_a_profile_is_the_engines_memory_too(void **state) {
  (void)state;
  ledger a = {.fail_after = -1};
  loader ld = {.a = &a};
  logbook b = {0};
  weft_desc d = engine_desc(&a, &ld, &b);
  unsigned long before = libc_calls;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  char dir[] = "/tmp/weft-profile-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/p.json", dir);
  assert_int_equal(weft_profile_start(W, path), WEFT_OK);
  static const char src[] =
      "local function f(n) local s = 0 for i = 1, n do s = s + i end return s end\n"
      "for i = 1, 20 do spawn(function() f(20000) wait() f(20000) end) wait() end\n";
  weft_task t;
  assert_int_equal(weft_run_string(W, "=prof", src, sizeof src - 1, &t, NULL), WEFT_OK);
  for (int i = 0; i < 100 && weft_task_result(W, t) == WEFT_RUNNING; i++) weft_step(W, 1.0 / 60);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_drop(W, t);
  size_t during = a.live;
  assert_int_equal(weft_profile_stop(W), WEFT_OK);
  assert_true(a.live < during); /* the profile's blocks went back to the engine */
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(libc_calls, before);
  assert_int_equal(a.live, 0);
  assert_int_equal(a.bad, 0);
  rm_tree(dir);
}

/* A script that requires a module and starts another, all three only in
   the engine's pak: every byte through the engine's allocator, nothing
   from the C library, nothing left after close. */
static void test_every_byte_and_every_script_is_the_engines(void **state) {
  (void)state;
  ledger a = {.fail_after = -1};
  loader ld = {.a = &a};
  logbook b = {0};
  weft_desc d = engine_desc(&a, &ld, &b);
  libc_calls = 0;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  weft_task t;
  const char *err = NULL;
  assert_int_equal(weft_run_file(W, "pak/main.lua", &t, &err), WEFT_OK);
  for (int i = 0; i < 60 && weft_task_result(W, t) == WEFT_RUNNING; i++)
    assert_int_equal(weft_step(W, 1.0 / 60), WEFT_OK);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_drop(W, t);
  assert_true(asked_for(&ld, "main.lua"));
  assert_true(asked_for(&ld, "lib/greet.lua"));
  assert_true(asked_for(&ld, "ai/walker.lua"));
  assert_non_null(strstr(b.text, "3 0 hello engine\n")); /* print, through the logger */
  assert_non_null(strstr(b.text, "3 0 walked\t3\n"));
  weft_stats st = WEFT_STATS_INIT;
  weft_get_stats(W, &st);
  assert_true(st.allocs > 0);
  assert_true(a.live > 0);
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(a.live, 0);
  assert_int_equal(a.bad, 0);
  assert_int_equal(libc_calls, 0);
}

/* Recording a run (for a bug report) takes its blocks from the engine's
   allocator too, and reads the scripts through its loader. */
static void test_a_recording_is_the_engines_too(void **state) {
  (void)state;
  ledger a = {.fail_after = -1};
  loader ld = {.a = &a};
  logbook b = {0};
  weft_desc d = engine_desc(&a, &ld, &b);
  char path[] = "/tmp/weft-embedder-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  libc_calls = 0;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  assert_int_equal(weft_record(W, path, "engine", 6), WEFT_OK);
  weft_task t;
  assert_int_equal(weft_run_file(W, "pak/main.lua", &t, NULL), WEFT_OK);
  for (int i = 0; i < 60 && weft_task_result(W, t) == WEFT_RUNNING; i++)
    assert_int_equal(weft_step(W, 1.0 / 60), WEFT_OK);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(a.live, 0);
  assert_int_equal(a.bad, 0);
  assert_int_equal(libc_calls, 0);
  unlink(path);
}

/* A script missing from the pak, and one that does not compile, fail
   with their names; a require of a missing module names it. */
static void test_loader_misses_and_syntax_errors_name_the_script(void **state) {
  (void)state;
  ledger a = {.fail_after = -1};
  loader ld = {.a = &a};
  logbook b = {0};
  weft_desc d = engine_desc(&a, &ld, &b);
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  weft_task t;
  const char *err = NULL;
  assert_int_equal(weft_run_file(W, "pak/nothing.lua", &t, &err), WEFT_EINVAL);
  assert_non_null(strstr(err, "pak/nothing.lua"));
  assert_int_equal(weft_run_file(W, "pak/broken.lua", &t, &err), WEFT_EINVAL);
  assert_non_null(strstr(err, "pak/broken.lua:1:"));
  assert_int_equal(weft_run_file(W, "pak/missing_dep.lua", &t, &err), WEFT_OK);
  assert_int_equal(weft_task_result(W, t), WEFT_FAILED);
  assert_non_null(strstr(weft_task_error(W, t), "no.such.module"));
  assert_non_null(strstr(weft_task_error(W, t), "pak/missing_dep.lua:1:"));
  weft_task_drop(W, t);
  assert_int_equal(b.by_id[WEFT_LOG_REPORT], 1); /* the failure, through the logger */
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(a.live, 0);
  assert_int_equal(a.bad, 0);
}

/* Whatever path a script names, the loader is given the clean path under
   the scripts root, or nothing: "pak//etc/hostname" is "etc/hostname"
   under the root, never "/etc/hostname"; a ".." that leaves the root
   reaches no loader. */
static void test_the_loader_sees_only_clean_relative_paths(void **state) {
  (void)state;
  ledger a = {.fail_after = -1};
  loader ld = {.a = &a};
  logbook b = {0};
  weft_desc d = engine_desc(&a, &ld, &b);
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  static const char src[] =
      "assert(io.open('pak//etc/hostname') == nil)\n"
      "assert(io.open('pak/./lib//../lib/greet.lua'):read('a'):find('hello'))\n"
      "assert(loadfile('pak//lib/greet.lua'))\n"
      "assert(io.open('pak/../etc/passwd') == nil and loadfile('pak/lib/../../x.lua') == nil)\n"
      "assert(not pcall(dofile, 'pak/lib/../../../etc/passwd'))\n"
      "assert(package.searchpath('greet', 'pak/lib//?.lua') == 'pak/lib//greet.lua')\n";
  weft_task t;
  assert_int_equal(weft_run_string(W, "=paths", src, sizeof src - 1, &t, NULL), WEFT_OK);
  /* (a slow machine, or an emulated one, may preempt it: frames go on) */
  for (int i = 0; i < 600 && weft_task_result(W, t) == WEFT_RUNNING; i++) weft_step(W, 1.0 / 60);
  if (weft_task_result(W, t) != WEFT_DONE) fail_msg("%s", weft_task_error(W, t));
  weft_task_drop(W, t);
  assert_true(asked_for(&ld, "etc/hostname"));
  assert_true(asked_for(&ld, "lib/greet.lua"));
  assert_true(all_clean(&ld));
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(a.live, 0);
}

/* A script's warn() goes where weft's own warnings go: the logger, level
   WARN, with the script's file:line; off until "@on", as in lua.c, and
   "@"-messages are controls, never shown. */
static void test_warn_reaches_the_logger_once_on(void **state) {
  (void)state;
  ledger a = {.fail_after = -1};
  loader ld = {.a = &a};
  logbook b = {0};
  weft_desc d = engine_desc(&a, &ld, &b);
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  static const char src[] = "warn('hidden')\nwarn('@on')\nwarn('low ', 'fuel: ', 3)\n"
                            "warn('@other')\nwarn('@off')\nwarn('gone')\n";
  weft_task t;
  assert_int_equal(weft_run_string(W, "=ship", src, sizeof src - 1, &t, NULL), WEFT_OK);
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  weft_task_drop(W, t);
  assert_int_equal(b.by_id[WEFT_LOG_WARNING], 1);
  assert_non_null(strstr(b.text, "2 9 low fuel: 3\n"));
  assert_int_equal(WEFT_LOG_WARNING, 9);
  assert_string_equal(b.where, "ship:3");
  assert_null(strstr(b.text, "hidden"));
  assert_null(strstr(b.text, "gone"));
  assert_null(strstr(b.text, "other"));
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(a.live, 0);
}

/* However early the engine's allocator says no, weft_open fails cleanly:
   NULL, the reason through the logger, and every block given back. */
static void test_open_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  int opened = 0;
  for (long n = 0; n < 20000 && !opened; n += n < 200 ? 1 : 37) {
    ledger a = {.fail_after = n};
    loader ld = {.a = &a};
    logbook b = {0};
    weft_desc d = engine_desc(&a, &ld, &b);
    weft_state *W = weft_open(&d);
    if (W) {
      opened = 1;
      assert_int_equal(weft_close(W), 0);
    } else {
      assert_int_equal(b.by_id[WEFT_LOG_OPEN_FAILED], 1);
    }
    assert_int_equal(a.live, 0);
    assert_int_equal(a.bad, 0);
  }
  assert_true(opened);
}

/* ---- no process-wide state ---- */

/* Every signal's disposition, to compare. */
typedef struct dispositions {
  void *h[NSIG];
} dispositions;

#ifdef _WIN32
/* Windows has C's signal() only: a handler is read by setting one and
   putting it back. */
static void read_dispositions(dispositions *d) {
  for (int s = 1; s < NSIG; s++) {
    void (*h)(int) = signal(s, SIG_DFL);
    if (h != SIG_ERR) signal(s, h);
    d->h[s] = h == SIG_ERR ? NULL : (void *)h;
  }
}
#else
static void read_dispositions(dispositions *d) {
  for (int s = 1; s < NSIG; s++) {
    struct sigaction sa;
    d->h[s] = sigaction(s, NULL, &sa) == 0 ? (void *)sa.sa_handler : NULL;
  }
}
#endif

static void same_dispositions(const dispositions *a, const dispositions *b) {
  for (int s = 1; s < NSIG; s++)
    if (a->h[s] != b->h[s]) fail_msg("signal %d's handler changed", s);
}

/* The watchdog stops a runaway loop without a signal: no handler is
   installed at open, while it stops one, or after close. */
static void test_no_signal_handler_at_any_point(void **state) {
  (void)state;
  dispositions before, now;
  read_dispositions(&before);
  ledger a = {.fail_after = -1};
  loader ld = {.a = &a};
  logbook b = {0};
  weft_desc d = engine_desc(&a, &ld, &b);
  d.time_budget_us = 2000;
  d.runaway_us = 10000; /* killed after 10 ms of script time: a few slices */
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  read_dispositions(&now);
  same_dispositions(&before, &now);
  weft_task t;
  static const char spin[] = "while true do end";
  assert_int_equal(weft_run_string(W, "=spin", spin, sizeof spin - 1, &t, NULL), WEFT_OK);
  for (int i = 0; i < 1000 && weft_task_result(W, t) == WEFT_RUNNING; i++) {
    read_dispositions(&now);
    same_dispositions(&before, &now);
    assert_int_equal(weft_step(W, 1.0 / 60), WEFT_OK);
  }
  assert_int_equal(weft_task_result(W, t), WEFT_FAILED); /* stopped by the watchdog */
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
  read_dispositions(&now);
  same_dispositions(&before, &now);
  assert_int_equal(a.live, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_byte_and_every_script_is_the_engines),
      cmocka_unit_test(test_a_recording_is_the_engines_too),
      cmocka_unit_test(test_loader_misses_and_syntax_errors_name_the_script),
      cmocka_unit_test(test_the_loader_sees_only_clean_relative_paths),
      cmocka_unit_test(test_warn_reaches_the_logger_once_on),
      cmocka_unit_test(test_assets_come_through_the_engines_loader),
      cmocka_unit_test(test_a_profile_is_the_engines_memory_too),
      cmocka_unit_test(test_open_fails_cleanly_at_every_allocation),
      cmocka_unit_test(test_no_signal_handler_at_any_point),
  };
  return cmocka_run_group_tests_name("embedder", tests, NULL, NULL);
}
