/* Groups: a tree of clocks with scale and pause, each holding tasks in
   creation order; cancelled, paused and freed as a whole. */
#include "sched_internal.h"

int weft__group_make(weft_sched *s, group *parent, weft_id *out) {
  weft_id id;
  uint32_t pidx = parent ? gidx(parent) : 0;
  group *g = weft__pool_alloc(&s->groups, &id);
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
    weft__ring_push(&parent->children, i + 1, &g->sib, gsib_link, s);
  }
  weft__list_push(&s->all, i + 1, &g->all, gall_link, s);
  *out = id;
  return WEFT_OK;
}

void weft__group_free(weft_sched *s, group *g) {
  uint32_t i = gidx(g) + 1;
  WEFT_ASSERT(!g->paused || s->npaused > 0);
  if (g->paused) s->npaused--;
  /* Orphaned subgroups (only at destroy) lose their parent link. */
  while (g->children.head) {
    uint32_t c = g->children.head;
    weft__ring_unlink(&g->children, c, &G(s, c - 1)->sib, gsib_link, s);
    G(s, c - 1)->parent = NONE;
  }
  if (g->parent) weft__ring_unlink(&G(s, g->parent - 1)->children, i, &g->sib, gsib_link, s);
  weft__list_unlink(&s->all, i, &g->all, gall_link, s);
  weft__clock_free(s, &g->clock);
  group *p = g->parent ? G(s, g->parent - 1) : NULL;
  weft__pool_free(&s->groups, weft__pool_id(g));
  if (p) weft__group_reap(s, p);
}

int weft__group_create(weft_sched *s, weft_id parent, weft_id *out) {
  group *p = gget(s, parent);
  if (!p) return WEFT_ESTALE;
  return weft__group_make(s, p, out);
}

weft_id weft__sched_root(const weft_sched *s) { return weft__pool_id(G(s, s->root)); }

void weft__group_release(weft_sched *s, weft_id id) {
  group *g = weft__pool_get(&s->groups, id);
  if (!g || g->refs == 0) return;
  g->refs--;
  weft__group_reap(s, g);
}

int weft__group_retain(weft_sched *s, weft_id id) {
  group *g = weft__pool_get(&s->groups, id);
  if (!g) return WEFT_ESTALE;
  g->refs++;
  return WEFT_OK;
}

int weft__group_live(const weft_sched *s, weft_id id) {
  return weft__pool_get(&s->groups, id) != NULL;
}

uint32_t weft__group_cancels(const weft_sched *s, weft_id id) {
  group *g = weft__pool_get(&s->groups, id);
  return g ? g->cancels : 0;
}

weft_id weft__group_parent(const weft_sched *s, weft_id id) {
  group *g = weft__pool_get(&s->groups, id);
  return (g && g->parent) ? weft__pool_id(G(s, g->parent - 1)) : 0;
}

/* Recomputes `held` below g after a pause or resume. O(subgroups). */
static void update_held(weft_sched *s, group *g) {
  uint32_t ph = g->parent ? G(s, g->parent - 1)->held : 0;
  g->held = (uint8_t)(g->paused || ph);
  for (uint32_t c = g->children.head; c; c = G(s, c - 1)->sib.next) update_held(s, G(s, c - 1));
}

int weft__sched_pause_group(weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  if (!g) return WEFT_ESTALE;
  if (!g->paused) s->npaused++;
  g->paused = 1;
  update_held(s, g);
  return WEFT_OK;
}

int weft__sched_resume_group(weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  if (!g) return WEFT_ESTALE;
  WEFT_ASSERT(!g->paused || s->npaused > 0);
  if (g->paused) s->npaused--;
  g->paused = 0;
  update_held(s, g);
  /* Requeue parked tasks whose groups run again, in the order parked.
     O(parked tasks). */
  for (uint32_t i = s->parked.head; i;) {
    task *t = QT(s, i);
    i = t->own.link.next;
    if (!G(s, t->group)->held) {
      dequeue(s, t);
      enqueue(s, &s->ready, t, Q_READY);
    }
  }
  return WEFT_OK;
}

int weft__task_held(const weft_sched *s, weft_id id) {
  if (!s->npaused) return 0;
  task *t = tget(s, id);
  return t ? G(s, t->group)->held : 0;
}

int weft__group_paused(const weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  return g ? g->held : 0;
}

int weft__group_set_scale(weft_sched *s, weft_id id, double scale) {
  group *g = gget(s, id);
  if (!g) return WEFT_ESTALE;
  if (!(scale >= 0 && scale <= WEFT_MAX_SCALE)) return WEFT_EINVAL;
  g->scale = scale;
  return WEFT_OK;
}

double weft__group_scale(const weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  return g ? g->scale : 0.0;
}

double weft__group_now(const weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  return g ? g->clock.now : 0.0;
}

int weft__sched_cancel_group(weft_sched *s, weft_id id) {
  group *g = gget(s, id);
  if (!g) return WEFT_ESTALE;
  g->refs++; /* keep it while cleanups run */
  g->cancels++;
  uint32_t gi = gidx(g);
  for (uint32_t c = g->children.head; c;) {
    group *cg = G(s, c - 1);
    cg->refs++;
    weft__sched_cancel_group(s, weft__pool_id(cg));
    uint32_t next = cg->sib.next;
    cg->refs--;
    weft__group_reap(s, cg);
    c = next;
    g = G(s, gi);
  }
  g = G(s, gi);
  int busy = 0;
  /* The tasks it has now, oldest first (each cancel may end others, and
     cleanups may start new ones, which live on): marked, then each
     unmarked as it is found. */
  for (uint32_t ti = g->tasks.head; ti; ti = T(s, ti - 1)->member.next) T(s, ti - 1)->marked = 1;
  for (;;) {
    g = G(s, gi);
    task *pick = NULL;
    for (uint32_t ti = g->tasks.head; ti; ti = T(s, ti - 1)->member.next) {
      task *t = T(s, ti - 1);
      if (!t->marked) continue;
      t->marked = 0;
      if (t->state >= WEFT_TASK_CANCELLING || t->doomed) continue;
      pick = t;
      break;
    }
    if (!pick) break;
    if (weft__task_cancel(s, weft__pool_id(pick)) == WEFT_EBUSY) busy = 1;
  }
  g = G(s, gi);
  g->refs--;
  weft__group_reap(s, g);
  return busy ? WEFT_EBUSY : WEFT_OK;
}

uint32_t weft__group_tasks(const weft_sched *s, weft_id id, weft_id *out, uint32_t n) {
  group *g = gget(s, id);
  if (!g) return 0;
  uint32_t k = 0;
  for (uint32_t ti = g->tasks.head; ti; ti = T(s, ti - 1)->member.next) {
    if (k < n) out[k] = weft__pool_id(T(s, ti - 1));
    k++;
  }
  return k;
}

weft_id weft__sched_group_at(const weft_sched *s, uint32_t idx) {
  if (idx >= weft__pool_capacity(&s->groups)) return 0;
  const group *g = G(s, idx);
  return weft__slot_live(g) ? weft__pool_id(g) : 0;
}

void weft__group_set_refs(weft_sched *s, weft_id id, uint32_t refs) {
  group *g = weft__pool_get(&s->groups, id);
  if (!g) return;
  g->refs = refs;
  weft__group_reap(s, g);
}
