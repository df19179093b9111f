/* A worker thread pool for jobs: plain C functions run off the main
   thread, their completions collected back on it. No Lua here. */
#ifndef WEFT_JOBS_H
#define WEFT_JOBS_H

#include <stdint.h>

#include "pool.h"
#include "weft_base.h"

typedef struct weft_jobs weft_jobs;

/* Runs on a worker thread. data is the caller's; the function may change
   it in place (write its results there). */
typedef void (*weft_job_fn)(void *data);

/* Starts `threads` workers (0: one per online core; negative: none, and
   weft__jobs_poll runs the queued jobs itself on the calling thread, in
   order, which makes runs that use jobs reproducible) into *out; when no
   worker thread can start (a system without threads), the pool is that
   inline one (weft__jobs_threads says 0). Every byte the pool holds comes
   from alloc(alloc_ud, ...) (weft_alloc_fn's contract; NULL:
   weft__default_alloc), called only on the threads that call weft_jobs_*,
   never on a worker. Returns WEFT_OK or WEFT_ENOMEM. */
int weft__jobs_create(int threads, weft_alloc_fn alloc, void *alloc_ud, weft_jobs **out);
/* The engine's job system runs the jobs instead of workers of the pool's
   own: weft__jobs_submit hands submit(submit_ud, work, arg) a function to
   call once, on any thread (work(arg) runs the job and queues its
   completion); weft__jobs_poll collects completions as with workers. The
   rest as weft__jobs_create. */
int weft__jobs_create_on(void (*submit)(void *ud, void (*work)(void *arg), void *arg),
                         void *submit_ud, weft_alloc_fn alloc, void *alloc_ud, weft_jobs **out);
/* Stops accepting jobs, lets running jobs finish, joins the workers, then
   hands every job that did not reach weft__jobs_poll (queued, running or
   finished) to drop(ud, data, tag) so the caller can free it. On an
   engine's job system it first waits until every job handed to it has
   run. */
void weft__jobs_destroy(weft_jobs *J, void (*drop)(void *ud, void *data, uint64_t tag), void *ud);
/* Queues run(data) for a worker. tag is returned with the completion.
   Returns WEFT_OK, or WEFT_ENOMEM (run is then never called). */
int weft__jobs_submit(weft_jobs *J, weft_job_fn run, void *data, uint64_t tag);
/* Calls done(ud, data, tag) on the calling thread for every finished job,
   oldest completion first. Returns how many. Never blocks on workers. */
int weft__jobs_poll(weft_jobs *J, void (*done)(void *ud, void *data, uint64_t tag), void *ud);
/* Waits, at most ns nanoseconds, until every job submitted has run (its
   completion queued for weft__jobs_poll): 1 when all have, 0 when the
   time ran out. An inline pool has nothing to wait for: its poll runs
   them. */
int weft__jobs_settle(weft_jobs *J, uint64_t ns);
/* Jobs queued or running (not yet polled). */
uint32_t weft__jobs_pending(weft_jobs *J);
int weft__jobs_threads(const weft_jobs *J);

#endif
