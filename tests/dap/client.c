/* The debugger as an editor drives it: a small Debug Adapter Protocol
   client starts `weft run FILE --debug 0`, reads the port from its first
   stderr line, connects, and checks requests, responses and events.
   Usage: client path/to/weft [path/to/weft-demo] (from the top of the
   tree; the demo's case runs when it is given). */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#define TIMEOUT_MS 60000 /* a safety net: nothing here waits on time */
#define MAX_QUEUE 4096

static const char *weft = "build/weft";
static const char *demo; /* build/weft-demo, when given */
static pid_t child;      /* the program under test, killed if a case fails */

typedef struct client {
  pid_t pid;
  int fd, err; /* the socket, the child's stderr */
  int port;
  int seq;
  char *buf;
  size_t len, cap;
  cJSON *queue[MAX_QUEUE]; /* events not yet looked at */
  int nq;
  char errtext[65536]; /* the child's stderr after its first line */
  size_t errlen;
} client;

/* ---- the wire ---- */

static void drain_stderr(client *c) {
  char tmp[4096];
  ssize_t r = read(c->err, tmp, sizeof tmp);
  if (r > 0) {
    size_t n = (size_t)r;
    if (c->errlen + n >= sizeof c->errtext) n = sizeof c->errtext - c->errlen - 1;
    memcpy(c->errtext + c->errlen, tmp, n);
    c->errlen += n;
    c->errtext[c->errlen] = 0;
  }
}

/* Reads one message; NULL when the connection closed. Fails the test
   after TIMEOUT_MS without one. */
static cJSON *read_msg(client *c) {
  for (;;) {
    char *end = c->len >= 4 ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
    if (end) {
      size_t hlen = (size_t)(end - c->buf) + 4;
      char *cl = strstr(c->buf, "Content-Length:");
      assert_non_null(cl);
      size_t blen = strtoul(cl + 15, NULL, 10);
      if (c->len >= hlen + blen) {
        cJSON *m = cJSON_ParseWithLength(c->buf + hlen, blen);
        assert_non_null(m);
        memmove(c->buf, c->buf + hlen + blen, c->len - hlen - blen);
        c->len -= hlen + blen;
        return m;
      }
    }
    struct pollfd p[2] = {{c->fd, POLLIN, 0}, {c->err, POLLIN, 0}};
    int n = poll(p, 2, TIMEOUT_MS);
    if (n <= 0) fail_msg("no message from the debugger within %d ms", TIMEOUT_MS);
    if (p[1].revents) drain_stderr(c);
    if (!p[0].revents) continue;
    if (c->len + 65536 > c->cap) {
      c->cap = c->len + 65536;
      c->buf = realloc(c->buf, c->cap);
    }
    ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
    if (r <= 0) return NULL;
    c->len += (size_t)r;
    c->buf[c->len] = 0;
  }
}

static void send_req(client *c, const char *cmd, cJSON *args) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "seq", ++c->seq);
  cJSON_AddStringToObject(m, "type", "request");
  cJSON_AddStringToObject(m, "command", cmd);
  if (args) cJSON_AddItemToObject(m, "arguments", args);
  char *body = cJSON_PrintUnformatted(m);
  size_t blen = strlen(body);
  char *msg = malloc(blen + 64); /* one send: the body waits on no ACK of the header */
  int hl = snprintf(msg, 64, "Content-Length: %zu\r\n\r\n", blen);
  memcpy(msg + hl, body, blen);
  assert_int_equal(send(c->fd, msg, (size_t)hl + blen, MSG_NOSIGNAL), (ssize_t)((size_t)hl + blen));
  free(msg);
  free(body);
  cJSON_Delete(m);
}

static const char *str(cJSON *o, const char *k) {
  cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(cJSON *o, const char *k) {
  cJSON *v = cJSON_GetObjectItem(o, k);
  assert_true(cJSON_IsNumber(v));
  return v->valuedouble;
}

/* Sends a request and returns its response (owned by the caller);
   events that come first are queued. ok: the response must succeed. */
static cJSON *request(client *c, const char *cmd, cJSON *args, int ok) {
  send_req(c, cmd, args);
  int seq = c->seq;
  for (;;) {
    cJSON *m = read_msg(c);
    if (!m) fail_msg("the debugger closed the connection before answering %s", cmd);
    const char *type = str(m, "type");
    if (type && strcmp(type, "response") == 0 && (int)num(m, "request_seq") == seq) {
      assert_string_equal(str(m, "command"), cmd);
      if (ok && !cJSON_IsTrue(cJSON_GetObjectItem(m, "success")))
        fail_msg("%s failed: %s", cmd, str(m, "message") ? str(m, "message") : "?");
      return m;
    }
    assert_true(c->nq < MAX_QUEUE);
    c->queue[c->nq++] = m;
  }
}

/* Like request, keeping only the response's body (freed by the caller
   through the response, returned in *resp). */
static cJSON *call(client *c, const char *cmd, cJSON *args, cJSON **resp) {
  *resp = request(c, cmd, args, 1);
  return cJSON_GetObjectItem(*resp, "body");
}

static int is_event(cJSON *m, const char *name) {
  const char *t = str(m, "type"), *e = str(m, "event");
  return t && e && strcmp(t, "event") == 0 && strcmp(e, name) == 0;
}

/* The next event called name (earlier ones of other names stay queued).
   NULL when the connection closed first. */
static cJSON *wait_event(client *c, const char *name) {
  for (int i = 0; i < c->nq; i++)
    if (is_event(c->queue[i], name)) {
      cJSON *m = c->queue[i];
      memmove(&c->queue[i], &c->queue[i + 1], (size_t)(c->nq - i - 1) * sizeof *c->queue);
      c->nq--;
      return m;
    }
  for (;;) {
    cJSON *m = read_msg(c);
    if (!m) return NULL;
    if (is_event(m, name)) return m;
    assert_true(c->nq < MAX_QUEUE);
    c->queue[c->nq++] = m;
  }
}

/* Waits for an output event whose text contains `text`. */
static void wait_output(client *c, const char *category, const char *text) {
  for (;;) {
    cJSON *m = wait_event(c, "output");
    if (!m) fail_msg("no output \"%s\" before the connection closed", text);
    cJSON *b = cJSON_GetObjectItem(m, "body");
    int hit = strcmp(str(b, "category"), category) == 0 && strstr(str(b, "output"), text);
    cJSON_Delete(m);
    if (hit) return;
  }
}

/* ---- the program ---- */

/* Starts argv (NULL-terminated, ending in --debug 0), reads the port
   from the first stderr line and connects. */
static void launch(client *c, const char *program, const char **argv) {
  int ep[2];
  assert_int_equal(pipe(ep), 0);
  c->pid = fork();
  assert_true(c->pid >= 0);
  child = c->pid;
  if (c->pid == 0) {
    dup2(ep[1], 2);
    close(ep[0]);
    close(ep[1]);
    freopen("/dev/null", "w", stdout);
    execv(program, (char *const *)argv);
    _exit(127);
  }
  close(ep[1]);
  c->err = ep[0];
  char line[256];
  size_t n = 0;
  while (n < sizeof line - 1) {
    struct pollfd p = {c->err, POLLIN, 0};
    if (poll(&p, 1, TIMEOUT_MS) <= 0) fail_msg("weft printed no first line");
    if (read(c->err, line + n, 1) != 1) fail_msg("weft ended before listening");
    if (line[n] == '\n') break;
    n++;
  }
  line[n] = 0;
  int port = 0;
  char rest[8];
  assert_int_equal(sscanf(line, "weft: debugger listening on 127.0.0.1:%d%7s", &port, rest), 1);
  assert_true(port > 0);
  c->port = port;
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof a), 0);
}

/* program args... --debug 0, args NULL-terminated. */
static void start_args(client *c, const char *program, const char **args) {
  memset(c, 0, sizeof *c);
  const char *argv[40] = {program};
  int argc = 1;
  while (*args) argv[argc++] = *args++;
  argv[argc++] = "--debug";
  argv[argc++] = "0";
  argv[argc] = NULL;
  launch(c, program, argv);
}

/* weft run FILE args... --debug 0 */
static void start(client *c, const char *file, ...) {
  va_list ap;
  va_start(ap, file);
  const char *args[32] = {"run", file};
  int n = 2;
  for (const char *a; (a = va_arg(ap, const char *)) != NULL;) args[n++] = a;
  va_end(ap);
  args[n] = NULL;
  start_args(c, weft, args);
}

/* Another connection to the same program. */
static void reconnect(client *c) {
  close(c->fd);
  for (int i = 0; i < c->nq; i++) cJSON_Delete(c->queue[i]);
  c->nq = 0;
  c->len = 0;
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof a), 0);
}

/* Milliseconds on the monotonic clock. */
static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for the program to end; returns its exit status. Its stderr is
   drained meanwhile; once it is closed (poll says so at once, every
   time) the wait goes on by the clock, not by counting polls. */
static int finish(client *c) {
  int st = 0;
  long long deadline = now_ms() + TIMEOUT_MS;
  for (;;) {
    struct pollfd p = {c->err, POLLIN, 0};
    size_t had = c->errlen;
    if (poll(&p, 1, 10) > 0 && (drain_stderr(c), c->errlen > had)) continue;
    if (waitpid(c->pid, &st, WNOHANG) == c->pid) break;
    if (p.revents & (POLLHUP | POLLIN)) poll(NULL, 0, 10); /* closed: it returned at once */
    if (now_ms() > deadline) {
      kill(c->pid, SIGKILL);
      waitpid(c->pid, &st, 0);
      fail_msg("weft did not end; its stderr:\n%s", c->errtext);
    }
  }
  child = 0;
  close(c->fd);
  close(c->err);
  for (int i = 0; i < c->nq; i++) cJSON_Delete(c->queue[i]);
  free(c->buf);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static cJSON *source_args(const char *file, const int *lines, int n, const char *key,
                          const char *val) {
  char abs[PATH_MAX];
  assert_non_null(realpath(file, abs));
  cJSON *args = cJSON_CreateObject();
  cJSON *src = cJSON_AddObjectToObject(args, "source");
  cJSON_AddStringToObject(src, "path", abs);
  cJSON *bps = cJSON_AddArrayToObject(args, "breakpoints");
  for (int i = 0; i < n; i++) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNumberToObject(b, "line", lines[i]);
    if (key) cJSON_AddStringToObject(b, key, val);
    cJSON_AddItemToArray(bps, b);
  }
  return args;
}

static void set_bp(client *c, const char *file, int line, const char *key, const char *val) {
  cJSON *r;
  cJSON *b = call(c, "setBreakpoints", source_args(file, &line, line > 0, key, val), &r);
  cJSON *list = cJSON_GetObjectItem(b, "breakpoints");
  assert_int_equal(cJSON_GetArraySize(list), line > 0);
  if (line > 0)
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "verified")));
  cJSON_Delete(r);
}

static void set_exceptions(client *c, const char *filter) {
  cJSON *args = cJSON_CreateObject();
  cJSON *f = cJSON_AddArrayToObject(args, "filters");
  if (filter) cJSON_AddItemToArray(f, cJSON_CreateString(filter));
  cJSON_Delete(request(c, "setExceptionBreakpoints", args, 1));
}

/* initialize (checking the capabilities) and attach or launch. */
static void handshake(client *c, const char *how) {
  cJSON *args = cJSON_CreateObject();
  cJSON_AddStringToObject(args, "adapterID", "weft");
  cJSON_AddBoolToObject(args, "linesStartAt1", 1);
  cJSON *r;
  cJSON *caps = call(c, "initialize", args, &r);
  for (int i = 0; i < c->nq; i++) /* no event comes before the answer to initialize */
    assert_string_not_equal(str(c->queue[i], "type"), "event");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(caps, "supportsConfigurationDoneRequest")));
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(caps, "supportsConditionalBreakpoints")));
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(caps, "supportsHitConditionalBreakpoints")));
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(caps, "supportsLogPoints")));
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(caps, "supportsSetVariable")));
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(caps, "supportsExceptionInfoRequest")));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(caps, "exceptionBreakpointFilters")), 2);
  cJSON_Delete(r);
  cJSON *e = wait_event(c, "initialized");
  assert_non_null(e);
  cJSON_Delete(e);
  cJSON_Delete(request(c, how, cJSON_CreateObject(), 1));
}

static void configuration_done(client *c) {
  cJSON_Delete(request(c, "configurationDone", NULL, 1));
}

/* Waits for a stopped event with this reason; returns its thread. */
static int wait_stopped(client *c, const char *reason, char *text, size_t n) {
  cJSON *e = wait_event(c, "stopped");
  if (!e) fail_msg("no stopped event (%s)", reason);
  cJSON *b = cJSON_GetObjectItem(e, "body");
  assert_string_equal(str(b, "reason"), reason);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "allThreadsStopped")));
  int t = (int)num(b, "threadId");
  if (text) snprintf(text, n, "%s", str(b, "text") ? str(b, "text") : "");
  cJSON_Delete(e);
  return t;
}

static cJSON *thread_args(int thread) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddNumberToObject(a, "threadId", thread);
  return a;
}

/* The top frame of a thread: its id, line, and source path. */
static int top_frame(client *c, int thread, int *line, char *path, size_t n) {
  cJSON *r;
  cJSON *b = call(c, "stackTrace", thread_args(thread), &r);
  cJSON *frames = cJSON_GetObjectItem(b, "stackFrames");
  assert_true(cJSON_GetArraySize(frames) >= 1);
  cJSON *f = NULL;
  for (int i = 0; i < cJSON_GetArraySize(frames) && !f; i++) { /* the first Lua frame */
    cJSON *fi = cJSON_GetArrayItem(frames, i);
    if (cJSON_GetObjectItem(fi, "source")) f = fi;
  }
  assert_non_null(f);
  int id = (int)num(f, "id");
  *line = (int)num(f, "line");
  if (path) snprintf(path, n, "%s", str(cJSON_GetObjectItem(f, "source"), "path"));
  cJSON_Delete(r);
  return id;
}

/* evaluate expr in a frame (0: none); the result into out. */
static int evaluate(client *c, int frame, const char *expr, char *out, size_t n) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "expression", expr);
  if (frame) cJSON_AddNumberToObject(a, "frameId", frame);
  cJSON_AddStringToObject(a, "context", "repl");
  cJSON *r = request(c, "evaluate", a, 0);
  int ok = cJSON_IsTrue(cJSON_GetObjectItem(r, "success"));
  const char *res = ok ? str(cJSON_GetObjectItem(r, "body"), "result") : str(r, "message");
  snprintf(out, n, "%s", res ? res : "");
  int ref = ok ? (int)num(cJSON_GetObjectItem(r, "body"), "variablesReference") : 0;
  cJSON_Delete(r);
  return ref;
}

static void resume(client *c, const char *how, int thread) {
  cJSON *r;
  cJSON *b = call(c, how, thread_args(thread), &r);
  if (strcmp(how, "continue") == 0)
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "allThreadsContinued")));
  cJSON_Delete(r);
  cJSON *e = wait_event(c, "continued");
  assert_non_null(e);
  cJSON_Delete(e);
}

/* The variables of a reference, as an array owned by *r. */
static cJSON *variables(client *c, int ref, const char *filter, int start, int count, cJSON **r) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddNumberToObject(a, "variablesReference", ref);
  if (filter) cJSON_AddStringToObject(a, "filter", filter);
  if (count) {
    cJSON_AddNumberToObject(a, "start", start);
    cJSON_AddNumberToObject(a, "count", count);
  }
  return cJSON_GetObjectItem(call(c, "variables", a, r), "variables");
}

static cJSON *find_named(cJSON *arr, const char *key, const char *val) {
  for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
    cJSON *v = cJSON_GetArrayItem(arr, i);
    if (str(v, key) && strcmp(str(v, key), val) == 0) return v;
  }
  return NULL;
}

/* Pauses, and continues and pauses again until expr is true (in the
   paused frame when in_frame, else in the globals): the program goes on,
   however fast the requests come. */
static void pause_until(client *c, const char *expr, int in_frame) {
  char out[256] = "";
  for (int tries = 0; tries < 100000; tries++) {
    cJSON_Delete(request(c, "pause", NULL, 1));
    int t = wait_stopped(c, "pause", NULL, 0);
    int line;
    evaluate(c, in_frame ? top_frame(c, t, &line, NULL, 0) : 0, expr, out, sizeof out);
    if (strcmp(out, "true") == 0) return;
    resume(c, "continue", t);
  }
  fail_msg("%s: still %s", expr, out);
}

static int exit_code(client *c) {
  cJSON *e = wait_event(c, "exited");
  assert_non_null(e);
  int code = (int)num(cJSON_GetObjectItem(e, "body"), "exitCode");
  cJSON_Delete(e);
  e = wait_event(c, "terminated");
  assert_non_null(e);
  cJSON_Delete(e);
  return code;
}

/* ---- the cases ---- */

/* A breakpoint in a task a group spawned: the thread, its stack, scopes
   and variables (a table paged), evaluate reading and assigning a local,
   setVariable, stepping over wait(0.5) to the next line of the same task
   frames later, output, thread exit, the exit code. */
static void breakpoint_in_group_task(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/tasks.lua", NULL);
  handshake(&c, "launch");
  set_bp(&c, "tests/dap/tasks.lua", 7, NULL, NULL);
  set_exceptions(&c, "uncaught");
  configuration_done(&c);
  int t = wait_stopped(&c, "breakpoint", NULL, 0);
  assert_true(t >= 2);

  cJSON *e = wait_event(&c, "thread"); /* the file's task and the guard started */
  assert_non_null(e);
  assert_string_equal(str(cJSON_GetObjectItem(e, "body"), "reason"), "started");
  cJSON_Delete(e);

  cJSON *r;
  cJSON *threads = cJSON_GetObjectItem(call(&c, "threads", NULL, &r), "threads");
  assert_int_equal(cJSON_GetArraySize(threads), 2);
  char name[256] = "";
  for (int i = 0; i < 2; i++) {
    cJSON *th = cJSON_GetArrayItem(threads, i);
    if ((int)num(th, "id") == t) snprintf(name, sizeof name, "%s", str(th, "name"));
  }
  assert_non_null(strstr(name, "guards"));       /* its group names it */
  assert_non_null(strstr(name, "tasks.lua:13")); /* its spawn site */
  assert_non_null(strstr(name, "stopped"));      /* not "running": everything is stopped */
  char other[256];
  snprintf(other, sizeof other, "%s", str(cJSON_GetArrayItem(threads, 0), "name"));
  assert_non_null(strstr(other, "tasks.lua:13")); /* the file's task, where it is */
  int main_thread = (int)num(cJSON_GetArrayItem(threads, 0), "id");
  cJSON_Delete(r);
  int line;
  top_frame(&c, main_thread, &line, NULL, 0); /* another task's stack, suspended */
  assert_int_equal(line, 13);

  char path[PATH_MAX], want[PATH_MAX];
  int f = top_frame(&c, t, &line, path, sizeof path);
  assert_int_equal(line, 7);
  assert_non_null(realpath("tests/dap/tasks.lua", want));
  assert_string_equal(path, want); /* an absolute path an editor opens */

  cJSON *a = cJSON_CreateObject();
  cJSON_AddNumberToObject(a, "frameId", f);
  cJSON *scopes = cJSON_GetObjectItem(call(&c, "scopes", a, &r), "scopes");
  assert_int_equal(cJSON_GetArraySize(scopes), 3);
  assert_string_equal(str(cJSON_GetArrayItem(scopes, 0), "name"), "Locals");
  assert_string_equal(str(cJSON_GetArrayItem(scopes, 1), "name"), "Upvalues");
  assert_string_equal(str(cJSON_GetArrayItem(scopes, 2), "name"), "Globals");
  int locals = (int)num(cJSON_GetArrayItem(scopes, 0), "variablesReference");
  int globals = (int)num(cJSON_GetArrayItem(scopes, 2), "variablesReference");
  cJSON_Delete(r);

  cJSON *r2;
  cJSON *vars = variables(&c, locals, NULL, 0, 0, &r2);
  cJSON *v = find_named(vars, "name", "name");
  assert_non_null(v);
  assert_string_equal(str(v, "value"), "\"gate_guard\"");
  assert_string_equal(str(find_named(vars, "name", "count"), "value"), "0");
  cJSON *route = find_named(vars, "name", "route");
  assert_non_null(route);
  assert_int_equal((int)num(route, "indexedVariables"), 150);
  int rref = (int)num(route, "variablesReference");
  assert_true(rref > 0);
  cJSON_Delete(r2);
  vars = variables(&c, rref, "indexed", 100, 10, &r2); /* a page of a table */
  assert_int_equal(cJSON_GetArraySize(vars), 10);
  assert_string_equal(str(cJSON_GetArrayItem(vars, 0), "name"), "[101]");
  assert_string_equal(str(cJSON_GetArrayItem(vars, 0), "value"), "202");
  cJSON_Delete(r2);
  vars = variables(&c, globals, NULL, 0, 0, &r2); /* the script's environment */
  assert_non_null(find_named(vars, "name", "wait"));
  assert_non_null(find_named(vars, "name", "spawn"));
  cJSON_Delete(r2);

  char out[256];
  evaluate(&c, f, "count + 41", out, sizeof out);
  assert_string_equal(out, "41");
  evaluate(&c, f, "#route, name", out, sizeof out);
  assert_string_equal(out, "150, \"gate_guard\"");
  evaluate(&c, f, "count = 2", out, sizeof out); /* assigns the local */
  evaluate(&c, f, "count", out, sizeof out);
  assert_string_equal(out, "2");
  evaluate(&c, f, "now()", out, sizeof out);
  assert_string_equal(out, "0.0");
  evaluate(&c, f, "nosuch.field", out, sizeof out);
  assert_non_null(strstr(out, "nosuch"));

  a = cJSON_CreateObject();
  cJSON_AddNumberToObject(a, "variablesReference", locals);
  cJSON_AddStringToObject(a, "name", "name");
  cJSON_AddStringToObject(a, "value", "'gate'");
  assert_string_equal(str(call(&c, "setVariable", a, &r), "value"), "\"gate\"");
  cJSON_Delete(r);

  resume(&c, "next", t); /* count = count + 1 -> wait(0.5) */
  assert_int_equal(wait_stopped(&c, "step", NULL, 0), t);
  f = top_frame(&c, t, &line, NULL, 0);
  assert_int_equal(line, 8);
  evaluate(&c, f, "frame()", out, sizeof out);
  assert_string_equal(out, "0");

  resume(&c, "next", t); /* over wait(0.5): the same task, 30 frames on */
  assert_int_equal(wait_stopped(&c, "step", NULL, 0), t);
  f = top_frame(&c, t, &line, NULL, 0);
  assert_int_equal(line, 9);
  evaluate(&c, f, "frame(), count", out, sizeof out);
  assert_string_equal(out, "30, 3");

  resume(&c, "continue", t);
  wait_output(&c, "stdout", "gate step 3");
  wait_output(&c, "stdout", "total\t3");
  for (;;) { /* the guard's thread exits */
    e = wait_event(&c, "thread");
    assert_non_null(e);
    cJSON *b = cJSON_GetObjectItem(e, "body");
    int done = strcmp(str(b, "reason"), "exited") == 0 && (int)num(b, "threadId") == t;
    cJSON_Delete(e);
    if (done) break;
  }
  assert_int_equal(exit_code(&c), 0);
  assert_int_equal(finish(&c), 0);
}

/* An error that fails a task stops with its text; its frame's locals
   read; the report comes as stderr output; the program goes on. */
static void exception_stop(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/fail.lua", NULL);
  handshake(&c, "attach");
  set_exceptions(&c, "uncaught");
  configuration_done(&c);
  char text[512];
  int t = wait_stopped(&c, "exception", text, sizeof text);
  assert_non_null(strstr(text, "fail.lua:4: door jammed"));
  cJSON *r;
  cJSON *info = call(&c, "exceptionInfo", thread_args(t), &r);
  assert_string_equal(str(info, "breakMode"), "unhandled");
  assert_non_null(strstr(str(info, "description"), "door jammed"));
  cJSON_Delete(r);
  int line;
  int f = top_frame(&c, t, &line, NULL, 0);
  assert_int_equal(line, 4);
  char out[256];
  evaluate(&c, f, "why", out, sizeof out);
  assert_string_equal(out, "\"jammed\"");
  resume(&c, "continue", t);
  wait_output(&c, "stderr", "door jammed");
  assert_int_equal(exit_code(&c), 0);
  assert_int_equal(finish(&c), 0);
}

/* With the "all" filter an error pcall or xpcall catches stops too,
   where it was raised; the script then goes on as before. */
static void caught_error_stop(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/caught.lua", NULL);
  handshake(&c, "attach");
  set_exceptions(&c, "all");
  configuration_done(&c);
  char text[512], out[256];
  int t = wait_stopped(&c, "exception", text, sizeof text);
  assert_non_null(strstr(text, "caught.lua:3: caught one"));
  int line;
  int f = top_frame(&c, t, &line, NULL, 0);
  assert_int_equal(line, 3);
  evaluate(&c, f, "secret", out, sizeof out);
  assert_string_equal(out, "42");
  resume(&c, "continue", t);
  wait_output(&c, "stdout", "after\tfalse\ttests/dap/caught.lua:3: caught one");
  t = wait_stopped(&c, "exception", text, sizeof text); /* xpcall's */
  assert_non_null(strstr(text, "attempt to index a nil value"));
  resume(&c, "continue", t);
  wait_output(&c, "stdout", "after xpcall\tfalse");
  assert_int_equal(exit_code(&c), 0);
  assert_int_equal(finish(&c), 0);
}

/* Conditions, hit counts, logpoints, step in and out, pause, disconnect
   leaving the program running, a second client, terminate. */
static void conditions_steps_pause(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/loop.lua", "--realtime", NULL);
  handshake(&c, "attach");
  set_bp(&c, "tests/dap/loop.lua", 7, "condition", "i == 5");
  configuration_done(&c);
  int t = wait_stopped(&c, "breakpoint", NULL, 0);
  int line;
  int f = top_frame(&c, t, &line, NULL, 0);
  char out[256];
  evaluate(&c, f, "i", out, sizeof out);
  assert_string_equal(out, "5");

  resume(&c, "stepIn", t);
  wait_stopped(&c, "step", NULL, 0);
  top_frame(&c, t, &line, NULL, 0);
  assert_int_equal(line, 2); /* inside add */
  resume(&c, "stepOut", t);
  wait_stopped(&c, "step", NULL, 0);
  f = top_frame(&c, t, &line, NULL, 0);
  assert_true(line == 7 || line == 8);   /* back in the caller */
  evaluate(&c, f, "a", out, sizeof out); /* add's local is out of sight */
  assert_string_equal(out, "nil");

  set_bp(&c, "tests/dap/loop.lua", 7, "hitCondition", "3");
  resume(&c, "continue", t);
  wait_stopped(&c, "breakpoint", NULL, 0);
  f = top_frame(&c, t, &line, NULL, 0);
  evaluate(&c, f, "i", out, sizeof out);
  assert_string_equal(out, "8");

  set_bp(&c, "tests/dap/loop.lua", 7, NULL, NULL);
  set_bp(&c, "tests/dap/loop.lua", 8, "logMessage", "i is {i}, total {total}");
  resume(&c, "continue", t);
  wait_output(&c, "console", "i is 8, total 36");
  wait_output(&c, "console", "i is 9, total 45");

  set_bp(&c, "tests/dap/loop.lua", 0, NULL, NULL); /* none */
  cJSON_Delete(request(&c, "pause", thread_args(t), 1));
  t = wait_stopped(&c, "pause", NULL, 0);
  cJSON *r;
  cJSON *threads = cJSON_GetObjectItem(call(&c, "threads", NULL, &r), "threads");
  assert_int_equal(cJSON_GetArraySize(threads), 1);
  cJSON_Delete(r);
  top_frame(&c, t, &line, NULL, 0);
  assert_int_equal(line, 8); /* between frames: where the loop waits */
  resume(&c, "continue", t);

  cJSON_Delete(request(&c, "disconnect", cJSON_CreateObject(), 1));
  reconnect(&c); /* still running, still listening */
  handshake(&c, "attach");
  pause_until(&c, "i > 9", 1); /* it goes on */
  cJSON_Delete(request(&c, "terminate", NULL, 1));
  assert_int_equal(exit_code(&c), 1);
  assert_int_equal(finish(&c), 1);
}

/* Time and work while stopped are not the task's: with a budget of 5000
   instructions a resume, evaluating 100,000 loop iterations at a stop,
   or a loop that never ends (cut by the evaluation's own budget), leaves
   the task running as before. */
static void stopped_time_is_not_charged(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/budget.lua", "--budget", "5000", NULL);
  handshake(&c, "attach");
  set_bp(&c, "tests/dap/budget.lua", 5, NULL, NULL);
  configuration_done(&c);
  char out[256];
  for (int round = 1; round <= 5; round++) {
    int t = wait_stopped(&c, "breakpoint", NULL, 0);
    int line;
    int f = top_frame(&c, t, &line, NULL, 0);
    evaluate(&c, f, "(function() local x = 0 for i = 1, 100000 do x = x + i end return x end)()",
             out, sizeof out);
    assert_string_equal(out, "5000050000");
    evaluate(&c, f, "now()", out, sizeof out);
    if (round == 1) assert_string_equal(out, "0.0");
    if (round == 2) {
      evaluate(&c, f, "frame()", out, sizeof out);
      assert_string_equal(out, "1"); /* one frame per round: no clock moved meanwhile */
      evaluate(&c, f, "while true do end", out, sizeof out);
      assert_non_null(strstr(out, "evaluation ran too long"));
    }
    resume(&c, "continue", t);
  }
  wait_output(&c, "stdout", "rounds\t5");
  assert_int_equal(exit_code(&c), 0);
  assert_int_equal(finish(&c), 0);
}

static void send_raw(client *c, const char *bytes) {
  assert_int_equal(send(c->fd, bytes, strlen(bytes), MSG_NOSIGNAL), (ssize_t)strlen(bytes));
}

/* A framed message with this body. */
static void send_body(client *c, const char *body) {
  char msg[256];
  snprintf(msg, sizeof msg, "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
  send_raw(c, msg);
}

/* The response to a request that must fail, with its message in out. */
static void must_fail(client *c, const char *cmd, cJSON *args, const char *want) {
  cJSON *r = request(c, cmd, args, 0);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(r, "success")));
  const char *m = str(r, "message");
  if (!m || !strstr(m, want)) fail_msg("%s: \"%s\" does not say \"%s\"", cmd, m ? m : "", want);
  cJSON_Delete(r);
}

/* Bad input from a client gets an error response, an output event or a
   dropped connection, never a crash and never a response to no request:
   the program goes on and takes the next client. Before initialize every
   other request is refused, and a message that is no request (not JSON:
   no DAP client) closes the connection. */
static void bad_input(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/loop.lua", "--realtime", NULL);
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "expression", "1 + 1");
  must_fail(&c, "evaluate", e, "initialize first");
  must_fail(&c, "threads", NULL, "initialize first");
  must_fail(&c, "configurationDone", NULL, "initialize first");
  send_body(&c, "hello");                 /* not JSON, first: no DAP client */
  assert_null(wait_event(&c, "nothing")); /* the connection closes */
  reconnect(&c);
  handshake(&c, "attach");
  send_body(&c, "hello"); /* not JSON */
  wait_output(&c, "stderr", "(5 bytes) was ignored: it is not JSON");
  send_body(&c, "[1,2]"); /* not an object */
  wait_output(&c, "stderr", "(5 bytes) was ignored: it is no request");
  send_body(&c, "{\"command\":[\"x\"],\"a\":1}"); /* no command */
  wait_output(&c, "stderr", "was ignored: it is no request");
  send_body(&c, "{\"command\":\"threads\",\"arguments\":7}"); /* no seq, odd arguments */
  must_fail(&c, "bogus", NULL, "unsupported request bogus");
  for (int i = 0; i < c.nq; i++) { /* each response answers a request that was sent */
    const char *cmd = str(c.queue[i], "command");
    if (strcmp(str(c.queue[i], "type"), "response") == 0 && (!cmd || !*cmd))
      fail_msg("a response to no request came");
  }
  cJSON *a = cJSON_CreateObject();
  cJSON_AddNumberToObject(a, "frameId", 999);
  must_fail(&c, "scopes", a, "no such frame");
  must_fail(&c, "variables", NULL, "no such variable");
  must_fail(&c, "setBreakpoints", NULL, "source.path");
  must_fail(&c, "evaluate", NULL, "expression");
  char out[256];
  evaluate(&c, 0, "1 +", out, sizeof out);
  assert_non_null(strstr(out, "(debugger)"));
  must_fail(&c, "stackTrace", thread_args(12345), "no such thread");
  configuration_done(&c);
  send_raw(&c, "Content-Length: 99999999999\r\n\r\n"); /* too big: dropped */
  assert_null(wait_event(&c, "nothing"));              /* the connection closes */
  reconnect(&c);
  handshake(&c, "attach");
  pause_until(&c, "i > 1", 1); /* it goes on */
  cJSON_Delete(request(&c, "terminate", NULL, 1));
  assert_int_equal(exit_code(&c), 1);
  assert_int_equal(finish(&c), 1);
}

/* A client that leaves and connects again at once is the client again,
   however it left (disconnect answered, disconnect and close at once,
   close without a word), and the program, paced at 60 frames a second,
   takes the connections as fast as they come, not one a frame: 200
   connect, initialize, leave cycles in well under the 3.3 s that one
   frame a cycle would take. */
static void reconnect_at_once(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/loop.lua", "--realtime", NULL);
  handshake(&c, "attach");
  configuration_done(&c);
  enum { CYCLES = 200 };
  long long t0 = now_ms();
  for (int i = 0; i < CYCLES; i++) {
    int how = i % 3;
    static const char *const ways[] = {"disconnect answered", "disconnect, close", "close"};
    if (how < 2) send_req(&c, "disconnect", cJSON_CreateObject());
    if (how == 0) { /* its answer, then the connection closes */
      cJSON *m;
      while ((m = read_msg(&c)) != NULL) cJSON_Delete(m);
    }
    reconnect(&c);
    c.seq = 0;
    cJSON *r = request(&c, "initialize", cJSON_CreateObject(), 0);
    if (!cJSON_IsTrue(cJSON_GetObjectItem(r, "success")))
      fail_msg("cycle %d (%s): %s", i, ways[how], str(r, "message") ? str(r, "message") : "?");
    cJSON_Delete(r);
    cJSON *ev = wait_event(&c, "initialized");
    assert_non_null(ev);
    cJSON_Delete(ev);
  }
  long long ms = now_ms() - t0;
  print_message("%d reconnects in %lld ms: %.0f a second\n", CYCLES, ms,
                CYCLES * 1000.0 / (double)(ms > 0 ? ms : 1));
  if (ms > 2000) fail_msg("%d reconnects took %lld ms: served once a frame", CYCLES, ms);
  cJSON_Delete(request(&c, "terminate", NULL, 1));
  assert_int_equal(exit_code(&c), 1);
  assert_int_equal(finish(&c), 1);
}

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

/* A step's round trip (next; its response, continued and stopped) takes
   no acknowledgement's delay: the three go out back to back (no Nagle on
   the server's socket), so the median of 100 is well under the 40 ms a
   delayed ACK costs. Frames run back to back (no --realtime): a step over
   wait() waits on no clock. */
static void step_round_trip(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/loop.lua", NULL);
  handshake(&c, "attach");
  set_bp(&c, "tests/dap/loop.lua", 3, NULL, NULL);
  configuration_done(&c);
  int t = wait_stopped(&c, "breakpoint", NULL, 0);
  set_bp(&c, "tests/dap/loop.lua", 0, NULL, NULL);
  enum { STEPS = 100 };
  long long us[STEPS];
  for (int i = 0; i < STEPS; i++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    resume(&c, "next", t);
    wait_stopped(&c, "step", NULL, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    us[i] = (long long)(b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
  }
  qsort(us, STEPS, sizeof *us, cmp_ll);
  print_message("a step's round trip: median %.2f ms, 90th percentile %.2f ms\n",
                (double)us[STEPS / 2] / 1000, (double)us[STEPS * 9 / 10] / 1000);
  if (us[STEPS / 2] > 15000) fail_msg("a step's round trip takes %lld us", us[STEPS / 2]);
  cJSON_Delete(request(&c, "terminate", NULL, 1));
  assert_int_equal(exit_code(&c), 1);
  assert_int_equal(finish(&c), 1);
}

/* A second client while one is attached has its initialize answered at
   once with an error, then a terminated event, and is closed; the first
   goes on, and a setBreakpoints of 100,000 lines is answered in time
   linear in it. */
static void second_client_and_a_long_breakpoint_list(void **state) {
  (void)state;
  client c;
  start(&c, "tests/dap/loop.lua", "--realtime", NULL);
  handshake(&c, "attach");
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c.port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  static const char init[] = "{\"seq\":1,\"type\":\"request\",\"command\":\"initialize\"}";
  char framed[128];
  int fl =
      snprintf(framed, sizeof framed, "Content-Length: %d\r\n\r\n%s", (int)sizeof init - 1, init);
  assert_int_equal(send(fd, framed, (size_t)fl, 0), fl);
  char got[4096];
  size_t n = 0;
  for (;;) { /* everything it says, until it closes */
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) fail_msg("the second client got no answer within 5 s");
    ssize_t r = recv(fd, got + n, sizeof got - 1 - n, 0);
    if (r <= 0) break;
    n += (size_t)r;
  }
  got[n] = 0;
  close(fd);
  assert_non_null(strstr(got, "another client is attached"));
  assert_non_null(strstr(got, "\"success\":false"));
  assert_non_null(strstr(got, "\"terminated\""));
  enum { LINES = 100000 };
  static int lines[LINES];
  for (int i = 0; i < LINES; i++) lines[i] = i + 1;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cJSON *r;
  cJSON *b =
      call(&c, "setBreakpoints", source_args("tests/dap/loop.lua", lines, LINES, NULL, NULL), &r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(b, "breakpoints")), LINES);
  cJSON_Delete(r);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (s > 5) fail_msg("setBreakpoints of %d lines took %.1f s", LINES, s);
  set_bp(&c, "tests/dap/loop.lua", 0, NULL, NULL); /* none again */
  configuration_done(&c);
  cJSON_Delete(request(&c, "terminate", NULL, 1));
  assert_int_equal(exit_code(&c), 1);
  assert_int_equal(finish(&c), 1);
}

static void copy_file(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  assert_non_null(a);
  assert_non_null(b);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
  fclose(a);
  fclose(b);
}

/* A breakpoint stays set across a hot reload: the reloaded module's new
   function stops at it. */
static void breakpoint_survives_reload(void **state) {
  (void)state;
  char dir[] = "/tmp/weft-dap-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char main_lua[PATH_MAX], mod[PATH_MAX];
  snprintf(main_lua, sizeof main_lua, "%s/main.lua", dir);
  snprintf(mod, sizeof mod, "%s/mod.lua", dir);
  copy_file("tests/dap/reload/main.lua", main_lua);
  copy_file("tests/dap/reload/mod.lua", mod);
  client c;
  start(&c, main_lua, "--scripts", dir, "--watch", "--realtime", NULL);
  handshake(&c, "attach");
  set_bp(&c, mod, 3, NULL, NULL);
  configuration_done(&c);
  int t = wait_stopped(&c, "breakpoint", NULL, 0);
  FILE *fp = fopen(mod, "w"); /* the new version, saved while stopped */
  assert_non_null(fp);
  fputs("local M = {}\nfunction M.tick(n)\n  local v = \"two\" .. n\n  return v\nend\nreturn M\n",
        fp);
  fclose(fp);
  int seen_new = 0;
  for (int stops = 0; stops < 400 && !seen_new; stops++) {
    resume(&c, "next", t);
    wait_stopped(&c, "step", NULL, 0);
    int line;
    char out[256];
    int f = top_frame(&c, t, &line, NULL, 0);
    assert_int_equal(line, 4);
    evaluate(&c, f, "v", out, sizeof out);
    seen_new = strncmp(out, "\"two", 4) == 0;
    if (!seen_new) assert_string_equal(out, "\"one\"");
    resume(&c, "continue", t);
    t = wait_stopped(&c, "breakpoint", NULL, 0);
  }
  assert_true(seen_new);
  cJSON_Delete(request(&c, "terminate", NULL, 1));
  exit_code(&c);
  finish(&c);
  unlink(main_lua);
  unlink(mod);
  rmdir(dir);
}

static int kill_child(void **state) {
  (void)state;
  if (child > 0) {
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    child = 0;
  }
  return 0;
}

/* The demo runs at once and takes a client at any time: a breakpoint in
   a guard's patrol names the guard's thread; after a disconnect the game
   goes on and another client pauses it between frames. */
static void demo_attach_any_time(void **state) {
  (void)state;
  if (!demo) skip();
  client c;
  const char *args[] = {"--headless", "--frames", "100000000", "--seed", "3", NULL};
  start_args(&c, demo, args);
  handshake(&c, "attach");
  set_bp(&c, "scripts/ai/patrol.lua", 31, NULL, NULL);
  configuration_done(&c);
  int t = wait_stopped(&c, "breakpoint", NULL, 0);
  int line;
  char path[PATH_MAX], out[256];
  int f = top_frame(&c, t, &line, path, sizeof path);
  assert_int_equal(line, 31);
  assert_non_null(strstr(path, "/scripts/ai/patrol.lua"));
  evaluate(&c, f, "type(e.leg)", out, sizeof out);
  assert_string_equal(out, "\"number\"");
  cJSON *r;
  cJSON *threads = cJSON_GetObjectItem(call(&c, "threads", NULL, &r), "threads");
  assert_true(cJSON_GetArraySize(threads) > 9); /* nine guards and more */
  char name[256] = "";
  for (int i = 0; i < cJSON_GetArraySize(threads); i++) {
    cJSON *th = cJSON_GetArrayItem(threads, i);
    if ((int)num(th, "id") == t) snprintf(name, sizeof name, "%s", str(th, "name"));
  }
  static const char *const patrols[] = {"gate_guard", "well_guard", "bunk_guard", "mess_guard",
                                        "rose_guard", "pond_guard", "hall_west",  "hall_east"};
  int named = 0; /* the thread is named after the entity it belongs to */
  for (size_t i = 0; i < sizeof patrols / sizeof *patrols; i++)
    named |= strncmp(name, patrols[i], strlen(patrols[i])) == 0 && name[strlen(patrols[i])] == ' ';
  if (!named) fail_msg("thread name \"%s\" names no patrolling guard", name);
  cJSON_Delete(r);
  evaluate(&c, f, "frame()", out, sizeof out);
  long at = atol(out);
  set_bp(&c, "scripts/ai/patrol.lua", 0, NULL, NULL);
  resume(&c, "continue", t);
  cJSON_Delete(request(&c, "disconnect", cJSON_CreateObject(), 1));
  reconnect(&c);
  handshake(&c, "attach");
  char later[64];
  snprintf(later, sizeof later, "frame() > %ld", at);
  pause_until(&c, later, 0); /* the game goes on */
  cJSON_Delete(request(&c, "terminate", NULL, 1));
  assert_int_equal(exit_code(&c), 0);
  assert_int_equal(finish(&c), 0);
}

int main(int argc, char **argv) {
  if (argc > 1) weft = argv[1];
  if (argc > 2) demo = argv[2];
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(breakpoint_in_group_task, kill_child),
      cmocka_unit_test_teardown(exception_stop, kill_child),
      cmocka_unit_test_teardown(caught_error_stop, kill_child),
      cmocka_unit_test_teardown(conditions_steps_pause, kill_child),
      cmocka_unit_test_teardown(stopped_time_is_not_charged, kill_child),
      cmocka_unit_test_teardown(bad_input, kill_child),
      cmocka_unit_test_teardown(reconnect_at_once, kill_child),
      cmocka_unit_test_teardown(step_round_trip, kill_child),
      cmocka_unit_test_teardown(second_client_and_a_long_breakpoint_list, kill_child),
      cmocka_unit_test_teardown(breakpoint_survives_reload, kill_child),
      cmocka_unit_test_teardown(demo_attach_any_time, kill_child),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
