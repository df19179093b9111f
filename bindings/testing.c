/* The library's hooks for its own tests (testing.h). */
#include "testing.h"

#include "accounts/cost.h"
#include "base/internal.h"

void weft__testing_fail_alloc(weft_state *W, int (*fail)(void *user, size_t nsize), void *user) {
  if (!W) return;
  W->mem.fail = fail;
  W->mem.fail_user = user;
}

void weft__testing_charge(weft_state *W, weft_task t, uint64_t us) {
  if (W && weft__task_state(W->S, t.id) > 0) weft__cost_charge(W, t.id, us);
}
