/* What a save of the running world costs: N tasks sleeping (each with a
   table of its own and a few locals mid-loop, as a guard's patrol keeps),
   saved with weft_save and loaded with weft_load into a fresh state;
   prints the save's size and the time of each (min / median / max over
   RUNS), per N, and checks that the loaded state runs on (its tasks wake
   as the saved state's would).

   usage: save_cost [RUNS] [N...]   (defaults 5, 0 1000 10000 100000) */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#include "../../cli/mialloc.h"

#define MAXRUNS 32

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "save_cost: %s: %s\n", what, why ? why : "failed");
  exit(1);
}

#include "../membuf.h"

static weft_state *open_state(void) {
  weft_desc d = WEFT_DESC_INIT;
  mialloc_use(&d);
  d.memory_limit = (size_t)4 << 30;
  d.max_tasks = 1u << 20;
  d.time_budget_us = 10000000; /* the set-up spawns N in one go */
  weft_state *W = weft_open(&d);
  if (!W) die("weft_open", NULL);
  return W;
}

static const char *script = "local n = ...\n"
                            "for i = 1, n do\n"
                            "  spawn(function()\n"
                            "    local guard = {name = 'guard' .. i, post = i % 17, seen = 0}\n"
                            "    while true do\n"
                            "      guard.seen = guard.seen + 1\n"
                            "      wait(0.25 + (i % 7) * 0.05)\n"
                            "    end\n"
                            "  end)\n"
                            "end\n"
                            "wait(math.huge)\n";

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  if (runs < 1 || runs > MAXRUNS) runs = 5;
  long ns[8] = {0, 1000, 10000, 100000};
  int nn = 4;
  if (argc > 2) {
    nn = 0;
    for (int i = 2; i < argc && nn < 8; i++) ns[nn++] = atol(argv[i]);
  }
  printf("%-8s %12s %14s %26s %26s\n", "tasks", "save bytes", "bytes/task", "save ms min/med/max",
         "load ms min/med/max");
  for (int k = 0; k < nn; k++) {
    double ts[MAXRUNS], tl[MAXRUNS];
    size_t size = 0;
    for (int r = 0; r < runs; r++) {
      weft_state *W = open_state();
      char path[64];
      snprintf(path, sizeof path, "=save_cost");
      weft_task t;
      const char *err;
      char src[512];
      snprintf(src, sizeof src, "local n = %ld\n%s", ns[k], strchr(script, '\n') + 1);
      if (weft_run_string(W, path, src, strlen(src), &t, &err) != WEFT_OK) die("the script", err);
      for (int f = 0; f < 10; f++) weft_step(W, 1.0 / 60);
      membuf b = {0};
      double t0 = now();
      if (weft_save(W, mem_put, &b, &err) != WEFT_OK) die("weft_save", err);
      ts[r] = (now() - t0) * 1e3;
      size = b.n;
      weft_state *V = open_state();
      t0 = now();
      if (weft_load(V, b.p, b.n, &err) != WEFT_OK) die("weft_load", err);
      tl[r] = (now() - t0) * 1e3;
      /* both go on alike: the same resumes over the next second */
      for (int f = 0; f < 60; f++) {
        weft_step(W, 1.0 / 60);
        weft_step(V, 1.0 / 60);
      }
      weft_stats a = WEFT_STATS_INIT, c = WEFT_STATS_INIT;
      weft_get_stats(W, &a);
      weft_get_stats(V, &c);
      if (a.tasks != c.tasks || a.tasks < (uint32_t)ns[k])
        die("the loaded state", "does not go on as the saved one");
      free(b.p);
      weft_task_drop(W, t);
      weft_close(W);
      weft_close(V);
    }
    qsort(ts, (size_t)runs, sizeof *ts, cmp);
    qsort(tl, (size_t)runs, sizeof *tl, cmp);
    printf("%-8ld %12zu %14.1f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", ns[k], size,
           ns[k] ? (double)size / (double)ns[k] : 0.0, ts[0], ts[runs / 2], ts[runs - 1], tl[0],
           tl[runs / 2], tl[runs - 1]);
  }
  return 0;
}
