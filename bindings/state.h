/* The state (state.c): its allocator, as the rest of the bindings see it
   (its accounts: weft_memory, parts.h). */
#ifndef WEFT_STATE_H
#define WEFT_STATE_H

#include <stddef.h>

#include "weft.h"

/* The host's allocator: Lua's blocks (mimalloc or libc), counted with
   Lua's allocations; honours desc.fail_alloc. */
void *weft_host_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* Reports the Lua warning collected while the frame ran, once complete. */
void weft_flush_warnings(weft_state *W);

#endif
