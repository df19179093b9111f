/* What each task's script time costs (cost.c): every resume's processor
   time is charged to its task, always, at a cost of two loads a resume.
   Watched, the clock read is the scripts thread's processor time as the
   watchdog last read it (it ticks every COST_TICK_US while scripts run):
   a resume is charged the ticks it spans, exact to a tick per resume and
   right on average (a short resume spans a tick as often as its length
   is of a tick), and time the system gave other programs is not counted.
   Counted (no watchdog), it is the system's coarse real clock, read the
   same way: milliseconds coarse, right on average, a busy machine
   inflating it.
   Watched, one that starts as the watchdog begins a nap is charged
   nothing (the nap's clock stands still); one that ends in a nap reads
   the clock afresh. */
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
  W->cost.slow_way = weft__cost_way(W->prof != NULL, W->watching);
}
/* The slow ways (a profile is on; the watchdog naps, its clock then 0;
   a tick came during the resume; the coarse clock moved). */
void weft__cost_begin_slow(weft_state *W, weft_cost_mark *m);
void weft__cost_end_slow(weft_state *W, weft_id id, const weft_cost_mark *m);
void weft__cost_end_coarse(weft_state *W, weft_id id, const weft_cost_mark *m, uint64_t ns);

/* Around a task's resume. The usual resume, watched and shorter than a
   tick, costs two loads of the clock and one of the flag; counted, one
   read of the coarse clock (in nanoseconds, in m->t0 meanwhile): in a
   step a frame's resume begins where the one before it ended (what the
   scheduler does between two is charged to the next, under the clock's
   milliseconds); a resume inside another (run_depth: a spawn runs its
   task at once), or one outside a step, reads it, as what the outer
   one did since the last inner one ended is the outer one's. */
static inline void weft__cost_begin(weft_state *W, weft_cost_mark *m) {
  m->inner = W->cost.inner;
  if (W->cost.slow_way == WEFT_COST_COARSE) {
    m->t0 = W->cost.coarse_ns && !W->run_depth ? W->cost.coarse_ns : weft__clock_coarse_ns();
    W->cost.coarse_ns = 0;
    return;
  }
  m->t0 = atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
  if (__builtin_expect(!m->t0 || W->cost.slow_way, 0)) {
    if (m->t0 && W->prof && W->watching)
      weft__profile_begin(W); /* a profile's resume, the clock read as usual */
    else
      weft__cost_begin_slow(W, m);
  }
}

/* After the resume: its time, less that of tasks it ran inside it (a
   spawn runs the new task at once), goes to id. */
static inline void weft__cost_end(weft_state *W, weft_id id, const weft_cost_mark *m) {
  if (W->cost.slow_way == WEFT_COST_COARSE) {
    uint64_t ns = weft__clock_coarse_ns();
    if (W->in_step && !W->run_depth) W->cost.coarse_ns = ns; /* the step's next begins here */
    if (ns != m->t0) weft__cost_end_coarse(W, id, m, ns);
    return;
  }
  uint64_t t = atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
  if (__builtin_expect(t != m->t0 || W->cost.slow_way, 0)) {
    if (t == m->t0 && W->prof && W->watching)
      weft__profile_end(W, id); /* no tick came: nothing to charge, as above */
    else
      weft__cost_end_slow(W, id, m);
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
