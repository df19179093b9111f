/* The "image" job (decode on a worker, upload on the main thread) and the
   "level" job (read and parse on a worker). A headless run has them run
   inline (main.c), so it stays reproducible frame for frame. */
#include "assets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <SDL_image.h>
#include <lauxlib.h>

#include "replay.h"

typedef struct imgjob {
  game *g;
  char name[64];
  char path[1200];
  SDL_Surface *surf; /* decoded on the worker; owned until uploaded */
  char err[256];
} imgjob;

/* Main thread: checks the name, allocates the job. */
static void *img_prepare(lua_State *L, int first, int n, void *user) {
  game *g = user;
  const char *name = luaL_checkstring(L, first);
  (void)n;
  if (strstr(name, "..") || name[0] == '/' || strlen(name) >= sizeof(((imgjob *)0)->name))
    luaL_argerror(L, 1, "an image name is a file under assets/");
  imgjob *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->g = g;
  snprintf(j->name, sizeof j->name, "%s", name);
  snprintf(j->path, sizeof j->path, "%s/%s", g->run.assets_dir, name);
  return j;
}

/* Worker thread: decode and convert to the texture format. No Lua, no
   renderer. */
static void img_run(void *data) {
  imgjob *j = data;
  SDL_Surface *s = IMG_Load(j->path);
  if (!s) {
    snprintf(j->err, sizeof j->err, "cannot load %s: %s", j->name, IMG_GetError());
    return;
  }
  j->surf = SDL_ConvertSurfaceFormat(s, SDL_PIXELFORMAT_ARGB8888, 0);
  SDL_FreeSurface(s);
  if (!j->surf) snprintf(j->err, sizeof j->err, "cannot convert %s: %s", j->name, SDL_GetError());
}

/* Main thread: the decoded image as a texture, in the list under its
   name (replacing one of that name); NULL with j->err said. */
static image *upload(imgjob *j) {
  game *g = j->g;
  image *im = assets_get(g, j->name);
  if (!im) {
    if (g->assets.nimages == MAX_IMAGES) {
      snprintf(j->err, sizeof j->err, "too many images");
      return NULL;
    }
    im = &g->assets.images[g->assets.nimages++];
    memset(im, 0, sizeof *im);
    snprintf(im->name, sizeof im->name, "%s", j->name);
  }
  SDL_Texture *t = SDL_CreateTextureFromSurface(g->video.r, j->surf);
  if (!t) {
    snprintf(j->err, sizeof j->err, "cannot upload %s: %s", j->name, SDL_GetError());
    return NULL;
  }
  SDL_SetTextureBlendMode(t, SDL_BLENDMODE_BLEND);
  if (im->tex) SDL_DestroyTexture(im->tex);
  im->tex = t;
  im->w = j->surf->w;
  im->h = j->surf->h;
  return im;
}

/* Main thread: upload, then resolve with {name=, w=, h=}. */
static int img_finish(lua_State *L, void *data) {
  imgjob *j = data;
  image *im = j->surf ? upload(j) : NULL;
  if (!im) {
    lua_pushstring(L, j->err);
    return -1;
  }
  lua_createtable(L, 0, 3);
  lua_pushstring(L, im->name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, im->w);
  lua_setfield(L, -2, "w");
  lua_pushinteger(L, im->h);
  lua_setfield(L, -2, "h");
  return 1;
}

int assets_load_now(game *g, const char *name, char *err, size_t n) {
  if (assets_get(g, name)) return 0;
  imgjob j = {.g = g};
  snprintf(j.name, sizeof j.name, "%s", name);
  snprintf(j.path, sizeof j.path, "%s/%s", g->run.assets_dir, name);
  img_run(&j);
  int rc = j.surf && upload(&j) ? 0 : -1;
  if (rc) snprintf(err, n, "%s", j.err);
  SDL_FreeSurface(j.surf);
  return rc;
}

static void img_free(void *data) {
  imgjob *j = data;
  SDL_FreeSurface(j->surf);
  free(j);
}

/* ---- levels ---- */

typedef struct lvljob {
  game *g;
  char name[64];
  char path[1200];
  level *lv; /* parsed on the worker; owned until handed over */
  char err[300];
  char *text; /* replaying: the recorded file, owned; NULL: read the disk */
  size_t len;
} lvljob;

static void *lvl_prepare(lua_State *L, int first, int n, void *user) {
  game *g = user;
  const char *name = luaL_checkstring(L, first);
  (void)n;
  if (strstr(name, "..") || name[0] == '/' || strlen(name) >= sizeof(((lvljob *)0)->name))
    luaL_argerror(L, 1, "a level name is a file under assets/");
  lvljob *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->g = g;
  snprintf(j->name, sizeof j->name, "%s", name);
  snprintf(j->path, sizeof j->path, "%s/%s", g->run.assets_dir, name);
  /* replaying: the level as recorded, whatever the disk holds */
  const replay_level *rec = replay_level_of(g, name);
  if (rec && (j->text = malloc(rec->len + 1))) memcpy(j->text, rec->text, j->len = rec->len);
  return j;
}

static void lvl_run(void *data) {
  lvljob *j = data;
  FILE *f = j->text ? NULL : fopen(j->path, "rb");
  char *text = j->text;
  long len = j->text ? (long)j->len : -1;
  j->text = NULL;
  if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    text = malloc((size_t)len + 1);
    if (text && fread(text, 1, (size_t)len, f) != (size_t)len) len = -1;
  }
  if (f) fclose(f);
  if (!text || len < 0)
    snprintf(j->err, sizeof j->err, "cannot read %s", j->name);
  else {
    j->lv = calloc(1, sizeof *j->lv);
    if (!j->lv)
      snprintf(j->err, sizeof j->err, "out of memory");
    else if (level_parse(j->lv, text, (size_t)len, j->err, sizeof j->err) != 0) {
      free(j->lv);
      j->lv = NULL;
    }
  }
  free(text);
}

/* Main thread: keep the parsed level for build_level; resolve with
   {name =, w =, h =}. */
static int lvl_finish(lua_State *L, void *data) {
  lvljob *j = data;
  if (!j->lv) {
    lua_pushstring(L, j->err);
    return -1;
  }
  if (j->g->assets.parsed) {
    level_free(j->g->assets.parsed);
    free(j->g->assets.parsed);
  }
  j->g->assets.parsed = j->lv;
  lua_createtable(L, 0, 3);
  lua_pushstring(L, j->name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, j->lv->w);
  lua_setfield(L, -2, "w");
  lua_pushinteger(L, j->lv->h);
  lua_setfield(L, -2, "h");
  j->lv = NULL;
  return 1;
}

static void lvl_free(void *data) {
  lvljob *j = data;
  free(j->text);
  if (j->lv) {
    level_free(j->lv);
    free(j->lv);
  }
  free(j);
}

level *assets_take_level(game *g) {
  level *lv = g->assets.parsed;
  g->assets.parsed = NULL;
  return lv;
}

image *assets_get(game *g, const char *name) {
  for (int i = 0; i < g->assets.nimages; i++)
    if (strcmp(g->assets.images[i].name, name) == 0)
      return g->assets.images[i].tex ? &g->assets.images[i] : NULL;
  return NULL;
}

/* load_image(name) / load_level(name) -> future: job(kind, name).
   Upvalue 1 is job, upvalue 2 the kind. */
static int l_load(lua_State *L) {
  luaL_checkstring(L, 1);
  lua_settop(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_pushvalue(L, 1);
  lua_call(L, 2, 1);
  return 1;
}

void assets_open(game *g) {
  weft_job_kind img = {
      sizeof(weft_job_kind), "image", img_prepare, img_run, img_finish, img_free, g};
  weft_job_kind lvl = {
      sizeof(weft_job_kind), "level", lvl_prepare, lvl_run, lvl_finish, lvl_free, g};
  weft_register_job(g->W, &img);
  weft_register_job(g->W, &lvl);
  weft_save_name(g->W, "demo.assets.load", l_load);
  lua_State *L = g->L;
  static const char *const kinds[2][2] = {{"image", "load_image"}, {"level", "load_level"}};
  for (int i = 0; i < 2; i++) {
    lua_getfield(L, -1, "job");
    lua_pushstring(L, kinds[i][0]);
    lua_pushcclosure(L, l_load, 2);
    lua_setfield(L, -2, kinds[i][1]);
  }
}

void assets_close(game *g) {
  if (g->assets.parsed) {
    level_free(g->assets.parsed);
    free(g->assets.parsed);
    g->assets.parsed = NULL;
  }
  for (int i = 0; i < g->assets.nimages; i++)
    if (g->assets.images[i].tex) SDL_DestroyTexture(g->assets.images[i].tex);
  g->assets.nimages = 0;
}
