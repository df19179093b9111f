/* Every task's script time: charged per resume (cost.h), rolled per
   frame into a moving average and a worst frame, and one warning for a
   task that takes more than the threshold in one frame, naming who it is
   and where it was spawned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "lstate.h" /* the instruction clock reads a thread's hook count */
#include "handles.h"
#include "../base/log.h"
#include "../base/sites.h"

#define AVG_KEEP 0.9f /* the moving average's weight on the past, per frame */

/* The record of group id in side (by slot index), NULL when it
   has none; make: made (or taken over from the slot's last owner) now. */
static weft_cost_rec *rec_in(weft_state *W, weft_side *side, weft_id id, int make) {
  uint32_t i = WEFT_ID_INDEX(id);
  weft_cost_rec *r;
  if (i < side->nblocks << WEFT_POOL_CHUNK_SHIFT && side->blocks[i >> WEFT_POOL_CHUNK_SHIFT])
    r = weft__side_at(side, i);
  else if (!make || !(r = weft__side_make(side, i, weft__host_alloc, W)))
    return NULL;
  else
    r->id = 0;
  if (r->id != id) {
    if (!make) return NULL;
    *r = (weft_cost_rec){.id = id, .frame = W->cost.frame};
  }
  return r;
}

/* Tasks' records are made for the tasks that are charged: a frame
   charges a few (a tick at a time), and most tasks are never charged
   between two looks, so a record for every task (32 bytes) would be
   memory kept for nothing. They live in a table open-addressed by task
   slot index (linear probing); a slot's record stays when its task ends
   and is taken over by the slot's next task charged (its id tells), so
   there is at most one a slot. Room for a
   share of the live tasks is kept (weft__cost_new_task); a frame makes
   room by dropping records (reclaim), and grows the table only when
   every record is a slow task's. */
#define RESERVE_SHIFT 5 /* room kept for 1 in 32 live tasks */

static uint32_t slot_hash(uint32_t i, uint32_t mask) {
  uint32_t x = i * 0x9E3779B1u;
  return (x ^ (x >> 16)) & mask;
}

/* Moves the table to cap entries (a power of two); 0 when out of memory. */
static int tab_grow(weft_state *W, uint32_t cap) {
  weft_costs *C = &W->cost;
  weft_cost_rec *t = weft__host_alloc(W, NULL, 0, cap * sizeof *t);
  if (!t) return 0;
  memset(t, 0, cap * sizeof *t);
  for (uint32_t k = 0; k < C->tcap; k++) {
    if (!C->tab[k].id) continue;
    uint32_t h = slot_hash(WEFT_ID_INDEX(C->tab[k].id), cap - 1);
    while (t[h].id) h = (h + 1) & (cap - 1);
    t[h] = C->tab[k];
  }
  if (C->tab) weft__host_alloc(W, C->tab, C->tcap * sizeof *C->tab, 0);
  C->tab = t;
  C->tcap = cap;
  return 1;
}

/* The table keeps room for a share of the live tasks and never grows in
   a frame for want of it: at three quarters full it drops records until
   it is half full, first those not charged for STALE_FRAMES frames (their
   average is under a thousandth of what it was), then the cheapest under
   a bar that rises fourfold a round (from 1 us a frame). What stays is
   the tasks that cost most lately, those the inspector lists first; a
   task whose record went reads 0 until it is charged again. Every task
   that runs every frame is charged a tick now and then, so without this
   the table would grow for as long as new tasks were charged. Records of
   a slow task (its warning, its count) stay. */
#define STALE_FRAMES 64

/* What a record costs a frame now: its average as roll would make it,
   or this frame's charge when more. */
static float cost_lately(const weft_costs *C, const weft_cost_rec *r) {
  uint32_t gap = C->frame - r->frame;
  if (!gap) return r->avg_us > (float)r->frame_us ? r->avg_us : (float)r->frame_us;
  float avg =
      r->seen ? r->avg_us * AVG_KEEP + (float)r->frame_us * (1 - AVG_KEEP) : (float)r->frame_us;
  for (uint32_t k = 1; k < gap && k < 64; k++) avg *= AVG_KEEP;
  return avg;
}

/* Drops records as above; returns 1 when the table is at most half full
   after (so a sweep is paid for by a quarter of the room's charges before
   the next). Linear probing: the survivors are put back in cluster order,
   starting after an empty slot, so each lands on its probe path. */
static int reclaim(weft_costs *C) {
  uint32_t mask = C->tcap - 1, e = 0, dropped = 0;
  for (uint32_t k = 0; k < C->tcap; k++)
    if (!C->tab[k].id) e = k;
  float bar = 0; /* the first round drops the stale alone */
  for (int round = 0; round < 20 && (C->tcount - dropped) * 2 > C->tcap; round++) {
    for (uint32_t k = 0; k < C->tcap && (C->tcount - dropped) * 2 > C->tcap; k++) {
      weft_cost_rec *r = &C->tab[k];
      if (!r->id || r->slow || r->warned) continue;
      if (C->frame - r->frame >= STALE_FRAMES || cost_lately(C, r) < bar) {
        r->id = 0;
        dropped++;
      }
    }
    bar = bar ? bar * 4 : 1;
  }
  if (!dropped) return 0;
  C->tcount -= dropped;
  for (uint32_t n = 1; n <= C->tcap; n++) {
    uint32_t k = (e + n) & mask;
    if (!C->tab[k].id) continue;
    weft_cost_rec r = C->tab[k];
    C->tab[k].id = 0;
    uint32_t h = slot_hash(WEFT_ID_INDEX(r.id), mask);
    while (C->tab[h].id) h = (h + 1) & mask;
    C->tab[h] = r;
  }
#ifdef WEFT_ASSERTS /* every record is found from its hash again */
  uint32_t seen = 0;
  for (uint32_t k = 0; k < C->tcap; k++) {
    if (!C->tab[k].id) continue;
    uint32_t h = slot_hash(WEFT_ID_INDEX(C->tab[k].id), mask);
    while (h != k) {
      WEFT_ASSERT(C->tab[h].id);
      h = (h + 1) & mask;
    }
    seen++;
  }
  WEFT_ASSERT(seen == C->tcount);
#endif
  return C->tcount * 2 <= C->tcap;
}

/* The record of task id, NULL when it has none; make: made (or taken
   over from the slot's last task) now, NULL when out of memory. */
static weft_cost_rec *rec_of(weft_state *W, weft_id id, int make) {
  weft_costs *C = &W->cost;
  uint32_t i = WEFT_ID_INDEX(id), h = 0;
  if (C->tcap) {
    for (h = slot_hash(i, C->tcap - 1); C->tab[h].id; h = (h + 1) & (C->tcap - 1)) {
      weft_cost_rec *r = &C->tab[h];
      if (WEFT_ID_INDEX(r->id) != i) continue;
      if (r->id == id) return r;
      if (!make) return NULL;
      *r = (weft_cost_rec){.id = id, .frame = C->frame};
      return r;
    }
  }
  if (!make) return NULL;
  if ((C->tcount + 1) * 4 > C->tcap * 3) { /* both move records: probe again */
    if (!(C->tcap && reclaim(C)) && !tab_grow(W, C->tcap ? C->tcap * 2 : 64)) return NULL;
    for (h = slot_hash(i, C->tcap - 1); C->tab[h].id; h = (h + 1) & (C->tcap - 1)) {
    }
  }
  C->tcount++;
  C->tab[h] = (weft_cost_rec){.id = id, .frame = C->frame};
  return &C->tab[h];
}

void weft__cost_free(weft_state *W) {
  weft_costs *C = &W->cost;
  if (C->tab) weft__host_alloc(W, C->tab, C->tcap * sizeof *C->tab, 0);
  C->tab = NULL;
  C->tcap = C->tcount = 0;
  weft__side_free(&C->grecs, weft__host_alloc, W);
}

/* Brings a record to the current frame: the frames since it last ran
   count as frames of no cost in its average. */
static void roll(weft_state *W, weft_cost_rec *r) {
  uint32_t gap = W->cost.frame - r->frame;
  if (!gap) return;
  r->prev_us = gap == 1 ? r->frame_us : 0;
  r->avg_us = r->seen ? r->avg_us * AVG_KEEP + (float)r->frame_us * (1 - AVG_KEEP) : r->frame_us;
  r->seen = 1; /* the average starts at the first frame's time, not at 0 */
  for (uint32_t k = 1; k < gap && k < 64; k++) r->avg_us *= AVG_KEEP;
  r->frame_us = 0;
  r->frame = W->cost.frame;
}

static void wake_watchdog(weft_state *W);

/* The cost clock in microseconds. */
static uint64_t cost_now(weft_state *W) {
  if (W->watching) return atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
  return weft__clock_coarse_ns() / 1000u;
}

void weft__cost_begin_slow(weft_state *W, weft_cost_mark *m, int *count) {
  if (W->cost.clock == WEFT_COST_INSTR) { /* a profile is on: the instruction clock as usual */
    m->t0 = weft__cost_instr_open(W, m, count);
  } else if (W->watching && !m->t0) { /* it naps: read the clock, wake it */
    wake_watchdog(W);
    m->t0 = cost_now(W);
  } else if (!W->watching) {
    m->t0 = cost_now(W);
  }
  if (W->prof) weft__profile_begin(W);
}

/* A resume took total microseconds, those of the resumes inside it too. */
static void took(weft_state *W, weft_id id, const weft_cost_mark *m, uint64_t total) {
  uint64_t inner = W->cost.inner - m->inner;
  W->cost.inner = m->inner + total;
  if (total > inner) weft__cost_charge(W, id, total - inner);
}

void weft__cost_end_slow(weft_state *W, weft_id id, const weft_cost_mark *m) {
  if (W->prof) weft__profile_end(W, id);
  if (W->cost.clock == WEFT_COST_INSTR) {
    weft__cost_end_instr(W, id, m, weft__cost_instr_close(W, m));
    return;
  }
  uint64_t t = cost_now(W);
  if (!t && W->watching)
    t = weft__thread_cpu_ns() / 1000u; /* it naps (a debugger held the resume) */
  took(W, id, m, t > m->t0 ? t - m->t0 : 0);
}

void weft__cost_end_coarse(weft_state *W, weft_id id, const weft_cost_mark *m, uint64_t ns) {
  took(W, id, m, ns > m->t0 ? ns / 1000u - m->t0 / 1000u : 0);
}

/* The instruction clock's microsecond at tick k: ticks of 2^SHIFT
   instructions, WEFT_INSTR_PER_US a microsecond, rounded down, so the
   charges of the resumes a frame runs add up to the clock's own. */
static uint64_t tick_us(uint64_t t) {
  return (t >> WEFT_INSTR_TICK_SHIFT << WEFT_INSTR_TICK_SHIFT) / WEFT_INSTR_PER_US;
}

void weft__cost_end_instr(weft_state *W, weft_id id, const weft_cost_mark *m, uint64_t t) {
  took(W, id, m, tick_us(t) - tick_us(m->t0));
}

void weft__cost_sethook(weft_state *W, lua_State *L, lua_Hook fn, int mask, int count) {
  int open = W->cost.open == &L->hookcount;
  if (open) weft__cost_instr_now(W);
  lua_sethook(L, fn, mask, count);
  if (open) W->cost.open_at = L->hookcount;
}

void weft__cost_fired(weft_state *W, lua_State *L) {
  if (W->cost.open != &L->hookcount) return;
  W->cost.instr += (uint32_t)(W->cost.open_at > 0 ? W->cost.open_at : 0); /* down to 0 */
  W->cost.open_at = L->hookcount;
}

/* Time held counts as the time of a resume inside the running ones:
   each of them takes it out of its own (weft__cost_end_slow). The
   instruction clock stands still meanwhile. */
void weft__cost_held(weft_state *W, uint64_t us) {
  if (W->cost.clock != WEFT_COST_INSTR) W->cost.inner += us;
}

void weft__cost_new_task(weft_state *W, weft_id id) {
  (void)id; /* its record is made when it is first charged */
  weft_costs *C = &W->cost;
  uint32_t want = C->tcount + (weft__sched_task_count(W->S) >> RESERVE_SHIFT) + 16;
  if (want * 4 <= C->tcap * 3) return;
  uint32_t cap = C->tcap ? C->tcap : 64;
  while (want * 4 > cap * 3) cap *= 2;
  tab_grow(W, cap); /* out of memory: a charge makes room, or goes to the groups alone */
}

/* Adds us to a record's frame. */
static void add(weft_state *W, weft_cost_rec *r, uint64_t us) {
  roll(W, r);
  r->frame_us = r->frame_us + us > UINT32_MAX ? UINT32_MAX : (uint32_t)(r->frame_us + us);
  if (r->frame_us > r->worst_us) r->worst_us = r->frame_us;
}

void weft__cost_new_group(weft_state *W, weft_id g) { rec_in(W, &W->cost.grecs, g, 1); }

/* A stretch of task id (its script time between two waits) took us: a
   slow task takes more than slow_us, and again; a long piece of work
   done once (a set-up loop, a big load) is no slow task, a brain that
   takes that long every time round is. Counted, the clock is too coarse
   to tell 4 ms: no warning. */
static void note_slow(weft_state *W, weft_cost_rec *r, weft_id id, uint64_t us) {
  if (!W->cost.slow_us || !W->watching || us <= W->cost.slow_us) return;
  if (r->slow < 3) r->slow++;
  if (r->slow < 2 || r->warned || W->cost.nslow >= 8) return;
  ltask *lt = LT(W, id);
  r->warned = 1;
  W->cost.slow_len[W->cost.nslow] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
  W->cost.slow_site[W->cost.nslow] = lt ? weft__site_of(lt) : 0;
  W->cost.slow[W->cost.nslow++] = id;
}

void weft__cost_charge(weft_state *W, weft_id id, uint64_t us) {
  W->cost.frame_us += us;
  /* The task's groups, out to the root, total their tasks' time, those
     that ended too. Charges come a tick at a time (a few a frame), so the
     walk is rare. */
  for (weft_id g = weft__task_group(W->S, id); g; g = weft__group_parent(W->S, g)) {
    weft_cost_rec *gr = rec_in(W, &W->cost.grecs, g, 1);
    if (gr) add(W, gr, us);
  }
  weft_cost_rec *r = rec_of(W, id, 1);
  if (!r) return;
  add(W, r, us);
  /* A resume that ended in a wait and took more than slow_us on its own;
     stretches the budget preempted are told at their wait
     (weft__cost_stretch). */
  ltask *lt = LT(W, id);
  if (r->told) /* the resume that ended a preempted stretch: told at its wait */
    r->told = 0;
  else if (!(lt && lt->b.preempted))
    note_slow(W, r, id, us);
}

void weft__cost_stretch(weft_state *W, weft_id id, uint64_t us) {
  weft_cost_rec *r = rec_of(W, id, 1);
  if (!r) return;
  r->told = 1;
  note_slow(W, r, id, us);
}

static void warn(weft_state *W);

void weft__cost_frame(weft_state *W) {
  if (W->cost.nslow) warn(W); /* went over before any frame (a file's start) */
  W->cost.frame++;
  W->cost.frame_us = 0;
  W->cost.coarse_ns = 0; /* the frame's first resume reads the clock */
  if (W->watching && atomic_load_explicit(&W->wd.napping, memory_order_relaxed)) wake_watchdog(W);
  weft__cost_pick_way(W);
  if (W->prof) weft__profile_frame(W, 0);
}

/* The watchdog naps between frames, its clock 0: the clock is read here
   and the watchdog woken (at most once a nap). */
static void wake_watchdog(weft_state *W) {
  weft_watchdog *D = &W->wd;
  atomic_store_explicit(&D->clock_us, weft__thread_cpu_ns() / 1000u, memory_order_relaxed);
  weft__mutex_lock(&D->mu);
  D->wake = 1;
  atomic_store_explicit(&D->napping, 0, memory_order_relaxed); /* one wake a nap */
  weft__cond_signal(&D->cv);
  weft__mutex_unlock(&D->mu);
}

/* Each slow task once: who it is, and the line it waits at now (the end
   of the frame's work), which the logger gets as the file and line. */
static void warn(weft_state *W) {
  for (int i = 0; i < W->cost.nslow; i++) {
    weft_id id = W->cost.slow[i];
    weft_cost_rec *r = rec_of(W, id, 0);
    if (!r) continue; /* it ended */
    char label[300], where[256] = "", msg[640];
    if (!weft__task_label(W, W->L, id, label, sizeof label) && W->cost.slow_site[i])
      snprintf(label, sizeof label, "a task spawned at %s",
               weft__site_where(W->sites, W->cost.slow_site[i]));
    ltask *lt = LT(W, id);
    if (lt && lt->co) weft__where_suspended(lt->co, where, sizeof where);
    char *colon = strrchr(where, ':');
    uint32_t line = colon ? (uint32_t)strtoul(colon + 1, NULL, 10) : 0;
    snprintf(msg, sizeof msg, "%s: %.1f ms of script time between two waits, again", label,
             W->cost.slow_len[i] / 1000.0);
    if (colon) *colon = 0;
    weft__log_at(W, WEFT_LOG_WARN, WEFT_LOG_SLOW_TASK, msg, *where ? where : NULL, line);
  }
  W->cost.nslow = 0;
}

void weft__cost_frame_end(weft_state *W) {
  W->cost.coarse_ns = 0; /* a resume outside a step reads the clock */
  W->cost.last_us = W->cost.frame_us;
  if (W->prof) weft__profile_frame(W, 1);
  if (W->cost.nslow) warn(W);
}

/* A record's figures in milliseconds (see weft__cost_of). */
static int figures(weft_state *W, const weft_cost_rec *r, double *frame_ms, double *avg_ms,
                   double *worst_ms) {
  if (!r) {
    *frame_ms = *avg_ms = *worst_ms = 0;
    return 0;
  }
  /* the last whole frame: during a step, the one before it */
  uint32_t last = W->cost.frame - (W->in_step ? 1 : 0);
  *frame_ms = r->frame == last       ? r->frame_us / 1000.0
              : r->frame == last + 1 ? r->prev_us / 1000.0
                                     : 0;
  last = W->cost.frame;
  float avg = r->avg_us;
  uint32_t gap = last - r->frame;
  if (gap) { /* not yet rolled: as roll would */
    avg = r->seen ? avg * AVG_KEEP + (float)r->frame_us * (1 - AVG_KEEP) : r->frame_us;
    for (uint32_t k = 1; k < gap && k < 64; k++) avg *= AVG_KEEP;
  }
  *avg_ms = (r->seen || gap ? avg : r->frame_us) / 1000.0;
  *worst_ms = r->worst_us / 1000.0;
  return 1;
}

int weft__cost_of(weft_state *W, weft_id id, double *frame_ms, double *avg_ms, double *worst_ms) {
  if (figures(W, rec_of(W, id, 0), frame_ms, avg_ms, worst_ms)) return 1;
  return weft__task_state(W->S, id) > 0; /* never charged: all 0 */
}

int weft__cost_of_group(weft_state *W, weft_id g, double *frame_ms, double *avg_ms,
                        double *worst_ms) {
  if (g != weft__sched_root(W->S) && !weft__group_live(W->S, g))
    return figures(W, NULL, frame_ms, avg_ms, worst_ms);
  figures(W, rec_in(W, &W->cost.grecs, g, 0), frame_ms, avg_ms, worst_ms); /* none yet: 0 */
  return 1;
}

/* ---- saving ---- */

/* The counts saved beside the records. */
typedef struct cost_head {
  uint64_t frame_us, last_us, instr;
  uint32_t frame, tcap, tcount, nslow;
  weft_id slow[8];
  uint32_t slow_len[8], slow_site[8];
} cost_head;

int weft__cost_save(weft_state *W, weft_wire *w) {
  weft_costs *C = &W->cost;
  cost_head h = {C->frame_us, C->last_us, weft__cost_instr_now(W), C->frame,
                 C->tcap,     C->tcount,  (uint32_t)C->nslow,      {0},
                 {0},         {0}};
  memcpy(h.slow, C->slow, sizeof h.slow);
  memcpy(h.slow_len, C->slow_len, sizeof h.slow_len);
  memcpy(h.slow_site, C->slow_site, sizeof h.slow_site);
  return weft__wire_bytes(w, &h, sizeof h) &&
         weft__wire_bytes(w, C->tab, sizeof *C->tab * C->tcap) && weft__side_save(&C->grecs, w);
}

int weft__cost_load(weft_state *W, weft_wire *w) {
  weft_costs *C = &W->cost;
  cost_head h;
  if (!weft__wire_bytes(w, &h, sizeof h)) return 0;
  if ((h.tcap & (h.tcap - 1)) || h.tcap > (1u << 26) || h.tcount > h.tcap || h.nslow > 8)
    return weft__wire_fail(w, "the costs are damaged");
  weft__cost_free(W); /* the fresh state's */
  if (h.tcap && !(C->tab = weft__host_alloc(W, NULL, 0, sizeof *C->tab * h.tcap)))
    return weft__wire_fail(w, "out of memory");
  C->tcap = h.tcap;
  if (!weft__wire_bytes(w, C->tab, sizeof *C->tab * C->tcap)) return 0;
  uint32_t n = 0;
  for (uint32_t k = 0; k < C->tcap; k++) n += C->tab[k].id != 0;
  if (n != h.tcount || (h.tcap && n == h.tcap)) /* a probe always ends */
    return weft__wire_fail(w, "the costs are damaged");
  C->tcount = n;
  C->frame = h.frame;
  C->frame_us = h.frame_us;
  C->last_us = h.last_us;
  C->instr = h.instr; /* the same ticks as the run saved */
  C->nslow = (int)h.nslow;
  memcpy(C->slow, h.slow, sizeof h.slow);
  memcpy(C->slow_len, h.slow_len, sizeof h.slow_len);
  memcpy(C->slow_site, h.slow_site, sizeof h.slow_site);
  return weft__side_load(&C->grecs, w,
                         (weft__sched_group_capacity(W->S) >> WEFT_POOL_CHUNK_SHIFT) + 1,
                         weft__host_alloc, W);
}
