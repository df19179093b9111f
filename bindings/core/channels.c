/* Channels as Lua values a task can wait on: a send waits while the
   channel is full, a recv while it is empty. */
#include <string.h>

#include "channels.h"
#include "../base/names.h"
#include "wait.h"

#define CHANNEL_MT "weft.channel"

static int l_channel_new(lua_State *L) {
  weft_state *W = weft__get(L);
  uint32_t cap = WEFT_UNBOUNDED;
  if (!lua_isnoneornil(L, 1)) {
    lua_Integer c = luaL_checkinteger(L, 1);
    if (c < 0 || c > 0x7fffffff) return luaL_argerror(L, 1, "capacity must be >= 0");
    cap = (uint32_t)c;
  }
  shandle *h = weft__sync_handle_new(W, L, CHANNEL_MT, WEFT_K_CHANNEL, 1);
  weft_id id;
  if (weft__channel_create(W->sync, cap, &id) != WEFT_OK) return luaL_error(L, "not enough memory");
  h->id = id;
  weft__sync_handle_cache(W, L, -1, h);
  return 1;
}

static const weft_waitable channel_send_what = {NULL, "channel send", NULL};

static void push_ref(weft_state *W, lua_State *L, int ref) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_values);
  lua_rawgeti(L, -1, ref);
  lua_remove(L, -2);
}

static void unref(weft_state *W, lua_State *L, int ref) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_values);
  luaL_unref(L, -1, ref);
  lua_pop(L, 1);
}

static int make_ref(weft_state *W, lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_values);
  lua_pushvalue(L, idx);
  int r = luaL_ref(L, -2);
  lua_pop(L, 1);
  return r;
}

static void drop_sender(weft_state *W, lua_State *L, weft_id task) {
  ltask_cold *c = weft__cold_if(W, task, LT(W, task));
  if (!c) return;
  if (c->chval > 0) unref(W, L, c->chval);
  c->chval = 0;
}

/* Takes the oldest waiting sender's value: into the buffer when `buffer`,
   else pushed on L. The sender wakes. Returns 0 when none waits. */
static int take_sender(weft_state *W, lua_State *L, weft_id ch, int buffer) {
  weft_wlist *senders = weft__channel_senders(W->sync, ch);
  weft_rec r = weft__wlist_head(senders);
  if (!r) return 0;
  weft_id w = weft__rec_waiter(W->S, r);
  ltask_cold *c = weft__cold_if(W, w, LT(W, w)); /* made when it began to wait */
  int ref = c->chval;
  c->chval = 0;
  if (buffer) {
    weft__channel_push(W->sync, ch, (uint64_t)ref);
  } else {
    push_ref(W, L, ref);
    unref(W, L, ref);
  }
  weft__complete(W, r, L, lua_gettop(L), 0, 0);
  return 1;
}

/* Hands the value at L[idx] to channel ch's oldest waiting receiver, if
   there is one (returns 1); it owns the value from then on (chrecv, given
   back if it is cancelled before it runs). */
static int hand_over(weft_state *W, lua_State *L, weft_id ch, int idx) {
  weft_rec r = weft__wlist_head(weft__channel_receivers(W->sync, ch));
  if (!r) return 0;
  weft_id w = weft__rec_waiter(W->S, r);
  ltask_cold *c = weft__cold_if(W, w, LT(W, w)); /* made when it began to wait */
  c->chrecv = ch;
  c->chslot = weft__rec_slot(W->S, r);
  weft__complete(W, r, L, idx, 1, 0);
  return 1;
}

/* Tries to hand v (at L[idx]) over without waiting: to the oldest waiting
   receiver, else into the buffer. Returns WEFT_OK, WEFT_ELIMIT (full) or
   WEFT_ECLOSED. */
static int offer(weft_state *W, lua_State *L, weft_id ch, int idx) {
  if (weft__channel_closed(W->sync, ch)) return WEFT_ECLOSED;
  if (hand_over(W, L, ch, idx)) return WEFT_OK;
  if (weft__channel_count(W->sync, ch) >= weft__channel_capacity(W->sync, ch)) return WEFT_ELIMIT;
  int ref = make_ref(W, L, idx);
  int rc = weft__channel_push(W->sync, ch, (uint64_t)ref);
  if (rc != WEFT_OK) {
    unref(W, L, ref);
    if (rc == WEFT_ENOMEM) luaL_error(L, "not enough memory");
  }
  return rc;
}

static void return_value(weft_state *W, lua_State *L, weft_id task, ltask *lt) {
  ltask_cold *c = weft__cold_if(W, task, lt);
  if (!c) return;
  weft_id ch = c->chrecv;
  c->chrecv = 0;
  if (!ch || !lt->co || !weft__channel_live(W->sync, ch) || !lua_checkstack(L, 4)) return;
  lua_pushvalue(lt->co, lt->base + (lt->single ? 0 : c->chslot));
  lua_xmove(lt->co, L, 1);
  if (!hand_over(W, L, ch, lua_gettop(L))) {
    int ref = make_ref(W, L, -1);
    if (weft__channel_unshift(W->sync, ch, (uint64_t)ref) != WEFT_OK) unref(W, L, ref);
  }
  lua_pop(L, 1);
}

/* Tries to take a value without waiting; pushes it and returns 1, or
   returns 0 (empty). */
static int take(weft_state *W, lua_State *L, weft_id ch) {
  uint64_t v;
  if (weft__channel_pop(W->sync, ch, &v) == WEFT_OK) {
    push_ref(W, L, (int)v);
    unref(W, L, (int)v);
    take_sender(W, L, ch, 1); /* a waiting sender fills the freed room */
    return 1;
  }
  return take_sender(W, L, ch, 0);
}

static int send_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  weft_state *W = weft__get(L);
  ltask *lt = LT(W, weft__thread_task(L));
  if (lt->raise) {
    lt->raise = 0;
    return luaL_error(L, "send on a closed channel");
  }
  return 0;
}

static int l_channel_send(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, CHANNEL_MT, "channel");
  luaL_checkany(L, 2);
  if (lua_isnil(L, 2)) return luaL_argerror(L, 2, "cannot send nil");
  lua_settop(L, 2);
  int rc = offer(W, L, h->id, 2);
  if (rc == WEFT_OK) return 0;
  if (rc == WEFT_ECLOSED) return luaL_error(L, "send on a closed channel");
  weft_id id = weft__thread_task(L);
  if (!id || id != W->cur || !lua_isyieldable(L))
    return luaL_error(L, "channel is full and send can only wait inside a task (use try_send)");
  ltask_cold *c = weft__cold(W, id, LT(W, id));
  if (!c) return luaL_error(L, "not enough memory");
  weft__wait_begin(W->S, id, WEFT_WAIT_ALL);
  if (weft__wait_on(W->S, id, 0, weft__channel_senders(W->sync, h->id)) != WEFT_OK)
    return luaL_error(L, "not enough memory");
  c->chval = make_ref(W, L, 2);
  c->wwhat = &channel_send_what;
  c->wobj = h->id;
  return weft__wait_yield(W, L, id, 1, lua_gettop(L) + 1, send_k);
}

static int l_channel_try_send(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, CHANNEL_MT, "channel");
  luaL_checkany(L, 2);
  if (lua_isnil(L, 2)) return luaL_argerror(L, 2, "cannot send nil");
  int rc = offer(W, L, h->id, 2);
  lua_pushboolean(L, rc == WEFT_OK);
  if (rc == WEFT_OK) return 1;
  lua_pushstring(L, rc == WEFT_ECLOSED ? "closed" : "full");
  return 2;
}

static int poll_channel(weft_state *W, lua_State *L, int idx, int one, weft_wlist **list) {
  shandle *h = lua_touserdata(L, idx);
  (void)one;
  if (!h->id) {
    lua_pushliteral(L, "dead channel");
    return -1;
  }
  if (take(W, L, h->id)) return 1;
  if (weft__channel_closed(W->sync, h->id)) {
    lua_pushnil(L);
    if (!one) {
      lua_pushliteral(L, "closed");
    }
    return 1;
  }
  *list = weft__channel_receivers(W->sync, h->id);
  return 0;
}

static int l_channel_recv(lua_State *L) {
  weft__sync_handle_check(L, 1, CHANNEL_MT, "channel");
  lua_settop(L, 1);
  return weft__l_wait_one(L);
}

static int l_channel_try_recv(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, CHANNEL_MT, "channel");
  if (take(W, L, h->id)) return 1;
  lua_pushnil(L);
  lua_pushstring(L, weft__channel_closed(W->sync, h->id) ? "closed" : "empty");
  return 2;
}

static int l_channel_close(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, CHANNEL_MT, "channel");
  if (weft__channel_closed(W->sync, h->id)) return 0;
  weft__channel_close(W->sync, h->id);
  lua_settop(L, 1);
  /* Receivers only wait on an empty channel: they all get nil, "closed". */
  lua_pushnil(L);
  lua_pushliteral(L, "closed");
  weft__complete_all(W, weft__channel_receivers(W->sync, h->id), L, 2, 2, 0);
  lua_pushliteral(L, "send on a closed channel");
  weft_wlist *senders = weft__channel_senders(W->sync, h->id);
  weft_rec r;
  while ((r = weft__wlist_head(senders)) != 0) {
    drop_sender(W, L, weft__rec_waiter(W->S, r));
    weft__complete(W, r, L, 4, 1, 1);
  }
  return 0;
}

static int l_channel_len(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = weft__sync_handle_check(L, 1, CHANNEL_MT, "channel");
  lua_pushinteger(L, weft__channel_count(W->sync, h->id));
  return 1;
}

static const luaL_Reg channel_methods[] = {
    {"send", l_channel_send},         {"recv", l_channel_recv},   {"try_send", l_channel_try_send},
    {"try_recv", l_channel_try_recv}, {"close", l_channel_close}, {NULL, NULL}};

static int l_channel_index(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = luaL_checkudata(L, 1, CHANNEL_MT);
  const char *k = luaL_checkstring(L, 2);
  for (const luaL_Reg *r = channel_methods; r->name; r++)
    if (strcmp(k, r->name) == 0) {
      lua_pushcfunction(L, r->func);
      return 1;
    }
  if (strcmp(k, "closed") == 0)
    lua_pushboolean(L, !h->id || weft__channel_closed(W->sync, h->id));
  else if (strcmp(k, "capacity") == 0) {
    uint32_t c = h->id ? weft__channel_capacity(W->sync, h->id) : 0;
    if (c == WEFT_UNBOUNDED)
      lua_pushnil(L);
    else
      lua_pushinteger(L, c);
  } else
    lua_pushnil(L);
  return 1;
}

static void drop_value(void *ud, uint64_t v) {
  weft_state *W = ud;
  unref(W, W->L, (int)v);
}

static int l_channel_gc(lua_State *L) {
  weft_state *W = weft__get(L);
  shandle *h = lua_touserdata(L, 1);
  if (h->id && W->sync) weft__channel_destroy(W->sync, h->id, drop_value, W);
  h->id = 0;
  return 0;
}

static const weft_waitable channel_waitable = {poll_channel, "channel recv", NULL};

void weft__channel_give_back(weft_state *W, lua_State *L, weft_id task, ltask *lt) {
  drop_sender(W, L, task);
  return_value(W, L, task, lt);
}

void weft__open_channels(weft_state *W, lua_State *L) {
  (void)W;
  weft__new_meta(L, CHANNEL_MT, l_channel_index, NULL, l_channel_gc, &channel_waitable, "channel");
  weft__name_methods(L, "channel", channel_methods);
  weft__name_k(W, "channel.send_k", send_k);
  lua_pushcfunction(L, l_channel_len);
  lua_setfield(L, -2, "__len");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_channel_new);
  lua_setfield(L, -2, "channel");
}
