/* The demo game's state shared by its modules: the weft state, the world,
   the renderer and its resources, input, overlays and run options. One
   game per process; main.c owns it. */
#ifndef DEMO_GAME_H
#define DEMO_GAME_H

#include <stdint.h>

#include <SDL.h>

#include <weft.h>

#include "text.h"
#include "world.h"

#define SCREEN_W 1280
#define SCREEN_H 720
#define SCALE 3              /* screen pixels per world unit */
#define STEP_DT (1.0 / 60.0) /* the fixed frame step */
#define MAX_IMAGES 16
#define MAX_ERRORS 6
#define GRAPH_N 240
#define TASK_LINES 64 /* inspector lines kept for overlay_text() */
#define MAX_HOLDS 16
#define CONSOLE_OUT 14     /* lines of output the console shows */
#define CONSOLE_KEEP 300   /* lines its scrollback keeps (PgUp/PgDn) */
#define CONSOLE_COLS 150   /* characters a scrollback line holds: longer ones wrap */
#define CONSOLE_TASKS 16   /* lines running at once whose end the console awaits */
#define CONSOLE_HISTORY 32 /* lines it remembers for Up/Down */
#define VERB_SITES 256     /* futures whose verb's call site is remembered */

/* Buffer sizes, in bytes with the terminating 0. */
#define PATH_LEN 1024            /* a path given on the command line (--root, a screenshot) */
#define DIR_LEN (PATH_LEN + 16)  /* the root with "/scripts" or "/assets" */
#define FILE_LEN (DIR_LEN + 256) /* a file under scripts/ or assets/ */
#define MODULE_LEN 96            /* a module's name, "cinematics.intro" */
#define MESSAGE_LEN 512          /* one message: an error, a line of dialogue */

typedef struct image {
  char name[64];    /* file name under assets/ */
  SDL_Texture *tex; /* owned */
  int w, h;
} image;

typedef struct error_note {
  char msg[MESSAGE_LEN];   /* the error, "gate_guard: scripts/x.lua:12: ..." */
  char trace[2048];        /* traceback and spawn sites */
  char who[64];            /* who failed (the entity), "" if the report names nobody */
  char module[MODULE_LEN]; /* the module whose file raised it ("ai.patrol"), "" if none */
  uint32_t epoch;          /* weft_reload_count when reported */
  int was_broken;          /* its file was listed by weft.reload_errors() */
  double at;               /* realtime seconds when reported */
  int repeats;             /* same message reported again */
  int warning;             /* a warning, not an error: 1 a slow task, 2 tasks piling up,
                              3 a save not made, 4 a load not made */
  char task[160];          /* a slow task's label ("ears scripts/ai/x.lua:20"), "" none */
} error_note;

typedef struct key_hold {
  SDL_Scancode key;
  int frames;   /* frames left before release */
  uint64_t fut; /* resolved on release */
} key_hold;

/* The game's state, grouped by what changes together. */
typedef struct game {
  weft_state *W;
  lua_State *L; /* weft_lua(W) */
  world w;
  struct {                /* the window or off-screen surface and what draws into it */
    SDL_Window *win;      /* NULL when headless */
    SDL_Surface *surface; /* headless render target, owned */
    SDL_Renderer *r;
    SDL_Texture *light; /* light map render target */
    SDL_Texture *scene; /* the world drawn before a camera zoom scales it up */
    SDL_Texture *glow;  /* radial gradient for lights */
    font *f_ui, *f_bold, *f_title, *f_small, *f_mono;
    char *base; /* per cell: floor drawn under objects; owned */
  } video;
  struct { /* what the background loads bring in (assets.c) */
    image images[MAX_IMAGES];
    int nimages;
    level *parsed; /* a level parsed by the "level" job, not built yet; owned */
  } assets;
  struct {       /* Lua values the demo keeps (registry references) */
    int ents;    /* [entity index] = state table */
    int ent_mt;  /* metatable of entity state tables */
    int zones;   /* [zone index + 1] = zone table */
    int keys;    /* [scancode] = signal fired on press */
    int groups;  /* {game=, world=, cutscenes=} */
    int finally; /* the script API's finally */
  } refs;
  struct {  /* the loading screen */
    int on; /* shown while nonzero */
    float frac, shown;
    char label[96];
  } load;
  struct { /* the console (console.c) */
    int open;
    char line[MESSAGE_LEN / 2];               /* being typed */
    char out[CONSOLE_KEEP][CONSOLE_COLS + 1]; /* the scrollback, oldest first */
    uint8_t kind[CONSOLE_KEEP];               /* each line's CONSOLE_* kind (console.h) */
    int nout;
    int scroll;                       /* lines back from the newest the view ends at (PgUp/PgDn) */
    weft_task running[CONSOLE_TASKS]; /* lines' tasks: one a kill ends is told */
    char history[CONSOLE_HISTORY][MESSAGE_LEN / 2];
    int nhistory, browsing; /* browsing: history lines back from the newest, 0 none */
    int env;                /* the lines' shared globals (registry reference) */
  } console;
  struct {                       /* where each pending verb future was asked for, by future id */
    uint64_t fut;                /* 0: free */
    char where[MESSAGE_LEN / 4]; /* "scripts/cinematics/vault.lua:12:" */
  } sites[VERB_SITES];
  struct { /* the keyboard: real keys and test scripts' holds */
    uint8_t held[SDL_NUM_SCANCODES];
    key_hold holds[MAX_HOLDS];
    int scripted; /* the keys come from a test script (tap, hold...): a replay plays it again */
  } input;
  struct { /* what the player switched on */
    int paused;
    double time_scale;
    int show_tasks, show_graph;
    int tasks_from;   /* the first task the inspector lists (PgUp/PgDn) */
    int by_site;      /* the inspector lists spawn sites with their counts (G) */
    weft_group group; /* the game group, which the two above pause and slow */
  } modes;
  struct { /* the developer overlays (overlay.c) */
    error_note errors[MAX_ERRORS];
    int nerrors;
    uint32_t errors_total;
    float frame_ms[GRAPH_N], script_ms[GRAPH_N];
    float top_ms[GRAPH_N][3];     /* the three costliest tasks of each frame (F2)... */
    uint32_t top_hue[GRAPH_N][3]; /* ...each coloured by a hash of its name */
    char top_name[3][48];         /* ...the last frame's, for the legend */
    int live_tasks;               /* live tasks as weft.tasks counts them (F1's count too) */
    int graph_i;
    struct {
      const char *name; /* static: "errors", "tasks", "dialogue", ... */
      SDL_Rect r;
    } drawn[24]; /* the boxes of text the last render_frame drew (overlay_rects()) */
    int ndrawn;
    char task_lines[TASK_LINES][200]; /* the inspector's task lines as last drawn */
    int ntask_lines;
    uint32_t reloads; /* weft_reload_count last seen */
    int versions;     /* module name -> version last seen (registry reference) */
    char toast[200];  /* "reloaded ai.patrol v2", shown a while */
    double toast_at;  /* realtime it appeared */
  } ov;
  struct { /* the run: options, clock, where things are */
    int headless;
    uint32_t seed;
    uint64_t frame;
    unsigned drawn; /* pictures shown in the window */
    double realtime;
    int quit;
    int debug_held;   /* the debugger held the game since the loop last looked */
    int fast_forward; /* --beat: frames run unseen until beat_wanted */
    char beat_wanted[MODULE_LEN];
    char beat[MODULE_LEN];       /* the last beat() passed, "" none */
    char shot_path[PATH_LEN];    /* screenshot requested by F12, "" none */
    char profile_path[PATH_LEN]; /* the profile being taken (--profile's, F3's) */
    char profile_base[PATH_LEN]; /* F3's profiles: BASE-1.json, BASE-2.json, ... */
    int profiles;                /* F3's profiles so far */
    char root[PATH_LEN];         /* directory holding scripts/ and assets/ */
    char scripts_dir[DIR_LEN], assets_dir[DIR_LEN];
    weft_task test; /* --script's task (C holds it; a save keeps it), 0 none */
    weft_desc desc; /* what the state was opened with: a load opens another so */
    int watch;      /* scripts/ is watched (hot reload) */
    int debugging;  /* --debug: a debugger may hold the state */
  } run;
  struct {                 /* the boot script and soft reset (session.c) */
    int task;              /* registry reference to the boot task's handle, LUA_NOREF none */
    int dead;              /* the boot script failed (or did not load): the game stands still */
    char why[MESSAGE_LEN]; /* what stopped it, for the offer on screen */
    uint32_t reloads;      /* weft_reload_count when it died: a clean save after it retries */
    int nbroken;           /* weft.reload_errors() when it died, or last seen */
    long long main_stamp;  /* main.lua's mtime and size when it died: a save of it retries */
    int pending;           /* a reset asked for, done at the next frame's start */
    char beat[MODULE_LEN]; /* ...then run unseen to this beat, "" none */
    int resets;            /* soft resets so far */
  } boot;
  struct {                         /* quicksave, quickload and rewind (savegame.c) */
    int asked;                     /* what a key asked for (SAVE_*), done between two frames */
    char path[PATH_LEN];           /* the quicksave file: F9 writes it, F10 reads it */
    int (*reopen)(struct game *g); /* opens a fresh state as the run's was (main.c); 0 or -1 */
    struct save_slot *ring;        /* the rewind ring: SAVE_RING saves, one a second; owned */
    int nring;                     /* saves in it, the newest at ring[nring - 1] */
    size_t ring_bytes;             /* what they hold */
    double ring_ms;                /* the last save into it took (weft's and the world's) */
    double ring_ms_max;            /* the costliest so far */
    char ring_why[MESSAGE_LEN];    /* why the last one failed, "" when it did not */
    struct {                       /* the last quicksave, quickload or rewind */
      int what;                    /* SAVE_*, 0 none yet */
      int ok;
      uint64_t frame; /* the frame it saved or went back to */
      size_t bytes;
      double ms;
      char why[MESSAGE_LEN]; /* failed: why */
    } last;
  } sv;
  /* record and replay (replay.c) */
  struct {
    int recording;                  /* --record: input and hashes go into the recording */
    int on;                         /* --replay: frames, input and scripts come from it */
    int paused;                     /* a windowed replay stopped by F5 */
    int step_one;                   /* F6: run one frame, then stay paused */
    long jump_to;                   /* run to this frame without drawing (F8, --goto); -1 none */
    long restart_to;                /* F7: start the replay again and run to this frame; -1 none */
    uint64_t frames;                /* in the recording */
    const struct replay_meta *meta; /* what the recording holds besides frames; main.c's */
  } rp;
} game;

#endif
