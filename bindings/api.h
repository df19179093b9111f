/* The script API (api.c): the one table every script environment falls
   through to, built in one place from each module's part. */
#ifndef WEFT_API_H
#define WEFT_API_H

#include "base/internal.h"

/* Pushes a new API table: the allowed base functions and libraries, the
   task, wait, group, report, introspection, coroutine, future, signal,
   channel, combinator and job functions, and the weft table. Raises (memory). */
void weft__open_api(weft_state *W, lua_State *L);

#endif
