/* The parts of the state its modules own: each is embedded in struct
   weft_state (internal.h) and worked by the module named on it. Types
   only: this needs none of the modules. */
#ifndef WEFT_PARTS_H
#define WEFT_PARTS_H

#include <stdatomic.h>
#include <stdint.h>

#include <lua.h>

#include "../../host/plat.h"
#include "../../host/pool.h"
#include "../weft.h"

/* ---- budget.c: a stretch of code under an instruction budget (a task
   between waits, a module's top level, a handler) ---- */

/* What outlives a resume (a task's stretch goes on after a preemption),
   kept in every task's slot: what only one resume needs is in
   weft_budget. */
#define WEFT_RAN_MAX ((1u << 27) - 1) /* ran's most: 134 s (watched), saturating */
typedef struct weft_stretch {
  uint32_t ran : 27;        /* since its last wait, before this resume: script time in
                               microseconds (watched), or budgets overrun (counted) */
  uint32_t killed : 1;      /* every instruction raises now */
  uint32_t waited : 1;      /* tasks: waited since home's hook last fired */
  uint32_t preempted : 1;   /* tasks: the last resume was stopped by the budget */
  uint32_t preempt_due : 1; /* tasks: overrun away from home: yield when home runs */
  uint32_t yielding : 1;    /* tasks: a preemption's yield passes up the resumers */
} weft_stretch;

/* The stretch running now and what it means: each lives in the C frame
   that runs it (weft__budget_begin to weft__budget_leave), linked to the
   one it runs inside, so starting and ending one copies nothing. */
typedef struct weft_budget {
  struct weft_budget *prev; /* the stretch it runs inside (the state's idle one at the bottom) */
  weft_stretch *s;          /* NULL: no budgeted code runs */
  lua_State *home;          /* the thread whose own count is a whole budget */
  const char *msg;          /* what a kill says */
  int32_t limit;            /* a budget, in instructions; 0: off */
  uint32_t us;              /* watched: the time it may run, microseconds; 0: counted */
  lua_State *run;           /* the thread running its code now (home or a coroutine) */
  int32_t spent;            /* instructions charged by threads other than home */
  uint32_t kill_site;       /* where it ran too long, once killed (sites.c) */
  uint32_t t0;              /* watched: the cost clock (microseconds) when this resume began */
  uint8_t task;             /* a task's: preempted before it is killed */
  uint8_t nested;           /* timed by the enclosing stretch's clock (watched) */
  uint8_t brief;            /* killed at its first overrun (a __tostring, an evaluation) */
} weft_budget;

/* ---- watchdog.c: a thread that stops a stretch running past its time.
   The fields it reads are written by the thread running the scripts at
   every stretch's start and end. ---- */

typedef struct weft_watchdog {
  _Atomic uint32_t gen;      /* bumped at each start and end of a stretch */
  _Atomic uint32_t limit_us; /* the running stretch's time; 0: none runs */
  _Atomic uint32_t fire;     /* the gen it stopped (anything else: none) */
  atomic_int asked;          /* a stop is asked of the script code running (weft__lua_stops) */
  _Atomic uint64_t frame_at; /* when the step running now started (us); 0: none runs */
  atomic_int frame_over;     /* the step has run its frame_us: start no more tasks */
  uint32_t frame_us;         /* the frame's time for scripts; 0: unbounded */
  atomic_int napping;        /* the watchdog naps (nothing ran for a while) */
  weft_thread thread;
  weft_mutex mu;
  weft_cond cv;
  uint32_t tick_us;
  uint8_t on;                /* the thread runs */
  uint8_t quit;              /* ...and is asked to stop (under mu) */
  uint8_t wake;              /* ...and to end its nap: a step or a stretch started (under mu) */
  _Atomic uint64_t clock_us; /* the scripts thread's processor time at its last tick (cost.h) */
  weft_cpu_clock cpu;        /* ...that thread's processor-time clock */
  atomic_int sample;         /* a profile is on: hook the running thread each tick */
  atomic_int want_sample;    /* ...a sample is asked of the next count hook */
  lua_Hook stop;             /* the hook it arms to stop a stretch (the budget's) */
} weft_watchdog;

/* ---- finalize.c: finalizers waiting their turn ---- */

typedef struct weft_fins {
  lua_Integer first, last; /* the FIFO's occupied indices (first > last: empty) */
  uint64_t dropped;        /* let go unrun: made faster than they ran */
  uint64_t until;          /* weft_close: the finalizers' end time (ns) */
  uint32_t frame, started; /* the frame whose share is being used, and how much of it */
  int said;                /* the dropping was said */
} weft_fins;

/* ---- cost.c: every task's script time ---- */

/* How resumes are timed (weft_costs.slow_way). */
enum {
  WEFT_COST_TICKS = 0,  /* watched: the watchdog's clock, two loads */
  WEFT_COST_SLOW = 1,   /* a profile is on: cost.c's slow way, by whichever clock */
  WEFT_COST_COARSE = 2, /* no budget: the coarse real clock, read at both ends */
  WEFT_COST_INSTR = 3   /* counted: the instruction clock (cost.h) */
};
/* The way, from whether a profile is on and the clock weft__cost_pick_way
   picked (TICKS, COARSE or INSTR): set when either changes (cost.h,
   profile.c). */
static inline int weft__cost_way(int profiling, int clock) {
  return profiling ? WEFT_COST_SLOW : clock;
}

typedef struct weft_costs {
  uint64_t inner;            /* time charged so far to resumes inside the one running */
  int slow_way;              /* how resumes are timed (WEFT_COST_*) */
  int clock;                 /* the clock they are timed by (weft__cost_pick_way) */
  uint64_t coarse_ns;        /* no budget, in a step: the coarse clock as the last resume
                                ended, where the next begins; 0: read it afresh */
  uint64_t instr;            /* counted: the instruction clock, less what the open count... */
  int *open;                 /* ...(the running task's thread's hook count) has counted since... */
  int open_at;               /* ...it was this */
  uint32_t frame;            /* frames begun */
  uint32_t slow_us;          /* a task's time in one frame that warns (0: never) */
  uint64_t frame_us;         /* every task's time in the frame so far */
  uint64_t last_us;          /* ...in the last whole frame */
  struct weft_cost_rec *tab; /* tasks' records (cost.c), open-addressed by slot index... */
  uint32_t tcap, tcount;     /* ...its size (a power of two, or 0) and records in it */
  weft_side grecs;           /* ...by group slot index: the group's tasks' and inner groups' */
  weft_id slow[8];           /* tasks over slow_us this frame, to warn of at its end... */
  uint32_t slow_len[8];      /* ...the stretch's time, microseconds */
  uint32_t slow_site[8];     /* ...their spawn sites (sites.c), for those gone by then */
  int nslow;
} weft_costs;

/* ---- reload.c: modules and hot reload ---- */

typedef struct weft_modules {
  int ref_group_start;      /* the module system's g:start */
  int ref_reload;           /* ...reload(name) */
  int ref_changed;          /* ...changed(path) */
  int ref_note_spawn;       /* ...note_spawn(t): g:spawn from a task */
  struct weft_watch *watch; /* scripts watcher, NULL when off */
  uint32_t reloads;         /* successful reload transactions */
  int loading;              /* running modules' top levels */
} weft_modules;

/* ---- names.c: a continuation a suspended C frame of weft's holds,
   named for a save ---- */

typedef struct weft_kname {
  const char *name;
  lua_KFunction k;
} weft_kname;

/* ---- task.c: spawns running at once, and threads kept for reuse ---- */

/* A spawn running its new task at once (task.c): its handle is made
   once the task stops, unless something asks for it earlier. */
typedef struct weft_spawning {
  weft_id id;     /* the new task, 0: none */
  uint32_t site;  /* its spawn site, kept when it ends */
  uint8_t final;  /* how it ended, 0: it has not */
  uint8_t packed; /* the kept value is its results packed {n=..., ...} */
  uint8_t kept;   /* W->spawns holds its handle (handle = 1) or its outcome (1 value) */
  uint8_t handle; /* ...which is its handle */
  uint8_t made;   /* a handle was made while it ran (cached weakly in ref_handles) */
} weft_spawning;

/* Finished tasks' threads kept for the next tasks (task.c). */
#define WEFT_SPARE_THREADS 1024

#endif
