/* A byte stream for saves: what the scheduler (and whatever saves with
   it) writes its state to, and reads it back from. The bytes are this
   build's (its byte order, its sizes): a save is read back by the same
   build, which a save's header says (weft__wire_layout). */
#ifndef WEFT_WIRE_H
#define WEFT_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct weft_wire {
  /* Writes n bytes (saving) or reads exactly n bytes into p (loading);
     0 when it cannot (out of room, out of bytes). */
  int (*io)(void *ud, void *p, size_t n);
  void *ud;
  const char *err; /* the first failure, a static text; NULL while none */
} weft_wire;

/* Records the first failure; returns 0. */
static inline int weft__wire_fail(weft_wire *w, const char *why) {
  if (!w->err) w->err = why;
  return 0;
}

/* n bytes through the stream: 0 once anything failed. */
static inline int weft__wire_bytes(weft_wire *w, void *p, size_t n) {
  if (w->err) return 0;
  if (n && !w->io(w->ud, p, n)) return weft__wire_fail(w, "the save ends too soon");
  return 1;
}

static inline int weft__wire_u32(weft_wire *w, uint32_t *v) {
  return weft__wire_bytes(w, v, sizeof *v);
}
static inline int weft__wire_u64(weft_wire *w, uint64_t *v) {
  return weft__wire_bytes(w, v, sizeof *v);
}
static inline int weft__wire_f64(weft_wire *w, double *v) {
  return weft__wire_bytes(w, v, sizeof *v);
}

#endif
