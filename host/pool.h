/* Slot pools with generation-checked handles: the storage behind every
   object weft hands out (tasks, groups, futures, signals, channels). */
#ifndef WEFT_POOL_H
#define WEFT_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "weft_base.h"
#include "wire.h"

/* A handle: slot index in the low 32 bits, generation in the high 32.
   Generations start at 1, so 0 is never a valid handle. */
typedef uint64_t weft_id;

/* WEFT_PREFETCH asks the processor to fetch the memory at p into its
   caches (a hint). WEFT_NOINLINE marks a function off the hottest path,
   never inlined into it, so the caller keeps a short prologue. */
#if defined(__GNUC__) || defined(__clang__)
#define WEFT_PREFETCH(p) __builtin_prefetch(p)
#define WEFT_NOINLINE __attribute__((noinline))
#else
#define WEFT_PREFETCH(p) ((void)(p))
#define WEFT_NOINLINE
#endif

#define WEFT_ID_INDEX(id) ((uint32_t)((id)&0xffffffffu))
#define WEFT_ID_GEN(id) ((uint32_t)((id) >> 32))
#define WEFT_ID_MAKE(idx, gen) (((uint64_t)(gen) << 32) | (uint32_t)(idx))

/* The allocator used when a desc gives none: realloc and free. */
void *weft__default_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* a and b joined by '/' (a alone when b is "", b alone when a is ""), in
   a block from alloc of strlen + 1 bytes, owned by the caller and freed
   with weft__str_free; NULL when out of memory. */
char *weft__str_join(weft_alloc_fn alloc, void *alloc_ud, const char *a, const char *b);
/* Frees a string from weft__str_join (NULL: nothing). */
void weft__str_free(weft_alloc_fn alloc, void *alloc_ud, char *s);

/* Every pooled element starts with this header. */
typedef struct weft_slot {
  uint32_t gen;       /* generation; odd while live, even while free */
  uint32_t next_free; /* while free: next free slot index + 1; while live: own index */
} weft_slot;

/* Slots live in fixed chunks that never move, so a pointer to a live
   element stays valid until that element is freed. Freed slots are reused
   last-in first-out; their generation is bumped so old handles go stale. */
typedef struct weft_pool {
  void **chunks;       /* chunk pointers; each holds WEFT_POOL_CHUNK slots */
  uint32_t nchunks;    /* chunks allocated */
  uint32_t cap_chunks; /* capacity of the chunks array */
  uint32_t elem_size;  /* bytes per element, header included */
  uint32_t free_head;  /* first free slot index + 1, 0 if none */
  uint32_t used;       /* live slots */
  uint32_t limit;      /* maximum live slots */
  weft_alloc_fn alloc;
  void *alloc_ud;
} weft_pool;

#define WEFT_POOL_CHUNK_SHIFT 9
#define WEFT_POOL_CHUNK (1u << WEFT_POOL_CHUNK_SHIFT)

void weft__pool_init(weft_pool *p, uint32_t elem_size, uint32_t limit, weft_alloc_fn alloc,
                     void *alloc_ud);
/* Frees every chunk. Live elements are dropped without notice. */
void weft__pool_destroy(weft_pool *p);
/* Takes a slot; returns it zeroed past the header and its handle in *id.
   Returns NULL when out of memory or at the limit (see weft__pool_full). */
void *weft__pool_alloc(weft_pool *p, weft_id *id);
/* Gives the slot back; the handle and every copy of it go stale. */
void weft__pool_free(weft_pool *p, weft_id id);
/* The element at slot index (live or not); idx must be below the capacity. */
static inline void *weft__pool_at(const weft_pool *p, uint32_t idx) {
  char *chunk = (char *)p->chunks[idx >> WEFT_POOL_CHUNK_SHIFT];
  return chunk + (size_t)(idx & (WEFT_POOL_CHUNK - 1)) * p->elem_size;
}
/* The live element for a handle, or NULL when it is stale or invalid. */
static inline void *weft__pool_get(const weft_pool *p, weft_id id) {
  uint32_t idx = WEFT_ID_INDEX(id);
  if (idx >= p->nchunks * WEFT_POOL_CHUNK) return NULL;
  weft_slot *s = (weft_slot *)weft__pool_at(p, idx);
  return (s->gen == WEFT_ID_GEN(id) && (s->gen & 1u)) ? s : NULL;
}
/* The handle of a live element. */
static inline weft_id weft__pool_id(const void *elem) {
  const weft_slot *s = (const weft_slot *)elem;
  return WEFT_ID_MAKE(s->next_free, s->gen);
}
static inline int weft__pool_full(const weft_pool *p) { return p->used >= p->limit; }
/* Slots ever allocated (indices below this may be live). */
static inline uint32_t weft__pool_capacity(const weft_pool *p) {
  return p->nchunks * WEFT_POOL_CHUNK;
}
static inline int weft__slot_live(const void *elem) {
  return (((const weft_slot *)elem)->gen & 1u) != 0;
}

/* Side data for a pool's slots, kept out of the slots because few of
   them need it: one block of WEFT_POOL_CHUNK elements for each chunk of
   slots, made the first time a slot in that chunk asks. */
typedef struct weft_side {
  void **blocks;      /* by chunk of slot indices; NULL: not made */
  uint32_t nblocks;   /* entries in blocks */
  uint32_t elem_size; /* bytes per element */
} weft_side;

/* The element for slot index idx, its block made if need be (an element
   is not cleared: its owner says when it is in use); NULL when out of
   memory. */
void *weft__side_make(weft_side *t, uint32_t idx, weft_alloc_fn alloc, void *alloc_ud);
/* The element for slot index idx, whose block was made. */
static inline void *weft__side_at(const weft_side *t, uint32_t idx) {
  char *block = (char *)t->blocks[idx >> WEFT_POOL_CHUNK_SHIFT];
  return block + (size_t)(idx & (WEFT_POOL_CHUNK - 1)) * t->elem_size;
}
/* Bytes held. */
size_t weft__side_bytes(const weft_side *t);
/* Frees every block (elem_size is kept). */
void weft__side_free(weft_side *t, weft_alloc_fn alloc, void *alloc_ud);

/* Saving a pool: its counts and every slot, free ones too, so handles,
   generations and the order of later allocations come back the same.
   out (NULL: none) gets a copy of each live slot to scrub before it is
   written (the addresses in it made names); 0 fails the save. */
int weft__pool_save(const weft_pool *p, weft_wire *w, int (*out)(void *ud, void *copy), void *ud);
/* Reads a save into p, an empty pool of the same element size: the free
   list and the live slots are checked to account for every slot once.
   in (NULL: none) sees every slot read, live or not, before the check
   (to clear what the file holds in place of addresses). 0 when refused
   (w->err says why); p is then to be destroyed. */
int weft__pool_load(weft_pool *p, weft_wire *w, void (*in)(void *ud, void *slot), void *ud);

/* Saving side data: which blocks are made, and their bytes (they hold no
   addresses). Loading fills t, empty, of the same element size, with at
   most max_blocks blocks; 0 when refused (w->err). */
int weft__side_save(const weft_side *t, weft_wire *w);
int weft__side_load(weft_side *t, weft_wire *w, uint32_t max_blocks, weft_alloc_fn alloc,
                    void *alloc_ud);

#endif
