/* The frame-stepped scheduler: clocks, tasks, groups, timers, wait records. */
#include "sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deadlines are kept in whole nanoseconds, so two sleeps that end at the
   same moment compare equal even when the clock's floating-point sum
   rounds differently (1.5 + 0.5 vs 2.0), and ties fall to sleep order.
   A timer is due when the clock has reached its deadline, within 1 ns
   (the design's 1e-9 s). Sleeps beyond MAX_DUE never complete. */
#define NS 1e9
#define MAX_DUE 9.0e9   /* seconds: ~285 years, well inside int64 nanoseconds */
#define MAX_CLOCK 4.5e9 /* seconds a clock reaches at most (see advance_clocks) */
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
   queue. Sleeps with a deadline of "now" skip the heap: they are due at the
   next wake pass and precede every heap entry (whose deadlines lie later,
   or would have woken in an earlier pass), so a FIFO keeps the (due, seq)
   order at O(1) a sleep. The FIFO is a list through the records. */
typedef struct tclock {
  double now;
  hent *v;
  uint32_t n, cap;
  uint32_t dead;         /* heap entries whose run emptied (its sleeps ended early) */
  uint32_t nhead, ntail; /* next-frame queue: record indices, 0 when empty */
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
  uint32_t head, tail; /* records (see R), 0 when empty */
} trun;

#define RUN_CACHE 256 /* newest runs by (clock, deadline) hash */
#define MAX_CLASSES 8 /* task classes one scheduler tells apart */
#define MAX_SLOT 65535 /* a record's slot is 16 bits */

enum { REC_TIMER = 1, REC_NEXT, REC_FOREVER, REC_LIST, REC_DONE };

typedef struct rec {
  uint32_t next; /* REC_LIST: next in list; REC_NEXT: in the clock's queue; REC_TIMER: in its run */
  uint32_t prev; /* ...previous */
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

/* A queued task's links (see task). */
#define QNEXT own.next
#define QPREV own.prev

/* Record indices: pool index + 1, or INLINE | task index for the record
   every task carries for the first element of its waits, so the common
   single-element wait allocates nothing. */
#define INLINE 0x80000000u

/* A task's slot: what a wake and a resume touch first (the inline record's
   links and kind follow), what only spawning, cancelling and groups touch
   last. A task is queued (ready or parked) only once its wait is over, so
   the inline record's links are its links in that queue (see tqueue). */
typedef struct task {
  weft_slot h;
  uint8_t state;
  uint8_t queued;        /* in s->ready (1) or s->parked (2) */
  uint8_t realwake;      /* woken by a real-time timer: runs though its group is paused */
  unsigned own_used : 1; /* `own` belongs to the current wait */
  unsigned mode : 1;     /* WEFT_WAIT_ALL or WEFT_WAIT_FIRST */
  unsigned failed : 1;   /* the last wait ended by a failure */
  unsigned doomed : 1;   /* a cancel waits for this task to stop running */
  unsigned listed : 1;   /* its list of waiters was made (see waiters_at) */
  unsigned cls : 3;      /* its class, in s->classes */
  uint16_t pending;      /* records of the current wait not yet completed */
  uint16_t nrecs;        /* records in the current wait (at most WEFT_WAIT_MAX) */
  uint32_t recs;         /* first record of the current wait, index + 1 */
  uint32_t group;        /* group index */
  uint32_t resumes;
  uint32_t born; /* creation sequence (wraps) */
  rec own; /* the inline record */
  uint32_t parent; /* parent task index + 1 */
  /* Children in spawn order, index + 1; the first child's sib_prev is the
     last child. */
  uint32_t child_head, sib_next, sib_prev;
  uint32_t gnext, gprev; /* in the group's task list, index + 1 */
} task;

typedef struct group {
  weft_slot h;
  uint32_t parent; /* index + 1 */
  uint32_t child_head, child_tail, sib_next, sib_prev;
  uint32_t all_next, all_prev;   /* in the scheduler's list of groups */
  uint32_t task_head, task_tail; /* index + 1 */
  uint32_t ntasks;
  uint32_t refs;
  uint32_t cancels; /* times cancelled, for what outlives a cancel (connections) */
  uint8_t paused;   /* paused itself */
  uint8_t held;     /* paused itself or through an ancestor */
  double scale;
  double eff; /* effective scale this frame */
  tclock clock;
} group;

/* A queue of tasks linked through the tasks themselves (QNEXT/QPREV), so
   waking a task never allocates and a freed task leaves its queue in O(1).
   The links name a task by its inline record (INLINE | task index), as the
   clocks' next-frame queues do: a run of that queue woken together is
   already linked as the ready queue wants it (wake_plain). */
typedef struct tqueue {
  uint32_t head, tail; /* INLINE | task index, NONE: empty */
} tqueue;

typedef struct idvec {
  weft_id *v;
  uint32_t n, cap;
} idvec;

struct weft_sched {
  weft_sched_desc desc;
  weft_pool tasks, recs, groups;
  trun *runs;                                  /* see trun */
  uint32_t nruns;                              /* runs made (live or free) */
  uint32_t capruns;                            /* ...room in the array */
  uint32_t runs_free;                          /* first free run index + 1, 0: none */
  uint32_t runs_used;                          /* live runs */
  const weft_task_class *classes[MAX_CLASSES]; /* tasks name theirs by index */
  uint32_t nclasses;
  weft_side waiters;             /* tasks' lists of waiters (see waiters_at) */
  uint32_t run_cache[RUN_CACHE]; /* run index + 1 (see run_join) */
  tclock real;
  uint32_t root;               /* root group index */
  uint32_t all_head, all_tail; /* every group in creation order, index + 1 */
  uint64_t frame;
  uint64_t seq;  /* sleep sequence */
  uint32_t born; /* task creation sequence */
  uint32_t budget;
  uint32_t npaused; /* groups paused themselves: none, no task is held */
  weft_id hot_id;   /* the task run_task resumed last, while it lives... */
  struct task *hot; /* ...and where it is: the calls it makes skip the lookup */
  tqueue ready;   /* woken tasks, in wake order */
  tqueue parked;  /* ready tasks of paused groups */
  idvec stack;    /* resume stack */
  idvec deferred; /* cancels waiting for running tasks */
  tclock **due;   /* scratch: clocks with due timers */
  uint32_t ndue, capdue;
  size_t extra_bytes; /* heaps, queues and vectors */
  uint64_t resumes;   /* task resumes, ever */
};

/* Grows an array geometrically; returns 0 when out of memory. */
static int grow_array(weft_sched *s, void **v, uint32_t *cap, size_t elem, uint32_t need) {
  if (need <= *cap) return 1;
  uint32_t ncap = *cap ? *cap : 16;
  while (ncap < need) ncap *= 2;
  void *nv = s->desc.alloc(s->desc.alloc_ud, *v, elem * *cap, elem * ncap);
  if (!nv) return 0;
  s->extra_bytes += elem * (ncap - *cap);
  *v = nv;
  *cap = ncap;
  return 1;
}

static void free_array(weft_sched *s, void *v, uint32_t cap, size_t elem) {
  if (v) s->desc.alloc(s->desc.alloc_ud, v, elem * cap, 0);
  s->extra_bytes -= elem * cap;
}

static int idvec_push(weft_sched *s, idvec *q, weft_id id) {
  if (!grow_array(s, (void **)&q->v, &q->cap, sizeof(weft_id), q->n + 1)) return 0;
  q->v[q->n++] = id;
  return 1;
}

static inline task *T(const weft_sched *s, uint32_t idx) { return weft_pool_at(&s->tasks, idx); }
static inline rec *R(const weft_sched *s, uint32_t r);
static inline group *G(const weft_sched *s, uint32_t idx) { return weft_pool_at(&s->groups, idx); }
static inline uint32_t tidx(const task *t) { return t->h.next_free; }
static inline uint32_t gidx(const group *g) { return g->h.next_free; }
static inline task *tget(const weft_sched *s, weft_id id) {
  return id == s->hot_id ? s->hot : weft_pool_get(&s->tasks, id);
}
static inline group *gget(const weft_sched *s, weft_id id) {
  if (id == 0) return G(s, s->root);
  return weft_pool_get(&s->groups, id);
}
static inline void *udata_of(task *t) { return (char *)t + sizeof(task); }
static inline rec *R(const weft_sched *s, uint32_t r) {
  if (r & INLINE) return &T(s, r & ~INLINE)->own;
  return &((prec *)weft_pool_at(&s->recs, r - 1))->r;
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
  return weft_side_at(&s->waiters, i);
}
static inline const weft_task_class *CLS(const weft_sched *s, const task *t) {
  return s->classes[t->cls];
}
/* Lists of records kept by head and tail: a clock's next-frame queue, a
   run, and the task queues (whose links are the tasks' inline records).
   Appends record r (at x). */
static inline void chain_push(weft_sched *s, uint32_t *head, uint32_t *tail, uint32_t r, rec *x) {
  x->next = NONE;
  x->prev = *tail;
  if (*tail)
    R(s, *tail)->next = r;
  else
    *head = r;
  *tail = r;
}

/* Unlinks record r (at x). The head's prev is not kept up to date
   (taking the front writes only the list), so the head is known by its
   index. */
static inline void chain_unlink(weft_sched *s, uint32_t *head, uint32_t *tail, uint32_t r, rec *x) {
  if (*head == r)
    *head = x->next;
  else
    R(s, x->prev)->next = x->next;
  if (*tail == r)
    *tail = *head ? x->prev : NONE;
  else
    R(s, x->next)->prev = x->prev;
  x->next = x->prev = NONE;
}

/* ---- timer heaps ---- */

static inline int hless(const hent *a, const hent *b) {
  return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void sift_up(hent *v, uint32_t i) {
  hent e = v[i];
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!hless(&e, &v[p])) break;
    v[i] = v[p];
    i = p;
  }
  v[i] = e;
}

static void sift_down(hent *v, uint32_t n, uint32_t i) {
  hent e = v[i];
  for (;;) {
    uint32_t l = 2 * i + 1;
    if (l >= n) break;
    uint32_t m = (l + 1 < n && hless(&v[l + 1], &v[l])) ? l + 1 : l;
    if (!hless(&v[m], &e)) break;
    v[i] = v[m];
    i = m;
  }
  v[i] = e;
}

static int heap_push(weft_sched *s, tclock *c, int64_t due, uint64_t seq, uint32_t run) {
  if (!grow_array(s, (void **)&c->v, &c->cap, sizeof(hent), c->n + 1)) return 0;
  c->v[c->n] = (hent){due, seq, run};
  sift_up(c->v, c->n++);
  return 1;
}

/* Takes the top entry off. */
static void heap_pop(tclock *c) {
  if (--c->n > 0) {
    c->v[0] = c->v[c->n];
    sift_down(c->v, c->n, 0);
  }
}

static inline trun *RUN(const weft_sched *s, uint32_t i) { return &s->runs[i]; }

/* A new run, zeroed, and its index in *idx; NULL when out of memory. */
static trun *run_alloc(weft_sched *s, uint32_t *idx) {
  uint32_t i;
  if (s->runs_free) {
    i = s->runs_free - 1;
    s->runs_free = s->runs[i].h.next_free;
  } else {
    if (!grow_array(s, (void **)&s->runs, &s->capruns, sizeof(trun), s->nruns + 1)) return NULL;
    i = s->nruns++;
    s->runs[i].h.gen = 0;
  }
  trun *u = &s->runs[i];
  uint32_t gen = u->h.gen + 1;
  memset(u, 0, sizeof *u);
  u->h.gen = gen;
  s->runs_used++;
  *idx = i;
  return u;
}

static void run_free(weft_sched *s, trun *u) {
  u->h.gen++;
  u->h.next_free = s->runs_free;
  s->runs_free = (uint32_t)(u - s->runs) + 1;
  s->runs_used--;
}

/* Frees the clock's heap and its runs (emptied ones: its tasks are gone). */
static void free_clock(weft_sched *s, tclock *c) {
  for (uint32_t i = 0; i < c->n; i++) run_free(s, RUN(s, c->v[i].run));
  free_array(s, c->v, c->cap, sizeof(hent));
  c->v = NULL;
  c->n = c->cap = c->dead = 0;
}

/* Drops the entries of emptied runs and rebuilds the heap (Floyd). O(n);
   done when they outnumber the rest, so O(1) amortised per ended sleep. */
static void heap_compact(weft_sched *s, tclock *c) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < c->n; i++) {
    trun *u = RUN(s, c->v[i].run);
    if (u->head)
      c->v[k++] = c->v[i];
    else
      run_free(s, u);
  }
  c->n = k;
  c->dead = 0;
  for (uint32_t i = k / 2; i-- > 0;) sift_down(c->v, k, i);
}

static inline int64_t to_ns(double t) { return (int64_t)(t * NS + (t >= 0 ? 0.5 : -0.5)); }

static inline int clock_due(const tclock *c) {
  return c->nhead || (c->n > 0 && to_ns(c->now) >= c->v[0].due - 1);
}

/* A record keeps the low 32 bits of its sleep sequence. A timer's whole
   sequence is the nearest at or after its run's first sleep (base: a run
   is joined in sleep order, and sleeps 2^32 apart never share one in
   practice); a next-frame sleep's is the nearest before the scheduler's
   next (it began in the clock's last frame, fewer than 2^32 sleeps ago
   unless its group stayed paused through them). Only the order between
   clocks due in the same pass reads them. */
static inline uint64_t seq_of(uint32_t low, uint64_t base) {
  return base + (uint32_t)(low - (uint32_t)base);
}

/* Sequence of the clock's next due sleep (an emptied run counts: it is
   dropped when picked, waking nothing). */
static inline uint64_t clock_head_seq(const weft_sched *s, const tclock *c) {
  if (c->nhead) return s->seq - (uint32_t)((uint32_t)s->seq - R(s, c->nhead)->seq);
  uint32_t r = RUN(s, c->v[0].run)->head;
  return r ? seq_of(R(s, r)->seq, c->v[0].seq) : c->v[0].seq;
}

/* Adds timer record r (at x, its seq set) to the newest run of (c, due),
   or to a new run. Sleeps begin only while tasks run, never during a wake
   pass, so a run being woken is never joined. 0 when out of memory. */
static int run_join(weft_sched *s, tclock *c, int64_t due, uint32_t r, rec *x) {
  uint32_t h =
      (uint32_t)((((uint64_t)due ^ ((uintptr_t)c >> 4)) * 0x9E3779B97F4A7C15ull) >> 56) &
      (RUN_CACHE - 1);
  uint32_t ui = s->run_cache[h];
  trun *u = ui ? RUN(s, ui - 1) : NULL;
  if (!u || !weft_slot_live(u) || u->due != due || u->clock != c) {
    uint32_t i;
    u = run_alloc(s, &i);
    if (!u) return 0;
    u->due = due;
    u->clock = c;
    if (!heap_push(s, c, due, s->seq, i)) {
      run_free(s, u);
      return 0;
    }
    ui = i + 1;
    s->run_cache[h] = ui;
  } else if (!u->head) {
    c->dead--; /* an emptied run in the heap is live again */
  }
  x->u.run = ui - 1;
  chain_push(s, &u->head, &u->tail, r, x);
  return 1;
}

/* Takes timer record x out of its run; an emptied run stays in the heap,
   stale, until it surfaces or the heap is compacted. */
static void run_unlink(weft_sched *s, uint32_t r, rec *x) {
  trun *u = RUN(s, x->u.run);
  chain_unlink(s, &u->head, &u->tail, r, x);
  if (!u->head) {
    tclock *c = u->clock;
    if (++c->dead > 4 && c->dead > c->n / 2) heap_compact(s, c);
  }
}

static void next_unlink(weft_sched *s, tclock *c, uint32_t r, rec *x) {
  chain_unlink(s, &c->nhead, &c->ntail, r, x);
}

/* ---- records ---- */

static void list_unlink(weft_sched *s, rec *r) {
  weft_wlist *l = r->u.list;
  if (r->prev)
    R(s, r->prev)->next = r->next;
  else
    l->head = r->next;
  if (r->next)
    R(s, r->next)->prev = r->prev;
  else
    l->tail = r->prev;
  r->next = r->prev = NONE;
}

/* Takes record r (at x) out of whatever holds it (list, queue or run); it
   stays in its task's chain. */
static void rec_detach(weft_sched *s, uint32_t r, rec *x) {
  if (x->kind == REC_LIST) {
    list_unlink(s, x);
  } else if (x->kind == REC_NEXT) {
    next_unlink(s, x->u.clock, r, x);
  } else if (x->kind == REC_TIMER) {
    run_unlink(s, r, x);
  }
  x->kind = REC_DONE;
}

/* The task's wait holds no record any more. */
static inline void wait_cleared(task *t) {
  t->own_used = 0;
  t->recs = NONE;
  t->nrecs = t->pending = 0;
}

/* Drops every record of the task's wait. */
static void drop_wait(weft_sched *s, task *t) {
  uint32_t r = t->recs;
  while (r) {
    rec *x = R(s, r);
    uint32_t next = rec_tnext(r, x);
    rec_detach(s, r, x);
    if (!(r & INLINE)) weft_pool_free(&s->recs, weft_pool_id(PR(x)));
    r = next;
  }
  wait_cleared(t);
}

static tqueue *queue_of(weft_sched *s, const task *t) {
  return t->queued == 1 ? &s->ready : &s->parked;
}

/* A queue link's task. */
static inline task *QT(const weft_sched *s, uint32_t link) { return T(s, link & ~INLINE); }

static void enqueue(weft_sched *s, tqueue *q, task *t, uint8_t which) {
  chain_push(s, &q->head, &q->tail, INLINE | tidx(t), &t->own);
  t->queued = which;
}

static void dequeue(weft_sched *s, task *t) {
  if (!t->queued) return;
  tqueue *q = queue_of(s, t);
  chain_unlink(s, &q->head, &q->tail, INLINE | tidx(t), &t->own);
  t->queued = 0;
}

/* Makes a task ready: its records go, it joins the back of the queue. */
static void make_ready(weft_sched *s, task *t) {
  drop_wait(s, t);
  t->state = WEFT_TASK_READY;
  enqueue(s, &s->ready, t, 1);
}

weft_id weft_rec_waiter(const weft_sched *s, weft_rec r) {
  return weft_pool_id(T(s, rec_task(r, R(s, r))));
}

int weft_rec_slot(const weft_sched *s, weft_rec r) { return (int)R(s, r)->slot; }

void weft_rec_complete(weft_sched *s, weft_rec r, int failed) {
  rec *x = R(s, r);
  if (x->kind == REC_DONE) return;
  rec_detach(s, r, x);
  task *t = T(s, rec_task(r, x));
  if (t->state != WEFT_TASK_WAITING && t->state != WEFT_TASK_RUNNING) return;
  if (failed) t->failed = 1;
  if (t->pending) t->pending--;
  if (failed || t->mode == WEFT_WAIT_FIRST || t->pending == 0) {
    /* A wait being built (RUNNING) wakes at commit. */
    if (t->state == WEFT_TASK_WAITING)
      make_ready(s, t);
    else
      t->pending = 0;
  }
}

uint32_t weft_wlist_count(const weft_sched *s, const weft_wlist *l) {
  uint32_t n = 0;
  for (uint32_t r = l->head; r; r = R(s, r)->next) n++;
  return n;
}

/* ---- scheduler ---- */

static int group_new(weft_sched *s, group *parent, weft_id *out);

weft_sched *weft_sched_create(const weft_sched_desc *desc) {
  weft_sched_desc d = desc ? *desc : (weft_sched_desc){0};
  if (!d.alloc) d.alloc = weft_default_alloc;
  if (!d.frame_budget) d.frame_budget = 1000000000u;
  if (!d.max_tasks) d.max_tasks = 1u << 24;
  weft_sched *s = d.alloc(d.alloc_ud, NULL, 0, sizeof *s);
  if (!s) return NULL;
  memset(s, 0, sizeof *s);
  s->desc = d;
  s->budget = d.frame_budget;
  weft_pool_init(&s->tasks, sizeof(task) + d.task_udata_size, d.max_tasks, d.alloc, d.alloc_ud);
  weft_pool_init(&s->recs, sizeof(prec), 0, d.alloc, d.alloc_ud);
  weft_pool_init(&s->groups, sizeof(group), 0, d.alloc, d.alloc_ud);
  s->waiters.elem_size = sizeof(weft_wlist);
  weft_id root;
  if (group_new(s, NULL, &root) != WEFT_OK) {
    weft_sched_destroy(s);
    return NULL;
  }
  s->root = WEFT_ID_INDEX(root);
  /* The resume stack never grows later: entering a task cannot fail.
     Lua itself stops nesting at 200 C calls. */
  if (!grow_array(s, (void **)&s->stack.v, &s->stack.cap, sizeof(weft_id), 256)) {
    weft_sched_destroy(s);
    return NULL;
  }
  return s;
}

static void free_group(weft_sched *s, group *g);

int weft_sched_destroy(weft_sched *s) {
  if (!s) return 0;
  /* Cancel every task, oldest group first; cleanups may start new tasks,
     so repeat until none is left (bounded to stop a script that respawns
     forever from its cleanup). */
  for (int round = 0; round < 8 && s->tasks.used > 0; round++) {
    s->deferred.n = 0;
    s->stack.n = 0;
    for (uint32_t gi = s->all_head; gi; gi = G(s, gi - 1)->all_next)
      weft_group_cancel(s, weft_pool_id(G(s, gi - 1)));
  }
  int leaked = (int)s->tasks.used;
  /* Free groups leaves first: walk the creation list backwards. */
  while (s->all_tail) {
    group *g = G(s, s->all_tail - 1);
    if (gidx(g) != s->root && g->refs) leaked++;
    free_group(s, g);
  }
  free_clock(s, &s->real);
  free_array(s, s->stack.v, s->stack.cap, sizeof(weft_id));
  free_array(s, s->deferred.v, s->deferred.cap, sizeof(weft_id));
  free_array(s, s->due, s->capdue, sizeof(tclock *));
  if (s->recs.used || s->runs_used) leaked++;
  free_array(s, s->runs, s->capruns, sizeof(trun));
  weft_pool_destroy(&s->tasks);
  weft_side_free(&s->waiters, s->desc.alloc, s->desc.alloc_ud);
  weft_pool_destroy(&s->recs);
  weft_pool_destroy(&s->groups);
  s->desc.alloc(s->desc.alloc_ud, s, sizeof *s, 0);
  return leaked;
}

double weft_sched_now(const weft_sched *s) { return G(s, s->root)->clock.now; }
double weft_sched_realtime(const weft_sched *s) { return s->real.now; }
uint64_t weft_sched_frame(const weft_sched *s) { return s->frame; }
void weft_sched_set_frame_budget(weft_sched *s, uint32_t b) { s->budget = b ? b : 1000000000u; }
uint32_t weft_sched_task_count(const weft_sched *s) { return s->tasks.used; }
uint64_t weft_sched_resumes(const weft_sched *s) { return s->resumes; }
void *weft_sched_user(const weft_sched *s) { return s->desc.user; }

size_t weft_sched_memory(const weft_sched *s) {
  size_t n = sizeof *s + s->extra_bytes;
  n += (size_t)s->tasks.nchunks * s->tasks.elem_size * WEFT_POOL_CHUNK;
  n += (size_t)s->recs.nchunks * s->recs.elem_size * WEFT_POOL_CHUNK;
  n += (size_t)s->groups.nchunks * s->groups.elem_size * WEFT_POOL_CHUNK;
  n += weft_side_bytes(&s->waiters);
  return n;
}

/* Advances every group clock, parents before children (creation order). */
static void advance_clocks(weft_sched *s, double dt) {
  for (uint32_t gi = s->all_head; gi; gi = G(s, gi - 1)->all_next) {
    group *g = G(s, gi - 1);
    double pe = g->parent ? G(s, g->parent - 1)->eff : 1.0;
    g->eff = g->paused ? 0.0 : pe * g->scale;
    g->clock.now += dt * g->eff;
    /* Nested scales multiply; past MAX_CLOCK a clock stops, so its
       nanoseconds stay inside int64 (sleeps past MAX_DUE never end). */
    if (g->clock.now > MAX_CLOCK) g->clock.now = MAX_CLOCK;
  }
  s->real.now += dt;
  if (s->real.now > MAX_CLOCK) s->real.now = MAX_CLOCK;
}

/* The next-frame queue's common case in one tight loop: a plain sleep
   (a task's inline record as its only one, with no timer_done call) of a
   waiting task becomes ready, in queue order. Stops at the first other
   record, which fire_timers takes with whatever follows. The run woken is
   linked already as the ready queue links (see tqueue): it joins the
   queue's back whole, only its ends relinked. */
static void wake_plain(weft_sched *s, tclock *c) {
  uint8_t realwake = c == &s->real; /* wait_realtime ignores pause */
  uint32_t first = c->nhead, r;
  task *last = NULL;
  while ((r = c->nhead) & INLINE) {
    task *t = T(s, r & ~INLINE);
    if (t->recs != r || t->state != WEFT_TASK_WAITING || !t->own.quiet) break;
    c->nhead = t->own.next;
    t->own.kind = REC_DONE;
    wait_cleared(t);
    t->state = WEFT_TASK_READY;
    t->queued = 1;
    t->realwake = realwake;
    last = t;
  }
  if (!c->nhead) c->ntail = NONE;
  if (!last) return;
  last->QNEXT = NONE;
  QT(s, first)->QPREV = s->ready.tail;
  if (s->ready.tail)
    QT(s, s->ready.tail)->QNEXT = first;
  else
    s->ready.head = first;
  s->ready.tail = INLINE | tidx(last);
}

/* Pops the clock's next due sleep (queue first, then the first run in the
   heap) and completes its record; an emptied run is just dropped. With `all`, goes on
   while the clock has due sleeps. */
static void fire_timers(weft_sched *s, tclock *c, int all) {
  int64_t now = to_ns(c->now) + 1; /* the clock stands still during a wake pass */
  if (all && (c->nhead & INLINE)) {
    wake_plain(s, c);
    if (!clock_due(c)) return;
  }
  do {
    uint32_t r;
    rec *x;
    task *t;
    trun *u = NULL;
    r = c->nhead;
    if (!r) {
      u = RUN(s, c->v[0].run);
      r = u->head;
      if (!r) { /* emptied by ended sleeps */
        heap_pop(c);
        run_free(s, u);
        c->dead--;
        continue;
      }
    }
    if (r & INLINE) {
      t = T(s, r & ~INLINE);
      x = &t->own;
    } else {
      prec *px = weft_pool_at(&s->recs, r - 1);
      x = &px->r;
      t = T(s, px->task);
    }
    if (!u) { /* take the front (see chain_unlink) */
      c->nhead = x->next;
      if (!c->nhead) c->ntail = NONE;
    } else if ((u->head = x->next) == NONE) {
      u->tail = NONE;
      heap_pop(c);
      run_free(s, u);
    }
    x->next = NONE;
    x->kind = REC_DONE;
    if (!x->quiet && s->desc.timer_done)
      s->desc.timer_done(s->desc.user, weft_pool_id(t), (int)x->slot, c->now - x->start);
    if (t->pending) t->pending--;
    if (t->state != WEFT_TASK_WAITING || (t->mode != WEFT_WAIT_FIRST && t->pending != 0)) continue;
    if (t->recs == r && rec_tnext(r, x) == NONE) { /* the wait's only record: nothing to detach */
      if (!(r & INLINE)) weft_pool_free(&s->recs, weft_pool_id(PR(x)));
      wait_cleared(t);
    } else {
      drop_wait(s, t);
    }
    t->state = WEFT_TASK_READY;
    enqueue(s, &s->ready, t, 1);
    t->realwake = c == &s->real; /* wait_realtime ignores pause */
  } while (all && (c->nhead || (c->n > 0 && now >= c->v[0].due)));
}

/* Wakes due timers. Within one clock: (due, seq) order. Across clocks that
   fall due together: the clock whose next due timer slept first goes first.
   Cost: O(groups) to find the due clocks, then O(log n) per wake. */
static void wake_timers(weft_sched *s) {
  s->ndue = 0;
  if (clock_due(&s->real) && grow_array(s, (void **)&s->due, &s->capdue, sizeof(tclock *), 1))
    s->due[s->ndue++] = &s->real;
  for (uint32_t gi = s->all_head; gi; gi = G(s, gi - 1)->all_next) {
    group *g = G(s, gi - 1);
    if (g->held || !clock_due(&g->clock)) continue;
    if (!grow_array(s, (void **)&s->due, &s->capdue, sizeof(tclock *), s->ndue + 1)) break;
    s->due[s->ndue++] = &g->clock;
  }
  while (s->ndue > 0) {
    /* A wake can remove timers of other clocks (a FIRST wait's other
       records): drop clocks that are no longer due before picking. */
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < s->ndue;) {
      if (!clock_due(s->due[i])) {
        s->due[i] = s->due[--s->ndue];
        continue;
      }
      if (best == UINT32_MAX ||
          clock_head_seq(s, s->due[i]) < clock_head_seq(s, s->due[best]))
        best = i;
      i++;
    }
    if (best == UINT32_MAX) break;
    tclock *c = s->due[best];
    fire_timers(s, c, s->ndue == 1);
  }
}

/* Task t (handle id) starts running, on top of the resume stack (which
   has room for 256 resumes inside each other from the start). */
static inline void task_begin(weft_sched *s, task *t, weft_id id) {
  if (s->stack.n < s->stack.cap)
    s->stack.v[s->stack.n++] = id;
  else
    idvec_push(s, &s->stack, id);
  t->state = WEFT_TASK_RUNNING;
  t->resumes++;
  s->resumes++;
}

/* Task id's resume returned: off the resume stack. */
static inline void stack_pop(weft_sched *s, weft_id id) {
  if (s->stack.n && s->stack.v[s->stack.n - 1] == id) s->stack.n--;
}

/* Runs a task taken off the ready queue: weft_task_enter, its resume,
   weft_task_leave, without looking the task up by handle on the way in. */
static void run_task(weft_sched *s, task *t) {
  weft_id id = weft_pool_id(t);
  uint32_t gen = t->h.gen;
  s->hot_id = id;
  s->hot = t;
  t->realwake = 0;
  task_begin(s, t, id);
  CLS(s, t)->resume(s, id, udata_of(t));
  stack_pop(s, id);
  /* The resume may have freed it (pooled slots stay where they are). */
  if (t->h.gen == gen && t->state == WEFT_TASK_RUNNING) t->state = WEFT_TASK_WAITING;
  if (s->deferred.n) weft_sched_flush_cancels(s);
}

int weft_task_run(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state == WEFT_TASK_RUNNING) return WEFT_ESTATE;
  if (t->queued) dequeue(s, t); /* run now instead of from the queue */
  weft_id outer_id = s->hot_id;
  task *outer = s->hot;
  run_task(s, t);
  /* The task running around this one makes the next calls (see hot_id),
     if it lives: a freed slot's generation has moved on. */
  if (outer && outer->h.gen == WEFT_ID_GEN(outer_id)) {
    s->hot_id = outer_id;
    s->hot = outer;
  }
  return WEFT_OK;
}

/* Below this many tasks their slots and threads mostly stay in the
   caches between two resumes, and fetching ahead only costs. */
#define WARM_TASKS 2048

/* n runs after the task being taken off the queue: its thread is fetched
   (the class's warm) and so is the slot of the task after it, so their
   memory arrives while the current task runs; n's own slot was fetched
   the same way a task earlier. */
static inline void warm_next(weft_sched *s, task *n) {
  if (n->QNEXT) {
    const char *p = (const char *)QT(s, n->QNEXT);
    uint32_t size = s->tasks.elem_size; /* the task and its user data */
    for (uint32_t off = 0; off < size; off += 64) WEFT_PREFETCH(p + off);
    WEFT_PREFETCH(p + size - 1);
  }
  if (CLS(s, n)->warm) CLS(s, n)->warm(udata_of(n));
}

/* Resumes the queue from its front. With many tasks asleep their slots
   and threads have left the caches by the time they run (and a miss here
   costs 100-300 ns), so the memory of the next tasks is asked for a task
   or two ahead (warm_next): the queue links through the slots, so that
   is as far ahead as their addresses are known. */
void weft_sched_run_ready(weft_sched *s) {
  uint32_t ran = 0;
  while (s->ready.head && ran < s->budget) {
    task *t = QT(s, s->ready.head);
    /* dequeue, from the front (see chain_unlink) */
    s->ready.head = t->QNEXT;
    if (!t->QNEXT)
      s->ready.tail = NONE;
    else if (s->tasks.used >= WARM_TASKS)
      warm_next(s, QT(s, t->QNEXT));
    t->queued = 0;
    if (s->npaused && G(s, t->group)->held && !t->realwake) {
      enqueue(s, &s->parked, t, 2);
      continue;
    }
    ran++;
    run_task(s, t);
  }
}

int weft_sched_advance(weft_sched *s, double dt) {
  if (!(dt >= 0 && dt <= WEFT_MAX_DT)) return WEFT_EINVAL;
  s->frame++;
  advance_clocks(s, dt);
  return WEFT_OK;
}

void weft_sched_run_frame(weft_sched *s) {
  wake_timers(s);
  weft_sched_run_ready(s);
}

int weft_sched_step(weft_sched *s, double dt) {
  int rc = weft_sched_advance(s, dt);
  if (rc == WEFT_OK) weft_sched_run_frame(s);
  return rc;
}

/* ---- tasks ---- */

static void do_cancel(weft_sched *s, task *t);

static void child_unlink(weft_sched *s, task *t) {
  if (!t->parent) return;
  task *p = T(s, t->parent - 1);
  uint32_t i = tidx(t) + 1;
  if (p->child_head == i)
    p->child_head = t->sib_next;
  else
    T(s, t->sib_prev - 1)->sib_next = t->sib_next;
  if (t->sib_next)
    T(s, t->sib_next - 1)->sib_prev = t->sib_prev; /* the new first keeps the last */
  else if (p->child_head)
    T(s, p->child_head - 1)->sib_prev = t->sib_prev; /* it was the last */
  t->parent = t->sib_next = t->sib_prev = NONE;
}

static void maybe_free_group(weft_sched *s, group *g) {
  if (g->refs == 0 && g->ntasks == 0 && g->child_head == NONE && gidx(g) != s->root)
    free_group(s, g);
}

static void free_task(weft_sched *s, task *t, int state) {
  if (s->hot == t) {
    s->hot_id = 0;
    s->hot = NULL; /* tget(s, 0) stays NULL */
  }
  drop_wait(s, t);
  dequeue(s, t);
  child_unlink(s, t);
  /* Children that outlive their parent stay in the group, parentless. */
  while (t->child_head) {
    task *c = T(s, t->child_head - 1);
    t->child_head = c->sib_next;
    c->parent = c->sib_next = c->sib_prev = NONE;
  }
  /* A waiter still listed (a task class without a cancel callback) fails. */
  if (t->listed) {
    weft_wlist *l = waiters_at(s, tidx(t));
    while (l->head) weft_rec_complete(s, l->head, 1);
  }
  group *g = G(s, t->group);
  if (t->gprev)
    T(s, t->gprev - 1)->gnext = t->gnext;
  else
    g->task_head = t->gnext;
  if (t->gnext)
    T(s, t->gnext - 1)->gprev = t->gprev;
  else
    g->task_tail = t->gprev;
  g->ntasks--;
  t->state = (uint8_t)state;
  weft_pool_free(&s->tasks, weft_pool_id(t));
  maybe_free_group(s, g);
}

int weft_task_create(weft_sched *s, weft_id gid, weft_id parent, const weft_task_class *cls,
                     weft_id *out, void **udata) {
  group *g = gget(s, gid);
  if (!g || !cls || !cls->resume) return g ? WEFT_EINVAL : WEFT_ESTALE;
  task *p = NULL;
  if (parent) {
    p = tget(s, parent);
    if (!p) return WEFT_ESTALE;
    /* A task being unwound cannot adopt: what it starts is parentless. */
    if (p->state >= WEFT_TASK_CANCELLING || p->group != gidx(g)) p = NULL;
  }
  if (weft_pool_full(&s->tasks)) return WEFT_ELIMIT;
  uint32_t ci = 0;
  while (ci < s->nclasses && s->classes[ci] != cls) ci++;
  if (ci == s->nclasses) {
    if (ci == MAX_CLASSES) return WEFT_ELIMIT;
    s->classes[s->nclasses++] = cls;
  }
  weft_id id;
  task *t = weft_pool_alloc(&s->tasks, &id);
  if (!t) return WEFT_ENOMEM;
  uint32_t i = WEFT_ID_INDEX(id);
  t->cls = (uint8_t)ci;
  t->state = WEFT_TASK_NEW;
  t->group = gidx(g);
  t->born = s->born++;
  t->gprev = g->task_tail;
  if (g->task_tail)
    T(s, g->task_tail - 1)->gnext = i + 1;
  else
    g->task_head = i + 1;
  g->task_tail = i + 1;
  g->ntasks++;
  if (p) {
    t->parent = tidx(p) + 1;
    if (p->child_head) {
      task *first = T(s, p->child_head - 1);
      t->sib_prev = first->sib_prev;
      T(s, first->sib_prev - 1)->sib_next = i + 1;
      first->sib_prev = i + 1;
    } else {
      p->child_head = i + 1;
      t->sib_prev = i + 1;
    }
  }
  *out = id;
  if (udata) *udata = udata_of(t);
  return WEFT_OK;
}

void *weft_task_udata(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? udata_of(t) : NULL;
}

int weft_task_state(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? t->state : WEFT_ESTALE;
}

weft_id weft_task_group(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? weft_pool_id(G(s, t->group)) : 0;
}

weft_id weft_task_parent(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return (t && t->parent) ? weft_pool_id(T(s, t->parent - 1)) : 0;
}

uint32_t weft_task_resumes(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? t->resumes : 0;
}

void weft_task_enter(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return;
  if (t->queued) dequeue(s, t); /* resumed directly while it was queued */
  task_begin(s, t, id);
}

void weft_task_leave(weft_sched *s, weft_id id) {
  stack_pop(s, id);
  task *t = tget(s, id);
  /* Neither waiting nor finished: suspended until woken or cancelled. */
  if (t && t->state == WEFT_TASK_RUNNING) t->state = WEFT_TASK_WAITING;
}

weft_id weft_sched_current(const weft_sched *s) {
  return s->stack.n ? s->stack.v[s->stack.n - 1] : 0;
}

int weft_task_wake(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state != WEFT_TASK_NEW && t->state != WEFT_TASK_WAITING) return WEFT_ESTATE;
  make_ready(s, t);
  return WEFT_OK;
}

weft_wlist *weft_task_waiters(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return NULL;
  if (t->listed) return waiters_at(s, tidx(t));
  weft_wlist *l = weft_side_make(&s->waiters, tidx(t), s->desc.alloc, s->desc.alloc_ud);
  if (!l) return NULL;
  *l = (weft_wlist){0};
  t->listed = 1;
  return l;
}

weft_wlist *weft_task_listed(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t && t->listed ? waiters_at(s, tidx(t)) : NULL;
}

int weft_task_cancel_children(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  uint8_t st = t->state;
  t->state = WEFT_TASK_CANCELLING; /* children may not re-attach meanwhile */
  while (t->child_head) do_cancel(s, T(s, t->child_head - 1));
  t->state = st;
  return WEFT_OK;
}

int weft_task_finish(weft_sched *s, weft_id id, int state) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (state != WEFT_TASK_DONE && state != WEFT_TASK_FAILED && state != WEFT_TASK_CANCELLED)
    return WEFT_EINVAL;
  if (state != WEFT_TASK_DONE) {
    t->state = WEFT_TASK_CANCELLING; /* children may not re-attach */
    while (t->child_head) do_cancel(s, T(s, t->child_head - 1));
  }
  free_task(s, t, state);
  return WEFT_OK;
}

/* Nonzero when a task on the resume stack is t or below t. */
static int subtree_busy(const weft_sched *s, const task *t) {
  uint32_t ti = tidx(t) + 1;
  for (uint32_t i = 0; i < s->stack.n; i++) {
    task *r = tget(s, s->stack.v[i]);
    for (; r; r = r->parent ? T(s, r->parent - 1) : NULL)
      if (tidx(r) + 1 == ti) return 1;
  }
  return 0;
}

static void do_cancel(weft_sched *s, task *t) {
  weft_id id = weft_pool_id(t);
  t->state = WEFT_TASK_CANCELLING;
  child_unlink(s, t);
  while (t->child_head) {
    task *c = T(s, t->child_head - 1);
    if (c->state >= WEFT_TASK_CANCELLING)
      child_unlink(s, c);
    else
      do_cancel(s, c);
  }
  drop_wait(s, t);
  if (CLS(s, t)->cancel) CLS(s, t)->cancel(s, id, udata_of(t));
  t = tget(s, id);
  if (t) free_task(s, t, WEFT_TASK_CANCELLED);
}

int weft_task_cancel(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state >= WEFT_TASK_CANCELLING) return WEFT_OK;
  if (subtree_busy(s, t)) {
    if (!t->doomed) {
      t->doomed = 1;
      if (!idvec_push(s, &s->deferred, id)) return WEFT_ENOMEM;
    }
    return WEFT_EBUSY;
  }
  do_cancel(s, t);
  return WEFT_OK;
}

int weft_task_doomed(const weft_sched *s, weft_id id) {
  for (task *t = tget(s, id); t; t = t->parent ? T(s, t->parent - 1) : NULL)
    if (t->doomed) return 1;
  return 0;
}

void weft_sched_flush_cancels(weft_sched *s) {
  uint32_t i = 0;
  while (i < s->deferred.n) {
    task *t = tget(s, s->deferred.v[i]);
    if (t && t->state < WEFT_TASK_CANCELLING && subtree_busy(s, t)) {
      i++;
      continue;
    }
    s->deferred.v[i] = s->deferred.v[--s->deferred.n];
    if (t && t->state < WEFT_TASK_CANCELLING) {
      do_cancel(s, t);
      i = 0; /* the cancel may have changed what is busy or live */
    }
  }
}

void weft_sched_each_task(weft_sched *s, void (*fn)(void *ud, weft_id task), void *ud) {
  for (uint32_t gi = s->all_head; gi; gi = G(s, gi - 1)->all_next)
    for (uint32_t ti = G(s, gi - 1)->task_head; ti; ti = T(s, ti - 1)->gnext)
      fn(ud, weft_pool_id(T(s, ti - 1)));
}

/* ---- waiting ---- */

int weft_wait_begin(weft_sched *s, weft_id id, int mode) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state != WEFT_TASK_RUNNING && t->state != WEFT_TASK_NEW) return WEFT_ESTATE;
  drop_wait(s, t);
  t->mode = (uint8_t)(mode == WEFT_WAIT_FIRST ? WEFT_WAIT_FIRST : WEFT_WAIT_ALL);
  t->failed = 0;
  t->state = WEFT_TASK_RUNNING;
  return WEFT_OK;
}

static rec *add_rec(weft_sched *s, task *t, int slot, int kind) {
  rec *x;
  uint32_t r;
  if (t->nrecs == WEFT_WAIT_MAX) return NULL;
  if (!t->own_used) {
    t->own_used = 1;
    x = &t->own;
    r = INLINE | tidx(t);
    memset(x, 0, sizeof *x); /* not queued: the task runs */
  } else {
    weft_id rid;
    prec *px = weft_pool_alloc(&s->recs, &rid);
    if (!px) return NULL;
    px->task = tidx(t);
    px->tnext = t->recs;
    x = &px->r;
    r = WEFT_ID_INDEX(rid) + 1;
  }
  /* The inline record is the first of its wait (own_used clears only with
     the wait's chain), so it ends the chain. */
  x->slot = (uint16_t)slot;
  x->kind = (uint8_t)kind;
  t->recs = r;
  t->nrecs++;
  t->pending++;
  return x;
}

/* Queues record r (at x, kind set) on clock c: a timer in a run, a
   next-frame sleep in the queue. 0 when out of memory. */
static inline int sleep_queue(weft_sched *s, tclock *c, rec *x, uint32_t r, double end) {
  x->seq = (uint32_t)s->seq;
  if (x->kind == REC_TIMER) {
    if (!run_join(s, c, to_ns(end), r, x)) return 0;
  } else {
    x->u.clock = c;
    if (x->kind == REC_NEXT) chain_push(s, &c->nhead, &c->ntail, r, x);
  }
  s->seq++;
  return 1;
}

int weft_wait_sleep(weft_sched *s, weft_id id, int slot, double seconds, int real) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state != WEFT_TASK_RUNNING || isnan(seconds) || (unsigned)slot > MAX_SLOT)
    return WEFT_EINVAL;
  tclock *c = real ? &s->real : &G(s, t->group)->clock;
  double end = seconds > 0 ? c->now + seconds : c->now;
  int kind = end > MAX_DUE ? REC_FOREVER : seconds > 0 ? REC_TIMER : REC_NEXT;
  rec *x = add_rec(s, t, slot, kind);
  if (!x) return WEFT_ENOMEM;
  x->start = c->now;
  if (!sleep_queue(s, c, x, t->recs, end)) {
    x->kind = REC_DONE;
    return WEFT_ENOMEM;
  }
  return WEFT_OK;
}

int weft_wait_sleep_only(weft_sched *s, weft_id id, double seconds, int real) {
  task *t = tget(s, id);
  if (!t || t->state != WEFT_TASK_RUNNING) return t ? WEFT_ESTATE : WEFT_ESTALE;
  if (isnan(seconds)) return WEFT_EINVAL;
  if (t->recs) drop_wait(s, t);
  tclock *c = real ? &s->real : &G(s, t->group)->clock;
  double end = seconds > 0 ? c->now + seconds : c->now;
  /* The inline record, filled directly: this is the hottest wait. */
  rec *x = &t->own;
  uint32_t r = INLINE | tidx(t);
  x->slot = 0;
  x->quiet = 1;
  x->start = c->now;
  x->kind = end > MAX_DUE ? REC_FOREVER : seconds > 0 ? REC_TIMER : REC_NEXT;
  if (!sleep_queue(s, c, x, r, end)) {
    x->kind = REC_DONE;
    return WEFT_ENOMEM;
  }
  t->own_used = 1;
  t->recs = r;
  t->nrecs = t->pending = 1;
  t->mode = WEFT_WAIT_ALL;
  t->failed = 0;
  t->state = WEFT_TASK_WAITING;
  return WEFT_OK;
}

double weft_task_clock(const weft_sched *s, weft_id id, int real) {
  if (real) return s->real.now;
  task *t = tget(s, id);
  return t ? G(s, t->group)->clock.now : 0.0;
}

double weft_task_slept(const weft_sched *s, weft_id id, int real) {
  task *t = tget(s, id);
  if (!t) return 0.0;
  return (real ? s->real.now : G(s, t->group)->clock.now) - t->own.start;
}

int weft_wait_on(weft_sched *s, weft_id id, int slot, weft_wlist *l) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state != WEFT_TASK_RUNNING || !l || (unsigned)slot > MAX_SLOT) return WEFT_EINVAL;
  rec *x = add_rec(s, t, slot, REC_LIST);
  if (!x) return WEFT_ENOMEM;
  uint32_t r = t->recs;
  x->u.list = l;
  x->prev = l->tail;
  x->next = NONE;
  if (l->tail)
    R(s, l->tail)->next = r;
  else
    l->head = r;
  l->tail = r;
  return WEFT_OK;
}

void weft_wait_commit(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t || t->state != WEFT_TASK_RUNNING) return;
  int satisfied = t->failed || (t->nrecs > 0 && t->pending == 0) ||
                  (t->mode == WEFT_WAIT_FIRST && t->pending < t->nrecs);
  t->state = WEFT_TASK_WAITING;
  if (satisfied) make_ready(s, t);
}

uint32_t weft_wait_pending(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? t->pending : 0;
}

int weft_wait_failed(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? t->failed : 0;
}

void weft_wait_describe(const weft_sched *s, weft_id id, char *buf, size_t n) {
  task *t = tget(s, id);
  buf[0] = 0;
  if (!t) return;
  if (t->state == WEFT_TASK_READY) {
    snprintf(buf, n, "ready");
    return;
  }
  if (t->nrecs == 0) {
    snprintf(buf, n, t->state == WEFT_TASK_NEW ? "not started" : "suspended");
    return;
  }
  if (t->nrecs == 1) {
    rec *x = R(s, t->recs);
    if (x->kind == REC_TIMER) {
      trun *u = RUN(s, x->u.run);
      double left = (double)u->due / NS - u->clock->now;
      snprintf(buf, n, "sleep %.2f s left", left > 0 ? left : 0.0);
      return;
    }
    if (x->kind == REC_FOREVER) {
      snprintf(buf, n, "sleep forever");
      return;
    }
    if (x->kind == REC_NEXT) {
      snprintf(buf, n, "next frame");
      return;
    }
    snprintf(buf, n, "wait");
    return;
  }
  snprintf(buf, n, "%s %u/%u", t->mode == WEFT_WAIT_FIRST ? "first" : "all", t->nrecs - t->pending,
           t->nrecs);
}

/* ---- groups ---- */

static int group_new(weft_sched *s, group *parent, weft_id *out) {
  weft_id id;
  uint32_t pidx = parent ? gidx(parent) : 0;
  group *g = weft_pool_alloc(&s->groups, &id);
  if (!g) return WEFT_ENOMEM;
  uint32_t i = WEFT_ID_INDEX(id);
  g->scale = 1.0;
  g->eff = 1.0;
  g->refs = 1;
  if (parent) {
    parent = G(s, pidx);
    g->parent = pidx + 1;
    g->held = parent->held;
    g->clock.now = parent->clock.now;
    g->eff = parent->eff;
    g->sib_prev = parent->child_tail;
    if (parent->child_tail)
      G(s, parent->child_tail - 1)->sib_next = i + 1;
    else
      parent->child_head = i + 1;
    parent->child_tail = i + 1;
  }
  g->all_prev = s->all_tail;
  if (s->all_tail)
    G(s, s->all_tail - 1)->all_next = i + 1;
  else
    s->all_head = i + 1;
  s->all_tail = i + 1;
  *out = id;
  return WEFT_OK;
}

static void free_group(weft_sched *s, group *g) {
  uint32_t i = gidx(g) + 1;
  if (g->paused) s->npaused--;
  /* Orphaned subgroups (only at destroy) lose their parent link. */
  while (g->child_head) {
    group *c = G(s, g->child_head - 1);
    g->child_head = c->sib_next;
    c->parent = c->sib_next = c->sib_prev = NONE;
  }
  if (g->parent) {
    group *p = G(s, g->parent - 1);
    if (g->sib_prev)
      G(s, g->sib_prev - 1)->sib_next = g->sib_next;
    else
      p->child_head = g->sib_next;
    if (g->sib_next)
      G(s, g->sib_next - 1)->sib_prev = g->sib_prev;
    else
      p->child_tail = g->sib_prev;
  }
  if (g->all_prev)
    G(s, g->all_prev - 1)->all_next = g->all_next;
  else
    s->all_head = g->all_next;
  if (g->all_next)
    G(s, g->all_next - 1)->all_prev = g->all_prev;
  else
    s->all_tail = g->all_prev;
  (void)i;
  free_clock(s, &g->clock);
  group *p = g->parent ? G(s, g->parent - 1) : NULL;
  weft_pool_free(&s->groups, weft_pool_id(g));
  if (p) maybe_free_group(s, p);
}

int weft_group_create(weft_sched *s, weft_id parent, weft_id *out) {
  group *p = gget(s, parent);
  if (!p) return WEFT_ESTALE;
  return group_new(s, p, out);
}

weft_id weft_sched_root(const weft_sched *s) { return weft_pool_id(G(s, s->root)); }

void weft_group_release(weft_sched *s, weft_id id) {
  group *g = weft_pool_get(&s->groups, id);
  if (!g || g->refs == 0) return;
  g->refs--;
  maybe_free_group(s, g);
}

int weft_group_retain(weft_sched *s, weft_id id) {
  group *g = weft_pool_get(&s->groups, id);
  if (!g) return WEFT_ESTALE;
  g->refs++;
  return WEFT_OK;
}

int weft_group_live(const weft_sched *s, weft_id id) {
  return weft_pool_get(&s->groups, id) != NULL;
}

uint32_t weft_group_cancels(const weft_sched *s, weft_id id) {
  group *g = weft_pool_get(&s->groups, id);
  return g ? g->cancels : 0;
}

weft_id weft_group_parent(const weft_sched *s, weft_id id) {
  group *g = weft_pool_get(&s->groups, id);
  return (g && g->parent) ? weft_pool_id(G(s, g->parent - 1)) : 0;
}

/* Recomputes `held` below g after a pause or resume. O(subgroups). */
static void update_held(weft_sched *s, group *g) {
  uint32_t ph = g->parent ? G(s, g->parent - 1)->held : 0;
  g->held = (uint8_t)(g->paused || ph);
  for (uint32_t c = g->child_head; c; c = G(s, c - 1)->sib_next) update_held(s, G(s, c - 1));
}

int weft_group_pause(weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  if (!g) return WEFT_ESTALE;
  if (!g->paused) s->npaused++;
  g->paused = 1;
  update_held(s, g);
  return WEFT_OK;
}

int weft_group_resume(weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  if (!g) return WEFT_ESTALE;
  if (g->paused) s->npaused--;
  g->paused = 0;
  update_held(s, g);
  /* Requeue parked tasks whose groups run again, in the order parked.
     O(parked tasks). */
  for (uint32_t i = s->parked.head; i;) {
    task *t = QT(s, i);
    i = t->QNEXT;
    if (!G(s, t->group)->held) {
      dequeue(s, t);
      enqueue(s, &s->ready, t, 1);
    }
  }
  return WEFT_OK;
}

int weft_task_held(const weft_sched *s, weft_id id) {
  if (!s->npaused) return 0;
  task *t = tget(s, id);
  return t ? G(s, t->group)->held : 0;
}

int weft_group_paused(const weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  return g ? g->held : 0;
}

int weft_group_set_scale(weft_sched *s, weft_id id, double scale) {
  group *g = gget(s, id);
  if (!g) return WEFT_ESTALE;
  if (!(scale >= 0 && scale <= WEFT_MAX_SCALE)) return WEFT_EINVAL;
  g->scale = scale;
  return WEFT_OK;
}

double weft_group_scale(const weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  return g ? g->scale : 0.0;
}

double weft_group_now(const weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  return g ? g->clock.now : 0.0;
}

int weft_group_cancel(weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  if (!g) return WEFT_ESTALE;
  g->refs++; /* keep it while cleanups run */
  g->cancels++;
  uint32_t gi = gidx(g);
  for (uint32_t c = g->child_head; c;) {
    group *cg = G(s, c - 1);
    cg->refs++;
    weft_group_cancel(s, weft_pool_id(cg));
    uint32_t next = cg->sib_next;
    cg->refs--;
    maybe_free_group(s, cg);
    c = next;
    g = G(s, gi);
  }
  g = G(s, gi);
  int busy = 0;
  if (g->task_tail) {
    uint32_t limit = T(s, g->task_tail - 1)->born;
    for (;;) {
      g = G(s, gi);
      task *pick = NULL;
      for (uint32_t ti = g->task_head; ti; ti = T(s, ti - 1)->gnext) {
        task *t = T(s, ti - 1);
        if ((int32_t)(t->born - limit) > 0) break;
        if (t->state >= WEFT_TASK_CANCELLING || t->doomed) continue;
        pick = t;
        break;
      }
      if (!pick) break;
      if (weft_task_cancel(s, weft_pool_id(pick)) == WEFT_EBUSY) busy = 1;
    }
  }
  g = G(s, gi);
  g->refs--;
  maybe_free_group(s, g);
  return busy ? WEFT_EBUSY : WEFT_OK;
}

uint32_t weft_group_tasks(const weft_sched *s, weft_id id, weft_id *out, uint32_t n) {
  group *g = gget(s, id);
  if (!g) return 0;
  uint32_t k = 0;
  for (uint32_t ti = g->task_head; ti; ti = T(s, ti - 1)->gnext) {
    if (k < n) out[k] = weft_pool_id(T(s, ti - 1));
    k++;
  }
  return k;
}

weft_id weft_sched_task_at(const weft_sched *s, uint32_t idx) {
  if (idx >= weft_pool_capacity(&s->tasks)) return 0;
  const task *t = T(s, idx);
  return weft_slot_live(t) ? weft_pool_id(t) : 0;
}
