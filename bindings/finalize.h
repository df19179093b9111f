/* Scripts' finalizers (finalize.c): __gc run as budgeted tasks outside
   the collector. */
#ifndef WEFT_FINALIZE_H
#define WEFT_FINALIZE_H

#include "internal.h"

/* Makes the registry tables the finalizers use (while the state opens). */
void weft_fin_open(lua_State *L);
/* Marks the table at obj for finalization, as lua_setmetatable marks an
   object whose metatable has __gc: once, until its finalizer has run.
   May raise (memory). */
void weft_fin_mark(lua_State *L, int obj);
/* Starts, each as a task running at once, the finalizers of the objects
   found unreachable so far; returns how many. Raises nothing. */
int weft_fin_run(weft_state *W, lua_State *L);
/* At close: the pending finalizers, then those of every object still
   marked, newest marked first, as lua_close runs them. */
void weft_fin_close(weft_state *W);

#endif
