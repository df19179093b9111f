/* Signals for scripts (signals.c). */
#ifndef WEFT_SIGNALS_H
#define WEFT_SIGNALS_H

#include "../accounts/handles.h"

void weft_open_signals(weft_state *W, lua_State *L);

#endif
