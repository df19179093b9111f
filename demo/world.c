/* The world: tile queries, path finding, entity actions and the per-frame
   update that moves everything and reports finished actions as events. */
#include "world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAYER_SPEED 72.0f /* units per second */
#define NEAR_SENSE 14.0f   /* a guard notices anyone this close, cone or not */
#define TURN_SPEED 540.0f  /* degrees per second for face() */
#define WALK_TURN 900.0f   /* degrees per second while walking */
#define PI_F 3.14159265f

static const char *const kind_names[KIND_COUNT] = {"hero", "guard", "captain", "sage"};
static const char *const kind_titles[KIND_COUNT] = {"Wren", "Guard", "Captain Hale", "Old Bram"};

/* ---- small helpers ---- */

static float wrap180(float a) {
  a = fmodf(a, 360.0f);
  if (a > 180) a -= 360;
  if (a < -180) a += 360;
  return a;
}

static float approach_angle(float cur, float to, float step) {
  float d = wrap180(to - cur);
  if (fabsf(d) <= step) return to;
  return cur + (d > 0 ? step : -step);
}

static float smooth(float t) {
  if (t <= 0) return 0;
  if (t >= 1) return 1;
  return t * t * (3 - 2 * t);
}

/* Whether r is still moving (or holds a future to settle). */
static int ramp_busy(const ramp *r) { return r->f || r->t < r->dur; }

void world_emit(world *w, int kind, uint64_t fut, int ent, int zone, const char *value) {
  if (w->nev == WORLD_MAX_EVENTS) return;
  world_event *e = &w->ev[w->nev++];
  e->kind = kind;
  e->fut = fut;
  e->ent = ent;
  e->zone = zone;
  snprintf(e->value, sizeof e->value, "%s", value ? value : "");
}

/* Resolves *f with value and clears it. */
static void settle(world *w, uint64_t *f, const char *value) {
  if (*f) world_emit(w, EV_RESOLVE, *f, -1, -1, value);
  *f = 0;
}

float world_rand(world *w) {
  uint32_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  w->rng = x;
  return (float)(x >> 8) / 16777216.0f;
}

/* ---- tiles ---- */

static int cell_walkable(char c) { return strchr(".,\"-_:", c) != NULL && c != 0; }
static int cell_opaque(char c) { return strchr("#TWBS thos", c) != NULL && c != 0; }

static int door_at(const world *w, int tx, int ty) {
  for (int i = 0; i < w->ndoors; i++)
    if (w->doors[i].x == tx && w->doors[i].y == ty) return i;
  return -1;
}

int world_solid(const world *w, int tx, int ty) {
  if (!w->loaded || tx < 0 || ty < 0 || tx >= w->lv.w || ty >= w->lv.h) return 1;
  return w->blocked[ty * w->lv.w + tx];
}

int world_opaque(const world *w, int tx, int ty) {
  char c = level_cell(&w->lv, tx, ty);
  if (c == 'D') {
    int d = door_at(w, tx, ty);
    return d < 0 || !w->doors[d].open;
  }
  return cell_opaque(c);
}

static void rebuild_blocked(world *w) {
  for (int y = 0; y < w->lv.h; y++)
    for (int x = 0; x < w->lv.w; x++) {
      char c = level_cell(&w->lv, x, y);
      int solid = !cell_walkable(c);
      if (c == 'D') {
        int d = door_at(w, x, y);
        solid = d < 0 || !w->doors[d].open;
      }
      w->blocked[y * w->lv.w + x] = (uint8_t)solid;
    }
}

void world_set_cell(world *w, int tx, int ty, char c) {
  if (!w->loaded || tx < 0 || ty < 0 || tx >= w->lv.w || ty >= w->lv.h) return;
  w->lv.cells[ty * w->lv.w + tx] = c;
  rebuild_blocked(w);
}

int world_line_clear(const world *w, float x0, float y0, float x1, float y1) {
  float dx = x1 - x0, dy = y1 - y0, len = sqrtf(dx * dx + dy * dy);
  int steps = (int)(len / 2.0f) + 1;
  int sx = (int)floorf(x0 / TILE), sy = (int)floorf(y0 / TILE);
  for (int i = 1; i <= steps; i++) {
    float t = (float)i / (float)steps;
    int tx = (int)floorf((x0 + dx * t) / TILE), ty = (int)floorf((y0 + dy * t) / TILE);
    if ((tx != sx || ty != sy) && world_opaque(w, tx, ty)) return 0;
  }
  return 1;
}

/* The box an entity's feet occupy is free of solid tiles. */
static int feet_free(const world *w, float x, float y) {
  static const float pts[4][2] = {{-5, -5}, {5, -5}, {-5, 1}, {5, 1}};
  for (int i = 0; i < 4; i++)
    if (world_solid(w, (int)floorf((x + pts[i][0]) / TILE), (int)floorf((y + pts[i][1]) / TILE)))
      return 0;
  return 1;
}

static int walk_clear(const world *w, float x0, float y0, float x1, float y1) {
  float dx = x1 - x0, dy = y1 - y0, len = sqrtf(dx * dx + dy * dy);
  int steps = (int)(len / 3.0f) + 1;
  for (int i = 1; i <= steps; i++) {
    float t = (float)i / (float)steps;
    if (!feet_free(w, x0 + dx * t, y0 + dy * t)) return 0;
  }
  return 1;
}

/* ---- path finding: A* over tiles, 8 directions without cutting corners,
   then string-pulled to straight walkable segments. O(n log n) in cells. ---- */

typedef struct heap {
  int *cell;
  float *key;
  int n;
} heap;

static void heap_push(heap *h, int cell, float key) {
  int i = h->n++;
  while (i > 0) {
    int p = (i - 1) / 2;
    if (h->key[p] <= key) break;
    h->cell[i] = h->cell[p];
    h->key[i] = h->key[p];
    i = p;
  }
  h->cell[i] = cell;
  h->key[i] = key;
}

static int heap_pop(heap *h) {
  int top = h->cell[0];
  int cell = h->cell[--h->n];
  float key = h->key[h->n];
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->key[c + 1] < h->key[c]) c++;
    if (h->key[c] >= key) break;
    h->cell[i] = h->cell[c];
    h->key[i] = h->key[c];
    i = c;
  }
  h->cell[i] = cell;
  h->key[i] = key;
  return top;
}

/* Fills e->path from (x0,y0) to (x1,y1); returns 0, or -1 without a path. */
/* The free cell nearest the goal cell (within 2 cells); 0 if none. */
static int nearest_free(world *w, int *gx, int *gy) {
  int best = -1, W = w->lv.w;
  float bd = 1e9f;
  for (int dy = -2; dy <= 2; dy++)
    for (int dx = -2; dx <= 2; dx++)
      if (!world_solid(w, *gx + dx, *gy + dy)) {
        float d = (float)(dx * dx + dy * dy);
        if (d < bd) bd = d, best = (*gy + dy) * W + *gx + dx;
      }
  if (best < 0) return 0;
  *gx = best % W, *gy = best / W;
  return 1;
}

/* Gives e the path the search found (prev links from goal back to
   start), ending exactly at (x1, y1) when the goal cell was free. */
static void set_path(world *w, entity *e, const int *prev, int start, int goal, int exact, float x1,
                     float y1) {
  int W = w->lv.w;
  /* cells from goal back to start, reversed into tile centres */
  int cells[WORLD_MAX_PATH], len = 0;
  for (int c = goal; c != -1 && c != start; c = prev[c]) {
    if (len == WORLD_MAX_PATH) memmove(cells, cells + 1, sizeof(int) * (WORLD_MAX_PATH - 1)), len--;
    cells[len++] = c;
  }
  float pts[WORLD_MAX_PATH + 1][2];
  int np = 0;
  for (int i = len - 1; i >= 0; i--) {
    pts[np][0] = (float)(cells[i] % W) * TILE + TILE / 2.0f;
    pts[np][1] = (float)(cells[i] / W) * TILE + TILE / 2.0f;
    np++;
  }
  if (exact) {
    if (np == 0) np = 1;
    pts[np - 1][0] = x1;
    pts[np - 1][1] = y1;
  }
  /* string pulling: from each point, jump to the furthest one reachable
     in a straight walk */
  e->npath = 0;
  e->ipath = 0;
  float px = e->x, py = e->y;
  int i = 0;
  while (i < np && e->npath < WORLD_MAX_PATH) {
    int j = np - 1;
    while (j > i && !walk_clear(w, px, py, pts[j][0], pts[j][1])) j--;
    e->path[e->npath][0] = pts[j][0];
    e->path[e->npath][1] = pts[j][1];
    e->npath++;
    px = pts[j][0];
    py = pts[j][1];
    i = j + 1;
  }
}

static int find_path(world *w, entity *e, float x1, float y1) {
  int W = w->lv.w, H = w->lv.h, n = W * H;
  int sx = (int)floorf(e->x / TILE), sy = (int)floorf(e->y / TILE);
  int gx = (int)floorf(x1 / TILE), gy = (int)floorf(y1 / TILE);
  if (sx < 0 || sy < 0 || sx >= W || sy >= H) return -1;
  int exact = !world_solid(w, gx, gy);
  if (!exact && !nearest_free(w, &gx, &gy)) return -1;
  if (gx < 0 || gy < 0 || gx >= W || gy >= H) return -1;
  int start = sy * W + sx, goal = gy * W + gx;
  float *g = malloc(sizeof(float) * (size_t)n);
  int *prev = malloc(sizeof(int) * (size_t)n);
  heap h = {malloc(sizeof(int) * (size_t)n * 8), malloc(sizeof(float) * (size_t)n * 8), 0};
  int ok = -1;
  if (!g || !prev || !h.cell || !h.key) goto out;
  for (int i = 0; i < n; i++) g[i] = 1e30f, prev[i] = -1;
  g[start] = 0;
  heap_push(&h, start, 0);
  static const int dx8[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy8[8] = {0, 0, 1, -1, 1, -1, 1, -1};
  while (h.n > 0) {
    int c = heap_pop(&h);
    if (c == goal) {
      ok = 0;
      break;
    }
    int cx = c % W, cy = c / W;
    for (int k = 0; k < 8; k++) {
      int nx = cx + dx8[k], ny = cy + dy8[k];
      if (world_solid(w, nx, ny)) continue;
      if (k >= 4 && (world_solid(w, cx + dx8[k], cy) || world_solid(w, cx, cy + dy8[k]))) continue;
      int nc = ny * W + nx;
      float cost = g[c] + (k >= 4 ? 1.4142f : 1.0f);
      if (cost < g[nc] && h.n < n * 8) {
        g[nc] = cost;
        prev[nc] = c;
        float hx = fabsf((float)(nx - gx)), hy = fabsf((float)(ny - gy));
        heap_push(&h, nc, cost + (hx > hy ? hx + 0.4142f * hy : hy + 0.4142f * hx));
      }
    }
  }
  if (ok == 0) set_path(w, e, prev, start, goal, exact, x1, y1);
out:
  free(g);
  free(prev);
  free(h.cell);
  free(h.key);
  return ok;
}

/* ---- setup ---- */

void world_init(world *w, uint32_t seed) {
  memset(w, 0, sizeof *w);
  w->player = -1;
  w->cam_follow = -1;
  w->pan.target_ent = -1;
  w->dlg.ent = -1;
  w->rng = seed * 2654435761u + 0x9e3779b9u;
  if (!w->rng) w->rng = 1;
  for (int i = 0; i < 3; i++) w->amb[i] = 1;
  w->zoom = 1;
  w->view_w = 1280 / 3.0f;
  w->view_h = 720 / 3.0f;
}

void world_load(world *w, level *lv) {
  w->lv = *lv;
  memset(lv, 0, sizeof *lv);
  w->blocked = calloc((size_t)w->lv.w * (size_t)w->lv.h, 1);
  w->ndoors = 0;
  for (int i = 0; i < w->lv.ndoors; i++) {
    world_door *d = &w->doors[w->ndoors++];
    memset(d, 0, sizeof *d);
    memcpy(d->name, w->lv.doors[i].name, sizeof d->name); /* both LEVEL_NAME, terminated */
    d->x = w->lv.doors[i].x;
    d->y = w->lv.doors[i].y;
    d->open = d->target = w->lv.doors[i].open;
    d->t = (float)d->open;
  }
  w->loaded = w->blocked != NULL;
  if (w->loaded) rebuild_blocked(w);
}

int world_cache(world *w) {
  free(w->blocked);
  w->blocked = calloc((size_t)w->lv.w * (size_t)w->lv.h, 1);
  w->loaded = w->blocked != NULL;
  if (!w->loaded) return -1;
  rebuild_blocked(w);
  return 0;
}

void world_end(world *w, const char *why) {
  for (int i = 0; i < WORLD_MAX_ENTS; i++) world_destroy(w, i);
  uint64_t *fs[] = {&w->pan.f, &w->fade_r.f, &w->zoom_r.f, &w->amb_r.f, &w->dlg.f, &w->banner.f};
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) settle(w, fs[i], why);
  for (int i = 0; i < w->ndoors; i++) settle(w, &w->doors[i].f, why);
}

void world_free(world *w) {
  level_free(&w->lv);
  free(w->blocked);
  w->blocked = NULL;
  w->loaded = 0;
}

void world_renew(world *w, uint32_t seed) {
  uint32_t gens[WORLD_MAX_ENTS];
  for (int i = 0; i < WORLD_MAX_ENTS; i++) gens[i] = w->ents[i].gen + (w->ents[i].gen & 1u);
  world_free(w);
  world_init(w, seed);
  for (int i = 0; i < WORLD_MAX_ENTS; i++) w->ents[i].gen = gens[i];
}

/* ---- entities ---- */

const char *world_kind_name(int kind) {
  return kind >= 0 && kind < KIND_COUNT ? kind_names[kind] : "";
}

const char *world_kind_title(int kind) {
  return kind >= 0 && kind < KIND_COUNT ? kind_titles[kind] : "";
}

int world_kind(const char *name) {
  for (int k = 0; k < KIND_COUNT; k++)
    if (strcmp(name, kind_names[k]) == 0) return k;
  return -1;
}

int world_spawn(world *w, int kind, const char *name, float x, float y, float facing) {
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = &w->ents[i];
    if (e->gen & 1u) continue;
    uint32_t gen = e->gen + 1;
    memset(e, 0, sizeof *e);
    e->gen = gen;
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->title, sizeof e->title, "%s", kind_titles[kind]);
    e->portrait = kind;
    memset(e->tint, 255, sizeof e->tint);
    e->alpha = 1;
    e->kind = kind;
    e->x = x;
    e->y = y;
    e->facing = e->face_to = facing;
    e->vision = kind == KIND_GUARD;
    e->range = 92;
    e->half_angle = 33;
    e->solid = kind != KIND_HERO;
    if (kind == KIND_HERO && w->player < 0) w->player = i;
    return i;
  }
  return -1;
}

entity *world_ent(world *w, int idx) {
  if (idx < 0 || idx >= WORLD_MAX_ENTS || !(w->ents[idx].gen & 1u)) return NULL;
  return &w->ents[idx];
}

int world_find(const world *w, const char *name) {
  for (int i = 0; i < WORLD_MAX_ENTS; i++)
    if ((w->ents[i].gen & 1u) && strcmp(w->ents[i].name, name) == 0) return i;
  return -1;
}

void world_destroy(world *w, int idx) {
  entity *e = world_ent(w, idx);
  if (!e) return;
  char msg[64];
  snprintf(msg, sizeof msg, "%s was destroyed", e->name);
  uint64_t *fs[4] = {&e->move_f, &e->face_f, &e->anim_f, &e->bubble_f};
  for (int i = 0; i < 4; i++)
    if (*fs[i]) world_emit(w, EV_FAIL, *fs[i], idx, -1, msg), *fs[i] = 0;
  if (w->dlg.active && w->dlg.ent == idx) {
    if (w->dlg.f) world_emit(w, EV_FAIL, w->dlg.f, idx, -1, msg);
    w->dlg.active = 0;
    w->dlg.f = 0;
  }
  if (w->cam_follow == idx) w->cam_follow = -1;
  if (w->pan.target_ent == idx) w->pan.target_ent = -1;
  if (w->player == idx) w->player = -1;
  e->gen++;
}

/* ---- clocks ---- */

int world_use_clock(world *w, uint64_t key) {
  int k = 0, free_k = 0;
  for (int i = 1; i < WORLD_MAX_CLOCKS && key && !k; i++) {
    if (w->clocks[i].key == key) k = i;
    if (!w->clocks[i].key && !free_k) free_k = i;
  }
  if (key && !k && free_k) {
    k = free_k;
    w->clocks[k].key = key;
    w->clocks[k].dt = w->clocks[0].dt;
  }
  return w->clock = k;
}

/* An action that has ended goes back to clock 0, so the clock of its
   group can be freed and reused. */
static void settle_clock(int *clk, int active) {
  if (!active) *clk = 0;
}

void world_sweep_clocks(world *w) {
  uint8_t used[WORLD_MAX_CLOCKS] = {1};
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(w, i);
    if (!e) continue;
    settle_clock(&e->move_clk, e->ipath < e->npath || e->move_f);
    settle_clock(&e->face_clk, e->facing != e->face_to || e->face_f);
    settle_clock(&e->anim_clk, e->anim != ANIM_NONE);
    settle_clock(&e->say_clk, e->bubble[0] != 0);
    used[e->move_clk] = used[e->face_clk] = used[e->anim_clk] = used[e->say_clk] = 1;
  }
  settle_clock(&w->pan.clk, w->pan.active);
  settle_clock(&w->shake_clk, w->shake_t > 0);
  settle_clock(&w->fade_r.clk, ramp_busy(&w->fade_r));
  settle_clock(&w->zoom_r.clk, ramp_busy(&w->zoom_r));
  settle_clock(&w->amb_r.clk, ramp_busy(&w->amb_r));
  settle_clock(&w->dlg.clk, w->dlg.active);
  settle_clock(&w->banner.clk, w->banner.text[0] != 0);
  used[w->pan.clk] = used[w->shake_clk] = used[w->fade_r.clk] = used[w->amb_r.clk] = 1;
  used[w->zoom_r.clk] = 1;
  used[w->dlg.clk] = used[w->banner.clk] = 1;
  for (int i = 1; i < WORLD_MAX_CLOCKS; i++)
    if (!used[i]) w->clocks[i].key = 0;
  w->clock = 0;
}

/* ---- actions ---- */

int world_move_to(world *w, int idx, float x, float y, float speed, uint64_t fut) {
  entity *e = world_ent(w, idx);
  if (!e || find_path(w, e, x, y) != 0) return -1;
  settle(w, &e->move_f, "interrupted");
  if (e->face_f) settle(w, &e->face_f, "interrupted");
  e->speed = speed > 0 ? speed : 40;
  e->move_f = fut;
  e->move_clk = w->clock;
  if (e->npath == 0) settle(w, &e->move_f, "arrived"); /* already there */
  return 0;
}

void world_stop(world *w, int idx) {
  entity *e = world_ent(w, idx);
  if (!e) return;
  e->npath = e->ipath = 0;
  settle(w, &e->move_f, "interrupted");
}

void world_face(world *w, int idx, float deg, uint64_t fut) {
  entity *e = world_ent(w, idx);
  if (!e) return;
  settle(w, &e->face_f, "interrupted");
  e->face_to = deg;
  e->face_f = fut;
  e->face_clk = w->clock;
}

void world_anim(world *w, int idx, int anim, float secs, uint64_t fut) {
  static const float lens[] = {0, 1.2f, 0.55f, 0.5f, 0.8f, 0.7f, INFINITY};
  entity *e = world_ent(w, idx);
  if (!e) return;
  settle(w, &e->anim_f, "interrupted");
  e->anim = anim;
  e->anim_t = 0;
  e->anim_len = secs > 0 ? secs : lens[anim];
  e->anim_f = fut;
  e->anim_clk = w->clock;
  if (anim == ANIM_NONE) settle(w, &e->anim_f, "done");
}

static float reading_time(const char *text) { return 1.6f + 0.045f * (float)strlen(text); }

void world_say(world *w, int idx, const char *text, float secs, int box, uint64_t fut) {
  entity *e = world_ent(w, idx);
  if (!e) return;
  if (secs <= 0) secs = reading_time(text);
  if (box) {
    if (w->dlg.active) settle(w, &w->dlg.f, "interrupted");
    w->dlg.active = 1;
    w->dlg.ent = idx;
    snprintf(w->dlg.speaker, sizeof w->dlg.speaker, "%s", e->title);
    w->dlg.portrait = e->portrait;
    memcpy(w->dlg.tint, e->tint, sizeof w->dlg.tint);
    snprintf(w->dlg.text, sizeof w->dlg.text, "%s", text);
    w->dlg.shown = 0;
    w->dlg.t = 0;
    w->dlg.timeout = secs;
    w->dlg.f = fut;
    w->dlg.clk = w->clock;
  } else {
    settle(w, &e->bubble_f, "interrupted");
    snprintf(e->bubble, sizeof e->bubble, "%s", text);
    e->bubble_t = isinf(secs) ? reading_time(text) : secs;
    e->bubble_f = fut;
    e->say_clk = w->clock;
  }
}

void world_clear_speech(world *w) {
  if (w->dlg.active) settle(w, &w->dlg.f, "skipped");
  w->dlg.active = 0;
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(w, i);
    if (!e || !e->bubble[0]) continue;
    e->bubble[0] = 0;
    settle(w, &e->bubble_f, "skipped");
  }
}

void world_advance(world *w) {
  if (!w->dlg.active) return;
  size_t len = strlen(w->dlg.text);
  if (w->dlg.shown < (float)len) {
    w->dlg.shown = (float)len;
    return;
  }
  w->dlg.active = 0;
  settle(w, &w->dlg.f, "key");
}

void world_pan(world *w, float x, float y, int target_ent, float secs, uint64_t fut) {
  settle(w, &w->pan.f, "interrupted");
  w->pan.active = 1;
  w->pan.fx = w->cam_x;
  w->pan.fy = w->cam_y;
  w->pan.tx = x;
  w->pan.ty = y;
  w->pan.target_ent = target_ent;
  w->pan.t = 0;
  w->pan.dur = secs;
  w->pan.f = fut;
  w->pan.clk = w->clock;
  w->cam_follow = -1;
}

void world_follow(world *w, int idx) {
  if (w->pan.active) settle(w, &w->pan.f, "interrupted");
  w->pan.active = 0;
  w->cam_follow = idx;
}

/* Starts r moving the n values at v to `to` over secs on the world's
   current clock (at once when secs is 0 or less). */
static void ramp_start(world *w, ramp *r, float *v, int n, const float *to, float secs,
                       uint64_t fut) {
  settle(w, &r->f, "interrupted");
  for (int i = 0; i < n; i++) r->from[i] = v[i], r->to[i] = to[i];
  r->t = 0;
  r->dur = secs > 0 ? secs : 0;
  r->f = fut;
  r->clk = w->clock;
  if (r->dur == 0) {
    for (int i = 0; i < n; i++) v[i] = to[i];
    settle(w, &r->f, "done");
  }
}

/* Moves v by r's clock's step; arrived, v is `to` exactly and the future
   settles. */
static void ramp_step(world *w, ramp *r, float *v, int n, int eased) {
  if (!ramp_busy(r)) return;
  r->t += w->clocks[r->clk].dt;
  float u = r->dur > 0 ? fminf(r->t / r->dur, 1) : 1;
  if (eased) u = smooth(u);
  for (int i = 0; i < n; i++) v[i] = u >= 1 ? r->to[i] : r->from[i] + (r->to[i] - r->from[i]) * u;
  if (u >= 1) settle(w, &r->f, "done");
}

void world_fade(world *w, float to, float secs, uint64_t fut) {
  ramp_start(w, &w->fade_r, &w->fade, 1, &to, secs, fut);
}

void world_zoom(world *w, float to, float secs, uint64_t fut) {
  ramp_start(w, &w->zoom_r, &w->zoom, 1, &to, secs, fut);
}

void world_ambient(world *w, const float rgb[3], float secs, uint64_t fut) {
  ramp_start(w, &w->amb_r, w->amb, 3, rgb, secs, fut);
}

void world_banner(world *w, const char *text, const char *sub, float secs, uint64_t fut) {
  settle(w, &w->banner.f, "interrupted");
  snprintf(w->banner.text, sizeof w->banner.text, "%s", text);
  snprintf(w->banner.sub, sizeof w->banner.sub, "%s", sub ? sub : "");
  w->banner.t = 0;
  w->banner.dur = secs > 0 ? secs : 3;
  w->banner.f = fut;
  w->banner.clk = w->clock;
}

int world_door_find(const world *w, const char *name) {
  for (int i = 0; i < w->ndoors; i++)
    if (strcmp(w->doors[i].name, name) == 0) return i;
  return -1;
}

void world_door_set(world *w, int door, int open, uint64_t fut) {
  world_door *d = &w->doors[door];
  settle(w, &d->f, "interrupted");
  d->target = open;
  d->f = fut;
  if (!open && d->open) { /* closing blocks at once */
    d->open = 0;
    rebuild_blocked(w);
  }
}

/* ---- queries ---- */

int world_can_see(const world *w, int idx, float x, float y) {
  const entity *e = &w->ents[idx];
  if (!(e->gen & 1u)) return 0;
  float dx = x - e->x, dy = y - e->y, d = sqrtf(dx * dx + dy * dy);
  if (d > e->range) return 0;
  if (d > NEAR_SENSE) {
    float ang = atan2f(dy, dx) * 180.0f / PI_F;
    if (fabsf(wrap180(ang - e->facing)) > e->half_angle) return 0;
  }
  return world_line_clear(w, e->x, e->y - 4, x, y - 4);
}

float world_dist(const world *w, int a, float x, float y) {
  float dx = x - w->ents[a].x, dy = y - w->ents[a].y;
  return sqrtf(dx * dx + dy * dy);
}

/* ---- update ---- */

/* Walks e along its path by its speed, settling move_to on arrival. */
static void follow_path(world *w, entity *e, float dt) {
  float step = e->speed * dt;
  while (step > 0 && e->ipath < e->npath) {
    float tx = e->path[e->ipath][0], ty = e->path[e->ipath][1];
    float dx = tx - e->x, dy = ty - e->y, d = sqrtf(dx * dx + dy * dy);
    if (d > 0.01f) {
      float want = atan2f(dy, dx) * 180.0f / PI_F;
      e->facing = approach_angle(e->facing, want, WALK_TURN * dt);
      e->face_to = e->facing;
    }
    if (d <= step) {
      e->x = tx, e->y = ty;
      step -= d;
      e->ipath++;
    } else {
      e->x += dx / d * step, e->y += dy / d * step;
      step = 0;
    }
  }
  e->walking = dt > 0;
  if (e->ipath >= e->npath) {
    e->npath = e->ipath = 0;
    settle(w, &e->move_f, "arrived");
  }
}

/* Moves the player by the input direction, sliding along walls and into
   doorways. */
static void steer_player(world *w, entity *e, float dt) {
  float mx = w->move_x, my = w->move_y, len = sqrtf(mx * mx + my * my);
  float vx = mx / len * PLAYER_SPEED * dt, vy = my / len * PLAYER_SPEED * dt;
  int bx = vx != 0 && !feet_free(w, e->x + vx, e->y),
      by = vy != 0 && !feet_free(w, e->x, e->y + vy);
  if (!bx) e->x += vx;
  if (!by) e->y += vy;
  /* corner assist: walking into the edge of a doorway slides the hero
     sideways into it */
  float step = PLAYER_SPEED * dt;
  for (int k = 1; k <= 7 && (by && vx == 0); k++) {
    if (feet_free(w, e->x + k, e->y + vy) && feet_free(w, e->x + fminf(step, k), e->y)) {
      e->x += fminf(step, (float)k);
      break;
    }
    if (feet_free(w, e->x - k, e->y + vy) && feet_free(w, e->x - fminf(step, k), e->y)) {
      e->x -= fminf(step, (float)k);
      break;
    }
  }
  for (int k = 1; k <= 7 && (bx && vy == 0); k++) {
    if (feet_free(w, e->x + vx, e->y + k) && feet_free(w, e->x, e->y + fminf(step, k))) {
      e->y += fminf(step, (float)k);
      break;
    }
    if (feet_free(w, e->x + vx, e->y - k) && feet_free(w, e->x, e->y - fminf(step, k))) {
      e->y -= fminf(step, (float)k);
      break;
    }
  }
  e->facing = approach_angle(e->facing, atan2f(my, mx) * 180.0f / PI_F, WALK_TURN * dt);
  e->face_to = e->facing;
  e->walking = 1;
}

/* An entity's timed actions, each on its own clock; the player's own
   walking on the world's. */
static void update_entity(world *w, int i) {
  entity *e = &w->ents[i];
  float dt = w->clocks[0].dt, move_dt = w->clocks[e->move_clk].dt;
  e->walking = 0;
  if (e->ipath < e->npath)
    follow_path(w, e, move_dt);
  else if (i == w->player && (w->move_x != 0 || w->move_y != 0) && dt > 0)
    steer_player(w, e, dt), move_dt = dt;
  if (e->walking)
    e->walk_t += move_dt;
  else
    e->walk_t = 0;
  if (!e->walking && e->facing != e->face_to)
    e->facing = approach_angle(e->facing, e->face_to, TURN_SPEED * w->clocks[e->face_clk].dt);
  if (e->face_f && fabsf(wrap180(e->facing - e->face_to)) < 0.5f) settle(w, &e->face_f, "done");
  if (e->anim != ANIM_NONE) {
    e->anim_t += w->clocks[e->anim_clk].dt;
    if (e->anim_t >= e->anim_len) {
      e->anim = ANIM_NONE;
      settle(w, &e->anim_f, "done");
    }
  }
  if (e->bubble[0]) {
    e->bubble_t -= w->clocks[e->say_clk].dt;
    if (e->bubble_t <= 0) {
      e->bubble[0] = 0;
      settle(w, &e->bubble_f, "timeout");
    }
  }
}

static void update_camera(world *w, float dt) {
  if (w->pan.active) {
    w->pan.t += w->clocks[w->pan.clk].dt;
    float u = w->pan.dur > 0 ? smooth(w->pan.t / w->pan.dur) : 1;
    float tx = w->pan.tx, ty = w->pan.ty;
    entity *t = world_ent(w, w->pan.target_ent);
    if (t) tx = t->x, ty = t->y - 8;
    w->cam_x = w->pan.fx + (tx - w->pan.fx) * u;
    w->cam_y = w->pan.fy + (ty - w->pan.fy) * u;
    if (u >= 1) {
      w->pan.active = 0;
      w->cam_follow = t ? w->pan.target_ent : -1;
      settle(w, &w->pan.f, "done");
    }
  } else if (w->cam_follow >= 0) {
    entity *t = world_ent(w, w->cam_follow);
    if (t) {
      float k = 1.0f - expf(-dt * 7.0f);
      w->cam_x += (t->x - w->cam_x) * k;
      w->cam_y += (t->y - 8 - w->cam_y) * k;
    }
  }
  /* keep the view inside the level */
  float lw = (float)(w->lv.w * TILE), lh = (float)(w->lv.h * TILE);
  float hw = w->view_w / 2, hh = w->view_h / 2;
  if (lw > 2 * hw)
    w->cam_x = fminf(fmaxf(w->cam_x, hw), lw - hw);
  else
    w->cam_x = lw / 2;
  if (lh > 2 * hh)
    w->cam_y = fminf(fmaxf(w->cam_y, hh), lh - hh);
  else
    w->cam_y = lh / 2;
}

void world_update_vision(world *w) {
  entity *p = world_ent(w, w->player);
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(w, i);
    if (!e || !e->vision) continue;
    int sees = p && w->input_lock == 0 && world_can_see(w, i, p->x, p->y);
    if (sees != e->seeing) world_emit(w, sees ? EV_SAW : EV_LOST, 0, i, -1, NULL);
    e->seeing = sees;
  }
}

static void update_zones(world *w) {
  entity *p = world_ent(w, w->player);
  for (int z = 0; z < w->lv.nzones; z++) {
    const level_zone *lz = &w->lv.zones[z];
    int in = 0;
    if (p) {
      int tx = (int)floorf(p->x / TILE), ty = (int)floorf(p->y / TILE);
      in = tx >= lz->x && ty >= lz->y && tx < lz->x + lz->w && ty < lz->y + lz->h;
    }
    if (in != w->zone_in[z]) world_emit(w, in ? EV_ZONE_IN : EV_ZONE_OUT, 0, -1, z, NULL);
    w->zone_in[z] = in;
  }
}

void world_update(world *w, float dt) {
  if (!w->loaded) return;
  w->clocks[0].dt = dt;
  w->time += dt;
  for (int i = 0; i < WORLD_MAX_ENTS; i++)
    if (w->ents[i].gen & 1u) update_entity(w, i);
  for (int i = 0; i < w->ndoors; i++) {
    world_door *d = &w->doors[i];
    float to = (float)d->target;
    if (d->t != to) {
      d->t += (to > d->t ? 1 : -1) * dt / 0.4f;
      if ((to == 1 && d->t >= 1) || (to == 0 && d->t <= 0)) d->t = to;
    }
    if (d->t == to) {
      if (d->open != d->target) {
        d->open = d->target;
        rebuild_blocked(w);
      }
      settle(w, &d->f, d->open ? "open" : "closed");
    }
  }
  update_camera(w, dt);
  ramp_step(w, &w->fade_r, &w->fade, 1, 0);
  ramp_step(w, &w->zoom_r, &w->zoom, 1, 1);
  ramp_step(w, &w->amb_r, w->amb, 3, 1);
  if (w->dlg.active) {
    float ddt = w->clocks[w->dlg.clk].dt;
    w->dlg.t += ddt;
    w->dlg.shown = fminf(w->dlg.shown + ddt * 45.0f, (float)strlen(w->dlg.text));
    if (w->dlg.t >= w->dlg.timeout) {
      w->dlg.active = 0;
      settle(w, &w->dlg.f, "timeout");
    }
  }
  if (w->banner.text[0]) {
    w->banner.t += w->clocks[w->banner.clk].dt;
    if (w->banner.t >= w->banner.dur) {
      w->banner.text[0] = 0;
      settle(w, &w->banner.f, "done");
    }
  }
  if (w->shake_t > 0) w->shake_t -= w->clocks[w->shake_clk].dt;
  float lb = w->input_lock > 0 ? 1.0f : 0.0f;
  w->letterbox += (lb - w->letterbox) * fminf(1, dt * 5);
  world_update_vision(w);
  update_zones(w);
}
