/* weft's part of its Lua build (mk/lua.mk): the stop check Lua's VM makes
   at every jump and every call, and the counted budget's count in the
   VM's loop. lvm.c is compiled from Debian's source with two lines edited
   to call luai_stopcheck and two to ask luai_counted and luai_counting
   (mk/lua/edit.sh),
   and this header included.

   A watchdog thread never touches a Lua state: it raises a flag of its
   own state and counts it here. While the count is zero the check is one
   relaxed load of a global and a branch not taken; otherwise the running
   thread asks weft (weft__lua_stop) whether the stop is its state's, and
   if so arms its own count hook, on its own thread, at an instruction
   boundary, as lua.c's Ctrl-C handler does from a signal handler. */
#ifndef WEFT_LUAI_H
#define WEFT_LUAI_H

#include <stdatomic.h>
#include <stddef.h>

struct lua_State;

#if defined(__GNUC__) && defined(__ELF__)
#define WEFT_LUAI_HIDDEN __attribute__((visibility("hidden")))
#else
#define WEFT_LUAI_HIDDEN
#endif

/* States with a stop pending, process-wide (weft__lua_stop_raise). */
extern WEFT_LUAI_HIDDEN _Atomic unsigned weft__lua_stops;
/* What the running thread does when the count is not zero: weft's
   handler if one is set (it returns 1 when it armed L's hook), else 0. */
WEFT_LUAI_HIDDEN int weft__lua_stop(struct lua_State *L);
/* Sets the handler (weft_open); the same function from every state. */
WEFT_LUAI_HIDDEN void weft__lua_stop_handler(int (*fn)(struct lua_State *L));
/* The spawn-site cache of the Lua function that called L's running C
   function (level 1, as lua_getstack counts): three words in its
   prototype (edit.sh), the pc + 1 of the last spawn made from it, that
   spawn's parent site and its site (0: none yet), with the caller's pc
   in *pc. NULL when the caller is not a Lua function. A prototype is
   one state's, and its words are zero when it is made, compiled or
   loaded. */
WEFT_LUAI_HIDDEN unsigned *weft__lua_caller_site(struct lua_State *L, unsigned *pc);

/* The collector's roots beyond Lua's own: threads a host keeps only in
   its own memory (weft's tasks keep theirs in their slots, with no
   reference a script or the registry could see). lgc.c calls
   luai_markroots where it marks the registry, as a cycle begins and
   again in its atomic step, so a thread made during a cycle is marked
   before the sweep; the handler marks each such thread of the state
   with mark (lgc.c's markobject). A handler is set once, the same
   function from every state; it leaves other hosts' states alone. */
typedef void (*weft__lua_mark)(void *g, struct lua_State *th);
typedef void (*weft__lua_roots_fn)(void *alloc_ud, void *(*alloc)(void *, void *, size_t, size_t),
                                   void *g, weft__lua_mark mark);
WEFT_LUAI_HIDDEN void weft__lua_roots(void *alloc_ud,
                                      void *(*alloc)(void *, void *, size_t, size_t), void *g,
                                      weft__lua_mark mark);
WEFT_LUAI_HIDDEN void weft__lua_roots_handler(weft__lua_roots_fn fn);
#define luai_markroots(g) weft__lua_roots((g)->ud, (g)->frealloc, (g), luai_markthread)

/* In lvm.c's instruction fetch, while the trap is on: a count hook alone
   (a counted budget) whose count does not run out at this instruction
   just counts it, here, instead of in luaG_traceexec, which would do
   only that (and note the pc, which nothing reads until the count runs
   out: an unhooked VM does not note it either). The instruction that
   runs the count out goes through luaG_traceexec, which fires the hook
   as before. The trap is then LUA_MASKCOUNT, which no other cause sets
   (a hook's start sets the whole mask, which is never the count alone
   with anything else in it; a stack reallocation, a hook set or a stop
   raised sets it to 1 at the next jump, call or protected operation,
   updatetrap), and while it is, luai_counted counts an instruction
   before anything else: the stack cannot have moved since the fetch
   that set it, so the base needs no correcting. */
#define luai_counting(L)                                                                           \
  ((L)->hookmask == LUA_MASKCOUNT && (L)->hookcount > 1 && ((L)->hookcount--, 1))
#define luai_counted(L, trap)                                                                      \
  ((trap) == LUA_MASKCOUNT && (L)->hookcount > 1 && ((L)->hookcount--, 1))

#if defined(__GNUC__)
#define luai_stopcheck(L)                                                                          \
  (__builtin_expect(atomic_load_explicit(&weft__lua_stops, memory_order_relaxed) != 0, 0) &&       \
   weft__lua_stop(L))
#else
#define luai_stopcheck(L)                                                                          \
  (atomic_load_explicit(&weft__lua_stops, memory_order_relaxed) != 0 && weft__lua_stop(L))
#endif

#endif
