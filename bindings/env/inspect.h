/* Introspection for scripts and tools (inspect.c): weft.tasks(),
   weft.sites(). */
#ifndef WEFT_INSPECT_H
#define WEFT_INSPECT_H

#include "../base/internal.h"

void weft__open_inspect(weft_state *W, lua_State *L);
/* Pushes what weft.tasks() says of one task (id, name, who, group,
   status, waiting, where, spawned, resumes) and returns 1, or pushes
   nothing and returns 0 for a task that is not a live Lua task. May
   raise (memory). */
int weft__push_task_info(weft_state *W, lua_State *L, weft_id task);

#endif
