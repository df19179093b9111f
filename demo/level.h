/* The level file: a tile grid plus named entities, routes, marks, doors
   and zones, parsed from the text format described in assets/castle.level.
   Plain C: no SDL, no Lua. */
#ifndef DEMO_LEVEL_H
#define DEMO_LEVEL_H

#include <stddef.h>

#define LEVEL_NAME 32
#define LEVEL_MAX_ROUTE 16
#define LEVEL_MAX_ITEMS 64

typedef struct level_entity {
  char name[LEVEL_NAME];
  char kind[LEVEL_NAME]; /* hero, guard, captain, sage */
  char brain[48];        /* module started for it, "" for none */
  float x, y;            /* tiles */
  float facing;          /* degrees: 0 right, 90 down */
  int route;             /* index into routes, -1 for none */
} level_entity;

typedef struct level_route {
  char owner[LEVEL_NAME];
  int n;
  float pts[LEVEL_MAX_ROUTE][2]; /* tiles */
} level_route;

typedef struct level_mark {
  char name[LEVEL_NAME];
  float x, y; /* tiles */
} level_mark;

typedef struct level_door {
  char name[LEVEL_NAME];
  int x, y, open;
} level_door;

typedef struct level_zone {
  char name[LEVEL_NAME];
  int x, y, w, h;     /* tiles */
  char cinematic[48]; /* module name, "" for none */
} level_zone;

typedef struct level {
  int w, h;
  char *cells; /* w*h tile characters, row-major; owned */
  level_entity ents[LEVEL_MAX_ITEMS];
  int nents;
  level_route routes[LEVEL_MAX_ITEMS];
  int nroutes;
  level_mark marks[LEVEL_MAX_ITEMS];
  int nmarks;
  level_door doors[LEVEL_MAX_ITEMS];
  int ndoors;
  level_zone zones[LEVEL_MAX_ITEMS];
  int nzones;
} level;

/* Parses text (len bytes, need not be NUL-terminated) into lv, which the
   caller zero-initialises. Returns 0, or -1 with a message naming the line
   in err. On failure lv holds nothing to free. */
int level_parse(level *lv, const char *text, size_t len, char *err, size_t errn);
/* Frees what level_parse allocated. */
void level_free(level *lv);
/* The tile character at (x, y); ' ' outside the grid. */
char level_cell(const level *lv, int x, int y);

#endif
