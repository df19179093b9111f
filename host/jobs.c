/* Worker thread pool: a locked FIFO of jobs in, a locked FIFO of
   completions out. */
#include "jobs.h"

#include <string.h>

#include "plat.h"

typedef struct job {
  struct job *next;
  struct weft_jobs *owner; /* for work() on an engine's job system */
  weft_job_fn run;
  void *data;
  uint64_t tag;
} job;

typedef struct jqueue {
  job *head, *tail;
} jqueue;

struct weft_jobs {
  weft_mutex mu;
  weft_cond cv;
  jqueue todo, done;
  uint32_t pending; /* queued + running + done-unpolled */
  int running;      /* jobs being run right now */
  int stop;
  int nthreads;
  weft_thread *threads; /* nthreads started of cap */
  int cap;
  weft_alloc_fn alloc; /* called only on the threads calling weft_jobs_* */
  void *alloc_ud;
  /* An engine's job system, NULL: the pool's own workers */
  void (*submit)(void *ud, void (*work)(void *arg), void *arg);
  void *submit_ud;
  uint32_t handed; /* jobs handed to it that have not run yet */
  int settling;    /* a thread waits in weft__jobs_settle: completions wake it */
};

static void push(jqueue *q, job *j) {
  j->next = NULL;
  if (q->tail)
    q->tail->next = j;
  else
    q->head = j;
  q->tail = j;
}

static job *pop(jqueue *q) {
  job *j = q->head;
  if (j) {
    q->head = j->next;
    if (!q->head) q->tail = NULL;
  }
  return j;
}

static void worker(void *arg) {
  weft_jobs *J = arg;
  weft__mutex_lock(&J->mu);
  for (;;) {
    while (!J->stop && !J->todo.head) weft__cond_wait(&J->cv, &J->mu);
    if (J->stop) break;
    job *j = pop(&J->todo);
    J->running++;
    weft__mutex_unlock(&J->mu);
    j->run(j->data);
    weft__mutex_lock(&J->mu);
    J->running--;
    push(&J->done, j);
    if (J->settling) weft__cond_broadcast(&J->cv);
  }
  weft__mutex_unlock(&J->mu);
}

/* A job on the engine's job system: runs it, queues its completion. */
static void work(void *arg) {
  job *j = arg;
  weft_jobs *J = j->owner;
  j->run(j->data);
  weft__mutex_lock(&J->mu);
  push(&J->done, j);
  J->handed--;
  weft__cond_broadcast(&J->cv);
  weft__mutex_unlock(&J->mu);
}

static void release(weft_jobs *J, void *p, size_t size) {
  if (p) J->alloc(J->alloc_ud, p, size, 0);
}

int weft__jobs_create(int threads, weft_alloc_fn alloc, void *alloc_ud, weft_jobs **out) {
  *out = NULL;
  if (!alloc) alloc = weft__default_alloc;
  int inline_ = threads < 0;
  if (threads == 0) threads = weft__cpu_count();
  weft_jobs *J = alloc(alloc_ud, NULL, 0, sizeof *J);
  if (!J) return WEFT_ENOMEM;
  memset(J, 0, sizeof *J);
  J->alloc = alloc;
  J->alloc_ud = alloc_ud;
  J->cap = threads > 0 ? threads : 1;
  J->threads = alloc(alloc_ud, NULL, 0, sizeof(weft_thread) * (size_t)J->cap);
  if (!J->threads || weft__mutex_init(&J->mu) != WEFT_OK) {
    release(J, J->threads, sizeof(weft_thread) * (size_t)J->cap);
    release(J, J, sizeof *J);
    return WEFT_ENOMEM;
  }
  if (weft__cond_init(&J->cv) != WEFT_OK) {
    weft__mutex_destroy(&J->mu);
    release(J, J->threads, sizeof(weft_thread) * (size_t)J->cap);
    release(J, J, sizeof *J);
    return WEFT_ENOMEM;
  }
  *out = J;
  if (inline_) return WEFT_OK; /* no workers: weft__jobs_poll runs the jobs */
  /* A system whose threads cannot start (plat_nothreads.c) gets the
     inline pool: jobs still run, at the next poll. */
  for (int i = 0; i < threads; i++) {
    if (weft__thread_start(&J->threads[i], worker, J, 0) != WEFT_OK) break;
    J->nthreads++;
  }
  return WEFT_OK;
}

int weft__jobs_create_on(void (*submit)(void *ud, void (*work)(void *arg), void *arg),
                         void *submit_ud, weft_alloc_fn alloc, void *alloc_ud, weft_jobs **out) {
  int rc = weft__jobs_create(-1, alloc, alloc_ud, out); /* no workers of its own */
  if (rc == WEFT_OK) {
    (*out)->submit = submit;
    (*out)->submit_ud = submit_ud;
  }
  return rc;
}

void weft__jobs_destroy(weft_jobs *J, void (*drop)(void *ud, void *data, uint64_t tag), void *ud) {
  if (!J) return;
  weft__mutex_lock(&J->mu);
  while (J->handed) weft__cond_wait(&J->cv, &J->mu); /* the engine's system still runs some */
  J->stop = 1;
  weft__cond_broadcast(&J->cv);
  weft__mutex_unlock(&J->mu);
  /* Workers finish the job in hand (it lands in done) and exit. */
  for (int i = 0; i < J->nthreads; i++) weft__thread_join(&J->threads[i]);
  job *j;
  while ((j = pop(&J->todo)) != NULL || (j = pop(&J->done)) != NULL) {
    if (drop) drop(ud, j->data, j->tag);
    release(J, j, sizeof *j);
  }
  weft__cond_destroy(&J->cv);
  weft__mutex_destroy(&J->mu);
  release(J, J->threads, sizeof(weft_thread) * (size_t)J->cap);
  release(J, J, sizeof *J);
}

int weft__jobs_submit(weft_jobs *J, weft_job_fn run, void *data, uint64_t tag) {
  job *j = J->alloc(J->alloc_ud, NULL, 0, sizeof *j);
  if (!j) return WEFT_ENOMEM;
  j->run = run;
  j->data = data;
  j->tag = tag;
  j->owner = J;
  weft__mutex_lock(&J->mu);
  J->pending++;
  if (J->submit) {
    J->handed++;
    weft__mutex_unlock(&J->mu);
    J->submit(J->submit_ud, work, j); /* it may run work at once, here */
    return WEFT_OK;
  }
  push(&J->todo, j);
  weft__cond_signal(&J->cv);
  weft__mutex_unlock(&J->mu);
  return WEFT_OK;
}

int weft__jobs_poll(weft_jobs *J, void (*done)(void *ud, void *data, uint64_t tag), void *ud) {
  if (J->nthreads == 0) { /* inline: every queued job runs here, in order */
    for (;;) {
      weft__mutex_lock(&J->mu);
      job *j = pop(&J->todo);
      weft__mutex_unlock(&J->mu);
      if (!j) break;
      j->run(j->data);
      weft__mutex_lock(&J->mu);
      push(&J->done, j);
      weft__mutex_unlock(&J->mu);
    }
  }
  weft__mutex_lock(&J->mu);
  job *list = J->done.head;
  J->done.head = J->done.tail = NULL;
  weft__mutex_unlock(&J->mu);
  int n = 0;
  while (list) {
    job *j = list;
    list = j->next;
    done(ud, j->data, j->tag);
    release(J, j, sizeof *j);
    n++;
  }
  if (n) {
    weft__mutex_lock(&J->mu);
    J->pending -= (uint32_t)n;
    weft__mutex_unlock(&J->mu);
  }
  return n;
}

uint32_t weft__jobs_pending(weft_jobs *J) {
  weft__mutex_lock(&J->mu);
  uint32_t n = J->pending;
  weft__mutex_unlock(&J->mu);
  return n;
}

int weft__jobs_threads(const weft_jobs *J) { return J->nthreads; }

int weft__jobs_settle(weft_jobs *J, uint64_t ns) {
  if (J->nthreads == 0 && !J->submit) return 1;
  uint64_t end = weft__clock_ns() + ns;
  weft__mutex_lock(&J->mu);
  J->settling++;
  int all;
  while (!(all = !J->todo.head && J->running == 0 && J->handed == 0)) {
    uint64_t now = weft__clock_ns();
    if (now >= end) break;
    weft__cond_wait_ns(&J->cv, &J->mu, end - now);
  }
  J->settling--;
  weft__mutex_unlock(&J->mu);
  return all;
}
