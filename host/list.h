/* Intrusive doubly linked lists whose links are 32-bit names rather than
   pointers: the scheduler's waiters, queues, timer runs, children and groups.
   Two heads over one link: weft_list keeps both ends, weft_ring only its
   first element. */
#ifndef WEFT_LIST_H
#define WEFT_LIST_H

#include <stdint.h>

#include "weft_assert.h"

/* An element is named by a nonzero 32-bit value its owner chooses (a pool
   index + 1, or a tagged index); 0 names none. The list keeps both ends,
   so appending and unlinking anywhere are O(1), and zero-initialised is
   empty. A list must not move while it has elements: they name it only
   by being in it, but its owner finds it through them (pooled objects
   never move).

   The head's prev is not kept: weft__list_shift takes the front writing
   only the list, so the hot queues pop with one store. Nothing may read
   a head's prev; weft__list_unlink knows the head by its name.

   Every function takes `at`, which maps a name to its element's link
   inside `owner`. They are static inline and `at` is always a constant,
   so the compiler folds the call into direct loads: no indirect call is
   left on any path. */

typedef struct weft_link {
  uint32_t next, prev; /* names, 0: none */
} weft_link;

typedef struct weft_list {
  uint32_t head, tail; /* names, 0 when empty */
} weft_list;

/* The link of element n (nonzero), in owner. */
typedef weft_link *(*weft_link_at)(const void *owner, uint32_t n);

static inline int weft__list_empty(const weft_list *l) {
  WEFT_ASSERT((l->head == 0) == (l->tail == 0));
  return l->head == 0;
}

/* Appends element n, whose link is x. */
static inline void weft__list_push(weft_list *l, uint32_t n, weft_link *x, weft_link_at at,
                                   const void *owner) {
  WEFT_ASSERT(n != 0 && n != l->tail && (l->head == 0) == (l->tail == 0));
  WEFT_ASSERT(!l->tail || at(owner, l->tail)->next == 0);
  x->next = 0;
  x->prev = l->tail;
  if (l->tail)
    at(owner, l->tail)->next = n;
  else
    l->head = n;
  l->tail = n;
}

/* Unlinks element n (link x) from wherever it stands in l; its link is
   cleared. */
static inline void weft__list_unlink(weft_list *l, uint32_t n, weft_link *x, weft_link_at at,
                                     const void *owner) {
  WEFT_ASSERT(n != 0 && l->head != 0 && l->tail != 0);
  WEFT_ASSERT(l->head == n || at(owner, x->prev)->next == n);
  WEFT_ASSERT(l->tail == n ? x->next == 0 : at(owner, x->next)->prev == n);
  if (l->head == n)
    l->head = x->next;
  else
    at(owner, x->prev)->next = x->next;
  if (l->tail == n)
    l->tail = l->head ? x->prev : 0;
  else
    at(owner, x->next)->prev = x->prev;
  x->next = x->prev = 0;
}

/* Takes the head off, given its link x: only the list (and x->next) is
   written, the new head's prev is left stale. */
static inline void weft__list_shift(weft_list *l, weft_link *x) {
  WEFT_ASSERT(l->head != 0 && (l->head == l->tail) == (x->next == 0));
  l->head = x->next;
  if (!l->head) l->tail = 0;
  x->next = 0;
}

/* Moves the elements from src's head through last (link xlast) to the
   back of dst, keeping their order: only the two ends are relinked. */
static inline void weft__list_move_front(weft_list *dst, weft_list *src, uint32_t last,
                                         weft_link *xlast, weft_link_at at, const void *owner) {
  uint32_t first = src->head;
  WEFT_ASSERT(first != 0 && last != 0 && (last == src->tail) == (xlast->next == 0));
  src->head = xlast->next;
  if (!src->head) src->tail = 0;
  xlast->next = 0;
  at(owner, first)->prev = dst->tail;
  if (dst->tail)
    at(owner, dst->tail)->next = first;
  else
    dst->head = first;
  dst->tail = last;
}

/* Walking a list: `for (n = l->head; n; n = at(owner, n)->next)`. Only the
   element at hand may leave the list during a walk, its next read first. */

/* A list that keeps only its first element, for a list every object
   holds (a task's or a group's children), where the word a tail would
   take counts: the first element's prev names the last, so appending
   stays O(1). Its elements link and walk as a weft_list's do (the last's
   next is 0); zero-initialised is empty. */
typedef struct weft_ring {
  uint32_t head; /* name of the first element, 0 when empty */
} weft_ring;

static inline int weft__ring_empty(const weft_ring *r) { return r->head == 0; }

/* Appends element n, whose link is x. */
static inline void weft__ring_push(weft_ring *r, uint32_t n, weft_link *x, weft_link_at at,
                                   const void *owner) {
  WEFT_ASSERT(n != 0 && n != r->head);
  x->next = 0;
  if (!r->head) {
    x->prev = n;
    r->head = n;
    return;
  }
  weft_link *first = at(owner, r->head);
  WEFT_ASSERT(first->prev != 0 && at(owner, first->prev)->next == 0);
  x->prev = first->prev;
  at(owner, first->prev)->next = n;
  first->prev = n;
}

/* Unlinks element n (link x) from wherever it stands in r; its link is
   cleared. */
static inline void weft__ring_unlink(weft_ring *r, uint32_t n, weft_link *x, weft_link_at at,
                                     const void *owner) {
  WEFT_ASSERT(n != 0 && r->head != 0);
  WEFT_ASSERT(r->head == n || at(owner, x->prev)->next == n);
  WEFT_ASSERT(x->next ? at(owner, x->next)->prev == n : at(owner, r->head)->prev == n);
  if (r->head == n) {
    r->head = x->next;
    if (r->head) at(owner, r->head)->prev = x->prev; /* the new first names the last */
  } else {
    at(owner, x->prev)->next = x->next;
    if (x->next)
      at(owner, x->next)->prev = x->prev;
    else
      at(owner, r->head)->prev = x->prev; /* it was the last */
  }
  x->next = x->prev = 0;
}

#endif
