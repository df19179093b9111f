/* Unit tests for host/jobs: the worker pool on its own. Jobs run on worker
   threads; completions come back through weft__jobs_poll on the polling
   thread. No sleeps: the tests poll in a loop, yielding the CPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _WIN32
#include <windows.h>
#endif

#include "../host/jobs.h"

/* A pool that started: WEFT_OK and a pool, or the test fails. */
static weft_jobs *start_pool(int threads) {
  weft_jobs *J = NULL;
  assert_int_equal(weft__jobs_create(threads, NULL, NULL, &J), WEFT_OK);
  assert_non_null(J);
  return J;
}

/* One job's data. The run side writes runner/out; the main side counts. */
typedef struct jd {
  int id;
  pthread_t runner;   /* the thread run() ran on */
  atomic_int ran;     /* run() calls */
  atomic_int started; /* run() entered */
  int gated;          /* run() waits for the gate to open */
  uint64_t out;       /* result written by run() */
  int delivered;      /* done() calls */
  int dropped;        /* drop() calls */
} jd;

/* Shared state of a test. */
typedef struct world {
  pthread_t main;
  atomic_int gate;     /* 1: gated jobs may finish */
  atomic_int started;  /* gated jobs that entered run() */
  atomic_int finished; /* run() calls that returned */
  int ndone, ndrop;
  int wrong_thread; /* done() calls off the main thread */
  int same_thread;  /* jobs that ran on the main thread */
  int bad_tag;      /* done() or drop() with a tag not matching data */
  int order[64];    /* ids in completion order (first 64) */
  uint64_t sum;     /* checksum of delivered results */
} world;

static world *G; /* the current test's world, read by run() */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static void run_job(void *p) {
  jd *d = p;
  atomic_fetch_add(&d->started, 1);
  d->runner = pthread_self();
  if (d->gated) {
    atomic_fetch_add(&G->started, 1);
    while (!atomic_load(&G->gate)) sched_yield();
  }
  uint64_t x = (uint64_t)d->id;
  for (int i = 0; i < 64; i++) x = mix(x + (uint64_t)i);
  d->out = x;
  atomic_fetch_add(&d->ran, 1);
  atomic_fetch_add(&G->finished, 1);
}

static void on_done(void *ud, void *p, uint64_t tag) {
  world *w = ud;
  jd *d = p;
  if (!pthread_equal(pthread_self(), w->main)) w->wrong_thread++;
  if (pthread_equal(d->runner, w->main)) w->same_thread++;
  if (tag != (uint64_t)d->id * 7 + 1) w->bad_tag++;
  if (w->ndone < 64) w->order[w->ndone] = d->id;
  w->ndone++;
  d->delivered++;
  w->sum += d->out;
}

static void on_drop(void *ud, void *p, uint64_t tag) {
  world *w = ud;
  jd *d = p;
  if (tag != (uint64_t)d->id * 7 + 1) w->bad_tag++;
  w->ndrop++;
  d->dropped++;
}

static jd *new_jobs(int n) {
  jd *v = calloc((size_t)n, sizeof *v);
  assert_non_null(v);
  for (int i = 0; i < n; i++) v[i].id = i;
  return v;
}

static void submit(weft_jobs *J, jd *d) {
  assert_int_equal(weft__jobs_submit(J, run_job, d, (uint64_t)d->id * 7 + 1), WEFT_OK);
}

/* Polls until `want` jobs were delivered in total. */
static void poll_until(weft_jobs *J, world *w, int want) {
  long spins = 0;
  while (w->ndone < want) {
    int n = weft__jobs_poll(J, on_done, w);
    assert_true(n >= 0);
    if (n == 0) sched_yield();
    spins++;
    assert_true(spins < 2000000000L);
  }
}

static void world_init(world *w) {
  memset(w, 0, sizeof *w);
  w->main = pthread_self();
  G = w;
}

/* ---- tests ---- */

static void test_results_come_back_on_the_polling_thread(void **state) {
  (void)state;
  world w;
  world_init(&w);
  weft_jobs *J = start_pool(4);
  assert_non_null(J);
  assert_int_equal(weft__jobs_threads(J), 4);
  enum { N = 64 };
  jd *d = new_jobs(N);
  for (int i = 0; i < N; i++) submit(J, &d[i]);
  poll_until(J, &w, N);
  assert_int_equal(w.wrong_thread, 0);
  assert_int_equal(w.same_thread, 0);
  assert_int_equal(w.bad_tag, 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(d[i].delivered, 1);
    assert_int_equal(atomic_load(&d[i].ran), 1);
    assert_false(pthread_equal(d[i].runner, w.main));
  }
  assert_int_equal(weft__jobs_pending(J), 0);
  assert_int_equal(weft__jobs_poll(J, on_done, &w), 0); /* nothing twice */
  weft__jobs_destroy(J, on_drop, &w);
  assert_int_equal(w.ndrop, 0);
  free(d);
}

static void test_poll_never_blocks_and_runs_nothing_when_idle(void **state) {
  (void)state;
  world w;
  world_init(&w);
  weft_jobs *J = start_pool(2);
  assert_non_null(J);
  assert_int_equal(weft__jobs_poll(J, on_done, &w), 0);
  assert_int_equal(weft__jobs_pending(J), 0);
  /* a job held on the gate: polls return at once with nothing */
  jd *d = new_jobs(1);
  d[0].gated = 1;
  submit(J, &d[0]);
  while (atomic_load(&w.started) < 1) sched_yield();
  for (int i = 0; i < 1000; i++) assert_int_equal(weft__jobs_poll(J, on_done, &w), 0);
  assert_int_equal(weft__jobs_pending(J), 1);
  atomic_store(&w.gate, 1);
  poll_until(J, &w, 1);
  assert_int_equal(d[0].delivered, 1);
  assert_int_equal(weft__jobs_pending(J), 0);
  weft__jobs_destroy(J, on_drop, &w);
  assert_int_equal(w.ndrop, 0);
  free(d);
}

static void test_one_worker_completes_in_submission_order(void **state) {
  (void)state;
  world w;
  world_init(&w);
  weft_jobs *J = start_pool(1);
  assert_non_null(J);
  assert_int_equal(weft__jobs_threads(J), 1);
  enum { N = 40 };
  jd *d = new_jobs(N);
  for (int i = 0; i < N; i++) submit(J, &d[i]);
  poll_until(J, &w, N);
  for (int i = 0; i < N; i++) assert_int_equal(w.order[i], i);
  weft__jobs_destroy(J, on_drop, &w);
  free(d);
}

static void test_inline_pool_runs_jobs_at_poll_in_order_on_the_caller(void **state) {
  (void)state;
  world w;
  world_init(&w);
  weft_jobs *J = start_pool(-1);
  assert_non_null(J);
  assert_int_equal(weft__jobs_threads(J), 0);
  enum { N = 20 };
  jd *d = new_jobs(N);
  for (int i = 0; i < N; i++) submit(J, &d[i]);
  for (int i = 0; i < N; i++) assert_int_equal(atomic_load(&d[i].ran), 0); /* nothing ran yet */
  assert_int_equal(weft__jobs_poll(J, on_done, &w), N); /* one poll runs and delivers all */
  for (int i = 0; i < N; i++) assert_int_equal(w.order[i], i);
  assert_int_equal(w.same_thread, N);
  assert_int_equal(w.wrong_thread, 0);
  assert_int_equal(weft__jobs_pending(J), 0);
  weft__jobs_destroy(J, on_drop, &w);
  assert_int_equal(w.ndrop, 0);
  free(d);
}

static void test_pending_counts_queued_running_and_unpolled(void **state) {
  (void)state;
  world w;
  world_init(&w);
  weft_jobs *J = start_pool(1);
  assert_non_null(J);
  jd *d = new_jobs(5);
  d[0].gated = 1;
  for (int i = 0; i < 5; i++) submit(J, &d[i]);
  while (atomic_load(&w.started) < 1) sched_yield();
  assert_int_equal(weft__jobs_pending(J), 5); /* 1 running, 4 queued */
  atomic_store(&w.gate, 1);
  while (atomic_load(&w.finished) < 5) sched_yield();
  assert_int_equal(weft__jobs_pending(J), 5); /* finished but not polled */
  poll_until(J, &w, 5);
  assert_int_equal(weft__jobs_pending(J), 0);
  weft__jobs_destroy(J, on_drop, &w);
  free(d);
}

/* Opens the gate once the main thread is about to destroy the pool. */
static atomic_int destroying;
static void *opener(void *arg) {
  world *w = arg;
  while (!atomic_load(&destroying)) sched_yield();
  for (int i = 0; i < 100; i++) sched_yield();
  atomic_store(&w->gate, 1);
  return NULL;
}

static void test_destroy_with_jobs_in_flight_drops_each_once(void **state) {
  (void)state;
  world w;
  world_init(&w);
  enum { THREADS = 2, FINISHED = 5, QUEUED = 50, N = FINISHED + THREADS + QUEUED };
  weft_jobs *J = start_pool(THREADS);
  assert_non_null(J);
  jd *d = new_jobs(N);
  /* finished, never polled */
  for (int i = 0; i < FINISHED; i++) submit(J, &d[i]);
  while (atomic_load(&w.finished) < FINISHED) sched_yield();
  /* running: one per worker, held on the gate */
  for (int i = FINISHED; i < FINISHED + THREADS; i++) {
    d[i].gated = 1;
    submit(J, &d[i]);
  }
  while (atomic_load(&w.started) < THREADS) sched_yield();
  /* queued behind them */
  for (int i = FINISHED + THREADS; i < N; i++) submit(J, &d[i]);
  assert_int_equal(weft__jobs_pending(J), N);

  atomic_store(&destroying, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, opener, &w), 0);
  atomic_store(&destroying, 1);
  weft__jobs_destroy(J, on_drop, &w); /* joins: the running jobs finish */
  assert_int_equal(pthread_join(th, NULL), 0);

  assert_int_equal(w.ndone, 0);
  assert_int_equal(w.ndrop, N);
  assert_int_equal(w.bad_tag, 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(d[i].dropped, 1);
    assert_int_equal(d[i].delivered, 0);
    assert_true(atomic_load(&d[i].ran) <= 1);
  }
  /* the jobs in hand were let finish, not abandoned mid-run */
  for (int i = 0; i < FINISHED + THREADS; i++) assert_int_equal(atomic_load(&d[i].ran), 1);
  /* every job that started also finished before destroy returned */
  for (int i = 0; i < N; i++) assert_int_equal(atomic_load(&d[i].started), atomic_load(&d[i].ran));
  free(d);
}

static void test_destroy_without_drop_and_of_an_idle_pool(void **state) {
  (void)state;
  world w;
  world_init(&w);
  weft_jobs *J = start_pool(3);
  assert_non_null(J);
  weft__jobs_destroy(J, on_drop, &w);
  assert_int_equal(w.ndrop, 0);
  weft__jobs_destroy(NULL, on_drop, &w); /* no-op */
  /* destroy with finished jobs and a NULL drop: no crash, no callback */
  J = start_pool(2);
  assert_non_null(J);
  jd *d = new_jobs(8);
  for (int i = 0; i < 8; i++) submit(J, &d[i]);
  while (atomic_load(&w.finished) < 8) sched_yield();
  weft__jobs_destroy(J, NULL, NULL);
  assert_int_equal(w.ndone, 0);
  free(d);
}

static void test_default_thread_count_is_one_per_core(void **state) {
  (void)state;
  weft_jobs *J = start_pool(0);
  assert_non_null(J);
#ifdef _WIN32
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  long cores = (long)si.dwNumberOfProcessors;
#else
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  assert_int_equal(weft__jobs_threads(J), cores > 0 ? (int)cores : 1);
  weft__jobs_destroy(J, NULL, NULL);
}

static void test_stress_ten_thousand_jobs_with_checksum(void **state) {
  (void)state;
  world w;
  world_init(&w);
  enum { N = 10000 };
  weft_jobs *J = start_pool(4);
  assert_non_null(J);
  jd *d = new_jobs(N);
  uint64_t want = 0;
  for (int i = 0; i < N; i++) {
    uint64_t x = (uint64_t)i;
    for (int k = 0; k < 64; k++) x = mix(x + (uint64_t)k);
    want += x;
  }
  /* submit in bursts while polling, as a frame loop would */
  int next = 0;
  while (w.ndone < N) {
    for (int k = 0; k < 97 && next < N; k++) submit(J, &d[next++]);
    if (weft__jobs_poll(J, on_done, &w) == 0) sched_yield();
  }
  assert_int_equal(w.ndone, N);
  assert_true(w.sum == want);
  assert_int_equal(w.wrong_thread, 0);
  assert_int_equal(w.same_thread, 0);
  assert_int_equal(w.bad_tag, 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(d[i].delivered, 1);
    assert_int_equal(atomic_load(&d[i].ran), 1);
  }
  assert_int_equal(weft__jobs_pending(J), 0);
  weft__jobs_destroy(J, on_drop, &w);
  assert_int_equal(w.ndrop, 0);
  free(d);
}

/* An allocator that counts what it holds and on which thread it ran. */
typedef struct counting {
  long long live;  /* bytes held */
  long calls;      /* allocations and frees */
  pthread_t owner; /* the thread that may call it */
  int off_thread;  /* calls made on another thread */
} counting;

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  counting *c = ud;
  if (!pthread_equal(pthread_self(), c->owner)) c->off_thread++;
  c->calls++;
  if (nsize == 0) {
    if (ptr) c->live -= (long long)osize;
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p) c->live += (long long)nsize - (ptr ? (long long)osize : 0);
  return p;
}

static void test_every_byte_comes_from_the_given_allocator_on_the_caller(void **state) {
  (void)state;
  counting c = {0};
  c.owner = pthread_self();
  world w;
  world_init(&w);
  weft_jobs *J = NULL;
  assert_int_equal(weft__jobs_create(3, count_alloc, &c, &J), WEFT_OK);
  assert_true(c.live > 0);
  jd *d = new_jobs(200);
  for (int i = 0; i < 200; i++) submit(J, &d[i]);
  long before = c.calls;
  assert_true(before >= 200 + 2); /* the pool, its threads, and a job each */
  poll_until(J, &w, 100);         /* some delivered, the rest dropped */
  weft__jobs_destroy(J, on_drop, &w);
  assert_int_equal(w.ndone + w.ndrop, 200);
  assert_int_equal(c.live, 0);
  assert_int_equal(c.off_thread, 0);
  free(d);
}

/* Where no thread can start (plat_nothreads.c: the web build), a pool
   asked for workers is the inline one: nothing runs at submit, the next
   poll runs every job in order on the caller and delivers it. */
static void test_a_pool_whose_threads_cannot_start_runs_jobs_inline(void **state) {
  (void)state;
  world w;
  world_init(&w);
  weft_jobs *J = start_pool(4);
  assert_int_equal(weft__jobs_threads(J), 0);
  enum { N = 10 };
  jd *d = new_jobs(N);
  for (int i = 0; i < N; i++) submit(J, &d[i]);
  assert_int_equal(weft__jobs_pending(J), N);
  for (int i = 0; i < N; i++) assert_int_equal(atomic_load(&d[i].ran), 0);
  assert_int_equal(weft__jobs_poll(J, on_done, &w), N);
  for (int i = 0; i < N; i++) assert_int_equal(w.order[i], i);
  assert_int_equal(w.same_thread, N);
  assert_int_equal(weft__jobs_pending(J), 0);
  submit(J, &d[0]); /* one left queued at destroy is dropped, never run */
  weft__jobs_destroy(J, on_drop, &w);
  assert_int_equal(w.ndrop, 1);
  assert_int_equal(atomic_load(&d[0].ran), 1);
  free(d);
}

int main(void) {
  /* Over a platform without threads (make test-c's build/tests/nothreads/,
     the web build) the cases that need no worker. */
  weft_jobs *probe = start_pool(1);
  int threads = weft__jobs_threads(probe);
  weft__jobs_destroy(probe, NULL, NULL);
  const struct CMUnitTest inline_only[] = {
      cmocka_unit_test(test_inline_pool_runs_jobs_at_poll_in_order_on_the_caller),
      cmocka_unit_test(test_a_pool_whose_threads_cannot_start_runs_jobs_inline),
      cmocka_unit_test(test_every_byte_comes_from_the_given_allocator_on_the_caller),
  };
  if (threads == 0)
    return cmocka_run_group_tests_name("jobs without threads", inline_only, NULL, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_results_come_back_on_the_polling_thread),
      cmocka_unit_test(test_poll_never_blocks_and_runs_nothing_when_idle),
      cmocka_unit_test(test_one_worker_completes_in_submission_order),
      cmocka_unit_test(test_inline_pool_runs_jobs_at_poll_in_order_on_the_caller),
      cmocka_unit_test(test_pending_counts_queued_running_and_unpolled),
      cmocka_unit_test(test_destroy_with_jobs_in_flight_drops_each_once),
      cmocka_unit_test(test_destroy_without_drop_and_of_an_idle_pool),
      cmocka_unit_test(test_default_thread_count_is_one_per_core),
      cmocka_unit_test(test_stress_ten_thousand_jobs_with_checksum),
      cmocka_unit_test(test_every_byte_comes_from_the_given_allocator_on_the_caller),
  };
  return cmocka_run_group_tests_name("jobs", tests, NULL, NULL);
}
