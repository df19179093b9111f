/* Functions saved as their place in their chunk's text: which function
   of a chunk compiled again is the one a save holds (persist_save.c). */
#include <string.h>

#include "persist_protos.h"

static int samek(const TValue *a, const TValue *b) {
  if (ttypetag(a) != ttypetag(b)) return 0;
  switch (ttypetag(a)) {
  case LUA_VNUMINT:
    return ivalue(a) == ivalue(b);
  case LUA_VNUMFLT: {
    lua_Number x = fltvalue(a), y = fltvalue(b);
    return memcmp(&x, &y, sizeof x) == 0;
  }
  case LUA_VSHRSTR:
    return tsvalue(a) == tsvalue(b);
  case LUA_VLNGSTR:
    return luaS_eqlngstr(tsvalue(a), tsvalue(b));
  default:
    return 1; /* nil, false, true */
  }
}

/* Whether b, compiled from the same text, is the function a is. */
static int sameproto(const Proto *a, const Proto *b) {
  if (a->sizecode != b->sizecode || a->numparams != b->numparams || a->is_vararg != b->is_vararg ||
      a->maxstacksize != b->maxstacksize || a->sizeupvalues != b->sizeupvalues ||
      a->sizek != b->sizek || a->sizep != b->sizep || a->linedefined != b->linedefined ||
      a->lastlinedefined != b->lastlinedefined ||
      memcmp(a->code, b->code, (size_t)a->sizecode * sizeof(Instruction)) != 0)
    return 0;
  for (int i = 0; i < a->sizek; i++)
    if (!samek(&a->k[i], &b->k[i])) return 0;
  for (int i = 0; i < a->sizeupvalues; i++)
    if (a->upvalues[i].instack != b->upvalues[i].instack ||
        a->upvalues[i].idx != b->upvalues[i].idx || a->upvalues[i].kind != b->upvalues[i].kind)
      return 0;
  return 1;
}

int weft__persist_findproto(const Proto *want, const Proto *in, int *path, int depth) {
  if (sameproto(want, in)) return depth;
  if (depth >= PERSIST_MAXPATH) return -1;
  for (int i = 0; i < in->sizep; i++) {
    path[depth] = i;
    int d = weft__persist_findproto(want, in->p[i], path, depth + 1);
    if (d >= 0) return d;
  }
  return -1;
}
