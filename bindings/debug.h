/* The debugger server (debug.c), as the rest of the bindings see it. */
#ifndef WEFT_DEBUG_H
#define WEFT_DEBUG_H

#include "weft.h"

/* Frees the debugger server (weft_close). */
void weft_debug_free(weft_state *W);

#endif
