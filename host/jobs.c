/* Worker thread pool: a locked FIFO of jobs in, a locked FIFO of
   completions out. */
#define _POSIX_C_SOURCE 200809L
#include "jobs.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct job {
  struct job *next;
  weft_job_fn run;
  void *data;
  uint64_t tag;
} job;

typedef struct jqueue {
  job *head, *tail;
} jqueue;

struct weft_jobs {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  jqueue todo, done;
  uint32_t pending; /* queued + running + done-unpolled */
  int running;      /* jobs being run right now */
  int stop;
  int nthreads;
  pthread_t *threads;
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

static void *worker(void *arg) {
  weft_jobs *J = arg;
  pthread_mutex_lock(&J->mu);
  for (;;) {
    while (!J->stop && !J->todo.head) pthread_cond_wait(&J->cv, &J->mu);
    if (J->stop) break;
    job *j = pop(&J->todo);
    J->running++;
    pthread_mutex_unlock(&J->mu);
    j->run(j->data);
    pthread_mutex_lock(&J->mu);
    J->running--;
    push(&J->done, j);
  }
  pthread_mutex_unlock(&J->mu);
  return NULL;
}

int weft_jobs_create(int threads, weft_jobs **out) {
  *out = NULL;
  int inline_ = threads < 0;
  if (threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (int)n : 1;
  }
  weft_jobs *J = calloc(1, sizeof *J);
  if (!J) return WEFT_ENOMEM;
  J->threads = calloc(threads > 0 ? (size_t)threads : 1, sizeof(pthread_t));
  if (!J->threads || pthread_mutex_init(&J->mu, NULL) != 0) {
    free(J->threads);
    free(J);
    return WEFT_ENOMEM;
  }
  pthread_cond_init(&J->cv, NULL);
  *out = J;
  if (inline_) return WEFT_OK; /* no workers: weft_jobs_poll runs the jobs */
  for (int i = 0; i < threads; i++) {
    if (pthread_create(&J->threads[i], NULL, worker, J) != 0) break;
    J->nthreads++;
  }
  if (J->nthreads == 0) {
    weft_jobs_destroy(J, NULL, NULL);
    *out = NULL;
    return WEFT_EIO;
  }
  return WEFT_OK;
}

void weft_jobs_destroy(weft_jobs *J, void (*drop)(void *ud, void *data, uint64_t tag), void *ud) {
  if (!J) return;
  pthread_mutex_lock(&J->mu);
  J->stop = 1;
  pthread_cond_broadcast(&J->cv);
  pthread_mutex_unlock(&J->mu);
  /* Workers finish the job in hand (it lands in done) and exit. */
  for (int i = 0; i < J->nthreads; i++) pthread_join(J->threads[i], NULL);
  job *j;
  while ((j = pop(&J->todo)) != NULL || (j = pop(&J->done)) != NULL) {
    if (drop) drop(ud, j->data, j->tag);
    free(j);
  }
  pthread_cond_destroy(&J->cv);
  pthread_mutex_destroy(&J->mu);
  free(J->threads);
  free(J);
}

int weft_jobs_submit(weft_jobs *J, weft_job_fn run, void *data, uint64_t tag) {
  job *j = malloc(sizeof *j);
  if (!j) return WEFT_ENOMEM;
  j->run = run;
  j->data = data;
  j->tag = tag;
  pthread_mutex_lock(&J->mu);
  push(&J->todo, j);
  J->pending++;
  pthread_cond_signal(&J->cv);
  pthread_mutex_unlock(&J->mu);
  return WEFT_OK;
}

int weft_jobs_poll(weft_jobs *J, void (*done)(void *ud, void *data, uint64_t tag), void *ud) {
  if (J->nthreads == 0) { /* inline: every queued job runs here, in order */
    for (;;) {
      pthread_mutex_lock(&J->mu);
      job *j = pop(&J->todo);
      pthread_mutex_unlock(&J->mu);
      if (!j) break;
      j->run(j->data);
      pthread_mutex_lock(&J->mu);
      push(&J->done, j);
      pthread_mutex_unlock(&J->mu);
    }
  }
  pthread_mutex_lock(&J->mu);
  job *list = J->done.head;
  J->done.head = J->done.tail = NULL;
  pthread_mutex_unlock(&J->mu);
  int n = 0;
  while (list) {
    job *j = list;
    list = j->next;
    done(ud, j->data, j->tag);
    free(j);
    n++;
  }
  if (n) {
    pthread_mutex_lock(&J->mu);
    J->pending -= (uint32_t)n;
    pthread_mutex_unlock(&J->mu);
  }
  return n;
}

uint32_t weft_jobs_pending(weft_jobs *J) {
  pthread_mutex_lock(&J->mu);
  uint32_t n = J->pending;
  pthread_mutex_unlock(&J->mu);
  return n;
}

int weft_jobs_threads(const weft_jobs *J) { return J->nthreads; }
