/* A save in memory for the tests of saving: a growing buffer written
   and read through a weft_wire's io (host/wire.h), or written by
   weft_save (mem_put). Included by the tests that save, as check_alloc.h
   is. */
#ifndef WEFT_TEST_MEMBUF_H
#define WEFT_TEST_MEMBUF_H

#include <stdlib.h>
#include <string.h>

typedef struct membuf {
  unsigned char *p;
  size_t n, cap, at;
} membuf;

static inline int mem_write(void *ud, void *p, size_t n) {
  membuf *b = ud;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->n + n) cap *= 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) return 0;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  return 1;
}

static inline int mem_read(void *ud, void *p, size_t n) {
  membuf *b = ud;
  if (n > b->n - b->at) return 0;
  memcpy(p, b->p + b->at, n);
  b->at += n;
  return 1;
}

/* mem_write for weft_save's write (its bytes are const). */
static inline int mem_put(void *ud, const void *p, size_t n) { return mem_write(ud, (void *)p, n); }

#endif
