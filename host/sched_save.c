/* Saving the scheduler between two frames and loading it back: its pools
   go out slot by slot (free slots too, so handles, generations and the
   order of later allocations stay the same), with the few addresses a
   slot holds written as names (a record's list or clock, a run's clock).
   A load checks every index, link and count before the scheduler runs
   on it. */
#include "sched_internal.h"

#define MAGIC 0x33534657u      /* "WFS3" */
#define WAITERS_BIT (1u << 31) /* a list name: a task's list of waiters */
#define MAX_NAME 64            /* a class name's bytes */

/* ---- names for addresses ---- */

/* A clock: 0 the real one, else its group's index + 1. */
static uint64_t clock_name(const weft_sched *s, const tclock *c) {
  if (c == &s->real) return 0;
  const group *g = (const group *)((const char *)c - offsetof(group, clock));
  return (uint64_t)gidx(g) + 1;
}

static tclock *clock_at(weft_sched *s, uint64_t n) {
  if (n == 0) return &s->real;
  if (n - 1 >= weft__pool_capacity(&s->groups)) return NULL;
  group *g = G(s, (uint32_t)(n - 1));
  return weft__slot_live(g) ? &g->clock : NULL;
}

/* The task whose list of waiters l is, + 1; 0: none. */
static uint32_t waiters_owner(const weft_sched *s, const weft_wlist *l) {
  size_t bytes = (size_t)s->waiters.elem_size * WEFT_POOL_CHUNK;
  for (uint32_t b = 0; b < s->waiters.nblocks; b++) {
    const char *p = s->waiters.blocks[b];
    if (p && (const char *)l >= p && (const char *)l < p + bytes)
      return b * WEFT_POOL_CHUNK + (uint32_t)(((const char *)l - p) / s->waiters.elem_size) + 1;
  }
  return 0;
}

/* A record's union as a name (what its kind reads of it); 0 for what is
   not read (an ended record). */
static int rec_out(const weft_sched *s, rec *x, weft_wire *w, const weft_sched_names *nm) {
  uint32_t n = 0; /* it fits the union on every machine */
  if (x->kind == REC_TIMER) {
    n = x->u.run;
  } else if (x->kind == REC_NEXT || x->kind == REC_FOREVER) {
    n = (uint32_t)clock_name(s, x->u.clock);
  } else if (x->kind == REC_LIST) {
    uint32_t t = waiters_owner(s, x->u.list);
    if (t)
      n = WAITERS_BIT | (t - 1);
    else if (!nm->list_name || !(n = nm->list_name(nm->ud, x->u.list)) || (n & WAITERS_BIT))
      return weft__wire_fail(w, "a task waits on a list the save cannot name");
  }
  memset(&x->u, 0, sizeof x->u);
  memcpy(&x->u, &n, sizeof n);
  return 1;
}

/* ---- writing ---- */

/* A slot on its way out (pool_out's filters): its addresses as names. */
typedef struct outing {
  const weft_sched *s;
  weft_wire *w;
  const weft_sched_names *nm;
} outing;

static int task_out(void *ud, void *copy) {
  outing *o = ud;
  task *t = copy;
  /* The ready queue's first task keeps a stale prev (run_ready's shift):
     written as the 0 it stands for. */
  if (t->queued && (INLINE | tidx(t)) == o->s->ready.head) t->own.link.prev = 0;
  if (t->own_used) {
    if (!rec_out(o->s, &t->own, o->w, o->nm)) return 0;
  } else { /* a Q_SOON task's keeps its clock's cuts (u.run) */
    uint32_t run = t->queued == Q_SOON ? t->own.u.run : 0;
    memset(&t->own.u, 0, sizeof t->own.u);
    t->own.u.run = run;
  }
  if (o->nm->task_out) o->nm->task_out(o->nm->ud, weft__pool_id(copy), udata_of(t));
  return 1;
}

static int prec_out(void *ud, void *copy) {
  outing *o = ud;
  return rec_out(o->s, &((prec *)copy)->r, o->w, o->nm);
}

static int group_out(void *ud, void *copy) {
  (void)ud;
  group *g = copy;
  g->clock.v = NULL; /* written after the pool */
  g->clock.cap = 0;
  return 1;
}

static int clock_out(const tclock *c, weft_wire *w) {
  double now = c->now;
  uint32_t head[7] = {c->n,         c->dead,      c->next.head, c->next.tail,
                      c->soon.head, c->soon.tail, c->cuts};
  return weft__wire_f64(w, &now) && weft__wire_bytes(w, head, sizeof head) &&
         weft__wire_bytes(w, c->v, sizeof(hent) * c->n);
}

static int class_out(const weft_sched *s, weft_wire *w, const weft_sched_names *nm) {
  uint32_t n = s->nclasses;
  if (!weft__wire_u32(w, &n)) return 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *name = nm->class_name ? nm->class_name(nm->ud, s->classes[i]) : NULL;
    char buf[MAX_NAME] = {0};
    if (!name || strlen(name) >= MAX_NAME) return weft__wire_fail(w, "a task class has no name");
    memcpy(buf, name, strlen(name));
    if (!weft__wire_bytes(w, buf, MAX_NAME)) return 0;
  }
  return 1;
}

int weft__sched_save(const weft_sched *s, weft_wire *w, const weft_sched_names *nm) {
  if (s->stack.n) return WEFT_ESTATE;
  uint32_t layout[7] = {MAGIC,         (uint32_t)sizeof(task), s->tasks.elem_size, sizeof(prec),
                        sizeof(group), sizeof(trun),           sizeof(hent)};
  uint64_t counts[5] = {s->frame, s->seq, 0, s->npaused, s->resumes};
  uint32_t names[10] = {s->root,        s->all.head,    s->all.tail, s->ready.head, s->ready.tail,
                        s->parked.head, s->parked.tail, s->nruns,    s->runs_free,  s->runs_used};
  outing o = {s, w, nm};
  int ok =
      weft__wire_bytes(w, layout, sizeof layout) && weft__wire_bytes(w, counts, sizeof counts) &&
      weft__wire_bytes(w, names, sizeof names) && class_out(s, w, nm) && clock_out(&s->real, w) &&
      weft__pool_save(&s->tasks, w, task_out, &o) && weft__pool_save(&s->recs, w, prec_out, &o) &&
      weft__pool_save(&s->groups, w, group_out, &o);
  for (uint32_t i = 0; ok && i < weft__pool_capacity(&s->groups); i++)
    if (weft__slot_live(G(s, i))) ok = clock_out(&G(s, i)->clock, w);
  for (uint32_t i = 0; ok && i < s->nruns; i++) {
    trun u = s->runs[i];
    uint64_t c = weft__slot_live(&u) ? clock_name(s, u.clock) : 0;
    memset(&u.clock, 0, sizeof u.clock);
    ok = weft__wire_bytes(w, &u, sizeof u) && weft__wire_u64(w, &c);
  }
  ok = ok && weft__side_save(&s->waiters, w);
  if (ok) return WEFT_OK;
  return w->err && strcmp(w->err, "the save ends too soon") == 0 ? WEFT_EIO : WEFT_EINVAL;
}

/* ---- reading ---- */

/* A group slot as read: what the file holds in place of its heap's
   address is not one. */
static void group_in(void *ud, void *slot) {
  (void)ud;
  tclock *c = &((group *)slot)->clock;
  c->v = NULL;
  c->n = c->cap = 0;
}

static int clock_in(weft_sched *s, tclock *c, weft_wire *w) {
  uint32_t head[7];
  if (!weft__wire_f64(w, &c->now) || !weft__wire_bytes(w, head, sizeof head)) return 0;
  c->v = NULL;
  c->n = c->cap = 0;
  if (head[0] > (1u << 26)) return weft__wire_fail(w, "a timer heap is too large");
  if (!weft__array_grow(s, (void **)&c->v, &c->cap, sizeof(hent), head[0]))
    return weft__wire_fail(w, "out of memory");
  c->n = head[0];
  c->dead = head[1];
  c->next.head = head[2];
  c->next.tail = head[3];
  c->soon = (weft_list){head[4], head[5]};
  c->cuts = head[6];
  if (!(c->now >= 0 && c->now <= MAX_CLOCK)) return weft__wire_fail(w, "a clock reads nonsense");
  return weft__wire_bytes(w, c->v, sizeof(hent) * c->n);
}

static int class_in(weft_sched *s, weft_wire *w, const weft_sched_names *nm) {
  uint32_t n;
  if (!weft__wire_u32(w, &n)) return 0;
  if (n > MAX_CLASSES) return weft__wire_fail(w, "too many task classes");
  for (uint32_t i = 0; i < n; i++) {
    char buf[MAX_NAME];
    if (!weft__wire_bytes(w, buf, MAX_NAME)) return 0;
    buf[MAX_NAME - 1] = 0;
    const weft_task_class *c = nm->class_at ? nm->class_at(nm->ud, buf) : NULL;
    if (!c || !c->resume) return weft__wire_fail(w, "a task class of the save is not here");
    s->classes[i] = c;
  }
  s->nclasses = n;
  return 1;
}

/* ---- checking what was read ---- */

static int task_ok(const weft_sched *s, uint32_t n) { /* n: index + 1 */
  return n && n - 1 < weft__pool_capacity(&s->tasks) && weft__slot_live(T(s, n - 1));
}
static int group_ok(const weft_sched *s, uint32_t n) {
  return n && n - 1 < weft__pool_capacity(&s->groups) && weft__slot_live(G(s, n - 1));
}
static int rec_ok(const weft_sched *s, uint32_t r) {
  if (r == NONE) return 0;
  if (r & INLINE) return task_ok(s, (r & ~INLINE) + 1);
  return r - 1 < weft__pool_capacity(&s->recs) && weft__slot_live(weft__pool_at(&s->recs, r - 1));
}
static int run_ok(const weft_sched *s, uint64_t i) {
  return i < s->nruns && weft__slot_live(&s->runs[i]);
}

typedef int (*name_ok_fn)(const weft_sched *s, uint32_t n);

/* Walks a list (ring: only its head is kept, whose prev names the last),
   each name checked before its link is read: at most max elements, each
   link's prev the one before. Returns the count, or -1 when broken. */
static long walk(const weft_sched *s, uint32_t head, uint32_t tail, int ring, weft_link_at at,
                 name_ok_fn ok, uint32_t max) {
  uint32_t prev = 0, last = 0;
  long k = 0;
  for (uint32_t n = head; n; n = at(s, n)->next) {
    if (!ok(s, n) || (uint32_t)k >= max) return -1;
    weft_link *x = at(s, n);
    if (n != head && x->prev != prev) return -1;
    prev = last = n;
    k++;
  }
  if (ring) return head && at(s, head)->prev != last ? -1 : k;
  return (head == 0) == (tail == 0) && last == tail && (!head || at(s, head)->prev == 0) ? k : -1;
}

static int queued_ok(const weft_sched *s, uint32_t n) {
  return (n & INLINE) && task_ok(s, (n & ~INLINE) + 1);
}

static int timer_rec_ok(const weft_sched *s, uint32_t r) { return rec_ok(s, r); }

/* What the records of a list (or a clock's next-frame queue, or a run)
   must be: each of the kind, naming the container. */
static int recs_in(const weft_sched *s, const weft_list *l, int kind, const void *where,
                   uint32_t run, uint32_t max) {
  long k = walk(s, l->head, l->tail, 0, rec_link, timer_rec_ok, max);
  if (k < 0) return 0;
  for (uint32_t r = l->head; r; r = R(s, r)->link.next) {
    const rec *x = R(s, r);
    if (x->kind != kind) return 0;
    if (kind == REC_TIMER
            ? x->u.run != run
            : (kind == REC_NEXT ? (const void *)x->u.clock : (const void *)x->u.list) != where)
      return 0;
  }
  return 1;
}

int weft__wlist_check(const weft_sched *s, const weft_wlist *l) {
  uint32_t max = weft__pool_capacity(&s->tasks) + weft__pool_capacity(&s->recs);
  return recs_in(s, l, REC_LIST, l, 0, max);
}

/* A record's links where its kind says it is (its own list's are walked
   where the list is: here only that its neighbours share it). */
static int rec_fix(weft_sched *s, uint32_t r, rec *x, const weft_sched_names *nm) {
  uint32_t n;
  memcpy(&n, &x->u, sizeof n);
  if (x->kind < REC_TIMER || x->kind > REC_DONE) return 0;
  if (x->kind == REC_TIMER) {
    if (!run_ok(s, n)) return 0;
    x->u.run = (uint32_t)n;
  } else if (x->kind == REC_NEXT || x->kind == REC_FOREVER) {
    if (!(x->u.clock = clock_at(s, n))) return 0;
  } else if (x->kind == REC_LIST) {
    if (n & WAITERS_BIT) {
      uint32_t t = n & ~WAITERS_BIT;
      if (!task_ok(s, t + 1) || !T(s, t)->listed) return 0;
      x->u.list = waiters_at(s, t);
    } else if (!nm->list_at || !(x->u.list = nm->list_at(nm->ud, n))) {
      return 0;
    }
  }
  (void)r;
  return 1;
}

/* Group g's tasks (index gi) are its own, each after its parent (a task
   of the group: next_child walks onward from the parent). Marks them on
   the way, and takes the marks off again. */
static int tasks_in_order(weft_sched *s, const group *g, uint32_t gi) {
  int ok = 1;
  for (uint32_t ti = g->tasks.head; ti; ti = T(s, ti - 1)->member.next) {
    task *t = T(s, ti - 1);
    if (t->group != gi || (t->parent && !T(s, t->parent - 1)->marked)) {
      ok = 0;
      break;
    }
    t->marked = 1;
  }
  for (uint32_t ti = g->tasks.head; ti; ti = T(s, ti - 1)->member.next) T(s, ti - 1)->marked = 0;
  return ok;
}

/* Each task's count of children is right (NKIDS_MANY: any, walks find them). */
static int children_counted(weft_sched *s, weft_wire *w) {
  uint32_t n = weft__pool_capacity(&s->tasks);
  uint32_t *cnt = s->desc.alloc(s->desc.alloc_ud, NULL, 0, (size_t)n * sizeof *cnt + 1);
  if (!cnt) return weft__wire_fail(w, "out of memory");
  memset(cnt, 0, (size_t)n * sizeof *cnt);
  for (uint32_t i = 0; i < n; i++)
    if (weft__slot_live(T(s, i)) && T(s, i)->parent) cnt[T(s, i)->parent - 1]++;
  int ok = 1;
  for (uint32_t i = 0; ok && i < n; i++) {
    const task *t = T(s, i);
    if (weft__slot_live(t)) ok = t->nkids == NKIDS_MANY || cnt[i] == t->nkids;
  }
  s->desc.alloc(s->desc.alloc_ud, cnt, (size_t)n * sizeof *cnt + 1, 0);
  return ok || weft__wire_fail(w, "a task's children are broken");
}

static int check(weft_sched *s, weft_wire *w, const weft_sched_names *nm) {
  uint32_t ntask = weft__pool_capacity(&s->tasks), ngroup = weft__pool_capacity(&s->groups);
  uint32_t nrec = weft__pool_capacity(&s->recs);
  if (!group_ok(s, s->root + 1) || G(s, s->root)->parent)
    return weft__wire_fail(w, "the root group is missing");
  /* the side table of waiters: a listed task's block is there */
  for (uint32_t i = 0; i < ntask; i++) {
    task *t = T(s, i);
    if (!weft__slot_live(t)) continue;
    if (t->state != WEFT_TASK_NEW && t->state != WEFT_TASK_READY && t->state != WEFT_TASK_WAITING)
      return weft__wire_fail(w, "a task was saved while it ran");
    if (t->cls >= s->nclasses || !group_ok(s, t->group + 1) || t->marked ||
        (t->parent && !task_ok(s, t->parent)) || t->pending > t->nrecs || t->doomed ||
        (t->queued != 0) != (t->state == WEFT_TASK_READY)) /* a ready task is queued */
      return weft__wire_fail(w, "a task's fields are out of range");
    if (t->listed && ((i >> WEFT_POOL_CHUNK_SHIFT) >= s->waiters.nblocks ||
                      !s->waiters.blocks[i >> WEFT_POOL_CHUNK_SHIFT]))
      return weft__wire_fail(w, "a task's list of waiters is missing");
  }
  /* every record: its names, then its task's chain */
  for (uint32_t i = 0; i < nrec; i++) {
    prec *p = weft__pool_at(&s->recs, i);
    if (!weft__slot_live(p)) continue;
    if (!task_ok(s, p->task + 1) || !rec_fix(s, i + 1, &p->r, nm))
      return weft__wire_fail(w, "a wait record names nothing");
  }
  uint32_t chained = 0, nnext = 0, ntimer = 0;
  for (uint32_t i = 0; i < ntask; i++) {
    task *t = T(s, i);
    if (!weft__slot_live(t)) continue;
    if (t->own_used) {
      if (!rec_fix(s, INLINE | i, &t->own, nm))
        return weft__wire_fail(w, "a wait record names nothing");
    } else {
      if (t->queued != Q_SOON) memset(&t->own.u, 0, sizeof t->own.u);
      if (t->own.kind != REC_DONE && t->own.kind != 0 && t->own.kind != REC_NEXT)
        return weft__wire_fail(w, "a wait record names nothing");
    }
    if (t->queued == Q_SOON && (t->state != WEFT_TASK_READY || t->nrecs || t->own_used))
      return weft__wire_fail(w, "a task's fields are out of range");
    uint32_t k = 0;
    for (uint32_t r = t->recs; r; r = rec_tnext(r, R(s, r))) {
      if (!rec_ok(s, r) || rec_task(r, R(s, r)) != i || k++ >= t->nrecs ||
          ((r & INLINE) && !t->own_used))
        return weft__wire_fail(w, "a task's wait records are broken");
      if (!(r & INLINE)) chained++;
      nnext += R(s, r)->kind == REC_NEXT;
      ntimer += R(s, r)->kind == REC_TIMER;
    }
    if (k != t->nrecs) return weft__wire_fail(w, "a task's wait records are broken");
  }
  if (chained != s->recs.used) return weft__wire_fail(w, "a wait record has no task");
  /* records in lists: each neighbour in the same list */
  for (uint32_t i = 0; i < ntask + nrec; i++) {
    uint32_t r = i < ntask ? INLINE | i : i - ntask + 1;
    if (!rec_ok(s, r) || ((r & INLINE) && !T(s, i)->own_used)) continue;
    rec *x = R(s, r);
    if (x->kind != REC_LIST) continue;
    if (x->link.prev
            ? !rec_ok(s, x->link.prev) || R(s, x->link.prev)->link.next != r ||
                  R(s, x->link.prev)->kind != REC_LIST || R(s, x->link.prev)->u.list != x->u.list
            : x->u.list->head != r)
      return weft__wire_fail(w, "a list of waiters is broken");
    if (x->link.next ? !rec_ok(s, x->link.next) || R(s, x->link.next)->link.prev != r
                     : x->u.list->tail != r)
      return weft__wire_fail(w, "a list of waiters is broken");
  }
  for (uint32_t i = 0; i < ntask; i++)
    if (task_ok(s, i + 1) && T(s, i)->listed &&
        !recs_in(s, waiters_at(s, i), REC_LIST, waiters_at(s, i), 0, ntask + nrec))
      return weft__wire_fail(w, "a list of waiters is broken");
  /* groups: the list of all, the tree, their tasks */
  long ng = walk(s, s->all.head, s->all.tail, 0, gall_link, group_ok, ngroup);
  if (ng != (long)s->groups.used) return weft__wire_fail(w, "the list of groups is broken");
  uint32_t npaused = 0, members = 0, subgroups = 0;
  for (uint32_t gi = s->all.head; gi; gi = G(s, gi - 1)->all.next) {
    group *g = G(s, gi - 1);
    if ((g->parent && !group_ok(s, g->parent)) || (!g->parent && gi - 1 != s->root))
      return weft__wire_fail(w, "a group's parent is missing");
    npaused += g->paused != 0;
    if (!(g->scale >= 0 && g->scale <= 1e9))
      return weft__wire_fail(w, "a group's scale is out of range");
    long k = walk(s, g->tasks.head, g->tasks.tail, 0, member_link, task_ok, ntask);
    if (k != (long)g->ntasks) return weft__wire_fail(w, "a group's tasks are broken");
    if (!tasks_in_order(s, g, gi - 1)) return weft__wire_fail(w, "a group's tasks are broken");
    members += (uint32_t)k;
    k = walk(s, g->children.head, 0, 1, gsib_link, group_ok, ngroup);
    if (k < 0) return weft__wire_fail(w, "a group's subgroups are broken");
    for (uint32_t c = g->children.head; c; c = G(s, c - 1)->sib.next)
      if (G(s, c - 1)->parent != gi) return weft__wire_fail(w, "a group's subgroups are broken");
    subgroups += (uint32_t)k;
  }
  if (npaused != s->npaused || members != s->tasks.used || subgroups + 1 != s->groups.used)
    return weft__wire_fail(w, "the groups' counts do not add up");
  /* tasks: their children, the queues */
  uint32_t q1 = 0, q2 = 0, q3 = 0;
  for (uint32_t i = 0; i < ntask; i++) {
    task *t = T(s, i);
    if (!weft__slot_live(t)) continue;
    q1 += t->queued == Q_READY || (t->queued == Q_SOON && !in_soon(s, t));
    q2 += t->queued == Q_PARKED;
    q3 += in_soon(s, t);
  }
  if (!children_counted(s, w)) return 0;
  if (walk(s, s->ready.head, s->ready.tail, 0, queue_link, queued_ok, ntask) != q1 ||
      walk(s, s->parked.head, s->parked.tail, 0, queue_link, queued_ok, ntask) != q2)
    return weft__wire_fail(w, "the ready queue is broken");
  for (uint32_t n = s->ready.head; n; n = QT(s, n)->own.link.next)
    if (QT(s, n)->queued != Q_READY && (QT(s, n)->queued != Q_SOON || in_soon(s, QT(s, n))))
      return weft__wire_fail(w, "the ready queue is broken");
  for (uint32_t n = s->parked.head; n; n = QT(s, n)->own.link.next)
    if (QT(s, n)->queued != Q_PARKED) return weft__wire_fail(w, "the ready queue is broken");
  /* each group clock's soon list: its group's tasks that joined it */
  if (s->real.soon.head || s->real.soon.tail)
    return weft__wire_fail(w, "a clock's queue is broken");
  for (uint32_t gi = 0; gi < ngroup; gi++) {
    if (!group_ok(s, gi + 1)) continue;
    const tclock *c = &G(s, gi)->clock;
    long k = walk(s, c->soon.head, c->soon.tail, 0, queue_link, queued_ok, ntask);
    if (k < 0) return weft__wire_fail(w, "a clock's queue is broken");
    for (uint32_t n = c->soon.head; n; n = QT(s, n)->own.link.next)
      if (QT(s, n)->group != gi || !in_soon(s, QT(s, n)))
        return weft__wire_fail(w, "a clock's queue is broken");
    q3 -= (uint32_t)k;
  }
  if (q3) return weft__wire_fail(w, "the ready queue is broken");
  /* runs: the free ones, then each live one in one heap, its records */
  uint32_t nfree = 0;
  for (uint32_t f = s->runs_free; f; f = s->runs[f - 1].h.next_free)
    if (f - 1 >= s->nruns || weft__slot_live(&s->runs[f - 1]) || nfree++ >= s->nruns)
      return weft__wire_fail(w, "the timers' runs are broken");
  if (nfree + s->runs_used != s->nruns) return weft__wire_fail(w, "the timers' runs are broken");
  uint32_t heaped = 0, innext = 0, intimer = 0;
  for (uint32_t gi = 0; gi <= ngroup; gi++) {
    tclock *c = gi == ngroup ? &s->real : (group_ok(s, gi + 1) ? &G(s, gi)->clock : NULL);
    if (!c) continue;
    if (!recs_in(s, &c->next, REC_NEXT, c, 0, ntask + nrec))
      return weft__wire_fail(w, "a clock's queue is broken");
    innext += weft__wlist_count(s, &c->next);
    uint32_t dead = 0;
    for (uint32_t i = 0; i < c->n; i++) {
      const hent *e = &c->v[i];
      if (!run_ok(s, e->run) || s->runs[e->run].clock != c || s->runs[e->run].due != e->due ||
          (i && (e->due < c->v[(i - 1) / 2].due ||
                 (e->due == c->v[(i - 1) / 2].due && e->seq < c->v[(i - 1) / 2].seq))))
        return weft__wire_fail(w, "a timer heap is broken");
      heaped++;
      dead += weft__list_empty(&s->runs[e->run].recs);
    }
    if (dead != c->dead) return weft__wire_fail(w, "a timer heap is broken");
  }
  if (heaped != s->runs_used) return weft__wire_fail(w, "the timers' runs are broken");
  for (uint32_t i = 0; i < s->nruns; i++) {
    if (!weft__slot_live(&s->runs[i])) continue;
    if (!recs_in(s, &s->runs[i].recs, REC_TIMER, NULL, i, ntask + nrec))
      return weft__wire_fail(w, "a run of timers is broken");
    intimer += weft__wlist_count(s, &s->runs[i].recs);
  }
  if (innext != nnext || intimer != ntimer) return weft__wire_fail(w, "a sleep is in no queue");
  return 1;
}

/* ---- loading ---- */

/* Back to an empty scheduler with a fresh root group (a load that
   failed). */
static void wipe(weft_sched *s) {
  weft__array_free(s, s->runs, s->capruns, sizeof(trun));
  for (uint32_t i = 0; i < s->groups.nchunks * WEFT_POOL_CHUNK; i++) {
    group *g = G(s, i);
    if (weft__slot_live(g)) weft__array_free(s, g->clock.v, g->clock.cap, sizeof(hent));
  }
  weft__array_free(s, s->real.v, s->real.cap, sizeof(hent));
  weft__pool_destroy(&s->tasks);
  weft__pool_destroy(&s->recs);
  weft__pool_destroy(&s->groups);
  weft__side_free(&s->waiters, s->desc.alloc, s->desc.alloc_ud);
  s->runs = NULL;
  s->nruns = s->capruns = s->runs_free = s->runs_used = 0;
  memset(&s->real, 0, sizeof s->real);
  memset(&s->all, 0, sizeof s->all);
  memset(&s->ready, 0, sizeof s->ready);
  memset(&s->parked, 0, sizeof s->parked);
  memset(s->run_cache, 0, sizeof s->run_cache);
  s->frame = s->seq = s->resumes = 0;
  s->npaused = 0;
  s->hot = NULL;
  s->hot_id = 0;
}

static int load(weft_sched *s, weft_wire *w, const weft_sched_names *nm) {
  uint32_t layout[7],
      expect[7] = {MAGIC,         (uint32_t)sizeof(task), s->tasks.elem_size, sizeof(prec),
                   sizeof(group), sizeof(trun),           sizeof(hent)};
  uint64_t counts[5];
  uint32_t names[10];
  if (!weft__wire_bytes(w, layout, sizeof layout)) return 0;
  if (memcmp(layout, expect, sizeof layout) != 0)
    return weft__wire_fail(w, "not a scheduler saved by this build");
  if (!weft__wire_bytes(w, counts, sizeof counts) || !weft__wire_bytes(w, names, sizeof names) ||
      !class_in(s, w, nm))
    return 0;
  s->frame = counts[0];
  s->seq = counts[1];
  s->npaused = (uint32_t)counts[3];
  s->resumes = counts[4];
  s->root = names[0];
  s->all = (weft_list){names[1], names[2]};
  s->ready = (weft_list){names[3], names[4]};
  s->parked = (weft_list){names[5], names[6]};
  if (!clock_in(s, &s->real, w) || !weft__pool_load(&s->tasks, w, NULL, NULL) ||
      !weft__pool_load(&s->recs, w, NULL, NULL) || !weft__pool_load(&s->groups, w, group_in, NULL))
    return 0;
  for (uint32_t i = 0; i < weft__pool_capacity(&s->groups); i++)
    if (weft__slot_live(G(s, i)) && !clock_in(s, &G(s, i)->clock, w)) return 0;
  if (names[7] > (1u << 26)) return weft__wire_fail(w, "too many runs of timers");
  if (!weft__array_grow(s, (void **)&s->runs, &s->capruns, sizeof(trun), names[7]))
    return weft__wire_fail(w, "out of memory");
  s->nruns = names[7];
  s->runs_free = names[8];
  s->runs_used = names[9];
  for (uint32_t i = 0; i < s->nruns; i++) {
    uint64_t c;
    trun *u = &s->runs[i];
    if (!weft__wire_bytes(w, u, sizeof *u) || !weft__wire_u64(w, &c)) return 0;
    u->clock = weft__slot_live(u) ? clock_at(s, c) : NULL;
    if (weft__slot_live(u) && !u->clock) return weft__wire_fail(w, "a run's clock is missing");
  }
  if (!weft__side_load(&s->waiters, w,
                       (weft__pool_capacity(&s->tasks) >> WEFT_POOL_CHUNK_SHIFT) + 1, s->desc.alloc,
                       s->desc.alloc_ud))
    return 0;
  return check(s, w, nm);
}

int weft__sched_load(weft_sched *s, weft_wire *w, const weft_sched_names *nm) {
  if (s->tasks.nchunks || s->recs.used || s->groups.used != 1 || s->nruns || s->frame || s->stack.n)
    return WEFT_ESTATE;
  wipe(s);
  if (load(s, w, nm)) return WEFT_OK;
  wipe(s);
  weft_id root;
  if (weft__group_make(s, NULL, &root) == WEFT_OK) s->root = WEFT_ID_INDEX(root);
  if (!w->err) w->err = "the save is damaged";
  return WEFT_EINVAL;
}
