/* wait(x)'s fast path, for the two wait functions (wait.c's wait_one and
   the script API's wait): Lua's own structures are read where its API
   would cost a call each (lua_getallocf, lua_gettop, lua_type,
   lua_isyieldable): weft builds its Lua (mk/lua.mk), and the files that
   include this are compiled with its internal headers (the Makefile's
   LUAI_SRC). */
#ifndef WEFT_WAIT_FAST_H
#define WEFT_WAIT_FAST_H

#include "lstate.h"

#include "wait.h"

/* wait(x)'s fast path, the hot one: a task sleeping on a number, or to
   the next frame (nil). Returns 1 when the sleep is set: the caller
   returns lua_yield(L, 0), and the resumer passes the elapsed time as
   wait's result (arguments after the first are ignored, as on the
   general path). A sleep to the next frame (nil, a number <= 0) is left
   to the resumer, which has the task in hand and cannot fail: it asks
   the scheduler for it as the resume returns (WEFT_RESUMED_NEXT).
   Returns 0 for anything else, or where no task can wait. */
static inline int weft__wait_fast(lua_State *L) {
  weft_state *W = (weft_state *)G(L)->ud; /* weft__get */
  double s = 0;
  if (L->top > L->ci->func + 1) { /* wait() is the commonest: no argument to look at */
    const TValue *x = s2v(L->ci->func + 1);
    if (ttisnumber(x))
      s = nvalue(x);
    else if (!ttisnil(x))
      return 0;
  }
  weft_id id = W->cur; /* L's task, if it runs: its mark is the slot's */
  if (!id || weft__thread_mark(L) != WEFT_ID_INDEX(id) + 1 || !yieldable(L)) return 0;
  if (s != s) return 0; /* NaN: the general path says why not */
  ltask *lt = W->curlt;
  weft__task_waited(W, lt);
  if (lt->cold) weft__cold_if(W, id, lt)->wwhat = NULL;
  if (s > 0) {
    if (weft__wait_sleep_only(W->S, id, s, 0) != WEFT_OK) luaL_error(L, "not enough memory");
  } else {
    lt->next = 1;
  }
  lt->fast = 1;
  return 1;
}
#endif
