/* Shared internals of the Lua bindings: the state, per-task data, and the
   delivery of values to waiting tasks. Not for embedders. */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H

#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "../host/jobs.h"
#include "../host/sync.h"
#include "mem.h"
#include "weft.h"

#define WEFT_MAX_JOB_KINDS 32
#define MAX_CLOSE_DEPTH 100 /* nested coroutine.close / task unwinds */
/* Tasks that each start the next at once nest C calls; past this many
   Lua's C stack would overflow (with no line to show), so starting one
   more raises first, at the script's line. */
#define MAX_RUN_DEPTH 100

#define WEFT_TASK_MT "weft.task"
#define WEFT_GROUP_MT "weft.group"
#define WEFT_PRELUDE_CHUNK "=[weft]"

typedef struct weft_waitable weft_waitable;

/* The counters of one stretch of code under an instruction budget
   (budget.c): a task between waits, a module's top level, a handler. */
/* What outlives a resume (a task's stretch goes on after a preemption),
   kept in every task's slot: what only one resume needs is in
   weft_budget. */
typedef struct weft_stretch {
  uint16_t overruns;   /* consecutive budgets overrun (tasks) */
  uint8_t killed;      /* every instruction raises now */
  uint8_t waited;      /* tasks: waited since home's hook last fired */
  uint8_t preempted;   /* tasks: the last resume was stopped by the budget */
  uint8_t preempt_due; /* tasks: overrun away from home: yield when home runs */
  uint8_t yielding;    /* tasks: a preemption's yield passes up the resumers */
} weft_stretch;

/* The stretch running now and what it means. */
typedef struct weft_budget {
  weft_stretch *s; /* NULL: no budgeted code runs */
  lua_State *home; /* the thread whose own count is a whole budget */
  const char *msg; /* what a kill says */
  int32_t limit;   /* a budget, in instructions; 0: off */
  uint32_t us;     /* watched: the time it may run, microseconds; 0: counted */
  lua_State *run;  /* the thread running its code now (home or a coroutine) */
  int32_t spent;      /* instructions charged by threads other than home */
  uint32_t kill_site; /* where it ran too long, once killed (sites.c) */
  uint8_t task;       /* a task's: preempted before it is killed */
} weft_budget;

/* The watchdog (watchdog.c): a thread that stops a stretch running past
   its time. The fields it reads are written by the thread running the
   scripts at every stretch's start and end. */
typedef struct weft_watchdog {
  _Atomic uint32_t gen;       /* bumped at each start and end of a stretch */
  _Atomic uint32_t limit_us;  /* the running stretch's time; 0: none runs */
  _Atomic uint32_t fire;      /* the gen it stopped (anything else: none) */
  _Atomic(pthread_t) runner;  /* the thread running the scripts */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t tick_us;
  uint8_t on;   /* the thread runs */
  uint8_t quit; /* ...and is asked to stop (under mu) */
} weft_watchdog;

/* Per-task data kept by the scheduler beside each task (in its slot:
   keep it small, what every resume touches first). What only channels,
   introspection and C tasks use is in the task's cold record. */
typedef struct ltask {
  lua_State *co;  /* the task's thread; NULL for C tasks */
  weft_stretch b; /* its budget (budget.c) */
  uint32_t site;  /* spawn-site chain (sites.c), 0: unknown */
  /* Before the first resume: the arguments for it; after: the stack index
     on co where delivered values start (both below LUAI_MAXSTACK). */
  unsigned base : 21;
  unsigned comb : 2;      /* C tasks: which combinator */
  unsigned started : 1;   /* resumed at least once */
  unsigned single : 1;    /* the current wait returns every value of slot 0 */
  unsigned raise : 1;     /* the wait ended by a failure: raise the value on top */
  unsigned fast : 1;      /* suspended in a plain sleep: resume with weft_task_slept */
  unsigned fast_real : 1; /* ...measured on the real clock */
  unsigned hooked : 1;    /* the budget hook is armed on its thread */
  unsigned seen : 1;      /* a script holds its thread (coroutine.running): never reused */
  unsigned pinned : 1;    /* its handle holds a name: held in ref_pinned */
  unsigned cold : 1;      /* its cold record is in use (weft_cold) */
} ltask;

/* What few tasks use, kept out of the slot: one record per task slot
   index, in chunks made when a task in that chunk first needs one
   (task.c), and zeroed for each task that does. */
typedef struct ltask_cold {
  int chval;                  /* a waiting channel sender's value (ref), 0: none */
  int chslot;                 /* ...slot of a value a channel handed to this task */
  weft_id chrecv;             /* channel that handed it a value it has not run with yet */
  weft_id wobj;               /* what a single wait is on (pools' objects), for weft.tasks() */
  const weft_waitable *wwhat; /* ...which kind */
  const void *wptr;           /* ...its handle (alive while the task waits on it) */
  int ref;                    /* C tasks: registry ref of their own Lua data */
  /* C tasks (combinators): called for each completion delivered. */
  void (*deliver)(weft_state *W, weft_id self, lua_State *from, int idx, int n, int slot,
                  int failed);
} ltask_cold;

/* A task handle: one userdata per task, made when something first asks
   for it (task.c). User value 1 is nil while the task lives, then its
   results (one value, or a table with n) or its error; user value 2 is
   its name. A task that ended inside spawn with nothing to keep gets a
   handle without user values (48 bytes instead of 88): its name, if a
   script sets one, is kept in ref_names. */
typedef struct thandle {
  weft_id id;
  uint8_t final;  /* 0 while live, else WEFT_TASK_DONE/FAILED/CANCELLED */
  uint8_t packed; /* results are a table {n=..., ...} */
  uint8_t named;  /* a script set t.name */
  uint8_t bare;   /* no user values (see above) */
  uint32_t site;  /* spawn site chain, kept for reports */
} thandle;

typedef struct ghandle {
  weft_id id;
} ghandle;

/* Modules and hot reload (reload.c). */
typedef struct weft_modules {
  int ref_group_start;      /* the module system's g:start */
  int ref_reload;           /* ...reload(name) */
  int ref_changed;          /* ...changed(path) */
  struct weft_watch *watch; /* scripts watcher, NULL when off */
  uint32_t reloads;         /* successful reload transactions */
  int loading;              /* running modules' top levels */
} weft_modules;

/* A spawn running its new task at once (task.c): its handle is made
   once the task stops, unless something asks for it earlier. */
typedef struct weft_spawning {
  weft_id id;     /* the new task, 0: none */
  uint32_t site;  /* its spawn site, kept when it ends */
  uint8_t final;  /* how it ended, 0: it has not */
  uint8_t packed; /* the kept value is its results packed {n=..., ...} */
  uint8_t kept;   /* W->spawns holds its handle (handle = 1) or its outcome (1 value) */
  uint8_t handle; /* ...which is its handle */
  uint8_t made;   /* a handle was made while it ran (cached weakly in ref_handles) */
} weft_spawning;

/* A slot whose thread is kept in ref_tasks for its next task (task.c). */
#define WEFT_IDLE_CACHE 64
typedef struct weft_idle {
  uint32_t slot; /* slot index + 1, 0: none */
  lua_State *co; /* the thread kept there */
} weft_idle;

struct weft_state {
  /* ---- what it is made of ---- */
  lua_State *L;
  weft_sched *S;
  weft_sync *Y;
  weft_jobs *J; /* started by the first job() */
  weft_desc desc;
  char *root;   /* scripts root, owned */
  char *assets; /* assets root, owned */
  weft_memory mem;
  weft_modules mods;
  struct sites *sites;
  weft_job_kind kinds[WEFT_MAX_JOB_KINDS];
  int nkinds;
  uint64_t job_seq;      /* jobs asked for so far (their numbers) */
  struct jrun *held;     /* replaying: jobs asked for, run when the recording delivers them */
  struct weft_tape *tape; /* recording or replaying (tape.c), NULL: neither */

  /* ---- Lua values the host keeps (registry refs) ---- */
  int ref_api;       /* the shared script API table */
  int ref_env_mt;    /* hidden metatable of script environments (sandbox.c) */
  int ref_tasks;     /* anchors of the tasks' threads, by chunk of slots (task.c) */
  int ref_handles;   /* weak: [index + 1] = handle made for the task in that slot */
  int ref_pinned;    /* [index + 1] = handle of a live task that holds its name */
  int ref_names;     /* weak keys: [handle] = name, for handles without user values */
  int ref_kept;      /* handles of tasks started from C */
  int ref_groups;    /* weak: [index + 1] = handle of a group */
  int ref_syncs;     /* weak: handles of futures, signals, channels */
  int ref_cweak;     /* weak: completed futures made from C, by id */
  int ref_values;    /* values buffered in channels, by ref */
  int nidle;         /* threads kept in ref_tasks for reuse */
  weft_idle idle[WEFT_IDLE_CACHE]; /* some of them, by slot index (task.c) */
  int ref_on_error;  /* weft.on_error handler or LUA_NOREF */
  int ref_cancelled; /* the cancellation error value */
  int ref_timeout;   /* the weft.TIMEOUT error value */
  int ref_task_mt;   /* metatables of task and future handles (hot paths skip */
  int ref_future_mt; /* ...luaL_setmetatable's lookup by name) */
  weft_side cold;    /* tasks' cold records, by task slot index (task.c) */
  weft_id fserial;   /* ids given to futures made from C */

  /* ---- what runs now ---- */
  weft_id cur;        /* running task, 0 outside tasks */
  lua_State *curL;    /* its thread, or L */
  ltask *curlt;       /* its data, or NULL */
  weft_budget bud;    /* the stretch of script code running now (budget.c) */
  int watching;       /* budgets are times a watchdog checks, not counts */
  int32_t task_limit; /* a task's budget (weft_budget_setup): instructions, 0: off... */
  uint32_t task_us;   /* ...and watched, its time in microseconds, 0: counted */
  weft_watchdog wd;
  int in_step;      /* inside weft_step */
  int run_depth;    /* tasks started at once inside each other */
  weft_spawning spawning[MAX_RUN_DEPTH + 1]; /* by run_depth when spawned */
  lua_State *spawns; /* a thread never run: [depth + 1] holds what spawning[depth] kept */
  int close_depth;  /* nested coroutine closes and task unwinds */
  int in_cleanup;   /* running finally() cleanups */

  /* ---- hooks between the parts ---- */
  int hook_extra; /* hook events wanted besides the count (a debugger's) */
  /* Receives those events (lua_Debug's event is not LUA_HOOKCOUNT). */
  void (*on_hook)(weft_state *W, lua_State *L, lua_Debug *ar);
  /* Called when a task's body raised (not a cancellation), before the
     report: co still holds the frames that raised, L[idx] is the error. */
  void (*on_task_error)(weft_state *W, weft_id task, lua_State *co, lua_State *L, int idx);
  struct weft_debug *dbg; /* the debugger server (debug.c), NULL: none */
  uint64_t spawned;       /* tasks ever created (the debugger's change check) */
  /* What a cancelled task gives back to channels (a waiting sender's
     value, a value handed to it it never ran with); set by sync.c. */
  void (*give_back)(weft_state *W, lua_State *L, weft_id task, ltask *lt);
  /* Pushes all{...} for the plain list at L[idx]: a nested list in a
     wait; set by sync.c, which makes the combinators. */
  void (*push_all)(weft_state *W, lua_State *L, int idx);

  /* ---- reports ---- */
  uint32_t errors;   /* reports made */
  char warnbuf[512]; /* a Lua warning being assembled */
  int warn_ready;    /* ...and complete, to report after the frame */
  char errbuf[512];  /* the message of the last failed C call */
  const char *load_why; /* why the default loader read nothing (static text) */
};

/* The state from any thread (it is the allocator's user data). */
static inline weft_state *weft_get(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return (weft_state *)ud;
}

/* Its cold record when it has one in use, else NULL. */
static inline ltask_cold *weft_cold_if(const weft_state *W, weft_id id, const ltask *lt) {
  if (!lt->cold) return NULL;
  return weft_side_at(&W->cold, WEFT_ID_INDEX(id));
}
/* task.c: makes it (zeroed) for task id, whose data is lt; NULL when out
   of memory. Never raises. */
ltask_cold *weft_cold_make(weft_state *W, weft_id id, ltask *lt);
/* A task's cold record, made the first time it needs one (NULL: out of
   memory; never raises). */
static inline ltask_cold *weft_cold(weft_state *W, weft_id id, ltask *lt) {
  return lt->cold ? weft_cold_if(W, id, lt) : weft_cold_make(W, id, lt);
}

/* The task a thread belongs to, 0 for the main thread and plain
   coroutines, kept in the thread's extra space (new threads copy it).
   LUA_EXTRASPACE is a pointer's size: where a weft_id does not fit
   (32-bit builds) it keeps the task's slot index + 1, and the id is that
   of the live task in the slot (a thread's mark is cleared when its task
   ends, before the slot can be reused). */
_Static_assert(LUA_EXTRASPACE >= sizeof(uint32_t), "weft needs 4 bytes of LUA_EXTRASPACE");
static inline void weft_thread_set_task(lua_State *L, weft_id id) {
  void *p = lua_getextraspace(L);
  if (LUA_EXTRASPACE >= sizeof(weft_id)) {
    memcpy(p, &id, sizeof id);
  } else {
    uint32_t i = id ? WEFT_ID_INDEX(id) + 1 : 0;
    memcpy(p, &i, sizeof i);
  }
}
static inline weft_id weft_thread_task(lua_State *L) {
  const void *p = lua_getextraspace(L);
  if (LUA_EXTRASPACE >= sizeof(weft_id)) {
    weft_id id;
    memcpy(&id, p, sizeof id);
    return id;
  }
  uint32_t i;
  memcpy(&i, p, sizeof i);
  return i ? weft_sched_task_at(weft_get(L)->S, i - 1) : 0;
}

/* Something a task can wait on: a userdata whose metatable has __wait. */
struct weft_waitable {
  /* Checks the object at L[idx]. Returns 1 when it is already done, with
     its values pushed (just the first when `one`), -1 when it already
     failed, with the error pushed, or 0 with *list set to its waiters. */
  int (*poll)(weft_state *W, lua_State *L, int idx, int one, weft_wlist **list);
  const char *what; /* for introspection: "task", "future", ... */
  /* Pushes the object's name for introspection (nil when it has none). */
  void (*name)(weft_state *W, lua_State *L, weft_id obj, const void *ptr);
};

static inline const weft_waitable *weft_waitable_of(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return NULL;
  lua_pushliteral(L, "__wait");
  lua_rawget(L, -2);
  const weft_waitable *w = (const weft_waitable *)lua_touserdata(L, -1);
  lua_pop(L, 2);
  return w;
}

/* wait.c: the wait protocol (see there). */
int weft_l_wait(lua_State *L);
void weft_open_waits(weft_state *W, lua_State *L);
/* The task a wait by `what` (for messages) in L belongs to; raises where
   no task can wait (outside tasks, in a cleanup, a module's top level, a
   metamethod or C function). */
weft_id weft_wait_task(weft_state *W, lua_State *L, const char *what);
/* Adds the element at L[idx] to the wait being built for task `id`, in
   `slot` (one: only its first value counts). Returns 1 when it is already
   done (its values pushed), -1 when it already failed (the error pushed),
   0 when a record was added. Raises (the wait dropped) for what cannot be
   waited on, at argument argn. */
int weft_wait_add(weft_state *W, lua_State *L, weft_id id, int idx, int slot, int one, int argn);
/* Drops the records of a wait being built, so that a task raising out of
   it (a bad element, no memory) is left waiting on nothing. */
static inline void weft_wait_abort(weft_state *W, weft_id id) {
  weft_wait_begin(W->S, id, WEFT_WAIT_ALL);
}
/* Commits the wait of Lua task `id` and yields L; delivered values land
   from stack index base (single: every value of slot 0), and k (NULL:
   the standard one) returns them when the task is resumed. */
int weft_wait_yield(weft_state *W, lua_State *L, weft_id id, int single, int base, lua_KFunction k);

/* report.c */
void weft_open_reports(weft_state *W, lua_State *L);
/* Reports the error at L[idx] for task (0: none); the traceback is
   `trace`, or taken from thread co (NULL: the message alone). Never
   raises. */
void weft_report_thread(weft_state *W, lua_State *L, int idx, weft_id task, const char *trace,
                        lua_State *co);
/* group.c */
void weft_open_groups(weft_state *W, lua_State *L);
/* inspect.c */
void weft_open_inspect(weft_state *W, lua_State *L);
/* Pushes what weft.tasks() says of one task (id, name, who, group,
   status, waiting, where, spawned, resumes) and returns 1, or pushes
   nothing and returns 0 for a task that is not a live Lua task. May
   raise (memory). */
int weft_push_task_info(weft_state *W, lua_State *L, weft_id task);
/* debug.c: frees the debugger server (weft_close). */
void weft_debug_free(weft_state *W);

/* task.c */
/* Nonzero when L[idx] is the cancellation error. */
int weft_is_cancel_error(weft_state *W, lua_State *L, int idx);
/* spawn/g:spawn: a task for the callable at L[fidx] and the values above
   it, in group g (0: the spawner's) as a child of parent, run at once;
   returns its handle. */
int weft_spawn_in(lua_State *L, int fidx, weft_id g, weft_id parent);
/* Pushes a new metatable for a handle type: __index, __tostring and __gc
   (either may be NULL), __wait when w is given, __name, and a hidden
   __metatable so scripts cannot reach it; returns a registry ref to it
   (for weft_set_meta). */
int weft_new_meta(lua_State *L, const char *name, lua_CFunction index, lua_CFunction tostring,
                  lua_CFunction gc, const weft_waitable *w, const char *short_name);
/* Sets the metatable kept at registry ref on the value on top. */
static inline void weft_set_meta(lua_State *L, int ref) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_setmetatable(L, -2);
}
int weft_l_traceback_handler(lua_State *L);
void weft_timer_done(void *user, weft_id waiter, int slot, double elapsed);
void weft_complete_all(weft_state *W, weft_wlist *l, lua_State *from, int idx, int n, int failed);
void weft_open_tasks(weft_state *W, lua_State *L);
/* Gives a waiter the values from[idx .. idx+n-1] (or the error at idx when
   failed) for its slot, then completes the record. */
void weft_complete(weft_state *W, weft_rec r, lua_State *from, int idx, int n, int failed);
/* Creates a task running the callable at L[fidx] with the nargs values
   above it, in group g (0: the spawner's), as a child of parent (0: none).
   Pushes nothing (no handle is made); raises a Lua error on failure, with
   no task left behind. */
weft_id weft_new_task(weft_state *W, lua_State *L, int fidx, int nargs, weft_id g, weft_id parent);
/* The same, and pushes the new task's handle. */
weft_id weft_new_task_handle(weft_state *W, lua_State *L, int fidx, int nargs, weft_id g,
                             weft_id parent);
/* The spawn site of a task the calling script line would start now. */
uint32_t weft_caller_site(weft_state *W, lua_State *L);
/* Gives a task another spawn site. */
void weft_task_set_site(weft_state *W, lua_State *L, weft_id task, uint32_t site);
/* Takes back a NEW task that could not be completely set up. */
void weft_discard_task(weft_state *W, lua_State *L, weft_id task);
/* After running other tasks' code (cleanups, callbacks) from inside the
   current task: if that cancelled it, it unwinds now. */
void weft_yield_if_doomed(weft_state *W, lua_State *L);
/* Runs a NEW task at once, up to its first wait. */
void weft_run_now(weft_state *W, weft_id task);
/* Pushes the handle of a live Lua task (or nil), made now if nobody
   holds one: the one place handles are made. May raise (memory). */
void weft_push_task(weft_state *W, lua_State *L, weft_id task);
/* Pushes the name a script gave a live task (t.name = ...) and returns
   1, or pushes nothing and returns 0; makes no handle. */
int weft_push_task_name(weft_state *W, lua_State *L, weft_id task);
void weft_push_group(weft_state *W, lua_State *L, weft_id g);
/* Pushes who a report about the task names first (its entity or its
   name: see task.c) and returns 1, or pushes nothing and returns 0. May
   raise (memory). */
int weft_push_who(weft_state *W, lua_State *L, weft_id task);
/* Registry key of the weak set of the groups weft.start makes. */
#define WEFT_START_GROUPS "weft.start_groups"
/* Reports an error value at L[idx] for task (0: none) with a traceback
   string at L[tidx] (0: none). */
void weft_report(weft_state *W, lua_State *L, int idx, weft_id task, const char *trace);
/* A printable form of any error value; never raises. Pushes it. */
const char *weft_tostring(lua_State *L, int idx);

/* sync.c */
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

/* jobs.c */
void weft_open_jobs(weft_state *W, lua_State *L);
void weft_poll_jobs(weft_state *W);
void weft_stop_jobs(weft_state *W);
/* Jobs asked for and not yet delivered (on the pool, or held by a replay). */
uint32_t weft_jobs_waiting(const weft_state *W);

void weft_flush_warnings(weft_state *W);

/* reload.c */
int weft_open_modules(weft_state *W);
void weft_poll_reload(weft_state *W);
int weft_l_group_start(lua_State *L);

/* watchdog.c: starts the watchdog (0 when it runs); stops it. */
int weft_watchdog_start(weft_state *W);
void weft_watchdog_stop(weft_state *W);
/* The calling thread runs W's scripts from now on. */
void weft_watchdog_here(weft_state *W);

/* budget.c: instruction budgets. */
/* Works out what a task's stretch may run (task_limit, task_us), once
   budgets are counted or watched. */
void weft_budget_setup(weft_state *W);
/* Makes s (zeroed by the caller) the running stretch, saving the one
   running before in *saved; home is the thread counting whole budgets. */
void weft_budget_enter(weft_state *W, weft_budget *saved, weft_stretch *s, lua_State *home,
                       const char *msg, int32_t limit, int task);
/* A stop of the running stretch came but did not fire (weft_budget_leave). */
void weft_budget_unstop(weft_state *W, const weft_budget *saved);

/* Tells the watchdog which stretch runs now, and for how long it may. */
static inline void weft_budget_mark(weft_state *W) {
  weft_watchdog *D = &W->wd;
  uint32_t gen = atomic_load_explicit(&D->gen, memory_order_relaxed) + 1;
  atomic_store_explicit(&D->gen, gen, memory_order_release);
  atomic_store_explicit(&D->limit_us, W->bud.us, memory_order_release);
}

/* weft_budget_enter with the budget worked out: limit instructions and,
   watched, us microseconds (0: counted). Inline, as every resume starts
   a stretch. */
static inline void weft_budget_begin(weft_state *W, weft_budget *saved, weft_stretch *s,
                                     lua_State *home, const char *msg, int32_t limit, uint32_t us,
                                     int task) {
  *saved = W->bud;
  if (!saved->s && !W->in_step) weft_watchdog_here(W); /* steps say it once */
  W->bud = (weft_budget){.s = s,
                         .home = home,
                         .msg = msg,
                         .limit = limit,
                         .us = us,
                         .run = home,
                         .task = (uint8_t)task};
  if (!saved->us) weft_budget_mark(W); /* else timed by the enclosing stretch */
}

/* Ends the running stretch: the one saved runs again. */
static inline void weft_budget_leave(weft_state *W, const weft_budget *saved) {
  weft_watchdog *D = &W->wd;
  if (atomic_load_explicit(&D->fire, memory_order_acquire) ==
      atomic_load_explicit(&D->gen, memory_order_relaxed))
    weft_budget_unstop(W, saved);
  W->bud = *saved;
  /* In a step the next task's start marks (a stop that comes between two
     finds no stretch running and is dropped), and the step's end says
     nothing runs (weft_budget_idle). */
  if (!saved->us && !W->in_step) weft_budget_mark(W);
}
/* Nothing budgeted runs now (the end of a step). */
void weft_budget_idle(weft_state *W);
/* Arms the running stretch's hook on its home thread: a whole budget, or
   one instruction while it is being killed. */
void weft_budget_arm_home(weft_state *W, lua_State *home, int killed);
/* Around a resume of another thread (a script's coroutine): charges its
   instructions to the running stretch; after it, raises in L a kill that
   happened meanwhile. */
void weft_budget_before_nested(weft_state *W, lua_State *co);
void weft_budget_after_nested(weft_state *W, lua_State *L, lua_State *co, int status);
/* After a resume of another thread yielded: 0 for a script's yield; 1
   when the yield was a preemption passing up to the task's thread (L, the
   resumer, yields too, and resumes the other thread when it is resumed;
   when L is the task's own thread the task is now preempted); 2 when L
   cannot yield (resume the other thread again at once). */
int weft_budget_preempting(weft_state *W, lua_State *L);
/* lua_pcall / lua_resume as a stretch of its own (a module's top level, a
   handler, a __tostring), killed with msg past limit instructions. */
int weft_budget_pcall(weft_state *W, lua_State *L, int nargs, int nres, int msgh, const char *msg,
                      int32_t limit);
int weft_budget_resume(weft_state *W, lua_State *co, lua_State *from, int nargs, int *nres,
                       const char *msg, int32_t limit);
/* Sets the hook events wanted besides the count (W->hook_extra): every
   live task's thread, the threads running now and L (a thread inside a
   hook, or NULL) are re-armed. */
void weft_budget_set_extra(weft_state *W, int mask, lua_State *L);
/* From the watchdog's signal handler: the running stretch overran its
   time; arms its running thread to stop at the next instruction. */
void weft_budget_interrupt(weft_state *W);
/* A debugger holds the running stretch stopped: its time stands still
   until unhold (given what hold returned). */
uint32_t weft_budget_hold(weft_state *W);
void weft_budget_unhold(weft_state *W, uint32_t held);
/* Budgets count instructions from now on (recording and replaying need
   them exact); the watchdog stops. */
void weft_budget_count(weft_state *W);

/* From a hook: raises msg prefixed with the running function's file:line. */
void weft_raise_here(lua_State *L, const char *msg);
/* A task waits: its stretch ends. */
static inline void weft_task_waited(ltask *lt) {
  lt->b.overruns = 0;
  lt->b.waited = 1;
}

/* coro.c: the coroutine library for scripts. */
void weft_open_coroutines(weft_state *W, lua_State *L, int api);

/* sandbox.c: the script environment. */
/* Fills the shared API table at idx with the allowed base functions and
   libraries (weft's faithful versions where weft must change them). */
void weft_open_sandbox(weft_state *W, lua_State *L, int api);
/* Pushes a new script environment: every API name, its own copies of the
   library tables, _G; absent names fall through to the API. */
void weft_new_env(weft_state *W, lua_State *L);
/* Loads the file at path as a text chunk named "@path" with a new
   environment; pushes env and the function (1), or the message (0). */
int weft_load_script(weft_state *W, lua_State *L, const char *path);

/* patterns.c: wraps find, match, gmatch and gsub of the string table at
   idx so that a search that would run too long fails instead. */
void weft_guard_patterns(lua_State *L, int idx);

/* sites.c: interned spawn-site chains. */
struct sites *weft_sites_new(weft_state *W);
void weft_sites_free(weft_state *W, struct sites *st);
/* The chain for a spawn at (src, line) below parent chain; src is the
   short source, source the address of Lua's full source string (a cache
   key only). */
uint32_t weft_site_intern(struct sites *st, const char *source, const char *src, int line,
                          uint32_t parent);
const char *weft_site_where(struct sites *st, uint32_t site);
uint32_t weft_site_parent(struct sites *st, uint32_t site);

/* The Lua parts of the bindings, bindings/lua/NAME.lua, embedded at build
   time (xxd -i). */
extern unsigned char weft_lua_prelude[], weft_lua_modules[];
extern unsigned int weft_lua_prelude_len, weft_lua_modules_len;

#endif
