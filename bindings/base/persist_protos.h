/* Functions saved as their place in their chunk's text (persist_protos.c). */
#ifndef WEFT_PERSIST_PROTOS_H
#define WEFT_PERSIST_PROTOS_H

#include "persist_fmt.h"

#define PERSIST_MAXPATH 256 /* nested functions: the parser allows fewer (LUAI_MAXCCALLS) */
/* The depth at which a function like want (compiled from the same text:
   the same code, constants, upvalues and lines) is found under in, its
   path of child indices in path, or -1. */
int weft__persist_findproto(const Proto *want, const Proto *in, int *path, int depth);

#endif
