/* The `weft` program: run a script headless on a virtual (or real) clock,
   or run script tests. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <lauxlib.h>

#include "weft.h"

static void usage(void) {
  fputs("usage: weft run FILE.lua [--frames N] [--dt S] [--realtime] [--scripts DIR]\n"
        "                         [--watch] [--memory MB] [--budget N|off] [--dump-tasks]\n"
        "                         [--inline-jobs]\n"
        "       weft test [DIR or FILES...]\n",
        stderr);
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t) {
  double d = t - mono_now();
  if (d <= 0) return;
  struct timespec ts = {(time_t)d, (long)((d - floor(d)) * 1e9)};
  nanosleep(&ts, NULL);
}

static int parse_num(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

/* Prints weft.tasks() to stdout, one task a line. */
static void dump_tasks(weft_state *W) {
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "tasks");
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    fprintf(stderr, "weft: tasks: %s\n", lua_tostring(L, -1));
    lua_pop(L, 3);
    return;
  }
  lua_Integer n = luaL_len(L, -1);
  printf("%lld live task(s)\n", (long long)n);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    static const char *const f[] = {"id",      "name",  "group",   "status",
                                    "waiting", "where", "spawned", "resumes"};
    for (int k = 0; k < 8; k++) {
      lua_getfield(L, -1, f[k]);
      printf("%s%s=%s", k ? "  " : "", f[k], lua_isnil(L, -1) ? "-" : lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    putchar('\n');
    lua_pop(L, 1);
  }
  lua_pop(L, 3);
}

static int cmd_run(int argc, char **argv) {
  const char *file = NULL;
  double frames = -1, dt = 1.0 / 60, mem = 256, budget = 0;
  int realtime = 0, watch = 0, dump = 0;
  weft_desc d = {0};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    int more = i + 1 < argc;
    if (strcmp(a, "--frames") == 0 && more) {
      if (!parse_num(argv[++i], &frames) || frames < 0)
        return fprintf(stderr, "weft: bad --frames\n"), 1;
    } else if (strcmp(a, "--dt") == 0 && more) {
      if (!parse_num(argv[++i], &dt) || !(dt >= 0 && dt <= WEFT_MAX_DT))
        return fprintf(stderr, "weft: bad --dt (seconds from 0 to 1e6)\n"), 1;
    } else if (strcmp(a, "--memory") == 0 && more) {
      if (!parse_num(argv[++i], &mem) || mem <= 0)
        return fprintf(stderr, "weft: bad --memory\n"), 1;
    } else if (strcmp(a, "--budget") == 0 && more) {
      if (strcmp(argv[i + 1], "off") == 0) {
        i++;
        budget = -1;
      } else if (!parse_num(argv[++i], &budget) || budget < 1 || budget > 2e9) {
        return fprintf(stderr, "weft: bad --budget\n"), 1;
      }
    } else if (strcmp(a, "--scripts") == 0 && more) {
      d.scripts_root = argv[++i];
    } else if (strcmp(a, "--realtime") == 0) {
      realtime = 1;
    } else if (strcmp(a, "--watch") == 0) {
      watch = 1;
    } else if (strcmp(a, "--dump-tasks") == 0) {
      dump = 1;
    } else if (strcmp(a, "--inline-jobs") == 0) {
      d.job_threads = WEFT_JOBS_INLINE;
    } else if (a[0] != '-' && !file) {
      file = a;
    } else {
      usage();
      return 1;
    }
  }
  if (!file) {
    usage();
    return 1;
  }
  d.memory_limit = (size_t)(mem * 1024 * 1024);
  d.instr_budget = budget < 0 ? WEFT_BUDGET_OFF : (uint32_t)budget;
  weft_state *W = weft_open(&d);
  if (!W) {
    fprintf(stderr, "weft: cannot create the state (out of memory)\n");
    return 1;
  }
  if (watch && weft_watch_scripts(W, 1) != WEFT_OK)
    fprintf(stderr, "weft: --watch: cannot watch %s\n",
            d.scripts_root ? d.scripts_root : "scripts");
  weft_id task;
  const char *err;
  if (weft_run_file(W, file, &task, &err) != WEFT_OK) {
    fprintf(stderr, "%s\n", err);
    weft_close(W);
    return 1;
  }
  double next = mono_now();
  uint64_t done_frames = 0;
  int rc;
  for (;;) {
    int r = weft_task_result(W, task);
    if (r == WEFT_TASK_DONE) {
      rc = 0;
      break;
    }
    if (r == WEFT_TASK_FAILED || r == WEFT_TASK_CANCELLED) {
      rc = 1;
      break;
    }
    if (frames >= 0 && (double)done_frames >= frames) {
      rc = 2;
      break;
    }
    if (realtime) {
      next += dt;
      sleep_until(next);
    }
    weft_step(W, dt);
    done_frames++;
  }
  if (rc == 1 && weft_task_result(W, task) == WEFT_TASK_CANCELLED)
    fprintf(stderr, "weft: %s was cancelled\n", file);
  if (dump) dump_tasks(W);
  weft_release(W, task);
  int leaked = weft_close(W);
  if (leaked) fprintf(stderr, "weft: %d object(s) leaked at shutdown\n", leaked);
  return rc;
}

/* ---- weft test ---- */

typedef struct tests {
  int passed, failed;
  int reports;     /* errors reported during the case (none handled them) */
  char first[512]; /* ...the first one */
} tests;

/* Errors no weft.on_error handled: printed as `weft run` prints them, and
   counted, so a case whose child task failed unnoticed fails too. */
static void on_test_report(void *user, const char *msg, const char *trace) {
  tests *t = user;
  fprintf(stderr, "error: %s\n", trace ? trace : msg);
  if (!t->reports++) snprintf(t->first, sizeof t->first, "%s", msg ? msg : "error");
}

/* test(name, fn [, {frames = N, reports = true}]): registers a case in
   the registry list. frames: the most it may take (default 3600);
   reports: errors that reach no weft.on_error are expected (else any
   fails the case). */
static int l_test(lua_State *L) {
  luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_Integer frames = 3600;
  int reports = 0;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_getfield(L, 3, "frames");
    if (!lua_isnil(L, -1)) {
      int ok = 0;
      frames = lua_tointegerx(L, -1, &ok);
      if (!ok || frames < 1) return luaL_error(L, "test: frames must be a whole number >= 1");
    }
    lua_getfield(L, 3, "reports");
    reports = lua_toboolean(L, -1);
    lua_pop(L, 2);
  }
  lua_Debug ar;
  int line = 0;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "l", &ar)) line = ar.currentline;
  lua_getfield(L, LUA_REGISTRYINDEX, "weft.tests");
  lua_createtable(L, 0, 4);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "name");
  lua_pushvalue(L, 2);
  lua_setfield(L, -2, "fn");
  lua_pushinteger(L, frames);
  lua_setfield(L, -2, "frames");
  lua_pushinteger(L, line);
  lua_setfield(L, -2, "line");
  lua_pushboolean(L, reports);
  lua_setfield(L, -2, "reports");
  lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
  return 0;
}

/* Opens a fresh state and runs the test file's top level. Returns the
   state with the cases in registry "weft.tests", or NULL (reported). */
static weft_state *load_tests(const char *file, const char *root, int *ncases, tests *t) {
  weft_desc d = {0};
  d.scripts_root = root;
  d.report = on_test_report;
  d.user = t;
  weft_state *W = weft_open(&d);
  if (!W) return NULL;
  lua_State *L = weft_lua(W);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "weft.tests");
  weft_push_api(W);
  lua_pushcfunction(L, l_test);
  lua_setfield(L, -2, "test");
  lua_pop(L, 1);
  weft_id task;
  const char *err;
  if (weft_run_file(W, file, &task, &err) != WEFT_OK) {
    printf("FAIL %s: %s\n", file, err);
    weft_close(W);
    return NULL;
  }
  for (int i = 0; i < 600 && weft_task_result(W, task) == 0; i++) weft_step(W, 1.0 / 60);
  if (weft_task_result(W, task) != WEFT_TASK_DONE) {
    printf("FAIL %s: top level: %s\n", file,
           weft_task_result(W, task) ? weft_task_error(W, task) : "did not finish");
    weft_close(W);
    return NULL;
  }
  weft_release(W, task);
  lua_getfield(L, LUA_REGISTRYINDEX, "weft.tests");
  *ncases = (int)luaL_len(L, -1);
  lua_pop(L, 1);
  return W;
}

static void run_case(const char *file, const char *root, int i, tests *t) {
  int n = 0;
  weft_state *W = load_tests(file, root, &n, t);
  if (!W) {
    t->failed++;
    return;
  }
  t->reports = 0;
  lua_State *L = weft_lua(W);
  lua_getfield(L, LUA_REGISTRYINDEX, "weft.tests");
  lua_rawgeti(L, -1, i);
  lua_getfield(L, -1, "name");
  char name[200];
  snprintf(name, sizeof name, "%s", lua_tostring(L, -1));
  lua_getfield(L, -2, "line");
  int line = (int)lua_tointeger(L, -1);
  lua_getfield(L, -3, "frames");
  lua_Integer limit = lua_tointeger(L, -1);
  lua_getfield(L, -4, "reports");
  int reports_ok = lua_toboolean(L, -1);
  lua_pop(L, 4);
  lua_getfield(L, -1, "fn");
  lua_remove(L, -2);
  lua_remove(L, -2);
  weft_id task = weft_spawn(W, 0);
  lua_Integer f = 0;
  while (task && weft_task_result(W, task) == 0 && f < limit) {
    weft_step(W, 1.0 / 60);
    f++;
  }
  int r = task ? weft_task_result(W, task) : WEFT_TASK_FAILED;
  if (r == WEFT_TASK_DONE && t->reports && !reports_ok) {
    t->failed++;
    printf("FAIL %s:%d: %s: a task failed and no weft.on_error handled it: %s\n", file, line, name,
           t->first);
  } else if (r == WEFT_TASK_DONE) {
    t->passed++;
  } else {
    t->failed++;
    if (r == 0) {
      char buf[128];
      weft_describe_wait(W, task, buf, sizeof buf);
      printf("FAIL %s:%d: %s: not finished after %lld frames (%s)\n", file, line, name,
             (long long)limit, buf);
    } else {
      printf("FAIL %s:%d: %s: %s\n", file, line, name, weft_task_error(W, task));
    }
  }
  if (task) weft_release(W, task);
  int leaked = weft_close(W);
  if (leaked) {
    printf("FAIL %s:%d: %s: %d object(s) leaked at shutdown\n", file, line, name, leaked);
    t->passed -= (r == WEFT_TASK_DONE);
    t->failed += (r == WEFT_TASK_DONE);
  }
}

static void test_file(const char *file, const char *root, tests *t) {
  int n = 0;
  weft_state *W = load_tests(file, root, &n, t);
  if (!W) {
    t->failed++;
    return;
  }
  weft_close(W);
  for (int i = 1; i <= n; i++) run_case(file, root, i, t);
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every *_test.lua under dir, in name order. */
static void test_dir(const char *dir, const char *root, tests *t) {
  DIR *d = opendir(dir);
  if (!d) {
    printf("FAIL %s: %s\n", dir, strerror(errno));
    t->failed++;
    return;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) break;
    snprintf(names[n], len, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISDIR(st.st_mode))
      test_dir(names[i], root, t);
    else if (ends_with(names[i], "_test.lua"))
      test_file(names[i], root, t);
    free(names[i]);
  }
  free(names);
}

static int cmd_test(int argc, char **argv) {
  tests t = {0};
  const char *root = "scripts";
  int any = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--scripts") == 0 && i + 1 < argc) {
      root = argv[++i];
      continue;
    }
    struct stat st;
    any = 1;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
      test_dir(argv[i], root, &t);
    else
      test_file(argv[i], root, &t);
  }
  if (!any) test_dir(root, root, &t);
  printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "run") == 0) return cmd_run(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "test") == 0) return cmd_test(argc - 2, argv + 2);
  usage();
  return 1;
}
