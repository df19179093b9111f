/* Input and test hooks for scripts (lock_input, key_pressed, tap, hold,
   errors, overlay_shown, screenshot, game_state, loading), the keyboard
   and the game loop's per-frame chores. */
#ifndef DEMO_CONTROL_H
#define DEMO_CONTROL_H

#include "game.h"

/* Adds the functions above to the script API (after verbs_open). */
void control_open(game *g);
/* A key goes down (down != 0) or up, from the keyboard or a test script. */
void game_key(game *g, SDL_Scancode sc, int down);
/* A key went down: fires its key_pressed() signal, if a script made one. */
void control_key(game *g, SDL_Scancode sc);
/* Once a frame: releases keys held by tap() and hold() whose time is up. */
void control_frame(game *g);
/* Once a frame: after a hot reload, names the modules that changed in
   g->ov.toast. */
void control_check_reload(game *g);
/* Takes the window's events: keys (recorded when recording; the
   viewer's when replaying), quit (the window closed, Ctrl-Q), focus. */
void control_poll(game *g);
/* Replaying: applies the keys recorded before the frame about to run. */
void control_replay_input(game *g);
/* Once a frame: the player's walking direction from the keys held (none
   while input is locked, paused or loading). */
void control_move(game *g);
/* Applies g->modes.paused and g->modes.time_scale to the game group. */
void control_apply_speed(game *g);

#endif
