/* Level file parser: sections [map], [entities], [routes], [marks],
   [doors], [zones]; '#' starts a comment outside [map]. */
#include "level.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { S_NONE, S_MAP, S_ENTITIES, S_ROUTES, S_MARKS, S_DOORS, S_ZONES };

typedef struct parser {
  level *lv;
  int line;
  char *err;
  size_t errn;
  /* map rows collected before the grid is sized */
  char **rows;
  int nrows, cap;
} parser;

static int fail(parser *p, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(p->err, p->errn, "castle.level:%d: ", p->line);
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < p->errn) vsnprintf(p->err + n, p->errn - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* Splits s in place at blanks; returns the word count (at most max). */
static int split(char *s, char **words, int max) {
  int n = 0;
  char *save = NULL;
  for (char *w = strtok_r(s, " \t", &save); w && n < max; w = strtok_r(NULL, " \t", &save)) {
    if (w[0] == '#') break;
    words[n++] = w;
  }
  return n;
}

static int num(parser *p, const char *s, float *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end) return fail(p, "'%s' is not a number", s);
  *out = (float)v;
  return 0;
}

static int facing(parser *p, const char *s, float *out) {
  static const struct {
    const char *name;
    float deg;
  } dirs[] = {{"right", 0}, {"down", 90}, {"left", 180}, {"up", 270}};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    if (strcmp(s, dirs[i].name) == 0) return *out = dirs[i].deg, 0;
  return num(p, s, out);
}

static void copy(char *dst, size_t n, const char *src) {
  snprintf(dst, n, "%s", strcmp(src, "-") == 0 ? "" : src);
}

static int add_map_row(parser *p, const char *s, size_t len) {
  if (p->nrows == p->cap) {
    int cap = p->cap ? p->cap * 2 : 64;
    char **r = realloc(p->rows, sizeof *r * (size_t)cap);
    if (!r) return fail(p, "out of memory");
    p->rows = r;
    p->cap = cap;
  }
  char *row = malloc(len + 1);
  if (!row) return fail(p, "out of memory");
  memcpy(row, s, len);
  row[len] = 0;
  p->rows[p->nrows++] = row;
  return 0;
}

static int entity_line(parser *p, char **w, int n) {
  level *lv = p->lv;
  if (n < 4) return fail(p, "an entity needs: name kind x y [brain] [facing]");
  if (lv->nents == LEVEL_MAX_ITEMS) return fail(p, "too many entities");
  level_entity *e = &lv->ents[lv->nents];
  memset(e, 0, sizeof *e);
  copy(e->name, sizeof e->name, w[0]);
  copy(e->kind, sizeof e->kind, w[1]);
  if (num(p, w[2], &e->x) || num(p, w[3], &e->y)) return -1;
  if (n > 4) copy(e->brain, sizeof e->brain, w[4]);
  e->facing = 90;
  if (n > 5 && facing(p, w[5], &e->facing)) return -1;
  e->route = -1;
  for (int i = 0; i < lv->nents; i++)
    if (strcmp(lv->ents[i].name, e->name) == 0)
      return fail(p, "entity '%s' appears twice", e->name);
  lv->nents++;
  return 0;
}

static int route_line(parser *p, char **w, int n) {
  level *lv = p->lv;
  if (n < 2) return fail(p, "a route needs: owner x,y x,y ...");
  if (n - 1 > LEVEL_MAX_ROUTE) return fail(p, "a route has at most %d points", LEVEL_MAX_ROUTE);
  if (lv->nroutes == LEVEL_MAX_ITEMS) return fail(p, "too many routes");
  level_route *r = &lv->routes[lv->nroutes];
  memset(r, 0, sizeof *r);
  copy(r->owner, sizeof r->owner, w[0]);
  for (int i = 1; i < n; i++) {
    char *comma = strchr(w[i], ',');
    if (!comma) return fail(p, "route point '%s' is not x,y", w[i]);
    *comma = 0;
    if (num(p, w[i], &r->pts[r->n][0]) || num(p, comma + 1, &r->pts[r->n][1])) return -1;
    r->n++;
  }
  lv->nroutes++;
  return 0;
}

static int mark_line(parser *p, char **w, int n) {
  level *lv = p->lv;
  if (n < 3) return fail(p, "a mark needs: name x y");
  if (lv->nmarks == LEVEL_MAX_ITEMS) return fail(p, "too many marks");
  level_mark *m = &lv->marks[lv->nmarks];
  copy(m->name, sizeof m->name, w[0]);
  if (num(p, w[1], &m->x) || num(p, w[2], &m->y)) return -1;
  lv->nmarks++;
  return 0;
}

static int door_line(parser *p, char **w, int n) {
  level *lv = p->lv;
  float x = 0, y = 0;
  if (n < 3) return fail(p, "a door needs: name x y [open|closed]");
  if (lv->ndoors == LEVEL_MAX_ITEMS) return fail(p, "too many doors");
  level_door *d = &lv->doors[lv->ndoors];
  copy(d->name, sizeof d->name, w[0]);
  if (num(p, w[1], &x) || num(p, w[2], &y)) return -1;
  d->x = (int)x;
  d->y = (int)y;
  d->open = n > 3 && strcmp(w[3], "open") == 0;
  lv->ndoors++;
  return 0;
}

static int zone_line(parser *p, char **w, int n) {
  level *lv = p->lv;
  float v[4];
  if (n < 5) return fail(p, "a zone needs: name x y w h [cinematic]");
  if (lv->nzones == LEVEL_MAX_ITEMS) return fail(p, "too many zones");
  level_zone *z = &lv->zones[lv->nzones];
  copy(z->name, sizeof z->name, w[0]);
  for (int i = 0; i < 4; i++)
    if (num(p, w[1 + i], &v[i])) return -1;
  z->x = (int)v[0], z->y = (int)v[1], z->w = (int)v[2], z->h = (int)v[3];
  z->cinematic[0] = 0;
  if (n > 5) copy(z->cinematic, sizeof z->cinematic, w[5]);
  lv->nzones++;
  return 0;
}

static int section(parser *p, const char *s) {
  static const struct {
    const char *name;
    int id;
  } secs[] = {{"[map]", S_MAP},     {"[entities]", S_ENTITIES}, {"[routes]", S_ROUTES},
              {"[marks]", S_MARKS}, {"[doors]", S_DOORS},       {"[zones]", S_ZONES}};
  for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++)
    if (strncmp(s, secs[i].name, strlen(secs[i].name)) == 0) return secs[i].id;
  return fail(p, "unknown section %s", s);
}

/* Links each route to its owner entity; checks doors sit on 'D' cells. */
static int finish(parser *p) {
  level *lv = p->lv;
  int w = 0;
  for (int i = 0; i < p->nrows; i++) {
    int n = (int)strlen(p->rows[i]);
    if (n > w) w = n;
  }
  if (p->nrows == 0 || w == 0) return fail(p, "the level has no [map]");
  lv->w = w;
  lv->h = p->nrows;
  lv->cells = malloc((size_t)w * (size_t)p->nrows);
  if (!lv->cells) return fail(p, "out of memory");
  memset(lv->cells, ' ', (size_t)w * (size_t)p->nrows);
  for (int y = 0; y < p->nrows; y++) memcpy(lv->cells + y * w, p->rows[y], strlen(p->rows[y]));
  for (int r = 0; r < lv->nroutes; r++) {
    int found = 0;
    for (int i = 0; i < lv->nents; i++)
      if (strcmp(lv->ents[i].name, lv->routes[r].owner) == 0) lv->ents[i].route = r, found = 1;
    if (!found) return fail(p, "route for unknown entity '%s'", lv->routes[r].owner);
  }
  for (int i = 0; i < lv->ndoors; i++)
    if (level_cell(lv, lv->doors[i].x, lv->doors[i].y) != 'D')
      return fail(p, "door '%s' at %d,%d is not on a D tile", lv->doors[i].name, lv->doors[i].x,
                  lv->doors[i].y);
  return 0;
}

int level_parse(level *lv, const char *text, size_t len, char *err, size_t errn) {
  parser p = {lv, 0, err, errn, NULL, 0, 0};
  int sec = S_NONE, rc = 0;
  size_t pos = 0;
  memset(lv, 0, sizeof *lv);
  while (pos < len && rc == 0) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    size_t n = end - pos;
    if (n && text[pos + n - 1] == '\r') n--;
    char buf[1024];
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, text + pos, n);
    buf[n] = 0;
    pos = end + 1;
    p.line++;
    if (buf[0] == '[') {
      rc = section(&p, buf);
      if (rc >= 0) sec = rc, rc = 0;
      continue;
    }
    if (sec == S_MAP) {
      if (n == 0) {
        sec = S_NONE;
        continue;
      }
      rc = add_map_row(&p, buf, n);
      continue;
    }
    char *w[LEVEL_MAX_ROUTE + 2];
    int nw = split(buf, w, LEVEL_MAX_ROUTE + 2);
    if (nw == 0) continue;
    switch (sec) {
    case S_ENTITIES:
      rc = entity_line(&p, w, nw);
      break;
    case S_ROUTES:
      rc = route_line(&p, w, nw);
      break;
    case S_MARKS:
      rc = mark_line(&p, w, nw);
      break;
    case S_DOORS:
      rc = door_line(&p, w, nw);
      break;
    case S_ZONES:
      rc = zone_line(&p, w, nw);
      break;
    default:
      rc = fail(&p, "text outside a section");
    }
  }
  if (rc == 0) rc = finish(&p);
  for (int i = 0; i < p.nrows; i++) free(p.rows[i]);
  free(p.rows);
  if (rc != 0) level_free(lv);
  return rc;
}

void level_free(level *lv) {
  free(lv->cells);
  lv->cells = NULL;
}

char level_cell(const level *lv, int x, int y) {
  if (x < 0 || y < 0 || x >= lv->w || y >= lv->h) return ' ';
  return lv->cells[y * lv->w + x];
}
