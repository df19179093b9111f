/* The debugger: a Debug Adapter Protocol server (Content-Length framed
   JSON over a local TCP socket). Every task is a thread; breakpoints are
   kept by file path and line, so the functions a hot reload brings in hit
   them too. A stop serves the client from a nested loop inside the hook
   (or the scheduler) that stopped, so the whole frame stays frozen. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "debug.h"
#include "budget.h"
#include "chunks.h"
#include "inspect.h"
#include "report.h"

#define NO_TASK 1            /* the thread id of code running outside any task */
#define FIRST_TASK_ID 2      /* thread ids of tasks count up from here */
#define EVAL_BUDGET 1000000  /* instructions an evaluation may take */
#define MAX_HEADER 4096      /* bytes of a message header */
#define MAX_BODY (16u << 20) /* bytes of a message body */
#define SRC_CACHE 16         /* chunk names resolved to breakpoint files */
#define MAX_VALUE 200        /* characters of a value shown */

enum { STEP_NONE, STEP_IN, STEP_OVER, STEP_OUT };
enum { V_LOCALS, V_UPVALUES, V_GLOBALS, V_VALUE };

typedef struct bpoint {
  int id, line;
  char *cond, *hit, *log; /* NULL: none */
  unsigned hits;
} bpoint;

/* The breakpoints of one file, by its resolved absolute path. */
typedef struct bfile {
  char *path;
  bpoint *bp;
  int n;
} bfile;

typedef struct frame_ref {
  lua_State *th;
  int level;
} frame_ref;

typedef struct var_ref {
  int kind;   /* V_* */
  int frame;  /* frame index (frames[]), -1: none */
  int anchor; /* V_VALUE: the value's slot in the anchor table */
} var_ref;

/* A known task: its thread id, and the poll that last saw it. */
typedef struct known {
  weft_id id;
  int dap;
  unsigned stamp;
} known;

struct weft_debug {
  weft_state *W;
  weft_debug_desc desc;
  int lfd, fd, port;
  char *in; /* bytes received and not yet handled */
  size_t inlen, incap;
  int seq;
  int initialized; /* the client sent initialize: events may go out */
  int configured, terminate;

  /* the output sinks W had before, which the server forwards to */
  void (*log)(void *user, const char *line, size_t len);
  void (*report)(void *user, const char *msg, const char *trace);
  int (*fail_alloc)(void *user, size_t nsize);
  void *user;

  bfile *files;
  int nfiles, nbps, next_bp;
  uint16_t *lines; /* breakpoints at each line number, in any file */
  int nlines;
  struct {
    char *src;
    int file;
  } cache[SRC_CACHE];
  int cache_next;
  int exc_uncaught, exc_all;

  int step; /* STEP_*: armed for step_task */
  weft_id step_task;
  int step_depth;
  int pause_req;

  int stopped, resume, in_eval;
  lua_State *stop_L; /* the thread that stopped (NULL: between frames) */
  weft_id stop_task;
  char exc[512]; /* the error of an exception stop, "" for other stops */
  frame_ref *frames;
  int nframes, capframes;
  var_ref *vars;
  int nvars, capvars, nanchors;
  int ref_anchors; /* registry: the values variables refer to */
  lua_State *E;    /* the debugger's own thread: evaluation, descriptions */
  int ref_E;

  known *tasks; /* open addressing by id; id 0: empty */
  uint32_t cap, ntasks;
  unsigned stamp;
  int next_dap;
  int synced;            /* the tasks above are as of: */
  uint64_t spawned_seen; /* ...W->spawned */
  uint32_t live_seen;    /* ...and the live tasks (C tasks too) */
};

typedef struct weft_debug dbg;

/* ---- the wire ---- */

static void drop_client(dbg *D);

static void send_msg(dbg *D, cJSON *m) {
  if (D->fd < 0) {
    cJSON_Delete(m);
    return;
  }
  cJSON_AddNumberToObject(m, "seq", ++D->seq);
  char *body = cJSON_PrintUnformatted(m);
  cJSON_Delete(m);
  if (!body) return;
  size_t blen = strlen(body);
  char *msg = malloc(blen + 40);
  if (!msg) {
    free(body);
    return;
  }
  size_t len = (size_t)snprintf(msg, 40, "Content-Length: %zu\r\n\r\n", blen);
  memcpy(msg + len, body, blen);
  len += blen;
  for (size_t off = 0; off < len && D->fd >= 0;) {
    ssize_t w = send(D->fd, msg + off, len - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      drop_client(D);
      break;
    }
    off += (size_t)w;
  }
  free(msg);
  free(body);
}

static cJSON *new_event(const char *name, cJSON **body) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "type", "event");
  cJSON_AddStringToObject(m, "event", name);
  *body = cJSON_AddObjectToObject(m, "body");
  return m;
}

static void respond(dbg *D, cJSON *req, const char *error, cJSON *body) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "type", "response");
  cJSON *rs = cJSON_GetObjectItem(req, "seq");
  cJSON_AddNumberToObject(m, "request_seq", cJSON_IsNumber(rs) ? rs->valuedouble : 0);
  cJSON_AddBoolToObject(m, "success", error == NULL);
  cJSON *cmd = cJSON_GetObjectItem(req, "command");
  cJSON_AddStringToObject(m, "command", cJSON_IsString(cmd) ? cmd->valuestring : "");
  if (error) cJSON_AddStringToObject(m, "message", error);
  cJSON_AddItemToObject(m, "body", body ? body : cJSON_CreateObject());
  send_msg(D, m);
}

static void send_output(dbg *D, const char *category, const char *text, size_t len) {
  if (D->fd < 0 || !D->initialized) return;
  cJSON *body;
  cJSON *m = new_event("output", &body);
  cJSON_AddStringToObject(body, "category", category);
  char *s = malloc(len + 2);
  if (s) {
    memcpy(s, text, len);
    s[len] = '\n';
    s[len + 1] = 0;
    cJSON_AddStringToObject(body, "output", s);
    free(s);
  }
  send_msg(D, m);
}

static void send_thread_event(dbg *D, const char *reason, int dap) {
  cJSON *body;
  cJSON *m = new_event("thread", &body);
  cJSON_AddStringToObject(body, "reason", reason);
  cJSON_AddNumberToObject(body, "threadId", dap);
  send_msg(D, m);
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
  send_output(D, "stdout", line, len);
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
  send_output(D, "stderr", s, strlen(s));
  free(s);
}

static int on_fail_alloc(void *user, size_t nsize) {
  dbg *D = user;
  return D->fail_alloc(D->user, nsize);
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
  ltask *lt = weft_task_udata(D->W->S, id);
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
  if (D->fd < 0 || !D->initialized) return;
  uint32_t live = weft_sched_task_count(D->W->S);
  if (D->synced && D->W->spawned == D->spawned_seen && live == D->live_seen) return;
  D->synced = 1;
  D->spawned_seen = D->W->spawned;
  D->live_seen = live;
  D->stamp++;
  weft_sched_each_task(D->W->S, see_task, D);
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
  ltask *lt = task ? weft_task_udata(D->W->S, task) : NULL;
  return lt ? lt->co : NULL;
}

/* ---- the hook and stops ---- */

static int is_prelude(const char *source) { return weft_chunk_embedded(source); }

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
  int want = D->fd >= 0 && (D->nbps > 0 || D->step || D->pause_req) ? LUA_MASKLINE : 0;
  weft_budget_set_extra(D->W, want, L);
}

static void service(dbg *D, int timeout_ms);

/* Forgets the frames and variables of a stop (their references are
   valid until the program resumes). Never allocates. */
static void clear_refs(dbg *D) {
  D->nframes = 0;
  D->nvars = 0;
  lua_rawgeti(D->E, LUA_REGISTRYINDEX, D->ref_anchors);
  for (int i = 1; i <= D->nanchors; i++) {
    lua_pushnil(D->E);
    lua_rawseti(D->E, -2, i);
  }
  lua_pop(D->E, 1);
  D->nanchors = 0;
}

/* Stops everything: tells the client and serves it until it resumes.
   L is the thread that stopped (NULL between frames). */
static void stop(dbg *D, lua_State *L, weft_id task, const char *reason, const char *text, int bp) {
  if (D->fd < 0 || !D->initialized || D->stopped) return;
  D->step = STEP_NONE;
  D->pause_req = 0;
  D->stopped = 1;
  D->resume = 0;
  D->stop_L = L;
  D->stop_task = task;
  snprintf(D->exc, sizeof D->exc, "%s", strcmp(reason, "exception") == 0 && text ? text : "");
  sync_threads(D);
  cJSON *body;
  cJSON *m = new_event("stopped", &body);
  cJSON_AddStringToObject(body, "reason", reason);
  cJSON_AddNumberToObject(body, "threadId", dap_of(D, task));
  cJSON_AddBoolToObject(body, "allThreadsStopped", 1);
  if (text) {
    cJSON_AddStringToObject(body, "text", text);
    cJSON_AddStringToObject(body, "description", text);
  }
  if (bp) cJSON_AddItemToObject(body, "hitBreakpointIds", cJSON_CreateIntArray(&bp, 1));
  send_msg(D, m);
  uint32_t held = weft_budget_hold(D->W); /* time stopped is not the script's */
  while (D->fd >= 0 && !D->resume) {
    if (D->desc.idle) D->desc.idle(D->desc.user);
    service(D, D->desc.idle ? 16 : 500);
  }
  weft_budget_unhold(D->W, held);
  clear_refs(D);
  D->stopped = 0;
  D->stop_L = NULL;
  D->stop_task = 0;
  D->exc[0] = 0;
  update_mask(D, L);
  if (D->fd >= 0) {
    m = new_event("continued", &body);
    cJSON_AddNumberToObject(body, "threadId", dap_of(D, task));
    cJSON_AddBoolToObject(body, "allThreadsContinued", 1);
    send_msg(D, m);
  }
}

/* The breakpoint file a chunk name ("@scripts/ai/patrol.lua") is, or -1.
   Paths resolve once per chunk name (a small cache). */
static int file_of(dbg *D, const char *source) {
  if (source[0] != '@') return -1;
  for (int i = 0; i < SRC_CACHE; i++)
    if (D->cache[i].src && strcmp(D->cache[i].src, source) == 0) return D->cache[i].file;
  char abs[PATH_MAX];
  int file = -1;
  if (realpath(source + 1, abs))
    for (int i = 0; i < D->nfiles && file < 0; i++)
      if (strcmp(D->files[i].path, abs) == 0) file = i;
  int slot = D->cache_next++ % SRC_CACHE;
  free(D->cache[slot].src);
  D->cache[slot].src = strdup(source);
  D->cache[slot].file = file;
  return file;
}

static int eval_value(dbg *D, lua_State *th, int level, const char *expr, char *out, size_t n,
                      int *truthy);
static void log_point(dbg *D, lua_State *L, const char *fmt);

/* "N" or "==N": the Nth hit; ">N", ">=N", "<N", "<=N"; "%N": every Nth. */
static int hit_matches(const char *cond, unsigned hits) {
  while (*cond == ' ') cond++;
  char op[3] = {0};
  int k = 0;
  while (k < 2 && strchr("<>=%", cond[k])) op[k] = cond[k], k++;
  char *end;
  long v = strtol(cond + k, &end, 10);
  if (end == cond + k) return 1;
  long h = (long)hits;
  if (!op[0] || strcmp(op, "==") == 0 || strcmp(op, "=") == 0) return h == v;
  if (strcmp(op, ">") == 0) return h > v;
  if (strcmp(op, ">=") == 0) return h >= v;
  if (strcmp(op, "<") == 0) return h < v;
  if (strcmp(op, "<=") == 0) return h <= v;
  if (op[0] == '%') return v > 0 && h % v == 0;
  return 1;
}

static void check_breakpoints(dbg *D, lua_State *L, lua_Debug *ar) {
  if (!lua_getinfo(L, "S", ar)) return;
  int f = file_of(D, ar->source);
  if (f < 0) return;
  for (int i = 0; i < D->files[f].n; i++) {
    bpoint *b = &D->files[f].bp[i];
    if (b->line != ar->currentline) continue;
    if (b->cond) {
      char buf[64];
      int truthy = 0;
      if (eval_value(D, L, 0, b->cond, buf, sizeof buf, &truthy) && !truthy) continue;
    }
    b->hits++;
    if (b->hit && !hit_matches(b->hit, b->hits)) continue;
    if (b->log) {
      log_point(D, L, b->log);
      continue;
    }
    stop(D, L, D->W->cur, "breakpoint", NULL, b->id);
    return; /* the client may have changed the breakpoints */
  }
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
  if (D->pause_req) {
    if (lua_getinfo(L, "S", ar) && !is_prelude(ar->source)) stop(D, L, W->cur, "pause", NULL, 0);
    return;
  }
  if (D->step && step_done(D, L, ar)) {
    stop(D, L, W->cur, "step", NULL, 0);
    return;
  }
  int line = ar->currentline;
  if (line >= 0 && line < D->nlines && D->lines[line]) check_breakpoints(D, L, ar);
}

static void on_task_error(weft_state *W, weft_id task, lua_State *co, lua_State *L, int idx) {
  dbg *D = W->dbg;
  if (!D || D->fd < 0 || D->stopped || !(D->exc_uncaught || D->exc_all)) return;
  char text[512];
  if (lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER)
    snprintf(text, sizeof text, "%s", lua_tostring(L, idx));
  else
    snprintf(text, sizeof text, "(error object is a %s value)", luaL_typename(L, idx));
  stop(D, co, task, "exception", text, 0);
}

/* ---- caught errors ----
   With the "all" filter on, an error raised inside pcall or xpcall stops
   too, where it was raised: scripts get versions of both that pass a
   message handler then (the stack is still whole when it runs). With it
   off they are Lua's own in behaviour, yields included. */

static void stop_on_error(lua_State *L) {
  weft_state *W = weft_get(L);
  dbg *D = W->dbg;
  if (!D || D->fd < 0 || D->stopped || D->in_eval || !D->exc_all) return;
  char text[512];
  if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER)
    snprintf(text, sizeof text, "%s (caught)", lua_tostring(L, 1));
  else
    snprintf(text, sizeof text, "(error object is a %s value) (caught)", luaL_typename(L, 1));
  stop(D, L, W->cur, "exception", text, 0);
}

static int l_stop_handler(lua_State *L) {
  stop_on_error(L);
  lua_settop(L, 1);
  return 1;
}

/* xpcall's: stops, then hands the error to the script's handler. */
static int l_stop_xhandler(lua_State *L) {
  stop_on_error(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* After the call (at once, or when a yield inside it returned): true and
   the results, or false and the error. extra: slots below the `true`. */
static int pcall_done(lua_State *L, int status, lua_KContext extra) {
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
  }
  return lua_gettop(L) - (int)extra;
}

static int catching(lua_State *L) {
  dbg *D = weft_get(L)->dbg;
  return D && D->fd >= 0 && D->exc_all;
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
  int st = lua_pcallk(L, lua_gettop(L) - h - 2, LUA_MULTRET, h, h, pcall_done);
  return pcall_done(L, st, h);
}

static int l_xpcall(lua_State *L) {
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (catching(L)) {
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, l_stop_xhandler, 1);
    lua_replace(L, 2);
  }
  lua_pushboolean(L, 1);
  lua_pushvalue(L, 1);
  lua_rotate(L, 3, 2); /* f, handler, true, f, args... */
  int st = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, pcall_done);
  return pcall_done(L, st, 2);
}

/* ---- values ---- */

static int add_frame(dbg *D, lua_State *th, int level) {
  if (D->nframes == D->capframes) {
    int cap = D->capframes ? D->capframes * 2 : 32;
    frame_ref *f = realloc(D->frames, (size_t)cap * sizeof *f);
    if (!f) return 0;
    D->frames = f;
    D->capframes = cap;
  }
  D->frames[D->nframes] = (frame_ref){th, level};
  return ++D->nframes;
}

static int add_var(dbg *D, int kind, int frame, int anchor) {
  if (D->nvars == D->capvars) {
    int cap = D->capvars ? D->capvars * 2 : 64;
    var_ref *v = realloc(D->vars, (size_t)cap * sizeof *v);
    if (!v) return 0;
    D->vars = v;
    D->capvars = cap;
  }
  D->vars[D->nvars] = (var_ref){kind, frame, anchor};
  return ++D->nvars;
}

/* Keeps the value at E[idx] for a later variables request; returns its
   reference. May raise (memory). */
static int anchor(dbg *D, lua_State *E, int idx, int frame) {
  idx = lua_absindex(E, idx);
  lua_rawgeti(E, LUA_REGISTRYINDEX, D->ref_anchors);
  lua_pushvalue(E, idx);
  lua_rawseti(E, -2, ++D->nanchors);
  lua_pop(E, 1);
  return add_var(D, V_VALUE, frame, D->nanchors);
}

/* A short text for the value at E[idx]; userdata (task handles, futures)
   print through their __tostring, tables are never called into. */
static void describe(lua_State *E, int idx, char *out, size_t n) {
  idx = lua_absindex(E, idx);
  switch (lua_type(E, idx)) {
  case LUA_TNIL:
    snprintf(out, n, "nil");
    break;
  case LUA_TBOOLEAN:
    snprintf(out, n, "%s", lua_toboolean(E, idx) ? "true" : "false");
    break;
  case LUA_TNUMBER:
    lua_pushvalue(E, idx);
    snprintf(out, n, "%s", lua_tostring(E, -1));
    lua_pop(E, 1);
    break;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(E, idx, &len);
    snprintf(out, n, "\"%.*s\"%s", (int)(len > MAX_VALUE ? MAX_VALUE : len), s,
             len > MAX_VALUE ? "..." : "");
    break;
  }
  case LUA_TTABLE: {
    lua_Unsigned len = lua_rawlen(E, idx);
    if (len)
      snprintf(out, n, "table #%llu", (unsigned long long)len);
    else
      snprintf(out, n, "table");
    break;
  }
  case LUA_TFUNCTION: {
    lua_Debug ar;
    lua_pushvalue(E, idx);
    if (lua_getinfo(E, ">S", &ar) && ar.linedefined > 0)
      snprintf(out, n, "function %s:%d", ar.short_src, ar.linedefined);
    else
      snprintf(out, n, "function");
    break;
  }
  case LUA_TUSERDATA:
    snprintf(out, n, "%s", weft_tostring(E, idx));
    lua_pop(E, 1);
    break;
  default:
    snprintf(out, n, "%s", luaL_typename(E, idx));
  }
}

/* A variable (name, value at E[idx]) into the array; a table gets a
   reference the client can expand. */
static void add_variable(dbg *D, lua_State *E, cJSON *arr, const char *name, int idx, int frame) {
  idx = lua_absindex(E, idx);
  char buf[MAX_VALUE + 64];
  describe(E, idx, buf, sizeof buf);
  cJSON *v = cJSON_CreateObject();
  cJSON_AddItemToArray(arr, v);
  cJSON_AddStringToObject(v, "name", name);
  cJSON_AddStringToObject(v, "value", buf);
  cJSON_AddStringToObject(v, "type", luaL_typename(E, idx));
  int ref = lua_type(E, idx) == LUA_TTABLE ? anchor(D, E, idx, frame) : 0;
  cJSON_AddNumberToObject(v, "variablesReference", ref);
  if (ref) {
    lua_Unsigned len = lua_rawlen(E, idx);
    if (len) cJSON_AddNumberToObject(v, "indexedVariables", (double)len);
  }
}

/* The name a table key is shown by: a string as itself, others in []. */
static void key_name(lua_State *E, int idx, char *out, size_t n) {
  switch (lua_type(E, idx)) {
  case LUA_TSTRING:
    snprintf(out, n, "%s", lua_tostring(E, idx));
    break;
  case LUA_TNUMBER:
  case LUA_TBOOLEAN: {
    char b[64];
    describe(E, idx, b, sizeof b);
    snprintf(out, n, "[%s]", b);
    break;
  }
  default:
    snprintf(out, n, "[%s: %p]", luaL_typename(E, idx), lua_topointer(E, idx));
  }
}

/* ---- evaluation in a frame ---- */

/* What an evaluation's environment sees: a frame's locals, then its
   function's upvalues, then its globals. Held by a full userdata so a
   proxy kept past the evaluation finds valid == 0, not a stale frame. */
typedef struct frame_ctx {
  lua_State *th; /* NULL: no frame, the script API's globals only */
  int level;
  int valid;
} frame_ctx;

/* The index of the innermost active local called name, 0 if none. */
static int find_local(frame_ctx *c, const char *name, lua_Debug *ar) {
  if (!c->th || !lua_getstack(c->th, c->level, ar)) return 0;
  int found = 0;
  const char *nm;
  for (int i = 1; (nm = lua_getlocal(c->th, ar, i)) != NULL; i++) {
    lua_pop(c->th, 1);
    if (strcmp(nm, name) == 0) found = i;
  }
  return found;
}

/* Pushes the frame's function onto L, or returns 0. */
static int push_frame_fn(frame_ctx *c, lua_State *L) {
  lua_Debug ar;
  if (!c->th || !lua_getstack(c->th, c->level, &ar) || !lua_checkstack(c->th, 2)) return 0;
  lua_getinfo(c->th, "f", &ar);
  lua_xmove(c->th, L, 1);
  return 1;
}

/* The upvalue index of name in the function at L[fidx], 0 if none. */
static int find_upvalue(lua_State *L, int fidx, const char *name) {
  const char *nm;
  for (int i = 1; (nm = lua_getupvalue(L, fidx, i)) != NULL; i++) {
    lua_pop(L, 1);
    if (strcmp(nm, name) == 0) return i;
  }
  return 0;
}

/* Pushes the globals of the frame: the _ENV of its function or of an
   outer frame's, else the script API. */
static void push_env(frame_ctx *c, lua_State *L) {
  weft_state *W = weft_get(L);
  lua_Debug ar;
  for (int level = c->level; c->th && lua_getstack(c->th, level, &ar); level++) {
    if (!lua_checkstack(c->th, 2)) break;
    lua_getinfo(c->th, "f", &ar);
    lua_xmove(c->th, L, 1);
    int up = find_upvalue(L, -1, "_ENV");
    if (up) {
      lua_getupvalue(L, -1, up);
      lua_remove(L, -2);
      if (lua_type(L, -1) == LUA_TTABLE) return;
    }
    lua_pop(L, 1);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
}

static int l_frame_index(lua_State *L) {
  frame_ctx *c = lua_touserdata(L, lua_upvalueindex(1));
  if (!c->valid) return 0;
  lua_settop(L, 2);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    lua_Debug ar;
    int i = find_local(c, k, &ar);
    if (i && lua_checkstack(c->th, 2)) {
      lua_getlocal(c->th, &ar, i);
      lua_xmove(c->th, L, 1);
      return 1;
    }
    if (push_frame_fn(c, L)) {
      int up = find_upvalue(L, 3, k);
      if (up) {
        lua_getupvalue(L, 3, up);
        return 1;
      }
      lua_pop(L, 1);
    }
  }
  push_env(c, L);
  lua_pushvalue(L, 2);
  lua_gettable(L, -2);
  return 1;
}

static int l_frame_newindex(lua_State *L) {
  frame_ctx *c = lua_touserdata(L, lua_upvalueindex(1));
  if (!c->valid) return 0;
  lua_settop(L, 3);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    lua_Debug ar;
    int i = find_local(c, k, &ar);
    if (i && lua_checkstack(c->th, 2)) {
      lua_pushvalue(L, 3);
      lua_xmove(L, c->th, 1);
      lua_setlocal(c->th, &ar, i);
      return 0;
    }
    if (push_frame_fn(c, L)) {
      int up = find_upvalue(L, 4, k);
      if (up) {
        lua_pushvalue(L, 3);
        lua_setupvalue(L, 4, up);
        return 0;
      }
      lua_pop(L, 1);
    }
  }
  push_env(c, L);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_settable(L, -3);
  return 0;
}

/* Compiles expr (as `return expr`, else as statements) over the frame
   (th, level) and runs it with a budget of its own; leaves its results
   on E above `base` (returns LUA_OK), or the error (another status).
   Runs on E with the hook events off for the debugger (in_eval). */
static int eval_at(dbg *D, lua_State *th, int level, const char *expr) {
  lua_State *E = D->E;
  size_t len = strlen(expr);
  char *src = malloc(len + 8);
  if (!src) {
    lua_pushliteral(E, "not enough memory");
    return LUA_ERRMEM;
  }
  memcpy(src, "return ", 7);
  memcpy(src + 7, expr, len + 1);
  int st = luaL_loadbufferx(E, src, len + 7, "=(debugger)", "t");
  free(src);
  if (st != LUA_OK) {
    lua_pop(E, 1);
    st = luaL_loadbufferx(E, expr, len, "=(debugger)", "t");
    if (st != LUA_OK) return st;
  }
  frame_ctx *c = lua_newuserdatauv(E, sizeof *c, 0);
  *c = (frame_ctx){th, level, 1};
  lua_createtable(E, 0, 0); /* the proxy environment */
  lua_createtable(E, 0, 2);
  lua_pushvalue(E, -3);
  lua_pushcclosure(E, l_frame_index, 1);
  lua_setfield(E, -2, "__index");
  lua_pushvalue(E, -3);
  lua_pushcclosure(E, l_frame_newindex, 1);
  lua_setfield(E, -2, "__newindex");
  lua_setmetatable(E, -2);
  lua_setupvalue(E, -3, 1);
  lua_insert(E, -2); /* ctx under the function */
  int was = D->in_eval;
  D->in_eval = 1;
  st = weft_budget_pcall(D->W, E, 0, LUA_MULTRET, 0, "evaluation ran too long", EVAL_BUDGET);
  D->in_eval = was;
  c->valid = 0;
  return st;
}

/* Protected part of eval_value: the ctx for it is at 1. */
typedef struct eval_req {
  dbg *D;
  lua_State *th;
  int level;
  const char *expr;
  char *out;
  size_t n;
  int truthy, ok;
} eval_req;

static int l_eval_value(lua_State *E) {
  eval_req *r = lua_touserdata(E, 1);
  int base = lua_gettop(E);
  int st = eval_at(r->D, r->th, r->level, r->expr);
  if (st == LUA_OK) {
    r->ok = 1;
    int first = base + 2; /* above the ctx */
    r->truthy = lua_gettop(E) >= first && lua_toboolean(E, first);
    if (r->out) {
      r->out[0] = 0;
      if (lua_gettop(E) >= first) {
        if (lua_type(E, first) == LUA_TSTRING)
          snprintf(r->out, r->n, "%s", lua_tostring(E, first));
        else
          describe(E, first, r->out, r->n);
      }
    }
  } else if (r->out) {
    snprintf(r->out, r->n, "%s", weft_tostring(E, -1));
  }
  return 0;
}

/* Evaluates expr in a frame for a condition or a logpoint: its first
   value as text into out and whether it is truthy. Returns 1 when it ran
   without error. */
static int eval_value(dbg *D, lua_State *th, int level, const char *expr, char *out, size_t n,
                      int *truthy) {
  eval_req r = {D, th, level, expr, out, n, 0, 0};
  lua_State *E = D->E;
  int top = lua_gettop(E);
  lua_pushcfunction(E, l_eval_value);
  lua_pushlightuserdata(E, &r);
  if (lua_pcall(E, 1, 0, 0) != LUA_OK && out) snprintf(out, n, "not enough memory");
  lua_settop(E, top);
  *truthy = r.truthy;
  return r.ok;
}

/* A logpoint: the message with each {expression} replaced by its value. */
static void log_point(dbg *D, lua_State *L, const char *fmt) {
  char out[2048];
  size_t o = 0;
  for (const char *p = fmt; *p && o < sizeof out - 1;) {
    const char *close = *p == '{' ? strchr(p, '}') : NULL;
    if (!close) {
      out[o++] = *p++;
      continue;
    }
    char expr[512], val[512];
    size_t el = (size_t)(close - p - 1);
    if (el >= sizeof expr) el = sizeof expr - 1;
    memcpy(expr, p + 1, el);
    expr[el] = 0;
    int truthy;
    eval_value(D, L, 0, expr, val, sizeof val, &truthy);
    o += (size_t)snprintf(out + o, sizeof out - o, "%s", val);
    if (o >= sizeof out) o = sizeof out - 1;
    p = close + 1;
  }
  out[o] = 0;
  send_output(D, "console", out, o);
}

/* ---- requests ---- */

static const char *str_arg(cJSON *args, const char *k) {
  cJSON *v = cJSON_GetObjectItem(args, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_arg(cJSON *args, const char *k, double def) {
  cJSON *v = cJSON_GetObjectItem(args, k);
  return cJSON_IsNumber(v) ? v->valuedouble : def;
}

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
  if (!path) return respond(D, req, "setBreakpoints needs source.path", NULL);
  char abs[PATH_MAX];
  int verified = realpath(path, abs) != NULL;
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
      return respond(D, req, "not enough memory", NULL);
    }
    D->files = nf;
    D->files[D->nfiles++] = (bfile){p, bp, n};
    for (int i = 0; i < n; i++) {
      cJSON *b = cJSON_GetArrayItem(list, i);
      bp[i].id = ++D->next_bp;
      bp[i].line = (int)num_arg(b, "line", 0);
      bp[i].cond = dup_arg(b, "condition");
      bp[i].hit = dup_arg(b, "hitCondition");
      bp[i].log = dup_arg(b, "logMessage");
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(out, o);
      cJSON_AddNumberToObject(o, "id", bp[i].id);
      cJSON_AddBoolToObject(o, "verified", verified);
      cJSON_AddNumberToObject(o, "line", bp[i].line);
      if (!verified) cJSON_AddStringToObject(o, "message", "no such file");
    }
  }
  rebuild_lines(D);
  update_mask(D, D->stop_L);
  respond(D, req, NULL, body);
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
  respond(D, req, NULL, NULL);
}

static void req_initialize(dbg *D, cJSON *req) {
  cJSON *b = cJSON_CreateObject();
  static const char *const caps[] = {"supportsConfigurationDoneRequest",
                                     "supportsConditionalBreakpoints",
                                     "supportsHitConditionalBreakpoints",
                                     "supportsLogPoints",
                                     "supportsSetVariable",
                                     "supportsTerminateRequest",
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
  respond(D, req, NULL, b);
  cJSON *body;
  send_msg(D, new_event("initialized", &body));
}

/* Pushes the name of a task's thread: who or its name, its spawn site,
   what it waits on (protected: light userdata dbg at 1, id at 2). */
static int l_thread_name(lua_State *E) {
  dbg *D = lua_touserdata(E, 1);
  weft_id id = (weft_id)lua_tointeger(E, 2);
  if (!weft_push_task_info(D->W, E, id)) return lua_pushliteral(E, "task"), 1;
  int t = lua_gettop(E);
  if (lua_getfield(E, t, "who") != LUA_TSTRING) {
    lua_pop(E, 1);
    lua_getfield(E, t, "name");
  }
  if (!lua_isstring(E, -1) || strcmp(lua_tostring(E, -1), "?") == 0) {
    lua_pop(E, 1); /* no name yet (a file's task while it starts): where it is */
    lua_getfield(E, t, "where");
  }
  const char *name = lua_tostring(E, -1);
  lua_getfield(E, t, "spawned");
  const char *spawned = lua_tostring(E, -1);
  lua_getfield(E, t, "status");
  lua_getfield(E, t, "waiting");
  const char *status = lua_tostring(E, -2), *waiting = lua_tostring(E, -1);
  if (!name) name = "task";
  if (!spawned || strcmp(spawned, "?") == 0 || strcmp(spawned, name) == 0) spawned = "";
  const char *what = status && strcmp(status, "running") == 0 ? "running"
                     : waiting && *waiting                    ? waiting
                                                              : "waiting";
  char buf[1024];
  snprintf(buf, sizeof buf, "%s%s%s \xe2\x80\x94 %s", name, *spawned ? " " : "", spawned, what);
  lua_pushstring(E, buf);
  return 1;
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
    lua_pushcfunction(E, l_thread_name);
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
  respond(D, req, NULL, body);
}

/* The absolute path of a chunk name's file into out, or 0. */
static int source_path(const char *source, char *out) {
  if (source[0] != '@') return 0;
  if (realpath(source + 1, out)) return 1;
  if (source[1] == '/') return snprintf(out, PATH_MAX, "%s", source + 1), 1;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return 0;
  size_t a = strlen(cwd), b = strlen(source + 1);
  if (a + b + 2 > PATH_MAX) return 0;
  memcpy(out, cwd, a);
  out[a] = '/';
  memcpy(out + a + 1, source + 1, b + 1);
  return 1;
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
  int nth = stack_threads(D, (int)num_arg(args, "threadId", 0), ths);
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
      cJSON_AddNumberToObject(f, "id", add_frame(D, ths[t], level));
      char name[256];
      if (ar.name)
        snprintf(name, sizeof name, "%s", ar.name);
      else if (strcmp(ar.what, "main") == 0)
        snprintf(name, sizeof name, "main chunk");
      else if (strcmp(ar.what, "C") == 0)
        snprintf(name, sizeof name, "[C]");
      else
        snprintf(name, sizeof name, "function <%s:%d>", ar.short_src, ar.linedefined);
      cJSON_AddStringToObject(f, "name", name);
      cJSON_AddNumberToObject(f, "line", ar.currentline > 0 ? ar.currentline : 0);
      cJSON_AddNumberToObject(f, "column", ar.currentline > 0 ? 1 : 0);
      char path[PATH_MAX];
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
  respond(D, req, NULL, body);
}

static frame_ref *frame_at(dbg *D, cJSON *args, const char *key) {
  int id = (int)num_arg(args, key, 0);
  return id >= 1 && id <= D->nframes ? &D->frames[id - 1] : NULL;
}

static void req_scopes(dbg *D, cJSON *req, cJSON *args) {
  frame_ref *f = frame_at(D, args, "frameId");
  if (!f) return respond(D, req, "no such frame", NULL);
  int fi = (int)(f - D->frames);
  cJSON *body = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(body, "scopes");
  static const char *const names[] = {"Locals", "Upvalues", "Globals"};
  static const char *const hints[] = {"locals", "upvalues", "globals"};
  for (int k = V_LOCALS; k <= V_GLOBALS; k++) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, s);
    cJSON_AddStringToObject(s, "name", names[k]);
    cJSON_AddStringToObject(s, "presentationHint", hints[k]);
    cJSON_AddNumberToObject(s, "variablesReference", add_var(D, k, fi, 0));
    cJSON_AddBoolToObject(s, "expensive", k == V_GLOBALS);
  }
  respond(D, req, NULL, body);
}

/* A variables or setVariable request, run protected on E. */
typedef struct vreq {
  dbg *D;
  cJSON *args, *body;
  const char *error;
} vreq;

static frame_ctx ctx_of(dbg *D, int frame) {
  frame_ctx c = {NULL, 0, 1};
  if (frame >= 0 && frame < D->nframes) {
    c.th = D->frames[frame].th;
    c.level = D->frames[frame].level;
  }
  return c;
}

/* Pushes the table a scope or value reference lists onto E: locals and
   upvalues as {name, value} pairs (in order), globals or a table as
   itself. Returns 1 for a pair list. */
static int push_container(dbg *D, var_ref *v) {
  lua_State *E = D->E;
  frame_ctx c = ctx_of(D, v->frame);
  if (v->kind == V_VALUE) {
    lua_rawgeti(E, LUA_REGISTRYINDEX, D->ref_anchors);
    lua_rawgeti(E, -1, v->anchor);
    lua_remove(E, -2);
    return 0;
  }
  if (v->kind == V_GLOBALS) {
    push_env(&c, E);
    return 0;
  }
  lua_newtable(E);
  int list = lua_gettop(E), n = 0;
  lua_Debug ar;
  if (!c.th || !lua_getstack(c.th, c.level, &ar)) return 1;
  if (v->kind == V_LOCALS) {
    const char *nm;
    for (int i = 1; lua_checkstack(c.th, 2) && (nm = lua_getlocal(c.th, &ar, i)) != NULL; i++) {
      lua_xmove(c.th, E, 1);
      if (nm[0] == '(') {
        lua_pop(E, 1);
        continue;
      }
      lua_pushstring(E, nm);
      lua_rawseti(E, list, ++n);
      lua_rawseti(E, list, ++n);
    }
  } else if (push_frame_fn(&c, E)) {
    const char *nm;
    for (int i = 1; (nm = lua_getupvalue(E, list + 1, i)) != NULL; i++) {
      lua_pushstring(E, *nm ? nm : "?");
      lua_rawseti(E, list, ++n);
      lua_rawseti(E, list, ++n);
    }
    lua_pop(E, 1);
  }
  return 1;
}

static int l_variables(lua_State *E) {
  vreq *r = lua_touserdata(E, 1);
  dbg *D = r->D;
  int ref = (int)num_arg(r->args, "variablesReference", 0);
  if (ref < 1 || ref > D->nvars) return r->error = "no such variable reference", 0;
  var_ref v = D->vars[ref - 1];
  int start = (int)num_arg(r->args, "start", 0), count = (int)num_arg(r->args, "count", 0);
  const char *filter = str_arg(r->args, "filter");
  cJSON *arr = cJSON_AddArrayToObject(r->body, "variables");
  int pairs = push_container(D, &v);
  int t = lua_gettop(E), seen = 0;
#define WANT() (seen++ >= start && (count <= 0 || seen <= start + count))
  if (pairs) {
    lua_Integer n = (lua_Integer)lua_rawlen(E, t);
    for (lua_Integer i = 1; i + 1 <= n; i += 2) {
      if (!WANT()) continue;
      lua_rawgeti(E, t, i + 1);
      lua_rawgeti(E, t, i);
      add_variable(D, E, arr, lua_tostring(E, -1), -2, v.frame);
      lua_pop(E, 2);
    }
    return 0;
  }
  if (!lua_istable(E, t)) return 0;
  lua_Unsigned len = lua_rawlen(E, t);
  char name[256];
  if (!filter || strcmp(filter, "indexed") == 0)
    for (lua_Unsigned i = 1; i <= len; i++) {
      if (!WANT()) continue;
      lua_rawgeti(E, t, (lua_Integer)i);
      snprintf(name, sizeof name, "[%llu]", (unsigned long long)i);
      add_variable(D, E, arr, name, -1, v.frame);
      lua_pop(E, 1);
    }
  if (!filter || strcmp(filter, "named") == 0) {
    lua_pushnil(E);
    while (lua_next(E, t)) {
      int isint = 0;
      lua_Integer k = lua_tointegerx(E, -2, &isint);
      if (lua_type(E, -2) == LUA_TNUMBER && isint && k >= 1 && (lua_Unsigned)k <= len) {
        lua_pop(E, 1);
        continue;
      }
      if (WANT()) {
        key_name(E, -2, name, sizeof name);
        add_variable(D, E, arr, name, -1, v.frame);
      }
      lua_pop(E, 1);
    }
  }
#undef WANT
  return 0;
}

/* Runs fn(E) protected with r at 1; an error (memory) becomes r->error. */
static void run_protected(dbg *D, lua_CFunction fn, vreq *r) {
  lua_State *E = D->E;
  int top = lua_gettop(E);
  lua_pushcfunction(E, fn);
  lua_pushlightuserdata(E, r);
  if (lua_pcall(E, 1, 0, 0) != LUA_OK) r->error = "not enough memory";
  lua_settop(E, top);
}

/* Evaluates args.expression (evaluate) or args.value (setVariable) in
   the frame and leaves its first value on top of E. */
static int eval_top(vreq *r, const char *expr, int frame, const char **err) {
  dbg *D = r->D;
  lua_State *E = D->E;
  frame_ctx c = ctx_of(D, frame);
  int base = lua_gettop(E);
  int st = eval_at(D, c.th, c.level, expr);
  if (st != LUA_OK) {
    *err = lua_pushfstring(E, "%s", weft_tostring(E, -1));
    return 0;
  }
  if (lua_gettop(E) < base + 2)
    lua_pushnil(E);
  else
    lua_settop(E, base + 2);
  return 1;
}

static int l_evaluate(lua_State *E) {
  vreq *r = lua_touserdata(E, 1);
  dbg *D = r->D;
  const char *expr = str_arg(r->args, "expression");
  if (!expr) return r->error = "evaluate needs an expression", 0;
  int fid = (int)num_arg(r->args, "frameId", 0);
  int frame = fid >= 1 && fid <= D->nframes ? fid - 1 : -1;
  if (frame < 0 && D->stopped && D->stop_L) frame = add_frame(D, D->stop_L, 0) - 1;
  int base = lua_gettop(E);
  const char *err;
  frame_ctx c = ctx_of(D, frame);
  int st = eval_at(D, c.th, c.level, expr);
  if (st != LUA_OK) {
    err = weft_tostring(E, -1);
    cJSON_AddStringToObject(r->body, "error", err);
    r->error = err;
    return 0;
  }
  (void)eval_top;
  int first = base + 2, top = lua_gettop(E);
  luaL_Buffer b;
  char buf[MAX_VALUE + 64];
  luaL_buffinit(E, &b);
  for (int i = first; i <= top; i++) {
    describe(E, i, buf, sizeof buf);
    if (i > first) luaL_addstring(&b, ", ");
    luaL_addstring(&b, buf);
  }
  luaL_pushresult(&b);
  cJSON_AddStringToObject(r->body, "result", lua_tostring(E, -1));
  int ref = top >= first && lua_type(E, first) == LUA_TTABLE ? anchor(D, E, first, frame) : 0;
  cJSON_AddNumberToObject(r->body, "variablesReference", ref);
  if (top >= first) cJSON_AddStringToObject(r->body, "type", luaL_typename(E, first));
  return 0;
}

static int l_set_variable(lua_State *E) {
  vreq *r = lua_touserdata(E, 1);
  dbg *D = r->D;
  int ref = (int)num_arg(r->args, "variablesReference", 0);
  const char *name = str_arg(r->args, "name"), *value = str_arg(r->args, "value");
  if (ref < 1 || ref > D->nvars || !name || !value) return r->error = "no such variable", 0;
  var_ref v = D->vars[ref - 1];
  const char *err = NULL;
  if (!eval_top(r, value, v.frame, &err)) return r->error = err, 0;
  int val = lua_gettop(E);
  frame_ctx c = ctx_of(D, v.frame);
  lua_Debug ar;
  int done = 0;
  if (v.kind == V_LOCALS) {
    int i = find_local(&c, name, &ar);
    if (i && lua_checkstack(c.th, 2)) {
      lua_pushvalue(E, val);
      lua_xmove(E, c.th, 1);
      lua_setlocal(c.th, &ar, i);
      done = 1;
    }
  } else if (v.kind == V_UPVALUES) {
    if (push_frame_fn(&c, E)) {
      int up = find_upvalue(E, -1, name);
      if (up) {
        lua_pushvalue(E, val);
        lua_setupvalue(E, -2, up);
        done = 1;
      }
    }
  } else {
    push_container(D, &v);
    int t = lua_gettop(E);
    if (lua_istable(E, t)) {
      char kn[256];
      lua_pushnil(E);
      while (!done && lua_next(E, t)) {
        lua_pop(E, 1);
        key_name(E, -1, kn, sizeof kn);
        if (strcmp(kn, name) == 0) {
          lua_pushvalue(E, -1);
          lua_pushvalue(E, val);
          lua_rawset(E, t);
          done = 1;
        }
      }
      if (!done && v.kind == V_GLOBALS) { /* a new global */
        lua_pushvalue(E, val);
        lua_setfield(E, t, name);
        done = 1;
      }
    }
  }
  if (!done) return r->error = "no such variable", 0;
  char buf[MAX_VALUE + 64];
  describe(E, val, buf, sizeof buf);
  cJSON_AddStringToObject(r->body, "value", buf);
  cJSON_AddStringToObject(r->body, "type", luaL_typename(E, val));
  cJSON_AddNumberToObject(r->body, "variablesReference",
                          lua_type(E, val) == LUA_TTABLE ? anchor(D, E, val, v.frame) : 0);
  return 0;
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
  respond(D, req, NULL, body);
  D->resume = 1;
}

/* variables, evaluate, setVariable: fn fills the response body inside a
   protected call on the debugger's thread, or sets r->error (which may be
   a string on that thread's stack: copied before the stack is cleared). */
static void req_lua(dbg *D, cJSON *req, cJSON *args, lua_CFunction fn) {
  vreq r = {D, args, cJSON_CreateObject(), NULL};
  run_protected(D, fn, &r);
  if (r.error) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", r.error);
    cJSON_Delete(r.body);
    return respond(D, req, msg, NULL);
  }
  respond(D, req, NULL, r.body);
}

static void dispatch(dbg *D, cJSON *req) {
  cJSON *c = cJSON_GetObjectItem(req, "command");
  cJSON *args = cJSON_GetObjectItem(req, "arguments");
  if (!cJSON_IsString(c)) return;
  const char *cmd = c->valuestring;
  if (strcmp(cmd, "initialize") == 0) {
    D->initialized = 1;
    req_initialize(D, req);
  } else if (strcmp(cmd, "launch") == 0 || strcmp(cmd, "attach") == 0) {
    respond(D, req, NULL, NULL);
  } else if (strcmp(cmd, "configurationDone") == 0) {
    D->configured = 1;
    respond(D, req, NULL, NULL);
  } else if (strcmp(cmd, "setBreakpoints") == 0) {
    req_set_breakpoints(D, req, args);
  } else if (strcmp(cmd, "setExceptionBreakpoints") == 0) {
    req_set_exceptions(D, req, args);
  } else if (strcmp(cmd, "threads") == 0) {
    req_threads(D, req);
  } else if (strcmp(cmd, "stackTrace") == 0) {
    req_stack_trace(D, req, args);
  } else if (strcmp(cmd, "scopes") == 0) {
    req_scopes(D, req, args);
  } else if (strcmp(cmd, "variables") == 0) {
    req_lua(D, req, args, l_variables);
  } else if (strcmp(cmd, "evaluate") == 0) {
    req_lua(D, req, args, l_evaluate);
  } else if (strcmp(cmd, "setVariable") == 0) {
    req_lua(D, req, args, l_set_variable);
  } else if (strcmp(cmd, "continue") == 0) {
    req_resume(D, req, args, STEP_NONE);
  } else if (strcmp(cmd, "next") == 0) {
    req_resume(D, req, args, STEP_OVER);
  } else if (strcmp(cmd, "stepIn") == 0) {
    req_resume(D, req, args, STEP_IN);
  } else if (strcmp(cmd, "stepOut") == 0) {
    req_resume(D, req, args, STEP_OUT);
  } else if (strcmp(cmd, "exceptionInfo") == 0) {
    if (!D->exc[0]) return respond(D, req, "not stopped at an error", NULL);
    cJSON *b = cJSON_CreateObject();
    int caught = strstr(D->exc, " (caught)") != NULL;
    cJSON_AddStringToObject(b, "exceptionId", caught ? "caught error" : "error");
    cJSON_AddStringToObject(b, "description", D->exc);
    cJSON_AddStringToObject(b, "breakMode", caught ? "always" : "unhandled");
    respond(D, req, NULL, b);
  } else if (strcmp(cmd, "pause") == 0) {
    if (!D->stopped) D->pause_req = 1;
    respond(D, req, NULL, NULL);
  } else if (strcmp(cmd, "terminate") == 0) {
    D->terminate = 1;
    D->resume = 1;
    respond(D, req, NULL, NULL);
  } else if (strcmp(cmd, "disconnect") == 0) {
    cJSON *t = cJSON_GetObjectItem(args, "terminateDebuggee");
    if (cJSON_IsTrue(t)) D->terminate = 1;
    respond(D, req, NULL, NULL);
    drop_client(D);
  } else {
    char msg[128];
    snprintf(msg, sizeof msg, "unsupported request %.80s", cmd);
    respond(D, req, msg, NULL);
  }
}

/* ---- the connection ---- */

static void drop_client(dbg *D) {
  if (D->fd < 0) return;
  close(D->fd);
  D->fd = -1;
  D->inlen = 0;
  D->initialized = 0;
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

/* Handles every complete message in the input buffer. */
static void handle_input(dbg *D) {
  for (;;) {
    if (D->fd < 0) return;
    char *end = NULL;
    for (size_t i = 0; i + 3 < D->inlen; i++)
      if (memcmp(D->in + i, "\r\n\r\n", 4) == 0) {
        end = D->in + i;
        break;
      }
    if (!end) {
      if (D->inlen > MAX_HEADER) drop_client(D);
      return;
    }
    size_t hlen = (size_t)(end - D->in) + 4, blen = 0;
    int found = 0;
    for (char *p = D->in; p < end; p++)
      if ((p == D->in || p[-1] == '\n') && strncasecmp(p, "Content-Length:", 15) == 0) {
        blen = strtoul(p + 15, NULL, 10);
        found = 1;
      }
    if (!found || blen > MAX_BODY) {
      drop_client(D);
      return;
    }
    if (D->inlen < hlen + blen) return;
    cJSON *req = cJSON_ParseWithLength(D->in + hlen, blen);
    memmove(D->in, D->in + hlen + blen, D->inlen - hlen - blen);
    D->inlen -= hlen + blen;
    if (req) {
      dispatch(D, req);
      cJSON_Delete(req);
    }
  }
}

/* Waits up to timeout_ms for a connection or input, then handles what
   came. */
static void service(dbg *D, int timeout_ms) {
  struct pollfd p = {D->fd >= 0 ? D->fd : D->lfd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return;
  if (D->fd < 0) {
    int fd = accept(D->lfd, NULL, NULL);
    if (fd < 0) return;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    D->fd = fd;
    D->seq = 0;
    D->next_dap = FIRST_TASK_ID;
    return;
  }
  if (D->inlen + 65536 > D->incap) {
    char *n = realloc(D->in, D->inlen + 65536);
    if (!n) return drop_client(D);
    D->in = n;
    D->incap = D->inlen + 65536;
  }
  ssize_t r = recv(D->fd, D->in + D->inlen, D->incap - D->inlen, 0);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (r <= 0) return drop_client(D);
  D->inlen += (size_t)r;
  handle_input(D);
}

/* ---- the public face ---- */

int weft_debug_listen(weft_state *W, const weft_debug_desc *desc, int *port) {
  if (!W || !desc || desc->port < 0 || desc->port > 65535) return WEFT_EINVAL;
  if (W->dbg) return WEFT_ESTATE;
  dbg *D = calloc(1, sizeof *D);
  if (!D) return WEFT_ENOMEM;
  D->W = W;
  D->desc = *desc;
  D->fd = -1;
  D->next_dap = FIRST_TASK_ID;
  D->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)desc->port);
  int one = 1;
  socklen_t alen = sizeof a;
  if (D->lfd < 0 || setsockopt(D->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(D->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(D->lfd, 1) != 0 ||
      getsockname(D->lfd, (struct sockaddr *)&a, &alen) != 0) {
    if (D->lfd >= 0) close(D->lfd);
    free(D);
    return WEFT_EINVAL;
  }
  lua_State *L = W->L;
  if (!lua_checkstack(L, 2)) {
    close(D->lfd);
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
  D->port = ntohs(a.sin_port);
  D->log = W->desc.log;
  D->report = W->desc.report;
  D->fail_alloc = W->desc.fail_alloc;
  D->user = W->desc.user;
  W->desc.log = on_log;
  W->desc.report = on_report;
  W->desc.fail_alloc = D->fail_alloc ? on_fail_alloc : NULL;
  W->desc.user = D;
  W->dbg = D;
  W->on_hook = on_hook;
  W->on_task_error = on_task_error;
  if (port) *port = D->port;
  return WEFT_OK;
}

int weft_debug_poll(weft_state *W) {
  dbg *D = W ? W->dbg : NULL;
  if (!D) return 0;
  for (int i = 0; i < 64; i++) { /* what is there, without waiting */
    struct pollfd p = {D->fd >= 0 ? D->fd : D->lfd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) break;
    service(D, 0);
  }
  if (D->fd >= 0) sync_threads(D);
  if (D->step && !home_of(D, D->step_task)) { /* the stepped task ended */
    D->step = STEP_NONE;
    update_mask(D, NULL);
  }
  if (D->pause_req && D->fd >= 0) {
    weft_id first = 0;
    int best = 0;
    for (uint32_t i = 0; i < D->cap; i++)
      if (D->tasks[i].id && (!best || D->tasks[i].dap < best))
        first = D->tasks[i].id, best = D->tasks[i].dap;
    stop(D, NULL, first, "pause", NULL, 0);
  }
  if (!D->stopped && D->nanchors > 4096) clear_refs(D);
  return D->terminate;
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
  if (!D || D->fd < 0 || !D->initialized) return;
  sync_threads(D);
  cJSON *body;
  cJSON *m = new_event("exited", &body);
  cJSON_AddNumberToObject(body, "exitCode", code);
  send_msg(D, m);
  send_msg(D, new_event("terminated", &body));
}

void weft_debug_free(weft_state *W) {
  dbg *D = W->dbg;
  if (!D) return;
  W->desc.log = D->log;
  W->desc.report = D->report;
  W->desc.fail_alloc = D->fail_alloc;
  W->desc.user = D->user;
  W->on_hook = NULL;
  W->on_task_error = NULL;
  if (D->fd >= 0) close(D->fd);
  D->fd = -1;
  close(D->lfd);
  weft_budget_set_extra(W, 0, NULL);
  luaL_unref(W->L, LUA_REGISTRYINDEX, D->ref_E);
  luaL_unref(W->L, LUA_REGISTRYINDEX, D->ref_anchors);
  clear_breakpoints(D);
  for (int i = 0; i < SRC_CACHE; i++) free(D->cache[i].src);
  free(D->lines);
  free(D->frames);
  free(D->vars);
  free(D->tasks);
  free(D->in);
  free(D);
  W->dbg = NULL;
}
