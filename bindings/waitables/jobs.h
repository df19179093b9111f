/* Jobs for scripts (jobs.c): work run on the host's pool, delivered as
   futures. */
#ifndef WEFT_BINDINGS_JOBS_H
#define WEFT_BINDINGS_JOBS_H

#include "../base/internal.h"

void weft__open_jobs(weft_state *W, lua_State *L);
void weft__poll_jobs(weft_state *W);
void weft__stop_jobs(weft_state *W);
/* Jobs asked for and not yet delivered (on the pool, or held by a replay). */
uint32_t weft__jobs_waiting(const weft_state *W);

#endif
