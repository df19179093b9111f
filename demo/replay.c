/* The demo's part of record and replay (see replay.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "replay.h"

#define META_VERSION 2
#define JUMP_FRAMES 300 /* F7 / F8: five seconds of fixed steps */

/* Meta bytes: 'D', the version, the seed (4 bytes, little-endian), then
   fields, each a tag byte, a 4-byte length and its bytes: 'S' the test
   script, 'P' the --play cinematic, 'F' --from's world state, 'L' a level
   (its name, 0, its text); a reader skips a tag it does not know.
   Version 1 had the script's bytes right after the seed. */
enum { TAG_SCRIPT = 'S', TAG_PLAY = 'P', TAG_FROM = 'F', TAG_LEVEL = 'L' };

static void put32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

int replay_meta_add_levels(replay_meta *m, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return fprintf(stderr, "weft-demo: cannot read %s\n", dir), -1;
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d)) && m->nlevels < REPLAY_MAX_LEVELS && rc == 0) {
    size_t n = strlen(de->d_name);
    if (n < 7 || n >= LEVEL_NAME || strcmp(de->d_name + n - 6, ".level") != 0) continue;
    char path[FILE_LEN];
    snprintf(path, sizeof path, "%.*s/%.*s", DIR_LEN, dir, LEVEL_NAME, de->d_name);
    FILE *f = fopen(path, "rb");
    replay_level *lv = &m->levels[m->nlevels];
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (lv->text = malloc((size_t)len + 1)) && fread(lv->text, 1, (size_t)len, f) == (size_t)len) {
      memcpy(lv->name, de->d_name, n + 1); /* n < LEVEL_NAME */
      lv->len = (size_t)len;
      m->nlevels++;
    } else {
      free(lv->text);
      lv->text = NULL;
      fprintf(stderr, "weft-demo: cannot read %s\n", path);
      rc = -1;
    }
    if (f) fclose(f);
  }
  closedir(d);
  return rc;
}

static unsigned char *put_field(unsigned char *p, int tag, const void *a, size_t na, const void *b,
                                size_t nb) {
  *p++ = (unsigned char)tag;
  put32(p, (uint32_t)(na + nb));
  memcpy(p + 4, a, na);
  if (nb) memcpy(p + 4 + na, b, nb);
  return p + 4 + na + nb;
}

unsigned char *replay_meta_write(const replay_meta *m, size_t *len) {
  size_t n = 6 + 5 + strlen(m->script) + 5 + strlen(m->play) + 5 + strlen(m->from);
  for (int i = 0; i < m->nlevels; i++) n += 5 + strlen(m->levels[i].name) + 1 + m->levels[i].len;
  unsigned char *buf = malloc(n), *p = buf;
  if (!buf) return NULL;
  *p++ = 'D';
  *p++ = META_VERSION;
  put32(p, m->seed);
  p += 4;
  p = put_field(p, TAG_SCRIPT, m->script, strlen(m->script), NULL, 0);
  p = put_field(p, TAG_PLAY, m->play, strlen(m->play), NULL, 0);
  if (m->from[0]) p = put_field(p, TAG_FROM, m->from, strlen(m->from), NULL, 0);
  for (int i = 0; i < m->nlevels; i++)
    p = put_field(p, TAG_LEVEL, m->levels[i].name, strlen(m->levels[i].name) + 1, m->levels[i].text,
                  m->levels[i].len);
  *len = (size_t)(p - buf);
  return buf;
}

/* A string field into out (cap bytes); -1 when it does not fit or holds
   a 0. */
static int get_string(char *out, size_t cap, const unsigned char *b, size_t n) {
  if (n >= cap || memchr(b, 0, n)) return -1;
  memcpy(out, b, n);
  out[n] = 0;
  return 0;
}

int replay_meta_read(replay_meta *m, const void *data, size_t len) {
  const unsigned char *b = data, *end = b + len;
  memset(m, 0, sizeof *m);
  if (len < 6 || b[0] != 'D' || (b[1] != 1 && b[1] != META_VERSION)) return -1;
  m->seed = get32(b + 2);
  if (b[1] == 1) return get_string(m->script, sizeof m->script, b + 6, len - 6);
  for (const unsigned char *p = b + 6; p < end;) {
    if (end - p < 5 || get32(p + 1) > (size_t)(end - p - 5)) return replay_meta_free(m), -1;
    int tag = p[0];
    size_t n = get32(p + 1);
    const unsigned char *v = p + 5;
    p = v + n;
    int bad = 0;
    if (tag == TAG_SCRIPT)
      bad = get_string(m->script, sizeof m->script, v, n);
    else if (tag == TAG_PLAY)
      bad = get_string(m->play, sizeof m->play, v, n);
    else if (tag == TAG_FROM)
      bad = get_string(m->from, sizeof m->from, v, n);
    else if (tag == TAG_LEVEL && m->nlevels < REPLAY_MAX_LEVELS) {
      const unsigned char *z = memchr(v, 0, n);
      replay_level *lv = &m->levels[m->nlevels];
      bad = !z || get_string(lv->name, sizeof lv->name, v, (size_t)(z - v)) != 0;
      if (!bad) {
        lv->len = n - (size_t)(z + 1 - v);
        lv->text = malloc(lv->len + 1);
        bad = !lv->text;
        if (!bad) memcpy(lv->text, z + 1, lv->len), m->nlevels++;
      }
    }
    if (bad) return replay_meta_free(m), -1;
  }
  return 0;
}

void replay_meta_free(replay_meta *m) {
  for (int i = 0; i < m->nlevels; i++) free(m->levels[i].text);
  m->nlevels = 0;
}

const replay_level *replay_level_of(const game *g, const char *name) {
  const replay_meta *m = g->rp.meta;
  for (int i = 0; m && g->rp.on && i < m->nlevels; i++)
    if (strcmp(m->levels[i].name, name) == 0) return &m->levels[i];
  return NULL;
}

/* ---- input ---- */

void replay_note_key(game *g, SDL_Scancode sc, int down) {
  if (!g->rp.recording) return;
  unsigned char ev[3] = {(unsigned char)(sc & 0xff), (unsigned char)(sc >> 8),
                         (unsigned char)(down != 0)};
  weft_record_input(g->W, ev, sizeof ev);
}

/* A key is 3 bytes (its scancode, little-endian, and down); a line or a
   reset is 0xff 0xff, its kind, 0, then its text: 4 bytes at least, so
   never taken for a key. */
void replay_note_text(game *g, int kind, const char *text) {
  if (!g->rp.recording) return;
  unsigned char ev[4 + MESSAGE_LEN] = {0xff, 0xff, (unsigned char)kind, 0};
  size_t n = strlen(text);
  if (n > MESSAGE_LEN - 1) n = MESSAGE_LEN - 1;
  memcpy(ev + 4, text, n);
  weft_record_input(g->W, ev, 4 + n);
}

int replay_next_input(game *g, replay_input *in) {
  const void *data;
  size_t len;
  while (weft_replay_input(g->W, &data, &len)) {
    const unsigned char *ev = data;
    if (len == 3) {
      in->kind = REPLAY_KEY;
      in->key = (SDL_Scancode)(ev[0] | ev[1] << 8);
      in->down = ev[2];
      return 1;
    }
    if (len < 4 || ev[0] != 0xff || ev[1] != 0xff || ev[3] != 0 || len - 4 >= MESSAGE_LEN ||
        (ev[2] != REPLAY_LINE && ev[2] != REPLAY_RESET) || memchr(ev + 4, 0, len - 4))
      continue; /* not the demo's: a recording from someone else's build */
    in->kind = ev[2];
    memcpy(in->text, ev + 4, len - 4);
    in->text[len - 4] = 0;
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
  add(h, &e->alpha, sizeof e->alpha);
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
  add(&h, &w->zoom, sizeof w->zoom);
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
