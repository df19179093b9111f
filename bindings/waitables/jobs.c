/* job(kind, ...): work on the worker pool, answered by a future resolved
   on the main thread. Also the built-in kinds read_file and find_path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "../../host/plat.h"
#include "future.h"
#include "../base/load.h"
#include "../accounts/report.h"
#include "../accounts/tape.h"

/* One submitted job: its kind and the kind's data; its number, and while
   a replay holds it, its future and the next held job. */
typedef struct jrun {
  const weft_job_kind *kind;
  void *data;
  uint64_t seq, tag;
  struct jrun *next;
} jrun;

static void trampoline(void *p) {
  jrun *r = p;
  r->kind->run(r->data);
}

int weft_register_job(weft_state *W, const weft_job_kind *kind) {
  if (!kind || kind->size != sizeof *kind || !kind->name || !kind->prepare || !kind->run ||
      !kind->finish || !kind->free)
    return WEFT_EINVAL;
  for (int i = 0; i < W->nkinds; i++)
    if (strcmp(W->kinds[i].name, kind->name) == 0) {
      W->kinds[i] = *kind; /* re-registering replaces */
      return WEFT_OK;
    }
  if (W->nkinds >= WEFT_MAX_JOB_KINDS) return WEFT_ELIMIT;
  W->kinds[W->nkinds++] = *kind;
  return WEFT_OK;
}

static const weft_job_kind *find_kind(weft_state *W, const char *name) {
  for (int i = 0; i < W->nkinds; i++)
    if (strcmp(W->kinds[i].name, name) == 0) return &W->kinds[i];
  return NULL;
}

static int l_job(lua_State *L) {
  weft_state *W = weft__get(L);
  const char *name = luaL_checkstring(L, 1);
  const weft_job_kind *k = find_kind(W, name);
  if (!k) return luaL_argerror(L, 1, lua_pushfstring(L, "no job kind '%s'", name));
  int replaying = weft__tape_replaying(W);
  if (!W->J && !replaying) {
    int rc = W->desc.job_submit
                 ? weft__jobs_create_on(W->desc.job_submit, W->desc.job_submit_ud, weft__host_alloc,
                                        W, &W->J)
                 : weft__jobs_create((int)W->desc.job_threads, weft__host_alloc, W, &W->J);
    if (rc != WEFT_OK) return luaL_error(L, "cannot start the job threads: %s", weft_strerror(rc));
  }
  void *data = k->prepare(L, 2, lua_gettop(L) - 1, k->user);
  weft_id f = weft__cfuture_new(W);
  if (f) {
    char label[80];
    snprintf(label, sizeof label, "job %s", k->name);
    weft__cfuture_set_name(W, f, label);
  }
  jrun *run = weft__mem_alloc(W, sizeof *run);
  if (!f || !run || !data) {
    weft__mem_free(W, run, sizeof *run);
    if (data) k->free(data);
    return luaL_error(L, "not enough memory");
  }
  run->kind = k;
  run->data = data;
  run->seq = ++W->job_seq;
  run->tag = f;
  run->next = NULL;
  if (replaying) { /* runs when the recording delivered it */
    jrun **end = &W->held;
    while (*end) end = &(*end)->next;
    *end = run;
  } else if (weft__jobs_submit(W->J, trampoline, run, f) != WEFT_OK) {
    k->free(data);
    weft__mem_free(W, run, sizeof *run);
    return luaL_error(L, "not enough memory");
  }
  weft__cfuture_push(W, L, f);
  return 1;
}

/* Completes one job's future inside a protected call. */
static int l_job_done(lua_State *L) {
  weft_state *W = weft__get(L);
  jrun *r = lua_touserdata(L, 1);
  weft_id f = (weft_id)lua_tointeger(L, 2);
  lua_settop(L, 0);
  int n = r->kind->finish(L, r->data);
  if (n < 0)
    weft__cfuture_complete(W, f, WEFT_FUTURE_FAILED, 1);
  else
    weft__cfuture_complete(W, f, WEFT_FUTURE_RESOLVED, n);
  return 0;
}

static void job_done(void *ud, void *p, uint64_t tag) {
  weft_state *W = ud;
  jrun *r = p;
  if (W->tape) weft__tape_job(W, r->seq);
  /* A cancelled or collected future drops the result. */
  if (weft__future_state_of(W, tag) == WEFT_FUTURE_PENDING) {
    lua_State *L = W->L;
    lua_pushcfunction(L, l_job_done);
    lua_pushlightuserdata(L, r);
    lua_pushinteger(L, (lua_Integer)tag);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
      weft__report(W, L, -1, 0, NULL);
      lua_pop(L, 1);
    }
  }
  r->kind->free(r->data);
  weft__mem_free(W, r, sizeof *r);
}

/* Replaying: runs and delivers the jobs the recording delivered in this
   frame, in its order. */
static void deliver_recorded(weft_state *W) {
  uint64_t seq;
  while (weft__tape_next_job(W, &seq)) {
    jrun **at = &W->held;
    while (*at && (*at)->seq != seq) at = &(*at)->next;
    jrun *r = *at;
    if (!r) {
      weft__tape_diverged(W, "the recording delivered a job no script asked for");
      continue;
    }
    *at = r->next;
    r->kind->run(r->data);
    job_done(W, r, r->tag);
  }
}

void weft__poll_jobs(weft_state *W) {
  if (weft__tape_replaying(W))
    deliver_recorded(W);
  else if (W->J)
    weft__jobs_poll(W->J, job_done, W);
}

static void drop_job(void *ud, void *p, uint64_t tag) {
  weft_state *W = ud;
  (void)tag;
  jrun *r = p;
  r->kind->free(r->data);
  weft__mem_free(W, r, sizeof *r);
}

uint32_t weft__jobs_waiting(const weft_state *W) {
  uint32_t n = W->J ? weft__jobs_pending(W->J) : 0;
  for (const jrun *r = W->held; r; r = r->next) n++;
  return n;
}

void weft__stop_jobs(weft_state *W) {
  if (W->J) weft__jobs_destroy(W->J, drop_job, W);
  W->J = NULL;
  while (W->held) {
    jrun *r = W->held;
    W->held = r->next;
    drop_job(W, r, r->tag);
  }
}

/* ---- read_file: a file under the assets root ----
   Every block is taken on the main thread (the embedder's allocator is
   called there only): prepare sizes the file and takes its buffer, the
   worker reads into it. With desc.load_asset, prepare reads it through
   the engine's loader instead (on the main thread: the loader is called
   there only) and the worker has nothing to do; the future still
   resolves at a later frame, as every job's does. */

typedef struct rfile {
  weft_state *W;
  char *path; /* assets root / name, clean */
  char *real; /* the file read: path with its links resolved, inside the root */
  char *buf;  /* cap bytes */
  size_t cap, len;
  int err;  /* errno of a failed read */
  int grew; /* the file grew while it was read */
  int lent; /* buf is desc.load_asset's block (cap bytes, 1 when empty) */
} rfile;

static void rf_free(void *d) {
  rfile *f = d;
  weft__mem_free_str(f->W, f->path);
  weft__mem_free_str(f->W, f->real);
  if (f->lent)
    f->W->mem.alloc(f->W->mem.ud, f->buf, f->cap ? f->cap : 1, 0);
  else
    weft__mem_free(f->W, f->buf, f->cap);
  weft__mem_free(f->W, f, sizeof *f);
}

/* The name is a path under the assets root: by its letters (a ".." may
   not leave it) and by the file system (a symbolic link may not lead
   out of it: the future fails saying so). */
static void *rf_prepare(lua_State *L, int first, int n, void *user) {
  weft_state *W = user;
  size_t len = 0;
  const char *p =
      n >= 1 ? luaL_checklstring(L, first, &len) : (luaL_argerror(L, 2, "path expected"), "");
  int placed = p[0] != '/' && p[0] != '\\' && len > 0 && !memchr(p, 0, len);
  if (placed) {
    lua_pushfstring(L, "%s/%s", W->assets, p);
    placed = weft__path_place(L, lua_tostring(L, -1), lua_rawlen(L, -1), WEFT_IN_ASSETS);
  }
  if (!placed)
    luaL_argerror(L, first, "path must be relative to the assets directory, and stay inside it");
  char *path = weft__mem_join(W, W->assets, lua_tostring(L, -1));
  lua_pop(L, 2);
  rfile *f = path ? weft__mem_calloc(W, 1, sizeof *f) : NULL;
  if (!f) {
    weft__mem_free_str(W, path);
    return NULL;
  }
  f->W = W;
  f->path = path;
  if (W->desc.load_asset) { /* the engine's files, read here on the main thread */
    f->buf = W->desc.load_asset(W->desc.load_ud, path + strlen(W->assets) + 1, &f->cap);
    if (!f->buf) f->err = ENOENT; /* the future fails with it */
    f->lent = f->buf != NULL;
    f->len = f->buf ? f->cap : 0;
    return f;
  }
  char real[WEFT_PATH_MAX];
  if (!weft__path_confine(W, W->assets, f->path, real)) {
    f->err = W->load_errno; /* the future fails with it */
    return f;
  }
  f->real = weft__mem_strdup(W, real);
  if (!f->real) {
    rf_free(f);
    return NULL;
  }
  weft_stat st;
  if (weft__stat_path(f->real, &st) != WEFT_OK) {
    f->err = ENOENT;
    return f;
  }
  if (!st.is_file) {
    f->err = EISDIR;
    return f;
  }
  if ((unsigned long long)st.size > W->desc.memory_limit) {
    f->err = EFBIG;
    return f;
  }
  f->cap = (size_t)st.size + 1; /* one more byte tells a file that grew */
  f->buf = weft__mem_alloc(W, f->cap);
  if (!f->buf) {
    f->cap = 0;
    rf_free(f);
    return NULL;
  }
  return f;
}

static void rf_run(void *d) {
  rfile *f = d;
  if (f->err || f->lent) return;
  FILE *fp = fopen(f->real, "rb");
  if (!fp) {
    f->err = errno;
    return;
  }
  size_t n;
  while (f->len < f->cap && (n = fread(f->buf + f->len, 1, f->cap - f->len, fp)) > 0) f->len += n;
  if (ferror(fp)) f->err = EIO;
  f->grew = f->len == f->cap;
  fclose(fp);
}

static int rf_finish(lua_State *L, void *d) {
  rfile *f = d;
  if (f->err == EISDIR) {
    lua_pushfstring(L, "cannot read %s: not a regular file", f->path);
    return -1;
  }
  if (f->err == EFBIG) {
    lua_pushfstring(L, "cannot read %s: larger than the memory limit", f->path);
    return -1;
  }
  if (f->err == EACCES && !f->real) {
    lua_pushfstring(L, "cannot read %s: a symbolic link leads outside the root", f->path);
    return -1;
  }
  if (f->err == ENOENT && f->W->desc.load_asset) {
    lua_pushfstring(L, "cannot read %s: no such asset", f->path);
    return -1;
  }
  if (f->err) {
    lua_pushfstring(L, "cannot read %s: %s", f->path, strerror(f->err));
    return -1;
  }
  if (f->grew) {
    lua_pushfstring(L, "cannot read %s: it changed while it was read", f->path);
    return -1;
  }
  lua_pushlstring(L, f->buf, f->len);
  return 1;
}

/* ---- find_path: shortest 4-way path on a grid of strings ---- */

typedef struct gpath {
  weft_state *W;
  int w, h, sx, sy, gx, gy;
  char *grid; /* w*h, 1 = wall */
  int *prev;  /* w*h: the search's links */
  int *queue; /* w*h: the search's frontier */
  int *path;  /* w*h: cell indices from start to goal */
  int plen;   /* -1: unreachable */
} gpath;

static void fp_free(void *d) {
  gpath *g = d;
  size_t n = (size_t)g->w * (size_t)g->h;
  weft__mem_free(g->W, g->grid, n);
  weft__mem_free(g->W, g->prev, n * sizeof(int));
  weft__mem_free(g->W, g->queue, n * sizeof(int));
  weft__mem_free(g->W, g->path, n * sizeof(int));
  weft__mem_free(g->W, g, sizeof *g);
}

static void *fp_prepare(lua_State *L, int first, int n, void *user) {
  weft_state *W = user;
  (void)n;
  luaL_checktype(L, first, LUA_TTABLE);
  int h = (int)lua_rawlen(L, first), w = 0;
  if (h <= 0 || h > 4096) luaL_argerror(L, first, "rows: a list of 1 to 4096 strings");
  for (int y = 1; y <= h; y++) {
    lua_rawgeti(L, first, y);
    size_t len;
    if (!lua_isstring(L, -1)) luaL_argerror(L, first, "rows must be strings");
    lua_tolstring(L, -1, &len);
    if ((int)len > w) w = (int)len;
    lua_pop(L, 1);
  }
  if (w <= 0 || w > 4096) luaL_argerror(L, first, "rows: 1 to 4096 columns");
  int c[4];
  for (int i = 0; i < 4; i++) {
    lua_Integer v = luaL_checkinteger(L, first + 1 + i);
    if (v < 1 || v > ((i % 2 == 0) ? w : h)) luaL_argerror(L, first + 1 + i, "outside the grid");
    c[i] = (int)v - 1;
  }
  gpath *g = weft__mem_calloc(W, 1, sizeof *g);
  if (!g) return NULL;
  g->W = W;
  g->w = w;
  g->h = h;
  size_t cells = (size_t)w * (size_t)h;
  g->grid = weft__mem_alloc(W, cells);
  g->prev = weft__mem_alloc(W, cells * sizeof(int));
  g->queue = weft__mem_alloc(W, cells * sizeof(int));
  g->path = weft__mem_alloc(W, cells * sizeof(int));
  if (!g->grid || !g->prev || !g->queue || !g->path) {
    fp_free(g);
    return NULL;
  }
  g->sx = c[0];
  g->sy = c[1];
  g->gx = c[2];
  g->gy = c[3];
  for (int y = 0; y < h; y++) {
    lua_rawgeti(L, first, y + 1);
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    for (int x = 0; x < w; x++) g->grid[y * w + x] = (x >= (int)len || s[x] == '#');
    lua_pop(L, 1);
  }
  return g;
}

static void fp_run(void *d) {
  gpath *g = d;
  int n = g->w * g->h, start = g->sy * g->w + g->sx, goal = g->gy * g->w + g->gx;
  int *prev = g->prev, *queue = g->queue;
  g->plen = -1;
  if (g->grid[start] || g->grid[goal]) return;
  for (int i = 0; i < n; i++) prev[i] = -2;
  int qh = 0, qt = 0;
  queue[qt++] = start;
  prev[start] = -1;
  static const int dx[4] = {1, -1, 0, 0}, dy[4] = {0, 0, 1, -1};
  while (qh < qt && prev[goal] == -2) {
    int cell = queue[qh++], x = cell % g->w, y = cell / g->w;
    for (int k = 0; k < 4; k++) {
      int nx = x + dx[k], ny = y + dy[k];
      if (nx < 0 || ny < 0 || nx >= g->w || ny >= g->h) continue;
      int nc = ny * g->w + nx;
      if (g->grid[nc] || prev[nc] != -2) continue;
      prev[nc] = cell;
      queue[qt++] = nc;
    }
  }
  if (prev[goal] != -2) {
    int len = 0;
    for (int c = goal; c != -1; c = prev[c]) len++;
    g->plen = len;
    int i = len;
    for (int c = goal; c != -1; c = prev[c]) g->path[--i] = c;
  }
}

static int fp_finish(lua_State *L, void *d) {
  gpath *g = d;
  if (g->plen < 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, g->plen, 0);
  for (int i = 0; i < g->plen; i++) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, g->path[i] % g->w + 1);
    lua_setfield(L, -2, "x");
    lua_pushinteger(L, g->path[i] / g->w + 1);
    lua_setfield(L, -2, "y");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

void weft__open_jobs(weft_state *W, lua_State *L) {
  weft_job_kind rf = WEFT_JOB_KIND_INIT("read_file", rf_prepare, rf_run, rf_finish, rf_free, W);
  weft_job_kind fp = WEFT_JOB_KIND_INIT("find_path", fp_prepare, fp_run, fp_finish, fp_free, W);
  weft_register_job(W, &rf);
  weft_register_job(W, &fp);
  lua_pushcfunction(L, l_job);
  lua_setfield(L, -2, "job");
}
