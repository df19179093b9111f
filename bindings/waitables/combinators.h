/* wait and the combinators first, all and timeout (combinators.c). */
#ifndef WEFT_COMBINATORS_H
#define WEFT_COMBINATORS_H

#include "../base/internal.h"

void weft__open_combinators(weft_state *W, lua_State *L);
/* wait(x), x anything the design lists (a plain list: one value per
   element; a list nested in it waits like all{...}). */
int weft__l_wait(lua_State *L);

#endif
