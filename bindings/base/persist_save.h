/* The writer of saves (persist.c's weft__persist_save runs it). */
#ifndef WEFT_PERSIST_SAVE_H
#define WEFT_PERSIST_SAVE_H

#include <lua.h>

/* A lua_CFunction: given the names set and the root value, returns the
   save (a string), or raises with the path of what cannot be written.
   Run it protected, with the collector stopped. */
int weft__persist_write(lua_State *L);

#endif
