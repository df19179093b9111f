/* The save format's pieces that the writer (persist_save.c) and the
   reader (persist_load.c, persist_frames.c) share: the header, record
   kinds and value tags, the names set's layout, the checksum, and the
   reader's cursor. docs/save.md describes the format. */
#ifndef WEFT_PERSIST_FMT_H
#define WEFT_PERSIST_FMT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "persist_crc.h"

/* Lua's internals (the build puts their directory on this file's
   include path: Makefile, PERSIST_SRC). */
#include "lapi.h"
#include "ldo.h"
#include "lfunc.h"
#include "lgc.h"
#include "lmem.h"
#include "lobject.h"
#include "lopcodes.h"
#include "lstate.h"
#include "lstring.h"
#include "ltable.h"

/* The header: magic, format version, Lua's release, the sizes of its
   numbers, the saving state's string hash seed, the body's length and a
   CRC-32 of the header's first 28 bytes and the body. Little-endian. */
#define PERSIST_MAGIC "WEFTSAVE"
#define PERSIST_VERSION 4 /* 4: a table's or userdata's finalizer mark after its metatable */
#define PERSIST_HEADER 32

/* A record: its kind (a byte), its payload's length (a varint), the
   payload. An object's number is its record's place, from 1. */
enum {
  K_STR = 1, /* length, bytes */
  K_NAMED,   /* name: a value of the loading state's names set */
  K_CHUNK,   /* flag, chunk name, text: a string's number (flag 0), none (1: the name is it) */
  K_PROTO,   /* chunk, path of child indices, shape and code checksum */
  K_TABLE,   /* array part, hash part node by node, metatable */
  K_UDATA,   /* size, user values, how (bytes or a type), metatable */
  K_LCL,     /* prototype, upvalues */
  K_CCL,     /* function name, upvalue values */
  K_THREAD,  /* status, stack, to-be-closed list, call frames */
  K_UPVAL,   /* closed: its value; open: thread and stack slot */
  K_TEXT,    /* a string, a shared chunk's text: chunk name, length, CRC-32 */
  K_LAST = K_TEXT
};

/* A value: a tag byte, then what it needs. */
enum {
  V_NIL,
  V_FALSE,
  V_TRUE,
  V_INT,  /* zigzag varint */
  V_FLT,  /* 8 bytes: the double's bits */
  V_REF,  /* varint: an object's number */
  V_DEAD, /* a hash node's dead key: 4 bytes, the object it was, 0: none */
  V_FREE  /* a hash node never used (nil key) */
};

/* Whether objects of kind k are Lua values (the others are parts: a
   chunk, a prototype, an upvalue). */
static inline int persist_isvalue(int k) { return k != K_CHUNK && k != K_PROTO && k != K_UPVAL; }

/* The names set (weft__persist_names): a table of these tables. */
enum {
  N_BYNAME = 1, /* name -> value */
  N_BYVALUE,    /* value -> name (a C function: its light function) */
  N_KBYNAME,    /* name -> continuation (as a light C function) */
  N_KBYPTR,     /* continuation -> name */
  N_TYPES,      /* type name -> userdata holding a persist_tinfo */
  N_TYPEMT,     /* metatable -> the same userdata */
  N_SOURCES,    /* chunk name -> text */
  N_KRULES,     /* continuation name -> { {function, ctx, callee offset, results}, ... } */
  N_SHARED,     /* shared chunk name -> text */
  N_SHAREDBY,   /* shared text -> chunk name */
  N_COUNT = N_SHAREDBY
};

/* A userdata type's saver as the names set keeps it. */
typedef struct persist_tinfo {
  void (*save)(lua_State *L, void *block, size_t size, void *ud);
  void (*load)(lua_State *L, void *block, size_t size, void *ud);
  void *ud;
  size_t size; /* the block's size, 0: any up to PERSIST_MAX_BLOCK */
  int plain;   /* the block is copied byte for byte */
} persist_tinfo;

/* The largest block of a typed userdata a save may ask for. */
#define PERSIST_MAX_BLOCK ((size_t)1 << 20)
/* The most call frames a saved coroutine may hold. */
#define PERSIST_MAX_FRAMES 50000

/* A continuation as the names set keys it: a light C function (a
   function pointer cast to another's type and back keeps its value). */
static inline lua_CFunction persist_kfn(lua_KFunction k) {
  return (lua_CFunction)(void (*)(void))k;
}
static inline lua_KFunction persist_kof(lua_CFunction f) {
  return (lua_KFunction)(void (*)(void))f;
}

/* A chunk's name as Lua's messages give it ("game/x.lua:", [string
   "local t = ..."]), in id (LUA_IDSIZE bytes). */
static inline const char *persist_chunkid(char *id, const char *name, size_t len) {
  luaO_chunkid(id, name, len);
  return id;
}

/* CRC-32 (persist_crc.c). */
static inline uint32_t persist_crc(uint32_t crc, const unsigned char *p, size_t n) {
  return weft__persist_crc(crc, p, n);
}

static inline uint32_t persist_get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The CRC-32 of a function's code, each instruction little-endian. */
static inline uint32_t persist_codecrc(const Proto *p) {
  unsigned char b[256];
  uint32_t crc = 0;
  for (int i = 0; i < p->sizecode;) {
    size_t n = 0;
    for (; i < p->sizecode && n < sizeof b; i++, n += 4) {
      uint32_t v = (uint32_t)p->code[i];
      b[n] = (unsigned char)v;
      b[n + 1] = (unsigned char)(v >> 8);
      b[n + 2] = (unsigned char)(v >> 16);
      b[n + 3] = (unsigned char)(v >> 24);
    }
    crc = persist_crc(crc, b, n);
  }
  return crc;
}

/* ---- the reader ---- */

/* One record, found by the first pass. Offsets in the body fit 32 bits
   (a save is at most 4 GiB). */
typedef struct rrec {
  uint32_t at, end; /* its payload in the body */
  uint32_t fill;    /* where its contents start, after its shape */
  uint32_t mt;      /* a table's or userdata's metatable (an object's number, 0: none), set last */
  uint32_t saved;   /* a typed userdata: where what its saver gave is written */
  int top;          /* a thread: its stack's top slot */
  int size;         /* a thread: its stack's size */
  unsigned char kind;
  unsigned char fin; /* a table or userdata: Lua finalizes it (marked when its metatable was set) */
  void *p;           /* a prototype's, an upvalue's or a type's address */
} rrec;

/* The reader's state. Its arrays are userdata on L's stack: a refusal
   (a Lua error) leaves nothing to free. */
typedef struct R {
  lua_State *L;
  const unsigned char *body;
  size_t len;
  size_t pos, end;            /* the cursor, and the end of the record it is in */
  lua_Integer n;              /* objects */
  lua_Integer id;             /* the object being read, for messages (0: none) */
  rrec *rec;                  /* [1..n] */
  TValue *val;                /* [1..n]: the object as a value (anchored in objs) */
  uint32_t *order;            /* the objects by kind, each kind in order (userdata) */
  uint32_t first[K_LAST + 2]; /* kind k's objects: order[first[k] .. first[k + 1] - 1] */
  int objs;                   /* stack index of the table anchoring every object */
  int names;                  /* stack index of the names set */
  int scratch;                /* stack index of the scratch block (a userdata, or nil) */
  void *sp;                   /* the scratch block */
  size_t scap;                /* its size */
  int exact;                  /* the saving state hashed strings as this one does */
  lua_Integer root;           /* the root's object number, 0: a scalar (rootv) */
  TValue rootv;
} R;

/* A block of at least n bytes for the reader's passing use (what it held
   before is lost). May raise (memory). */
static inline void *persist_scratch(R *r, size_t n) {
  if (n > r->scap) {
    size_t cap = r->scap ? r->scap : 256;
    while (cap < n) cap *= 2;
    r->sp = lua_newuserdatauv(r->L, cap, 0);
    lua_replace(r->L, r->scratch);
    r->scap = cap;
  }
  return r->sp;
}

/* Refuses the save: raises "bad save: object N: ..." on r->L. */
static inline l_noret persist_bad(R *r, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->id > 0)
    luaL_error(r->L, "bad save: object %I: %s", (LUAI_UACINT)r->id, msg);
  else
    luaL_error(r->L, "bad save: %s", msg);
  abort(); /* not reached: luaL_error does not return */
}

static inline unsigned r_u8(R *r) {
  if (r->pos >= r->end) persist_bad(r, "cut short");
  return r->body[r->pos++];
}

static inline uint32_t r_u32(R *r) {
  if (r->end - r->pos < 4) persist_bad(r, "cut short");
  uint32_t v = persist_get32(r->body + r->pos);
  r->pos += 4;
  return v;
}

/* An unsigned LEB128 number of at most 64 bits. */
static inline uint64_t r_var(R *r) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    unsigned b = r_u8(r);
    if (shift == 63 && b > 1) persist_bad(r, "a number over 64 bits");
    v |= (uint64_t)(b & 127) << shift;
    if (!(b & 128)) return v;
    if (shift == 63) persist_bad(r, "a number over 64 bits");
  }
}

static inline lua_Integer r_int(R *r) {
  uint64_t u = r_var(r);
  return (lua_Integer)((u >> 1) ^ (~(u & 1) + 1));
}

/* A count of things each taking at least `each` bytes of what is left
   of the record: what a count can ask to allocate is bounded by the
   save's length. */
static inline size_t r_count(R *r, size_t each) {
  uint64_t v = r_var(r);
  if (v > (r->end - r->pos) / each)
    persist_bad(r, "a count of %llu runs past its record", (unsigned long long)v);
  return (size_t)v;
}

/* An unsigned number in [lo, hi] (hi >= 0). */
static inline lua_Integer r_urange(R *r, lua_Integer lo, lua_Integer hi, const char *what) {
  uint64_t v = r_var(r);
  if (hi < lo || v > (uint64_t)hi || (lua_Integer)v < lo)
    persist_bad(r, "%s %llu out of range", what, (unsigned long long)v);
  return (lua_Integer)v;
}

/* A signed number in [lo, hi]. */
static inline lua_Integer r_range(R *r, lua_Integer lo, lua_Integer hi, const char *what) {
  lua_Integer v = r_int(r);
  if (v < lo || v > hi) persist_bad(r, "%s %lld out of range", what, (long long)v);
  return v;
}

static inline const unsigned char *r_bytes(R *r, size_t n) {
  if (n > r->end - r->pos) persist_bad(r, "cut short");
  const unsigned char *p = r->body + r->pos;
  r->pos += n;
  return p;
}

/* An object's number, of a kind among the mask's (1 << kind). */
static inline lua_Integer r_id(R *r, unsigned mask, const char *what) {
  uint64_t v = r_var(r);
  if (v < 1 || v > (uint64_t)r->n)
    persist_bad(r, "%s: no object %llu", what, (unsigned long long)v);
  if (!(mask & (1u << r->rec[v].kind)))
    persist_bad(r, "%s: object %llu is of the wrong kind", what, (unsigned long long)v);
  return (lua_Integer)v;
}

#define VALUE_KINDS                                                                                \
  ((1u << K_STR) | (1u << K_NAMED) | (1u << K_TABLE) | (1u << K_UDATA) | (1u << K_LCL) |           \
   (1u << K_CCL) | (1u << K_THREAD) | (1u << K_TEXT))

/* A value: a scalar, or a reference to an object that is a value. */
static inline void r_value(R *r, TValue *o) {
  unsigned tag = r_u8(r);
  o->value_.i = 0;
  switch (tag) {
  case V_NIL:
    setnilvalue(o);
    break;
  case V_FALSE:
    setbfvalue(o);
    break;
  case V_TRUE:
    setbtvalue(o);
    break;
  case V_INT:
    setivalue(o, r_int(r));
    break;
  case V_FLT: {
    uint64_t u = r_u32(r);
    u |= (uint64_t)r_u32(r) << 32;
    lua_Number d;
    memcpy(&d, &u, sizeof d);
    setfltvalue(o, d);
    break;
  }
  case V_REF: {
    lua_Integer id = r_id(r, VALUE_KINDS, "a value");
    setobj(r->L, o, &r->val[id]);
    break;
  }
  default:
    persist_bad(r, "a value of unknown tag %u", tag);
  }
}

#endif
