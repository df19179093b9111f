/* The state's memory (state.c): where the Lua state's blocks come from and
   what it holds, as the state's layout embeds it. */
#ifndef WEFT_STATE_H
#define WEFT_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"

/* Where the Lua state's blocks come from. */
typedef struct weft_blocks {
  const char *name; /* "mimalloc" or "libc" */
  void *(*malloc)(size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
} weft_blocks;

/* The allocator's accounts: what the Lua state holds, and a reserve for
   undoing a failed reload when nothing else can be allocated. */
typedef struct weft_memory {
  weft_blocks blocks;       /* where Lua's blocks come from, fixed at open */
  size_t used, limit, peak; /* bytes the Lua state holds now, may hold, held at most */
  uint64_t allocs;          /* allocations made (Lua and host), ever */
  uint64_t alloc_bytes;     /* bytes those allocations added, ever */
  int in_report;            /* reporting an error: allocation headroom */
  int in_rollback;          /* undoing a failed reload: the reserve may serve */
  char *reserve;            /* memory kept for that */
  size_t reserve_used;      /* ...bytes handed out, from the start */
  uint32_t reserve_live;    /* ...blocks not yet given back */
} weft_memory;

/* The host's allocator: Lua's blocks (mimalloc or libc), counted with
   Lua's allocations; honours desc.fail_alloc. */
void *weft_host_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

void weft_flush_warnings(weft_state *W);

#endif
