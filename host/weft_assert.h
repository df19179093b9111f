/* Assertions of the host's invariants (Lua's lua_assert): checked when
   WEFT_ASSERTS is defined (the sanitizer build, make asan), gone otherwise. */
#ifndef WEFT_ASSERT_H
#define WEFT_ASSERT_H

#ifdef WEFT_ASSERTS
#include <stdio.h>
#include <stdlib.h>

static inline void weft__assert_fail(const char *cond, const char *file, int line) {
  fprintf(stderr, "%s:%d: weft invariant broken: %s\n", file, line, cond);
  abort();
}

#define WEFT_ASSERT(c) ((c) ? (void)0 : weft__assert_fail(#c, __FILE__, __LINE__))
/* Code only a check needs (a value kept to compare later). */
#define WEFT_CHECKED(code) code
#else
/* Not evaluated, but still compiled: what it names stays declared and used. */
#define WEFT_ASSERT(c) ((void)sizeof((c) ? 1 : 0))
#define WEFT_CHECKED(code)
#endif

#endif
