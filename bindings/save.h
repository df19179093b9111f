/* Saving the running world (save.c), as the rest of the face sees it. */
#ifndef WEFT_SAVE_H
#define WEFT_SAVE_H

#include "weft.h"

/* Keeps what a save names of the script API as the state opens (its
   userdata: weft.root, weft.TIMEOUT, io.stdout...): WEFT_ENOMEM when out
   of memory. */
int weft__save_open(weft_state *W);

#endif
