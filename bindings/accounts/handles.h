/* Handles and names (handles.c): the values scripts hold for tasks,
   groups, signals and channels, the names a task goes by, and the cold
   records of what few tasks use. */
#ifndef WEFT_HANDLES_H
#define WEFT_HANDLES_H

#include <string.h>

#include "../base/internal.h"

#define WEFT_TASK_MT "weft.task"

typedef struct weft_waitable weft_waitable; /* wait.h */

/* What few tasks use, kept out of the slot: one record per task slot
   index, in chunks made when a task in that chunk first needs one, and
   zeroed for each task that does. */
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
   for it. User value 1 is nil while the task lives, then its results (one
   value, or a table with n) or its error; user value 2 is its name. A
   task that ended inside spawn with nothing to keep gets a handle without
   user values (48 bytes instead of 88): its name, if a script sets one,
   is kept in ref_names. */
typedef struct thandle {
  weft_id id;
  uint8_t final;  /* 0 while live, else WEFT_TASK_DONE/FAILED/CANCELLED */
  uint8_t packed; /* results are a table {n=..., ...} */
  uint8_t named;  /* a script set t.name */
  uint8_t bare;   /* no user values (see above) */
  uint32_t site;  /* spawn site chain, kept for reports */
} thandle;

/* The task a thread belongs to, kept in the thread's extra space (new
   threads copy it): the task's slot index + 1, 0 for the main thread and
   plain coroutines; the task is the live one in the slot (a thread's mark
   is cleared when its task ends, before the slot can be reused). Where
   the extra space has room (a pointer of 8 bytes), the task's resumes
   follow (weft.tasks()); elsewhere they are in its slot (ltask). */
_Static_assert(LUA_EXTRASPACE >= sizeof(uint32_t), "weft needs 4 bytes of LUA_EXTRASPACE");
#define WEFT_RESUMES_IN_THREAD (LUA_EXTRASPACE >= 2 * sizeof(uint32_t))
static inline void weft__thread_set_task(lua_State *L, weft_id id) {
  uint32_t m[2] = {id ? WEFT_ID_INDEX(id) + 1 : 0, 0};
  memcpy(lua_getextraspace(L), m, WEFT_RESUMES_IN_THREAD ? sizeof m : sizeof m[0]);
}
/* The slot index + 1 of thread L's task, 0: none. */
static inline uint32_t weft__thread_mark(lua_State *L) {
  uint32_t i;
  memcpy(&i, lua_getextraspace(L), sizeof i);
  return i;
}
static inline weft_id weft__thread_task(lua_State *L) {
  uint32_t i = weft__thread_mark(L);
  if (!i) return 0;
  weft_state *W = weft__get(L);
  if (W->cur && WEFT_ID_INDEX(W->cur) == i - 1) return W->cur; /* the usual: it runs */
  return weft__sched_task_at(W->S, i - 1);
}
/* Where the resumes of the task whose thread is co (its data: lt) are counted. */
static inline uint32_t *weft__thread_resumes(lua_State *co, ltask *lt) {
#if UINTPTR_MAX > 0xFFFFFFFFu
  _Static_assert(WEFT_RESUMES_IN_THREAD, "a 64-bit Lua has 8 bytes of LUA_EXTRASPACE");
  (void)lt;
  return (uint32_t *)((char *)lua_getextraspace(co) + sizeof(uint32_t));
#else
  (void)co;
  return &lt->resumes;
#endif
}

/* A task's spawn-site chain (sites.c), 0: unknown: in the word the
   scheduler keeps beside each task's data (weft__udata_word). */
static inline uint32_t weft__site_of(const ltask *lt) {
  return *weft__udata_word((void *)(uintptr_t)lt);
}
static inline void weft__site_set(ltask *lt, uint32_t site) { *weft__udata_word(lt) = site; }

/* Its cold record when it has one in use, else NULL. */
static inline ltask_cold *weft__cold_if(const weft_state *W, weft_id id, const ltask *lt) {
  if (!lt->cold) return NULL;
  return weft__side_at(&W->cold, WEFT_ID_INDEX(id));
}
/* Makes it (zeroed) for task id, whose data is lt; NULL when out of
   memory. Never raises. */
ltask_cold *weft__cold_make(weft_state *W, weft_id id, ltask *lt);
/* A task's cold record, made the first time it needs one (NULL: out of
   memory; never raises). */
static inline ltask_cold *weft__cold(weft_state *W, weft_id id, ltask *lt) {
  return lt->cold ? weft__cold_if(W, id, lt) : weft__cold_make(W, id, lt);
}

/* The spawn running task id at once (its depth's record), or NULL. */
weft_spawning *weft__spawning_of(weft_state *W, weft_id id);
/* Pushes the handle made for task id while anyone still holds it and
   returns it; pushes nothing and returns NULL when there is none. */
thandle *weft__handle_if(weft_state *W, lua_State *L, weft_id id);
/* Pushes a new handle, not yet a task's, with nuv (0 or 2) user values. */
thandle *weft__handle_new(weft_state *W, lua_State *L, int nuv);
/* Makes the handle of live task id: h (weft__handle_new's, on top), or a
   new one pushed when h is NULL. Returns 0 with the error pushed when out
   of memory (the caller undoes the task or raises). */
int weft__handle_make(weft_state *W, lua_State *L, weft_id id, thandle *h);
/* Pushes the handle of a live Lua task (or nil), made now if nobody
   holds one. May raise (memory). */
void weft__push_task(weft_state *W, lua_State *L, weft_id task);
/* Pushes the name a script gave a live task (t.name = ...) and returns
   1, or pushes nothing and returns 0; makes no handle. */
int weft__push_task_name(weft_state *W, lua_State *L, weft_id task);

/* Pushes a new metatable for a handle type: __index, __tostring and __gc
   (either may be NULL), __wait when w is given, __name, and a hidden
   __metatable so scripts cannot reach it; returns a registry ref to it
   (for weft__set_meta). */
int weft__new_meta(lua_State *L, const char *name, lua_CFunction index, lua_CFunction tostring,
                   lua_CFunction gc, const weft_waitable *w, const char *short_name);
/* Sets the metatable kept at registry ref on the value on top. */
static inline void weft__set_meta(lua_State *L, int ref) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_setmetatable(L, -2);
}

#define WEFT_GROUP_MT "weft.group"

typedef struct ghandle {
  weft_id id;
} ghandle;

/* Pushes the handle of group id, made now if nobody holds one (nil when
   the group cannot be held). */
void weft__push_group_id(weft_state *W, lua_State *L, weft_id id);

/* A signal's or a channel's handle, cached weakly in ref_syncs by kind
   and slot index. */
enum { WEFT_K_SIGNAL = 2, WEFT_K_CHANNEL = 3 };
typedef struct shandle {
  weft_id id;
  uint8_t kind;
  uint8_t firing;   /* signals: inside fire, connections are not compacted */
  uint32_t compact; /* signals: the list length at which connect compacts */
} shandle;
/* Pushes a new handle of that kind, with metatable mt and nuv user values
   (its id still 0). */
shandle *weft__sync_handle_new(weft_state *W, lua_State *L, const char *mt, int kind, int nuv);
/* Caches the handle at L[idx] (its id set) for weft__sync_handle_push. */
void weft__sync_handle_cache(weft_state *W, lua_State *L, int idx, shandle *h);
/* Pushes the cached handle of a live object and returns it, or pushes nil
   and returns NULL. */
shandle *weft__sync_handle_push(weft_state *W, lua_State *L, int kind, weft_id id);
/* The handle at L[idx] of metatable mt; raises "dead <what>" for one whose
   object is gone. */
shandle *weft__sync_handle_check(lua_State *L, int idx, const char *mt, const char *what);

/* Where weft.start keeps the groups it made (registry key). */
#define WEFT_START_GROUPS "weft.start_groups"
/* Pushes who a report about the task names first (its entity or its
   name: see handles.c) and returns 1, or pushes nothing and returns 0.
   May raise (memory). */
int weft__push_who(weft_state *W, lua_State *L, weft_id task);
/* A frame's function as tracebacks name it (ar filled with "Sn"): its
   name, "main chunk", "[C]" or "function <file:line>". */
void weft__frame_name(const lua_Debug *ar, char *out, size_t n);
/* Where a thread is suspended: its innermost script line ("" when none). */
void weft__where_suspended(lua_State *co, char *buf, size_t n);
/* "who spawn-site" for a task into out ("task" when it has none), worked
   out on thread L. */
int weft__task_label(weft_state *W, lua_State *L, weft_id id, char *out, size_t n);

#endif
