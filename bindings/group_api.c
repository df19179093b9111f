/* Groups seen from C: the group of the task that called into C, its
   clock and how fast that clock runs, so a game's own timed actions can
   follow the script time of whoever started them. */
#include "internal.h"

weft_group weft_current_group(weft_state *W) {
  weft_id g = W->cur ? weft_task_group(W->S, W->cur) : 0;
  return (weft_group){g ? g : weft_sched_root(W->S)};
}

double weft_group_time(weft_state *W, weft_group g) {
  if (!weft_group_live(W->S, g.id)) return -1.0;
  return weft_group_now(W->S, g.id);
}

double weft_group_rate(weft_state *W, weft_group g) {
  if (!weft_group_live(W->S, g.id)) return -1.0;
  if (weft_group_paused(W->S, g.id)) return 0.0; /* itself or an ancestor */
  double rate = 1.0;
  for (weft_id id = g.id; id; id = weft_group_parent(W->S, id)) rate *= weft_group_scale(W->S, id);
  return rate;
}
