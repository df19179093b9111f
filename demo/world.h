/* The game world in C: tiles, doors, entities and their timed actions
   (walking, turning, animations, speech), vision, the camera, fades and
   dialogue. Plain C, no SDL, no Lua: every action that takes time carries
   the id of a weft future, and the world reports its completion as an
   event that the bindings (verbs.c) turn into weft_future_resolve or _fail. */
#ifndef DEMO_WORLD_H
#define DEMO_WORLD_H

#include <stdint.h>

#include "level.h"

#define TILE 16 /* world units per tile */
#define WORLD_MAX_ENTS 64
#define WORLD_MAX_PATH 256
#define WORLD_MAX_EVENTS 512
#define WORLD_MAX_CLOCKS 32

/* Sprite rows in characters.png. */
enum { KIND_HERO, KIND_GUARD, KIND_CAPTAIN, KIND_SAGE, KIND_COUNT };

enum { ANIM_NONE, ANIM_WAVE, ANIM_JUMP, ANIM_SHAKE, ANIM_SPIN, ANIM_NOD, ANIM_SLEEP };

enum { MOOD_CALM, MOOD_SUSPICIOUS, MOOD_ALERT };

/* What the bindings must do after an update. */
enum {
  EV_RESOLVE, /* resolve future `fut` with `value` (a string) */
  EV_FAIL,    /* fail future `fut` with the message `value` */
  EV_SAW,     /* entity `ent` began to see the player */
  EV_LOST,    /* entity `ent` stopped seeing the player */
  EV_ZONE_IN, /* the player entered zone `zone` */
  EV_ZONE_OUT /* the player left zone `zone` */
};

typedef struct world_event {
  int kind;
  uint64_t fut; /* weft future id for EV_RESOLVE / EV_FAIL */
  int ent;      /* entity index, or -1 */
  int zone;     /* zone index, or -1 */
  char value[64];
} world_event;

typedef struct entity {
  uint32_t gen; /* bumped on spawn and destroy; odd while live */
  char name[LEVEL_NAME];
  char title[LEVEL_NAME];                    /* shown in dialogue boxes */
  int portrait;                              /* the KIND_* whose face the dialogue box shows */
  uint8_t tint[3];                           /* that face's colour: 255 each unchanged */
  int kind;                                  /* KIND_* */
  float x, y;                                /* feet position, world units */
  float facing;                              /* degrees: 0 right, 90 down */
  float face_to;                             /* facing being turned to */
  int move_clk, face_clk, anim_clk, say_clk; /* the clock each timed action runs on */
  uint64_t face_f;                           /* pending face() future, 0 none */
  float path[WORLD_MAX_PATH][2];
  int npath, ipath; /* waypoints left: path[ipath .. npath-1] */
  float speed;      /* units per second while walking */
  uint64_t move_f;  /* pending move_to() future */
  int anim;         /* ANIM_* playing */
  float anim_t, anim_len;
  uint64_t anim_f;
  char bubble[128]; /* speech balloon text, "" for none */
  float bubble_t;   /* seconds left */
  uint64_t bubble_f;
  int vision;              /* has a vision cone */
  float range, half_angle; /* cone: units, degrees */
  int seeing;              /* saw the player last update */
  int mood;                /* MOOD_*: colours the cone */
  float walk_t;            /* walk cycle clock */
  int walking;             /* moved this update */
  int solid;               /* blocks the player (NPCs) */
  int script_error;        /* a script of its group failed: marked in the world */
  int cast;                /* in the cinematic playing: 0 not, 1 its group paused for it,
                              2 left alone (released, or its group was not ours to pause) */
  float alpha;             /* 0 invisible .. 1 opaque (e:alpha) */
} entity;

typedef struct world_door {
  char name[LEVEL_NAME];
  int x, y;
  int open;   /* 1 once fully open */
  float t;    /* 0 closed .. 1 open, animated */
  int target; /* where t is going */
  uint64_t f; /* pending open/close future */
} world_door;

/* A value of 1 to 3 floats moving from where it was to `to` over `dur`
   seconds of one clock (the starting group's), eased or straight; `f`,
   the future settled "done" when it arrives ("interrupted" when another
   move starts first). */
typedef struct ramp {
  float from[3], to[3], t, dur;
  uint64_t f;
  int clk;
} ramp;

typedef struct world {
  level lv; /* owned once world_load succeeds */
  int loaded;
  uint8_t *blocked; /* per cell: 1 solid (cached from tiles and doors) */
  world_door doors[LEVEL_MAX_ITEMS];
  int ndoors;
  entity ents[WORLD_MAX_ENTS];
  int player; /* index of the player entity, -1 none */
  /* The clocks timed actions run on. Clock 0 is the world's own: the dt
     of world_update (the player's walking, doors, the camera following).
     The others belong to whoever started an action (a key: a script's
     group); their caller sets each one's dt before world_update. */
  struct {
    uint64_t key; /* 0: free */
    float dt;
  } clocks[WORLD_MAX_CLOCKS];
  int clock;   /* the clock actions started now run on (world_use_clock) */
  double time; /* world seconds (scaled, stops when paused) */
  uint32_t rng;
  int unnamed; /* entities spawned without a name so far: the next is "guard<unnamed + 1>" */
  /* camera, world units of the view centre */
  float cam_x, cam_y;
  float view_w, view_h; /* size of the view in world units (set by the renderer) */
  int cam_follow;       /* entity index followed, -1 none */
  struct {
    int active;
    float fx, fy, tx, ty; /* from, to (to is re-read from target_ent) */
    int target_ent;       /* -1: a fixed point */
    float t, dur;
    uint64_t f;
    int clk;
  } pan;
  float shake, shake_t;
  int shake_clk;
  /* camera zoom: 1 as made, 2 shows half as much twice as big */
  float zoom;
  ramp zoom_r;
  /* full-screen fade to black: 0 clear .. 1 black */
  float fade;
  ramp fade_r;
  /* ambient light colour 0..1 */
  float amb[3];
  ramp amb_r;
  /* the dialogue box (one at a time) */
  struct {
    int active;
    int ent;
    char speaker[LEVEL_NAME];
    int portrait;    /* KIND_* face */
    uint8_t tint[3]; /* its colour */
    char text[512];
    float shown;      /* characters revealed */
    float t, timeout; /* seconds shown, seconds before it times out */
    uint64_t f;
    int clk;
  } dlg;
  struct {
    char text[128], sub[160];
    float t, dur;
    uint64_t f;
    int clk;
  } banner;
  char objective[160];
  int input_lock;       /* > 0 while a cinematic holds the input */
  float letterbox;      /* 0..1, follows input_lock */
  float move_x, move_y; /* player input direction, set by the game each frame */
  int zone_in[LEVEL_MAX_ITEMS];
  world_event ev[WORLD_MAX_EVENTS];
  int nev;
} world;

/* Zero-initialised world: empty. */
void world_init(world *w, uint32_t seed);
/* Takes ownership of *lv (leaves it empty) and builds tiles and doors;
   entities are spawned by the caller. */
void world_load(world *w, level *lv);
/* Rebuilds what the world caches from its level's cells and its doors
   (which cells are solid) once its bytes were read back from a save, and
   marks it loaded; -1 when out of memory (then not loaded). */
int world_cache(world *w);
/* Frees the level and caches. Pending futures are dropped (not completed). */
void world_free(world *w);
/* Ends the world before a soft reset: every entity is destroyed (their
   futures fail) and every other pending future resolves to `why`, as
   events for the bindings; world_free and world_init then start anew. */
void world_end(world *w, const char *why);
/* world_free, then world_init, keeping each entity slot's generation: a
   state table of the old world never names an entity of the new. */
void world_renew(world *w, uint32_t seed);

int world_solid(const world *w, int tx, int ty);
/* Changes a map cell (not to or from a door). */
void world_set_cell(world *w, int tx, int ty, char c);
int world_opaque(const world *w, int tx, int ty);
/* Line of sight between two points, against opaque tiles. */
int world_line_clear(const world *w, float x0, float y0, float x1, float y1);

/* Entities. Spawn returns the index or -1 when full; world units. */
int world_spawn(world *w, int kind, const char *name, float x, float y, float facing);
entity *world_ent(world *w, int idx); /* live entity or NULL */
int world_find(const world *w, const char *name);
/* Removes an entity; its pending futures fail with "NAME was destroyed". */
void world_destroy(world *w, int idx);
int world_kind(const char *name);       /* KIND_* or -1 */
const char *world_kind_name(int kind);  /* "guard" */
const char *world_kind_title(int kind); /* "Guard": a kind's name in dialogue */

/* The clock the timed actions started from now on run on: the one with
   that key, made when there is none (clock 0, the world's, when key is 0
   or every clock is taken). Returns its index. */
int world_use_clock(world *w, uint64_t key);
/* Frees the clocks no timed action runs on any more. */
void world_sweep_clocks(world *w);

/* Timed actions. Each runs on the clock of world_use_clock, takes the future to complete (0: none)
   and replaces the same action in progress (whose future resolves to "interrupted"). world_move_to
   returns -1 when there is no path (fut untouched). */
int world_move_to(world *w, int idx, float x, float y, float speed, uint64_t fut);
void world_stop(world *w, int idx);
void world_face(world *w, int idx, float deg, uint64_t fut);
void world_anim(world *w, int idx, int anim, float secs, uint64_t fut);
/* A dialogue box (box != 0) or a balloon over the head; secs <= 0 picks a
   reading time, infinity waits for the key (a balloon then stays for the
   reading time). */
void world_say(world *w, int idx, const char *text, float secs, int box, uint64_t fut);
void world_pan(world *w, float x, float y, int target_ent, float secs, uint64_t fut);
void world_follow(world *w, int idx);
void world_fade(world *w, float to, float secs, uint64_t fut);
/* Zooms the camera to `to` (>= 1) over secs. */
void world_zoom(world *w, float to, float secs, uint64_t fut);
void world_ambient(world *w, const float rgb[3], float secs, uint64_t fut);
void world_banner(world *w, const char *text, const char *sub, float secs, uint64_t fut);
int world_door_find(const world *w, const char *name);
void world_door_set(world *w, int door, int open, uint64_t fut);
/* Resolves the dialogue box and every balloon with "skipped". */
void world_clear_speech(world *w);
/* The key that advances dialogue: reveals the line, then resolves it. */
void world_advance(world *w);

int world_can_see(const world *w, int idx, float x, float y);
float world_dist(const world *w, int a, float x, float y);

/* Who sees the player now: emits EV_SAW / EV_LOST for the changes (part
   of world_update; call it too after moving someone between updates, so
   a guard's saw_player agrees with can_see at once). */
void world_update_vision(world *w);
/* One update of dt world seconds (0 while paused: only visuals move). */
void world_update(world *w, float dt);
/* Random number in [0, 1) from the world's seeded generator. */
float world_rand(world *w);

/* Appends an event (dropped when the queue is full). */
void world_emit(world *w, int kind, uint64_t fut, int ent, int zone, const char *value);

#endif
