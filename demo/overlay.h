/* Developer overlays drawn over the game: the script error panel (message
   with file:line, traceback, spawn sites), the task inspector (F1) showing
   weft.tasks(), and the frame-time graph (F2) with script time per frame. */
#ifndef DEMO_OVERLAY_H
#define DEMO_OVERLAY_H

#include "game.h"

/* Records an error report (strings are copied): who failed (the report's
   "who: " prefix; that entity gets a marker in the world), the module
   whose file raised it and the reload count it belongs to. */
void overlay_error(game *g, const char *msg, const char *trace);
/* A warning line (a slow task) in the same panel, listed before the
   errors: the newest error stays the last. */
void overlay_warning(game *g, const char *msg);
/* weft's SLOW_TASK warning (msg "LABEL: N ms of script time ...", the
   task waiting at file:line) as a warning line naming that line:
   "slow: ears at scripts/ai/x.lua:24: 14.2 ms ...". */
void overlay_slow(game *g, const char *msg, const char *file, unsigned line);
/* weft's TASK_GROWTH warning ("412 live tasks spawned at x.lua:30 and
   growing ...") as a warning line of its own kind ("Tasks pile up"). */
void overlay_growth(game *g, const char *msg);
/* A save or a load that could not be made (msg: why) as the panel's
   newest line, amber, titled "Not saved" or "Not loaded" (load != 0):
   the game goes on as it was. */
void overlay_save_failed(game *g, const char *msg, int load);
/* Every half second while slow-task warnings show: drops each whose
   task's script time a frame has dropped under half the threshold on
   average (its fix saved, or the work lighter), or which ended. */
void overlay_settle_slow(game *g);
/* Drops the reports a clean reload answered: those of `module` from
   before reload `epoch` (module NULL: the ones whose file was broken and
   is not in `broken`, a list of module names, any more). */
void overlay_errors_fixed(game *g, const char *module, uint32_t epoch);
void overlay_errors_unbroken(game *g, const char *const *broken, int nbroken);
/* The module name of a script path ("scripts/ai/patrol.lua" ->
   "ai.patrol"), into out; "" when it is not a .lua under scripts/. */
void overlay_module_of(game *g, const char *path, size_t len, char *out, size_t cap);
/* Records one frame's total and script milliseconds. */
void overlay_record(game *g, float frame_ms, float script_ms);
/* F2 turned the frame graph on (it reads the tasks at once). */
void overlay_graph_on(game *g);
/* Adds drawing time to the last recorded frame. */
void overlay_add_draw(game *g, float draw_ms);
/* Draws the overlays that are on. */
void overlay_draw(game *g);

#endif
