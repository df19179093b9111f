/* The wait protocol: how a task (a Lua task, or a combinator's C task)
   waits on things, and how what it waited on is delivered to it.

   A wait is built, then committed: weft__wait_begin, one record per
   element (a sleep, or a place in something's list of waiters), then
   commit. A Lua task then yields (wait_yield) and, when every record (or
   the first, for first{}) has completed, is resumed: wait_k returns the
   values delivered into its stack, or raises the failure.

   What can be waited on is open: a full userdata whose metatable has a
   `__wait` field (a light userdata pointing to a weft_waitable, see
   wait.h) can be waited on, in wait(), in lists, in first/all/timeout.
   A new primitive gives its metatable `__wait` (weft__new_meta does it),
   implements poll (done at once? else: which waiter list), and completes
   its waiters with weft__complete_all when it fires. Numbers (sleeps) and
   nil (the next frame) are built in; plain lists are combinators.c's
   (wait{...}, a nested all{...}). */
#include <math.h>

#include "wait.h"
#include "wait_fast.h"
#include "../base/names.h"
#include "../accounts/handles.h"
#include "../accounts/budget.h"

/* ---- delivery ---- */

void weft__complete(weft_state *W, weft_rec r, lua_State *from, int idx, int n, int failed) {
  weft_id w = weft__rec_waiter(W->S, r);
  int slot = weft__rec_slot(W->S, r);
  ltask *lt = LT(W, w);
  WEFT_ASSERT(lt); /* a record's waiter lives until the record completes */
  WEFT_CHECKED(int top0 = lua_gettop(from);)
  idx = lua_absindex(from, idx);
  if (lt->co) {
    lua_State *co = lt->co;
    if (lua_checkstack(co, n + 2) && lua_checkstack(from, 1)) {
      if (failed) {
        lua_pushvalue(from, idx);
        lua_xmove(from, co, 1);
        lt->raise = 1;
      } else if (lt->single) {
        for (int i = 0; i < n; i++) {
          lua_pushvalue(from, idx + i);
          lua_xmove(from, co, 1);
        }
      } else if (n > 0) {
        lua_pushvalue(from, idx);
        lua_xmove(from, co, 1);
        lua_replace(co, lt->base + slot);
      }
    }
  } else { /* a C task (a combinator) takes it through its callback */
    const ltask_cold *c = weft__cold_if(W, w, lt);
    if (c && c->deliver) c->deliver(W, w, from, idx, n, slot, failed);
  }
  WEFT_CHECKED(WEFT_ASSERT(lua_gettop(from) == top0);) /* the values stay where they were */
  weft__rec_complete(W->S, r, failed);
}

void weft__complete_all(weft_state *W, weft_wlist *l, lua_State *from, int idx, int n, int failed) {
  weft_rec r;
  if (!l) return;
  while ((r = weft__wlist_head(l)) != 0) weft__complete(W, r, from, idx, n, failed);
}

/* Timer completions from the scheduler: the elapsed seconds. */
void weft__timer_done(void *user, weft_id waiter, int slot, double elapsed) {
  weft_state *W = user;
  ltask *lt = LT(W, waiter);
  /* A deferred start or a preempted task takes no value from its timer. */
  if (lt->co && (!lt->started || lt->b.preempted)) return;
  if (lt->co) {
    lua_State *co = lt->co;
    if (!lua_checkstack(co, 1)) return;
    lua_pushnumber(co, elapsed);
    if (!lt->single) lua_replace(co, lt->base + slot);
  } else {
    const ltask_cold *c = weft__cold_if(W, waiter, lt);
    lua_State *L = W->L;
    if (!c || !c->deliver || !lua_checkstack(L, 1)) return;
    lua_pushnumber(L, elapsed);
    c->deliver(W, waiter, L, lua_gettop(L), 1, slot, 0);
    lua_pop(L, 1);
  }
}

/* ---- building a wait ---- */

static int wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  weft_state *W = weft__get(L);
  ltask *lt = W->curlt; /* the resumed task is the current one */
  if (lt->raise) {
    lt->raise = 0;
    return lua_error(L);
  }
  return lua_gettop(L) - lt->base + 1;
}

int weft__wait_yield(weft_state *W, lua_State *L, weft_id id, int single, int base,
                     lua_KFunction k) {
  ltask *lt = LT(W, id);
  lt->single = (uint8_t)single;
  lt->base = (unsigned)base;
  weft__task_waited(W, lt);
  weft__wait_commit(W->S, id);
  return lua_yieldk(L, 0, 0, k ? k : wait_k);
}

weft_id weft__wait_task(weft_state *W, lua_State *L, const char *what) {
  weft_id id = weft__thread_task(L);
  if ((!id || id != W->cur) && W->in_call)
    luaL_error(L, "%s cannot wait in a function C calls (weft_call runs it to its end)", what);
  if (!id || id != W->cur) luaL_error(L, "%s can only be called from a task", what);
  if (!lua_isyieldable(L)) {
    if (W->in_cleanup)
      luaL_error(L, "%s cannot wait in a cleanup (finally runs while its task ends)", what);
    if (W->mods.loading)
      luaL_error(L, "%s cannot wait while a module loads (wait inside its functions)", what);
    luaL_error(L, "%s cannot wait here (inside a metamethod or C function)", what);
  }
  return id;
}

/* The dispatcher: every element a wait is built from comes here. */
int weft__wait_add(weft_state *W, lua_State *L, weft_id id, int idx, int slot, int one, int argn) {
  int t = lua_type(L, idx);
  if (t == LUA_TNIL || t == LUA_TNONE || t == LUA_TNUMBER) {
    double s = t == LUA_TNUMBER ? lua_tonumber(L, idx) : 0;
    if (isnan(s)) {
      weft__wait_abort(W, id);
      luaL_argerror(L, argn, "cannot wait for NaN seconds");
    }
    if (weft__wait_sleep(W->S, id, slot, s, 0) != WEFT_OK) {
      weft__wait_abort(W, id);
      luaL_error(L, "not enough memory");
    }
    return 0;
  }
  const weft_waitable *wt = weft__waitable_of(L, idx);
  if (!wt) {
    weft__wait_abort(W, id);
    return luaL_argerror(L, argn, lua_pushfstring(L, "cannot wait on a %s", luaL_typename(L, idx)));
  }
  weft_wlist *list = NULL;
  int r = wt->poll(W, L, idx, one, &list);
  if (r != 0) return r;
  ltask_cold *c = weft__cold(W, id, LT(W, id));
  if (!c) {
    weft__wait_abort(W, id);
    luaL_error(L, "not enough memory");
  }
  c->wwhat = wt; /* for weft.tasks(): what it waits on */
  c->wptr = lua_touserdata(L, idx);
  c->wobj = *(weft_id *)c->wptr; /* every handle is at least 8 bytes */
  if (list == weft__task_listed(W->S, id)) {
    weft__wait_abort(W, id);
    luaL_argerror(L, argn, "a task cannot wait for itself");
  }
  if (weft__wait_on(W->S, id, slot, list) != WEFT_OK) {
    weft__wait_abort(W, id);
    luaL_error(L, "not enough memory");
  }
  return 0;
}

weft_id weft__wait_start(weft_state *W, lua_State *L) {
  weft_id id = weft__wait_task(W, L, "wait");
  lua_settop(L, 1);
  ltask *lt = LT(W, id);
  if (lt->cold) weft__cold_if(W, id, lt)->wwhat = NULL;
  return id;
}

WEFT_NOINLINE int weft__wait_any(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_id id = weft__wait_start(W, L);
  weft__wait_begin(W->S, id, WEFT_WAIT_ALL);
  int r = weft__wait_add(W, L, id, 1, 0, 0, 1);
  if (r < 0) {
    weft__wait_abort(W, id);
    weft__task_waited(W, LT(W, id));
    return lua_error(L);
  }
  if (r > 0) {
    weft__task_waited(W, LT(W, id));
    return lua_gettop(L) - 1;
  }
  return weft__wait_yield(W, L, id, 1, lua_gettop(L) + 1, NULL);
}

int weft__l_wait_one(lua_State *L) {
  if (weft__wait_fast(L)) return lua_yield(L, 0);
  return weft__wait_any(L);
}

static int l_wait_realtime(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_id id = weft__wait_task(W, L, "wait_realtime");
  double s = luaL_checknumber(L, 1);
  if (isnan(s)) luaL_argerror(L, 1, "seconds must be a number, got NaN");
  lua_settop(L, 1);
  weft__wait_begin(W->S, id, WEFT_WAIT_ALL);
  if (weft__wait_sleep(W->S, id, 0, s, 1) != WEFT_OK) return luaL_error(L, "not enough memory");
  return weft__wait_yield(W, L, id, 1, lua_gettop(L) + 1, NULL);
}

void weft__open_waits(weft_state *W, lua_State *L) {
  weft__name_k(W, "wait.k", wait_k);
  static const luaL_Reg api[] = {{"wait_realtime", l_wait_realtime}, {NULL, NULL}};
  luaL_setfuncs(L, api, 0);
}
