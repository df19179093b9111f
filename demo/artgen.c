/* weft-artgen: paints the demo's pixel art (tiles, characters, props) with
   code and writes it as PNG sheets into assets/. Run by `make demo-art`;
   the game itself only loads the PNGs. Every pixel is drawn here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <SDL.h>
#include <SDL_image.h>

#define T 16 /* tile and character cell size, in pixels */

typedef struct canvas {
  int w, h;
  uint32_t *px; /* RGBA8888 as 0xRRGGBBAA, owned */
} canvas;

static canvas canvas_new(int w, int h) {
  canvas c = {w, h, calloc((size_t)w * (size_t)h, sizeof(uint32_t))};
  if (!c.px) exit(1);
  return c;
}

static uint32_t rgba(int r, int g, int b, int a) {
  if (r < 0) r = 0;
  if (g < 0) g = 0;
  if (b < 0) b = 0;
  if (r > 255) r = 255;
  if (g > 255) g = 255;
  if (b > 255) b = 255;
  return (uint32_t)r << 24 | (uint32_t)g << 16 | (uint32_t)b << 8 | (uint32_t)a;
}
static uint32_t rgb(int r, int g, int b) { return rgba(r, g, b, 255); }
static int R(uint32_t c) { return (int)(c >> 24); }
static int G(uint32_t c) { return (int)(c >> 16 & 255); }
static int B(uint32_t c) { return (int)(c >> 8 & 255); }
static int A(uint32_t c) { return (int)(c & 255); }
/* c brightened (d > 0) or darkened (d < 0) by d units per channel. */
static uint32_t shade(uint32_t c, int d) { return rgba(R(c) + d, G(c) + d, B(c) + d, A(c)); }

static void put(canvas *c, int x, int y, uint32_t v) {
  if (x >= 0 && y >= 0 && x < c->w && y < c->h) c->px[y * c->w + x] = v;
}
static uint32_t get(const canvas *c, int x, int y) {
  if (x < 0 || y < 0 || x >= c->w || y >= c->h) return 0;
  return c->px[y * c->w + x];
}
static void rect(canvas *c, int x, int y, int w, int h, uint32_t v) {
  for (int j = y; j < y + h; j++)
    for (int i = x; i < x + w; i++) put(c, i, j, v);
}

/* Deterministic per-pixel noise in 0..255. */
static int noise(int x, int y, int seed) {
  uint32_t h = (uint32_t)x * 374761393u + (uint32_t)y * 668265263u + (uint32_t)seed * 2246822519u;
  h = (h ^ (h >> 13)) * 1274126177u;
  return (int)((h ^ (h >> 16)) & 255);
}

/* ---- tiles ---- */

/* Cell origin of tile index i in a sheet 16 tiles wide. */
static void cell(int i, int *ox, int *oy) {
  *ox = (i % 16) * T;
  *oy = (i / 16) * T;
}

static void tile_stone(canvas *c, int i, int seed, int cracked) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t base = rgb(118, 118, 128);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      int row = y / 8, sx = (x + (row & 1) * 4) % 16, slab = (x + (row & 1) * 4) / 8 + row * 3;
      int tint = noise(slab, row, seed + 7) % 14 - 7;
      uint32_t v = shade(base, tint + noise(x, y, seed) % 7 - 3);
      if (y % 8 == 0 || sx % 8 == 0)
        v = shade(base, -34);
      else if (y % 8 == 1 || sx % 8 == 1)
        v = shade(v, 10);
      put(c, ox + x, oy + y, v);
    }
  if (cracked) {
    static const int crack[][2] = {{3, 10}, {4, 11}, {5, 11}, {6, 12}, {7, 13},
                                   {6, 10}, {11, 3}, {12, 4}, {12, 5}};
    for (size_t k = 0; k < sizeof crack / sizeof crack[0]; k++)
      put(c, ox + crack[k][0], oy + crack[k][1], shade(base, -45));
  }
}

static void tile_grass(canvas *c, int i, int seed, int flowers) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t base = rgb(74, 128, 62);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      int n = noise(x, y, seed);
      uint32_t v = shade(base, n % 13 - 6);
      if (n > 236)
        v = rgb(96, 156, 70);
      else if (n < 16)
        v = rgb(58, 104, 52);
      put(c, ox + x, oy + y, v);
    }
  for (int k = 0; k < 6; k++) { /* blades */
    int x = noise(k, 1, seed) % 14 + 1, y = noise(k, 2, seed) % 13 + 2;
    put(c, ox + x, oy + y, rgb(104, 164, 78));
    put(c, ox + x, oy + y - 1, rgb(120, 178, 88));
  }
  if (flowers) {
    static const uint32_t fc[3] = {0xf2e36bff, 0xe87fa8ff, 0xf4f4f4ff};
    for (int k = 0; k < 4; k++) {
      int x = noise(k, 5, seed) % 12 + 2, y = noise(k, 6, seed) % 12 + 2;
      uint32_t f = fc[k % 3];
      put(c, ox + x, oy + y, f);
      put(c, ox + x - 1, oy + y, shade(f, -40));
      put(c, ox + x + 1, oy + y, shade(f, -40));
      put(c, ox + x, oy + y - 1, shade(f, -40));
      put(c, ox + x, oy + y + 1, rgb(50, 96, 44));
    }
  }
}

static void tile_dirt(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t base = rgb(146, 118, 84);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      int n = noise(x, y, 41);
      uint32_t v = shade(base, n % 15 - 7);
      if (n > 245) v = rgb(176, 156, 120);
      if (n < 10) v = rgb(112, 88, 62);
      put(c, ox + x, oy + y, v);
    }
}

static void tile_wood(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t base = rgb(150, 104, 64);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      int plank = y / 4, joint = (noise(plank, 0, 3) % 12) + 2;
      uint32_t v = shade(base, noise(plank, 1, 3) % 16 - 8 + (noise(x / 3, y, 5) % 5 - 2));
      if (y % 4 == 3)
        v = shade(base, -42);
      else if (x == joint)
        v = shade(base, -30);
      else if (y % 4 == 0)
        v = shade(v, 12);
      put(c, ox + x, oy + y, v);
    }
}

static void tile_carpet(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t base = rgb(118, 30, 42), gold = rgb(190, 150, 70);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      uint32_t v = shade(base, noise(x, y, 9) % 7 - 3 + ((x + y) % 2 ? 4 : -4));
      if ((x == 8 && y == 8) || (abs(x - 8) + abs(y - 8) == 1)) v = shade(gold, -20);
      put(c, ox + x, oy + y, v);
    }
}

static void tile_water(canvas *c, int i, int phase) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t base = rgb(44, 96, 150);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      uint32_t v = shade(base, noise(x, y, 17) % 7 - 3);
      int wx = (x + phase * 3 + (y / 4) * 5) % 8;
      if (y % 4 == 1 && wx < 3) v = rgb(104, 160, 206);
      if (y % 4 == 2 && wx == 1) v = rgb(150, 196, 230);
      put(c, ox + x, oy + y, v);
    }
}

static void tile_wall_top(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t base = rgb(76, 72, 90);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      uint32_t v = shade(base, noise(x, y, 23) % 9 - 4);
      if ((x / 4 + y / 4) % 2 == 0 && noise(x / 4, y / 4, 29) > 200) v = shade(v, 8);
      put(c, ox + x, oy + y, v);
    }
}

/* Brick face of a wall seen from the south; the top two rows are the lit
   edge of the wall's top. */
static void tile_wall_face(canvas *c, int i, int seed) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t brick = rgb(132, 120, 130), mortar = rgb(74, 66, 80);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      uint32_t v;
      if (y < 2)
        v = y == 0 ? rgb(96, 92, 112) : rgb(150, 144, 160);
      else {
        int row = (y - 2) / 4, bx = (x + (row & 1) * 4) % 8, by = (y - 2) % 4;
        int id = (x + (row & 1) * 4) / 8 + row * 4;
        v = shade(brick, noise(id, row, seed) % 22 - 11 + noise(x, y, seed) % 5 - 2);
        if (by == 3 || bx == 0)
          v = mortar;
        else if (by == 0)
          v = shade(v, 14);
        if (y == T - 1) v = shade(mortar, -20);
      }
      put(c, ox + x, oy + y, v);
    }
}

static void tile_sconce(canvas *c, int i) {
  int ox, oy;
  tile_wall_face(c, i, 31);
  cell(i, &ox, &oy);
  uint32_t iron = rgb(46, 42, 50);
  rect(c, ox + 7, oy + 7, 2, 6, iron);
  rect(c, ox + 5, oy + 6, 6, 2, iron);
  put(c, ox + 5, oy + 5, iron);
  put(c, ox + 10, oy + 5, iron);
  rect(c, ox + 6, oy + 4, 4, 2, rgb(90, 60, 36));
}

static void tile_door(canvas *c, int i, int open) {
  int ox, oy;
  tile_wall_face(c, i, 37);
  cell(i, &ox, &oy);
  uint32_t frame = rgb(62, 48, 40);
  rect(c, ox + 1, oy + 2, 14, 14, frame);
  if (open) {
    for (int y = 3; y < T; y++)
      for (int x = 2; x < 14; x++) put(c, ox + x, oy + y, rgb(20 + y, 18 + y, 26 + y));
    rect(c, ox + 2, oy + 3, 2, 13, rgb(110, 74, 42)); /* the door leaf swung open */
  } else {
    for (int y = 3; y < T; y++)
      for (int x = 2; x < 14; x++) {
        uint32_t v = shade(rgb(128, 84, 48), noise(x / 3, y, 39) % 12 - 6);
        if (x % 3 == 1) v = shade(v, -28);
        put(c, ox + x, oy + y, v);
      }
    rect(c, ox + 2, oy + 5, 12, 1, rgb(60, 60, 70));
    rect(c, ox + 2, oy + 12, 12, 1, rgb(60, 60, 70));
    put(c, ox + 11, oy + 9, rgb(220, 190, 90));
    put(c, ox + 11, oy + 10, rgb(160, 130, 60));
  }
}

static void tile_window(canvas *c, int i) {
  int ox, oy;
  tile_wall_face(c, i, 43);
  cell(i, &ox, &oy);
  rect(c, ox + 5, oy + 4, 6, 8, rgb(48, 36, 30));
  rect(c, ox + 6, oy + 5, 4, 6, rgb(250, 206, 110));
  rect(c, ox + 6, oy + 5, 4, 2, rgb(255, 236, 170));
  rect(c, ox + 7, oy + 5, 1, 6, rgb(48, 36, 30));
  rect(c, ox + 6, oy + 8, 4, 1, rgb(48, 36, 30));
}

static void tile_banner(canvas *c, int i) {
  int ox, oy;
  tile_wall_face(c, i, 47);
  cell(i, &ox, &oy);
  rect(c, ox + 4, oy + 2, 8, 1, rgb(70, 50, 30));
  for (int y = 3; y < 15; y++) {
    int inset = y > 11 ? y - 11 : 0;
    for (int x = 5 + inset; x < 11 - inset; x++)
      put(c, ox + x, oy + y, x == 5 ? rgb(120, 20, 34) : rgb(164, 30, 46));
  }
  for (int y = 5; y < 10; y++) put(c, ox + 8, oy + y, rgb(226, 186, 80));
  rect(c, ox + 6, oy + 6, 5, 1, rgb(226, 186, 80));
}

static void tile_shelf(canvas *c, int i) {
  int ox, oy;
  tile_wall_face(c, i, 53);
  cell(i, &ox, &oy);
  rect(c, ox + 1, oy + 2, 14, 14, rgb(92, 60, 36));
  static const uint32_t books[] = {0xa33b3bff, 0x3b6ea3ff, 0x4f8a3eff, 0xc9a14aff, 0x6b4a8aff};
  for (int shelf = 0; shelf < 2; shelf++) {
    int y0 = 3 + shelf * 7;
    for (int x = 2; x < 14; x++) {
      int h = 4 + noise(x, shelf, 3) % 2;
      uint32_t b = books[noise(x, shelf, 7) % 5];
      for (int y = y0 + 6 - h; y < y0 + 6; y++) put(c, ox + x, oy + y, x % 2 ? b : shade(b, -25));
    }
    rect(c, ox + 1, oy + y0 + 6, 14, 1, rgb(62, 40, 24));
  }
}

/* Round things seen from above with a light top-left and dark bottom-right. */
static void blob(canvas *c, int cx, int cy, int r, uint32_t col, int seed) {
  for (int y = -r; y <= r; y++)
    for (int x = -r; x <= r; x++) {
      int d2 = x * x + y * y;
      if (d2 > r * r + r / 2) continue;
      int lit = (-x - y) * 40 / (2 * r + 1);
      uint32_t v = shade(col, lit + noise(cx + x, cy + y, seed) % 13 - 6);
      if (d2 > (r - 1) * (r - 1) && x + y > 0) v = shade(col, -40);
      put(c, cx + x, cy + y, v);
    }
}

static void tile_tree(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  rect(c, ox + 7, oy + 11, 3, 5, rgb(96, 64, 40));
  put(c, ox + 9, oy + 12, rgb(70, 46, 30));
  blob(c, ox + 8, oy + 7, 7, rgb(50, 112, 58), 61);
  for (int k = 0; k < 7; k++) {
    int x = noise(k, 1, 71) % 9 + 3, y = noise(k, 2, 71) % 8 + 2;
    put(c, ox + x, oy + y, rgb(84, 152, 76));
  }
}

static void tile_hedge(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  rect(c, ox, oy + 2, T, T - 2, rgb(44, 98, 50));
  for (int y = 2; y < T; y++)
    for (int x = 0; x < T; x++) {
      int n = noise(x, y, 73);
      uint32_t v = shade(rgb(52, 110, 56), n % 21 - 10 - (y > 12 ? 20 : 0));
      if (n > 230) v = rgb(88, 150, 78);
      put(c, ox + x, oy + y, v);
    }
  for (int x = 0; x < T; x++) put(c, ox + x, oy + 2 + noise(x, 0, 79) % 2, rgb(92, 156, 80));
}

static void tile_crate(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t wood = rgb(170, 120, 70), dark = rgb(96, 62, 34);
  rect(c, ox + 1, oy + 2, 14, 13, wood);
  for (int y = 2; y < 15; y++)
    for (int x = 1; x < 15; x++)
      if (x == 1 || x == 14 || y == 2 || y == 14)
        put(c, ox + x, oy + y, dark);
      else if (x - 1 == y - 2 || 14 - x == y - 2)
        put(c, ox + x, oy + y, shade(wood, -36));
      else if (y % 4 == 0)
        put(c, ox + x, oy + y, shade(wood, -14));
  rect(c, ox + 2, oy + 3, 12, 1, shade(wood, 30));
}

static void tile_barrel(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  blob(c, ox + 8, oy + 8, 6, rgb(150, 100, 58), 83);
  for (int a = 0; a < 360; a += 6) {
    double t = a * 3.14159265 / 180;
    put(c, ox + 8 + (int)(6 * SDL_cos(t)), oy + 8 + (int)(6 * SDL_sin(t)), rgb(70, 64, 70));
  }
  blob(c, ox + 8, oy + 8, 3, rgb(120, 80, 46), 89);
}

static void tile_pillar(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  blob(c, ox + 8, oy + 8, 6, rgb(176, 170, 184), 97);
  blob(c, ox + 8, oy + 8, 4, rgb(196, 190, 204), 101);
}

static void tile_pedestal(canvas *c, int i, int with_idol) {
  int ox, oy;
  cell(i, &ox, &oy);
  rect(c, ox + 2, oy + 9, 12, 6, rgb(150, 146, 160));
  rect(c, ox + 2, oy + 9, 12, 1, rgb(196, 192, 206));
  rect(c, ox + 2, oy + 14, 12, 1, rgb(90, 86, 100));
  rect(c, ox + 3, oy + 7, 10, 2, rgb(170, 166, 180));
  if (with_idol) {
    /* a crescent moon of pale jade on a stand */
    for (int y = -5; y <= 5; y++)
      for (int x = -5; x <= 5; x++) {
        int in = x * x + y * y <= 25, cut = (x - 2) * (x - 2) + (y + 1) * (y + 1) <= 16;
        if (in && !cut)
          put(c, ox + 7 + x, oy + 1 + y + 5, x < -2 ? rgb(150, 240, 220) : rgb(96, 206, 190));
      }
    put(c, ox + 4, oy + 4, rgb(230, 255, 250));
  }
}

static void tile_well(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  blob(c, ox + 8, oy + 8, 7, rgb(140, 136, 150), 103);
  blob(c, ox + 8, oy + 8, 4, rgb(40, 80, 130), 107);
  put(c, ox + 6, oy + 6, rgb(120, 170, 220));
}

static void tile_statue(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  rect(c, ox + 3, oy + 11, 10, 5, rgb(120, 116, 130));
  rect(c, ox + 3, oy + 11, 10, 1, rgb(160, 156, 170));
  rect(c, ox + 6, oy + 4, 4, 7, rgb(170, 170, 178));
  rect(c, ox + 5, oy + 6, 6, 3, rgb(150, 150, 160));
  blob(c, ox + 8, oy + 3, 2, rgb(180, 180, 188), 109);
  rect(c, ox + 11, oy + 1, 1, 10, rgb(200, 200, 210)); /* sword */
}

static void tile_bed(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  rect(c, ox + 2, oy + 1, 12, 14, rgb(96, 62, 36));
  rect(c, ox + 3, oy + 2, 10, 4, rgb(236, 232, 220));
  rect(c, ox + 3, oy + 6, 10, 8, rgb(64, 90, 150));
  for (int x = 3; x < 13; x += 2) put(c, ox + x, oy + 7, rgb(90, 118, 180));
}

static void tile_table(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  rect(c, ox + 1, oy + 3, 14, 9, rgb(150, 100, 58));
  rect(c, ox + 1, oy + 3, 14, 1, rgb(186, 136, 86));
  rect(c, ox + 1, oy + 12, 14, 2, rgb(90, 58, 32));
  rect(c, ox + 4, oy + 5, 3, 3, rgb(220, 220, 226)); /* a plate */
  rect(c, ox + 10, oy + 5, 2, 4, rgb(170, 60, 50));  /* a bottle */
}

static void tile_stairs(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++)
      put(c, ox + x, oy + y, shade(rgb(120, 116, 128), -(y % 4) * 10 - y * 3));
}

static void tile_rune(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  for (int a = 0; a < 360; a += 8) {
    double t = a * 3.14159265 / 180;
    put(c, ox + 8 + (int)(6.5 * SDL_cos(t)), oy + 8 + (int)(6.5 * SDL_sin(t)),
        rgba(160, 220, 255, 150));
  }
  rect(c, ox + 8, oy + 4, 1, 8, rgba(160, 220, 255, 130));
  rect(c, ox + 5, oy + 8, 7, 1, rgba(160, 220, 255, 130));
}

/* Torch flame, three frames: a teardrop flickering left and right. */
static void flame(canvas *c, int i, int f) {
  int ox, oy;
  cell(i, &ox, &oy);
  int lean = f == 0 ? 0 : (f == 1 ? -1 : 1);
  for (int y = 0; y < 8; y++) {
    int w = y < 2 ? 1 : (y < 5 ? 2 : 3);
    int cx = 8 + (y < 4 ? lean : 0);
    for (int x = -w; x < w; x++) {
      uint32_t v = y > 5 && x > -w && x < w - 1 ? rgb(255, 244, 190)
                                                : (y > 3 ? rgb(255, 176, 60) : rgb(236, 96, 40));
      put(c, ox + cx + x, oy + y + (f == 2 ? 1 : 0), v);
    }
  }
}

static void icon(canvas *c, int i, char which) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t bg = which == '!' ? rgb(214, 48, 48) : rgb(230, 170, 40);
  blob(c, ox + 8, oy + 7, 6, bg, 1);
  uint32_t w = rgb(255, 255, 255);
  if (which == '!') {
    rect(c, ox + 7, oy + 3, 2, 6, w);
    rect(c, ox + 7, oy + 10, 2, 2, w);
  } else {
    rect(c, ox + 6, oy + 3, 4, 1, w);
    rect(c, ox + 10, oy + 4, 1, 2, w);
    rect(c, ox + 8, oy + 6, 2, 1, w);
    rect(c, ox + 8, oy + 7, 1, 2, w);
    rect(c, ox + 8, oy + 10, 1, 2, w);
  }
}

/* A lamp post: an iron post with a glass lantern on top. */
static void tile_lamp(canvas *c, int i) {
  int ox, oy;
  cell(i, &ox, &oy);
  uint32_t iron = rgb(40, 38, 48), hi = rgb(90, 88, 100);
  rect(c, ox + 5, oy + 14, 6, 2, iron);
  rect(c, ox + 7, oy + 5, 2, 10, iron);
  put(c, ox + 7, oy + 6, hi);
  rect(c, ox + 5, oy + 0, 6, 1, iron);
  rect(c, ox + 5, oy + 1, 6, 4, rgb(255, 214, 120));
  rect(c, ox + 6, oy + 2, 4, 2, rgb(255, 244, 200));
  rect(c, ox + 4, oy + 5, 8, 1, iron);
  put(c, ox + 5, oy + 1, iron);
  put(c, ox + 10, oy + 1, iron);
}

static void paint_tiles(canvas *c) {
  tile_stone(c, 0, 1, 0);
  tile_stone(c, 1, 2, 0);
  tile_stone(c, 2, 3, 1);
  tile_grass(c, 3, 4, 0);
  tile_grass(c, 4, 5, 0);
  tile_grass(c, 5, 6, 1);
  tile_wood(c, 6);
  tile_carpet(c, 7);
  tile_water(c, 8, 0);
  tile_water(c, 9, 1);
  tile_wall_top(c, 10);
  tile_wall_face(c, 11, 11);
  tile_sconce(c, 12);
  tile_door(c, 13, 0);
  tile_door(c, 14, 1);
  tile_window(c, 15);
  tile_tree(c, 16);
  tile_crate(c, 17);
  tile_barrel(c, 18);
  tile_pillar(c, 19);
  tile_hedge(c, 20);
  tile_dirt(c, 21);
  tile_pedestal(c, 22, 1);
  tile_pedestal(c, 23, 0);
  tile_well(c, 24);
  tile_banner(c, 25);
  tile_bed(c, 26);
  tile_table(c, 27);
  tile_shelf(c, 28);
  tile_stairs(c, 29);
  tile_statue(c, 30);
  tile_rune(c, 31);
  flame(c, 32, 0);
  flame(c, 33, 1);
  flame(c, 34, 2);
  icon(c, 35, '!');
  icon(c, 36, '?');
  tile_lamp(c, 37);
}

/* ---- characters ---- */

typedef struct look {
  uint32_t hair, skin, cloth, trim, pants, boots;
  int helm;  /* 1: metal helmet instead of hair */
  int plume; /* 1: a red plume on the helmet */
  int beard; /* 1: a long white beard */
  int robe;  /* 1: a robe down to the feet */
  int hood;  /* 1: a hood (hair colour) framing the face */
} look;

enum { DOWN, UP, SIDE };

/* Paints one 16x16 character frame into a scratch grid, then outlines it.
   frame: 0 stand, 1 and 2 walking steps, 3 and 4 waving. */
static void paint_char(canvas *c, int ox, int oy, const look *lk, int dir, int frame) {
  canvas s = canvas_new(T, T);
  uint32_t hair = lk->hair, hair2 = shade(hair, -30), skin = lk->skin, skin2 = shade(skin, -28);
  uint32_t cloth = lk->cloth, cloth2 = shade(cloth, -34), eye = rgb(30, 24, 36);
  int step = frame == 1 ? 1 : (frame == 2 ? -1 : 0);
  int bob = step ? 1 : 0;
  int hy = 1 + bob; /* head top */
  /* legs */
  if (!lk->robe) {
    if (dir == SIDE) {
      int back = 7 - step, front = 8 + step;
      rect(&s, back, 13, 2, 2, shade(lk->pants, -20));
      rect(&s, back, 15, 2, 1, shade(lk->boots, -10));
      rect(&s, front, 13, 2, 2, lk->pants);
      rect(&s, front, 15, 3, 1, lk->boots);
    } else {
      int ly = step > 0 ? -1 : 0, ry = step < 0 ? -1 : 0;
      rect(&s, 5, 13, 2, 2 + ly, lk->pants);
      rect(&s, 5, 15 + ly, 2, 1, lk->boots);
      rect(&s, 9, 13, 2, 2 + ry, shade(lk->pants, -12));
      rect(&s, 9, 15 + ry, 2, 1, lk->boots);
    }
  } else {
    rect(&s, 5 + (step > 0), 15, 2, 1, lk->boots);
    rect(&s, 9 - (step < 0), 15, 2, 1, lk->boots);
  }
  /* torso */
  int bx = dir == SIDE ? 5 : 4, bw = dir == SIDE ? 6 : 8, by = 8 + bob, bh = lk->robe ? 7 - bob : 5;
  rect(&s, bx, by, bw, bh, cloth);
  rect(&s, bx + bw - 1, by, 1, bh, cloth2);
  if (dir != UP) rect(&s, bx, by + 3, bw, 1, lk->trim);        /* belt */
  if (dir == DOWN) rect(&s, 7, by, 2, 2, shade(lk->trim, 20)); /* collar clasp */
  if (lk->robe && dir != UP) rect(&s, 7, by + 4, 2, bh - 4, shade(cloth, 18));
  /* arms */
  if (dir == SIDE) {
    int ay = by + 1 + (step > 0 ? -1 : (step < 0 ? 1 : 0));
    rect(&s, 7, ay, 2, 3, cloth2);
    rect(&s, 7, ay + 3, 2, 1, skin);
  } else {
    int la = step ? (step > 0 ? -1 : 1) : 0;
    rect(&s, 3, by + la, 1, 3, cloth2);
    put(&s, 3, by + 3 + la, skin);
    if (frame >= 3) { /* waving right arm, up high */
      int hx = frame == 3 ? 12 : 13;
      rect(&s, 12, by - 3, 1, 3, cloth2);
      rect(&s, hx, by - 5, 1, 2, skin);
    } else {
      rect(&s, 12, by - la, 1, 3, cloth2);
      put(&s, 12, by + 3 - la, skin);
    }
  }
  /* head */
  int hx0 = dir == SIDE ? 5 : 4, hw = dir == SIDE ? 7 : 8;
  for (int y = hy; y < hy + 7; y++)
    for (int x = hx0; x < hx0 + hw; x++) {
      int corner = (y == hy || y == hy + 6) && (x == hx0 || x == hx0 + hw - 1);
      if (!corner) put(&s, x, y, skin);
    }
  uint32_t top = lk->helm ? rgb(150, 156, 170) : hair, top2 = lk->helm ? rgb(100, 104, 120) : hair2;
  if (dir == DOWN) {
    rect(&s, 5, hy, 6, 1, top);
    rect(&s, 4, hy + 1, 8, 2, top);
    if (lk->helm) {
      rect(&s, 4, hy + 3, 8, 1, top2);
      rect(&s, 4, hy + 4, 1, 2, top2);
      rect(&s, 11, hy + 4, 1, 2, top2);
      put(&s, 6, hy + 1, rgb(210, 214, 226));
    } else {
      rect(&s, 4, hy + 3, 1, 3, top);
      rect(&s, 11, hy + 3, 1, 3, top2);
      if (!lk->hood)
        rect(&s, 5, hy + 3, 2, 1, top);
      else
        rect(&s, 4, hy + 6, 1, 1, top), rect(&s, 11, hy + 6, 1, 1, top2);
    }
    rect(&s, 10, hy + 4, 1, 3, skin2);
    put(&s, 6, hy + 4, eye);
    put(&s, 9, hy + 4, eye);
    put(&s, 6, hy + 3, shade(top2, -10));
    put(&s, 9, hy + 3, shade(top2, -10));
    if (lk->beard) {
      rect(&s, 5, hy + 5, 6, 2, rgb(236, 236, 240));
      rect(&s, 6, hy + 7, 4, 2, rgb(226, 226, 232));
      rect(&s, 7, hy + 9, 2, 1, rgb(210, 210, 218));
      put(&s, 7, hy + 5, rgb(200, 120, 110));
      put(&s, 8, hy + 5, rgb(200, 120, 110));
    } else {
      put(&s, 7, hy + 5, skin2);
      put(&s, 8, hy + 5, skin2);
    }
  } else if (dir == UP) {
    for (int y = hy; y < hy + 7; y++)
      for (int x = 4; x < 12; x++)
        if (get(&s, x, y)) put(&s, x, y, x == 11 || y == hy + 6 ? top2 : top);
    if (lk->helm) put(&s, 6, hy + 1, rgb(210, 214, 226));
    if (!lk->helm) rect(&s, 6, hy + 2, 3, 1, shade(top, 16));
  } else {
    rect(&s, 5, hy, 6, 1, top);
    rect(&s, 5, hy + 1, 7, 2, top);
    rect(&s, 5, hy + 3, 3, lk->helm ? 2 : 4, top2);
    if (lk->helm) rect(&s, 5, hy + 3, 7, 1, top2);
    put(&s, 10, hy + 4, eye);
    put(&s, 12, hy + 5, skin2); /* nose */
    put(&s, 11, hy + 6, skin2);
    if (lk->beard) {
      rect(&s, 8, hy + 5, 4, 3, rgb(236, 236, 240));
      rect(&s, 9, hy + 8, 2, 2, rgb(220, 220, 228));
    }
    if (lk->hood) rect(&s, 5, hy + 3, 2, 4, top);
  }
  if (lk->plume) {
    uint32_t red = rgb(206, 40, 44);
    if (dir == SIDE)
      rect(&s, 4, hy - 1, 4, 1, red), rect(&s, 3, hy, 2, 2, red);
    else
      rect(&s, 7, hy - 1, 2, 2, red), put(&s, 7, hy - 1, shade(red, 40));
  }
  /* outline: every empty pixel next to a painted one */
  uint32_t ink = rgb(26, 20, 34);
  for (int y = 0; y < T; y++)
    for (int x = 0; x < T; x++) {
      uint32_t v = get(&s, x, y);
      if (!A(v)) {
        int edge = A(get(&s, x - 1, y)) || A(get(&s, x + 1, y)) || A(get(&s, x, y - 1)) ||
                   A(get(&s, x, y + 1));
        if (edge && x > 0 && x < T - 1 && y > 0)
          v = ink;
        else if (edge)
          v = ink;
      }
      if (A(v)) put(c, ox + x, oy + y, v);
    }
  free(s.px);
}

static void paint_chars(canvas *c) {
  const look looks[] = {
      /* hero: hooded thief in a midnight-blue cloak */
      {rgb(46, 70, 130), rgb(238, 196, 160), rgb(52, 84, 150), rgb(150, 110, 60), rgb(60, 52, 70),
       rgb(80, 50, 36), 0, 0, 0, 0, 1},
      /* guard: red tabard, steel helmet */
      {rgb(90, 60, 40), rgb(226, 180, 140), rgb(172, 42, 48), rgb(230, 196, 90), rgb(70, 70, 84),
       rgb(50, 40, 40), 1, 0, 0, 0, 0},
      /* captain: steel helmet with a plume, purple coat */
      {rgb(90, 60, 40), rgb(214, 166, 126), rgb(96, 56, 130), rgb(230, 196, 90), rgb(60, 58, 74),
       rgb(40, 30, 30), 1, 1, 0, 0, 0},
      /* sage: white beard, green robe */
      {rgb(226, 226, 232), rgb(232, 190, 156), rgb(64, 120, 84), rgb(214, 186, 100),
       rgb(60, 90, 60), rgb(70, 50, 40), 0, 0, 1, 1, 0},
  };
  for (int k = 0; k < 4; k++) {
    int col = 0;
    for (int dir = 0; dir < 3; dir++)
      for (int f = 0; f < 3; f++) paint_char(c, (col++) * T, k * T, &looks[k], dir, f);
    paint_char(c, (col++) * T, k * T, &looks[k], DOWN, 3);
    paint_char(c, (col++) * T, k * T, &looks[k], DOWN, 4);
  }
}

/* ---- output ---- */

static int save(const canvas *c, const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  SDL_Surface *s = SDL_CreateRGBSurfaceWithFormat(0, c->w, c->h, 32, SDL_PIXELFORMAT_RGBA8888);
  if (!s) return 1;
  for (int y = 0; y < c->h; y++)
    memcpy((char *)s->pixels + y * s->pitch, c->px + y * c->w, (size_t)c->w * 4);
  int rc = IMG_SavePNG(s, path);
  SDL_FreeSurface(s);
  if (rc != 0)
    fprintf(stderr, "weft-artgen: cannot write %s: %s\n", path, SDL_GetError());
  else
    printf("wrote %s (%dx%d)\n", path, c->w, c->h);
  return rc != 0;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "assets";
  canvas tiles = canvas_new(16 * T, 3 * T), chars = canvas_new(11 * T, 4 * T);
  paint_tiles(&tiles);
  paint_chars(&chars);
  int bad = save(&tiles, dir, "tiles.png") + save(&chars, dir, "characters.png");
  free(tiles.px);
  free(chars.px);
  return bad ? 1 : 0;
}
