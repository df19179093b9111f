/* The watchdog: a budget with no cost per instruction. A thread looks,
   every tick, at which stretch of script code runs (budget.c bumps a
   generation number at each stretch's start and end). A stretch seen
   running past its time gets a signal sent to the thread running the
   scripts, whose handler arms a count hook of a whole budget on the Lua
   thread running (Lua allows lua_sethook from a signal handler; lua.c's
   Ctrl-C does the same). When it fires, the hook preempts or kills the
   stretch as a counted budget does (budget.c). The scripts' fast path pays four
   stores a resume.

   The signal is SIGURG, ignored by default and rarely used (Go's runtime
   preempts its goroutines with it for the same reason). The handler
   passes any SIGURG that is not the watchdog's to the handler installed
   before weft's. Between frames the watchdog naps (ten wake-ups a
   second); a stretch starting during a nap is timed from the nap's end. */
#define _GNU_SOURCE /* pthread_sigqueue */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "watchdog.h"
#include "budget.h"

#define WATCH_SIGNAL SIGURG
#define IDLE_TICKS 64    /* ticks with nothing running before it naps */
#define NAP_US 100000    /* how long a nap is */
#define MIN_TICK_US 200  /* the finest tick */
#define STACK (64 * 1024)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct sigaction before; /* the handler weft's replaced */
static int installed;
/* The state whose scripts this thread runs (set before it runs any). */
static __thread weft_state *here __attribute__((tls_model("initial-exec")));

static void on_signal(int sig, siginfo_t *si, void *uc) {
  weft_state *W = here;
  if (W && si->si_code == SI_QUEUE && si->si_value.sival_ptr == W) {
    weft_budget_interrupt(W);
    return;
  }
  if (before.sa_flags & SA_SIGINFO) {
    if (before.sa_sigaction) before.sa_sigaction(sig, si, uc);
  } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    before.sa_handler(sig);
  }
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  installed = sigaction(WATCH_SIGNAL, &sa, &before) == 0;
}

static uint64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Waits us microseconds or until asked to stop; returns 0 when asked. */
static int pause_for(weft_watchdog *D, uint64_t us) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  uint64_t ns = (uint64_t)t.tv_nsec + us * 1000u;
  t.tv_sec += (time_t)(ns / 1000000000u);
  t.tv_nsec = (long)(ns % 1000000000u);
  while (!D->quit && pthread_cond_timedwait(&D->cv, &D->mu, &t) != ETIMEDOUT) {
  }
  return !D->quit;
}

static void *watch(void *ud) {
  weft_state *W = ud;
  weft_watchdog *D = &W->wd;
  uint32_t seen = 0;   /* the stretch last seen */
  uint64_t since = 0;  /* ...when it was first seen */
  unsigned idle = 0;   /* ticks nothing ran */
  pthread_mutex_lock(&D->mu);
  while (pause_for(D, idle >= IDLE_TICKS ? NAP_US : D->tick_us)) {
    uint32_t limit = atomic_load_explicit(&D->limit_us, memory_order_acquire);
    uint32_t gen = atomic_load_explicit(&D->gen, memory_order_acquire);
    uint64_t t = now_us();
    if (!limit) {
      idle++;
      continue;
    }
    idle = 0;
    if (gen != seen) {
      seen = gen;
      since = t;
      continue;
    }
    if (t - since < limit) continue;
    since = t; /* ask again a whole time later if it goes on */
    atomic_store_explicit(&D->fire, gen, memory_order_release);
    union sigval v = {.sival_ptr = W};
    pthread_sigqueue(atomic_load_explicit(&D->runner, memory_order_acquire), WATCH_SIGNAL, v);
  }
  pthread_mutex_unlock(&D->mu);
  return NULL;
}

void weft_watchdog_here(weft_state *W) {
  here = W;
  atomic_store_explicit(&W->wd.runner, pthread_self(), memory_order_release);
}

int weft_watchdog_start(weft_state *W) {
  weft_watchdog *D = &W->wd;
  pthread_once(&once, install);
  if (!installed) return -1;
  D->tick_us = (uint32_t)(W->desc.time_budget_us / 2);
  if (D->tick_us < MIN_TICK_US) D->tick_us = MIN_TICK_US;
  atomic_store(&D->fire, 0);
  weft_watchdog_here(W);
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca)) return -1;
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int bad = pthread_cond_init(&D->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (bad) return -1;
  if (pthread_mutex_init(&D->mu, NULL)) {
    pthread_cond_destroy(&D->cv);
    return -1;
  }
  pthread_attr_t a;
  bad = pthread_attr_init(&a);
  if (!bad) {
    pthread_attr_setstacksize(&a, STACK);
    bad = pthread_create(&D->thread, &a, watch, W);
    pthread_attr_destroy(&a);
  }
  if (bad) {
    pthread_mutex_destroy(&D->mu);
    pthread_cond_destroy(&D->cv);
    return -1;
  }
  D->on = 1;
  return 0;
}

void weft_watchdog_stop(weft_state *W) {
  weft_watchdog *D = &W->wd;
  if (!D->on) return;
  pthread_mutex_lock(&D->mu);
  D->quit = 1;
  pthread_cond_signal(&D->cv);
  pthread_mutex_unlock(&D->mu);
  /* A signal it sent is handled before the join returns (a pending
     signal is delivered when this thread leaves the kernel). */
  pthread_join(D->thread, NULL);
  pthread_mutex_destroy(&D->mu);
  pthread_cond_destroy(&D->cv);
  D->on = 0;
  if (here == W) here = NULL;
}
