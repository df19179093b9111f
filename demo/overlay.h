/* Developer overlays drawn over the game: the script error panel (message
   with file:line, traceback, spawn sites), the task inspector (F1) showing
   weft.tasks(), and the frame-time graph (F2) with script time per frame. */
#ifndef DEMO_OVERLAY_H
#define DEMO_OVERLAY_H

#include "game.h"

/* Records an error report (strings are copied). */
void overlay_error(game *g, const char *msg, const char *trace);
/* Records one frame's total and script milliseconds. */
void overlay_record(game *g, float frame_ms, float script_ms);
/* Adds drawing time to the last recorded frame. */
void overlay_add_draw(game *g, float draw_ms);
/* Draws the overlays that are on. */
void overlay_draw(game *g);

#endif
