/* The library's hooks for its own tests, linked from libweft.a (the
   shared library does not export them): nothing an engine calls. */
#ifndef WEFT_TESTING_H
#define WEFT_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"

/* From now on, every allocation of nsize bytes weft makes (Lua's and the
   host's, counted as desc.alloc's are) fails when fail(user, nsize)
   returns nonzero, for allocation-failure sweeps; NULL stops it. */
void weft__testing_fail_alloc(weft_state *W, int (*fail)(void *user, size_t nsize), void *user);

/* Charges task t us microseconds of script time now, as a resume that
   took that long would: drives the cost table without a clock. */
void weft__testing_charge(weft_state *W, weft_task t, uint64_t us);

#endif
