/* Instruction budgets (budget.c): what a stretch of script code may run,
   counted by a hook or timed by the watchdog. */
#ifndef WEFT_BUDGET_H
#define WEFT_BUDGET_H

#include "../base/internal.h"
#include "../base/watchdog.h"

/* Starts the watchdog timing stretches (0 when it runs): a stretch past
   its time is stopped by the budget's hook. */
int weft__budget_watch(weft_state *W);
/* Works out what a task's stretch may run (task_limit, task_us), once
   budgets are counted or watched. */
void weft__budget_setup(weft_state *W);
/* What a stretch is (weft__budget_enter's kind): */
enum {
  WEFT_STRETCH_PLAIN = 0, /* runs on past its slices (it cannot be preempted), killed as a
                             runaway past desc.runaway_us: a module's top level, a handler */
  WEFT_STRETCH_TASK = 1,  /* a task: preempted at each slice, goes on next frame, killed
                             as a runaway past desc.runaway_us */
  WEFT_STRETCH_BRIEF = 2  /* killed past its one slice: a __tostring, an evaluation */
};
/* Makes s (zeroed by the caller) the running stretch, described in *b
   (the caller's, until weft__budget_leave; the one running before is
   b->prev); home is the thread counting whole budgets; limit its slice
   in instructions (watched, the time they stand for). */
void weft__budget_enter(weft_state *W, weft_budget *b, weft_stretch *s, lua_State *home,
                        const char *msg, int32_t limit, int kind);
/* The running stretch has run its runaway limit without waiting (also
   counting what Lua's parser took, which no instruction stops). */
int weft__budget_runaway(weft_state *W);
/* Work of weft's own in C on a script's data (table.move over a range a
   script names), done in pieces: call after each piece with the steps it
   took (counted budgets charge WEFT_STEPS_PER_INSTR steps an
   instruction). Raises the kill of a runaway; returns 1 when the task
   is preempted now (the caller yields with lua_yieldk and goes on in its
   continuation next frame), 0 to go on. */
#define WEFT_STEPS_PER_INSTR 4
int weft__budget_piece(weft_state *W, lua_State *L, long steps);
/* A load is about to compile bytes more source (a piece of its chunk).
   Compiling counts toward the stretch's runaway limit: watched budgets
   see the parser's time on their clock; counted ones, where the parser
   runs no instruction, are charged a byte an instruction (and 64 a
   piece) here, so a reader that never ends is stopped there too
   (weft__budget_runaway), on every machine alike. */
void weft__budget_compiled(weft_state *W, size_t bytes);
/* Leaving a stretch while a stop of the watched clock is pending
   (weft__budget_leave; outer: the stretch it ran inside): a stop that did
   not fire is dropped; one that stopped a nested stretch goes on to the
   enclosing one, at its next instruction. */
void weft__budget_unstop(weft_state *W, const weft_budget *outer);

/* Tells the watchdog which stretch runs now, and for how long it may. */
static inline void weft__budget_mark(weft_state *W) {
  weft_watchdog *D = &W->wd;
  uint32_t gen = atomic_load_explicit(&D->gen, memory_order_relaxed) + 1;
  atomic_store_explicit(&D->gen, gen, memory_order_release);
  atomic_store_explicit(&D->limit_us, W->bud->us, memory_order_release);
}

/* Arms home's hook to stop the stretch beginning on it at its first
   instruction. */
void weft__budget_stop_at_once(weft_state *W, lua_State *home);
/* The stretches' clock, in microseconds: the scripts thread's processor
   time (the cost clock, read afresh while the watchdog naps) less the
   time a debugger held the scripts stopped (weft__budget_hold). */
uint32_t weft__budget_clock(weft_state *W);

/* weft__budget_enter with the budget worked out: limit instructions and,
   watched, us microseconds (0: counted). Inline, as every resume starts
   a stretch. */
static inline void weft__budget_begin(weft_state *W, weft_budget *b, weft_stretch *s,
                                      lua_State *home, const char *msg, int32_t limit, uint32_t us,
                                      int kind) {
  const weft_budget *outer = W->bud;
  WEFT_ASSERT(outer && b != outer); /* stretches nest: a record runs once at a time */
  *b = (weft_budget){.prev = W->bud,
                     .s = s,
                     .home = home,
                     .msg = msg,
                     .limit = limit,
                     .us = us,
                     .run = home,
                     .task = (uint8_t)(kind == WEFT_STRETCH_TASK),
                     .nested = (uint8_t)(outer->us != 0),
                     .brief = (uint8_t)(kind == WEFT_STRETCH_BRIEF)};
  W->bud = b;
  if (us) { /* the stretch's time starts now (weft__budget_clock) */
    uint32_t t = (uint32_t)atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
    b->t0 = t ? t - W->held_us : weft__budget_clock(W);
  }
  if (outer->us) { /* timed by the enclosing stretch */
    /* Its stop pending (a loop in C starting task after task: a signal's
       listeners), a task stops at its first instruction, for next frame. */
    if (kind == WEFT_STRETCH_TASK && weft__watchdog_fired(&W->wd))
      weft__budget_stop_at_once(W, home);
    return;
  }
  weft__budget_mark(W);
  if (us && atomic_load_explicit(&W->wd.napping, memory_order_relaxed))
    weft__watchdog_wake(&W->wd); /* the first stretch after a quiet while */
}

/* What a task's stretch says when it is killed. */
#define WEFT_TASK_RUNAWAY "script ran too long without waiting"

/* weft__budget_begin for a task's stretch (WEFT_STRETCH_TASK, its budget
   worked out by weft__budget_setup) begun where none runs (a frame's
   task, a task C runs): the state's own record, whose fixed fields
   weft__budget_setup filled, so only what changes is written. Returns it,
   for weft__budget_leave. */
static inline weft_budget *weft__budget_begin_top(weft_state *W, weft_stretch *s, lua_State *home) {
  weft_budget *b = &W->bud_top;
  WEFT_ASSERT(W->bud == &W->bud_idle && b->prev == W->bud && b->task && !b->nested);
  b->s = s;
  b->home = b->run = home;
  b->limit = W->task_limit;
  b->us = W->task_us;
  b->spent = 0;
  b->kill_site = 0;
  W->bud = b;
  if (b->us) {
    uint32_t t = (uint32_t)atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
    b->t0 = t ? t - W->held_us : weft__budget_clock(W);
  }
  weft__budget_mark(W);
  if (b->us && atomic_load_explicit(&W->wd.napping, memory_order_relaxed))
    weft__watchdog_wake(&W->wd); /* the first stretch after a quiet while */
  return b;
}

/* Ends the running stretch, b: the one it ran inside runs again. */
static inline void weft__budget_leave(weft_state *W, const weft_budget *b) {
  weft_watchdog *D = &W->wd;
  const weft_budget *saved = b->prev;
  WEFT_ASSERT(W->bud == b);
  if (atomic_load_explicit(&D->asked, memory_order_relaxed)) weft__watchdog_retract(D);
  if (atomic_load_explicit(&D->fire, memory_order_acquire) ==
      atomic_load_explicit(&D->gen, memory_order_relaxed))
    weft__budget_unstop(W, saved); /* or, nested, hands the stop on */
  WEFT_ASSERT(saved && (saved != &W->bud_idle || !b->nested));
  W->bud = (weft_budget *)saved;
  /* In a step the next task's start marks (a stop that comes between two
     finds no stretch running and is dropped), and the step's end says
     nothing runs (weft__budget_idle). A stretch a debugger holds (one
     with no time, watched) is not running either: the watchdog stops
     timing what ran while it was held (an evaluation). */
  if (!saved->us && (!W->in_step || (saved->s && W->watching))) weft__budget_mark(W);
}
/* Nothing budgeted runs now (the end of a step). */
void weft__budget_idle(weft_state *W);
/* Arms a task's hook on its thread: a task's whole budget, or one
   instruction while it is being killed. */
void weft__budget_arm_home(weft_state *W, lua_State *home, int killed);
/* Around a resume of another thread (a script's coroutine): charges its
   instructions to the running stretch; after it, raises in L a kill that
   happened meanwhile. */
void weft__budget_before_nested(weft_state *W, lua_State *co);
void weft__budget_after_nested(weft_state *W, lua_State *L, lua_State *co, int status);
/* After a resume of another thread yielded: 0 for a script's yield; 1
   when the yield was a preemption passing up to the task's thread (L, the
   resumer, yields too, and resumes the other thread when it is resumed;
   when L is the task's own thread the task is now preempted); 2 when L
   cannot yield (resume the other thread again at once). */
int weft__budget_preempting(weft_state *W, lua_State *L);
/* lua_pcall / lua_resume as a stretch of its own (a module's top level, a
   handler, a __tostring), killed with msg: past limit instructions (brief,
   limit > 0), or with limit 0 past the runaway limit. */
int weft__budget_pcall(weft_state *W, lua_State *L, int nargs, int nres, int msgh, const char *msg,
                       int32_t limit);
int weft__budget_resume(weft_state *W, lua_State *co, lua_State *from, int nargs, int *nres,
                        const char *msg, int32_t limit);
/* Sets the hook events wanted besides the count (W->hook_extra): every
   live task's thread, the threads running now and L (a thread inside a
   hook, or NULL) are re-armed. */
void weft__budget_set_extra(weft_state *W, int mask, lua_State *L);
/* A debugger holds the scripts stopped (hold fills h in), until unhold
   (given h): the running stretch is not timed meanwhile, and the
   scripts thread's time held, the debugger's own work in it included
   (its evaluations, each a stretch of its own), is no stretch's and no
   task's: not in a stretch's runaway time, a task's cost or a profile's
   samples. Holds do not nest. */
typedef struct weft_hold {
  uint32_t us;      /* the running stretch's time, given back */
  uint64_t cpu_ns;  /* the scripts thread's processor time when held */
  uint64_t wall_ns; /* ...and the real clock's */
} weft_hold;
void weft__budget_hold(weft_state *W, weft_hold *h);
void weft__budget_unhold(weft_state *W, const weft_hold *h);
/* Budgets count instructions from now on (recording and replaying need
   them exact); the watchdog stops. */
void weft__budget_count(weft_state *W);

/* The running stretch is being killed: every instruction raises it. */
static inline int weft__budget_killing(const weft_state *W) {
  return W->bud->s && W->bud->s->killed;
}
/* From a hook: raises msg prefixed with the running function's file:line. */
void weft__raise_here(lua_State *L, const char *msg);
/* A stretch the budget preempted ends with a wait: its time in all goes
   to the slow-task check (watched). */
void weft__budget_stretch_end(weft_state *W, ltask *lt);
/* A task waits: its stretch ends. */
static inline void weft__task_waited(weft_state *W, ltask *lt) {
  if (__builtin_expect(lt->b.ran != 0, 0)) weft__budget_stretch_end(W, lt);
  lt->b.ran = 0;
  lt->b.waited = 1;
}

#endif
