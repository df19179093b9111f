/* The renderer: world in layers (floor, walls and props, characters), a
   light map multiplied over it (ambient night plus torches, windows, the
   idol and the guards' lanterns), then speech, dialogue and the HUD; and
   saving what it drew as a PNG. The overlays are drawn over it by the
   caller (overlay_draw). */
#include "render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <SDL_image.h>

#include "assets.h"

#define TS (TILE * SCALE) /* a tile on screen, in pixels */
#define PI_F 3.14159265f

enum {
  T_STONE = 0,
  T_STONE2 = 1,
  T_CRACKED = 2,
  T_GRASS = 3,
  T_GRASS2 = 4,
  T_FLOWERS = 5,
  T_WOOD = 6,
  T_CARPET = 7,
  T_WATER = 8,
  T_WALL_TOP = 10,
  T_WALL = 11,
  T_SCONCE = 12,
  T_DOOR = 13,
  T_DOOR_OPEN = 14,
  T_WINDOW = 15,
  T_TREE = 16,
  T_CRATE = 17,
  T_BARREL = 18,
  T_PILLAR = 19,
  T_HEDGE = 20,
  T_DIRT = 21,
  T_IDOL = 22,
  T_WELL = 24,
  T_BANNER = 25,
  T_BED = 26,
  T_TABLE = 27,
  T_SHELF = 28,
  T_STATUE = 30,
  T_FLAME = 32,
  T_ALERT = 35,
  T_QUESTION = 36,
  T_LAMP = 37
};

static const SDL_Color WHITE = {255, 255, 255, 255};
static const SDL_Color GOLD = {236, 200, 110, 255};
static const SDL_Color GREY = {170, 176, 196, 255};

/* Screen origin of world (0, 0) for this frame. */
static int ox, oy;

static uint32_t hash2(int x, int y) {
  uint32_t h = (uint32_t)x * 73856093u ^ (uint32_t)y * 19349663u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  return h ^ (h >> 15);
}

static int is_wall(char c) { return c && strchr("#TWBSD", c) != NULL; }
static int is_floor(char c) { return c && strchr(".,\"-_:", c) != NULL; }

/* The floor drawn under each cell: its own for floors, else the floor most
   of its neighbours have. */
static void build_base(game *g) {
  const level *lv = &g->w.lv;
  g->video.base = malloc((size_t)lv->w * (size_t)lv->h);
  if (!g->video.base) return;
  for (int y = 0; y < lv->h; y++)
    for (int x = 0; x < lv->w; x++) {
      char c = level_cell(lv, x, y), best = strchr("th ", c) ? ',' : '.';
      if (is_floor(c))
        best = c;
      else {
        int counts[128] = {0}, top = 0;
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++) {
            char n = level_cell(lv, x + dx, y + dy);
            if (n == '"') n = ',';
            if (is_floor(n) && ++counts[(int)n] > top) top = counts[(int)n], best = n;
          }
      }
      g->video.base[y * lv->w + x] = best;
    }
}

static void blit(game *g, SDL_Texture *t, int idx, int cols, int x, int y, int w, int h, int flip) {
  SDL_Rect src = {(idx % cols) * TILE, (idx / cols) * TILE, TILE, TILE};
  SDL_Rect dst = {x, y, w, h};
  SDL_RenderCopyEx(g->video.r, t, &src, &dst, 0, NULL, flip ? SDL_FLIP_HORIZONTAL : SDL_FLIP_NONE);
}

static void tile_at(game *g, SDL_Texture *t, int idx, int tx, int ty) {
  blit(g, t, idx, 16, ox + tx * TS, oy + ty * TS, TS, TS, 0);
}

static int floor_tile(char c, int x, int y, double time) {
  uint32_t h = hash2(x, y);
  switch (c) {
  case ',':
    return h % 5 == 0 ? T_GRASS2 : T_GRASS;
  case '"':
    return T_FLOWERS;
  case '-':
    return T_DIRT;
  case '_':
    return T_WOOD;
  case ':':
    return T_CARPET;
  case '~':
    return T_WATER + ((int)(time * 1.5 + (x + y) * 0.25) & 1);
  default:
    return h % 16 == 15 ? T_CRACKED : (h % 16 > 11 ? T_STONE2 : T_STONE);
  }
}

static int object_tile(char c) {
  switch (c) {
  case 't':
    return T_TREE;
  case 'h':
    return T_HEDGE;
  case 'c':
    return T_CRATE;
  case 'b':
    return T_BARREL;
  case 'o':
    return T_PILLAR;
  case 's':
    return T_STATUE;
  case 'w':
    return T_WELL;
  case 'i':
    return T_IDOL;
  case 'p':
    return T_IDOL + 1;
  case 'l':
    return T_LAMP;
  case 'm':
    return T_BED;
  case 'n':
    return T_TABLE;
  default:
    return -1;
  }
}

static void visible_cells(game *g, int margin, int *x0, int *y0, int *x1, int *y1) {
  *x0 = (int)floorf((float)-ox / TS) - margin;
  *y0 = (int)floorf((float)-oy / TS) - margin;
  *x1 = *x0 + SCREEN_W / TS + 2 + 2 * margin;
  *y1 = *y0 + SCREEN_H / TS + 2 + 2 * margin;
  if (*x0 < 0) *x0 = 0;
  if (*y0 < 0) *y0 = 0;
  if (*x1 > g->w.lv.w) *x1 = g->w.lv.w;
  if (*y1 > g->w.lv.h) *y1 = g->w.lv.h;
}

/* A gold hem where a carpet meets something else. */
static void carpet_border(game *g, int x, int y) {
  static const int d[4][2] = {{0, -1}, {0, 1}, {-1, 0}, {1, 0}};
  int px = ox + x * TS, py = oy + y * TS;
  for (int k = 0; k < 4; k++) {
    char n = level_cell(&g->w.lv, x + d[k][0], y + d[k][1]);
    if (n == ':' || n == 'o' || n == 's' || n == 'i' || n == 'p') continue;
    SDL_Rect outer = {px, py, TS, SCALE}, inner = {px, py + 2 * SCALE, TS, SCALE};
    if (k == 1) outer.y = py + TS - SCALE, inner.y = py + TS - 3 * SCALE;
    if (k >= 2) {
      outer = (SDL_Rect){k == 2 ? px : px + TS - SCALE, py, SCALE, TS};
      inner = (SDL_Rect){k == 2 ? px + 2 * SCALE : px + TS - 3 * SCALE, py, SCALE, TS};
    }
    SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_NONE);
    SDL_SetRenderDrawColor(g->video.r, 206, 164, 78, 255);
    SDL_RenderFillRect(g->video.r, &outer);
    SDL_SetRenderDrawColor(g->video.r, 150, 110, 52, 255);
    SDL_RenderFillRect(g->video.r, &inner);
  }
}

static void draw_tiles(game *g, SDL_Texture *tiles) {
  const level *lv = &g->w.lv;
  double time = g->run.realtime;
  int x0, y0, x1, y1;
  visible_cells(g, 1, &x0, &y0, &x1, &y1);
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      char c = level_cell(lv, x, y);
      if (is_wall(c) && c != 'D') {
        char below = level_cell(lv, x, y + 1);
        int face = !is_wall(below) && below != ' ';
        int idx = T_WALL_TOP;
        if (face)
          idx = c == 'T'   ? T_SCONCE
                : c == 'W' ? T_WINDOW
                : c == 'B' ? T_BANNER
                : c == 'S' ? T_SHELF
                           : T_WALL;
        tile_at(g, tiles, idx, x, y);
        continue;
      }
      char base = g->video.base ? g->video.base[y * lv->w + x] : '.';
      if (c == ' ') {
        SDL_SetTextureColorMod(tiles, 120, 130, 120);
        tile_at(g, tiles, floor_tile(',', x, y, time), x, y);
        tile_at(g, tiles, T_TREE, x, y);
        SDL_SetTextureColorMod(tiles, 255, 255, 255);
        continue;
      }
      tile_at(g, tiles, floor_tile(is_floor(c) || c == '~' ? c : base, x, y, time), x, y);
      if (c == 'D') {
        int d = -1;
        for (int i = 0; i < g->w.ndoors; i++)
          if (g->w.doors[i].x == x && g->w.doors[i].y == y) d = i;
        tile_at(g, tiles, d >= 0 && g->w.doors[d].t > 0.5f ? T_DOOR_OPEN : T_DOOR, x, y);
        continue;
      }
      /* a soft shadow under the wall above */
      if (is_wall(level_cell(lv, x, y - 1))) {
        SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_BLEND);
        for (int k = 0; k < 3; k++) {
          SDL_SetRenderDrawColor(g->video.r, 0, 0, 0, (Uint8)(90 - k * 30));
          SDL_Rect sh = {ox + x * TS, oy + y * TS + k * SCALE * 2, TS, SCALE * 2};
          SDL_RenderFillRect(g->video.r, &sh);
        }
      }
      if (c == ':') carpet_border(g, x, y);
      int obj = object_tile(c);
      if (obj >= 0) tile_at(g, tiles, obj, x, y);
    }
}

static void draw_flames(game *g, SDL_Texture *tiles) {
  const level *lv = &g->w.lv;
  int x0, y0, x1, y1;
  visible_cells(g, 1, &x0, &y0, &x1, &y1);
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++)
      if (level_cell(lv, x, y) == 'T' && !is_wall(level_cell(lv, x, y + 1))) {
        int f = (int)(g->run.realtime * 9 + hash2(x, y) % 3) % 3;
        blit(g, tiles, T_FLAME + f, 16, ox + x * TS, oy + y * TS - 4 * SCALE, TS, TS, 0);
      }
}

/* ---- characters ---- */

static int dir_of(float facing) { /* 0 down, 1 up, 2 right, 3 left */
  float a = fmodf(facing, 360.0f);
  if (a < 0) a += 360;
  if (a >= 45 && a < 135) return 0;
  if (a >= 135 && a < 225) return 3;
  if (a >= 225 && a < 315) return 1;
  return 2;
}

static void sprite_frame(const entity *e, int *col, int *flip, float *dx, float *dy) {
  int dir = dir_of(e->facing);
  static const int base[4] = {0, 3, 6, 6};
  static const int walk[4] = {1, 0, 2, 0};
  *dx = *dy = 0;
  if (e->anim == ANIM_SPIN) dir = (int[]){0, 2, 1, 3}[(int)(e->anim_t * 10) % 4];
  *flip = dir == 3;
  *col = base[dir] + (e->walking ? walk[(int)(e->walk_t * 8) % 4] : 0);
  float t = e->anim_t;
  switch (e->anim) {
  case ANIM_WAVE:
    *col = 9 + ((int)(t * 5) & 1), *flip = 0;
    break;
  case ANIM_JUMP:
    *dy = -sinf(PI_F * fminf(t / e->anim_len, 1)) * 7;
    break;
  case ANIM_SHAKE:
    *dx = sinf(t * 55) * 1.5f;
    break;
  case ANIM_NOD:
    *dy = ((int)(t * 6) & 1) ? 1 : 0;
    break;
  case ANIM_SLEEP:
    *col = base[0];
    *flip = 0;
    break;
  }
}

static int by_y(const void *a, const void *b) {
  const entity *ea = *(const entity *const *)a, *eb = *(const entity *const *)b;
  return (ea->y > eb->y) - (ea->y < eb->y);
}

static void draw_entities(game *g, SDL_Texture *chars) {
  entity *list[WORLD_MAX_ENTS];
  int n = 0;
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(&g->w, i);
    if (e) list[n++] = e;
  }
  qsort(list, (size_t)n, sizeof list[0], by_y);
  for (int i = 0; i < n; i++) {
    entity *e = list[i];
    int sx = ox + (int)lroundf(e->x * SCALE), sy = oy + (int)lroundf(e->y * SCALE);
    /* shadow */
    SDL_SetTextureBlendMode(g->video.glow, SDL_BLENDMODE_BLEND);
    SDL_SetTextureColorMod(g->video.glow, 0, 0, 0);
    SDL_SetTextureAlphaMod(g->video.glow, (Uint8)(190 * e->alpha));
    SDL_Rect sh = {sx - 7 * SCALE, sy - 2 * SCALE, 14 * SCALE, 5 * SCALE};
    SDL_RenderCopy(g->video.r, g->video.glow, NULL, &sh);
    SDL_SetTextureAlphaMod(g->video.glow, 255);
    int col, flip;
    float dx, dy;
    sprite_frame(e, &col, &flip, &dx, &dy);
    SDL_Rect src = {col * TILE, e->kind * TILE, TILE, TILE};
    SDL_Rect dst = {sx - TS / 2 + (int)(dx * SCALE), sy - TS + SCALE + (int)(dy * SCALE), TS, TS};
    SDL_SetTextureAlphaMod(chars, (Uint8)(255 * e->alpha));
    SDL_RenderCopyEx(g->video.r, chars, &src, &dst, 0, NULL,
                     flip ? SDL_FLIP_HORIZONTAL : SDL_FLIP_NONE);
    SDL_SetTextureAlphaMod(chars, 255);
  }
}

/* ---- lights ---- */

static void glow(game *g, float wx, float wy, float radius, int r, int gr, int b) {
  SDL_SetTextureColorMod(g->video.glow, (Uint8)r, (Uint8)gr, (Uint8)b);
  int rad = (int)(radius * SCALE);
  SDL_Rect d = {ox + (int)(wx * SCALE) - rad, oy + (int)(wy * SCALE) - rad, rad * 2, rad * 2};
  SDL_RenderCopy(g->video.r, g->video.glow, NULL, &d);
}

/* A guard's lantern: a fan of rays clipped by opaque tiles, bright at the
   guard and fading to nothing at the end of its sight. */
static void cone(game *g, const entity *e) {
  enum { RAYS = 28 };
  SDL_Vertex v[RAYS + 2];
  int idx[RAYS * 3];
  SDL_Color c = e->mood == MOOD_ALERT        ? (SDL_Color){255, 90, 70, 255}
                : e->mood == MOOD_SUSPICIOUS ? (SDL_Color){255, 170, 60, 255}
                                             : (SDL_Color){255, 206, 120, 255};
  float cx = e->x, cy = e->y - 4;
  float k0 = 0.85f;
  v[0].position = (SDL_FPoint){ox + cx * SCALE, oy + cy * SCALE};
  v[0].color = (SDL_Color){(Uint8)(c.r * k0), (Uint8)(c.g * k0), (Uint8)(c.b * k0), 255};
  for (int i = 0; i <= RAYS; i++) {
    float a = (e->facing - e->half_angle + 2 * e->half_angle * (float)i / RAYS) * PI_F / 180;
    float ca = cosf(a), sa = sinf(a), d = 0;
    while (d < e->range) {
      float nd = d + 3;
      int tx = (int)floorf((cx + ca * nd) / TILE), ty = (int)floorf((cy + sa * nd) / TILE);
      if (world_opaque(&g->w, tx, ty) &&
          !(tx == (int)floorf(cx / TILE) && ty == (int)floorf(cy / TILE))) {
        d = nd + 4; /* light the face of the wall a little */
        break;
      }
      d = nd;
    }
    if (d > e->range) d = e->range;
    float k = k0 * (1 - d / e->range);
    v[i + 1].position = (SDL_FPoint){ox + (cx + ca * d) * SCALE, oy + (cy + sa * d) * SCALE};
    v[i + 1].color = (SDL_Color){(Uint8)(c.r * k), (Uint8)(c.g * k), (Uint8)(c.b * k), 255};
    v[i + 1].tex_coord = (SDL_FPoint){0, 0};
  }
  v[0].tex_coord = (SDL_FPoint){0, 0};
  for (int i = 0; i < RAYS; i++) idx[i * 3] = 0, idx[i * 3 + 1] = i + 1, idx[i * 3 + 2] = i + 2;
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_ADD);
  SDL_RenderGeometry(g->video.r, NULL, v, RAYS + 2, idx, RAYS * 3);
}

static void draw_lights(game *g) {
  if (!g->video.light) return;
  world *w = &g->w;
  SDL_Texture *under = SDL_GetRenderTarget(g->video.r); /* the screen, or the zoomed scene */
  SDL_SetRenderTarget(g->video.r, g->video.light);
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_NONE);
  SDL_SetRenderDrawColor(g->video.r, (Uint8)(w->amb[0] * 255), (Uint8)(w->amb[1] * 255),
                         (Uint8)(w->amb[2] * 255), 255);
  SDL_RenderClear(g->video.r);
  SDL_SetTextureBlendMode(g->video.glow, SDL_BLENDMODE_ADD);
  int x0, y0, x1, y1;
  visible_cells(g, 6, &x0, &y0, &x1, &y1);
  float flick =
      0.9f + 0.1f * sinf((float)g->run.realtime * 11.0f) * sinf((float)g->run.realtime * 7.3f);
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      char c = level_cell(&w->lv, x, y);
      if ((c == 'T' || c == 'W') && !is_wall(level_cell(&w->lv, x, y + 1)) &&
          level_cell(&w->lv, x, y + 1) != ' ') {
        float fx = (float)x * TILE + 8, fy = (float)y * TILE + 14;
        if (c == 'T')
          glow(g, fx, fy, 86 * flick, (int)(255 * flick), (int)(170 * flick), 90);
        else
          glow(g, fx, fy, 44, 200, 150, 80);
      } else if (c == 'l') {
        glow(g, (float)x * TILE + 8, (float)y * TILE + 3, 72 * flick, 255, 190, 100);
      } else if (c == 'i') {
        float p = 0.8f + 0.2f * sinf((float)g->run.realtime * 2.5f);
        glow(g, (float)x * TILE + 8, (float)y * TILE + 8, 70 * p, 80, (int)(220 * p),
             (int)(210 * p));
      }
    }
  entity *p = world_ent(w, w->player);
  if (p) glow(g, p->x, p->y - 6, 46, 90, 100, 130);
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(w, i);
    if (!e) continue;
    if (e->vision) {
      cone(g, e);
      glow(g, e->x, e->y - 6, 26, 150, 120, 70);
    } else if (i != w->player)
      glow(g, e->x, e->y - 6, 30, 90, 90, 110);
  }
  SDL_SetRenderTarget(g->video.r, under);
  SDL_SetTextureBlendMode(g->video.light, SDL_BLENDMODE_MOD);
  SDL_RenderCopy(g->video.r, g->video.light, NULL, NULL);
  SDL_SetTextureBlendMode(g->video.glow, SDL_BLENDMODE_BLEND);
  SDL_SetTextureColorMod(g->video.glow, 255, 255, 255);
}

/* ---- speech ---- */

static void panel(game *g, SDL_Rect r, SDL_Color fill, SDL_Color border) {
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_BLEND);
  SDL_SetRenderDrawColor(g->video.r, fill.r, fill.g, fill.b, fill.a);
  SDL_RenderFillRect(g->video.r, &r);
  SDL_SetRenderDrawColor(g->video.r, border.r, border.g, border.b, border.a);
  SDL_RenderDrawRect(g->video.r, &r);
  SDL_Rect in = {r.x + 1, r.y + 1, r.w - 2, r.h - 2};
  SDL_RenderDrawRect(g->video.r, &in);
}

static void draw_bubbles(game *g, SDL_Texture *tiles) {
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(&g->w, i);
    if (!e) continue;
    int sx = ox + (int)(e->x * SCALE), top = oy + (int)((e->y - 17) * SCALE);
    if (e->anim == ANIM_SLEEP) {
      float t = e->anim_t;
      for (int k = 0; k < 3; k++) {
        float u = fmodf(t * 0.6f + (float)k / 3, 1);
        SDL_Color c = {200, 220, 255, (Uint8)(255 * (1 - u))};
        font_draw_shadow(g->video.f_bold, g->video.r, "z", sx + 10 + (int)(u * 20),
                         top - (int)(u * 40), c);
      }
    }
    if (!e->bubble[0]) continue;
    if (strcmp(e->bubble, "!") == 0 || strcmp(e->bubble, "?") == 0) {
      int bob = (int)(sinf((float)g->run.realtime * 8) * 3);
      blit(g, tiles, e->bubble[0] == '!' ? T_ALERT : T_QUESTION, 16, sx - TS / 2, top - TS + bob,
           TS, TS, 0);
      continue;
    }
    int tw = font_width(g->video.f_small, e->bubble);
    if (tw > 300) tw = 300;
    int th = font_draw_wrapped(g->video.f_small, NULL, e->bubble, -1, 0, 0, 300, WHITE);
    SDL_Rect b = {sx - tw / 2 - 10, top - th - 22, tw + 20, th + 12};
    panel(g, b, (SDL_Color){250, 246, 232, 240}, (SDL_Color){40, 34, 50, 255});
    SDL_SetRenderDrawColor(g->video.r, 250, 246, 232, 240);
    for (int k = 0; k < 7; k++)
      SDL_RenderDrawLine(g->video.r, sx - 6 + k, b.y + b.h, sx, b.y + b.h + 8 - k / 2);
    font_draw_wrapped(g->video.f_small, g->video.r, e->bubble, -1, b.x + 10, b.y + 6, 300,
                      (SDL_Color){40, 34, 50, 255});
  }
}

void render_note(game *g, const char *name, SDL_Rect r) {
  if (g->ov.ndrawn < (int)(sizeof g->ov.drawn / sizeof g->ov.drawn[0]))
    g->ov.drawn[g->ov.ndrawn].name = name, g->ov.drawn[g->ov.ndrawn++].r = r;
}

int render_free_bottom(const game *g) {
  if (g->boot.dead) return SCREEN_H - 34 - BOOT_OFFER_H - 8; /* the offer to reset */
  int lb = (int)(g->w.letterbox * 64);
  if (g->w.dlg.active) return SCREEN_H - lb - 170 - 8; /* the dialogue box's top */
  return lb > 3 ? SCREEN_H - lb - 8 : SCREEN_H - 34;   /* the letterbox, the key line */
}

/* Over an entity one of whose scripts failed: a dark tag reading
   "script error" in red, so a guard that stopped is seen in the world,
   not only in the panel, and is not taken for a guard's red "!" of
   alarm (a round bubble). */
static void draw_markers(game *g) {
  const char *text = "script error";
  int tw = font_width(g->video.f_small, text), th = font_height(g->video.f_small);
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(&g->w, i);
    if (!e || !e->script_error) continue;
    int sx = ox + (int)lroundf(e->x * SCALE), sy = oy + (int)lroundf(e->y * SCALE) - TS - 34;
    int pulse = (int)(g->run.realtime * 3) & 1;
    SDL_Rect b = {sx - tw / 2 - 7, sy + 4, tw + 14, th + 6};
    render_note(g, "marker", b);
    SDL_Color edge = pulse ? (SDL_Color){255, 90, 90, 255} : (SDL_Color){200, 50, 60, 255};
    panel(g, b, (SDL_Color){20, 16, 26, 235}, edge);
    font_draw(g->video.f_small, g->video.r, text, b.x + 7, b.y + 3,
              (SDL_Color){255, 120, 120, 255});
    SDL_SetRenderDrawColor(g->video.r, edge.r, edge.g, edge.b, 255);
    for (int k = 0; k < 5; k++)
      SDL_RenderDrawLine(g->video.r, sx - 4 + k, b.y + b.h + k, sx + 4 - k, b.y + b.h + k);
  }
}

static void draw_dialogue(game *g, SDL_Texture *chars) {
  world *w = &g->w;
  if (!w->dlg.active) return;
  int lb = (int)(w->letterbox * 64);
  SDL_Rect box = {170, SCREEN_H - lb - 170, SCREEN_W - 340, 150};
  render_note(g, "dialogue", box);
  panel(g, box, (SDL_Color){16, 18, 32, 235}, (SDL_Color){200, 170, 96, 255});
  /* portrait: the speaker's front frame, large */
  SDL_Rect pf = {box.x + 16, box.y + 16, 118, 118};
  panel(g, pf, (SDL_Color){44, 48, 80, 255}, (SDL_Color){120, 104, 70, 255});
  if (world_ent(w, w->dlg.ent)) {
    SDL_Rect src = {0, w->dlg.portrait * TILE, TILE, TILE - 3};
    SDL_Rect dst = {pf.x + 11, pf.y + 6, 96, 96 - 18};
    SDL_SetTextureColorMod(chars, w->dlg.tint[0], w->dlg.tint[1], w->dlg.tint[2]);
    SDL_RenderCopy(g->video.r, chars, &src, &dst);
    SDL_SetTextureColorMod(chars, 255, 255, 255);
  }
  int tx = pf.x + pf.w + 22;
  font_draw_shadow(g->video.f_bold, g->video.r, w->dlg.speaker, tx, box.y + 14, GOLD);
  font_draw_wrapped(g->video.f_ui, g->video.r, w->dlg.text, (int)w->dlg.shown, tx, box.y + 46,
                    box.x + box.w - tx - 24, WHITE);
  if ((int)(g->run.realtime * 2) & 1 || w->dlg.shown < (float)strlen(w->dlg.text)) {
    const char *hint = "Space";
    int hw = font_width(g->video.f_small, hint);
    font_draw(g->video.f_small, g->video.r, hint, box.x + box.w - hw - 30, box.y + box.h - 26,
              GREY);
    int ax = box.x + box.w - 22, ay = box.y + box.h - 19;
    SDL_SetRenderDrawColor(g->video.r, GOLD.r, GOLD.g, GOLD.b, 255);
    for (int k = 0; k < 5; k++)
      SDL_RenderDrawLine(g->video.r, ax + k, ay - 5 + k, ax + k, ay + 5 - k);
  }
}

/* ---- screen layers ---- */

static void draw_letterbox(game *g) {
  int h = (int)(g->w.letterbox * 64);
  if (h <= 0) return;
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_NONE);
  SDL_SetRenderDrawColor(g->video.r, 0, 0, 0, 255);
  SDL_Rect a = {0, 0, SCREEN_W, h}, b = {0, SCREEN_H - h, SCREEN_W, h};
  SDL_RenderFillRect(g->video.r, &a);
  SDL_RenderFillRect(g->video.r, &b);
  if (g->w.input_lock > 0 && h > 40) {
    const char *s = "Esc  skip";
    font_draw(g->video.f_small, g->video.r, s, SCREEN_W - font_width(g->video.f_small, s) - 24,
              SCREEN_H - h + 22, (SDL_Color){150, 150, 165, 255});
  }
}

static void draw_banner(game *g) {
  world *w = &g->w;
  if (!w->banner.text[0]) return;
  float t = w->banner.t, d = w->banner.dur;
  float a = fminf(fminf(t / 0.5f, 1), fminf((d - t) / 0.7f, 1));
  if (a <= 0) return;
  Uint8 al = (Uint8)(255 * a);
  int tw = font_width(g->video.f_title, w->banner.text);
  int y = SCREEN_H / 2 - 80;
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_BLEND);
  SDL_SetRenderDrawColor(g->video.r, 0, 0, 0, (Uint8)(120 * a));
  SDL_Rect band = {0, y - 14, SCREEN_W,
                   font_height(g->video.f_title) + (w->banner.sub[0] ? 56 : 28)};
  SDL_RenderFillRect(g->video.r, &band);
  font_draw_shadow(g->video.f_title, g->video.r, w->banner.text, (SCREEN_W - tw) / 2, y,
                   (SDL_Color){GOLD.r, GOLD.g, GOLD.b, al});
  if (w->banner.sub[0]) {
    int sw = font_width(g->video.f_ui, w->banner.sub);
    font_draw_shadow(g->video.f_ui, g->video.r, w->banner.sub, (SCREEN_W - sw) / 2,
                     y + font_height(g->video.f_title) + 4, (SDL_Color){230, 230, 240, al});
  }
}

void render_key_hints(const game *g, char *out, size_t n) {
  if (g->rp.on && !g->run.headless) /* the viewer's keys, and where the replay is */
    snprintf(out, n,
             "REPLAY  frame %llu / %llu%s   F5 %s   F6 one frame   F7 back 5 s   F8 ahead 5 s   "
             "F1 tasks   F2 graph   F12 screenshot   Ctrl-Q quit",
             (unsigned long long)g->run.frame, (unsigned long long)g->rp.frames,
             g->rp.paused ? "  (paused)" : "", g->rp.paused ? "play" : "pause");
  else
    snprintf(out, n, "%s",
             "WASD move  Space talk  Esc skip  P pause  T slow  ` console  F1/F2 tasks/graph  "
             "F4 errors  F9/F10 save/load  Bksp rewind  F11 full  F12 shot  Ctrl-R reset  "
             "Ctrl-Q quit");
}

static void draw_hud(game *g) {
  world *w = &g->w;
  if (w->letterbox < 0.05f && w->objective[0]) {
    int tw = font_width(g->video.f_small, w->objective);
    SDL_Rect r = {16, 14, tw + 44, 30};
    render_note(g, "objective", r);
    panel(g, r, (SDL_Color){12, 14, 26, 190}, (SDL_Color){120, 104, 70, 200});
    SDL_SetRenderDrawColor(g->video.r, GOLD.r, GOLD.g, GOLD.b, 255);
    for (int k = 0; k < 5; k++)
      SDL_RenderDrawLine(g->video.r, 28 - k, 29 - 4 + k, 28 + k, 29 - 4 + k),
          SDL_RenderDrawLine(g->video.r, 28 - k, 29 + 4 - k, 28 + k, 29 + 4 - k);
    font_draw(g->video.f_small, g->video.r, w->objective, 40, 20, (SDL_Color){235, 230, 210, 255});
  }
  int viewer = g->rp.on && !g->run.headless; /* a headless replay draws what was recorded */
  if (viewer || (w->letterbox < 0.05f && !w->dlg.active)) { /* the dialogue box sits there */
    char keys[KEY_HINTS_LEN];
    render_key_hints(g, keys, sizeof keys);
    int y = viewer ? SCREEN_H - 19 : SCREEN_H - 26; /* a replay's line: under the dialogue */
    SDL_Color c = viewer ? (SDL_Color){255, 200, 120, 230} : (SDL_Color){180, 184, 200, 200};
    font_draw_shadow(g->video.f_small, g->video.r, keys, 16, y, c);
    render_note(
        g, viewer ? "replay" : "keys",
        (SDL_Rect){16, y, font_width(g->video.f_small, keys), font_height(g->video.f_small)});
  }
  if (g->modes.time_scale != 1.0) {
    char s[48];
    snprintf(s, sizeof s, "SLOW MOTION  x%.2g", g->modes.time_scale);
    int tw = font_width(g->video.f_bold, s);
    font_draw_shadow(g->video.f_bold, g->video.r, s, SCREEN_W - tw - 20, 16,
                     (SDL_Color){140, 210, 255, 255});
    render_note(g, "slow_motion",
                (SDL_Rect){SCREEN_W - tw - 20, 16, tw, font_height(g->video.f_bold)});
  }
}

static void draw_toast(game *g) {
  double age = g->run.realtime - g->ov.toast_at;
  if (!g->ov.toast[0] || age > 4) return;
  Uint8 a = (Uint8)(age > 3 ? 255 * (4 - age) : 255);
  int tw = font_width(g->video.f_small, g->ov.toast);
  SDL_Rect r = {SCREEN_W - tw - 44, 52, tw + 28, 30};
  render_note(g, "reload_note", r);
  panel(g, r, (SDL_Color){10, 30, 20, (Uint8)(a * 0.85)}, (SDL_Color){110, 230, 130, a});
  font_draw(g->video.f_small, g->video.r, g->ov.toast, r.x + 14, r.y + 6,
            (SDL_Color){190, 255, 200, a});
}

static void draw_fade(game *g) {
  if (g->w.fade <= 0.001f) return;
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_BLEND);
  SDL_SetRenderDrawColor(g->video.r, 0, 0, 0, (Uint8)(fminf(g->w.fade, 1) * 255));
  SDL_RenderFillRect(g->video.r, NULL);
}

static void draw_paused(game *g) {
  if (!g->modes.paused) return;
  if (g->modes.show_tasks || g->modes.show_graph ||
      g->ov.nerrors) { /* the overlays need the middle */
    const char *s = "PAUSED   P to resume";
    int tw = font_width(g->video.f_bold, s);
    SDL_Rect r = {16, 50, tw + 32, 34}; /* under the objective, left of the reload note */
    render_note(g, "paused", r);
    panel(g, r, (SDL_Color){10, 10, 20, 220}, (SDL_Color){200, 200, 220, 255});
    font_draw(g->video.f_bold, g->video.r, s, r.x + 16, r.y + 5, WHITE);
    return;
  }
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_BLEND);
  SDL_SetRenderDrawColor(g->video.r, 10, 10, 20, 140);
  SDL_RenderFillRect(g->video.r, NULL);
  const char *s = "PAUSED";
  font_draw_shadow(g->video.f_title, g->video.r, s,
                   (SCREEN_W - font_width(g->video.f_title, s)) / 2, SCREEN_H / 2 - 50, WHITE);
  const char *h = "P to resume";
  font_draw_shadow(g->video.f_ui, g->video.r, h, (SCREEN_W - font_width(g->video.f_ui, h)) / 2,
                   SCREEN_H / 2 + 10, GREY);
}

static void draw_loading(game *g) {
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_NONE);
  for (int y = 0; y < SCREEN_H; y += 8) {
    int k = y * 40 / SCREEN_H;
    SDL_SetRenderDrawColor(g->video.r, (Uint8)(8 + k / 3), (Uint8)(10 + k / 3), (Uint8)(24 + k),
                           255);
    SDL_Rect r = {0, y, SCREEN_W, 8};
    SDL_RenderFillRect(g->video.r, &r);
  }
  /* a moon */
  SDL_SetTextureBlendMode(g->video.glow, SDL_BLENDMODE_ADD);
  SDL_SetTextureColorMod(g->video.glow, 120, 130, 170);
  SDL_Rect m = {SCREEN_W / 2 - 200, 40, 400, 400};
  SDL_RenderCopy(g->video.r, g->video.glow, NULL, &m);
  SDL_SetTextureColorMod(g->video.glow, 255, 255, 255);
  SDL_SetTextureBlendMode(g->video.glow, SDL_BLENDMODE_BLEND);
  const char *title = "Moonwatch Keep", *sub = "a weft demo: scripted with straight-line Lua";
  font_draw_shadow(g->video.f_title, g->video.r, title,
                   (SCREEN_W - font_width(g->video.f_title, title)) / 2, 230, GOLD);
  font_draw_shadow(g->video.f_ui, g->video.r, sub, (SCREEN_W - font_width(g->video.f_ui, sub)) / 2,
                   300, GREY);
  if (g->boot.dead) return; /* no bar standing at 0%: the offer to reset says why */
  SDL_Rect bar = {SCREEN_W / 2 - 300, 420, 600, 18};
  panel(g, bar, (SDL_Color){20, 22, 40, 255}, (SDL_Color){120, 104, 70, 255});
  SDL_Rect fill = {bar.x + 4, bar.y + 4, (int)((bar.w - 8) * g->load.shown), bar.h - 8};
  SDL_SetRenderDrawColor(g->video.r, 214, 178, 92, 255);
  SDL_RenderFillRect(g->video.r, &fill);
  char pct[160];
  snprintf(pct, sizeof pct, "%s   %d%%", g->load.label, (int)(g->load.shown * 100 + 0.5f));
  font_draw(g->video.f_small, g->video.r, pct, (SCREEN_W - font_width(g->video.f_small, pct)) / 2,
            450, GREY);
}

void render_frame(game *g) {
  g->ov.ndrawn = 0;
  SDL_SetRenderTarget(g->video.r, NULL);
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_NONE);
  SDL_SetRenderDrawColor(g->video.r, 6, 8, 14, 255);
  SDL_RenderClear(g->video.r);
  image *tiles = assets_get(g, "tiles.png"), *chars = assets_get(g, "characters.png");
  if (g->load.on || !g->w.loaded || !tiles || !chars) {
    draw_loading(g);
  } else {
    world *w = &g->w;
    if (!g->video.base) build_base(g);
    float shx = 0, shy = 0;
    if (w->shake_t > 0)
      shx = sinf((float)g->run.realtime * 70) * w->shake,
      shy = cosf((float)g->run.realtime * 55) * w->shake;
    ox = (int)lroundf(SCREEN_W / 2.0f - (w->cam_x + shx) * SCALE);
    oy = (int)lroundf(SCREEN_H / 2.0f - (w->cam_y + shy) * SCALE);
    /* zoomed in: the world is drawn off screen, then its middle scaled up */
    float z = w->zoom;
    int zoomed = z > 1.001f && g->video.scene;
    if (zoomed) {
      SDL_SetRenderTarget(g->video.r, g->video.scene);
      SDL_RenderClear(g->video.r);
    }
    draw_tiles(g, tiles->tex);
    draw_entities(g, chars->tex);
    draw_flames(g, tiles->tex);
    draw_lights(g);
    draw_bubbles(g, tiles->tex);
    draw_markers(g);
    if (zoomed) {
      SDL_SetRenderTarget(g->video.r, NULL);
      SDL_Rect src = {(int)lroundf(SCREEN_W / 2.0f - SCREEN_W / (2 * z)),
                      (int)lroundf(SCREEN_H / 2.0f - SCREEN_H / (2 * z)),
                      (int)lroundf(SCREEN_W / z), (int)lroundf(SCREEN_H / z)};
      SDL_RenderCopy(g->video.r, g->video.scene, &src, NULL);
    }
    draw_letterbox(g);
    draw_dialogue(g, chars->tex);
    draw_banner(g);
    draw_hud(g);
    draw_fade(g);
  }
  draw_toast(g);
  draw_paused(g);
}

/* Makes the directories of path that do not exist (mkdir -p of its
   parent). */
static void make_parents(const char *path) {
  char dir[PATH_LEN];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(dir, 0777); /* exists already: fine; fails: IMG_SavePNG says so */
      *p = '/';
    }
}

int render_save_png(game *g, const char *path) {
  make_parents(path);
  SDL_Surface *s = g->video.surface;
  SDL_Surface *tmp = NULL;
  if (!s) {
    int w = SCREEN_W, h = SCREEN_H;
    SDL_GetRendererOutputSize(g->video.r, &w, &h); /* the window may be scaled */
    tmp = SDL_CreateRGBSurfaceWithFormat(0, w, h, 32, SDL_PIXELFORMAT_ARGB8888);
    if (!tmp || SDL_RenderReadPixels(g->video.r, NULL, SDL_PIXELFORMAT_ARGB8888, tmp->pixels,
                                     tmp->pitch) != 0) {
      fprintf(stderr, "weft-demo: cannot read the screen: %s\n", SDL_GetError());
      SDL_FreeSurface(tmp);
      return -1;
    }
    s = tmp;
  }
  int rc = IMG_SavePNG(s, path);
  if (rc != 0)
    fprintf(stderr, "weft-demo: cannot write %s: %s\n", path, IMG_GetError());
  else
    fprintf(stderr, "weft-demo: wrote %s (frame %llu)\n", path, (unsigned long long)g->run.frame);
  SDL_FreeSurface(tmp);
  return rc;
}

int render_open(game *g) {
  enum { N = 128 };
  SDL_Surface *s = SDL_CreateRGBSurfaceWithFormat(0, N, N, 32, SDL_PIXELFORMAT_ARGB8888);
  if (!s) return -1;
  for (int y = 0; y < N; y++)
    for (int x = 0; x < N; x++) {
      float dx = (x + 0.5f - N / 2.0f) / (N / 2.0f), dy = (y + 0.5f - N / 2.0f) / (N / 2.0f);
      float d = sqrtf(dx * dx + dy * dy), a = d >= 1 ? 0 : (1 - d) * (1 - d);
      ((Uint32 *)s->pixels)[y * (s->pitch / 4) + x] = (Uint32)(a * 255) << 24 | 0xffffffu;
    }
  g->video.glow = SDL_CreateTextureFromSurface(g->video.r, s);
  SDL_FreeSurface(s);
  if (!g->video.glow) return -1;
  SDL_SetTextureBlendMode(g->video.glow, SDL_BLENDMODE_BLEND);
  if (SDL_RenderTargetSupported(g->video.r)) {
    g->video.light = SDL_CreateTexture(g->video.r, SDL_PIXELFORMAT_ARGB8888,
                                       SDL_TEXTUREACCESS_TARGET, SCREEN_W, SCREEN_H);
    g->video.scene = SDL_CreateTexture(g->video.r, SDL_PIXELFORMAT_ARGB8888,
                                       SDL_TEXTUREACCESS_TARGET, SCREEN_W, SCREEN_H);
  }
  return 0;
}

void render_forget_level(game *g) {
  free(g->video.base);
  g->video.base = NULL;
}

void render_close(game *g) {
  if (g->video.light) SDL_DestroyTexture(g->video.light);
  if (g->video.scene) SDL_DestroyTexture(g->video.scene);
  if (g->video.glow) SDL_DestroyTexture(g->video.glow);
  g->video.light = g->video.glow = g->video.scene = NULL;
  free(g->video.base);
  g->video.base = NULL;
}
