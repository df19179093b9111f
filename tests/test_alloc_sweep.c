/* Allocation-failure sweeps in the style of Lua's testalloc and SQLite's
   malloc tests. Each main operation of the host (create the state, load a
   script, spawn, resume, cancel, resolve, reload) runs with allocation #k
   failing (weft__testing_fail_alloc, counted from the start of the operation), once
   (only #k fails) and persistently (#k and every later one fails until the
   operation ends), for k = 1, 2, ... until the operation completes without
   reaching #k. Every run must end in success or a clean error ("not
   enough memory" from the task, NULL from weft_open, a report through
   desc.report), leave a state that still runs scripts once allocations
   work again, and close with nothing leaked (weft_close returns 0; under
   ASan the process's allocated bytes return to where they were).

   Each sweep runs in a child process so that a crash (a Lua panic, a
   segfault) is reported with its operation and k instead of ending the
   test run; the parent goes on from k + 1. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../bindings/testing.h"
#include "../bindings/weft.h"
#include "scratch_dir.h"

#define DT60 (1.0 / 60.0)
#define MAX_K 20000 /* no operation here needs nearly this many allocations */
#define MEMERR "not enough memory"

#if defined(__SANITIZE_ADDRESS__)
/* From the sanitizer interfaces (not all shipped with gcc's headers). */
size_t __sanitizer_get_current_allocated_bytes(void);
void __sanitizer_print_stack_trace(void);
static size_t live_bytes(void) { return __sanitizer_get_current_allocated_bytes(); }
#define EXACT_BYTES 1
#else
/* glibc's counters include its thread cache, so they cannot tell a leak
   from a cached free; the normal build checks weft_close's count only. */
static size_t live_bytes(void) { return 0; }
#define EXACT_BYTES 0
#endif

/* ---- one run ---- */

typedef struct run {
  int armed;            /* counting allocations */
  int persistent;       /* every allocation after #k fails too */
  long k;               /* the allocation that fails, from 1 */
  long calls;           /* allocations seen while armed */
  long refused;         /* allocations made to fail */
  int reports;          /* reports received */
  int ondone_reports;   /* of those, naming the on_done callback's site */
  char ondone_site[32]; /* "setup:<line>": where the callback was set */
  char bad_report[200]; /* the first report that is not about memory */
  const char *root;     /* scripts root (reload) */
  int S;                /* registry ref of the table shared by a run's scripts */
  char why[400];        /* set when the run broke the contract */
} run;

enum { OUT_SUCCESS, OUT_ERROR, OUT_BAD };

static int on_alloc(void *user, size_t n) {
  run *r = user;
  (void)n;
  if (!r->armed) return 0;
  r->calls++;
  if (r->calls == r->k || (r->persistent && r->calls > r->k)) {
    r->refused++;
    return 1;
  }
  return 0;
}

static int is_mem(const char *s) { return s && strstr(s, MEMERR) != NULL; }

static void on_report(void *user, const char *msg, const char *trace) {
  run *r = user;
  r->reports++;
  if (trace && r->ondone_site[0] && strstr(trace, r->ondone_site)) r->ondone_reports++;
  if (!is_mem(msg) && !r->bad_report[0])
    snprintf(r->bad_report, sizeof r->bad_report, "%s | %.80s", msg ? msg : "(null)",
             trace ? trace : "");
}

static void on_log(void *user, const char *line, size_t len) {
  (void)len;
  (void)user;
  (void)line;
}

static int bad(run *r, const char *fmt, ...) {
  if (!r->why[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
  }
  return OUT_BAD;
}

static void arm(run *r) {
  r->calls = 0;
  r->armed = 1;
}

static void disarm(run *r) { r->armed = 0; }

/* Lua's panic (an error outside any protected call) aborts; say why
   first, and under ASan where (the parent shows the first weft frame). */
static int on_panic(lua_State *L) {
  const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
  fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n", msg);
  fflush(stderr);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_print_stack_trace();
#endif
  return 0;
}

static weft_state *open_run(run *r) {
  weft_desc d = WEFT_DESC_INIT;
  d.scripts_root = r->root;
  d.report = on_report;
  d.log = on_log;
  d.time_budget_us = WEFT_BUDGET_COUNTED; /* every run allocates the same */
  d.user = r;
  weft_state *W = weft_open(&d);
  weft__testing_fail_alloc(W, on_alloc, r);
  if (W) lua_atpanic(weft_lua(W), on_panic);
  return W;
}

/* ---- Lua helpers (always called unarmed) ---- */

/* Pushes src compiled as a script function whose globals fall through to
   the API. */
static int push_fn(run *r, weft_state *W, const char *src, const char *name) {
  lua_State *L = weft_lua(W);
  if (luaL_loadbufferx(L, src, strlen(src), name, "t") != LUA_OK) {
    bad(r, "test Lua %s does not compile: %s", name, lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  weft_push_api(W);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_setupvalue(L, -2, 1);
  return 1;
}

/* Stores a fresh shared table S (the argument of every script of a run). */
static void make_shared(run *r, weft_state *W) {
  lua_State *L = weft_lua(W);
  lua_newtable(L);
  r->S = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Pushes src as a function with S as its argument, ready for
   weft_spawn(W, 1). */
static int push_call(run *r, weft_state *W, const char *src, const char *name) {
  if (!push_fn(r, W, src, name)) return 0;
  lua_checkstack(weft_lua(W), 8);
  lua_rawgeti(weft_lua(W), LUA_REGISTRYINDEX, r->S);
  return 1;
}

/* Runs src(S) on the main thread, unarmed; NULL when it returned without
   raising, else its message. */
static const char *check(run *r, weft_state *W, const char *src) {
  static char msg[300];
  lua_State *L = weft_lua(W);
  if (!push_call(r, W, src, "=check")) return r->why;
  if (lua_pcall(L, 1, 0, 0) == LUA_OK) return NULL;
  snprintf(msg, sizeof msg, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)");
  lua_pop(L, 1);
  return msg;
}

/* Starts src(S) as a task, unarmed, and requires it not to fail. */
static weft_task setup_task(run *r, weft_state *W, const char *src) {
  if (!push_call(r, W, src, "=setup")) return (weft_task){0};
  weft_task t = weft_spawn(W, 1);
  if (!t.id) {
    bad(r, "setup: weft_spawn failed: %s", weft_task_error(W, (weft_task){0}));
    return (weft_task){0};
  }
  if (weft_task_result(W, t) == WEFT_FAILED) {
    bad(r, "setup failed: %s", weft_task_error(W, t));
    return (weft_task){0};
  }
  return t;
}

/* The outcome of a task started from C: success when done, a clean error
   when it failed for lack of memory. id 0 is a spawn that failed. */
static int task_outcome(run *r, weft_state *W, weft_task id, const char *what) {
  if (!id.id) {
    const char *e = weft_task_error(W, (weft_task){0});
    if (is_mem(e)) return OUT_ERROR;
    return bad(r, "%s: weft_spawn returned 0 and weft_task_error(W, (weft_task){0}) is \"%s\"",
               what, e);
  }
  int res = weft_task_result(W, id);
  if (res == WEFT_DONE) return OUT_SUCCESS;
  if (res == WEFT_FAILED) {
    const char *e = weft_task_error(W, id);
    if (is_mem(e)) return OUT_ERROR;
    return bad(r, "%s failed with \"%s\"", what, e);
  }
  if (res == WEFT_CANCELLED) return bad(r, "%s was cancelled", what);
  char buf[128];
  weft_describe_wait(W, id, buf, sizeof buf);
  return bad(r, "%s never finished (stuck: \"%s\")", what, buf);
}

static void steps(weft_state *W, int n) {
  for (int i = 0; i < n; i++) weft_step(W, DT60);
}

/* Once allocations work again the state must still run scripts: the whole
   API present, the sandbox whole, tasks that allocate, wait and end. */
static const char usable_src[] =
    "assert(type(wait_frames) == 'function' and type(every) == 'function', 'prelude missing')\n"
    "assert(type(weft.start) == 'function' and type(persist) == 'function', 'modules missing')\n"
    "assert(rawget(math, 'pi') and io.popen and not pcall(io.popen, 'ls') and os.execute == nil, "
    "'sandbox broken')\n"
    "local t = {}\n"
    "for i = 1, 100 do t[i] = ('v'):rep(i) end\n"
    "local c = spawn(function() wait() return #t end)\n"
    "return wait(c)\n";

static int still_usable(run *r, weft_state *W) {
  weft_task t = {0};
  const char *err = NULL;
  int rc = weft_run_string(W, "=usable", usable_src, strlen(usable_src), &t, &err);
  if (rc != WEFT_OK) return bad(r, "after the failure, weft_run_string: %s", err ? err : "?");
  steps(W, 3);
  int res = weft_task_result(W, t);
  if (res != WEFT_DONE)
    return bad(r, "after the failure, a new script %s: %s", res ? "failed" : "did not finish",
               weft_task_error(W, t));
  weft_task_drop(W, t);
  return OUT_SUCCESS;
}

/* Common end of a run: usable again, closes with nothing leaked. */
static int finish(run *r, weft_state *W, int out) {
  if (out != OUT_BAD && still_usable(r, W) == OUT_BAD) out = OUT_BAD;
  int leaked = weft_close(W);
  if (leaked) out = bad(r, "weft_close reports %d leaked object(s)", leaked);
  return out;
}

/* ---- the operations ---- */

static int op_open(run *r) {
  arm(r);
  weft_state *W = open_run(r);
  disarm(r);
  if (!W) return OUT_ERROR;
  return finish(r, W, OUT_SUCCESS);
}

static const char load_src[] =
    "local M = {}\n"
    "local names = {'alpha', 'beta', 'gamma', 'delta'}\n"
    "local function make(i)\n"
    "  return {id = i, name = names[i % #names + 1] .. i, pos = {x = i, y = -i}}\n"
    "end\n"
    "M.items = {}\n"
    "for i = 1, 20 do M.items[i] = make(i) end\n"
    "function M.sum()\n"
    "  local s = 0\n"
    "  for _, it in ipairs(M.items) do s = s + it.pos.x end\n"
    "  return s\n"
    "end\n"
    "local text = {}\n"
    "for i = 1, 10 do text[#text + 1] = ('%s=%d'):format(names[i % 4 + 1], i) end\n"
    "M.text = table.concat(text, ',')\n"
    "assert(M.sum() == 210 and #M.text > 40)\n"
    "return M\n";

static int op_load(run *r) {
  weft_state *W = open_run(r);
  if (!W) return bad(r, "weft_open failed unarmed");
  weft_task t = {0};
  const char *err = NULL;
  arm(r);
  int rc = weft_run_string(W, "=sweep_load", load_src, strlen(load_src), &t, &err);
  disarm(r);
  int out;
  if (rc != WEFT_OK) {
    out = is_mem(err) ? OUT_ERROR
                      : bad(r, "weft_run_string returned %d with \"%s\"", rc, err ? err : "(null)");
  } else {
    out = task_outcome(r, W, t, "the loaded script");
    weft_task_drop(W, t);
  }
  return finish(r, W, out);
}

static const char spawn_src[] =
    "local S = ...\n"
    "local kids = {}\n"
    "for i = 1, 4 do kids[#kids + 1] = spawn(function(a, b) wait() return a + b end, i, i) end\n"
    "local g = group{name = 'sweep'}\n"
    "kids[#kids + 1] = g:spawn(function() wait(0.05) return 'grouped' end)\n"
    "kids[#kids + 1] = defer(function() return 'deferred' end)\n"
    "kids[#kids + 1] = after(0.05, function() return 'after' end)\n"
    "kids[#kids + 1] = spawn(function()\n"
    "  local t = spawn(function() wait() return 1 end)\n"
    "  return wait(t) + 1\n"
    "end)\n"
    "kids[#kids].name = 'nested'\n"
    "S.kids = kids\n"
    "return #kids\n";

static const char spawn_check[] =
    "local S = ...\n"
    "assert(#weft.tasks() == 0, #weft.tasks() .. ' task(s) still alive')\n"
    "if S.want then\n"
    "  assert(#S.kids == 8, #S.kids .. ' kids')\n"
    "  for i, t in ipairs(S.kids) do assert(t.status == 'done', 'kid ' .. i .. ' ' .. t.status) "
    "end\n"
    "end\n";

static int op_spawn(run *r) {
  weft_state *W = open_run(r);
  if (!W) return bad(r, "weft_open failed unarmed");
  make_shared(r, W);
  if (!push_call(r, W, spawn_src, "=spawner")) return finish(r, W, OUT_BAD);
  arm(r);
  weft_task t = weft_spawn(W, 1);
  disarm(r);
  int out = task_outcome(r, W, t, "the spawner");
  steps(W, 10);
  if (out == OUT_SUCCESS && r->refused == 0) {
    lua_State *L = weft_lua(W);
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->S);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "want");
    lua_pop(L, 1);
  }
  const char *e = check(r, W, spawn_check);
  if (e && out != OUT_BAD) out = bad(r, "after spawning: %s", e);
  if (t.id) weft_task_drop(W, t);
  return finish(r, W, out);
}

static const char resume_src[] =
    "local S = ...\n"
    "local acc = {}\n"
    "for f = 1, 8 do\n"
    "  acc[#acc + 1] = {f = frame(), s = ('x'):rep(f * 8) .. f}\n"
    "  if f % 3 == 0 then wait(0.03) elseif f % 3 == 1 then wait() else wait{0.01, 0.02} end\n"
    "end\n"
    "S.n = #acc\n"
    "return #acc\n";

static int op_resume(run *r) {
  weft_state *W = open_run(r);
  if (!W) return bad(r, "weft_open failed unarmed");
  make_shared(r, W);
  weft_task t = setup_task(r, W, resume_src);
  if (!t.id) return finish(r, W, OUT_BAD);
  arm(r);
  for (int i = 0; i < 60 && weft_task_result(W, t) == 0; i++) weft_step(W, DT60);
  disarm(r);
  /* A task the failure hit either failed or goes on now: never stuck. */
  for (int i = 0; i < 60 && weft_task_result(W, t) == 0; i++) weft_step(W, DT60);
  int out = task_outcome(r, W, t, "the waiting task");
  if (out == OUT_SUCCESS) {
    const char *e = check(r, W, "local S = ... assert(S.n == 8, 'n = ' .. tostring(S.n))");
    if (e) out = bad(r, "%s", e);
  }
  weft_task_drop(W, t);
  return finish(r, W, out);
}

/* Victims wait with a finally() cleanup and a raw __close each; each
   victim(d) spawns a victim(d - 1) child. */
static const char cancel_setup[] =
    "local S = ...\n"
    "S.cleaned, S.done = 0, false\n"
    "S.victims = {}\n"
    "local function victim(depth)\n"
    "  local _ <close> = finally(function() S.cleaned = S.cleaned + 1; S.last = 'c' .. depth end)\n"
    "  local _r <close> = setmetatable({}, {__close = function() S.cleaned = S.cleaned + 1 end})\n"
    "  if depth > 0 then spawn(victim, depth - 1) end\n"
    "  wait(100)\n"
    "end\n"
    "for i = 1, 3 do S.victims[i] = spawn(victim, 2) end\n"
    "S.g = group{name = 'doomed'}\n"
    "for _ = 1, 2 do S.g:spawn(victim, 1) end\n";

static const char cancel_src[] =
    "local S = ...\n"
    "for _, t in ipairs(S.victims) do t:cancel() end\n"
    "S.g:cancel()\n"
    "for i, t in ipairs(S.victims) do\n"
    "  if t.status ~= 'cancelled' then error('victim ' .. i .. ' is ' .. t.status) end\n"
    "end\n"
    "S.done = true\n";

static const char cancel_check[] =
    "local S = ...\n"
    "if S.done and S.want then assert(S.cleaned == 26, S.cleaned .. ' cleanups ran, want 26') end\n"
    "for i, t in ipairs(S.victims) do\n"
    "  local st = t.status\n"
    "  assert(st == 'cancelled' or st == 'waiting', 'victim ' .. i .. ' is ' .. st)\n"
    "  t:cancel()\n"
    "  assert(t.status == 'cancelled', 'victim ' .. i .. ' is ' .. t.status .. ' after a cancel')\n"
    "end\n"
    "S.g:cancel()\n"
    "assert(#weft.tasks() == 0, #weft.tasks() .. ' task(s) alive after cancelling everything')\n";

static int op_cancel(run *r) {
  weft_state *W = open_run(r);
  if (!W) return bad(r, "weft_open failed unarmed");
  make_shared(r, W);
  weft_task s = setup_task(r, W, cancel_setup);
  if (!s.id) return finish(r, W, OUT_BAD);
  weft_task_drop(W, s);
  steps(W, 1);
  if (!push_call(r, W, cancel_src, "=canceller")) return finish(r, W, OUT_BAD);
  arm(r);
  weft_task t = weft_spawn(W, 1);
  disarm(r);
  int out = task_outcome(r, W, t, "the canceller");
  if (out == OUT_SUCCESS && r->refused == 0) {
    lua_State *L = weft_lua(W);
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->S);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "want");
    lua_pop(L, 1);
  }
  steps(W, 2);
  const char *e = check(r, W, cancel_check);
  if (e && out != OUT_BAD) out = bad(r, "after cancelling: %s", e);
  if (t.id) weft_task_drop(W, t);
  return finish(r, W, out);
}

/* Waiters on a future (three, one through all{} and on_done), a signal,
   a buffered channel, a hand-over channel and a future completed from C. */
static const char resolve_setup[] =
    "local S = ...\n"
    "S.f, S.s, S.ch, S.hand = future(), signal('sweep'), channel(1), channel(0)\n"
    "S.fired, S.recv = false, false\n"
    "S.got, S.w = {}, {}\n"
    "local want = {f1 = 3, f2 = 3, f3 = 3, s1 = 5, s2 = 5, ch = 9, sent = true, all = 6,\n"
    "              first = 'c-value', cf = 'c-value', on_done = 'resolved'}\n"
    "S.want = want\n"
    "for k in pairs(want) do S.got[k] = false end\n"
    "local function waiter(key, fn) S.w[key] = spawn(function() S.got[key] = fn() end) end\n"
    "for i = 1, 3 do waiter('f' .. i, function() local a, b = wait(S.f) return a + b end) end\n"
    "for i = 1, 2 do waiter('s' .. i, function() return wait(S.s) end) end\n"
    "waiter('ch', function() return S.ch:recv() end)\n"
    "waiter('sent', function() S.hand:send('handed') return true end)\n"
    "waiter('all', function() local r = wait(all{S.f, S.s}) return r[1] + r[2] end)\n"
    "waiter('first', function() local i, v = wait(first{S.cf, 100}) return v end)\n"
    "waiter('cf', function() return wait(S.cf) end)\n"
    "S.f:on_done(function(f) S.got.on_done = f.state end)\n";

static const char resolve_src[] = "local S = ...\n"
                                  "S.f:resolve(1, 2)\n"
                                  "S.s:fire(5)\n"
                                  "S.fired = true\n"
                                  "S.ch:send(9)\n"
                                  "S.recv = S.hand:recv()\n";

/* Every waiter got its value, or failed for lack of memory, or still
   waits on something that was never completed; the on_done callback ran,
   or a memory report names the line that set it. */
static const char resolve_check[] =
    "local S, ondone_reported = ...\n"
    "local pending = {f1 = S.f.state == 'pending', f2 = S.f.state == 'pending',\n"
    "  f3 = S.f.state == 'pending', s1 = not S.fired, s2 = not S.fired, ch = #S.ch == 0,\n"
    "  sent = S.recv == false, all = S.f.state == 'pending' or not S.fired,\n"
    "  first = S.cf.state == 'pending', cf = S.cf.state == 'pending',\n"
    "  on_done = S.f.state == 'pending'}\n"
    "for k, want in pairs(S.want) do\n"
    "  local got, t = S.got[k], S.w[k]\n"
    "  if got ~= want then\n"
    "    local st = t and t.status\n"
    "    local mem = t and st == 'failed' and tostring(t.error):find('" MEMERR "', 1, true)\n"
    "      or k == 'on_done' and ondone_reported\n"
    "    if not mem and not (pending[k] and (st == 'waiting' or st == nil)) then\n"
    "      error(k .. ' got ' .. tostring(got) .. ' (want ' .. tostring(want) .. '), task '\n"
    "        .. tostring(st) .. ', error ' .. tostring(t and t.error) .. ', f ' .. S.f.state\n"
    "        .. ', fired ' .. tostring(S.fired) .. ', recv ' .. tostring(S.recv))\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if S.strict then\n"
    "  for k, want in pairs(S.want) do assert(S.got[k] == want, k .. ' got ' .. "
    "tostring(S.got[k])) end\n"
    "  assert(S.recv == 'handed', 'recv got ' .. tostring(S.recv))\n"
    "end\n";

/* Where resolve_setup sets its on_done callback, as reports name it. */
static void find_ondone_site(run *r) {
  const char *at = strstr(resolve_setup, ":on_done(");
  int line = 1;
  for (const char *p = resolve_setup; p < at; p++) line += *p == '\n';
  snprintf(r->ondone_site, sizeof r->ondone_site, "setup:%d", line);
}

static int op_resolve(run *r) {
  find_ondone_site(r);
  weft_state *W = open_run(r);
  if (!W) return bad(r, "weft_open failed unarmed");
  lua_State *L = weft_lua(W);
  make_shared(r, W);
  weft_future cf = weft_future_new(W);
  if (!cf.id) return finish(r, W, bad(r, "weft_future_new failed unarmed"));
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->S);
  weft_push_future(W, L, cf);
  lua_setfield(L, -2, "cf");
  lua_pop(L, 1);
  weft_task s = setup_task(r, W, resolve_setup);
  if (!s.id) return finish(r, W, OUT_BAD);
  weft_task_drop(W, s);
  steps(W, 1);
  if (!push_call(r, W, resolve_src, "=resolver")) return finish(r, W, OUT_BAD);
  arm(r);
  weft_task t = weft_spawn(W, 1);
  disarm(r);
  int top = lua_gettop(L);
  lua_pushliteral(L, "c-value");
  arm(r);
  int crc = weft_future_resolve(W, cf, 1);
  int left = lua_gettop(L) - top;
  steps(W, 2);
  disarm(r);
  lua_settop(L, top);
  int out = task_outcome(r, W, t, "the resolver");
  if (left != 0)
    out = bad(r, "weft_future_complete returned %d and left %d value(s) on the stack", crc, left);
  else if (crc == WEFT_ESTALE)
    out = bad(r, "weft_future_complete returned WEFT_ESTALE (dead future) for a live future");
  else if (crc != WEFT_OK && out != OUT_BAD)
    out = r->refused ? OUT_ERROR : bad(r, "weft_future_complete returned %d", crc);
  if (out == OUT_SUCCESS && r->refused == 0) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->S);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "strict");
    lua_pop(L, 1);
  }
  steps(W, 3);
  const char *e = NULL;
  if (push_call(r, W, resolve_check, "=check")) {
    lua_pushboolean(L, r->ondone_reports > 0);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
      e = lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)";
      if (out != OUT_BAD) out = bad(r, "after resolving: %s", e);
      lua_pop(L, 1);
    }
  } else {
    out = OUT_BAD;
  }
  if (t.id) weft_task_drop(W, t);
  return finish(r, W, out);
}

/* ---- reload ---- */

static void write_file(const char *root, const char *rel, const char *text) {
  char full[512];
  snprintf(full, sizeof full, "%s/%s", root, rel);
  FILE *f = fopen(full, "wb");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static const char base_v1[] =
    "return {VALUE = 1, OLD = 'old', list = {1, 2, 3}, nested = {a = 1, gone = true}}\n";
static const char base_v2[] =
    "local M = {VALUE = 2, list = {4, 5, 6, 7}, nested = {a = 2, b = 3}, extra = 'new'}\n"
    "for i = 1, 20 do M['k' .. i] = i end\n"
    "return M\n";
static const char mod_src[] = "local base = require 'lib.base'\n"
                              "local M = {}\n"
                              "function M.start(e)\n"
                              "  e.starts = (e.starts or 0) + 1\n"
                              "  while true do\n"
                              "    e.v = base.VALUE\n"
                              "    wait()\n"
                              "  end\n"
                              "end\n"
                              "return M\n";

static const char reload_setup[] = "local S = ...\n"
                                   "S.e = {}\n"
                                   "S.t = weft.start('ai.mod', S.e)\n";

/* Either the whole transaction committed or nothing changed. */
static const char reload_check[] =
    "local S, committed = ...\n"
    "local base = require 'lib.base'\n"
    "local v = {}\n"
    "for _, m in ipairs(weft.modules()) do v[m.name] = m.version end\n"
    "if committed then\n"
    "  assert(v['lib.base'] == 2 and v['ai.mod'] == 2, 'versions ' .. tostring(v['lib.base']) .. "
    "',' .. tostring(v['ai.mod']))\n"
    "  assert(base.VALUE == 2 and #base.list == 4 and base.extra == 'new' and base.k20 == 20, "
    "'contents not new')\n"
    "  assert(base.nested.b == 3, 'nested not merged')\n"
    "  assert(base.OLD == nil and base.nested.gone == nil, 'dropped keys still there')\n"
    "else\n"
    "  assert(v['lib.base'] == 1 and v['ai.mod'] == 1, 'a failed reload changed versions to ' .. "
    "tostring(v['lib.base']) .. ',' .. tostring(v['ai.mod']))\n"
    "  assert(base.VALUE == 1 and #base.list == 3 and base.list[1] == 1 and base.extra == nil and "
    "base.k1 == nil\n"
    "    and base.OLD == 'old' and base.nested.gone == true\n"
    "    and base.nested.a == 1 and base.nested.b == nil,\n"
    "    'a failed reload changed the live module: VALUE ' .. tostring(base.VALUE) .. ', #list ' "
    ".. #base.list\n"
    "    .. ', extra ' .. tostring(base.extra) .. ', k1 ' .. tostring(base.k1) .. ', nested.a ' .. "
    "tostring(base.nested.a))\n"
    "  assert(S.e.starts == 1, 'entity restarted ' .. S.e.starts .. ' times by a failed reload')\n"
    "  assert(S.t.status == 'waiting', 'entity ' .. S.t.status .. ' after a failed reload')\n"
    "end\n";

static const char reload_after[] =
    "local S = ...\n"
    "assert(S.e.v == 2, 'entity sees VALUE ' .. tostring(S.e.v) .. ' after a good reload')\n";

static int reload_state(run *r, weft_state *W, int committed) {
  lua_State *L = weft_lua(W);
  if (!push_call(r, W, reload_check, "=check")) return OUT_BAD;
  lua_pushboolean(L, committed);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    bad(r, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return OUT_BAD;
  }
  return OUT_SUCCESS;
}

static int op_reload(run *r) {
  write_file(r->root, "lib/base.lua", base_v1);
  write_file(r->root, "ai/mod.lua", mod_src);
  weft_state *W = open_run(r);
  if (!W) return bad(r, "weft_open failed unarmed");
  make_shared(r, W);
  weft_task s = setup_task(r, W, reload_setup);
  if (!s.id) return finish(r, W, OUT_BAD);
  weft_task_drop(W, s);
  steps(W, 1);
  write_file(r->root, "lib/base.lua", base_v2);
  int before = r->reports;
  arm(r);
  int rc = weft_reload_file(W, "lib/base.lua");
  weft_step(W, DT60);
  disarm(r);
  int out = OUT_SUCCESS;
  if (rc == WEFT_OK) {
    if (r->refused && r->reports > before) out = OUT_ERROR; /* the restarted start failed */
  } else {
    if (!r->refused)
      out = bad(r, "weft_reload_file returned %d without a failure", rc);
    else if (r->reports == before)
      out = bad(r, "a failed reload was not reported");
    else
      out = OUT_ERROR;
  }
  if (out != OUT_BAD && reload_state(r, W, rc == WEFT_OK) == OUT_BAD) out = OUT_BAD;
  if (out != OUT_BAD && rc == WEFT_OK && out == OUT_SUCCESS) {
    const char *e = check(r, W, reload_after);
    if (e) out = bad(r, "%s", e);
  }
  /* After a failure the next good reload goes through. */
  if (out == OUT_ERROR && rc != WEFT_OK) {
    if (weft_reload_file(W, "lib/base.lua") != WEFT_OK) {
      out = bad(r, "the retry after a failed reload failed too: %s", r->bad_report);
    } else {
      weft_step(W, DT60);
      if (reload_state(r, W, 1) == OUT_BAD) out = OUT_BAD;
    }
  }
  return finish(r, W, out);
}

/* ---- the sweep ---- */

typedef int (*op_fn)(run *r);

typedef struct op {
  const char *name;
  op_fn fn;
} op;

/* Records a child sends its parent through a pipe (each write is atomic). */
enum { R_BEGIN = 1, R_BAD, R_DONE, R_CAP };
typedef struct rec {
  int type;
  long k;
  char msg[480];
} rec;

static struct sigaction saved_sig[32]; /* handlers before cmocka's */
static const int crash_sigs[] = {SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE};

static void send_rec(int fd, int type, long k, const char *msg) {
  rec m;
  memset(&m, 0, sizeof m);
  m.type = type;
  m.k = k;
  if (msg) snprintf(m.msg, sizeof m.msg, "%s", msg);
  ssize_t n = write(fd, &m, sizeof m);
  (void)n;
}

/* One run with allocation #k failing; returns its outcome with r->why. */
static int run_one(const op *o, long k, int persistent, const char *root, run *r) {
  memset(r, 0, sizeof *r);
  r->k = k;
  r->persistent = persistent;
  r->root = root;
  size_t before = live_bytes();
  int out = o->fn(r);
  size_t after = live_bytes();
  if (out != OUT_BAD && r->bad_report[0]) out = bad(r, "reported: %s", r->bad_report);
  if (out != OUT_BAD && r->refused == 0 && out != OUT_SUCCESS)
    out = bad(r, "failed without an allocation failure");
  if (out != OUT_BAD && EXACT_BYTES && after != before)
    out = bad(r, "%ld bytes still allocated after weft_close", (long)(after - before));
  return out;
}

/* The child: runs k = from, from + 1, ... and reports each. */
static void child(const op *o, int persistent, long from, const char *root, int fd) {
  for (size_t i = 0; i < sizeof crash_sigs / sizeof *crash_sigs; i++)
    sigaction(crash_sigs[i], &saved_sig[crash_sigs[i]], NULL);
  run r;
  if (from == 1) run_one(o, MAX_K * 10, 0, root, &r); /* warm-up: first-use allocations */
  for (long k = from; k <= MAX_K; k++) {
    send_rec(fd, R_BEGIN, k, NULL);
    int out = run_one(o, k, persistent, root, &r);
    if (out == OUT_BAD) send_rec(fd, R_BAD, k, r.why);
    if (r.refused == 0) {
      send_rec(fd, R_DONE, k, NULL);
      close(fd);
      exit(0); /* not _exit: LeakSanitizer checks the child at exit */
    }
  }
  send_rec(fd, R_CAP, MAX_K, NULL);
  close(fd);
  exit(0);
}

#define MAX_MSGS 8

typedef struct mode_result {
  long needed; /* k of the run that completed without a failure, 0: never */
  long bad;    /* runs that broke the contract */
  int crashes; /* children that died during a run */
  int nmsgs;
  long msg_k[MAX_MSGS];
  long msg_count[MAX_MSGS];
  char msgs[MAX_MSGS][480];
  int leak_exit; /* a child exited nonzero after finishing (LeakSanitizer) */
  char leak_said[400];
  double seconds;
} mode_result;

static void note_bad(mode_result *m, long k, const char *msg) {
  m->bad++;
  for (int i = 0; i < m->nmsgs; i++)
    if (strcmp(m->msgs[i], msg) == 0) {
      m->msg_count[i]++;
      return;
    }
  if (m->nmsgs < MAX_MSGS) {
    snprintf(m->msgs[m->nmsgs], sizeof m->msgs[0], "%s", msg);
    m->msg_k[m->nmsgs] = k;
    m->msg_count[m->nmsgs] = 1;
    m->nmsgs++;
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What a crashed child said on stderr, without process ids: Lua's panic
   message, or ASan's summary and the first frame in weft's own code. */
static void crash_summary(FILE *f, char *out, size_t n) {
  char line[512], what[200] = "", where[200] = "", last[200] = "";
  fflush(f);
  rewind(f);
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!line[0] || strstr(line, "prelude failed")) continue;
    snprintf(last, sizeof last, "%.190s", line);
    if (strstr(line, "PANIC") || strncmp(line, "SUMMARY:", 8) == 0)
      snprintf(what, sizeof what, "%.190s", line);
    const char *in = strstr(line, " in ");
    if (!where[0] && in && (strstr(line, "bindings/") || strstr(line, "host/")))
      snprintf(where, sizeof where, "%.190s", in + 4);
  }
  if (!what[0]) snprintf(what, sizeof what, "%s", last[0] ? last : "(nothing)");
  snprintf(out, n, "%.190s%s%.190s", what, where[0] ? " at " : "", where);
}

static void sweep_mode(const op *o, int persistent, const char *root, mode_result *m) {
  memset(m, 0, sizeof *m);
  double t0 = now_s();
  long from = 1;
  for (;;) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    FILE *err = tmpfile(); /* the child's stderr, shown when it crashes */
    assert_non_null(err);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      dup2(fileno(err), 2);
      child(o, persistent, from, root, fds[1]);
    }
    close(fds[1]);
    rec msg;
    long last = from - 1;
    int finished = 0;
    for (;;) {
      size_t got = 0;
      while (got < sizeof msg) {
        ssize_t n = read(fds[0], (char *)&msg + got, sizeof msg - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
      }
      if (got < sizeof msg) break;
      if (msg.type == R_BEGIN)
        last = msg.k;
      else if (msg.type == R_BAD)
        note_bad(m, msg.k, msg.msg);
      else if (msg.type == R_DONE) {
        m->needed = msg.k;
        finished = 1;
      } else if (msg.type == R_CAP)
        finished = 1;
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    char said[400];
    crash_summary(err, said, sizeof said);
    fclose(err);
    if (finished) {
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        m->leak_exit = 1;
        snprintf(m->leak_said, sizeof m->leak_said, "%s", said);
      }
      break;
    }
    /* The child died during run `last`: a crash at that k. */
    char what[480];
    if (WIFSIGNALED(status))
      snprintf(what, sizeof what, "crashed (signal %d: %s); stderr: %s", WTERMSIG(status),
               strsignal(WTERMSIG(status)), said);
    else
      snprintf(what, sizeof what, "the process exited with status %d during the run; stderr: %s",
               WEXITSTATUS(status), said);
    note_bad(m, last, what);
    m->crashes++;
    if (last >= MAX_K) break;
    from = last + 1;
  }
  m->seconds = now_s() - t0;
}

static void print_mode(const char *name, const char *mode, const mode_result *m) {
  printf("  %-8s %-10s k = 1..%-5ld %s (%.1f s)\n", name, mode, m->needed,
         m->needed ? "then succeeded" : "NEVER SUCCEEDED", m->seconds);
  for (int i = 0; i < m->nmsgs; i++)
    printf("    BAD %s %s: first at k = %ld (%ld run(s)): %s\n", name, mode, m->msg_k[i],
           m->msg_count[i], m->msgs[i]);
  if (m->leak_exit)
    printf("    BAD %s %s: the child exited nonzero after its runs (LeakSanitizer?): %s\n", name,
           mode, m->leak_said);
  if (m->crashes && !EXACT_BYTES)
    printf("    (the ASan build, make asan, names the weft frame of each crash)\n");
}

static void sweep(const op *o) {
  char root[64];
  snprintf(root, sizeof root, "/tmp/weft-sweep-XXXXXX");
  assert_non_null(mkdtemp(root));
  char sub[128];
  snprintf(sub, sizeof sub, "%s/ai", root);
  mkdir(sub, 0755);
  snprintf(sub, sizeof sub, "%s/lib", root);
  mkdir(sub, 0755);
  mode_result once, pers;
  sweep_mode(o, 0, root, &once);
  sweep_mode(o, 1, root, &pers);
  rm_tree(root);
  printf("sweep %s:\n", o->name);
  print_mode(o->name, "once", &once);
  print_mode(o->name, "persistent", &pers);
  fflush(stdout);
  assert_true(once.needed > 0);
  assert_true(pers.needed > 0);
  assert_int_equal(once.bad, 0);
  assert_int_equal(pers.bad, 0);
  assert_int_equal(once.leak_exit + pers.leak_exit, 0);
}

/* ---- the cases ---- */

static void create_the_host_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  static const op o = {"open", op_open};
  sweep(&o);
}

static void load_a_script_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  static const op o = {"load", op_load};
  sweep(&o);
}

static void spawn_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  static const op o = {"spawn", op_spawn};
  sweep(&o);
}

static void resume_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  static const op o = {"resume", op_resume};
  sweep(&o);
}

static void cancel_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  static const op o = {"cancel", op_cancel};
  sweep(&o);
}

static void resolve_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  static const op o = {"resolve", op_resolve};
  sweep(&o);
}

static void reload_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
  static const op o = {"reload", op_reload};
  sweep(&o);
}

int main(void) {
  for (size_t i = 0; i < sizeof crash_sigs / sizeof *crash_sigs; i++)
    sigaction(crash_sigs[i], NULL, &saved_sig[crash_sigs[i]]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(create_the_host_fails_cleanly_at_every_allocation),
      cmocka_unit_test(load_a_script_fails_cleanly_at_every_allocation),
      cmocka_unit_test(spawn_fails_cleanly_at_every_allocation),
      cmocka_unit_test(resume_fails_cleanly_at_every_allocation),
      cmocka_unit_test(cancel_fails_cleanly_at_every_allocation),
      cmocka_unit_test(resolve_fails_cleanly_at_every_allocation),
      cmocka_unit_test(reload_fails_cleanly_at_every_allocation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
