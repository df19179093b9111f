/* Introspection: weft.tasks(), a snapshot of every live task (name, who,
   group, status, what it waits on, where it is suspended, its spawn
   site, its resumes, its script time), for overlays, inspectors and debuggers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "../accounts/handles.h"
#include "../core/wait.h"
#include "../accounts/cost.h"
#include "../base/sites.h"

typedef struct snap {
  weft_state *W;
  lua_State *L;
  int n;
} snap;

int weft__push_task_info(weft_state *W, lua_State *L, weft_id id) {
  ltask *lt = LT(W, id);
  if (!lt || !lt->co) return 0;
  weft__push_task(W, L, id);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  int h = lua_gettop(L);
  lua_createtable(L, 0, 9);
  lua_pushinteger(L, (lua_Integer)WEFT_ID_INDEX(id) + 1);
  lua_setfield(L, -2, "id");
  lua_pushvalue(L, h);
  lua_setfield(L, -2, "task");
  lua_getfield(L, h, "name");
  lua_setfield(L, -2, "name");
  lua_getfield(L, h, "status");
  lua_setfield(L, -2, "status");
  if (weft__push_who(W, L, id)) lua_setfield(L, -2, "who");
  weft__push_group_id(W, L, weft__task_group(W->S, id));
  lua_getiuservalue(L, -1, 1);
  lua_setfield(L, -3, "group");
  lua_pop(L, 1);
  char buf[256];
  weft__wait_describe(W->S, id, buf, sizeof buf);
  const ltask_cold *c = weft__cold_if(W, id, lt);
  if (c && c->wwhat && strcmp(buf, "wait") == 0) {
    lua_pushstring(L, c->wwhat->what);
    if (c->wwhat->name) {
      c->wwhat->name(W, L, c->wobj, c->wptr);
      if (lua_isstring(L, -1)) {
        lua_pushliteral(L, " ");
        lua_insert(L, -2);
        lua_concat(L, 3);
      } else {
        lua_pop(L, 1);
      }
    }
  } else {
    lua_pushstring(L, buf);
  }
  lua_setfield(L, -2, "waiting");
  weft__where_suspended(lt->co, buf, sizeof buf);
  lua_pushstring(L, buf);
  lua_setfield(L, -2, "where");
  lua_pushstring(L, weft__site_where(W->sites, weft__site_of(lt)));
  lua_setfield(L, -2, "spawned");
  lua_pushinteger(L, *weft__thread_resumes(lt->co, lt));
  lua_setfield(L, -2, "resumes");
  double ms[3];
  weft__cost_of(W, id, &ms[0], &ms[1], &ms[2]);
  lua_pushnumber(L, ms[0]);
  lua_setfield(L, -2, "ms"); /* script time in the last frame */
  lua_pushnumber(L, ms[1]);
  lua_setfield(L, -2, "avg_ms");
  lua_pushnumber(L, ms[2]);
  lua_setfield(L, -2, "worst_ms");
  lua_remove(L, h);
  return 1;
}

static void snap_one(void *ud, weft_id id) {
  snap *sp = ud;
  if (weft__push_task_info(sp->W, sp->L, id)) lua_rawseti(sp->L, -2, ++sp->n);
}

/* ---- a slice, the costliest first ----
   weft.tasks{by = "ms" | "avg_ms" | "worst_ms", first = i, count = n}:
   only the rows of that slice are made, so an overlay of the costliest
   tasks costs a cost lookup a task, not a table a task. The m = first +
   count - 1 costliest are kept in a min-heap as the tasks are walked (ties:
   the earlier in the walk first), then sorted. */

typedef struct ranked {
  weft_id id;
  double key;
  uint32_t order; /* place in the walk */
} ranked;

typedef struct ranking {
  weft_state *W;
  ranked *heap;
  uint32_t m, n, seen; /* room, held, live Lua tasks walked */
  int by;              /* 0 ms, 1 avg_ms, 2 worst_ms; -1 the walk's order */
} ranking;

/* Whether a ranks below b (b is kept first). */
static int below(const ranked *a, const ranked *b) {
  return a->key != b->key ? a->key < b->key : a->order > b->order;
}

static void sift_down(ranked *h, uint32_t n, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, s = i;
    if (l < n && below(&h[l], &h[s])) s = l;
    if (l + 1 < n && below(&h[l + 1], &h[s])) s = l + 1;
    if (s == i) return;
    ranked tmp = h[i];
    h[i] = h[s];
    h[s] = tmp;
    i = s;
  }
}

static void rank_one(void *ud, weft_id id) {
  ranking *r = ud;
  ltask *lt = LT(r->W, id);
  if (!lt || !lt->co) return; /* not a Lua task: weft.tasks() lists none */
  ranked e = {id, 0, r->seen++};
  if (r->by >= 0) {
    double ms[3];
    weft__cost_of(r->W, id, &ms[0], &ms[1], &ms[2]);
    e.key = ms[r->by];
  } else {
    e.key = -(double)e.order; /* the walk's order */
  }
  if (r->m == 0) return;
  if (r->n < r->m) { /* sift up */
    uint32_t i = r->n++;
    r->heap[i] = e;
    while (i && below(&r->heap[i], &r->heap[(i - 1) / 2])) {
      ranked tmp = r->heap[i];
      r->heap[i] = r->heap[(i - 1) / 2];
      r->heap[(i - 1) / 2] = tmp;
      i = (i - 1) / 2;
    }
  } else if (below(&r->heap[0], &e)) {
    r->heap[0] = e;
    sift_down(r->heap, r->n, 0);
  }
}

static int by_rank(const void *a, const void *b) { return below(a, b) ? 1 : below(b, a) ? -1 : 0; }

/* slice[key], an integer (def when absent). */
static lua_Integer slice_field(lua_State *L, const char *key, lua_Integer def) {
  int isnum = 1;
  lua_Integer v = lua_getfield(L, 1, key) == LUA_TNIL ? def : lua_tointegerx(L, -1, &isnum);
  if (!isnum)
    luaL_argerror(L, 1,
                  lua_pushfstring(L, "%s must be an integer, got %s", key, luaL_typename(L, -1)));
  lua_pop(L, 1);
  return v;
}

static int tasks_slice(weft_state *W, lua_State *L) {
  static const char *const keys[] = {"ms", "avg_ms", "worst_ms", NULL};
  int by = -1;
  if (lua_getfield(L, 1, "by") != LUA_TNIL) {
    const char *k = lua_tostring(L, -1);
    for (int i = 0; k && keys[i] && by < 0; i++)
      if (strcmp(k, keys[i]) == 0) by = i;
    if (by < 0)
      luaL_argerror(L, 1,
                    lua_pushfstring(L, "by must be \"ms\", \"avg_ms\" or \"worst_ms\", got %s",
                                    k ? k : luaL_typename(L, -1)));
  }
  lua_Integer first = slice_field(L, "first", 1), count = slice_field(L, "count", LUA_MAXINTEGER);
  lua_settop(L, 1);
  if (first < 1) luaL_argerror(L, 1, "first must be 1 or more");
  if (count < 0) luaL_argerror(L, 1, "count must not be negative");
  /* the m costliest are kept: first - 1 + count, at most every task */
  lua_Integer live = (lua_Integer)weft__sched_task_count(W->S);
  lua_Integer m = first > live ? 0 : count > live - (first - 1) ? live : first - 1 + count;
  ranking r = {W, lua_newuserdatauv(L, sizeof(ranked) * (size_t)(m ? m : 1), 0), (uint32_t)m, 0, 0,
               by};
  weft__sched_each_task(W->S, rank_one, &r);
  qsort(r.heap, r.n, sizeof *r.heap, by_rank);
  lua_createtable(L, (lua_Integer)r.n >= first ? (int)((lua_Integer)r.n - first + 1) : 0, 0);
  luaL_checkstack(L, 16, NULL);
  int n = 0;
  for (uint32_t i = (lua_Integer)r.n >= first ? (uint32_t)(first - 1) : r.n; i < r.n; i++)
    if (weft__push_task_info(W, L, r.heap[i].id)) lua_rawseti(L, -2, ++n);
  lua_pushinteger(L, (lua_Integer)r.seen);
  return 2;
}

/* weft.tasks(): every live task's row, in the scheduler's order;
   weft.tasks(slice), slice a table: the rows of the slice, and how many
   live tasks there are. */
static int l_tasks(lua_State *L) {
  weft_state *W = weft__get(L);
  if (lua_istable(L, 1)) return tasks_slice(W, L); /* anything else is ignored, as ever */
  lua_newtable(L);
  luaL_checkstack(L, 16, NULL);
  snap sp = {W, L, 0};
  weft__sched_each_task(W->S, snap_one, &sp);
  return 1;
}

static int by_live(const void *a, const void *b) {
  const uint32_t *x = a, *y = b; /* {live, site} pairs, the most live first, then in site order */
  return x[0] != y[0] ? (x[0] < y[0] ? 1 : -1) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* weft.sites([count]): the places tasks were spawned at that have live
   tasks, the most first (count of them, default 100): {spawned =
   "file:line", by = the spawner's own spawn site or nil, live = n,
   growing = true once named in a TASK_GROWTH warning}. O(places). */
static int l_sites(lua_State *L) {
  weft_state *W = weft__get(L);
  lua_Integer count = luaL_optinteger(L, 1, 100);
  if (count < 0) luaL_argerror(L, 1, "count must not be negative");
  uint32_t n = weft__site_count(W->sites), k = 0;
  uint32_t *v = lua_newuserdatauv(L, sizeof(uint32_t) * 2 * (n ? n : 1), 0);
  for (uint32_t s = 1; s <= n; s++)
    if (weft__site_live_of(W->sites, s))
      v[2 * k] = weft__site_live_of(W->sites, s), v[2 * k + 1] = s, k++;
  qsort(v, k, sizeof(uint32_t) * 2, by_live);
  if ((lua_Integer)k > count) k = (uint32_t)count;
  lua_createtable(L, (int)k, 0);
  for (uint32_t i = 0; i < k; i++) {
    uint32_t s = v[2 * i + 1], p = weft__site_parent(W->sites, s);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, weft__site_where(W->sites, s));
    lua_setfield(L, -2, "spawned");
    if (p) {
      lua_pushstring(L, weft__site_where(W->sites, p));
      lua_setfield(L, -2, "by");
    }
    lua_pushinteger(L, (lua_Integer)v[2 * i]);
    lua_setfield(L, -2, "live");
    lua_pushboolean(L, weft__site_grew(W->sites, s));
    lua_setfield(L, -2, "growing");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

void weft__open_inspect(weft_state *W, lua_State *L) {
  (void)W;
  lua_getfield(L, -1, "weft");
  lua_pushcfunction(L, l_tasks);
  lua_setfield(L, -2, "tasks");
  lua_pushcfunction(L, l_sites);
  lua_setfield(L, -2, "sites");
  lua_pop(L, 1);
}
