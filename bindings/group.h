/* Groups for scripts (group.c): handles over the scheduler's groups. */
#ifndef WEFT_GROUP_H
#define WEFT_GROUP_H

#include "internal.h"

#define WEFT_GROUP_MT "weft.group"

typedef struct ghandle {
  weft_id id;
} ghandle;

void weft_open_groups(weft_state *W, lua_State *L);
/* Pushes the handle of group id, made now if nobody holds one (nil when
   the group cannot be held). */
void weft_push_group_id(weft_state *W, lua_State *L, weft_id id);

#endif
