/* What the scheduler's files share (sched.c: tasks, records, runs;
   timer.c: clocks and timer heaps; groups.c: groups). Not public. */
#ifndef WEFT_SCHED_INTERNAL_H
#define WEFT_SCHED_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "list.h"
#include "sched.h"
#include "weft_assert.h"

/* For the few helpers of the hottest paths that grew past what the
   compiler inlines on its own (a sleep's queueing): inlined always. */
#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE static inline __attribute__((always_inline))
#else
#define HOT_INLINE static inline
#endif

/* Deadlines are kept in whole nanoseconds, so two sleeps that end at the
   same moment compare equal even when the clock's floating-point sum
   rounds differently (1.5 + 0.5 vs 2.0), and ties fall to sleep order.
   A timer is due when the clock has reached its deadline, within 1 ns
   (the design's 1e-9 s). Sleeps beyond MAX_DUE never complete. */
#define NS 1e9
#define MAX_DUE 9.0e9   /* seconds: ~285 years, well inside int64 nanoseconds */
#define MAX_CLOCK 4.5e9 /* seconds a clock reaches at most (see weft__clocks_advance) */
#define NONE 0u         /* "no index" in index + 1 links */

/* Timers wait in runs: a run holds every sleep on one clock with the same
   deadline, in the order they went to sleep (tasks that sleep together
   usually wake together: a run is woken by walking a list, and the heap
   holds one entry per run, not per sleep). The heap orders runs by (due,
   seq of their first sleep); a sleep joins the newest run with its clock
   and deadline, found through a small cache, or starts a new one, so two
   runs with one deadline never interleave and the wake order is (due,
   sleep order) exactly. */
typedef struct hent {
  int64_t due;  /* deadline in whole nanoseconds of its clock */
  uint64_t seq; /* sequence of the run's first sleep */
  uint32_t run; /* run index */
} hent;

/* A clock, its timer heap (binary min-heap of runs) and its next-frame
   queues. Sleeps with a deadline of "now" skip the heap: they are due at the
   next wake pass and precede every heap entry (whose deadlines lie later,
   or would have woken in an earlier pass), so a FIFO keeps the (due, seq)
   order at O(1) a sleep. Two FIFOs, each in sleep order, merged by seq
   when both hold some: the records of waits (next), and the tasks that
   asked for the next frame as their resume returned, woken already
   (soon, see Q_SOON): the wait() of every frame, which the wake pass
   moves to the ready queue in O(1), touching none of them. */
typedef struct tclock {
  double now;
  hent *v;
  uint32_t n, cap;
  uint32_t dead;  /* heap entries whose run emptied (its sleeps ended early) */
  weft_list next; /* next-frame queue of records (see R) */
  weft_list soon; /* tasks woken already for the next frame (see Q_SOON) */
  uint32_t cuts;  /* times soon went to the ready queue whole */
} tclock;

/* A run of timers: one deadline on one clock, records in sleep order. It
   leaves the heap (and is freed) when its last record fires, or at a
   compaction once empty. Runs are few (one per deadline in use), so they
   live in one array that doubles, not in pool chunks of 512; a pointer to
   one is good until the next run_alloc. */
typedef struct trun {
  weft_slot h; /* gen odd while live; while free, the next free index + 1 */
  int64_t due;
  tclock *clock;
  weft_list recs; /* its records (see R) */
} trun;

#define RUN_CACHE 256  /* newest runs by (clock, deadline) hash */
#define MAX_CLASSES 8  /* task classes one scheduler tells apart */
#define MAX_SLOT 65535 /* a record's slot is 16 bits */

enum { REC_TIMER = 1, REC_NEXT, REC_FOREVER, REC_LIST, REC_DONE };

typedef struct rec {
  /* REC_LIST: in its list; REC_NEXT: in the clock's queue; REC_TIMER: in
     its run; a task's inline record, once its wait is over: in its queue */
  weft_link link;
  uint8_t kind;
  uint8_t quiet; /* timers: no timer_done call (the waiter asks its clock) */
  uint16_t slot; /* where its value goes in the wait (a wait list has at most 65,536) */
  uint32_t seq;  /* REC_TIMER, REC_NEXT: the low bits of its sleep sequence (see seq_of) */
  union {
    weft_wlist *list; /* REC_LIST */
    tclock *clock;    /* REC_NEXT, REC_FOREVER */
    uint32_t run;     /* REC_TIMER: its run's index */
  } u;
  double start; /* clock reading when the wait began (timers) */
} rec;

/* A pooled record: the waiter and the wait's chain, which the inline
   record does without (its task holds it, and it is always the last
   record of its wait's chain: see add_rec). */
typedef struct prec {
  weft_slot h;
  rec r;
  uint32_t tnext; /* next record of the same wait, index + 1 */
  uint32_t task;  /* waiter index */
} prec;

/* Record indices: pool index + 1, or INLINE | task index for the record
   every task carries for the first element of its waits, so the common
   single-element wait allocates nothing. */
#define INLINE 0x80000000u

/* A task's slot: what a wake and a resume touch first (the inline record's
   links and kind follow), what only spawning, cancelling and groups touch
   last. A task is queued (ready or parked) only once its wait is over, so
   the inline record's links are its links in that queue (see queue_link).
   Its children are the tasks whose parent it is: all in its group, made
   after it, so they are found by a walk of its group's tasks onward from
   it (see next_child), in spawn order; nkids says how many there are. */
#define NKIDS_MANY 0xFFFFu /* nkids: this many or more (a walk to the group's end finds them) */
typedef struct task {
  weft_slot h;
  uint8_t state : 4;    /* weft_task_status */
  uint8_t queued : 2;   /* in s->ready (Q_READY), s->parked (Q_PARKED), or Q_SOON */
  uint8_t realwake : 1; /* woken by a real-time timer: runs though its group is paused */
  uint8_t marked : 1;   /* a group cancel under way found it in the group (groups.c) */
  uint8_t own_used : 1; /* `own` belongs to the current wait */
  uint8_t mode : 1;     /* WEFT_WAIT_ALL or WEFT_WAIT_FIRST */
  uint8_t failed : 1;   /* the last wait ended by a failure */
  uint8_t doomed : 1;   /* a cancel waits for this task to stop running */
  uint8_t listed : 1;   /* its list of waiters was made (see waiters_at) */
  uint8_t cls : 3;      /* its class, in s->classes */
  uint16_t nkids;       /* its children, up to NKIDS_MANY */
  uint16_t pending;     /* records of the current wait not yet completed */
  uint16_t nrecs;       /* records in the current wait (at most WEFT_WAIT_MAX) */
  uint32_t recs;        /* first record of the current wait, index + 1 */
  uint32_t group;       /* group index */
  rec own;              /* the inline record */
  uint32_t parent;      /* parent task index + 1 */
  weft_link member;     /* in its group's tasks, in creation order */
  uint32_t word;        /* its class's own (weft__udata_word), where there would be padding */
} task;

typedef struct group {
  weft_slot h;
  uint32_t parent;    /* index + 1 */
  weft_ring children; /* subgroups in creation order, index + 1 */
  weft_link sib;      /* among its parent's subgroups */
  weft_link all;      /* in the scheduler's list of groups */
  weft_list tasks;    /* its tasks in creation order, index + 1 */
  uint32_t ntasks;
  uint32_t refs;
  uint32_t cancels; /* times cancelled, for what outlives a cancel (connections) */
  uint8_t paused;   /* paused itself */
  uint8_t held;     /* paused itself or through an ancestor */
  double scale;
  double eff; /* effective scale this frame */
  tclock clock;
} group;

/* A queue of tasks (ready, parked, a clock's soon list) is a list of
   their inline records (INLINE | task index), so waking a task never
   allocates and a freed task leaves its queue in O(1); the clocks'
   next-frame queues name them the same way, so a stretch of one woken
   together is already linked as the ready queue wants it (wake_plain,
   and the soon list whole). */

typedef struct idvec {
  weft_id *v;
  uint32_t n, cap;
} idvec;

struct weft_sched {
  weft_sched_desc desc;
  void (*on_ready)(void *user, weft_id task); /* weft__sched_on_ready */
  void *on_ready_user;
  weft_pool tasks, recs, groups;
  trun *runs;                                  /* see trun */
  uint32_t nruns;                              /* runs made (live or free) */
  uint32_t capruns;                            /* ...room in the array */
  uint32_t runs_free;                          /* first free run index + 1, 0: none */
  uint32_t runs_used;                          /* live runs */
  const weft_task_class *classes[MAX_CLASSES]; /* tasks name theirs by index */
  uint32_t nclasses;
  weft_side waiters;             /* tasks' lists of waiters (see waiters_at) */
  uint32_t run_cache[RUN_CACHE]; /* run index + 1 (see weft_timer_join) */
  tclock real;
  uint32_t root; /* root group index */
  weft_list all; /* every group in creation order, index + 1 */
  uint64_t frame;
  uint64_t seq; /* sleep sequence */
  uint32_t budget;
  const atomic_int *over; /* the frame's time is spent (weft__sched_set_time_flag) */
  uint32_t npaused;       /* groups paused themselves: none, no task is held */
  weft_id hot_id;         /* the task run_task resumed last, while it lives... */
  struct task *hot;       /* ...and where it is: the calls it makes skip the lookup */
  weft_list ready;        /* woken tasks, in wake order (see queue_link) */
  weft_list parked;       /* ready tasks of paused groups */
  idvec stack;            /* resume stack */
  idvec deferred;         /* cancels waiting for running tasks */
  tclock **due;           /* scratch: clocks with due timers */
  uint32_t ndue, capdue;
  size_t extra_bytes; /* heaps, queues and vectors */
  uint64_t resumes;   /* task resumes, ever */
};

static inline task *T(const weft_sched *s, uint32_t idx) {
  WEFT_ASSERT(idx < weft__pool_capacity(&s->tasks));
  return weft__pool_at(&s->tasks, idx);
}
static inline rec *R(const weft_sched *s, uint32_t r);
static inline group *G(const weft_sched *s, uint32_t idx) {
  WEFT_ASSERT(idx < weft__pool_capacity(&s->groups));
  return weft__pool_at(&s->groups, idx);
}
static inline uint32_t tidx(const task *t) { return t->h.next_free; }
static inline uint32_t gidx(const group *g) { return g->h.next_free; }
/* The live task of a handle, or NULL. hot_id names the slot at hot while
   it lives (free_task clears both). */
static inline task *tget(const weft_sched *s, weft_id id) {
  WEFT_ASSERT(s->hot ? weft__pool_id(s->hot) == s->hot_id : s->hot_id == 0);
  return id == s->hot_id ? s->hot : weft__pool_get(&s->tasks, id);
}
static inline group *gget(const weft_sched *s, weft_id id) {
  if (id == 0) return G(s, s->root);
  return weft__pool_get(&s->groups, id);
}
static inline void *udata_of(task *t) { return (char *)t + sizeof(task); }
static inline rec *R(const weft_sched *s, uint32_t r) {
  WEFT_ASSERT(r != NONE);
  if (r & INLINE) return &T(s, r & ~INLINE)->own;
  return &((prec *)weft__pool_at(&s->recs, r - 1))->r;
}
static inline prec *PR(rec *x) { return (prec *)((char *)x - offsetof(prec, r)); }
static inline const prec *cPR(const rec *x) {
  return (const prec *)((const char *)x - offsetof(prec, r));
}
/* The waiter of record r (at x), and the next record of its wait. */
static inline uint32_t rec_task(uint32_t r, const rec *x) {
  return (r & INLINE) ? r & ~INLINE : cPR(x)->task;
}
static inline uint32_t rec_tnext(uint32_t r, const rec *x) {
  return (r & INLINE) ? NONE : cPR(x)->tnext;
}
/* A task's list of waiters lives out of its slot, as few tasks are waited
   on (side data made when a task in its chunk is first waited on);
   t->listed says the task's list is in use. */
static inline weft_wlist *waiters_at(const weft_sched *s, uint32_t i) {
  return weft__side_at(&s->waiters, i);
}
static inline const weft_task_class *CLS(const weft_sched *s, const task *t) {
  return s->classes[t->cls];
}
/* Where each list's links are (list.h): records by their name (see R),
   queued tasks by their inline record's, tasks and groups by index + 1. */
static inline weft_link *rec_link(const void *s, uint32_t r) { return &R(s, r)->link; }
static inline weft_link *queue_link(const void *s, uint32_t n) {
  return &T(s, n & ~INLINE)->own.link;
}
static inline weft_link *member_link(const void *s, uint32_t n) { return &T(s, n - 1)->member; }
static inline weft_link *gsib_link(const void *s, uint32_t n) { return &G(s, n - 1)->sib; }
static inline weft_link *gall_link(const void *s, uint32_t n) { return &G(s, n - 1)->all; }

static inline trun *RUN(const weft_sched *s, uint32_t i) {
  WEFT_ASSERT(i < s->nruns);
  return &s->runs[i];
}

static inline int64_t to_ns(double t) { return (int64_t)(t * NS + (t >= 0 ? 0.5 : -0.5)); }

/* A new run of (c, due), in the heap and in slot h of the run cache:
   its index + 1, 0 when out of memory. */
uint32_t weft__run_new(weft_sched *s, tclock *c, int64_t due, uint32_t h);

/* Adds timer record r (at x, its seq set) to the newest run of (c, due),
   or to a new run (timer.c). Sleeps begin only while tasks run, never
   during a wake pass, so a run being woken is never joined. Inline: most
   sleeps join a run, and this is every sleep's path. 0 when out of
   memory. */
HOT_INLINE int run_join(weft_sched *s, tclock *c, int64_t due, uint32_t r, rec *x) {
  uint32_t h = (uint32_t)((((uint64_t)due ^ ((uintptr_t)c >> 4)) * 0x9E3779B97F4A7C15ull) >> 56) &
               (RUN_CACHE - 1);
  uint32_t ui = s->run_cache[h];
  trun *u = ui ? RUN(s, ui - 1) : NULL;
  if (!u || !weft__slot_live(u) || u->due != due || u->clock != c) {
    if (!(ui = weft__run_new(s, c, due, h))) return 0;
    u = RUN(s, ui - 1);
  } else if (weft__list_empty(&u->recs)) {
    WEFT_ASSERT(c->dead > 0);
    c->dead--; /* an emptied run in the heap is live again */
  }
  x->u.run = ui - 1;
  weft__list_push(&u->recs, r, &x->link, rec_link, s);
  return 1;
}

/* The task's wait holds no record any more. */
static inline void wait_cleared(task *t) {
  t->own_used = 0;
  t->recs = NONE;
  t->nrecs = t->pending = 0;
}

/* A queue's task, by name. */
static inline task *QT(const weft_sched *s, uint32_t n) { return T(s, n & ~INLINE); }

/* Where a queued task is (t->queued). A task that asks for the next frame
   in wait's fast path (a plain wait() or wait(0): nothing but the next
   frame can end that sleep) is made ready at once and queued Q_SOON in
   its group clock's soon list, which the clock's next wake pass moves to
   the back of the ready queue whole (timer.c), its tasks untouched: they
   stay Q_SOON there until they run. Its inline record then keeps in u.run
   the clock's count of those moves (cuts) when it joined, so a Q_SOON
   task whose clock has moved its soon list since is in s->ready. */
enum { Q_READY = 1, Q_PARKED, Q_SOON };

static inline int in_soon(const weft_sched *s, const task *t) {
  return t->queued == Q_SOON && t->own.u.run == G(s, t->group)->clock.cuts;
}

static inline void enqueue(weft_sched *s, weft_list *q, task *t, uint8_t which) {
  WEFT_ASSERT(!t->queued && q == (which == Q_READY ? &s->ready : &s->parked));
  weft__list_push(q, INLINE | tidx(t), &t->own.link, queue_link, s);
  t->queued = which;
}

static inline void dequeue(weft_sched *s, task *t) {
  if (!t->queued) return;
  weft_list *q = t->queued == Q_PARKED ? &s->parked
                 : in_soon(s, t)       ? &G(s, t->group)->clock.soon
                                       : &s->ready;
  weft__list_unlink(q, INLINE | tidx(t), &t->own.link, queue_link, s);
  t->queued = 0;
}

/* sched.c */
/* Grows an array geometrically; returns 0 when out of memory. */
int weft__array_grow(weft_sched *s, void **v, uint32_t *cap, size_t elem, uint32_t need);
void weft__array_free(weft_sched *s, void *v, uint32_t cap, size_t elem);
/* Drops every record of the task's wait. */
void weft__wait_drop(weft_sched *s, task *t);

/* timer.c */
/* Frees the clock's heap and its runs (emptied ones: its tasks are gone). */
void weft__clock_free(weft_sched *s, tclock *c);
/* Takes timer record x out of its run. */
void weft__timer_unlink(weft_sched *s, uint32_t r, rec *x);
/* Advances every group clock and the real one by dt. */
void weft__clocks_advance(weft_sched *s, double dt);
/* Wakes due timers. */
void weft__timers_wake(weft_sched *s);

/* groups.c */
/* A new group under parent (NULL: the root) with one reference. */
int weft__group_make(weft_sched *s, group *parent, weft_id *out);
void weft__group_free(weft_sched *s, group *g);
/* Frees g if nothing holds it (references, tasks, subgroups) and it is
   not the root. Inline: every task's end asks, and the answer is mostly
   no. */
static inline void weft__group_reap(weft_sched *s, group *g) {
  WEFT_ASSERT(weft__slot_live(g) && (g->ntasks == 0) == weft__list_empty(&g->tasks));
  if (g->refs == 0 && g->ntasks == 0 && weft__ring_empty(&g->children) && gidx(g) != s->root)
    weft__group_free(s, g);
}

#endif
