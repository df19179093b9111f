/* Futures, signals and channels for scripts (sync.c), and the
   combinators over them. */
#ifndef WEFT_BINDINGS_SYNC_H
#define WEFT_BINDINGS_SYNC_H

#include "internal.h"

void weft_open_sync(weft_state *W, lua_State *L);
/* Pushes a future resolving to {v1, ..., vn} for the list at L[list]. */
void weft_push_all(weft_state *W, lua_State *L, int list);
int weft_future_state_of(weft_state *W, weft_id f);
/* Futures made and completed from C, by id (the public weft_future_* wrap
   them): new (0 when out of memory), push, name, complete with a
   WEFT_FUTURE_* state (see weft_future_resolve for the codes). */
weft_id weft_cfuture_new(weft_state *W);
void weft_cfuture_push(weft_state *W, lua_State *L, weft_id f);
void weft_cfuture_set_name(weft_state *W, weft_id f, const char *name);
int weft_cfuture_complete(weft_state *W, weft_id f, int state, int nvalues);

#endif
