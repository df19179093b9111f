/* The limits a state runs under (desc.c): weft_open's defaults, and
   the rule a replay follows for a recording's limits. */
#ifndef WEFT_DESC_H
#define WEFT_DESC_H

#include "../weft.h"

/* Fills the zero fields of d that weft_open defaults (memory, budgets,
   runaway, tasks, the slow-task threshold). */
void weft__desc_defaults(weft_desc *d);

/* The limits that bound what a script may take (memory, a slice's
   instructions, the runaway limit, resumes a frame, live tasks), as
   bits: */
enum {
  WEFT_LIMIT_MEMORY = 1,
  WEFT_LIMIT_BUDGET = 2,
  WEFT_LIMIT_RUNAWAY = 4,
  WEFT_LIMIT_FRAME = 8,
  WEFT_LIMIT_TASKS = 16
};
/* Sets d's limits to rec's (a recording's), each one no looser than d's
   own (its zero fields: the defaults): a recording made under looser
   limits replays under the replaying program's. Returns the limits that
   were looser in rec (WEFT_LIMIT_* bits), 0 when all were taken. */
int weft__desc_no_looser(weft_desc *d, const weft_desc *rec);
/* The WEFT_LIMIT_* bits where have is looser than want (both with
   defaults filled). */
int weft__desc_looser(const weft_desc *have, const weft_desc *want);

#endif
