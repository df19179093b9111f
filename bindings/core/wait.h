/* The wait protocol (wait.c): what a task can wait on, how a wait is
   built and committed, and the delivery of values to waiting tasks. */
#ifndef WEFT_WAIT_H
#define WEFT_WAIT_H

#include "../accounts/budget.h"
#include "../accounts/handles.h"

/* Something a task can wait on: a userdata whose metatable has __wait. */
typedef struct weft_waitable weft_waitable;
struct weft_waitable {
  /* Checks the object at L[idx]. Returns 1 when it is already done, with
     its values pushed (just the first when `one`), -1 when it already
     failed, with the error pushed, or 0 with *list set to its waiters. */
  int (*poll)(weft_state *W, lua_State *L, int idx, int one, weft_wlist **list);
  const char *what; /* for introspection: "task", "future", ... */
  /* Pushes the object's name for introspection (nil when it has none). */
  void (*name)(weft_state *W, lua_State *L, weft_id obj, const void *ptr);
};

static inline const weft_waitable *weft__waitable_of(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return NULL;
  lua_pushliteral(L, "__wait");
  lua_rawget(L, -2);
  const weft_waitable *w = (const weft_waitable *)lua_touserdata(L, -1);
  lua_pop(L, 2);
  return w;
}

/* wait(x) begins: the task it belongs to (raises where none can wait),
   x alone left on the stack, what it waited on before forgotten. */
weft_id weft__wait_start(weft_state *W, lua_State *L);
/* wait(x)'s general path, for one element x (not a plain list). */
int weft__wait_any(lua_State *L);
/* wait(x) for one element x: the fast path, else the general one. */
int weft__l_wait_one(lua_State *L);
void weft__open_waits(weft_state *W, lua_State *L);
/* The task a wait by `what` (for messages) in L belongs to; raises where
   no task can wait (outside tasks, in a cleanup, a module's top level, a
   metamethod or C function). */
weft_id weft__wait_task(weft_state *W, lua_State *L, const char *what);
/* Adds the element at L[idx] to the wait being built for task `id`, in
   `slot` (one: only its first value counts). Returns 1 when it is already
   done (its values pushed), -1 when it already failed (the error pushed),
   0 when a record was added. Raises (the wait dropped) for what cannot be
   waited on, at argument argn (a plain list among them: the caller makes
   it an all{...} first). */
int weft__wait_add(weft_state *W, lua_State *L, weft_id id, int idx, int slot, int one, int argn);
/* Drops the records of a wait being built, so that a task raising out of
   it (a bad element, no memory) is left waiting on nothing. */
static inline void weft__wait_abort(weft_state *W, weft_id id) {
  weft__wait_begin(W->S, id, WEFT_WAIT_ALL);
}
/* Commits the wait of Lua task `id` and yields L; delivered values land
   from stack index base (single: every value of slot 0), and k (NULL:
   the standard one) returns them when the task is resumed. */
int weft__wait_yield(weft_state *W, lua_State *L, weft_id id, int single, int base,
                     lua_KFunction k);

/* Timer completions from the scheduler (its callback): the elapsed
   seconds go to the waiter. */
void weft__timer_done(void *user, weft_id waiter, int slot, double elapsed);
/* Gives a waiter the values from[idx .. idx+n-1] (or the error at idx when
   failed) for its slot, then completes the record. */
void weft__complete(weft_state *W, weft_rec r, lua_State *from, int idx, int n, int failed);
/* weft__complete for every waiter in the list l. */
void weft__complete_all(weft_state *W, weft_wlist *l, lua_State *from, int idx, int n, int failed);

#endif
