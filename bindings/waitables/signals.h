/* Signals for scripts (signals.c). */
#ifndef WEFT_SIGNALS_H
#define WEFT_SIGNALS_H

#include "../accounts/handles.h"

void weft__open_signals(weft_state *W, lua_State *L);

#endif
