/* The watchdog (watchdog.c): a thread that stops a stretch of script code
   running past its time. */
#ifndef WEFT_WATCHDOG_H
#define WEFT_WATCHDOG_H

#include <stdatomic.h>
#include <stdint.h>

#include <lua.h>

#include "../host/plat.h"
#include "weft.h"

/* The fields it reads are written by the thread running the scripts at
   every stretch's start and end. */
typedef struct weft_watchdog {
  _Atomic uint32_t gen;      /* bumped at each start and end of a stretch */
  _Atomic uint32_t limit_us; /* the running stretch's time; 0: none runs */
  _Atomic uint32_t fire;     /* the gen it stopped (anything else: none) */
  _Atomic(lua_State *) run;  /* W->bud.run, for the watchdog to hook */
  atomic_int poking;         /* the watchdog is setting a hook on run */
  uint32_t grace_gen;        /* script thread: the stop whose grace counts... */
  lua_State *grace_L;        /* ...on this thread (budget.c) */
  weft_thread thread;
  weft_mutex mu;
  weft_cond cv;
  uint32_t tick_us;
  uint8_t on;   /* the thread runs */
  uint8_t quit; /* ...and is asked to stop (under mu) */
} weft_watchdog;

/* Starts the watchdog (0 when it runs); stops it. */
int weft_watchdog_start(weft_state *W);
void weft_watchdog_stop(weft_state *W);

#endif
