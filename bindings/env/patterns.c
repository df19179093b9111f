/* A guard for Lua's pattern functions. Lua's matcher runs in C, where the
   instruction budget cannot reach, and some patterns backtrack for a time
   that grows as a power of the subject's length. Before string.find,
   match, gmatch or gsub runs, a matcher of our own walks the same search
   with a step counter and stops at a limit; over it, the call fails with
   an error at the script's line. Under it, Lua's own function runs, so
   results are exactly Lua's: this matcher only measures. Its control flow
   follows the reference manual's pattern rules (§6.4.1).
   string.rep is the other string function that runs long in C: Lua's
   copies its piece once per repetition (a 128 MB rep of one byte takes a
   third of a second in one call); ours doubles what it has written.
   table.move and table.concat run long in C on a range a script names by
   two numbers, whatever the table holds (a move of a billion nils; a
   concat through an __index that is a C function): they are Lua's, done
   in pieces that yield when the task's slice runs out (weft__budget_piece),
   so only a runaway dies. */
#include <ctype.h>
#include <limits.h>
#include <string.h>

#include "patterns.h"
#include "../base/names.h"
#include "../accounts/budget.h"
#include "../base/internal.h"

#define MAX_CAPTURES 32
#define CAP_UNFINISHED (-1)
#define CAP_POSITION (-2)
#define STEPS_PER_BUDGET 4 /* matcher steps allowed per instruction of budget */

typedef struct mstate {
  const char *src_init, *src_end, *p_end;
  long steps, limit;
  int level, depth, bad; /* bad: a malformed pattern (Lua will say why) */
  struct {
    const char *init;
    ptrdiff_t len;
  } capture[MAX_CAPTURES];
} mstate;

static const char *match(mstate *ms, const char *s, const char *p);

static int class_end_ok(mstate *ms, const char **pp) {
  const char *p = *pp;
  if (*p++ == '%') {
    if (p >= ms->p_end) return ms->bad = 1, 0;
    *pp = p + 1;
    return 1;
  }
  if (*(p - 1) == '[') {
    if (*p == '^') p++;
    do {
      if (p >= ms->p_end) return ms->bad = 1, 0;
      if (*(p++) == '%' && p < ms->p_end) p++;
    } while (*p != ']');
    *pp = p + 1;
    return 1;
  }
  *pp = p;
  return 1;
}

static int class_has(int c, int cl) {
  int res;
  switch (tolower(cl)) {
  case 'a':
    res = isalpha(c);
    break;
  case 'c':
    res = iscntrl(c);
    break;
  case 'd':
    res = isdigit(c);
    break;
  case 'g':
    res = isgraph(c);
    break;
  case 'l':
    res = islower(c);
    break;
  case 'p':
    res = ispunct(c);
    break;
  case 's':
    res = isspace(c);
    break;
  case 'u':
    res = isupper(c);
    break;
  case 'w':
    res = isalnum(c);
    break;
  case 'x':
    res = isxdigit(c);
    break;
  default:
    return cl == c;
  }
  if (isupper(cl)) res = !res;
  return res != 0;
}

static int in_set(int c, const char *p, const char *ec) {
  int sig = 1;
  if (*(p + 1) == '^') {
    sig = 0;
    p++;
  }
  while (++p < ec) {
    if (*p == '%') {
      p++;
      if (class_has(c, (unsigned char)*p)) return sig;
    } else if (*(p + 1) == '-' && p + 2 < ec) {
      p += 2;
      if ((unsigned char)*(p - 2) <= c && c <= (unsigned char)*p) return sig;
    } else if ((unsigned char)*p == c) {
      return sig;
    }
  }
  return !sig;
}

static int single(mstate *ms, const char *s, const char *p, const char *ep) {
  if (s >= ms->src_end) return 0;
  int c = (unsigned char)*s;
  switch (*p) {
  case '.':
    return 1;
  case '%':
    return class_has(c, (unsigned char)*(p + 1));
  case '[':
    return in_set(c, p, ep - 1);
  default:
    return (unsigned char)*p == c;
  }
}

/* Counts a step; past the limit every match fails at once. */
static int step(mstate *ms) { return ++ms->steps <= ms->limit; }

static const char *max_expand(mstate *ms, const char *s, const char *p, const char *ep) {
  ptrdiff_t i = 0;
  while (single(ms, s + i, p, ep) && step(ms)) i++;
  while (i >= 0 && step(ms)) {
    const char *res = match(ms, s + i, ep + 1);
    if (res) return res;
    i--;
  }
  return NULL;
}

static const char *min_expand(mstate *ms, const char *s, const char *p, const char *ep) {
  for (;;) {
    if (!step(ms)) return NULL;
    const char *res = match(ms, s, ep + 1);
    if (res) return res;
    if (single(ms, s, p, ep))
      s++;
    else
      return NULL;
  }
}

static const char *start_capture(mstate *ms, const char *s, const char *p, int what) {
  if (ms->level >= MAX_CAPTURES) return ms->bad = 1, NULL;
  ms->capture[ms->level].init = s;
  ms->capture[ms->level].len = what;
  ms->level++;
  const char *res = match(ms, s, p);
  if (!res) ms->level--;
  return res;
}

static const char *end_capture(mstate *ms, const char *s, const char *p) {
  int l = -1;
  for (int i = ms->level - 1; i >= 0; i--)
    if (ms->capture[i].len == CAP_UNFINISHED) {
      l = i;
      break;
    }
  if (l < 0) return ms->bad = 1, NULL;
  ms->capture[l].len = s - ms->capture[l].init;
  const char *res = match(ms, s, p);
  if (!res) ms->capture[l].len = CAP_UNFINISHED;
  return res;
}

static const char *match_balance(mstate *ms, const char *s, const char *p) {
  if (p + 1 >= ms->p_end) return ms->bad = 1, NULL;
  if (s >= ms->src_end || *s != *p) return NULL;
  int b = *p, e = *(p + 1), cont = 1;
  while (++s < ms->src_end && step(ms)) {
    if (*s == e) {
      if (--cont == 0) return s + 1;
    } else if (*s == b) {
      cont++;
    }
  }
  return NULL;
}

/* The items of a pattern that match() hands off: each returns 1 to go on
   matching at the updated *s and *p, or 0 when the match at this level
   is decided (*s is its end, or NULL). */

/* %f[set]: a frontier (*p at '%'). */
static int frontier(mstate *ms, const char **s, const char **p) {
  const char *set = *p + 2, *ep = set;
  if (*set != '[') {
    ms->bad = 1;
    return *s = NULL, 0;
  }
  if (!class_end_ok(ms, &ep)) return *s = NULL, 0;
  int prev = (*s == ms->src_init) ? 0 : (unsigned char)*(*s - 1);
  int cur = (*s < ms->src_end) ? (unsigned char)**s : 0;
  if (!in_set(prev, set, ep - 1) && in_set(cur, set, ep - 1)) return *p = ep, 1;
  return *s = NULL, 0;
}

/* %1-%9: the text a capture matched, again (*p at '%'). */
static int back_reference(mstate *ms, const char **s, const char **p) {
  int l = *(*p + 1) - '1';
  if (l < 0 || l >= ms->level || ms->capture[l].len == CAP_UNFINISHED) {
    ms->bad = 1;
    return *s = NULL, 0;
  }
  size_t len = (size_t)ms->capture[l].len;
  if ((size_t)(ms->src_end - *s) >= len && memcmp(ms->capture[l].init, *s, len) == 0) {
    *s += len;
    *p += 2;
    return 1;
  }
  return *s = NULL, 0;
}

/* A single character class, with its quantifier if any. */
static int single_item(mstate *ms, const char **s, const char **p) {
  const char *ep = *p;
  if (!class_end_ok(ms, &ep)) return *s = NULL, 0;
  if (!single(ms, *s, *p, ep)) {
    if (*ep == '*' || *ep == '?' || *ep == '-') return *p = ep + 1, 1;
    return *s = NULL, 0;
  }
  switch (*ep) {
  case '?': {
    const char *res = match(ms, *s + 1, ep + 1);
    if (res) return *s = res, 0;
    return *p = ep + 1, 1;
  }
  case '+':
    *s = max_expand(ms, *s + 1, *p, ep);
    return 0;
  case '*':
    *s = max_expand(ms, *s, *p, ep);
    return 0;
  case '-':
    *s = min_expand(ms, *s, *p, ep);
    return 0;
  default:
    (*s)++;
    *p = ep;
    return 1;
  }
}

static const char *match(mstate *ms, const char *s, const char *p) {
  if (ms->depth++ > 190 || ms->bad) { /* Lua stops at 200 too ("pattern too complex") */
    ms->depth--;
    return NULL;
  }
  while (p != ms->p_end && step(ms)) {
    int go_on;
    if (*p == '(') {
      s = *(p + 1) == ')' ? start_capture(ms, s, p + 2, CAP_POSITION)
                          : start_capture(ms, s, p + 1, CAP_UNFINISHED);
      go_on = 0;
    } else if (*p == ')') {
      s = end_capture(ms, s, p + 1);
      go_on = 0;
    } else if (*p == '$' && p + 1 == ms->p_end) {
      s = (s == ms->src_end) ? s : NULL;
      go_on = 0;
    } else if (*p == '%' && *(p + 1) == 'b') {
      s = match_balance(ms, s, p + 2);
      go_on = s != NULL;
      p += 4;
    } else if (*p == '%' && *(p + 1) == 'f') {
      go_on = frontier(ms, &s, &p);
    } else if (*p == '%' && isdigit((unsigned char)*(p + 1))) {
      go_on = back_reference(ms, &s, &p);
    } else {
      go_on = single_item(ms, &s, &p);
    }
    if (!go_on) goto done;
  }
  if (ms->steps > ms->limit) s = NULL;
done:
  ms->depth--;
  return s;
}

static int has_specials(const char *p, size_t l) {
  for (size_t i = 0; i < l; i++)
    if (strchr("^$*+?.([%-", p[i])) return 1;
  return 0;
}

/* Walks the search a call would make. Returns 0 when it stays within the
   limit (or the pattern is malformed: Lua reports that itself). mode: 0
   find/match (stop at the first match), 1 gmatch/gsub (every match). */
static int too_costly(const char *s, size_t ls, const char *p, size_t lp, size_t init, int all,
                      long limit) {
  mstate ms;
  memset(&ms, 0, sizeof ms);
  ms.src_init = s;
  ms.src_end = s + ls;
  ms.limit = limit;
  int anchor = (lp > 0 && *p == '^');
  if (anchor) {
    p++;
    lp--;
  }
  ms.p_end = p + lp;
  const char *src = s + init, *lastmatch = NULL;
  while (src <= ms.src_end) {
    ms.level = 0;
    ms.depth = 0;
    const char *e = match(&ms, src, p);
    if (ms.bad) return 0;
    if (ms.steps > ms.limit) return 1;
    if (e && e != lastmatch) {
      if (!all) return 0;
      src = lastmatch = e;
      if (e == ms.src_end) break;
    } else {
      src++;
    }
    if (anchor) break;
  }
  return 0;
}

/* The steps a call may take: a few per instruction of the budget, so a
   pattern cannot stall a frame much longer than a script could. 0: no
   guard (the budget is off). */
static long step_limit(lua_State *L) {
  weft_state *W = weft__get(L);
  if (W->desc.instr_budget == WEFT_BUDGET_OFF) return 0;
  return (long)W->desc.instr_budget * STEPS_PER_BUDGET;
}

static int refuse(lua_State *L, size_t ls, long limit) {
  return luaL_error(L,
                    "pattern too costly for this subject (%d bytes): the search would take "
                    "more than %d steps",
                    (int)ls, (int)limit);
}

/* The string argument at idx as Lua's function will see it (a number
   converted on a copy pushed on top, so the argument itself is left
   alone), or NULL: Lua's function will raise. */
static const char *arg_string(lua_State *L, int idx, size_t *len) {
  int t = lua_type(L, idx);
  if (t == LUA_TSTRING) return lua_tolstring(L, idx, len);
  if (t != LUA_TNUMBER) return NULL;
  lua_pushvalue(L, idx);
  return lua_tolstring(L, -1, len);
}

/* string.find / match / gmatch / gsub for scripts: upvalue 1 is Lua's,
   called directly (not through lua_call) so its errors name the function
   and the script's line exactly as plain Lua's do. The check here only
   reads the arguments; Lua's function checks them. */
static int guarded(lua_State *L, int all, int has_init, int plain_arg) {
  int top = lua_gettop(L);
  size_t ls, lp;
  const char *s = arg_string(L, 1, &ls);
  const char *p = arg_string(L, 2, &lp);
  long limit = step_limit(L);
  int ok = 1;
  lua_Integer init = 1;
  if (has_init && !lua_isnoneornil(L, 3)) init = lua_tointegerx(L, 3, &ok);
  if (limit && s && p && ok && !(plain_arg && lua_toboolean(L, 4))) {
    if (init < 0) init = (lua_Integer)ls + init + 1;
    if (init < 1) init = 1;
    if ((size_t)init <= ls + 1) {
      /* A plain pattern (no special character) costs a step a position:
         nothing to walk. find and match stop at the first match; gmatch
         and gsub try every position of the subject. */
      if (has_specials(p, lp) ? too_costly(s, ls, p, lp, (size_t)init - 1, all, limit)
                              : all && (long)(ls - ((size_t)init - 1)) > limit)
        return refuse(L, ls, limit);
    }
  }
  lua_settop(L, top);
  return lua_tocfunction(L, lua_upvalueindex(1))(L); /* Lua's, on this call frame */
}

static int l_find(lua_State *L) { return guarded(L, 0, 1, 1); }
static int l_match(lua_State *L) { return guarded(L, 0, 1, 0); }
static int l_gmatch(lua_State *L) { return guarded(L, 1, 1, 0); }
/* gsub's third argument is the replacement, so init does not apply. */
static int l_gsub(lua_State *L) { return guarded(L, 1, 0, 0); }

/* A result this large is made in pieces of REP_PIECE bytes, the task
   yielding between two when its slice runs out. */
#define REP_PIECES (1u << 20)
#define REP_PIECE (8u << 20)

/* The (sep s) run after the first s, doubled onto itself from `done`
   bytes on, a piece at a time (slot 4: the block being written, slot 5:
   how much of the run is written). */
static int rep_on(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  size_t l, lsep;
  luaL_checklstring(L, 1, &l);
  luaL_optlstring(L, 3, "", &lsep);
  char *p = lua_touserdata(L, 4);
  size_t total = (size_t)lua_rawlen(L, 4), len = total - l, done = (size_t)lua_tointeger(L, 5);
  char *run = p + l;
  /* Copies stay whole units (sep s), so the run stays a repetition. */
  size_t unit = l + lsep, cap = REP_PIECE - REP_PIECE % unit;
  if (!cap) cap = unit;
  while (done < len) {
    size_t k = done < len - done ? done : len - done;
    if (k > cap) k = cap;
    memcpy(run + done, run, k);
    done += k;
    lua_pushinteger(L, (lua_Integer)done);
    lua_replace(L, 5);
    if (done < len && weft__budget_piece(weft__get(L), L, (long)(k / 8)))
      return lua_yieldk(L, 0, 0, rep_on);
  }
  lua_pushlstring(L, p, total);
  return 1;
}

/* string.rep(s, n [, sep]) as Lua 5.4's (the same results, limits and
   messages), written by doubling: s, then (sep s) once, then the written
   part of the (sep s) run copied onto its end until it is whole, so a
   result of size m takes O(log m) copies, not n; a large one in pieces
   over frames. */
static int l_rep(lua_State *L) {
  size_t l, lsep;
  const char *s = luaL_checklstring(L, 1, &l);
  lua_Integer n = luaL_checkinteger(L, 2);
  const char *sep = luaL_optlstring(L, 3, "", &lsep);
  const size_t maxsize = sizeof(size_t) < sizeof(int) ? (size_t) ~(size_t)0 : (size_t)INT_MAX;
  if (n <= 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  /* In lua_Unsigned, as Lua's: where size_t is 32 bits, n may not fit. */
  if (l + lsep < l || (lua_Unsigned)(l + lsep) > (lua_Unsigned)maxsize / (lua_Unsigned)n)
    return luaL_error(L, "resulting string too large");
  size_t unit = l + lsep, total = (size_t)n * l + (size_t)(n - 1) * lsep;
  if (total >= REP_PIECES && n > 1) {
    lua_settop(L, 3);
    char *p = lua_newuserdatauv(L, total, 0); /* 4 */
    memcpy(p, s, l);
    memcpy(p + l, sep, lsep);
    memcpy(p + l + lsep, s, l);
    lua_pushinteger(L, (lua_Integer)unit); /* 5: the run written so far */
    return rep_on(L, LUA_OK, 0);
  }
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, total);
  memcpy(p, s, l);
  if (n > 1) {
    char *run = p + l; /* (sep s) n - 1 times */
    size_t len = total - l, done = unit;
    memcpy(run, sep, lsep);
    memcpy(run + lsep, s, l);
    while (done < len) {
      size_t k = done < len - done ? done : len - done;
      memcpy(run + done, run, k);
      done += k;
    }
  }
  luaL_pushresultsize(&b, total);
  return 1;
}

/* ---- table.move, table.concat ---- */

/* Elements between two looks at the budget. */
#define PIECE 1024

/* As Lua's table library checks a table argument: a table, or a value
   whose metatable has (raw) each metamethod the call needs; else the
   same "table expected" error. */
static void check_tab(lua_State *L, int arg, const char *const *needs) {
  if (lua_type(L, arg) == LUA_TTABLE) return;
  int ok = lua_getmetatable(L, arg), n = ok;
  for (; ok && *needs; needs++, n++) {
    lua_pushstring(L, *needs);
    ok = lua_rawget(L, -n - 1) != LUA_TNIL;
  }
  lua_pop(L, n);
  if (!ok) luaL_checktype(L, arg, LUA_TTABLE);
}

/* The move from the element done (slot 6) on: piece by piece, the task
   yielding between two when its slice has run out (this function is
   then its continuation), until all n are moved. */
static int move_on(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  weft_state *W = weft__get(L);
  lua_Integer f = lua_tointeger(L, 2), e = lua_tointeger(L, 3), t = lua_tointeger(L, 4);
  lua_Integer n = e - f + 1, done = lua_tointeger(L, 6);
  int tt = lua_isnil(L, 5) ? 1 : 5, forward = lua_toboolean(L, 7);
  while (done < n) {
    lua_Integer stop = n - done > PIECE ? done + PIECE : n;
    for (; done < stop; done++) {
      lua_Integer k = forward ? done : n - 1 - done;
      lua_geti(L, 1, f + k);
      lua_seti(L, tt, t + k);
    }
    lua_pushinteger(L, done);
    lua_replace(L, 6);
    if (done < n && weft__budget_piece(W, L, PIECE)) return lua_yieldk(L, 0, 0, move_on);
  }
  lua_pushvalue(L, tt);
  return 1;
}

/* table.move(a1, f, e, t [, a2]) as Lua's: the same checks in the same
   order, the same errors and results, elements moved in the same order
   (backwards when the ranges overlap that way); in pieces, so a long
   move goes on over frames and only a runaway dies. */
static int l_move(lua_State *L) {
  static const char *const r[] = {"__index", NULL}, *const w[] = {"__newindex", NULL};
  lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3), t = luaL_checkinteger(L, 4);
  int tt = !lua_isnoneornil(L, 5) ? 5 : 1;
  check_tab(L, 1, r);
  check_tab(L, tt, w);
  if (e < f) {
    lua_pushvalue(L, tt);
    return 1;
  }
  luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
  luaL_argcheck(L, t <= LUA_MAXINTEGER - (e - f + 1) + 1, 4, "destination wrap around");
  int forward = t > e || t <= f || (tt != 1 && !lua_compare(L, 1, tt, LUA_OPEQ));
  lua_settop(L, 5);
  lua_pushinteger(L, 0);       /* 6: elements done */
  lua_pushboolean(L, forward); /* 7 */
  return move_on(L, LUA_OK, 0);
}

/* The concat from element i (slot 6) to last (slot 7): each piece made
   into a string kept in slot 5's table, joined at the end. */
static int concat_on(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  weft_state *W = weft__get(L);
  size_t lsep;
  const char *sep = lua_tolstring(L, 2, &lsep);
  lua_Integer i = lua_tointeger(L, 6), last = lua_tointeger(L, 7);
  while (i <= last) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int k = 0;
    for (; k < PIECE && i <= last && luaL_bufflen(&b) < REP_PIECE; k++, i++) {
      if (i > lua_tointeger(L, 3) || k > 0) luaL_addlstring(&b, sep, lsep);
      lua_geti(L, 1, i);
      if (!lua_isstring(L, -1))
        return luaL_error(L, "invalid value (%s) at index %I in table for 'concat'",
                          luaL_typename(L, -1), (LUAI_UACINT)i);
      luaL_addvalue(&b);
      if (i == last) break; /* i++ would overflow at maxinteger */
    }
    size_t bytes = luaL_bufflen(&b);
    luaL_pushresult(&b);
    lua_rawseti(L, 5, (lua_Integer)lua_rawlen(L, 5) + 1);
    if (i >= last) break;
    lua_pushinteger(L, i);
    lua_replace(L, 6);
    long steps = (long)(bytes / 8) > k ? (long)(bytes / 8) : k;
    if (weft__budget_piece(W, L, steps)) return lua_yieldk(L, 0, 0, concat_on);
  }
  /* Lua's concat writes the result once, from the pieces (no buffer) */
  int pieces = (int)lua_rawlen(L, 5);
  luaL_checkstack(L, pieces, "too many pieces to join");
  for (int k = 1; k <= pieces; k++) lua_rawgeti(L, 5, k);
  lua_concat(L, pieces);
  return 1;
}

/* table.concat(t [, sep [, i [, j]]]) as Lua's (the same checks, errors
   and result), in pieces like table.move. */
static int l_concat(lua_State *L) {
  static const char *const rl[] = {"__index", "__len", NULL};
  check_tab(L, 1, rl);
  lua_Integer last = luaL_len(L, 1);
  luaL_optlstring(L, 2, "", NULL);
  lua_Integer i = luaL_optinteger(L, 3, 1);
  last = luaL_optinteger(L, 4, last);
  if (i > last) return lua_pushliteral(L, ""), 1;
  if (lua_isnoneornil(L, 2)) {
    lua_pushliteral(L, "");
    lua_replace(L, 2);
  }
  lua_settop(L, 2);
  lua_pushinteger(L, i);    /* 3: the first index */
  lua_pushnil(L);           /* 4 */
  lua_newtable(L);          /* 5: the pieces made */
  lua_pushinteger(L, i);    /* 6: the next index */
  lua_pushinteger(L, last); /* 7 */
  return concat_on(L, LUA_OK, 0);
}

void weft__guard_tables(lua_State *L, int table_table) {
  static const luaL_Reg fns[] = {{"move", l_move}, {"concat", l_concat}, {NULL, NULL}};
  lua_pushvalue(L, table_table);
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 1);
}

/* ---- string.format ---- */

/* What one call of string.format may take, in about nanoseconds of
   work: conversions are formatted in C (a number each by snprintf, %q a
   byte at a time, a control byte by snprintf), where no budget reaches.
   A call over it is refused before any work is done. */
#define FORMAT_WORK 20000000.0

/* The work of %q of s: a byte each, a control byte forty; the count
   stops once it is past `enough`. */
static double quoted_work(const char *s, size_t n, double enough) {
  double w = (double)n;
  for (size_t i = 0; i < n && w <= enough; i++)
    if ((unsigned char)s[i] < 32 || s[i] == 127) w += 40;
  return w;
}

/* string.format(fmt, ...) as Lua's (upvalue 1), after an estimate of its
   work: a format whose work is over FORMAT_WORK fails at the caller's
   line. Lua's own function checks everything else and says what is
   wrong as Lua does. */
static int l_format(lua_State *L) {
  size_t lf;
  const char *f = lua_tolstring(L, 1, &lf);
  if (f && weft__get(L)->desc.instr_budget != WEFT_BUDGET_OFF) {
    double work = (double)lf;
    int arg = 1, top = lua_gettop(L);
    for (size_t i = 0; i < lf; i++) {
      if (f[i] != '%') continue;
      if (++i < lf && f[i] == '%') continue;
      int prec = 0;
      while (i < lf && strchr("-+ #0", f[i])) i++;
      while (i < lf && isdigit((unsigned char)f[i])) i++;
      if (i < lf && f[i] == '.')
        for (i++; i < lf && isdigit((unsigned char)f[i]); i++) prec = prec * 10 + (f[i] - '0');
      if (i >= lf || ++arg > top) break; /* Lua says what is wrong */
      size_t n;
      switch (f[i]) {
      case 's':
        work += lua_type(L, arg) == LUA_TSTRING ? (double)lua_rawlen(L, arg) : 64;
        break;
      case 'q':
        if (lua_type(L, arg) == LUA_TSTRING) {
          const char *s = lua_tolstring(L, arg, &n);
          work += quoted_work(s, n, FORMAT_WORK - work);
        } else {
          work += 200;
        }
        break;
      default: /* a number */
        work += 150 + 3.0 * prec;
      }
    }
    if (work > FORMAT_WORK)
      return luaL_error(L,
                        "string.format: too much work for one call (about %d ms of it, at most "
                        "%d): format the parts in calls of their own",
                        (int)(work / 1e6), (int)(FORMAT_WORK / 1e6));
  }
  return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

void weft__guard_patterns(lua_State *L, int string_table) {
  static const luaL_Reg fns[] = {
      {"find", l_find}, {"match", l_match}, {"gmatch", l_gmatch}, {"gsub", l_gsub}, {NULL, NULL}};
  string_table = lua_absindex(L, string_table);
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_getfield(L, string_table, f->name);
    lua_pushcclosure(L, f->func, 1);
    lua_setfield(L, string_table, f->name);
  }
  lua_pushcfunction(L, l_rep);
  lua_setfield(L, string_table, "rep");
  lua_getfield(L, string_table, "format");
  lua_pushcclosure(L, l_format, 1);
  lua_setfield(L, string_table, "format");
}

void weft__patterns_name_ks(weft_state *W) {
  weft__name_k(W, "string.rep_on", rep_on);
  weft__name_k(W, "table.move_on", move_on);
  weft__name_k(W, "table.concat_on", concat_on);
}
