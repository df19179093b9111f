/* Unit tests for host/sched: the frame-stepped scheduler, driven by a
   virtual clock with C tasks whose resume callbacks log the order they ran
   in and then do what each test needs. Never sleeps, never reads time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../host/sched.h"

#define DT60 (1.0 / 60.0)
#define assert_near(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-9)

/* ---- a checking allocator (lua_Alloc contract, sizes verified) ---- */

#include "check_alloc.h"

/* ---- the test context (desc.user) and task user data ---- */

#define MAXRUNS 4096

typedef struct ev {
  int tag;
  uint64_t frame;
} ev;

typedef struct tev {
  weft_id waiter;
  int slot;
  double elapsed;
  uint64_t frame;
  int after_runs; /* resumes logged before this call */
} tev;

typedef struct ctx {
  memstat mem; /* first: the allocator's ud is the context too */
  int refuse;  /* every allocation fails while set (frees work) */
  weft_sched *s;
  int nolog;        /* count resumes without logging them */
  long total;       /* resumes */
  ev runs[MAXRUNS]; /* resumes in order */
  int nruns;
  int cancels[256]; /* the first cancelled tags, in callback order */
  int ncancel;      /* cancel callbacks */
  tev timers[256];  /* the first timer_done calls, in order */
  int ntimers;      /* timer_done calls */
  int note[8];      /* what a task saw inside its resume, kept past its end */
} ctx;

typedef struct tdata tdata;
typedef void (*act_fn)(weft_sched *s, weft_id self, tdata *d);

struct tdata {
  int tag;
  int runs;     /* resumes of this task */
  act_fn act;   /* what a resume does after logging; NULL: finish */
  double secs;  /* sleep length */
  double secs2; /* second sleep length (act_sleep_two); 0: none */
  int count;    /* a slot number or a count, per act */
  int mode;     /* WEFT_WAIT_ALL / WEFT_WAIT_FIRST */
  weft_wlist *list, *list2;
  weft_id other;       /* a task or group the act touches */
  act_fn cleanup;      /* run by the cancel callback when set */
  int rc, seen, seen2; /* what the act observed */
  int next;            /* the act asks for the next frame (WEFT_RESUMED_NEXT) */
  double slept;        /* the last resume's slept */
};

static int on_resume(weft_sched *s, weft_id self, void *ud, double slept) {
  ctx *c = weft__sched_user(s);
  tdata *d = ud;
  d->slept = slept;
  c->total++;
  if (!c->nolog) {
    assert_true(c->nruns < MAXRUNS);
    c->runs[c->nruns++] = (ev){d->tag, weft__sched_frame(s)};
  }
  d->runs++;
  assert_int_equal(weft__task_state(s, self), WEFT_TASK_RUNNING);
  assert_true(weft__sched_current(s) == self);
  d->next = 0;
  if (d->act)
    d->act(s, self, d);
  else
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
  return d->next ? WEFT_RESUMED_NEXT : WEFT_RESUMED;
}

static void on_cancel(weft_sched *s, weft_id self, void *ud) {
  ctx *c = weft__sched_user(s);
  tdata *d = ud;
  if (c->ncancel < 256) c->cancels[c->ncancel] = d->tag;
  c->ncancel++;
  assert_int_equal(weft__task_state(s, self), WEFT_TASK_CANCELLING);
  if (d->cleanup) d->cleanup(s, self, d);
}

static void on_timer(void *user, weft_id waiter, int slot, double elapsed) {
  ctx *c = user;
  if (c->ntimers < 256)
    c->timers[c->ntimers] = (tev){waiter, slot, elapsed, weft__sched_frame(c->s), c->nruns};
  c->ntimers++;
}

static const weft_task_class cls = {on_resume, on_cancel, NULL};

static int setup(void **state) {
  ctx *c = calloc(1, sizeof *c);
  if (!c) return -1;
  *state = c;
  return 0;
}

static int teardown(void **state) {
  free(*state);
  return 0;
}

/* count_alloc, refusing to allocate or grow while the context says so. */
static void *test_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  ctx *c = ud;
  if (c->refuse && nsize > (ptr ? osize : 0)) return NULL;
  return count_alloc(&c->mem, ptr, osize, nsize);
}

static weft_sched *sched_new(ctx *c, uint32_t max_tasks) {
  weft_sched_desc d = {0};
  d.alloc = test_alloc;
  d.alloc_ud = &c->mem;
  d.max_tasks = max_tasks;
  d.task_udata_size = sizeof(tdata);
  d.timer_done = on_timer;
  d.user = c;
  weft_sched *s = weft__sched_create(&d);
  assert_non_null(s);
  c->s = s;
  assert_ptr_equal(weft__sched_user(s), c);
  return s;
}

/* Destroys the scheduler and checks nothing leaked. */
static void sched_end(weft_sched *s, ctx *c) {
  assert_int_equal(weft__sched_destroy(s), 0);
  c->s = NULL;
  assert_int_equal(c->mem.live, 0);
  assert_int_equal(c->mem.bad_osize, 0);
}

static tdata *TD(weft_sched *s, weft_id t) {
  tdata *d = weft__task_udata(s, t);
  assert_non_null(d);
  return d;
}

/* A task in state NEW. */
static weft_id task_new(weft_sched *s, weft_id group, weft_id parent, int tag, act_fn act,
                        double secs) {
  weft_id id = 0;
  void *ud = NULL;
  assert_int_equal(weft__task_create(s, group, parent, &cls, &id, &ud), WEFT_OK);
  assert_true(id != 0);
  tdata *d = ud;
  assert_non_null(d);
  assert_int_equal(d->tag, 0); /* zeroed */
  d->tag = tag;
  d->act = act;
  d->secs = secs;
  return id;
}

/* A task queued to run in the next pass. */
static weft_id spawn(weft_sched *s, weft_id group, weft_id parent, int tag, act_fn act,
                     double secs) {
  weft_id id = task_new(s, group, parent, tag, act, secs);
  assert_int_equal(weft__task_wake(s, id), WEFT_OK);
  assert_int_equal(weft__task_state(s, id), WEFT_TASK_READY);
  return id;
}

static void steps(weft_sched *s, int n, double dt) {
  for (int i = 0; i < n; i++) assert_int_equal(weft__sched_step(s, dt), WEFT_OK);
}

/* Tags resumed in frame f, in order; returns how many. */
static int frame_tags(const ctx *c, uint64_t f, int *out, int max) {
  int n = 0;
  for (int i = 0; i < c->nruns; i++)
    if (c->runs[i].frame == f) {
      if (n < max) out[n] = c->runs[i].tag;
      n++;
    }
  return n;
}

static void expect_frame_(const ctx *c, uint64_t f, const int *want, int nwant) {
  int got[64];
  int n = frame_tags(c, f, got, 64);
  if (n != nwant) print_error("frame %llu: %d resumes, want %d\n", (unsigned long long)f, n, nwant);
  assert_int_equal(n, nwant);
  for (int i = 0; i < n; i++) {
    if (got[i] != want[i])
      print_error("frame %llu: resume %d is tag %d, want %d\n", (unsigned long long)f, i, got[i],
                  want[i]);
    assert_int_equal(got[i], want[i]);
  }
}
#define EXPECT_FRAME(c, f, ...)                                                                    \
  expect_frame_((c), (f), (const int[]){__VA_ARGS__},                                              \
                (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)))

static int runs_in_frame(const ctx *c, uint64_t f) { return frame_tags(c, f, NULL, 0); }

static void expect_cancels_(const ctx *c, const int *want, int nwant) {
  for (int i = 0; i < c->ncancel && i < nwant; i++)
    if (c->cancels[i] != want[i])
      print_error("cancel %d is tag %d, want %d\n", i, c->cancels[i], want[i]);
  assert_int_equal(c->ncancel, nwant);
  for (int i = 0; i < nwant; i++) assert_int_equal(c->cancels[i], want[i]);
}
#define EXPECT_CANCELS(c, ...)                                                                     \
  expect_cancels_((c), (const int[]){__VA_ARGS__},                                                 \
                  (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)))

/* ---- what tasks do ---- */

static void sleep_now(weft_sched *s, weft_id self, double secs) {
  assert_int_equal(weft__wait_begin(s, self, WEFT_WAIT_ALL), WEFT_OK);
  assert_int_equal(weft__wait_sleep(s, self, 0, secs, 0), WEFT_OK);
  weft__wait_commit(s, self);
  assert_int_equal(weft__task_state(s, self), WEFT_TASK_WAITING);
}

/* Sleeps secs once, then finishes. */
static void act_sleep_done(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1)
    sleep_now(s, self, d->secs);
  else
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
}

/* Sleeps secs forever. */
static void act_sleep_loop(weft_sched *s, weft_id self, tdata *d) { sleep_now(s, self, d->secs); }

/* Sleeps secs, then secs2 when set, then finishes. */
static void act_sleep_two(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1)
    sleep_now(s, self, d->secs);
  else if (d->runs == 2 && d->secs2 != 0)
    sleep_now(s, self, d->secs2);
  else
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
}

/* First resume: suspends with no records; the next one finishes. */
static void act_idle(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs > 1) assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
}

/* First resume: waits in d->mode on list (slot 0), list2 (slot 1) and a
   sleep of secs (slot 2), each when set. Second: notes the failure flag
   in seen, begins a new wait and notes the flag again in seen2. Third:
   finishes. */
static void act_wait_lists(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1) {
    assert_int_equal(weft__wait_begin(s, self, d->mode), WEFT_OK);
    if (d->list) assert_int_equal(weft__wait_on(s, self, 0, d->list), WEFT_OK);
    if (d->list2) assert_int_equal(weft__wait_on(s, self, 1, d->list2), WEFT_OK);
    if (d->secs > 0) assert_int_equal(weft__wait_sleep(s, self, 2, d->secs, 0), WEFT_OK);
    weft__wait_commit(s, self);
    assert_int_equal(weft__task_state(s, self), WEFT_TASK_WAITING);
  } else if (d->runs == 2) {
    d->seen = weft__wait_failed(s, self);
    assert_int_equal(weft__wait_begin(s, self, WEFT_WAIT_ALL), WEFT_OK);
    d->seen2 = weft__wait_failed(s, self);
    assert_int_equal(weft__wait_sleep(s, self, 0, 0, 0), WEFT_OK);
    weft__wait_commit(s, self);
  } else {
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
  }
}

/* Sleeps secs, then wakes d->other and notes the result and its state
   in note[0..1]; finishes. */
static void act_wake_other(weft_sched *s, weft_id self, tdata *d) {
  ctx *c = weft__sched_user(s);
  if (d->runs == 1) {
    sleep_now(s, self, d->secs);
    return;
  }
  c->note[0] = weft__task_wake(s, d->other);
  c->note[1] = weft__task_state(s, d->other);
  assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
}

/* Sleeps secs, then pauses group d->other; finishes. */
static void act_pause_group(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1) {
    sleep_now(s, self, d->secs);
    return;
  }
  d->rc = weft__sched_pause_group(s, d->other);
  assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
}

/* Asks for the next frame the resume's cheap way (WEFT_RESUMED_NEXT). */
static void act_next_loop(weft_sched *s, weft_id self, tdata *d) {
  (void)s;
  (void)self;
  d->next = 1;
}

/* Sleeps secs with weft__wait_sleep_only, forever. */
static void act_sleep_only_loop(weft_sched *s, weft_id self, tdata *d) {
  assert_int_equal(weft__wait_sleep_only(s, self, d->secs, 0), WEFT_OK);
}

/* Cancels itself (put off: it runs), then asks for the next frame. */
static void act_cancel_self_next(weft_sched *s, weft_id self, tdata *d) {
  assert_int_equal(weft__task_cancel(s, self), WEFT_EBUSY);
  d->next = 1;
}

/* Asks for the next frame; on its resume number count, first cancels
   task other. */
static void act_next_cancel_other(weft_sched *s, weft_id self, tdata *d) {
  (void)self;
  if (d->runs == d->count) assert_int_equal(weft__task_cancel(s, d->other), WEFT_OK);
  d->next = 1;
}

/* Asks for the next frame; on its resume number count, first wakes task
   other (the result in rc). */
static void act_next_wake_other(weft_sched *s, weft_id self, tdata *d) {
  (void)self;
  if (d->runs == d->count) d->rc = weft__task_wake(s, d->other);
  d->next = 1;
}

/* ---- sleeps ---- */

static void test_half_second_sleep_completes_on_frame_30(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id t = spawn(s, 0, 0, 1, act_sleep_done, 0.5);
  weft__sched_run_ready(s); /* started before the first step: time 0 */
  EXPECT_FRAME(c, 0, 1);
  for (int f = 1; f <= 29; f++) {
    steps(s, 1, DT60);
    assert_int_equal(runs_in_frame(c, (uint64_t)f), 0);
    assert_int_equal(weft__task_state(s, t), WEFT_TASK_WAITING);
  }
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 30, 1);
  assert_int_equal(weft__task_state(s, t), WEFT_ESTALE);
  steps(s, 5, DT60);
  assert_int_equal(c->nruns, 2);
  sched_end(s, c);
}

static void test_sleep_started_mid_run_takes_30_frames(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  steps(s, 9, DT60);
  spawn(s, 0, 0, 1, act_sleep_done, 0.5);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 10, 1);
  steps(s, 29, DT60);
  assert_int_equal(c->nruns, 1);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 40, 1);
  sched_end(s, c);
}

static void test_repeated_sleeps_wake_on_exact_frames_without_drift(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  const double secs[] = {0.1, 0.25, 0.5, 1.5};
  const int period[] = {6, 15, 30, 90};
  for (int i = 0; i < 4; i++) spawn(s, 0, 0, i + 1, act_sleep_loop, secs[i]);
  weft__sched_run_ready(s);
  steps(s, 900, DT60);
  int count[4] = {0};
  for (int i = 0; i < c->nruns; i++) {
    int k = c->runs[i].tag - 1;
    if (c->runs[i].frame % (uint64_t)period[k] != 0)
      print_error("tag %d (%.2f s) ran on frame %llu\n", k + 1, secs[k],
                  (unsigned long long)c->runs[i].frame);
    assert_int_equal(c->runs[i].frame % (uint64_t)period[k], 0);
    count[k]++;
  }
  for (int k = 0; k < 4; k++) assert_int_equal(count[k], 900 / period[k] + 1);
  sched_end(s, c);
}

static void test_sleep_of_zero_or_less_wakes_next_frame(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft__sched_set_frame_budget(s, 100); /* a same-frame wake would spin */
  spawn(s, 0, 0, 1, act_sleep_loop, 0.0);
  spawn(s, 0, 0, 2, act_sleep_loop, -1.0);
  spawn(s, 0, 0, 3, act_sleep_loop, -INFINITY);
  weft__sched_run_ready(s);
  EXPECT_FRAME(c, 0, 1, 2, 3);
  for (uint64_t f = 1; f <= 5; f++) {
    steps(s, 1, DT60);
    EXPECT_FRAME(c, f, 1, 2, 3);
  }
  steps(s, 1, 0.0); /* a frame of zero length is still a frame */
  EXPECT_FRAME(c, 6, 1, 2, 3);
  steps(s, 1, 10.0);
  EXPECT_FRAME(c, 7, 1, 2, 3);
  sched_end(s, c);
}

/* A resume that returns WEFT_RESUMED_NEXT sleeps as weft__wait_sleep_only(0)
   would: in sleep order with the other next-frame sleeps, before a timer
   of the same frame, and it is told the time it slept. */
static void test_next_frame_return_is_a_plain_next_frame_sleep(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  spawn(s, 0, 0, 4, act_sleep_loop, DT60); /* a timer due each next frame */
  weft_id t2 = spawn(s, 0, 0, 2, act_next_loop, 0);
  spawn(s, 0, 0, 1, act_sleep_loop, 0.0);
  weft_id t3 = spawn(s, 0, 0, 3, act_sleep_only_loop, 0.0);
  weft__sched_run_ready(s);
  EXPECT_FRAME(c, 0, 4, 2, 1, 3);
  assert_int_equal(weft__task_state(s, t2), WEFT_TASK_WAITING);
  char buf[64];
  weft__wait_describe(s, t2, buf, sizeof buf);
  assert_string_equal(buf, "next frame");
  assert_near(weft__task_slept(s, t2, 0), 0);
  for (uint64_t f = 1; f <= 4; f++) {
    steps(s, 1, DT60);
    EXPECT_FRAME(c, f, 2, 1, 3, 4); /* next-frame sleeps in sleep order, then the timer */
    assert_near(TD(s, t2)->slept, DT60);
    assert_near(TD(s, t3)->slept, DT60);
  }
  steps(s, 1, 0.5);
  assert_near(TD(s, t2)->slept, 0.5);
  /* A cancel put off while it runs lands after its sleep is queued. */
  weft_id t5 = spawn(s, 0, 0, 5, act_cancel_self_next, 0);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 6, 5, 2, 1, 3, 4); /* queued before the step: first */
  assert_int_equal(weft__task_state(s, t5), WEFT_ESTALE);
  EXPECT_CANCELS(c, 5);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 7, 2, 1, 3, 4);
  assert_int_equal(weft__task_cancel(s, t2), WEFT_OK);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 8, 1, 3, 4);
  sched_end(s, c);
}

/* Next-frame returns in two group clocks run each frame in the order they
   went to sleep, across the clocks; a paused group's wait, asleep until
   the next frame, and go first once it resumes (they slept first); a
   cancel or a wake between frames finds each where it waits. */
static void test_next_frame_returns_keep_sleep_order_across_clocks(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  spawn(s, 0, 0, 1, act_next_loop, 0);
  weft_id t2 = spawn(s, g, 0, 2, act_next_loop, 0);
  weft_id t3 = spawn(s, 0, 0, 3, act_next_loop, 0);
  weft_id t4 = spawn(s, g, 0, 4, act_next_loop, 0);
  weft__sched_run_ready(s);
  EXPECT_FRAME(c, 0, 1, 2, 3, 4);
  for (uint64_t f = 1; f <= 3; f++) {
    steps(s, 1, DT60);
    EXPECT_FRAME(c, f, 1, 2, 3, 4);
  }
  assert_int_equal(weft__sched_pause_group(s, g), WEFT_OK);
  steps(s, 2, DT60);
  EXPECT_FRAME(c, 5, 1, 3);
  char buf[64];
  weft__wait_describe(s, t2, buf, sizeof buf);
  assert_string_equal(buf, "next frame");
  assert_int_equal(weft__task_state(s, t2), WEFT_TASK_WAITING);
  assert_int_equal(weft__sched_resume_group(s, g), WEFT_OK);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 6, 2, 4, 1, 3);
  assert_near(TD(s, t2)->slept, DT60); /* its clock stood still while it was paused */
  assert_int_equal(weft__task_cancel(s, t4), WEFT_OK);
  EXPECT_CANCELS(c, 4);
  assert_int_equal(weft__task_wake(s, t3), WEFT_OK); /* runs first, before the wake pass */
  assert_int_equal(weft__task_state(s, t3), WEFT_TASK_READY);
  weft__wait_describe(s, t3, buf, sizeof buf);
  assert_string_equal(buf, "ready");
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 7, 3, 2, 1);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 8, 3, 2, 1);
  weft__group_release(s, g);
  sched_end(s, c);
}

static void test_infinite_sleep_never_completes(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id t = spawn(s, 0, 0, 1, act_sleep_done, INFINITY);
  weft__sched_run_ready(s);
  steps(s, 10000, DT60);
  steps(s, 10, WEFT_MAX_DT);
  assert_int_equal(TD(s, t)->runs, 1);
  assert_int_equal(weft__task_state(s, t), WEFT_TASK_WAITING);
  assert_int_equal(weft__wait_pending(s, t), 1);
  assert_int_equal(c->ntimers, 0);
  /* Only a cancel ends it. */
  assert_int_equal(weft__task_cancel(s, t), WEFT_OK);
  EXPECT_CANCELS(c, 1);
  sched_end(s, c);
}

/* Tries a NaN sleep, then sleeps 0.25 s; finishes on the next resume. */
static void act_sleep_nan(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs > 1) {
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
    return;
  }
  assert_int_equal(weft__wait_begin(s, self, WEFT_WAIT_ALL), WEFT_OK);
  d->rc = weft__wait_sleep(s, self, 0, NAN, 0);
  d->seen = (int)weft__wait_pending(s, self);
  assert_int_equal(weft__wait_sleep(s, self, 0, 0.25, 0), WEFT_OK);
  weft__wait_commit(s, self);
}

static void test_nan_sleep_is_rejected(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id t = spawn(s, 0, 0, 1, act_sleep_nan, 0);
  weft__sched_run_ready(s);
  assert_int_equal(TD(s, t)->rc, WEFT_EINVAL);
  assert_int_equal(TD(s, t)->seen, 0); /* no record was added */
  assert_int_equal(weft__wait_pending(s, t), 1);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 1, 1);
  assert_int_equal(c->ntimers, 1);
  sched_end(s, c);
}

/* ---- wake order ---- */

static void test_due_sleeps_wake_earliest_deadline_first(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  spawn(s, 0, 0, 1, act_sleep_done, 0.3);
  spawn(s, 0, 0, 2, act_sleep_done, 0.1);
  spawn(s, 0, 0, 3, act_sleep_done, 0.2);
  spawn(s, 0, 0, 4, act_sleep_done, 0.2);
  weft__sched_run_ready(s);
  steps(s, 1, 1.0); /* every deadline falls in this frame */
  EXPECT_FRAME(c, 1, 2, 3, 4, 1);
  sched_end(s, c);
}

static void test_equal_deadlines_wake_in_sleep_order(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  /* Created first, but its second sleep (0.5 at t=0.5) starts last. */
  weft_id y = spawn(s, 0, 0, 1, act_sleep_two, 0.5);
  TD(s, y)->secs2 = 0.5;
  spawn(s, 0, 0, 2, act_sleep_two, 1.0);
  spawn(s, 0, 0, 3, act_sleep_two, 1.0);
  weft__sched_run_ready(s);
  steps(s, 2, 0.25);
  EXPECT_FRAME(c, 2, 1);
  steps(s, 2, 0.25);
  EXPECT_FRAME(c, 4, 2, 3, 1);
  sched_end(s, c);
}

/* Many sleeps begun over several frames, a thousand different deadlines
   and many shared ones (some begun frames apart): all falling due in one
   frame, they wake by deadline, equal deadlines in the order they began. */
static void test_many_deadlines_wake_by_deadline_then_sleep_order(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  enum { ROUNDS = 9, PER = 200, N = ROUNDS * PER };
  static int key[N]; /* deadline in quarter seconds */
  for (int k = 0; k < ROUNDS; k++) {
    for (int i = 0; i < PER; i++) {
      int j = k * PER + i;
      int m = j % 2 ? (j * 37) % 10 : (j * 7919) % 1000;
      key[j] = k + 400 + m;
      spawn(s, 0, 0, j, act_sleep_done, 100.0 + 0.25 * m); /* exact in binary */
    }
    weft__sched_run_ready(s); /* they sleep in spawn order */
    steps(s, 1, 0.25);
  }
  c->nruns = 0;
  steps(s, 1, 1000.0);
  static int got[N];
  assert_int_equal(frame_tags(c, ROUNDS + 1, got, N), N);
  for (int i = 1; i < N; i++) {
    int a = got[i - 1], b = got[i];
    assert_true(key[a] < key[b] || (key[a] == key[b] && a < b));
  }
  sched_end(s, c);
}

/* Deadlines that are equal in the script's terms (0 + 2 s and 1.5 s +
   0.5 s) must still tie at dt = 1/60, whatever the rounding of the
   accumulated clock. */
static void test_equal_deadlines_wake_in_sleep_order_at_sixtieth_dt(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id y = spawn(s, 0, 0, 1, act_sleep_two, 1.5);
  TD(s, y)->secs2 = 0.5; /* due 1.5 + 0.5 = 2.0, slept after x */
  spawn(s, 0, 0, 2, act_sleep_two, 2.0);
  weft__sched_run_ready(s);
  steps(s, 90, DT60);
  EXPECT_FRAME(c, 90, 1);
  steps(s, 29, DT60);
  assert_int_equal(c->nruns, 3);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 120, 2, 1);
  sched_end(s, c);
}

static void test_sleeps_on_different_group_clocks_wake_in_sleep_order(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id a, b;
  assert_int_equal(weft__group_create(s, 0, &a), WEFT_OK);
  assert_int_equal(weft__group_create(s, 0, &b), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, b, 2.0), WEFT_OK);
  /* All fall due at root time 1.0 (frame 60). */
  spawn(s, b, 0, 1, act_sleep_done, 2.0);
  spawn(s, 0, 0, 2, act_sleep_done, 1.0);
  spawn(s, a, 0, 3, act_sleep_done, 1.0);
  spawn(s, a, 0, 4, act_sleep_done, 1.0);
  spawn(s, b, 0, 5, act_sleep_done, 2.0);
  weft__sched_run_ready(s);
  steps(s, 59, DT60);
  assert_int_equal(c->nruns, 5);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 60, 1, 2, 3, 4, 5);
  weft__group_release(s, a);
  weft__group_release(s, b);
  sched_end(s, c);
}

/* ---- the pass ---- */

static void test_task_woken_during_pass_runs_later_same_frame(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id v = spawn(s, 0, 0, 1, act_idle, 0);
  weft_id k = spawn(s, 0, 0, 2, act_wake_other, 0.25);
  TD(s, k)->other = v;
  weft__sched_run_ready(s);
  assert_int_equal(weft__task_state(s, v), WEFT_TASK_WAITING); /* suspended, no records */
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 1, 2, 1);
  assert_int_equal(c->note[0], WEFT_OK);
  assert_int_equal(c->note[1], WEFT_TASK_READY); /* woken, not yet running */
  assert_int_equal(weft__task_state(s, v), WEFT_ESTALE);
  sched_end(s, c);
}

static void act_complete_list_keep(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1) {
    sleep_now(s, self, d->secs);
    return;
  }
  d->rc = 0;
  while (!weft__wlist_empty(d->list)) {
    weft__rec_complete(s, weft__wlist_head(d->list), 0);
    d->rc++;
  }
  d->seen = weft__task_state(s, d->other);
  d->seen2 = (int)weft__wlist_count(s, d->list);
  sleep_now(s, self, INFINITY); /* keeps its data for the test to read */
}

static void test_record_completed_during_pass_wakes_waiter_same_frame(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l = {0};
  weft_id w1 = spawn(s, 0, 0, 1, act_wait_lists, 0);
  TD(s, w1)->list = &l;
  weft_id w2 = spawn(s, 0, 0, 2, act_wait_lists, 0);
  TD(s, w2)->list = &l;
  weft_id k = spawn(s, 0, 0, 3, act_complete_list_keep, 0.25);
  TD(s, k)->list = &l;
  TD(s, k)->other = w1;
  weft__sched_run_ready(s);
  assert_int_equal(weft__wlist_count(s, &l), 2);
  assert_true(weft__rec_waiter(s, weft__wlist_head(&l)) == w1); /* oldest first */
  steps(s, 1, 0.25);
  /* Waiters wake in the order they began waiting, after the completer. */
  EXPECT_FRAME(c, 1, 3, 1, 2);
  assert_int_equal(TD(s, k)->rc, 2);
  assert_int_equal(TD(s, k)->seen, WEFT_TASK_READY); /* woken, not yet running */
  assert_int_equal(TD(s, k)->seen2, 0);
  sched_end(s, c);
}

static void test_frame_budget_caps_resumes_and_rest_run_first_next_frame(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  spawn(s, 0, 0, 9, act_sleep_done, 0.5); /* due on frame 2 */
  weft__sched_run_ready(s);
  weft__sched_set_frame_budget(s, 2);
  for (int i = 1; i <= 5; i++) spawn(s, 0, 0, i, NULL, 0);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 1, 1, 2);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 2, 3, 4); /* leftovers before the task woken on frame 2 */
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 3, 5, 9);
  weft__sched_set_frame_budget(s, 0); /* back to the default */
  for (int i = 11; i <= 20; i++) spawn(s, 0, 0, i, NULL, 0);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 4, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20);
  sched_end(s, c);
}

static void act_wake_many(weft_sched *s, weft_id self, tdata *d) {
  (void)self;
  for (int i = 0; i < d->count; i++) spawn(s, 0, 0, 100 + i, NULL, 0);
  assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
}

static void test_frame_budget_counts_tasks_woken_during_the_pass(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft__sched_set_frame_budget(s, 3);
  weft_id m = spawn(s, 0, 0, 1, act_wake_many, 0);
  TD(s, m)->count = 4;
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 1, 1, 100, 101);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 2, 102, 103);
  sched_end(s, c);
}

/* ---- waits ---- */

static void test_wait_all_wakes_after_every_record_completed(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l1 = {0}, l2 = {0};
  weft_id w = spawn(s, 0, 0, 1, act_wait_lists, 0.5);
  tdata *d = TD(s, w);
  d->mode = WEFT_WAIT_ALL;
  d->list = &l1;
  d->list2 = &l2;
  weft__sched_run_ready(s);
  assert_int_equal(weft__wait_pending(s, w), 3);
  weft__rec_complete(s, weft__wlist_head(&l1), 0);
  assert_int_equal(weft__wait_pending(s, w), 2);
  steps(s, 1, 0.25);
  assert_int_equal(weft__task_state(s, w), WEFT_TASK_WAITING);
  steps(s, 1, 0.25); /* the sleep completes */
  assert_int_equal(weft__wait_pending(s, w), 1);
  assert_int_equal(weft__task_state(s, w), WEFT_TASK_WAITING);
  assert_int_equal(c->nruns, 1);
  weft__rec_complete(s, weft__wlist_head(&l2), 0);
  assert_int_equal(weft__task_state(s, w), WEFT_TASK_READY);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 3, 1);
  assert_int_equal(d->seen, 0); /* not a failure */
  sched_end(s, c);
}

static void test_wait_first_wakes_at_first_completion(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l1 = {0}, l2 = {0};
  weft_id w = spawn(s, 0, 0, 1, act_wait_lists, 1.0);
  tdata *d = TD(s, w);
  d->mode = WEFT_WAIT_FIRST;
  d->list = &l1;
  d->list2 = &l2;
  weft__sched_run_ready(s);
  steps(s, 1, 0.25);
  assert_int_equal(weft__task_state(s, w), WEFT_TASK_WAITING);
  weft__rec_complete(s, weft__wlist_head(&l2), 0);
  assert_int_equal(weft__task_state(s, w), WEFT_TASK_READY);
  assert_int_equal(weft__wlist_count(s, &l1), 0);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 2, 1);
  assert_int_equal(d->seen, 0);
  steps(s, 8, 0.25);               /* past the 1 s sleep: it was dropped with the wait */
  assert_int_equal(c->ntimers, 1); /* only the next wait's sleep (slot 0) */
  assert_int_equal(c->timers[0].slot, 0);
  sched_end(s, c);
}

static void test_wait_first_wakes_at_first_timer(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l1 = {0};
  weft_id w = spawn(s, 0, 0, 1, act_wait_lists, 0.5);
  tdata *d = TD(s, w);
  d->mode = WEFT_WAIT_FIRST;
  d->list = &l1;
  weft__sched_run_ready(s);
  steps(s, 2, 0.25);
  EXPECT_FRAME(c, 2, 1);
  assert_int_equal(weft__wlist_count(s, &l1), 0);
  sched_end(s, c);
}

static void test_failure_wakes_at_once_and_is_reported(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l1 = {0}, l2 = {0};
  weft_id w = spawn(s, 0, 0, 1, act_wait_lists, 1.0);
  tdata *d = TD(s, w);
  d->mode = WEFT_WAIT_ALL;
  d->list = &l1;
  d->list2 = &l2;
  weft__sched_run_ready(s);
  weft__rec_complete(s, weft__wlist_head(&l1), 1);
  assert_int_equal(weft__task_state(s, w), WEFT_TASK_READY);
  assert_int_equal(weft__wait_failed(s, w), 1);
  assert_int_equal(weft__wlist_count(s, &l2), 0);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 1, 1);
  assert_int_equal(d->seen, 1);  /* the resume sees the failure */
  assert_int_equal(d->seen2, 0); /* a new wait starts clean */
  steps(s, 8, 0.25);
  assert_int_equal(c->ntimers, 1); /* only the new wait's sleep */
  sched_end(s, c);
}

static void test_woken_task_records_leave_every_list(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l1 = {0}, l2 = {0};
  weft_id a = spawn(s, 0, 0, 1, act_wait_lists, 0);
  weft_id b = spawn(s, 0, 0, 2, act_wait_lists, 0);
  weft_id t = spawn(s, 0, 0, 3, act_wait_lists, 0.5);
  TD(s, a)->mode = TD(s, b)->mode = WEFT_WAIT_FIRST;
  TD(s, a)->list = TD(s, b)->list = &l1;
  TD(s, a)->list2 = TD(s, b)->list2 = &l2;
  weft_wlist l3 = {0};
  TD(s, t)->mode = WEFT_WAIT_FIRST;
  TD(s, t)->list = &l3;
  weft__sched_run_ready(s);
  assert_int_equal(weft__wlist_count(s, &l1), 2);
  assert_int_equal(weft__wlist_count(s, &l2), 2);
  weft__rec_complete(s, weft__wlist_head(&l1), 0); /* a's record */
  assert_int_equal(weft__task_state(s, a), WEFT_TASK_READY);
  assert_int_equal(weft__wlist_count(s, &l1), 1);
  assert_int_equal(weft__wlist_count(s, &l2), 1);
  assert_true(weft__rec_waiter(s, weft__wlist_head(&l1)) == b);
  assert_true(weft__rec_waiter(s, weft__wlist_head(&l2)) == b);
  assert_int_equal(weft__rec_slot(s, weft__wlist_head(&l2)), 1);
  /* Waking by hand drops the records too. */
  assert_int_equal(weft__task_wake(s, b), WEFT_OK);
  assert_true(weft__wlist_empty(&l1));
  assert_true(weft__wlist_empty(&l2));
  /* A list completion removes the timer record as well. */
  weft__rec_complete(s, weft__wlist_head(&l3), 0);
  assert_true(weft__wlist_empty(&l3));
  steps(s, 4, 0.25);
  assert_int_equal(c->ntimers, 3); /* only the new waits' sleeps of 0 */
  for (int i = 0; i < c->ntimers; i++) assert_int_equal(c->timers[i].slot, 0);
  sched_end(s, c);
}

static void act_sleep_slot(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1) {
    assert_int_equal(weft__wait_begin(s, self, d->mode), WEFT_OK);
    assert_int_equal(weft__wait_sleep(s, self, d->count, d->secs, 0), WEFT_OK);
    if (d->list) assert_int_equal(weft__wait_sleep(s, self, d->count + 1, d->secs * 2, 0), WEFT_OK);
    weft__wait_commit(s, self);
  } else {
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
  }
}

static void test_timer_done_gets_waiter_slot_and_elapsed_seconds(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist unused = {0};
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, g, 0.5), WEFT_OK);
  weft_id a = spawn(s, 0, 0, 1, act_sleep_slot, 0.3); /* slot 7, fires at t=0.5 */
  TD(s, a)->count = 7;
  weft_id b = spawn(s, g, 0, 2, act_sleep_slot, 1.0); /* slot 3, group time */
  TD(s, b)->count = 3;
  weft_id m = spawn(s, 0, 0, 3, act_sleep_slot, 0.25); /* slots 0 and 1, all */
  TD(s, m)->list = &unused;                            /* flag: add the second sleep */
  weft__sched_run_ready(s);
  steps(s, 1, 0.25);
  assert_int_equal(c->ntimers, 1);
  assert_true(c->timers[0].waiter == m);
  assert_int_equal(c->timers[0].slot, 0);
  assert_near(c->timers[0].elapsed, 0.25);
  assert_int_equal(c->timers[0].frame, 1);
  steps(s, 1, 0.25);
  assert_int_equal(c->ntimers, 3);
  /* a's 0.3 s deadline was reached on frame 2: elapsed is what passed. */
  assert_true(c->timers[1].waiter == a);
  assert_int_equal(c->timers[1].slot, 7);
  assert_near(c->timers[1].elapsed, 0.5);
  assert_true(c->timers[2].waiter == m);
  assert_int_equal(c->timers[2].slot, 1);
  assert_near(c->timers[2].elapsed, 0.5);
  /* Delivered before the waiter resumes. */
  EXPECT_FRAME(c, 2, 1, 3);
  assert_int_equal(c->timers[1].after_runs, 3);
  /* A sleep begun later (t = 0.75): elapsed counts from its start. */
  weft_id e = spawn(s, 0, 0, 4, act_sleep_slot, 0.25);
  TD(s, e)->count = 5;
  steps(s, 2, 0.25);
  assert_int_equal(c->ntimers, 4);
  assert_true(c->timers[3].waiter == e);
  assert_int_equal(c->timers[3].slot, 5);
  assert_near(c->timers[3].elapsed, 0.25);
  assert_int_equal(c->timers[3].frame, 4);
  steps(s, 4, 0.25);
  assert_int_equal(c->ntimers, 5);
  assert_true(c->timers[4].waiter == b);
  assert_int_equal(c->timers[4].slot, 3);
  assert_near(c->timers[4].elapsed, 1.0); /* game seconds of b's group */
  assert_int_equal(c->timers[4].frame, 8);
  EXPECT_FRAME(c, 8, 2);
  weft__group_release(s, g);
  sched_end(s, c);
}

/* ---- groups ---- */

static void test_group_scale_half_makes_one_second_sleep_take_two(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, g, 0.5), WEFT_OK);
  assert_true(weft__group_scale(s, g) == 0.5);
  spawn(s, g, 0, 1, act_sleep_done, 1.0);
  spawn(s, 0, 0, 2, act_sleep_done, 1.0);
  weft__sched_run_ready(s);
  steps(s, 60, DT60);
  EXPECT_FRAME(c, 60, 2);
  steps(s, 59, DT60);
  assert_int_equal(c->nruns, 3);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 120, 1);
  assert_near(weft__sched_now(s), 2.0);
  assert_near(weft__group_now(s, g), 1.0);
  weft__group_release(s, g);
  sched_end(s, c);
}

static void test_global_time_scale_slows_every_group(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, weft__sched_root(s), 0.5), WEFT_OK);
  spawn(s, 0, 0, 1, act_sleep_done, 1.0);
  spawn(s, g, 0, 2, act_sleep_done, 1.0);
  weft__sched_run_ready(s);
  steps(s, 119, DT60);
  assert_int_equal(c->nruns, 2);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 120, 1, 2);
  assert_near(weft__sched_now(s), 1.0);
  assert_near(weft__sched_realtime(s), 2.0);
  weft__group_release(s, g);
  sched_end(s, c);
}

static void test_child_group_scale_multiplies_parent(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g, h1, h2;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_create(s, g, &h1), WEFT_OK);
  assert_int_equal(weft__group_create(s, g, &h2), WEFT_OK);
  assert_true(weft__group_parent(s, h1) == g);
  assert_int_equal(weft__group_set_scale(s, g, 0.5), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, h1, 0.5), WEFT_OK); /* 0.25 */
  assert_int_equal(weft__group_set_scale(s, h2, 4.0), WEFT_OK); /* 2 */
  spawn(s, h1, 0, 1, act_sleep_done, 1.0);
  spawn(s, h2, 0, 2, act_sleep_done, 1.0);
  weft__sched_run_ready(s);
  steps(s, 29, DT60);
  assert_int_equal(c->nruns, 2);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 30, 2);
  steps(s, 209, DT60);
  assert_int_equal(c->nruns, 3);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 240, 1);
  assert_near(weft__group_now(s, h1), 1.0);
  assert_near(weft__group_now(s, g), 2.0);
  weft__group_release(s, h1);
  weft__group_release(s, h2);
  weft__group_release(s, g);
  sched_end(s, c);
}

static void test_scale_change_applies_to_running_sleep(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  spawn(s, g, 0, 1, act_sleep_done, 1.0);
  weft__sched_run_ready(s);
  steps(s, 30, DT60); /* half of it slept */
  assert_int_equal(weft__group_set_scale(s, g, 0.5), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, g, -1.0), WEFT_EINVAL);
  assert_int_equal(weft__group_set_scale(s, g, NAN), WEFT_EINVAL);
  assert_int_equal(weft__group_set_scale(s, g, INFINITY), WEFT_EINVAL);
  assert_true(weft__group_scale(s, g) == 0.5);
  steps(s, 59, DT60);
  assert_int_equal(c->nruns, 1);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 90, 1);
  weft__group_release(s, g);
  sched_end(s, c);
}

static void test_pause_stops_group_and_subgroup_clocks(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g, h;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_create(s, g, &h), WEFT_OK);
  spawn(s, g, 0, 1, act_sleep_done, 0.5);
  spawn(s, h, 0, 2, act_sleep_done, 0.5);
  spawn(s, 0, 0, 3, act_sleep_done, 0.5);
  weft__sched_run_ready(s);
  steps(s, 1, 0.25);
  assert_int_equal(weft__sched_pause_group(s, g), WEFT_OK);
  assert_true(weft__group_paused(s, g));
  assert_true(weft__group_paused(s, h)); /* through its parent */
  assert_false(weft__group_paused(s, 0));
  steps(s, 5, 0.25);
  EXPECT_FRAME(c, 2, 3); /* the root keeps going */
  assert_int_equal(c->nruns, 4);
  assert_near(weft__group_now(s, g), 0.25);
  assert_near(weft__group_now(s, h), 0.25);
  assert_near(weft__sched_now(s), 1.5);
  assert_int_equal(weft__sched_resume_group(s, g), WEFT_OK);
  assert_false(weft__group_paused(s, h));
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 7, 1, 2);
  assert_near(weft__group_now(s, g), 0.5);
  weft__group_release(s, h);
  weft__group_release(s, g);
  sched_end(s, c);
}

static void test_pause_parks_ready_tasks_until_resume(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g, h;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_create(s, g, &h), WEFT_OK);
  /* p pauses g on frame 1, after q's timer woke q for the same frame. */
  weft_id p = spawn(s, 0, 0, 1, act_pause_group, 0.25);
  TD(s, p)->other = g;
  spawn(s, g, 0, 2, act_sleep_done, 0.25);
  weft_id i1 = spawn(s, g, 0, 3, act_idle, 0);
  weft_id i2 = spawn(s, h, 0, 4, act_idle, 0);
  weft__sched_run_ready(s);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 1, 1);
  /* Woken by hand while paused: queued, not run. */
  assert_int_equal(weft__task_wake(s, i1), WEFT_OK);
  assert_int_equal(weft__task_wake(s, i2), WEFT_OK);
  steps(s, 3, 0.25);
  assert_int_equal(c->nruns, 5);
  assert_int_equal(weft__task_state(s, i1), WEFT_TASK_READY);
  assert_int_equal(weft__task_state(s, i2), WEFT_TASK_READY);
  assert_int_equal(weft__sched_resume_group(s, g), WEFT_OK);
  steps(s, 1, 0.25);
  EXPECT_FRAME(c, 5, 2, 3, 4);
  assert_int_equal(weft__sched_task_count(s), 0);
  weft__group_release(s, h);
  weft__group_release(s, g);
  sched_end(s, c);
}

static void test_group_cancel_reaches_subgroups_and_spares_others(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l = {0};
  weft_id g, h;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_create(s, g, &h), WEFT_OK);
  weft_id g1 = spawn(s, g, 0, 1, act_sleep_done, 5.0);
  weft_id g1c = spawn(s, g, g1, 2, act_wait_lists, 0);
  TD(s, g1c)->list = &l;
  weft_id g2 = spawn(s, g, 0, 3, act_idle, 0);
  spawn(s, h, 0, 4, act_sleep_done, 5.0);
  weft_id r = spawn(s, 0, 0, 5, act_sleep_done, 1.0);
  weft_id gt[4];
  assert_int_equal(weft__group_tasks(s, g, gt, 4), 3);
  assert_true(gt[0] == g1 && gt[1] == g1c && gt[2] == g2);
  weft__sched_run_ready(s);
  assert_int_equal(weft__wlist_count(s, &l), 1);
  assert_int_equal(weft__sched_cancel_group(s, g), WEFT_OK);
  /* Subgroups first, then tasks oldest first, each after its children. */
  EXPECT_CANCELS(c, 4, 2, 1, 3);
  assert_int_equal(weft__group_tasks(s, g, gt, 4), 0);
  assert_int_equal(weft__group_tasks(s, h, gt, 4), 0);
  assert_true(weft__wlist_empty(&l));
  assert_true(weft__group_live(s, g)); /* still referenced */
  assert_true(weft__group_live(s, h));
  assert_int_equal(weft__task_state(s, r), WEFT_TASK_WAITING);
  steps(s, 60, DT60);
  EXPECT_FRAME(c, 60, 5);
  assert_int_equal(c->nruns, 6);
  weft__group_release(s, h);
  weft__group_release(s, g);
  sched_end(s, c);
}

static void act_cancel_own_group(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1) {
    sleep_now(s, self, d->secs);
    return;
  }
  ctx *c = weft__sched_user(s);
  c->note[0] = weft__sched_cancel_group(s, weft__task_group(s, self));
  c->note[1] = weft__task_doomed(s, self);
  c->note[2] = weft__task_state(s, d->other);
  c->note[3] = c->ncancel;
}

static void test_group_cancel_from_a_running_task_finishes_after_its_resume(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  weft_id o1 = spawn(s, g, 0, 1, act_sleep_done, 5.0);
  weft_id k = spawn(s, g, 0, 2, act_cancel_own_group, 0.25);
  spawn(s, g, 0, 3, act_sleep_done, 5.0);
  TD(s, k)->other = o1;
  weft__sched_run_ready(s);
  steps(s, 1, 0.25);
  /* k ran, asked to cancel its own group: the others went at once, k after. */
  EXPECT_FRAME(c, 1, 2);
  assert_int_equal(c->note[0], WEFT_EBUSY);
  assert_int_equal(c->note[1], 1);           /* k is doomed */
  assert_int_equal(c->note[2], WEFT_ESTALE); /* o1 already gone */
  assert_int_equal(c->note[3], 2);
  EXPECT_CANCELS(c, 1, 3, 2);
  assert_int_equal(weft__task_state(s, k), WEFT_ESTALE);
  assert_int_equal(weft__group_tasks(s, g, NULL, 0), 0);
  weft__group_release(s, g);
  assert_false(weft__group_live(s, g));
  sched_end(s, c);
}

static void test_group_freed_when_released_and_empty(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id e, g, p, h;
  /* Empty: freed by the release. */
  assert_int_equal(weft__group_create(s, 0, &e), WEFT_OK);
  assert_true(weft__group_live(s, e));
  weft__group_release(s, e);
  assert_false(weft__group_live(s, e));
  /* With a task: freed when the task ends. */
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  weft_id t = spawn(s, g, 0, 1, act_sleep_done, 0.5);
  weft__sched_run_ready(s);
  weft__group_release(s, g);
  assert_true(weft__group_live(s, g));
  assert_true(weft__task_group(s, t) == g);
  steps(s, 2, 0.25);
  assert_int_equal(weft__task_state(s, t), WEFT_ESTALE);
  assert_false(weft__group_live(s, g));
  /* With a subgroup: freed when the subgroup goes. */
  assert_int_equal(weft__group_create(s, 0, &p), WEFT_OK);
  assert_int_equal(weft__group_create(s, p, &h), WEFT_OK);
  weft__group_release(s, p);
  assert_true(weft__group_live(s, p));
  weft__group_release(s, h);
  assert_false(weft__group_live(s, h));
  assert_false(weft__group_live(s, p));
  /* Retained: each reference is released once. */
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_retain(s, g), WEFT_OK);
  weft__group_release(s, g);
  assert_true(weft__group_live(s, g));
  weft__group_release(s, g);
  assert_false(weft__group_live(s, g));
  /* The root is never freed. */
  assert_true(weft__sched_root(s) != 0);
  sched_end(s, c);
}

/* ---- cancellation ---- */

static void test_cancel_unwinds_children_first_in_spawn_order(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l = {0};
  weft_id p = spawn(s, 0, 0, 10, act_idle, 0);
  weft_id c1 = spawn(s, 0, p, 1, act_sleep_done, 1.0);
  weft_id c2 = task_new(s, 0, p, 2, NULL, 0);           /* never run */
  weft_id c1a = spawn(s, 0, c1, 11, act_wait_lists, 0); /* grandchild, spawned later */
  TD(s, c1a)->list = &l;
  weft__sched_run_ready(s);
  weft_id c3 = spawn(s, 0, p, 3, NULL, 0); /* woken, not yet run */
  assert_true(weft__task_parent(s, c1) == p);
  assert_true(weft__task_parent(s, c1a) == c1);
  assert_int_equal(weft__task_state(s, c3), WEFT_TASK_READY);
  assert_int_equal(weft__sched_task_count(s), 5);
  assert_int_equal(weft__task_cancel(s, p), WEFT_OK);
  EXPECT_CANCELS(c, 11, 1, 2, 3, 10);
  weft_id all[] = {p, c1, c2, c3, c1a};
  for (int i = 0; i < 5; i++) assert_int_equal(weft__task_state(s, all[i]), WEFT_ESTALE);
  assert_int_equal(weft__sched_task_count(s), 0);
  assert_true(weft__wlist_empty(&l));
  int before = c->nruns;
  steps(s, 120, DT60);
  assert_int_equal(c->nruns, before);
  assert_int_equal(c->ntimers, 0);
  sched_end(s, c);
}

/* Cleanups for the next test: cancel the task in d->other, or start a
   task that would be d->other's child (it is cancelling: parentless). */
static void cleanup_cancel_other(weft_sched *s, weft_id self, tdata *d) {
  (void)self;
  d->rc = weft__task_cancel(s, d->other);
}

static void cleanup_spawn_child(weft_sched *s, weft_id self, tdata *d) {
  (void)self;
  ctx *c = weft__sched_user(s);
  weft_id id = task_new(s, 0, d->other, 9999, act_idle, 0);
  c->note[0] = (int)weft__task_parent(s, id);
  c->note[1] = (int)WEFT_ID_INDEX(id) + 1;
}

/* A task's children are found among the other tasks of its group, more
   than 65,535 of them: a cancel unwinds each once, in spawn order, past
   cleanups that cancel the next child or start tasks; a parent that
   returns leaves its children parentless. */
static void test_many_children_among_others_cancel_in_spawn_order(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  enum { N = 70000 };
  weft_id p = spawn(s, 0, 0, 1, act_idle, 0);
  weft_id q = spawn(s, 0, 0, 2, act_idle, 0);
  weft__sched_run_ready(s);
  weft_id *kid = calloc(N, sizeof *kid), *other = calloc(N / 100, sizeof *other);
  assert_non_null(kid);
  assert_non_null(other);
  for (int i = 0; i < N; i++) {
    kid[i] = task_new(s, 0, p, 10 + i, act_idle, 0);
    if (i % 100 == 0) other[i / 100] = task_new(s, 0, i % 200 ? q : 0, -1, act_idle, 0);
  }
  TD(s, kid[5])->cleanup = cleanup_cancel_other; /* the next one goes with it */
  TD(s, kid[5])->other = kid[6];
  TD(s, kid[N - 1])->cleanup = cleanup_cancel_other; /* ...and an earlier one, gone */
  TD(s, kid[N - 1])->other = kid[7];
  TD(s, kid[9])->cleanup = cleanup_spawn_child;
  TD(s, kid[9])->other = p;
  assert_int_equal(weft__task_cancel(s, p), WEFT_OK);
  assert_int_equal(c->ncancel, N + 1);
  for (int i = 0; i < 256; i++) assert_int_equal(c->cancels[i], 10 + i);
  for (int i = 0; i < N; i++) assert_int_equal(weft__task_state(s, kid[i]), WEFT_ESTALE);
  assert_int_equal(weft__task_state(s, p), WEFT_ESTALE);
  assert_int_equal(c->note[0], 0); /* started by a cleanup: parentless, alive */
  /* kid[5]'s cleanup cancelled kid[6] (in order, once); kid[7] was gone
     when kid[N - 1]'s asked */
  assert_int_equal(weft__sched_task_count(s), 1 + N / 100 + 1);
  /* q returns: its children live on, parentless */
  assert_int_equal(weft__task_wake(s, q), WEFT_OK);
  weft__sched_run_ready(s);
  assert_int_equal(weft__task_state(s, q), WEFT_ESTALE);
  for (int i = 0; i < N / 100; i++) {
    assert_int_equal(weft__task_state(s, other[i]), WEFT_TASK_NEW);
    assert_true(weft__task_parent(s, other[i]) == 0);
  }
  free(kid);
  free(other);
  sched_end(s, c);
}

static void test_cancel_removes_wait_records_from_every_list(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l1 = {0}, l2 = {0};
  weft_id t = spawn(s, 0, 0, 1, act_wait_lists, 0.5);
  TD(s, t)->list = &l1;
  TD(s, t)->list2 = &l2;
  weft_id o = spawn(s, 0, 0, 2, act_wait_lists, 0);
  TD(s, o)->list = &l1;
  weft__sched_run_ready(s);
  assert_int_equal(weft__wlist_count(s, &l1), 2);
  assert_int_equal(weft__task_cancel(s, t), WEFT_OK);
  assert_int_equal(weft__wlist_count(s, &l1), 1);
  assert_true(weft__rec_waiter(s, weft__wlist_head(&l1)) == o);
  assert_int_equal(weft__wlist_count(s, &l2), 0);
  assert_int_equal(weft__task_state(s, t), WEFT_ESTALE);
  assert_null(weft__task_udata(s, t));
  steps(s, 60, DT60);
  assert_int_equal(c->ntimers, 0);
  assert_int_equal(c->nruns, 2);
  EXPECT_CANCELS(c, 1);
  sched_end(s, c);
}

/* Most of many sleeps (timers and next-frame sleeps) are cancelled: the
   cancelled ones never run, the rest wake in deadline order, and sleeps
   cancelled over and over do not make the scheduler grow. */
static void test_cancelled_sleeps_leave_the_rest_in_order(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  enum { N = 200 };
  weft_id t[N];
  /* deadlines 0.01 .. 2.00 s in a scrambled order (37 is prime to N) */
  for (int i = 0; i < N; i++)
    t[i] = spawn(s, 0, 0, i, act_sleep_done, i % 10 == 9 ? 0 : 0.01 * (1 + (i * 37) % N));
  weft__sched_run_ready(s);
  for (int i = 0; i < N; i++)
    if (i % 4 != 0 && i % 10 != 9) assert_int_equal(weft__task_cancel(s, t[i]), WEFT_OK);
  c->nruns = 0;
  steps(s, 1, 3.0); /* every deadline falls in this frame */
  int got[N], n = frame_tags(c, 1, got, N), k = 0;
  /* next-frame sleeps first (in sleep order), then timers by deadline */
  for (int i = 9; i < N; i += 10) assert_int_equal(got[k++], i);
  for (int d = 1; d <= N; d++)
    for (int i = 0; i < N; i += 4)
      if (i % 10 != 9 && 1 + (i * 37) % N == d) assert_int_equal(got[k++], i);
  assert_int_equal(n, k);
  size_t mem = weft__sched_memory(s);
  long total = c->total;
  c->nolog = 1;
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < N; i++) t[i] = spawn(s, 0, 0, i, act_sleep_done, 1.0 + 0.01 * i);
    weft__sched_run_ready(s);
    for (int i = 0; i < N; i++) assert_int_equal(weft__task_cancel(s, t[i]), WEFT_OK);
  }
  assert_true(weft__sched_memory(s) <= mem + 2 * N * 24);
  steps(s, 5, 3.0);
  assert_int_equal(c->total - total, 50 * N); /* the first resumes only */
  sched_end(s, c);
}

static void test_cancel_of_finished_task_is_stale_and_does_nothing(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id t = spawn(s, 0, 0, 1, NULL, 0);
  weft__sched_run_ready(s);
  assert_int_equal(weft__task_state(s, t), WEFT_ESTALE);
  assert_int_equal(weft__task_cancel(s, t), WEFT_ESTALE);
  assert_int_equal(c->ncancel, 0);
  weft_id u = spawn(s, 0, 0, 2, act_idle, 0);
  weft__sched_run_ready(s);
  assert_int_equal(weft__task_cancel(s, u), WEFT_OK);
  assert_int_equal(weft__task_cancel(s, u), WEFT_ESTALE); /* twice: once */
  EXPECT_CANCELS(c, 2);
  sched_end(s, c);
}

/* Cancels itself, notes what it sees in note[0..5], then begins a sleep
   as a task unwinding would not (the cancel must still win). */
static void act_cancel_self(weft_sched *s, weft_id self, tdata *d) {
  ctx *c = weft__sched_user(s);
  c->note[0] = weft__task_cancel(s, self);
  c->note[1] = weft__task_doomed(s, self);
  c->note[2] = weft__task_state(s, self);
  c->note[3] = c->ncancel;
  c->note[4] = weft__task_doomed(s, d->other); /* its child, through it */
  c->note[5] = weft__task_state(s, d->other);
  sleep_now(s, self, 0.25);
}

static void test_cancel_of_running_task_is_deferred_until_resume_returns(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id t = spawn(s, 0, 0, 1, act_cancel_self, 0);
  weft_id ch = task_new(s, 0, t, 2, act_idle, 0);
  TD(s, t)->other = ch;
  weft__sched_run_ready(s);
  EXPECT_FRAME(c, 0, 1);
  assert_int_equal(c->note[0], WEFT_EBUSY);
  assert_int_equal(c->note[1], 1);
  assert_int_equal(c->note[2], WEFT_TASK_RUNNING);
  assert_int_equal(c->note[3], 0); /* nothing unwound inside the resume */
  assert_int_equal(c->note[4], 1);
  assert_int_equal(c->note[5], WEFT_TASK_NEW);
  EXPECT_CANCELS(c, 2, 1);
  assert_int_equal(weft__task_state(s, t), WEFT_ESTALE);
  assert_int_equal(weft__task_state(s, ch), WEFT_ESTALE);
  assert_int_equal(weft__task_doomed(s, t), 0);
  steps(s, 30, DT60); /* the sleep it began went with it */
  assert_int_equal(c->ntimers, 0);
  assert_int_equal(c->nruns, 1);
  sched_end(s, c);
}

/* Cancels itself with allocations failing, then again with them back,
   noting each result and whether it is doomed after (note[0..3]); yields
   at once (suspended, no records). */
static void act_cancel_self_out_of_memory(weft_sched *s, weft_id self, tdata *d) {
  (void)d;
  ctx *c = weft__sched_user(s);
  c->refuse = 1;
  c->note[0] = weft__task_cancel(s, self);
  c->note[1] = weft__task_doomed(s, self);
  c->refuse = 0;
  c->note[2] = weft__task_cancel(s, self);
  c->note[3] = weft__task_doomed(s, self);
}

/* A cancel that cannot be put off (no memory to note it) leaves the task
   as it was: not doomed, so it is not told to yield for a cancel that
   will never run, and a later cancel is put off and runs as usual. */
static void test_cancel_of_running_task_out_of_memory_leaves_it_undoomed(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id t = spawn(s, 0, 0, 1, act_cancel_self_out_of_memory, 0);
  weft__sched_run_ready(s);
  EXPECT_FRAME(c, 0, 1);
  assert_int_equal(c->note[0], WEFT_ENOMEM);
  assert_int_equal(c->note[1], 0);
  assert_int_equal(c->note[2], WEFT_EBUSY);
  assert_int_equal(c->note[3], 1);
  EXPECT_CANCELS(c, 1);
  assert_int_equal(weft__task_state(s, t), WEFT_ESTALE);
  sched_end(s, c);
}

/* Cancels its parent, notes what it sees in note[0..4], and yields at
   once (suspended, no records). */
static void act_cancel_parent(weft_sched *s, weft_id self, tdata *d) {
  (void)d;
  ctx *c = weft__sched_user(s);
  weft_id p = weft__task_parent(s, self);
  c->note[0] = weft__task_cancel(s, p);
  c->note[1] = weft__task_doomed(s, self);
  c->note[2] = weft__task_doomed(s, p);
  c->note[3] = weft__task_state(s, p);
  c->note[4] = c->ncancel;
}

static void test_cancel_of_ancestor_from_running_child_is_deferred(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id p = spawn(s, 0, 0, 1, act_idle, 0);
  weft__sched_run_ready(s);
  weft_id ch = spawn(s, 0, p, 2, act_cancel_parent, 0);
  weft__sched_run_ready(s);
  EXPECT_FRAME(c, 0, 1, 2);
  assert_int_equal(c->note[0], WEFT_EBUSY);
  assert_int_equal(c->note[1], 1);
  assert_int_equal(c->note[2], 1);
  assert_int_equal(c->note[3], WEFT_TASK_WAITING);
  assert_int_equal(c->note[4], 0);
  EXPECT_CANCELS(c, 2, 1);
  assert_int_equal(weft__task_state(s, p), WEFT_ESTALE);
  assert_int_equal(weft__task_state(s, ch), WEFT_ESTALE);
  sched_end(s, c);
}

/* Fails; notes the result and the cancels seen when finish returned. */
static void act_finish_failed(weft_sched *s, weft_id self, tdata *d) {
  (void)d;
  ctx *c = weft__sched_user(s);
  c->note[0] = weft__task_finish(s, self, WEFT_TASK_FAILED);
  c->note[1] = c->ncancel;
}

static void test_finish_failed_cancels_children(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id p = spawn(s, 0, 0, 1, act_finish_failed, 0);
  weft_id c1 = spawn(s, 0, p, 2, act_sleep_done, 1.0);
  weft_id c2 = task_new(s, 0, p, 3, NULL, 0);
  weft__sched_run_ready(s);
  EXPECT_FRAME(c, 0, 1); /* c1 was cancelled while queued: it never ran */
  assert_int_equal(c->note[0], WEFT_OK);
  assert_int_equal(c->note[1], 2);
  EXPECT_CANCELS(c, 2, 3); /* children only: p failed, it was not cancelled */
  assert_int_equal(weft__task_state(s, p), WEFT_ESTALE);
  assert_int_equal(weft__task_state(s, c1), WEFT_ESTALE);
  assert_int_equal(weft__task_state(s, c2), WEFT_ESTALE);
  steps(s, 2, DT60);
  assert_int_equal(c->nruns, 1);
  sched_end(s, c);
}

static void test_finish_done_leaves_children_parentless_in_group(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  weft_id gp = spawn(s, g, 0, 1, act_idle, 0);
  weft_id p = spawn(s, g, gp, 2, NULL, 0); /* finishes DONE at once */
  weft_id ch = task_new(s, g, p, 3, act_sleep_done, 0.5);
  assert_int_equal(weft__task_wake(s, ch), WEFT_OK);
  weft__sched_run_ready(s);
  assert_int_equal(weft__task_state(s, p), WEFT_ESTALE);
  assert_int_equal(weft__task_state(s, ch), WEFT_TASK_WAITING);
  assert_true(weft__task_parent(s, ch) == 0);
  assert_true(weft__task_group(s, ch) == g);
  /* Its former grandparent's cancel no longer reaches it. */
  assert_int_equal(weft__task_cancel(s, gp), WEFT_OK);
  EXPECT_CANCELS(c, 1);
  steps(s, 30, DT60);
  EXPECT_FRAME(c, 30, 3);
  assert_int_equal(c->ncancel, 1);
  weft__group_release(s, g);
  sched_end(s, c);
}

/* ---- stale handles ---- */

static void check_dead_task(weft_sched *s, weft_id x) {
  weft_wlist l = {0};
  char buf[64] = "x";
  assert_null(weft__task_udata(s, x));
  assert_int_equal(weft__task_state(s, x), WEFT_ESTALE);
  assert_true(weft__task_group(s, x) == 0);
  assert_true(weft__task_parent(s, x) == 0);
  assert_int_equal(weft__task_wake(s, x), WEFT_ESTALE);
  assert_int_equal(weft__task_finish(s, x, WEFT_TASK_DONE), WEFT_ESTALE);
  assert_int_equal(weft__task_cancel(s, x), WEFT_ESTALE);
  assert_int_equal(weft__task_cancel_children(s, x), WEFT_ESTALE);
  assert_int_equal(weft__task_doomed(s, x), 0);
  assert_null(weft__task_waiters(s, x));
  assert_int_equal(weft__wait_begin(s, x, WEFT_WAIT_ALL), WEFT_ESTALE);
  assert_int_equal(weft__wait_sleep(s, x, 0, 1.0, 0), WEFT_ESTALE);
  assert_int_equal(weft__wait_on(s, x, 0, &l), WEFT_ESTALE);
  assert_true(weft__wlist_empty(&l));
  weft__wait_commit(s, x);
  assert_int_equal(weft__wait_pending(s, x), 0);
  assert_int_equal(weft__wait_failed(s, x), 0);
  weft__wait_describe(s, x, buf, sizeof buf);
  assert_string_equal(buf, "");
  weft__task_enter(s, x);
  assert_true(weft__sched_current(s) == 0);
  weft__task_leave(s, x);
  assert_int_equal(weft__task_run(s, x), WEFT_ESTALE);
  if (x != 0) { /* parent 0 means none */
    weft_id out = 77;
    assert_int_equal(weft__task_create(s, 0, x, &cls, &out, NULL), WEFT_ESTALE);
    assert_true(out == 77);
  }
}

/* Runs d->other now (a task started at once by the one spawning it),
   noting what the nested run saw: note[0] the call's result, note[1] the
   current task after it, note[2] a second run of itself from inside;
   then sleeps secs and finishes on its next resume. */
static void act_run_other(weft_sched *s, weft_id self, tdata *d) {
  ctx *c = weft__sched_user(s);
  if (d->runs > 1) {
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
    return;
  }
  c->note[0] = weft__task_run(s, d->other);
  c->note[1] = weft__sched_current(s) == self;
  c->note[2] = weft__task_run(s, self);
  sleep_now(s, self, d->secs);
}

/* Records the task current while it runs (note[3]), then finishes. */
static void act_note_current(weft_sched *s, weft_id self, tdata *d) {
  ctx *c = weft__sched_user(s);
  (void)d;
  c->note[3] = weft__sched_current(s) == self;
  assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
}

static void test_a_task_run_now_runs_inside_its_spawner_and_leaves_the_queue(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id inner = spawn(s, 0, 0, 2, act_note_current, 0); /* queued: run now takes it off */
  weft_id outer = spawn(s, 0, 0, 1, act_run_other, 0.5);
  TD(s, outer)->other = inner;
  /* the queue holds inner first: make outer run first by running it now */
  assert_int_equal(weft__task_run(s, outer), WEFT_OK);
  assert_int_equal(c->note[0], WEFT_OK);
  assert_int_equal(c->note[1], 1);           /* the spawner is current again */
  assert_int_equal(c->note[2], WEFT_ESTATE); /* a running task does not run again */
  assert_int_equal(c->note[3], 1);           /* the task run now was current */
  assert_null(weft__task_udata(s, inner));   /* it ran to its end inside */
  assert_int_equal(weft__task_state(s, outer), WEFT_TASK_WAITING);
  assert_true(weft__sched_current(s) == 0);
  c->nruns = 0;
  steps(s, 1, DT60); /* neither runs again from the queue this frame */
  assert_int_equal(runs_in_frame(c, 1), 0);
  steps(s, 30, DT60);
  EXPECT_FRAME(c, 30, 1);
  assert_null(weft__task_udata(s, outer));
  sched_end(s, c);
}

static void test_stale_task_handles_fail_safely(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id a = spawn(s, 0, 0, 1, act_idle, 0);
  weft__sched_run_ready(s);
  assert_int_equal(weft__task_cancel(s, a), WEFT_OK);
  weft_id b = task_new(s, 0, 0, 2, act_idle, 0); /* takes a's slot */
  assert_int_equal(WEFT_ID_INDEX(a), WEFT_ID_INDEX(b));
  assert_true(a != b);
  check_dead_task(s, a);
  check_dead_task(s, 0);
  check_dead_task(s, WEFT_ID_MAKE(100000, 1));
  check_dead_task(s, WEFT_ID_MAKE(WEFT_ID_INDEX(b), WEFT_ID_GEN(b) + 1));
  check_dead_task(s, WEFT_ID_MAKE(WEFT_ID_INDEX(b), WEFT_ID_GEN(b) + 2));
  /* b is untouched. */
  assert_int_equal(weft__task_state(s, b), WEFT_TASK_NEW);
  assert_int_equal(TD(s, b)->tag, 2);
  assert_int_equal(weft__sched_task_count(s), 1);
  assert_int_equal(c->ncancel, 1);
  assert_int_equal(weft__task_wake(s, b), WEFT_OK);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 1, 2);
  sched_end(s, c);
}

static void test_stale_group_handles_fail_safely(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g1, g2, out = 77;
  assert_int_equal(weft__group_create(s, 0, &g1), WEFT_OK);
  weft__group_release(s, g1);
  assert_int_equal(weft__group_create(s, 0, &g2), WEFT_OK); /* takes g1's slot */
  assert_int_equal(WEFT_ID_INDEX(g1), WEFT_ID_INDEX(g2));
  weft_id bad[] = {g1, WEFT_ID_MAKE(100000, 1),
                   WEFT_ID_MAKE(WEFT_ID_INDEX(g2), WEFT_ID_GEN(g2) + 2)};
  for (int i = 0; i < 3; i++) {
    weft_id x = bad[i];
    assert_false(weft__group_live(s, x));
    assert_int_equal(weft__task_create(s, x, 0, &cls, &out, NULL), WEFT_ESTALE);
    assert_int_equal(weft__group_create(s, x, &out), WEFT_ESTALE);
    assert_true(out == 77);
    assert_int_equal(weft__sched_pause_group(s, x), WEFT_ESTALE);
    assert_int_equal(weft__sched_resume_group(s, x), WEFT_ESTALE);
    assert_int_equal(weft__group_set_scale(s, x, 2.0), WEFT_ESTALE);
    assert_int_equal(weft__sched_cancel_group(s, x), WEFT_ESTALE);
    assert_int_equal(weft__group_retain(s, x), WEFT_ESTALE);
    assert_int_equal(weft__group_paused(s, x), 0);
    assert_true(weft__group_scale(s, x) == 0.0);
    assert_true(weft__group_now(s, x) == 0.0);
    assert_true(weft__group_parent(s, x) == 0);
    assert_int_equal(weft__group_tasks(s, x, &out, 1), 0);
    weft__group_release(s, x);
    weft__group_release(s, x);
  }
  /* g2 kept its reference and its settings. */
  assert_true(weft__group_live(s, g2));
  assert_false(weft__group_paused(s, g2));
  assert_true(weft__group_scale(s, g2) == 1.0);
  assert_int_equal(weft__sched_task_count(s), 0);
  weft__group_release(s, g2);
  assert_false(weft__group_live(s, g2));
  sched_end(s, c);
}

/* ---- limits and memory ---- */

static void test_max_tasks_limit_gives_elimit(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 4);
  weft_id t[4];
  for (int i = 0; i < 4; i++) t[i] = task_new(s, 0, 0, i + 1, NULL, 0);
  weft_id out = 77;
  assert_int_equal(weft__task_create(s, 0, 0, &cls, &out, NULL), WEFT_ELIMIT);
  assert_true(out == 77);
  assert_int_equal(weft__sched_task_count(s), 4);
  assert_int_equal(weft__task_cancel(s, t[2]), WEFT_OK);
  assert_int_equal(weft__task_create(s, 0, 0, &cls, &out, NULL), WEFT_OK);
  assert_int_equal(weft__task_create(s, 0, 0, &cls, &out, NULL), WEFT_ELIMIT);
  sched_end(s, c);
}

/* Completes every record in its list each frame. */
static void act_producer(weft_sched *s, weft_id self, tdata *d) {
  while (!weft__wlist_empty(d->list)) weft__rec_complete(s, weft__wlist_head(d->list), 0);
  sleep_now(s, self, 0);
}

/* Waits for the first of its list or a long sleep, forever. */
static void act_listener(weft_sched *s, weft_id self, tdata *d) {
  assert_int_equal(weft__wait_begin(s, self, WEFT_WAIT_FIRST), WEFT_OK);
  assert_int_equal(weft__wait_on(s, self, 0, d->list), WEFT_OK);
  assert_int_equal(weft__wait_sleep(s, self, 1, 10.0, 0), WEFT_OK);
  weft__wait_commit(s, self);
}

static void test_steady_frame_allocates_nothing(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l = {0};
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, g, 0.5), WEFT_OK);
  c->nolog = 1;
  for (int i = 0; i < 300; i++) spawn(s, i % 2 ? g : 0, 0, i, act_sleep_loop, 0);
  for (int i = 0; i < 100; i++) spawn(s, 0, 0, 1000 + i, act_sleep_loop, DT60);
  for (int i = 0; i < 50; i++) TD(s, spawn(s, 0, 0, 2000 + i, act_listener, 0))->list = &l;
  TD(s, spawn(s, 0, 0, 3000, act_producer, 0))->list = &l;
  weft__sched_run_ready(s);
  steps(s, 5, DT60); /* warm-up */
  size_t mem = weft__sched_memory(s);
  long calls = c->mem.calls;
  long long live = c->mem.live;
  long before = c->total;
  for (int f = 0; f < 100; f++) {
    steps(s, 1, DT60);
    assert_int_equal(weft__sched_memory(s), mem);
  }
  assert_int_equal(c->mem.calls, calls);
  assert_int_equal(c->mem.live, live);
  assert_int_equal(c->total - before, 100 * (300 + 100 + 50 + 1));
  weft__group_release(s, g);
  sched_end(s, c);
}

static void test_destroy_is_clean_after_normal_use(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l = {0};
  weft_id g, h;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_create(s, g, &h), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, h, 2.0), WEFT_OK);
  for (int i = 0; i < 600; i++)
    spawn(s, i % 3 == 0 ? 0 : i % 3 == 1 ? g : h, 0, i, act_sleep_done, (i % 7) * 0.1);
  weft_id w = spawn(s, 0, 0, 900, act_wait_lists, 0);
  TD(s, w)->list = &l;
  weft__sched_run_ready(s);
  steps(s, 60, DT60);
  weft__rec_complete(s, weft__wlist_head(&l), 0);
  steps(s, 2, DT60);
  assert_int_equal(weft__sched_task_count(s), 0);
  weft__group_release(s, h);
  weft__group_release(s, g);
  assert_int_equal(weft__sched_destroy(s), 0);
  assert_int_equal(c->mem.live, 0);
  assert_int_equal(c->mem.bad_osize, 0);
  assert_int_equal(c->ncancel, 0);
}

static void test_destroy_cancels_live_tasks_children_first(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_wlist l = {0};
  weft_id g, h;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  assert_int_equal(weft__group_create(s, g, &h), WEFT_OK);
  weft_id p = spawn(s, 0, 0, 1, act_sleep_done, INFINITY);
  weft_id c1 = spawn(s, 0, p, 2, act_wait_lists, 0);
  TD(s, c1)->list = &l;
  spawn(s, 0, p, 3, act_sleep_done, 5.0);
  spawn(s, g, 0, 4, act_idle, 0);
  spawn(s, h, 0, 5, act_sleep_done, 0.5);
  weft__sched_run_ready(s);
  spawn(s, 0, 0, 6, NULL, 0); /* queued, never run */
  weft__group_release(s, h);
  weft__group_release(s, g);
  assert_int_equal(weft__sched_task_count(s), 6);
  assert_int_equal(weft__sched_destroy(s), 0);
  assert_int_equal(c->mem.live, 0);
  assert_int_equal(c->mem.bad_osize, 0);
  assert_int_equal(c->ncancel, 6);
  int pos[8] = {0};
  for (int i = 0; i < c->ncancel; i++) pos[c->cancels[i]] = i + 1;
  for (int t = 2; t <= 6; t++) assert_true(pos[t] > 0);
  assert_true(pos[1] > pos[2] && pos[1] > pos[3]); /* children first */
  assert_true(pos[2] < pos[3]);                    /* in spawn order */
  assert_true(weft__wlist_empty(&l));              /* the list outlives it: no dangling record */
}

/* ---- clocks ---- */

static void test_step_rejects_bad_dt_and_counts_frames(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  assert_int_equal(weft__sched_frame(s), 0);
  assert_true(weft__sched_now(s) == 0.0);
  assert_int_equal(weft__sched_step(s, NAN), WEFT_EINVAL);
  assert_int_equal(weft__sched_step(s, -DT60), WEFT_EINVAL);
  assert_int_equal(weft__sched_step(s, INFINITY), WEFT_EINVAL);
  assert_int_equal(weft__sched_step(s, WEFT_MAX_DT * 2), WEFT_EINVAL);
  assert_int_equal(weft__sched_frame(s), 0);
  assert_true(weft__sched_now(s) == 0.0);
  assert_true(weft__sched_realtime(s) == 0.0);
  steps(s, 60, DT60);
  assert_int_equal(weft__sched_frame(s), 60);
  assert_near(weft__sched_now(s), 1.0);
  assert_near(weft__sched_realtime(s), 1.0);
  assert_int_equal(weft__sched_step(s, 0.0), WEFT_OK);
  assert_int_equal(weft__sched_frame(s), 61);
  sched_end(s, c);
}

/* ---- real-time sleeps ---- */

static void act_real_sleep(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1) {
    assert_int_equal(weft__wait_begin(s, self, WEFT_WAIT_ALL), WEFT_OK);
    assert_int_equal(weft__wait_sleep(s, self, 4, d->secs, 1), WEFT_OK);
    weft__wait_commit(s, self);
  } else {
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
  }
}

static void test_real_sleep_ignores_time_scale(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  assert_int_equal(weft__group_set_scale(s, 0, 0.25), WEFT_OK);
  weft_id t = spawn(s, 0, 0, 1, act_real_sleep, 0.5);
  weft__sched_run_ready(s);
  steps(s, 29, DT60);
  assert_int_equal(c->nruns, 1);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 30, 1);
  assert_int_equal(c->ntimers, 1);
  assert_true(c->timers[0].waiter == t);
  assert_int_equal(c->timers[0].slot, 4);
  assert_near(c->timers[0].elapsed, 0.5); /* real seconds */
  sched_end(s, c);
}

static void test_real_sleep_counts_through_pause(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  spawn(s, g, 0, 1, act_real_sleep, 0.5);
  weft__sched_run_ready(s);
  assert_int_equal(weft__sched_pause_group(s, g), WEFT_OK);
  steps(s, 29, DT60);
  assert_int_equal(c->nruns, 1);
  steps(s, 1, DT60);
  assert_int_equal(c->ntimers, 1); /* the real clock ran on */
  assert_int_equal(c->timers[0].frame, 30);
  EXPECT_FRAME(c, 30, 1); /* and the task resumed though its group is paused */
  assert_int_equal(weft__group_paused(s, g), 1);
  weft__group_release(s, g);
  sched_end(s, c);
}

/* First of a game-clock and a real-clock sleep that fall due together,
   next to a third clock due the same frame: the task wakes once. */
static void act_first_game_or_real(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1) {
    assert_int_equal(weft__wait_begin(s, self, WEFT_WAIT_FIRST), WEFT_OK);
    assert_int_equal(weft__wait_sleep(s, self, 0, d->secs, 0), WEFT_OK);
    assert_int_equal(weft__wait_sleep(s, self, 1, d->secs, 1), WEFT_OK);
    weft__wait_commit(s, self);
  } else {
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
  }
}

static void test_first_of_game_and_real_sleep_wakes_once(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id a, b;
  assert_int_equal(weft__group_create(s, 0, &a), WEFT_OK);
  assert_int_equal(weft__group_create(s, 0, &b), WEFT_OK);
  spawn(s, 0, 0, 1, act_sleep_done, 0); /* a game timer fires on frame 1 */
  weft_id x = spawn(s, a, 0, 2, act_first_game_or_real, 0.5);
  weft_id y = spawn(s, b, 0, 3, act_sleep_done, 0.5);
  weft__sched_run_ready(s);
  steps(s, 30, DT60);
  EXPECT_FRAME(c, 30, 2, 3);
  assert_int_equal(c->ntimers, 3);
  assert_true(c->timers[1].waiter == x);
  assert_int_equal(c->timers[1].slot, 0);
  assert_true(c->timers[2].waiter == y);
  steps(s, 30, DT60);
  assert_int_equal(c->ntimers, 3);
  weft__group_release(s, a);
  weft__group_release(s, b);
  sched_end(s, c);
}

/* Same clocks, but the real clock keeps a later timer (10 s) behind the
   one the FIRST wait drops: that timer must not fire with the others. */
static void test_sleep_never_completes_before_its_deadline_across_clocks(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id a, b;
  assert_int_equal(weft__group_create(s, 0, &a), WEFT_OK);
  assert_int_equal(weft__group_create(s, 0, &b), WEFT_OK);
  spawn(s, 0, 0, 1, act_sleep_done, 0);
  spawn(s, a, 0, 2, act_first_game_or_real, 0.5);
  weft_id z = spawn(s, 0, 0, 3, act_real_sleep, 10.0);
  spawn(s, b, 0, 4, act_sleep_done, 0.5);
  weft__sched_run_ready(s);
  steps(s, 30, DT60);
  EXPECT_FRAME(c, 30, 2, 4);
  assert_int_equal(weft__task_state(s, z), WEFT_TASK_WAITING);
  for (int i = 0; i < c->ntimers && i < 256; i++) assert_true(c->timers[i].waiter != z);
  steps(s, 569, DT60);
  assert_int_equal(weft__task_state(s, z), WEFT_TASK_WAITING);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 600, 3);
  weft__group_release(s, a);
  weft__group_release(s, b);
  sched_end(s, c);
}

/* A cleanup that starts a task in the group being cancelled. */
static void cleanup_spawn(weft_sched *s, weft_id self, tdata *d) {
  spawn(s, weft__task_group(s, self), 0, 50 + d->tag, act_idle, 0);
}

static void test_group_cancel_leaves_tasks_started_by_cleanups(void **state) {
  ctx *c = *state;
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  weft_id a = spawn(s, g, 0, 1, act_idle, 0);
  TD(s, a)->cleanup = cleanup_spawn;
  spawn(s, g, 0, 2, act_idle, 0);
  weft__sched_run_ready(s);
  assert_int_equal(weft__sched_cancel_group(s, g), WEFT_OK);
  EXPECT_CANCELS(c, 1, 2);
  weft_id left[2];
  assert_int_equal(weft__group_tasks(s, g, left, 2), 1);
  assert_int_equal(TD(s, left[0])->tag, 51);
  steps(s, 1, DT60);
  EXPECT_FRAME(c, 1, 51);
  weft__group_release(s, g);
  sched_end(s, c);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* ---- saving and loading ---- */

#include "membuf.h"

/* The lists outside the scheduler a test's tasks wait on: two of them
   in each of two schedulers. */
typedef struct lists {
  weft_wlist v[2];
} lists;

static uint32_t list_name(void *ud, const weft_wlist *l) {
  lists *ls = ud;
  return l == &ls->v[0] ? 1 : l == &ls->v[1] ? 2 : 0;
}
static weft_wlist *list_at(void *ud, uint32_t n) {
  lists *ls = ud;
  return n == 1 ? &ls->v[0] : n == 2 ? &ls->v[1] : NULL;
}
static const char *class_name(void *ud, const weft_task_class *k) {
  (void)ud;
  return k == &cls ? "test" : NULL;
}
static const weft_task_class *class_at(void *ud, const char *name) {
  (void)ud;
  return strcmp(name, "test") == 0 ? &cls : NULL;
}

static weft_sched_names names_of(lists *ls) {
  return (weft_sched_names){list_name, list_at, class_name, class_at, NULL, ls};
}

static void save_to(weft_sched *s, membuf *b, lists *ls) {
  weft_sched_names nm = names_of(ls);
  weft_wire w = {mem_write, b, NULL};
  assert_int_equal(weft__sched_save(s, &w, &nm), WEFT_OK);
  assert_null(w.err);
}

/* Sleeps secs, then completes its waiters (their value: none) and
   finishes. */
static void act_sleep_then_end(weft_sched *s, weft_id self, tdata *d) {
  if (d->runs == 1) {
    sleep_now(s, self, d->secs);
    return;
  }
  weft_wlist *l = weft__task_listed(s, self);
  weft_rec r;
  while (l && (r = weft__wlist_head(l)) != 0) weft__rec_complete(s, r, 0);
  assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
}

/* Sleeps secs on the real clock (slot 0) and secs2 on its group's (slot
   1), first of the two, forever. */
static void act_real_or_game(weft_sched *s, weft_id self, tdata *d) {
  assert_int_equal(weft__wait_begin(s, self, WEFT_WAIT_FIRST), WEFT_OK);
  assert_int_equal(weft__wait_sleep(s, self, 0, d->secs, 1), WEFT_OK);
  assert_int_equal(weft__wait_sleep(s, self, 1, d->secs2, 0), WEFT_OK);
  weft__wait_commit(s, self);
}

/* The test's world, the same in any scheduler: returns the groups to
   pause, scale and cancel later. */
static void world(weft_sched *s, lists *ls, weft_id *paused, weft_id *slow) {
  weft_id g1, g2;
  assert_int_equal(weft__group_create(s, 0, &g1), WEFT_OK);
  assert_int_equal(weft__group_create(s, g1, &g2), WEFT_OK);
  assert_int_equal(weft__group_set_scale(s, g1, 0.5), WEFT_OK);
  spawn(s, 0, 0, 1, act_sleep_loop, 0.25);
  spawn(s, 0, 0, 2, act_sleep_loop, 0.25); /* the same deadlines as 1: after it */
  spawn(s, 0, 0, 3, act_next_loop, 0);
  spawn(s, 0, 0, 4, act_sleep_only_loop, 0.1);
  spawn(s, g1, 0, 5, act_sleep_loop, 0.3);
  weft_id t6 = spawn(s, 0, 0, 6, act_wait_lists, 2.0);
  TD(s, t6)->mode = WEFT_WAIT_FIRST;
  TD(s, t6)->list = &ls->v[0];
  weft_id t7 = spawn(s, 0, 0, 7, act_wait_lists, 0);
  TD(s, t7)->list = &ls->v[0];
  TD(s, t7)->list2 = &ls->v[1];
  weft_id t9 = spawn(s, 0, 0, 9, act_sleep_then_end, 0.7);
  weft_id t8 = spawn(s, 0, 0, 8, act_wait_lists, 0);
  TD(s, t8)->list = weft__task_waiters(s, t9);
  spawn(s, g2, 0, 10, act_sleep_loop, 0.2);
  spawn(s, 0, 0, 11, act_sleep_loop, INFINITY);
  weft_id t12 = spawn(s, g1, 0, 12, act_real_or_game, 0.4);
  TD(s, t12)->secs2 = 0.35;
  weft_id t13 = spawn(s, 0, 0, 13, act_sleep_loop, 0.5);
  spawn(s, 0, t13, 14, act_sleep_loop, 0.15);
  *paused = g2;
  *slow = g1;
}

/* What happens from frame `from` on: every resume and timer delivery, in
   order. */
static int log_from(const ctx *c, uint64_t from, int *out, int max) {
  int n = 0;
  for (int i = 0; i < c->nruns; i++)
    if (c->runs[i].frame >= from && n + 2 <= max) {
      out[n++] = c->runs[i].tag;
      out[n++] = (int)c->runs[i].frame;
    }
  return n;
}

/* Saved between frames and loaded into a fresh scheduler, a world goes
   on exactly as the one that was saved: the same resumes, in the same
   order, on the same frames, through timers of every clock, next-frame
   sleeps, lists of waiters inside and outside the scheduler, a paused
   group, a scaled one, a parent and child; and the handles stay. */
static void test_saved_scheduler_goes_on_as_the_one_it_was(void **state) {
  ctx *c = *state;
  ctx *c2 = calloc(1, sizeof *c2);
  assert_non_null(c2);
  lists la = {0}, lb = {0};
  weft_sched *a = sched_new(c, 0);
  weft_id paused, slow;
  world(a, &la, &paused, &slow);
  steps(a, 5, DT60);
  assert_int_equal(weft__sched_pause_group(a, paused), WEFT_OK);
  steps(a, 15, DT60);
  membuf buf = {0};
  save_to(a, &buf, &la);

  weft_sched *b = sched_new(c2, 0);
  c->s = a;
  lb = la; /* the lists' owner brings them back first */
  weft_sched_names nm = names_of(&lb);
  weft_wire rd = {mem_read, &buf, NULL};
  assert_int_equal(weft__sched_load(b, &rd, &nm), WEFT_OK);
  assert_null(rd.err);
  assert_int_equal(buf.at, buf.n);
  assert_int_equal(weft__sched_frame(b), 20);
  assert_int_equal(weft__sched_task_count(b), weft__sched_task_count(a));
  assert_near(weft__sched_now(b), weft__sched_now(a));
  assert_true(weft__group_live(b, paused) && weft__group_live(b, slow));
  assert_near(weft__group_scale(b, slow), 0.5);

  weft_sched *both[2] = {a, b};
  ctx *cs[2] = {c, c2};
  lists *ls[2] = {&la, &lb};
  for (int k = 0; k < 2; k++) {
    weft_sched *s = both[k];
    cs[k]->s = s;
    steps(s, 10, DT60);
    weft_rec r = weft__wlist_head(&ls[k]->v[0]);
    while ((r = weft__wlist_head(&ls[k]->v[0])) != 0) weft__rec_complete(s, r, 0);
    steps(s, 10, DT60);
    assert_int_equal(weft__sched_resume_group(s, paused), WEFT_OK);
    steps(s, 5, DT60);
    while ((r = weft__wlist_head(&ls[k]->v[1])) != 0) weft__rec_complete(s, r, 1);
    steps(s, 60, DT60);
    assert_int_equal(weft__sched_cancel_group(s, slow), WEFT_OK);
    steps(s, 30, DT60);
  }
  static int la_log[2 * MAXRUNS], lb_log[2 * MAXRUNS];
  int na = log_from(c, 21, la_log, 2 * MAXRUNS), nb = log_from(c2, 21, lb_log, 2 * MAXRUNS);
  assert_true(na > 200); /* every kind of wake happened after the load */
  assert_int_equal(na, nb);
  assert_memory_equal(la_log, lb_log, sizeof(int) * (size_t)na);
  assert_int_equal(c->ncancel, c2->ncancel);
  assert_memory_equal(c->cancels, c2->cancels, sizeof c->cancels);
  /* the timers' deliveries after the load: the same waiters (handles kept) */
  int t0 = 0;
  while (t0 < c->ntimers && t0 < 256 && c->timers[t0].frame <= 20) t0++;
  assert_int_equal(c->ntimers - t0, c2->ntimers);
  for (int i = 0; i < c2->ntimers && t0 + i < 256 && i < 256; i++) {
    assert_true(c->timers[t0 + i].waiter == c2->timers[i].waiter);
    assert_int_equal(c->timers[t0 + i].slot, c2->timers[i].slot);
    assert_near(c->timers[t0 + i].elapsed, c2->timers[i].elapsed);
    assert_int_equal(c->timers[t0 + i].frame, c2->timers[i].frame);
  }
  weft__group_release(b, paused);
  weft__group_release(b, slow);
  sched_end(b, c2);
  c->s = a;
  weft__group_release(a, paused);
  weft__group_release(a, slow);
  sched_end(a, c);
  free(buf.p);
  free(c2);
}

/* A parent with more children than its count holds (65,535), some of
   them ended since, is saved and loaded as it is, and its cancel in the
   loaded scheduler still finds every child left. */
static void test_a_save_keeps_a_parent_of_many_children(void **state) {
  ctx *c = *state;
  ctx *c2 = calloc(1, sizeof *c2);
  assert_non_null(c2);
  lists la = {0};
  enum { N = 70000, ENDED = 6000 };
  weft_sched *a = sched_new(c, 0);
  weft_id p = spawn(a, 0, 0, 1, act_idle, 0);
  weft__sched_run_ready(a);
  weft_id *kid = calloc(N, sizeof *kid);
  assert_non_null(kid);
  for (int i = 0; i < N; i++) kid[i] = task_new(a, 0, p, 10 + i, act_idle, 0);
  for (int i = 0; i < ENDED; i++) assert_int_equal(weft__task_cancel(a, kid[10 * i]), WEFT_OK);
  free(kid);
  membuf buf = {0};
  save_to(a, &buf, &la);
  weft_sched *b = sched_new(c2, 0);
  weft_sched_names nm = names_of(&la);
  weft_wire rd = {mem_read, &buf, NULL};
  assert_int_equal(weft__sched_load(b, &rd, &nm), WEFT_OK);
  assert_null(rd.err);
  assert_int_equal(weft__sched_task_count(b), 1 + N - ENDED);
  assert_int_equal(weft__task_cancel(b, p), WEFT_OK);
  assert_int_equal(c2->ncancel, N - ENDED + 1);
  assert_int_equal(c2->cancels[0], 11); /* the first child left, in spawn order */
  assert_int_equal(weft__sched_task_count(b), 0);
  sched_end(b, c2);
  c->s = a;
  sched_end(a, c);
  free(buf.p);
  free(c2);
}

/* Next-frame returns are found where they wait, inside a frame and in a
   save: one woken again by a task after it runs again that frame; one
   cancelled before its turn never runs; the ones a frame budget leaves
   over run first next frame, and a save made then goes on as the world
   it was. */
static void test_next_frame_returns_are_found_where_they_wait(void **state) {
  ctx *c = *state;
  weft_sched *a = sched_new(c, 0);
  spawn(a, 0, 0, 1, act_next_loop, 0);
  weft_id t2 = spawn(a, 0, 0, 2, act_next_wake_other, 0);
  weft_id t3 = spawn(a, 0, 0, 3, act_next_cancel_other, 0);
  weft_id t4 = spawn(a, 0, 0, 4, act_next_loop, 0);
  weft_id t5 = spawn(a, 0, 0, 5, act_next_loop, 0);
  TD(a, t2)->other = weft__sched_task_at(a, 0); /* 1: it ran already that frame */
  TD(a, t2)->count = 3;
  TD(a, t3)->other = t4; /* queued behind it that frame */
  TD(a, t3)->count = 3;
  weft__sched_run_ready(a);
  EXPECT_FRAME(c, 0, 1, 2, 3, 4, 5);
  steps(a, 2, DT60);
  EXPECT_FRAME(c, 1, 1, 2, 3, 4, 5);
  EXPECT_FRAME(c, 2, 1, 2, 3, 5, 1);
  assert_int_equal(TD(a, t2)->rc, WEFT_OK);
  EXPECT_CANCELS(c, 4);
  steps(a, 1, DT60);
  EXPECT_FRAME(c, 3, 2, 3, 5, 1);
  weft__sched_set_frame_budget(a, 2);
  steps(a, 1, DT60);
  EXPECT_FRAME(c, 4, 2, 3);
  char buf[64];
  weft__wait_describe(a, t5, buf, sizeof buf);
  assert_string_equal(buf, "ready"); /* left over */
  weft__wait_describe(a, t2, buf, sizeof buf);
  assert_string_equal(buf, "next frame");

  lists la = {0};
  membuf mb = {0};
  save_to(a, &mb, &la);
  ctx *c2 = calloc(1, sizeof *c2);
  assert_non_null(c2);
  weft_sched *b = sched_new(c2, 0);
  weft_sched_names nm = names_of(&la);
  weft_wire rd = {mem_read, &mb, NULL};
  int lrc = weft__sched_load(b, &rd, &nm);
  if (rd.err) print_error("load: %s\n", rd.err);
  assert_int_equal(lrc, WEFT_OK);
  weft__sched_set_frame_budget(b, 2);
  weft_sched *both[2] = {a, b};
  ctx *cs[2] = {c, c2};
  for (int k = 0; k < 2; k++) {
    cs[k]->s = both[k];
    assert_int_equal(weft__task_cancel(both[k], t5), WEFT_OK); /* left over, before it runs */
    steps(both[k], 1, DT60);
    EXPECT_FRAME(cs[k], 5, 1, 2); /* what was left first, then the budget */
    weft__sched_set_frame_budget(both[k], 0);
    steps(both[k], 2, DT60);
    EXPECT_FRAME(cs[k], 6, 3, 1, 2);
    EXPECT_FRAME(cs[k], 7, 3, 1, 2);
  }
  sched_end(b, c2);
  c->s = a;
  sched_end(a, c);
  free(mb.p);
  free(c2);
}

/* A plain class for damaged saves: its user data holds no address. A
   quarter of its tasks ask for the next frame as they return. */
static int plain_resume(weft_sched *s, weft_id self, void *ud, double slept) {
  (void)slept;
  int tag = *(int *)ud;
  if (tag % 4 == 0) return WEFT_RESUMED_NEXT;
  return weft__wait_sleep_only(s, self, (double)((unsigned)tag % 5) * 0.05, 0) == WEFT_OK
             ? WEFT_RESUMED
             : WEFT_RESUMED;
}
static const weft_task_class plain = {plain_resume, NULL, NULL};
static const char *plain_name(void *ud, const weft_task_class *k) {
  (void)ud;
  return k == &plain ? "plain" : NULL;
}
static const weft_task_class *plain_at(void *ud, const char *name) {
  (void)ud;
  return strcmp(name, "plain") == 0 ? &plain : NULL;
}

static weft_sched *plain_world(ctx *c) {
  weft_sched *s = sched_new(c, 0);
  weft_id g;
  assert_int_equal(weft__group_create(s, 0, &g), WEFT_OK);
  for (int i = 0; i < 40; i++) {
    weft_id id;
    void *ud;
    assert_int_equal(weft__task_create(s, i % 3 ? g : 0, 0, &plain, &id, &ud), WEFT_OK);
    *(int *)ud = i;
    assert_int_equal(weft__task_wake(s, id), WEFT_OK);
  }
  weft__group_release(s, g);
  weft__sched_set_frame_budget(s, 5); /* some are left over to save */
  steps(s, 7, DT60);
  return s;
}

/* A save cut short, or with any byte of its scheduler's part changed, is
   refused with a reason or loads into a scheduler that runs and ends
   cleanly: never a crash, never a leak. The bytes flipped are the
   header's and the first slots' (WEFT_TEST_FLIP_ALL=1: one bit of every
   byte, slower; run under make asan). */
static void test_damaged_saves_are_refused_or_harmless(void **state) {
  ctx *c = *state;
  weft_sched *a = plain_world(c);
  membuf buf = {0};
  weft_sched_names nm = {NULL, NULL, plain_name, plain_at, NULL, NULL};
  weft_wire w = {mem_write, &buf, NULL};
  assert_int_equal(weft__sched_save(a, &w, &nm), WEFT_OK);
  sched_end(a, c);
  ctx *c2 = calloc(1, sizeof *c2);
  assert_non_null(c2);
  int refused = 0, loaded = 0;
  for (size_t cut = 0; cut < buf.n; cut += cut < 600 ? 1 : 997) {
    weft_sched *b = sched_new(c2, 0);
    membuf rb = {buf.p, cut, 0, 0};
    weft_wire rd = {mem_read, &rb, NULL};
    assert_int_equal(weft__sched_load(b, &rd, &nm), WEFT_EINVAL);
    assert_non_null(rd.err);
    refused++;
    sched_end(b, c2);
  }
  /* every byte of the header and the first slots, each flipped */
  for (size_t at = 0; at < (getenv("WEFT_TEST_FLIP_ALL") ? buf.n : 900) && at < buf.n; at++) {
    for (int bit = 0; bit < 8; bit += getenv("WEFT_TEST_FLIP_ALL") ? 8 : 3) {
      buf.p[at] ^= (unsigned char)(1u << bit);
      weft_sched *b = sched_new(c2, 0);
      membuf rb = {buf.p, buf.n, 0, 0};
      weft_wire rd = {mem_read, &rb, NULL};
      if (weft__sched_load(b, &rd, &nm) == WEFT_OK) {
        loaded++;
        steps(b, 30, DT60);
      } else {
        assert_non_null(rd.err);
        refused++;
      }
      /* a changed count of references may name a group as held at the
         end: what counts is that everything is freed */
      weft__sched_destroy(b);
      assert_int_equal(c2->mem.live, 0);
      assert_int_equal(c2->mem.bad_osize, 0);
      buf.p[at] ^= (unsigned char)(1u << bit);
    }
  }
  assert_true(refused > 600 && loaded > 0);
  free(buf.p);
  free(c2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_half_second_sleep_completes_on_frame_30),
      T(test_saved_scheduler_goes_on_as_the_one_it_was),
      T(test_a_save_keeps_a_parent_of_many_children),
      T(test_damaged_saves_are_refused_or_harmless),
      T(test_sleep_started_mid_run_takes_30_frames),
      T(test_repeated_sleeps_wake_on_exact_frames_without_drift),
      T(test_sleep_of_zero_or_less_wakes_next_frame),
      T(test_next_frame_return_is_a_plain_next_frame_sleep),
      T(test_next_frame_returns_keep_sleep_order_across_clocks),
      T(test_next_frame_returns_are_found_where_they_wait),
      T(test_infinite_sleep_never_completes),
      T(test_nan_sleep_is_rejected),
      T(test_due_sleeps_wake_earliest_deadline_first),
      T(test_equal_deadlines_wake_in_sleep_order),
      T(test_equal_deadlines_wake_in_sleep_order_at_sixtieth_dt),
      T(test_many_deadlines_wake_by_deadline_then_sleep_order),
      T(test_sleeps_on_different_group_clocks_wake_in_sleep_order),
      T(test_task_woken_during_pass_runs_later_same_frame),
      T(test_record_completed_during_pass_wakes_waiter_same_frame),
      T(test_frame_budget_caps_resumes_and_rest_run_first_next_frame),
      T(test_frame_budget_counts_tasks_woken_during_the_pass),
      T(test_wait_all_wakes_after_every_record_completed),
      T(test_wait_first_wakes_at_first_completion),
      T(test_wait_first_wakes_at_first_timer),
      T(test_failure_wakes_at_once_and_is_reported),
      T(test_woken_task_records_leave_every_list),
      T(test_timer_done_gets_waiter_slot_and_elapsed_seconds),
      T(test_group_scale_half_makes_one_second_sleep_take_two),
      T(test_global_time_scale_slows_every_group),
      T(test_child_group_scale_multiplies_parent),
      T(test_scale_change_applies_to_running_sleep),
      T(test_pause_stops_group_and_subgroup_clocks),
      T(test_pause_parks_ready_tasks_until_resume),
      T(test_group_cancel_reaches_subgroups_and_spares_others),
      T(test_group_cancel_from_a_running_task_finishes_after_its_resume),
      T(test_group_freed_when_released_and_empty),
      T(test_cancel_unwinds_children_first_in_spawn_order),
      T(test_many_children_among_others_cancel_in_spawn_order),
      T(test_cancel_removes_wait_records_from_every_list),
      T(test_cancelled_sleeps_leave_the_rest_in_order),
      T(test_cancel_of_finished_task_is_stale_and_does_nothing),
      T(test_cancel_of_running_task_is_deferred_until_resume_returns),
      T(test_cancel_of_running_task_out_of_memory_leaves_it_undoomed),
      T(test_cancel_of_ancestor_from_running_child_is_deferred),
      T(test_finish_failed_cancels_children),
      T(test_finish_done_leaves_children_parentless_in_group),
      T(test_stale_task_handles_fail_safely),
      T(test_a_task_run_now_runs_inside_its_spawner_and_leaves_the_queue),
      T(test_stale_group_handles_fail_safely),
      T(test_max_tasks_limit_gives_elimit),
      T(test_steady_frame_allocates_nothing),
      T(test_destroy_is_clean_after_normal_use),
      T(test_destroy_cancels_live_tasks_children_first),
      T(test_step_rejects_bad_dt_and_counts_frames),
      T(test_real_sleep_ignores_time_scale),
      T(test_real_sleep_counts_through_pause),
      T(test_first_of_game_and_real_sleep_wakes_once),
      T(test_sleep_never_completes_before_its_deadline_across_clocks),
      T(test_group_cancel_leaves_tasks_started_by_cleanups),
  };
  return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}
