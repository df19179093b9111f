/* The frame-stepped scheduler: tasks, their wait records, the ready
   queue and the frame. Clocks and timers are in timer.c, groups in
   groups.c. */
#include "sched_internal.h"

_Static_assert(offsetof(task, word) + sizeof(uint32_t) == sizeof(task),
               "a task's word is just before its user data (weft__udata_word)");

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Grows an array geometrically; returns 0 when out of memory. */
int weft__array_grow(weft_sched *s, void **v, uint32_t *cap, size_t elem, uint32_t need) {
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

void weft__array_free(weft_sched *s, void *v, uint32_t cap, size_t elem) {
  WEFT_ASSERT(s->extra_bytes >= elem * cap);
  if (v) s->desc.alloc(s->desc.alloc_ud, v, elem * cap, 0);
  s->extra_bytes -= elem * cap;
}

static int idvec_push(weft_sched *s, idvec *q, weft_id id) {
  if (!weft__array_grow(s, (void **)&q->v, &q->cap, sizeof(weft_id), q->n + 1)) return 0;
  q->v[q->n++] = id;
  return 1;
}

/* ---- records ---- */

/* Takes record r (at x) out of whatever holds it (list, queue or run); it
   stays in its task's chain. */
static void rec_detach(weft_sched *s, uint32_t r, rec *x) {
  WEFT_ASSERT(x->kind >= REC_TIMER && x->kind <= REC_DONE);
  if (x->kind == REC_LIST) {
    weft__list_unlink(x->u.list, r, &x->link, rec_link, s);
  } else if (x->kind == REC_NEXT) {
    weft__list_unlink(&x->u.clock->next, r, &x->link, rec_link, s);
  } else if (x->kind == REC_TIMER) {
    weft__timer_unlink(s, r, x);
  }
  x->kind = REC_DONE;
}

/* Drops every record of the task's wait. */
void weft__wait_drop(weft_sched *s, task *t) {
  uint32_t r = t->recs;
  while (r) {
    rec *x = R(s, r);
    uint32_t next = rec_tnext(r, x);
    rec_detach(s, r, x);
    if (!(r & INLINE)) weft__pool_free(&s->recs, weft__pool_id(PR(x)));
    r = next;
  }
  wait_cleared(t);
}

/* Makes a task ready: its records go, it joins the back of the queue. */
static void make_ready(weft_sched *s, task *t) {
  weft__wait_drop(s, t);
  t->state = WEFT_TASK_READY;
  enqueue(s, &s->ready, t, Q_READY);
  if (s->on_ready) s->on_ready(s->on_ready_user, weft__pool_id(t));
}

void weft__sched_on_ready(weft_sched *s, void (*fn)(void *user, weft_id task), void *user) {
  s->on_ready = fn;
  s->on_ready_user = user;
}

weft_id weft__rec_waiter(const weft_sched *s, weft_rec r) {
  return weft__pool_id(T(s, rec_task(r, R(s, r))));
}

int weft__rec_slot(const weft_sched *s, weft_rec r) { return (int)R(s, r)->slot; }

void weft__rec_complete(weft_sched *s, weft_rec r, int failed) {
  rec *x = R(s, r);
  if (x->kind == REC_DONE) return;
  rec_detach(s, r, x);
  task *t = T(s, rec_task(r, x));
  WEFT_ASSERT(weft__slot_live(t) && t->pending <= t->nrecs);
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

uint32_t weft__wlist_count(const weft_sched *s, const weft_wlist *l) {
  uint32_t n = 0;
  for (uint32_t r = l->head; r; r = R(s, r)->link.next) n++;
  return n;
}

/* ---- scheduler ---- */

weft_sched *weft__sched_create(const weft_sched_desc *desc) {
  weft_sched_desc d = desc ? *desc : (weft_sched_desc){0};
  if (!d.alloc) d.alloc = weft__default_alloc;
  if (!d.frame_budget) d.frame_budget = 1000000000u;
  if (!d.max_tasks) d.max_tasks = 1u << 24;
  weft_sched *s = d.alloc(d.alloc_ud, NULL, 0, sizeof *s);
  if (!s) return NULL;
  memset(s, 0, sizeof *s);
  s->desc = d;
  s->budget = d.frame_budget;
  weft__pool_init(&s->tasks, sizeof(task) + d.task_udata_size, d.max_tasks, d.alloc, d.alloc_ud);
  weft__pool_init(&s->recs, sizeof(prec), 0, d.alloc, d.alloc_ud);
  weft__pool_init(&s->groups, sizeof(group), 0, d.alloc, d.alloc_ud);
  s->waiters.elem_size = sizeof(weft_wlist);
  weft_id root;
  if (weft__group_make(s, NULL, &root) != WEFT_OK) {
    weft__sched_destroy(s);
    return NULL;
  }
  s->root = WEFT_ID_INDEX(root);
  /* The resume stack never grows later: entering a task cannot fail.
     Lua itself stops nesting at 200 C calls. */
  if (!weft__array_grow(s, (void **)&s->stack.v, &s->stack.cap, sizeof(weft_id), 256)) {
    weft__sched_destroy(s);
    return NULL;
  }
  return s;
}

int weft__sched_destroy(weft_sched *s) {
  if (!s) return 0;
  /* Cancel every task, oldest group first; cleanups may start new tasks,
     so repeat until none is left (bounded to stop a script that respawns
     forever from its cleanup). */
  for (int round = 0; round < 8 && s->tasks.used > 0; round++) {
    s->deferred.n = 0;
    s->stack.n = 0;
    for (uint32_t gi = s->all.head; gi; gi = G(s, gi - 1)->all.next)
      weft__sched_cancel_group(s, weft__pool_id(G(s, gi - 1)));
  }
  int leaked = (int)s->tasks.used;
  /* Free groups leaves first: walk the creation list backwards. */
  while (s->all.tail) {
    group *g = G(s, s->all.tail - 1);
    if (gidx(g) != s->root && g->refs) leaked++;
    weft__group_free(s, g);
  }
  weft__clock_free(s, &s->real);
  weft__array_free(s, s->stack.v, s->stack.cap, sizeof(weft_id));
  weft__array_free(s, s->deferred.v, s->deferred.cap, sizeof(weft_id));
  weft__array_free(s, s->due, s->capdue, sizeof(tclock *));
  if (s->recs.used || s->runs_used) leaked++;
  weft__array_free(s, s->runs, s->capruns, sizeof(trun));
  WEFT_ASSERT(s->extra_bytes == 0);
  weft__pool_destroy(&s->tasks);
  weft__side_free(&s->waiters, s->desc.alloc, s->desc.alloc_ud);
  weft__pool_destroy(&s->recs);
  weft__pool_destroy(&s->groups);
  s->desc.alloc(s->desc.alloc_ud, s, sizeof *s, 0);
  return leaked;
}

double weft__sched_now(const weft_sched *s) { return G(s, s->root)->clock.now; }
double weft__sched_realtime(const weft_sched *s) { return s->real.now; }
uint64_t weft__sched_frame(const weft_sched *s) { return s->frame; }
void weft__sched_set_frame_budget(weft_sched *s, uint32_t b) { s->budget = b ? b : 1000000000u; }
void weft__sched_set_time_flag(weft_sched *s, const atomic_int *over) { s->over = over; }
uint32_t weft__sched_task_count(const weft_sched *s) { return s->tasks.used; }
uint32_t weft__sched_task_capacity(const weft_sched *s) { return weft__pool_capacity(&s->tasks); }
uint32_t weft__sched_group_capacity(const weft_sched *s) { return weft__pool_capacity(&s->groups); }
uint64_t weft__sched_resumes(const weft_sched *s) { return s->resumes; }
void *weft__sched_user(const weft_sched *s) { return s->desc.user; }

size_t weft__sched_memory(const weft_sched *s) {
  size_t n = sizeof *s + s->extra_bytes;
  n += (size_t)s->tasks.nchunks * s->tasks.elem_size * WEFT_POOL_CHUNK;
  n += (size_t)s->recs.nchunks * s->recs.elem_size * WEFT_POOL_CHUNK;
  n += (size_t)s->groups.nchunks * s->groups.elem_size * WEFT_POOL_CHUNK;
  n += weft__side_bytes(&s->waiters);
  return n;
}

/* Queues record r (at x, kind set) on clock c: a timer in a run, a
   next-frame sleep in the queue. 0 when out of memory. */
HOT_INLINE int sleep_queue(weft_sched *s, tclock *c, rec *x, uint32_t r, double end) {
  x->seq = (uint32_t)s->seq;
  if (x->kind == REC_TIMER) {
    if (!run_join(s, c, to_ns(end), r, x)) return 0;
  } else {
    x->u.clock = c;
    if (x->kind == REC_NEXT) weft__list_push(&c->next, r, &x->link, rec_link, s);
  }
  s->seq++;
  return 1;
}

/* Running task t's wait becomes one plain sleep on clock c (seconds not
   NaN; 0 or less: the next frame), in its inline record, filled directly:
   the hottest wait (weft__wait_sleep_only, and WEFT_RESUMED_NEXT). The
   sleep is quiet: its waiter asks weft__task_slept. 0 when out of memory. */
HOT_INLINE int sleep_plain(weft_sched *s, task *t, tclock *c, double seconds) {
  if (t->recs) weft__wait_drop(s, t);
  double end = seconds > 0 ? c->now + seconds : c->now;
  rec *x = &t->own;
  uint32_t r = INLINE | tidx(t);
  x->slot = 0;
  x->quiet = 1;
  x->start = c->now;
  /* (a clock never passes MAX_CLOCK: a sleep to the next frame is due) */
  x->kind = seconds > 0 ? (end > MAX_DUE ? REC_FOREVER : REC_TIMER) : REC_NEXT;
  if (!sleep_queue(s, c, x, r, end)) {
    x->kind = REC_DONE;
    return 0;
  }
  t->own_used = 1;
  t->recs = r;
  t->nrecs = t->pending = 1;
  t->mode = WEFT_WAIT_ALL;
  t->failed = 0;
  t->state = WEFT_TASK_WAITING;
  return 1;
}

/* Running task t asked for the next frame in wait's fast path: woken
   already, into its clock's soon list (Q_SOON), its sleep begun now (what
   the next resume is told it slept) and in sleep order with the other
   sleeps that end next frame (timer.c orders the two queues by seq). */
HOT_INLINE void wake_soon(weft_sched *s, task *t, tclock *c) {
  if (t->recs)
    weft__wait_drop(s, t);
  else
    wait_cleared(t);
  rec *x = &t->own;
  x->kind = REC_DONE;
  x->start = c->now;
  x->seq = (uint32_t)s->seq++;
  x->u.run = c->cuts;
  t->mode = WEFT_WAIT_ALL;
  t->failed = 0;
  t->state = WEFT_TASK_READY;
  weft__list_push(&c->soon, INLINE | tidx(t), &x->link, queue_link, s);
  t->queued = Q_SOON;
}

/* Task t (handle id) starts running, on top of the resume stack (which
   has room for 256 resumes inside each other from the start). */
static inline void task_begin(weft_sched *s, task *t, weft_id id) {
  if (s->stack.n < s->stack.cap)
    s->stack.v[s->stack.n++] = id;
  else
    idvec_push(s, &s->stack, id);
  t->state = WEFT_TASK_RUNNING;
  s->resumes++;
}

/* Task id's resume returned: off the resume stack. */
static inline void stack_pop(weft_sched *s, weft_id id) {
  if (s->stack.n && s->stack.v[s->stack.n - 1] == id) s->stack.n--;
}

/* Runs a task taken off the ready queue: weft__task_enter, its resume,
   weft__task_leave, without looking the task up by handle on the way in;
   a task that asks for the next frame (WEFT_RESUMED_NEXT: it is alive
   and running, a task is never freed under its own resume) sleeps with
   no lookup either. */
HOT_INLINE void run_task(weft_sched *s, task *t) {
  weft_id id = weft__pool_id(t);
  uint32_t gen = t->h.gen;
  WEFT_ASSERT(weft__slot_live(t) && !t->queued && t->state != WEFT_TASK_RUNNING);
  s->hot_id = id;
  s->hot = t;
  t->realwake = 0;
  task_begin(s, t, id);
  tclock *c = &G(s, t->group)->clock; /* a task's group never changes, nor moves */
  int r = CLS(s, t)->resume(s, id, udata_of(t), c->now - t->own.start);
  stack_pop(s, id);
  if (r == WEFT_RESUMED_NEXT) {
    WEFT_ASSERT(t->h.gen == gen && t->state == WEFT_TASK_RUNNING);
    wake_soon(s, t, c);
  } else if (t->h.gen == gen && t->state == WEFT_TASK_RUNNING) {
    /* The resume may have freed it (pooled slots stay where they are). */
    t->state = WEFT_TASK_WAITING;
  }
  if (s->deferred.n) weft__sched_flush_cancels(s);
}

int weft__task_run(weft_sched *s, weft_id id) {
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
  if (n->own.link.next) {
    const char *p = (const char *)QT(s, n->own.link.next);
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
   is as far ahead as their addresses are known. The frame stops at its
   count budget, or once its time is spent (s->over: one relaxed load a
   task) having run one task at least; what is left runs first next
   frame. */
void weft__sched_run_ready(weft_sched *s) {
  uint32_t ran = 0;
  while (s->ready.head && ran < s->budget) {
    if (s->over && ran && atomic_load_explicit(s->over, memory_order_relaxed)) break;
    task *t = QT(s, s->ready.head);
    WEFT_ASSERT((t->queued == Q_READY || (t->queued == Q_SOON && !in_soon(s, t))) &&
                t->state == WEFT_TASK_READY);
    uint32_t next = t->own.link.next;
    weft__list_shift(&s->ready, &t->own.link);
    t->queued = 0;
    if (next && s->tasks.used >= WARM_TASKS) warm_next(s, QT(s, next));
    if (s->npaused && G(s, t->group)->held && !t->realwake) {
      enqueue(s, &s->parked, t, Q_PARKED);
      continue;
    }
    ran++;
    run_task(s, t);
  }
}

int weft__sched_advance(weft_sched *s, double dt) {
  if (!(dt >= 0 && dt <= WEFT_MAX_DT)) return WEFT_EINVAL;
  s->frame++;
  weft__clocks_advance(s, dt);
  return WEFT_OK;
}

void weft__sched_run_frame(weft_sched *s) {
  weft__timers_wake(s);
  weft__sched_run_ready(s);
}

int weft__sched_step(weft_sched *s, double dt) {
  int rc = weft__sched_advance(s, dt);
  if (rc == WEFT_OK) weft__sched_run_frame(s);
  return rc;
}

/* ---- tasks ---- */

static void do_cancel(weft_sched *s, task *t);

/* Task t is no longer its parent's child. */
static void child_unlink(weft_sched *s, task *t) {
  if (!t->parent) return;
  task *p = T(s, t->parent - 1);
  WEFT_ASSERT(weft__slot_live(p) && p->nkids > 0);
  if (p->nkids != NKIDS_MANY) p->nkids--;
  t->parent = NONE;
}

/* The first child of t at or after task `from` (index + 1) of its group,
   0: none there. */
static uint32_t next_child(const weft_sched *s, const task *t, uint32_t from) {
  uint32_t me = tidx(t) + 1;
  for (uint32_t c = from; c; c = T(s, c - 1)->member.next)
    if (T(s, c - 1)->parent == me) return c;
  return NONE;
}

/* Its children outlive t: they stay in the group, parentless. */
static void orphan_children(weft_sched *s, task *t) {
  uint32_t me = tidx(t) + 1;
  for (uint32_t c = t->member.next; c && t->nkids; c = T(s, c - 1)->member.next) {
    task *k = T(s, c - 1);
    if (k->parent != me) continue;
    k->parent = NONE;
    if (t->nkids != NKIDS_MANY) t->nkids--;
  }
  WEFT_ASSERT(t->nkids == 0 || t->nkids == NKIDS_MANY);
  t->nkids = 0;
}

/* Cancels t's children in spawn order (t is cancelling: none is added
   meanwhile); with let_go, a child that is cancelling already is only let
   go. Each cancel may end any task: the walk goes on from the task after
   the child when that one is still there, else from the start. */
static void cancel_children(weft_sched *s, task *t, int let_go) {
  uint32_t from = t->member.next;
  while (t->nkids) {
    uint32_t c = next_child(s, t, from);
    if (!c) { /* NKIDS_MANY: the walk found them all */
      WEFT_ASSERT(t->nkids == NKIDS_MANY);
      t->nkids = 0;
      break;
    }
    task *k = T(s, c - 1);
    uint32_t after = k->member.next;
    weft_id after_id = after ? weft__pool_id(T(s, after - 1)) : 0;
    if (let_go && k->state >= WEFT_TASK_CANCELLING)
      child_unlink(s, k);
    else
      do_cancel(s, k);
    from = after_id && weft__pool_get(&s->tasks, after_id) ? after : t->member.next;
  }
}

static void free_task(weft_sched *s, task *t, int state) {
  WEFT_ASSERT(weft__slot_live(t));
  if (s->hot == t) {
    s->hot_id = 0;
    s->hot = NULL; /* tget(s, 0) stays NULL */
  }
  weft__wait_drop(s, t);
  dequeue(s, t);
  child_unlink(s, t);
  if (t->nkids) orphan_children(s, t);
  /* A waiter still listed (a task class without a cancel callback) fails. */
  if (t->listed) {
    weft_wlist *l = waiters_at(s, tidx(t));
    while (l->head) weft__rec_complete(s, l->head, 1);
  }
  group *g = G(s, t->group);
  WEFT_ASSERT(weft__slot_live(g) && g->ntasks > 0 && !t->queued && !t->parent);
  weft__list_unlink(&g->tasks, tidx(t) + 1, &t->member, member_link, s);
  g->ntasks--;
  t->state = (uint8_t)state;
  weft__pool_free(&s->tasks, weft__pool_id(t));
  weft__group_reap(s, g);
}

int weft__task_create(weft_sched *s, weft_id gid, weft_id parent, const weft_task_class *cls,
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
  if (weft__pool_full(&s->tasks)) return WEFT_ELIMIT;
  uint32_t ci = 0;
  while (ci < s->nclasses && s->classes[ci] != cls) ci++;
  if (ci == s->nclasses) {
    if (ci == MAX_CLASSES) return WEFT_ELIMIT;
    s->classes[s->nclasses++] = cls;
  }
  weft_id id;
  task *t = weft__pool_alloc(&s->tasks, &id);
  if (!t) return WEFT_ENOMEM;
  uint32_t i = WEFT_ID_INDEX(id);
  t->cls = (uint8_t)ci;
  t->state = WEFT_TASK_NEW;
  t->group = gidx(g);
  weft__list_push(&g->tasks, i + 1, &t->member, member_link, s);
  g->ntasks++;
  if (p) { /* in p's group, after it: found by next_child */
    t->parent = tidx(p) + 1;
    if (p->nkids != NKIDS_MANY) p->nkids++;
  }
  *out = id;
  if (udata) *udata = udata_of(t);
  return WEFT_OK;
}

void *weft__task_udata(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? udata_of(t) : NULL;
}

int weft__task_state(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  /* asleep until the next frame, though woken already */
  return t->state == WEFT_TASK_READY && in_soon(s, t) ? WEFT_TASK_WAITING : t->state;
}

weft_id weft__task_group(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? weft__pool_id(G(s, t->group)) : 0;
}

weft_id weft__task_parent(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return (t && t->parent) ? weft__pool_id(T(s, t->parent - 1)) : 0;
}

void weft__task_enter(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return;
  if (t->queued) dequeue(s, t); /* resumed directly while it was queued */
  task_begin(s, t, id);
}

void weft__task_leave(weft_sched *s, weft_id id) {
  stack_pop(s, id);
  task *t = tget(s, id);
  /* Neither waiting nor finished: suspended until woken or cancelled. */
  if (t && t->state == WEFT_TASK_RUNNING) t->state = WEFT_TASK_WAITING;
}

weft_id weft__sched_current(const weft_sched *s) {
  return s->stack.n ? s->stack.v[s->stack.n - 1] : 0;
}

int weft__task_wake(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state == WEFT_TASK_READY && in_soon(s, t)) { /* asleep until the next frame: now */
    dequeue(s, t);
    t->state = WEFT_TASK_WAITING;
  }
  if (t->state != WEFT_TASK_NEW && t->state != WEFT_TASK_WAITING) return WEFT_ESTATE;
  make_ready(s, t);
  return WEFT_OK;
}

weft_wlist *weft__task_waiters(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return NULL;
  if (t->listed) return waiters_at(s, tidx(t));
  weft_wlist *l = weft__side_make(&s->waiters, tidx(t), s->desc.alloc, s->desc.alloc_ud);
  if (!l) return NULL;
  *l = (weft_wlist){0};
  t->listed = 1;
  return l;
}

weft_wlist *weft__task_listed(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t && t->listed ? waiters_at(s, tidx(t)) : NULL;
}

int weft__task_cancel_children(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  uint8_t st = t->state;
  t->state = WEFT_TASK_CANCELLING; /* children may not re-attach meanwhile */
  cancel_children(s, t, 0);
  t->state = st;
  return WEFT_OK;
}

int weft__task_finish(weft_sched *s, weft_id id, int state) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (state != WEFT_TASK_DONE && state != WEFT_TASK_FAILED && state != WEFT_TASK_CANCELLED)
    return WEFT_EINVAL;
  if (state != WEFT_TASK_DONE) {
    t->state = WEFT_TASK_CANCELLING; /* children may not re-attach */
    cancel_children(s, t, 0);
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
  weft_id id = weft__pool_id(t);
  t->state = WEFT_TASK_CANCELLING;
  child_unlink(s, t);
  cancel_children(s, t, 1);
  weft__wait_drop(s, t);
  if (CLS(s, t)->cancel) CLS(s, t)->cancel(s, id, udata_of(t));
  t = tget(s, id);
  if (t) free_task(s, t, WEFT_TASK_CANCELLED);
}

int weft__task_cancel(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state >= WEFT_TASK_CANCELLING) return WEFT_OK;
  if (subtree_busy(s, t)) {
    /* Doomed only once queued: a task doomed with no cancel to come
       would yield forever, and a later cancel would see it doomed and
       queue nothing. */
    if (!t->doomed) {
      if (!idvec_push(s, &s->deferred, id)) return WEFT_ENOMEM;
      t->doomed = 1;
    }
    return WEFT_EBUSY;
  }
  do_cancel(s, t);
  return WEFT_OK;
}

int weft__task_doomed(const weft_sched *s, weft_id id) {
  for (task *t = tget(s, id); t; t = t->parent ? T(s, t->parent - 1) : NULL)
    if (t->doomed) return 1;
  return 0;
}

void weft__sched_flush_cancels(weft_sched *s) {
  uint32_t i = 0;
  while (i < s->deferred.n) {
    task *t = tget(s, s->deferred.v[i]);
    WEFT_ASSERT(!t || t->doomed);
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

void weft__sched_each_task(weft_sched *s, void (*fn)(void *ud, weft_id task), void *ud) {
  for (uint32_t gi = s->all.head; gi; gi = G(s, gi - 1)->all.next)
    for (uint32_t ti = G(s, gi - 1)->tasks.head; ti; ti = T(s, ti - 1)->member.next)
      fn(ud, weft__pool_id(T(s, ti - 1)));
}

/* ---- waiting ---- */

int weft__wait_begin(weft_sched *s, weft_id id, int mode) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state != WEFT_TASK_RUNNING && t->state != WEFT_TASK_NEW) return WEFT_ESTATE;
  weft__wait_drop(s, t);
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
    prec *px = weft__pool_alloc(&s->recs, &rid);
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
  WEFT_ASSERT(t->pending <= t->nrecs);
  return x;
}

int weft__wait_sleep(weft_sched *s, weft_id id, int slot, double seconds, int real) {
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

int weft__wait_sleep_only(weft_sched *s, weft_id id, double seconds, int real) {
  task *t = tget(s, id);
  if (!t || t->state != WEFT_TASK_RUNNING) return t ? WEFT_ESTATE : WEFT_ESTALE;
  if (isnan(seconds)) return WEFT_EINVAL;
  return sleep_plain(s, t, real ? &s->real : &G(s, t->group)->clock, seconds) ? WEFT_OK
                                                                              : WEFT_ENOMEM;
}

double weft__task_clock(const weft_sched *s, weft_id id, int real) {
  if (real) return s->real.now;
  task *t = tget(s, id);
  return t ? G(s, t->group)->clock.now : 0.0;
}

double weft__task_slept(const weft_sched *s, weft_id id, int real) {
  task *t = tget(s, id);
  if (!t) return 0.0;
  return (real ? s->real.now : G(s, t->group)->clock.now) - t->own.start;
}

int weft__wait_on(weft_sched *s, weft_id id, int slot, weft_wlist *l) {
  task *t = tget(s, id);
  if (!t) return WEFT_ESTALE;
  if (t->state != WEFT_TASK_RUNNING || !l || (unsigned)slot > MAX_SLOT) return WEFT_EINVAL;
  rec *x = add_rec(s, t, slot, REC_LIST);
  if (!x) return WEFT_ENOMEM;
  uint32_t r = t->recs;
  x->u.list = l;
  weft__list_push(l, r, &x->link, rec_link, s);
  return WEFT_OK;
}

void weft__wait_commit(weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  if (!t || t->state != WEFT_TASK_RUNNING) return;
  int satisfied = t->failed || (t->nrecs > 0 && t->pending == 0) ||
                  (t->mode == WEFT_WAIT_FIRST && t->pending < t->nrecs);
  t->state = WEFT_TASK_WAITING;
  if (satisfied) make_ready(s, t);
}

uint32_t weft__wait_pending(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? t->pending : 0;
}

int weft__wait_failed(const weft_sched *s, weft_id id) {
  task *t = tget(s, id);
  return t ? t->failed : 0;
}

void weft__wait_describe(const weft_sched *s, weft_id id, char *buf, size_t n) {
  task *t = tget(s, id);
  buf[0] = 0;
  if (!t) return;
  if (t->state == WEFT_TASK_READY) {
    snprintf(buf, n, in_soon(s, t) ? "next frame" : "ready");
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
weft_id weft__sched_task_at(const weft_sched *s, uint32_t idx) {
  if (idx >= weft__pool_capacity(&s->tasks)) return 0;
  const task *t = T(s, idx);
  return weft__slot_live(t) ? weft__pool_id(t) : 0;
}
