/* A checking allocator for the host's unit tests (lua_Alloc contract):
   counts live bytes and calls, and verifies every old size passed in. */
#ifndef WEFT_TEST_CHECK_ALLOC_H
#define WEFT_TEST_CHECK_ALLOC_H

#include <stdlib.h>

#define HDR 16

typedef struct memstat {
  long long live; /* bytes held */
  long calls;     /* successful allocations and reallocations */
  int bad_osize;  /* frees or reallocs that passed the wrong old size */
} memstat;

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  memstat *m = ud;
  char *base = ptr ? (char *)ptr - HDR : NULL;
  if (base && *(size_t *)base != osize) m->bad_osize++;
  if (nsize == 0) {
    if (base) {
      m->live -= (long long)osize;
      free(base);
    }
    return NULL;
  }
  char *nb = realloc(base, nsize + HDR);
  if (!nb) return NULL;
  *(size_t *)nb = nsize;
  m->live += (long long)nsize - (base ? (long long)osize : 0);
  m->calls++;
  return nb + HDR;
}

#endif
