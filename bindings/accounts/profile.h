/* A profile on demand (profile.c): every resume as a slice (timed by
   the real clock once a watchdog tick, the resumes between two reads
   placed in order between them), frames, wake-ups (waker to woken) and
   the Lua stacks the watchdog samples each tick, written as Chrome's
   Trace Event JSON and as speedscope's JSON when it stops. */
#ifndef WEFT_PROFILE_H
#define WEFT_PROFILE_H

#include "../base/internal.h"

/* Around each task resume while a profile is on (cost.h). */
void weft__profile_begin(weft_state *W);
void weft__profile_end(weft_state *W, weft_id id);
/* A resume ended task id (it did not yield): its name is kept now, as
   it is gone by the time the profile is written. */
void weft__profile_ended(weft_state *W, weft_id id);
/* At a frame's start and end. */
void weft__profile_frame(weft_state *W, int end);
/* From the count hook when the watchdog asked for a sample: the stack of
   L (and of the task's thread under it). None while a debugger holds
   the scripts (W->holding). */
void weft__profile_sample(weft_state *W, lua_State *L);
/* A debugger held the scripts stopped for cpu_ns of the thread's
   processor time: no sample is given it. */
void weft__profile_held(weft_state *W, uint64_t cpu_ns);
/* weft_close: a profile still on is written and freed. */
void weft__profile_free(weft_state *W);

#endif
