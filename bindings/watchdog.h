/* The watchdog (watchdog.c): a thread that stops a stretch of script code
   running past its time (its fields: weft_watchdog, parts.h). */
#ifndef WEFT_WATCHDOG_H
#define WEFT_WATCHDOG_H

#include "weft.h"

/* Starts the watchdog (0 when it runs); stops it. */
int weft_watchdog_start(weft_state *W);
void weft_watchdog_stop(weft_state *W);

#endif
