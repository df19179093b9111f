/* Loading coroutines (persist_load.c calls these for each K_THREAD
   record, r's cursor at its payload). */
#ifndef WEFT_PERSIST_FRAMES_H
#define WEFT_PERSIST_FRAMES_H

#include "persist_fmt.h"

/* Reads the coroutine's shape and makes it: a new thread with a stack
   of its size, its top set (slots nil), anchored as object id. */
void weft__persist_thread_new(R *r, lua_Integer id);

/* Reads its contents: stack values, error handler, to-be-closed slots
   and call frames, each checked before any frame is built; sets its
   status. Every object must exist (their values read, not yet filled). */
void weft__persist_thread_fill(R *r, lua_Integer id);

/* The open upvalue of coroutine T at stack slot s (a new one, or the
   one already there), allocated on L. */
UpVal *weft__persist_upval_open(lua_State *L, lua_State *T, int s);

#endif
