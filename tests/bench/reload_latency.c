/* Hot reload latency: the time from a saved file's close to its new code
   running, through the real file watcher and frames stepped at 60 Hz.
   Each trial writes a new version of a module (a new constant) into a
   temporary scripts root at a random moment inside a frame; a task of
   that module copies the constant into its state every frame; the trial
   ends at the first frame where the state shows the new value. Prints
   min / median / max of the whole and of its parts: the wait for the next
   frame's poll, the quiet window (0.1 s by design, counted from that poll
   to the frame that commits), and staging + commit (that frame's extra
   time over a plain frame).

   usage: reload_latency [TRIALS] [ENTITIES]   (defaults 20, 100) */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include <weft.h>

#include "../../cli/mialloc.h"
#include "../scratch_dir.h"

#define HZ 60.0
#define MAXTRIALS 200

static double clock_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t) {
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The module, version v: a patrol-like behaviour of realistic size. */
static int write_module(const char *root, int v) {
  char path[256];
  snprintf(path, sizeof path, "%s/ai/probe.lua", root);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  fprintf(f,
          "-- ai/probe.lua, version %d\n"
          "local M = {}\n"
          "M.V = %d\n"
          "M.SPEED = 60 + %d %% 7\n"
          "M.route = {{0, 0}, {100, 0}, {100, 100}, {0, 100}}\n",
          v, v, v);
  for (int i = 0; i < 40; i++)
    fprintf(f,
            "function M.helper%d(e, dt)\n"
            "  local w = M.route[(e.leg or 1) %% #M.route + 1]\n"
            "  local dx, dy = w[1] - (e.x or 0), w[2] - (e.y or 0)\n"
            "  local d = math.sqrt(dx * dx + dy * dy)\n"
            "  if d < 1 then return true end\n"
            "  local s = math.min(d, M.SPEED * dt) / d\n"
            "  e.x, e.y = (e.x or 0) + dx * s, (e.y or 0) + dy * s\n"
            "  return false\n"
            "end\n",
            i);
  fprintf(f, "function M.start(e)\n"
             "  while true do\n"
             "    e.v = M.V\n"
             "    if M.helper0(e, 1 / 60) then e.leg = (e.leg or 1) %% #M.route + 1 end\n"
             "    wait()\n"
             "  end\n"
             "end\n"
             "return M\n");
  return fclose(f) == 0 ? 0 : -1;
}

static void on_report(void *user, const char *msg, const char *trace) {
  (void)trace;
  ++*(int *)user;
  fprintf(stderr, "reload_latency: script error: %s\n", msg);
}

/* Loads code into a function whose globals are a fresh table over the
   script API; leaves it on the stack. */
static int load_in_api(weft_state *W, const char *code) {
  lua_State *L = weft_lua(W);
  if (luaL_loadbufferx(L, code, strlen(code), "=bench", "t") != LUA_OK) return -1;
  lua_newtable(L);
  lua_newtable(L);
  weft_push_api(W);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_setupvalue(L, -2, 1);
  return 0;
}

/* The probe entity's state: the module constant its task last saw. */
static long probe_value(weft_state *W, int ref) {
  lua_State *L = weft_lua(W);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    lua_pop(L, 1);
    return -1;
  }
  long v = (long)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

static void row(const char *what, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  printf("  %-32s %8.2f %8.2f %8.2f\n", what, v[0] * 1e3, med * 1e3, v[n - 1] * 1e3);
}

/* A state running `entities` copies of ai.probe plus the probe whose
   persisted value tells which version runs, watching root; NULL (with a
   message) when it cannot. */
static weft_state *open_probe(const char *root, int entities, int *errors, int *probe) {
  weft_desc d = WEFT_DESC_INIT;
  mialloc_use(&d); /* as the weft program and the demo do */
  d.scripts_root = root;
  d.report = on_report;
  d.user = errors;
  weft_state *W = weft_open(&d);
  if (!W) {
    fprintf(stderr, "reload_latency: weft_open failed\n");
    return NULL;
  }
  char starter[256];
  snprintf(starter, sizeof starter,
           "for i = 1, %d do weft.start('ai.probe', {}) end\n"
           "weft.start('ai.probe', persist('probe', {}))\n",
           entities);
  if (load_in_api(W, starter) != 0 || !weft_spawn(W, 0).id ||
      load_in_api(W, "return persist('probe').v") != 0) {
    fprintf(stderr, "reload_latency: cannot start the module\n");
    weft_close(W);
    return NULL;
  }
  *probe = luaL_ref(weft_lua(W), LUA_REGISTRYINDEX);
  if (weft_watch_scripts(W, 1) != WEFT_OK) {
    fprintf(stderr, "reload_latency: cannot watch %s\n", root);
    weft_close(W);
    return NULL;
  }
  return W;
}

/* One trial: saves version k at a random moment inside a frame, then
   steps frames until the probe runs it. Times in the out parameters. */
static int one_save(weft_state *W, const char *root, int probe, int k, double *next, double *plain,
                    int *nplain, double *closed, double *first, double *landed_start,
                    double *landed) {
  const double frame = 1.0 / HZ;
  /* Save at a random moment inside the next frame. */
  *next += frame;
  sleep_until(*next - frame + frame * ((double)rand() / RAND_MAX) * 0.9);
  if (write_module(root, k) != 0) {
    perror("write");
    return -1;
  }
  *closed = clock_now();
  *first = 0;
  long waited = 0;
  for (;;) {
    sleep_until(*next);
    double a = clock_now();
    weft_step(W, frame);
    double b = clock_now();
    if (*first == 0) *first = a;
    if (probe_value(W, probe) == k) {
      *landed_start = a;
      *landed = b;
      return 0;
    }
    if (*nplain < 4096) plain[(*nplain)++] = b - a;
    *next += frame;
    if (++waited > (long)(2.0 * HZ)) {
      fprintf(stderr, "reload_latency: trial %d: the change did not land within 2 s\n", k);
      return -1;
    }
  }
}

int main(int argc, char **argv) {
  int trials = argc > 1 ? atoi(argv[1]) : 20;
  int entities = argc > 2 ? atoi(argv[2]) : 100;
  if (trials < 1 || trials > MAXTRIALS || entities < 0) {
    fprintf(stderr, "usage: reload_latency [TRIALS 1..%d] [ENTITIES]\n", MAXTRIALS);
    return 2;
  }
  char root[64] = "/tmp/weft-latency-XXXXXX";
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  char ai[128];
  snprintf(ai, sizeof ai, "%s/ai", root);
  mkdir(ai, 0755);
  int errors = 0, status = 0;
  weft_state *W = NULL;
  if (write_module(root, 0) != 0) {
    perror("write");
    status = 1;
    goto done;
  }
  int probe = 0;
  W = open_probe(root, entities, &errors, &probe);
  if (!W) {
    status = 1;
    goto done;
  }

  double total[MAXTRIALS], to_poll[MAXTRIALS], quiet[MAXTRIALS], commit[MAXTRIALS];
  double plain[4096];
  int nplain = 0;
  srand(12345);
  const double frame = 1.0 / HZ;
  double next = clock_now();
  for (int k = 1; k <= trials; k++) {
    /* Settle: plain frames, measured, for a baseline step time. */
    for (int i = 0; i < 12; i++) {
      next += frame;
      sleep_until(next);
      double a = clock_now();
      weft_step(W, frame);
      double b = clock_now();
      if (nplain < 4096) plain[nplain++] = b - a;
    }
    double closed, first, landed_start, landed;
    if (one_save(W, root, probe, k, &next, plain, &nplain, &closed, &first, &landed_start,
                 &landed) != 0) {
      status = 1;
      goto done;
    }
    total[k - 1] = landed - closed;
    to_poll[k - 1] = first - closed;
    quiet[k - 1] = landed_start - first;
    commit[k - 1] = landed - landed_start; /* minus a plain frame, below */
  }
  qsort(plain, (size_t)nplain, sizeof *plain, cmp_double);
  double base = plain[nplain / 2];
  for (int k = 0; k < trials; k++) commit[k] = commit[k] > base ? commit[k] - base : 0;

  printf("reload latency: %d trials, frames at %.0f Hz, %d entities + 1 probe restarted per "
         "reload, %u reloads, %d script errors\n",
         trials, HZ, entities, weft_reload_count(W), errors);
  printf("  %-32s %8.3f ms\n", "plain frame (median)", base * 1e3);
  printf("  %-32s %8s %8s %8s   (ms)\n", "", "min", "median", "max");
  row("close -> new code running", total, trials);
  row("  close -> next frame's poll", to_poll, trials);
  row("  quiet window + frame rounding", quiet, trials);
  row("  staging + commit", commit, trials);
  if (weft_reload_count(W) != (uint32_t)trials || errors) status = 1;

done:
  if (W) weft_close(W);
  rm_tree(root);
  return status;
}
