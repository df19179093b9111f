/* The embedded Lua parts (bindings/lua/NAME.lua): their chunk names, so
   that an error in one names the part, and how their frames are told from
   the scripts' (spawn sites, weft.tasks() and the debugger skip them). */
#ifndef WEFT_CHUNKS_H
#define WEFT_CHUNKS_H

#include <string.h>

#define WEFT_CHUNK_PRELUDE "=[weft prelude]" /* run by state.c */
#define WEFT_CHUNK_MODULES "=[weft modules]" /* the module system, loaded by reload.c */

/* Nonzero when source (a lua_Debug's) is one of the embedded parts. */
static inline int weft__chunk_embedded(const char *source) {
  return source[0] == '=' &&
         (strcmp(source, WEFT_CHUNK_PRELUDE) == 0 || strcmp(source, WEFT_CHUNK_MODULES) == 0);
}

#endif
