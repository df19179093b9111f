/* The `weft` program: run a script headless on a virtual (or real) clock,
   or run script tests. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <lauxlib.h>

#include <weft.h>

#include "mialloc.h"

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t) {
  double d = t - mono_now();
  if (d <= 0) return;
  struct timespec ts = {(time_t)d, (long)((d - floor(d)) * 1e9)};
  nanosleep(&ts, NULL);
}

static int parse_num(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

/* Prints weft.tasks() to stdout, one task a line. */
static void dump_tasks(weft_state *W) {
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "tasks");
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    fprintf(stderr, "weft: tasks: %s\n", lua_tostring(L, -1));
    lua_pop(L, 3);
    return;
  }
  lua_Integer n = luaL_len(L, -1);
  printf("%lld live task(s)\n", (long long)n);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    static const char *const f[] = {"who",     "id",    "name",    "group",  "status",
                                    "waiting", "where", "spawned", "resumes"};
    for (int k = 0; k < 9; k++) {
      lua_getfield(L, -1, f[k]);
      printf("%s%s=%s", k ? "  " : "", f[k], lua_isnil(L, -1) ? "-" : lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    putchar('\n');
    lua_pop(L, 1);
  }
  lua_pop(L, 3);
}

/* ---- the command line ---- */

/* What the command line asked for; zero fields are the defaults. */
typedef struct config {
  double frames, dt, mem;   /* frames < 0: no limit */
  double budget, budget_ms; /* instructions counted (0: watched), or ms; budget < 0: off */
  double frame_ms;          /* --frame-budget: ms a frame's tasks may take; < 0: off; 0: default */
  double runaway_ms;        /* --runaway: ms of script time before a kill; < 0: off; 0: default */
  int realtime, watch, dump, verify, list;
  const char *record, *replay; /* recording files */
  int debug;                   /* --debug PORT: port + 1; 0: no debugger */
  const char *profile;         /* --profile OUT: the profile's file, NULL: none */
  double save_at;              /* --save-at N OUT: the frame after which to save, */
  const char *save_out;        /* ...into this file; NULL: no save */
  const char *load;            /* --load F: the save to go on from, NULL: none */
  uint64_t from_task;          /* a replay from a save: the file's task (the meta) */
  weft_desc d;
} config;

enum { RUN = 1, TEST = 2 };

/* One option. The table below drives parsing, `weft --help` and the
   usage block in docs/programs.md (tests/cli/usage.sh checks that it matches):
   to add an option, add a row and its setter. */
typedef struct option {
  const char *name; /* "--frames" */
  const char *arg;  /* its value as the usage names it ("N"); NULL: a flag */
  int cmds;         /* RUN, TEST or both */
  const char *help; /* one line for --help */
  /* Applies the option (val is NULL for a flag); returns NULL, or what
     is wrong with val. */
  const char *(*set)(config *c, const char *val);
} option;

static const char *set_frames(config *c, const char *v) {
  return parse_num(v, &c->frames) && c->frames >= 0 ? NULL : "a number of frames >= 0";
}
static const char *set_dt(config *c, const char *v) {
  return parse_num(v, &c->dt) && c->dt >= 0 && c->dt <= WEFT_MAX_DT ? NULL
                                                                    : "seconds from 0 to 1e6";
}
static const char *set_memory(config *c, const char *v) {
  return parse_num(v, &c->mem) && c->mem > 0 ? NULL : "megabytes > 0";
}
static const char *set_budget(config *c, const char *v) {
  if (strcmp(v, "off") == 0) return c->budget = -1, NULL;
  size_t n = strlen(v);
  if (n > 2 && strcmp(v + n - 2, "ms") == 0) {
    char num[64];
    snprintf(num, sizeof num, "%.*s", (int)(n - 2), v);
    c->budget = 0;
    return parse_num(num, &c->budget_ms) && c->budget_ms >= 0.001 && c->budget_ms <= 1e6
               ? NULL
               : "milliseconds from 0.001 to 1e6 (as in 5ms)";
  }
  return parse_num(v, &c->budget) && c->budget >= 1 && c->budget <= 2e9
             ? NULL
             : "instructions from 1 to 2e9, milliseconds as in 5ms, or off";
}
static const char *set_frame_budget(config *c, const char *v) {
  if (strcmp(v, "off") == 0) return c->frame_ms = -1, NULL;
  size_t n = strlen(v);
  char num[64];
  snprintf(num, sizeof num, "%.*s", (int)(n > 2 && strcmp(v + n - 2, "ms") == 0 ? n - 2 : n), v);
  return parse_num(num, &c->frame_ms) && c->frame_ms >= 0.001 && c->frame_ms <= 1e6
             ? NULL
             : "milliseconds from 0.001 to 1e6 (as in 8ms), or off";
}
/* --runaway: off, or a time as 1s, 500ms or 0.25s. */
static const char *set_runaway(config *c, const char *v) {
  if (strcmp(v, "off") == 0) return c->runaway_ms = -1, NULL;
  size_t n = strlen(v), unit = n > 2 && strcmp(v + n - 2, "ms") == 0 ? 2 : n > 1 && v[n - 1] == 's';
  char num[64];
  snprintf(num, sizeof num, "%.*s", (int)(n - unit), v);
  if (!unit || !parse_num(num, &c->runaway_ms)) return "a time as in 1s or 500ms, or off";
  if (unit == 1) c->runaway_ms *= 1000;
  return c->runaway_ms >= 0.001 && c->runaway_ms <= 4e6
             ? NULL
             : "from 0.001ms to 4000s (as in 1s), or off";
}
static const char *set_scripts(config *c, const char *v) { return c->d.scripts_root = v, NULL; }
static const char *set_realtime(config *c, const char *v) { return (void)v, c->realtime = 1, NULL; }
static const char *set_watch(config *c, const char *v) { return (void)v, c->watch = 1, NULL; }
static const char *set_dump(config *c, const char *v) { return (void)v, c->dump = 1, NULL; }
static const char *set_record(config *c, const char *v) { return c->record = v, NULL; }
static const char *set_replay(config *c, const char *v) { return c->replay = v, NULL; }
static const char *set_verify(config *c, const char *v) { return (void)v, c->verify = 1, NULL; }
static const char *set_debug(config *c, const char *v) {
  double port;
  if (!parse_num(v, &port) || port < 0 || port > 65535 || port != floor(port))
    return "a port from 0 to 65535 (0: any free port)";
  return c->debug = (int)port + 1, NULL;
}
static const char *set_profile(config *c, const char *v) { return c->profile = v, NULL; }
/* --save-at N OUT: v is "N", and OUT the next argument (parse). */
static const char *set_save_at(config *c, const char *v) {
  return parse_num(v, &c->save_at) && c->save_at >= 0 && c->save_at == floor(c->save_at)
             ? NULL
             : "a frame number >= 0, then the file";
}
static const char *set_load(config *c, const char *v) { return c->load = v, NULL; }
static const char *set_list(config *c, const char *v) { return (void)v, c->list = 1, NULL; }
static const char *set_inline(config *c, const char *v) {
  return (void)v, c->d.job_threads = WEFT_JOBS_INLINE, NULL;
}

static const option options[] = {
    {"--frames", "N", RUN, "stop after N frames (exit 2 if FILE is still running)", set_frames},
    {"--dt", "S", RUN, "seconds per frame of the virtual clock (default 1/60)", set_dt},
    {"--realtime", NULL, RUN, "pace frames to the wall clock", set_realtime},
    {"--scripts", "DIR", RUN | TEST, "the scripts root: require and --watch (default scripts)",
     set_scripts},
    {"--watch", NULL, RUN, "hot-reload modules under the scripts root when saved", set_watch},
    {"--memory", "MB", RUN | TEST, "the Lua memory limit, of each case in test (default 256)",
     set_memory},
    {"--budget", "B", RUN | TEST, "per resume: a time (run: 5ms), N instructions (test: 1e6), off",
     set_budget},
    {"--frame-budget", "T", RUN, "per frame: the time all tasks may take (default 8ms), off",
     set_frame_budget},
    {"--runaway", "T", RUN | TEST, "kill a stretch that runs T without waiting (default 1s), off",
     set_runaway},
    {"--dump-tasks", NULL, RUN, "print weft.tasks() at exit", set_dump},
    {"--inline-jobs", NULL, RUN, "run jobs on the main thread at the next frame", set_inline},
    {"--record", "F", RUN, "record the run into file F (replay it with --replay F)", set_record},
    {"--replay", "F", RUN, "replay recording F (FILE.lua is the recorded one)", set_replay},
    {"--verify", NULL, RUN, "with --replay: exit 1 at the first frame that differs", set_verify},
    {"--list", NULL, TEST, "print each case as file:line: name, without running it", set_list},
    {"--debug", "PORT", RUN, "serve a debugger (DAP) on 127.0.0.1:PORT; run once it attaches",
     set_debug},
    {"--profile", "OUT", RUN, "write a profile: OUT (Chrome trace), OUT's .speedscope.json",
     set_profile},
    {"--save-at", "N OUT", RUN, "save the running world into OUT after frame N, and go on",
     set_save_at},
    {"--load", "F", RUN, "go on from save F (made by --save-at; no FILE.lua)", set_load},
};
#define NOPTIONS (sizeof options / sizeof options[0])

/* Prints "PREFIX ARGS [--opt V]..." for one command, wrapped at 80
   columns under its first option. */
static void usage_line(FILE *f, const char *prefix, int cmd, const char *args) {
  int col = fprintf(f, "%s%s", prefix, args), indent = (int)strlen(prefix);
  for (size_t i = 0; i < NOPTIONS; i++) {
    if (!(options[i].cmds & cmd)) continue;
    char item[64];
    int n = snprintf(item, sizeof item, "[%s%s%s]", options[i].name, options[i].arg ? " " : "",
                     options[i].arg ? options[i].arg : "");
    if (col + 1 + n > 80) col = fprintf(f, "\n%*s", indent, "") - 1;
    col += fprintf(f, " %s", item);
  }
  fputc('\n', f);
}

/* The usage text, from the option table. */
static void usage(FILE *f) {
  usage_line(f, "usage: weft run ", RUN, "FILE.lua [ARG...]");
  usage_line(f, "       weft test ", TEST, "[DIR or FILES...]");
  fputs("       weft --help\n\n", f);
  for (size_t i = 0; i < NOPTIONS; i++) {
    char head[40];
    snprintf(head, sizeof head, "%s%s%s", options[i].name, options[i].arg ? " " : "",
             options[i].arg ? options[i].arg : "");
    fprintf(f, "  %-16s %s\n", head, options[i].help);
  }
  fprintf(f, "  %-16s %s\n", "--help", "print this text and exit");
}

/* Applies the options of cmd in argv to c and moves the other arguments
   to the front of argv. Returns their count, or -1 after printing what
   is wrong (and the usage) to stderr. */
static int parse(int cmd, int argc, char **argv, config *c) {
  int npos = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || a[1] == 0) {
      argv[npos++] = argv[i];
      continue;
    }
    const option *o = NULL;
    for (size_t k = 0; k < NOPTIONS && !o; k++)
      if ((options[k].cmds & cmd) && strcmp(options[k].name, a) == 0) o = &options[k];
    if (!o) {
      fprintf(stderr, "weft: unknown option %s (weft --help lists them)\n", a);
      return -1;
    }
    int two = o->arg && strchr(o->arg, ' ') != NULL; /* "N OUT": two values */
    if (o->arg && i + 1 + two >= argc) {
      fprintf(stderr, "weft: %s needs a value (%s)\n", a, o->arg);
      return -1;
    }
    const char *why = o->set(c, o->arg ? argv[++i] : NULL);
    if (!why && two) c->save_out = argv[++i];
    if (why) {
      fprintf(stderr, "weft: bad %s %s (%s)\n", a, argv[i], why);
      return -1;
    }
  }
  return npos;
}

/* The frames of `weft run`: until the file's task ends (0 done, 1
   failed), the frames run out (2), or a replay's recording ends. */
static int debug_held; /* the debugger held the program since the last look */

static int ended_by_debugger(void) {
  fprintf(stderr, "weft: ended by the debugger\n");
  return 1;
}

/* A save of `weft run`: RUN_MAGIC, the file's task, then weft_save's
   bytes. */
#define RUN_MAGIC "WEFTRUN1"

static int write_file(void *ud, const void *p, size_t n) { return fwrite(p, 1, n, ud) == n; }

/* --save-at: saves into c->save_out; nonzero when it could not. */
static int save_run(weft_state *W, weft_task task, const config *c) {
  FILE *f = fopen(c->save_out, "wb");
  const char *err = NULL;
  int rc = WEFT_EIO;
  if (f && fwrite(RUN_MAGIC, 1, 8, f) == 8 && fwrite(&task.id, sizeof task.id, 1, f) == 1)
    rc = weft_save(W, write_file, f, &err);
  if (f && fclose(f) != 0 && rc == WEFT_OK) rc = WEFT_EIO;
  if (rc != WEFT_OK) {
    fprintf(stderr, "weft: --save-at: %s\n", err ? err : "cannot write the save");
    return 1;
  }
  fflush(stdout); /* what was printed before it comes before the line */
  fprintf(stderr, "weft: saved after frame %.0f into %s\n", c->save_at, c->save_out);
  return 0;
}

/* --load F: reads the save into W (fresh), the task of its file into
   task, and with --record starts a recording from it; nonzero after
   saying why. */
static int load_run(weft_state *W, const config *c, weft_task *task) {
  const char *path = c->load;
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t n = 0, cap = 0;
  while (f) {
    if (n == cap) {
      char *b = realloc(buf, cap = cap ? cap * 2 : 1 << 16);
      if (!b) break;
      buf = b;
    }
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if (k == 0) break;
  }
  if (!f || ferror(f)) {
    fprintf(stderr, "weft: --load: cannot read %s\n", path);
    if (f) fclose(f);
    free(buf);
    return 1;
  }
  fclose(f);
  const char *err = "bad save: not made by weft run --save-at";
  int rc = WEFT_EINVAL;
  if (n >= 16 && memcmp(buf, RUN_MAGIC, 8) == 0) {
    memcpy(&task->id, buf + 8, sizeof task->id);
    rc = weft_load(W, buf + 16, n - 16, &err);
  }
  if (rc != WEFT_OK) {
    fprintf(stderr, "weft: --load: %s: %s\n", path, err);
    free(buf);
    return 1;
  }
  if (c->record) { /* the meta: the save's own header (magic, task), ended as args are */
    char meta[17] = {0};
    memcpy(meta, buf, 16);
    rc = weft_record_from(W, c->record, meta, sizeof meta, buf + 16, n - 16);
    if (rc != WEFT_OK)
      fprintf(stderr, "weft: cannot record into %s: %s\n", c->record, weft_strerror(rc));
  }
  free(buf);
  return rc != WEFT_OK;
}

static int run_frames(weft_state *W, weft_task task, const config *c) {
  double next = mono_now(), dt = c->dt;
  uint64_t done_frames = 0;
  if (c->save_out && c->save_at == 0 && save_run(W, task, c)) return 1;
  for (;;) {
    int r = weft_task_result(W, task);
    if (r == WEFT_DONE) return 0;
    if (r == WEFT_FAILED || r == WEFT_CANCELLED) return 1;
    if (c->replay) {
      if (!weft_replay_frame(W, &dt)) return 2;
    } else if (c->frames >= 0 && (double)done_frames >= c->frames) {
      return 2;
    }
    if (c->debug && weft_debug_poll(W)) return ended_by_debugger();
    if (debug_held) { /* --realtime goes on from now, not racing to catch up */
      debug_held = 0;
      next = mono_now();
    }
    if (c->realtime) {
      next += dt;
      /* the client is served as it asks while the frame waits, not once a frame */
      if (c->debug && weft_debug_wait(W, next - mono_now())) return ended_by_debugger();
      sleep_until(next);
    }
    int rc = weft_step(W, dt);
    if (rc != WEFT_OK) { /* a recording's frame time out of range */
      fprintf(stderr, "weft: frame %llu cannot run (dt %g): %s\n",
              (unsigned long long)done_frames + 1, dt, weft_strerror(rc));
      return 1;
    }
    done_frames++;
    if (c->verify && weft_replay_check(W, NULL, 0)) return 1;
    if (c->save_out && (double)done_frames == c->save_at && save_run(W, task, c)) return 1;
  }
}

/* --debug PORT: listens, says where on stderr's first line, and waits
   for the client to be ready. Nonzero when the run must not go on. */
static void held(void *user) { *(int *)user = 1; }

static int start_debugger(weft_state *W, int port) {
  weft_debug_desc dd = {.size = sizeof dd, .port = port, .idle = held, .user = &debug_held};
  int rc = weft_debug_listen(W, &dd, &port);
  if (rc == WEFT_ENOTSUP) {
    fprintf(stderr, "weft: --debug: the debugger is %s (built with make DEBUGGER=0)\n",
            weft_strerror(rc));
    return -1;
  } else if (rc != WEFT_OK) {
    fprintf(stderr, "weft: --debug: cannot listen on 127.0.0.1:%d\n", port);
    return -1;
  }
  fprintf(stderr, "weft: debugger listening on 127.0.0.1:%d\n", port);
  if (weft_debug_wait_ready(W)) {
    weft_debug_exit(W, 1);
    return -1;
  }
  return 0;
}

/* --memory, --budget, --frame-budget and --runaway into d: N instructions are counted, a
   time is watched; without either, d keeps its kind (run watches, test counts). */
static void set_limits(const config *c, weft_desc *d) {
  d->memory_limit = (size_t)(c->mem * 1024 * 1024);
  d->instr_budget = c->budget < 0 ? WEFT_BUDGET_OFF : (uint32_t)c->budget;
  if (c->budget > 0) d->time_budget_us = WEFT_BUDGET_COUNTED;
  if (c->budget_ms > 0) d->time_budget_us = (uint32_t)(c->budget_ms * 1000 + 0.5);
  if (c->frame_ms < 0) d->frame_time_budget_us = WEFT_BUDGET_OFF;
  if (c->frame_ms > 0) d->frame_time_budget_us = (uint32_t)(c->frame_ms * 1000 + 0.5);
  if (c->runaway_ms < 0) d->runaway_us = WEFT_BUDGET_OFF;
  if (c->runaway_ms > 0) {
    double us = c->runaway_ms * 1000 + 0.5;
    d->runaway_us = us < 1 ? 1 : us >= 4e9 ? 4000000000u : (uint32_t)us;
  }
}

/* A recording's meta as `weft run` writes it: the file, then the
   script's arguments, each ended by a NUL (one made before arguments were
   kept holds the file alone). */
static char *pack_args(char *const *args, int n, size_t *len) {
  size_t total = 0;
  for (int i = 0; i < n; i++) total += strlen(args[i]) + 1;
  char *m = malloc(total ? total : 1), *p = m;
  for (int i = 0; m && i < n; i++) p += strlen(strcpy(p, args[i])) + 1;
  *len = total;
  return m;
}

/* The strings of a recording's meta (n bytes, ending in a NUL) into a new
   array (free it; the strings stay the meta's); *count says how many. */
static char **unpack_args(const char *meta, size_t n, int *count) {
  int k = 0;
  for (size_t i = 0; i < n; i++) k += meta[i] == 0;
  char **v = malloc((size_t)k * sizeof *v);
  if (!v) return NULL;
  for (int i = 0; i < k; i++, meta += strlen(meta) + 1) v[i] = (char *)meta;
  *count = k;
  return v;
}

/* Error reports, printed as the library's default does; the last few
   messages are remembered, so a main script whose failure went to a
   weft.on_error handler instead still has it printed at the end. */
#define SEEN_REPORTS 16
static uint64_t seen_reports[SEEN_REPORTS];
static unsigned nseen;

static uint64_t text_hash(const char *s) { /* FNV-1a */
  uint64_t h = 1469598103934665603u;
  for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static void on_run_report(void *user, const char *msg, const char *trace) {
  (void)user;
  fprintf(stderr, "error: %s\n", trace ? trace : msg);
  seen_reports[nseen++ % SEEN_REPORTS] = text_hash(msg);
}

static int reported(const char *msg) {
  uint64_t h = text_hash(msg);
  for (unsigned i = 0; i < SEEN_REPORTS && i < nseen; i++)
    if (seen_reports[i] == h) return 1;
  return 0;
}

/* Opens the state for `weft run`: recording, replaying (the recording's
   limits, file and arguments), or plainly. *args and *nargs are the file
   and the script's arguments (args[0] is the file): a replay sets them to
   the recording's, in a new array (*owned) the caller frees. NULL after
   saying why. */
static weft_state *open_run(config *c, char ***args, int *nargs, char ***owned) {
  weft_desc d = c->d;
  mialloc_use(&d);
  set_limits(c, &d);
  d.report = on_run_report;
  const char *watch = getenv("WEFT_WATCH"); /* the program's choice: the library reads none */
  if (watch && strcmp(watch, "poll") == 0) d.watch_poll = 1;
  weft_tape *T = NULL;
  if (c->replay) {
    char err[512];
    if (weft_tape_load(c->replay, &T, err, sizeof err) != WEFT_OK) {
      fprintf(stderr, "weft: %s\n", err);
      return NULL;
    }
    size_t n;
    const char *meta = weft_tape_meta(T, &n);
    if (n == 0 || meta[n - 1] != 0) {
      fprintf(stderr, "weft: %s was not recorded by weft run\n", c->replay);
      weft_tape_free(T);
      return NULL;
    }
    if (weft_tape_save(T, NULL) && n == 17 && memcmp(meta, RUN_MAGIC, 8) == 0) {
      memcpy(&c->from_task, meta + 8, sizeof c->from_task); /* no file: the save's task */
    } else if (!(*owned = *args = unpack_args(meta, n, nargs))) {
      fprintf(stderr, "weft: out of memory\n");
      weft_tape_free(T);
      return NULL;
    }
    if (weft_tape_cut(T))
      fprintf(stderr, "weft: replaying %llu of ? frames: the recording was cut short\n",
              (unsigned long long)weft_tape_frames(T));
    weft_tape_desc(T, &d);
  }
  weft_state *W = weft_open(&d);
  if (!W) {
    fprintf(stderr, "weft: cannot create the state (out of memory)\n");
    weft_tape_free(T);
    free(*owned);
    return NULL;
  }
  int rc = WEFT_OK;
  size_t saved;
  const void *save = T ? weft_tape_save(T, &saved) : NULL;
  if (save) { /* a recording from a save: the world it starts from first */
    const char *err = NULL;
    if (!c->from_task || weft_load(W, save, saved, &err) != WEFT_OK) {
      fprintf(stderr, "weft: %s: its save: %s\n", c->replay, err ? err : "not weft run's");
      weft_tape_free(T);
      weft_close(W);
      return NULL;
    }
  }
  if (T) rc = weft_replay(W, T);
  if (rc != WEFT_OK) weft_tape_free(T);
  if (rc == WEFT_OK && c->record && !c->load) {
    size_t n;
    char *meta = pack_args(*args, *nargs, &n);
    rc = meta ? weft_record(W, c->record, meta, n) : WEFT_ENOMEM;
    free(meta);
  }
  if (rc != WEFT_OK) {
    fprintf(stderr, "weft: cannot %s %s: %s\n", T ? "replay" : "record into",
            T ? c->replay : c->record, weft_strerror(rc));
    weft_close(W);
    free(*owned);
    return NULL;
  }
  if (c->watch && weft_watch_scripts(W, 1) != WEFT_OK)
    fprintf(stderr, "weft: --watch: cannot watch %s\n",
            d.scripts_root ? d.scripts_root : "scripts");
  if (c->debug && start_debugger(W, c->debug - 1) != 0) {
    weft_close(W);
    free(*owned);
    return NULL;
  }
  return W;
}

/* Protected: sets the scripts' `arg` as lua.c does: arg[0] the file, the
   script's arguments from 1, the program and command below 0. */
static int l_set_arg(lua_State *L) {
  char **argv = lua_touserdata(L, 1);
  int n = (int)lua_tointeger(L, 2);
  lua_createtable(L, n, 2);
  lua_pushliteral(L, "weft");
  lua_rawseti(L, -2, -2);
  lua_pushliteral(L, "run");
  lua_rawseti(L, -2, -1);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  lua_setfield(L, 3, "arg");
  return 0;
}

static void set_arg(weft_state *W, char **argv, int n) {
  lua_State *L = weft_lua(W);
  lua_pushcfunction(L, l_set_arg);
  lua_pushlightuserdata(L, argv);
  lua_pushinteger(L, n);
  weft_push_api(W);
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) lua_pop(L, 1);
}

static int cmd_run(int argc, char **argv) {
  config c = {.frames = -1, .dt = 1.0 / 60, .mem = 256, .d = WEFT_DESC_INIT};
  int npos = parse(RUN, argc, argv, &c);
  if (npos < 0) return 1;
  int bare = c.replay || c.load; /* no FILE.lua */
  if (npos < (bare ? 0 : 1) || (bare && npos > 0) || (c.verify && !c.replay) ||
      (c.replay && c.record) || (c.load && c.replay)) {
    fprintf(stderr, "usage: weft run FILE.lua [ARG...] [options], weft run --replay F [--verify],"
                    " weft run --load F (weft --help lists them)\n");
    return 1;
  }
  char **args = argv, **owned = NULL;
  int nargs = npos;
  weft_state *W = open_run(&c, &args, &nargs, &owned);
  if (!W) return 1;
  const char *file = c.load ? c.load : c.from_task ? c.replay : args[0];
  weft_task task = {c.from_task};
  const char *err;
  if (c.load) {
    if (load_run(W, &c, &task)) {
      weft_close(W);
      return 1;
    }
  } else if (c.from_task) {
    /* a replay from a save: the save's task runs on */
  } else if (set_arg(W, args, nargs),
             weft_run_file_args(W, file, nargs - 1, (const char *const *)args + 1, &task, &err) !=
                 WEFT_OK) {
    fprintf(stderr, "%s\n", err);
    weft_debug_exit(W, 1);
    weft_close(W);
    free(owned);
    return 1;
  }
  if (c.profile && weft_profile_start(W, c.profile) != WEFT_OK) {
    fprintf(stderr, "weft: --profile: cannot start a profile\n");
    c.profile = NULL;
  }
  int rc = run_frames(W, task, &c);
  if (c.profile && weft_profile_stop(W) != WEFT_OK) {
    fprintf(stderr, "weft: cannot write the profile %s\n", c.profile);
    rc = 1;
  }
  if (rc == 1 && weft_task_result(W, task) == WEFT_CANCELLED)
    fprintf(stderr, "weft: %s was cancelled\n", file);
  if (rc == 1 && weft_task_result(W, task) == WEFT_FAILED && !reported(weft_task_error(W, task)))
    fprintf(stderr, "error: %s\n", weft_task_error(W, task)); /* a handler took its report */
  char diff[400];
  if (c.replay && weft_replay_check(W, diff, sizeof diff)) {
    fprintf(stderr, "weft: the replay differs from the recording at %s\n", diff);
    rc = 1;
  } else if (c.verify) {
    fprintf(stderr, "weft: replayed %llu frames, each as recorded\n",
            (unsigned long long)weft_replay_position(W));
    if (rc == 2) rc = 0; /* every recorded frame, and the recording ended first */
  }
  if (c.dump) dump_tasks(W);
  if (c.record && weft_record_stop(W) != WEFT_OK) {
    fprintf(stderr, "weft: cannot write %s\n", c.record);
    rc = 1;
  }
  weft_debug_exit(W, rc);
  weft_task_drop(W, task);
  int leaked = weft_close(W);
  free(owned);
  if (leaked) fprintf(stderr, "weft: %d object(s) leaked at shutdown\n", leaked);
  return rc;
}

/* ---- weft test ---- */

typedef struct tests {
  int list; /* --list: name the cases, run none */
  int passed, failed;
  int reports;     /* errors reported during the case (none handled them) */
  char first[512]; /* ...the first one */
} tests;

/* Errors no weft.on_error handled: printed as `weft run` prints them, and
   counted, so a case whose child task failed unnoticed fails too. */
static void on_test_report(void *user, const char *msg, const char *trace) {
  tests *t = user;
  fprintf(stderr, "error: %s\n", trace ? trace : msg);
  if (!t->reports++) snprintf(t->first, sizeof t->first, "%s", msg ? msg : "error");
}

/* test(name, fn [, {frames = N, reports = true}]): registers a case in
   the registry list. frames: the most it may take (default 3600);
   reports: errors that reach no weft.on_error are expected (else any
   fails the case). */
static int l_test(lua_State *L) {
  luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_Integer frames = 3600;
  int reports = 0;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_getfield(L, 3, "frames");
    if (!lua_isnil(L, -1)) {
      int ok = 0;
      frames = lua_tointegerx(L, -1, &ok);
      if (!ok || frames < 1) return luaL_error(L, "test: frames must be a whole number >= 1");
    }
    lua_getfield(L, 3, "reports");
    reports = lua_toboolean(L, -1);
    lua_pop(L, 2);
  }
  lua_Debug ar;
  int line = 0;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "l", &ar)) line = ar.currentline;
  lua_getfield(L, LUA_REGISTRYINDEX, "weft.tests");
  lua_createtable(L, 0, 4);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "name");
  lua_pushvalue(L, 2);
  lua_setfield(L, -2, "fn");
  lua_pushinteger(L, frames);
  lua_setfield(L, -2, "frames");
  lua_pushinteger(L, line);
  lua_setfield(L, -2, "line");
  lua_pushboolean(L, reports);
  lua_setfield(L, -2, "reports");
  lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
  return 0;
}

/* Opens a fresh state from base and runs the test file's top level.
   Returns the state with the cases in registry "weft.tests", or NULL
   (reported). */
/* stub(name, value): a global that every script of this test file sees
   from now on, the modules it requires included (they look up names they
   do not define in the script API): the game's verbs a behaviour calls,
   faked (stub("player", function() return hero end)). */
static int l_stub(lua_State *L) {
  weft_state *W = lua_touserdata(L, lua_upvalueindex(1));
  luaL_checkstring(L, 1);
  luaL_checkany(L, 2);
  lua_settop(L, 2);
  weft_push_api(W);
  lua_xmove(weft_lua(W), L, 1);
  lua_insert(L, 1);
  lua_rawset(L, 1);
  return 0;
}

static weft_state *load_tests(const char *file, const weft_desc *base, int *ncases, tests *t) {
  weft_desc d = *base;
  d.report = on_test_report;
  d.user = t;
  weft_state *W = weft_open(&d);
  if (!W) return NULL;
  lua_State *L = weft_lua(W);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "weft.tests");
  weft_push_api(W);
  lua_pushcfunction(L, l_test);
  lua_setfield(L, -2, "test");
  lua_pushlightuserdata(L, W);
  lua_pushcclosure(L, l_stub, 1);
  lua_setfield(L, -2, "stub");
  lua_pop(L, 1);
  weft_task task;
  const char *err;
  if (weft_run_file(W, file, &task, &err) != WEFT_OK) {
    printf("FAIL %s: %s\n", file, err);
    weft_close(W);
    return NULL;
  }
  for (int i = 0; i < 600 && weft_task_result(W, task) == WEFT_RUNNING; i++) weft_step(W, 1.0 / 60);
  if (weft_task_result(W, task) != WEFT_DONE) {
    printf("FAIL %s: top level: %s\n", file,
           weft_task_result(W, task) ? weft_task_error(W, task) : "did not finish");
    weft_close(W);
    return NULL;
  }
  weft_task_drop(W, task);
  lua_getfield(L, LUA_REGISTRYINDEX, "weft.tests");
  *ncases = (int)luaL_len(L, -1);
  lua_pop(L, 1);
  return W;
}

static void run_case(const char *file, const weft_desc *base, int i, tests *t) {
  int n = 0;
  weft_state *W = load_tests(file, base, &n, t);
  if (!W) {
    t->failed++;
    return;
  }
  t->reports = 0;
  lua_State *L = weft_lua(W);
  lua_getfield(L, LUA_REGISTRYINDEX, "weft.tests");
  lua_rawgeti(L, -1, i);
  lua_getfield(L, -1, "name");
  char name[200];
  snprintf(name, sizeof name, "%s", lua_tostring(L, -1));
  lua_getfield(L, -2, "line");
  int line = (int)lua_tointeger(L, -1);
  lua_getfield(L, -3, "frames");
  lua_Integer limit = lua_tointeger(L, -1);
  lua_getfield(L, -4, "reports");
  int reports_ok = lua_toboolean(L, -1);
  lua_pop(L, 4);
  lua_getfield(L, -1, "fn");
  lua_remove(L, -2);
  lua_remove(L, -2);
  weft_task task = weft_spawn(W, 0);
  lua_Integer f = 0;
  while (task.id && weft_task_result(W, task) == WEFT_RUNNING && f < limit) {
    weft_step(W, 1.0 / 60);
    f++;
  }
  int r = task.id ? weft_task_result(W, task) : WEFT_FAILED;
  if (r == WEFT_DONE && t->reports && !reports_ok) {
    t->failed++;
    printf("FAIL %s:%d: %s: a task failed and no weft.on_error handled it: %s\n", file, line, name,
           t->first);
  } else if (r == WEFT_DONE) {
    t->passed++;
  } else {
    t->failed++;
    if (r == WEFT_RUNNING) {
      char buf[128];
      weft_describe_wait(W, task, buf, sizeof buf);
      printf("FAIL %s:%d: %s: not finished after %lld frames (%s)\n", file, line, name,
             (long long)limit, buf);
    } else {
      printf("FAIL %s:%d: %s: %s\n", file, line, name, weft_task_error(W, task));
    }
  }
  if (task.id) weft_task_drop(W, task);
  int leaked = weft_close(W);
  if (leaked) {
    printf("FAIL %s:%d: %s: %d object(s) leaked at shutdown\n", file, line, name, leaked);
    t->passed -= (r == WEFT_DONE);
    t->failed += (r == WEFT_DONE);
  }
}

static void test_file(const char *file, const weft_desc *base, tests *t) {
  int n = 0;
  weft_state *W = load_tests(file, base, &n, t);
  if (!W) {
    t->failed++;
    return;
  }
  if (t->list) {
    lua_State *L = weft_lua(W);
    lua_getfield(L, LUA_REGISTRYINDEX, "weft.tests");
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      lua_getfield(L, -1, "line");
      lua_getfield(L, -2, "name");
      printf("%s:%d: %s\n", file, (int)lua_tointeger(L, -2), lua_tostring(L, -1));
      lua_pop(L, 3);
    }
    lua_pop(L, 1);
    t->passed += n;
  }
  weft_close(W);
  for (int i = 1; i <= n && !t->list; i++) run_case(file, base, i, t);
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every *_test.lua under dir, in name order. */
static void test_dir(const char *dir, const weft_desc *base, tests *t) {
  DIR *d = opendir(dir);
  if (!d) {
    printf("FAIL %s: %s\n", dir, strerror(errno));
    t->failed++;
    return;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) break;
    snprintf(names[n], len, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISDIR(st.st_mode))
      test_dir(names[i], base, t);
    else if (ends_with(names[i], "_test.lua"))
      test_file(names[i], base, t);
    free(names[i]);
  }
  free(names);
}

static int cmd_test(int argc, char **argv) {
  tests t = {0};
  config c = {0};
  int npos = parse(TEST, argc, argv, &c);
  if (npos < 0) return 1;
  t.list = c.list;
  const char *root = c.d.scripts_root ? c.d.scripts_root : "scripts";
  /* Every case gets a state of its own from this one description. */
  weft_desc base = WEFT_DESC_INIT;
  mialloc_use(&base);
  base.scripts_root = root;
  base.time_budget_us = WEFT_BUDGET_COUNTED; /* a case stops where it stopped last time */
  base.slow_task_us = UINT32_MAX;            /* cases are no game's frames */
  set_limits(&c, &base);
  for (int i = 0; i < npos; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
      test_dir(argv[i], &base, &t);
    else
      test_file(argv[i], &base, &t);
  }
  if (!npos) test_dir(root, &base, &t);
  if (t.list)
    printf("%d cases, %d files failed to load\n", t.passed, t.failed);
  else
    printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed ? 1 : 0;
}

static int wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

int main(int argc, char **argv) {
  if (wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "run") == 0) return cmd_run(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "test") == 0) return cmd_test(argc - 2, argv + 2);
  usage(stderr);
  return 1;
}
