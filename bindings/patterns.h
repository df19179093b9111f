/* Guarded string patterns (patterns.c). */
#ifndef WEFT_PATTERNS_H
#define WEFT_PATTERNS_H

#include <lua.h>

/* Wraps find, match, gmatch and gsub of the string table at idx so that a
   search that would run too long fails instead. */
void weft_guard_patterns(lua_State *L, int idx);

#endif
