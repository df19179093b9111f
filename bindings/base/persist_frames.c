/* Loading a coroutine: its stack, its to-be-closed list and its call
   frames, each frame checked against the code it runs and the frame it
   returns to, so that resuming it does what Lua would have done: every
   slot, result count, program counter and continuation is one Lua could
   have left there itself. */
#include "persist_frames.h"

#define MAXDELTA 65535 /* lfunc.c's: the longest step of the tbc list */

#if defined(LUA_COMPAT_LT_LE)
#define CIST_KEEPLEQ CIST_LEQ
#else
#define CIST_KEEPLEQ 0
#endif
#define CIST_KEEP                                                                                  \
  (CIST_OAH | CIST_C | CIST_FRESH | CIST_YPCALL | CIST_TAIL | CIST_HOOKYIELD | CIST_CLSRET |       \
   (7 << CIST_RECST) | CIST_KEEPLEQ)

/* A frame as read, before it is checked and built. */
typedef struct frame {
  unsigned st;
  int func, f0;   /* its function's slot; f0: where it was called (vararg) */
  int top;        /* C: its top; Lua: base + its stack size */
  int nres;       /* results wanted, as Lua codes them */
  lua_Integer u2; /* nyield, nres or the pcall's function slot */
  int pc, nextra; /* Lua */
  const Proto *p; /* Lua */
  lua_KFunction k;
  lua_Integer ctx, kname; /* kname: the continuation's name, a string's index in the record */
  int olderr;
} frame;

void weft__persist_thread_new(R *r, lua_Integer id) {
  lua_State *L = r->L;
  int status = (int)r_u8(r);
  if (status != LUA_OK && status != LUA_YIELD && status != LUA_ERRRUN && status != LUA_ERRMEM &&
      status != LUA_ERRERR)
    persist_bad(r, "a coroutine of status %d", status);
  int size = (int)r_urange(r, 1, LUAI_MAXSTACK, "a stack size");
  int top = (int)r_urange(r, 1, size, "a stack top");
  if ((size_t)top - 1 > r->end - r->pos)
    persist_bad(r, "a stack of %d values runs past its record", top);
  lua_State *T = lua_newthread(L);
  setobj(L, &r->val[id], s2v(L->top - 1));
  lua_rawseti(L, r->objs, id);
  if (size > stacksize(T) && !luaD_reallocstack(T, size, 0)) luaL_error(L, "not enough memory");
  T->top = T->stack + top; /* nil up to there, and marked so */
  r->rec[id].top = top;
  r->rec[id].size = stacksize(T);
  r->rec[id].fill = r->pos;
}

/* An open upvalue of coroutine T at slot s, as luaF_findupval makes it,
   but allocated on L (an allocation failure must raise there). */
UpVal *weft__persist_upval_open(lua_State *L, lua_State *T, int s) {
  StkId level = T->stack + s;
  UpVal **pp = &T->openupval, *p;
  while ((p = *pp) != NULL && uplevel(p) >= level) {
    if (uplevel(p) == level) return p;
    pp = &p->u.open.next;
  }
  UpVal *uv = gco2upv(luaC_newobj(L, LUA_VUPVAL, sizeof(UpVal)));
  uv->v = s2v(level);
  uv->tbc = 0;
  uv->u.open.next = *pp;
  uv->u.open.previous = pp;
  if (*pp) (*pp)->u.open.previous = &uv->u.open.next;
  *pp = uv;
  if (T->twups == T) { /* not yet among the threads with open upvalues */
    T->twups = G(L)->twups;
    G(L)->twups = T;
  }
  return uv;
}

/* ---- checking the frames ---- */

static int isfresh(const frame *f) { return (f->st & CIST_FRESH) != 0; }
static int isc(const frame *f) { return (f->st & CIST_C) != 0; }

/* f, the frame a Lua frame c was suspended in (c called f, directly or
   through a metamethod): the instruction c stopped at must be one that
   calls, and f must sit where that call put it, wanting what it asked. */
static void check_callee(R *r, int lv, const frame *c, const frame *f) {
  Instruction i = c->p->code[c->pc - 1];
  int base = c->func + 1, a = base + GETARG_A(i), ctop = c->top;
  int ok, plain = !isc(f) && !isfresh(f); /* a Lua function called by OP_CALL */
  switch (GET_OPCODE(i)) {
  case OP_CALL:
    ok = !isfresh(f) && f->f0 == a && f->nres == GETARG_C(i) - 1;
    break;
  case OP_TAILCALL:
    ok = isc(f) && f->f0 == a && f->nres == LUA_MULTRET;
    break;
  case OP_TFORCALL:
    ok = !plain && f->f0 == a + 4 && f->nres == GETARG_C(i);
    break;
  case OP_CONCAT:
    ok = !plain && f->nres == 1 && f->f0 >= a + 2 && f->f0 <= a + GETARG_B(i);
    break;
  case OP_RETURN:
    ok = !plain && f->nres == 0 && f->f0 >= ctop && c->u2 >= 0 && f->f0 >= a + c->u2;
    break;
  case OP_CLOSE: /* each __close at its variable's slot + 2 (luaD_seterrorobj) */
    ok = !plain && f->nres == 0 && f->f0 >= a + 2 && f->f0 <= ctop + 1;
    break;
  case OP_SETTABUP:
  case OP_SETTABLE:
  case OP_SETI:
  case OP_SETFIELD:
    ok = !plain && f->nres == 0 && f->f0 == ctop;
    break;
  case OP_MMBIN:
  case OP_MMBINI:
  case OP_MMBINK:
  case OP_UNM:
  case OP_BNOT:
  case OP_LEN:
  case OP_GETTABUP:
  case OP_GETTABLE:
  case OP_GETI:
  case OP_GETFIELD:
  case OP_SELF:
  case OP_EQ:
  case OP_LT:
  case OP_LE:
  case OP_LTI:
  case OP_LEI:
  case OP_GTI:
  case OP_GEI:
    ok = !plain && f->nres == 1 && f->f0 == ctop;
    break;
  default:
    persist_bad(r, "frame %d: suspended at an instruction that calls nothing", lv);
  }
  if (!ok) persist_bad(r, "frame %d: a call its caller's code did not make", lv + 1);
}

/* A table constructor that spans the place a Lua frame goes on from
   (its NEWTABLE before pc, a SETLIST of that register at pc or after)
   needs the table still in that register: SETLIST does not look. */
static void check_tables(R *r, int lv, lua_State *T, const frame *f) {
  const Proto *p = f->p;
  for (int s = f->pc; s < p->sizecode; s++) {
    if (GET_OPCODE(p->code[s]) != OP_SETLIST) continue;
    int a = GETARG_A(p->code[s]), n = s - 1;
    while (n >= 0 && !(GET_OPCODE(p->code[n]) == OP_NEWTABLE && GETARG_A(p->code[n]) == a)) n--;
    if (n >= 0 && n < f->pc && !ttistable(s2v(T->stack + f->func + 1 + a)))
      persist_bad(r, "frame %d: a table being built is not a table", lv);
  }
}

/* The innermost frame, suspended in a hook (a Lua frame, pc the next
   instruction): its top is what that instruction finds. */
static void check_hooked(R *r, int lv, lua_State *T, const frame *f, int top) {
  Instruction i = f->p->code[f->pc];
  int a = f->func + 1 + GETARG_A(i);
  if (isIT(i)) {
    if (top < a + (GET_OPCODE(i) != OP_RETURN))
      persist_bad(r, "frame %d: a stack top below its values", lv);
  } else if (top != f->top)
    persist_bad(r, "frame %d: a stack top not at its frame's top", lv);
  if (GET_OPCODE(i) == OP_SELF && !GETARG_k(i) &&
      !ttisstring(s2v(T->stack + f->func + 1 + GETARG_C(i))))
    persist_bad(r, "frame %d: a method name that is not a string", lv);
}

/* A continuation of Lua's own library (weft__persist_name_lua) knows
   the frame it continues: its function, context, and callee. */
static void check_rules(R *r, int lv, lua_State *T, const frame *c, const frame *f) {
  lua_State *L = r->L;
  int mark = lua_gettop(L);
  lua_rawgeti(L, r->names, N_KRULES);
  lua_pushvalue(L, (int)c->kname);
  if (lua_rawget(L, -2) != LUA_TTABLE) {
    lua_settop(L, mark);
    return;
  }
  const TValue *fn = s2v(T->stack + c->func);
  lua_CFunction cf = ttislcf(fn) ? fvalue(fn) : ttisCclosure(fn) ? clCvalue(fn)->f : NULL;
  int ok = 0;
  for (lua_Integer i = 1; !ok && lua_rawgeti(L, mark + 2, i) == LUA_TTABLE; i++) {
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    lua_rawgeti(L, -3, 3);
    lua_rawgeti(L, -4, 4);
    /* a pcall unwinding after an error (recst) calls __close, not its callee */
    int unwinding = ((c->st >> CIST_RECST) & 7) != LUA_OK;
    ok =
        f != NULL && lua_tocfunction(L, -4) == cf && lua_tointeger(L, -3) == c->ctx &&
        (unwinding || (f->f0 == c->func + lua_tointeger(L, -2) && f->nres == lua_tointeger(L, -1)));
    lua_settop(L, mark + 2);
  }
  lua_settop(L, mark);
  if (!ok) persist_bad(r, "frame %d: a continuation in a frame it does not continue", lv);
}

/* Checks frame f (level lv, from 1 outermost; c its caller, NULL: the
   base; next: its callee, NULL: the innermost) of T (top: its top). */
static void check_frame(R *r, int lv, lua_State *T, int top, const frame *c, const frame *f,
                        const frame *next) {
  int size = stacksize(T);
  if (f->st & ~CIST_KEEP) persist_bad(r, "frame %d: call status %#x", lv, f->st);
  if (f->func >= top || f->f0 < 1 || (c && f->f0 <= c->func))
    persist_bad(r, "frame %d: a function slot out of place", lv);
  int wanted = f->nres < LUA_MULTRET ? -f->nres - 3 : f->nres; /* decodeNresults */
  if (f->nres > SHRT_MAX || f->nres < SHRT_MIN || wanted < LUA_MULTRET || f->f0 + wanted > size)
    persist_bad(r, "frame %d: %d results wanted", lv, f->nres);
  if (isc(f)) {
    const TValue *fn = s2v(T->stack + f->func);
    if (!ttislcf(fn) && !ttisCclosure(fn))
      persist_bad(r, "frame %d: no C function in its slot", lv);
    if (f->st & (CIST_FRESH | CIST_HOOKYIELD | CIST_KEEPLEQ))
      persist_bad(r, "frame %d: call status %#x", lv, f->st);
    if (f->top <= f->func || f->top > size) persist_bad(r, "frame %d: a top out of its stack", lv);
    if (f->olderr < 0 || f->olderr >= top)
      persist_bad(r, "frame %d: an error handler out of place", lv);
    if (next && f->k == NULL && !(f->st & CIST_CLSRET))
      persist_bad(r, "frame %d: a C function suspended with no continuation", lv);
    int recst = (f->st >> CIST_RECST) & 7;
    if (recst != LUA_OK && (!(f->st & CIST_YPCALL) ||
                            (recst != LUA_ERRRUN && recst != LUA_ERRMEM && recst != LUA_ERRERR)))
      persist_bad(r, "frame %d: call status %#x", lv, f->st);
    if (f->st & CIST_YPCALL) {
      /* its function is the callee, or, after an error (recst), lies
         below the __close that yielded while the call was unwound */
      if (!next || f->k == NULL || f->u2 <= f->func || f->u2 > next->f0 ||
          (recst == LUA_OK && f->u2 != next->f0))
        persist_bad(r, "frame %d: a protected call out of place", lv);
    } else if (f->st & CIST_CLSRET) {
      if (f->nres >= LUA_MULTRET || f->u2 < 0 || f->u2 > (next ? next->f0 : top) - f->func - 1)
        persist_bad(r, "frame %d: results to close out of place", lv);
    } else if (!next && (f->u2 < 0 || f->u2 > size)) /* nyield: only lua_resume reads it */
      persist_bad(r, "frame %d: %lld values yielded", lv, (long long)f->u2);
    if (f->k) check_rules(r, lv, T, f, next);
    if (!next && top > f->top) persist_bad(r, "frame %d: a stack top above its frame's", lv);
  } else {
    if (f->st & (CIST_YPCALL | CIST_CLSRET | (7 << CIST_RECST)))
      persist_bad(r, "frame %d: call status %#x", lv, f->st);
    if ((!c || isc(c)) && !isfresh(f)) persist_bad(r, "frame %d: call status %#x", lv, f->st);
    if (f->top > size) persist_bad(r, "frame %d: a frame past its stack", lv);
    if (f->st & CIST_HOOKYIELD) {
      if (next) persist_bad(r, "frame %d: suspended in a hook below another frame", lv);
      if (f->pc < f->p->is_vararg || f->pc >= f->p->sizecode)
        persist_bad(r, "frame %d: a program counter out of its code", lv);
      check_hooked(r, lv, T, f, top);
    } else {
      if (!next) persist_bad(r, "frame %d: a Lua function suspended outside a hook", lv);
      if (f->pc < 1 || f->pc > f->p->sizecode)
        persist_bad(r, "frame %d: a program counter out of its code", lv);
      check_callee(r, lv, f, next);
    }
    if ((f->st & CIST_KEEPLEQ) && (f->pc < 1 || (GET_OPCODE(f->p->code[f->pc - 1]) != OP_LE &&
                                                 GET_OPCODE(f->p->code[f->pc - 1]) != OP_LEI &&
                                                 GET_OPCODE(f->p->code[f->pc - 1]) != OP_GEI)))
      persist_bad(r, "frame %d: call status %#x", lv, f->st);
    check_tables(r, lv, T, f);
  }
  if (!c && (f->f0 != 1 || f->nres != LUA_MULTRET))
    persist_bad(r, "frame %d: not the coroutine's body", lv);
}

/* Reads frame f; the caller's function must be in its slot already. */
static void read_frame(R *r, int lv, lua_State *T, int top, frame *f) {
  lua_State *L = r->L;
  memset(f, 0, sizeof *f);
  f->st = (unsigned)r_urange(r, 0, 0xffff, "a call status");
  f->func = f->f0 = (int)r_urange(r, 1, top - 1, "a function slot");
  f->nres = (int)r_range(r, SHRT_MIN, SHRT_MAX, "a result count");
  if (f->st & CIST_C) {
    f->top = (int)r_urange(r, 1, stacksize(T), "a frame's top");
    size_t len = r_count(r, 1);
    if (len > 0) {
      lua_rawgeti(L, r->names, N_KBYNAME);
      lua_pushlstring(L, (const char *)r_bytes(r, len), len);
      lua_pushvalue(L, -1);
      if (lua_rawget(L, -3) != LUA_TFUNCTION)
        luaL_error(L, "the save names continuation '%s', which the names set lacks",
                   lua_tostring(L, -2));
      f->k = persist_kof(lua_tocfunction(L, -1));
      lua_pop(L, 1);
      lua_replace(L, -2);
      f->kname = lua_gettop(L); /* kept on the stack until the frames are built */
    }
    f->ctx = r_int(r);
    f->olderr = (int)r_urange(r, 0, top - 1, "an error handler's slot");
  } else {
    const TValue *fn = s2v(T->stack + f->func);
    if (!ttisLclosure(fn)) persist_bad(r, "frame %d: no Lua function in its slot", lv);
    f->p = clLvalue(fn)->p;
    f->pc = (int)r_urange(r, 0, f->p->sizecode, "a program counter");
    f->nextra = (int)r_urange(r, 0, f->p->is_vararg ? LUAI_MAXSTACK : 0, "a vararg count");
    if (f->p->is_vararg) f->f0 = f->func - f->nextra - f->p->numparams - 1;
    f->top = f->func + 1 + f->p->maxstacksize;
  }
  f->u2 = r_int(r);
}

static void build_frame(R *r, lua_State *T, const frame *f) {
  CallInfo *ci = luaM_new(r->L, CallInfo);
  ci->previous = T->ci;
  ci->next = NULL;
  T->ci->next = ci;
  T->ci = ci;
  T->nci++;
  ci->func = T->stack + f->func;
  ci->top = T->stack + f->top;
  ci->nresults = (short)f->nres;
  ci->callstatus = (unsigned short)f->st;
  ci->u2.nres = 0;
  if (isc(f)) {
    ci->u.c.k = f->k;
    ci->u.c.ctx = (lua_KContext)f->ctx;
    ci->u.c.old_errfunc = (ptrdiff_t)f->olderr * (ptrdiff_t)sizeof(StackValue);
    if (f->st & CIST_YPCALL)
      ci->u2.funcidx = (int)f->u2 * (int)sizeof(StackValue);
    else
      ci->u2.nres = (int)f->u2; /* nyield too */
  } else {
    ci->u.l.savedpc = f->p->code + f->pc;
    ci->u.l.trap = T->hookmask != 0;
    ci->u.l.nextraargs = f->nextra;
    if (f->pc >= 1 && GET_OPCODE(f->p->code[f->pc - 1]) == OP_RETURN) ci->u2.nres = (int)f->u2;
  }
}

void weft__persist_thread_fill(R *r, lua_Integer id) {
  lua_State *L = r->L;
  lua_State *T = thvalue(&r->val[id]);
  int status = r->body[r->rec[id].at], top = r->rec[id].top;
  for (int s = 1; s < top; s++) r_value(r, s2v(T->stack + s));
  int errfunc = (int)r_urange(r, 0, top - 1, "an error handler's slot");
  size_t ntbc = r_count(r, 1);
  if (ntbc > 0 && status == LUA_OK)
    persist_bad(r, "a coroutine not suspended with variables to close");
  StkId last = T->stack;
  for (size_t i = 0; i < ntbc; i++) {
    StkId level = T->stack + r_urange(r, (last - T->stack) + 1, top - 1, "a to-be-closed slot");
    while (level - last > MAXDELTA) {
      last += MAXDELTA;
      last->tbclist.delta = 0;
    }
    level->tbclist.delta = (unsigned short)(level - last);
    last = level;
  }
  T->tbclist = last;
  int nci = (int)r_count(r, 4);
  if ((nci > 0) != (status == LUA_YIELD))
    persist_bad(r, "a coroutine of status %d with %d frames", status, nci);
  if (nci > PERSIST_MAX_FRAMES) persist_bad(r, "a coroutine of %d frames", nci);
  luaL_checkstack(L, nci + 4, "too many frames");
  int mark = lua_gettop(L);
  frame *f = nci ? persist_scratch(r, (size_t)nci * sizeof(frame)) : NULL;
  for (int i = 0; i < nci; i++) read_frame(r, i + 1, T, top, &f[i]);
  for (int i = 0; i < nci; i++)
    check_frame(r, i + 1, T, top, i ? &f[i - 1] : NULL, &f[i], i + 1 < nci ? &f[i + 1] : NULL);
  for (int i = 0; i < nci; i++) build_frame(r, T, &f[i]);
  lua_settop(L, mark);
  if (T->stack + top > T->base_ci.top) T->base_ci.top = T->stack + top;
  T->errfunc = (ptrdiff_t)errfunc * (ptrdiff_t)sizeof(StackValue);
  T->status = (lu_byte)status;
}
