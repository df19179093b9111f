/* The writer of saves (weft__persist_save): numbers every object it
   meets, breadth first from the root, and writes one record for each in
   that order; a record refers to others by number, so shared objects
   and cycles come back as they were. Runs with the collector stopped:
   the addresses it keys its maps by stay those of live objects. */
#include "persist_protos.h"
#include "persist_save.h"

#include "persist_fmt.h"

/* How an object was first reached: from which object and by which of
   its parts. Error messages name the path these make. */
enum {
  E_ROOT,
  E_VAL,    /* a table's value; the key in the ekey table */
  E_IDX,    /* a table's array slot aux */
  E_KEY,    /* a table's key */
  E_MT,     /* a metatable */
  E_UV,     /* user value aux */
  E_SAVER,  /* what a type's saver gave */
  E_UPV,    /* upvalue aux of a Lua function */
  E_CUPV,   /* upvalue aux of a C function */
  E_FN,     /* a function's code */
  E_CHUNK,  /* code's chunk */
  E_SLOT,   /* stack slot aux of a coroutine */
  E_OWNER,  /* the coroutine an open upvalue lives in */
  E_CLOSED, /* a closed upvalue's value */
  E_TEXT,   /* a chunk's text */
};

typedef struct wobj {
  TValue key;      /* E_VAL: the table key it was met at (an object of the save, or a scalar) */
  uint32_t parent; /* the object it was reached from, 0: the root */
  uint32_t aux;
  unsigned char kind, edge;
} wobj;

/* An entry of the map from what the writer met to its number: a value
   (tag its variant: a collectable's address, a light function's or
   userdata's pointer) or a part (tag PART | kind: a prototype's or an
   upvalue's address, a chunk's name). A long string is keyed by its
   contents, as a Lua table keys it. */
typedef struct ment {
  const void *p;
  uint32_t id;        /* 0: not numbered yet (a name, a shared text) */
  unsigned char tag;  /* 0: an empty entry */
  unsigned char kind; /* what it is written as; 0: by its type */
} ment;

#define PART 0x80

/* A dead key's place in the save and the object it was. */
typedef struct wdead {
  const void *gc;
  size_t at;
} wdead;

/* Stack slots of the writer's own values. */
enum { S_NAMES = 1, S_ROOT, S_BUF, S_OBJV, S_MAP, S_DEADV, S_OBJS, S_CHUNKS };

typedef struct W {
  lua_State *L;
  unsigned char *p; /* the save so far (userdata at S_BUF) */
  size_t n, cap;
  wobj *o; /* [1..count] (userdata at S_OBJV) */
  size_t ocap;
  ment *m; /* the map, open addressing (userdata at S_MAP) */
  size_t mcap, mn;
  wdead *dead; /* dead keys to settle at the end (userdata at S_DEADV) */
  size_t dcap, ndead;
  lua_Integer count; /* objects numbered */
  lua_Integer cur;   /* the object being written, 0: the root */
} W;

#define MAXDELTA 65535 /* lfunc.c's: the longest step of the tbc list */

/* ---- bytes ---- */

/* Makes room for k more elements (of size bytes) after the n in use of
   the array *v of *cap, which lives in the userdata at stack slot slot:
   a new one twice as big (first, the first time), the used part copied.
   May raise (memory). */
static void grow(W *w, void **v, size_t n, size_t *cap, size_t k, size_t size, size_t first,
                 int slot) {
  if (*cap >= n + k) return;
  size_t c = *cap ? *cap * 2 : first;
  while (c < n + k) c *= 2;
  void *p = lua_newuserdatauv(w->L, c * size, 0);
  size_t used = n < *cap ? n : *cap; /* n counts the objects' slot 0, not there at first */
  if (used) memcpy(p, *v, used * size);
  lua_replace(w->L, slot);
  *v = p;
  *cap = c;
}

static void need(W *w, size_t k) { grow(w, (void **)&w->p, w->n, &w->cap, k, 1, 1024, S_BUF); }

static void w_u8(W *w, unsigned b) {
  need(w, 1);
  w->p[w->n++] = (unsigned char)b;
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void w_u32(W *w, uint32_t v) {
  need(w, 4);
  put32(w->p + w->n, v);
  w->n += 4;
}

static void w_var(W *w, uint64_t v) {
  need(w, 10);
  while (v >= 128) {
    w->p[w->n++] = (unsigned char)(v | 128);
    v >>= 7;
  }
  w->p[w->n++] = (unsigned char)v;
}

static void w_int(W *w, lua_Integer i) {
  lua_Unsigned u = (lua_Unsigned)i;
  w_var(w, (u << 1) ^ (i < 0 ? ~(lua_Unsigned)0 : 0));
}

static void w_bytes(W *w, const void *p, size_t len) {
  w_var(w, len);
  need(w, len);
  if (len) memcpy(w->p + w->n, p, len);
  w->n += len;
}

static void w_string(W *w, int idx) {
  size_t len;
  const char *s = lua_tolstring(w->L, idx, &len);
  w_bytes(w, s, len);
}

/* ---- paths, for messages ---- */

static void pushtv(lua_State *L, const TValue *v) {
  setobj2s(L, L->top, v);
  L->top++;
}

static int isname(const char *s, size_t len) {
  if (len == 0 || (s[0] >= '0' && s[0] <= '9')) return 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return 0;
  }
  return 1;
}

/* Pushes how a key reads in a path: ".name", "[12]", "["a b"]". */
static void pushkey(lua_State *L, int k) {
  switch (lua_type(L, k)) {
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, k, &len);
    if (isname(s, len))
      lua_pushfstring(L, ".%s", s);
    else
      lua_pushfstring(L, "[\"%s\"]", len > 40 ? "..." : s);
    break;
  }
  case LUA_TNUMBER:
  case LUA_TBOOLEAN:
    lua_pushfstring(L, "[%s]", luaL_tolstring(L, k, NULL));
    lua_remove(L, -2);
    break;
  default:
    lua_pushfstring(L, "[<a %s>]", luaL_typename(L, k));
  }
}

/* The frame of coroutine T holding stack slot s as a local: pushes
   ".locals.NAME" or ".<stack slot s>". */
static void pushslot(lua_State *L, lua_State *T, lua_Integer s) {
  for (CallInfo *ci = T->ci; ci != &T->base_ci && ci != NULL; ci = ci->previous) {
    lua_Integer base = (ci->func - T->stack) + 1;
    if (s == base - 1) {
      lua_pushfstring(L, ".<function of a frame>");
      return;
    }
    if (isLua(ci) && s >= base && s < ci->top - T->stack) {
      const Proto *p = clLvalue(s2v(ci->func))->p;
      const char *name =
          luaF_getlocalname(p, (int)(s - base + 1), (int)(ci->u.l.savedpc - p->code) - 1);
      if (name) {
        lua_pushfstring(L, ".locals.%s", name);
        return;
      }
      break;
    }
  }
  lua_pushfstring(L, ".<stack slot %I>", (LUAI_UACINT)s);
}

/* Pushes the label of object id's edge from its parent. */
static void pushlabel(W *w, lua_Integer id) {
  lua_State *L = w->L;
  wobj *o = &w->o[id];
  switch (o->edge) {
  case E_VAL:
    pushtv(L, &o->key);
    pushkey(L, lua_gettop(L));
    lua_remove(L, -2);
    break;
  case E_IDX:
    lua_pushfstring(L, "[%I]", (LUAI_UACINT)o->aux);
    break;
  case E_KEY:
    lua_pushliteral(L, ".<a key>");
    break;
  case E_MT:
    lua_pushliteral(L, ".<metatable>");
    break;
  case E_UV:
    lua_pushfstring(L, ".<user value %I>", (LUAI_UACINT)o->aux);
    break;
  case E_SAVER:
    lua_pushliteral(L, ".<saved>");
    break;
  case E_UPV: {
    const char *name = NULL;
    lua_rawgeti(L, S_OBJS, o->parent);
    if (lua_type(L, -1) == LUA_TFUNCTION && !lua_iscfunction(L, -1)) {
      const Proto *p = clLvalue(s2v(L->top - 1))->p;
      if (o->aux >= 1 && (int)o->aux <= p->sizeupvalues && p->upvalues[o->aux - 1].name)
        name = getstr(p->upvalues[o->aux - 1].name);
    }
    lua_pop(L, 1);
    if (name)
      lua_pushfstring(L, ".<upvalue %s>", name);
    else
      lua_pushfstring(L, ".<upvalue %I>", (LUAI_UACINT)o->aux);
    break;
  }
  case E_CUPV:
    lua_pushfstring(L, ".<upvalue %I>", (LUAI_UACINT)o->aux);
    break;
  case E_FN:
    lua_pushliteral(L, ".<code>");
    break;
  case E_CHUNK:
    lua_pushliteral(L, ".<chunk>");
    break;
  case E_TEXT:
    lua_pushliteral(L, ".<text>");
    break;
  case E_SLOT:
    lua_rawgeti(L, S_OBJS, o->parent);
    pushslot(L, lua_tothread(L, -1), o->aux);
    lua_remove(L, -2);
    break;
  case E_OWNER:
    lua_pushliteral(L, ".<coroutine>");
    break;
  default:
    lua_pushliteral(L, "");
  }
}

/* Pushes the path of object id ("root.a.b[3]"). */
static void pushpath(W *w, lua_Integer id) {
  lua_State *L = w->L;
  int n = 0;
  for (; id > 0; id = w->o[id].parent, n++) {
    luaL_checkstack(L, 2, "path too deep");
    pushlabel(w, id);
  }
  lua_pushliteral(L, "root");
  for (int i = 0; i < n; i++) { /* the labels are leaf first */
    lua_rotate(L, -2 - i, -1);
  }
  lua_concat(L, n + 1);
}

/* Fails the save: "PATH: what", PATH the current object's. */
static l_noret fail(W *w, const char *fmt, ...) {
  lua_State *L = w->L;
  va_list ap;
  luaL_checkstack(L, 4, NULL);
  pushpath(w, w->cur);
  lua_pushliteral(L, ": ");
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 3);
  lua_error(L);
  abort(); /* not reached */
}

/* ---- numbering ---- */

/* The value at stack index idx, as Lua keeps it. */
static TValue *at(lua_State *L, int idx) { return s2v(L->ci->func + lua_absindex(L, idx)); }

/* Whether the key (p, tag) is a long string, keyed by its contents. */
static int bycontent(const void *p, int tag) {
  return (tag & ~PART) == LUA_VLNGSTR ||
         (tag == (PART | K_CHUNK) && ((const TString *)p)->tt == LUA_VLNGSTR);
}

static size_t mhash(const void *p, int tag) {
  uint64_t h = bycontent(p, tag) ? luaS_hashlongstr((TString *)p) : (uint64_t)(uintptr_t)p >> 3;
  h = (h ^ (uint64_t)tag << 56) * 0x9e3779b97f4a7c15u;
  return (size_t)(h >> 29);
}

/* The entry of (p, tag), or the empty one where it would go. */
static ment *mfind(W *w, const void *p, int tag) {
  size_t mask = w->mcap - 1, i = mhash(p, tag) & mask;
  int lng = bycontent(p, tag);
  for (;; i = (i + 1) & mask) {
    ment *e = &w->m[i];
    if (e->tag == 0) return e;
    if (e->tag == tag && (e->p == p || (lng && luaS_eqlngstr((TString *)e->p, (TString *)p))))
      return e;
  }
}

/* Makes the map cap entries (a power of 2), its entries moved over. May
   raise (memory). */
static void mgrow(W *w, size_t cap) {
  ment *old = w->m, *m = lua_newuserdatauv(w->L, cap * sizeof *m, 0);
  memset(m, 0, cap * sizeof *m);
  size_t ocap = w->mcap;
  w->m = m;
  w->mcap = cap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].tag) *mfind(w, old[i].p, old[i].tag) = old[i];
  lua_replace(w->L, S_MAP); /* the old map goes only now */
}

/* Adds (p, tag), not in the map: its entry. The map stays at most half
   full. May raise (memory). */
static ment *madd(W *w, const void *p, int tag) {
  if ((w->mn + 1) * 2 > w->mcap) mgrow(w, w->mcap * 2);
  ment *e = mfind(w, p, tag);
  e->p = p;
  e->tag = (unsigned char)tag;
  e->id = 0;
  e->kind = 0;
  w->mn++;
  return e;
}

/* The key a value is mapped by: its address or pointer; NULL for what
   is written as it is (nil, booleans, numbers). */
static const void *keyof(const TValue *v) {
  if (iscollectable(v)) return gcvalue(v);
  if (ttislcf(v)) return (const void *)(uintptr_t)fvalue(v);
  if (ttislightuserdata(v)) return pvalue(v);
  return NULL;
}

/* Marks every key of the names set's table slot as written as kind
   (the values the set names; the shared texts). */
static void mseed(W *w, int slot, int kind) {
  lua_State *L = w->L;
  lua_rawgeti(L, S_NAMES, slot);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    const TValue *k = s2v(L->top - 2);
    const void *p = keyof(k);
    if (iscollectable(k) || ttislcf(k) || ttislightuserdata(k)) { /* p NULL: a NULL pointer */
      ment *e = mfind(w, p, ttypetag(k));
      if (e->tag == 0) e = madd(w, p, ttypetag(k));
      e->kind = (unsigned char)kind;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static lua_Integer newobj(W *w, int kind, int edge, lua_Integer aux) {
  grow(w, (void **)&w->o, (size_t)w->count + 1, &w->ocap, 1, sizeof *w->o, 256, S_OBJV);
  lua_Integer id = ++w->count;
  w->o[id].parent = (uint32_t)w->cur;
  w->o[id].aux = (uint32_t)aux;
  setnilvalue(&w->o[id].key);
  w->o[id].kind = (unsigned char)kind;
  w->o[id].edge = (unsigned char)edge;
  return id;
}

static int kindof(const TValue *v) {
  switch (ttypetag(v)) {
  case LUA_VSHRSTR:
  case LUA_VLNGSTR:
    return K_STR;
  case LUA_VTABLE:
    return K_TABLE;
  case LUA_VUSERDATA:
    return K_UDATA;
  case LUA_VTHREAD:
    return K_THREAD;
  case LUA_VLCL:
    return K_LCL;
  case LUA_VCCL:
    return K_CCL;
  default:
    return 0; /* a light C function or light userdata: only by name */
  }
}

/* The number of the value v (an object, a light function or userdata),
   numbering it when it is new; key: the table key it was met at (E_VAL),
   else NULL. */
static lua_Integer ref(W *w, const TValue *v, int edge, lua_Integer aux, const TValue *key) {
  lua_State *L = w->L;
  const void *p = keyof(v);
  int tag = ttypetag(v);
  if ((w->mn + 1) * 2 > w->mcap) mgrow(w, w->mcap * 2); /* room to add it below */
  ment *e = mfind(w, p, tag);
  if (e->tag && e->id) return e->id;
  int kind = e->tag && e->kind ? e->kind : kindof(v);
  lua_Integer id = newobj(w, kind, edge, aux);
  if (key) w->o[id].key = *key;
  pushtv(L, v);
  lua_rawseti(L, S_OBJS, id); /* what the map keys by stays alive */
  if (!kind) {                /* the message names its path: give it a number for that */
    w->cur = id;
    if (ttislightuserdata(v)) fail(w, "light userdata %p has no name", pvalue(v));
    fail(w, "C function %p has no name", p);
  }
  if (!e->tag) { /* newobj and S_OBJS leave the map as it was */
    e->p = p;
    e->tag = (unsigned char)tag;
    e->kind = 0;
    w->mn++;
  }
  e->id = (uint32_t)id;
  return id;
}

/* The number of an object that is no Lua value (a prototype, an
   upvalue: by address; a chunk: by name), anchor on top (popped). */
static lua_Integer iref(W *w, int kind, int edge, lua_Integer aux) {
  lua_State *L = w->L;
  const TValue *a = s2v(L->top - 1);
  const void *p = ttislightuserdata(a) ? pvalue(a) : (const void *)tsvalue(a);
  ment *e = mfind(w, p, PART | kind);
  if (e->tag) {
    lua_pop(L, 1);
    return e->id;
  }
  lua_Integer id = newobj(w, kind, edge, aux);
  lua_rawseti(L, S_OBJS, id);
  madd(w, p, PART | kind)->id = (uint32_t)id;
  return id;
}

/* Writes the value v (met at edge, aux; key as ref's). */
static void w_tv(W *w, const TValue *v, int edge, lua_Integer aux, const TValue *key) {
  switch (ttypetag(v)) {
  case LUA_VNIL:
  case LUA_VEMPTY:
  case LUA_VABSTKEY:
    w_u8(w, V_NIL);
    break;
  case LUA_VFALSE:
    w_u8(w, V_FALSE);
    break;
  case LUA_VTRUE:
    w_u8(w, V_TRUE);
    break;
  case LUA_VNUMINT:
    w_u8(w, V_INT);
    w_int(w, ivalue(v));
    break;
  case LUA_VNUMFLT: {
    lua_Number d = fltvalue(v);
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    w_u8(w, V_FLT);
    w_u32(w, (uint32_t)u);
    w_u32(w, (uint32_t)(u >> 32));
    break;
  }
  default: {
    lua_Integer id = ref(w, v, edge, aux, key);
    w_u8(w, V_REF);
    w_var(w, (uint64_t)id);
  }
  }
}

/* Writes the value at stack index idx. */
static void w_value(W *w, int idx, int edge, lua_Integer aux) {
  w_tv(w, at(w->L, idx), edge, aux, NULL);
}

/* ---- code: a function is its chunk's text and its place in it ---- */

/* Pushes the text of the chunk named src, or fails. */
static void pushtext(W *w, TString *src) {
  lua_State *L = w->L;
  lua_rawgeti(L, S_NAMES, N_SOURCES);
  setsvalue2s(L, L->top, src);
  L->top++;
  if (lua_rawget(L, -2) == LUA_TSTRING) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 2);
  const char *name = getstr(src);
  if (tsslen(src) > 0 && name[0] != '@' && name[0] != '=') { /* a text chunk */
    setsvalue2s(L, L->top, src);
    L->top++;
    return;
  }
  fail(w, "no source text for chunk %s (weft__persist_source gives it)", name);
}

/* Pushes the main function chunk src compiles to (compiled once). */
static void pushchunk(W *w, TString *src) {
  lua_State *L = w->L;
  setsvalue2s(L, L->top, src);
  L->top++;
  if (lua_rawget(L, S_CHUNKS) == LUA_TFUNCTION) return;
  lua_pop(L, 1);
  pushtext(w, src);
  size_t len;
  const char *text = lua_tolstring(L, -1, &len);
  char id[LUA_IDSIZE];
  if (luaL_loadbufferx(L, text, len, getstr(src), "t") != LUA_OK)
    fail(w, "chunk %s does not compile: %s", persist_chunkid(id, getstr(src), tsslen(src)),
         lua_tostring(L, -1));
  lua_remove(L, -2);
  setsvalue2s(L, L->top, src);
  L->top++;
  lua_pushvalue(L, -2);
  lua_rawset(L, S_CHUNKS);
}

static void w_proto(W *w) {
  lua_State *L = w->L;
  Proto *p = lua_touserdata(L, -1);
  int path[PERSIST_MAXPATH];
  char id[LUA_IDSIZE];
  if (p->source == NULL) fail(w, "a function compiled without its chunk name (stripped)");
  pushchunk(w, p->source);
  int depth = weft__persist_findproto(p, clLvalue(s2v(L->top - 1))->p, path, 0);
  if (depth < 0)
    fail(w, "the text of chunk %s holds no function like this one (of line %d)",
         persist_chunkid(id, getstr(p->source), tsslen(p->source)), p->linedefined);
  lua_pop(L, 1);
  setsvalue2s(L, L->top, p->source);
  L->top++;
  w_var(w, (uint64_t)iref(w, K_CHUNK, E_CHUNK, 0));
  w_var(w, (uint64_t)depth);
  for (int i = 0; i < depth; i++) w_var(w, (uint64_t)path[i]);
  w_u8(w, p->numparams);
  w_u8(w, p->is_vararg);
  w_u8(w, p->maxstacksize);
  w_var(w, (uint64_t)p->sizeupvalues);
  w_var(w, (uint64_t)p->sizecode);
  w_u32(w, persist_codecrc(p));
}

/* A chunk: its name, and its text as a string of the save (a script's
   text is one string however many values hold it; a shared chunk's is
   a K_TEXT), or nothing when the name is the text. */
static void w_chunk(W *w) {
  lua_State *L = w->L;
  TString *src = tsvalue(s2v(L->top - 1));
  pushtext(w, src);
  size_t len, tlen;
  const char *name = lua_tolstring(L, -2, &len), *text = lua_tolstring(L, -1, &tlen);
  int same = len == tlen && memcmp(name, text, len) == 0;
  w_u8(w, (unsigned)same);
  w_bytes(w, name, len);
  if (!same) w_var(w, (uint64_t)ref(w, at(L, -1), E_TEXT, 0, NULL));
}

/* A shared chunk's text: the chunk's name, the text's length and CRC. */
static void w_text(W *w) {
  lua_State *L = w->L;
  size_t len;
  const char *text = lua_tolstring(L, -1, &len);
  lua_rawgeti(L, S_NAMES, N_SHAREDBY);
  lua_pushvalue(L, -2);
  lua_rawget(L, -2);
  w_string(w, -1);
  lua_pop(L, 2);
  w_var(w, len);
  w_u32(w, persist_crc(0, (const unsigned char *)text, len));
}

/* ---- the other records: each writes its object, on top of the stack ---- */

static void w_named(W *w) {
  lua_rawgeti(w->L, S_NAMES, N_BYVALUE);
  lua_pushvalue(w->L, -2);
  lua_rawget(w->L, -2);
  w_string(w, -1);
}

/* Notes a dead key about to be written (its 4 bytes next), the object
   it was at gc. */
static void dead(W *w, const void *gc) {
  grow(w, (void **)&w->dead, w->ndead, &w->dcap, 1, sizeof *w->dead, 64, S_DEADV);
  w->dead[w->ndead].gc = gc;
  w->dead[w->ndead++].at = w->n;
}

static void w_table(W *w) {
  lua_State *L = w->L;
  Table *t = hvalue(s2v(L->top - 1));
  unsigned asize = luaH_realasize(t), size = isdummy(t) ? 0 : sizenode(t);
  w_var(w, asize);
  w_var(w, t->alimit);
  w_u8(w, isrealasize(t) ? 0 : 1);
  w_u8(w, (unsigned)isdummy(t));
  if (!isdummy(t)) {
    w_u8(w, t->lsizenode);
    w_var(w, (uint64_t)(t->lastfree - t->node));
  }
  for (unsigned i = 0; i < asize; i++) w_tv(w, &t->array[i], E_IDX, (lua_Integer)i + 1, NULL);
  for (unsigned i = 0; i < size; i++) {
    Node *nd = gnode(t, i);
    if (keyisnil(nd))
      w_u8(w, V_FREE);
    else if (keyisdead(nd)) {
      /* the object it was, if the save holds it, is known at the end */
      w_u8(w, V_DEAD);
      dead(w, gcvalueraw(keyval(nd)));
      w_u32(w, 0);
    } else {
      TValue k;
      getnodekey(L, &k, nd);
      w_tv(w, &k, E_KEY, 0, NULL);
      if (isempty(gval(nd)))
        w_u8(w, V_NIL);
      else
        w_tv(w, gval(nd), E_VAL, 0, &k);
    }
    w_int(w, gnext(nd));
  }
  if (t->metatable) {
    sethvalue2s(L, L->top, t->metatable);
    L->top++;
    w_value(w, -1, E_MT, 0);
  } else
    w_u8(w, V_NIL);
  /* Lua finalizes it only if its metatable had __gc when it was set: a
     host may set one without, or add __gc after */
  w_u8(w, tofinalize(obj2gco(t)) ? 1 : 0);
}

static void w_udata(W *w) {
  lua_State *L = w->L;
  int obj = lua_gettop(L);
  Udata *u = uvalue(s2v(L->top - 1));
  void *block = lua_touserdata(L, obj);
  persist_tinfo *ti = NULL;
  if (lua_getmetatable(L, obj)) {
    lua_rawgeti(L, S_NAMES, N_TYPEMT);
    lua_pushvalue(L, -2);
    lua_rawget(L, -2);
    ti = lua_touserdata(L, -1);
  }
  if (ti == NULL) fail(w, "a userdata without a saver");
  w_var(w, u->len);
  w_var(w, u->nuvalue);
  w_u8(w, (unsigned)!ti->plain);
  if (ti->plain) {
    need(w, u->len);
    if (u->len) memcpy(w->p + w->n, block, u->len);
    w->n += u->len;
  } else {
    lua_getiuservalue(L, -1, 1);
    w_string(w, -1);
    lua_pop(L, 1);
  }
  lua_settop(L, obj);
  for (int i = 1; i <= u->nuvalue; i++) {
    lua_getiuservalue(L, obj, i);
    w_value(w, -1, E_UV, i);
    lua_pop(L, 1);
  }
  if (!ti->plain) {
    lua_pushvalue(L, obj);
    ti->save(L, block, u->len, ti->ud);
    if (lua_gettop(L) != obj + 2)
      fail(w, "a saver pushed %d values, not 1", lua_gettop(L) - obj - 1);
    w_value(w, -1, E_SAVER, 0);
    lua_settop(L, obj);
  }
  if (!lua_getmetatable(L, obj)) lua_pushnil(L);
  w_value(w, -1, E_MT, 0);
  w_u8(w, tofinalize(obj2gco(u)) ? 1 : 0); /* as for tables */
}

static void w_lclosure(W *w) {
  lua_State *L = w->L;
  LClosure *cl = clLvalue(s2v(L->top - 1));
  lua_pushlightuserdata(L, cl->p);
  w_var(w, (uint64_t)iref(w, K_PROTO, E_FN, 0));
  w_var(w, cl->nupvalues);
  for (int i = 0; i < cl->nupvalues; i++) {
    lua_pushlightuserdata(L, cl->upvals[i]);
    w_var(w, (uint64_t)iref(w, K_UPVAL, E_UPV, i + 1));
  }
}

static void w_cclosure(W *w) {
  lua_State *L = w->L;
  CClosure *cl = clCvalue(s2v(L->top - 1));
  lua_rawgeti(L, S_NAMES, N_BYVALUE);
  lua_pushcfunction(L, cl->f);
  if (lua_rawget(L, -2) != LUA_TSTRING) fail(w, "C function %p has no name", (void *)cl);
  w_string(w, -1);
  lua_pop(L, 2);
  w_var(w, cl->nupvalues);
  for (int i = 0; i < cl->nupvalues; i++) w_tv(w, &cl->upvalue[i], E_CUPV, i + 1, NULL);
}

/* A coroutine a save can hold: not the main thread, not running nor
   normal (one that resumed another), not matched by name. */
static int holdable(W *w, lua_State *T) {
  lua_State *L = w->L;
  if (T == G(L)->mainthread || (T->status == LUA_OK && T->ci != &T->base_ci)) return 0;
  lua_rawgeti(L, S_NAMES, N_BYVALUE);
  setthvalue2s(L, L->top, T);
  L->top++;
  int named = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  return !named;
}

/* An upvalue open in a coroutine the save holds stays open into its
   stack slot; any other (open in the main thread, in a running one) is
   written closed, with its value now. */
static void w_upval(W *w) {
  lua_State *L = w->L;
  UpVal *uv = lua_touserdata(L, -1);
  if (upisopen(uv)) {
    lua_State *T = G(L)->twups;
    for (; T != NULL; T = T->twups) {
      UpVal *u = T->openupval;
      while (u != NULL && u != uv) u = u->u.open.next;
      if (u) break;
    }
    if (T != NULL && holdable(w, T)) {
      w_u8(w, 1);
      setthvalue2s(L, L->top, T);
      L->top++;
      w_value(w, -1, E_OWNER, 0);
      w_var(w, (uint64_t)(uplevel(uv) - T->stack));
      return;
    }
  }
  w_u8(w, 0);
  w_tv(w, uv->v, E_CLOSED, 0, NULL);
}

#if defined(LUA_COMPAT_LT_LE)
#define CIST_KEEPLEQ CIST_LEQ
#else
#define CIST_KEEPLEQ 0
#endif
/* The call status bits a suspended frame may have. */
#define CIST_KEEP                                                                                  \
  (CIST_OAH | CIST_C | CIST_FRESH | CIST_YPCALL | CIST_TAIL | CIST_HOOKYIELD | CIST_CLSRET |       \
   (7 << CIST_RECST) | CIST_KEEPLEQ)

static void w_frame(W *w, lua_State *T, CallInfo *ci, int level) {
  lua_State *L = w->L;
  unsigned st = ci->callstatus;
  lua_Integer u2 = 0;
  if (st & ~CIST_KEEP) fail(w, "a coroutine stopped in a hook or a finalizer (frame %d)", level);
  w_var(w, st);
  w_var(w, (uint64_t)(ci->func - T->stack));
  w_int(w, ci->nresults);
  if (isLua(ci)) {
    const Proto *p = clLvalue(s2v(ci->func))->p;
    lua_Integer pc = ci->u.l.savedpc - p->code;
    w_var(w, (uint64_t)pc);
    w_var(w, p->is_vararg ? (uint64_t)ci->u.l.nextraargs : 0);
    if (pc >= 1 && GET_OPCODE(p->code[pc - 1]) == OP_RETURN) u2 = ci->u2.nres;
  } else {
    w_var(w, (uint64_t)(ci->top - T->stack));
    if (ci->u.c.k) {
      lua_rawgeti(L, S_NAMES, N_KBYPTR);
      lua_pushcfunction(L, persist_kfn(ci->u.c.k));
      if (lua_rawget(L, -2) != LUA_TSTRING)
        fail(w, "continuation %p of a suspended C function has no name (frame %d)",
             (void *)ci->u.c.k, level);
      w_string(w, -1);
      lua_pop(L, 2);
    } else
      w_var(w, 0);
    w_int(w, (lua_Integer)ci->u.c.ctx);
    w_var(w, (st & CIST_YPCALL) ? (uint64_t)ci->u.c.old_errfunc / sizeof(StackValue) : 0);
    if (st & CIST_YPCALL)
      u2 = ci->u2.funcidx / (lua_Integer)sizeof(StackValue);
    else if (ci == T->ci)
      u2 = ci->u2.nyield;
    else if (st & CIST_CLSRET)
      u2 = ci->u2.nres;
  }
  w_int(w, u2);
}

static void w_thread(W *w) {
  lua_State *L = w->L;
  lua_State *T = lua_tothread(L, -1);
  if (T == G(L)->mainthread)
    fail(w, "the main thread has no name (weft__persist_name_lua names it)");
  if (T->status == LUA_OK && T->ci != &T->base_ci)
    fail(w, T == L ? "a running coroutine" : "a normal coroutine (it resumed another)");
  lua_Integer top = T->top - T->stack;
  w_u8(w, T->status);
  w_var(w, (uint64_t)stacksize(T));
  w_var(w, (uint64_t)top);
  luaL_checkstack(L, 8, NULL);
  for (lua_Integer s = 1; s < top; s++) w_tv(w, s2v(T->stack + s), E_SLOT, s, NULL);
  w_var(w, (uint64_t)T->errfunc / sizeof(StackValue));
  /* the to-be-closed list, innermost first, then written outermost first */
  int few[16], *slot = few, ntbc = 0;
  if (T->tbclist > T->stack && top > 16) slot = lua_newuserdatauv(L, (size_t)top * sizeof(int), 0);
  for (StkId tbc = T->tbclist; tbc > T->stack && ntbc < (slot == few ? 16 : top);) {
    slot[ntbc++] = (int)(tbc - T->stack);
    tbc -= tbc->tbclist.delta;
    while (tbc > T->stack && tbc->tbclist.delta == 0) tbc -= MAXDELTA;
  }
  w_var(w, (uint64_t)ntbc);
  while (ntbc > 0) w_var(w, (uint64_t)slot[--ntbc]);
  if (slot != few) lua_pop(L, 1);
  int nci = 0;
  if (T->status == LUA_YIELD)
    for (CallInfo *ci = T->ci; ci != &T->base_ci; ci = ci->previous) nci++;
  w_var(w, (uint64_t)nci);
  if (nci == 0) return;
  CallInfo *ci = &T->base_ci;
  for (int level = 1; level <= nci; level++) {
    ci = ci->next;
    w_frame(w, T, ci, level);
  }
}

static void record(W *w, lua_Integer id) {
  lua_State *L = w->L;
  int top = lua_gettop(L);
  luaL_checkstack(L, 40, NULL);
  w->cur = id;
  w_u8(w, w->o[id].kind);
  size_t at = w->n, dead = w->ndead;
  w_u8(w, 0); /* the payload's length, a varint: one byte if under 128 */
  lua_rawgeti(L, S_OBJS, id);
  switch (w->o[id].kind) {
  case K_STR:
    w_string(w, -1);
    break;
  case K_NAMED:
    w_named(w);
    break;
  case K_CHUNK:
    w_chunk(w);
    break;
  case K_PROTO:
    w_proto(w);
    break;
  case K_TABLE:
    w_table(w);
    break;
  case K_UDATA:
    w_udata(w);
    break;
  case K_LCL:
    w_lclosure(w);
    break;
  case K_CCL:
    w_cclosure(w);
    break;
  case K_THREAD:
    w_thread(w);
    break;
  case K_UPVAL:
    w_upval(w);
    break;
  case K_TEXT:
    w_text(w);
    break;
  }
  lua_settop(L, top);
  size_t len = w->n - at - 1, more = 0;
  if (len > UINT32_MAX) fail(w, "an object of over 4 GiB");
  for (size_t v = len >> 7; v; v >>= 7) more++;
  if (more) { /* the payload moves up to make room */
    need(w, more);
    memmove(w->p + at + 1 + more, w->p + at + 1, len);
    w->n += more;
    for (size_t i = dead; i < w->ndead; i++) w->dead[i].at += more;
  }
  for (size_t i = 0; i < more; i++, len >>= 7) w->p[at + i] = (unsigned char)(len | 128);
  w->p[at + more] = (unsigned char)len;
}

static int dead_order(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const wdead *)a)->gc, y = (uintptr_t)((const wdead *)b)->gc;
  return (x > y) - (x < y);
}

/* Points each dead key at the object it was, when the save holds it
   (a script's next(t, k) over a key removed while it walked finds its
   place by that object): the dead keys sorted by address, each object
   of the map looked up among them. O(objects * log(dead keys)). */
static void settle_dead(W *w) {
  if (w->ndead == 0) return;
  qsort(w->dead, w->ndead, sizeof *w->dead, dead_order);
  for (size_t i = 0; i < w->mcap; i++) {
    const ment *e = &w->m[i];
    if (!e->id || (e->tag & PART) || e->tag == LUA_VLCF || e->tag == LUA_VLIGHTUSERDATA) continue;
    uintptr_t gc = (uintptr_t)e->p;
    size_t lo = 0, hi = w->ndead; /* the first dead key at gc or above */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if ((uintptr_t)w->dead[mid].gc < gc)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (; lo < w->ndead && (uintptr_t)w->dead[lo].gc == gc; lo++)
      put32(w->p + w->dead[lo].at, e->id);
  }
}

int weft__persist_write(lua_State *L) {
  W w = {0};
  w.L = L;
  luaL_checkstack(L, 20, NULL);
  lua_settop(L, S_ROOT);
  for (int i = S_BUF; i <= S_DEADV; i++) lua_pushnil(L);
  lua_newtable(L); /* S_OBJS */
  lua_newtable(L); /* S_CHUNKS */
  need(&w, PERSIST_HEADER + 4);
  memset(w.p, 0, PERSIST_HEADER + 4);
  w.n = PERSIST_HEADER + 4;
  mgrow(&w, 1024);
  mseed(&w, N_BYVALUE, K_NAMED);
  mseed(&w, N_SHAREDBY, K_TEXT);
  w_value(&w, S_ROOT, E_ROOT, 0);
  for (lua_Integer id = 1; id <= w.count; id++) record(&w, id);
  if (w.n - PERSIST_HEADER > UINT32_MAX || w.count > UINT32_MAX) {
    w.cur = 0;
    fail(&w, "a save of over 4 GiB");
  }
  put32(w.p + PERSIST_HEADER, (uint32_t)w.count);
  settle_dead(&w);
  unsigned char *h = w.p;
  memcpy(h, PERSIST_MAGIC, 8);
  h[8] = PERSIST_VERSION & 255;
  h[9] = PERSIST_VERSION >> 8;
  put32(h + 12, LUA_VERSION_RELEASE_NUM);
  h[16] = sizeof(lua_Integer);
  h[17] = sizeof(lua_Number);
  h[18] = sizeof(Instruction);
  put32(h + 20, G(L)->seed);
  put32(h + 24, (uint32_t)(w.n - PERSIST_HEADER));
  uint32_t crc = persist_crc(0, h, 28);
  put32(h + 28, persist_crc(crc, h + PERSIST_HEADER, w.n - PERSIST_HEADER));
  lua_pushlstring(L, (const char *)w.p, w.n);
  return 1;
}
