/* What a save of the running world names instead of writing (names.c):
   weft's C functions a script can hold or a suspended frame runs (the
   methods its handles' __index hands out), the continuations of weft's
   C frames that yield, and the text of every chunk loaded (a save
   writes a Lua function as its chunk's text and its place in it). Each
   module names its own as it opens; a save reads them all. */
#ifndef WEFT_NAMES_H
#define WEFT_NAMES_H

#include "internal.h"

#define WEFT_CNAMES "weft.cnames"   /* registry: [name] = C function */
#define WEFT_SOURCES "weft.sources" /* registry: [chunk name] = its text */
#define WEFT_PNAMES "weft.pnames"   /* registry: [name] = light userdata (the embedder's) */
#define WEFT_TNAMES "weft.tnames"   /* registry: [type name] = its saver (userdata), or false */

/* Names C function f (prefix.name for each of a luaL_Reg list). May
   raise (memory). */
void weft__name_c(lua_State *L, const char *name, lua_CFunction f);
void weft__name_methods(lua_State *L, const char *prefix, const luaL_Reg *m);
/* Names the embedder's pointer p. May raise (memory). */
void weft__name_pointer(lua_State *L, const char *name, void *p);
/* Names the userdata type registry[tname]: saved with the saver at
   saver (a weft__persist_saver, copied), or plain when NULL. May raise. */
void weft__name_type(lua_State *L, const char *tname, const void *saver, size_t size);
/* Names continuation k (at most 16: the state's). */
void weft__name_k(weft_state *W, const char *name, lua_KFunction k);
/* Keeps the text of a chunk about to be loaded, under its chunk name
   (the last text of a name is kept). May raise (memory). */
void weft__source_keep(lua_State *L, const char *chunk, const char *text, size_t len);

#endif
