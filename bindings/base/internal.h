/* What every part of the Lua bindings shares: the state's layout and the
   per-task data kept in each task's slot. Not for embedders. */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H

#include <lauxlib.h>
#include <lua.h>

#include "../../host/jobs.h"
#include "../../host/sync.h"
#include "mem.h"
#include "parts.h"
#include "../weft.h"

#define WEFT_MAX_JOB_KINDS 32
#define MAX_CLOSE_DEPTH 100 /* nested coroutine.close / task unwinds */
/* Tasks that each start the next at once nest C calls; past this many
   Lua's C stack would overflow (with no line to show), so starting one
   more raises first, at the script's line. */
#define MAX_RUN_DEPTH 100

/* Per-task data in its slot, beside the scheduler's (keep it small: what
   every resume touches first; the rest is in the task's cold record). */
typedef struct ltask {
  lua_State *co;        /* the task's thread; NULL for C tasks */
  weft_stretch b;       /* its budget (budget.c) */
  unsigned base : 21;   /* first resume's argument count, then where wait's values start */
  unsigned comb : 2;    /* C tasks: which combinator */
  unsigned started : 1; /* resumed at least once */
  unsigned single : 1;  /* the current wait returns every value of slot 0 */
  unsigned raise : 1;   /* the wait ended by a failure: raise the value on top */
  unsigned fast : 1;    /* suspended in a plain sleep: resume with weft__task_slept */
  unsigned next : 1;    /* ...of wait() or wait(0), which the resume asks the scheduler for */
  unsigned hooked : 1;  /* the budget hook is armed on its thread */
  unsigned seen : 1;    /* a script holds its thread (coroutine.running): never reused */
  unsigned pinned : 1;  /* its handle holds a name: held in ref_pinned */
  unsigned cold : 1;    /* its cold record is in use (weft__cold) */
#if UINTPTR_MAX <= 0xFFFFFFFFu
  uint32_t resumes; /* where its thread has no room for them (weft__thread_resumes) */
#endif
} ltask;

struct weft_state {
  /* ---- what it is made of ---- */
  lua_State *L;
  weft_sched *S;
  weft_sync *sync; /* signals and channels (host/sync.h) */
  weft_jobs *J;    /* started by the first job() */
  weft_desc desc;
  char *root;   /* scripts root, owned */
  char *assets; /* assets root, owned */
  weft_memory mem;
  weft_modules mods;
  struct sites *sites;
  weft_job_kind kinds[WEFT_MAX_JOB_KINDS];
  int nkinds;
  weft_kname knames[16]; /* continuations of weft's C frames (names.c) */
  int nknames;
  uint64_t job_seq;       /* jobs asked for so far (their numbers) */
  struct jrun *held;      /* replaying: jobs asked for, run when the recording delivers them */
  struct weft_tape *tape; /* recording or replaying (tape.c), NULL: neither */

  /* ---- Lua values the host keeps (registry refs) ---- */
  int ref_api;             /* the shared script API table */
  int ref_env_mt;          /* hidden metatable of script environments (sandbox.c) */
  lua_CFunction traceback; /* Lua's debug.traceback: xpcall(f, debug.traceback) (sandbox.c) */
  int ref_tasks;           /* while saving: the tasks' threads, by chunk of slots (task.c) */
  int ref_handles;         /* weak: [index + 1] = handle made for the task in that slot */
  int ref_pinned;          /* [index + 1] = handle of a live task that holds its name */
  int ref_names;           /* weak keys: [handle] = name, for handles without user values */
  int ref_kept;            /* handles of tasks started from C */
  int ref_groups;          /* weak: [index + 1] = handle of a group */
  int ref_syncs;           /* weak: handles of futures, signals, channels */
  int ref_cweak;           /* weak: completed futures made from C, by id */
  int ref_values;          /* values buffered in channels, by ref */
  lua_State *spare[WEFT_SPARE_THREADS], **young; /* Lua's collector's roots (task.c): threads */
  uint32_t nspare, nyoung, capyoung; /* ...kept for reuse; made since its last atomic step */
  int ref_on_error;                  /* weft.on_error handler or LUA_NOREF */
  int ref_cancelled;                 /* the cancellation error value */
  int ref_timeout;                   /* the weft.TIMEOUT error value */
  int ref_task_mt;                   /* metatables of task and future handles (hot paths skip */
  int ref_future_mt;                 /* ...luaL_setmetatable's lookup by name) */
  weft_side cold;                    /* tasks' cold records, by task slot index (task.c) */
  weft_id fserial;                   /* ids given to futures made from C */

  /* ---- what runs now ---- */
  weft_id cur;            /* running task, 0 outside tasks */
  lua_State *curL;        /* its thread, or L */
  ltask *curlt;           /* its data, or NULL */
  weft_budget *bud;       /* the stretch of script code running now (budget.c)... */
  weft_budget bud_idle;   /* ...at the bottom: none (all zero) */
  weft_budget bud_top;    /* ...a task's begun at the bottom (weft__budget_begin_top) */
  uint32_t held_us;       /* watched: the scripts thread's time a debugger held scripts stopped,
                             in all, microseconds: not the stretches' (weft__budget_clock) */
  int holding;            /* ...and it holds them now (weft__budget_hold) */
  int watching;           /* budgets are times a watchdog checks, not counts */
  int32_t task_limit;     /* a task's budget (weft__budget_setup): instructions, 0: off... */
  uint32_t task_us;       /* ...and watched, its time in microseconds, 0: counted */
  uint32_t runaway_us;    /* watched: a stretch's script time before a kill, 0: never */
  uint64_t runaway_instr; /* counted: ...its instructions, 0: never */
  weft_watchdog wd;
  weft_costs cost;                           /* every task's script time (cost.c) */
  weft_fins fins;                            /* finalizers waiting their turn (finalize.c) */
  struct weft_profile *prof;                 /* a profile being taken (profile.c), NULL: none */
  int in_step;                               /* inside weft_step */
  int run_depth;                             /* tasks started at once inside each other */
  weft_spawning spawning[MAX_RUN_DEPTH + 1]; /* by run_depth when spawned */
  lua_State *spawns; /* a thread never run: [depth + 1] holds what spawning[depth] kept */
  int close_depth;   /* nested coroutine closes and task unwinds */
  int in_cleanup;    /* running finally() cleanups */
  int in_call;       /* running functions C called (weft_call) */
  int loaded;        /* loaded from a save (weft_load), no frame since: a recording may start */
  int loading;       /* weft_load runs: the slots' threads are not read yet (task.c) */
  uint64_t cserial;  /* ids given to the signals and channels C made */

  /* ---- hooks between the parts ---- */
  int hook_extra; /* hook events wanted besides the count (a debugger's) */
  /* Receives those events (lua_Debug's event is not LUA_HOOKCOUNT). */
  void (*on_hook)(weft_state *W, lua_State *L, lua_Debug *ar);
  /* Called when a task's body raised (not a cancellation), before the
     report: co still holds the frames that raised, L[idx] is the error. */
  void (*on_task_error)(weft_state *W, weft_id task, lua_State *co, lua_State *L, int idx);
  /* An add-on's teardown (the debugger's), first thing at weft_close. */
  void (*on_close)(weft_state *W);
  struct weft_debug *dbg; /* the debugger server (debug.c), NULL: none */
  uint64_t spawned;       /* tasks ever created (the debugger's change check) */

  /* ---- reports ---- */
  uint32_t errors;      /* reports made */
  char warnbuf[512];    /* a Lua warning being assembled */
  int warn_ready;       /* ...and complete, to report after the frame */
  int warn_on;          /* a script's warn() is shown: "@on" / "@off", off at first (lua.c) */
  char errbuf[512];     /* the message of the last failed C call */
  const char *load_why; /* why the default loader read nothing (static text) */
  int load_errno;       /* ...as an errno (ENOENT, EACCES, EIO), 0: none known */
};

/* Task id's per-task data (its slot's), NULL when the task is gone. */
static inline ltask *LT(weft_state *W, weft_id id) { return weft__task_udata(W->S, id); }

/* The state from any thread (it is the allocator's user data). */
static inline weft_state *weft__get(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return (weft_state *)ud;
}

#endif
