/* The script API: every C module adds its functions to one table, in
   this order, here and nowhere else; the embedded Lua parts (the prelude,
   the module system) add theirs when they load. */
#include "api.h"
#include "core/channels.h"
#include "waitables/combinators.h"
#include "env/coro.h"
#include "waitables/future.h"
#include "env/group.h"
#include "env/inspect.h"
#include "waitables/jobs.h"
#include "accounts/report.h"
#include "env/sandbox.h"
#include "waitables/signals.h"
#include "core/task.h"
#include "core/wait.h"

/* Each weft_open_* below fills the API table on top of L (sandbox and
   coroutines are given its index) and leaves the stack as it found it. */
void weft_open_api(weft_state *W, lua_State *L) {
  lua_newtable(L);
  int api = lua_gettop(L);
  lua_newtable(L);
  lua_setfield(L, api, "weft");
  weft_open_sandbox(W, L, api);
  weft_open_tasks(W, L);
  weft_open_waits(W, L);
  weft_open_groups(W, L);
  weft_open_reports(W, L);
  weft_open_inspect(W, L);
  weft_open_coroutines(W, L, api);
  weft_open_futures(W, L);
  weft_open_signals(W, L);
  weft_open_channels(W, L);
  weft_open_combinators(W, L);
  weft_open_jobs(W, L);
}
