/* Futures for scripts and for C (future.c): a future lives in its handle,
   which the combinators (combinators.c) make and complete too. */
#ifndef WEFT_FUTURE_H
#define WEFT_FUTURE_H

#include "../base/internal.h"

/* A future's states (fhandle.state). */
enum { WEFT_FUTURE_PENDING = 1, WEFT_FUTURE_RESOLVED, WEFT_FUTURE_FAILED, WEFT_FUTURE_CANCELLED };

/* A future lives in its handle: no pool slot and no __gc, so the
   collector frees it like a table. (Lua 5.4 runs only a few finalizers per
   collection step, and games make futures by the thousand.) Waiters hold
   it on their stacks, so it cannot go while it has any. */
typedef struct fhandle {
  weft_wlist waiters;
  weft_id cid;    /* its id for C (weft_future_new), 0 if none */
  uint8_t state;  /* WEFT_FUTURE_* */
  uint8_t packed; /* how its values are kept: see weft__fhandle_complete */
  uint8_t nuv;    /* user values: 2, or 4 for a combinator's future */
  char name[22];  /* for weft.tasks(); "" if none */
} fhandle;

void weft__open_futures(weft_state *W, lua_State *L);
/* Pushes a new pending future; name (may be NULL) shows in weft.tasks().
   User value 1 holds its value(s), 2 its on_done callbacks; a
   combinator's future has nuv = 4, two more (see combinators.c). */
fhandle *weft__fhandle_new(weft_state *W, lua_State *L, const char *name, int nuv);
/* Completes the future whose handle is at L[hidx] with n values at
   L[vidx] (the error value for FAILED and CANCELLED). Returns WEFT_ESTATE
   when it was already complete. */
int weft__fhandle_complete(weft_state *W, lua_State *L, int hidx, int state, int vidx, int n);

int weft__future_state_of(weft_state *W, weft_id f);
/* Futures made and completed from C, by id (the public weft_future_* wrap
   them): new (0 when out of memory), push, name, complete with a
   WEFT_FUTURE_* state (see weft_future_resolve for the codes). */
weft_id weft__cfuture_new(weft_state *W);
void weft__cfuture_push(weft_state *W, lua_State *L, weft_id f);
void weft__cfuture_set_name(weft_state *W, weft_id f, const char *name);
int weft__cfuture_complete(weft_state *W, weft_id f, int state, int nvalues);

#endif
