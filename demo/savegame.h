/* Quicksave, quickload and rewind. Between two frames the running game
   is saved whole: the scripts' world (weft_save: every task mid-wait,
   groups, timers, signals, futures, modules, math.random) and beside it
   the demo's own (snapshot.h: the world of world.c, the loading screen,
   the modes, the boot task). F9 writes it to the quicksave file, F10
   loads it back into a fresh state (the one running is closed once the
   new one has loaded: a load that fails leaves the game as it was), and
   weft-demo --load FILE starts a new process from it. A save is also put
   into a ring in memory every second; Backspace goes back 5 seconds
   through it. A save or load that cannot be made says why in the error
   panel and the game goes on. */
#ifndef DEMO_SAVEGAME_H
#define DEMO_SAVEGAME_H

#include "game.h"

/* What a key asks for (g->sv.asked). */
enum { SAVE_QUICK = 1, SAVE_LOAD, SAVE_REWIND };

#define SAVE_RING 32               /* saves the rewind ring keeps: the last 32 seconds */
#define SAVE_EVERY 60              /* frames between two of them */
#define REWIND_FRAMES 300          /* how far Backspace goes back: 5 s of frames */
#define SAVE_FILE "weft-demo.save" /* the quicksave file when none is given */

/* Between two frames (after one's step): does what a key asked for and,
   every SAVE_EVERY frames, puts a save into the rewind ring (its cost
   is added to that frame in the F2 graph). */
void savegame_frame(game *g);
/* weft-demo --load FILE: the game of that save, into the state just
   opened (g->W has run nothing). 0, or -1 after saying why on stderr. */
int savegame_start(game *g, const char *path);
/* Frees the rewind ring. */
void savegame_close(game *g);

#endif
