/* The library's hooks for its own tests (testing.h). */
#include "testing.h"

#include "internal.h"

void weft_testing_fail_alloc(weft_state *W, int (*fail)(void *user, size_t nsize), void *user) {
  if (!W) return;
  W->mem.fail = fail;
  W->mem.fail_user = user;
}
