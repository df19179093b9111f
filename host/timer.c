/* Clocks and their timers: a binary heap of runs per clock (sleeps that
   share a deadline), a next-frame queue, and the wake pass over them. */
#include "sched_internal.h"

/* ---- timer heaps ---- */

static inline int hless(const hent *a, const hent *b) {
  return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

/* Heap order below entry i: neither child comes before it. What
   sift_down leaves where it stops (sift_up: the same for its parent). */
static inline int heap_kids_ok(const hent *v, uint32_t n, uint32_t i) {
  uint32_t l = 2 * i + 1;
  return (l >= n || !hless(&v[l], &v[i])) && (l + 1 >= n || !hless(&v[l + 1], &v[i]));
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
  WEFT_ASSERT(i == 0 || !hless(&v[i], &v[(i - 1) / 2]));
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
  WEFT_ASSERT(heap_kids_ok(v, n, i));
}

static int heap_push(weft_sched *s, tclock *c, int64_t due, uint64_t seq, uint32_t run) {
  if (!weft__array_grow(s, (void **)&c->v, &c->cap, sizeof(hent), c->n + 1)) return 0;
  c->v[c->n] = (hent){due, seq, run};
  sift_up(c->v, c->n++);
  return 1;
}

/* Takes the top entry off. */
static void heap_pop(tclock *c) {
  WEFT_ASSERT(c->n > 0);
  if (--c->n > 0) {
    c->v[0] = c->v[c->n];
    sift_down(c->v, c->n, 0);
  }
}

/* A new run, zeroed, and its index in *idx; NULL when out of memory. */
static trun *run_alloc(weft_sched *s, uint32_t *idx) {
  uint32_t i;
  if (s->runs_free) {
    i = s->runs_free - 1;
    s->runs_free = s->runs[i].h.next_free;
  } else {
    if (!weft__array_grow(s, (void **)&s->runs, &s->capruns, sizeof(trun), s->nruns + 1))
      return NULL;
    i = s->nruns++;
    s->runs[i].h.gen = 0;
  }
  trun *u = &s->runs[i];
  uint32_t gen = u->h.gen + 1;
  memset(u, 0, sizeof *u);
  u->h.gen = gen;
  WEFT_ASSERT(weft__slot_live(u));
  s->runs_used++;
  *idx = i;
  return u;
}

static void run_free(weft_sched *s, trun *u) {
  WEFT_ASSERT(weft__slot_live(u) && weft__list_empty(&u->recs) && s->runs_used > 0);
  u->h.gen++;
  u->h.next_free = s->runs_free;
  s->runs_free = (uint32_t)(u - s->runs) + 1;
  s->runs_used--;
}

/* Frees the clock's heap and its runs (emptied ones: its tasks are gone). */
void weft__clock_free(weft_sched *s, tclock *c) {
  for (uint32_t i = 0; i < c->n; i++) run_free(s, RUN(s, c->v[i].run));
  weft__array_free(s, c->v, c->cap, sizeof(hent));
  c->v = NULL;
  c->n = c->cap = c->dead = 0;
}

/* Drops the entries of emptied runs and rebuilds the heap (Floyd). O(n);
   done when they outnumber the rest, so O(1) amortised per ended sleep. */
static void heap_compact(weft_sched *s, tclock *c) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < c->n; i++) {
    trun *u = RUN(s, c->v[i].run);
    if (!weft__list_empty(&u->recs))
      c->v[k++] = c->v[i];
    else
      run_free(s, u);
  }
  c->n = k;
  c->dead = 0;
  for (uint32_t i = k / 2; i-- > 0;) sift_down(c->v, k, i);
  for (uint32_t i = 0; i < k; i++) WEFT_ASSERT(heap_kids_ok(c->v, k, i)); /* O(n) already */
}

static inline int clock_due(const tclock *c) {
  return c->next.head || c->soon.head || (c->n > 0 && to_ns(c->now) >= c->v[0].due - 1);
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

/* The whole sequence of a next-frame sleep (its record's low bits). */
static inline uint64_t recent_seq(const weft_sched *s, uint32_t low) {
  return s->seq - (uint32_t)((uint32_t)s->seq - low);
}

/* Whether the clock's next sleep to end is its soon list's first task
   (else its next-frame queue's first record, else its heap's first run):
   the two queues of next-frame sleeps come first, each in sleep order. */
static inline int soon_first(const weft_sched *s, const tclock *c) {
  if (!c->soon.head) return 0;
  if (!c->next.head) return 1;
  uint32_t now = (uint32_t)s->seq; /* the one that slept longer ago goes first */
  return now - QT(s, c->soon.head)->own.seq > now - R(s, c->next.head)->seq;
}

/* Sequence of the clock's next due sleep (an emptied run counts: it is
   dropped when picked, waking nothing). */
static inline uint64_t clock_head_seq(const weft_sched *s, const tclock *c) {
  if (soon_first(s, c)) return recent_seq(s, QT(s, c->soon.head)->own.seq);
  if (c->next.head) return recent_seq(s, R(s, c->next.head)->seq);
  uint32_t r = RUN(s, c->v[0].run)->recs.head;
  return r ? seq_of(R(s, r)->seq, c->v[0].seq) : c->v[0].seq;
}

uint32_t weft__run_new(weft_sched *s, tclock *c, int64_t due, uint32_t h) {
  uint32_t i;
  trun *u = run_alloc(s, &i);
  if (!u) return 0;
  u->due = due;
  u->clock = c;
  if (!heap_push(s, c, due, s->seq, i)) {
    run_free(s, u);
    return 0;
  }
  s->run_cache[h] = i + 1;
  return i + 1;
}

/* Takes timer record x out of its run; an emptied run stays in the heap,
   stale, until it surfaces or the heap is compacted. */
void weft__timer_unlink(weft_sched *s, uint32_t r, rec *x) {
  trun *u = RUN(s, x->u.run);
  weft__list_unlink(&u->recs, r, &x->link, rec_link, s);
  if (weft__list_empty(&u->recs)) {
    tclock *c = u->clock;
    if (++c->dead > 4 && c->dead > c->n / 2) heap_compact(s, c);
  }
}

/* Advances every group clock, parents before children (creation order). */
void weft__clocks_advance(weft_sched *s, double dt) {
  for (uint32_t gi = s->all.head; gi; gi = G(s, gi - 1)->all.next) {
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
   record, which fire_timers takes with whatever follows. The stretch woken
   is linked already as the ready queue links (see queue_link): it moves
   to the queue's back whole, only its ends relinked. */
static void wake_plain(weft_sched *s, tclock *c) {
  uint8_t realwake = c == &s->real; /* wait_realtime ignores pause */
  uint32_t r = c->next.head, last = NONE;
  task *lt = NULL;
  while (r & INLINE) {
    task *t = T(s, r & ~INLINE);
    if (t->recs != r || t->state != WEFT_TASK_WAITING || !t->own.quiet) break;
    WEFT_ASSERT(t->own.kind == REC_NEXT && !t->queued && t->nrecs == 1);
    t->own.kind = REC_DONE;
    wait_cleared(t);
    t->state = WEFT_TASK_READY;
    t->queued = Q_READY;
    t->realwake = realwake;
    last = r;
    lt = t;
    r = t->own.link.next;
  }
  if (lt) weft__list_move_front(&s->ready, &c->next, last, &lt->own.link, queue_link, s);
}

/* Pops the clock's next due sleep (queue first, then the first run in the
   heap) and completes its record; an emptied run is just dropped. With `all`, goes on
   while the clock has due sleeps. */
static void fire_timers(weft_sched *s, tclock *c, int all) {
  int64_t now = to_ns(c->now) + 1; /* the clock stands still during a wake pass */
  if (all && c->soon.head && !c->next.head) {
    /* the usual frame's wait()s: ready already, in sleep order */
    task *last = QT(s, c->soon.tail);
    weft__list_move_front(&s->ready, &c->soon, c->soon.tail, &last->own.link, queue_link, s);
    c->cuts++;
    if (!clock_due(c)) return;
  }
  if (all && (c->next.head & INLINE) && !c->soon.head) {
    wake_plain(s, c);
    if (!clock_due(c)) return;
  }
  do {
    uint32_t r;
    rec *x;
    task *t;
    trun *u = NULL;
    if (soon_first(s, c)) { /* one of the soon list, before a sleep of the queue */
      t = QT(s, c->soon.head);
      dequeue(s, t);
      enqueue(s, &s->ready, t, Q_READY);
      continue;
    }
    r = c->next.head;
    if (!r) {
      u = RUN(s, c->v[0].run);
      WEFT_ASSERT(weft__slot_live(u) && u->clock == c && u->due == c->v[0].due);
      r = u->recs.head;
      if (!r) { /* emptied by ended sleeps */
        WEFT_ASSERT(c->dead > 0);
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
      prec *px = weft__pool_at(&s->recs, r - 1);
      x = &px->r;
      t = T(s, px->task);
    }
    WEFT_ASSERT(x->kind == (u ? REC_TIMER : REC_NEXT) && rec_task(r, x) == tidx(t));
    if (!u) {
      weft__list_shift(&c->next, &x->link);
    } else {
      weft__list_shift(&u->recs, &x->link);
      if (weft__list_empty(&u->recs)) {
        heap_pop(c);
        run_free(s, u);
      }
    }
    x->kind = REC_DONE;
    if (!x->quiet && s->desc.timer_done)
      s->desc.timer_done(s->desc.user, weft__pool_id(t), (int)x->slot, c->now - x->start);
    if (t->pending) t->pending--;
    if (t->state != WEFT_TASK_WAITING || (t->mode != WEFT_WAIT_FIRST && t->pending != 0)) continue;
    if (t->recs == r && rec_tnext(r, x) == NONE) { /* the wait's only record: nothing to detach */
      if (!(r & INLINE)) weft__pool_free(&s->recs, weft__pool_id(PR(x)));
      wait_cleared(t);
    } else {
      weft__wait_drop(s, t);
    }
    t->state = WEFT_TASK_READY;
    enqueue(s, &s->ready, t, Q_READY);
    t->realwake = c == &s->real; /* wait_realtime ignores pause */
  } while (all && (c->next.head || c->soon.head || (c->n > 0 && now >= c->v[0].due)));
}

/* Wakes due timers. Within one clock: (due, seq) order. Across clocks that
   fall due together: the clock whose next due timer slept first goes first.
   Cost: O(groups) to find the due clocks, then O(log n) per wake. */
void weft__timers_wake(weft_sched *s) {
  s->ndue = 0;
  if (clock_due(&s->real) && weft__array_grow(s, (void **)&s->due, &s->capdue, sizeof(tclock *), 1))
    s->due[s->ndue++] = &s->real;
  for (uint32_t gi = s->all.head; gi; gi = G(s, gi - 1)->all.next) {
    group *g = G(s, gi - 1);
    if (g->held || !clock_due(&g->clock)) continue;
    if (!weft__array_grow(s, (void **)&s->due, &s->capdue, sizeof(tclock *), s->ndue + 1)) break;
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
      if (best == UINT32_MAX || clock_head_seq(s, s->due[i]) < clock_head_seq(s, s->due[best]))
        best = i;
      i++;
    }
    if (best == UINT32_MAX) break;
    tclock *c = s->due[best];
    fire_timers(s, c, s->ndue == 1);
  }
}
