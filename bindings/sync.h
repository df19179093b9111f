/* Signals and channels for scripts (sync.c). */
#ifndef WEFT_BINDINGS_SYNC_H
#define WEFT_BINDINGS_SYNC_H

#include "internal.h"

void weft_open_sync(weft_state *W, lua_State *L);
/* A cancelled task gives back what channels gave it or hold for it: a
   waiting sender's value, a value handed to it it never ran with. */
void weft_channel_give_back(weft_state *W, lua_State *L, weft_id task, ltask *lt);

#endif
