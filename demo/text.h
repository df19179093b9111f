/* Text for the demo: a TrueType font found on the system at run time,
   baked into a glyph atlas per size (printable ASCII) and drawn with
   SDL_RenderCopy, so drawing a line costs no font rendering. */
#ifndef DEMO_TEXT_H
#define DEMO_TEXT_H

#include <stddef.h>

#include <SDL.h>

typedef struct font font;

enum { FONT_REGULAR, FONT_BOLD, FONT_MONO };

/* Finds a font file for style: $WEFT_FONT (any style), then the Debian
   paths of DejaVu, Noto and Liberation, then the first *.ttf under
   /usr/share/fonts. Writes the path to out; returns 0, or -1 if none. */
int font_find(int style, char *out, size_t n);

/* Opens the font at path at px pixels and bakes its glyphs for renderer r
   (TTF_Init must have run). Returns NULL on failure. The font owns its
   texture; close it before the renderer is destroyed. */
font *font_open(SDL_Renderer *r, const char *path, int px);
void font_close(font *f);

int font_height(const font *f);
int font_width(const font *f, const char *s);
/* Draws the first n bytes of s (n < 0: all) at x, y (top-left); returns
   the width drawn. Bytes outside printable ASCII draw as '?'. */
int font_draw_n(font *f, SDL_Renderer *r, const char *s, int n, int x, int y, SDL_Color c);
int font_draw(font *f, SDL_Renderer *r, const char *s, int x, int y, SDL_Color c);
/* Same with a one-pixel dark shadow below and to the right. */
int font_draw_shadow(font *f, SDL_Renderer *r, const char *s, int x, int y, SDL_Color c);
/* Draws the first n bytes of s (n < 0: all) word-wrapped to max_w pixels;
   returns the height used. With r NULL it only measures. */
int font_draw_wrapped(font *f, SDL_Renderer *r, const char *s, int n, int x, int y, int max_w,
                      SDL_Color c);

#endif
