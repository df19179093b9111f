/* Scripts are read through the embedder's loader; the default one reads
   the regular files under the scripts root. Every path a script names is
   placed under a root here: by its letters first (a loader sees only
   clean relative paths), then, for the files weft reads itself, by the
   file system (symbolic links may not lead out of a root). */
#include "load.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "../../host/plat.h"
#include "internal.h"
#include "log.h"

#define LOADED_MT "weft.loaded"

/* ---- paths by their letters ---- */

#ifdef _WIN32
#define IS_SEP(c) ((c) == '/' || (c) == '\\')
#else
#define IS_SEP(c) ((c) == '/')
#endif

/* Folds the n bytes at p into out (n + 1 bytes): empty and "." parts go,
   ".." takes the part before it, or stays at the start of a relative
   path (at the start of an absolute one it goes, as "/.." is "/"). Parts
   are joined with '/'. Returns the length; *abs: p starts at the top. */
static size_t fold(const char *p, size_t n, char *out, int *abs) {
  size_t o = 0, i = 0;
  *abs = n > 0 && IS_SEP(p[0]);
  if (*abs) out[o++] = '/';
  size_t base = o, keep = o; /* where parts start; the end of leading ".." */
  while (i < n) {
    while (i < n && IS_SEP(p[i])) i++;
    size_t s = i;
    while (i < n && !IS_SEP(p[i])) i++;
    size_t len = i - s;
    if (len == 0 || (len == 1 && p[s] == '.')) continue;
    if (len == 2 && p[s] == '.' && p[s + 1] == '.') {
      if (o > keep) { /* drop the last part and its separator */
        while (o > keep && out[o - 1] != '/') o--;
        if (o > keep) o--;
        continue;
      }
      if (*abs) continue;
    }
    if (o > base) out[o++] = '/';
    memcpy(out + o, p + s, len);
    o += len;
    if (len == 2 && p[s] == '.' && p[s + 1] == '.') keep = o;
  }
  out[o] = 0;
  return o;
}

/* Whether folded path p (pn bytes, abs) lies under folded root r (rn
   bytes, rabs), with a part of its own below it: 1 and *at, the offset
   of the path under the root. */
static int under(const char *p, size_t pn, int abs, const char *r, size_t rn, int rabs,
                 size_t *at) {
  if (abs != rabs) return 0;
  if (rn == 0) { /* the working directory: a relative path that stays in it */
    *at = 0;
    return pn > 0 && !(p[0] == '.' && p[1] == '.' && (pn == 2 || p[2] == '/'));
  }
  *at = rn == 1 && r[0] == '/' ? 1 : rn + 1; /* the top of the file system, or r/ */
  return pn > *at && memcmp(p, r, *at - 1) == 0 && p[*at - 1] == '/';
}

int weft__path_place(lua_State *L, const char *path, size_t len, int roots) {
  weft_state *W = weft__get(L);
  if (memchr(path, 0, len)) return 0;
  const char *top[2] = {W->root, W->assets};
  size_t rlen[2] = {strlen(W->root), strlen(W->assets)};
  size_t cap = len + 1 + (rlen[0] > rlen[1] ? rlen[0] : rlen[1]) + 1;
  char *p = lua_newuserdatauv(L, cap, 0), *r = p + len + 1;
  int abs, rabs;
  size_t pn = fold(path, len, p, &abs), at;
  for (int i = 0; i < 2; i++) {
    if (!(roots & (1 << i))) continue;
    size_t rn = fold(top[i], rlen[i], r, &rabs);
    if (!under(p, pn, abs, r, rn, rabs, &at)) continue;
#ifdef _WIN32
    if (strchr(p + at, ':')) continue; /* a drive or a stream: no plain part */
#endif
    lua_pushlstring(L, p + at, pn - at);
    lua_remove(L, -2);
    return 1 << i;
  }
  lua_pop(L, 1);
  return 0;
}

/* ---- paths by the file system ---- */

#define OUTSIDE "a symbolic link leads outside the root"

/* The resolved path is the one read after, so a link changed in between
   is not followed (only a directory on the way swapped for a link in
   that instant could be, and scripts make no links). */
const char *weft__path_confine(weft_state *W, const char *root, const char *path, char *real) {
  char dir[WEFT_PATH_MAX];
  if (weft__path_resolve(path, real, WEFT_PATH_MAX) != WEFT_OK ||
      weft__path_resolve(root, dir, sizeof dir) != WEFT_OK) {
    W->load_why = strerror(ENOENT);
    W->load_errno = ENOENT;
    return NULL;
  }
  size_t n = strlen(dir);
  if (n > 0 && dir[n - 1] == '/') n--; /* a root at the top of a drive ("/", "C:/") */
  if (strncmp(real, dir, n) != 0 || real[n] != '/') {
    W->load_why = OUTSIDE;
    W->load_errno = EACCES;
    return NULL;
  }
  return real;
}

/* Reads the regular file at path into a block from the state's
   allocator; NULL (why set) when it is missing, outside root (unless
   root is NULL: a file the host named), not a regular file (a FIFO
   would block the frame), larger than the Lua heap may hold, or
   unreadable. */
static void *read_path(weft_state *W, const char *root, const char *path, size_t *size) {
  char real[WEFT_PATH_MAX];
  if (root && !(path = weft__path_confine(W, root, path, real))) return NULL;
  weft_stat st;
  int rc = weft__stat_path(path, &st);
  if (rc != WEFT_OK) { /* the C library's words, as Lua's io.open gives them */
    W->load_why = strerror(rc == WEFT_EINVAL ? ENOENT : EIO);
    W->load_errno = rc == WEFT_EINVAL ? ENOENT : EIO;
    return NULL;
  }
  W->load_errno = EIO;
  if (!st.is_file) {
    W->load_why = "not a regular file";
    weft__logf(W, WEFT_LOG_WARN, WEFT_LOG_SCRIPT_SKIPPED, "%s is not a regular file: not read",
               path);
    return NULL;
  }
  if ((unsigned long long)st.size > W->desc.memory_limit) {
    W->load_why = "larger than the memory limit";
    weft__logf(W, WEFT_LOG_WARN, WEFT_LOG_SCRIPT_SKIPPED,
               "%s is larger than the memory limit (%.0f bytes): not read", path,
               (double)W->desc.memory_limit);
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    W->load_errno = errno;
    W->load_why = strerror(errno);
    return NULL;
  }
  size_t cap = st.size > 0 ? (size_t)st.size : 1, n = 0;
  char *buf = W->mem.alloc(W->mem.ud, NULL, 0, cap);
  while (buf) { /* the file may have grown since stat */
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap || ferror(f) || feof(f)) break;
    int c = fgetc(f);
    if (c == EOF) break;
    size_t ncap = cap * 2;
    char *nb = ncap <= W->desc.memory_limit ? W->mem.alloc(W->mem.ud, buf, cap, ncap) : NULL;
    if (!nb) {
      W->mem.alloc(W->mem.ud, buf, cap, 0);
      buf = NULL;
      break;
    }
    buf = nb;
    buf[n++] = (char)c;
    cap = ncap;
  }
  int bad = ferror(f);
  fclose(f);
  if (buf && bad) {
    W->mem.alloc(W->mem.ud, buf, cap, 0);
    buf = NULL;
  }
  if (!buf) {
    W->load_why = bad ? "read error" : "not enough memory";
    return NULL;
  }
  if ((n ? n : 1) < cap) { /* shrunk since stat: a block is freed with its size */
    char *nb = W->mem.alloc(W->mem.ud, buf, cap, n ? n : 1);
    if (!nb) {
      W->mem.alloc(W->mem.ud, buf, cap, 0);
      W->load_why = "not enough memory";
      return NULL;
    }
    buf = nb;
  }
  *size = n;
  return buf;
}

/* The default loader: ud is the state. */
static void *file_load(void *ud, const char *rel, size_t *size) {
  weft_state *W = ud;
  char *full = weft__mem_join(W, W->root, rel);
  if (!full) {
    W->load_why = "not enough memory";
    W->load_errno = ENOMEM;
    return NULL;
  }
  void *p = read_path(W, W->root, full, size);
  weft__mem_free_str(W, full);
  return p;
}

void weft__load_init(weft_state *W) {
  if (!W->desc.load) {
    W->desc.load = file_load;
    W->desc.load_ud = W;
  }
}

/* The loader's block, held by a userdata until it is copied into a Lua
   string, so that a memory error in between frees it (__gc). */
typedef struct loaded {
  weft_state *W;
  void *p;
  size_t n;
} loaded;

static void loaded_free(loaded *b) {
  if (b->p) b->W->mem.alloc(b->W->mem.ud, b->p, b->n ? b->n : 1, 0);
  b->p = NULL;
}

static int l_loaded_gc(lua_State *L) {
  loaded_free(lua_touserdata(L, 1));
  return 0;
}

static loaded *push_block(lua_State *L, weft_state *W) {
  loaded *b = lua_newuserdatauv(L, sizeof *b, 0);
  *b = (loaded){W, NULL, 0};
  if (luaL_newmetatable(L, LOADED_MT)) {
    lua_pushcfunction(L, l_loaded_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return b;
}

int weft__push_why(lua_State *L, int idx, const char *path) {
  size_t len, pre = strlen("cannot open ") + strlen(path) + 2;
  const char *msg = lua_tolstring(L, idx, &len);
  if (msg && len > pre && msg[len - 1] == ')' && strncmp(msg, "cannot open ", 12) == 0 &&
      strncmp(msg + 12, path, strlen(path)) == 0 && strncmp(msg + pre - 2, " (", 2) == 0)
    lua_pushlstring(L, msg + pre, len - pre - 1);
  else
    lua_pushstring(L, msg ? msg : "unreadable");
  const char *why = lua_tostring(L, -1);
  if (strcmp(why, strerror(ENOENT)) == 0 || strcmp(why, "no such script") == 0 ||
      strcmp(why, "no such asset") == 0)
    return ENOENT;
  if (strcmp(why, OUTSIDE) == 0 || strcmp(why, strerror(EACCES)) == 0) return EACCES;
  return EIO;
}

/* Leaves the text (1) or the message (0) at base + 1, above nothing. */
static int settle(lua_State *L, int base, int ok) {
  lua_replace(L, base + 1);
  lua_settop(L, base + 1);
  return ok;
}

int weft__push_script(lua_State *L, const char *path) {
  weft_state *W = weft__get(L);
  int base = lua_gettop(L);
  const char *rel =
      weft__path_place(L, path, strlen(path), WEFT_IN_SCRIPTS) ? lua_tostring(L, -1) : NULL;
  loaded *b = push_block(L, W);
  W->load_why = NULL;
  W->load_errno = 0;
  size_t n = 0;
  void *p;
  if (!rel && W->desc.load == file_load)
    p = read_path(W, NULL, path, &n); /* a file the host named, outside the root */
  else
    p = W->desc.load(W->desc.load_ud, rel ? rel : path, &n);
  b->p = p;
  b->n = n;
  if (!p) {
    if (!W->load_errno) W->load_errno = ENOENT;
    lua_pushfstring(L, "cannot open %s (%s)", path, W->load_why ? W->load_why : "no such script");
    return settle(L, base, 0);
  }
  lua_pushlstring(L, p, n);
  loaded_free(b);
  return settle(L, base, 1);
}

int weft__push_file(lua_State *L, const char *path) {
  weft_state *W = weft__get(L);
  loaded *b = push_block(L, W);
  W->load_why = NULL;
  W->load_errno = 0;
  size_t k = strlen(W->assets);
  if (W->desc.load_asset) { /* the engine's files: given the path under the root */
    const char *rel = strncmp(path, W->assets, k) == 0 && path[k] == '/' ? path + k + 1 : path;
    b->p = W->desc.load_asset(W->desc.load_ud, rel, &b->n);
    if (!b->p) {
      W->load_why = "no such asset";
      W->load_errno = ENOENT;
    }
  } else {
    b->p = read_path(W, W->assets, path, &b->n);
  }
  if (!b->p) {
    lua_pop(L, 1);
    lua_pushfstring(L, "cannot open %s (%s)", path, W->load_why ? W->load_why : "unreadable");
    return 0;
  }
  lua_pushlstring(L, b->p, b->n);
  loaded_free(b);
  lua_remove(L, -2);
  return 1;
}
