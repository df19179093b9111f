/* The demo's part of record and replay (see replay.h). */
#include <string.h>

#include <lauxlib.h>

#include "replay.h"

#define META_VERSION 1
#define JUMP_FRAMES 300 /* F7 / F8: five seconds of fixed steps */

size_t replay_meta_write(const replay_meta *m, unsigned char *buf, size_t n) {
  size_t slen = strlen(m->script);
  if (n < 6 + slen) return 0;
  buf[0] = 'D';
  buf[1] = META_VERSION;
  for (int i = 0; i < 4; i++) buf[2 + i] = (unsigned char)(m->seed >> (8 * i));
  memcpy(buf + 6, m->script, slen);
  return 6 + slen;
}

int replay_meta_read(replay_meta *m, const void *data, size_t len) {
  const unsigned char *b = data;
  if (len < 6 || b[0] != 'D' || b[1] != META_VERSION || len - 6 >= sizeof m->script) return -1;
  m->seed = 0;
  for (int i = 0; i < 4; i++) m->seed |= (uint32_t)b[2 + i] << (8 * i);
  memcpy(m->script, b + 6, len - 6);
  m->script[len - 6] = 0;
  return memchr(m->script, 0, len - 6) ? -1 : 0;
}

/* ---- input ---- */

void replay_note_key(game *g, SDL_Scancode sc, int down) {
  if (!g->rp.recording) return;
  unsigned char ev[3] = {(unsigned char)(sc & 0xff), (unsigned char)(sc >> 8),
                         (unsigned char)(down != 0)};
  weft_record_input(g->W, ev, sizeof ev);
}

int replay_next_key(game *g, SDL_Scancode *sc, int *down) {
  const void *data;
  size_t len;
  while (weft_replay_input(g->W, &data, &len)) {
    const unsigned char *ev = data;
    if (len != 3) continue;
    *sc = (SDL_Scancode)(ev[0] | ev[1] << 8);
    *down = ev[2];
    return 1;
  }
  return 0;
}

/* ---- the state hashed each frame ---- */

/* Bytes collected for one part, folded in with one call. */
typedef struct hbuf {
  unsigned char b[512];
  size_t n;
} hbuf;

static void add(hbuf *h, const void *p, size_t n) {
  if (h->n + n > sizeof h->b) return;
  memcpy(h->b + h->n, p, n);
  h->n += n;
}

static void flush(game *g, const char *part, hbuf *h) {
  weft_tape_hash(g->W, part, h->b, h->n);
  h->n = 0;
}

static void hash_entity(game *g, const entity *e, hbuf *h) {
  add(h, &e->gen, sizeof e->gen);
  add(h, e->name, strlen(e->name));
  add(h, &e->kind, sizeof e->kind);
  add(h, &e->x, sizeof e->x);
  add(h, &e->y, sizeof e->y);
  add(h, &e->facing, sizeof e->facing);
  add(h, &e->ipath, sizeof e->ipath);
  add(h, &e->npath, sizeof e->npath);
  add(h, &e->anim, sizeof e->anim);
  add(h, &e->mood, sizeof e->mood);
  add(h, &e->seeing, sizeof e->seeing);
  add(h, e->bubble, strlen(e->bubble));
  add(h, &e->script_error, sizeof e->script_error);
  flush(g, "world", h);
}

/* The world as C keeps it: entities, doors, camera, dialogue, fades. */
static void hash_world(game *g) {
  world *w = &g->w;
  hbuf h = {.n = 0};
  for (int i = 0; i < WORLD_MAX_ENTS; i++)
    if (w->ents[i].gen & 1) hash_entity(g, &w->ents[i], &h);
  for (int i = 0; i < w->ndoors; i++) {
    add(&h, &w->doors[i].open, sizeof w->doors[i].open);
    add(&h, &w->doors[i].t, sizeof w->doors[i].t);
  }
  add(&h, &w->rng, sizeof w->rng);
  add(&h, &w->time, sizeof w->time);
  add(&h, &w->cam_x, sizeof w->cam_x);
  add(&h, &w->cam_y, sizeof w->cam_y);
  add(&h, &w->fade, sizeof w->fade);
  add(&h, &w->input_lock, sizeof w->input_lock);
  add(&h, &w->dlg.active, sizeof w->dlg.active);
  add(&h, &w->dlg.shown, sizeof w->dlg.shown);
  add(&h, w->objective, strlen(w->objective));
  flush(g, "world", &h);
  add(&h, w->dlg.text, strlen(w->dlg.text));
  add(&h, w->banner.text, strlen(w->banner.text));
  add(&h, &g->modes.paused, sizeof g->modes.paused);
  add(&h, &g->modes.time_scale, sizeof g->modes.time_scale);
  add(&h, &g->load.on, sizeof g->load.on);
  flush(g, "world", &h);
}

/* One key or value of an entity's state table, as bytes (plain values
   only: tables and functions are hashed by kind). */
static void value_bytes(lua_State *L, int idx, hbuf *h) {
  int t = lua_type(L, idx);
  add(h, &t, sizeof t);
  if (t == LUA_TNUMBER) {
    lua_Number v = lua_tonumber(L, idx);
    add(h, &v, sizeof v);
  } else if (t == LUA_TSTRING) {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    add(h, s, n < 200 ? n : 200);
  } else if (t == LUA_TBOOLEAN) {
    int b = lua_toboolean(L, idx);
    add(h, &b, sizeof b);
  }
}

/* The entities' Lua state tables (entity(name).state): what scripts keep
   about each entity. Pairs are summed, so the order `next` walks them
   in (which differs between runs) does not count. */
static void hash_lua(game *g) {
  lua_State *L = g->L;
  if (!lua_checkstack(L, 6)) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.ents);
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    if (lua_rawgeti(L, -1, i) != LUA_TTABLE) {
      lua_pop(L, 1);
      continue;
    }
    uint64_t sum = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      hbuf kv = {.n = 0};
      value_bytes(L, -2, &kv);
      value_bytes(L, -1, &kv);
      uint64_t x = 14695981039346656037u;
      for (size_t k = 0; k < kv.n; k++) x = (x ^ kv.b[k]) * 1099511628211u;
      sum += x;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    hbuf h = {.n = 0};
    add(&h, &i, sizeof i);
    add(&h, &sum, sizeof sum);
    flush(g, "entities", &h);
  }
  lua_pop(L, 1);
}

void replay_hash(game *g) {
  if (!g->rp.recording && !g->rp.on) return;
  hash_world(g);
  hash_lua(g);
}

/* ---- the viewer's keys ---- */

int replay_key(game *g, SDL_Scancode sc) {
  switch (sc) {
  case SDL_SCANCODE_F5:
    g->rp.paused = !g->rp.paused;
    return 1;
  case SDL_SCANCODE_F6:
    g->rp.paused = 1;
    g->rp.step_one = 1;
    return 1;
  case SDL_SCANCODE_F7: /* back: replay from the start, to there */
    g->rp.restart_to = g->run.frame > JUMP_FRAMES ? (long)(g->run.frame - JUMP_FRAMES) : 0;
    g->run.quit = 1;
    return 1;
  case SDL_SCANCODE_F8:
    g->rp.jump_to = (long)g->run.frame + JUMP_FRAMES;
    return 1;
  default:
    return 0;
  }
}
