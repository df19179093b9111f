/* The coroutine library for scripts (coro.c). */
#ifndef WEFT_CORO_H
#define WEFT_CORO_H

#include "../base/internal.h"

/* Puts weft's resume, yield and their kin in the coroutine table of the
   API table at index api. */
void weft__open_coroutines(weft_state *W, lua_State *L, int api);

#endif
