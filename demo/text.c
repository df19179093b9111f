/* Glyph atlas text over SDL2_ttf. */
#include "text.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <SDL_ttf.h>

#define FIRST 32
#define LAST 126
#define NGLYPH (LAST - FIRST + 1)

struct font {
  SDL_Texture *atlas;    /* white glyphs, colour-modulated when drawn */
  SDL_Rect rect[NGLYPH]; /* each glyph's cell in the atlas */
  int advance[NGLYPH];
  int height;
};

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Depth-first search for a *.ttf file below dir. */
static int scan(const char *dir, char *out, size_t n, int depth) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *de;
  int found = -1;
  while (found != 0 && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    size_t len = strlen(de->d_name);
    if (len > 4 && strcmp(de->d_name + len - 4, ".ttf") == 0 && exists(p)) {
      snprintf(out, n, "%s", p);
      found = 0;
    } else if (depth < 4) {
      struct stat st;
      if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) found = scan(p, out, n, depth + 1);
    }
  }
  closedir(d);
  return found;
}

int font_find(int style, char *out, size_t n) {
  static const char *const known[3][4] = {
      {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
       "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
       "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", NULL},
      {"/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
       "/usr/share/fonts/truetype/noto/NotoSans-Bold.ttf",
       "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf", NULL},
      {"/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
       "/usr/share/fonts/truetype/noto/NotoSansMono-Regular.ttf",
       "/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf", NULL}};
  const char *env = getenv("WEFT_FONT");
  if (env && exists(env)) return snprintf(out, n, "%s", env), 0;
  for (int i = 0; known[style][i]; i++)
    if (exists(known[style][i])) return snprintf(out, n, "%s", known[style][i]), 0;
  for (int i = 0; known[0][i]; i++)
    if (exists(known[0][i])) return snprintf(out, n, "%s", known[0][i]), 0;
  return scan("/usr/share/fonts", out, n, 0);
}

font *font_open(SDL_Renderer *r, const char *path, int px) {
  TTF_Font *tf = TTF_OpenFont(path, px);
  if (!tf) return NULL;
  font *f = calloc(1, sizeof *f);
  SDL_Surface *glyph[NGLYPH] = {0};
  SDL_Surface *sheet = NULL;
  if (!f) goto fail;
  f->height = TTF_FontHeight(tf);
  /* lay glyphs out in rows of a 512-pixel-wide sheet */
  int x = 0, y = 0, row = 0, W = 512;
  for (int c = FIRST; c <= LAST; c++) {
    int i = c - FIRST, minx, maxx, miny, maxy, adv;
    if (TTF_GlyphMetrics(tf, (Uint16)c, &minx, &maxx, &miny, &maxy, &adv) != 0) adv = px / 2;
    f->advance[i] = adv;
    SDL_Color white = {255, 255, 255, 255};
    glyph[i] = c == ' ' ? NULL : TTF_RenderGlyph_Blended(tf, (Uint16)c, white);
    int gw = glyph[i] ? glyph[i]->w : 0, gh = glyph[i] ? glyph[i]->h : 0;
    if (x + gw + 1 > W) x = 0, y += row + 1, row = 0;
    f->rect[i] = (SDL_Rect){x, y, gw, gh};
    x += gw + 1;
    if (gh > row) row = gh;
  }
  sheet = SDL_CreateRGBSurfaceWithFormat(0, W, y + row + 1, 32, SDL_PIXELFORMAT_ARGB8888);
  if (!sheet) goto fail;
  SDL_FillRect(sheet, NULL, 0);
  for (int i = 0; i < NGLYPH; i++) {
    if (!glyph[i]) continue;
    SDL_SetSurfaceBlendMode(glyph[i], SDL_BLENDMODE_NONE);
    SDL_Rect dst = f->rect[i];
    SDL_BlitSurface(glyph[i], NULL, sheet, &dst);
  }
  f->atlas = SDL_CreateTextureFromSurface(r, sheet);
  if (!f->atlas) goto fail;
  SDL_SetTextureBlendMode(f->atlas, SDL_BLENDMODE_BLEND);
  for (int i = 0; i < NGLYPH; i++) SDL_FreeSurface(glyph[i]);
  SDL_FreeSurface(sheet);
  TTF_CloseFont(tf);
  return f;
fail:
  for (int i = 0; i < NGLYPH; i++) SDL_FreeSurface(glyph[i]);
  SDL_FreeSurface(sheet);
  free(f);
  TTF_CloseFont(tf);
  return NULL;
}

void font_close(font *f) {
  if (!f) return;
  SDL_DestroyTexture(f->atlas);
  free(f);
}

int font_height(const font *f) { return f ? f->height : 0; }

static int index_of(unsigned char c) { return (c >= FIRST && c <= LAST) ? c - FIRST : '?' - FIRST; }

int font_width(const font *f, const char *s) {
  int w = 0;
  if (!f) return 0;
  for (; *s; s++) w += f->advance[index_of((unsigned char)*s)];
  return w;
}

int font_draw_n(font *f, SDL_Renderer *r, const char *s, int n, int x, int y, SDL_Color c) {
  if (!f) return 0;
  int x0 = x;
  SDL_SetTextureColorMod(f->atlas, c.r, c.g, c.b);
  SDL_SetTextureAlphaMod(f->atlas, c.a);
  for (int k = 0; s[k] && (n < 0 || k < n); k++) {
    int i = index_of((unsigned char)s[k]);
    if (f->rect[i].w) {
      SDL_Rect dst = {x, y, f->rect[i].w, f->rect[i].h};
      SDL_RenderCopy(r, f->atlas, &f->rect[i], &dst);
    }
    x += f->advance[i];
  }
  return x - x0;
}

int font_draw(font *f, SDL_Renderer *r, const char *s, int x, int y, SDL_Color c) {
  return font_draw_n(f, r, s, -1, x, y, c);
}

int font_draw_shadow(font *f, SDL_Renderer *r, const char *s, int x, int y, SDL_Color c) {
  SDL_Color k = {0, 0, 0, (Uint8)(c.a * 3 / 4)};
  font_draw_n(f, r, s, -1, x + 1, y + 2, k);
  return font_draw_n(f, r, s, -1, x, y, c);
}

int font_draw_wrapped(font *f, SDL_Renderer *r, const char *s, int n, int x, int y, int max_w,
                      SDL_Color c) {
  if (!f) return 0;
  int len = (int)strlen(s), limit = n < 0 ? len : (n < len ? n : len);
  int line_start = 0, cy = y;
  while (line_start < len) {
    /* take words while they fit */
    int end = line_start, last_break = -1, w = 0;
    while (end < len && s[end] != '\n') {
      w += f->advance[index_of((unsigned char)s[end])];
      if (s[end] == ' ') last_break = end;
      if (w > max_w && last_break > line_start) {
        end = last_break;
        break;
      }
      end++;
    }
    if (r && line_start < limit) {
      int cnt = (end < limit ? end : limit) - line_start;
      font_draw_n(f, r, s + line_start, cnt, x, cy, c);
    }
    cy += f->height;
    line_start = end + 1;
  }
  return cy - y;
}
