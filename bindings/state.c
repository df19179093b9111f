/* The weft state: Lua with a counting allocator, the sandboxed script
   environment, the module loader, and the frame entry point. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lualib.h>

#include "internal.h"

#define HEADROOM (1u << 20) /* bytes past the limit allowed while reporting */

/* The Lua allocator: counts bytes and refuses growth past the limit, so a
   script that hoards memory fails with "not enough memory" instead of
   taking the process down. */
/* ---- the reserve ----

   Memory kept aside for putting things back: while W->in_rollback is set
   (a failed reload undoing its merges), an allocation that fails is
   served from this block instead, bump-allocated; its blocks are given
   back as Lua frees them, and the block is reused once all are. */
#define RESERVE (256u << 10)

static int in_reserve(const weft_state *W, const void *p) {
  return W->reserve && (const char *)p >= W->reserve && (const char *)p < W->reserve + RESERVE;
}

static void *reserve_take(weft_state *W, size_t n) {
  size_t at = (W->reserve_used + 15) & ~(size_t)15;
  if (!W->reserve || at > RESERVE || n > RESERVE - at) return NULL;
  W->reserve_used = at + n;
  W->reserve_live++;
  return W->reserve + at;
}

static void reserve_give(weft_state *W) {
  if (--W->reserve_live == 0) W->reserve_used = 0;
}

static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  weft_state *W = ud;
  size_t old = ptr ? osize : 0;
  int reserved = ptr && in_reserve(W, ptr);
  if (reserved && nsize <= old && nsize > 0) { /* shrinking: stays where it is */
    W->mem -= old - nsize;
    return ptr;
  }
  if (nsize == 0) {
    if (reserved)
      reserve_give(W);
    else
      free(ptr);
    W->mem -= old;
    return NULL;
  }
  void *p = NULL;
  int refused = 0;
  if (nsize > old) {
    size_t limit = W->mem_limit + (W->in_report ? HEADROOM : 0);
    refused = W->mem - old + nsize > limit ||
              (W->desc.fail_alloc && W->desc.fail_alloc(W->desc.user, nsize));
  }
  if (!refused) p = reserved ? malloc(nsize) : realloc(ptr, nsize);
  if (!p && W->in_rollback) p = reserve_take(W, nsize);
  if (!p) return NULL;
  if (reserved || (ptr && in_reserve(W, p))) { /* moved into or out of the reserve */
    memcpy(p, ptr, old < nsize ? old : nsize);
    if (reserved)
      reserve_give(W);
    else
      free(ptr);
  }
  W->allocs++;
  if (nsize > old) W->alloc_bytes += nsize - old;
  W->mem = W->mem - old + nsize;
  if (W->mem > W->mem_peak) W->mem_peak = W->mem;
  return p;
}

static void default_log(const char *line) {
  fputs(line, stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

static int l_print(lua_State *L) {
  weft_state *W = weft_get(L);
  int n = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; i++) {
    size_t len;
    const char *s = luaL_tolstring(L, i, &len);
    if (i > 1) luaL_addchar(&b, '\t');
    luaL_addvalue(&b);
    (void)s;
  }
  luaL_pushresult(&b);
  if (W->desc.log)
    W->desc.log(W->desc.user, lua_tostring(L, -1));
  else
    default_log(lua_tostring(L, -1));
  return 0;
}

/* ---- environments ---- */

/* Pushes a fresh environment: a table whose missing keys come from the
   shared script API. Writes stay in it. */
static void new_env(weft_state *W, lua_State *L) {
  lua_createtable(L, 0, 2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_env_mt);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "_G");
}

/* Text-only load; the environment defaults to a fresh script environment. */
static int l_load(lua_State *L) {
  weft_state *W = weft_get(L);
  size_t len;
  const char *s = lua_tolstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, s ? s : "=(load)");
  const char *mode = luaL_optstring(L, 3, "t");
  if (strchr(mode, 'b')) return luaL_argerror(L, 3, "binary chunks are not allowed");
  int has_env = !lua_isnone(L, 4);
  int st;
  if (!s) return luaL_argerror(L, 1, "string expected (loading from a function is not supported)");
  st = luaL_loadbufferx(L, s, len, name, "t");
  if (st != LUA_OK) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  if (has_env)
    lua_pushvalue(L, 4);
  else
    new_env(W, L);
  if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  return 1;
}

static int l_collectgarbage(lua_State *L) {
  static const char *const opts[] = {"count", "step", NULL};
  int o = luaL_checkoption(L, 1, "count", opts);
  if (o == 0) {
    int k = lua_gc(L, LUA_GCCOUNT, 0);
    int b = lua_gc(L, LUA_GCCOUNTB, 0);
    lua_pushnumber(L, (lua_Number)k + ((lua_Number)b / 1024));
    return 1;
  }
  lua_pushboolean(L, lua_gc(L, LUA_GCSTEP, (int)luaL_optinteger(L, 2, 0)));
  return 1;
}

/* ---- modules ---- */

/* Reads a whole file into a Lua string on the stack; NULL + message on
   failure. */
static int push_file(lua_State *L, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    lua_pushfstring(L, "cannot open %s: %s", path, strerror(errno));
    return 0;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) luaL_addlstring(&b, buf, n);
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    lua_pushfstring(L, "cannot read %s", path);
    return 0;
  }
  luaL_pushresult(&b);
  return 1;
}

/* Loads path as a chunk named "@path" in a fresh environment (pushed
   below the function). Returns 0 with the message pushed on failure. */
int weft_load_script(weft_state *W, lua_State *L, const char *path) {
  if (!push_file(L, path)) return 0;
  size_t len;
  const char *src = lua_tolstring(L, -1, &len);
  lua_pushfstring(L, "@%s", path);
  int st = luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t");
  lua_remove(L, -2); /* chunk name */
  lua_remove(L, -2); /* source */
  if (st != LUA_OK) {
    /* Syntax errors name the file already; others (a binary chunk) not. */
    const char *msg = lua_tostring(L, -1);
    if (msg && strncmp(msg, path, strlen(path)) != 0) {
      lua_pushfstring(L, "%s: %s", path, msg);
      lua_remove(L, -2);
    }
    return 0;
  }
  new_env(W, L);
  lua_pushvalue(L, -1);
  lua_setupvalue(L, -3, 1);
  lua_insert(L, -2); /* env, fn */
  return 1;
}

/* ---- building the script environment ---- */

/* Copies the listed fields of the library table at L[lib] into a new
   table. */
static void copy_fields(lua_State *L, int lib, const char *const *names) {
  lua_newtable(L);
  for (const char *const *n = names; *n; n++) {
    lua_getfield(L, lib, *n);
    lua_setfield(L, -2, *n);
  }
}

/* Copies a whole library table (shallow). */
static void copy_lib(lua_State *L, const char *name) {
  lua_getglobal(L, name);
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, -3)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  lua_remove(L, -2);
}

/* ---- finalizers ----
   Lua runs __gc metamethods inside the collector with hooks off, where no
   budget could stop a loop. So a script's __gc does not run there: the
   collector only queues the call, and after the frame each queued call
   runs as a task named "__gc" (budgeted; its errors reported like any). */

static int l_gc_defer(lua_State *L) {
  weft_state *W = weft_get(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_finalizers);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_rawseti(L, -2, ++W->nfinal);
  lua_pushvalue(L, 1); /* the object lives on until its call has run */
  lua_rawseti(L, -2, ++W->nfinal);
  return 0;
}

/* setmetatable for scripts: a __gc function is wrapped so that it queues
   (see above). Lua only registers a finalizer when the metatable has __gc
   at this call, so a __gc added later never runs at all. */
static int l_setmetatable(lua_State *L) {
  int t = lua_type(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  if (t == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    lua_rawget(L, 2);
    if (lua_type(L, -1) != LUA_TNIL && !(lua_tocfunction(L, -1) == l_gc_defer)) {
      lua_pushcclosure(L, l_gc_defer, 1);
      lua_pushliteral(L, "__gc");
      lua_insert(L, -2);
      lua_rawset(L, 2);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1)); /* the real setmetatable */
  lua_insert(L, 1);
  lua_call(L, 2, 1);
  return 1;
}

static int l_run_finalizers(lua_State *L) {
  weft_state *W = weft_get(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_finalizers);
  int t = lua_gettop(L), n = W->nfinal;
  lua_newtable(L); /* calls queued while these run wait for the next frame */
  lua_rawseti(L, LUA_REGISTRYINDEX, W->ref_finalizers);
  W->nfinal = 0;
  for (int i = 1; i + 1 <= n; i += 2) {
    lua_rawgeti(L, t, i);
    lua_rawgeti(L, t, i + 1);
    weft_id id = weft_new_task(W, L, -2, 1, weft_sched_root(W->S), 0);
    lua_pushliteral(L, "__gc");
    lua_setiuservalue(L, -2, 2);
    lua_settop(L, t);
    weft_run_now(W, id);
  }
  return 0;
}

static void run_finalizers(weft_state *W) {
  if (!W->nfinal) return;
  lua_State *L = W->L;
  if (!lua_checkstack(L, 8)) return;
  lua_pushcfunction(L, l_run_finalizers);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
    weft_report(W, L, -1, 0, NULL);
    lua_pop(L, 1);
  }
}

/* ---- read-only library tables ---- */

static int l_ro_index(lua_State *L) {
  lua_getiuservalue(L, 1, 1);
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

static int l_ro_newindex(lua_State *L) {
  return luaL_error(L, "attempt to modify read-only library table (field '%s')",
                    lua_isstring(L, 2) ? lua_tostring(L, 2) : luaL_typename(L, 2));
}

static int l_ro_next(lua_State *L) {
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, 1);
  lua_replace(L, 1);
  return lua_next(L, 1) ? 2 : 0;
}

static int l_ro_pairs(lua_State *L) {
  lua_pushcfunction(L, l_ro_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

/* Replaces the table api[name] by a read-only view shared by every
   script: a userdata (so rawset cannot write through it) that reads,
   iterates (pairs) and refuses writes. */
static void freeze(lua_State *L, int api, const char *name) {
  api = lua_absindex(L, api);
  lua_getfield(L, api, name);
  lua_newuserdatauv(L, 0, 1);
  lua_insert(L, -2);
  lua_setiuservalue(L, -2, 1);
  if (luaL_newmetatable(L, "weft.readonly")) {
    static const luaL_Reg m[] = {{"__index", l_ro_index},
                                 {"__newindex", l_ro_newindex},
                                 {"__pairs", l_ro_pairs},
                                 {NULL, NULL}};
    luaL_setfuncs(L, m, 0);
    lua_pushliteral(L, "library");
    lua_setfield(L, -2, "__name");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
  }
  lua_setmetatable(L, -2);
  lua_setfield(L, api, name);
}

/* Called once the API is complete: library tables become read-only. */
static void lock_api(weft_state *W, lua_State *L) {
  static const char *const libs[] = {"string", "table", "math", "utf8", "coroutine",
                                     "os",     "debug", "weft", NULL};
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
  for (const char *const *n = libs; *n; n++) freeze(L, -1, *n);
  lua_pop(L, 1);
}

static int l_lock_api(lua_State *L) {
  lock_api(weft_get(L), L);
  return 0;
}

static void build_api(weft_state *W, lua_State *L) {
  lua_newtable(L);
  int api = lua_gettop(L);
  static const char *const base[] = {"assert",       "error",    "ipairs",   "next",
                                     "pairs",        "pcall",    "rawequal", "rawget",
                                     "rawlen",       "rawset",   "select",   "setmetatable",
                                     "getmetatable", "tonumber", "tostring", "type",
                                     "xpcall",       "_VERSION", NULL};
  lua_pushglobaltable(L);
  for (const char *const *n = base; *n; n++) {
    lua_getfield(L, -1, *n);
    lua_setfield(L, api, *n);
  }
  lua_pop(L, 1);
  static const char *const libs[] = {"string", "table", "math", "utf8", "coroutine", NULL};
  for (const char *const *n = libs; *n; n++) {
    copy_lib(L, *n);
    lua_setfield(L, api, *n);
  }
  /* No string.dump (it makes binary chunks); pattern functions guarded;
     strings index the copy. */
  lua_getfield(L, api, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  weft_guard_patterns(L, -1);
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 0); /* getmetatable("") cannot reach it */
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 3);
  static const char *const osf[] = {"clock", "time", "date", NULL};
  lua_getglobal(L, "os");
  copy_fields(L, lua_gettop(L), osf);
  lua_setfield(L, api, "os");
  lua_pop(L, 1);
  static const char *const dbgf[] = {"traceback", NULL};
  lua_getglobal(L, "debug");
  copy_fields(L, lua_gettop(L), dbgf);
  lua_setfield(L, api, "debug");
  lua_pop(L, 1);
  lua_getfield(L, api, "setmetatable");
  lua_pushcclosure(L, l_setmetatable, 1);
  lua_setfield(L, api, "setmetatable");
  static const luaL_Reg fns[] = {
      {"print", l_print}, {"load", l_load}, {"collectgarbage", l_collectgarbage}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  lua_newtable(L);
  lua_setfield(L, api, "weft");
  weft_open_tasks(W, L);
  weft_open_sync(W, L);
  weft_open_jobs(W, L);
}

static void run_prelude(weft_state *W, lua_State *L) {
  if (luaL_loadbufferx(L, weft_prelude, strlen(weft_prelude), WEFT_PRELUDE_CHUNK, "t") != LUA_OK ||
      (lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api), lua_setupvalue(L, -2, 1),
       lua_pcall(L, 0, 0, 0) != LUA_OK)) {
    fprintf(stderr, "weft: prelude failed: %s\n", lua_tostring(L, -1));
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

void weft_flush_warnings(weft_state *W) {
  if (!W->warn_ready) return;
  lua_State *L = W->L;
  W->warn_ready = 0;
  if (strcmp(W->warnbuf, "@on") != 0 && strcmp(W->warnbuf, "@off") != 0 && lua_checkstack(L, 2)) {
    lua_pushcfunction(L, l_warning_text); /* the string allocates: protected */
    lua_pushlightuserdata(L, W->warnbuf);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) weft_report(W, L, -1, 0, NULL);
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
   an empty table whose hidden metatable prints it. Returns its reference. */
static int sentinel(lua_State *L, lua_CFunction tostring) {
  lua_newtable(L);
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
  W->ref_groups = registry_table(L, 0, 1);
  W->ref_kept = registry_table(L, 0, 0);
  W->ref_values = registry_table(L, 0, 0);
  W->ref_threads = registry_table(L, 1024, 0); /* sized: keeping a thread never allocates */
  W->ref_finalizers = registry_table(L, 0, 0);
  W->ref_syncs = registry_table(L, 0, 1);
  W->ref_cweak = registry_table(L, 0, 1);
  W->ref_timeout = sentinel(L, l_timeout_tostring);
  W->ref_cancelled = sentinel(L, l_cancelled_tostring);
  build_api(W, L);
  lua_pushvalue(L, -1);
  W->ref_api = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 0); /* scripts cannot reach the shared API through it */
  lua_setfield(L, -2, "__metatable");
  W->ref_env_mt = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  run_prelude(W, L);
  return 0;
}

/* The host's allocator: plain realloc, counted like Lua's so a frame's
   allocations can be measured across both. */
static void *host_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  weft_state *W = ud;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (W->desc.fail_alloc && W->desc.fail_alloc(W->desc.user, nsize)) return NULL;
  void *p = realloc(ptr, nsize);
  if (p) {
    W->allocs++;
    if (nsize > osize || !ptr) W->alloc_bytes += nsize - (ptr ? osize : 0);
  }
  return p;
}

weft_state *weft_open(const weft_desc *desc) {
  weft_state *W = calloc(1, sizeof *W);
  if (!W) return NULL;
  if (desc) W->desc = *desc;
  if (!W->desc.memory_limit) W->desc.memory_limit = (size_t)256 << 20;
  if (!W->desc.instr_budget) W->desc.instr_budget = 1000000;
  if (W->desc.instr_budget != WEFT_BUDGET_OFF && W->desc.instr_budget > 0x7fffffff)
    W->desc.instr_budget = 0x7fffffff; /* lua_sethook takes an int */
  if (!W->desc.max_overruns) W->desc.max_overruns = 3;
  if (!W->desc.max_tasks) W->desc.max_tasks = 1000000;
  W->root = strdup(W->desc.scripts_root ? W->desc.scripts_root : "scripts");
  W->desc.scripts_root = W->root;
  W->assets = strdup(W->desc.assets_root ? W->desc.assets_root : "assets");
  W->desc.assets_root = W->assets;
  W->mem_limit = W->desc.memory_limit;
  W->reserve = malloc(RESERVE); /* untouched until needed: not resident */
  W->ref_on_error = LUA_NOREF;
  W->sites = weft_sites_new(W);
  weft_sched_desc sd = {0};
  sd.alloc = host_alloc;
  sd.alloc_ud = W;
  sd.frame_budget = W->desc.frame_budget;
  sd.max_tasks = W->desc.max_tasks;
  sd.task_udata_size = sizeof(ltask);
  sd.timer_done = weft_timer_done;
  sd.user = W;
  W->S = weft_sched_create(&sd);
  W->Y = weft_sync_create(host_alloc, W);
  W->L = lua_newstate(l_alloc, W);
  if (!W->root || !W->assets || !W->reserve || !W->sites || !W->S || !W->Y || !W->L) {
    weft_close(W);
    return NULL;
  }
  W->curL = W->L;
  *(weft_id *)lua_getextraspace(W->L) = 0; /* threads copy it: 0 = not a task */
  lua_setwarnf(W->L, on_warning, W);
  lua_pushcfunction(W->L, open_lua);
  lua_pushlightuserdata(W->L, W);
  if (lua_pcall(W->L, 1, 0, 0) != LUA_OK || weft_open_modules(W) != WEFT_OK) {
    weft_close(W);
    return NULL;
  }
  lua_pushcfunction(W->L, l_lock_api);
  if (lua_pcall(W->L, 0, 0, 0) != LUA_OK) {
    weft_close(W);
    return NULL;
  }
  return W;
}

/* True while W steps or runs a task: from there (a verb, a job's finish,
   the report or log callback) a step or a close would pull the state out
   from under the code that called it. */
static int busy(const weft_state *W) { return W->in_step || W->cur || W->in_report; }

int weft_close(weft_state *W) {
  if (!W) return 0;
  if (busy(W)) return WEFT_EBUSY;
  int leaked = 0;
  if (W->S && W->L) {
    /* Cancel everything while Lua is alive; cleanups may start tasks. */
    for (int round = 0; round < 8 && weft_sched_task_count(W->S) > 0; round++)
      weft_group_cancel(W->S, weft_sched_root(W->S));
  }
  weft_stop_jobs(W);
  weft_watch_scripts(W, 0);
  if (W->L) lua_close(W->L); /* handles release their objects */
  W->L = NULL;
  if (W->S) leaked = weft_sched_destroy(W->S);
  W->S = NULL;
  if (W->Y) leaked += weft_sync_destroy(W->Y);
  W->Y = NULL;
  weft_sites_free(W, W->sites);
  free(W->reserve);
  free(W->root);
  free(W->assets);
  free(W);
  return leaked;
}

/* One frame: clocks move, finished jobs resolve their futures, then due
   timers wake and tasks run. */
static int step(weft_state *W, double dt);

int weft_step(weft_state *W, double dt) {
  if (!W || !(dt >= 0 && dt <= WEFT_MAX_DT)) return WEFT_EINVAL;
  if (busy(W)) return WEFT_EBUSY;
  W->in_step = 1;
  int rc = step(W, dt);
  W->in_step = 0;
  return rc;
}

static int step(weft_state *W, double dt) {
  weft_poll_reload(W); /* commits happen before the frame's clocks move */
  int rc = weft_sched_advance(W->S, dt);
  if (rc != WEFT_OK) return rc;
  weft_poll_jobs(W);
  weft_sched_run_frame(W->S);
  run_finalizers(W);
  weft_flush_warnings(W);
  return WEFT_OK;
}
lua_State *weft_lua(weft_state *W) { return W->L; }
weft_sched *weft_sched_of(weft_state *W) { return W->S; }

void weft_get_stats(const weft_state *W, weft_stats *out) {
  if (!W || !out) return;
  out->lua_bytes = W->mem;
  out->lua_peak = W->mem_peak;
  out->host_bytes = weft_sched_memory(W->S);
  out->allocs = W->allocs;
  out->alloc_bytes = W->alloc_bytes;
  out->tasks = weft_sched_task_count(W->S);
  out->errors = W->errors;
  out->jobs_pending = W->J ? weft_jobs_pending(W->J) : 0;
}

void weft_push_api(weft_state *W) { lua_rawgeti(W->L, LUA_REGISTRYINDEX, W->ref_api); }

/* Protected part of weft_spawn: L[1] function, then args; the last
   argument slot carries the state. */
/* kept[id] = handle, for (kept, id, handle) at 1..3 (protected). */
static int l_keep_task(lua_State *L) {
  lua_rawset(L, 1);
  return 0;
}

static int l_cspawn(lua_State *L) {
  weft_state *W = weft_get(L);
  int n = lua_gettop(L);
  weft_id id = weft_new_task(W, L, 1, n - 1, 0, 0);
  lua_pushcfunction(L, l_keep_task);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_kept);
  lua_pushinteger(L, (lua_Integer)id);
  lua_pushvalue(L, -4);
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) { /* the new task is taken back */
    weft_discard_task(W, L, id);
    return lua_error(L);
  }
  lua_pop(L, 1);
  lua_pushinteger(L, (lua_Integer)id);
  return 1;
}

weft_id weft_spawn(weft_state *W, int nargs) {
  if (!W) return 0;
  lua_State *L = W->L;
  if (nargs < 0 || lua_gettop(L) < nargs + 1) {
    snprintf(W->errbuf, sizeof W->errbuf,
             "weft_spawn: %d argument(s) and a function expected on "
             "the stack, found %d value(s)",
             nargs, lua_gettop(L));
    return 0;
  }
  lua_pushcfunction(L, l_cspawn);
  lua_insert(L, -(nargs + 2));
  if (lua_pcall(L, nargs + 1, 1, 0) != LUA_OK) {
    snprintf(W->errbuf, sizeof W->errbuf, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  weft_id id = (weft_id)lua_tointeger(L, -1);
  lua_pop(L, 1);
  weft_run_now(W, id);
  return id;
}

/* Protected loading for weft_run_file / weft_run_string: L[1] is a path,
   or L[1] source and L[2] chunk name. Returns the function (in a fresh
   environment) or raises the message. */
/* What to load: a file, or source text with its chunk name. */
typedef struct chunk_args {
  const char *path, *src, *name;
  size_t len;
} chunk_args;

static int l_load_chunk(lua_State *L) {
  weft_state *W = weft_get(L);
  chunk_args *a = lua_touserdata(L, 1);
  lua_settop(L, 0);
  if (a->path) {
    if (!weft_load_script(W, L, a->path)) return lua_error(L);
    return 1; /* env, fn: the function is on top */
  }
  if (luaL_loadbufferx(L, a->src, a->len, a->name, "t") != LUA_OK) return lua_error(L);
  new_env(W, L);
  lua_setupvalue(L, -2, 1);
  return 1;
}

/* handle.name = the C string at 2 (protected: the string allocates). */
static int l_name_task(lua_State *L) {
  if (!lua_touserdata(L, 1)) return 0;
  lua_pushstring(L, (const char *)lua_touserdata(L, 2));
  lua_setiuservalue(L, 1, 2);
  return 0;
}

static int run_loaded(weft_state *W, int nargs, weft_id *task, const char **err) {
  lua_State *L = W->L;
  *task = 0;
  if (lua_pcall(L, nargs, 1, 0) != LUA_OK) {
    const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "cannot load the script";
    snprintf(W->errbuf, sizeof W->errbuf, "%s", m);
    lua_pop(L, 1);
    if (err) *err = W->errbuf;
    return WEFT_EINVAL;
  }
  *task = weft_spawn(W, 0);
  if (!*task) {
    if (err) *err = W->errbuf;
    return WEFT_ENOMEM;
  }
  return WEFT_OK;
}

int weft_run_file(weft_state *W, const char *path, weft_id *task, const char **err) {
  if (!W || !path || !task) return WEFT_EINVAL;
  lua_State *L = W->L;
  if (!lua_checkstack(L, 4)) return WEFT_ENOMEM;
  chunk_args a = {path, NULL, NULL, 0};
  lua_pushcfunction(L, l_load_chunk);
  lua_pushlightuserdata(L, &a);
  int rc = run_loaded(W, 1, task, err);
  if (rc == WEFT_OK && weft_task_state(W->S, *task) > 0) { /* name it after its file */
    weft_push_task(W, L, *task);
    lua_pushcfunction(L, l_name_task);
    lua_pushvalue(L, -2);
    lua_pushlightuserdata(L, (void *)path);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) lua_pop(L, 1); /* keeps its default name */
    lua_pop(L, 1);
  }
  return rc;
}

int weft_run_string(weft_state *W, const char *name, const char *src, size_t len, weft_id *task,
                    const char **err) {
  if (!W || !name || !src || !task) return WEFT_EINVAL;
  lua_State *L = W->L;
  if (!lua_checkstack(L, 4)) return WEFT_ENOMEM;
  chunk_args a = {NULL, src, name, len};
  lua_pushcfunction(L, l_load_chunk);
  lua_pushlightuserdata(L, &a);
  return run_loaded(W, 1, task, err);
}

/* Pushes the kept handle of a task started from C, or nil. */
static thandle *kept(weft_state *W, weft_id id) {
  lua_rawgeti(W->L, LUA_REGISTRYINDEX, W->ref_kept);
  lua_rawgeti(W->L, -1, (lua_Integer)id);
  lua_remove(W->L, -2);
  return luaL_testudata(W->L, -1, WEFT_TASK_MT);
}

int weft_task_result(weft_state *W, weft_id id) {
  thandle *h = kept(W, id);
  int r = h ? h->final : WEFT_ESTALE;
  lua_pop(W->L, 1);
  return r;
}

const char *weft_task_error(weft_state *W, weft_id id) {
  if (!id) return W->errbuf; /* why the last weft_spawn or weft_run_* failed */
  thandle *h = kept(W, id);
  W->errbuf[0] = 0;
  if (h && (h->final == WEFT_TASK_FAILED || h->final == WEFT_TASK_CANCELLED)) {
    lua_getiuservalue(W->L, -1, 1);
    snprintf(W->errbuf, sizeof W->errbuf, "%s", weft_tostring(W->L, -1));
    lua_pop(W->L, 2);
  }
  lua_pop(W->L, 1);
  return W->errbuf;
}

void weft_release(weft_state *W, weft_id id) {
  lua_rawgeti(W->L, LUA_REGISTRYINDEX, W->ref_kept);
  lua_pushnil(W->L);
  lua_rawseti(W->L, -2, (lua_Integer)id);
  lua_pop(W->L, 1);
}

int weft_cancel(weft_state *W, weft_id id) {
  if (!W) return WEFT_EINVAL;
  int rc = weft_task_cancel(W->S, id);
  return rc == WEFT_EBUSY ? WEFT_OK : rc;
}

void weft_describe_wait(weft_state *W, weft_id id, char *buf, size_t n) {
  if (!W || !buf || n == 0) return;
  weft_wait_describe(W->S, id, buf, n);
}
