/* What the debugger tells besides frames and values (debug_info.c): hit
   conditions, thread names, the lines breakpoints land on, exception
   details, and the answer a second client gets. */
#ifndef WEFT_DEBUG_INFO_H
#define WEFT_DEBUG_INFO_H

#include "debug_int.h"

/* Whether a hit condition ("N", ">=N", "%N"...) holds at the hits-th
   hit. */
int weft__debug_hit_matches(const char *cond, unsigned hits);
/* Pushes the name of a task's thread: who or its name, its spawn site,
   what it waits on (protected: light userdata dbg at 1, id at 2). */
int weft__debug_thread_name(lua_State *E);
/* The first line at or after line in the file at path that holds code
   (not blank, not only a comment); 0 when none does, -1 when the file
   cannot be read. */
int weft__debug_code_line(const char *path, int line);
/* A second client's connection is accepted, its first request answered
   with an error ("another client is attached") and closed, without
   waiting. */
void weft__debug_turn_away(dbg *D);
/* exceptionInfo's body for the error stopped at (owned by the caller). */
cJSON *weft__debug_exception_info(dbg *D);

#endif
