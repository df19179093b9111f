/* Assets for the demo, loaded through weft's job pool: a script calls
   load_image("tiles.png") or load_level("castle.level") and gets a future.
   A worker thread decodes the PNG (or reads and parses the level), and the
   main thread uploads the texture (or keeps the parsed level) when the job
   finishes, then resolves the future. */
#ifndef DEMO_ASSETS_H
#define DEMO_ASSETS_H

#include "game.h"

/* Registers the "image" and "level" job kinds and the script functions
   load_image(name) and load_level(name) in the API table on top of g->L. */
void assets_open(game *g);
/* The texture of a loaded image, or NULL while it is not loaded. */
image *assets_get(game *g, const char *name);
/* Loads image `name` (a file under assets/) at once, on this thread,
   unless it is loaded: what a save loaded in a new process needs drawn.
   0, or -1 with the reason in err (n bytes). */
int assets_load_now(game *g, const char *name, char *err, size_t n);
/* Takes the level parsed by the last load_level (caller owns it, frees it
   with level_free and free), or NULL. */
level *assets_take_level(game *g);
/* Destroys every texture and a level not taken. */
void assets_close(game *g);

#endif
