/* The debugger's view into a stopped program: stack frames and the
   variables of their scopes, values kept for the client to expand, and
   expressions evaluated in a frame (watches, the console, breakpoint
   conditions, logpoints, setVariable). */
#include "debug_values.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../accounts/budget.h"
#include "dap_conn.h"
#include "debug_int.h"
#include "../accounts/report.h"

#define EVAL_BUDGET 1000000 /* instructions an evaluation may take */
#define MAX_VALUE 200       /* characters of a value shown */

enum { V_LOCALS, V_UPVALUES, V_GLOBALS, V_VALUE }; /* what a var_ref lists */

/* ---- values ---- */

int weft__debug_add_frame(dbg *D, lua_State *th, int level) {
  if (D->nframes == D->capframes) {
    int cap = D->capframes ? D->capframes * 2 : 32;
    frame_ref *f = realloc(D->frames, (size_t)cap * sizeof *f);
    if (!f) return 0;
    D->frames = f;
    D->capframes = cap;
  }
  D->frames[D->nframes] = (frame_ref){th, level};
  return ++D->nframes;
}

static int add_var(dbg *D, int kind, int frame, int anchor) {
  if (D->nvars == D->capvars) {
    int cap = D->capvars ? D->capvars * 2 : 64;
    var_ref *v = realloc(D->vars, (size_t)cap * sizeof *v);
    if (!v) return 0;
    D->vars = v;
    D->capvars = cap;
  }
  D->vars[D->nvars] = (var_ref){kind, frame, anchor};
  return ++D->nvars;
}

/* Keeps the value at E[idx] for a later variables request; returns its
   reference. May raise (memory). */
static int anchor(dbg *D, lua_State *E, int idx, int frame, const char *expr) {
  idx = lua_absindex(E, idx);
  lua_rawgeti(E, LUA_REGISTRYINDEX, D->ref_anchors);
  lua_pushvalue(E, idx);
  lua_rawseti(E, -2, ++D->nanchors);
  if (expr) { /* the expression its fields are reached by, at -slot */
    lua_pushstring(E, expr);
    lua_rawseti(E, -2, -D->nanchors);
  }
  lua_pop(E, 1);
  return add_var(D, V_VALUE, frame, D->nanchors);
}

/* s (len bytes) as a Lua string literal, as much as fits in out. */
static void quote(const char *s, size_t len, char *out, size_t n) {
  size_t o = 0;
  out[o++] = '"';
  for (size_t i = 0; i < len && o + 6 < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = c == '"'    ? "\\\""
                      : c == '\\' ? "\\\\"
                      : c == '\n' ? "\\n"
                      : c == '\r' ? "\\r"
                      : c == '\t' ? "\\t"
                                  : NULL;
    if (esc) {
      out[o++] = esc[0];
      out[o++] = esc[1];
    } else if (c < 32 || c == 127) {
      o += (size_t)snprintf(out + o, n - o, "\\%d", c);
    } else {
      out[o++] = (char)c;
    }
  }
  out[o++] = '"';
  out[o] = 0;
}

/* A short text for the value at E[idx]; userdata (task handles, futures)
   print through their __tostring, tables are never called into. */
static void describe(lua_State *E, int idx, char *out, size_t n) {
  idx = lua_absindex(E, idx);
  switch (lua_type(E, idx)) {
  case LUA_TNIL:
    snprintf(out, n, "nil");
    break;
  case LUA_TBOOLEAN:
    snprintf(out, n, "%s", lua_toboolean(E, idx) ? "true" : "false");
    break;
  case LUA_TNUMBER:
    lua_pushvalue(E, idx);
    snprintf(out, n, "%s", lua_tostring(E, -1));
    lua_pop(E, 1);
    break;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(E, idx, &len);
    quote(s, len > MAX_VALUE ? MAX_VALUE : len, out, n);
    if (len > MAX_VALUE && strlen(out) + 4 < n) strcat(out, "...");
    break;
  }
  case LUA_TTABLE: {
    lua_Unsigned len = lua_rawlen(E, idx);
    if (len)
      snprintf(out, n, "table #%llu", (unsigned long long)len);
    else
      snprintf(out, n, "table");
    break;
  }
  case LUA_TFUNCTION: {
    lua_Debug ar;
    lua_pushvalue(E, idx);
    if (lua_getinfo(E, ">S", &ar) && ar.linedefined > 0)
      snprintf(out, n, "function %s:%d", ar.short_src, ar.linedefined);
    else
      snprintf(out, n, "function");
    break;
  }
  case LUA_TUSERDATA:
    snprintf(out, n, "%s", weft__tostring(E, idx));
    lua_pop(E, 1);
    break;
  default:
    snprintf(out, n, "%s", luaL_typename(E, idx));
  }
}

/* A variable (name, value at E[idx]) into the array; a table gets a
   reference the client can expand. */
static void add_variable(dbg *D, lua_State *E, cJSON *arr, const char *name, int idx, int frame,
                         const char *expr) {
  idx = lua_absindex(E, idx);
  char buf[MAX_VALUE + 64];
  describe(E, idx, buf, sizeof buf);
  cJSON *v = cJSON_CreateObject();
  cJSON_AddItemToArray(arr, v);
  cJSON_AddStringToObject(v, "name", name);
  cJSON_AddStringToObject(v, "value", buf);
  cJSON_AddStringToObject(v, "type", luaL_typename(E, idx));
  if (expr) cJSON_AddStringToObject(v, "evaluateName", expr);
  int ref = lua_type(E, idx) == LUA_TTABLE ? anchor(D, E, idx, frame, expr) : 0;
  cJSON_AddNumberToObject(v, "variablesReference", ref);
  if (ref) {
    lua_Unsigned len = lua_rawlen(E, idx);
    if (len) cJSON_AddNumberToObject(v, "indexedVariables", (double)len);
  }
}

/* The name a table key is shown by: a string as itself, others in []. */
static void key_name(lua_State *E, int idx, char *out, size_t n) {
  switch (lua_type(E, idx)) {
  case LUA_TSTRING:
    snprintf(out, n, "%s", lua_tostring(E, idx));
    break;
  case LUA_TNUMBER:
  case LUA_TBOOLEAN: {
    char b[64];
    describe(E, idx, b, sizeof b);
    snprintf(out, n, "[%s]", b);
    break;
  }
  default:
    snprintf(out, n, "[%s: %p]", luaL_typename(E, idx), lua_topointer(E, idx));
  }
}

/* ---- evaluation in a frame ---- */

/* What an evaluation's environment sees: a frame's locals, then its
   function's upvalues, then its globals. Held by a full userdata so a
   proxy kept past the evaluation finds valid == 0, not a stale frame. */
typedef struct frame_ctx {
  lua_State *th; /* NULL: no frame, the script API's globals only */
  int level;
  int valid;
} frame_ctx;

/* The index of the innermost active local called name, 0 if none. */
static int find_local(frame_ctx *c, const char *name, lua_Debug *ar) {
  if (!c->th || !lua_getstack(c->th, c->level, ar)) return 0;
  int found = 0;
  const char *nm;
  for (int i = 1; (nm = lua_getlocal(c->th, ar, i)) != NULL; i++) {
    lua_pop(c->th, 1);
    if (strcmp(nm, name) == 0) found = i;
  }
  return found;
}

/* Pushes the frame's function onto L, or returns 0. */
static int push_frame_fn(frame_ctx *c, lua_State *L) {
  lua_Debug ar;
  if (!c->th || !lua_getstack(c->th, c->level, &ar) || !lua_checkstack(c->th, 2)) return 0;
  lua_getinfo(c->th, "f", &ar);
  lua_xmove(c->th, L, 1);
  return 1;
}

/* The upvalue index of name in the function at L[fidx], 0 if none. */
static int find_upvalue(lua_State *L, int fidx, const char *name) {
  const char *nm;
  for (int i = 1; (nm = lua_getupvalue(L, fidx, i)) != NULL; i++) {
    lua_pop(L, 1);
    if (strcmp(nm, name) == 0) return i;
  }
  return 0;
}

/* Pushes the globals of the frame: the _ENV of its function or of an
   outer frame's, else the script API. */
static void push_env(frame_ctx *c, lua_State *L) {
  weft_state *W = weft__get(L);
  lua_Debug ar;
  for (int level = c->level; c->th && lua_getstack(c->th, level, &ar); level++) {
    if (!lua_checkstack(c->th, 2)) break;
    lua_getinfo(c->th, "f", &ar);
    lua_xmove(c->th, L, 1);
    int up = find_upvalue(L, -1, "_ENV");
    if (up) {
      lua_getupvalue(L, -1, up);
      lua_remove(L, -2);
      if (lua_type(L, -1) == LUA_TTABLE) return;
    }
    lua_pop(L, 1);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
}

static int l_frame_index(lua_State *L) {
  frame_ctx *c = lua_touserdata(L, lua_upvalueindex(1));
  if (!c->valid) return 0;
  lua_settop(L, 2);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    lua_Debug ar;
    int i = find_local(c, k, &ar);
    if (i && lua_checkstack(c->th, 2)) {
      lua_getlocal(c->th, &ar, i);
      lua_xmove(c->th, L, 1);
      return 1;
    }
    if (push_frame_fn(c, L)) {
      int up = find_upvalue(L, 3, k);
      if (up) {
        lua_getupvalue(L, 3, up);
        return 1;
      }
      lua_pop(L, 1);
    }
  }
  push_env(c, L);
  lua_pushvalue(L, 2);
  lua_gettable(L, -2);
  return 1;
}

static int l_frame_newindex(lua_State *L) {
  frame_ctx *c = lua_touserdata(L, lua_upvalueindex(1));
  if (!c->valid) return 0;
  lua_settop(L, 3);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    lua_Debug ar;
    int i = find_local(c, k, &ar);
    if (i && lua_checkstack(c->th, 2)) {
      lua_pushvalue(L, 3);
      lua_xmove(L, c->th, 1);
      lua_setlocal(c->th, &ar, i);
      return 0;
    }
    if (push_frame_fn(c, L)) {
      int up = find_upvalue(L, 4, k);
      if (up) {
        lua_pushvalue(L, 3);
        lua_setupvalue(L, 4, up);
        return 0;
      }
      lua_pop(L, 1);
    }
  }
  push_env(c, L);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_settable(L, -3);
  return 0;
}

/* Compiles expr (as `return expr`, else as statements) over the frame
   (th, level) and runs it with a budget of its own; leaves its results
   on E above `base` (returns LUA_OK), or the error (another status).
   Runs on E with the hook events off for the debugger (in_eval). */
static int eval_at(dbg *D, lua_State *th, int level, const char *expr) {
  lua_State *E = D->E;
  size_t len = strlen(expr);
  char *src = malloc(len + 8);
  if (!src) {
    lua_pushliteral(E, "not enough memory");
    return LUA_ERRMEM;
  }
  memcpy(src, "return ", 7);
  memcpy(src + 7, expr, len + 1);
  int st = luaL_loadbufferx(E, src, len + 7, "=(debugger)", "t");
  free(src);
  if (st != LUA_OK) {
    lua_pop(E, 1);
    st = luaL_loadbufferx(E, expr, len, "=(debugger)", "t");
    if (st != LUA_OK) return st;
  }
  frame_ctx *c = lua_newuserdatauv(E, sizeof *c, 0);
  *c = (frame_ctx){th, level, 1};
  lua_createtable(E, 0, 0); /* the proxy environment */
  lua_createtable(E, 0, 2);
  lua_pushvalue(E, -3);
  lua_pushcclosure(E, l_frame_index, 1);
  lua_setfield(E, -2, "__index");
  lua_pushvalue(E, -3);
  lua_pushcclosure(E, l_frame_newindex, 1);
  lua_setfield(E, -2, "__newindex");
  lua_setmetatable(E, -2);
  lua_setupvalue(E, -3, 1);
  lua_insert(E, -2); /* ctx under the function */
  int was = D->in_eval;
  D->in_eval = 1;
  st = weft__budget_pcall(D->W, E, 0, LUA_MULTRET, 0, "evaluation ran too long", EVAL_BUDGET);
  D->in_eval = was;
  c->valid = 0;
  return st;
}

/* Protected part of eval_value: the ctx for it is at 1. */
typedef struct eval_req {
  dbg *D;
  lua_State *th;
  int level;
  const char *expr;
  char *out;
  size_t n;
  int truthy, ok;
} eval_req;

static int l_eval_value(lua_State *E) {
  eval_req *r = lua_touserdata(E, 1);
  int base = lua_gettop(E);
  int st = eval_at(r->D, r->th, r->level, r->expr);
  if (st == LUA_OK) {
    r->ok = 1;
    int first = base + 2; /* above the ctx */
    r->truthy = lua_gettop(E) >= first && lua_toboolean(E, first);
    if (r->out) {
      r->out[0] = 0;
      if (lua_gettop(E) >= first) {
        if (lua_type(E, first) == LUA_TSTRING)
          snprintf(r->out, r->n, "%s", lua_tostring(E, first));
        else
          describe(E, first, r->out, r->n);
      }
    }
  } else if (r->out) {
    snprintf(r->out, r->n, "%s", weft__tostring(E, -1));
  }
  return 0;
}

/* Evaluates expr in a frame for a condition or a logpoint: its first
   value as text into out and whether it is truthy. Returns 1 when it ran
   without error. */
int weft__debug_eval_value(dbg *D, lua_State *th, int level, const char *expr, char *out, size_t n,
                           int *truthy) {
  eval_req r = {D, th, level, expr, out, n, 0, 0};
  lua_State *E = D->E;
  int top = lua_gettop(E);
  lua_pushcfunction(E, l_eval_value);
  lua_pushlightuserdata(E, &r);
  if (lua_pcall(E, 1, 0, 0) != LUA_OK && out) snprintf(out, n, "not enough memory");
  lua_settop(E, top);
  *truthy = r.truthy;
  return r.ok;
}

/* A logpoint: the message with each {expression} replaced by its value. */
void weft__debug_log_point(dbg *D, lua_State *L, const char *fmt) {
  char out[2048];
  size_t o = 0;
  for (const char *p = fmt; *p && o < sizeof out - 1;) {
    const char *close = *p == '{' ? strchr(p, '}') : NULL;
    if (!close) {
      out[o++] = *p++;
      continue;
    }
    char expr[512], val[512];
    size_t el = (size_t)(close - p - 1);
    if (el >= sizeof expr) el = sizeof expr - 1;
    memcpy(expr, p + 1, el);
    expr[el] = 0;
    int truthy;
    weft__debug_eval_value(D, L, 0, expr, val, sizeof val, &truthy);
    o += (size_t)snprintf(out + o, sizeof out - o, "%s", val);
    if (o >= sizeof out) o = sizeof out - 1;
    p = close + 1;
  }
  out[o] = 0;
  lua_Debug ar;
  char path[WEFT_PATH_MAX];
  int at = lua_getstack(L, 0, &ar) && lua_getinfo(L, "Sl", &ar) && ar.source[0] == '@' &&
           weft__path_resolve(ar.source + 1, path, sizeof path) == WEFT_OK;
  dap_conn_output_at(&D->conn, "console", out, o, at ? path : NULL, at ? ar.currentline : 0);
}

static frame_ref *frame_at(dbg *D, cJSON *args, const char *key) {
  int id = (int)num_arg(args, key, 0);
  return id >= 1 && id <= D->nframes ? &D->frames[id - 1] : NULL;
}

void weft__debug_scopes(dbg *D, cJSON *req, cJSON *args) {
  frame_ref *f = frame_at(D, args, "frameId");
  if (!f) return dap_conn_respond(&D->conn, req, "no such frame", NULL);
  int fi = (int)(f - D->frames);
  cJSON *body = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(body, "scopes");
  static const char *const names[] = {"Locals", "Upvalues", "Globals"};
  static const char *const hints[] = {"locals", "upvalues", "globals"};
  for (int k = V_LOCALS; k <= V_GLOBALS; k++) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, s);
    cJSON_AddStringToObject(s, "name", names[k]);
    cJSON_AddStringToObject(s, "presentationHint", hints[k]);
    cJSON_AddNumberToObject(s, "variablesReference", add_var(D, k, fi, 0));
    cJSON_AddBoolToObject(s, "expensive", k == V_GLOBALS);
  }
  dap_conn_respond(&D->conn, req, NULL, body);
}

/* A variables or setVariable request, run protected on E. */
typedef struct vreq {
  dbg *D;
  cJSON *args, *body;
  const char *error;
} vreq;

static frame_ctx ctx_of(dbg *D, int frame) {
  frame_ctx c = {NULL, 0, 1};
  if (frame >= 0 && frame < D->nframes) {
    c.th = D->frames[frame].th;
    c.level = D->frames[frame].level;
  }
  return c;
}

/* Pushes the table a scope or value reference lists onto E: locals and
   upvalues as {name, value} pairs (in order), globals or a table as
   itself. Returns 1 for a pair list. */
static int push_container(dbg *D, var_ref *v) {
  lua_State *E = D->E;
  frame_ctx c = ctx_of(D, v->frame);
  if (v->kind == V_VALUE) {
    lua_rawgeti(E, LUA_REGISTRYINDEX, D->ref_anchors);
    lua_rawgeti(E, -1, v->anchor);
    lua_remove(E, -2);
    return 0;
  }
  if (v->kind == V_GLOBALS) {
    push_env(&c, E);
    return 0;
  }
  lua_newtable(E);
  int list = lua_gettop(E), n = 0;
  lua_Debug ar;
  if (!c.th || !lua_getstack(c.th, c.level, &ar)) return 1;
  if (v->kind == V_LOCALS) {
    const char *nm;
    for (int i = 1; lua_checkstack(c.th, 2) && (nm = lua_getlocal(c.th, &ar, i)) != NULL; i++) {
      lua_xmove(c.th, E, 1);
      if (nm[0] == '(') {
        lua_pop(E, 1);
        continue;
      }
      lua_pushstring(E, nm);
      lua_rawseti(E, list, ++n);
      lua_rawseti(E, list, ++n);
    }
  } else if (push_frame_fn(&c, E)) {
    const char *nm;
    for (int i = 1; (nm = lua_getupvalue(E, list + 1, i)) != NULL; i++) {
      lua_pushstring(E, *nm ? nm : "?");
      lua_rawseti(E, list, ++n);
      lua_rawseti(E, list, ++n);
    }
    lua_pop(E, 1);
  }
  return 1;
}

/* Whether s is a Lua name (and not a keyword). */
static int is_name(const char *s) {
  static const char *const kw[] = {"and",   "break", "do",       "else",  "elseif", "end",
                                   "false", "for",   "function", "goto",  "if",     "in",
                                   "local", "nil",   "not",      "or",    "repeat", "return",
                                   "then",  "true",  "until",    "while", NULL};
  if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return 0;
  for (const char *p = s; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9')))
      return 0;
  for (int i = 0; kw[i]; i++)
    if (strcmp(s, kw[i]) == 0) return 0;
  return 1;
}

/* The expression of the field at key E[k] of the table reached by parent
   (NULL: none): parent.name, parent["text"] or parent[3]. */
static const char *field_expr(lua_State *E, const char *parent, int k, char *out, size_t n) {
  if (!parent) return NULL;
  int t = lua_type(E, k);
  if (t == LUA_TSTRING && is_name(lua_tostring(E, k))) {
    snprintf(out, n, "%s.%s", parent, lua_tostring(E, k));
  } else if (t == LUA_TSTRING) {
    char q[300];
    size_t len;
    const char *s = lua_tolstring(E, k, &len);
    quote(s, len, q, sizeof q);
    snprintf(out, n, "%s[%s]", parent, q);
  } else if (t == LUA_TNUMBER || t == LUA_TBOOLEAN) {
    lua_pushvalue(E, k);
    snprintf(out, n, "%s[%s]", parent,
             t == LUA_TBOOLEAN ? (lua_toboolean(E, k) ? "true" : "false") : lua_tostring(E, -1));
    lua_pop(E, 1);
  } else {
    return NULL;
  }
  return out;
}

/* expr as an expression a field can follow: itself when it is a name or
   a path of names, else in parentheses. */
static const char *paren(const char *expr, char *out, size_t n) {
  int simple = 1;
  for (const char *p = expr; *p && simple; p++)
    simple = *p == '_' || *p == '.' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
             (*p >= '0' && *p <= '9');
  snprintf(out, n, simple ? "%s" : "(%s)", expr);
  return out;
}

static int l_variables(lua_State *E) {
  vreq *r = lua_touserdata(E, 1);
  dbg *D = r->D;
  int ref = (int)num_arg(r->args, "variablesReference", 0);
  if (ref < 1 || ref > D->nvars) return r->error = "no such variable reference", 0;
  var_ref v = D->vars[ref - 1];
  int start = (int)num_arg(r->args, "start", 0), count = (int)num_arg(r->args, "count", 0);
  const char *filter = str_arg(r->args, "filter");
  cJSON *arr = cJSON_AddArrayToObject(r->body, "variables");
  int pairs = push_container(D, &v);
  int t = lua_gettop(E), seen = 0;
#define WANT() (seen++ >= start && (count <= 0 || seen <= start + count))
  if (pairs) {
    lua_Integer n = (lua_Integer)lua_rawlen(E, t);
    for (lua_Integer i = 1; i + 1 <= n; i += 2) {
      if (!WANT()) continue;
      lua_rawgeti(E, t, i + 1);
      lua_rawgeti(E, t, i);
      add_variable(D, E, arr, lua_tostring(E, -1), -2, v.frame, lua_tostring(E, -1));
      lua_pop(E, 2);
    }
    return 0;
  }
  if (!lua_istable(E, t)) return 0;
  lua_Unsigned len = lua_rawlen(E, t);
  char name[256], expr[512];
  const char *parent = NULL;
  if (v.kind == V_VALUE) {
    lua_rawgeti(E, LUA_REGISTRYINDEX, D->ref_anchors);
    lua_rawgeti(E, -1, -v.anchor);
    lua_remove(E, -2);
    parent = lua_tostring(E, -1); /* kept on the stack below t's keys */
  }
  if (!filter || strcmp(filter, "indexed") == 0)
    for (lua_Unsigned i = 1; i <= len; i++) {
      if (!WANT()) continue;
      lua_pushinteger(E, (lua_Integer)i);
      const char *ex = field_expr(E, parent, -1, expr, sizeof expr);
      lua_rawgeti(E, t, (lua_Integer)i);
      snprintf(name, sizeof name, "[%llu]", (unsigned long long)i);
      add_variable(D, E, arr, name, -1, v.frame, ex);
      lua_pop(E, 1);
      lua_pop(E, 1);
    }
  if (!filter || strcmp(filter, "named") == 0) {
    lua_pushnil(E);
    while (lua_next(E, t)) {
      int isint = 0;
      lua_Integer k = lua_tointegerx(E, -2, &isint);
      if (lua_type(E, -2) == LUA_TNUMBER && isint && k >= 1 && (lua_Unsigned)k <= len) {
        lua_pop(E, 1);
        continue;
      }
      if (WANT()) {
        key_name(E, -2, name, sizeof name);
        add_variable(D, E, arr, name, -1, v.frame,
                     v.kind == V_GLOBALS
                         ? (is_name(lua_tostring(E, -2)) && lua_type(E, -2) == LUA_TSTRING
                                ? lua_tostring(E, -2)
                                : NULL)
                         : field_expr(E, parent, -2, expr, sizeof expr));
      }
      lua_pop(E, 1);
    }
  }
#undef WANT
  return 0;
}

/* Runs fn(E) protected with r at 1; an error (memory) becomes r->error. */
static void run_protected(dbg *D, lua_CFunction fn, vreq *r) {
  lua_State *E = D->E;
  int top = lua_gettop(E);
  lua_pushcfunction(E, fn);
  lua_pushlightuserdata(E, r);
  if (lua_pcall(E, 1, 0, 0) != LUA_OK) r->error = "not enough memory";
  lua_settop(E, top);
}

/* Evaluates args.expression (evaluate) or args.value (setVariable) in
   the frame and leaves its first value on top of E. */
static int eval_top(vreq *r, const char *expr, int frame, const char **err) {
  dbg *D = r->D;
  lua_State *E = D->E;
  frame_ctx c = ctx_of(D, frame);
  int base = lua_gettop(E);
  int st = eval_at(D, c.th, c.level, expr);
  if (st != LUA_OK) {
    *err = lua_pushfstring(E, "%s", weft__tostring(E, -1));
    return 0;
  }
  if (lua_gettop(E) < base + 2)
    lua_pushnil(E);
  else
    lua_settop(E, base + 2);
  return 1;
}

static int l_evaluate(lua_State *E) {
  vreq *r = lua_touserdata(E, 1);
  dbg *D = r->D;
  const char *expr = str_arg(r->args, "expression");
  if (!expr) return r->error = "evaluate needs an expression", 0;
  int fid = (int)num_arg(r->args, "frameId", 0);
  int frame = fid >= 1 && fid <= D->nframes ? fid - 1 : -1;
  if (frame < 0 && D->stopped && D->stop_L) frame = weft__debug_add_frame(D, D->stop_L, 0) - 1;
  int base = lua_gettop(E);
  const char *err;
  frame_ctx c = ctx_of(D, frame);
  int st = eval_at(D, c.th, c.level, expr);
  if (st != LUA_OK) {
    err = weft__tostring(E, -1);
    cJSON_AddStringToObject(r->body, "error", err);
    r->error = err;
    return 0;
  }
  (void)eval_top;
  int first = base + 2, top = lua_gettop(E);
  luaL_Buffer b;
  char buf[MAX_VALUE + 64];
  luaL_buffinit(E, &b);
  for (int i = first; i <= top; i++) {
    describe(E, i, buf, sizeof buf);
    if (i > first) luaL_addstring(&b, ", ");
    luaL_addstring(&b, buf);
  }
  luaL_pushresult(&b);
  cJSON_AddStringToObject(r->body, "result", lua_tostring(E, -1));
  int ref = top >= first && lua_type(E, first) == LUA_TTABLE
                ? anchor(D, E, first, frame, paren(expr, buf, sizeof buf))
                : 0;
  cJSON_AddNumberToObject(r->body, "variablesReference", ref);
  if (top >= first) cJSON_AddStringToObject(r->body, "type", luaL_typename(E, first));
  return 0;
}

static int l_set_variable(lua_State *E) {
  vreq *r = lua_touserdata(E, 1);
  dbg *D = r->D;
  int ref = (int)num_arg(r->args, "variablesReference", 0);
  const char *name = str_arg(r->args, "name"), *value = str_arg(r->args, "value");
  if (ref < 1 || ref > D->nvars || !name || !value) return r->error = "no such variable", 0;
  var_ref v = D->vars[ref - 1];
  const char *err = NULL;
  if (!eval_top(r, value, v.frame, &err)) return r->error = err, 0;
  int val = lua_gettop(E);
  frame_ctx c = ctx_of(D, v.frame);
  lua_Debug ar;
  int done = 0;
  if (v.kind == V_LOCALS) {
    int i = find_local(&c, name, &ar);
    if (i && lua_checkstack(c.th, 2)) {
      lua_pushvalue(E, val);
      lua_xmove(E, c.th, 1);
      lua_setlocal(c.th, &ar, i);
      done = 1;
    }
  } else if (v.kind == V_UPVALUES) {
    if (push_frame_fn(&c, E)) {
      int up = find_upvalue(E, -1, name);
      if (up) {
        lua_pushvalue(E, val);
        lua_setupvalue(E, -2, up);
        done = 1;
      }
    }
  } else {
    push_container(D, &v);
    int t = lua_gettop(E);
    if (lua_istable(E, t)) {
      char kn[256];
      lua_pushnil(E);
      while (!done && lua_next(E, t)) {
        lua_pop(E, 1);
        key_name(E, -1, kn, sizeof kn);
        if (strcmp(kn, name) == 0) {
          lua_pushvalue(E, -1);
          lua_pushvalue(E, val);
          lua_rawset(E, t);
          done = 1;
        }
      }
      if (!done && v.kind == V_GLOBALS) { /* a new global */
        lua_pushvalue(E, val);
        lua_setfield(E, t, name);
        done = 1;
      }
    }
  }
  if (!done) return r->error = "no such variable", 0;
  char buf[MAX_VALUE + 64];
  describe(E, val, buf, sizeof buf);
  cJSON_AddStringToObject(r->body, "value", buf);
  cJSON_AddStringToObject(r->body, "type", luaL_typename(E, val));
  cJSON_AddNumberToObject(r->body, "variablesReference",
                          lua_type(E, val) == LUA_TTABLE ? anchor(D, E, val, v.frame, NULL) : 0);
  return 0;
}

/* variables, evaluate, setVariable: fn fills the response body inside a
   protected call on the debugger's thread, or sets r->error (which may be
   a string on that thread's stack: copied before the stack is cleared). */
static void req_lua(dbg *D, cJSON *req, cJSON *args, lua_CFunction fn) {
  vreq r = {D, args, cJSON_CreateObject(), NULL};
  run_protected(D, fn, &r);
  if (r.error) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", r.error);
    cJSON_Delete(r.body);
    return dap_conn_respond(&D->conn, req, msg, NULL);
  }
  dap_conn_respond(&D->conn, req, NULL, r.body);
}

void weft__debug_variables(dbg *D, cJSON *req, cJSON *args) { req_lua(D, req, args, l_variables); }
void weft__debug_evaluate(dbg *D, cJSON *req, cJSON *args) { req_lua(D, req, args, l_evaluate); }
void weft__debug_set_variable(dbg *D, cJSON *req, cJSON *args) {
  req_lua(D, req, args, l_set_variable);
}
