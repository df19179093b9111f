/* weft's part of its Lua build: the stop count and the handler the VM's
   stop check calls (weft_luai.h). Linked with Lua alone (the benchmark
   floor) it never stops anything: nothing raises the count. */
#include "weft_luai.h"

_Atomic unsigned weft__lua_stops;
static int (*_Atomic handler)(struct lua_State *L);

int weft__lua_stop(struct lua_State *L) {
  int (*fn)(struct lua_State *) = atomic_load_explicit(&handler, memory_order_acquire);
  return fn ? fn(L) : 0;
}

void weft__lua_stop_handler(int (*fn)(struct lua_State *L)) {
  atomic_store_explicit(&handler, fn, memory_order_release);
}
