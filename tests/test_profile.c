/* The profile's trace is one a timeline viewer can draw: a slice for
   every resume, slices on the tasks' track nested properly (a resume
   begun inside another within it, the others one after another), each
   inside a frame, and each wake-up's arrow leaving from inside a slice
   and arriving where the woken task's next one begins. Most resumes
   are placed between two reads of the clock, not timed one by one
   (profile.c): these are the rules that placing must keep. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bindings/weft.h"

#include "scratch_dir.h"

typedef struct span {
  int64_t t0, t1; /* nanoseconds */
  int burner;     /* the task named "burner" */
  int unnamed;    /* a slice named "task": its task's name was never kept */
} span;

typedef struct flow {
  long id;
  int64_t t;
} flow;

typedef struct trace {
  span *tasks, *frames;
  size_t ntasks, nframes;
  flow *starts, *ends;
  size_t nstarts, nends;
} trace;

static int64_t ns_of(const char *line, const char *key) {
  const char *p = strstr(line, key);
  assert_non_null(p);
  return llround(strtod(p + strlen(key), NULL) * 1e3);
}

/* Room for element n of v (elements of size bytes): 16 at first, twice
   as many each time n reaches a power of two past that. */
static void *room(void *v, size_t n, size_t size) {
  if (n == 0 || (n >= 16 && (n & (n - 1)) == 0)) {
    v = realloc(v, (n ? 2 * n : 16) * size);
    assert_non_null(v);
  }
  return v;
}

static void push_span(span **v, size_t *n, span s) {
  *v = room(*v, *n, sizeof **v);
  (*v)[(*n)++] = s;
}

static void push_flow(flow **v, size_t *n, flow f) {
  *v = room(*v, *n, sizeof **v);
  (*v)[(*n)++] = f;
}

/* The trace's events, one a line as weft writes them. */
static void read_trace(const char *path, trace *tr) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char line[4096];
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "\"ph\":\"X\"")) {
      int64_t ts = ns_of(line, "\"ts\":"), dur = ns_of(line, "\"dur\":");
      span s = {ts, ts + dur, strstr(line, "\"name\":\"burner ") != NULL,
                strstr(line, "\"name\":\"task\"") != NULL};
      if (strstr(line, "\"cat\":\"task\""))
        push_span(&tr->tasks, &tr->ntasks, s);
      else
        push_span(&tr->frames, &tr->nframes, s);
    } else if (strstr(line, "\"ph\":\"s\"") || strstr(line, "\"ph\":\"f\"")) {
      flow w = {strtol(strstr(line, "\"id\":") + 5, NULL, 10), ns_of(line, "\"ts\":")};
      if (strstr(line, "\"ph\":\"s\""))
        push_flow(&tr->starts, &tr->nstarts, w);
      else
        push_flow(&tr->ends, &tr->nends, w);
    }
  }
  fclose(f);
}

/* By start, the longer first: a slice comes before those inside it. */
static int by_start(const void *a, const void *b) {
  const span *p = a, *q = b;
  if (p->t0 != q->t0) return p->t0 < q->t0 ? -1 : 1;
  return (q->t1 > p->t1) - (q->t1 < p->t1);
}

/* The slice of v (sorted by start) that holds time t: the innermost
   that began at or before it and had not ended. */
static const span *holding(const span *v, size_t n, int64_t t) {
  const span *in = NULL;
  for (size_t i = 0; i < n && v[i].t0 <= t; i++)
    if (v[i].t1 >= t) in = &v[i];
  return in;
}

static const char workload[] =
    /* named, as its set-up may end inside the profile on a slow machine
       (a file's task is otherwise named by where it waits: nowhere, once
       it has ended) */
    "current().name = 'setup'\n"
    "local function work(k) local s = 0 for i = 1, k do s = s + i end return s end\n"
    /* many short resumes of different lengths, and in their midst one
       long one a frame */
    "for i = 1, 1500 do\n"
    "  spawn(function() while true do work(i % 7 * 40) wait() end end)\n"
    "  if i == 750 then\n"
    "    spawn(function() while true do work(400000) wait() end end).name = 'burner'\n"
    "  end\n"
    "end\n"
    /* resumes inside resumes: a spawn runs its task at once */
    "spawn(function() while true do spawn(function() work(200) end) wait() end end)\n"
    /* wake-ups: a signal fired every frame, a task waiting on it */
    "local s = signal()\n"
    "spawn(function() while true do wait(s) work(100) end end)\n"
    "spawn(function() while true do s:fire() wait() end end)\n";

static void test_a_profile_trace_nests_orders_and_frames_every_resume(void **state) {
  (void)state;
  weft_desc d = WEFT_DESC_INIT;
  d.frame_time_budget_us = 10000000; /* every task every frame, however slow the machine */
  d.slow_task_us = UINT32_MAX;       /* the long resume is meant */
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  weft_task main_task;
  assert_int_equal(weft_run_string(W, "=workload", workload, sizeof workload - 1, &main_task, NULL),
                   WEFT_OK);
  weft_step(W, 1.0 / 60); /* every task past its first resume */
  char dir[] = "/tmp/weft-profile-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/p.json", dir);
  weft_stats s0 = WEFT_STATS_INIT, s1 = WEFT_STATS_INIT;
  weft_get_stats(W, &s0);
  assert_int_equal(weft_profile_start(W, path), WEFT_OK);
  for (int f = 0; f < 60; f++) weft_step(W, 1.0 / 60);
  weft_get_stats(W, &s1);
  assert_int_equal(weft_profile_stop(W), WEFT_OK);
  assert_int_equal(s1.errors, s0.errors);

  trace tr = {0};
  read_trace(path, &tr);
  /* a slice a resume, the resumes inside resumes too */
  assert_int_equal(tr.ntasks, s1.resumes - s0.resumes);
  assert_int_equal(tr.nframes, 60);
  /* some of each at least: on a slow machine (qemu, wine) the long task's
     preemptions leave some frames without one */
  assert_true(tr.nstarts >= 10 && tr.nstarts == tr.nends);

  qsort(tr.tasks, tr.ntasks, sizeof *tr.tasks, by_start);
  qsort(tr.frames, tr.nframes, sizeof *tr.frames, by_start);
  /* Nested properly: each slice either lies inside the one open before
     it or begins once that one has ended. */
  span *open[64];
  int depth = 0, nested = 0;
  for (size_t i = 0; i < tr.ntasks; i++) {
    span *x = &tr.tasks[i];
    assert_true(x->t1 >= x->t0);
    while (depth > 0 && open[depth - 1]->t1 <= x->t0) depth--;
    if (depth > 0) {
      if (x->t1 > open[depth - 1]->t1)
        fail_msg("slice %zu [%lld, %lld] overlaps [%lld, %lld]", i, (long long)x->t0,
                 (long long)x->t1, (long long)open[depth - 1]->t0, (long long)open[depth - 1]->t1);
      nested++;
    }
    assert_true(depth < 64);
    open[depth++] = x;
  }
  assert_true(nested >= 10); /* the spawns inside resumes */
  /* Every slice is named, those of the tasks that ended too (they are
     gone when the profile is written). */
  for (size_t i = 0; i < tr.ntasks; i++)
    if (tr.tasks[i].unnamed) fail_msg("slice %zu is of a task whose name was lost", i);
  /* The long resumes keep their length: placed to within a tick, not
     given an even share of the time among short ones (which they would
     be with the clock read only at their ends). */
  double burn = 0, rest = 0;
  size_t nburn = 0;
  for (size_t i = 0; i < tr.ntasks; i++)
    if (tr.tasks[i].burner)
      burn += (double)(tr.tasks[i].t1 - tr.tasks[i].t0), nburn++;
    else
      rest += (double)(tr.tasks[i].t1 - tr.tasks[i].t0);
  assert_true(nburn >= 10); /* most frames; a slow machine's preemptions take some */
  double ratio = (burn / (double)nburn) / (rest / (double)(tr.ntasks - nburn));
  if (ratio < 100) fail_msg("a long resume's slice is only %.0fx a short one's", ratio);
  /* Inside a frame, each. */
  for (size_t i = 0; i < tr.ntasks; i++) {
    const span *fr = holding(tr.frames, tr.nframes, tr.tasks[i].t0);
    if (!fr || tr.tasks[i].t1 > fr->t1)
      fail_msg("slice %zu [%lld, %lld] is outside the frames", i, (long long)tr.tasks[i].t0,
               (long long)tr.tasks[i].t1);
  }
  /* A wake-up's arrow leaves from inside a slice (the waker's) and
     arrives where a slice (the woken task's) begins, later. */
  for (size_t i = 0; i < tr.nstarts; i++) {
    const flow *s = &tr.starts[i], *e = NULL;
    for (size_t j = 0; j < tr.nends && !e; j++)
      if (tr.ends[j].id == s->id) e = &tr.ends[j];
    assert_non_null(e);
    assert_true(e->t >= s->t);
    assert_non_null(holding(tr.tasks, tr.ntasks, s->t));
    int begins = 0;
    for (size_t j = 0; j < tr.ntasks && !begins; j++) begins = tr.tasks[j].t0 == e->t;
    assert_true(begins);
  }
  free(tr.tasks), free(tr.frames), free(tr.starts), free(tr.ends);
  weft_task_drop(W, main_task);
  assert_int_equal(weft_close(W), 0);
  rm_tree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_profile_trace_nests_orders_and_frames_every_resume),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
