/* Unit tests for host/sync: signals and channels, driven through
   host/sched with C tasks that wait on their lists. Virtual clock only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../host/sync.h"

#define DT60 (1.0 / 60.0)

/* ---- a checking allocator (lua_Alloc contract, sizes verified) ---- */

#include "check_alloc.h"

/* ---- test context and C tasks ---- */

#define MAXRUNS 1024

typedef struct ev {
  int tag;
  uint64_t frame;
  int failed; /* weft__wait_failed seen by that resume */
  uint64_t value;
} ev;

typedef struct ctx {
  memstat smem, ymem;
  weft_sched *s;
  weft_sync *y;
  ev runs[MAXRUNS];
  int nruns;
} ctx;

typedef struct tdata tdata;
typedef void (*act_fn)(ctx *c, weft_id self, tdata *d);

struct tdata {
  int tag;
  int runs;
  act_fn act;        /* what a resume does; NULL: finish */
  double secs;       /* a sleep before the wait */
  weft_id obj, obj2; /* what it waits on */
  weft_wlist *list;  /* list to wait on (resolved at first use) */
  int count;         /* per act */
};

static int on_resume(weft_sched *s, weft_id self, void *ud, double slept) {
  ctx *c = weft__sched_user(s);
  tdata *d = ud;
  (void)slept;
  d->runs++;
  assert_true(c->nruns < MAXRUNS);
  c->runs[c->nruns++] = (ev){d->tag, weft__sched_frame(s), weft__wait_failed(s, self), 0};
  if (d->act)
    d->act(c, self, d);
  else
    assert_int_equal(weft__task_finish(s, self, WEFT_TASK_DONE), WEFT_OK);
  return WEFT_RESUMED;
}

static const weft_task_class cls = {on_resume, NULL, NULL};

static int setup(void **state) {
  ctx *c = calloc(1, sizeof *c);
  if (!c) return -1;
  weft_sched_desc d = {0};
  d.alloc = count_alloc;
  d.alloc_ud = &c->smem;
  d.task_udata_size = sizeof(tdata);
  d.user = c;
  c->s = weft__sched_create(&d);
  c->y = weft__sync_create(count_alloc, &c->ymem);
  if (!c->s || !c->y) return -1;
  *state = c;
  return 0;
}

/* Destroys both and checks nothing leaked. */
static int teardown(void **state) {
  ctx *c = *state;
  int slive = weft__sched_destroy(c->s); /* first: its waiters leave the lists */
  int ylive = weft__sync_destroy(c->y);
  int ok = ylive == 0 && slive == 0 && c->ymem.live == 0 && c->smem.live == 0 &&
           c->ymem.bad_osize == 0 && c->smem.bad_osize == 0;
  if (!ok)
    print_error("leaks: sync %d (%lld bytes), sched %d (%lld bytes), bad sizes %d/%d\n", ylive,
                c->ymem.live, slive, c->smem.live, c->ymem.bad_osize, c->smem.bad_osize);
  free(c);
  return ok ? 0 : -1;
}

static tdata *TD(ctx *c, weft_id t) {
  tdata *d = weft__task_udata(c->s, t);
  assert_non_null(d);
  return d;
}

static weft_id spawn(ctx *c, int tag, act_fn act) {
  weft_id id = 0;
  void *ud = NULL;
  assert_int_equal(weft__task_create(c->s, 0, 0, &cls, &id, &ud), WEFT_OK);
  tdata *d = ud;
  d->tag = tag;
  d->act = act;
  assert_int_equal(weft__task_wake(c->s, id), WEFT_OK);
  return id;
}

static void steps(ctx *c, int n) {
  for (int i = 0; i < n; i++) assert_int_equal(weft__sched_step(c->s, DT60), WEFT_OK);
}

static void sleep_now(ctx *c, weft_id self, double secs) {
  assert_int_equal(weft__wait_begin(c->s, self, WEFT_WAIT_ALL), WEFT_OK);
  assert_int_equal(weft__wait_sleep(c->s, self, 0, secs, 0), WEFT_OK);
  weft__wait_commit(c->s, self);
}

static void wait_list(ctx *c, weft_id self, weft_wlist *l) {
  assert_non_null(l);
  assert_int_equal(weft__wait_begin(c->s, self, WEFT_WAIT_ALL), WEFT_OK);
  assert_int_equal(weft__wait_on(c->s, self, 0, l), WEFT_OK);
  weft__wait_commit(c->s, self);
  assert_int_equal(weft__task_state(c->s, self), WEFT_TASK_WAITING);
}

/* Completes every current waiter of signal sg, oldest first, failed or
   not; returns how many were woken. */
static int wake_all(ctx *c, weft_id sg, int failed) {
  weft_wlist *l = weft__signal_waiters(c->y, sg);
  int n = 0;
  weft_rec r;
  while ((r = weft__wlist_head(l)) != 0) {
    weft__rec_complete(c->s, r, failed);
    n++;
  }
  return n;
}

/* Fires signal sg: completes every current waiter. */
static int fire(ctx *c, weft_id sg) { return wake_all(c, sg, 0); }

/* Frames in which tags ran, in order, for frame f. */
static int tags_in_frame(const ctx *c, uint64_t f, int *out, int max) {
  int n = 0;
  for (int i = 0; i < c->nruns; i++)
    if (c->runs[i].frame == f) {
      if (n < max) out[n] = c->runs[i].tag;
      n++;
    }
  return n;
}

/* ---- what tasks do ---- */

/* Sleeps secs (when > 0), then waits on the signal in d->obj once,
   then finishes. */
static void act_sleep_then_wait_once(ctx *c, weft_id self, tdata *d) {
  if (d->runs == 1 && d->secs > 0) {
    sleep_now(c, self, d->secs);
  } else if (d->list == NULL) {
    d->list = weft__signal_waiters(c->y, d->obj);
    wait_list(c, self, d->list);
  } else {
    assert_int_equal(weft__task_finish(c->s, self, WEFT_TASK_DONE), WEFT_OK);
  }
}

/* Waits on the signal in d->obj forever, counting wakes in d->count. */
static void act_signal_loop(ctx *c, weft_id self, tdata *d) {
  if (d->runs > 1) d->count++;
  wait_list(c, self, weft__signal_waiters(c->y, d->obj));
}

/* Sleeps secs, then fires the signal in d->obj, noting the number of
   waiters woken in d->count; finishes. */
static void act_fire_later(ctx *c, weft_id self, tdata *d) {
  if (d->runs == 1) {
    sleep_now(c, self, d->secs);
    return;
  }
  d->count = fire(c, d->obj);
  assert_int_equal(weft__task_finish(c->s, self, WEFT_TASK_DONE), WEFT_OK);
}

/* Waits first on the signals d->obj (slot 0) and d->obj2 (slot 1),
   then finishes. */
static void act_first_of_two(ctx *c, weft_id self, tdata *d) {
  if (d->runs == 1) {
    assert_int_equal(weft__wait_begin(c->s, self, WEFT_WAIT_FIRST), WEFT_OK);
    assert_int_equal(weft__wait_on(c->s, self, 0, weft__signal_waiters(c->y, d->obj)), WEFT_OK);
    assert_int_equal(weft__wait_on(c->s, self, 1, weft__signal_waiters(c->y, d->obj2)), WEFT_OK);
    weft__wait_commit(c->s, self);
  } else {
    assert_int_equal(weft__task_finish(c->s, self, WEFT_TASK_DONE), WEFT_OK);
  }
}

/* A channel receiver: pops from channel d->obj, or waits on its receiver
   list when empty; logs each value; stops after d->count values or when
   the channel is closed and drained. */
static void act_receiver(ctx *c, weft_id self, tdata *d) {
  uint64_t v;
  int rc = weft__channel_pop(c->y, d->obj, &v);
  if (rc == WEFT_OK) {
    c->runs[c->nruns - 1].value = v;
    if (--d->count == 0) {
      assert_int_equal(weft__task_finish(c->s, self, WEFT_TASK_DONE), WEFT_OK);
      return;
    }
    sleep_now(c, self, 0); /* one value per frame */
    return;
  }
  assert_int_equal(rc, WEFT_ELIMIT);
  if (weft__channel_closed(c->y, d->obj)) {
    assert_int_equal(weft__task_finish(c->s, self, WEFT_TASK_DONE), WEFT_OK);
    return;
  }
  wait_list(c, self, weft__channel_receivers(c->y, d->obj));
}

/* Pushes v into channel ch and wakes the oldest waiting receiver. */
static int send(ctx *c, weft_id ch, uint64_t v) {
  int rc = weft__channel_push(c->y, ch, v);
  if (rc == WEFT_OK) {
    weft_rec r = weft__wlist_head(weft__channel_receivers(c->y, ch));
    if (r) weft__rec_complete(c->s, r, 0);
  }
  return rc;
}

/* ---- wait lists ---- */

static void test_ten_waiters_wake_in_one_frame_in_wait_order(void **state) {
  ctx *c = *state;
  weft_id f;
  assert_int_equal(weft__signal_create(c->y, &f), WEFT_OK);
  /* Tasks created in tag order 1..10, but each sleeps first so they begin
     waiting in the order of their sleeps: tag 10 first, tag 1 last. */
  weft_id t[10];
  for (int i = 0; i < 10; i++) {
    t[i] = spawn(c, i + 1, act_sleep_then_wait_once);
    TD(c, t[i])->obj = f;
    TD(c, t[i])->secs = (10 - i) * DT60;
  }
  weft__sched_run_ready(c->s);
  steps(c, 10); /* every task is waiting now */
  assert_int_equal(weft__wlist_count(c->s, weft__signal_waiters(c->y, f)), 10);
  for (int i = 0; i < 10; i++) assert_int_equal(weft__task_state(c->s, t[i]), WEFT_TASK_WAITING);
  /* settled between frames: the waiters are ready, they run next frame */
  assert_int_equal(wake_all(c, f, 0), 10);
  assert_true(weft__wlist_empty(weft__signal_waiters(c->y, f)));
  for (int i = 0; i < 10; i++) assert_int_equal(weft__task_state(c->s, t[i]), WEFT_TASK_READY);
  uint64_t next = weft__sched_frame(c->s) + 1;
  steps(c, 1);
  int got[16];
  int n = tags_in_frame(c, next, got, 16);
  assert_int_equal(n, 10);
  for (int i = 0; i < 10; i++) assert_int_equal(got[i], 10 - i);
  for (int i = 0; i < 10; i++) assert_int_equal(weft__task_state(c->s, t[i]), WEFT_ESTALE);
  weft__signal_destroy(c->y, f);
}

static void test_waiters_woken_by_a_task_run_later_in_the_same_frame(void **state) {
  ctx *c = *state;
  weft_id f;
  assert_int_equal(weft__signal_create(c->y, &f), WEFT_OK);
  weft_id w[3];
  for (int i = 0; i < 3; i++) {
    w[i] = spawn(c, i + 1, act_sleep_then_wait_once);
    TD(c, w[i])->obj = f;
  }
  weft_id k = spawn(c, 9, act_fire_later);
  TD(c, k)->obj = f;
  TD(c, k)->secs = 0.5;
  weft__sched_run_ready(c->s);
  steps(c, 29);
  assert_int_equal(weft__wlist_count(c->s, weft__signal_waiters(c->y, f)), 3);
  steps(c, 1);
  int got[8];
  assert_int_equal(tags_in_frame(c, 30, got, 8), 4);
  assert_int_equal(got[0], 9);
  assert_int_equal(got[1], 1);
  assert_int_equal(got[2], 2);
  assert_int_equal(got[3], 3);
  weft__signal_destroy(c->y, f);
}

static void test_failed_completion_wakes_waiters_with_the_failure_flag(void **state) {
  ctx *c = *state;
  weft_id f;
  assert_int_equal(weft__signal_create(c->y, &f), WEFT_OK);
  weft_id a = spawn(c, 1, act_sleep_then_wait_once);
  weft_id b = spawn(c, 2, act_sleep_then_wait_once);
  TD(c, a)->obj = TD(c, b)->obj = f;
  weft__sched_run_ready(c->s);
  assert_int_equal(wake_all(c, f, 1), 2);
  steps(c, 1);
  assert_int_equal(c->nruns, 4);
  assert_int_equal(c->runs[2].tag, 1);
  assert_int_equal(c->runs[2].failed, 1);
  assert_int_equal(c->runs[3].tag, 2);
  assert_int_equal(c->runs[3].failed, 1);
  weft__signal_destroy(c->y, f);
}

static void test_cancelled_waiter_leaves_both_lists_of_a_first_wait(void **state) {
  ctx *c = *state;
  weft_id f, sg;
  assert_int_equal(weft__signal_create(c->y, &f), WEFT_OK);
  assert_int_equal(weft__signal_create(c->y, &sg), WEFT_OK);
  weft_id w = spawn(c, 1, act_first_of_two);
  weft_id o = spawn(c, 2, act_first_of_two);
  TD(c, w)->obj = TD(c, o)->obj = f;
  TD(c, w)->obj2 = TD(c, o)->obj2 = sg;
  weft__sched_run_ready(c->s);
  assert_int_equal(weft__wlist_count(c->s, weft__signal_waiters(c->y, f)), 2);
  assert_int_equal(weft__wlist_count(c->s, weft__signal_waiters(c->y, sg)), 2);
  assert_int_equal(weft__task_cancel(c->s, w), WEFT_OK);
  assert_int_equal(weft__wlist_count(c->s, weft__signal_waiters(c->y, f)), 1);
  assert_int_equal(weft__wlist_count(c->s, weft__signal_waiters(c->y, sg)), 1);
  assert_true(weft__rec_waiter(c->s, weft__wlist_head(weft__signal_waiters(c->y, f))) == o);
  /* the survivor wakes once: the first list's completion drops its other record */
  assert_int_equal(wake_all(c, f, 0), 1);
  assert_true(weft__wlist_empty(weft__signal_waiters(c->y, sg)));
  assert_int_equal(fire(c, sg), 0);
  steps(c, 3);
  assert_int_equal(c->nruns, 3); /* two first resumes, one wake */
  assert_int_equal(c->runs[2].tag, 2);
  weft__signal_destroy(c->y, f);
  weft__signal_destroy(c->y, sg);
}

/* ---- signals ---- */

static void test_signal_fire_wakes_current_waiters_once(void **state) {
  ctx *c = *state;
  weft_id sg;
  assert_int_equal(weft__signal_create(c->y, &sg), WEFT_OK);
  assert_true(weft__signal_live(c->y, sg));
  weft_id t[3];
  for (int i = 0; i < 3; i++) {
    t[i] = spawn(c, i + 1, act_signal_loop);
    TD(c, t[i])->obj = sg;
  }
  weft__sched_run_ready(c->s);
  assert_int_equal(fire(c, sg), 3);
  assert_int_equal(fire(c, sg), 0); /* nobody waits until they run again */
  steps(c, 1);
  for (int i = 0; i < 3; i++) assert_int_equal(TD(c, t[i])->count, 1);
  int got[8];
  assert_int_equal(tags_in_frame(c, 1, got, 8), 3);
  for (int i = 0; i < 3; i++) assert_int_equal(got[i], i + 1);
  /* they waited again: the next fire wakes them again */
  assert_int_equal(weft__wlist_count(c->s, weft__signal_waiters(c->y, sg)), 3);
  assert_int_equal(fire(c, sg), 3);
  steps(c, 1);
  for (int i = 0; i < 3; i++) assert_int_equal(TD(c, t[i])->count, 2);
  for (int i = 0; i < 3; i++) assert_int_equal(weft__task_cancel(c->s, t[i]), WEFT_OK);
  assert_true(weft__wlist_empty(weft__signal_waiters(c->y, sg)));
  weft__signal_destroy(c->y, sg);
}

static void test_signal_latch_flag(void **state) {
  ctx *c = *state;
  weft_id sg;
  assert_int_equal(weft__signal_create(c->y, &sg), WEFT_OK);
  assert_int_equal(weft__signal_latched(c->y, sg), 0);
  assert_int_equal(weft__signal_set_latched(c->y, sg, 1), WEFT_OK);
  assert_int_equal(weft__signal_latched(c->y, sg), 1);
  assert_int_equal(weft__signal_set_latched(c->y, sg, 7), WEFT_OK);
  assert_int_equal(weft__signal_latched(c->y, sg), 1);
  assert_int_equal(weft__signal_set_latched(c->y, sg, 0), WEFT_OK);
  assert_int_equal(weft__signal_latched(c->y, sg), 0);
  weft__signal_destroy(c->y, sg);
}

/* ---- channels ---- */

static void test_channel_fifo_across_growth_and_wrap(void **state) {
  ctx *c = *state;
  weft_id ch;
  assert_int_equal(weft__channel_create(c->y, WEFT_UNBOUNDED, &ch), WEFT_OK);
  assert_int_equal(weft__channel_capacity(c->y, ch), WEFT_UNBOUNDED);
  uint64_t next_in = 1, next_out = 1;
  /* push 5, pop 3 repeatedly: the head walks around the ring while it
     grows from 8 through several doublings */
  for (int round = 0; round < 200; round++) {
    for (int i = 0; i < 5; i++) assert_int_equal(weft__channel_push(c->y, ch, next_in++), WEFT_OK);
    for (int i = 0; i < 3; i++) {
      uint64_t v = 0;
      assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
      assert_int_equal(v, next_out);
      next_out++;
    }
    assert_int_equal(weft__channel_count(c->y, ch), next_in - next_out);
  }
  uint64_t v;
  while (weft__channel_pop(c->y, ch, &v) == WEFT_OK) {
    assert_int_equal(v, next_out);
    next_out++;
  }
  assert_int_equal(next_out, next_in);
  assert_int_equal(weft__channel_count(c->y, ch), 0);
  assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_ELIMIT);
  weft__channel_destroy(c->y, ch, NULL, NULL);
}

static void test_channel_grows_while_wrapped(void **state) {
  ctx *c = *state;
  weft_id ch;
  assert_int_equal(weft__channel_create(c->y, 100, &ch), WEFT_OK);
  uint64_t v;
  /* fill 8, take 5, refill past 8 so growth copies a wrapped ring */
  for (uint64_t i = 1; i <= 8; i++) assert_int_equal(weft__channel_push(c->y, ch, i), WEFT_OK);
  for (uint64_t i = 1; i <= 5; i++) {
    assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
    assert_int_equal(v, i);
  }
  for (uint64_t i = 9; i <= 40; i++) assert_int_equal(weft__channel_push(c->y, ch, i), WEFT_OK);
  for (uint64_t i = 6; i <= 40; i++) {
    assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
    assert_int_equal(v, i);
  }
  assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_ELIMIT);
  weft__channel_destroy(c->y, ch, NULL, NULL);
}

static void test_channel_capacity_limit(void **state) {
  ctx *c = *state;
  weft_id ch;
  assert_int_equal(weft__channel_create(c->y, 3, &ch), WEFT_OK);
  assert_int_equal(weft__channel_capacity(c->y, ch), 3);
  for (uint64_t i = 1; i <= 3; i++) assert_int_equal(weft__channel_push(c->y, ch, i), WEFT_OK);
  assert_int_equal(weft__channel_push(c->y, ch, 4), WEFT_ELIMIT);
  assert_int_equal(weft__channel_count(c->y, ch), 3);
  uint64_t v;
  assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
  assert_int_equal(v, 1);
  assert_int_equal(weft__channel_push(c->y, ch, 4), WEFT_OK);
  assert_int_equal(weft__channel_push(c->y, ch, 5), WEFT_ELIMIT);
  for (uint64_t i = 2; i <= 4; i++) {
    assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
    assert_int_equal(v, i);
  }
  weft__channel_destroy(c->y, ch, NULL, NULL);

  /* capacity 0 buffers nothing: values go straight from sender to receiver */
  weft_id z;
  assert_int_equal(weft__channel_create(c->y, 0, &z), WEFT_OK);
  assert_int_equal(weft__channel_push(c->y, z, 1), WEFT_ELIMIT);
  assert_int_equal(weft__channel_count(c->y, z), 0);
  assert_int_equal(weft__channel_pop(c->y, z, &v), WEFT_ELIMIT);
  weft__channel_destroy(c->y, z, NULL, NULL);
}

static void test_channel_close_refuses_pushes_and_drains(void **state) {
  ctx *c = *state;
  weft_id ch;
  assert_int_equal(weft__channel_create(c->y, 8, &ch), WEFT_OK);
  assert_int_equal(weft__channel_closed(c->y, ch), 0);
  assert_int_equal(weft__channel_push(c->y, ch, 10), WEFT_OK);
  assert_int_equal(weft__channel_push(c->y, ch, 20), WEFT_OK);
  assert_int_equal(weft__channel_close(c->y, ch), WEFT_OK);
  assert_int_equal(weft__channel_closed(c->y, ch), 1);
  assert_int_equal(weft__channel_push(c->y, ch, 30), WEFT_ECLOSED);
  assert_int_equal(weft__channel_count(c->y, ch), 2);
  uint64_t v;
  assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
  assert_int_equal(v, 10);
  assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
  assert_int_equal(v, 20);
  assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_ELIMIT);
  assert_int_equal(weft__channel_close(c->y, ch), WEFT_OK); /* twice is harmless */
  weft__channel_destroy(c->y, ch, NULL, NULL);
}

static void test_channel_unshift_puts_a_value_back_in_front(void **state) {
  ctx *c = *state;
  weft_id ch;
  assert_int_equal(weft__channel_create(c->y, 2, &ch), WEFT_OK);
  assert_int_equal(weft__channel_push(c->y, ch, 2), WEFT_OK);
  assert_int_equal(weft__channel_push(c->y, ch, 3), WEFT_OK);
  /* past the capacity and after a close, for a value handed out unused */
  assert_int_equal(weft__channel_close(c->y, ch), WEFT_OK);
  assert_int_equal(weft__channel_unshift(c->y, ch, 1), WEFT_OK);
  assert_int_equal(weft__channel_count(c->y, ch), 3);
  uint64_t v;
  for (uint64_t i = 1; i <= 3; i++) {
    assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
    assert_int_equal(v, i);
  }
  weft__channel_destroy(c->y, ch, NULL, NULL);
  weft_id z;
  assert_int_equal(weft__channel_create(c->y, 0, &z), WEFT_OK);
  assert_int_equal(weft__channel_unshift(c->y, z, 7), WEFT_OK);
  assert_int_equal(weft__channel_pop(c->y, z, &v), WEFT_OK);
  assert_int_equal(v, 7);
  weft__channel_destroy(c->y, z, NULL, NULL);
}

static int ndropped;
static uint64_t dropped_sum;
static void drop_payload(void *ud, uint64_t v) {
  (void)ud;
  ndropped++;
  dropped_sum += v;
}

static void test_channel_destroy_hands_back_buffered_payloads(void **state) {
  ctx *c = *state;
  weft_id ch;
  assert_int_equal(weft__channel_create(c->y, WEFT_UNBOUNDED, &ch), WEFT_OK);
  for (uint64_t i = 1; i <= 20; i++) assert_int_equal(weft__channel_push(c->y, ch, i), WEFT_OK);
  uint64_t v;
  assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_OK);
  ndropped = 0;
  dropped_sum = 0;
  weft__channel_destroy(c->y, ch, drop_payload, NULL);
  assert_int_equal(ndropped, 19);
  assert_int_equal(dropped_sum, 210 - 1);
  assert_int_equal(weft__channel_live(c->y, ch), 0);
}

static void test_channel_receivers_wake_in_order_and_get_fifo_values(void **state) {
  ctx *c = *state;
  weft_id ch;
  assert_int_equal(weft__channel_create(c->y, WEFT_UNBOUNDED, &ch), WEFT_OK);
  weft_id r[3];
  for (int i = 0; i < 3; i++) {
    r[i] = spawn(c, i + 1, act_receiver);
    TD(c, r[i])->obj = ch;
    TD(c, r[i])->count = 2;
  }
  weft__sched_run_ready(c->s); /* all three wait on the empty channel */
  assert_int_equal(weft__wlist_count(c->s, weft__channel_receivers(c->y, ch)), 3);
  assert_true(weft__wlist_empty(weft__channel_senders(c->y, ch)));
  for (uint64_t v = 101; v <= 106; v++) assert_int_equal(send(c, ch, v), WEFT_OK);
  steps(c, 3);
  /* frame 1: receivers 1, 2, 3 take 101, 102, 103; frame 2: 104..106 */
  int k = 0;
  uint64_t want = 101;
  for (int i = 0; i < c->nruns; i++) {
    if (c->runs[i].frame == 0) continue;
    assert_int_equal(c->runs[i].tag, k % 3 + 1);
    assert_int_equal(c->runs[i].value, want);
    want++;
    k++;
  }
  assert_int_equal(k, 6);
  for (int i = 0; i < 3; i++) assert_int_equal(weft__task_state(c->s, r[i]), WEFT_ESTALE);
  weft__channel_destroy(c->y, ch, NULL, NULL);
}

static void test_closed_channel_ends_waiting_receivers(void **state) {
  ctx *c = *state;
  weft_id ch;
  assert_int_equal(weft__channel_create(c->y, 4, &ch), WEFT_OK);
  weft_id r = spawn(c, 1, act_receiver);
  TD(c, r)->obj = ch;
  TD(c, r)->count = 100;
  weft__sched_run_ready(c->s);
  assert_int_equal(send(c, ch, 5), WEFT_OK);
  steps(c, 2);
  assert_int_equal(weft__task_state(c->s, r), WEFT_TASK_WAITING);
  assert_int_equal(weft__channel_close(c->y, ch), WEFT_OK);
  weft_rec rec;
  while ((rec = weft__wlist_head(weft__channel_receivers(c->y, ch))) != 0)
    weft__rec_complete(c->s, rec, 0);
  steps(c, 1);
  assert_int_equal(weft__task_state(c->s, r), WEFT_ESTALE);
  weft__channel_destroy(c->y, ch, NULL, NULL);
}

/* ---- stale ids and leaks ---- */

static void test_stale_ids_return_errors(void **state) {
  ctx *c = *state;
  weft_id sg, ch;
  assert_int_equal(weft__signal_create(c->y, &sg), WEFT_OK);
  assert_int_equal(weft__channel_create(c->y, 4, &ch), WEFT_OK);
  assert_int_equal(weft__sync_count(c->y), 2);
  weft__signal_destroy(c->y, sg);
  weft__channel_destroy(c->y, ch, NULL, NULL);
  assert_int_equal(weft__sync_count(c->y), 0);

  assert_int_equal(weft__signal_live(c->y, sg), 0);
  assert_null(weft__signal_waiters(c->y, sg));
  assert_int_equal(weft__signal_set_latched(c->y, sg, 1), WEFT_ESTALE);
  assert_int_equal(weft__signal_latched(c->y, sg), 0);

  uint64_t v = 77;
  assert_int_equal(weft__channel_live(c->y, ch), 0);
  assert_int_equal(weft__channel_push(c->y, ch, 1), WEFT_ESTALE);
  assert_int_equal(weft__channel_unshift(c->y, ch, 1), WEFT_ESTALE);
  assert_int_equal(weft__channel_pop(c->y, ch, &v), WEFT_ESTALE);
  assert_int_equal(v, 77);
  assert_int_equal(weft__channel_close(c->y, ch), WEFT_ESTALE);
  assert_int_equal(weft__channel_count(c->y, ch), 0);
  assert_null(weft__channel_senders(c->y, ch));
  assert_null(weft__channel_receivers(c->y, ch));
  weft__channel_destroy(c->y, ch, drop_payload, NULL); /* a no-op, no crash */
  weft__signal_destroy(c->y, sg);

  /* A new object reusing the slot gets a new id; the old one stays stale. */
  weft_id sg2;
  assert_int_equal(weft__signal_create(c->y, &sg2), WEFT_OK);
  assert_true(sg2 != sg);
  assert_int_equal(WEFT_ID_INDEX(sg2), WEFT_ID_INDEX(sg));
  assert_int_equal(weft__signal_live(c->y, sg), 0);
  assert_int_equal(weft__signal_set_latched(c->y, sg, 1), WEFT_ESTALE);
  assert_int_equal(weft__signal_live(c->y, sg2), 1);
  assert_int_equal(weft__signal_latched(c->y, sg2), 0);
  weft__signal_destroy(c->y, sg2);

  /* ids of one kind are not ids of another */
  assert_int_equal(weft__signal_live(c->y, 0), 0);
  assert_int_equal(weft__channel_push(c->y, 0, 1), WEFT_ESTALE);
  assert_int_equal(weft__channel_push(c->y, WEFT_ID_MAKE(12345, 1), 1), WEFT_ESTALE);
}

static void test_destroy_counts_live_objects(void **state) {
  (void)state;
  memstat m = {0};
  weft_sync *y = weft__sync_create(count_alloc, &m);
  assert_non_null(y);
  weft_id sg, sg2, ch;
  assert_int_equal(weft__signal_create(y, &sg), WEFT_OK);
  assert_int_equal(weft__signal_create(y, &sg2), WEFT_OK);
  assert_int_equal(weft__channel_create(y, WEFT_UNBOUNDED, &ch), WEFT_OK);
  for (uint64_t i = 0; i < 50; i++) assert_int_equal(weft__channel_push(y, ch, i), WEFT_OK);
  assert_int_equal(weft__sync_destroy(y), 3);
  /* the leaked objects' memory is still given back */
  assert_int_equal(m.live, 0);
  assert_int_equal(m.bad_osize, 0);
}

static void test_many_objects_across_pool_chunks(void **state) {
  ctx *c = *state;
  enum { N = 3 * WEFT_POOL_CHUNK + 7 };
  static weft_id ids[N];
  for (int i = 0; i < N; i++) assert_int_equal(weft__signal_create(c->y, &ids[i]), WEFT_OK);
  assert_int_equal(weft__sync_count(c->y), N);
  for (int i = 0; i < N; i += 2)
    assert_int_equal(weft__signal_set_latched(c->y, ids[i], 1), WEFT_OK);
  for (int i = 0; i < N; i++) assert_int_equal(weft__signal_latched(c->y, ids[i]), i % 2 ? 0 : 1);
  for (int i = 0; i < N; i++) weft__signal_destroy(c->y, ids[i]);
  assert_int_equal(weft__sync_count(c->y), 0);
}

/* ---- saving and loading ---- */

#include "membuf.h"

static uint32_t list_name(void *ud, const weft_wlist *l) { return weft__sync_list_name(ud, l); }
static weft_wlist *list_at(void *ud, uint32_t n) { return weft__sync_list_at(ud, n); }
static const char *class_name(void *ud, const weft_task_class *k) {
  (void)ud;
  return k == &cls ? "test" : NULL;
}
static const weft_task_class *class_at(void *ud, const char *name) {
  (void)ud;
  return strcmp(name, "test") == 0 ? &cls : NULL;
}

/* The world after the save, the same in both: a signal fired twice and
   values sent, each step logged. */
static void after_save(ctx *c, weft_id sg, weft_id ch) {
  steps(c, 3);
  fire(c, sg);
  steps(c, 2);
  assert_int_equal(send(c, ch, 13), WEFT_OK);
  assert_int_equal(send(c, ch, 14), WEFT_OK);
  steps(c, 5);
  fire(c, sg);
  assert_int_equal(weft__channel_close(c->y, ch), WEFT_OK);
  weft_rec r;
  while ((r = weft__wlist_head(weft__channel_receivers(c->y, ch))) != 0)
    weft__rec_complete(c->s, r, 0);
  steps(c, 5);
}

/* Signals and channels saved with the scheduler, between frames, and
   loaded into fresh ones go on as the saved ones: waiters of a signal
   woken but not yet run, receivers waiting, values buffered, a latched
   signal; the same resumes get the same values on the same frames. */
static void test_saved_signals_and_channels_go_on_as_they_were(void **state) {
  ctx *c = *state;
  weft_id sg, latched, ch;
  assert_int_equal(weft__signal_create(c->y, &sg), WEFT_OK);
  assert_int_equal(weft__signal_create(c->y, &latched), WEFT_OK);
  assert_int_equal(weft__signal_set_latched(c->y, latched, 1), WEFT_OK);
  assert_int_equal(weft__channel_create(c->y, WEFT_UNBOUNDED, &ch), WEFT_OK);
  for (int i = 1; i <= 3; i++) TD(c, spawn(c, i, act_signal_loop))->obj = sg;
  for (int i = 4; i <= 5; i++) {
    tdata *d = TD(c, spawn(c, i, act_receiver));
    d->obj = ch;
    d->count = 3;
  }
  steps(c, 2);
  assert_int_equal(send(c, ch, 10), WEFT_OK);
  steps(c, 1);
  assert_int_equal(weft__channel_push(c->y, ch, 11), WEFT_OK);
  assert_int_equal(weft__channel_push(c->y, ch, 12), WEFT_OK);
  assert_int_equal(fire(c, sg), 3); /* woken, to run next frame */

  membuf buf = {0};
  weft_sched_names nm = {list_name, list_at, class_name, class_at, NULL, c->y};
  weft_wire w = {mem_write, &buf, NULL};
  assert_true(weft__sync_save(c->y, &w));
  assert_int_equal(weft__sched_save(c->s, &w, &nm), WEFT_OK);

  ctx *c2 = calloc(1, sizeof *c2);
  assert_non_null(c2);
  weft_sched_desc d = {0};
  d.alloc = count_alloc;
  d.alloc_ud = &c2->smem;
  d.task_udata_size = sizeof(tdata);
  d.user = c2;
  c2->s = weft__sched_create(&d);
  c2->y = weft__sync_create(count_alloc, &c2->ymem);
  assert_true(c2->s && c2->y);
  weft_wire rd = {mem_read, &buf, NULL};
  nm.ud = c2->y;
  assert_true(weft__sync_load(c2->y, &rd));
  assert_int_equal(weft__sched_load(c2->s, &rd, &nm), WEFT_OK);
  assert_true(weft__sync_check(c2->y, c2->s));
  assert_int_equal(buf.at, buf.n);
  assert_true(weft__signal_latched(c2->y, latched));
  assert_int_equal(weft__channel_count(c2->y, ch), 2);

  int n0 = c->nruns;
  after_save(c, sg, ch);
  after_save(c2, sg, ch);
  assert_int_equal(c->nruns - n0, c2->nruns);
  assert_true(c2->nruns > 10);
  for (int i = 0; i < c2->nruns; i++) {
    assert_int_equal(c->runs[n0 + i].tag, c2->runs[i].tag);
    assert_int_equal(c->runs[n0 + i].frame, c2->runs[i].frame);
    assert_int_equal(c->runs[n0 + i].value, c2->runs[i].value);
    assert_int_equal(c->runs[n0 + i].failed, c2->runs[i].failed);
  }
  ctx *both[2] = {c, c2};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(weft__sched_destroy(both[k]->s), 0);
    both[k]->s = NULL; /* teardown: nothing left of it */
    weft__signal_destroy(both[k]->y, sg);
    weft__signal_destroy(both[k]->y, latched);
    weft__channel_destroy(both[k]->y, ch, NULL, NULL);
  }
  void *tmp = c2;
  assert_int_equal(teardown(&tmp), 0);
  free(buf.p);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_ten_waiters_wake_in_one_frame_in_wait_order),
      T(test_waiters_woken_by_a_task_run_later_in_the_same_frame),
      T(test_failed_completion_wakes_waiters_with_the_failure_flag),
      T(test_cancelled_waiter_leaves_both_lists_of_a_first_wait),
      T(test_signal_fire_wakes_current_waiters_once),
      T(test_signal_latch_flag),
      T(test_channel_fifo_across_growth_and_wrap),
      T(test_channel_grows_while_wrapped),
      T(test_channel_capacity_limit),
      T(test_channel_close_refuses_pushes_and_drains),
      T(test_channel_unshift_puts_a_value_back_in_front),
      T(test_channel_destroy_hands_back_buffered_payloads),
      T(test_channel_receivers_wake_in_order_and_get_fifo_values),
      T(test_closed_channel_ends_waiting_receivers),
      T(test_stale_ids_return_errors),
      T(test_destroy_counts_live_objects),
      T(test_many_objects_across_pool_chunks),
      T(test_saved_signals_and_channels_go_on_as_they_were),
  };
#undef T
  return cmocka_run_group_tests_name("sync", tests, NULL, NULL);
}
