/* The frame-stepped scheduler: clocks, tasks, groups, timers and the wait
   records that connect a waiting task to what it waits on. Plain C11. */
#ifndef WEFT_SCHED_H
#define WEFT_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include <stdatomic.h>

#include "list.h"
#include "pool.h"
#include "weft_base.h"

typedef struct weft_sched weft_sched;

/* Task states. A finished task (DONE, FAILED, CANCELLED) is freed at once:
   its handle goes stale and weft_task_status reports WEFT_ESTALE. */
typedef enum weft_task_status {
  WEFT_TASK_NEW = 1,    /* created, never run */
  WEFT_TASK_READY,      /* woken, queued to run */
  WEFT_TASK_WAITING,    /* suspended on its wait records */
  WEFT_TASK_RUNNING,    /* being resumed (possibly resuming a nested task) */
  WEFT_TASK_CANCELLING, /* its cancel callback is running */
  WEFT_TASK_DONE,
  WEFT_TASK_FAILED,
  WEFT_TASK_CANCELLED
} weft_task_status;

/* What a class's resume returns. */
enum {
  WEFT_RESUMED = 0,     /* the task waits as it set up, is suspended, or ended */
  WEFT_RESUMED_NEXT = 1 /* it asks to sleep until the next frame (weft__wait_sleep_only with
                           0 seconds, made by the scheduler as the resume returns, with
                           the task in hand: the every-frame task's cheap way) */
};

/* What a task is: the callbacks shared by every task of a kind. */
typedef struct weft_task_class {
  /* Runs the task. Called by weft__sched_step (or by whoever resumes it)
     between weft__task_enter and weft__task_leave. Before returning, the
     callee either begins a new wait, leaves the task suspended with no
     records (it then waits for weft__task_wake or cancel), finishes it, or
     returns WEFT_RESUMED_NEXT for a task left running with no records.
     slept is weft__task_slept(s, task, 0), worked out on the way in. */
  int (*resume)(weft_sched *s, weft_id task, void *udata, double slept);
  /* Releases what the task holds when it is cancelled. Called after its
     children were cancelled and its wait records removed, and before it is
     freed; the task's waiters are still listed so the callee can fail them
     (weft__task_waiters). May be NULL. */
  void (*cancel)(weft_sched *s, weft_id task, void *udata);
  /* Called for the task that runs after the one about to run, so its
     memory (a Lua thread) can be fetched while the current one runs: a
     hint, it must not change anything. May be NULL. */
  void (*warm)(void *udata);
} weft_task_class;

/* A list of waiters (wait records) kept inside whatever can be waited on.
   Oldest waiter first. Zero-initialised means empty. The list must not move
   while it has records (pooled objects never move). */
typedef weft_list weft_wlist; /* names records (weft_rec) */

/* A wait record: index + 1 into the scheduler's record pool, 0 for none. */
typedef uint32_t weft_rec;

enum { WEFT_WAIT_ALL = 0, WEFT_WAIT_FIRST = 1 };

typedef struct weft_sched_desc {
  weft_alloc_fn alloc;      /* lua_Alloc-style allocator; NULL: realloc/free */
  void *alloc_ud;           /* passed to alloc */
  uint32_t frame_budget;    /* most resumes per frame; 0: 1,000,000,000 */
  uint32_t max_tasks;       /* most live tasks; 0: 1 << 24 */
  uint32_t task_udata_size; /* bytes of user data kept with every task; 0: none */
  /* Delivers a timer's completion to its waiter (slot of its wait, the
     game or real seconds elapsed since the wait began) just before the
     record completes. May be NULL. */
  void (*timer_done)(void *user, weft_id waiter, int slot, double elapsed);
  void *user; /* passed to timer_done */
} weft_sched_desc;

/* Creates a scheduler with a root group. The desc is copied. Returns NULL
   when out of memory. */
weft_sched *weft__sched_create(const weft_sched_desc *desc);
/* Cancels every task (children first, calling cancel callbacks), then frees
   everything. Returns the number of objects still alive that should not be
   (groups referenced from outside are released here too); 0 means clean. */
int weft__sched_destroy(weft_sched *s);

/* One frame, as the design defines it: advance the clocks (game by
   dt × time scales, real by dt), wake due timers earliest first with ties
   in sleep order, then resume ready tasks in wake order, including those
   woken during the pass, until the queue is empty or the frame budget is
   spent (the rest runs first next frame). Allocates nothing in a steady
   state. dt must be finite and >= 0 (else WEFT_EINVAL). */
int weft__sched_step(weft_sched *s, double dt);
/* weft__sched_step in two halves, so a host can deliver completions from
   other sources (finished jobs) after the clocks moved and before timers
   wake: advance the frame counter and clocks, then wake and run. */
int weft__sched_advance(weft_sched *s, double dt);
void weft__sched_run_frame(weft_sched *s);
/* Resumes ready tasks until the queue is empty or the budget is spent,
   without advancing time: used to run work queued before the first step. */
void weft__sched_run_ready(weft_sched *s);

double weft__sched_now(const weft_sched *s);      /* game time of the root group */
double weft__sched_realtime(const weft_sched *s); /* unscaled, unpaused time */
uint64_t weft__sched_frame(const weft_sched *s);  /* 0 before the first step */
void weft__sched_set_frame_budget(weft_sched *s, uint32_t budget);
/* A flag another thread raises when the frame's time for tasks is spent
   (the watchdog's): once it is nonzero, the frame starts no more tasks
   (after its first) and those left ready run first next frame, in their
   order. The caller clears it at each frame's start. NULL: none. */
void weft__sched_set_time_flag(weft_sched *s, const atomic_int *over);
uint32_t weft__sched_task_count(const weft_sched *s);
/* Group slots made (live or free): group indices are below it. */
uint32_t weft__sched_group_capacity(const weft_sched *s);
/* The live group in slot index idx, or 0 (idx below
   weft__sched_group_capacity). */
weft_id weft__sched_group_at(const weft_sched *s, uint32_t idx);
/* Sets the references held on group g (a load counts its handles): a
   group left with none, no task and no subgroup is freed, as when its
   last reference goes. */
void weft__group_set_refs(weft_sched *s, weft_id g, uint32_t refs);
/* Task slots made (see weft__sched_task_at). */
uint32_t weft__sched_task_capacity(const weft_sched *s);
/* Task resumes since the scheduler was made. */
uint64_t weft__sched_resumes(const weft_sched *s);
/* The user pointer given in the desc. */
void *weft__sched_user(const weft_sched *s);
/* Bytes currently held by the scheduler's own pools and queues. */
size_t weft__sched_memory(const weft_sched *s);

/* ---- tasks ---- */

/* Creates a task in state NEW in group (0: the root group), as a child of
   parent (0: none; the parent must be live and in the same group). udata
   (task_udata_size bytes, zeroed) is returned in *udata and stays at that
   address until the task is freed. A scheduler tells at most 8 classes
   apart. Errors: WEFT_ESTALE (dead group or parent), WEFT_ELIMIT
   (max_tasks, or a 9th class), WEFT_ENOMEM. */
int weft__task_create(weft_sched *s, weft_id group, weft_id parent, const weft_task_class *cls,
                      weft_id *out, void **udata);
/* Just before a task's user data, one 32-bit word of its class's own
   (zeroed with the data, saved with it): where the task's record would
   otherwise end in padding. */
static inline uint32_t *weft__udata_word(void *udata) { return (uint32_t *)udata - 1; }
/* The task's user data, or NULL for a stale handle. */
void *weft__task_udata(const weft_sched *s, weft_id task);
/* The task's state, or WEFT_ESTALE once it is finished and freed. */
int weft__task_state(const weft_sched *s, weft_id task);
weft_id weft__task_group(const weft_sched *s, weft_id task);
/* Nonzero when the task's group is paused (itself or through an
   ancestor), so the task may not run now; 0 for a stale handle. */
int weft__task_held(const weft_sched *s, weft_id task);
weft_id weft__task_parent(const weft_sched *s, weft_id task);
/* Marks task RUNNING on the resume stack / takes it off again. Resumes
   nest (a task may resume another); depth is bounded by the caller. */
void weft__task_enter(weft_sched *s, weft_id task);
void weft__task_leave(weft_sched *s, weft_id task);
/* Runs the task now, from inside whatever runs (a task started at once
   by the one spawning it): its class's resume between weft__task_enter and
   weft__task_leave, then the cancels put off meanwhile, as a frame runs a
   ready task. WEFT_ESTALE for a stale handle, WEFT_ESTATE for a task
   running already. */
int weft__task_run(weft_sched *s, weft_id task);
/* Calls fn (NULL: none) each time a task becomes ready to run: woken
   from a wait, or new (a profiler's wake-ups). */
void weft__sched_on_ready(weft_sched *s, void (*fn)(void *user, weft_id task), void *user);
/* The innermost running task, or 0. */
weft_id weft__sched_current(const weft_sched *s);
/* Queues a NEW or suspended task to run in this frame's pass (or the next
   pass when called outside a step). Its wait records are dropped. */
int weft__task_wake(weft_sched *s, weft_id task);
/* Finishes a running task with WEFT_TASK_DONE, _FAILED or _CANCELLED (it
   ended itself by a cancellation passing through). Its waiters must have
   been completed by the caller (weft__task_waiters). Unless DONE its
   children are cancelled, children first; on DONE they live on in the
   group. The handle goes stale. */
int weft__task_finish(weft_sched *s, weft_id task, int state);
/* Cancels the task's children (not the task), children first, in spawn
   order. Used before a failing task runs its own cleanups. */
int weft__task_cancel_children(weft_sched *s, weft_id task);
/* Cancels the task and its descendants, children first in spawn order,
   each leaving every wait list and its cancel callback run. A finished
   task: WEFT_ESTALE, nothing happens. When the task or a descendant is on
   the resume stack it cannot be unwound here: it is marked, WEFT_EBUSY is
   returned, and the cancel completes at weft__sched_flush_cancels once the
   running tasks have yielded; WEFT_ENOMEM when there is no memory to
   note it, and nothing changes. */
int weft__task_cancel(weft_sched *s, weft_id task);
/* Nonzero when the task or an ancestor awaits a cancel that could not run
   yet (see weft__task_cancel): the running task should yield at once. */
int weft__task_doomed(const weft_sched *s, weft_id task);
/* Runs the cancels that were put off because their targets were running.
   Called by resume drivers after every resume returns. */
void weft__sched_flush_cancels(weft_sched *s);
/* The list of records waiting for this task to finish, made the first
   time it is asked for: NULL for a stale handle or when out of memory.
   It stays at its address while the task lives. */
weft_wlist *weft__task_waiters(weft_sched *s, weft_id task);
/* The task's list of waiters if it was ever asked for, else NULL (never
   allocates). */
weft_wlist *weft__task_listed(const weft_sched *s, weft_id task);
/* Calls fn for each live task in creation order within each group (groups
   in creation order). Do not create or free tasks from fn. */
void weft__sched_each_task(weft_sched *s, void (*fn)(void *ud, weft_id task), void *ud);

/* ---- waiting ---- */

/* Records one wait holds at most (a task counts them in 16 bits). */
#define WEFT_WAIT_MAX 65535

/* Begins a wait for a RUNNING task in mode WEFT_WAIT_ALL (wake when every
   record completed, or at the first failure) or WEFT_WAIT_FIRST (wake at
   the first completion). Drops any previous records. Each record added
   names a slot, 0 to 65535 (WEFT_EINVAL otherwise), which the one who
   completes it reads back (weft__rec_slot, timer_done); a wait holds at
   most WEFT_WAIT_MAX records (WEFT_ENOMEM for more). */
int weft__wait_begin(weft_sched *s, weft_id task, int mode);
/* Adds a sleep of `seconds` on the task's group clock (real = 1: on the
   real clock). The record completes on the first later frame whose clock
   reaches start + seconds - 1e-9; seconds <= 0 means the next frame;
   infinity never completes. */
int weft__wait_sleep(weft_sched *s, weft_id task, int slot, double seconds, int real);
/* The common case in one call: begin, one sleep in slot 0, commit. The
   timer makes no timer_done call: the waiter asks weft__task_slept when
   it runs. */
int weft__wait_sleep_only(weft_sched *s, weft_id task, double seconds, int real);
/* The clock a task's sleeps run on now: its group's, or the real one. */
double weft__task_clock(const weft_sched *s, weft_id task, int real);
/* Seconds on that clock since the task's last weft__wait_sleep_only
   began (the record keeps its start until the task's next wait). */
double weft__task_slept(const weft_sched *s, weft_id task, int real);
/* Adds a record to list, completed by its owner with weft__rec_complete. */
int weft__wait_on(weft_sched *s, weft_id task, int slot, weft_wlist *list);
/* Ends adding records: the task becomes WAITING, or READY at once when
   every record already completed. */
void weft__wait_commit(weft_sched *s, weft_id task);
/* Records still pending for a WAITING task. */
uint32_t weft__wait_pending(const weft_sched *s, weft_id task);
/* Nonzero when the task's last wait was ended by a failure. */
int weft__wait_failed(const weft_sched *s, weft_id task);
/* Describes the task's current wait into buf (e.g. "sleep 1.25 s left",
   "all 1/2"), always terminated. Used by introspection. */
void weft__wait_describe(const weft_sched *s, weft_id task, char *buf, size_t n);

/* The oldest record in list, or 0. */
static inline weft_rec weft__wlist_head(const weft_wlist *l) { return l->head; }
static inline int weft__wlist_empty(const weft_wlist *l) { return l->head == 0; }
/* The waiting task and its slot for a record. */
weft_id weft__rec_waiter(const weft_sched *s, weft_rec r);
int weft__rec_slot(const weft_sched *s, weft_rec r);
/* Completes a record: it leaves its list; its waiter wakes when its wait
   is satisfied (failed != 0 wakes it at once with the failure flag). */
void weft__rec_complete(weft_sched *s, weft_rec r, int failed);
/* Number of records in a list. O(n). */
uint32_t weft__wlist_count(const weft_sched *s, const weft_wlist *l);

/* ---- groups ---- */

/* Creates a group under parent (0: the root) with one reference held by
   the caller. Errors: WEFT_ESTALE, WEFT_ENOMEM. */
int weft__group_create(weft_sched *s, weft_id parent, weft_id *out);
weft_id weft__sched_root(const weft_sched *s);
/* Drops the caller's reference. The group is freed once it has no
   references, tasks or subgroups. */
void weft__group_release(weft_sched *s, weft_id g);
/* Adds a reference (for a second owner). */
int weft__group_retain(weft_sched *s, weft_id g);
int weft__group_live(const weft_sched *s, weft_id g);
/* How many times the group was cancelled (directly or through an
   ancestor); 0 for a stale id. */
uint32_t weft__group_cancels(const weft_sched *s, weft_id g);
weft_id weft__group_parent(const weft_sched *s, weft_id g);
/* Pause stops the group's clock (and its subgroups'); its tasks do not run
   until resumed. */
int weft__sched_pause_group(weft_sched *s, weft_id g);
int weft__sched_resume_group(weft_sched *s, weft_id g);
int weft__group_paused(const weft_sched *s, weft_id g);
/* The group's own scale (the root's is the global time scale). Must be
   finite and >= 0. Sleeps already running follow the new scale. */
int weft__group_set_scale(weft_sched *s, weft_id g, double scale);
double weft__group_scale(const weft_sched *s, weft_id g);
/* The group's clock: game seconds as seen by its tasks. */
double weft__group_now(const weft_sched *s, weft_id g);
/* Cancels every task in the group and its subgroups (subgroups first,
   then tasks oldest first, each with its children). Tasks created by
   cleanups while this runs are left alone. */
int weft__sched_cancel_group(weft_sched *s, weft_id g);
/* Live tasks in the group (not subgroups): fills up to n ids, returns the
   count. */
uint32_t weft__group_tasks(const weft_sched *s, weft_id g, weft_id *out, uint32_t n);

/* The live task in slot index idx (WEFT_ID_INDEX of its id), or 0. */
weft_id weft__sched_task_at(const weft_sched *s, uint32_t idx);

/* ---- saving ---- */

#include "wire.h"

/* What a save of the scheduler names that lies outside it. The wait
   lists of other objects (a signal's, a future's) are named by whoever
   owns them; the task classes by name; and each task's user data passes
   through task_out on its way out, so addresses it holds can be named
   (the loader fixes them once the rest is back). */
typedef struct weft_sched_names {
  /* saving: a list's name, below 2^31; 0: unknown (the save fails) */
  uint32_t (*list_name)(void *ud, const weft_wlist *list);
  /* loading: the list of a name; NULL: none (the load fails) */
  weft_wlist *(*list_at)(void *ud, uint32_t name);
  /* a class's name, and the class of a name (NULL: none) */
  const char *(*class_name)(void *ud, const weft_task_class *cls);
  const weft_task_class *(*class_at)(void *ud, const char *name);
  /* saving: a copy of a task's user data, to scrub (NULL: as it is) */
  void (*task_out)(void *ud, weft_id task, void *copy);
  void *ud;
} weft_sched_names;

/* Writes the scheduler's state between two frames (no task running):
   every task, wait record, timer, group, clock and queue, with the
   handles they have now. WEFT_ESTATE while a task runs; WEFT_EINVAL when
   something cannot be named (w->err says what); WEFT_EIO when the
   stream fails. */
int weft__sched_save(const weft_sched *s, weft_wire *w, const weft_sched_names *names);
/* Reads a save into s, a scheduler fresh from weft__sched_create with
   the same task_udata_size and no task ever made: afterwards it is the
   saved one, handles and all, and its next step is the one the saved
   scheduler would have made. Every index, link and count read is
   checked before anything is followed: a damaged or crafted save is
   refused (WEFT_EINVAL, w->err says why) and s is left empty, to be
   destroyed. */
int weft__sched_load(weft_sched *s, weft_wire *w, const weft_sched_names *names);
/* For the owners of lists outside the scheduler, once it is loaded:
   list holds wait records that name it, linked both ways, each of a
   live task (0 when not), so completing them all ends. */
int weft__wlist_check(const weft_sched *s, const weft_wlist *list);

#endif
