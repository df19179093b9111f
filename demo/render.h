/* Drawing the demo: the tile level, characters, lights and vision cones,
   speech, dialogue, HUD and the loading screen. Overlays (errors, task
   inspector, frame graph) are overlay.c's. */
#ifndef DEMO_RENDER_H
#define DEMO_RENDER_H

#include "game.h"

/* Creates the light map and glow textures for g->r. Returns 0 or -1. */
int render_open(game *g);
void render_close(game *g);
/* Draws one frame into the renderer's target (not presented). */
void render_frame(game *g);

#endif
