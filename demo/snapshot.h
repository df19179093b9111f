/* The demo's own state beside a weft save (savegame.h): the world of
   world.c with its level's cells, a level parsed and not built yet, the
   images loaded, and what game.h keeps of the scripts' run (registry
   references, the loading screen, pause and slow motion, the boot task,
   the --script task, keys held by test scripts, verbs' call sites, the
   frame count). As bytes without an address in them, read back only by
   the build that wrote them; every count, index and string is checked
   on the way in (a save is someone else's file). */
#ifndef DEMO_SNAPSHOT_H
#define DEMO_SNAPSHOT_H

#include "game.h"

typedef struct snapshot snapshot;

/* g's state as bytes, in a new buffer of *n bytes (the caller frees
   it); NULL when out of memory. */
unsigned char *snapshot_write(const game *g, size_t *n);
/* Reads n bytes at p (snapshot_write's) into a new snapshot; NULL with
   the reason in why (whyn bytes) when they are not one: another build's,
   cut short, out of range, or out of memory. */
snapshot *snapshot_read(const void *p, size_t n, char *why, size_t whyn);
/* Whether the registry references s holds name, in L (the state loaded
   from the weft save beside it), what the demo keeps there: its tables,
   the groups, the finally function. 0, or -1 with the reason in why. */
int snapshot_check(const snapshot *s, lua_State *L, char *why, size_t whyn);
/* Puts s into g and frees it: g->w, empty (world_init'd), becomes its
   world, the level parsed and the parts of game.h it holds are set, and
   the images it names are loaded from assets/ when they are not there
   (a failure is said on stderr and drawn without). */
void snapshot_apply(snapshot *s, game *g);
void snapshot_free(snapshot *s);

#endif
