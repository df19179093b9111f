/* The reader of saves (persist.c's weft__persist_load runs it). */
#ifndef WEFT_PERSIST_LOAD_H
#define WEFT_PERSIST_LOAD_H

#include <lua.h>

/* A lua_CFunction: given the names set, the save's bytes (a light
   userdata) and their length, returns the root value, or raises with
   why the save is refused. Run it protected, with the collector
   stopped. */
int weft__persist_read(lua_State *L);

#endif
