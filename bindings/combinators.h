/* The combinators first, all and timeout (combinators.c). */
#ifndef WEFT_COMBINATORS_H
#define WEFT_COMBINATORS_H

#include "internal.h"

void weft_open_combinators(weft_state *W, lua_State *L);
/* Pushes all{...} for the list at L[list]: a future resolving to {v1,
   ..., vn} (wait.c makes a nested list in a wait one). */
void weft_push_all(weft_state *W, lua_State *L, int list);

#endif
