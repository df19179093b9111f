/* wait and the combinators first, all and timeout (combinators.c). */
#ifndef WEFT_COMBINATORS_H
#define WEFT_COMBINATORS_H

#include "../base/internal.h"

void weft__open_combinators(weft_state *W, lua_State *L);
/* wait(x), x anything the design lists (a plain list: one value per
   element; a list nested in it waits like all{...}). */
int weft__l_wait(lua_State *L);
/* For a save: the combinators' task class and their delivery. */
const weft_task_class *weft__comb_class(void);
typedef void (*weft_deliver_fn)(weft_state *W, weft_id self, lua_State *from, int idx, int n,
                                int slot, int failed);
weft_deliver_fn weft__comb_deliver(void);

#endif
