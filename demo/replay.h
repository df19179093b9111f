/* The demo's part of record and replay: weft records the frames, the
   scripts, jobs and clocks; the demo adds its keyboard input, its seed
   and test script (the recording's meta bytes) and the hash of its world
   and of the entities' Lua state. A windowed replay can be paused,
   stepped and moved through with F5-F8. */
#ifndef DEMO_REPLAY_H
#define DEMO_REPLAY_H

#include "game.h"

/* What the demo keeps in a recording's meta bytes. */
typedef struct replay_meta {
  uint32_t seed;
  char script[1024]; /* the --script test script, "" none */
} replay_meta;

/* Encodes m into buf (n bytes); returns the length, 0 if it does not fit. */
size_t replay_meta_write(const replay_meta *m, unsigned char *buf, size_t n);
/* Decodes a recording's meta bytes; -1 when they are not the demo's. */
int replay_meta_read(replay_meta *m, const void *data, size_t len);

/* A key went down or up (game_key) or the window lost focus (sc 0): kept
   in the frame being recorded. */
void replay_note_key(game *g, SDL_Scancode sc, int down);
/* Replaying: the next key recorded before the frame about to run (sc
   SDL_SCANCODE_UNKNOWN: the window lost focus); 0 when there is none. */
int replay_next_key(game *g, SDL_Scancode *sc, int *down);
/* Folds the world and the entities' Lua state into the frame's hash
   (recording and replaying alike; nothing otherwise). */
void replay_hash(game *g);

/* Replaying in a window: the viewer's keys (F5 pause, F6 one frame, F7
   back 5 s, F8 ahead 5 s). Returns 1 when it took the key. */
int replay_key(game *g, SDL_Scancode sc);

#endif
