/* Scripts' finalizers (finalize.c): __gc run as budgeted tasks outside
   the collector. */
#ifndef WEFT_FINALIZE_H
#define WEFT_FINALIZE_H

#include "../base/internal.h"

/* Makes the registry tables the finalizers use (while the state opens). */
void weft__fin_open(lua_State *L);
/* For a save: names the registry keys and the sentinels' type in the
   names set at names (base/persist.h). */
void weft__fin_names(lua_State *L, int names);
/* Marks the table at obj for finalization, as lua_setmetatable marks an
   object whose metatable has __gc: once, until its finalizer has run.
   May raise (memory). */
void weft__fin_mark(lua_State *L, int obj);
/* Starts, each as a task running at once, the finalizers of the objects
   found unreachable so far, oldest first: the frame's share of them (at
   most FIN_SHARE, fewer once the frame's time for tasks is spent); the
   rest wait for the next frames. Returns how many. Raises nothing. */
int weft__fin_run(weft_state *W, lua_State *L);
/* 1 when the collector has queued finalizers not yet taken. */
int weft__fin_pending(lua_State *L);
/* At close: the pending finalizers, then those of every object still
   marked, newest marked first, as lua_close runs them, within
   FIN_CLOSE_US in all (what is left is said and not run). */
void weft__fin_close(weft_state *W);

#endif
