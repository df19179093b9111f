/* weft: a game scripting host. Lua 5.4 tasks on a frame-stepped
   scheduler, with futures, signals, channels, groups, jobs and hot
   reload. Embed it by creating a state, loading scripts as tasks, and
   calling weft_step once per frame; `pkg-config --cflags --libs weft`.

   This header is the whole public API: it needs Lua's lua.h (for
   lua_State, to register the engine's own functions) and weft_base.h
   (result codes), nothing else of weft's. */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

/* Lua's headers declare no linkage of their own (Lua compiles as C++
   too); the Lua inside libweft is C, so C++ sees it through extern "C"
   (as Lua's lua.hpp, installed beside lua.h, does). */
#ifdef __cplusplus
extern "C" {
#endif

#include <lua.h>

#include "weft_base.h"

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 5
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_STRING "0.5.0"
/* The version as one number, MAJOR * 10000 + MINOR * 100 + PATCH (500). */
#define WEFT_VERSION (WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH)
/* The binary interface: what a program built against this header needs
   of the library (the layout of the structs below, the functions and
   their meaning). It grows by one whenever that changes incompatibly,
   and the shared library's SONAME follows it (libweft.so.1): a program
   built against another ABI is refused by the dynamic linker, never
   run against the wrong layout. Within one ABI the structs the program
   passes grow at their end only, and each says its size in its first
   field (WEFT_DESC_INIT and the like), which the library checks. */
#define WEFT_ABI_VERSION 1
/* An initializer of a sized struct: every field zero (its default), the
   size set (a value in C++, where it is a lambda's). */
/* clang-format off */
#ifdef __cplusplus
#define WEFT_SIZED_INIT(T) ([] { T s_{}; s_.size = sizeof s_; return s_; }())
#else
#define WEFT_SIZED_INIT(T) {.size = sizeof(T)}
#endif
/* clang-format on */

/* The library's version as WEFT_VERSION numbers it: the header's
   WEFT_VERSION when the program runs with the library it was built
   against. */
WEFT_API uint32_t weft_version(void);
/* The same as "MAJOR.MINOR.PATCH" (static storage). */
WEFT_API const char *weft_version_string(void);
/* The library's WEFT_ABI_VERSION. */
WEFT_API uint32_t weft_abi_version(void);

typedef struct weft_state weft_state;

/* Handles to what C starts and completes: a task (a script running as a
   task) and a future (a long action C completes later). Plain values;
   id 0 is none. Functions given the handle of something that has ended
   and been forgotten return WEFT_ESTALE (or do nothing). */
typedef struct weft_task {
  uint64_t id;
} weft_task;
typedef struct weft_future {
  uint64_t id;
} weft_future;
/* A group of tasks (group{} in scripts); id 0 is the root. */
typedef struct weft_group {
  uint64_t id;
} weft_group;

/* How a task ended (weft_task_result). */
typedef enum weft_outcome {
  WEFT_RUNNING = 0, /* not ended yet */
  WEFT_DONE = 1,    /* returned */
  WEFT_FAILED = 2,  /* raised an error */
  WEFT_CANCELLED = 3
} weft_outcome;

/* job_threads value: no workers; each frame runs the queued jobs itself. */
#define WEFT_JOBS_INLINE UINT32_MAX

/* instr_budget value that turns the budget off. */
#define WEFT_BUDGET_OFF UINT32_MAX
/* time_budget_us value: budgets count instructions instead of time. */
#define WEFT_BUDGET_COUNTED UINT32_MAX
/* Counted budgets take this many instructions for a microsecond of the
   runaway limit (about what Lua runs on a desktop processor: the default
   budgets, 1,000,000 instructions and 5 ms, are the same rate). */
#define WEFT_INSTR_PER_US 200

/* Levels of weft_desc.logger, most severe first (sokol's). */
enum { WEFT_LOG_PANIC = 0, WEFT_LOG_ERROR = 1, WEFT_LOG_WARN = 2, WEFT_LOG_INFO = 3 };

/* What weft itself says, each with a stable id (the logger's `id`). */
#define WEFT_LOG_ITEMS(X)                                                                          \
  X(PRINT, "a script's print or io.write: one line")                                               \
  X(REPORT, "a task failed (the message, then its traceback and spawn sites)")                     \
  X(HANDLER_FAILED, "the weft.on_error handler raised")                                            \
  X(OPEN_FAILED, "weft_open failed: why")                                                          \
  X(PRELUDE_FAILED, "the script environment could not be built")                                   \
  X(SCRIPT_SKIPPED, "a file under the scripts root is not a regular file or too large")            \
  X(WATCH_FAILED, "the scripts root cannot be watched")                                            \
  X(DEBUG, "the debugger's transport: a client came, went or misbehaved")                          \
  X(SLOW_TASK, "a task took more script time between two waits than desc.slow_task_us, twice "     \
               "(once a task)")                                                                    \
  X(WARNING, "a script's warn(), once warnings are on: the message, its pieces joined")            \
  X(REPLAY_LIMITS, "a recording asked for looser limits than the replaying state has")             \
  X(FINALIZERS, "finalizers were let go without running: made faster than they ran, or out of "    \
                "time at weft_close")                                                              \
  X(TASK_GROWTH, "the live tasks spawned at one place kept growing (by 100 or more over 10 s "     \
                 "of real time, in every 2 s of it): once a place, at its file and line")

enum {
#define WEFT_LOG_ENUM(name, what) WEFT_LOG_##name,
  WEFT_LOG_ITEMS(WEFT_LOG_ENUM)
#undef WEFT_LOG_ENUM
};

/* Receives everything weft itself says (sokol's logger): tag is "weft",
   level a WEFT_LOG_* level, id a WEFT_LOG_* item, msg the text (no
   trailing newline), file and line the script's place when the message
   is about one (else NULL and 0). Strings are valid during the call
   only. Called on the thread that calls weft (never from weft's own
   threads). */
typedef void (*weft_logger_fn)(void *user, const char *tag, uint32_t level, uint32_t id,
                               const char *msg, const char *file, uint32_t line);

/* The embedder's loader: reads the script at path, relative to the
   scripts root and '/'-separated ("ai/patrol.lua"). A path a script
   names arrives clean: never absolute, no empty, "." or ".." part (weft
   folds "scripts//x/../y.lua" to "y.lua" and gives the loader nothing
   for a path that leaves the root). Returns its bytes in
   a block from desc.alloc (with alloc_ud) of *size bytes — 1 byte for an
   empty file — which weft frees through desc.alloc with that osize; or
   NULL when there is no such script (nothing allocated). Called on the
   main thread, during weft calls that load scripts. */
typedef void *(*weft_load_fn)(void *user, const char *path, size_t *size);

typedef struct weft_desc {
  uint32_t size;                 /* sizeof(weft_desc) as the program knows it: WEFT_DESC_INIT or
                                    weft_desc_init() set it; weft_open refuses any other value */
  const char *scripts_root;      /* directory `require` resolves under; NULL: "scripts" */
  size_t memory_limit;           /* bytes the Lua state may hold; 0: 256 MB */
  uint32_t instr_budget;         /* instructions per resume before preemption when counted;
                                    0: 1,000,000;
                                    WEFT_BUDGET_OFF: no budget (trusted scripts only) */
  uint32_t time_budget_us;       /* microseconds a resume may run before preemption, checked by
                                    a watchdog thread at no cost per instruction; 0: 5,000;
                                    WEFT_BUDGET_COUNTED: count instr_budget instructions
                                    instead: exact and the same in every run, at a cost on
                                    every instruction (recordings and replays always count, and
                                    so does a system where the watchdog cannot start) */
  uint32_t runaway_us;           /* script time a stretch (a task between two waits, a module's
                                    top level, a handler) may run without waiting before it is
                                    killed as a runaway at its line; preempted stretches go on
                                    next frame until then (at most 134,217,727: about
                                    134 s). 0: 1,000,000 (one second);
                                    WEFT_BUDGET_OFF: never. Counted budgets kill past
                                    WEFT_INSTR_PER_US instructions for each microsecond */
  uint32_t frame_budget;         /* most resumes per frame; 0: 1,000,000,000 */
  uint32_t frame_time_budget_us; /* watched budgets only: microseconds a frame's tasks may
                               take together; once spent, the frame starts no more tasks
                               (it runs one at least) and those left ready run first
                               next frame, in order; 0: 8,000 (half a 60 Hz frame);
                               WEFT_BUDGET_OFF: none. Counted budgets (tests, recordings,
                               replays) have no frame time: frames stay the same in
                               every run, bounded by frame_budget */
  uint32_t max_tasks;            /* most live tasks; 0: 1,000,000 */
  const char *assets_root;       /* directory io.open and job("read_file") read under, inside it
                                    with links resolved; NULL: "assets" */
  uint32_t job_threads;          /* worker threads, started at the first job; 0: one per core;
                                    WEFT_JOBS_INLINE: none, jobs run at the next frame's start
                                    on the main thread (reproducible headless runs); where no
                                    thread can start (the web build), inline too */
  /* Runs weft's jobs on the engine's own job system instead of threads of
     weft's: weft calls it (on its thread) with work and arg, and the
     engine calls work(arg) once, on any thread, soon; work runs the job
     kind's `run` and queues its completion, which the next weft_step
     delivers. weft_close waits until every work handed out has run.
     NULL: job_threads workers of weft's own. */
  void (*job_submit)(void *user, void (*work)(void *arg), void *arg);
  void *job_submit_ud; /* passed to job_submit */
  /* Every byte weft allocates (the state, Lua's heap, the scheduler, the
     debugger, recordings) comes from here, on the main thread only.
     lua_Alloc's contract (weft_base.h). NULL: realloc and free. */
  weft_alloc_fn alloc;
  void *alloc_ud; /* passed to alloc */
  /* Every script (the files weft_run_file names under the scripts root,
     require, weft.start, hot reload, recordings) is read through this.
     NULL: the regular files under scripts_root that lie inside it with
     every symbolic link resolved (a link out of the root reads nothing;
     FIFOs, devices and files larger than memory_limit are refused, with
     a SCRIPT_SKIPPED log). */
  weft_load_fn load;
  void *load_ud; /* passed to load and load_asset */
  /* Receives what weft itself says. NULL: lines on stderr ("weft: msg"),
     and `print` on stdout. With a logger, the library writes nothing to
     stdout or stderr. */
  weft_logger_fn logger;
  void *logger_ud; /* passed to logger */
  /* Receives `print` output, one line of len bytes without its newline
     (it may hold zero bytes; line[len] is 0). NULL: the logger (level
     INFO, id WEFT_LOG_PRINT). The string is valid during the call only. */
  void (*log)(void *user, const char *line, size_t len);
  /* Receives each error report that no weft.on_error handler took: the
     message and the traceback with spawn sites. NULL: the logger (level
     ERROR, id WEFT_LOG_REPORT). Strings are valid during the call only. */
  void (*report)(void *user, const char *msg, const char *trace);
  void *user; /* passed to log and report */
  /* Script time one task may take in one frame before a SLOW_TASK
     warning (one per task, naming it and its spawn site); 0: 4,000;
     UINT32_MAX: never. */
  uint32_t slow_task_us;
  /* Every asset a script reads (io.open, io.lines and io.input of a path
     under assets_root, job("read_file")) is read through this, with
     load_ud, as load reads scripts: the path relative to assets_root and
     '/'-separated ("levels/1.txt", never leaving the root), the bytes in
     a block from desc.alloc that weft frees, NULL when there is no such
     asset (io.open then gives nil, "PATH: no such asset", ENOENT; the
     job's future fails with "cannot read PATH: no such asset"). Called on
     the main thread, inside the weft call that reads: for
     job("read_file") when the job starts (its future still resolves at
     a later frame, as every job's does). NULL: the regular files under
     assets_root, read by the C library (job("read_file") on a worker). */
  weft_load_fn load_asset;
  /* Nonzero: weft_watch_scripts polls the scripts root (size and times,
     every 250 ms) instead of using the system's change notifications
     (a network file system, a container that gives none). 0: notifications
     where the system has them. */
  uint32_t watch_poll;
} weft_desc;

/* A desc with every field at its default and its size set, for
   `weft_desc d = WEFT_DESC_INIT;` in C and C++. */
#define WEFT_DESC_INIT WEFT_SIZED_INIT(weft_desc)
/* The same for a desc already in memory: zeroes *d and sets its size. */
WEFT_API void weft_desc_init(weft_desc *d);

/* Creates a state: a Lua state with the script environment, a scheduler
   and its root group. The desc is copied (its strings too). NULL when out
   of memory, or when desc->size is not sizeof(weft_desc) as this library
   knows it (a desc not made with WEFT_DESC_INIT or weft_desc_init, or a
   program built against another weft.h); the logger is told why
   (OPEN_FAILED) when the size is right. */
WEFT_API weft_state *weft_open(const weft_desc *desc);
/* Cancels every task (their cleanups run), closes Lua, frees everything.
   Returns 0 when nothing leaked. From inside the state (a verb, a job's
   finish, the log or report callback) it refuses with WEFT_EBUSY and
   closes nothing.

   Every function here takes a W from weft_open; W must not be used from
   two threads (jobs run their work off the main thread, see below). */
WEFT_API int weft_close(weft_state *W);

/* One frame: commit pending hot reloads, advance the clocks by dt (game
   time by dt times the time scales), deliver finished jobs, wake due
   timers, run the woken tasks.
   dt is in seconds, 0 to WEFT_MAX_DT (1e6); anything else (NaN, negative,
   larger) is WEFT_EINVAL and nothing moves. From inside the state (a
   verb, a job's finish, a callback) it is WEFT_EBUSY: frames nest in no
   engine. */
WEFT_API int weft_step(weft_state *W, double dt);

/* The Lua state (main thread), owned by W. C code may use it between
   frames to register functions or inspect state.

   What C may do with it, and with a task's L inside a C function a
   script called: Lua's API on values (push, get, set, call C functions,
   luaL_ref into the registry, userdata and metatables of the engine's
   own), leaving each stack as balanced as it found it. Script code is
   called with weft_call (the budget), never lua_call or lua_pcall, and a
   task is started with weft_spawn or weft_group_spawn, never with
   lua_newthread and lua_resume. Off limits, as weft owns them:
   lua_sethook and lua_gethook's hook (budgets, the watchdog's stop and
   the debugger set it), lua_setallocf (desc.alloc with weft's counts and
   memory limit), lua_setwarnf (warn goes to desc.logger),
   lua_getextraspace (each thread's task mark), lua_atpanic, lua_close
   (weft_close), lua_resume, lua_yield and lua_closethread on any thread
   weft made, lua_gc's LUA_GCSTOP, LUA_GCINC and LUA_GCGEN (the
   collector's mode and the budgeted finalizers are weft's; LUA_GCCOLLECT,
   LUA_GCSTEP and LUA_GCCOUNT are fine), and the registry's fields named
   "weft.*" and its references weft took. */
WEFT_API lua_State *weft_lua(weft_state *W);
/* Pushes the script API onto the main thread (weft_lua(W)): the table
   each script's environment is copied from when the script is loaded.
   Each script (a file weft_run_file runs, each module) has globals of
   its own, so a function set here reaches the scripts loaded after it:
   add entity verbs here before running any. lua_getglobal finds no
   script's function; reach one through its module (weft_require) and
   call it with weft_call. From a C function running inside a task,
   lua_xmove it to that task's L. */
WEFT_API void weft_push_api(weft_state *W);
/* Pushes the table of script module name ("ai.patrol": the file
   ai/patrol.lua under the scripts root), loading it as require does when
   it is not loaded yet (its top level runs under the budget, as
   weft_call's callee does). Returns WEFT_OK with the table on top of
   weft_lua(W)'s stack, or WEFT_ESCRIPT with the error value there (no
   such module, a syntax error, its top level raised); WEFT_EINVAL for a
   NULL name. This is how C reaches a script's functions:

     if (weft_require(W, "ai.patrol") == WEFT_OK) {
       lua_getfield(L, -1, "alert");   -- M.alert
       lua_pushinteger(L, enemy_id);
       weft_call(W, 1, 0);             -- under the budget
       lua_pop(L, 1);                  -- the module table
     }

   The table is the live module: a hot reload updates it in place. */
WEFT_API int weft_require(weft_state *W, const char *name);

/* Loads a Lua file (text only) with chunk name "@path" in its own
   environment and starts it as a task in the root group, run at once up to
   its first wait. On success returns WEFT_OK and the task in *task; on a
   syntax or read error returns WEFT_EINVAL and the message in *err
   (valid until the next call). NULL path or task: WEFT_EINVAL. The task's
   outcome stays readable with weft_task_result until weft_task_drop. */
WEFT_API int weft_run_file(weft_state *W, const char *path, weft_task *task, const char **err);

/* The same with argc strings as the chunk's arguments (`...`, as lua.c
   passes a script's): copied, argv may go once it returns. */
WEFT_API int weft_run_file_args(weft_state *W, const char *path, int argc, const char *const *argv,
                                weft_task *task, const char **err);
/* Starts the function below nargs arguments on top of the Lua stack as a
   task in the root group (popping them) and runs it at once up to its
   first wait. Returns the task, or id 0 when it could not be created (not
   a function, fewer than nargs + 1 values on the stack, out of memory:
   the message is weft_task_error of task 0). The task's outcome stays
   readable with weft_task_result until weft_task_drop. */
WEFT_API weft_task weft_spawn(weft_state *W, int nargs);
/* weft_spawn into group g (id 0: the root), as g:spawn(fn, ...) does:
   the task belongs to g (it pauses, scales and is cancelled with g) and
   is nobody's child, even when called from a C function a script
   called. Returns it, held by C as weft_spawn's are, or id 0 (the
   message in weft_task_error of task 0) when g is gone or as for
   weft_spawn. */
WEFT_API weft_task weft_group_spawn(weft_state *W, weft_group g, int nargs);
/* The task running now (from a C function a script called), or id 0
   outside tasks (between frames). Not held by C: weft_task_result and
   weft_task_push_results see it only once C holds it
   (weft_task_from_lua); weft_cancel, weft_describe_wait,
   weft_get_task_cost and weft_task_push take it as it is. */
WEFT_API weft_task weft_current_task(weft_state *W);
/* The task whose script handle (what spawn, current() and weft.start
   return) is at idx of L, which C now holds as it holds the tasks it
   started: its outcome and results stay readable until weft_task_drop.
   id 0 when the value is no task handle (or out of memory). */
WEFT_API weft_task weft_task_from_lua(weft_state *W, lua_State *L, int idx);
/* Pushes onto L the script handle of task t (the one value scripts
   compare with ==): any live task, and a task C holds after it ended;
   nil otherwise. */
WEFT_API void weft_task_push(weft_state *W, lua_State *L, weft_task t);
/* Like weft_run_file for source text in memory; name is the chunk name
   ("@scripts/x.lua" or "=label"). */
WEFT_API int weft_run_string(weft_state *W, const char *name, const char *src, size_t len,
                             weft_task *task, const char **err);
/* How a task started from C ended: a weft_outcome (WEFT_RUNNING while it
   runs), or WEFT_ESTALE once released or for a task never handed out. */
WEFT_API int weft_task_result(weft_state *W, weft_task task);

/* The error message of a failed or cancelled task started from C ("" if
   none); valid until the next call. */
WEFT_API const char *weft_task_error(weft_state *W, weft_task task);
/* C no longer holds a task it started or took (weft_task_from_lua): it
   runs on while the scheduler or a script holds it, and its result is no
   longer kept for C. Letting go of a handle is one verb throughout:
   weft_task_drop, weft_group_drop, weft_signal_drop, weft_channel_drop;
   a future C made is held until C completes it. */
WEFT_API void weft_task_drop(weft_state *W, weft_task task);
/* Cancels a task and its children as t:cancel() does: their cleanups
   run now and the task ends WEFT_CANCELLED (a task that is running
   unwinds when it next returns to the scheduler). WEFT_ESTALE for a task
   that has ended or was never handed out. */
WEFT_API int weft_cancel(weft_state *W, weft_task task);
/* Describes what a task waits on, e.g. "sleep 1.25 s left", into buf (n
   bytes, always terminated; nothing written when n is 0). */
WEFT_API void weft_describe_wait(weft_state *W, weft_task task, char *buf, size_t n);

/* ---- saving the running world ---- */

/* Saves everything the scripts are, between two frames: every task with
   its coroutine mid-wait, groups with their clocks, scales and pauses,
   timers, signals, channels with their values, futures, modules, the
   frame count, the random state, the accounts. Garbage is collected
   first (finalizers due run), and jobs in flight are awaited and their
   results delivered, as the next frame would. write gets the save in
   one call (0: it failed). Refused (WEFT_ESTATE) inside a frame, while
   recording, replaying, profiling or debugging, or when a job is still
   running after 10 s;
   WEFT_EINVAL when a value cannot be saved (a C function or userdata
   weft does not know), WEFT_EIO when write fails; *err (may be NULL)
   says why, valid until the next call. */
WEFT_API int weft_save(weft_state *W, int (*write)(void *ud, const void *p, size_t n), void *ud,
                       const char **err);
/* Loads a save (len bytes at data) into W, a state opened with the same
   desc that has run nothing yet (the same embedder functions registered:
   job kinds, verbs). The next weft_step goes on from where the saved state
   was. WEFT_EINVAL with *err when the save is refused: not a save, made
   by another build or with other limits, cut short, damaged; W is then
   to be closed. */
WEFT_API int weft_load(weft_state *W, const void *data, size_t len, const char **err);
/* What a save names instead of writing, for the engine's own: a C
   function (a verb scripts call, a callback they hold) or a pointer (a
   light userdata: a game object) is saved as its name and loaded as the
   loading state's of that name; every function and userdata in the
   script API table (weft_push_api) is named by its path already
   ("api.verbs.move_to"). A full userdata type (userdata whose metatable is
   registry[tname], as luaL_newmetatable makes it) is saved with save,
   which pushes one value standing for it (a string of bytes, a table),
   and loaded with load, which finds that value pushed above the new
   userdata and fills its block; with save and load NULL its bytes are
   saved as they are (they hold no address). Give the same names, in the
   loading state, before weft_load. A value with no name makes a save fail
   naming the path to it ("root...door: a userdata without a saver"). */
WEFT_API int weft_save_name(weft_state *W, const char *name, lua_CFunction fn);
WEFT_API int weft_save_pointer(weft_state *W, const char *name, void *p);
typedef void (*weft_save_userdata_fn)(lua_State *L, void *block, size_t size, void *ud);
WEFT_API int weft_save_type(weft_state *W, const char *tname, weft_save_userdata_fn save,
                            weft_save_userdata_fn load, void *ud);

/* ---- futures from C ----
   Every long action a game offers (walk to, say, load) returns a future
   to the script and completes it from C later. */

/* Creates a pending future owned by C until C completes it: it stays
   alive even if no script holds it until it completes. Returns it, id 0
   when out of memory. */
WEFT_API weft_future weft_future_new(weft_state *W);
/* Names a future for weft.tasks() ("future move_to"); the string is copied. */
WEFT_API void weft_future_set_name(weft_state *W, weft_future f, const char *name);
/* Pushes the future's handle onto L (nil once it is gone). */
WEFT_API void weft_push_future(weft_state *W, lua_State *L, weft_future f);
/* Completes a future: resolves it with the nvalues on top of
   weft_lua(W)'s stack (popped), fails it with the error value on top
   (popped), or cancels it (its waiters get the cancellation error that
   weft.is_cancelled recognises, and end cancelled unless they catch it).
   Waiting tasks wake this frame. Each returns WEFT_OK; WEFT_ESTATE when
   it was already complete; WEFT_ESTALE once it was collected after
   completing (C holds it only until it completes) or for an id never
   handed out; WEFT_ENOMEM (left pending) when out of memory; WEFT_EINVAL
   (nothing popped, nothing changed) for nvalues < 0 or more values than
   the stack holds. Call between frames or from C code called by Lua,
   never from a worker thread. */
WEFT_API int weft_future_resolve(weft_state *W, weft_future f, int nvalues);
WEFT_API int weft_future_fail(weft_state *W, weft_future f);
WEFT_API int weft_future_cancel(weft_state *W, weft_future f);

/* ---- groups from C ----
   A game's own timed actions (a walk, a turn, a camera pan) can follow
   script time as waits do: note the group of the script that started
   one, and advance it each frame by that group's rate. */

/* The group of the task running now (from a C function a script
   called); the root group outside tasks. */
WEFT_API weft_group weft_current_group(weft_state *W);
/* The group's clock: the seconds its tasks have seen, which pass at its
   time scale and its ancestors' and stop while it or one of them is
   paused. -1 once the group is gone. */
WEFT_API double weft_group_time(weft_state *W, weft_group g);
/* How many seconds that clock gains per second of the next weft_step:
   the product of its and its ancestors' time scales, 0 while it or one
   of them is paused; -1 once the group is gone. */
WEFT_API double weft_group_rate(weft_state *W, weft_group g);
/* Makes a group under parent (id 0: the root) with a name for
   weft.tasks() (copied; may be NULL), as group{name =, parent =} does.
   C holds it until weft_group_drop; scripts reach it with
   weft_push_group. id 0 when out of memory or parent is gone. */
WEFT_API weft_group weft_group_new(weft_state *W, weft_group parent, const char *name);
/* g:pause(), g:resume(), g:cancel() and g.time_scale = scale from C
   (cancel runs the cleanups of its tasks and subgroups' now). WEFT_OK;
   WEFT_ESTALE once the group is gone; WEFT_EINVAL for a scale outside 0
   to WEFT_MAX_SCALE (nothing changed). */
WEFT_API int weft_group_pause(weft_state *W, weft_group g);
WEFT_API int weft_group_resume(weft_state *W, weft_group g);
WEFT_API int weft_group_cancel(weft_state *W, weft_group g);
WEFT_API int weft_group_set_time_scale(weft_state *W, weft_group g, double scale);
/* Pushes the group's handle onto L (nil once it is gone). */
WEFT_API void weft_push_group(weft_state *W, lua_State *L, weft_group g);
/* C no longer holds a group it made: it lives while a script holds its
   handle or it has tasks. */
WEFT_API void weft_group_drop(weft_state *W, weft_group g);

/* ---- signals and channels from C ----
   An engine's events reach scripts as signals (`wait(door_opened)`,
   `door_opened:connect(fn)`) and its queues as channels. Each is the
   same object a script makes with signal() or channel(n); C holds the
   ones it made until it drops them. */

typedef struct weft_signal {
  uint64_t id;
} weft_signal;
typedef struct weft_channel {
  uint64_t id;
} weft_channel;

/* A new signal; id 0 when out of memory. */
WEFT_API weft_signal weft_signal_new(weft_state *W);
/* s:fire(...) with the nvalues on top of weft_lua(W)'s stack (popped):
   the tasks waiting on it wake in this frame (or, between frames, the
   next), and its connections start. WEFT_OK; WEFT_ESTALE once dropped
   (nothing popped); WEFT_EINVAL for nvalues < 0 or more than the stack
   holds; WEFT_ESCRIPT when it raised (out of memory: the values are
   popped, the message is weft_task_error of task 0). */
WEFT_API int weft_signal_fire(weft_state *W, weft_signal s, int nvalues);
/* Pushes its handle onto L (nil once dropped). */
WEFT_API void weft_push_signal(weft_state *W, lua_State *L, weft_signal s);
/* C no longer holds it: it lives while a script holds its handle. */
WEFT_API void weft_signal_drop(weft_state *W, weft_signal s);

/* A new channel holding up to capacity values (0: unbounded); id 0 when
   out of memory. */
WEFT_API weft_channel weft_channel_new(weft_state *W, uint32_t capacity);
/* ch:try_send(v) for the value on top of weft_lua(W)'s stack: WEFT_OK
   (popped; a waiting receiver wakes); WEFT_ELIMIT when it is full and
   WEFT_ECLOSED when it is closed (the value stays on the stack);
   WEFT_ESTALE once dropped; WEFT_EINVAL with an empty stack. */
WEFT_API int weft_channel_send(weft_state *W, weft_channel ch);
/* ch:close(): values sent before it are still received. */
WEFT_API int weft_channel_close(weft_state *W, weft_channel ch);
WEFT_API void weft_push_channel(weft_state *W, lua_State *L, weft_channel ch);
WEFT_API void weft_channel_drop(weft_state *W, weft_channel ch);

/* ---- a task's results, and calling scripts from C ---- */

/* Pushes the return values of a task started from C that returned (onto
   weft_lua(W)'s stack) and returns how many; WEFT_ESTATE while it runs
   or when it failed or was cancelled (weft_task_error says why),
   WEFT_ESTALE once released. */
WEFT_API int weft_task_push_results(weft_state *W, weft_task task);
/* Calls the function below nargs arguments on weft_lua(W)'s stack, as
   lua_pcall does, under a budget: killed past desc.runaway_us of script
   time, like a module's top level. WEFT_OK with nresults
   results (LUA_MULTRET: all) in place of the function and arguments;
   WEFT_ESCRIPT with the error value there instead when it raised, ran
   over the budget ("ran too long") or tried to wait (it cannot: a
   function called from C runs to its end; spawn a task with weft_spawn
   for what waits); WEFT_EINVAL (nothing changed) when no function sits
   below nargs values. */
WEFT_API int weft_call(weft_state *W, int nargs, int nresults);

/* ---- jobs ---- */

typedef struct weft_job_kind {
  uint32_t size;    /* sizeof(weft_job_kind): WEFT_JOB_KIND_INIT sets it */
  const char *name; /* job("name", ...) in scripts; static storage */
  /* Main thread: turns the Lua arguments L[first .. first+n-1] into job
     data the callee allocates. May raise a Lua error for bad arguments
     (before allocating). */
  void *(*prepare)(lua_State *L, int first, int n, void *user);
  /* Worker thread: does the work, writing results into data. No Lua. */
  void (*run)(void *data);
  /* Main thread: pushes the results and returns how many, or pushes an
     error value and returns -1. Not called when the future was cancelled. */
  int (*finish)(lua_State *L, void *data);
  /* Frees data: after finish, or for a cancelled or dropped job. */
  void (*free)(void *data);
  void *user; /* passed to prepare */
} weft_job_kind;
/* {sizeof(weft_job_kind), name, prepare, run, finish, free, user}. */
#define WEFT_JOB_KIND_INIT(name, prepare, run, finish, free, user)                                 \
  { sizeof(weft_job_kind), (name), (prepare), (run), (finish), (free), (user) }

/* Registers (or replaces) a job kind; the struct is copied. Built in:
   "read_file" and "find_path". WEFT_ELIMIT past 32 kinds; WEFT_EINVAL
   when kind->size is not sizeof(weft_job_kind) (WEFT_JOB_KIND_INIT). */
WEFT_API int weft_register_job(weft_state *W, const weft_job_kind *kind);

typedef struct weft_stats {
  uint32_t size;         /* sizeof(weft_stats), set by the caller (WEFT_STATS_INIT) */
  size_t lua_bytes;      /* held by the Lua state now */
  size_t lua_peak;       /* most ever held */
  size_t host_bytes;     /* held by the scheduler's pools and queues */
  uint64_t allocs;       /* allocation calls (Lua and host) since open */
  uint64_t alloc_bytes;  /* bytes those calls added since open */
  uint64_t resumes;      /* task resumes since open */
  uint32_t tasks;        /* live tasks */
  uint32_t errors;       /* error reports made */
  uint32_t jobs_pending; /* jobs submitted and not yet delivered */
  double script_ms;      /* every task's script time in the last whole frame */
} weft_stats;
#define WEFT_STATS_INIT WEFT_SIZED_INIT(weft_stats)

/* Counters for benchmarks and overlays: a steady frame leaves allocs and
   alloc_bytes unchanged. Fills *out when out->size is sizeof(weft_stats)
   (WEFT_STATS_INIT); with any other size *out is left as it is. */
WEFT_API void weft_get_stats(const weft_state *W, weft_stats *out);

/* What one task's script costs, always measured (every resume's time is
   charged to its task, to about a quarter of a millisecond per resume and
   right on average): the last frame (0 when it did not run in it), a
   moving average over about the last 30 frames, the worst frame. With a
   counted budget the time is the task's instructions, WEFT_INSTR_PER_US
   a microsecond: the same in every run, time inside C not counted. */
typedef struct weft_task_cost {
  double frame_ms, avg_ms, worst_ms;
} weft_task_cost;
/* The costs of a task: WEFT_OK, or WEFT_ESTALE when it is not live or
   never ran (out is zeroed). Figures are kept for the tasks that cost
   most lately (room for a share of the live tasks, made without
   allocating in a frame): a cheap task's may have been let go, and read
   0 until it is charged again. Group figures keep everything. */
WEFT_API int weft_get_task_cost(weft_state *W, weft_task task, weft_task_cost *out);
/* The same summed over a group: every task's in it and in the groups
   inside it, those that ended too (a signal's listeners, one task a
   fire, add up in their group). WEFT_OK (zeros before any time was
   charged), or WEFT_ESTALE once the group is gone (out is zeroed). The
   root group's (id 0) are every task's. */
WEFT_API int weft_get_group_cost(weft_state *W, weft_group g, weft_task_cost *out);
/* Starts a profile written to path when it stops: Chrome's Trace Event
   JSON (Perfetto, chrome://tracing) at path, a slice a resume timed to a
   watchdog tick (250 us; shorter resumes share their tick's time evenly,
   in order), and speedscope's JSON (a flame graph per task, from
   samples) beside it (path with .json replaced by .speedscope.json).
   WEFT_ESTATE when one is on already, WEFT_ENOMEM. */
WEFT_API int weft_profile_start(weft_state *W, const char *path);
/* Stops the profile and writes it: WEFT_OK, WEFT_EIO when a file could
   not be written, WEFT_ESTATE when none is on. */
WEFT_API int weft_profile_stop(weft_state *W);

/* ---- hot reload ---- */

/* Starts (on) or stops watching the scripts root; while on, weft_step
   reloads saved modules at the start of each frame. WEFT_EINVAL when the
   root cannot be watched. */
WEFT_API int weft_watch_scripts(weft_state *W, int on);
/* Reloads one module by name ("ai.patrol") or by path relative to the
   scripts root ("ai/patrol.lua"), with its dependents, as one transaction:
   WEFT_OK when committed, WEFT_EINVAL when it was not loaded or failed
   (the error is reported and nothing changed). */
WEFT_API int weft_reload_module(weft_state *W, const char *name);
WEFT_API int weft_reload_file(weft_state *W, const char *relpath);
/* Reload transactions committed so far. */
WEFT_API uint32_t weft_reload_count(const weft_state *W);

/* ---- record and replay ----
   A recording holds everything a run reads from outside its scripts'
   code: each frame's dt, every script file as read (at the start and by
   hot reloads, with the frame each reload landed in), the frame each job
   was delivered in, what os.time, os.clock and os.date returned, the
   math.random state at the start, the limits of the weft_desc, the
   embedder's own input and bytes, and a hash of the state after each
   frame. Replaying runs the same frames again with the recorded scripts
   (whatever is on disk now), no watcher and no clock: the scripts do
   exactly what they did. The format is in docs/programs.md. */

/* Starts recording W into a new file at path. Call after weft_open and
   before any script runs. meta (meta_len bytes, may be NULL) is the
   embedder's own, handed back by weft_tape_meta: its seed, its options.
   WEFT_EIO when the file cannot be written, WEFT_ESTATE when W already
   records, replays or has run a script. */
WEFT_API int weft_record(weft_state *W, const char *path, const void *meta, size_t meta_len);
/* The same for a state just loaded from save (save_len bytes: those
   weft_load was given), before its first frame: the recording starts
   from the save, which it holds, so a bug report is the save and the
   seconds after it. A replay loads it (weft_tape_save) before
   weft_replay. WEFT_ESTATE when W was not just loaded. */
WEFT_API int weft_record_from(weft_state *W, const char *path, const void *meta, size_t meta_len,
                              const void *save, size_t save_len);
/* Ends the recording (weft_close does it too): WEFT_OK when the whole
   file was written, WEFT_EIO when a write failed. */
WEFT_API int weft_record_stop(weft_state *W);
/* Adds one input event of the embedder to the frame about to run (the
   next weft_step); a replay hands it back before the same frame. */
WEFT_API int weft_record_input(weft_state *W, const void *data, size_t len);
/* Folds part of the embedder's state ("world") into the hash of the
   frame about to run: call it between frames, the same way when
   recording and when replaying. Nothing happens when W neither records
   nor replays. */
WEFT_API void weft_tape_hash(weft_state *W, const char *part, const void *data, size_t len);

typedef struct weft_tape weft_tape;
/* Reads a whole recording. WEFT_OK and *out, or WEFT_EIO (cannot read)
   or WEFT_EINVAL (not a weft recording, another version, truncated before
   its first checkpoint, or corrupted) with what is wrong in err (errlen
   bytes). A recording is flushed at a checkpoint every half second of
   play: one cut short (the program killed or crashed) loads up to its
   last checkpoint, and weft_tape_cut says so. */
WEFT_API int weft_tape_load(const char *path, weft_tape **out, char *err, size_t errlen);
/* The embedder's meta bytes recorded by weft_record. */
WEFT_API const void *weft_tape_meta(const weft_tape *T, size_t *len);
/* The save a recording starts from (weft_record_from): its bytes, valid
   while T lives, to weft_load into the replaying state before
   weft_replay; NULL for a recording from the start. */
WEFT_API const void *weft_tape_save(const weft_tape *T, size_t *len);
/* Frames in the recording (up to its last checkpoint when cut short). */
WEFT_API uint64_t weft_tape_frames(const weft_tape *T);
/* 1 when the file was cut short (no trailer): it holds more frames than
   weft_tape_frames, whose records were lost. */
WEFT_API int weft_tape_cut(const weft_tape *T);
/* Sets the fields of d that change what scripts do to the recorded ones
   (scripts_root, memory_limit, instr_budget, runaway_us, frame_budget,
   max_tasks), each no looser than d's own (its zero fields: weft_open's
   defaults): a recording is a file from someone else, and one made
   under looser limits (budget off, more memory) replays under the
   replaying program's, which weft_replay says (a REPLAY_LIMITS warning).
   Open the replaying state with d. Strings live as long as T. */
WEFT_API void weft_tape_desc(const weft_tape *T, weft_desc *d);
/* Frees a recording that was not handed to weft_replay. */
WEFT_API void weft_tape_free(weft_tape *T);
/* Replays T on W, which takes it over (freed by weft_close; T stays
   readable until then). Call after weft_open and before any script runs
   (after weft_load of weft_tape_save when the recording starts from a
   save). WEFT_ESTATE as for weft_record, WEFT_EINVAL when W's desc differs from
   the recorded one in a field weft_tape_desc sets other than by being
   tighter. */
WEFT_API int weft_replay(weft_state *W, weft_tape *T);
/* The frame about to run: 1 and its dt, or 0 once the recording has no
   more frames. weft_step runs it (with the recorded dt, whatever it is
   given). */
WEFT_API int weft_replay_frame(weft_state *W, double *dt);
/* The next input event recorded before the frame about to run: 1 with
   its bytes (valid while W lives), 0 when none is left. */
WEFT_API int weft_replay_input(weft_state *W, const void **data, size_t *len);
/* 0 while every frame replayed matched its recording; else 1, with the
   first difference in buf ("frame 120: world differs"). */
WEFT_API int weft_replay_check(const weft_state *W, char *buf, size_t n);
/* Frames replayed so far. */
WEFT_API uint64_t weft_replay_position(const weft_state *W);

/* ---- debugger ----
   A Debug Adapter Protocol server (the protocol of VS Code, nvim-dap and
   JetBrains editors) on a local TCP port: breakpoints (with conditions,
   hit counts and logpoints), stepping, stacks, variables and evaluation,
   exception stops; every task is a thread. Nothing is hooked until a
   client sets a breakpoint, steps or pauses. */

typedef struct weft_debug_desc {
  uint32_t size; /* sizeof(weft_debug_desc): WEFT_DEBUG_DESC_INIT sets it */
  int port;      /* TCP port on 127.0.0.1; 0: any free port */
  /* Called about 60 times a second while the program is stopped in the
     debugger (inside weft_step: no frame runs meanwhile), so a game can
     keep its window alive and show that it is paused. NULL: nothing. */
  void (*idle)(void *user);
  void *user; /* passed to idle */
} weft_debug_desc;
#define WEFT_DEBUG_DESC_INIT WEFT_SIZED_INIT(weft_debug_desc)

/* Starts listening (the desc is copied). W's log and report output also
   go to the client as output events from then on. On success returns
   WEFT_OK with the bound port in *port (may be NULL); WEFT_EINVAL when
   the port cannot be bound or desc->size is not sizeof(weft_debug_desc)
   (WEFT_DEBUG_DESC_INIT), WEFT_ENOMEM, WEFT_ESTATE when already
   listening, WEFT_ENOTSUP from a library built without the debugger
   (make DEBUGGER=0: it needs no cJSON, and the other weft_debug_ calls
   do nothing). The server ends with weft_close. */
WEFT_API int weft_debug_listen(weft_state *W, const weft_debug_desc *desc, int *port);
/* Services the client without blocking: accepts a connection, answers
   requests, reports tasks that started or ended. Call once per frame
   between weft_step calls; a pause request stops here, inside this call,
   until the client continues. Returns 1 when the client asked to end the
   program (terminate, or disconnect with terminateDebuggee), else 0
   (also when not listening). */
WEFT_API int weft_debug_poll(weft_state *W);
/* weft_debug_poll, then serves the client as its connections and
   requests come, waiting on its socket, for at most `seconds` (it may
   return sooner; without a debugger it returns at once). A program that
   sleeps between frames calls it in place of (the first part of) that
   sleep, so a client is answered as fast as it asks, not once a frame.
   A pause request stops inside this call. Returns as weft_debug_poll: 1
   (at once) when the client asked to end the program, else 0. */
WEFT_API int weft_debug_wait(weft_state *W, double seconds);
/* Blocks until a client has connected and sent configurationDone (its
   breakpoints are set), so a program can start its script under them.
   Returns 1 when the client asked to end the program meanwhile, else 0. */
WEFT_API int weft_debug_wait_ready(weft_state *W);
/* Tells the client the program ended with exit code `code` (exited and
   terminated events). Call before weft_close. */
WEFT_API void weft_debug_exit(weft_state *W, int code);

#ifdef __cplusplus
}
#endif

#endif
