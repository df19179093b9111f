/* Groups for scripts (group.c): handles over the scheduler's groups. */
#ifndef WEFT_GROUP_H
#define WEFT_GROUP_H

#include "../accounts/handles.h"

void weft__open_groups(weft_state *W, lua_State *L);

#endif
