/* Tasks as Lua threads: spawning, the wait protocol, resuming, finishing,
   cancelling, task handles and groups. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define MAX_LIST 65536 /* elements in one wait list */

static void lt_resume(weft_sched *S, weft_id id, void *ud);
static void lt_cancel(weft_sched *S, weft_id id, void *ud);
static const weft_task_class lua_task_class = {lt_resume, lt_cancel};

static inline ltask *LT(weft_state *W, weft_id id) { return weft_task_udata(W->S, id); }

/* ---- handles ---- */

void weft_push_task(weft_state *W, lua_State *L, weft_id id) {
  if (!id || weft_task_state(W->S, id) < 0) {
    lua_pushnil(L);
    return;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_tasks);
  if (lua_rawgeti(L, -1, (lua_Integer)WEFT_ID_INDEX(id) + 1) != LUA_TUSERDATA) {
    lua_pop(L, 1);
    lua_pushnil(L); /* settled already: its slot holds false */
  }
  lua_remove(L, -2);
}

static thandle *check_task(lua_State *L, int idx) { return luaL_checkudata(L, idx, WEFT_TASK_MT); }

/* ---- errors ---- */

#define TOSTRING_BUDGET 100000 /* instructions a __tostring may take */

const char *weft_tostring(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TSTRING:
  case LUA_TNUMBER:
    lua_pushvalue(L, idx);
    return lua_tostring(L, -1);
  case LUA_TNIL:
    return lua_pushliteral(L, "nil");
  case LUA_TBOOLEAN:
    return lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false");
  default:
    if (luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
      lua_pushvalue(L, idx);
      /* A __tostring that errors, loops (cut by its own budget, so it
         neither hangs the host nor spends the budget of the task that
         happens to report it) or returns a non-string is not trusted. */
      int st = weft_budget_pcall(weft_get(L), L, 1, 1, 0, "__tostring ran too long",
                                 TOSTRING_BUDGET);
      if (st == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
      lua_pop(L, 1);
    }
    return lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, idx));
  }
}

/* Pushes trace followed by one "spawned at" line per spawn site. */
static const char *with_sites(weft_state *W, lua_State *L, const char *trace, uint32_t site) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, trace);
  for (; site; site = weft_site_parent(W->sites, site)) {
    luaL_addstring(&b, "\nspawned at ");
    luaL_addstring(&b, weft_site_where(W->sites, site));
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* Who a report names first: the name a script gave the task (t.name =
   ...; weft.start's own naming after the module does not count), else
   the innermost named group around it that weft.start did not make (the
   demo names each entity's group after the entity), else nobody. */
int weft_push_who(weft_state *W, lua_State *L, weft_id task) {
  weft_id g = task ? weft_task_group(W->S, task) : 0;
  if (!g) return 0;
  luaL_checkstack(L, 6, NULL);
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, WEFT_START_GROUPS);
  int starts = top + 1;
  weft_push_task(W, L, task);
  thandle *h = lua_touserdata(L, -1);
  if (h && h->named && lua_getiuservalue(L, -1, 2) == LUA_TSTRING) {
    int explicit = 1;
    weft_push_group(W, L, g);
    if (lua_istable(L, starts) && lua_rawget(L, starts) != LUA_TNIL) { /* a start's own task? */
      weft_push_group(W, L, g);
      lua_getiuservalue(L, -1, 1);
      explicit = !lua_rawequal(L, -1, top + 3);
    }
    if (explicit) {
      lua_copy(L, top + 3, top + 1);
      lua_settop(L, top + 1);
      return 1;
    }
  }
  lua_settop(L, starts);
  for (weft_id root = weft_sched_root(W->S); g && g != root; g = weft_group_parent(W->S, g)) {
    weft_push_group(W, L, g);
    int skip = lua_istable(L, starts) && (lua_pushvalue(L, -1), lua_rawget(L, starts) != LUA_TNIL);
    if (lua_istable(L, starts)) lua_pop(L, 1);
    if (!skip && lua_getiuservalue(L, -1, 1) == LUA_TSTRING && lua_rawlen(L, -1) > 0) {
      lua_copy(L, -1, top + 1);
      lua_settop(L, top + 1);
      return 1;
    }
    lua_settop(L, starts);
  }
  lua_settop(L, top);
  return 0;
}

/* The parts of a report, for the protected call below. */
typedef struct report_args {
  weft_state *W;
  weft_id task;
  const char *trace; /* NULL: the message, or a traceback of `co` */
  lua_State *co;     /* thread to take the traceback from, or NULL */
} report_args;

/* Runs protected with the error value at 1 and report_args at 2: builds
   the message, traceback and spawn sites, and hands them to the handler
   or the sink. Everything here may allocate. */
static int l_report(lua_State *L) {
  report_args *a = lua_touserdata(L, 2);
  weft_state *W = a->W;
  lua_settop(L, 1);
  const char *msg = weft_tostring(L, 1);
  const char *trace = a->trace;
  if (!trace && a->co) {
    luaL_traceback(L, a->co, msg, 0);
    trace = lua_tostring(L, -1);
  }
  if (weft_push_who(W, L, a->task)) { /* "gate_guard: patrol.lua:17: ..." */
    int who = lua_gettop(L);
    lua_pushfstring(L, "%s: %s", lua_tostring(L, who), msg);
    msg = lua_tostring(L, -1);
    if (trace) {
      lua_pushfstring(L, "%s: %s", lua_tostring(L, who), trace);
      trace = lua_tostring(L, -1);
    }
  }
  ltask *lt = a->task ? LT(W, a->task) : NULL;
  const char *full = with_sites(W, L, trace ? trace : msg, lt ? lt->site : 0);
  if (W->ref_on_error != LUA_NOREF) {
    /* The handler runs on a thread of its own with a budget of its own:
       one that loops neither hangs the host nor spends (or resets) the
       budget of the task that happens to report. */
    lua_State *h = lua_newthread(L);
    lua_rawgeti(h, LUA_REGISTRYINDEX, W->ref_on_error);
    lua_pushvalue(L, 1);
    weft_push_task(W, L, a->task);
    lua_pushstring(L, full);
    lua_xmove(L, h, 3);
    weft_id saved = W->cur;
    int nres = 0;
    int st = weft_budget_resume(W, h, L, 3, &nres, "weft.on_error handler ran too long",
                                (int32_t)W->desc.instr_budget);
    W->cur = saved;
    if (st == LUA_YIELD) {
      lua_settop(h, 0);
      lua_pushliteral(h, "weft.on_error handler cannot wait");
    }
    if (st == LUA_OK) {
      lua_pop(L, 1); /* the thread */
      return 0;
    }
    lua_xmove(h, L, 1);
    lua_remove(L, -2); /* the thread */
    const char *herr = weft_tostring(L, -1);
    if (W->desc.report)
      W->desc.report(W->desc.user, "error in weft.on_error handler", herr);
    else
      fprintf(stderr, "error in weft.on_error handler: %s\n", herr);
  }
  if (W->desc.report)
    W->desc.report(W->desc.user, msg, full);
  else
    fprintf(stderr, "error: %s\n", full);
  return 0;
}

/* Reports the error at L[idx]. Never raises: if building the report runs
   out of memory (it has some headroom past the limit), a short report
   without the traceback goes to the sink instead. */
static void report(weft_state *W, lua_State *L, int idx, weft_id task, const char *trace,
                   lua_State *co) {
  W->errors++;
  if (!lua_checkstack(L, 8)) return;
  idx = lua_absindex(L, idx);
  report_args a = {W, task, trace, co};
  W->in_report++;
  lua_pushcfunction(L, l_report);
  lua_pushvalue(L, idx);
  lua_pushlightuserdata(L, &a);
  int st = lua_pcall(L, 2, 0, 0);
  if (st != LUA_OK) { /* no memory to build it: the message or trace and the sites */
    const char *msg = lua_type(L, idx) == LUA_TSTRING  ? lua_tostring(L, idx)
                      : lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1)
                                                       : "error";
    char full[512];
    int len = snprintf(full, sizeof full, "%s", trace ? trace : msg);
    ltask *lt = task ? LT(W, task) : NULL;
    for (uint32_t s = lt ? lt->site : 0; s && len >= 0 && (size_t)len < sizeof full;
         s = weft_site_parent(W->sites, s))
      len += snprintf(full + len, sizeof full - (size_t)len, "\nspawned at %s",
                      weft_site_where(W->sites, s));
    if (W->desc.report)
      W->desc.report(W->desc.user, msg, full);
    else
      fprintf(stderr, "error: %s\n", full);
    lua_pop(L, 1);
  }
  W->in_report--;
}

void weft_report(weft_state *W, lua_State *L, int idx, weft_id task, const char *trace) {
  report(W, L, idx, task, trace, NULL);
}

/* ---- delivery ---- */

void weft_complete(weft_state *W, weft_rec r, lua_State *from, int idx, int n, int failed) {
  weft_id w = weft_rec_waiter(W->S, r);
  int slot = weft_rec_slot(W->S, r);
  ltask *lt = LT(W, w);
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
  } else if (lt->deliver) {
    lt->deliver(W, w, from, idx, n, slot, failed);
  }
  weft_rec_complete(W->S, r, failed);
}

void weft_complete_all(weft_state *W, weft_wlist *l, lua_State *from, int idx, int n, int failed) {
  weft_rec r;
  while ((r = weft_wlist_head(l)) != 0) weft_complete(W, r, from, idx, n, failed);
}

/* Timer completions from the scheduler: the elapsed seconds. */
void weft_timer_done(void *user, weft_id waiter, int slot, double elapsed) {
  weft_state *W = user;
  ltask *lt = LT(W, waiter);
  /* A deferred start or a preempted task takes no value from its timer. */
  if (lt->co && (!lt->started || lt->b.preempted)) return;
  if (lt->co) {
    lua_State *co = lt->co;
    if (!lua_checkstack(co, 1)) return;
    lua_pushnumber(co, elapsed);
    if (!lt->single) lua_replace(co, lt->base + slot);
  } else if (lt->deliver) {
    lua_State *L = W->L;
    if (!lua_checkstack(L, 1)) return;
    lua_pushnumber(L, elapsed);
    lt->deliver(W, waiter, L, lua_gettop(L), 1, slot, 0);
    lua_pop(L, 1);
  }
}

/* ---- finishing ---- */

/* Stores a finished task's outcome (L[idx], n values) in its handle and
   drops the anchor that kept the handle and thread alive. */
/* Packs the n values on the stack into {v1, ..., vn, n = n} (protected). */
static int l_pack(lua_State *L) {
  int n = lua_gettop(L);
  lua_createtable(L, n, 1);
  lua_insert(L, 1);
  for (int i = n; i >= 1; i--) lua_rawseti(L, 1, i);
  lua_pushinteger(L, n);
  lua_setfield(L, 1, "n");
  return 1;
}

static void settle(weft_state *W, lua_State *L, weft_id id, int final, int idx, int n) {
  idx = lua_absindex(L, idx);
  if (!lua_checkstack(L, n + 4)) n = n > 0 ? 1 : 0;
  weft_push_task(W, L, id);
  thandle *h = lua_touserdata(L, -1);
  if (h) {
    h->final = (uint8_t) final;
    if (n > 1) { /* several results need a table: out of memory keeps the first */
      lua_pushcfunction(L, l_pack);
      for (int i = 0; i < n; i++) lua_pushvalue(L, idx + i);
      if (lua_pcall(L, n, 1, 0) == LUA_OK) {
        h->packed = 1;
      } else {
        lua_pop(L, 1);
        lua_pushvalue(L, idx);
      }
    } else if (n == 1) {
      lua_pushvalue(L, idx);
    } else {
      lua_pushnil(L);
    }
    lua_setiuservalue(L, -2, 1);
  }
  lua_pop(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_tasks);
  lua_pushboolean(L, 0); /* the slot keeps a value: reusing it never allocates */
  lua_rawseti(L, -2, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  lua_pop(L, 1);
}

static int is_cancel_error(weft_state *W, lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
  int eq = lua_rawequal(L, idx, -1);
  lua_pop(L, 1);
  return eq;
}

/* Closes a suspended or dead thread's pending <close> variables with the
   thread marked as the running task. A cleanup error other than the
   thread's own error (L[orig], 0: none) is reported once. */
static void close_thread(weft_state *W, lua_State *L, weft_id id, lua_State *co, int orig) {
  weft_id prev = W->cur;
  lua_State *prevL = W->curL;
  ltask *prevlt = W->curlt;
  W->cur = id;
  W->curL = co;
  W->curlt = LT(W, id);
  weft_budget saved;
  weft_stretch cleanup = {0};
  weft_budget_enter(W, &saved, &cleanup, co, "cleanup ran too long",
                    (int32_t)W->desc.instr_budget, 0);
  weft_budget_arm_home(W, co, 0);
  int st = LUA_OK;
  if (W->close_depth < MAX_CLOSE_DEPTH) {
    W->close_depth++;
    st = lua_resetthread(co);
    W->close_depth--;
  } else { /* cleanups cancelling tasks whose cleanups cancel...: stop */
    lua_pushliteral(co, "cleanups nested too deep: this task's cleanups were skipped");
    lua_xmove(co, L, 1);
    weft_report(W, L, -1, id, NULL);
    lua_pop(L, 1);
  }
  weft_budget_leave(W, &saved);
  W->cur = prev;
  W->curL = prevL;
  W->curlt = prevlt;
  if (st != LUA_OK && lua_checkstack(L, 4)) {
    lua_xmove(co, L, 1);
    if (!orig || !lua_rawequal(L, -1, orig)) report(W, L, -1, id, NULL, co);
    lua_pop(L, 1);
  }
  lua_settop(co, 0);
}

/* Finished threads are kept (up to THREAD_POOL) and reused by the next
   spawn: a spawn then allocates no thread, and the collector has fewer
   to free. A thread is only kept when it is clean (status OK, empty) and
   no script ever held it (coroutine.running): a thread a script has seen
   keeps its identity, and reads as a dead coroutine once its task ends. */
#define THREAD_POOL 1024

static void recycle(weft_state *W, lua_State *L, lua_State *co, int seen) {
  *(weft_id *)lua_getextraspace(co) = 0; /* a plain (dead) coroutine from now on */
  if (seen || W->nthreads >= THREAD_POOL || lua_status(co) != LUA_OK || lua_gettop(co) != 0 ||
      !lua_checkstack(L, 2))
    return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_threads);
  lua_pushthread(co);
  lua_xmove(co, L, 1);
  lua_rawseti(L, -2, ++W->nthreads);
  lua_pop(L, 1);
}

/* Pushes a thread for a new task: a recycled one or a new one. */
static lua_State *take_thread(weft_state *W, lua_State *L) {
  if (W->nthreads == 0) return lua_newthread(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_threads);
  lua_rawgeti(L, -1, W->nthreads);
  lua_pushnil(L);
  lua_rawseti(L, -3, W->nthreads--);
  lua_remove(L, -2);
  return lua_tothread(L, -1);
}

static void finish_ok(weft_state *W, weft_id id, ltask *lt, int nres) {
  lua_State *co = lt->co;
  int idx = lua_gettop(co) - nres + 1;
  lua_checkstack(co, 4);
  weft_complete_all(W, weft_task_waiters(W->S, id), co, idx, nres, 0);
  settle(W, co, id, WEFT_TASK_DONE, idx, nres);
  lt->co = NULL;
  lua_settop(co, 0);
  weft_task_finish(W->S, id, WEFT_TASK_DONE);
  recycle(W, W->curL ? W->curL : W->L, co, lt->seen);
}

/* Protected: pushes "file:line: not enough memory" for the innermost
   line of Lua running in the thread (light userdata at 1), as a script's
   own errors read. */
static int l_memory_where(lua_State *L) {
  lua_State *co = lua_touserdata(L, 1);
  lua_Debug ar;
  for (int level = 0; lua_getstack(co, level, &ar); level++)
    if (lua_getinfo(co, "Sl", &ar) && ar.currentline > 0)
      return lua_pushfstring(L, "%s:%d: not enough memory", ar.short_src, ar.currentline), 1;
  return lua_pushliteral(L, "not enough memory"), 1;
}

/* A task's body raised: report it (unless it is a cancellation passing
   through), cancel its children, close its pending <close> variables,
   fail its waiters. The work happens on the resumer's stack `L`. */
static void finish_error(weft_state *W, weft_id id, ltask *lt, lua_State *L) {
  lua_State *co = lt->co;
  lua_checkstack(L, 8);
  lua_pushvalue(co, -1);
  lua_xmove(co, L, 1);
  int orig = lua_gettop(L); /* as raised: close_thread knows it by it */
  if (lua_type(L, orig) == LUA_TSTRING && strcmp(lua_tostring(L, orig), "not enough memory") == 0) {
    lua_pushcfunction(L, l_memory_where); /* Lua's own message has no line */
    lua_pushlightuserdata(L, co);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) lua_copy(L, orig, -1);
  } else {
    lua_pushvalue(L, orig);
  }
  int e = lua_gettop(L);
  int cancelled = is_cancel_error(W, L, e);
  if (!cancelled) report(W, L, e, id, NULL, co);
  weft_task_cancel_children(W->S, id); /* children first */
  close_thread(W, L, id, co, orig);
  weft_complete_all(W, weft_task_waiters(W->S, id), L, e, 1, 1);
  settle(W, L, id, cancelled ? WEFT_TASK_CANCELLED : WEFT_TASK_FAILED, e, 1);
  lt->co = NULL;
  lua_settop(L, orig - 1);
  int keep_out = lt->b.killed || lt->seen;
  weft_task_finish(W->S, id, cancelled ? WEFT_TASK_CANCELLED : WEFT_TASK_FAILED);
  /* Not a killed task's thread: the kill left the hook's error unwinding
     past every pcall, and Lua then keeps hooks off on that thread, so the
     next task on it would run without a budget. */
  recycle(W, L, co, keep_out);
}

/* Resumes a task's thread once and handles how it stopped. */
static void resume_task(weft_state *W, weft_id id, ltask *lt, int nargs) {
  lua_State *co = lt->co;
  weft_id prev = W->cur;
  lua_State *prevL = W->curL;
  ltask *prevlt = W->curlt;
  W->cur = id;
  W->curL = co;
  W->curlt = lt;
  weft_budget saved;
  weft_budget_enter(W, &saved, &lt->b, co, "script ran too long without waiting",
                    (int32_t)W->desc.instr_budget, 1);
  lt->b.preempted = 0;
  lt->chrecv = 0; /* a value handed over is now the task's */
  if (lt->fast) {
    lt->fast = 0;
    if (lua_checkstack(co, 1)) {
      lua_pushnumber(co, weft_task_clock(W->S, id, lt->fast_real) - lt->wstart);
      nargs = 1;
    }
  }
  if (!lt->hooked || lt->b.killed) { /* armed once per task (see budget.c) */
    weft_budget_arm_home(W, co, lt->b.killed);
    lt->hooked = 1;
  }
  int nres = 0;
  int st = lua_resume(co, prevL, nargs, &nres);
  weft_budget_leave(W, &saved);
  W->cur = prev;
  W->curL = prevL;
  W->curlt = prevlt;
  lt = LT(W, id);
  if (!lt || !lt->co) return; /* cancelled meanwhile */
  if (st == LUA_YIELD) {
    lua_pop(co, nres);
    if (lt->b.preempted) { /* over budget: go on next frame */
      weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
      weft_wait_sleep(W->S, id, 0, 0, 0);
      weft_wait_commit(W->S, id);
    }
  } else if (st == LUA_OK) {
    finish_ok(W, id, lt, nres);
  } else {
    finish_error(W, id, lt, prevL);
  }
}

static void lt_resume(weft_sched *S, weft_id id, void *ud) {
  weft_state *W = weft_sched_user(S);
  ltask *lt = ud;
  if (!lt->co) return;
  int nargs = 0;
  if (!lt->started) {
    lt->started = 1;
    nargs = lt->nargs;
  }
  resume_task(W, id, lt, nargs);
}

/* Unwinds a cancelled task: its <close> variables run (errors reported),
   its waiters get the cancellation error, its handle records it. */
static void lt_cancel(weft_sched *S, weft_id id, void *ud) {
  weft_state *W = weft_sched_user(S);
  ltask *lt = ud;
  lua_State *L = W->curL ? W->curL : W->L;
  lua_checkstack(L, 8);
  weft_drop_sender(W, L, lt);
  weft_return_value(W, L, lt);
  lua_State *co = lt->co;
  if (co) close_thread(W, L, id, co, 0);
  lt = LT(W, id);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
  weft_complete_all(W, weft_task_waiters(S, id), L, lua_gettop(L), 1, 1);
  if (lt->co) settle(W, L, id, WEFT_TASK_CANCELLED, lua_gettop(L), 1);
  lua_pop(L, 1);
  lt->co = NULL;
  if (co) recycle(W, L, co, lt->seen || lt->b.killed);
  if (lt->ref != LUA_NOREF && lt->ref != 0) {
    luaL_unref(L, LUA_REGISTRYINDEX, lt->ref);
    lt->ref = LUA_NOREF;
  }
}

/* ---- creating and running ---- */

/* t[k] = v for (t, k, v) at 1..3, run protected by weft_new_task. */
static int l_seti(lua_State *L) {
  lua_rawset(L, 1);
  return 0;
}

static uint32_t spawn_site(weft_state *W, lua_State *L, uint32_t parent_site) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar)) break;
    if (ar.currentline < 0 || strcmp(ar.source, WEFT_PRELUDE_CHUNK) == 0) continue;
    return weft_site_intern(W->sites, ar.source, ar.short_src, ar.currentline, parent_site);
  }
  return parent_site;
}

uint32_t weft_caller_site(weft_state *W, lua_State *L) {
  return spawn_site(W, L, W->cur ? LT(W, W->cur)->site : 0);
}

void weft_task_set_site(weft_state *W, lua_State *L, int hidx, uint32_t site) {
  thandle *h = lua_touserdata(L, hidx);
  ltask *lt = LT(W, h->id);
  if (lt) lt->site = site;
  h->site = site;
}

weft_id weft_new_task(weft_state *W, lua_State *L, int fidx, int nargs, weft_id g, weft_id parent) {
  fidx = lua_absindex(L, fidx);
  if (lua_type(L, fidx) != LUA_TFUNCTION && luaL_getmetafield(L, fidx, "__call") == LUA_TNIL)
    luaL_typeerror(L, fidx, "function");
  if (lua_type(L, fidx) != LUA_TFUNCTION) lua_pop(L, 1);
  luaL_checkstack(L, nargs + 8, "too many arguments");
  lua_State *co = take_thread(W, L);
  thandle *h = lua_newuserdatauv(L, sizeof *h, 2);
  memset(h, 0, sizeof *h);
  weft_set_meta(L, W->ref_task_mt);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_tasks); /* reserve the table before the task */
  if (!lua_checkstack(co, nargs + 8)) luaL_error(L, "not enough memory");
  if (!g) g = W->cur ? weft_task_group(W->S, W->cur) : 0;
  weft_id id;
  ltask *lt;
  int rc = weft_task_create(W->S, g, parent, &lua_task_class, &id, (void **)&lt);
  if (rc == WEFT_ELIMIT) luaL_error(L, "too many tasks (limit %d)", (int)W->desc.max_tasks);
  if (rc == WEFT_ENOMEM) luaL_error(L, "not enough memory");
  if (rc != WEFT_OK) luaL_error(L, "cannot create task: %s", weft_strerror(rc));
  h->id = id;
  /* T[index + 1] = handle. A slot used before holds false (see settle),
     so overwriting it cannot allocate; a new one may make the table grow:
     protected, and on failure the new task is taken back before the error
     is raised. */
  lua_Integer slot = (lua_Integer)WEFT_ID_INDEX(id) + 1;
  if (lua_rawgeti(L, -1, slot) != LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, slot);
  } else {
    lua_pop(L, 1);
    lua_pushcfunction(L, l_seti);
    lua_pushvalue(L, -2);
    lua_pushinteger(L, slot);
    lua_pushvalue(L, -5);
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
      weft_task_finish(W->S, id, WEFT_TASK_CANCELLED);
      lua_error(L);
    }
  }
  lua_pop(L, 1);
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1); /* the handle anchors the thread */
  *(weft_id *)lua_getextraspace(co) = id;
  uint32_t psite = parent ? LT(W, parent)->site : 0;
  lt->site = spawn_site(W, L, psite);
  h->site = lt->site;
  lt->ref = LUA_NOREF;
  lt->nargs = nargs;
  lua_pushvalue(L, fidx);
  lua_xmove(L, co, 1);
  for (int i = 1; i <= nargs; i++) {
    lua_pushvalue(L, fidx + i);
    lua_xmove(L, co, 1);
  }
  lt->co = co;
  lua_remove(L, -2); /* the thread; the handle stays on top */
  return id;
}

void weft_discard_task(weft_state *W, lua_State *L, weft_id id) {
  ltask *lt = LT(W, id);
  if (!lt) return;
  if (lt->co && lua_checkstack(L, 4)) { /* never ran: nothing to unwind */
    weft_push_task(W, L, id);
    thandle *h = lua_touserdata(L, -1);
    if (h) h->final = WEFT_TASK_CANCELLED;
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_tasks);
    lua_pushboolean(L, 0);
    lua_rawseti(L, -2, (lua_Integer)WEFT_ID_INDEX(id) + 1); /* an existing key: no allocation */
    lua_pop(L, 1);
  }
  lt->co = NULL;
  weft_task_finish(W->S, id, WEFT_TASK_CANCELLED);
}

void weft_run_now(weft_state *W, weft_id id) {
  ltask *lt = LT(W, id);
  if (!lt || !lt->co) return;
  if (weft_group_paused(W->S, weft_task_group(W->S, id))) {
    weft_task_wake(W->S, id); /* runs when its group resumes */
    return;
  }
  weft_task_enter(W->S, id);
  lt->started = 1;
  W->run_depth++;
  resume_task(W, id, lt, lt->nargs);
  W->run_depth--;
  weft_task_leave(W->S, id);
  weft_sched_flush_cancels(W->S);
}

/* After a nested run or a cancel: a task whose cancel was put off because
   it was running yields now and is unwound by its resumer. */
void weft_yield_if_doomed(weft_state *W, lua_State *L) {
  if (W->cur && weft_task_doomed(W->S, W->cur) && weft_thread_task(L) == W->cur &&
      lua_isyieldable(L))
    lua_yield(L, 0);
}

static int spawn_in(lua_State *L, int fidx, weft_id g, weft_id parent) {
  weft_state *W = weft_get(L);
  if (W->run_depth >= MAX_RUN_DEPTH)
    return luaL_error(L, "tasks started inside each other too deep (over %d): use defer",
                      MAX_RUN_DEPTH);
  int nargs = lua_gettop(L) - fidx;
  weft_id id = weft_new_task(W, L, fidx, nargs, g, parent);
  weft_run_now(W, id);
  if (W->cur && weft_task_doomed(W->S, W->cur)) {
    lua_settop(L, 0);
    weft_yield_if_doomed(W, L);
  }
  return 1;
}

static int l_spawn(lua_State *L) {
  weft_state *W = weft_get(L);
  luaL_checkany(L, 1);
  return spawn_in(L, 1, 0, W->cur);
}

static int l_defer(lua_State *L) {
  weft_state *W = weft_get(L);
  luaL_checkany(L, 1);
  int nargs = lua_gettop(L) - 1;
  weft_id id = weft_new_task(W, L, 1, nargs, 0, W->cur);
  ltask *lt = LT(W, id);
  lt->single = 1;
  weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
  if (weft_wait_sleep(W->S, id, 0, 0, 0) != WEFT_OK) {
    weft_task_cancel(W->S, id);
    return luaL_error(L, "not enough memory");
  }
  weft_wait_commit(W->S, id);
  return 1;
}

/* ---- waiting ---- */

static int wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  weft_state *W = weft_get(L);
  ltask *lt = W->curlt; /* the resumed task is the current one */
  if (lt->raise) {
    lt->raise = 0;
    return lua_error(L);
  }
  return lua_gettop(L) - lt->base + 1;
}

static weft_id wait_task_of(weft_state *W, lua_State *L, const char *what) {
  weft_id id = weft_thread_task(L);
  if (!id || id != W->cur) luaL_error(L, "%s can only be called from a task", what);
  if (!lua_isyieldable(L)) {
    if (W->in_cleanup)
      luaL_error(L, "%s cannot wait in a cleanup (finally runs while its task ends)", what);
    if (W->loading_modules)
      luaL_error(L, "%s cannot wait while a module loads (wait inside its functions)", what);
    luaL_error(L, "%s cannot wait here (inside a metamethod or C function)", what);
  }
  return id;
}

static double check_seconds(lua_State *L, int idx) {
  double s = lua_tonumber(L, idx);
  if (isnan(s)) luaL_argerror(L, idx, "seconds must be a number, got NaN");
  return s;
}

/* Adds one element to the wait. Returns 1 when it is already done (its
   value(s) pushed), -1 when it already failed (error pushed), 0 when a
   record was added. */
static int add_element(weft_state *W, lua_State *L, weft_id id, int idx, int slot, int one,
                       int argn) {
  int t = lua_type(L, idx);
  if (t == LUA_TNIL || t == LUA_TNONE || t == LUA_TNUMBER) {
    double s = 0;
    if (t == LUA_TNUMBER) {
      s = lua_tonumber(L, idx);
      if (isnan(s)) {
        weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
        luaL_argerror(L, argn, "cannot wait for NaN seconds");
      }
    }
    if (weft_wait_sleep(W->S, id, slot, s, 0) != WEFT_OK) {
      weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
      luaL_error(L, "not enough memory");
    }
    return 0;
  }
  if (t == LUA_TTABLE && !weft_waitable_of(L, idx)) { /* a nested list waits like all{...} */
    weft_push_all(W, L, idx);
    lua_replace(L, idx);
  }
  const weft_waitable *wt = weft_waitable_of(L, idx);
  if (!wt) {
    weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
    return luaL_argerror(L, argn, lua_pushfstring(L, "cannot wait on a %s", luaL_typename(L, idx)));
  }
  weft_wlist *list = NULL;
  int r = wt->poll(W, L, idx, one, &list);
  if (r != 0) return r;
  ltask *lt = LT(W, id);
  lt->wwhat = wt;
  lt->wptr = lua_touserdata(L, idx);
  lt->wobj = *(weft_id *)lt->wptr; /* every handle is at least 8 bytes */
  if (list == weft_task_waiters(W->S, id)) {
    weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
    luaL_argerror(L, argn, "a task cannot wait for itself");
  }
  if (weft_wait_on(W->S, id, slot, list) != WEFT_OK) {
    weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
    luaL_error(L, "not enough memory");
  }
  return 0;
}

static int wait_list(weft_state *W, lua_State *L, weft_id id, ltask *lt) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  if (n < 0 || n > MAX_LIST) return luaL_argerror(L, 1, "list too long");
  luaL_checkstack(L, (int)n + 8, "list too long");
  int base = lua_gettop(L) + 1;
  for (lua_Integer i = 0; i < n; i++) lua_pushnil(L);
  weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
  int added = 0;
  for (lua_Integer i = 0; i < n; i++) {
    int top = lua_gettop(L);
    lua_rawgeti(L, 1, i + 1);
    int r = add_element(W, L, id, top + 1, (int)i, 1, 1);
    if (r < 0) {
      weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
      return lua_error(L);
    }
    if (r > 0)
      lua_copy(L, top + 2, base + (int)i);
    else
      added++;
    lua_settop(L, top);
  }
  weft_task_waited(lt);
  if (!added) return (int)n;
  lt->single = 0;
  lt->base = base;
  weft_wait_commit(W->S, id);
  return lua_yieldk(L, 0, 0, wait_k);
}

/* wait(x): see the design's table of what x may be. */
int weft_l_wait(lua_State *L) {
  weft_state *W = weft_get(L);
  weft_id id = weft_thread_task(L);
  /* Fast path, the hot one: a task sleeping on a number or to next frame.
     A plain yield: the resumer passes the elapsed time as wait's result. */
  int ty = lua_type(L, 1);
  if (id && id == W->cur && lua_gettop(L) <= 1 && (ty == LUA_TNUMBER || ty <= LUA_TNIL) &&
      lua_isyieldable(L)) {
    double s = ty == LUA_TNUMBER ? lua_tonumber(L, 1) : 0;
    if (s == s) {
      ltask *lt = W->curlt;
      weft_task_waited(lt);
      lt->wwhat = NULL;
      if (weft_wait_sleep_only(W->S, id, s, 0, &lt->wstart) != WEFT_OK)
        return luaL_error(L, "not enough memory");
      lt->fast = 1;
      lt->fast_real = 0;
      return lua_yield(L, 0);
    }
  }
  id = wait_task_of(W, L, "wait");
  ltask *lt = LT(W, id);
  lua_settop(L, 1);
  lt->wwhat = NULL;
  if (lua_type(L, 1) == LUA_TTABLE && !weft_waitable_of(L, 1)) return wait_list(W, L, id, lt);
  weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
  int r = add_element(W, L, id, 1, 0, 0, 1);
  weft_task_waited(lt);
  if (r < 0) {
    weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
    return lua_error(L);
  }
  if (r > 0) return lua_gettop(L) - 1;
  lt->single = 1;
  lt->base = lua_gettop(L) + 1;
  weft_wait_commit(W->S, id);
  return lua_yieldk(L, 0, 0, wait_k);
}

static int l_wait_realtime(lua_State *L) {
  weft_state *W = weft_get(L);
  weft_id id = wait_task_of(W, L, "wait_realtime");
  double s = luaL_checknumber(L, 1);
  check_seconds(L, 1);
  ltask *lt = LT(W, id);
  lua_settop(L, 1);
  weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
  if (weft_wait_sleep(W->S, id, 0, s, 1) != WEFT_OK) return luaL_error(L, "not enough memory");
  weft_task_waited(lt);
  lt->single = 1;
  lt->base = lua_gettop(L) + 1;
  weft_wait_commit(W->S, id);
  return lua_yieldk(L, 0, 0, wait_k);
}

/* ---- task handles ---- */

static const char *status_name(weft_state *W, thandle *h) {
  switch (h->final) {
  case WEFT_TASK_DONE:
    return "done";
  case WEFT_TASK_FAILED:
    return "failed";
  case WEFT_TASK_CANCELLED:
    return "cancelled";
  default:
    return (h->id == W->cur) ? "running" : "waiting";
  }
}

/* Task handles can be waited on: their results, or their error. */
static int poll_task(weft_state *W, lua_State *L, int idx, int one, weft_wlist **list) {
  thandle *h = lua_touserdata(L, idx);
  if (!h->final) {
    *list = weft_task_waiters(W->S, h->id);
    return *list ? 0 : 1;
  }
  lua_getiuservalue(L, idx, 1);
  if (h->final != WEFT_TASK_DONE) return -1;
  if (!h->packed) {
    if (lua_isnil(L, -1) && !one) {
      lua_pop(L, 1);
      return 1;
    }
    return 1;
  }
  int t = lua_gettop(L);
  lua_getfield(L, t, "n");
  int n = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (one) n = n > 0 ? 1 : 0;
  luaL_checkstack(L, n, "too many results");
  for (int i = 1; i <= n; i++) lua_rawgeti(L, t, i);
  lua_remove(L, t);
  if (one && n == 0) lua_pushnil(L);
  return 1;
}

static void task_name(weft_state *W, lua_State *L, weft_id id, const void *ptr) {
  (void)ptr;
  weft_push_task(W, L, id);
  if (!lua_isnil(L, -1)) {
    lua_getfield(L, -1, "name");
    lua_remove(L, -2);
  }
}

static const weft_waitable task_waitable = {poll_task, "task", task_name};

static int l_task_cancel(lua_State *L) {
  weft_state *W = weft_get(L);
  thandle *h = check_task(L, 1);
  if (h->final) return 0;
  weft_task_cancel(W->S, h->id);
  weft_yield_if_doomed(W, L); /* a cleanup may have cancelled the caller */
  return 0;
}

static int l_task_index(lua_State *L) {
  weft_state *W = weft_get(L);
  thandle *h = check_task(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "status") == 0) {
    lua_pushstring(L, status_name(W, h));
  } else if (strcmp(k, "name") == 0) {
    if (lua_getiuservalue(L, 1, 2) == LUA_TNIL)
      lua_pushstring(L, weft_site_where(W->sites, h->site));
  } else if (strcmp(k, "cancel") == 0) {
    lua_pushcfunction(L, l_task_cancel);
  } else if (strcmp(k, "group") == 0) {
    if (h->final)
      lua_pushnil(L);
    else
      weft_push_group(W, L, weft_task_group(W->S, h->id));
  } else if (strcmp(k, "error") == 0) {
    if (h->final == WEFT_TASK_FAILED || h->final == WEFT_TASK_CANCELLED)
      lua_getiuservalue(L, 1, 1);
    else
      lua_pushnil(L);
  } else {
    lua_pushnil(L);
  }
  return 1;
}

static int l_task_newindex(lua_State *L) {
  check_task(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "name") != 0) return luaL_error(L, "task field '%s' is read-only", k);
  if (!lua_isnil(L, 3)) luaL_checktype(L, 3, LUA_TSTRING);
  lua_settop(L, 3);
  lua_setiuservalue(L, 1, 2);
  ((thandle *)lua_touserdata(L, 1))->named = !lua_isnil(L, 3);
  return 0;
}

static int l_task_tostring(lua_State *L) {
  weft_state *W = weft_get(L);
  thandle *h = check_task(L, 1);
  lua_getfield(L, 1, "name");
  lua_pushfstring(L, "task %s (%s)", lua_tostring(L, -1), status_name(W, h));
  return 1;
}

static int l_current(lua_State *L) {
  weft_state *W = weft_get(L);
  weft_push_task(W, L, W->cur);
  return 1;
}

/* ---- groups ---- */

static ghandle *check_group(lua_State *L, int idx) {
  ghandle *g = luaL_checkudata(L, idx, WEFT_GROUP_MT);
  weft_state *W = weft_get(L);
  if (g->id != weft_sched_root(W->S) && !weft_group_live(W->S, g->id))
    luaL_argerror(L, idx, "dead group");
  return g;
}

void weft_push_group(weft_state *W, lua_State *L, weft_id id) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_groups);
  lua_rawgeti(L, -1, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  ghandle *g = lua_touserdata(L, -1);
  if (g && g->id == id) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  g = lua_newuserdatauv(L, sizeof *g, 1);
  g->id = 0;
  luaL_setmetatable(L, WEFT_GROUP_MT);
  if (weft_group_retain(W->S, id) != WEFT_OK) {
    lua_pop(L, 2);
    lua_pushnil(L);
    return;
  }
  g->id = id;
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  lua_remove(L, -2);
}

static int l_group_gc(lua_State *L) {
  ghandle *g = lua_touserdata(L, 1);
  weft_state *W = weft_get(L);
  if (g->id && W->S) weft_group_release(W->S, g->id);
  g->id = 0;
  return 0;
}

static int l_group_new(lua_State *L) {
  weft_state *W = weft_get(L);
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  weft_id parent = W->cur ? weft_task_group(W->S, W->cur) : 0;
  if (lua_getfield(L, 1, "parent") != LUA_TNIL) {
    ghandle *p = luaL_testudata(L, 2, WEFT_GROUP_MT);
    if (!p || !weft_group_live(W->S, p->id))
      return luaL_error(L, "group: parent must be a live group");
    parent = p->id;
  }
  lua_pop(L, 1);
  double scale = 1.0;
  if (lua_getfield(L, 1, "time_scale") != LUA_TNIL) {
    if (!lua_isnumber(L, -1)) return luaL_error(L, "group: time_scale must be a number");
    scale = lua_tonumber(L, -1);
    if (!(scale >= 0 && scale <= WEFT_MAX_SCALE))
      return luaL_error(L, "group: time_scale must be between 0 and 1e6, got %f", scale);
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "name");
  if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
    return luaL_error(L, "group: name must be a string");
  weft_id g;
  ghandle *h = lua_newuserdatauv(L, sizeof *h, 1);
  h->id = 0;
  luaL_setmetatable(L, WEFT_GROUP_MT);
  if (weft_group_create(W->S, parent, &g) != WEFT_OK) return luaL_error(L, "cannot create group");
  h->id = g;
  weft_group_set_scale(W->S, g, scale);
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1); /* name */
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_groups);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)WEFT_ID_INDEX(g) + 1);
  lua_pop(L, 1);
  return 1;
}

static int l_group_spawn(lua_State *L) {
  ghandle *g = check_group(L, 1);
  luaL_checkany(L, 2);
  return spawn_in(L, 2, g->id, 0);
}

static int l_group_pause(lua_State *L) {
  weft_group_pause(weft_get(L)->S, check_group(L, 1)->id);
  return 0;
}

static int l_group_resume(lua_State *L) {
  weft_group_resume(weft_get(L)->S, check_group(L, 1)->id);
  return 0;
}

static int l_group_cancel(lua_State *L) {
  weft_state *W = weft_get(L);
  weft_group_cancel(W->S, check_group(L, 1)->id);
  weft_yield_if_doomed(W, L); /* the caller's group, or a cleanup cancelling it */
  return 0;
}

static int l_group_tasks(lua_State *L) {
  weft_state *W = weft_get(L);
  weft_id g = check_group(L, 1)->id;
  uint32_t n = weft_group_tasks(W->S, g, NULL, 0);
  lua_createtable(L, (int)n, 0);
  if (n == 0) return 1;
  weft_id *ids = lua_newuserdatauv(L, sizeof(weft_id) * n, 0);
  weft_group_tasks(W->S, g, ids, n);
  int k = 0;
  for (uint32_t i = 0; i < n; i++) {
    ltask *lt = LT(W, ids[i]);
    if (!lt || !lt->co) continue;
    weft_push_task(W, L, ids[i]);
    lua_rawseti(L, -3, ++k);
  }
  lua_pop(L, 1);
  return 1;
}

static int l_group_index(lua_State *L) {
  weft_state *W = weft_get(L);
  ghandle *gh = luaL_checkudata(L, 1, WEFT_GROUP_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "alive") == 0) {
    lua_pushboolean(L, gh->id == weft_sched_root(W->S) || weft_group_live(W->S, gh->id));
    return 1;
  }
  if (strcmp(k, "start") == 0) {
    lua_pushcfunction(L, weft_l_group_start);
    return 1;
  }
  ghandle *g = check_group(L, 1);
  static const luaL_Reg methods[] = {{"spawn", l_group_spawn},   {"pause", l_group_pause},
                                     {"resume", l_group_resume}, {"cancel", l_group_cancel},
                                     {"tasks", l_group_tasks},   {NULL, NULL}};
  for (const luaL_Reg *m = methods; m->name; m++)
    if (strcmp(k, m->name) == 0) {
      lua_pushcfunction(L, m->func);
      return 1;
    }
  if (strcmp(k, "time_scale") == 0)
    lua_pushnumber(L, weft_group_scale(W->S, g->id));
  else if (strcmp(k, "paused") == 0)
    lua_pushboolean(L, weft_group_paused(W->S, g->id));
  else if (strcmp(k, "now") == 0)
    lua_pushnumber(L, weft_group_now(W->S, g->id));
  else if (strcmp(k, "name") == 0)
    lua_getiuservalue(L, 1, 1);
  else if (strcmp(k, "parent") == 0) {
    weft_id p = weft_group_parent(W->S, g->id);
    if (p)
      weft_push_group(W, L, p);
    else
      lua_pushnil(L);
  } else
    lua_pushnil(L);
  return 1;
}

static int l_group_newindex(lua_State *L) {
  weft_state *W = weft_get(L);
  ghandle *g = check_group(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "time_scale") == 0) {
    double s = luaL_checknumber(L, 3);
    if (weft_group_set_scale(W->S, g->id, s) != WEFT_OK)
      return luaL_argerror(L, 3, "time_scale must be between 0 and 1e6");
  } else if (strcmp(k, "name") == 0) {
    if (!lua_isnil(L, 3)) luaL_checktype(L, 3, LUA_TSTRING);
    lua_settop(L, 3);
    lua_setiuservalue(L, 1, 1);
  } else {
    return luaL_error(L, "group field '%s' cannot be set", k);
  }
  return 0;
}

static int l_group_tostring(lua_State *L) {
  check_group(L, 1);
  lua_getiuservalue(L, 1, 1);
  lua_pushfstring(L, "group %s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
  return 1;
}

/* ---- time ---- */

static int l_now(lua_State *L) {
  lua_pushnumber(L, weft_sched_now(weft_get(L)->S));
  return 1;
}

static int l_group_clock(lua_State *L) {
  weft_state *W = weft_get(L);
  weft_id g = W->cur ? weft_task_group(W->S, W->cur) : 0;
  lua_pushnumber(L, weft_group_now(W->S, g));
  return 1;
}

static int l_realtime(lua_State *L) {
  lua_pushnumber(L, weft_sched_realtime(weft_get(L)->S));
  return 1;
}

static int l_frame(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)weft_sched_frame(weft_get(L)->S));
  return 1;
}

static int l_time_scale(lua_State *L) {
  weft_state *W = weft_get(L);
  weft_id root = weft_sched_root(W->S);
  if (!lua_isnoneornil(L, 1)) {
    double s = luaL_checknumber(L, 1);
    if (weft_group_set_scale(W->S, root, s) != WEFT_OK)
      return luaL_argerror(L, 1, "time scale must be between 0 and 1e6");
  }
  lua_pushnumber(L, weft_group_scale(W->S, root));
  return 1;
}

/* ---- errors and cancellation ---- */

static int l_is_cancelled(lua_State *L) {
  weft_state *W = weft_get(L);
  lua_pushboolean(L, is_cancel_error(W, L, 1));
  return 1;
}

static int l_on_error(lua_State *L) {
  weft_state *W = weft_get(L);
  if (!lua_isnil(L, 1)) luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  if (W->ref_on_error != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, W->ref_on_error);
  W->ref_on_error = lua_isnil(L, 1) ? LUA_NOREF : luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

/* finally(fn): a to-be-closed value whose close runs fn protected. */
static int l_finally_close(lua_State *L) {
  weft_state *W = weft_get(L);
  lua_getiuservalue(L, 1, 1);
  if (lua_isnil(L, -1)) return 0;
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1); /* runs once */
  int top = lua_gettop(L);
  lua_pushcfunction(L, weft_l_traceback_handler);
  lua_insert(L, top);
  W->in_cleanup++;
  int st = lua_pcall(L, 0, 0, top);
  W->in_cleanup--;
  if (st != LUA_OK) {
    if (lua_type(L, -1) == LUA_TTABLE) { /* the handler left {err, trace} */
      lua_rawgeti(L, -1, 1);
      lua_rawgeti(L, -2, 2);
      weft_report(W, L, -2, W->cur, lua_tostring(L, -1));
    } else { /* the handler itself could not run (out of memory) */
      weft_report(W, L, -1, W->cur, NULL);
    }
  }
  return 0;
}

static int l_finally(lua_State *L) {
  if (lua_type(L, 1) != LUA_TFUNCTION && luaL_getmetafield(L, 1, "__call") == LUA_TNIL)
    luaL_typeerror(L, 1, "function");
  lua_settop(L, 1);
  lua_newuserdatauv(L, 0, 1);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  if (luaL_newmetatable(L, "weft.finally")) {
    lua_pushcfunction(L, l_finally_close);
    lua_setfield(L, -2, "__close");
    lua_pushliteral(L, "finally");
    lua_setfield(L, -2, "__name");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
  }
  lua_setmetatable(L, -2);
  return 1;
}

/* Message handler: packs {err, traceback}. */
int weft_l_traceback_handler(lua_State *L) {
  lua_createtable(L, 2, 0);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, 1);
  const char *msg = weft_tostring(L, 1);
  luaL_traceback(L, L, msg, 1);
  lua_rawseti(L, -3, 2);
  lua_pop(L, 1);
  return 1;
}

/* ---- introspection ---- */

typedef struct snap {
  weft_state *W;
  lua_State *L;
  int n;
} snap;

static void where_suspended(lua_State *co, char *buf, size_t n) {
  lua_Debug ar;
  buf[0] = 0;
  for (int level = 0; co && lua_getstack(co, level, &ar); level++) {
    if (!lua_getinfo(co, "Sl", &ar)) break;
    if (ar.currentline >= 0 && strcmp(ar.source, WEFT_PRELUDE_CHUNK) != 0) {
      snprintf(buf, n, "%s:%d", ar.short_src, ar.currentline);
      return;
    }
  }
}

static void snap_one(void *ud, weft_id id) {
  snap *sp = ud;
  weft_state *W = sp->W;
  lua_State *L = sp->L;
  ltask *lt = LT(W, id);
  if (!lt || !lt->co) return;
  weft_push_task(W, L, id);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  int h = lua_gettop(L);
  lua_createtable(L, 0, 9);
  lua_pushinteger(L, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  lua_setfield(L, -2, "id");
  lua_pushvalue(L, h);
  lua_setfield(L, -2, "task");
  lua_getfield(L, h, "name");
  lua_setfield(L, -2, "name");
  lua_getfield(L, h, "status");
  lua_setfield(L, -2, "status");
  if (weft_push_who(W, L, id)) lua_setfield(L, -2, "who");
  weft_push_group(W, L, weft_task_group(W->S, id));
  lua_getiuservalue(L, -1, 1);
  lua_setfield(L, -3, "group");
  lua_pop(L, 1);
  char buf[256];
  weft_wait_describe(W->S, id, buf, sizeof buf);
  if (lt->wwhat && strcmp(buf, "wait") == 0) {
    lua_pushstring(L, lt->wwhat->what);
    if (lt->wwhat->name) {
      lt->wwhat->name(W, L, lt->wobj, lt->wptr);
      if (lua_isstring(L, -1)) {
        lua_pushliteral(L, " ");
        lua_insert(L, -2);
        lua_concat(L, 3);
      } else {
        lua_pop(L, 1);
      }
    }
  } else {
    lua_pushstring(L, buf);
  }
  lua_setfield(L, -2, "waiting");
  where_suspended(lt->co, buf, sizeof buf);
  lua_pushstring(L, buf);
  lua_setfield(L, -2, "where");
  lua_pushstring(L, weft_site_where(W->sites, lt->site));
  lua_setfield(L, -2, "spawned");
  lua_pushinteger(L, weft_task_resumes(W->S, id));
  lua_setfield(L, -2, "resumes");
  lua_rawseti(L, h - 1, ++sp->n);
  lua_settop(L, h - 1);
}

static int l_tasks(lua_State *L) {
  weft_state *W = weft_get(L);
  lua_newtable(L);
  luaL_checkstack(L, 16, NULL);
  snap sp = {W, L, 0};
  weft_sched_each_task(W->S, snap_one, &sp);
  return 1;
}

/* ---- registration ---- */

int weft_new_meta(lua_State *L, const char *name, lua_CFunction index, lua_CFunction tostring,
                  lua_CFunction gc, const weft_waitable *w, const char *short_name) {
  luaL_newmetatable(L, name);
  lua_pushcfunction(L, index);
  lua_setfield(L, -2, "__index");
  if (tostring) {
    lua_pushcfunction(L, tostring);
    lua_setfield(L, -2, "__tostring");
  }
  if (gc) {
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
  }
  if (w) {
    lua_pushlightuserdata(L, (void *)w);
    lua_setfield(L, -2, "__wait");
  }
  lua_pushstring(L, short_name);
  lua_setfield(L, -2, "__name");
  lua_pushboolean(L, 0); /* scripts cannot reach or change it */
  lua_setfield(L, -2, "__metatable");
  lua_pushvalue(L, -1);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

void weft_open_tasks(weft_state *W, lua_State *L) {
  W->ref_task_mt =
      weft_new_meta(L, WEFT_TASK_MT, l_task_index, l_task_tostring, NULL, &task_waitable, "task");
  lua_pushcfunction(L, l_task_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pop(L, 1);
  weft_new_meta(L, WEFT_GROUP_MT, l_group_index, l_group_tostring, l_group_gc, NULL, "group");
  lua_pushcfunction(L, l_group_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pop(L, 1);

  /* the API table is at the top of L */
  static const luaL_Reg api[] = {{"wait", weft_l_wait},
                                 {"spawn", l_spawn},
                                 {"defer", l_defer},
                                 {"current", l_current},
                                 {"wait_realtime", l_wait_realtime},
                                 {"now", l_now},
                                 {"realtime", l_realtime},
                                 {"frame", l_frame},
                                 {"time_scale", l_time_scale},
                                 {"group", l_group_new},
                                 {"finally", l_finally},
                                 {NULL, NULL}};
  luaL_setfuncs(L, api, 0);
  lua_getfield(L, -1, "weft");
  static const luaL_Reg weftlib[] = {{"is_cancelled", l_is_cancelled},
                                     {"on_error", l_on_error},
                                     {"tasks", l_tasks},
                                     {"_gnow", l_group_clock},
                                     {NULL, NULL}};
  luaL_setfuncs(L, weftlib, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
  lua_setfield(L, -2, "CANCELLED");
  weft_push_group(W, L, weft_sched_root(W->S));
  lua_pushliteral(L, "main");
  lua_setiuservalue(L, -2, 1);
  lua_setfield(L, -2, "root");
  lua_pop(L, 1);
  weft_open_coroutines(W, L, lua_gettop(L));
}
