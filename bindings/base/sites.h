/* Interned spawn-site chains (sites.c): where each task was spawned, and
   where its spawner was. */
#ifndef WEFT_SITES_H
#define WEFT_SITES_H

#include <stdint.h>

#include "../weft.h"
#include "../../host/wire.h"

struct sites;

struct sites *weft__sites_new(weft_state *W);
void weft__sites_free(weft_state *W, struct sites *st);
/* The chain for a spawn at (src, line) below parent chain; src is the
   short source, source the address of Lua's full source string (a cache
   key only). */
uint32_t weft__site_intern(struct sites *st, const char *source, const char *src, int line,
                           uint32_t parent);
const char *weft__site_where(struct sites *st, uint32_t site);
/* A task spawned at site began (delta 1) or ended (-1); now is the
   state's real time in seconds. A site whose live tasks grew in every
   GROW_STEP of GROW_SAMPLES - 1 steps, by GROW_MIN or more in all, is
   named once in a TASK_GROWTH warning (a helper that spawns a task a
   frame and never ends them). O(1). */
void weft__site_live(struct sites *st, uint32_t site, int delta, double now);
uint32_t weft__site_parent(struct sites *st, uint32_t site);
/* Sites interned so far (numbered 1 .. n); a site's live tasks, and
   whether it was named as growing. */
uint32_t weft__site_count(struct sites *st);
uint32_t weft__site_live_of(struct sites *st, uint32_t site);
int weft__site_grew(struct sites *st, uint32_t site);

/* Saving (see weft_save): every chain, its text, its live count and its
   growth samples; the lookup cache starts empty. 0 when the stream
   fails or (loading into st, fresh) the save is refused. */
int weft__sites_save(struct sites *st, weft_wire *w);
int weft__sites_load(struct sites *st, weft_wire *w);

#endif
