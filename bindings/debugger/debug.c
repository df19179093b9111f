/* The debugger: a Debug Adapter Protocol server (Content-Length framed
   JSON over a local TCP socket). Every task is a thread; breakpoints are
   kept by file path and line, so the functions a hot reload brings in hit
   them too. A stop serves the client from a nested loop inside the hook
   (or the scheduler) that stopped, so the whole frame stays frozen. The
   socket and the framing are dap_wire.c's, the messages sent dap_conn.c's;
   frames, variables and evaluation are debug_values.c's; thread names and
   hit conditions debug_info.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../accounts/budget.h"
#include "../base/chunks.h"
#include "dap_conn.h"
#include "dap_wire.h"
#include "../accounts/handles.h"
#include "debug_info.h"
#include "debug_int.h"
#include "debug_values.h"
#include "../env/sandbox.h"

#define NO_TASK 1       /* the thread id of code running outside any task */
#define FIRST_TASK_ID 2 /* thread ids of tasks count up from here */

enum { STEP_NONE, STEP_IN, STEP_OVER, STEP_OUT }; /* D->step */

/* ---- messages ---- */

static void drop_client(dbg *D);

/* A send that finds the client gone drops its socket (dap_conn.c); what
   is kept here for that client goes the next time the server looks
   (service, the hook). */
static void check_client(dbg *D) {
  if (D->client && !dap_wire_connected(&D->conn.wire)) drop_client(D);
}

static void send_thread_event(dbg *D, const char *reason, int dap) {
  cJSON *body;
  cJSON *m = dap_conn_event("thread", &body);
  cJSON_AddStringToObject(body, "reason", reason);
  cJSON_AddNumberToObject(body, "threadId", dap);
  dap_conn_send(&D->conn, m);
}

/* ---- output: W's sinks, forwarded and copied to the client ---- */

static void on_log(void *user, const char *line, size_t len) {
  dbg *D = user;
  if (D->log) {
    D->log(D->user, line, len);
  } else {
    fwrite(line, 1, len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
  dap_conn_output(&D->conn, "stdout", line, len);
}

static void on_report(void *user, const char *msg, const char *trace) {
  dbg *D = user;
  if (D->report)
    D->report(D->user, msg, trace);
  else
    fprintf(stderr, "error: %s\n", trace ? trace : msg);
  const char *t = trace ? trace : msg;
  char *s = malloc(strlen(t) + 8);
  if (!s) return;
  sprintf(s, "error: %s", t);
  dap_conn_output(&D->conn, "stderr", s, strlen(s));
  free(s);
}

/* ---- tasks as threads ---- */

static known *find_known(dbg *D, weft_id id) {
  if (!D->cap) return NULL;
  for (uint32_t i = (uint32_t)(id * 0x9E3779B97F4A7C15ull >> 40) & (D->cap - 1);;
       i = (i + 1) & (D->cap - 1)) {
    if (D->tasks[i].id == id || D->tasks[i].id == 0) return &D->tasks[i];
  }
}

static int grow_known(dbg *D, uint32_t cap) {
  known *old = D->tasks;
  uint32_t ocap = D->cap;
  D->tasks = calloc(cap, sizeof *D->tasks);
  if (!D->tasks) {
    D->tasks = old;
    return 0;
  }
  D->cap = cap;
  D->ntasks = 0;
  for (uint32_t i = 0; i < ocap; i++)
    if (old[i].id) {
      *find_known(D, old[i].id) = old[i];
      D->ntasks++;
    }
  free(old);
  return 1;
}

static void see_task(void *ud, weft_id id) {
  dbg *D = ud;
  ltask *lt = weft__task_udata(D->W->S, id);
  if (!lt || !lt->co) return;
  if ((D->ntasks + 1) * 2 > D->cap && !grow_known(D, D->cap ? D->cap * 2 : 64)) return;
  known *k = find_known(D, id);
  if (!k->id) {
    k->id = id;
    k->dap = D->next_dap++;
    D->ntasks++;
    send_thread_event(D, "started", k->dap);
  }
  k->stamp = D->stamp;
}

/* Tells the client of the tasks that started or ended since the last
   call: O(live tasks) when any did, O(1) when none did (no task was made
   and as many live: none can have ended either). */
static void sync_threads(dbg *D) {
  if (!dap_wire_connected(&D->conn.wire) || !D->conn.initialized) return;
  uint32_t live = weft__sched_task_count(D->W->S);
  if (D->synced && D->W->spawned == D->spawned_seen && live == D->live_seen) return;
  D->synced = 1;
  D->spawned_seen = D->W->spawned;
  D->live_seen = live;
  D->stamp++;
  weft__sched_each_task(D->W->S, see_task, D);
  int gone = 0;
  for (uint32_t i = 0; i < D->cap; i++)
    if (D->tasks[i].id && D->tasks[i].stamp != D->stamp) {
      send_thread_event(D, "exited", D->tasks[i].dap);
      D->tasks[i].id = 0;
      gone = 1;
    }
  if (gone) grow_known(D, D->cap); /* rehash what is left */
}

static int dap_of(dbg *D, weft_id task) {
  if (!task) return NO_TASK;
  known *k = find_known(D, task);
  return k && k->id ? k->dap : NO_TASK;
}

static weft_id task_of(dbg *D, int dap) {
  for (uint32_t i = 0; i < D->cap; i++)
    if (D->tasks[i].id && D->tasks[i].dap == dap) return D->tasks[i].id;
  return 0;
}

static lua_State *home_of(dbg *D, weft_id task) {
  ltask *lt = task ? weft__task_udata(D->W->S, task) : NULL;
  return lt ? lt->co : NULL;
}

/* ---- the hook and stops ---- */

static int is_prelude(const char *source) { return weft__chunk_embedded(source); }

static int frames_of(lua_State *th) {
  lua_Debug ar;
  int n = 0;
  while (th && lua_getstack(th, n, &ar)) n++;
  return n;
}

/* How deep a task's code is: the running thread's frames, and below them
   the task's own thread when the code runs in a coroutine it resumed. */
static int task_depth(dbg *D, lua_State *L, weft_id task) {
  lua_State *home = home_of(D, task);
  return frames_of(L) + (home && home != L ? frames_of(home) : 0);
}

/* Line events are asked for only while a breakpoint is set or a step or
   pause is under way; otherwise no hook runs beyond the budget's. */
static void update_mask(dbg *D, lua_State *L) {
  int want = D->nbps > 0 || D->step || D->pause_req;
  weft__budget_set_extra(D->W, dap_wire_connected(&D->conn.wire) && want ? LUA_MASKLINE : 0, L);
}

static int service(dbg *D, int timeout_ms);

/* Forgets the frames and variables of a stop (their references are
   valid until the program resumes). Never allocates. */
static void clear_refs(dbg *D) {
  D->nframes = 0;
  D->nvars = 0;
  lua_rawgeti(D->E, LUA_REGISTRYINDEX, D->ref_anchors);
  for (int i = 1; i <= D->nanchors; i++) {
    lua_pushnil(D->E);
    lua_rawseti(D->E, -2, i);
    lua_pushnil(D->E);
    lua_rawseti(D->E, -2, -i);
  }
  lua_pop(D->E, 1);
  D->nanchors = 0;
}

/* Stops everything: tells the client and serves it until it resumes.
   L is the thread that stopped (NULL between frames); bps, the ids of the
   nbps breakpoints that stopped it (the caller's). */
static void stop(dbg *D, lua_State *L, weft_id task, const char *reason, const char *text,
                 const int *bps, int nbps) {
  if (!dap_wire_connected(&D->conn.wire) || !D->conn.initialized || D->stopped || D->terminate)
    return;
  weft_hold held;
  weft__budget_hold(D->W, &held); /* time stopped, telling the client too, is not the script's */
  D->step = STEP_NONE;
  D->pause_req = 0;
  D->stopped = 1;
  D->resume = 0;
  D->stop_L = L;
  D->stop_task = task;
  snprintf(D->exc, sizeof D->exc, "%s", strcmp(reason, "exception") == 0 && text ? text : "");
  sync_threads(D);
  cJSON *body;
  cJSON *m = dap_conn_event("stopped", &body);
  cJSON_AddStringToObject(body, "reason", reason);
  cJSON_AddNumberToObject(body, "threadId", dap_of(D, task));
  cJSON_AddBoolToObject(body, "allThreadsStopped", 1);
  if (text) {
    cJSON_AddStringToObject(body, "text", text);
    cJSON_AddStringToObject(body, "description", text);
  }
  if (nbps > 0) cJSON_AddItemToObject(body, "hitBreakpointIds", cJSON_CreateIntArray(bps, nbps));
  dap_conn_send(&D->conn, m);
  while (dap_wire_connected(&D->conn.wire) && !D->resume) {
    if (D->desc.idle) D->desc.idle(D->desc.user);
    service(D, D->desc.idle ? 16 : 500);
  }
  clear_refs(D);
  D->stopped = 0;
  D->stop_L = NULL;
  D->stop_task = 0;
  D->exc[0] = 0;
  update_mask(D, L);
  if (dap_wire_connected(&D->conn.wire) && D->conn.initialized) {
    m = dap_conn_event("continued", &body);
    cJSON_AddNumberToObject(body, "threadId", dap_of(D, task));
    cJSON_AddBoolToObject(body, "allThreadsContinued", 1);
    dap_conn_send(&D->conn, m);
  }
  weft__budget_unhold(D->W, &held);
}

/* The breakpoint file a chunk name ("@scripts/ai/patrol.lua") is, or -1.
   Paths resolve once per chunk name (a small cache). */
static int file_of(dbg *D, const char *source) {
  if (source[0] != '@') return -1;
  for (int i = 0; i < SRC_CACHE; i++)
    if (D->cache[i].src && strcmp(D->cache[i].src, source) == 0) return D->cache[i].file;
  char abs[WEFT_PATH_MAX];
  int file = -1;
  if (weft__path_resolve(source + 1, abs, sizeof abs) == WEFT_OK)
    for (int i = 0; i < D->nfiles && file < 0; i++)
      if (strcmp(D->files[i].path, abs) == 0) file = i;
  int slot = D->cache_next++ % SRC_CACHE;
  free(D->cache[slot].src);
  D->cache[slot].src = strdup(source);
  D->cache[slot].file = file;
  return file;
}

/* Adds a breakpoint's id to those of the stop being weighed (D->hit). */
static int add_hit(dbg *D, int n, int id) {
  if (n == D->hitcap) {
    int cap = D->hitcap ? D->hitcap * 2 : 8;
    int *ids = realloc(D->hit, (size_t)cap * sizeof *ids);
    if (!ids) return n; /* the stop names those it has room for */
    D->hit = ids;
    D->hitcap = cap;
  }
  D->hit[n] = id;
  return n + 1;
}

/* Every breakpoint at the line is weighed before the one stop: each
   counts its hit, logpoints say their line, and the stop names every
   breakpoint that stops there (several share a line when a comment's and
   the code line's after it both moved there). O(breakpoints in the
   file), once per line that has a breakpoint in some file. */
static void check_breakpoints(dbg *D, lua_State *L, lua_Debug *ar) {
  if (!lua_getinfo(L, "S", ar)) return;
  int f = file_of(D, ar->source);
  if (f < 0) return;
  int nhit = 0;
  for (int i = 0; i < D->files[f].n; i++) {
    bpoint *b = &D->files[f].bp[i];
    if (b->line != ar->currentline) continue;
    if (b->cond) {
      int truthy = 0;
      char buf[256];
      if (!weft__debug_eval_value(D, L, 0, b->cond, buf, sizeof buf, &truthy)) {
        if (!b->cond_failed) { /* said once; the breakpoint never stops on it */
          char msg[400];
          int n = snprintf(msg, sizeof msg, "breakpoint condition `%s` failed: %s", b->cond, buf);
          b->cond_failed = 1;
          dap_conn_output(&D->conn, "stderr", msg,
                          n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
        }
        continue;
      }
      if (!truthy) continue;
    }
    b->hits++;
    if (b->hit && !weft__debug_hit_matches(b->hit, b->hits)) continue;
    if (b->log) {
      weft__debug_log_point(D, L, b->log);
      continue;
    }
    nhit = add_hit(D, nhit, b->id);
  }
  if (nhit > 0) stop(D, L, D->W->cur, "breakpoint", NULL, D->hit, nhit);
}

static int step_done(dbg *D, lua_State *L, lua_Debug *ar) {
  if (D->W->cur != D->step_task) return 0;
  if (!lua_getinfo(L, "S", ar) || is_prelude(ar->source)) return 0;
  if (D->step == STEP_IN) return 1;
  int depth = task_depth(D, L, D->step_task);
  return D->step == STEP_OVER ? depth <= D->step_depth : depth < D->step_depth;
}

static void on_hook(weft_state *W, lua_State *L, lua_Debug *ar) {
  dbg *D = W->dbg;
  if (!D || D->stopped || D->in_eval || ar->event != LUA_HOOKLINE) return;
  check_client(D); /* a client gone: no condition is evaluated for it */
  if (D->pause_req) {
    if (lua_getinfo(L, "S", ar) && !is_prelude(ar->source))
      stop(D, L, W->cur, "pause", NULL, NULL, 0);
    return;
  }
  if (D->step && step_done(D, L, ar)) {
    stop(D, L, W->cur, "step", NULL, NULL, 0);
    return;
  }
  int line = ar->currentline;
  if (line >= 0 && line < D->nlines && D->lines[line]) check_breakpoints(D, L, ar);
}

static void on_task_error(weft_state *W, weft_id task, lua_State *co, lua_State *L, int idx) {
  dbg *D = W->dbg;
  if (!D || !dap_wire_connected(&D->conn.wire) || D->stopped || !(D->exc_uncaught || D->exc_all))
    return;
  char text[512];
  if (lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER)
    snprintf(text, sizeof text, "%s", lua_tostring(L, idx));
  else
    snprintf(text, sizeof text, "(error object is a %s value)", luaL_typename(L, idx));
  stop(D, co, task, "exception", text, NULL, 0);
}

/* ---- caught errors ----
   With the "all" filter on, an error raised inside pcall or xpcall stops
   too, where it was raised: scripts get versions of both that pass a
   message handler then (the stack is still whole when it runs). With it
   off they are Lua's own in behaviour, yields included. */

static void stop_on_error(lua_State *L) {
  weft_state *W = weft__get(L);
  dbg *D = W->dbg;
  if (!D || !dap_wire_connected(&D->conn.wire) || D->stopped || D->in_eval || !D->exc_all) return;
  char text[512];
  if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER)
    snprintf(text, sizeof text, "%s (caught)", lua_tostring(L, 1));
  else
    snprintf(text, sizeof text, "(error object is a %s value) (caught)", luaL_typename(L, 1));
  stop(D, L, W->cur, "exception", text, NULL, 0);
}

static int l_stop_handler(lua_State *L) {
  stop_on_error(L);
  lua_settop(L, 1);
  return 1;
}

/* xpcall's: stops, then hands the error to the script's handler as the
   sandbox's xpcall does. */
static int l_stop_xhandler(lua_State *L) {
  if (!weft__budget_killing(weft__get(L))) stop_on_error(L); /* a kill is no caught error */
  return weft__l_xhandler(L);
}

static int catching(lua_State *L) {
  dbg *D = weft__get(L)->dbg;
  return D && dap_wire_connected(&D->conn.wire) && D->exc_all;
}

static int l_pcall(lua_State *L) {
  luaL_checkany(L, 1);
  int h = 0;
  if (catching(L)) {
    lua_pushcfunction(L, l_stop_handler);
    lua_insert(L, 1);
    h = 1;
  }
  lua_pushboolean(L, 1);
  lua_insert(L, h + 1);
  int st = lua_pcallk(L, lua_gettop(L) - h - 2, LUA_MULTRET, h, h, weft__pcall_done);
  return weft__pcall_done(L, st, h);
}

static int l_xpcall(lua_State *L) {
  return weft__xpcall_with(L, catching(L) ? l_stop_xhandler : weft__l_xhandler);
}

/* ---- requests ---- */

static char *dup_arg(cJSON *args, const char *k) {
  const char *s = str_arg(args, k);
  return s && *s ? strdup(s) : NULL;
}

static void free_file(bfile *f) {
  for (int i = 0; i < f->n; i++) {
    free(f->bp[i].cond);
    free(f->bp[i].hit);
    free(f->bp[i].log);
  }
  free(f->bp);
  free(f->path);
}

static void rebuild_lines(dbg *D) {
  int max = 0;
  D->nbps = 0;
  for (int f = 0; f < D->nfiles; f++)
    for (int i = 0; i < D->files[f].n; i++) {
      if (D->files[f].bp[i].line > max) max = D->files[f].bp[i].line;
      D->nbps++;
    }
  free(D->lines);
  D->lines = calloc((size_t)max + 1, sizeof *D->lines);
  D->nlines = D->lines ? max + 1 : 0;
  for (int f = 0; f < D->nfiles && D->lines; f++)
    for (int i = 0; i < D->files[f].n; i++)
      if (D->files[f].bp[i].line >= 0) D->lines[D->files[f].bp[i].line]++;
  for (int i = 0; i < SRC_CACHE; i++) {
    free(D->cache[i].src);
    D->cache[i].src = NULL;
  }
}

static void clear_breakpoints(dbg *D) {
  for (int f = 0; f < D->nfiles; f++) free_file(&D->files[f]);
  free(D->files);
  D->files = NULL;
  D->nfiles = 0;
  rebuild_lines(D);
}

static void req_set_breakpoints(dbg *D, cJSON *req, cJSON *args) {
  cJSON *src = cJSON_GetObjectItem(args, "source");
  const char *path = str_arg(src, "path");
  if (!path) return dap_conn_respond(&D->conn, req, "setBreakpoints needs source.path", NULL);
  char abs[WEFT_PATH_MAX];
  int verified = weft__path_resolve(path, abs, sizeof abs) == WEFT_OK;
  if (!verified) snprintf(abs, sizeof abs, "%s", path);
  int f = 0;
  while (f < D->nfiles && strcmp(D->files[f].path, abs) != 0) f++;
  if (f < D->nfiles) {
    free_file(&D->files[f]);
    D->files[f] = D->files[--D->nfiles];
  }
  cJSON *list = cJSON_GetObjectItem(args, "breakpoints");
  int n = cJSON_GetArraySize(list);
  cJSON *body = cJSON_CreateObject();
  cJSON *out = cJSON_AddArrayToObject(body, "breakpoints");
  if (n > 0) {
    bfile *nf = realloc(D->files, (size_t)(D->nfiles + 1) * sizeof *nf);
    bpoint *bp = calloc((size_t)n, sizeof *bp);
    char *p = strdup(abs);
    if (!nf || !bp || !p) {
      if (nf) D->files = nf;
      free(bp);
      free(p);
      cJSON_Delete(body);
      return dap_conn_respond(&D->conn, req, "not enough memory", NULL);
    }
    D->files = nf;
    D->files[D->nfiles++] = (bfile){p, bp, n};
    /* Walked once, in order: cJSON_GetArrayItem(list, i) walks from the
       front each time, which made a long list quadratic. */
    cJSON *b = list ? list->child : NULL;
    for (int i = 0; i < n && b; i++, b = b->next) {
      bp[i].id = ++D->next_bp;
      int asked = (int)num_arg(b, "line", 0),
          code = verified ? weft__debug_code_line(abs, asked) : -1;
      bp[i].line = code > 0 ? code : asked;
      bp[i].cond = dup_arg(b, "condition");
      bp[i].hit = dup_arg(b, "hitCondition");
      bp[i].log = dup_arg(b, "logMessage");
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(out, o);
      cJSON_AddNumberToObject(o, "id", bp[i].id);
      cJSON_AddBoolToObject(o, "verified", verified && code != 0);
      cJSON_AddNumberToObject(o, "line", bp[i].line);
      if (!verified || code == 0)
        cJSON_AddStringToObject(o, "message",
                                verified ? "no code at or after this line" : "no such file");
    }
  }
  rebuild_lines(D);
  update_mask(D, D->stop_L);
  dap_conn_respond(&D->conn, req, NULL, body);
}

static void req_set_exceptions(dbg *D, cJSON *req, cJSON *args) {
  cJSON *filters = cJSON_GetObjectItem(args, "filters");
  D->exc_uncaught = D->exc_all = 0;
  for (int i = 0; i < cJSON_GetArraySize(filters); i++) {
    cJSON *f = cJSON_GetArrayItem(filters, i);
    if (!cJSON_IsString(f)) continue;
    if (strcmp(f->valuestring, "uncaught") == 0) D->exc_uncaught = 1;
    if (strcmp(f->valuestring, "all") == 0) D->exc_all = 1;
  }
  dap_conn_respond(&D->conn, req, NULL, NULL);
}

static void req_initialize(dbg *D, cJSON *req) {
  cJSON *b = cJSON_CreateObject();
  static const char *const caps[] = {"supportsConfigurationDoneRequest",
                                     "supportsConditionalBreakpoints",
                                     "supportsHitConditionalBreakpoints",
                                     "supportsLogPoints",
                                     "supportsSetVariable",
                                     "supportsTerminateRequest",
                                     "supportTerminateDebuggee",
                                     "supportsEvaluateForHovers",
                                     "supportsExceptionInfoRequest",
                                     NULL};
  for (const char *const *c = caps; *c; c++) cJSON_AddBoolToObject(b, *c, 1);
  cJSON *filters = cJSON_AddArrayToObject(b, "exceptionBreakpointFilters");
  static const char *const fl[][2] = {{"uncaught", "Uncaught errors (a task fails)"},
                                      {"all", "All errors (caught ones too)"}};
  for (int i = 0; i < 2; i++) {
    cJSON *f = cJSON_CreateObject();
    cJSON_AddItemToArray(filters, f);
    cJSON_AddStringToObject(f, "filter", fl[i][0]);
    cJSON_AddStringToObject(f, "label", fl[i][1]);
    cJSON_AddBoolToObject(f, "default", i == 0);
  }
  dap_conn_respond(&D->conn, req, NULL, b);
  cJSON *body;
  dap_conn_send(&D->conn, dap_conn_event("initialized", &body));
}

static int cmp_thread(const void *a, const void *b) {
  int x = ((const known *)a)->dap, y = ((const known *)b)->dap;
  return (x > y) - (x < y);
}

static void req_threads(dbg *D, cJSON *req) {
  sync_threads(D);
  known *list = malloc((D->ntasks + 1) * sizeof *list);
  uint32_t n = 0;
  for (uint32_t i = 0; list && i < D->cap; i++)
    if (D->tasks[i].id) list[n++] = D->tasks[i];
  if (n) qsort(list, n, sizeof *list, cmp_thread);
  cJSON *body = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(body, "threads");
  lua_State *E = D->E;
  if (D->stopped && !D->stop_task && D->stop_L) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, t);
    cJSON_AddNumberToObject(t, "id", NO_TASK);
    cJSON_AddStringToObject(t, "name", "(outside tasks)");
  }
  for (uint32_t i = 0; i < n; i++) {
    int top = lua_gettop(E);
    lua_pushcfunction(E, weft__debug_thread_name);
    lua_pushlightuserdata(E, D);
    lua_pushinteger(E, (lua_Integer)list[i].id);
    const char *name = lua_pcall(E, 2, 1, 0) == LUA_OK ? lua_tostring(E, -1) : "task";
    cJSON *t = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, t);
    cJSON_AddNumberToObject(t, "id", list[i].dap);
    cJSON_AddStringToObject(t, "name", name ? name : "task");
    lua_settop(E, top);
  }
  free(list);
  dap_conn_respond(&D->conn, req, NULL, body);
}

/* The absolute path of a chunk name's file into out, or 0. */
static int source_path(const char *source, char *out) {
  if (source[0] != '@') return 0;
  return weft__path_resolve(source + 1, out, WEFT_PATH_MAX) == WEFT_OK ||
         weft__path_absolute(source + 1, out, WEFT_PATH_MAX) == WEFT_OK;
}

/* The threads whose frames make a task's stack, innermost first. */
static int stack_threads(dbg *D, int dap, lua_State *ths[2]) {
  weft_id task = dap == NO_TASK ? 0 : task_of(D, dap);
  lua_State *home = home_of(D, task);
  int n = 0;
  if (D->stopped && D->stop_L && task == D->stop_task) {
    ths[n++] = D->stop_L;
    if (home && home != D->stop_L) ths[n++] = home;
  } else if (home) {
    ths[n++] = home;
  }
  return n;
}

static void req_stack_trace(dbg *D, cJSON *req, cJSON *args) {
  lua_State *ths[2];
  int dap = (int)num_arg(args, "threadId", 0);
  if (dap == NO_TASK ? !(D->stopped && D->stop_L && !D->stop_task) : !task_of(D, dap))
    return dap_conn_respond(&D->conn, req, "no such thread", NULL);
  int nth = stack_threads(D, dap, ths);
  int start = (int)num_arg(args, "startFrame", 0), levels = (int)num_arg(args, "levels", 0);
  cJSON *body = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(body, "stackFrames");
  int total = 0;
  for (int t = 0; t < nth; t++) {
    lua_Debug ar;
    for (int level = 0; lua_getstack(ths[t], level, &ar); level++, total++) {
      if (total < start || (levels > 0 && total >= start + levels)) continue;
      lua_getinfo(ths[t], "Sln", &ar);
      cJSON *f = cJSON_CreateObject();
      cJSON_AddItemToArray(arr, f);
      cJSON_AddNumberToObject(f, "id", weft__debug_add_frame(D, ths[t], level));
      char name[256];
      weft__frame_name(&ar, name, sizeof name);
      cJSON_AddStringToObject(f, "name", name);
      cJSON_AddNumberToObject(f, "line", ar.currentline > 0 ? ar.currentline : 0);
      cJSON_AddNumberToObject(f, "column", ar.currentline > 0 ? 1 : 0);
      char path[WEFT_PATH_MAX];
      if (!is_prelude(ar.source) && source_path(ar.source, path)) {
        cJSON *s = cJSON_AddObjectToObject(f, "source");
        const char *base = strrchr(path, '/');
        cJSON_AddStringToObject(s, "name", base ? base + 1 : path);
        cJSON_AddStringToObject(s, "path", path);
      } else {
        cJSON_AddStringToObject(f, "presentationHint", "subtle");
      }
    }
  }
  cJSON_AddNumberToObject(body, "totalFrames", total);
  dap_conn_respond(&D->conn, req, NULL, body);
}

/* continue, next, stepIn, stepOut. */
static void req_resume(dbg *D, cJSON *req, cJSON *args, int step) {
  if (step != STEP_NONE && D->stopped) {
    int dap = (int)num_arg(args, "threadId", 0);
    weft_id task = dap == NO_TASK ? 0 : task_of(D, dap);
    int dead = D->stop_L && task == D->stop_task && lua_status(D->stop_L) > LUA_YIELD;
    if (task && !dead) {
      D->step = step;
      D->step_task = task;
      D->step_depth = D->stop_L && task == D->stop_task ? task_depth(D, D->stop_L, task)
                                                        : frames_of(home_of(D, task));
    }
  }
  cJSON *body = cJSON_CreateObject();
  cJSON_AddBoolToObject(body, "allThreadsContinued", 1);
  dap_conn_respond(&D->conn, req, NULL, body);
  D->resume = 1;
}

static void dispatch(dbg *D, cJSON *req) {
  cJSON *c = cJSON_GetObjectItem(req, "command");
  cJSON *args = cJSON_GetObjectItem(req, "arguments");
  if (!cJSON_IsString(c)) return;
  const char *cmd = c->valuestring;
  if (!D->conn.initialized && strcmp(cmd, "initialize") != 0) { /* nothing before it */
    char msg[160];
    snprintf(msg, sizeof msg, "%.80s before initialize: the client must send initialize first",
             cmd);
    dap_conn_respond(&D->conn, req, msg, NULL);
  } else if (strcmp(cmd, "initialize") == 0) {
    D->conn.initialized = 1;
    req_initialize(D, req);
  } else if (strcmp(cmd, "launch") == 0 || strcmp(cmd, "attach") == 0) {
    dap_conn_respond(&D->conn, req, NULL, NULL);
  } else if (strcmp(cmd, "configurationDone") == 0) {
    D->configured = 1;
    dap_conn_respond(&D->conn, req, NULL, NULL);
  } else if (strcmp(cmd, "setBreakpoints") == 0) {
    req_set_breakpoints(D, req, args);
  } else if (strcmp(cmd, "setExceptionBreakpoints") == 0) {
    req_set_exceptions(D, req, args);
  } else if (strcmp(cmd, "threads") == 0) {
    req_threads(D, req);
  } else if (strcmp(cmd, "stackTrace") == 0) {
    req_stack_trace(D, req, args);
  } else if (strcmp(cmd, "scopes") == 0) {
    weft__debug_scopes(D, req, args);
  } else if (strcmp(cmd, "variables") == 0) {
    weft__debug_variables(D, req, args);
  } else if (strcmp(cmd, "evaluate") == 0) {
    weft__debug_evaluate(D, req, args);
  } else if (strcmp(cmd, "setVariable") == 0) {
    weft__debug_set_variable(D, req, args);
  } else if (strcmp(cmd, "continue") == 0) {
    req_resume(D, req, args, STEP_NONE);
  } else if (strcmp(cmd, "next") == 0) {
    req_resume(D, req, args, STEP_OVER);
  } else if (strcmp(cmd, "stepIn") == 0) {
    req_resume(D, req, args, STEP_IN);
  } else if (strcmp(cmd, "stepOut") == 0) {
    req_resume(D, req, args, STEP_OUT);
  } else if (strcmp(cmd, "exceptionInfo") == 0) {
    if (!D->exc[0]) return dap_conn_respond(&D->conn, req, "not stopped at an error", NULL);
    dap_conn_respond(&D->conn, req, NULL, weft__debug_exception_info(D));
  } else if (strcmp(cmd, "pause") == 0) {
    if (!D->stopped) D->pause_req = 1;
    dap_conn_respond(&D->conn, req, NULL, NULL);
  } else if (strcmp(cmd, "terminate") == 0) {
    D->terminate = 1; /* no stop from here on: the program ends at its next poll */
    D->resume = 1;
    D->step = STEP_NONE;
    D->pause_req = 0;
    clear_breakpoints(D);
    update_mask(D, D->stop_L);
    dap_conn_respond(&D->conn, req, NULL, NULL);
  } else if (strcmp(cmd, "disconnect") == 0) {
    cJSON *t = cJSON_GetObjectItem(args, "terminateDebuggee");
    if (cJSON_IsTrue(t)) D->terminate = 1;
    dap_conn_respond(&D->conn, req, NULL, NULL);
    drop_client(D);
  } else {
    char msg[128];
    snprintf(msg, sizeof msg, "unsupported request %.80s", cmd);
    dap_conn_respond(&D->conn, req, msg, NULL);
  }
}

/* ---- the connection ---- */

static void drop_client(dbg *D) {
  if (!D->client) return;
  D->client = 0;
  dap_wire_drop(&D->conn.wire);
  D->conn.initialized = 0;
  D->step = STEP_NONE;
  D->pause_req = 0;
  D->exc_uncaught = D->exc_all = 0;
  D->resume = 1;
  clear_breakpoints(D);
  free(D->tasks);
  D->tasks = NULL;
  D->cap = D->ntasks = 0;
  D->synced = 0;
  update_mask(D, D->stop_L);
}

/* A message that is no request has nothing to answer (a response would
   answer no request): before initialize its sender is no DAP client and
   is dropped; after it, the client is told with an output event. */
static void not_a_request(dbg *D, const char *what, size_t len) {
  if (!D->conn.initialized) {
    drop_client(D);
    return;
  }
  char msg[160];
  int n = snprintf(msg, sizeof msg, "weft: a message from the client (%zu bytes) was ignored: %s",
                   len, what);
  dap_conn_output(&D->conn, "stderr", msg, n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
}

/* Handles every complete message in the input buffer. A message leaves
   the buffer before it is handled: handling it may serve the client
   again (a stop's nested loop). */
static void handle_input(dbg *D) {
  while (dap_wire_connected(&D->conn.wire)) {
    size_t at, len;
    int r = dap_wire_next(&D->conn.wire, &at, &len);
    if (r < 0) drop_client(D);
    if (r <= 0) return;
    cJSON *req = cJSON_ParseWithLength(D->conn.wire.in + at, len);
    dap_wire_consume(&D->conn.wire, at + len);
    if (!req)
      not_a_request(D, "it is not JSON", len);
    else if (!cJSON_IsString(cJSON_GetObjectItem(req, "command")))
      not_a_request(D, "it is no request (no command)", len);
    else
      dispatch(D, req);
    cJSON_Delete(req);
  }
}

static void new_client(dbg *D) {
  D->client = 1;
  D->conn.seq = 0;
  D->next_dap = FIRST_TASK_ID;
}

/* A second client that connected while the first was attached, the
   first gone since and the second not yet answered: it becomes the
   client, with what it sent meanwhile. Returns 1 when it did. */
static int take_second(dbg *D) {
  dap_wire *o = &D->other;
  if (!dap_wire_connected(o)) o->client = dap_wire_take_spare(&D->conn.wire);
  if (!dap_wire_connected(o)) return 0;
  dap_wire_adopt(&D->conn.wire, o);
  new_client(D);
  handle_input(D);
  return 1;
}

/* Waits up to timeout_ms for a connection or input, then handles what
   came; returns 0 when nothing came. The client's messages are handled
   before a second client's first request is judged, so one that
   disconnected and connected again at once is not turned away. */
static int service(dbg *D, int timeout_ms) {
  check_client(D); /* before a new client can be taken */
  int what = dap_wire_service(&D->conn.wire, timeout_ms);
  if (what == DAP_CONNECTED) {
    new_client(D);
  } else if (what == DAP_INPUT) {
    handle_input(D);
  } else if (what == DAP_CLOSED) {
    drop_client(D);
  }
  check_client(D);
  if (!D->client && !D->stopped && take_second(D)) return 1; /* a stop ends first */
  if (D->client) weft__debug_turn_away(D);
  return what != DAP_IDLE;
}

/* ---- the public face ---- */

static void debug_free(weft_state *W);

int weft_debug_listen(weft_state *W, const weft_debug_desc *desc, int *port) {
  if (!W || !desc || desc->size != sizeof *desc || desc->port < 0 || desc->port > 65535)
    return WEFT_EINVAL;
  if (W->dbg) return WEFT_ESTATE;
  dbg *D = calloc(1, sizeof *D);
  if (!D) return WEFT_ENOMEM;
  D->W = W;
  D->desc = *desc;
  D->next_dap = FIRST_TASK_ID;
  D->other.listener = D->other.client = WEFT_SOCK_NONE;
  if (dap_wire_listen(&D->conn.wire, desc->port, &D->port) != WEFT_OK) {
    free(D);
    return WEFT_EINVAL;
  }
  lua_State *L = W->L;
  if (!lua_checkstack(L, 2)) {
    dap_wire_close(&D->conn.wire);
    free(D);
    return WEFT_ENOMEM;
  }
  D->E = lua_newthread(L);
  D->ref_E = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  D->ref_anchors = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api); /* environments made from now on */
  lua_pushcfunction(L, l_pcall);
  lua_setfield(L, -2, "pcall");
  lua_pushcfunction(L, l_xpcall);
  lua_setfield(L, -2, "xpcall");
  lua_pop(L, 1);
  D->log = W->desc.log;
  D->report = W->desc.report;
  D->user = W->desc.user;
  W->desc.log = on_log;
  W->desc.report = on_report;
  W->desc.user = D;
  W->dbg = D;
  W->on_hook = on_hook;
  W->on_task_error = on_task_error;
  W->on_close = debug_free;
  if (port) *port = D->port;
  return WEFT_OK;
}

int weft_debug_poll(weft_state *W) {
  dbg *D = W ? W->dbg : NULL;
  if (!D) return 0;
  for (int i = 0; i < 64; i++) /* what is there, without waiting */
    if (!service(D, 0)) break;
  if (dap_wire_connected(&D->conn.wire)) sync_threads(D);
  if (D->step && !home_of(D, D->step_task)) { /* the stepped task ended */
    D->step = STEP_NONE;
    update_mask(D, NULL);
  }
  if (D->pause_req && dap_wire_connected(&D->conn.wire)) {
    weft_id first = 0;
    int best = 0;
    for (uint32_t i = 0; i < D->cap; i++)
      if (D->tasks[i].id && (!best || D->tasks[i].dap < best))
        first = D->tasks[i].id, best = D->tasks[i].dap;
    stop(D, NULL, first, "pause", NULL, NULL, 0);
  }
  if (!D->stopped && D->nanchors > 4096) clear_refs(D);
  return D->terminate;
}

/* Polls until the time is up, waiting on the client's socket (or the
   listener) in between: each message or connection is served as it
   comes. */
int weft_debug_wait(weft_state *W, double seconds) {
  dbg *D = W ? W->dbg : NULL;
  if (!D) return 0;
  if (!(seconds > 0)) seconds = 0; /* NaN too */
  uint64_t end = weft__clock_ns() + (uint64_t)((seconds < 1e9 ? seconds : 1e9) * 1e9);
  int rc;
  while (!(rc = weft_debug_poll(W))) {
    uint64_t now = weft__clock_ns(), left = now < end ? (end - now) / 1000000 : 0;
    int ms = left > 1000 ? 1000 : (int)left; /* a long wait in slices of a second */
    if (ms <= 0 || (!service(D, ms) && left <= 1000)) break;
  }
  return rc;
}

int weft_debug_wait_ready(weft_state *W) {
  dbg *D = W ? W->dbg : NULL;
  if (!D) return 0;
  while (!D->configured && !D->terminate) service(D, 500);
  sync_threads(D);
  return D->terminate;
}

void weft_debug_exit(weft_state *W, int code) {
  dbg *D = W ? W->dbg : NULL;
  if (!D || !dap_wire_connected(&D->conn.wire) || !D->conn.initialized) return;
  sync_threads(D);
  cJSON *body;
  cJSON *m = dap_conn_event("exited", &body);
  cJSON_AddNumberToObject(body, "exitCode", code);
  dap_conn_send(&D->conn, m);
  dap_conn_send(&D->conn, dap_conn_event("terminated", &body));
}

/* The debugger's teardown (W->on_close, at weft_close). */
static void debug_free(weft_state *W) {
  dbg *D = W->dbg;
  if (!D) return;
  W->desc.log = D->log;
  W->desc.report = D->report;
  W->desc.user = D->user;
  W->on_hook = NULL;
  W->on_task_error = NULL;
  W->on_close = NULL;
  dap_wire_close(&D->conn.wire);
  dap_wire_close(&D->other);
  weft__budget_set_extra(W, 0, NULL);
  luaL_unref(W->L, LUA_REGISTRYINDEX, D->ref_E);
  luaL_unref(W->L, LUA_REGISTRYINDEX, D->ref_anchors);
  clear_breakpoints(D);
  for (int i = 0; i < SRC_CACHE; i++) free(D->cache[i].src);
  free(D->lines);
  free(D->hit);
  free(D->frames);
  free(D->vars);
  free(D->tasks);
  free(D);
  W->dbg = NULL;
}
