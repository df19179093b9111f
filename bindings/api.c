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
void weft__open_api(weft_state *W, lua_State *L) {
  lua_newtable(L);
  int api = lua_gettop(L);
  lua_newtable(L);
  lua_setfield(L, api, "weft");
  weft__open_sandbox(W, L, api);
  weft__open_tasks(W, L);
  weft__open_waits(W, L);
  weft__open_groups(W, L);
  weft__open_reports(W, L);
  weft__open_inspect(W, L);
  weft__open_coroutines(W, L, api);
  weft__open_futures(W, L);
  weft__open_signals(W, L);
  weft__open_channels(W, L);
  weft__open_combinators(W, L);
  weft__open_jobs(W, L);
}
