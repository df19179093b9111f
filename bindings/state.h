/* The state (state.c): what its layout embeds from elsewhere, and the
   frame's warnings. */
#ifndef WEFT_STATE_H
#define WEFT_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "weft.h"

void weft_flush_warnings(weft_state *W);
/* Pushes the results of a task started from C that returned, and
   returns how many; WEFT_ESTATE when it has not returned (running,
   failed, cancelled), WEFT_ESTALE when C does not hold it. */
int weft_kept_results(weft_state *W, uint64_t id);

/* bindings/lua/prelude.lua, embedded at build time (xxd -i). */
extern unsigned char weft_lua_prelude[];
extern unsigned int weft_lua_prelude_len;

#endif
