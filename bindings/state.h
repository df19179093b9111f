/* The state (state.c), as the rest of the bindings see it: the frame's
   warnings. */
#ifndef WEFT_STATE_H
#define WEFT_STATE_H

#include "weft.h"

/* Reports the Lua warning collected while the frame ran, once complete. */
void weft__flush_warnings(weft_state *W);
/* Pushes the results of a task started from C that returned, and
   returns how many; WEFT_ESTATE when it has not returned (running,
   failed, cancelled), WEFT_ESTALE when C does not hold it. */
int weft__kept_results(weft_state *W, uint64_t id);

#endif
