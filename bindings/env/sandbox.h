/* The script environment (sandbox.c): the shared API table and the
   environment each script file runs in. */
#ifndef WEFT_SANDBOX_H
#define WEFT_SANDBOX_H

#include "../base/internal.h"

/* Fills the shared API table at idx with the allowed base functions and
   libraries (weft's faithful versions where weft must change them). */
void weft__open_sandbox(weft_state *W, lua_State *L, int api);
/* Pushes a new script environment: every API name, its own copies of the
   library tables, _G; absent names fall through to the API. */
void weft__new_env(weft_state *W, lua_State *L);
/* Loads the file at path as a text chunk named "@path" with a new
   environment; pushes env and the function (1), or the message (0). */
int weft__load_script(weft_state *W, lua_State *L, const char *path);

/* package.searchpath as Lua's, over the files loadfile reads. */
int weft__l_searchpath(lua_State *L);
/* caller_env(): the global table (_ENV) of the nearest script function
   on the stack, weft's embedded parts and C functions passed over (a
   function with no _ENV too); nil when there is none. */
int weft__l_caller_env(lua_State *L);

/* xpcall as Lua's, whose message handler is the script's wrapped in
   handler (a C closure with the script's as upvalue 1). */
int weft__xpcall_with(lua_State *L, lua_CFunction handler);
/* The standard wrapper: calls the script's handler, unless the running
   stretch is being killed. A kill is raised from the budget's hook, and
   Lua calls the message handler before leaving the hook, with hooks off:
   a handler that looped there could never be stopped, and a kill has
   nothing for it to handle (it goes on through every pcall). */
int weft__l_xhandler(lua_State *L);
/* pcall's and xpcall's continuation: true and the results, or false and
   the error (extra: the slots below the true). */
int weft__pcall_done(lua_State *L, int status, lua_KContext extra);

/* At a frame's start: restarts a collector a script stopped once the heap
   passes half the memory limit, and starts the pending finalizers. */
void weft__gc_frame(weft_state *W);

#endif
