/* The camera and screen verbs for scripts (pan_camera, follow_camera,
   shake_camera, zoom_camera, fade, fade_in, fade_out, ambient, banner, objective,
   clear_speech). */
#ifndef DEMO_SCREEN_H
#define DEMO_SCREEN_H

#include "game.h"

/* Adds them to the script API table on top of g->L (after verbs_open). */
void screen_open(game *g);

#endif
