/* weft-demo: the SDL2 game. Owns the command line, the window (or an
   off-screen surface when headless), the fixed-step frame loop that calls
   weft_step once per frame and draws the frame then the overlays, and the
   test-script driver. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <SDL.h>
#include <SDL_image.h>
#include <SDL_ttf.h>
#include <lauxlib.h>

#include "mialloc.h"
#include "assets.h"
#include "console.h"
#include "control.h"
#include "game.h"
#include "overlay.h"
#include "render.h"
#include "replay.h"
#include "savegame.h"
#include "screen.h"
#include "session.h"
#include "verbs.h"

static game G;

enum {
  USAGE_ITEM = 64, /* one option as the usage shows it, "[--frames N]" */
  NUMBER_LEN = 32, /* a number as text */
  ERROR_LEN = 512, /* a message from weft about a recording */
};

typedef struct options {
  int headless;
  long frames;        /* stop after this many frames; -1: never */
  const char *shot;   /* screenshot written at the end */
  const char *script; /* test script run beside the game */
  const char *root;
  uint32_t seed;
  int watch;                   /* hot reload: 1 on, 0 off, -1 default */
  const char *record, *replay; /* recording files */
  int verify;                  /* --replay: stop at the first frame that differs */
  long go_to;                  /* --replay: run to this frame, then pause; -1 none */
  int debug;                   /* --debug PORT: port + 1; 0: no debugger */
  const char *play;            /* --play: the cinematic played once the level is loaded */
  const char *profile;         /* --profile OUT: a profile of the whole run, NULL: none */
  const char *beat;            /* --beat: run unseen up to this beat of it */
  const char *from;            /* --from: the world state (lib/states.lua) --play sets up */
  uint32_t frame_us;           /* --frame-budget: weft_desc.frame_time_budget_us; 0: default */
  uint32_t runaway_us;         /* --runaway: weft_desc.runaway_us; 0: default */
  uint32_t budget;             /* --budget: instructions counted a resume; 0: 5 ms watched */
  const char *load;            /* --load: start from this save, NULL: the boot script */
  const char *save;            /* --save: the quicksave file, NULL: --load's or the default */
} options;

/* One option. The table below drives parsing, `weft-demo --help` and the
   usage block in docs/programs.md (tests/cli/usage.sh checks that it matches):
   to add an option, add a row and its setter. */
typedef struct option {
  const char *name; /* "--frames" */
  const char *arg;  /* its value as the usage names it ("N"); NULL: a flag */
  const char *help; /* one line for --help */
  /* Applies the option (val is NULL for a flag); returns NULL, or what
     is wrong with val. */
  const char *(*set)(options *o, const char *val);
} option;

static const char *set_headless(options *o, const char *v) {
  return (void)v, o->headless = 1, NULL;
}
static const char *set_frames(options *o, const char *v) {
  char *end;
  errno = 0;
  o->frames = strtol(v, &end, 10);
  return *v && !*end && !errno && o->frames >= 0 ? NULL : "a number of frames >= 0";
}
static const char *set_shot(options *o, const char *v) { return o->shot = v, NULL; }
static const char *set_script(options *o, const char *v) { return o->script = v, NULL; }
static const char *set_root(options *o, const char *v) { return o->root = v, NULL; }
static const char *set_seed(options *o, const char *v) {
  char *end;
  errno = 0;
  unsigned long s = strtoul(v, &end, 10);
  if (!*v || *end || errno || s > UINT32_MAX || *v == '-') return "a whole number from 0 to 2^32-1";
  return o->seed = (uint32_t)s, NULL;
}
static const char *set_record(options *o, const char *v) { return o->record = v, NULL; }
static const char *set_replay(options *o, const char *v) { return o->replay = v, NULL; }
static const char *set_verify(options *o, const char *v) { return (void)v, o->verify = 1, NULL; }
static const char *set_goto(options *o, const char *v) {
  char *end;
  errno = 0;
  o->go_to = strtol(v, &end, 10);
  return *v && !*end && !errno && o->go_to >= 0 ? NULL : "a frame number >= 0";
}
static const char *set_play(options *o, const char *v) {
  size_t n = strlen(v);
  if (!n || n >= MODULE_LEN || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_.") != n)
    return "a module name, cinematics.vault";
  return o->play = v, NULL;
}
static const char *set_from(options *o, const char *v) {
  size_t n = strlen(v);
  if (!n || n >= MODULE_LEN || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != n)
    return "a world state's name in scripts/lib/states.lua, after_intro";
  return o->from = v, NULL;
}
static const char *set_beat(options *o, const char *v) {
  if (!*v || strlen(v) >= MODULE_LEN) return "a beat's name, as beat(\"...\") gives it";
  return o->beat = v, NULL;
}
static const char *set_watch(options *o, const char *v) { return (void)v, o->watch = 1, NULL; }
static const char *set_no_watch(options *o, const char *v) { return (void)v, o->watch = 0, NULL; }

static const char *set_profile(options *o, const char *v) { return o->profile = v, NULL; }
static const char *set_load(options *o, const char *v) { return o->load = v, NULL; }
static const char *set_save(options *o, const char *v) {
  return strlen(v) < PATH_LEN ? (o->save = v, NULL) : "a shorter path";
}
static const char *set_debug(options *o, const char *v) {
  char *end;
  errno = 0;
  long port = strtol(v, &end, 10);
  if (!*v || *end || errno || port < 0 || port > 65535) return "a port from 0 to 65535 (0: any)";
  return o->debug = (int)port + 1, NULL;
}

static const char *set_frame_budget(options *o, const char *v) {
  if (strcmp(v, "off") == 0) return o->frame_us = WEFT_BUDGET_OFF, NULL;
  char *end;
  errno = 0;
  double ms = strtod(v, &end);
  if (end != v && strcmp(end, "ms") == 0) end += 2;
  if (end == v || *end || errno || !(ms >= 0.001 && ms <= 1e6))
    return "milliseconds from 0.001 to 1e6 (as in 8ms), or off";
  return o->frame_us = (uint32_t)(ms * 1000 + 0.5), NULL;
}

/* --budget: a count of instructions. */
static const char *set_budget(options *o, const char *v) {
  char *end;
  errno = 0;
  unsigned long n = strtoul(v, &end, 10);
  if (!*v || *end || errno || *v == '-' || n < 1000 || n > 2000000000)
    return "a count of instructions from 1000 to 2e9";
  return o->budget = (uint32_t)n, NULL;
}

/* --runaway: off, or a time as 1s or 500ms. */
static const char *set_runaway(options *o, const char *v) {
  if (strcmp(v, "off") == 0) return o->runaway_us = WEFT_BUDGET_OFF, NULL;
  char *end;
  errno = 0;
  double t = strtod(v, &end), scale = 0;
  if (end != v && strcmp(end, "ms") == 0) scale = 1e3;
  if (end != v && strcmp(end, "s") == 0) scale = 1e6;
  double us = t * scale + 0.5;
  if (!scale || errno || !(us >= 1 && us < 4e9)) return "a time as in 1s or 500ms, or off";
  return o->runaway_us = (uint32_t)us, NULL;
}

static const option table[] = {
    {"--headless", NULL, "no window: draw off-screen on a fixed 1/60 s step", set_headless},
    {"--frames", "N", "stop after N frames (exit 2: a --script still runs)", set_frames},
    {"--play", "MODULE", "play that cinematic at once (after loading; no intro)", set_play},
    {"--beat", "NAME", "with --play: run unseen, as fast as it goes, to that beat", set_beat},
    {"--from", "STATE", "with --play: first set up that world state (lib/states.lua)", set_from},
    {"--seed", "S", "seed math.random, which picks guards' routes (default 1)", set_seed},
    {"--screenshot", "FILE.png", "write the last frame as a PNG", set_shot},
    {"--script", "FILE.lua", "run a test script beside the game (exit 0: it ended)", set_script},
    {"--root", "DIR", "where scripts/ and assets/ are (default: found)", set_root},
    {"--watch", NULL, "hot-reload scripts/ on save (the default with a window)", set_watch},
    {"--no-watch", NULL, "no hot reload (the default when headless)", set_no_watch},
    {"--load", "FILE", "start from a save (F9's) where it was, not from the boot script", set_load},
    {"--save", "FILE", "where F9 saves and F10 loads (default --load's, or weft-demo.save)",
     set_save},
    {"--record", "FILE", "record the session (seed, input, reloads, level) into FILE", set_record},
    {"--replay", "FILE", "play a recording back (F5 pause, F6 step, F7/F8 -/+5 s)", set_replay},
    {"--verify", NULL, "with --replay: exit 1 at the first frame that differs", set_verify},
    {"--goto", "N", "with --replay: run to frame N at full speed, then pause", set_goto},
    {"--debug", "PORT", "serve a debugger (DAP) on 127.0.0.1:PORT; attach any time", set_debug},
    {"--frame-budget", "T", "the time all tasks may take a frame (default 8ms), or off",
     set_frame_budget},
    {"--runaway", "T", "kill a script that runs T without waiting (default 1s), or off",
     set_runaway},
    {"--budget", "N", "count N instructions a resume, not 5 ms: runs repeat on any machine",
     set_budget},
    {"--profile", "OUT", "profile the run into OUT (Chrome trace) and OUT's .speedscope.json",
     set_profile},
};
#define NOPTIONS (sizeof table / sizeof table[0])

/* The usage text, from the option table; the synopsis wraps at 80
   columns. */
static void usage(FILE *f) {
  const char *prefix = "usage: weft-demo";
  int col = fprintf(f, "%s", prefix);
  for (size_t i = 0; i < NOPTIONS; i++) {
    char item[USAGE_ITEM];
    int n = snprintf(item, sizeof item, "[%s%s%s]", table[i].name, table[i].arg ? " " : "",
                     table[i].arg ? table[i].arg : "");
    if (col + 1 + n > 80) col = fprintf(f, "\n%*s", (int)strlen(prefix), "") - 1;
    col += fprintf(f, " %s", item);
  }
  fputs("\n       weft-demo --help\n\n", f);
  for (size_t i = 0; i < NOPTIONS; i++) {
    char head[USAGE_ITEM];
    snprintf(head, sizeof head, "%s%s%s", table[i].name, table[i].arg ? " " : "",
             table[i].arg ? table[i].arg : "");
    fprintf(f, "  %-22s %s\n", head, table[i].help);
  }
  fprintf(f, "  %-22s %s\n", "--help", "print this text and exit");
}

/* Returns 0 to run, 1 after --help, -1 on a bad command line (said on
   stderr). */
static int parse(int argc, char **argv, options *o) {
  *o = (options){.frames = -1, .seed = 1, .watch = -1, .go_to = -1};
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return usage(stdout), 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const option *opt = NULL;
    for (size_t k = 0; k < NOPTIONS && !opt; k++)
      if (strcmp(table[k].name, a) == 0) opt = &table[k];
    if (!opt) {
      fprintf(stderr, "weft-demo: unknown argument %s (weft-demo --help lists the options)\n", a);
      return -1;
    }
    if (opt->arg && i + 1 >= argc)
      return fprintf(stderr, "weft-demo: %s needs a value (%s)\n", a, opt->arg), -1;
    const char *why = opt->set(o, opt->arg ? argv[++i] : NULL);
    if (why) return fprintf(stderr, "weft-demo: bad %s %s (%s)\n", a, argv[i], why), -1;
  }
  return 0;
}

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory with scripts/main.lua: --root, the current directory, or
   the parent of the directory holding the executable (build/..). */
static int find_root(game *g, const char *opt) {
  char p[FILE_LEN];
  if (opt) {
    snprintf(g->run.root, sizeof g->run.root, "%s", opt);
  } else {
    snprintf(g->run.root, sizeof g->run.root, ".");
    if (!is_file("scripts/main.lua")) {
      char exe[PATH_LEN - 8]; /* room for "/.." in root */
      ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
      if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(g->run.root, sizeof g->run.root, "%s/..", exe);
      }
    }
  }
  int here = strcmp(g->run.root, ".") == 0;
  snprintf(g->run.scripts_dir, sizeof g->run.scripts_dir, "%s%s", here ? "" : g->run.root,
           here ? "scripts" : "/scripts");
  snprintf(g->run.assets_dir, sizeof g->run.assets_dir, "%s%s", here ? "" : g->run.root,
           here ? "assets" : "/assets");
  snprintf(p, sizeof p, "%s/main.lua", g->run.scripts_dir);
  if (!is_file(p)) {
    fprintf(stderr,
            "weft-demo: cannot find scripts/main.lua (run from the repository or pass --root)\n");
    return -1;
  }
  return 0;
}

/* ---- weft callbacks ---- */

/* print: the game's output, and the console's scrollback. */
static void on_log(void *user, const char *line, size_t len) {
  (void)len;
  printf("%s\n", line);
  fflush(stdout);
  console_log(user, CONSOLE_PRINT, line);
}

/* What weft says: on stderr; its warnings (a script's warn, a slow
   task, a file skipped) in the console's scrollback, a slow task in the
   panel too. */
static const char *test_script; /* --script FILE: its own task draws screenshots, slowly */

static void on_logger(void *user, const char *tag, uint32_t severity, uint32_t id, const char *msg,
                      const char *file, uint32_t line) {
  (void)tag;
  char text[MESSAGE_LEN];
  if (file)
    snprintf(text, sizeof text, "%s: %s (%s:%u)", id == WEFT_LOG_WARNING ? "warn" : "weft", msg,
             file, (unsigned)line);
  else
    snprintf(text, sizeof text, "%s: %s", id == WEFT_LOG_WARNING ? "warn" : "weft", msg);
  fprintf(stderr, "%s\n", text);
  if (id == WEFT_LOG_SLOW_TASK && test_script &&
      strncmp(msg, test_script, strlen(test_script)) == 0)
    return; /* a test script's own screenshots */
  if (severity <= WEFT_LOG_WARN && id != WEFT_LOG_REPORT) console_log(user, CONSOLE_WARN, text);
  if (id == WEFT_LOG_SLOW_TASK) overlay_slow(user, msg, file, line);
  if (id == WEFT_LOG_TASK_GROWTH) overlay_growth(user, msg);
}

static void on_report(void *user, const char *msg, const char *trace) {
  game *g = user;
  fprintf(stderr, "script error: %s\n", trace && *trace ? trace : msg);
  overlay_error(g, msg, trace);
}

/* ---- the frame ---- */

/* One fixed step: input, world, scripts. */
static void step(game *g) {
  Uint64 t0 = SDL_GetPerformanceCounter();
  session_frame(g); /* a reset asked for, a dead boot a save fixed */
  g->run.frame++;
  g->run.realtime += STEP_DT;
  control_frame(g);
  control_move(g);
  world_update(&g->w, verbs_clocks(g));
  verbs_dispatch(g);
  Uint64 t1 = SDL_GetPerformanceCounter();
  replay_hash(g); /* the frame's world, before weft adds its own state */
  weft_step(g->W, STEP_DT);
  verbs_dispatch(g);
  control_check_reload(g);
  overlay_settle_slow(g);
  console_frame(g);
  Uint64 t2 = SDL_GetPerformanceCounter();
  g->load.shown += (g->load.frac - g->load.shown) * 0.25f;
  double f = (double)SDL_GetPerformanceFrequency() / 1000.0;
  overlay_record(g, (float)((double)(t2 - t0) / f), (float)((double)(t2 - t1) / f));
}

#ifdef __EMSCRIPTEN__
/* In a page the canvas keeps the game's 1280x720 pixels and the page
   scales it (CSS): a resizable window would follow the canvas's box, and
   SDL's software renderer would then scale every frame itself. */
#define WINDOW_FLAGS 0
#else
#define WINDOW_FLAGS SDL_WINDOW_RESIZABLE
#endif

static int open_video(game *g, const options *o) {
  if (o->headless) {
    if (!getenv("SDL_VIDEODRIVER")) setenv("SDL_VIDEODRIVER", "offscreen", 0);
    if (SDL_Init(0) != 0) return fprintf(stderr, "weft-demo: SDL_Init: %s\n", SDL_GetError()), -1;
    g->video.surface =
        SDL_CreateRGBSurfaceWithFormat(0, SCREEN_W, SCREEN_H, 32, SDL_PIXELFORMAT_ARGB8888);
    g->video.r = g->video.surface ? SDL_CreateSoftwareRenderer(g->video.surface) : NULL;
  } else {
    if (SDL_Init(SDL_INIT_VIDEO | SDL_INIT_EVENTS) != 0)
      return fprintf(stderr, "weft-demo: SDL_Init: %s\n", SDL_GetError()), -1;
    g->video.win = SDL_CreateWindow("Moonwatch Keep - a weft demo", SDL_WINDOWPOS_CENTERED,
                                    SDL_WINDOWPOS_CENTERED, SCREEN_W, SCREEN_H, WINDOW_FLAGS);
    if (!g->video.win)
      return fprintf(stderr, "weft-demo: cannot open a window: %s\n", SDL_GetError()), -1;
    g->video.r = SDL_CreateRenderer(g->video.win, -1,
                                    SDL_RENDERER_ACCELERATED | SDL_RENDERER_PRESENTVSYNC |
                                        SDL_RENDERER_TARGETTEXTURE);
    if (!g->video.r)
      g->video.r =
          SDL_CreateRenderer(g->video.win, -1, SDL_RENDERER_SOFTWARE | SDL_RENDERER_TARGETTEXTURE);
    if (g->video.r) SDL_RenderSetLogicalSize(g->video.r, SCREEN_W, SCREEN_H);
  }
  if (!g->video.r) return fprintf(stderr, "weft-demo: no renderer: %s\n", SDL_GetError()), -1;
  if (TTF_Init() != 0) return fprintf(stderr, "weft-demo: TTF_Init: %s\n", TTF_GetError()), -1;
  if (!(IMG_Init(IMG_INIT_PNG) & IMG_INIT_PNG))
    return fprintf(stderr, "weft-demo: IMG_Init: %s\n", IMG_GetError()), -1;
  char path[PATH_LEN];
  const struct {
    font **f;
    int style, px;
  } fonts[] = {{&g->video.f_ui, FONT_REGULAR, 21},
               {&g->video.f_bold, FONT_BOLD, 22},
               {&g->video.f_title, FONT_BOLD, 52},
               {&g->video.f_small, FONT_REGULAR, 15},
               {&g->video.f_mono, FONT_MONO, 13}};
  for (size_t i = 0; i < sizeof fonts / sizeof fonts[0]; i++) {
    if (font_find(fonts[i].style, path, sizeof path) != 0) {
      fprintf(stderr,
              "weft-demo: no TrueType font found (install fonts-dejavu-core or set WEFT_FONT)\n");
      return -1;
    }
    *fonts[i].f = font_open(g->video.r, path, fonts[i].px);
    if (!*fonts[i].f)
      return fprintf(stderr, "weft-demo: cannot open %s: %s\n", path, TTF_GetError()), -1;
  }
  return render_open(g);
}

static void close_video(game *g) {
  font *fs[] = {g->video.f_ui, g->video.f_bold, g->video.f_title, g->video.f_small,
                g->video.f_mono};
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) font_close(fs[i]);
  assets_close(g);
  render_close(g);
  if (g->video.r) SDL_DestroyRenderer(g->video.r);
  if (g->video.win) SDL_DestroyWindow(g->video.win);
  SDL_FreeSurface(g->video.surface);
  IMG_Quit();
  TTF_Quit();
  SDL_Quit();
}

/* Starts recording or replaying (T: the loaded recording, which W takes
   over). */
static int open_tape(game *g, const options *o, weft_tape *T) {
  int rc = WEFT_OK;
  if (T) {
    rc = weft_replay(g->W, T);
    if (rc == WEFT_OK)
      g->rp.on = 1;
    else
      weft_tape_free(T);
  } else if (o->record) {
    replay_meta m = {.seed = o->seed};
    snprintf(m.script, sizeof m.script, "%s", o->script ? o->script : "");
    snprintf(m.play, sizeof m.play, "%s", o->play ? o->play : "");
    snprintf(m.from, sizeof m.from, "%s", o->from ? o->from : "");
    size_t n = 0;
    unsigned char *meta =
        replay_meta_add_levels(&m, g->run.assets_dir) == 0 ? replay_meta_write(&m, &n) : NULL;
    rc = meta ? weft_record(g->W, o->record, meta, n) : WEFT_EINVAL;
    free(meta);
    replay_meta_free(&m);
    if (rc == WEFT_OK) g->rp.recording = 1;
  }
  if (rc != WEFT_OK)
    fprintf(stderr, "weft-demo: cannot %s %s: %s\n", T ? "replay" : "record into",
            T ? o->replay : o->record, weft_strerror(rc));
  return rc == WEFT_OK ? 0 : -1;
}

/* One seed for the world and for math.random: runs repeat exactly. */
static void seed_random(game *g) {
  lua_getglobal(g->L, "math");
  lua_getfield(g->L, -1, "randomseed");
  lua_pushinteger(g->L, (lua_Integer)g->run.seed);
  lua_call(g->L, 1, 0);
  lua_pop(g->L, 1);
}

/* What every state of the game holds before it runs anything: the
   script API with the demo's functions (each named for saves), the
   tables the demo keeps, the job kinds. A save can be loaded after it. */
static void open_game(game *g) {
  weft_push_api(g->W);
  verbs_open(g);
  screen_open(g);
  control_open(g);
  console_open(g);
  session_open(g);
  assets_open(g);
  lua_pop(g->L, 1);
}

/* A load's fresh state (savegame.c), opened as the run's was. */
static int reopen(game *g) {
  g->W = weft_open(&g->run.desc);
  if (!g->W) return -1;
  g->L = weft_lua(g->W);
  seed_random(g);
  open_game(g);
  if (g->run.watch && weft_watch_scripts(g->W, 1) != WEFT_OK)
    fprintf(stderr, "weft-demo: cannot watch %s; hot reload is off\n", g->run.scripts_dir);
  return 0;
}

static int open_weft(game *g, const options *o, weft_tape *T) {
  weft_desc d = WEFT_DESC_INIT;
  mialloc_use(&d); /* the game chooses its scripts' allocator */
  d.scripts_root = g->run.scripts_dir;
  d.assets_root = g->run.assets_dir;
  d.log = on_log;
  d.report = on_report;
  d.user = g;
  d.frame_time_budget_us = o->frame_us;
  d.runaway_us = o->runaway_us;
  if (o->budget) d.time_budget_us = WEFT_BUDGET_COUNTED, d.instr_budget = o->budget;
  d.logger = on_logger;
  d.logger_ud = g;
  /* headless: a job runs at the start of the frame after it was asked
     for, however fast the frames run, so runs repeat exactly (a replay
     delivers jobs in their recorded frames itself); and no thread is
     needed, wherever it runs */
  if (o->headless && !T) d.job_threads = WEFT_JOBS_INLINE;
  g->run.desc = d; /* a load opens another state so */
  if (T) weft_tape_desc(T, &d);
  g->W = weft_open(&d);
  if (!g->W)
    return weft_tape_free(T), fprintf(stderr, "weft-demo: cannot create the weft state\n"), -1;
  g->L = weft_lua(g->W);
  seed_random(g);
  if (open_tape(g, o, T) != 0) return -1;
  open_game(g);
  if (!o->load) session_new_game(g); /* a save holds its own groups */
  /* launch: the options the boot script follows (launch.play) */
  weft_push_api(g->W);
  lua_createtable(g->L, 0, 1);
  if (o->play) lua_pushstring(g->L, o->play), lua_setfield(g->L, -2, "play");
  if (o->from) lua_pushstring(g->L, o->from), lua_setfield(g->L, -2, "from");
  lua_setfield(g->L, -2, "launch");
  lua_pop(g->L, 1);
  int watch = o->watch < 0 ? !o->headless && !T : o->watch;
  g->run.watch = watch;
  if (watch && weft_watch_scripts(g->W, 1) != WEFT_OK)
    fprintf(stderr, "weft-demo: cannot watch %s; hot reload is off\n", g->run.scripts_dir);
  return 0;
}

/* Renders the frame, then the overlays over it, counting the time for
   the F2 frame graph. */
static void draw(game *g) {
  Uint64 t0 = SDL_GetPerformanceCounter();
  render_frame(g);
  overlay_draw(g);
  console_draw(g);
  overlay_add_draw(g, (float)((double)(SDL_GetPerformanceCounter() - t0) * 1000.0 /
                              (double)SDL_GetPerformanceFrequency()));
}

/* After a step: ends the run when the test script ended or the frames
   ran out. Returns the exit code so far. */
static int check_end(game *g, const options *o, int rc) {
  weft_task test = g->run.test;
  if (test.id) {
    int res = weft_task_result(g->W, test);
    if (res == WEFT_DONE) {
      fprintf(stderr, "weft-demo: %s passed at frame %llu\n",
              o->script ? o->script : "the test script", (unsigned long long)g->run.frame);
      g->run.quit = 1;
    } else if (res == WEFT_FAILED || res == WEFT_CANCELLED) {
      fprintf(stderr, "weft-demo: %s FAILED at frame %llu: %s\n",
              o->script ? o->script : "the test script", (unsigned long long)g->run.frame,
              weft_task_error(g->W, test));
      rc = 1;
      g->run.quit = 1;
    }
  }
  if (o->frames >= 0 && (long)g->run.frame >= o->frames && !g->run.quit) {
    if (test.id) {
      fprintf(stderr, "weft-demo: %s still running after %ld frames\n",
              o->script ? o->script : "the test script", o->frames);
      rc = 2;
    }
    g->run.quit = 1;
  }
  return rc;
}

/* Loads --replay's recording: the seed, test script and scripts root
   come from it. NULL after saying what is wrong. */
static weft_tape *load_replay(game *g, options *o, replay_meta *m) {
  weft_tape *T;
  char err[ERROR_LEN];
  if (weft_tape_load(o->replay, &T, err, sizeof err) != WEFT_OK) {
    fprintf(stderr, "weft-demo: %s\n", err);
    return NULL;
  }
  size_t n;
  const void *meta = weft_tape_meta(T, &n);
  if (replay_meta_read(m, meta, n) != 0) {
    fprintf(stderr, "weft-demo: %s was not recorded by weft-demo\n", o->replay);
    weft_tape_free(T);
    return NULL;
  }
  o->seed = m->seed;
  o->script = m->script[0] ? m->script : NULL;
  o->play = m->play[0] ? m->play : NULL;
  o->from = m->from[0] ? m->from : NULL;
  g->rp.meta = m;
  weft_desc d = WEFT_DESC_INIT;
  weft_tape_desc(T, &d);
  snprintf(g->run.scripts_dir, sizeof g->run.scripts_dir, "%s", d.scripts_root);
  g->rp.frames = weft_tape_frames(T);
  if (o->go_to >= 0) {
    g->rp.jump_to = o->go_to;
    g->rp.paused = 1;
  }
  return T;
}

/* How many fixed steps this pass of the loop runs: up to 600 while
   --beat runs the game unseen; one headless (none
   once a headless replay reached its --goto: the run ends); as many
   as real time asks for in a window; none while a replay is paused (but
   F6's one); up to 600 while a replay jumps ahead. */
static int steps_due(game *g, double *acc, Uint64 *last) {
  if (!g->run.headless) control_poll(g);
  if (g->run.fast_forward) return 600; /* --beat: unseen up to the beat */
  if (g->rp.on && g->rp.jump_to > (long)g->run.frame) {
    long n = g->rp.jump_to - (long)g->run.frame;
    return n > 600 ? 600 : (int)n;
  }
  if (g->run.headless) {
    if (g->rp.on && g->rp.paused) g->run.quit = 1; /* --goto reached: nobody to press F5 */
    return g->run.quit ? 0 : 1;
  }
  Uint64 now = SDL_GetPerformanceCounter();
  *acc += (double)(now - *last) / (double)SDL_GetPerformanceFrequency();
  *last = now;
  if (*acc > 0.25) *acc = 0.25;
  int steps = (int)(*acc / STEP_DT);
  *acc -= steps * STEP_DT;
  if (g->rp.on && g->rp.paused) {
    steps = g->rp.step_one;
    g->rp.step_one = 0;
  }
  return steps;
}

/* One frame: from the recording when replaying. */
static int run_step(game *g, const options *o, int rc) {
  if (g->rp.on) {
    double dt;
    if (!weft_replay_frame(g->W, &dt)) return g->run.quit = 1, rc;
    control_replay_input(g);
  }
  step(g);
  savegame_frame(g); /* between two frames: F9, F10, Backspace, the rewind ring */
  rc = check_end(g, o, rc);
  if (o->verify && weft_replay_check(g->W, NULL, 0)) g->run.quit = 1, rc = 1;
  if (g->run.shot_path[0] && !g->run.quit) {
    draw(g);
    render_save_png(g, g->run.shot_path);
    g->run.shot_path[0] = 0;
  }
  return rc;
}

/* ---- the debugger ---- */

/* While the debugger holds the game (inside a frame): the window stays
   alive and says so. No input reaches the game meanwhile. */
static void debug_idle(void *user) {
  game *g = user;
  g->run.debug_held = 1;
  if (g->run.headless) return;
  SDL_Event ev;
  while (SDL_PollEvent(&ev))
    if (ev.type == SDL_QUIT) g->run.quit = 1;
  render_frame(g);
  overlay_draw(g);
  const char *msg = "paused in debugger";
  font_draw_shadow(g->video.f_title, g->video.r, msg,
                   (SCREEN_W - font_width(g->video.f_title, msg)) / 2, SCREEN_H / 3,
                   (SDL_Color){255, 225, 140, 255});
  SDL_RenderPresent(g->video.r);
}

static int start_debugger(game *g, int port) {
  weft_debug_desc d = {.size = sizeof d, .port = port, .idle = debug_idle, .user = g};
  int rc = weft_debug_listen(g->W, &d, &port);
  if (rc == WEFT_ENOTSUP)
    return fprintf(stderr, "weft-demo: --debug: the debugger is %s\n", weft_strerror(rc)), -1;
  if (rc != WEFT_OK)
    return fprintf(stderr, "weft-demo: --debug: cannot listen on 127.0.0.1:%d\n", port), -1;
  fprintf(stderr, "weft: debugger listening on 127.0.0.1:%d\n", port);
  return 0;
}

/* Serves the debugger once a frame; the time it held the game is not
   game time. */
static void poll_debugger(game *g, const options *o, double *acc, Uint64 *last) {
  if (o->debug && weft_debug_poll(g->W)) g->run.quit = 1;
  if (g->run.debug_held) {
    g->run.debug_held = 0;
    *acc = 0;
    *last = SDL_GetPerformanceCounter();
  }
}

/* One start of the game: the options it runs with and what its loop
   keeps between passes. */
typedef struct runner {
  options given;    /* as parsed: F7's restart begins from these again */
  options o;        /* as given, then as the recording says (load_replay) */
  replay_meta meta; /* --replay's */
  int rc;           /* the exit code so far */
  double acc;       /* real time not yet stepped */
  Uint64 last;      /* when it was last read */
} runner;

/* One pass of the frame loop: input, the steps due, the picture.
   Returns 0 once the run ends. */
static int loop_pass(runner *r) {
  game *g = &G;
  const options *o = &r->o;
  poll_debugger(g, o, &r->acc, &r->last);
  int steps = steps_due(g, &r->acc, &r->last);
  for (int i = 0; i < steps && !g->run.quit; i++) r->rc = run_step(g, o, r->rc);
  poll_debugger(g, o, &r->acc, &r->last);
  if (g->run.headless || g->run.quit || g->run.fast_forward) return !g->run.quit;
  if (steps == 0 && !g->rp.paused) {
    SDL_Delay(1); /* nothing changed: no vsync must not mean a busy loop */
    return 1;
  }
  draw(g);
  if (g->run.shot_path[0]) render_save_png(g, g->run.shot_path), g->run.shot_path[0] = 0;
  SDL_RenderPresent(g->video.r);
  g->run.drawn++;
  if (steps == 0) SDL_Delay(15); /* a paused replay: keep the window alive */
  return 1;
}

/* After a replay: says whether every frame matched. */
static int replay_verdict(game *g, const options *o, int rc) {
  char diff[ERROR_LEN];
  if (weft_replay_check(g->W, diff, sizeof diff)) {
    fprintf(stderr, "weft-demo: the replay differs from the recording at %s\n", diff);
    return 1;
  }
  if (o->verify)
    fprintf(stderr, "weft-demo: replayed %llu frames, each as recorded\n",
            (unsigned long long)weft_replay_position(g->W));
  else
    fprintf(stderr, "weft-demo: the replay stopped at frame %llu of %llu\n",
            (unsigned long long)g->run.frame, (unsigned long long)g->rp.frames);
  return rc;
}

/* Sets the game up for a run of r->o (go_to: --goto, or F7's frame).
   Returns 0, or -1 when the run cannot start (r->rc says how it ends;
   everything is closed again). */
static int start(runner *r, long go_to) {
  options *o = &r->o;
  game *g = &G;
  memset(g, 0, sizeof *g);
  *o = r->given;
  o->go_to = go_to;
  r->rc = 0;
  r->meta = (replay_meta){.seed = 0};
  g->run.headless = o->headless;
  g->modes.time_scale = 1.0;
  g->rp.jump_to = g->rp.restart_to = -1;
  g->boot.task = LUA_NOREF;
  if (find_root(g, o->root) != 0) return r->rc = 1, -1;
  weft_tape *T = o->replay ? load_replay(g, o, &r->meta) : NULL;
  if (o->replay && !T) return r->rc = 1, -1;
  g->run.seed = o->seed;
  if (o->beat && !o->replay) {
    snprintf(g->run.beat_wanted, sizeof g->run.beat_wanted, "%s", o->beat);
    g->run.fast_forward = 1;
  }
  world_init(&g->w, o->seed);
  g->sv.reopen = reopen;
  snprintf(g->sv.path, sizeof g->sv.path, "%s", o->save ? o->save : o->load ? o->load : SAVE_FILE);
  g->run.debugging = o->debug != 0;
  /* --load: into the state just opened, before a debugger or a profile
     holds it */
  if (open_video(g, o) != 0 || open_weft(g, o, T) != 0 ||
      (o->load && savegame_start(g, o->load) != 0) ||
      (o->debug && start_debugger(g, o->debug - 1) != 0)) {
    if (g->W) weft_close(g->W);
    close_video(g);
    replay_meta_free(&r->meta);
    return r->rc = 1, -1;
  }
  test_script = o->script;
  if (o->profile && weft_profile_start(g->W, o->profile) != WEFT_OK)
    fprintf(stderr, "weft-demo: --profile: cannot start a profile\n");
  snprintf(g->run.profile_path, sizeof g->run.profile_path, "%s", o->profile ? o->profile : "");
  /* F3's: OUT-1.json, ... beside --profile OUT, else weft-demo-profile-1.json, ... */
  size_t pn = o->profile ? strlen(o->profile) : 0;
  if (pn >= 5 && strcmp(o->profile + pn - 5, ".json") == 0) pn -= 5;
  snprintf(g->run.profile_base, sizeof g->run.profile_base, "%.*s", (int)pn,
           o->profile ? o->profile : "");
  if (!g->run.profile_base[0])
    snprintf(g->run.profile_base, sizeof g->run.profile_base, "weft-demo-profile");
  const char *err;
  if (!o->load) session_boot(g); /* a save goes on where it was, its boot task in it */
  if (o->script && weft_run_file(g->W, o->script, &g->run.test, &err) != WEFT_OK) {
    fprintf(stderr, "%s\n", err);
    r->rc = 1;
    g->run.quit = 1;
  }
  r->acc = 0;
  r->last = SDL_GetPerformanceCounter();
  return 0;
}

/* Ends a run that started: the verdicts, the last screenshot, the
   recording and profile written, everything closed. Returns the exit
   code. */
static int finish(runner *r) {
  game *g = &G;
  const options *o = &r->o;
  int rc = r->rc;
  if (g->rp.on) rc = replay_verdict(g, o, rc);
  if (o->shot) {
    render_frame(g);
    overlay_draw(g);
    console_draw(g);
    if (render_save_png(g, o->shot) != 0) rc = 1;
  }
  if (g->rp.recording && weft_record_stop(g->W) != WEFT_OK)
    fprintf(stderr, "weft-demo: cannot write %s\n", o->record), rc = 1;
  if (weft_profile_stop(g->W) == WEFT_OK)
    fprintf(stderr, "weft-demo: profile written to %s\n", g->run.profile_path);
  weft_debug_exit(g->W, rc);
  session_close(g);
  if (g->run.test.id) weft_task_drop(g->W, g->run.test);
  savegame_close(g);
  int leaked = weft_close(g->W); /* cleanups may still use the world */
  if (leaked) fprintf(stderr, "weft-demo: weft_close reports %d leaked object(s)\n", leaked);
  world_free(&g->w);
  close_video(g);
  replay_meta_free(&r->meta);
  return rc;
}

#ifdef __EMSCRIPTEN__
/* In a page the browser owns the loop: each of its animation frames is
   one pass (emscripten_set_main_loop; with -sASYNCIFY instead, the loop
   below yields to the browser once a pass). F7 starts the run again in
   the same page. */
#include <emscripten.h>

/* The playground's save (demo/web/playground.js): the page has written
   scripts/RELPATH into the page's files; this reloads it through weft's
   own path, between two frames. Returns weft_reload_file's code; a
   failure was reported (stderr, which the page shows, and the error
   panel name its file:line). */
int web_reload(const char *relpath);
EMSCRIPTEN_KEEPALIVE int web_reload(const char *relpath) {
  return G.W ? weft_reload_file(G.W, relpath) : WEFT_ESTATE;
}

/* Pictures shown so far: the page's loading screen waits for the first,
   its tests count them for the frame rate. */
unsigned web_drawn(void);
EMSCRIPTEN_KEEPALIVE unsigned web_drawn(void) { return G.run.drawn; }

static void browser_pass(void *arg) {
  runner *r = arg;
  if (loop_pass(r)) return;
  r->rc = finish(r);
  if (G.rp.restart_to >= 0 && start(r, G.rp.restart_to) == 0) return;
  emscripten_cancel_main_loop();
  emscripten_force_exit(r->rc);
}
#endif

int main(int argc, char **argv) {
  static runner run; /* a pass of the browser's loop reads it after main returned */
  runner *r = &run;
  int rc = parse(argc, argv, &r->o);
  if (rc) return rc < 0 ? 1 : 0;
  if ((r->o.beat || r->o.from) && !r->o.play) {
    fprintf(stderr, "weft-demo: --beat and --from go with --play MODULE\n");
    return 1;
  }
  if (r->o.load && (r->o.record || r->o.replay || r->o.play || r->o.script)) {
    fprintf(stderr, "weft-demo: --load goes on from the save: not with --record, --replay, "
                    "--play or --script (a test script saved goes on in it)\n");
    return 1;
  }
  if ((r->o.verify || r->o.go_to >= 0) && !r->o.replay) {
    fprintf(stderr, "weft-demo: --verify and --goto go with --replay FILE\n");
    return 1;
  }
  r->given = r->o;
  long go_to = r->o.go_to;
#if defined(__EMSCRIPTEN__) && !defined(WEFT_WEB_ASYNCIFY)
  if (!r->o.headless) {
    if (start(r, go_to) != 0) return r->rc;
    emscripten_set_main_loop_arg(browser_pass, r, 0, 1); /* does not return */
  }
#endif
  for (;;) {
    if (start(r, go_to) != 0) return r->rc;
    while (loop_pass(r)) {
#if defined(__EMSCRIPTEN__) && defined(WEFT_WEB_ASYNCIFY)
      if (!r->o.headless) emscripten_sleep(0); /* the browser draws and takes input */
#endif
    }
    rc = finish(r);
    /* F7 in a replay: the run again from the start, in this process, up
       to five seconds before where it was */
    if (G.rp.restart_to < 0) return rc;
    go_to = G.rp.restart_to;
  }
}
