/* plat.h's threads on a system that has none (WebAssembly without shared
   memory: the web build), chosen at build time with WEFT_PLAT_NOTHREADS
   in place of plat_posix.c's pthreads. No thread ever starts, so the job
   pool runs its jobs on the polling thread and budgets count
   instructions (the watchdog does not start); with one thread, a lock
   has nobody to exclude. make test-c runs the host tests over it
   (build/tests/nothreads/). */
#if defined(WEFT_PLAT_NOTHREADS)
#include "plat.h"

int weft__thread_start(weft_thread *t, void (*fn)(void *arg), void *arg, size_t stack_size) {
  (void)stack_size;
  t->fn = fn;
  t->arg = arg;
  return WEFT_EIO; /* fn is never called: the caller falls back (jobs inline, counted budgets) */
}

void weft__thread_join(weft_thread *t) { (void)t; }

int weft__mutex_init(weft_mutex *m) {
  (void)m;
  return WEFT_OK;
}
void weft__mutex_destroy(weft_mutex *m) { (void)m; }
void weft__mutex_lock(weft_mutex *m) { (void)m; }
void weft__mutex_unlock(weft_mutex *m) { (void)m; }
int weft__cond_init(weft_cond *c) {
  (void)c;
  return WEFT_OK;
}
void weft__cond_destroy(weft_cond *c) { (void)c; }
/* No other thread can signal, and callers loop over their condition:
   returning at once is the only wake-up there will ever be. */
void weft__cond_wait(weft_cond *c, weft_mutex *m) { (void)c, (void)m; }
/* The time runs out at once: sleeping would only stall the one thread
   (in a browser, the page), and nothing could change the condition
   meanwhile. */
int weft__cond_wait_ns(weft_cond *c, weft_mutex *m, uint64_t ns) {
  (void)c, (void)m, (void)ns;
  return 1;
}
void weft__cond_signal(weft_cond *c) { (void)c; }
void weft__cond_broadcast(weft_cond *c) { (void)c; }

void weft__once_run(weft_once *o, void (*fn)(void)) {
  if (atomic_load(&o->state) == 2) return;
  atomic_store(&o->state, 1);
  fn();
  atomic_store(&o->state, 2);
}

/* One thread: one processor's worth of work, whatever the machine has. */
int weft__cpu_count(void) { return 1; }
#endif
