/* What each engine call a script can make costs as the thing it grows
   gets big: api_cost.lua calls each 10^5 times (budget off) and this
   prints ns per call over the first and the last 10^4 calls.
   Usage: api-cost DIR [N] */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>

#include <weft.h>

#include "../../cli/mialloc.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: api-cost DIR [N]\n");
    return 2;
  }
  int n = argc > 2 ? atoi(argv[2]) : 100000;
  weft_desc d = WEFT_DESC_INIT;
  mialloc_use(&d);
  d.scripts_root = argv[1];
  d.memory_limit = (size_t)4 << 30;
  d.instr_budget = WEFT_BUDGET_OFF;
  d.max_tasks = 4 * (uint32_t)n + 1024;
  weft_state *W = weft_open(&d);
  if (!W) return 1;
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_createtable(L, 0, 1);
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  lua_setfield(L, -2, "BENCH");
  lua_pop(L, 1);
  printf("  %-32s %9s %9s %7s   (N = %d calls on one object)\n", "call", "ns first", "ns last",
         "ratio", n);
  fflush(stdout);
  char path[4096];
  snprintf(path, sizeof path, "%s/api_cost.lua", argv[1]);
  weft_task t;
  const char *err;
  if (weft_run_file(W, path, &t, &err) != WEFT_OK) {
    fprintf(stderr, "api-cost: %s\n", err);
    return 1;
  }
  for (int f = 0; f < 1000 && weft_task_result(W, t) == WEFT_RUNNING; f++) weft_step(W, 1.0 / 60);
  if (weft_task_result(W, t) != WEFT_DONE) {
    fprintf(stderr, "api-cost: %s\n", weft_task_error(W, t));
    return 1;
  }
  weft_task_drop(W, t);
  weft_close(W);
  return 0;
}
