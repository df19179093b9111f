/* The reader of saves (weft__persist_load): checks the header and the
   checksum, indexes the records, then builds the graph in passes (what
   needs nothing, the code, the objects' shells, the upvalues), fills
   every object, and only then runs the types' loaders and sets the
   metatables, so a refusal never leaves a finalizer to run on a half
   built object. Every field is checked before it is used. */
#include "persist_load.h"

#include "persist_frames.h"
#include "ltm.h"

/* ---- objects that need nothing else ---- */

static void anchor(R *r, lua_Integer id) {
  setobj(r->L, &r->val[id], s2v(r->L->top - 1));
  lua_rawseti(r->L, r->objs, id);
}

static void new_string(R *r, lua_Integer id) {
  size_t len = r_count(r, 1);
  lua_pushlstring(r->L, (const char *)r_bytes(r, len), len);
  anchor(r, id);
}

static void new_named(R *r, lua_Integer id) {
  lua_State *L = r->L;
  size_t len = r_count(r, 1);
  lua_rawgeti(L, r->names, N_BYNAME);
  lua_pushlstring(L, (const char *)r_bytes(r, len), len);
  lua_pushvalue(L, -1);
  if (lua_rawget(L, -3) == LUA_TNIL)
    luaL_error(L, "the save names '%s', which the names set lacks", lua_tostring(L, -2));
  anchor(r, id);
  lua_pop(L, 2);
}

/* A shared chunk's text: the loading side's, when it is the saving
   side's (its length and CRC). */
static void new_text(R *r, lua_Integer id) {
  lua_State *L = r->L;
  size_t len = r_count(r, 1);
  lua_rawgeti(L, r->names, N_SHARED);
  lua_pushlstring(L, (const char *)r_bytes(r, len), len);
  uint64_t tlen = r_var(r);
  uint32_t crc = r_u32(r);
  lua_pushvalue(L, -1);
  if (lua_rawget(L, -3) != LUA_TSTRING)
    luaL_error(L, "the save shares chunk %s, which the names set lacks", lua_tostring(L, -2));
  size_t have;
  const char *text = lua_tolstring(L, -1, &have);
  if (have != tlen || persist_crc(0, (const unsigned char *)text, have) != crc)
    luaL_error(L, "chunk %s: this build's text differs from the save's", lua_tostring(L, -2));
  anchor(r, id);
  lua_pop(L, 2);
}

/* A chunk: its text compiled here, in text mode. */
static void new_chunk(R *r, lua_Integer id) {
  lua_State *L = r->L;
  unsigned same = r_u8(r);
  if (same > 1) persist_bad(r, "a chunk flag %u", same);
  size_t len = r_count(r, 1);
  lua_pushlstring(L, (const char *)r_bytes(r, len), len);
  const char *name = lua_tostring(L, -1);
  if (strlen(name) != len) persist_bad(r, "a chunk name with a zero byte");
  const char *text = name;
  size_t tlen = len;
  if (!same) {
    lua_Integer t = r_id(r, (1u << K_STR) | (1u << K_TEXT), "a chunk's text");
    text = getstr(tsvalue(&r->val[t]));
    tlen = tsslen(tsvalue(&r->val[t]));
  }
  char cid[LUA_IDSIZE];
  if (luaL_loadbufferx(L, text, tlen, name, "t") != LUA_OK)
    persist_bad(r, "chunk %s does not compile: %s", persist_chunkid(cid, name, len),
                lua_tostring(L, -1));
  r->rec[id].p = clLvalue(s2v(L->top - 1))->p;
  anchor(r, id);
  lua_pop(L, 1);
}

/* A function: found in its chunk by its path, and checked to be the
   one saved. */
static void new_proto(R *r, lua_Integer id) {
  lua_Integer c = r_id(r, 1u << K_CHUNK, "a function's chunk");
  Proto *p = r->rec[c].p;
  size_t depth = r_count(r, 1);
  for (size_t i = 0; i < depth; i++) {
    lua_Integer k = r_urange(r, 0, p->sizep - 1, "a nested function's index");
    p = p->p[k];
  }
  unsigned np = r_u8(r), va = r_u8(r), ms = r_u8(r);
  uint64_t nup = r_var(r), ncode = r_var(r);
  uint32_t crc = r_u32(r), got = persist_codecrc(p);
  if (np != p->numparams || va != p->is_vararg || ms != p->maxstacksize ||
      nup != (uint64_t)p->sizeupvalues || ncode != (uint64_t)p->sizecode || crc != got)
    persist_bad(r, "a function (of line %d) compiles here to other code", p->linedefined);
  r->rec[id].p = p;
}

/* ---- shells ---- */

typedef struct tshape {
  size_t asize, alimit, lastfree, size;
  int bitras, dummy, lsize;
} tshape;

static tshape table_shape(R *r) {
  tshape s;
  s.asize = r_count(r, 1);
  if (s.asize > INT_MAX) persist_bad(r, "an array of %zu", s.asize);
  s.alimit = (size_t)r_urange(r, 0, (lua_Integer)s.asize, "an array limit");
  s.bitras = (int)r_u8(r);
  s.dummy = (int)r_u8(r);
  if (s.bitras > 1 || s.dummy > 1) persist_bad(r, "a table flag out of range");
  s.size = 0;
  s.lastfree = 0;
  s.lsize = 0;
  if (!s.dummy) {
    s.lsize = (int)r_u8(r);
    if (s.lsize > 30 || ((size_t)1 << s.lsize) > (r->end - r->pos) / 2)
      persist_bad(r, "a hash part of 2^%d nodes runs past its record", s.lsize);
    s.size = (size_t)1 << s.lsize;
    s.lastfree = (size_t)r_urange(r, 0, (lua_Integer)s.size, "a free position");
  }
  return s;
}

static void new_table(R *r, lua_Integer id) {
  lua_State *L = r->L;
  tshape s = table_shape(r);
  lua_createtable(L, (int)s.asize, (int)s.size);
  Table *t = hvalue(s2v(L->top - 1));
  t->alimit = (unsigned)s.alimit;
  if (s.bitras) setnorealasize(t);
  if (luaH_realasize(t) != s.asize) { /* its array's size must read as it is */
    t->alimit = (unsigned)s.asize;
    setrealasize(t);
    persist_bad(r, "an array limit %zu that does not fit %zu", s.alimit, s.asize);
  }
  anchor(r, id);
  r->rec[id].fill = r->pos;
}

static persist_tinfo *typeof_name(R *r, const char *name, size_t len) {
  lua_State *L = r->L;
  lua_rawgeti(L, r->names, N_TYPES);
  lua_pushlstring(L, name, len);
  lua_rawget(L, -2);
  persist_tinfo *ti = lua_touserdata(L, -1);
  if (ti == NULL)
    luaL_error(L, "the save has userdata of type '%s', which the names set lacks",
               lua_tostring(L, -1));
  lua_pop(L, 2);
  return ti;
}

static void new_udata(R *r, lua_Integer id) {
  lua_State *L = r->L;
  uint64_t size64 = r_var(r);
  if (size64 > r->len + PERSIST_MAX_BLOCK)
    persist_bad(r, "a userdata of %llu bytes", (unsigned long long)size64);
  size_t size = (size_t)size64; /* the checks below bound it further */
  int nuv = (int)r_urange(r, 0, USHRT_MAX, "a count of user values");
  if ((size_t)nuv > r->end - r->pos) persist_bad(r, "%d user values run past the record", nuv);
  unsigned typed = r_u8(r);
  if (typed > 1) persist_bad(r, "a userdata flag %u", typed);
  const unsigned char *bytes = NULL;
  if (!typed)
    bytes = r_bytes(r, size);
  else {
    size_t len = r_count(r, 1);
    const char *name = (const char *)r_bytes(r, len);
    persist_tinfo *ti = typeof_name(r, name, len);
    if (ti->plain || (ti->size ? size != ti->size : size > PERSIST_MAX_BLOCK))
      persist_bad(r, "a userdata of %zu bytes for its type", size);
    r->rec[id].p = ti;
  }
  void *block = lua_newuserdatauv(L, size, nuv);
  if (size) memset(block, 0, size);
  if (bytes && size) memcpy(block, bytes, size);
  anchor(r, id);
  r->rec[id].fill = r->pos;
}

static void new_lclosure(R *r, lua_Integer id) {
  lua_State *L = r->L;
  Proto *p = r->rec[r_id(r, 1u << K_PROTO, "a function's code")].p;
  if (r_var(r) != (uint64_t)p->sizeupvalues) persist_bad(r, "a function with the wrong upvalues");
  LClosure *cl = luaF_newLclosure(L, p->sizeupvalues);
  cl->p = p;
  setclLvalue2s(L, L->top, cl);
  L->top++;
  anchor(r, id);
  r->rec[id].fill = r->pos;
}

static void new_cclosure(R *r, lua_Integer id) {
  lua_State *L = r->L;
  size_t len = r_count(r, 1);
  lua_rawgeti(L, r->names, N_BYNAME);
  lua_pushlstring(L, (const char *)r_bytes(r, len), len);
  lua_pushvalue(L, -1);
  lua_rawget(L, -3);
  lua_CFunction f = lua_tocfunction(L, -1);
  if (f == NULL)
    luaL_error(L, "the save names C function '%s', which the names set lacks", lua_tostring(L, -2));
  lua_pop(L, 3);
  int n = (int)r_urange(r, 0, 255, "a count of upvalues");
  if ((size_t)n > r->end - r->pos) persist_bad(r, "%d upvalues run past the record", n);
  CClosure *cl = luaF_newCclosure(L, n);
  cl->f = f;
  for (int i = 0; i < n; i++) setnilvalue(&cl->upvalue[i]);
  setclCvalue(L, s2v(L->top), cl);
  L->top++;
  anchor(r, id);
  r->rec[id].fill = r->pos;
}

/* An upvalue, held by a closure of one upvalue until its own closures
   hold it. */
static void new_upval(R *r, lua_Integer id) {
  lua_State *L = r->L;
  unsigned open = r_u8(r);
  if (open > 1) persist_bad(r, "an upvalue flag %u", open);
  LClosure *holder = luaF_newLclosure(L, 1);
  setclLvalue2s(L, L->top, holder);
  L->top++;
  lua_rawseti(L, r->objs, id);
  UpVal *uv;
  if (open) {
    if (r_u8(r) != V_REF) persist_bad(r, "an open upvalue outside a coroutine");
    lua_Integer t = r_id(r, 1u << K_THREAD, "an upvalue's coroutine");
    int s = (int)r_urange(r, 1, r->rec[t].top - 1, "an upvalue's slot");
    uv = weft__persist_upval_open(L, thvalue(&r->val[t]), s);
  } else {
    uv = gco2upv(luaC_newobj(L, LUA_VUPVAL, sizeof(UpVal)));
    uv->v = &uv->u.value;
    uv->tbc = 0;
    setnilvalue(uv->v);
  }
  holder->upvals[0] = uv;
  luaC_objbarrier(L, holder, uv);
  r->rec[id].p = uv;
  r->rec[id].fill = r->pos;
}

/* ---- contents ---- */

/* Checks that every key of t (a table laid out node for node as the
   save has it, keys that hash alike in both states) is found where it
   lies, by Lua's own lookup, and that the chains are Lua's: disjoint,
   without loops, never through a node no key ever took (free[i] 1; 2:
   a dead key), which a later insertion would take and splice a loop. */
static void check_layout(R *r, Table *t, const unsigned char *free, unsigned char *mark) {
  lua_State *L = r->L;
  size_t n = (size_t)1 << t->lsizenode;
  int size = (int)n;
  memset(mark, 0, n);
  for (int i = 0; i < size; i++) { /* how many chains lead to each node */
    int j = i + gnext(gnode(t, i));
    if (j != i && (free[j] == 1 || mark[j]++)) persist_bad(r, "a hash chain out of shape");
  }
  memset(mark, 0, n);
  for (int i = 0; i < size; i++) { /* 1: on the walk from i, 2: ends well */
    int j = i;
    while (mark[j] == 0) {
      mark[j] = 1;
      if (gnext(gnode(t, j)) == 0) break;
      j += gnext(gnode(t, j));
      if (mark[j] == 1) persist_bad(r, "a hash chain that loops");
    }
    for (j = i; mark[j] == 1; j += gnext(gnode(t, j))) mark[j] = 2;
  }
  for (int i = 0; i < size; i++) {
    Node *nd = gnode(t, i);
    if (free[i]) continue;
    TValue k;
    getnodekey(L, &k, nd);
    if (luaH_get(t, &k) != gval(nd)) persist_bad(r, "a key that is not where its hash leads");
  }
}

/* A metatable: nil (0) or a table's object number. */
/* A finalizer mark: 0 or 1. */
static unsigned char r_fin(R *r) {
  unsigned v = r_u8(r);
  if (v > 1) persist_bad(r, "a finalizer mark not 0 or 1");
  return (unsigned char)v;
}

static uint32_t r_mt(R *r) {
  unsigned tag = r_u8(r);
  if (tag == V_NIL) return 0;
  lua_Integer mt = tag == V_REF ? r_id(r, VALUE_KINDS, "a metatable") : 0;
  if (!mt || !ttistable(&r->val[mt])) persist_bad(r, "a metatable not a table");
  return (uint32_t)mt;
}

static void fill_table(R *r, lua_Integer id) {
  lua_State *L = r->L;
  r->pos = r->rec[id].at;
  tshape s = table_shape(r);
  Table *t = hvalue(&r->val[id]);
  TValue v, k;
  for (size_t i = 0; i < s.asize; i++) {
    r_value(r, &v);
    setobj2t(L, &t->array[i], &v);
    luaC_barrierback(L, obj2gco(t), &v);
  }
  int exact = r->exact;
  unsigned char *free = s.size ? persist_scratch(r, 2 * s.size) : NULL; /* then check_layout's */
  for (size_t i = 0; i < s.size; i++) {
    Node *nd = gnode(t, i);
    unsigned tag = r->pos < r->end ? r->body[r->pos] : 0;
    free[i] = tag == V_FREE ? 1 : tag == V_DEAD ? 2 : 0;
    if (tag == V_FREE) {
      r->pos++;
      setnilkey(nd);
      setempty(gval(nd));
    } else if (tag == V_DEAD) {
      r->pos++;
      uint32_t was = r_u32(r);
      if (was > r->n || (was && !iscollectable(&r->val[was])))
        persist_bad(r, "a dead key of object %u", (unsigned)was);
      setempty(gval(nd));
      nd->u.key_val.gc = was ? gcvalue(&r->val[was]) : NULL;
      nd->u.key_tt = LUA_TDEADKEY;
    } else {
      r_value(r, &k);
      if (ttisnil(&k) || (ttisfloat(&k) && luai_numisnan(fltvalue(&k))))
        persist_bad(r, "a key nil or NaN");
      if (!ttisnumber(&k) && !ttisboolean(&k) && !ttisstring(&k)) exact = 0;
      r_value(r, &v);
      setnodekey(L, nd, &k);
      setobj2t(L, gval(nd), &v);
      if (ttisnil(&v)) setempty(gval(nd));
      luaC_barrierback(L, obj2gco(t), &k);
      luaC_barrierback(L, obj2gco(t), &v);
    }
    lua_Integer next = r_range(r, -(lua_Integer)i, (lua_Integer)(s.size - 1 - i), "a hash chain");
    if (tag == V_FREE && next != 0) persist_bad(r, "a free node in a chain");
    gnext(nd) = (int)next;
  }
  if (!s.dummy) t->lastfree = gnode(t, s.lastfree);
  invalidateTMcache(t); /* its keys may name metamethods */
  if (s.size && exact)
    check_layout(r, t, free, free + s.size);
  else if (s.size) /* laid out by this state's hashes: each key again, in node order */
    luaH_resize(L, t, (unsigned)s.asize, (unsigned)s.size);
  r->rec[id].mt = r_mt(r);
  r->rec[id].fin = r_fin(r);
}

/* The type a metatable was registered with (weft__persist_type), NULL:
   none. */
static persist_tinfo *typeof_mt(R *r, const TValue *mt) {
  lua_State *L = r->L;
  lua_rawgeti(L, r->names, N_TYPEMT);
  setobj2s(L, L->top, mt);
  L->top++;
  lua_rawget(L, -2);
  persist_tinfo *ti = lua_touserdata(L, -1);
  lua_pop(L, 2);
  return ti;
}

static void fill_udata(R *r, lua_Integer id) {
  lua_State *L = r->L;
  Udata *u = uvalue(&r->val[id]);
  persist_tinfo *ti = r->rec[id].p; /* typed: its type (new_udata) */
  TValue v;
  for (int i = 0; i < u->nuvalue; i++) {
    r_value(r, &v);
    setobj(L, &u->uv[i].uv, &v);
    luaC_barrierback(L, obj2gco(u), &v);
  }
  if (ti) { /* read again by finish */
    r->rec[id].saved = (uint32_t)r->pos;
    r_value(r, &v);
  }
  uint32_t mt = r->rec[id].mt = r_mt(r);
  r->rec[id].fin = r_fin(r);
  persist_tinfo *mti = mt ? typeof_mt(r, &r->val[mt]) : NULL;
  /* bytes go only under a metatable that takes them as bytes, and a
     type's block only under its own */
  if (ti ? mti != ti : mt && !(mti && mti->plain))
    persist_bad(r, "a userdata under a metatable not of its type");
}

static void fill_lclosure(R *r, lua_Integer id) {
  LClosure *cl = clLvalue(&r->val[id]);
  for (int i = 0; i < cl->nupvalues; i++) {
    UpVal *uv = r->rec[r_id(r, 1u << K_UPVAL, "an upvalue")].p;
    cl->upvals[i] = uv;
    luaC_objbarrier(r->L, cl, uv);
  }
}

static void fill_cclosure(R *r, lua_Integer id) {
  CClosure *cl = clCvalue(&r->val[id]);
  for (int i = 0; i < cl->nupvalues; i++) {
    r_value(r, &cl->upvalue[i]);
    luaC_barrier(r->L, cl, &cl->upvalue[i]);
  }
}

static void fill_upval(R *r, lua_Integer id) {
  UpVal *uv = r->rec[id].p;
  if (upisopen(uv)) return;
  r_value(r, uv->v);
  luaC_barrier(r->L, uv, uv->v);
}

/* ---- the passes ---- */

typedef void (*pass)(R *r, lua_Integer id);

/* Runs fn on each object of the kinds (a mask), kind by kind, each in
   order: on its shape (fill 0), or on its contents (fill 1: fn NULL
   only checks that nothing is left of the record). Each fn leaves the
   stack as it found it. */
static void each(R *r, unsigned kinds, pass fn, int fill) {
  luaL_checkstack(r->L, 20, NULL);
  for (int k = 1; k <= K_LAST; k++) {
    if (!(kinds & (1u << k))) continue;
    for (uint32_t i = r->first[k]; i < r->first[k + 1]; i++) {
      lua_Integer id = r->order[i];
      rrec *rc = &r->rec[id];
      r->id = id;
      r->pos = fill ? rc->fill : rc->at;
      r->end = rc->end;
      if (fn) fn(r, id);
      if (!fill)
        rc->fill = (uint32_t)r->pos;
      else if (r->pos != r->end)
        persist_bad(r, "%zu bytes left in its record", r->end - r->pos);
    }
  }
  r->id = 0;
}

static void header(R *r, const unsigned char *p, size_t len) {
  if (len < PERSIST_HEADER || memcmp(p, PERSIST_MAGIC, 8) != 0)
    persist_bad(r, len < PERSIST_HEADER ? "%zu bytes, shorter than a header" : "not a weft save",
                len);
  unsigned version = p[8] | (unsigned)p[9] << 8;
  if (version != PERSIST_VERSION)
    persist_bad(r, "format version %u (this reads %d)", version, PERSIST_VERSION);
  uint32_t blen = persist_get32(p + 24);
  if (blen != len - PERSIST_HEADER)
    persist_bad(r, "a body of %zu bytes where the header says %lu", len - PERSIST_HEADER,
                (unsigned long)blen);
  uint32_t crc = persist_crc(persist_crc(0, p, 28), p + PERSIST_HEADER, blen);
  if (crc != persist_get32(p + 28))
    persist_bad(r, "the checksum does not match (the bytes are damaged)");
  if (persist_get32(p + 12) != LUA_VERSION_RELEASE_NUM || p[16] != sizeof(lua_Integer) ||
      p[17] != sizeof(lua_Number) || p[18] != sizeof(Instruction))
    persist_bad(r, "made by Lua %lu with other number sizes (this is %d)",
                (unsigned long)persist_get32(p + 12), LUA_VERSION_RELEASE_NUM);
  r->body = p + PERSIST_HEADER;
  r->len = blen;
  r->exact = persist_get32(p + 20) == G(r->L)->seed;
}

/* Indexes the records, and reads the root. */
static void index_records(R *r) {
  lua_State *L = r->L;
  r->pos = 0;
  r->end = r->len;
  r->n = r_u32(r);
  if ((size_t)r->n > r->len / 2)
    persist_bad(r, "%lld objects in %zu bytes", (long long)r->n, r->len);
  size_t root = r->pos;
  if (r_u8(r) == V_REF)
    r_var(r);
  else {
    r->pos = root;
    r_value(r, &r->rootv); /* a scalar: no object needed */
  }
  size_t first = r->pos;
  r->rec = lua_newuserdatauv(L, (size_t)(r->n + 1) * sizeof(rrec), 0);
  r->val = lua_newuserdatauv(L, (size_t)(r->n + 1) * sizeof(TValue), 0);
  r->order = lua_newuserdatauv(L, (size_t)(r->n + 1) * sizeof(uint32_t), 0);
  memset(r->rec, 0, (size_t)(r->n + 1) * sizeof(rrec));
  for (lua_Integer i = 0; i <= r->n; i++) setnilvalue(&r->val[i]);
  lua_createtable(L, (int)r->n, 0);
  r->objs = lua_gettop(L);
  uint32_t count[K_LAST + 2] = {0};
  for (lua_Integer id = 1; id <= r->n; id++) {
    rrec *rc = &r->rec[id];
    rc->kind = (unsigned char)r_u8(r);
    if (rc->kind < 1 || rc->kind > K_LAST)
      persist_bad(r, "object %lld of kind %u", (long long)id, rc->kind);
    uint64_t plen = r_var(r);
    if (plen > r->len - r->pos) persist_bad(r, "object %lld runs past the end", (long long)id);
    rc->at = rc->fill = (uint32_t)r->pos;
    rc->end = (uint32_t)(r->pos + plen);
    r->pos += plen;
    count[rc->kind]++;
  }
  if (r->pos != r->len) persist_bad(r, "%zu bytes after the last object", r->len - r->pos);
  r->first[1] = 0; /* each kind's objects, in order */
  for (int k = 1; k <= K_LAST; k++) r->first[k + 1] = r->first[k] + count[k];
  memcpy(count, r->first, sizeof count);
  for (lua_Integer id = 1; id <= r->n; id++) r->order[count[r->rec[id].kind]++] = (uint32_t)id;
  if (r->body[root] == V_REF) {
    r->pos = root + 1;
    r->end = first;
    r->root = r_id(r, VALUE_KINDS, "the root");
  }
}

/* After everything is built: the types' loaders, then the metatables. */
static void finish(R *r) {
  lua_State *L = r->L;
  for (lua_Integer id = 1; id <= r->n; id++) {
    rrec *rc = &r->rec[id];
    persist_tinfo *ti = rc->p;
    if (rc->kind != K_UDATA || ti == NULL) continue;
    int top = lua_gettop(L);
    TValue saved;
    r->id = id;
    r->pos = rc->saved;
    r->end = rc->end;
    r_value(r, &saved); /* as fill_udata read it */
    r->id = 0;
    setobj2s(L, L->top, &r->val[id]);
    L->top++;
    setobj2s(L, L->top, &saved);
    L->top++;
    ti->load(L, lua_touserdata(L, top + 1), uvalue(&r->val[id])->len, ti->ud);
    lua_settop(L, top);
  }
  for (lua_Integer id = 1; id <= r->n; id++) {
    rrec *rc = &r->rec[id];
    if ((rc->kind != K_TABLE && rc->kind != K_UDATA) || !rc->mt) continue;
    setobj2s(L, L->top, &r->val[id]);
    L->top++;
    setobj2s(L, L->top, &r->val[rc->mt]);
    L->top++;
    /* Lua finalizes it as it did: a metatable set with __gc marks it,
       so one that was not marked gets its metatable with __gc hidden */
    int hide = 0;
    if (!rc->fin) {
      lua_pushliteral(L, "__gc");
      hide = lua_rawget(L, -2) != LUA_TNIL;
      if (!hide) lua_pop(L, 1);
    }
    if (hide) { /* obj, mt, gc */
      lua_pushliteral(L, "__gc");
      lua_pushnil(L);
      lua_rawset(L, -4); /* an existing key: no allocation */
      lua_pushvalue(L, -2);
      lua_setmetatable(L, -4);
      lua_pushliteral(L, "__gc");
      lua_insert(L, -2);
      lua_rawset(L, -3); /* back into its slot */
      lua_pop(L, 2);
    } else {
      lua_setmetatable(L, -2);
      lua_pop(L, 1);
    }
  }
}

int weft__persist_read(lua_State *L) {
  R r;
  memset(&r, 0, sizeof r);
  r.L = L;
  r.names = 1;
  luaL_checkstack(L, 30, NULL);
  lua_settop(L, 3);
  lua_pushnil(L);
  r.scratch = lua_gettop(L);
  header(&r, lua_touserdata(L, 2), (size_t)lua_tointeger(L, 3));
  index_records(&r);
  each(&r, 1u << K_STR, new_string, 0);
  each(&r, 1u << K_NAMED, new_named, 0);
  each(&r, 1u << K_TEXT, new_text, 0);
  each(&r, 1u << K_CHUNK, new_chunk, 0);
  each(&r, 1u << K_PROTO, new_proto, 0);
  each(&r, 1u << K_TABLE, new_table, 0);
  each(&r, 1u << K_UDATA, new_udata, 0);
  each(&r, 1u << K_LCL, new_lclosure, 0);
  each(&r, 1u << K_CCL, new_cclosure, 0);
  each(&r, 1u << K_THREAD, weft__persist_thread_new, 0);
  each(&r, 1u << K_UPVAL, new_upval, 0);
  each(&r, (1u << K_STR) | (1u << K_NAMED) | (1u << K_TEXT) | (1u << K_CHUNK) | (1u << K_PROTO),
       NULL, 1);
  each(&r, 1u << K_TABLE, fill_table, 1);
  each(&r, 1u << K_UDATA, fill_udata, 1);
  each(&r, 1u << K_LCL, fill_lclosure, 1);
  each(&r, 1u << K_CCL, fill_cclosure, 1);
  each(&r, 1u << K_UPVAL, fill_upval, 1);
  each(&r, 1u << K_THREAD, weft__persist_thread_fill, 1);
  finish(&r);
  setobj2s(L, L->top, r.root ? &r.val[r.root] : &r.rootv);
  L->top++;
  return 1;
}
