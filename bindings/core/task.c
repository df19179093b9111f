/* Tasks as Lua threads: spawning, resuming, finishing and cancelling
   them, and their handles. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "task.h"
#include "../base/names.h"
#include "../accounts/handles.h"
#include "../accounts/budget.h"
#include "../base/chunks.h"
#include "../accounts/cost.h"
#include "../accounts/report.h"
#include "../base/sites.h"
#include "channels.h"
#include "wait.h"
#include "weft_luai.h"
/* Lua's internals (the Makefile's LUAI_SRC): a thread's state and the
   results its innermost call wants, read on every resume. */
#include "lstate.h"
#include "lgc.h"

static int lt_resume(weft_sched *S, weft_id id, void *ud, double slept);
static void lt_cancel(weft_sched *S, weft_id id, void *ud);
static void lt_warm(void *ud);
static const weft_task_class lua_task_class = {lt_resume, lt_cancel, lt_warm};

weft_id weft__new_task_handle(weft_state *W, lua_State *L, int fidx, int nargs, weft_id g,
                              weft_id parent) {
  fidx = lua_absindex(L, fidx);
  thandle *h = weft__handle_new(W, L, 2); /* first: a task is never left without it */
  weft_id id = weft__new_task(W, L, fidx, nargs, g, parent);
  if (!weft__handle_make(W, L, id, h)) {
    weft__discard_task(W, L, id);
    lua_error(L);
  }
  return id;
}

/* Unpins a task's handle (settle: the task ended). */
static void unpin(weft_state *W, lua_State *L, weft_id id, ltask *lt) {
  if (!lt->pinned) return;
  lt->pinned = 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_pinned);
  lua_pushboolean(L, 0); /* an existing key: no allocation */
  lua_rawseti(L, -2, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  lua_pop(L, 1);
}

static thandle *check_task(lua_State *L, int idx) { return luaL_checkudata(L, idx, WEFT_TASK_MT); }

/* ---- finishing ---- */

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

/* Pushes the outcome (L[idx], n values): nothing for none, the value for
   one, a table {v1, ..., vn, n = n} for several (*packed set; out of
   memory keeps the first). L has room for n + 4 values. */
static int push_outcome(lua_State *L, int idx, int n, uint8_t *packed) {
  if (n > 1) {
    lua_pushcfunction(L, l_pack);
    for (int i = 0; i < n; i++) lua_pushvalue(L, idx + i);
    if (lua_pcall(L, n, 1, 0) == LUA_OK) {
      *packed = 1;
    } else {
      lua_pop(L, 1);
      lua_pushvalue(L, idx);
    }
  } else if (n == 1) {
    lua_pushvalue(L, idx);
  }
  return n > 0;
}

/* Moves the value on top of L to W->spawns for the spawn at depth d. */
static void keep_aside(weft_state *W, lua_State *L, int d) {
  lua_xmove(L, W->spawns, 1); /* room is reserved (weft__open_tasks) */
  lua_replace(W->spawns, d + 1);
}

/* Stores a finished task's outcome (L[idx], n values) in its handle, if
   one is held, and unpins it. A task ending inside spawn keeps its
   handle, or without one its outcome, aside for spawn to return. */
static void settle(weft_state *W, lua_State *L, weft_id id, ltask *lt, int final, int idx, int n) {
  weft_spawning *sp = weft__spawning_of(W, id);
  idx = lua_absindex(L, idx);
  thandle *h = NULL;
  if (!sp || sp->made) {
    if (!lua_checkstack(L, n + 4)) n = n > 0 ? 1 : 0;
    h = weft__handle_if(W, L, id);
  }
  if (h) {
    h->final = (uint8_t) final;
    if (push_outcome(L, idx, n, &h->packed)) lua_setiuservalue(L, -2, 1);
    if (sp) {
      keep_aside(W, L, (int)(sp - W->spawning));
      sp->kept = sp->handle = 1;
    } else {
      lua_pop(L, 1);
    }
  } else if (sp) { /* no handle yet: spawn makes it */
    sp->final = (uint8_t) final;
    sp->site = weft__site_of(lt);
    if (n || final != WEFT_TASK_DONE) {
      if (!lua_checkstack(L, n + 4)) n = n > 0 ? 1 : 0;
      if (!push_outcome(L, idx, n, &sp->packed)) lua_pushnil(L);
      keep_aside(W, L, (int)(sp - W->spawning));
      sp->kept = 1;
    }
  }
  unpin(W, L, id, lt);
  weft__site_live(W->sites, weft__site_of(lt), -1, 0);
}

/* Who runs: the task, its thread and data, saved and set around every
   run of a task's code, restored after; and its stretch of budget. */
typedef struct running {
  weft_id cur;
  lua_State *curL;
  ltask *curlt;
  weft_budget bud; /* W->bud while it runs */
#ifdef WEFT_ASSERTS
  weft_id me; /* who was entered, to check on the way out */
  lua_State *meL;
#endif
} running;

static inline void who_enter(weft_state *W, running *saved, weft_id id, lua_State *co, ltask *lt) {
  saved->cur = W->cur;
  saved->curL = W->curL;
  saved->curlt = W->curlt;
  W->cur = id;
  W->curL = co;
  W->curlt = lt;
  WEFT_CHECKED(saved->me = id; saved->meL = co;)
}

static inline void who_leave(weft_state *W, const running *saved) {
  /* whatever ran inside restored who runs on its way out */
  WEFT_CHECKED(WEFT_ASSERT(W->cur == saved->me && W->curL == saved->meL);)
  W->cur = saved->cur;
  W->curL = saved->curL;
  W->curlt = saved->curlt;
}

static inline void run_enter(weft_state *W, running *saved, weft_id id, lua_State *co, ltask *lt,
                             weft_stretch *s, const char *msg, int kind) {
  who_enter(W, saved, id, co, lt);
  weft__budget_begin(W, &saved->bud, s, co, msg, W->task_limit, W->task_us, kind);
}

static inline void run_leave(weft_state *W, const running *saved) {
  weft__budget_leave(W, &saved->bud);
  who_leave(W, saved);
}

/* Closes a suspended or dead thread's pending <close> variables with the
   thread marked as the running task. A cleanup error other than the
   thread's own error (L[orig], 0: none) is reported once. */
static void close_thread(weft_state *W, lua_State *L, weft_id id, lua_State *co, int orig) {
  running saved;
  weft_stretch cleanup = {0};
  run_enter(W, &saved, id, co, LT(W, id), &cleanup, "cleanup ran too long", WEFT_STRETCH_PLAIN);
  weft__budget_arm_home(W, co, 0);
  int st = LUA_OK;
  if (W->close_depth < MAX_CLOSE_DEPTH) {
    W->close_depth++;
    st = lua_resetthread(co);
    W->close_depth--;
  } else { /* cleanups cancelling tasks whose cleanups cancel...: stop */
    lua_pushliteral(co, "cleanups nested too deep: this task's cleanups were skipped");
    lua_xmove(co, L, 1);
    weft__report(W, L, -1, id, NULL);
    lua_pop(L, 1);
  }
  run_leave(W, &saved);
  if (st != LUA_OK && lua_checkstack(L, 4)) {
    lua_xmove(co, L, 1);
    if (!orig || !lua_rawequal(L, -1, orig)) weft__report_thread(W, L, -1, id, NULL, co);
    lua_pop(L, 1);
  }
  lua_settop(co, 0);
}

/* A Lua task's thread is kept in its slot (ltask.co) and nowhere else:
   Lua's collector marks the threads of every live slot as roots (weft's
   edit of lgc.c, weft_luai.h), so a task costs no anchor in a Lua table.
   Up to WEFT_SPARE_THREADS (1,024) finished threads are kept for the next
   tasks, in W->spare (roots too), so a spawn after a task ended (the
   usual churn) allocates no thread: a thread is only kept when it is
   clean (status OK, empty) and no script ever held it
   (coroutine.running): a thread a script has seen keeps its identity,
   and reads as a dead coroutine once its task ends. A thread is always
   reachable from one of these, or from a Lua stack, whenever Lua may
   collect: a finished task's thread goes to the spares (or is let go)
   before its slot is freed. */

#define YOUNG_MIN 64 /* room kept in W->young */

/* The roots handler (weft_luai.h): every thread weft keeps for a state
   of its own allocator. As a cycle begins (an incremental cycle, or a
   generational major one), every live slot's; in the atomic step, only
   the threads made since the last one (W->young): the rest were marked
   as the cycle began, or, in a generational young collection, are old
   and not collected. A young thread stays listed, in generational mode,
   until it is old. As the anchor tables were, a slot's thread is read
   once a cycle. */
static void mark_roots(void *ud, void *(*alloc)(void *, void *, size_t, size_t), void *g,
                       weft__lua_mark mark) {
  if (alloc != weft__lua_alloc) return; /* another host's state */
  weft_state *W = ud;
  const global_State *gs = g;
  for (uint32_t i = 0; i < W->nspare; i++) mark(g, W->spare[i]);
  if (gs->gcstate == GCSatomic) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < W->nyoung; i++) {
      lua_State *th = W->young[i];
      mark(g, th);
      if (gs->gckind == KGC_GEN && !isold(th)) W->young[k++] = th;
    }
    W->nyoung = k;
    if (W->capyoung > YOUNG_MIN && k < W->capyoung / 4) { /* a burst of spawns is over */
      uint32_t cap = k * 2 > YOUNG_MIN ? k * 2 : YOUNG_MIN;
      lua_State **v = weft__mem_realloc(W, W->young, W->capyoung * sizeof *v, cap * sizeof *v);
      if (v) W->young = v, W->capyoung = cap;
    }
    return;
  }
  if (!W->S || W->loading) return; /* loading: the save's anchors hold them */
  uint32_t n = weft__sched_task_capacity(W->S);
  for (uint32_t i = 0; i < n; i++) {
    weft_id id = weft__sched_task_at(W->S, i);
    ltask *lt = id ? LT(W, id) : NULL;
    if (lt && lt->co) mark(g, lt->co);
  }
}

/* Room for one more young thread (0: out of memory). */
static int young_room(weft_state *W) {
  if (W->nyoung < W->capyoung) return 1;
  uint32_t cap = W->capyoung ? 2 * W->capyoung : YOUNG_MIN;
  lua_State **v = weft__mem_realloc(W, W->young, W->capyoung * sizeof *v, (size_t)cap * sizeof *v);
  if (!v) return 0;
  W->young = v;
  W->capyoung = cap;
  return 1;
}

int weft__threads_young(weft_state *W, lua_State *co) {
  if (!young_room(W)) return 0;
  W->young[W->nyoung++] = co;
  return 1;
}

void weft__threads_free(weft_state *W) {
  weft__mem_free(W, W->young, W->capyoung * sizeof *W->young);
  W->young = NULL;
  W->nyoung = W->capyoung = 0;
}

void weft__task_roots_init(void) { weft__lua_roots_handler(mark_roots); }

/* After task id (ended, its slot not yet freed) is done with its thread
   co: kept for the next task, or let go. */
static void recycle(weft_state *W, lua_State *co, int seen) {
  weft__thread_set_task(co, 0); /* a plain (dead) coroutine from now on */
  if (!seen && W->nspare < WEFT_SPARE_THREADS && lua_status(co) == LUA_OK && lua_gettop(co) == 0)
    W->spare[W->nspare++] = co;
}

/* Protected: a new thread, left on the stack. */
static int l_new_thread(lua_State *L) {
  lua_newthread(L);
  return 1;
}

/* The thread for new task id (its ltask lt), put in lt->co: a spare one,
   or a new one. Raises, the task taken back, when out of memory. */
static lua_State *take_thread(weft_state *W, lua_State *L, weft_id id, ltask *lt) {
  if (W->nspare) return lt->co = W->spare[--W->nspare];
  if (!young_room(W)) {
    weft__task_finish(W->S, id, WEFT_TASK_CANCELLED);
    luaL_error(L, "not enough memory");
  }
  lua_pushcfunction(L, l_new_thread);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    weft__task_finish(W->S, id, WEFT_TASK_CANCELLED);
    lua_error(L);
  }
  lt->co = lua_tothread(L, -1);
  W->young[W->nyoung++] = lt->co; /* until the collector's next atomic step */
  lua_pop(L, 1);
  return lt->co;
}

void weft__threads_anchor(weft_state *W, lua_State *L) {
  uint32_t n = weft__sched_task_capacity(W->S);
  lua_createtable(L, (int)((n + WEFT_POOL_CHUNK - 1) >> WEFT_POOL_CHUNK_SHIFT), 0);
  for (uint32_t i = 0; i < n; i++) {
    weft_id id = weft__sched_task_at(W->S, i);
    ltask *lt = id ? LT(W, id) : NULL;
    if (!lt || !lt->co) continue;
    lua_Integer c = (lua_Integer)(i >> WEFT_POOL_CHUNK_SHIFT) + 1;
    if (lua_rawgeti(L, -1, c) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_createtable(L, WEFT_POOL_CHUNK, 0);
      lua_pushvalue(L, -1);
      lua_rawseti(L, -3, c);
    }
    lua_pushthread(lt->co);
    lua_xmove(lt->co, L, 1);
    lua_rawseti(L, -2, (lua_Integer)(i & (WEFT_POOL_CHUNK - 1)) + 1);
    lua_pop(L, 1);
  }
  lua_rawseti(L, LUA_REGISTRYINDEX, W->ref_tasks);
}

void weft__threads_unanchor(weft_state *W, lua_State *L) {
  lua_pushboolean(L, 0); /* an existing key: no allocation */
  lua_rawseti(L, LUA_REGISTRYINDEX, W->ref_tasks);
}

static void finish_ok(weft_state *W, weft_id id, ltask *lt, int nres) {
  lua_State *co = lt->co;
  int top = lua_gettop(co), idx = top - nres + 1;
  weft_wlist *waiters = weft__task_listed(W->S, id);
  if (waiters && waiters->head) {
    lua_checkstack(co, 4);
    weft__complete_all(W, waiters, co, idx, nres, 0);
  }
  settle(W, co, id, lt, WEFT_TASK_DONE, idx, nres);
  lt->co = NULL;
  if (top) lua_settop(co, 0);
  recycle(W, co, lt->seen);
  weft__task_finish(W->S, id, WEFT_TASK_DONE);
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
  if (lua_type(L, orig) == LUA_TSTRING && strstr(lua_tostring(L, orig), "not enough memory"))
    weft__mem_died(W);
  if (lua_type(L, orig) == LUA_TSTRING && strcmp(lua_tostring(L, orig), "not enough memory") == 0) {
    lua_pushcfunction(L, l_memory_where); /* Lua's own message has no line */
    lua_pushlightuserdata(L, co);
    W->mem.in_report++; /* the hoard is still live: format in the headroom */
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) lua_copy(L, orig, -1);
    W->mem.in_report--;
  } else {
    lua_pushvalue(L, orig);
  }
  int e = lua_gettop(L);
  int cancelled = weft__is_cancel_error(W, L, e);
  if (!cancelled && W->on_task_error) W->on_task_error(W, id, co, L, e);
  if (!cancelled) weft__report_thread(W, L, e, id, NULL, co);
  weft__task_cancel_children(W->S, id); /* children first */
  close_thread(W, L, id, co, orig);
  weft__complete_all(W, weft__task_listed(W->S, id), L, e, 1, 1);
  settle(W, L, id, lt, cancelled ? WEFT_TASK_CANCELLED : WEFT_TASK_FAILED, e, 1);
  lt->co = NULL;
  lua_settop(L, orig - 1);
  /* Not a killed task's thread: the kill left the hook's error unwinding
     past every pcall, and Lua then keeps hooks off on that thread, so the
     next task on it would run without a budget. */
  recycle(W, co, lt->b.killed || lt->seen);
  weft__task_finish(W->S, id, cancelled ? WEFT_TASK_CANCELLED : WEFT_TASK_FAILED);
}

/* How a resume of task id ended, unless in wait's fast path; L is the
   resumer's thread. */
WEFT_NOINLINE static void resumed(weft_state *W, weft_id id, int st, int nres, lua_State *L) {
  ltask *lt = LT(W, id);
  if (!lt || !lt->co) return; /* cancelled meanwhile */
  if (st != LUA_YIELD && W->prof) weft__profile_ended(W, id);
  if (st == LUA_YIELD) {
    if (nres) lua_pop(lt->co, nres);
    if (lt->b.preempted) { /* over budget: go on next frame */
      weft__wait_begin(W->S, id, WEFT_WAIT_ALL);
      weft__wait_sleep(W->S, id, 0, 0, 0);
      weft__wait_commit(W->S, id);
    }
  } else if (st == LUA_OK) {
    finish_ok(W, id, lt, nres);
  } else {
    finish_error(W, id, lt, L);
  }
}

/* Before a task's first resume, or after a kill: arms its hook (once per
   task, see budget.c) and returns the first resume's argument count. */
WEFT_NOINLINE static int first_resume(weft_state *W, ltask *lt) {
  int nargs = 0;
  if (!lt->started) {
    lt->started = 1;
    nargs = lt->base;
  }
  if (!lt->hooked || lt->b.killed) {
    weft__budget_arm_home(W, lt->co, lt->b.killed);
    lt->hooked = 1;
  }
  return nargs;
}

/* Resumes a task's thread once (the first time with the arguments it was
   spawned with) and handles how it stopped; slept is the scheduler's
   weft__task_slept. Returns WEFT_RESUMED_NEXT when the task asked for the
   next frame in wait's fast path (the scheduler queues the sleep). */
static inline int resume_task(weft_state *W, weft_id id, ltask *lt, double slept) {
  lua_State *co = lt->co;
  int nargs = 0;
  /* a script task, its slot's; wait's next-frame ask was taken last time */
  WEFT_ASSERT(co && !lt->comb && LT(W, id) == lt && !lt->next);
  WEFT_ASSERT(!lt->fast || lt->started);
  if (__builtin_expect(!lt->started || !lt->hooked || lt->b.killed, 0)) nargs = first_resume(W, lt);
  running saved; /* after the arming: a stretch may begin stopped */
  who_enter(W, &saved, id, co, lt);
  ++*weft__thread_resumes(co, lt);
  const weft_budget *b = &saved.bud;
  if (W->bud == &W->bud_idle) /* the usual: a frame's task */
    b = weft__budget_begin_top(W, &lt->b, co);
  else
    weft__budget_begin(W, &saved.bud, &lt->b, co, WEFT_TASK_RUNAWAY, W->task_limit, W->task_us,
                       WEFT_STRETCH_TASK);
  lt->b.preempted = 0;
  if (lt->cold) weft__cold_if(W, id, lt)->chrecv = 0; /* a value handed over is now the task's */
  if (lt->fast) {
    /* wait's fast path yielded with nothing pushed in its C frame, which
       Lua gave LUA_MINSTACK free slots: room for the elapsed time, which
       is not made when the call's caller takes no result (`wait()` as a
       statement): the slot is a line of the thread's stack nothing else
       of the resume touches. */
    lt->fast = 0;
    if (co->ci->nresults != 0) { /* what the C function it yielded from is to return */
      lua_pushnumber(co, slept);
      nargs = 1;
    }
  }
  int nres = 0;
  weft_cost_mark cost;
  weft__cost_begin(W, &cost, &co->hookcount);
  int st = lua_resume(co, saved.curL, nargs, &nres);
  weft__cost_end(W, id, &cost);
  weft__budget_leave(W, b);
  who_leave(W, &saved);
  WEFT_ASSERT(!lt->fast || st == LUA_YIELD); /* the fast path yields at once */
  WEFT_ASSERT(!lt->next || lt->fast);
  /* Suspended in wait's fast path: alive (a running task is never freed
     under its own resume), and nothing to do but, for wait() and wait(0),
     the next frame's sleep the scheduler queues. */
  if (st == LUA_YIELD && lt->fast) {
    if (!lt->next) return WEFT_RESUMED;
    lt->next = 0;
    return WEFT_RESUMED_NEXT;
  }
  resumed(W, id, st, nres, saved.curL);
  return WEFT_RESUMED;
}

static int lt_resume(weft_sched *S, weft_id id, void *ud, double slept) {
  ltask *lt = ud;
  if (!lt->co) return WEFT_RESUMED;
  (void)S;
  return resume_task((weft_state *)G(lt->co)->ud, id, lt, slept); /* weft__sched_user(S) */
}

/* The next task's thread: the extra space and the lua_State after it
   (about 200 bytes in Lua 5.4), what its resume reads first. */
static void lt_warm(void *ud) {
  lua_State *co = ((ltask *)ud)->co;
  if (!co) return;
  const char *p = lua_getextraspace(co);
  for (int i = 0; i < 256; i += 64) WEFT_PREFETCH(p + i);
}

/* Unwinds a cancelled task: its <close> variables run (errors reported),
   its waiters get the cancellation error, its handle records it. */
static void lt_cancel(weft_sched *S, weft_id id, void *ud) {
  weft_state *W = weft__sched_user(S);
  ltask *lt = ud;
  lua_State *L = W->curL ? W->curL : W->L;
  lua_checkstack(L, 8);
  weft__channel_give_back(W, L, id, lt);
  lua_State *co = lt->co;
  if (co) close_thread(W, L, id, co, 0);
  lt = LT(W, id);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
  weft__complete_all(W, weft__task_listed(S, id), L, lua_gettop(L), 1, 1);
  if (lt->co) settle(W, L, id, lt, WEFT_TASK_CANCELLED, lua_gettop(L), 1);
  lua_pop(L, 1);
  lt->co = NULL;
  if (co) recycle(W, co, lt->seen || lt->b.killed);
}

/* ---- creating and running ---- */

/* Whether a chunk's source is a file of the scripts root's lib/: the
   game's helpers (the layout's scripts/lib/). */
static int in_lib(weft_state *W, const char *source) {
  size_t n = strlen(W->root);
  return source[0] == '@' && strncmp(source + 1, W->root, n) == 0 &&
         strncmp(source + 1 + n, "/lib/", 5) == 0;
}

/* Where a spawn is made, as the designer reads it: the innermost line of
   script outside weft's own chunks and outside the helpers of lib/ (a
   task util.helper or cinema.play spawns is spawned at the line that
   called them); a spawn made by lib/ alone (in a task whose function is
   a helper's) is where its spawner was spawned, else at lib/'s
   innermost line. */
static uint32_t spawn_site(weft_state *W, lua_State *L, uint32_t parent_site) {
  /* The usual spawn, from a line of script: the site its function's
     prototype keeps for that line and parent, which only a spawn of this
     kind made (lua_getinfo's line costs a walk of the line info). */
  unsigned pc = 0;
  unsigned *cache = weft__lua_caller_site(L, &pc);
  if (cache && cache[2] && cache[0] == pc + 1 && cache[1] == parent_site) return cache[2];
  lua_Debug ar;
  int helper = -1;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar)) break;
    if (ar.currentline < 0 || weft__chunk_embedded(ar.source)) continue;
    if (in_lib(W, ar.source)) {
      if (helper < 0) helper = level;
      continue;
    }
    uint32_t site =
        weft__site_intern(W->sites, ar.source, ar.short_src, ar.currentline, parent_site);
    if (cache && level == 1) cache[0] = pc + 1, cache[1] = parent_site, cache[2] = site;
    return site;
  }
  ltask *spawner = helper >= 0 && W->cur ? LT(W, W->cur) : NULL;
  if (spawner && weft__site_of(spawner))
    return weft__site_of(spawner); /* a g:spawn's too, no child of it */
  if (helper >= 0 && lua_getstack(L, helper, &ar) && lua_getinfo(L, "Sl", &ar))
    return weft__site_intern(W->sites, ar.source, ar.short_src, ar.currentline, parent_site);
  return parent_site;
}

uint32_t weft__caller_site(weft_state *W, lua_State *L) {
  return spawn_site(W, L, W->cur ? weft__site_of(LT(W, W->cur)) : 0);
}

void weft__task_set_site(weft_state *W, lua_State *L, weft_id id, uint32_t site) {
  ltask *lt = LT(W, id);
  if (!lt) return;
  if (lt->co) { /* its live count moves with it */
    weft__site_live(W->sites, weft__site_of(lt), -1, 0);
    weft__site_live(W->sites, site, 1, weft__sched_realtime(W->S));
  }
  weft__site_set(lt, site);
  if (lt->co && lua_checkstack(L, 2)) {
    thandle *h = weft__handle_if(W, L, id);
    if (h) {
      h->site = site;
      lua_pop(L, 1);
    }
  }
}

/* weft__new_task, giving the task's data in *out too. With move set, the
   function and its arguments are the top values of L and are moved to
   the task's thread instead of copied. */
static weft_id new_task(weft_state *W, lua_State *L, int fidx, int nargs, weft_id g, weft_id parent,
                        int move, ltask **out) {
  fidx = lua_absindex(L, fidx);
  if (lua_type(L, fidx) != LUA_TFUNCTION) {
    if (luaL_getmetafield(L, fidx, "__call") == LUA_TNIL) luaL_typeerror(L, fidx, "function");
    lua_pop(L, 1);
  }
  if (!move) luaL_checkstack(L, nargs + 8, "too many arguments");
  if (!g) g = W->cur ? weft__task_group(W->S, W->cur) : 0;
  if (!weft__mem_room(W))
    luaL_error(L, "not enough memory (the heap is near its limit of %d MB: no new task)",
               (int)(W->mem.limit >> 20));
  weft_id id;
  ltask *lt;
  int rc = weft__task_create(W->S, g, parent, &lua_task_class, &id, (void **)&lt);
  if (rc == WEFT_ELIMIT) luaL_error(L, "too many tasks (limit %d)", (int)W->desc.max_tasks);
  if (rc == WEFT_ENOMEM) luaL_error(L, "not enough memory");
  if (rc != WEFT_OK) luaL_error(L, "cannot create task: %s", weft_strerror(rc));
  lua_State *co = take_thread(W, L, id, lt);
  if (!lua_checkstack(co, nargs + 8)) {
    lt->co = NULL;
    recycle(W, co, 0);
    weft__task_finish(W->S, id, WEFT_TASK_CANCELLED);
    luaL_error(L, "not enough memory");
  }
  weft__thread_set_task(co, id);
  ltask *plt = !parent ? NULL : parent == W->cur && W->curlt ? W->curlt : LT(W, parent);
  weft__site_set(lt, spawn_site(W, L, plt ? weft__site_of(plt) : 0));
  weft__site_live(W->sites, weft__site_of(lt), 1, weft__sched_realtime(W->S));
  lt->base = (unsigned)nargs; /* below LUAI_MAXSTACK: co has room for them */
  if (!move)
    for (int i = 0; i <= nargs; i++) lua_pushvalue(L, fidx + i);
  lua_xmove(L, co, nargs + 1);
  W->spawned++;
  weft__cost_new_task(W, id);
  *out = lt;
  return id;
}

weft_id weft__new_task(weft_state *W, lua_State *L, int fidx, int nargs, weft_id g,
                       weft_id parent) {
  ltask *lt;
  return new_task(W, L, fidx, nargs, g, parent, 0, &lt);
}

void weft__discard_task(weft_state *W, lua_State *L, weft_id id) {
  ltask *lt = LT(W, id);
  if (!lt) return;
  lua_State *co = lt->co;
  if (co && lua_checkstack(L, 4)) settle(W, L, id, lt, WEFT_TASK_CANCELLED, lua_gettop(L), 0);
  lt->co = NULL;
  if (co) { /* never ran: nothing to unwind */
    lua_settop(co, 0);
    recycle(W, co, 0);
  }
  weft__task_finish(W->S, id, WEFT_TASK_CANCELLED);
}

/* weft__run_now for the live Lua task id. */
static void run_now(weft_state *W, weft_id id) {
  if (weft__task_held(W->S, id)) {
    weft__task_wake(W->S, id); /* runs when its group resumes */
    return;
  }
  W->run_depth++;
  weft__task_run(W->S, id);
  W->run_depth--;
}

void weft__run_now(weft_state *W, weft_id id) {
  ltask *lt = LT(W, id);
  if (lt && lt->co) run_now(W, id);
}

/* After a nested run or a cancel: a task whose cancel was put off because
   it was running yields now and is unwound by its resumer. */
void weft__yield_if_doomed(weft_state *W, lua_State *L) {
  if (W->cur && weft__task_doomed(W->S, W->cur) && weft__thread_task(L) == W->cur &&
      lua_isyieldable(L))
    lua_yield(L, 0);
}

int weft__spawn_in(lua_State *L, int fidx, weft_id g, weft_id parent, int want) {
  weft_state *W = weft__get(L);
  if (W->run_depth >= MAX_RUN_DEPTH)
    return luaL_error(L, "tasks started inside each other too deep (over %d): use defer",
                      MAX_RUN_DEPTH);
  int nargs = lua_gettop(L) - fidx;
  ltask *lt;
  weft_id id = new_task(W, L, fidx, nargs, g, parent, 1, &lt);
  /* It runs before its handle is made: a task that ends at once with
     nothing to keep gets a handle without user values (see thandle). */
  int d = W->run_depth;
  weft_spawning *sp = &W->spawning[d];
  *sp = (weft_spawning){.id = id};
  run_now(W, id);
  sp->id = 0;
  lt = sp->final ? NULL : LT(W, id);
  if (!want) {
    /* The caller drops what spawn returns (a statement): no handle now;
       a live task gets one when something asks (weft__push_task). */
  } else if (lt && lt->co) { /* still running; a handle made meanwhile is cached */
    if ((!sp->made || !weft__handle_if(W, L, id)) && !weft__handle_make(W, L, id, NULL)) {
      weft__task_cancel(W->S, id);
      return lua_error(L);
    }
  } else if (sp->kept && sp->handle) {
    lua_pushvalue(W->spawns, d + 1);
    lua_xmove(W->spawns, L, 1);
  } else {
    thandle *h = weft__handle_new(W, L, sp->kept ? 2 : 0);
    h->id = id;
    h->site = sp->site;
    h->final = sp->final ? sp->final : WEFT_TASK_CANCELLED;
    if (sp->kept) {
      h->packed = sp->packed;
      lua_pushvalue(W->spawns, d + 1);
      lua_xmove(W->spawns, L, 1);
      lua_setiuservalue(L, -2, 1);
    }
  }
  if (sp->kept) {
    lua_pushnil(W->spawns);
    lua_replace(W->spawns, d + 1);
  }
  if (W->cur && weft__task_doomed(W->S, W->cur)) {
    lua_settop(L, 0);
    weft__yield_if_doomed(W, L);
  }
  return want;
}

static int l_spawn(lua_State *L) {
  weft_state *W = weft__get(L);
  luaL_checkany(L, 1);
  /* spawn(f) as a statement takes no handle: 48 to 88 bytes a task less */
  return weft__spawn_in(L, 1, 0, W->cur, L->ci->nresults != 0);
}

static int l_defer(lua_State *L) {
  weft_state *W = weft__get(L);
  luaL_checkany(L, 1);
  int nargs = lua_gettop(L) - 1;
  weft_id id = weft__new_task_handle(W, L, 1, nargs, 0, W->cur);
  ltask *lt = LT(W, id);
  lt->single = 1;
  weft__wait_begin(W->S, id, WEFT_WAIT_ALL);
  if (weft__wait_sleep(W->S, id, 0, 0, 0) != WEFT_OK) {
    weft__task_cancel(W->S, id);
    return luaL_error(L, "not enough memory");
  }
  weft__wait_commit(W->S, id);
  return 1;
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
    *list = weft__task_waiters(W->S, h->id);
    if (*list) return 0;
    if (weft__task_state(W->S, h->id) == WEFT_ESTALE) return 1;
    lua_pushliteral(L, "not enough memory"); /* its list of waiters could not be made */
    return -1;
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
  weft__push_task(W, L, id);
  if (!lua_isnil(L, -1)) {
    lua_getfield(L, -1, "name");
    lua_remove(L, -2);
  }
}

static const weft_waitable task_waitable = {poll_task, "task", task_name};

static int l_task_cancel(lua_State *L) {
  weft_state *W = weft__get(L);
  thandle *h = check_task(L, 1);
  if (h->final) return 0;
  if (weft__task_cancel(W->S, h->id) == WEFT_ENOMEM) /* nothing changed: it runs on */
    return luaL_error(L, "not enough memory");
  weft__yield_if_doomed(W, L); /* a cleanup may have cancelled the caller */
  return 0;
}

static int l_task_index(lua_State *L) {
  weft_state *W = weft__get(L);
  thandle *h = check_task(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "status") == 0) {
    lua_pushstring(L, status_name(W, h));
  } else if (strcmp(k, "name") == 0) {
    if (h->bare && h->named) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_names);
      lua_pushvalue(L, 1);
      lua_rawget(L, -2);
    } else {
      lua_getiuservalue(L, 1, 2); /* a bare handle has none: nil */
    }
    if (lua_isnil(L, -1)) lua_pushstring(L, weft__site_where(W->sites, h->site));
  } else if (strcmp(k, "cancel") == 0) {
    lua_pushcfunction(L, l_task_cancel);
  } else if (strcmp(k, "group") == 0) {
    if (h->final)
      lua_pushnil(L);
    else
      weft__push_group_id(W, L, weft__task_group(W->S, h->id));
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
  weft_state *W = weft__get(L);
  thandle *h = check_task(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "name") != 0) return luaL_error(L, "task field '%s' is read-only", k);
  if (!lua_isnil(L, 3)) luaL_checktype(L, 3, LUA_TSTRING);
  lua_settop(L, 3);
  ltask *lt = h->final ? NULL : LT(W, h->id);
  if (lt && lt->co && !lt->pinned && !lua_isnil(L, 3)) { /* the name outlives this value */
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_pinned);
    lua_pushvalue(L, 1);
    lua_rawseti(L, -2, (lua_Integer)WEFT_ID_INDEX(h->id) + 1);
    lua_pop(L, 1);
    lt->pinned = 1;
  }
  h->named = !lua_isnil(L, 3);
  if (h->bare) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_names);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 3);
    lua_rawset(L, -3); /* [handle] = name */
  } else {
    lua_setiuservalue(L, 1, 2);
  }
  return 0;
}

static int l_task_tostring(lua_State *L) {
  weft_state *W = weft__get(L);
  thandle *h = check_task(L, 1);
  lua_getfield(L, 1, "name");
  lua_pushfstring(L, "task %s (%s)", lua_tostring(L, -1), status_name(W, h));
  return 1;
}

static int l_current(lua_State *L) {
  weft_state *W = weft__get(L);
  weft__push_task(W, L, W->cur);
  return 1;
}

/* ---- registration ---- */

void weft__open_tasks(weft_state *W, lua_State *L) {
  W->cold.elem_size = sizeof(ltask_cold);
  W->spawns = lua_newthread(L);
  luaL_ref(L, LUA_REGISTRYINDEX);
  if (!lua_checkstack(W->spawns, MAX_RUN_DEPTH + 2)) luaL_error(L, "not enough memory");
  lua_settop(W->spawns, MAX_RUN_DEPTH + 1); /* a slot per depth, and room for one more */
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  W->ref_names = luaL_ref(L, LUA_REGISTRYINDEX);
  W->ref_task_mt =
      weft__new_meta(L, WEFT_TASK_MT, l_task_index, l_task_tostring, NULL, &task_waitable, "task");
  weft__name_c(L, "task.cancel", l_task_cancel);
  lua_pushcfunction(L, l_task_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pop(L, 1);

  /* the API table is at the top of L */
  static const luaL_Reg api[] = {
      {"spawn", l_spawn}, {"defer", l_defer}, {"current", l_current}, {NULL, NULL}};
  luaL_setfuncs(L, api, 0);
}

const weft_task_class *weft__lua_task_class(void) { return &lua_task_class; }
