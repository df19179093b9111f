/* What each task's script time costs (cost.c): every resume's processor
   time is charged to its task, always, at a cost of two loads a resume.
   Watched, the clock read is the scripts thread's processor time as the
   watchdog last read it (it ticks every COST_TICK_US while scripts run):
   a resume is charged the ticks it spans, exact to a tick per resume and
   right on average (a short resume spans a tick as often as its length
   is of a tick), and time the system gave other programs is not counted.
   Watched, one that starts as the watchdog begins a nap is charged
   nothing (the nap's clock stands still); one that ends in a nap reads
   the clock afresh.
   Counted, the clock is the instruction clock: the instructions scripts
   ran, WEFT_INSTR_PER_US a microsecond (the rate counted budgets kill
   runaways at), ticking every 2^WEFT_INSTR_TICK_SHIFT instructions, read
   the same way. Like everything counted it is the same in every run, on
   every machine: what a task costs is what its instructions are, those
   of the coroutines it runs (in the budget's quanta), its library work
   done in pieces and the source it compiles (as the budget charges
   them), and not the time a C function takes. Each thread's count hook
   counts its instructions down; the running task's is open, and what it
   counted goes onto the clock when another task runs inside it, when
   its count is set afresh (weft__cost_sethook) and when it runs out
   (weft__cost_fired).
   With no budget (no count, no watchdog) it is the system's coarse real
   clock, read the same way: milliseconds coarse, right on average, a
   busy machine inflating it. */
#ifndef WEFT_COST_H
#define WEFT_COST_H

#include "../base/internal.h"
#include "profile.h"
#include "../base/watchdog.h"

/* One task's (or group's) costs. */
typedef struct weft_cost_rec {
  weft_id id;          /* the task these are for; another id: none yet */
  uint32_t frame;      /* the frame frame_us belongs to */
  uint32_t frame_us;   /* script time in that frame */
  uint32_t prev_us;    /* ...in the frame before it */
  uint32_t worst_us;   /* the most in any one frame */
  uint16_t warned : 1; /* the slow-task warning was given */
  uint16_t seen : 1;   /* a whole frame went into avg_us */
  uint16_t slow : 2;   /* stretches between two waits longer than slow_us (saturating) */
  uint16_t told : 1;   /* a preempted stretch was told at its wait: its last resume is not */
  float avg_us;        /* moving average per frame (about the last 30 frames) */
} weft_cost_rec;

/* A resume being timed. */
typedef struct weft_cost_mark {
  uint64_t t0, inner;
  int *open; /* counted: the count open before this resume's */
} weft_cost_mark;

/* Charges task id us microseconds. */
void weft__cost_charge(weft_state *W, weft_id id, uint64_t us);
/* A debugger held the scripts stopped for us microseconds of the cost
   clock (weft__budget_unhold): the resume it held them in, and every one
   around it, is not charged them. */
void weft__cost_held(weft_state *W, uint64_t us);
/* Task id's stretch the budget preempted on the way took us in all,
   told at its wait: a slow task's (desc.slow_task_us) too. */
void weft__cost_stretch(weft_state *W, weft_id id, uint64_t us);
/* Picks how resumes are timed (parts.h), when the budgets change. */
static inline void weft__cost_pick_way(weft_state *W) {
  W->cost.clock = W->watching     ? WEFT_COST_TICKS
                  : W->task_limit ? WEFT_COST_INSTR
                                  : WEFT_COST_COARSE;
  W->cost.slow_way = weft__cost_way(W->prof != NULL, W->cost.clock);
}
/* The slow ways (a profile is on; the watchdog naps, its clock then 0;
   a tick came during the resume; the coarse clock moved). */
void weft__cost_begin_slow(weft_state *W, weft_cost_mark *m, int *count);
void weft__cost_end_slow(weft_state *W, weft_id id, const weft_cost_mark *m);
void weft__cost_end_coarse(weft_state *W, weft_id id, const weft_cost_mark *m, uint64_t ns);
void weft__cost_end_instr(weft_state *W, weft_id id, const weft_cost_mark *m, uint64_t t);
/* Counted: L's count hook is set (lua_sethook), what it counted so far
   going onto the instruction clock first. */
void weft__cost_sethook(weft_state *W, lua_State *L, lua_Hook fn, int mask, int count);
/* Counted: L's count ran out and Lua set it afresh (in its hook). */
void weft__cost_fired(weft_state *W, lua_State *L);

#define WEFT_INSTR_TICK_SHIFT 11

/* The instruction clock, what the open count has counted since it was
   last read folded in. A count set afresh unseen (only weft sets them)
   would read as no instructions, never as a clock going back. */
static inline uint64_t weft__cost_instr_now(weft_state *W) {
  weft_costs *C = &W->cost;
  if (C->open) {
    int d = C->open_at - *C->open;
    if (d > 0) C->instr += (uint32_t)d;
    C->open_at = *C->open;
  }
  return C->instr;
}

/* The instruction clock at a resume's start: count (its thread's) is
   opened, the one open before it (the resume it runs inside) kept in m
   after what it counted goes onto the clock. */
static inline uint64_t weft__cost_instr_open(weft_state *W, weft_cost_mark *m, int *count) {
  weft_costs *C = &W->cost;
  m->open = C->open;
  if (__builtin_expect(m->open != NULL, 0)) weft__cost_instr_now(W);
  C->open = count;
  C->open_at = *count;
  return C->instr;
}

/* Around a task's resume; count is its thread's hook count (lstate.h's
   hookcount: what the instruction clock reads). The usual resume,
   watched and shorter than a tick, costs two loads of the clock and one
   of the flag; counted, about as much: the open count is the resumed
   thread's until it ends (a resume inside it opens its own, and gives
   it back). With no budget, one read of the coarse clock (in
   nanoseconds, in m->t0 meanwhile): in a step a frame's resume begins
   where the one before it ended (what the scheduler does between two is
   charged to the next, under the clock's milliseconds); a resume inside
   another (run_depth: a spawn runs its task at once), or one outside a
   step, reads it, as what the outer one did since the last inner one
   ended is the outer one's. */
static inline void weft__cost_begin(weft_state *W, weft_cost_mark *m, int *count) {
  weft_costs *C = &W->cost;
  m->inner = C->inner;
  if (__builtin_expect(C->slow_way <= WEFT_COST_SLOW, 1)) { /* watched, the default */
    m->t0 = atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
    if (__builtin_expect(!m->t0 || C->slow_way, 0)) {
      if (m->t0 && W->prof && W->watching)
        weft__profile_begin(W); /* a profile's resume, the clock read as usual */
      else
        weft__cost_begin_slow(W, m, count);
    }
  } else if (C->slow_way == WEFT_COST_INSTR) {
    m->t0 = weft__cost_instr_open(W, m, count);
  } else {
    m->t0 = C->coarse_ns && !W->run_depth ? C->coarse_ns : weft__clock_coarse_ns();
    C->coarse_ns = 0;
  }
}

/* The instruction clock at a resume's end: the count it opened is
   closed, the one open before it opened again. */
static inline uint64_t weft__cost_instr_close(weft_state *W, const weft_cost_mark *m) {
  weft_costs *C = &W->cost;
  int d = C->open_at - *C->open;
  uint64_t t = C->instr + (uint32_t)(d > 0 ? d : 0);
  C->instr = t;
  C->open = m->open;
  if (__builtin_expect(m->open != NULL, 0)) C->open_at = *m->open;
  return t;
}

/* After the resume: its time, less that of tasks it ran inside it (a
   spawn runs the new task at once), goes to id. */
static inline void weft__cost_end(weft_state *W, weft_id id, const weft_cost_mark *m) {
  if (__builtin_expect(W->cost.slow_way <= WEFT_COST_SLOW, 1)) {
    uint64_t t = atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
    if (__builtin_expect(t != m->t0 || W->cost.slow_way, 0)) {
      if (t == m->t0 && W->prof && W->watching)
        weft__profile_end(W, id); /* no tick came: nothing to charge, as above */
      else
        weft__cost_end_slow(W, id, m);
    }
  } else if (W->cost.slow_way == WEFT_COST_INSTR) {
    uint64_t t = weft__cost_instr_close(W, m);
    if ((t ^ m->t0) >> WEFT_INSTR_TICK_SHIFT) weft__cost_end_instr(W, id, m, t);
  } else {
    uint64_t ns = weft__clock_coarse_ns();
    if (W->in_step && !W->run_depth) W->cost.coarse_ns = ns; /* the step's next begins here */
    if (ns != m->t0) weft__cost_end_coarse(W, id, m, ns);
  }
}

/* A new task: its record is made when it is first charged (most tasks
   never are between two looks), from room kept for a share of the live
   tasks, which is grown here, so the frames that charge seldom allocate. */
void weft__cost_new_task(weft_state *W, weft_id id);
/* Frees the records (weft_close). */
void weft__cost_free(weft_state *W);
/* Saving (see weft_save): every task's and group's record, the frame's
   count and its slow tasks not yet told. Loading replaces what a fresh
   state holds; 0 when the stream fails or the save is refused. */
int weft__cost_save(weft_state *W, weft_wire *w);
int weft__cost_load(weft_state *W, weft_wire *w);
/* The same for a new group (and the root). */
void weft__cost_new_group(weft_state *W, weft_id g);
/* At each frame's start: a new frame to charge, the clock fresh. */
void weft__cost_frame(weft_state *W);
/* At each frame's end: its total, and the warnings of tasks over the
   threshold. */
void weft__cost_frame_end(weft_state *W);
/* A task's costs in milliseconds: the last frame it ran in (0 when that
   is not the last frame), the moving average, the worst frame (all 0 for
   a task never charged). Returns 0 when it is not a live task. */
int weft__cost_of(weft_state *W, weft_id id, double *frame_ms, double *avg_ms, double *worst_ms);
/* The same for a group: every task's in it and in the groups inside it,
   those that ended too. Returns 0 for a group that is not live. */
int weft__cost_of_group(weft_state *W, weft_id g, double *frame_ms, double *avg_ms,
                        double *worst_ms);

#endif
