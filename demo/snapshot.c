/* The demo's own state beside a weft save (see snapshot.h). */
#include "snapshot.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "assets.h"

#define VERSION 1
#define MAX_SIDE 4096        /* a level's width or height */
#define MAX_CELLS (1u << 22) /* width times height */
#define MAX_RAW (64u << 20)  /* the bytes before packing: a few levels and the world */
#define IMAGE_NAME 64        /* sizeof image.name */

/* The parts of game.h a save holds, copied as they are (no pointers in
   them; registry references and weft ids are the loaded state's too). */
#define PART(f)                                                                                    \
  { offsetof(game, f), sizeof(((game *)0)->f) }
static const struct {
  size_t at, n;
} parts[] = {
    PART(refs),
    PART(load),
    PART(sites),
    PART(boot),
    PART(console.running),
    PART(console.env),
    PART(ov.versions),
    PART(ov.reloads),
    PART(input.holds),
    PART(modes.paused),
    PART(modes.time_scale),
    PART(modes.group),
    PART(run.seed),
    PART(run.frame),
    PART(run.realtime),
    PART(run.fast_forward),
    PART(run.beat_wanted),
    PART(run.beat),
    PART(run.test),
};
#define NPARTS (sizeof parts / sizeof parts[0])

struct snapshot {
  game *parts;   /* the parts above, nothing else: a scratch game; owned */
  world w;       /* with its level's cells (owned); not cached yet */
  level *parsed; /* a level parsed and not built, NULL none; owned */
  char images[MAX_IMAGES][IMAGE_NAME];
  int nimages;
};

/* What the bytes depend on besides the version: the layouts copied. */
static uint32_t layout(void) {
  uint32_t h = 2166136261u;
  size_t v[] = {sizeof(world), sizeof(entity), sizeof(level), sizeof(game), NPARTS};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) h = (h ^ (uint32_t)v[i]) * 16777619u;
  for (size_t i = 0; i < NPARTS; i++)
    h = (h ^ (uint32_t)(parts[i].at * 31 + parts[i].n)) * 16777619u;
  return h;
}

/* ---- a growing buffer, packed: runs of zero bytes as their length ---- */

typedef struct buf {
  unsigned char *p;
  size_t n, cap;
  int failed;
} buf;

static void put(buf *b, const void *p, size_t n) {
  if (b->failed || !n) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + n) cap *= 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) {
      b->failed = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

static void put_varint(buf *b, size_t v) {
  unsigned char c[10];
  int k = 0;
  do {
    c[k++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  put(b, c, (size_t)k);
}

static int get_varint(const unsigned char **p, const unsigned char *end, size_t *v) {
  *v = 0;
  for (int shift = 0; shift < 63 && *p < end; shift += 7) {
    unsigned char c = *(*p)++;
    *v |= (size_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) return 0;
  }
  return -1;
}

/* Packs n bytes: (literal count, literals, zero count) until the end.
   The world is mostly zeros (paths not walked, empty slots, the event
   queue), so a save of it shrinks some forty times. */
static void pack(buf *out, const unsigned char *p, size_t n) {
  put_varint(out, n);
  size_t i = 0;
  while (i < n) {
    size_t lit = i;
    while (lit < n && !(p[lit] == 0 && (lit + 8 > n || memcmp(p + lit, "\0\0\0\0\0\0\0", 8) == 0)))
      lit++;
    put_varint(out, lit - i);
    put(out, p + i, lit - i);
    size_t z = lit;
    while (z < n && p[z] == 0) z++;
    put_varint(out, z - lit);
    i = z;
  }
}

/* Unpacks what pack made into a new buffer of *n bytes (at most
   MAX_RAW); NULL when the bytes are not that. */
static unsigned char *unpack(const unsigned char *p, size_t len, size_t *n) {
  const unsigned char *end = p + len;
  size_t raw;
  if (get_varint(&p, end, &raw) || raw > MAX_RAW) return NULL;
  unsigned char *out = malloc(raw ? raw : 1);
  size_t at = 0;
  while (out && at < raw) {
    size_t lit, zeros;
    if (get_varint(&p, end, &lit) || lit > raw - at || lit > (size_t)(end - p)) break;
    memcpy(out + at, p, lit);
    p += lit;
    at += lit;
    if (get_varint(&p, end, &zeros) || zeros > raw - at) break;
    memset(out + at, 0, zeros);
    at += zeros;
  }
  if (!out || at != raw || p != end) {
    free(out);
    return NULL;
  }
  *n = raw;
  return out;
}

/* ---- writing ---- */

/* A level with its cells after it, the pointer left out. */
static void put_level(buf *b, const level *lv) {
  level copy = *lv;
  copy.cells = NULL;
  put(b, &copy, sizeof copy);
  put(b, lv->cells, (size_t)lv->w * (size_t)lv->h);
}

unsigned char *snapshot_write(const game *g, size_t *n) {
  buf raw = {0};
  uint32_t head[2] = {VERSION, layout()};
  put(&raw, head, sizeof head);
  for (size_t i = 0; i < NPARTS; i++) put(&raw, (const char *)g + parts[i].at, parts[i].n);
  int32_t nimages = 0;
  char names[MAX_IMAGES][IMAGE_NAME] = {{0}};
  for (int i = 0; i < g->assets.nimages; i++)
    if (g->assets.images[i].tex) memcpy(names[nimages++], g->assets.images[i].name, IMAGE_NAME);
  put(&raw, &nimages, sizeof nimages);
  put(&raw, names, sizeof names);
  /* the world without its addresses, the paths' unwalked ends or events
     already dispatched: what is zero packs away */
  world *w = malloc(sizeof *w);
  if (!w) raw.failed = 1;
  if (w) {
    *w = g->w;
    w->blocked = NULL;
    w->nev = 0;
    memset(w->ev, 0, sizeof w->ev);
    for (int i = 0; i < WORLD_MAX_ENTS; i++)
      memset(w->ents[i].path + w->ents[i].npath, 0,
             sizeof w->ents[i].path[0] * (size_t)(WORLD_MAX_PATH - w->ents[i].npath));
    int32_t loaded = w->loaded;
    put(&raw, &loaded, sizeof loaded);
    if (loaded) put_level(&raw, &w->lv);
    w->lv = (level){0};
    put(&raw, w, sizeof *w);
    free(w);
  }
  int32_t parsed = g->assets.parsed != NULL;
  put(&raw, &parsed, sizeof parsed);
  if (parsed) put_level(&raw, g->assets.parsed);
  buf out = {0};
  if (!raw.failed) pack(&out, raw.p, raw.n);
  free(raw.p);
  if (raw.failed || out.failed) {
    free(out.p);
    return NULL;
  }
  *n = out.n;
  return out.p;
}

/* ---- reading ---- */

typedef struct reader {
  const unsigned char *p, *end;
} reader;

static int take(reader *r, void *out, size_t n) {
  if ((size_t)(r->end - r->p) < n) return -1;
  memcpy(out, r->p, n);
  r->p += n;
  return 0;
}

#define TERMINATE(s) ((s)[sizeof(s) - 1] = 0)

/* Whether v is a finite number. */
static int fin(float v) { return isfinite(v); }

/* A level's counts, indices and strings; the cells follow it in r. */
static const char *take_level(reader *r, level *lv) {
  if (take(r, lv, sizeof *lv)) return "the level is cut short";
  lv->cells = NULL;
  if (lv->w < 1 || lv->h < 1 || lv->w > MAX_SIDE || lv->h > MAX_SIDE ||
      (size_t)lv->w * (size_t)lv->h > MAX_CELLS)
    return "the level's size is out of range";
  int counts[5] = {lv->nents, lv->nroutes, lv->nmarks, lv->ndoors, lv->nzones};
  for (int i = 0; i < 5; i++)
    if (counts[i] < 0 || counts[i] > LEVEL_MAX_ITEMS) return "a count of the level is out of range";
  for (int i = 0; i < LEVEL_MAX_ITEMS; i++) {
    level_entity *e = &lv->ents[i];
    TERMINATE(e->name), TERMINATE(e->kind), TERMINATE(e->brain);
    if (i < lv->nents && (e->route < -1 || e->route >= lv->nroutes || !fin(e->x) || !fin(e->y)))
      return "an entity of the level is out of range";
    TERMINATE(lv->routes[i].owner);
    if (lv->routes[i].n < 0 || lv->routes[i].n > LEVEL_MAX_ROUTE)
      return "a route of the level is out of range";
    TERMINATE(lv->marks[i].name);
    TERMINATE(lv->doors[i].name);
    if (i < lv->ndoors && (lv->doors[i].x < 0 || lv->doors[i].y < 0 || lv->doors[i].x >= lv->w ||
                           lv->doors[i].y >= lv->h))
      return "a door of the level is out of the map";
    TERMINATE(lv->zones[i].name), TERMINATE(lv->zones[i].cinematic);
  }
  size_t cells = (size_t)lv->w * (size_t)lv->h;
  if ((size_t)(r->end - r->p) < cells) return "the level's map is cut short";
  lv->cells = malloc(cells);
  if (!lv->cells) return "out of memory";
  take(r, lv->cells, cells);
  return NULL;
}

static int clock_ok(int c) { return c >= 0 && c < WORLD_MAX_CLOCKS; }
static int ent_ok(int e) { return e >= -1 && e < WORLD_MAX_ENTS; }

/* An entity: the indices it holds, the lengths of its strings, where it
   stands. */
static int entity_ok(entity *e) {
  TERMINATE(e->name), TERMINATE(e->title), TERMINATE(e->bubble);
  if (!(e->gen & 1u)) return 1;
  for (int i = 0; i < e->npath && i < WORLD_MAX_PATH; i++)
    if (!fin(e->path[i][0]) || !fin(e->path[i][1])) return 0;
  return fin(e->speed) && e->kind >= 0 && e->kind < KIND_COUNT && e->portrait >= 0 &&
         e->portrait < KIND_COUNT && fin(e->x) && fin(e->y) && fin(e->facing) && fin(e->face_to) &&
         e->npath >= 0 && e->npath <= WORLD_MAX_PATH && e->ipath >= 0 && e->ipath <= e->npath &&
         clock_ok(e->move_clk) && clock_ok(e->face_clk) && clock_ok(e->anim_clk) &&
         clock_ok(e->say_clk) && e->anim >= ANIM_NONE && e->anim <= ANIM_SLEEP &&
         e->mood >= MOOD_CALM && e->mood <= MOOD_ALERT && e->cast >= 0 && e->cast <= 2;
}

/* The world's indices, counts and strings (its level was read). */
static const char *world_ok(world *w) {
  for (int i = 0; i < WORLD_MAX_ENTS; i++)
    if (!entity_ok(&w->ents[i])) return "an entity is out of range";
  if (w->ndoors < 0 || w->ndoors > LEVEL_MAX_ITEMS) return "the doors are out of range";
  for (int i = 0; i < w->ndoors; i++) {
    world_door *d = &w->doors[i];
    TERMINATE(d->name);
    if (d->x < 0 || d->y < 0 || d->x >= w->lv.w || d->y >= w->lv.h ||
        (d->target != 0 && d->target != 1))
      return "a door is out of range";
  }
  int clks[] = {w->clock,      w->pan.clk,   w->shake_clk, w->fade_r.clk,
                w->zoom_r.clk, w->amb_r.clk, w->dlg.clk,   w->banner.clk};
  for (size_t i = 0; i < sizeof clks / sizeof clks[0]; i++)
    if (!clock_ok(clks[i])) return "a timed action's clock is out of range";
  if (!ent_ok(w->player) || !ent_ok(w->cam_follow) || !ent_ok(w->pan.target_ent) ||
      !ent_ok(w->dlg.ent) || w->dlg.portrait < 0 || w->dlg.portrait >= KIND_COUNT ||
      w->input_lock < 0)
    return "an entity it names is out of range";
  if (!fin(w->cam_x) || !fin(w->cam_y) || !(w->zoom >= 1 && w->zoom <= 4) ||
      !(w->fade >= 0 && w->fade <= 1) || !fin(w->view_w) || !fin(w->view_h))
    return "the camera is out of range";
  TERMINATE(w->dlg.speaker), TERMINATE(w->dlg.text);
  TERMINATE(w->banner.text), TERMINATE(w->banner.sub), TERMINATE(w->objective);
  for (int i = 0; i < LEVEL_MAX_ITEMS; i++) w->zone_in[i] = w->zone_in[i] != 0;
  w->nev = 0;
  return NULL;
}

snapshot *snapshot_read(const void *p, size_t n, char *why, size_t whyn) {
  size_t len = 0;
  unsigned char *raw = unpack(p, n, &len);
  snapshot *s = calloc(1, sizeof *s);
  game *scratch = calloc(1, sizeof *scratch);
  const char *bad = !raw ? "the game's part is damaged" : !s || !scratch ? "out of memory" : NULL;
  if (s)
    s->parts = scratch;
  else
    free(scratch);
  reader r = {raw, raw + len};
  uint32_t head[2];
  if (!bad && (take(&r, head, sizeof head) || head[0] != VERSION || head[1] != layout()))
    bad = "made by another build of weft-demo";
  for (size_t i = 0; !bad && i < NPARTS; i++)
    if (take(&r, (char *)s->parts + parts[i].at, parts[i].n)) bad = "the game's part is cut short";
  int32_t nimages, loaded, parsed;
  if (!bad && (take(&r, &nimages, sizeof nimages) || nimages < 0 || nimages > MAX_IMAGES ||
               take(&r, s->images, sizeof s->images)))
    bad = "the images are out of range";
  if (!bad) s->nimages = nimages;
  for (int i = 0; !bad && i < nimages; i++) {
    TERMINATE(s->images[i]);
    if (!s->images[i][0] || strstr(s->images[i], "..") || s->images[i][0] == '/')
      bad = "an image's name is not a file under assets/";
  }
  level lv = {0};
  if (!bad && (take(&r, &loaded, sizeof loaded) || (loaded != 0 && loaded != 1)))
    bad = "the world is cut short";
  if (!bad && loaded) bad = take_level(&r, &lv);
  if (!bad && take(&r, &s->w, sizeof s->w)) bad = "the world is cut short";
  if (!bad) {
    s->w.lv = lv; /* owned by s from here */
    lv.cells = NULL;
    s->w.loaded = 0; /* world_cache marks it, once applied */
    s->w.blocked = NULL;
    if (!loaded) s->w.lv = (level){0};
    bad = world_ok(&s->w);
    if (!bad && !loaded && s->w.ndoors) bad = "a world without a level has doors";
  }
  free(lv.cells);
  if (!bad && (take(&r, &parsed, sizeof parsed) || (parsed != 0 && parsed != 1)))
    bad = "the level loaded is cut short";
  if (!bad && parsed) {
    s->parsed = calloc(1, sizeof *s->parsed);
    bad = s->parsed ? take_level(&r, s->parsed) : "out of memory";
  }
  if (!bad && r.p != r.end) bad = "bytes follow the game's part";
  free(raw);
  if (bad) {
    snprintf(why, whyn, "bad save: %s", bad);
    snapshot_free(s);
    return NULL;
  }
  return s;
}

void snapshot_free(snapshot *s) {
  if (!s) return;
  free(s->parts);
  level_free(&s->w.lv);
  if (s->parsed) level_free(s->parsed), free(s->parsed);
  free(s);
}

int snapshot_check(const snapshot *s, lua_State *L, char *why, size_t whyn) {
  const game *p = s->parts;
  const struct {
    int ref, type;
    const char *what;
  } want[] = {
      {p->refs.ents, LUA_TTABLE, "entities"},  {p->refs.ent_mt, LUA_TTABLE, "entity metatable"},
      {p->refs.zones, LUA_TTABLE, "zones"},    {p->refs.keys, LUA_TTABLE, "key signals"},
      {p->refs.groups, LUA_TTABLE, "groups"},  {p->refs.finally, LUA_TFUNCTION, "finally"},
      {p->console.env, LUA_TTABLE, "console"}, {p->ov.versions, LUA_TTABLE, "versions"}};
  int top = lua_gettop(L), bad = -1;
  for (size_t i = 0; i < sizeof want / sizeof want[0] && bad < 0; i++) {
    if (want[i].ref <= 0 || lua_rawgeti(L, LUA_REGISTRYINDEX, want[i].ref) != want[i].type)
      bad = (int)i;
    lua_settop(L, top);
  }
  static const char *const groups[] = {"game", "world", "cutscenes"};
  if (bad < 0) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->refs.groups);
    for (int i = 0; i < 3 && bad < 0; i++)
      if (lua_getfield(L, top + 1, groups[i]) != LUA_TUSERDATA) bad = 4;
    lua_settop(L, top);
  }
  if (bad < 0) return 0;
  snprintf(why, whyn, "bad save: the game's %s are not where it says", want[bad].what);
  return -1;
}

/* The parts of game.h, as a load may set them: strings terminated,
   numbers in range, held keys that name a key. */
static void settle_parts(game *g) {
  TERMINATE(g->load.label);
  if (!(g->load.frac >= 0 && g->load.frac <= 1)) g->load.frac = 0;
  g->load.shown = g->load.frac;
  for (int i = 0; i < VERB_SITES; i++) TERMINATE(g->sites[i].where);
  TERMINATE(g->boot.why), TERMINATE(g->boot.beat);
  TERMINATE(g->run.beat_wanted), TERMINATE(g->run.beat);
  if (!(g->modes.time_scale > 0 && g->modes.time_scale <= 16)) g->modes.time_scale = 1;
  if (!isfinite(g->run.realtime)) g->run.realtime = 0;
  g->modes.paused = g->modes.paused != 0;
  for (int i = 0; i < MAX_HOLDS; i++) {
    key_hold *h = &g->input.holds[i];
    if (h->frames < 0 || h->key <= SDL_SCANCODE_UNKNOWN || h->key >= SDL_NUM_SCANCODES)
      *h = (key_hold){0};
    else if (h->frames)
      g->input.held[h->key] = 1; /* a test script's key, still down */
  }
}

void snapshot_apply(snapshot *s, game *g) {
  for (int i = 0; i < MAX_HOLDS; i++) /* the keys a test script held: up, unless held in s */
    if (g->input.holds[i].frames) g->input.held[g->input.holds[i].key] = 0;
  for (size_t i = 0; i < NPARTS; i++)
    memcpy((char *)g + parts[i].at, (const char *)s->parts + parts[i].at, parts[i].n);
  settle_parts(g);
  g->w = s->w;
  s->w.lv = (level){0};
  if (g->w.lv.cells && world_cache(&g->w) != 0)
    fprintf(stderr, "weft-demo: out of memory: the level is not drawn\n");
  if (g->assets.parsed) level_free(g->assets.parsed), free(g->assets.parsed);
  g->assets.parsed = s->parsed;
  s->parsed = NULL;
  for (int i = 0; i < s->nimages; i++) {
    char err[300];
    if (assets_load_now(g, s->images[i], err, sizeof err) != 0)
      fprintf(stderr, "weft-demo: %s\n", err);
  }
  snapshot_free(s);
}
