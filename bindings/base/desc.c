/* The limits a state runs under: weft_open's defaults in one place, and
   how a replay takes a recording's limits. A recording is a file from
   someone else: what it asks for is taken only as far as the replaying
   program would allow its own scripts. */
#include "desc.h"

#define DEFAULT_MEMORY ((size_t)256 << 20)
#define DEFAULT_FRAME 1000000000u /* resumes a frame (host/sched.c's default) */

void weft__desc_defaults(weft_desc *d) {
  if (!d->memory_limit) d->memory_limit = DEFAULT_MEMORY;
  if (!d->instr_budget) d->instr_budget = 1000000;
  if (d->instr_budget != WEFT_BUDGET_OFF && d->instr_budget > 0x7fffffff)
    d->instr_budget = 0x7fffffff; /* lua_sethook takes an int */
  if (!d->time_budget_us) d->time_budget_us = 5000;
  if (!d->frame_time_budget_us) d->frame_time_budget_us = 8000;
  if (!d->runaway_us) d->runaway_us = 1000000;
  if (!d->max_tasks) d->max_tasks = 1000000;
  if (!d->slow_task_us) d->slow_task_us = 4000;
}

/* "Off" is the loosest of all. */
static uint64_t as_bound(uint32_t v) { return v == WEFT_BUDGET_OFF ? UINT64_MAX : v; }

/* A slice may be any length up to the runaway limit's instructions: a
   longer one would look for a runaway only after it. Off: no budget. */
static uint64_t budget_cap(const weft_desc *d) {
  if (d->instr_budget == WEFT_BUDGET_OFF) return UINT64_MAX;
  uint64_t runaway = as_bound(d->runaway_us);
  uint64_t cap = runaway == UINT64_MAX ? UINT64_MAX : runaway * WEFT_INSTR_PER_US;
  return cap > d->instr_budget ? cap : d->instr_budget;
}

int weft__desc_looser(const weft_desc *have, const weft_desc *want) {
  int bits = 0;
  if (have->memory_limit > want->memory_limit) bits |= WEFT_LIMIT_MEMORY;
  if (as_bound(have->instr_budget) > budget_cap(want)) bits |= WEFT_LIMIT_BUDGET;
  if (as_bound(have->runaway_us) > as_bound(want->runaway_us)) bits |= WEFT_LIMIT_RUNAWAY;
  uint32_t hf = have->frame_budget ? have->frame_budget : DEFAULT_FRAME;
  uint32_t wf = want->frame_budget ? want->frame_budget : DEFAULT_FRAME;
  if (hf > wf) bits |= WEFT_LIMIT_FRAME;
  if (have->max_tasks > want->max_tasks) bits |= WEFT_LIMIT_TASKS;
  return bits;
}

int weft__desc_no_looser(weft_desc *d, const weft_desc *rec) {
  weft_desc own = *d, r = *rec;
  weft__desc_defaults(&own);
  weft__desc_defaults(&r);
  int bits = weft__desc_looser(&r, &own);
  d->memory_limit = bits & WEFT_LIMIT_MEMORY ? own.memory_limit : r.memory_limit;
  d->instr_budget = bits & WEFT_LIMIT_BUDGET ? own.instr_budget : r.instr_budget;
  d->runaway_us = bits & WEFT_LIMIT_RUNAWAY ? own.runaway_us : r.runaway_us;
  d->frame_budget = bits & WEFT_LIMIT_FRAME ? own.frame_budget : r.frame_budget;
  d->max_tasks = bits & WEFT_LIMIT_TASKS ? own.max_tasks : r.max_tasks;
  return bits;
}
