/* The state (state.c), as the rest of the bindings see it: the frame's
   warnings. */
#ifndef WEFT_STATE_H
#define WEFT_STATE_H

#include "weft.h"

/* Reports the Lua warning collected while the frame ran, once complete. */
void weft_flush_warnings(weft_state *W);

#endif
