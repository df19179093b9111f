/* weft-pngstat: pixel statistics of a PNG for the end-to-end tests, so a
   screenshot is checked by what it shows (brightness, contrast, colours)
   rather than by its exact bytes.
   weft-pngstat FILE.png prints: width height mean stddev colours dark_fraction
   weft-pngstat A.png B.png prints where two pictures of one size differ:
   the count of pixels that differ, then the box holding them all
   (x y w h; 0 0 0 0 when none does). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <SDL.h>
#include <SDL_image.h>

static SDL_Surface *load(const char *path) {
  SDL_Surface *raw = IMG_Load(path);
  if (!raw) {
    fprintf(stderr, "weft-pngstat: %s\n", IMG_GetError());
    return NULL;
  }
  SDL_Surface *s = SDL_ConvertSurfaceFormat(raw, SDL_PIXELFORMAT_ARGB8888, 0);
  SDL_FreeSurface(raw);
  return s;
}

static Uint32 pixel(const SDL_Surface *s, int x, int y) {
  return ((const Uint32 *)((const char *)s->pixels + y * s->pitch))[x] & 0xffffff;
}

static int differ(const char *pa, const char *pb) {
  SDL_Surface *a = load(pa), *b = a ? load(pb) : NULL;
  if (!a || !b || a->w != b->w || a->h != b->h) {
    if (a && b) fprintf(stderr, "weft-pngstat: %s and %s differ in size\n", pa, pb);
    SDL_FreeSurface(a);
    SDL_FreeSurface(b);
    return 1;
  }
  long n = 0;
  int x0 = a->w, y0 = a->h, x1 = -1, y1 = -1;
  for (int y = 0; y < a->h; y++)
    for (int x = 0; x < a->w; x++)
      if (pixel(a, x, y) != pixel(b, x, y)) {
        n++;
        if (x < x0) x0 = x;
        if (y < y0) y0 = y;
        if (x > x1) x1 = x;
        if (y > y1) y1 = y;
      }
  if (n)
    printf("%ld %d %d %d %d\n", n, x0, y0, x1 - x0 + 1, y1 - y0 + 1);
  else
    printf("0 0 0 0 0\n");
  SDL_FreeSurface(a);
  SDL_FreeSurface(b);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3) return differ(argv[1], argv[2]);
  if (argc != 2) {
    fprintf(stderr, "usage: weft-pngstat FILE.png\n       weft-pngstat A.png B.png\n");
    return 2;
  }
  SDL_Surface *s = load(argv[1]);
  if (!s) return 1;
  /* colours counted on a 5-bit-per-channel grid */
  unsigned char *seen = calloc(1u << 15, 1);
  double sum = 0, sum2 = 0;
  long n = (long)s->w * s->h, dark = 0, colours = 0;
  for (int y = 0; y < s->h; y++)
    for (int x = 0; x < s->w; x++) {
      Uint32 p = pixel(s, x, y);
      int r = p >> 16 & 255, g = p >> 8 & 255, b = p & 255;
      double l = 0.2126 * r + 0.7152 * g + 0.0722 * b;
      sum += l;
      sum2 += l * l;
      if (l < 16) dark++;
      int k = (r >> 3) << 10 | (g >> 3) << 5 | (b >> 3);
      if (!seen[k]) seen[k] = 1, colours++;
    }
  double mean = sum / (double)n, sd = sqrt(sum2 / (double)n - mean * mean);
  printf("%d %d %.2f %.2f %ld %.4f\n", s->w, s->h, mean, sd, colours, (double)dark / (double)n);
  free(seen);
  SDL_FreeSurface(s);
  return 0;
}
