/* Guarded library calls that run long in C (patterns.c): string patterns,
   string.rep, table.move and table.concat. */
#ifndef WEFT_PATTERNS_H
#define WEFT_PATTERNS_H

#include <lua.h>

#include "../weft.h"

/* Wraps find, match, gmatch and gsub of the string table at idx so that a
   search that would run too long fails instead. */
void weft__guard_patterns(lua_State *L, int idx);
/* Names the continuations of the pieces' yields, for a save. */
void weft__patterns_name_ks(weft_state *W);
/* Wraps move and concat of the table table at idx so that a range of
   more elements than the steps allowed fails instead. */
void weft__guard_tables(lua_State *L, int idx);

#endif
