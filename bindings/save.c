/* Saving the running world between two frames and loading it into a
   fresh state (weft_save, weft_load): the scripts' Lua values, coroutines
   mid-wait included (the persister, base/persist.h), and beside them
   what C keeps of them: the scheduler (tasks, wait records, timers,
   groups, clocks), signals and channels, spawn sites, costs, and the
   state's counters. A save names what it does not write: weft's C
   functions and continuations (base/names.h), Lua's libraries, the
   objects a fresh state makes the same way when it opens.

   The file: a header (magic, format, this build's fingerprint, the body's
   length and checksum), then the body: the Lua graph, then the C parts
   in load order. A load checks the header, then every part as it reads
   it; a save that does not fit leaves the state as a failed load does:
   to be closed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounts/cost.h"
#include "accounts/handles.h"
#include "accounts/tape.h"
#include "base/chunks.h"
#include "base/tapefile.h"
#include "base/internal.h"
#include "base/names.h"
#include "base/persist.h"
#include "base/persist_crc.h"
#include "base/sites.h"
#include "save.h"
#include "core/task.h"
#include "waitables/combinators.h"
#include "waitables/finalize.h"
#include "waitables/future.h"
#include "waitables/jobs.h"
#include "env/scriptio.h"

#define SAVE_MAGIC "WEFTSAVE"
#define FORMAT 3u

/* ---- the byte streams ---- */

/* Writing: into a Lua buffer-less growing block of the state's
   allocator. */
typedef struct outbuf {
  weft_state *W;
  char *p;
  size_t n, cap;
} outbuf;

static int out_io(void *ud, void *p, size_t n) {
  outbuf *b = ud;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n) cap *= 2;
    char *q = weft__host_alloc(b->W, b->p, b->cap, cap);
    if (!q) return 0;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  return 1;
}

typedef struct inbuf {
  const char *p;
  size_t n, at;
} inbuf;

static int in_io(void *ud, void *p, size_t n) {
  inbuf *b = ud;
  if (n > b->n - b->at) return 0;
  memcpy(p, b->p + b->at, n);
  b->at += n;
  return 1;
}

/* CRC-32 (IEEE), the persister's (eight bytes a step). */
static uint32_t crc32_of(const void *p, size_t n) { return weft__persist_crc(0, p, n); }

/* What the C parts' bytes depend on: a save loads only into the build
   that made it. */
static uint32_t fingerprint(weft_state *W) {
  uint32_t v[] = {FORMAT,
                  weft_version(),
                  LUA_VERSION_NUM,
                  (uint32_t)sizeof(void *),
                  (uint32_t)sizeof(ltask),
                  (uint32_t)sizeof(ltask_cold),
                  (uint32_t)sizeof(weft_cost_rec),
                  (uint32_t)sizeof(lua_Integer),
                  (uint32_t)sizeof(lua_Number),
                  W->desc.max_tasks};
  return crc32_of(v, sizeof v);
}

/* ---- names ---- */

/* Futures' lists of waiters live in their handles: a save numbers each
   future it writes, and a scheduler record names its list by that
   number (registry tables, made for one save or load). */
#define FUT_SAVED "weft.save.futures"  /* [light block] = number */
#define FUT_LOADED "weft.save.futures" /* [number] = light block */
#define FUT_BIT (1u << 30)             /* a list name: a future's, by number */

static void future_save(lua_State *L, void *block, size_t size, void *ud) {
  (void)ud;
  lua_getfield(L, LUA_REGISTRYINDEX, FUT_SAVED);
  lua_Integer k = (lua_Integer)luaL_len(L, -1) + 1; /* numbers 1.. in order (a border) */
  lua_pushlightuserdata(L, block);
  lua_rawget(L, -2);
  if (lua_isinteger(L, -1)) k = lua_tointeger(L, -1);
  lua_pop(L, 1);
  lua_pushinteger(L, k);
  lua_rawseti(L, -2, k); /* keeps the border moving */
  lua_pushlightuserdata(L, block);
  lua_pushinteger(L, k);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, block, size);
  uint32_t n = (uint32_t)k;
  luaL_addlstring(&b, (const char *)&n, sizeof n);
  luaL_pushresult(&b);
}

static void future_load(lua_State *L, void *block, size_t size, void *ud) {
  (void)ud;
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  uint32_t n;
  if (!s || len != size + sizeof n) luaL_error(L, "bad save: a future is damaged");
  memcpy(block, s, size);
  memcpy(&n, s + size, sizeof n);
  if (n == 0 || n >= FUT_BIT) luaL_error(L, "bad save: a future is damaged");
  lua_getfield(L, LUA_REGISTRYINDEX, FUT_LOADED);
  lua_pushlightuserdata(L, block);
  lua_rawseti(L, -2, n);
  lua_pop(L, 1);
}

static const weft__persist_saver future_saver = {future_save, future_load, NULL, sizeof(fhandle)};

/* A group's handles hold one reference each on it: a load counts them
   (registry table, made for one load), and the groups' counts are set
   from them, whatever the save says. */
#define GROUP_HANDLES "weft.save.groups" /* [group id] = handles loaded */

static void group_save(lua_State *L, void *block, size_t size, void *ud) {
  (void)ud;
  lua_pushlstring(L, block, size);
}

static void group_load(lua_State *L, void *block, size_t size, void *ud) {
  (void)ud;
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  if (!s || n != size) luaL_error(L, "bad save: a group handle is damaged");
  memcpy(block, s, size);
  weft_id id;
  memcpy(&id, block, sizeof id);
  if (lua_getfield(L, LUA_REGISTRYINDEX, GROUP_HANDLES) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_rawgeti(L, -1, (lua_Integer)id);
  lua_Integer k = lua_tointeger(L, -1);
  lua_pop(L, 1);
  lua_pushinteger(L, k + 1);
  lua_rawseti(L, -2, (lua_Integer)id);
  lua_pop(L, 1);
}

static const weft__persist_saver group_saver = {group_save, group_load, NULL, sizeof(ghandle)};

static int by_text(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Walks the table at idx and what it reaches through string keys, by
   path: keys in byte order, a table's leaves before its subtables, each
   table once, so both sides meet each value by the same path whatever
   order their tables hold their keys in (a random string seed: the
   cross builds). Calls leaf(L, path, ud) with each C function, light or
   full userdata on top. */
static void walk_leaves(lua_State *L, int idx, const char *prefix, int seen, int depth,
                        void (*leaf)(lua_State *L, const char *path, void *ud), void *ud) {
  idx = lua_absindex(L, idx);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, seen) != LUA_TNIL || depth > 8) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  lua_pushvalue(L, idx);
  lua_pushboolean(L, 1);
  lua_rawset(L, seen);
  luaL_checkstack(L, 8, NULL);
  size_t n = 0, cap = 16;
  const char **keys = lua_newuserdatauv(L, cap * sizeof *keys, 0); /* the table holds the */
  int kb = lua_gettop(L);                                          /* key strings */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    if (n == cap) {
      const char **more = lua_newuserdatauv(L, 2 * cap * sizeof *keys, 0);
      memcpy(more, keys, cap * sizeof *keys);
      lua_replace(L, kb);
      keys = more;
      cap *= 2;
    }
    keys[n++] = lua_tostring(L, -1);
  }
  qsort(keys, n, sizeof *keys, by_text);
  char path[256];
  for (size_t i = 0; i < n; i++) { /* leaves first, then tables */
    lua_getfield(L, idx, keys[i]);
    int t = lua_type(L, -1);
    if (lua_iscfunction(L, -1) || t == LUA_TUSERDATA || t == LUA_TLIGHTUSERDATA) {
      snprintf(path, sizeof path, "%s.%s", prefix, keys[i]);
      leaf(L, path, ud);
    }
    lua_pop(L, 1);
  }
  for (size_t i = 0; i < n; i++) {
    if (lua_getfield(L, idx, keys[i]) == LUA_TTABLE) {
      snprintf(path, sizeof path, "%s.%s", prefix, keys[i]);
      walk_leaves(L, -1, path, seen, depth + 1, leaf, ud);
    }
    lua_pop(L, 1);
  }
  lua_settop(L, kb - 1);
}

/* The userdata the script API holds as the state opens (weft.root,
   weft.TIMEOUT, io.stdout...), by path: the same in every state opened
   the same way, where a userdata a script puts in an API table later (a
   module's signal in package.loaded) is saved as any value. */
#define OPEN_USERDATA "weft.save.open" /* registry: [path] = userdata */

static void keep_open(lua_State *L, const char *path, void *ud) {
  int t = lua_type(L, -1);
  if (t != LUA_TUSERDATA && t != LUA_TLIGHTUSERDATA) return;
  lua_pushvalue(L, -1);
  lua_setfield(L, *(int *)ud, path);
}

/* Protected: fills OPEN_USERDATA (weft__save_open). */
static int l_save_open(lua_State *L) {
  weft_state *W = lua_touserdata(L, 1);
  lua_newtable(L);
  int open = lua_gettop(L);
  lua_newtable(L); /* seen */
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
  walk_leaves(L, -1, "api", open + 1, 0, keep_open, &open);
  lua_settop(L, open);
  lua_setfield(L, LUA_REGISTRYINDEX, OPEN_USERDATA);
  return 0;
}

int weft__save_open(weft_state *W) {
  lua_pushcfunction(W->L, l_save_open);
  lua_pushlightuserdata(W->L, W);
  if (lua_pcall(W->L, 1, 0, 0) == LUA_OK) return WEFT_OK;
  lua_pop(W->L, 1);
  return WEFT_ENOMEM;
}

/* A C function of the API, named by its first path unless it has a
   name already (Lua's, weft's own): the embedder's verbs; a function a
   script stores under another path keeps its first name. */
typedef struct leaf_names {
  int names, named; /* the names set; [light function] = true for each named */
} leaf_names;

static void name_function(lua_State *L, const char *path, void *ud) {
  leaf_names *ln = ud;
  lua_CFunction f = lua_tocfunction(L, -1);
  if (!f) return;
  lua_pushcfunction(L, f);
  if (lua_rawget(L, ln->named) == LUA_TNIL) {
    weft__persist_name(L, ln->names, path, -2);
    lua_pushcfunction(L, f);
    lua_pushboolean(L, 1);
    lua_rawset(L, ln->named);
  }
  lua_pop(L, 1);
}

static const char *const plain_types[] = {
    WEFT_TASK_MT,   "weft.signal", "weft.channel", "weft.connection", "weft.file",
    "weft.finally", NULL};

/* Pushes the names set of W's state: the same calls on both sides give
   each named object the same name. */
static void push_names(weft_state *W, lua_State *L) {
  weft__persist_names(L);
  int names = lua_gettop(L);
  weft__persist_name_lua(L, names);
  /* what Lua's own libraries keep in the registry (scripts reach none) */
  static const char *const lua_keys[] = {"_CLIBS", LUA_FILEHANDLE, "_IO_input", "_IO_output", NULL};
  for (int i = 0; lua_keys[i]; i++) {
    char name[32];
    snprintf(name, sizeof name, "lua.reg.%s", lua_keys[i]);
    if (lua_getfield(L, LUA_REGISTRYINDEX, lua_keys[i]) != LUA_TNIL)
      weft__persist_name(L, names, name, -1);
    lua_pop(L, 1);
  }
  /* weft's own C functions (and what modules.lua and the prelude keep),
     then the API's by their first path, then its userdata as it opened */
  lua_newtable(L); /* named functions */
  int named = lua_gettop(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, WEFT_CNAMES) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      weft__persist_name(L, names, lua_tostring(L, -2), -1);
      lua_pushboolean(L, 1);
      lua_rawset(L, named);
    }
  }
  lua_pop(L, 1);
  leaf_names ln = {names, named};
  lua_newtable(L); /* seen */
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
  walk_leaves(L, -1, "api", named + 1, 0, name_function, &ln);
  lua_settop(L, named - 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, OPEN_USERDATA) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      weft__persist_name(L, names, lua_tostring(L, -2), -1);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  for (int i = 0; i < W->nknames; i++)
    weft__persist_name_k(L, names, W->knames[i].name, W->knames[i].k);
  for (int i = 0; plain_types[i]; i++) {
    if (luaL_getmetatable(L, plain_types[i]) == LUA_TTABLE)
      weft__persist_type(L, names, plain_types[i], -1, NULL);
    lua_pop(L, 1);
  }
  if (luaL_getmetatable(L, "weft.future") == LUA_TTABLE)
    weft__persist_type(L, names, "weft.future", -1, &future_saver);
  lua_pop(L, 1);
  if (luaL_getmetatable(L, WEFT_GROUP_MT) == LUA_TTABLE)
    weft__persist_type(L, names, WEFT_GROUP_MT, -1, &group_saver);
  lua_pop(L, 1);
  /* the embedder's (weft_save_name, weft_save_pointer, weft_save_type) */
  if (lua_getfield(L, LUA_REGISTRYINDEX, WEFT_PNAMES) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      weft__persist_name(L, names, lua_tostring(L, -2), -1);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, WEFT_TNAMES) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      const char *tname = lua_tostring(L, -2);
      const weft__persist_saver *sv = lua_touserdata(L, -1);
      if (luaL_getmetatable(L, tname) == LUA_TTABLE) weft__persist_type(L, names, tname, -1, sv);
      lua_pop(L, 2);
    }
  }
  lua_pop(L, 1);
  weft__fin_names(L, names);
  weft__io_names(L, names);
  lua_pushthread(W->spawns);
  lua_xmove(W->spawns, L, 1);
  weft__persist_name(L, names, "weft.spawns", -1);
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, WEFT_SOURCES) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      size_t len;
      const char *text = lua_tolstring(L, -1, &len), *chunk = lua_tostring(L, -2);
      if (weft__chunk_embedded(chunk)) /* this build's own: both sides have it */
        weft__persist_shared(L, names, chunk, text, len);
      else
        weft__persist_source(L, names, chunk, text, len);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

/* ---- the C parts ---- */

static uint32_t list_name(void *ud, const weft_wlist *l) {
  weft_state *W = ud;
  uint32_t n = weft__sync_list_name(W->sync, l);
  if (n) return n;
  lua_State *L = W->L;
  lua_getfield(L, LUA_REGISTRYINDEX, FUT_SAVED);
  lua_pushlightuserdata(L, (char *)l - offsetof(fhandle, waiters));
  lua_rawget(L, -2);
  lua_Integer k = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 2);
  return k > 0 && k < FUT_BIT ? FUT_BIT | (uint32_t)k : 0;
}

static weft_wlist *list_at(void *ud, uint32_t n) {
  weft_state *W = ud;
  if (!(n & FUT_BIT)) return weft__sync_list_at(W->sync, n);
  lua_State *L = W->L;
  lua_getfield(L, LUA_REGISTRYINDEX, FUT_LOADED);
  lua_rawgeti(L, -1, (lua_Integer)(n & ~FUT_BIT));
  fhandle *f = lua_touserdata(L, -1);
  lua_pop(L, 2);
  return f ? &f->waiters : NULL;
}

static const char *class_name(void *ud, const weft_task_class *c) {
  (void)ud;
  return c == weft__lua_task_class() ? "lua" : c == weft__comb_class() ? "comb" : NULL;
}

static const weft_task_class *class_at(void *ud, const char *name) {
  (void)ud;
  if (strcmp(name, "lua") == 0) return weft__lua_task_class();
  return strcmp(name, "comb") == 0 ? weft__comb_class() : NULL;
}

/* A task's user data on its way out: no addresses (its thread is found
   again in the anchors, its hook armed again at its next resume). */
static void task_out(void *ud, weft_id id, void *copy) {
  (void)ud;
  (void)id;
  ltask *lt = copy;
  lt->co = NULL;
  lt->hooked = 0;
}

static weft_sched_names names_of(weft_state *W) {
  return (weft_sched_names){list_name, list_at, class_name, class_at, task_out, W};
}

/* The state's own counters, saved as they are. */
typedef struct counters {
  uint64_t job_seq, fserial, cserial, spawned, errors, fins_dropped;
  lua_Integer fins_first, fins_last;
  uint32_t reloads, unused, fins_frame, fins_started;
  int32_t warn_ready, warn_on, gc_stopped, fins_said;
  char warnbuf[512];
  unsigned char rng[RNG_BYTES]; /* math.random's state */
  int32_t has_rng;
} counters;

static void counters_of(weft_state *W, counters *c) {
  memset(c, 0, sizeof *c);
  c->job_seq = W->job_seq;
  c->fserial = W->fserial;
  c->cserial = W->cserial;
  c->spawned = W->spawned;
  c->errors = W->errors;
  c->fins_dropped = W->fins.dropped;
  c->fins_first = W->fins.first;
  c->fins_last = W->fins.last;
  c->reloads = W->mods.reloads;
  c->fins_frame = W->fins.frame;
  c->fins_started = W->fins.started;
  c->warn_ready = W->warn_ready;
  c->warn_on = W->warn_on;
  c->gc_stopped = W->mem.gc_stopped;
  c->fins_said = W->fins.said;
  memcpy(c->warnbuf, W->warnbuf, sizeof c->warnbuf);
  const unsigned char *rng = weft__rng_state(W->L);
  c->has_rng = rng != NULL;
  if (rng) memcpy(c->rng, rng, RNG_BYTES);
}

static void counters_set(weft_state *W, const counters *c) {
  W->job_seq = c->job_seq;
  W->fserial = c->fserial;
  W->cserial = c->cserial;
  W->spawned = c->spawned;
  W->errors = c->errors;
  W->fins.dropped = c->fins_dropped;
  W->fins.first = c->fins_first;
  W->fins.last = c->fins_last;
  W->mods.reloads = c->reloads;
  W->fins.frame = c->fins_frame;
  W->fins.started = c->fins_started;
  W->warn_ready = c->warn_ready;
  W->warn_on = c->warn_on;
  W->mem.gc_stopped = c->gc_stopped;
  W->fins.said = c->fins_said;
  memcpy(W->warnbuf, c->warnbuf, sizeof W->warnbuf);
  W->warnbuf[sizeof W->warnbuf - 1] = 0;
  unsigned char *rng = weft__rng_state(W->L);
  if (rng && c->has_rng) memcpy(rng, c->rng, RNG_BYTES);
}

/* The cold records (what few tasks use): their addresses go, but for
   a combinator's delivery. */
static int cold_out(weft_state *W, weft_wire *w) {
  uint32_t n = weft__sched_task_capacity(W->S);
  for (uint32_t i = 0; i < n; i++) {
    weft_id id = weft__sched_task_at(W->S, i);
    ltask *lt = id ? LT(W, id) : NULL;
    if (!lt || !lt->cold) continue;
    ltask_cold c = *weft__cold_if(W, id, lt);
    uint32_t comb = c.deliver != NULL;
    c.wwhat = NULL; /* what weft.tasks() says it waits on: until its next wait */
    c.wptr = NULL;
    c.deliver = NULL;
    if (!weft__wire_u32(w, &i) || !weft__wire_bytes(w, &c, sizeof c) || !weft__wire_u32(w, &comb))
      return 0;
  }
  uint32_t end = UINT32_MAX;
  return weft__wire_u32(w, &end);
}

static int cold_in(weft_state *W, weft_wire *w) {
  for (;;) {
    uint32_t i, comb;
    ltask_cold c;
    if (!weft__wire_u32(w, &i)) return 0;
    if (i == UINT32_MAX) return 1;
    if (!weft__wire_bytes(w, &c, sizeof c) || !weft__wire_u32(w, &comb)) return 0;
    weft_id id = weft__sched_task_at(W->S, i);
    ltask *lt = id ? LT(W, id) : NULL;
    if (!lt || !lt->cold || (lt->comb != 0) != (comb != 0))
      return weft__wire_fail(w, "a task's cold record has no task");
    lt->cold = 0; /* made afresh, then filled */
    ltask_cold *x = weft__cold_make(W, id, lt);
    if (!x) return weft__wire_fail(w, "out of memory");
    *x = c;
    x->deliver = comb ? weft__comb_deliver() : NULL;
  }
}

/* Every task that had a cold record has one again (its block at least:
   a damaged save may leave it zeroed, never missing). */
static int cold_all_in(weft_state *W, weft_wire *w) {
  uint32_t n = weft__sched_task_capacity(W->S);
  for (uint32_t i = 0; i < n; i++) {
    weft_id id = weft__sched_task_at(W->S, i);
    ltask *lt = id ? LT(W, id) : NULL;
    uint32_t b = i >> WEFT_POOL_CHUNK_SHIFT;
    if (lt && lt->cold && (b >= W->cold.nblocks || !W->cold.blocks[b]))
      return weft__wire_fail(w, "a task's cold record is missing");
  }
  return 1;
}

/* Each live Lua task's resumes, kept with its thread (weft__thread_resumes)
   where a save of the thread does not reach: written, or read (w says). */
static int resumes_io(weft_state *W, weft_wire *w) {
  uint32_t n = weft__sched_task_capacity(W->S);
  for (uint32_t i = 0; i < n; i++) {
    weft_id id = weft__sched_task_at(W->S, i);
    ltask *lt = id ? LT(W, id) : NULL;
    if (lt && lt->co && !weft__wire_u32(w, weft__thread_resumes(lt->co, lt))) return 0;
  }
  return 1;
}

/* No live task's slot names a thread. */
static void no_threads(weft_state *W) {
  uint32_t n = weft__sched_task_capacity(W->S);
  for (uint32_t i = 0; i < n; i++) {
    weft_id id = weft__sched_task_at(W->S, i);
    if (id) LT(W, id)->co = NULL;
  }
}

/* Each live Lua task's thread, from its anchor: marked as the task's. */
static int threads_in(weft_state *W, lua_State *L, weft_wire *w) {
  uint32_t n = weft__sched_task_capacity(W->S);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_tasks);
  int anchors = lua_gettop(L);
  int ok = lua_istable(L, anchors) || weft__wire_fail(w, "the tasks' threads are missing");
  for (uint32_t i = 0; ok && i < n; i++) {
    weft_id id = weft__sched_task_at(W->S, i);
    ltask *lt = id ? LT(W, id) : NULL;
    if (!lt) continue;
    lt->co = NULL;
    lt->hooked = 0;
    if (lt->comb) continue;
    lua_rawgeti(L, anchors, (lua_Integer)(i >> WEFT_POOL_CHUNK_SHIFT) + 1);
    if (lua_istable(L, -1)) lua_rawgeti(L, -1, (lua_Integer)(i & (WEFT_POOL_CHUNK - 1)) + 1);
    lua_State *co = lua_tothread(L, -1);
    if (co && co != L && weft__threads_young(W, co)) {
      lt->co = co;
      weft__thread_set_task(co, id);
    } else if (co && co != L) {
      ok = weft__wire_fail(w, "out of memory");
    } else {
      ok = weft__wire_fail(w, "a task's thread is missing");
    }
    lua_settop(L, anchors);
  }
  lua_settop(L, anchors - 1);
  return ok;
}

/* Each group but the root holds the references its loaded handles hold
   (the root's handle is the opening state's own). */
static int groups_in(weft_state *W, lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, GROUP_HANDLES);
  weft_id root = weft__sched_root(W->S);
  for (uint32_t i = 0; i < weft__sched_group_capacity(W->S); i++) {
    weft_id g = weft__sched_group_at(W->S, i);
    if (!g || g == root) continue;
    lua_rawgeti(L, -1, (lua_Integer)g);
    lua_Integer k = lua_tointeger(L, -1);
    lua_pop(L, 1);
    weft__group_set_refs(W->S, g, k > 0 && k < UINT32_MAX ? (uint32_t)k : 0);
  }
  lua_pop(L, 1);
  return 1;
}

/* ---- saving ---- */

static const char *cannot_save(weft_state *W) {
  if (W->in_step || W->cur || W->mem.in_report) return "a save is made between frames";
  if (W->tape) return "a recording or a replay is running";
  if (W->prof) return "a profile is being written";
  if (W->dbg) return "a debugger is attached";
  if (W->held || (W->J && weft__jobs_pending(W->J))) return "a job is still running (10 s waited)";
  return NULL;
}

/* Pushes {reg = the registry's entries} (what C keeps, by its refs and
   keys). */
static void push_root(lua_State *L) {
  lua_createtable(L, 0, 1);
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, LUA_REGISTRYINDEX)) {
    if (lua_type(L, -2) == LUA_TSTRING && (strcmp(lua_tostring(L, -2), FUT_SAVED) == 0 ||
                                           strcmp(lua_tostring(L, -2), WEFT_TNAMES) == 0 ||
                                           strcmp(lua_tostring(L, -2), "weft.loaded") == 0)) {
      /* this save's own, the savers (both sides have theirs), the type
         of a load under way (made at first use) */
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  lua_setfield(L, -2, "reg");
}

static int save_body(weft_state *W, lua_State *L, weft_wire *w) {
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, FUT_SAVED);
  push_names(W, L);
  int names = lua_gettop(L);
  weft__threads_anchor(W, L);
  push_root(L);
  weft__threads_unanchor(W, L);
  int st = weft__persist_save(L, names, names + 1);
  size_t len;
  const char *g = lua_tolstring(L, -1, &len);
  if (st != LUA_OK) {
    snprintf(W->errbuf, sizeof W->errbuf, "%s", g ? g : "the scripts' values cannot be saved");
    return 0;
  }
  uint64_t n = len;
  weft_sched_names nm = names_of(W);
  counters c;
  counters_of(W, &c);
  int ok = weft__wire_u64(w, &n) && weft__wire_bytes(w, (void *)g, len) &&
           weft__wire_bytes(w, &c, sizeof c) && weft__sync_save(W->sync, w) &&
           weft__sched_save(W->S, w, &nm) == WEFT_OK && resumes_io(W, w) && cold_out(W, w) &&
           weft__sites_save(W->sites, w) && weft__cost_save(W, w);
  if (!ok) snprintf(W->errbuf, sizeof W->errbuf, "%s", w->err ? w->err : "out of memory");
  return ok;
}

int weft_save(weft_state *W, int (*write)(void *ud, const void *p, size_t n), void *ud,
              const char **err) {
  if (err) *err = NULL;
  if (!W || !write) return WEFT_EINVAL;
  /* A job in flight is awaited, and its result delivered now, as the
     next frame would deliver it: the save holds its future completed. */
  if (W->J && !W->in_step && !W->cur && !W->tape && weft__jobs_pending(W->J)) {
    weft__jobs_settle(W->J, (uint64_t)10 * 1000000000u);
    weft__poll_jobs(W);
  }
  const char *why = cannot_save(W);
  if (why) {
    snprintf(W->errbuf, sizeof W->errbuf, "cannot save: %s", why);
    if (err) *err = W->errbuf;
    return WEFT_ESTATE;
  }
  lua_State *L = W->L;
  /* what is unreachable goes first, its finalizers run: what the save
     holds is what lives */
  lua_gc(L, LUA_GCCOLLECT);
  lua_gc(L, LUA_GCCOLLECT);
  int top = lua_gettop(L);
  outbuf b = {W, NULL, 0, 0};
  weft_wire w = {out_io, &b, NULL};
  char head[8 + 4 + 4 + 8 + 4] = SAVE_MAGIC;
  int ok = out_io(&b, head, sizeof head) && lua_checkstack(L, 16) && save_body(W, L, &w);
  lua_settop(L, top);
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, FUT_SAVED);
  int rc = WEFT_OK;
  if (ok) {
    uint32_t format = FORMAT, fp = fingerprint(W),
             sum = crc32_of(b.p + sizeof head, b.n - sizeof head);
    uint64_t body = b.n - sizeof head;
    memcpy(b.p + 8, &format, 4);
    memcpy(b.p + 12, &fp, 4);
    memcpy(b.p + 16, &body, 8);
    memcpy(b.p + 24, &sum, 4);
    if (!write(ud, b.p, b.n)) {
      snprintf(W->errbuf, sizeof W->errbuf, "cannot save: the save could not be written");
      rc = WEFT_EIO;
    }
  } else {
    if (!b.p) snprintf(W->errbuf, sizeof W->errbuf, "cannot save: out of memory");
    rc = WEFT_EINVAL;
  }
  if (b.p) weft__host_alloc(W, b.p, b.cap, 0);
  if (rc != WEFT_OK && err) *err = W->errbuf;
  return rc;
}

/* ---- loading ---- */

static int fresh(weft_state *W) {
  return weft__sched_frame(W->S) == 0 && weft__sched_task_count(W->S) == 0 &&
         weft__sync_count(W->sync) == 0 && !W->tape && !W->prof && !W->dbg;
}

static int load_body(weft_state *W, lua_State *L, inbuf *in) {
  weft_wire w = {in_io, in, NULL};
  uint64_t n;
  if (!weft__wire_u64(&w, &n) || n > in->n - in->at) {
    snprintf(W->errbuf, sizeof W->errbuf, "bad save: it ends too soon");
    return 0;
  }
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, FUT_LOADED);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, GROUP_HANDLES);
  push_names(W, L);
  int names = lua_gettop(L);
  if (weft__persist_load(L, names, in->p + in->at, (size_t)n) != LUA_OK) {
    snprintf(W->errbuf, sizeof W->errbuf, "%s", lua_tostring(L, -1));
    return 0;
  }
  in->at += (size_t)n;
  /* the registry's entries, as saved */
  if (lua_getfield(L, -1, "reg") != LUA_TTABLE) {
    snprintf(W->errbuf, sizeof W->errbuf, "bad save: no registry");
    return 0;
  }
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
  }
  counters c;
  weft_sched_names nm = names_of(W);
  int ok = weft__wire_bytes(&w, &c, sizeof c) && weft__sync_load(W->sync, &w) &&
           weft__sched_load(W->S, &w, &nm) == WEFT_OK && threads_in(W, L, &w) &&
           resumes_io(W, &w) && cold_in(W, &w) && cold_all_in(W, &w) && groups_in(W, L) &&
           weft__sites_load(W->sites, &w) && weft__cost_load(W, &w);
  if (ok && !weft__sync_check(W->sync, W->S))
    ok = weft__wire_fail(&w, "a list of waiters is broken");
  if (ok) { /* every future's list */
    lua_getfield(L, LUA_REGISTRYINDEX, FUT_LOADED);
    lua_Integer k = 1;
    for (; ok && lua_rawgeti(L, -1, k) == LUA_TLIGHTUSERDATA; k++) {
      fhandle *f = lua_touserdata(L, -1);
      if (!weft__wlist_check(W->S, &f->waiters))
        ok = weft__wire_fail(&w, "a future's waiters are broken");
      lua_pop(L, 1);
    }
  }
  if (ok && in->at != in->n) ok = weft__wire_fail(&w, "bytes follow the save");
  if (ok) {
    counters_set(W, &c);
    W->loaded = 1; /* a recording may start from here (weft_record_from) */
  } else {
    snprintf(W->errbuf, sizeof W->errbuf, "bad save: %s", w.err ? w.err : "damaged");
  }
  return ok;
}

int weft_load(weft_state *W, const void *data, size_t len, const char **err) {
  if (err) *err = NULL;
  if (!W || !data) return WEFT_EINVAL;
  const char *why = NULL;
  char head[28];
  uint32_t format, fp, sum;
  uint64_t body;
  if (cannot_save(W) || !fresh(W))
    why = "cannot load: a save loads into a state just opened";
  else if (len < sizeof head || memcmp(data, SAVE_MAGIC, 8) != 0)
    why = "bad save: not a weft save";
  if (!why) {
    memcpy(head, data, sizeof head);
    memcpy(&format, head + 8, 4);
    memcpy(&fp, head + 12, 4);
    memcpy(&body, head + 16, 8);
    memcpy(&sum, head + 24, 4);
    if (format != FORMAT || fp != fingerprint(W))
      why = "bad save: made by another build of weft, or with other limits";
    else if (body != len - sizeof head)
      why = "bad save: it is cut short";
    else if (sum != crc32_of((const char *)data + sizeof head, (size_t)body))
      why = "bad save: its checksum does not match (damaged)";
  }
  if (why) {
    snprintf(W->errbuf, sizeof W->errbuf, "%s", why);
    if (err) *err = W->errbuf;
    return WEFT_EINVAL;
  }
  lua_State *L = W->L;
  int top = lua_gettop(L);
  inbuf in = {(const char *)data + sizeof head, (size_t)body, 0};
  W->loading = 1;
  int ok = lua_checkstack(L, 16) && load_body(W, L, &in);
  if (!ok) no_threads(W); /* what a damaged save left in the slots */
  W->loading = 0;
  lua_settop(L, top);
  weft__threads_unanchor(W, L); /* the slots hold the threads now */
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, FUT_LOADED);
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, GROUP_HANDLES);
  if (ok) return WEFT_OK;
  if (err) *err = W->errbuf;
  return WEFT_EINVAL;
}

/* ---- the embedder's names ---- */

/* Runs fn protected (a names table may need memory). */
static int named(weft_state *W, lua_CFunction fn, void *a, void *b) {
  if (!W || W->in_step || W->cur) return W ? WEFT_EBUSY : WEFT_EINVAL;
  lua_State *L = W->L;
  if (!lua_checkstack(L, 4)) return WEFT_ENOMEM;
  lua_pushcfunction(L, fn);
  lua_pushlightuserdata(L, a);
  lua_pushlightuserdata(L, b);
  int st = lua_pcall(L, 2, 0, 0);
  if (st != LUA_OK) lua_pop(L, 1);
  return st == LUA_OK ? WEFT_OK : WEFT_ENOMEM;
}

typedef struct name_args {
  const char *name;
  lua_CFunction fn;
  void *p;
  weft__persist_saver saver;
  int plain;
} name_args;

static int l_name(lua_State *L) {
  name_args *a = lua_touserdata(L, 1);
  if (a->fn)
    weft__name_c(L, a->name, a->fn);
  else if (a->p)
    weft__name_pointer(L, a->name, a->p);
  else
    weft__name_type(L, a->name, a->plain ? NULL : &a->saver, sizeof a->saver);
  return 0;
}

int weft_save_name(weft_state *W, const char *name, lua_CFunction fn) {
  if (!name || !fn) return WEFT_EINVAL;
  name_args a = {name, fn, NULL, {0}, 0};
  return named(W, l_name, &a, NULL);
}

int weft_save_pointer(weft_state *W, const char *name, void *p) {
  if (!name || !p) return WEFT_EINVAL;
  name_args a = {name, NULL, p, {0}, 0};
  return named(W, l_name, &a, NULL);
}

int weft_save_type(weft_state *W, const char *tname, weft_save_userdata_fn save,
                   weft_save_userdata_fn load, void *ud) {
  if (!tname || !save != !load) return WEFT_EINVAL;
  name_args a = {tname, NULL, NULL, {save, load, ud, 0}, !save};
  return named(W, l_name, &a, NULL);
}
