/* Modules and hot reload (reload.c), as the rest of the bindings see it:
   the calls that start and poll them (what the state keeps for them:
   weft_modules, parts.h). */
#ifndef WEFT_RELOAD_H
#define WEFT_RELOAD_H

#include <lua.h>

#include "../weft.h"

/* Registry key of the weak set of the groups weft.start makes. */

int weft__open_modules(weft_state *W);
void weft__poll_reload(weft_state *W);
int weft__l_group_start(lua_State *L);

#endif
