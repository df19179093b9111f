/* weft's part of its Lua build: the stop count and the handler the VM's
   stop check calls, the collector's extra roots, and the spawn-site
   cache's reader (weft_luai.h).
   Linked with Lua alone (the benchmark floor) it never stops anything:
   nothing raises the count, and no state has extra roots. */
#include "weft_luai.h"

#include "ldebug.h"
#include "lstate.h"

_Atomic unsigned weft__lua_stops;
static int (*_Atomic handler)(struct lua_State *L);

int weft__lua_stop(struct lua_State *L) {
  int (*fn)(struct lua_State *) = atomic_load_explicit(&handler, memory_order_acquire);
  return fn ? fn(L) : 0;
}

void weft__lua_stop_handler(int (*fn)(struct lua_State *L)) {
  atomic_store_explicit(&handler, fn, memory_order_release);
}

static _Atomic weft__lua_roots_fn roots;

void weft__lua_roots(void *alloc_ud, void *(*alloc)(void *, void *, size_t, size_t), void *g,
                     weft__lua_mark mark) {
  weft__lua_roots_fn fn = atomic_load_explicit(&roots, memory_order_acquire);
  if (fn) fn(alloc_ud, alloc, g, mark);
}

void weft__lua_roots_handler(weft__lua_roots_fn fn) {
  atomic_store_explicit(&roots, fn, memory_order_release);
}

unsigned *weft__lua_caller_site(struct lua_State *L, unsigned *pc) {
  CallInfo *ci = L->ci->previous;
  if (!ci || !isLua(ci)) return NULL;
  Proto *p = clLvalue(s2v(ci->func))->p;
  *pc = (unsigned)pcRel(ci->u.l.savedpc, p);
  return p->weft_site;
}
