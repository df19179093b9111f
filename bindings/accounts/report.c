/* Errors: the reports of failed tasks (message, traceback, the chain of
   spawn sites, who failed), the weft.on_error handler, weft.is_cancelled,
   and finally(fn) cleanups. */
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "handles.h"
#include "budget.h"
#include "../base/log.h"
#include "../base/sites.h"

#define TOSTRING_BUDGET 100000 /* instructions a __tostring may take */
/* A report quotes this much of an error's message: a 64 MB message would
   be copied into every line of a report nobody can read. */
#define REPORT_MESSAGE_MAX 8192

const char *weft__tostring(lua_State *L, int idx) {
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
      int st =
          weft__budget_pcall(weft__get(L), L, 1, 1, 0, "__tostring ran too long", TOSTRING_BUDGET);
      if (st == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
      lua_pop(L, 1);
    }
    return lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, idx));
  }
}

int weft__is_cancel_error(weft_state *W, lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
  int eq = lua_rawequal(L, idx, -1);
  lua_pop(L, 1);
  return eq;
}

/* Pushes what a report quotes of the error at idx: its printable form, the
   first REPORT_MESSAGE_MAX bytes and its size when longer (the error itself
   stays whole). */
static const char *quoted(lua_State *L, int idx) {
  const char *msg = weft__tostring(L, idx);
  size_t len = lua_rawlen(L, -1);
  if (len <= REPORT_MESSAGE_MAX) return msg;
  return lua_pushfstring(L, "%s... (%I bytes in all)", lua_pushlstring(L, msg, REPORT_MESSAGE_MAX),
                         (lua_Integer)len);
}

/* Pushes trace followed by one "spawned at" line per spawn site. */
static const char *with_sites(weft_state *W, lua_State *L, const char *trace, uint32_t site) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, trace);
  for (; site; site = weft__site_parent(W->sites, site)) {
    luaL_addstring(&b, "\nspawned at ");
    luaL_addstring(&b, weft__site_where(W->sites, site));
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* The parts of a report, for the protected call below. */
typedef struct report_args {
  weft_state *W;
  weft_id task;
  const char *trace; /* NULL: the message, or a traceback of `co` */
  lua_State *co;     /* thread to take the traceback from, or NULL */
} report_args;

/* Replaces the traceback on top of L with one without the frames of
   weft's own Lua (chunks named "[weft ...]": the module system's require
   and start): a designer's report shows the designer's lines. */
static void drop_own_frames(lua_State *L) {
  size_t n;
  const char *t = lua_tolstring(L, -1, &n), *end = t + n;
  if (!strstr(t, "\t[weft")) return;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (const char *p = t; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *next = nl ? nl + 1 : end;
    /* its frames, and a C function (error, pcall) they called */
    int own = strncmp(p, "\t[weft", 6) == 0 ||
              (strncmp(p, "\t[C]:", 5) == 0 && strncmp(next, "\t[weft", 6) == 0);
    if (!own) luaL_addlstring(&b, p, (size_t)(next - p));
    p = next;
  }
  luaL_pushresult(&b);
  lua_remove(L, -2);
}

/* Runs protected with the error value at 1 and report_args at 2: builds
   the message, traceback and spawn sites, and hands them to the handler
   or the sink. Everything here may allocate. */
static int l_report(lua_State *L) {
  report_args *a = lua_touserdata(L, 2);
  weft_state *W = a->W;
  lua_settop(L, 1);
  const char *msg = quoted(L, 1);
  const char *trace = a->trace;
  if (!trace && a->co) {
    luaL_traceback(L, a->co, msg, 0);
    drop_own_frames(L);
    trace = lua_tostring(L, -1);
  }
  if (weft__push_who(W, L, a->task)) { /* "gate_guard: patrol.lua:17: ..." */
    int who = lua_gettop(L);
    lua_pushfstring(L, "%s: %s", lua_tostring(L, who), msg);
    msg = lua_tostring(L, -1);
    if (trace) {
      lua_pushfstring(L, "%s: %s", lua_tostring(L, who), trace);
      trace = lua_tostring(L, -1);
    }
  }
  ltask *lt = a->task ? LT(W, a->task) : NULL;
  const char *full = with_sites(W, L, trace ? trace : msg, lt ? weft__site_of(lt) : 0);
  if (W->ref_on_error != LUA_NOREF) {
    /* The handler runs on a thread of its own with a budget of its own:
       one that loops neither hangs the host nor spends (or resets) the
       budget of the task that happens to report. */
    lua_State *h = lua_newthread(L);
    lua_rawgeti(h, LUA_REGISTRYINDEX, W->ref_on_error);
    lua_pushvalue(L, 1);
    weft__push_task(W, L, a->task);
    lua_pushstring(L, full);
    lua_xmove(L, h, 3);
    weft_id saved = W->cur;
    int nres = 0;
    int st = weft__budget_resume(W, h, L, 3, &nres, "weft.on_error handler ran too long", 0);
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
    const char *herr = weft__tostring(L, -1);
    if (W->desc.report)
      W->desc.report(W->desc.user, "error in weft.on_error handler", herr);
    else
      weft__logf(W, WEFT_LOG_ERROR, WEFT_LOG_HANDLER_FAILED, "error in weft.on_error handler: %s",
                 herr);
  }
  weft__log_report(W, msg, full);
  return 0;
}

/* Reports the error at L[idx]. Never raises: if building the report runs
   out of memory (it has some headroom past the limit), a short report
   without the traceback goes to the sink instead. */
void weft__report_thread(weft_state *W, lua_State *L, int idx, weft_id task, const char *trace,
                         lua_State *co) {
  W->errors++;
  if (!lua_checkstack(L, 8)) return;
  idx = lua_absindex(L, idx);
  report_args a = {W, task, trace, co};
  W->mem.in_report++;
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
    for (uint32_t s = lt ? weft__site_of(lt) : 0; s && len >= 0 && (size_t)len < sizeof full;
         s = weft__site_parent(W->sites, s))
      len += snprintf(full + len, sizeof full - (size_t)len, "\nspawned at %s",
                      weft__site_where(W->sites, s));
    weft__log_report(W, msg, full);
    lua_pop(L, 1);
  }
  W->mem.in_report--;
}

void weft__report(weft_state *W, lua_State *L, int idx, weft_id task, const char *trace) {
  weft__report_thread(W, L, idx, task, trace, NULL);
}

/* ---- weft.on_error, weft.is_cancelled, finally ---- */

static int l_is_cancelled(lua_State *L) {
  weft_state *W = weft__get(L);
  lua_pushboolean(L, weft__is_cancel_error(W, L, 1));
  return 1;
}

static int l_on_error(lua_State *L) {
  weft_state *W = weft__get(L);
  if (!lua_isnil(L, 1)) luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  if (W->ref_on_error != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, W->ref_on_error);
  W->ref_on_error = lua_isnil(L, 1) ? LUA_NOREF : luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

/* finally(fn): a to-be-closed value whose close runs fn protected. */
static int l_finally_close(lua_State *L) {
  weft_state *W = weft__get(L);
  lua_getiuservalue(L, 1, 1);
  if (lua_isnil(L, -1)) return 0;
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1); /* runs once */
  int top = lua_gettop(L);
  lua_pushcfunction(L, weft__l_traceback_handler);
  lua_insert(L, top);
  W->in_cleanup++;
  int st = lua_pcall(L, 0, 0, top);
  W->in_cleanup--;
  if (st != LUA_OK) {
    if (lua_type(L, -1) == LUA_TTABLE) { /* the handler left {err, trace} */
      lua_rawgeti(L, -1, 1);
      lua_rawgeti(L, -2, 2);
      weft__report(W, L, -2, W->cur, lua_tostring(L, -1));
    } else { /* the handler itself could not run (out of memory) */
      weft__report(W, L, -1, W->cur, NULL);
    }
  }
  return 0;
}

/* Pushes the type of finally's values, made at open (a save names it). */
static void push_finally_meta(lua_State *L) {
  if (luaL_newmetatable(L, "weft.finally")) {
    lua_pushcfunction(L, l_finally_close);
    lua_setfield(L, -2, "__close");
    lua_pushliteral(L, "finally");
    lua_setfield(L, -2, "__name");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
  }
}

static int l_finally(lua_State *L) {
  if (lua_type(L, 1) != LUA_TFUNCTION && luaL_getmetafield(L, 1, "__call") == LUA_TNIL)
    luaL_typeerror(L, 1, "function");
  lua_settop(L, 1);
  lua_newuserdatauv(L, 0, 1);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  push_finally_meta(L);
  lua_setmetatable(L, -2);
  return 1;
}

/* Message handler: packs {err, traceback}. */
int weft__l_traceback_handler(lua_State *L) {
  lua_createtable(L, 2, 0);
  int packed = lua_gettop(L);
  lua_pushvalue(L, 1);
  lua_rawseti(L, packed, 1);
  const char *msg = quoted(L, 1);
  luaL_traceback(L, L, msg, 1);
  drop_own_frames(L);
  lua_rawseti(L, packed, 2);
  lua_settop(L, packed);
  return 1;
}

void weft__open_reports(weft_state *W, lua_State *L) {
  push_finally_meta(L);
  lua_pop(L, 1);
  lua_pushcfunction(L, l_finally);
  lua_setfield(L, -2, "finally");
  lua_getfield(L, -1, "weft");
  static const luaL_Reg weftlib[] = {
      {"is_cancelled", l_is_cancelled}, {"on_error", l_on_error}, {NULL, NULL}};
  luaL_setfuncs(L, weftlib, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_cancelled);
  lua_setfield(L, -2, "CANCELLED");
  lua_pop(L, 1);
}
