/* Every byte weft takes, through the embedder's allocator (desc.alloc):
   Lua's heap under the memory limit, and the host's own blocks. */
#ifndef WEFT_MEM_H
#define WEFT_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "../weft.h"

/* The allocator's accounts: what the Lua state holds, and a reserve for
   undoing a failed reload when nothing else can be allocated. */
typedef struct weft_memory {
  weft_alloc_fn alloc;      /* the embedder's allocator (never NULL once open) */
  void *ud;                 /* ...its user data */
  size_t used, limit, peak; /* bytes the Lua state holds now, may hold, held at most */
  size_t host;              /* bytes the host's own blocks hold now */
  uint64_t allocs;          /* allocations made (Lua and host), ever */
  uint64_t alloc_bytes;     /* bytes those allocations added, ever */
  int in_report;            /* reporting an error: allocation headroom */
  int in_rollback;          /* undoing a failed reload: the reserve may serve */
  int gc_stopped;           /* a script stopped the collector (collectgarbage "stop") */
  char *reserve;            /* memory kept for that */
  size_t reserve_used;      /* ...bytes handed out, from the start */
  uint32_t reserve_live;    /* ...blocks not yet given back */
  uint64_t squeezed;        /* frame + 1 of the last full collection weft__mem_room made */
  uint8_t reclaim;          /* cycles the collector still owes after a task died for memory */
  uint8_t died;             /* a task died for memory since the last full collection */
  int (*fail)(void *user, size_t nsize); /* tests: refuse chosen allocations (testing.h) */
  void *fail_user;                       /* ...passed to fail */
} weft_memory;

/* Sets up the accounts of a state whose desc is copied (the reserve is
   taken by weft__mem_open_reserve, once the state exists). */
void weft__mem_init(weft_memory *m, const weft_desc *d);
int weft__mem_open_reserve(weft_state *W);
void weft__mem_close_reserve(weft_state *W);

/* Lua's allocator (lua_Alloc, ud = W): counts bytes and refuses growth
   past the limit, so a script that hoards memory fails with "not enough
   memory" instead of taking the process down. */
void *weft__lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize);
/* The host's allocator (weft_alloc_fn, ud = W): the pools, queues and
   every other block weft keeps; counted, honours the tests' refusals (testing.h). */
void *weft__host_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* Whether the Lua heap has room for something new a script asks for (a
   task): 1 while it is more than a margin (1/16 of the limit, at least
   256 KB and at most 16 MB) below the limit. Near it, a full collection
   is made, at most once a frame, and 0 returned when that did not make
   the room: the caller raises "not enough memory" in the script that
   asked, before anything exists, so a spawn loop fails once in the
   spawner instead of each new task failing at its first allocation
   after an emergency collection of its own. A task's death for memory
   (weft__mem_died) allows one more collection in the frame: what it held
   is garbage now. Main thread, outside the collector. */
int weft__mem_room(weft_state *W);
/* Something failed for memory: the heap it filled is garbage that only
   a collection gives back. From now on weft__mem_reclaim runs the
   collector at frame ends until two whole cycles (one started after the
   failure) have run. weft__mem_died: a task died of it. */
void weft__mem_owe(weft_state *W);
void weft__mem_died(weft_state *W);
/* At a frame's end: runs the collector owed, in steps, for at most us
   microseconds. */
void weft__mem_reclaim(weft_state *W, uint32_t us);

/* Helpers over weft__host_alloc. A block is freed with the size it was
   made (or last resized) with, as lua_Alloc's contract needs. All return
   NULL when out of memory and never raise. Main thread only. */
void *weft__mem_alloc(weft_state *W, size_t n);
void *weft__mem_calloc(weft_state *W, size_t count, size_t size);
void *weft__mem_realloc(weft_state *W, void *p, size_t osize, size_t nsize);
void weft__mem_free(weft_state *W, void *p, size_t n);
/* A copy of s, and a and b joined by '/', freed with weft__mem_free_str. */
char *weft__mem_strdup(weft_state *W, const char *s);
char *weft__mem_join(weft_state *W, const char *a, const char *b);
void weft__mem_free_str(weft_state *W, char *s);

#endif
