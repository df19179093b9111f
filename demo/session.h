/* The boot script and soft reset. scripts/main.lua runs as a task in
   the game group, so everything it starts (brains, zones, cinematics)
   lives under that group; a soft reset (Ctrl-R, reset() in the console,
   or by itself when a save fixes a boot that failed) cancels the group,
   ends the world and runs the boot script again on the scripts as they
   are now, in the same weft state: the debugger stays attached, a
   recording goes on. */
#ifndef DEMO_SESSION_H
#define DEMO_SESSION_H

#include "game.h"

/* Adds reset([beat]) to the API table on top of g->L. */
void session_open(game *g);
/* A new game's groups: game (paused and slowed by P and T) > world (the
   entities') and game > cutscenes, in the API as `groups`. Not for a
   game loaded from a save, which holds its own. */
void session_new_game(game *g);
/* Starts scripts/main.lua as a task in the game group. A file that does
   not load leaves the boot dead (reported in the panel). */
void session_boot(game *g);
/* Asks for a soft reset at the next frame's start, then runs unseen to
   beat (NULL or "": none). record: keep it in the recording (a key or a
   save asked; a script's reset() is replayed with its script). */
void session_reset(game *g, const char *beat, int record);
/* At a frame's start: notes a boot that failed; while it is dead, a
   save that leaves no file broken asks for a reset (not in a replay:
   the recording holds it); does a reset asked for. */
void session_frame(game *g);
/* Drops the boot task's reference (before weft_close). */
void session_close(game *g);

#endif
