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
   nothing (the nap's clock stands still). */
#ifndef WEFT_COST_H
#define WEFT_COST_H

#include "internal.h"
#include "profile.h"

#define COST_TICK_US 250 /* the watchdog's tick while scripts run */

/* One task's costs (by task slot index). */
typedef struct weft_cost_rec {
  weft_id id;        /* the task these are for; another id: none yet */
  uint32_t frame;    /* the frame frame_us belongs to */
  uint32_t frame_us; /* script time in that frame */
  uint32_t prev_us;  /* ...in the frame before it */
  uint32_t worst_us; /* the most in any one frame */
  uint16_t warned;   /* the slow-task warning was given */
  uint16_t seen;     /* a whole frame went into avg_us */
  float avg_us;      /* moving average per frame (about the last 30 frames) */
} weft_cost_rec;

/* A resume being timed. */
typedef struct weft_cost_mark {
  uint64_t t0, inner;
} weft_cost_mark;

/* The cost clock in microseconds. */
static inline uint64_t weft_cost_now(weft_state *W) {
  if (W->watching) return atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
  return weft_clock_coarse_ns() / 1000u;
}

/* Charges task id us microseconds (out of line: most resumes are shorter
   than a tick and charge nothing here). */
void weft_cost_charge(weft_state *W, weft_id id, uint64_t us);

/* The watchdog naps between frames, its clock still: the clock is read
   and the watchdog woken (out of line, at most once a nap). */
void weft_cost_wake(weft_state *W);

static inline void weft_cost_begin(weft_state *W, weft_cost_mark *m) {
  if (W->watching && atomic_load_explicit(&W->wd.napping, memory_order_relaxed)) weft_cost_wake(W);
  m->t0 = weft_cost_now(W);
  m->inner = W->cost.inner;
  if (W->prof) weft_profile_begin(W);
}

/* After the resume: its time, less that of tasks it ran inside it (a
   spawn runs the new task at once), goes to id. */
static inline void weft_cost_end(weft_state *W, weft_id id, const weft_cost_mark *m) {
  if (W->prof) weft_profile_end(W, id);
  uint64_t t = weft_cost_now(W);
  uint64_t total = t > m->t0 ? t - m->t0 : 0, inner = W->cost.inner - m->inner;
  W->cost.inner = m->inner + total;
  if (total > inner) weft_cost_charge(W, id, total - inner);
}

/* A new task's record, made now so no frame allocates one later. */
void weft_cost_new_task(weft_state *W, weft_id id);
/* At each frame's start: a new frame to charge, the clock fresh. */
void weft_cost_frame(weft_state *W);
/* At each frame's end: its total, and the warnings of tasks over the
   threshold. */
void weft_cost_frame_end(weft_state *W);
/* "who spawn-site" for a task into out ("task" when it has none), worked
   out on thread L. */
int weft_cost_label(weft_state *W, lua_State *L, weft_id id, char *out, size_t n);
/* A task's costs in milliseconds: the last frame it ran in (0 when that
   is not the last frame), the moving average, the worst frame. Returns 0
   when it has none. */
int weft_cost_of(weft_state *W, weft_id id, double *frame_ms, double *avg_ms, double *worst_ms);

#endif
