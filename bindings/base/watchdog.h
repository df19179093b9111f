/* The watchdog (watchdog.c): a thread that stops a stretch of script code
   running past its time (its fields: weft_watchdog, parts.h). */
#ifndef WEFT_WATCHDOG_H
#define WEFT_WATCHDOG_H

#include "parts.h"

#define COST_TICK_US 1000   /* its tick while scripts run (the cost clock's, cost.h) */
#define PROFILE_TICK_US 250 /* ...while a profile samples */

/* Starts the watchdog (0 when it runs): a stretch past its time gets the
   hook `stop`, armed by the thread running it on itself with a count of
   one instruction; stops it. */
int weft__watchdog_start(weft_state *W, lua_Hook stop);
void weft__watchdog_stop(weft_state *W);

/* A step starts (on) or ends: with a frame time set, the watchdog raises
   frame_over once the step has run frame_us (one clock read a step); a
   watchdog napping between frames is woken, so the step is timed from
   its start. */
void weft__watchdog_frame(weft_watchdog *D, int on);
/* Withdraws a stop asked of script code that has not taken it (the
   stretch it was for has ended). */
void weft__watchdog_retract(weft_watchdog *D);
/* Ends a nap: something started to run. */
void weft__watchdog_wake(weft_watchdog *D);
/* The running stretch is past its time: the watchdog stopped it (for C
   code that runs long without an instruction, such as Lua's parser, to
   ask between pieces of its work). */
static inline int weft__watchdog_fired(weft_watchdog *D) {
  return atomic_load_explicit(&D->fire, memory_order_acquire) ==
         atomic_load_explicit(&D->gen, memory_order_relaxed);
}

#endif
