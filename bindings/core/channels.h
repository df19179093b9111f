/* Channels for scripts (channels.c). */
#ifndef WEFT_CHANNELS_H
#define WEFT_CHANNELS_H

#include "../accounts/handles.h"

void weft__open_channels(weft_state *W, lua_State *L);
/* A cancelled task gives back what channels gave it or hold for it: a
   waiting sender's value, a value handed to it it never ran with. */
void weft__channel_give_back(weft_state *W, lua_State *L, weft_id task, ltask *lt);

#endif
