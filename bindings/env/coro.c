/* The coroutine library as scripts see it: Lua's own, with the task rules
   added. In a task's own thread coroutine.yield is wait; a task's thread
   cannot be resumed or closed by a script; every resume of a script's
   coroutine is charged to the running budget, and a kill that lands
   inside one is raised again in its resumer (budget.c). Results, errors
   and messages are Lua's: resume and wrap are written on lua_resume
   directly (no C level of their own, so coroutines nest as deep as in
   plain Lua), the rest call Lua's functions directly. */
#include "coro.h"
#include "../base/names.h"
#include "../accounts/handles.h"
#include "../accounts/budget.h"
#include "../waitables/combinators.h"

static lua_CFunction original(lua_State *L) { return lua_tocfunction(L, lua_upvalueindex(1)); }

static lua_State *check_co(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTHREAD);
  lua_State *co = lua_tothread(L, 1);
  if (weft__thread_task(co))
    luaL_argerror(L, 1, "this is a task's thread: wait for or cancel the task instead");
  return co;
}

/* Who resumes: coroutine.resume (the coroutine is argument 1) or a
   function made by coroutine.wrap (it is upvalue 1). */
enum { BY_RESUME, BY_WRAP };

#define PREEMPTED (-2)

/* Resumes co with the narg values on top of L. Returns the number of
   results moved to L, -1 with the error on top of L, or PREEMPTED when
   the budget preempted the task inside co: the caller yields (see
   resume_again). */
static int resume_co(lua_State *L, lua_State *co, int narg) {
  weft_state *W = weft__get(L);
  if (!lua_checkstack(co, narg)) {
    lua_pushliteral(L, "too many arguments to resume");
    return -1;
  }
  lua_xmove(L, co, narg);
  for (;;) {
    weft__budget_before_nested(W, co);
    int nres = 0;
    int st = lua_resume(co, L, narg, &nres);
    weft__budget_after_nested(W, L, co, st);
    if (st == LUA_YIELD) {
      int p = weft__budget_preempting(W, L);
      if (p == 1) return PREEMPTED;
      if (p == 2) { /* cannot pass it up: co goes on now */
        narg = 0;
        continue;
      }
    }
    if (st == LUA_OK || st == LUA_YIELD) {
      if (!lua_checkstack(L, nres + 1)) {
        lua_pop(co, nres);
        lua_pushliteral(L, "too many results to resume");
        return -1;
      }
      lua_xmove(co, L, nres);
      return nres;
    }
    lua_xmove(co, L, 1);
    return -1;
  }
}

/* Closes a dead coroutine's pending to-be-closed variables, which may
   close further coroutines: Lua 5.4.4 starts each close's C-call count
   afresh, so such chains are stopped at MAX_CLOSE_DEPTH. */
static int close_dead(lua_State *L, lua_State *co) {
  weft_state *W = weft__get(L);
  if (W->close_depth >= MAX_CLOSE_DEPTH)
    return luaL_error(L, "coroutine.close nested too deep (over %d)", MAX_CLOSE_DEPTH);
  W->close_depth++;
  int st = lua_resetthread(co);
  W->close_depth--;
  return st;
}

/* What coroutine.resume or the wrapped function returns for a resume
   that returned r (see resume_co). */
static int resumed(lua_State *L, lua_State *co, int r, int by);

static int resume_again(lua_State *L, int status, lua_KContext by) {
  (void)status;
  lua_State *co;
  if (by == BY_WRAP) {
    lua_settop(L, 0);
    co = lua_tothread(L, lua_upvalueindex(1));
  } else {
    lua_settop(L, 1);
    co = lua_tothread(L, 1);
  }
  return resumed(L, co, resume_co(L, co, 0), (int)by);
}

static int resumed(lua_State *L, lua_State *co, int r, int by) {
  if (r == PREEMPTED) return lua_yieldk(L, 0, by, resume_again);
  if (by == BY_RESUME) {
    lua_pushboolean(L, r >= 0);
    lua_insert(L, r >= 0 ? -(r + 1) : -2);
    return r >= 0 ? r + 1 : 2;
  }
  if (r >= 0) return r;
  int st = lua_status(co);
  if (st != LUA_OK && st != LUA_YIELD) { /* it died: close it, raise its error */
    st = close_dead(L, co);
    lua_xmove(co, L, 1);
  }
  if (st != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

static int l_resume(lua_State *L) {
  lua_State *co = check_co(L);
  return resumed(L, co, resume_co(L, co, lua_gettop(L) - 1), BY_RESUME);
}

/* The function coroutine.wrap returns: upvalue 1 is the coroutine. */
static int l_wrapped(lua_State *L) {
  lua_State *co = lua_tothread(L, lua_upvalueindex(1));
  return resumed(L, co, resume_co(L, co, lua_gettop(L)), BY_WRAP);
}

/* coroutine.wrap: upvalue 1 is Lua's coroutine.create. */
static int l_wrap(lua_State *L) {
  original(L)(L); /* checks the function, pushes the coroutine */
  lua_pushcclosure(L, l_wrapped, 1);
  return 1;
}

static int l_close(lua_State *L) {
  weft_state *W = weft__get(L);
  lua_State *co = check_co(L);
  lua_Debug ar;
  int st = lua_status(co);
  if (co == L || (st == LUA_OK && lua_getstack(co, 0, &ar)))
    return original(L)(L); /* running or normal: Lua's error */
  weft__budget_before_nested(W, co);
  if (W->close_depth >= MAX_CLOSE_DEPTH)
    return luaL_error(L, "coroutine.close nested too deep (over %d)", MAX_CLOSE_DEPTH);
  W->close_depth++;
  int n = original(L)(L);
  W->close_depth--;
  weft__budget_after_nested(W, L, co, LUA_OK);
  return n;
}

/* coroutine.yield: a wait in a task's own thread, a plain yield elsewhere. */
static int l_yield(lua_State *L) {
  if (weft__thread_task(L)) return weft__l_wait(L);
  return lua_yield(L, lua_gettop(L));
}

/* coroutine.running: a task's thread a script has seen is never reused
   for another task. */
static int l_running(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_id id = weft__thread_task(L);
  if (id) {
    ltask *lt = LT(W, id);
    if (lt) lt->seen = 1;
  }
  return original(L)(L);
}

void weft__open_coroutines(weft_state *W, lua_State *L, int api) {
  weft__name_k(W, "coroutine.resume_again", resume_again);
  lua_getfield(L, api, "coroutine");
  int co = lua_gettop(L);
  lua_pushcfunction(L, l_resume);
  lua_setfield(L, co, "resume");
  lua_pushcfunction(L, l_yield);
  lua_setfield(L, co, "yield");
  static const struct {
    const char *name;
    lua_CFunction f;
    const char *orig;
  } wrapped[] = {
      {"wrap", l_wrap, "create"}, {"close", l_close, "close"}, {"running", l_running, "running"}};
  for (size_t i = 0; i < sizeof wrapped / sizeof *wrapped; i++) {
    lua_getfield(L, co, wrapped[i].orig);
    lua_pushcclosure(L, wrapped[i].f, 1);
    lua_setfield(L, co, wrapped[i].name);
  }
  lua_pop(L, 1);
}
