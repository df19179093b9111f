/* The script environment (sandbox.c): the shared API table and the
   environment each script file runs in. */
#ifndef WEFT_SANDBOX_H
#define WEFT_SANDBOX_H

#include "internal.h"

/* Fills the shared API table at idx with the allowed base functions and
   libraries (weft's faithful versions where weft must change them). */
void weft_open_sandbox(weft_state *W, lua_State *L, int api);
/* Pushes a new script environment: every API name, its own copies of the
   library tables, _G; absent names fall through to the API. */
void weft_new_env(weft_state *W, lua_State *L);
/* Loads the file at path as a text chunk named "@path" with a new
   environment; pushes env and the function (1), or the message (0). */
int weft_load_script(weft_state *W, lua_State *L, const char *path);

/* package.searchpath as Lua's, over the files loadfile reads. */
int weft_l_searchpath(lua_State *L);

/* At a frame's start: restarts a collector a script stopped once the heap
   passes half the memory limit, and starts the pending finalizers. */
void weft_gc_frame(weft_state *W);

#endif
