/* Record and replay (tape.c), as the rest of the bindings see it: each
   place that reads the outside world asks the tape first. W->tape is NULL
   in a plain run, so every call below sits behind `if (W->tape)`. */
#ifndef WEFT_TAPE_H
#define WEFT_TAPE_H

#include "../base/internal.h"

/* Replaying (not recording); 0 for a plain run. */
int weft__tape_replaying(const weft_state *W);

/* A frame begins: returns the dt to run it with (the recorded one when
   replaying). */
double weft__tape_step_begin(weft_state *W, double dt);
/* A frame ended: hashes the state and writes (or checks) the frame. */
void weft__tape_step_end(weft_state *W);

/* A script file is read (weft__load_script): pushes its text and returns
   1, or pushes the error message and returns 0, reading through the tape
   (recording what the disk gave, or giving back what was recorded). */
int weft__tape_read_file(weft_state *W, lua_State *L, const char *path,
                         int (*read)(lua_State *L, const char *path));

/* The watcher saw relpath saved (recording). */
void weft__tape_reload(weft_state *W, const char *relpath);
/* Replaying: the next reload this frame had, NULL when none is left. The
   string is valid until the next call. */
const char *weft__tape_next_reload(weft_state *W);

/* A job (numbered seq in the order jobs were asked for) was delivered. */
void weft__tape_job(weft_state *W, uint64_t seq);
/* Replaying: the next job this frame delivered; 0 when none is left. */
int weft__tape_next_job(weft_state *W, uint64_t *seq);

/* Notes the first way a replay parted from its recording (frame, what). */
void weft__tape_diverged(weft_state *W, const char *what);

/* Writes the trailer (recording) and frees the tape; weft_close. */
void weft__tape_free_state(weft_state *W);

/* math.random's state (RNG_BYTES), or NULL when it is not the one
   expected (recordings and saves keep it). */
unsigned char *weft__rng_state(lua_State *L);

#endif
