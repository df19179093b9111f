/* Drawing the demo: the tile level, characters, lights and vision cones,
   speech, dialogue, HUD and the loading screen, and screenshots.
   Overlays (errors, task inspector, frame graph) are overlay.c's, drawn
   after render_frame by whoever draws the frame. */
#ifndef DEMO_RENDER_H
#define DEMO_RENDER_H

#include "game.h"

/* Creates the light map and glow textures for g->video.r. Returns 0 or -1. */
int render_open(game *g);
void render_close(game *g);
/* Drops what was drawn from the level (a soft reset builds another). */
void render_forget_level(game *g);
/* Draws one frame into the renderer's target (not presented), without
   the overlays. */
void render_frame(game *g);
/* Writes what the renderer last drew as a PNG, making its directory if
   need be; 0 or -1 (said on stderr). */
int render_save_png(game *g, const char *path);
/* The lowest screen y the overlays may use: above the dialogue box when
   one is open, else above the letterbox or the line of key hints. */
int render_free_bottom(const game *g);
/* The height of the offer to reset shown while the boot script is dead
   (overlay.c draws it above the key line). */
#define BOOT_OFFER_H 112
/* The line of key hints at the bottom (the game's, or a replay
   viewer's), into out. */
#define KEY_HINTS_LEN 256
void render_key_hints(const game *g, char *out, size_t n);
/* Notes a box of text drawn this frame (for overlay_rects()). */
void render_note(game *g, const char *name, SDL_Rect r);

#endif
