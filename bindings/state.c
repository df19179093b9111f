/* The weft state: Lua with a counting allocator, the sandboxed script
   environment, the module loader, and the frame entry point. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lualib.h>

#include "state.h"
#include "save.h"
#include "base/desc.h"
#include "api.h"
#include "accounts/budget.h"
#include "base/chunks.h"
#include "base/names.h"
#include "accounts/cost.h"
#include "waitables/finalize.h"
#include "env/scriptio.h"
#include "waitables/jobs.h"
#include "base/load.h"
#include "base/log.h"
#include "env/reload.h"
#include "accounts/report.h"
#include "env/sandbox.h"
#include "base/sites.h"
#include "accounts/tape.h"
#include "core/task.h"
#include "core/wait.h"
#include "base/watchdog.h"

#include "lua_prelude.h" /* generated: bindings/lua/prelude.lua */

/* ---- modules ---- */

static void run_prelude(weft_state *W, lua_State *L) {
  weft__source_keep(L, WEFT_CHUNK_PRELUDE, (const char *)weft_lua_prelude, weft_lua_prelude_len);
  if (luaL_loadbufferx(L, (const char *)weft_lua_prelude, weft_lua_prelude_len, WEFT_CHUNK_PRELUDE,
                       "t") != LUA_OK ||
      (lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api), lua_setupvalue(L, -2, 1),
       lua_pcall(L, 0, 0, 0) != LUA_OK)) {
    weft__logf(W, WEFT_LOG_PANIC, WEFT_LOG_PRELUDE_FAILED, "the script environment failed: %s",
               lua_tostring(L, -1));
    lua_pop(L, 1);
  }
}

/* Lua's warnings (an error in a __gc metamethod, warn()) arrive in pieces
   from inside the collector, where no Lua may run: they are collected
   here and reported by weft_step once the frame's tasks have run. */
static void on_warning(void *ud, const char *msg, int tocont) {
  weft_state *W = ud;
  size_t n = strlen(W->warnbuf), m = strlen(msg);
  if (n + m >= sizeof W->warnbuf) m = sizeof W->warnbuf - n - 1;
  memcpy(W->warnbuf + n, msg, m);
  W->warnbuf[n + m] = 0;
  if (!tocont) W->warn_ready = 1;
}

static int l_warning_text(lua_State *L) {
  lua_pushfstring(L, "warning: %s", (const char *)lua_touserdata(L, 1));
  return 1;
}

void weft__flush_warnings(weft_state *W) {
  if (!W->warn_ready) return;
  lua_State *L = W->L;
  W->warn_ready = 0;
  if (strcmp(W->warnbuf, "@on") != 0 && strcmp(W->warnbuf, "@off") != 0 && lua_checkstack(L, 2)) {
    lua_pushcfunction(L, l_warning_text); /* the string allocates: protected */
    lua_pushlightuserdata(L, W->warnbuf);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) weft__report(W, L, -1, 0, NULL);
    lua_pop(L, 1);
  }
  W->warnbuf[0] = 0;
}

static int l_cancelled_tostring(lua_State *L) {
  lua_pushliteral(L, "cancelled");
  return 1;
}

static int l_timeout_tostring(lua_State *L) {
  lua_pushliteral(L, "timed out");
  return 1;
}

/* A new table in the registry (weak values when `weak`), pre-sized for
   narr array items; returns its reference. */
static int registry_table(lua_State *L, int narr, int weak) {
  lua_createtable(L, narr, 0);
  if (weak) {
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
  }
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

/* An error value recognised by identity (weft.CANCELLED, weft.TIMEOUT):
   an empty userdata whose hidden metatable prints it. Every script holds
   the same one, so it has nothing a script could change (a table's
   fields could be written, rawset included). Returns its reference. */
static int sentinel(lua_State *L, lua_CFunction tostring) {
  lua_newuserdatauv(L, 0, 0);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

static int open_lua(lua_State *L) {
  weft_state *W = lua_touserdata(L, 1);
  luaL_openlibs(L);
  W->ref_tasks = registry_table(L, 0, 0);
  W->ref_handles = registry_table(L, 0, 1);
  W->ref_pinned = registry_table(L, 0, 0);
  W->ref_groups = registry_table(L, 0, 1);
  W->ref_kept = registry_table(L, 0, 0);
  W->ref_values = registry_table(L, 0, 0);
  W->ref_syncs = registry_table(L, 0, 1);
  W->ref_cweak = registry_table(L, 0, 1);
  W->ref_timeout = sentinel(L, l_timeout_tostring);
  W->ref_cancelled = sentinel(L, l_cancelled_tostring);
  weft__open_api(W, L);
  W->ref_api = luaL_ref(L, LUA_REGISTRYINDEX);
  run_prelude(W, L);
  return 0;
}

/* Fails weft_open: says why, and frees what was made. */
static weft_state *open_failed(weft_state *W, const char *why) {
  weft__logf(W, WEFT_LOG_ERROR, WEFT_LOG_OPEN_FAILED, "weft_open: %s", why);
  weft_close(W);
  return NULL;
}

void weft_desc_init(weft_desc *d) {
  if (!d) return;
  memset(d, 0, sizeof *d);
  d->size = sizeof *d;
}

weft_state *weft_open(const weft_desc *desc) {
  weft_desc d = WEFT_DESC_INIT;
  /* A desc of another layout cannot be read, its logger included: say
     why on stderr, the one place left. */
  if (desc && desc->size != sizeof d) {
    fprintf(stderr,
            "weft: weft_open: desc.size is %lu, this library's weft_desc is %lu bytes: "
            "make it with WEFT_DESC_INIT or weft_desc_init(), against this library's weft.h\n",
            (unsigned long)desc->size, (unsigned long)sizeof d);
    return NULL;
  }
  if (desc) d = *desc;
  weft_memory mem;
  weft__mem_init(&mem, &d);
  weft_state *W = mem.alloc(mem.ud, NULL, 0, sizeof *W);
  if (!W) {
    weft__log_desc(&d, WEFT_LOG_ERROR, WEFT_LOG_OPEN_FAILED, "weft_open: out of memory");
    return NULL;
  }
  memset(W, 0, sizeof *W);
  W->bud = &W->bud_idle;
  W->mem = mem;
  W->desc = d;
  weft__desc_defaults(&W->desc);
  W->cost.slow_us = W->desc.slow_task_us == UINT32_MAX ? 0 : W->desc.slow_task_us;
  W->cost.grecs.elem_size = sizeof(weft_cost_rec);
  W->mem.limit = W->desc.memory_limit;
  W->root = weft__mem_strdup(W, W->desc.scripts_root ? W->desc.scripts_root : "scripts");
  W->desc.scripts_root = W->root;
  W->assets = weft__mem_strdup(W, W->desc.assets_root ? W->desc.assets_root : "assets");
  W->desc.assets_root = W->assets;
  if (!W->root || !W->assets || !weft__mem_open_reserve(W)) return open_failed(W, "out of memory");
  weft__load_init(W);
  W->ref_on_error = LUA_NOREF;
  W->sites = weft__sites_new(W);
  weft_sched_desc sd = {0};
  sd.alloc = weft__host_alloc;
  sd.alloc_ud = W;
  sd.frame_budget = W->desc.frame_budget;
  sd.max_tasks = W->desc.max_tasks;
  sd.task_udata_size = sizeof(ltask);
  sd.timer_done = weft__timer_done;
  sd.user = W;
  W->S = weft__sched_create(&sd);
  W->sync = weft__sync_create(weft__host_alloc, W);
  weft__task_roots_init(); /* the tasks' threads are roots of its collector */
  W->L = lua_newstate(weft__lua_alloc, W);
  if (!W->sites || !W->S || !W->sync || !W->L) return open_failed(W, "out of memory");
  W->curL = W->L;
  weft__thread_set_task(W->L, 0); /* threads copy it: 0 = not a task */
  lua_setwarnf(W->L, on_warning, W);
  /* Watched budgets where the watchdog can run; counted ones otherwise. */
  if (W->desc.frame_time_budget_us != WEFT_BUDGET_OFF)
    W->wd.frame_us = W->desc.frame_time_budget_us;
  W->watching = W->desc.instr_budget != WEFT_BUDGET_OFF &&
                W->desc.time_budget_us != WEFT_BUDGET_COUNTED && weft__budget_watch(W) == 0;
  weft__budget_setup(W);
  if (W->watching && W->wd.frame_us) weft__sched_set_time_flag(W->S, &W->wd.frame_over);
  weft__cost_pick_way(W);
  weft__cost_new_group(W, weft__sched_root(W->S));
  lua_pushcfunction(W->L, open_lua);
  lua_pushlightuserdata(W->L, W);
  if (lua_pcall(W->L, 1, 0, 0) != LUA_OK) {
    const char *m = lua_tostring(W->L, -1);
    return open_failed(W, m ? m : "the script environment failed");
  }
  if (weft__open_modules(W) != WEFT_OK) return open_failed(W, "the module system failed");
  if (weft__save_open(W) != WEFT_OK) return open_failed(W, "out of memory");
  return W;
}

/* True while W steps or runs a task: from there (a verb, a job's finish,
   the report or log callback) a step or a close would pull the state out
   from under the code that called it. */
static int busy(const weft_state *W) { return W->in_step || W->cur || W->mem.in_report; }

int weft_close(weft_state *W) {
  if (!W) return 0;
  if (busy(W)) return WEFT_EBUSY;
  int leaked = 0;
  if (W->on_close) W->on_close(W);
  weft__profile_free(W);
  if (W->S && W->L) {
    /* Cancel everything while Lua is alive; cleanups may start tasks. */
    for (int round = 0; round < 8 && weft__sched_task_count(W->S) > 0; round++)
      weft__sched_cancel_group(W->S, weft__sched_root(W->S));
    weft__fin_close(W); /* each runs once, under the budget; what is left is cancelled */
    weft__io_flush(W);
    for (int round = 0; round < 8 && weft__sched_task_count(W->S) > 0; round++)
      weft__sched_cancel_group(W->S, weft__sched_root(W->S));
  }
  weft__stop_jobs(W);
  weft_watch_scripts(W, 0);
  weft__watchdog_stop(W);
  if (W->L) lua_close(W->L);              /* handles release their objects */
  WEFT_ASSERT(!W->L || W->mem.used == 0); /* Lua gave back every block */
  W->L = NULL;
  if (W->S) leaked = weft__sched_destroy(W->S);
  W->S = NULL;
  if (W->sync) leaked += weft__sync_destroy(W->sync);
  W->sync = NULL;
  weft__side_free(&W->cold, weft__host_alloc, W);
  weft__threads_free(W);
  weft__cost_free(W);
  weft__sites_free(W, W->sites);
  weft__tape_free_state(W); /* after the cleanups: they may read clocks */
  weft__mem_close_reserve(W);
  weft__mem_free_str(W, W->root);
  weft__mem_free_str(W, W->assets);
  if (W->mem.host) leaked++; /* a block of the host's was never given back */
  weft_memory mem = W->mem;
  mem.alloc(mem.ud, W, sizeof *W, 0);
  return leaked;
}

/* One frame: clocks move, finished jobs resolve their futures, then due
   timers wake and tasks run. */
static int step(weft_state *W, double dt);
/* Time a frame may give the collector after a task died for memory. */
#define RECLAIM_US 1000

int weft_step(weft_state *W, double dt) {
  if (!W || !(dt >= 0 && dt <= WEFT_MAX_DT)) return WEFT_EINVAL;
  if (busy(W)) return WEFT_EBUSY;
  W->in_step = 1;
  W->loaded = 0; /* a recording from the save it was loaded from starts before this */
  weft__watchdog_frame(&W->wd, 1);
  int rc = step(W, dt);
  weft__watchdog_frame(&W->wd, 0);
  W->in_step = 0;
  weft__budget_idle(W);
  return rc;
}

/* The frame's tasks run inside a call made the way a Lua host runs a
   script (lua.c runs its chunk inside lua_pcall): so a task's body starts
   at the C-call depth a plain Lua chunk starts at, and coroutines nest
   exactly as deep in a task as in plain Lua. */
static int l_run_frame(lua_State *L) {
  weft_state *W = lua_touserdata(L, 1);
  weft__gc_frame(W); /* finalizers first: tasks of this frame */
  weft__sched_run_frame(W->S);
  return 0;
}

static int step(weft_state *W, double dt) {
  weft__cost_frame(W);
  if (W->tape) dt = weft__tape_step_begin(W, dt);
  weft__poll_reload(W); /* commits happen before the frame's clocks move */
  int rc = weft__sched_advance(W->S, dt);
  if (rc != WEFT_OK) return rc;
  weft__poll_jobs(W);
  lua_State *L = W->L;
  lua_pushcfunction(L, l_run_frame);
  lua_pushlightuserdata(L, W);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) { /* no task's error gets here */
    weft__report(W, L, -1, 0, NULL);
    lua_pop(L, 1);
  }
  weft__flush_warnings(W);
  weft__mem_reclaim(W, RECLAIM_US);
  weft__cost_frame_end(W);
  if (W->tape) weft__tape_step_end(W);
  return WEFT_OK;
}
lua_State *weft_lua(weft_state *W) { return W->L; }
uint32_t weft_version(void) { return WEFT_VERSION; }
const char *weft_version_string(void) { return WEFT_VERSION_STRING; }
uint32_t weft_abi_version(void) { return WEFT_ABI_VERSION; }

void weft_get_stats(const weft_state *W, weft_stats *out) {
  if (!W || !out || out->size != sizeof *out) return;
  out->lua_bytes = W->mem.used;
  out->lua_peak = W->mem.peak;
  out->host_bytes = W->mem.host;
  out->allocs = W->mem.allocs;
  out->alloc_bytes = W->mem.alloc_bytes;
  out->resumes = weft__sched_resumes(W->S);
  out->tasks = weft__sched_task_count(W->S);
  out->errors = W->errors;
  out->jobs_pending = weft__jobs_waiting(W);
  out->script_ms = W->cost.last_us / 1000.0;
}

int weft_get_task_cost(weft_state *W, weft_task task, weft_task_cost *out) {
  if (!W || !out) return WEFT_EINVAL;
  if (weft__task_state(W->S, task.id) <= 0) { /* ended: its record is its slot's next task's */
    *out = (weft_task_cost){0};
    return WEFT_ESTALE;
  }
  if (!weft__cost_of(W, task.id, &out->frame_ms, &out->avg_ms, &out->worst_ms)) return WEFT_ESTALE;
  return WEFT_OK;
}

int weft_get_group_cost(weft_state *W, weft_group g, weft_task_cost *out) {
  if (!W || !out) return WEFT_EINVAL;
  weft_id id = g.id ? g.id : weft__sched_root(W->S);
  if (!weft__cost_of_group(W, id, &out->frame_ms, &out->avg_ms, &out->worst_ms)) return WEFT_ESTALE;
  return WEFT_OK;
}

void weft_push_api(weft_state *W) { lua_rawgeti(W->L, LUA_REGISTRYINDEX, W->ref_api); }

/* kept[id] = handle, for (kept, id, handle) at 1..3 (protected). */
static int l_keep_task(lua_State *L) {
  lua_rawset(L, 1);
  return 0;
}

/* Protected (the group's id at 1, 0 for the root; the function at 2,
   then its arguments): starts the task in that group, kept for C. */
static int l_cspawn(lua_State *L) {
  weft_state *W = weft__get(L);
  weft_id g = (weft_id)lua_tointeger(L, 1);
  lua_remove(L, 1);
  if (g && !weft__group_live(W->S, g)) return luaL_error(L, "the group is gone");
  int n = lua_gettop(L);
  weft_id id = weft__new_task_handle(W, L, 1, n - 1, g, 0);
  lua_pushcfunction(L, l_keep_task);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_kept);
  lua_pushinteger(L, (lua_Integer)id);
  lua_pushvalue(L, -4);
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) { /* the new task is taken back */
    weft__discard_task(W, L, id);
    return lua_error(L);
  }
  lua_pop(L, 1);
  lua_pushinteger(L, (lua_Integer)id);
  weft__run_now(W, id); /* inside this call: see l_run_frame */
  /* Outside a frame (the file a host runs before its first step), the
     tasks the new one woke run now, as later tasks of a frame's pass do. */
  if (!W->in_step && !W->cur && !W->mem.in_report) weft__sched_run_ready(W->S);
  return 1;
}

weft_task weft_spawn(weft_state *W, int nargs) {
  return weft_group_spawn(W, (weft_group){0}, nargs);
}

weft_task weft_group_spawn(weft_state *W, weft_group g, int nargs) {
  weft_task none = {0};
  if (!W) return none;
  lua_State *L = W->L;
  if (nargs < 0 || lua_gettop(L) < nargs + 1 || !lua_checkstack(L, 2)) {
    snprintf(W->errbuf, sizeof W->errbuf,
             "weft_spawn: %d argument(s) and a function expected on "
             "the stack, found %d value(s)",
             nargs, lua_gettop(L));
    return none;
  }
  lua_pushcfunction(L, l_cspawn);
  lua_insert(L, -(nargs + 2));
  lua_pushinteger(L, (lua_Integer)g.id);
  lua_insert(L, -(nargs + 2));
  if (lua_pcall(L, nargs + 2, 1, 0) != LUA_OK) {
    snprintf(W->errbuf, sizeof W->errbuf, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return none;
  }
  weft_task t = {(weft_id)lua_tointeger(L, -1)};
  lua_pop(L, 1);
  return t;
}

/* What to load: a file, or source text with its chunk name. */
typedef struct chunk_args {
  const char *path, *src, *name;
  size_t len;
  int argc; /* the chunk's arguments (...) */
  const char *const *argv;
} chunk_args;

/* Protected loading for weft_run_file / weft_run_string (chunk_args at
   1): pushes the function in a new environment and its argc arguments,
   or raises the message. */
static int l_load_chunk(lua_State *L) {
  weft_state *W = weft__get(L);
  chunk_args *a = lua_touserdata(L, 1);
  lua_settop(L, 0);
  if (a->path) {
    if (!weft__load_script(W, L, a->path)) return lua_error(L);
    lua_remove(L, 1); /* env: the function is on top */
  } else {
    weft__source_keep(L, a->name, a->src, a->len);
    if (luaL_loadbufferx(L, a->src, a->len, a->name, "t") != LUA_OK) return lua_error(L);
    weft__new_env(W, L);
    lua_setupvalue(L, -2, 1);
  }
  luaL_checkstack(L, a->argc, "too many arguments");
  for (int i = 0; i < a->argc; i++) lua_pushstring(L, a->argv[i]);
  return 1 + a->argc;
}

/* Names the task whose id is at 1 after the C string at 2, as t.name =
   would (protected: the handle and the string allocate). */
static int l_name_task(lua_State *L) {
  weft_state *W = weft__get(L);
  weft__push_task(W, L, (weft_id)lua_tointeger(L, 1));
  if (lua_isnil(L, -1)) return 0;
  lua_pushstring(L, (const char *)lua_touserdata(L, 2));
  lua_setfield(L, -2, "name");
  return 0;
}

/* Runs l_load_chunk (on the stack with its chunk_args) and spawns what
   it loaded with its argc arguments. */
static int run_loaded(weft_state *W, int argc, weft_task *task, const char **err) {
  lua_State *L = W->L;
  task->id = 0;
  if (lua_pcall(L, 1, 1 + argc, 0) != LUA_OK) {
    const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "cannot load the script";
    snprintf(W->errbuf, sizeof W->errbuf, "%s", m);
    lua_pop(L, 1);
    if (err) *err = W->errbuf;
    return WEFT_EINVAL;
  }
  *task = weft_spawn(W, argc);
  if (!task->id) {
    if (err) *err = W->errbuf;
    return WEFT_ENOMEM;
  }
  return WEFT_OK;
}

int weft_run_file(weft_state *W, const char *path, weft_task *task, const char **err) {
  return weft_run_file_args(W, path, 0, NULL, task, err);
}

int weft_run_file_args(weft_state *W, const char *path, int argc, const char *const *argv,
                       weft_task *task, const char **err) {
  if (!W || !path || !task || argc < 0 || (argc && !argv)) return WEFT_EINVAL;
  lua_State *L = W->L;
  if (!lua_checkstack(L, 4)) return WEFT_ENOMEM;
  chunk_args a = {.path = path, .argc = argc, .argv = argv};
  lua_pushcfunction(L, l_load_chunk);
  lua_pushlightuserdata(L, &a);
  int rc = run_loaded(W, argc, task, err);
  if (rc == WEFT_OK && weft__task_state(W->S, task->id) > 0) { /* name it after its file */
    lua_pushcfunction(L, l_name_task);
    lua_pushinteger(L, (lua_Integer)task->id);
    lua_pushlightuserdata(L, (void *)path);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) lua_pop(L, 1); /* keeps its default name */
  }
  return rc;
}

int weft_run_string(weft_state *W, const char *name, const char *src, size_t len, weft_task *task,
                    const char **err) {
  if (!W || !name || !src || !task) return WEFT_EINVAL;
  lua_State *L = W->L;
  if (!lua_checkstack(L, 4)) return WEFT_ENOMEM;
  chunk_args a = {.src = src, .name = name, .len = len};
  lua_pushcfunction(L, l_load_chunk);
  lua_pushlightuserdata(L, &a);
  return run_loaded(W, 0, task, err);
}

/* Pushes the kept handle of a task started from C, or nil. */
static thandle *kept(weft_state *W, weft_id id) {
  lua_rawgeti(W->L, LUA_REGISTRYINDEX, W->ref_kept);
  lua_rawgeti(W->L, -1, (lua_Integer)id);
  lua_remove(W->L, -2);
  return luaL_testudata(W->L, -1, WEFT_TASK_MT);
}

int weft_task_result(weft_state *W, weft_task task) {
  thandle *h = kept(W, task.id);
  int r = WEFT_ESTALE;
  if (h) {
    switch (h->final) {
    case WEFT_TASK_DONE:
      r = WEFT_DONE;
      break;
    case WEFT_TASK_FAILED:
      r = WEFT_FAILED;
      break;
    case WEFT_TASK_CANCELLED:
      r = WEFT_CANCELLED;
      break;
    default:
      r = WEFT_RUNNING;
    }
  }
  lua_pop(W->L, 1);
  return r;
}

const char *weft_task_error(weft_state *W, weft_task task) {
  if (!task.id) return W->errbuf; /* why the last weft_spawn or weft_run_* failed */
  thandle *h = kept(W, task.id);
  W->errbuf[0] = 0;
  if (h && (h->final == WEFT_TASK_FAILED || h->final == WEFT_TASK_CANCELLED)) {
    lua_getiuservalue(W->L, -1, 1);
    snprintf(W->errbuf, sizeof W->errbuf, "%s", weft__tostring(W->L, -1));
    lua_pop(W->L, 2);
  }
  lua_pop(W->L, 1);
  return W->errbuf;
}

int weft__kept_results(weft_state *W, uint64_t id) {
  lua_State *L = W->L;
  thandle *h = kept(W, id);
  if (!h || h->final != WEFT_TASK_DONE) {
    lua_pop(L, 1);
    return h ? WEFT_ESTATE : WEFT_ESTALE;
  }
  lua_getiuservalue(L, -1, 1);
  lua_remove(L, -2);
  if (!h->packed) {
    if (!lua_isnil(L, -1)) return 1;
    lua_pop(L, 1); /* none */
    return 0;
  }
  int t = lua_gettop(L);
  lua_getfield(L, t, "n");
  int n = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (!lua_checkstack(L, n)) {
    lua_pop(L, 1);
    return WEFT_ENOMEM;
  }
  for (int i = 1; i <= n; i++) lua_rawgeti(L, t, i);
  lua_remove(L, t);
  return n;
}

void weft_task_drop(weft_state *W, weft_task task) {
  lua_rawgeti(W->L, LUA_REGISTRYINDEX, W->ref_kept);
  lua_pushnil(W->L);
  lua_rawseti(W->L, -2, (lua_Integer)task.id);
  lua_pop(W->L, 1);
}

int weft_cancel(weft_state *W, weft_task task) {
  if (!W) return WEFT_EINVAL;
  int rc = weft__task_cancel(W->S, task.id);
  return rc == WEFT_EBUSY ? WEFT_OK : rc;
}

void weft_describe_wait(weft_state *W, weft_task task, char *buf, size_t n) {
  if (!W || !buf || n == 0) return;
  weft__wait_describe(W->S, task.id, buf, n);
}
