/* What each engine call a script can make costs as the thing it grows
   gets big: api_cost.lua calls each 10^5 times (budget off) and this
   prints ns per call over the first and the last 10^4 calls, medians of
   RUNS runs (the ratio is the median of the runs' ratios). Each run of a
   case is a process of its own: in one process, a case's blocks land
   where the cases before it freed theirs, which moved a case's ratio by
   0.3 from one order to another.
   Usage: api-cost DIR [N [RUNS]] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>

#include <weft.h>

#include "../../cli/mialloc.h"

typedef struct {
  char name[64];
  double first, last; /* ns per call */
} run;

static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Runs case `which` of api_cost.lua in a state of its own into *r;
   returns how many cases the script has, or -1. */
static int run_case(const char *dir, int n, int which, run *r) {
  weft_desc d = WEFT_DESC_INIT;
  mialloc_use(&d);
  d.scripts_root = dir;
  d.memory_limit = (size_t)4 << 30;
  d.instr_budget = WEFT_BUDGET_OFF;
  d.max_tasks = 4 * (uint32_t)n + 1024;
  weft_state *W = weft_open(&d);
  if (!W) return -1;
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  lua_pushinteger(L, which);
  lua_setfield(L, -2, "case");
  lua_setfield(L, -2, "BENCH");
  lua_pop(L, 1);
  char path[4096];
  snprintf(path, sizeof path, "%s/api_cost.lua", dir);
  weft_task t;
  const char *err;
  int cases = -1;
  if (weft_run_file(W, path, &t, &err) != WEFT_OK) {
    fprintf(stderr, "api-cost: %s\n", err);
    goto done;
  }
  for (int f = 0; f < 1000 && weft_task_result(W, t) == WEFT_RUNNING; f++) weft_step(W, 1.0 / 60);
  if (weft_task_result(W, t) != WEFT_DONE) {
    fprintf(stderr, "api-cost: %s\n", weft_task_error(W, t));
    goto done;
  }
  weft_task_drop(W, t);
  weft_push_api(W);
  lua_getfield(L, -1, "BENCH");
  lua_getfield(L, -1, "cases");
  cases = (int)lua_tointeger(L, -1);
  lua_getfield(L, -2, "name");
  snprintf(r->name, sizeof r->name, "%s", lua_tostring(L, -1));
  lua_getfield(L, -3, "first");
  r->first = lua_tonumber(L, -1);
  lua_getfield(L, -4, "last");
  r->last = lua_tonumber(L, -1);
  lua_pop(L, 6);
done:
  weft_close(W);
  return cases;
}

/* run_case in a child process; the same result, or -1. */
static int run_apart(const char *dir, int n, int which, run *r) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fd[0]);
    int cases = run_case(dir, n, which, r);
    int ok = write(fd[1], &cases, sizeof cases) == (ssize_t)sizeof cases &&
             write(fd[1], r, sizeof *r) == (ssize_t)sizeof *r;
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  int cases = -1;
  if (read(fd[0], &cases, sizeof cases) != (ssize_t)sizeof cases ||
      read(fd[0], r, sizeof *r) != (ssize_t)sizeof *r)
    cases = -1;
  close(fd[0]);
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) cases = -1;
  return cases;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: api-cost DIR [N [RUNS]]\n");
    return 2;
  }
  int n = argc > 2 ? atoi(argv[2]) : 100000;
  int runs = argc > 3 ? atoi(argv[3]) : 7;
  if (runs < 1 || runs > 64) runs = 7;
  printf("  %-32s %9s %9s %7s   (N = %d calls on one object; medians of %d runs,\n"
         "  %-32s %9s %9s %7s    each run a process of its own)\n",
         "call", "ns first", "ns last", "ratio", n, runs, "", "", "", "");
  fflush(stdout);
  int cases = 1;
  for (int which = 1; which <= cases; which++) {
    double first[64], last[64], ratio[64];
    run r = {{0}, 0, 0};
    for (int i = 0; i < runs; i++) {
      cases = run_apart(argv[1], n, which, &r);
      if (cases < 0) return 1;
      first[i] = r.first, last[i] = r.last, ratio[i] = r.last / r.first;
    }
    printf("  %-32s %9.0f %9.0f %7.2f\n", r.name, median(first, runs), median(last, runs),
           median(ratio, runs));
    fflush(stdout);
  }
  return 0;
}
