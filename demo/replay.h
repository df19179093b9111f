/* The demo's part of record and replay: weft records the frames, the
   scripts, jobs and clocks; the demo adds its keyboard input, its seed
   and test script (the recording's meta bytes) and the hash of its world
   and of the entities' Lua state. A windowed replay can be paused,
   stepped and moved through with F5-F8. */
#ifndef DEMO_REPLAY_H
#define DEMO_REPLAY_H

#include "game.h"

#define REPLAY_MAX_LEVELS 8

/* A level file as it was when the session was recorded. */
typedef struct replay_level {
  char name[LEVEL_NAME]; /* the file under assets/, "castle.level" */
  char *text;            /* its bytes, owned */
  size_t len;
} replay_level;

/* What the demo keeps in a recording's meta bytes: its options and the
   level files, so a replay plays the recorded level whatever is on disk. */
typedef struct replay_meta {
  uint32_t seed;
  char script[PATH_LEN]; /* the --script test script, "" none */
  char play[MODULE_LEN]; /* the --play cinematic, "" none */
  char from[MODULE_LEN]; /* --from's world state, "" none */
  replay_level levels[REPLAY_MAX_LEVELS];
  int nlevels;
} replay_meta;

/* Reads every *.level file of dir into m->levels (up to
   REPLAY_MAX_LEVELS); -1 when one cannot be read (said on stderr). */
int replay_meta_add_levels(replay_meta *m, const char *dir);
/* Encodes m into a new buffer (free it) of *len bytes; NULL when out of
   memory. */
unsigned char *replay_meta_write(const replay_meta *m, size_t *len);
/* Decodes a recording's meta bytes into m (free it with
   replay_meta_free); -1 when they are not the demo's. */
int replay_meta_read(replay_meta *m, const void *data, size_t len);
void replay_meta_free(replay_meta *m);
/* Replaying: the recorded text of level file `name`, NULL when the
   recording has none (an older one): then it comes from the disk. */
const replay_level *replay_level_of(const game *g, const char *name);

/* What the game's input holds for a frame in a recording: a key, a line
   run in the console, a soft reset (Ctrl-R, or a save that fixed a dead
   boot). */
enum { REPLAY_KEY, REPLAY_LINE, REPLAY_RESET };
typedef struct replay_input {
  int kind;               /* REPLAY_* */
  SDL_Scancode key;       /* REPLAY_KEY: the key; SDL_SCANCODE_UNKNOWN: the window lost focus */
  int down;               /* REPLAY_KEY: 1 pressed, 0 released */
  char text[MESSAGE_LEN]; /* REPLAY_LINE: the line; REPLAY_RESET: the beat, "" none */
} replay_input;

/* A key went down or up (game_key) or the window lost focus (sc 0): kept
   in the frame being recorded. */
void replay_note_key(game *g, SDL_Scancode sc, int down);
/* A console line run (REPLAY_LINE) or a reset asked for (REPLAY_RESET,
   text the beat or ""): kept in the frame being recorded. */
void replay_note_text(game *g, int kind, const char *text);
/* Replaying: the next input recorded before the frame about to run; 0
   when there is none. */
int replay_next_input(game *g, replay_input *in);
/* Folds the world and the entities' Lua state into the frame's hash
   (recording and replaying alike; nothing otherwise). */
void replay_hash(game *g);

/* Replaying in a window: the viewer's keys (F5 pause, F6 one frame, F7
   back 5 s, F8 ahead 5 s). Returns 1 when it took the key. */
int replay_key(game *g, SDL_Scancode sc);

#endif
