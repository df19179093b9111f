/* The watchdog (watchdog.c): a thread that stops a stretch of script code
   running past its time. */
#ifndef WEFT_WATCHDOG_H
#define WEFT_WATCHDOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "weft.h"

/* The fields it reads are written by the thread running the scripts at
   every stretch's start and end. */
typedef struct weft_watchdog {
  _Atomic uint32_t gen;      /* bumped at each start and end of a stretch */
  _Atomic uint32_t limit_us; /* the running stretch's time; 0: none runs */
  _Atomic uint32_t fire;     /* the gen it stopped (anything else: none) */
  _Atomic(pthread_t) runner; /* the thread running the scripts */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t tick_us;
  uint8_t on;   /* the thread runs */
  uint8_t quit; /* ...and is asked to stop (under mu) */
} weft_watchdog;

/* Starts the watchdog (0 when it runs); stops it. */
int weft_watchdog_start(weft_state *W);
void weft_watchdog_stop(weft_state *W);
/* The calling thread runs W's scripts from now on. */
void weft_watchdog_here(weft_state *W);

#endif
