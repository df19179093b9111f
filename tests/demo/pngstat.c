/* weft-pngstat: pixel statistics of a PNG for the end-to-end tests, so a
   screenshot is checked by what it shows (brightness, contrast, colours)
   rather than by its exact bytes.
   Prints: width height mean stddev colours dark_fraction */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <SDL.h>
#include <SDL_image.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: weft-pngstat FILE.png\n");
    return 2;
  }
  SDL_Surface *raw = IMG_Load(argv[1]);
  if (!raw) {
    fprintf(stderr, "weft-pngstat: %s\n", IMG_GetError());
    return 1;
  }
  SDL_Surface *s = SDL_ConvertSurfaceFormat(raw, SDL_PIXELFORMAT_ARGB8888, 0);
  SDL_FreeSurface(raw);
  if (!s) return 1;
  /* colours counted on a 5-bit-per-channel grid */
  unsigned char *seen = calloc(1u << 15, 1);
  double sum = 0, sum2 = 0;
  long n = (long)s->w * s->h, dark = 0, colours = 0;
  for (int y = 0; y < s->h; y++)
    for (int x = 0; x < s->w; x++) {
      Uint32 p = ((Uint32 *)((char *)s->pixels + y * s->pitch))[x];
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
