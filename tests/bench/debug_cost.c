/* What a debugger costs: the W1 patrol workload (weft_driver.lua, as
   weft-bench runs it) timed with no debugger, with a client attached and
   no breakpoint, and with a client attached and one breakpoint in a file
   that does not run (line events on, each checked and passed over). The
   client is in this process: it answers the handshake and reads what the
   server sends between frames.
   Usage: debug-cost DIR N WARM FRAMES RUNS */
#define _XOPEN_SOURCE 700 /* realpath */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include <weft.h>

#include "../../cli/mialloc.h"

#define DT (1.0 / 60)

enum { DETACHED, ATTACHED, LINE_EVENTS, NMODES };
static const char *const mode_name[NMODES] = {"detached", "attached, no breakpoint",
                                              "attached, a breakpoint elsewhere"};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
  fprintf(stderr, "debug-cost: %s\n", what);
  exit(1);
}

static void send_req(int fd, int seq, const char *cmd, const char *args) {
  char body[4400], msg[4500];
  int n = snprintf(body, sizeof body,
                   "{\"seq\":%d,\"type\":\"request\",\"command\":\"%s\",\"arguments\":%s}", seq,
                   cmd, args);
  int m = snprintf(msg, sizeof msg, "Content-Length: %d\r\n\r\n%s", n, body);
  if (send(fd, msg, (size_t)m, MSG_NOSIGNAL) != m) die("cannot send");
}

/* The client's reader: reads and drops whatever the server sends, on a
   thread of its own as an editor does (the server blocks when nobody
   reads), until the connection closes. */
static void *drain(void *arg) {
  int fd = *(int *)arg;
  char buf[65536];
  while (recv(fd, buf, sizeof buf, 0) > 0) {
  }
  return NULL;
}

static int attach(weft_state *W, int mode, const char *elsewhere, pthread_t *reader, int *fdp) {
  weft_debug_desc d = WEFT_DEBUG_DESC_INIT;
  int port;
  if (weft_debug_listen(W, &d, &port) != WEFT_OK) die("cannot listen");
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("cannot connect");
  *fdp = fd;
  if (pthread_create(reader, NULL, drain, fdp) != 0) die("cannot start the reader");
  send_req(fd, 1, "initialize", "{\"adapterID\":\"bench\"}");
  send_req(fd, 2, "attach", "{}");
  if (mode == LINE_EVENTS) {
    char args[4200];
    snprintf(args, sizeof args, "{\"source\":{\"path\":\"%s\"},\"breakpoints\":[{\"line\":1}]}",
             elsewhere);
    send_req(fd, 3, "setBreakpoints", args);
  }
  send_req(fd, 4, "configurationDone", "{}");
  weft_debug_wait_ready(W);
  return fd;
}

/* Seconds per measured frame of W1 at n tasks. */
static double run(const char *dir, int mode, int n, int warm, int frames) {
  weft_desc d = WEFT_DESC_INIT;
  mialloc_use(&d); /* as the weft program and the demo do */
  d.scripts_root = dir;
  d.memory_limit = (size_t)4 << 30;
  d.max_tasks = 2 * (uint32_t)n + 1024;
  d.time_budget_us = 10000000; /* as weft-bench: the set-up runs in one go */
  d.frame_time_budget_us = WEFT_BUDGET_OFF;
  d.slow_task_us = UINT32_MAX; /* the set-up in one go is no slow script */
  weft_state *W = weft_open(&d);
  if (!W) die("weft_open failed");
  char path[4096], elsewhere[4096];
  snprintf(path, sizeof path, "%s/weft_driver.lua", dir);
  snprintf(elsewhere, sizeof elsewhere, "%s/purelua.lua", dir);
  char *abs = realpath(elsewhere, NULL);
  pthread_t reader;
  static int fdslot;
  int fd = mode == DETACHED ? -1 : attach(W, mode, abs ? abs : elsewhere, &reader, &fdslot);
  free(abs);
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_createtable(L, 0, 4);
  lua_pushliteral(L, "W1");
  lua_setfield(L, -2, "workload");
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  lua_pushinteger(L, 0);
  lua_setfield(L, -2, "churn");
  lua_setfield(L, -2, "BENCH");
  lua_pop(L, 1);
  weft_task t;
  const char *err;
  if (weft_run_file(W, path, &t, &err) != WEFT_OK) die(err);
  for (int f = 0; f < warm + 1; f++) {
    if (fd >= 0) weft_debug_poll(W);
    weft_step(W, DT);
  }
  double t0 = now_s();
  for (int f = 0; f < frames; f++) {
    if (fd >= 0) weft_debug_poll(W);
    weft_step(W, DT);
  }
  double per = (now_s() - t0) / frames;
  if (fd >= 0) {
    shutdown(fd, SHUT_RDWR);
    pthread_join(reader, NULL);
    close(fd);
  }
  weft_task_drop(W, t);
  weft_close(W);
  return per;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 6) die("usage: debug-cost DIR N WARM FRAMES RUNS");
  const char *dir = argv[1];
  int n = atoi(argv[2]), warm = atoi(argv[3]), frames = atoi(argv[4]), runs = atoi(argv[5]);
  if (n < 1 || frames < 1 || runs < 1 || runs > 15) die("bad numbers");
  double t[NMODES][15];
  for (int r = 0; r < runs; r++) /* interleaved: load on the machine hits every mode alike */
    for (int m = 0; m < NMODES; m++) t[m][r] = run(dir, m, n, warm, frames);
  /* Ratios are medians of each run's own ratio, so a burst of other load
     that hits one run moves one ratio, not a mode's median. */
  double med[NMODES], rat[NMODES], v[15];
  for (int m = 0; m < NMODES; m++) {
    for (int r = 0; r < runs; r++) v[r] = t[m][r] / t[DETACHED][r];
    qsort(v, (size_t)runs, sizeof v[0], cmp);
    rat[m] = v[runs / 2];
  }
  for (int m = 0; m < NMODES; m++) {
    qsort(t[m], (size_t)runs, sizeof t[m][0], cmp);
    med[m] = t[m][runs / 2];
  }
  printf("  W1 patrol, %d tasks %22s %10s\n", n, "ms/frame", "ratio");
  for (int m = 0; m < NMODES; m++)
    printf("  %-32s %12.3f %9.2fx\n", mode_name[m], med[m] * 1e3, rat[m]);
  double ratio = rat[ATTACHED];
  printf("  %-44s %s (%.2fx, target <= 1.3x; N = %d, median of %d per-run ratios)\n",
         "W1 attached/detached", ratio <= 1.3 ? "met" : "MISSED", ratio, n, runs);
  return 0;
}
