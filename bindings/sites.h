/* Interned spawn-site chains (sites.c): where each task was spawned, and
   where its spawner was. */
#ifndef WEFT_SITES_H
#define WEFT_SITES_H

#include <stdint.h>

#include "weft.h"

struct sites;

struct sites *weft_sites_new(weft_state *W);
void weft_sites_free(weft_state *W, struct sites *st);
/* The chain for a spawn at (src, line) below parent chain; src is the
   short source, source the address of Lua's full source string (a cache
   key only). */
uint32_t weft_site_intern(struct sites *st, const char *source, const char *src, int line,
                          uint32_t parent);
const char *weft_site_where(struct sites *st, uint32_t site);
uint32_t weft_site_parent(struct sites *st, uint32_t site);

#endif
