/* Scripts are read through the embedder's loader; the default one reads
   the regular files under the scripts root. */
#include "load.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "../host/plat.h"
#include "internal.h"
#include "log.h"

#define LOADED_MT "weft.loaded"

/* Reads the regular file at path into a block from the state's
   allocator; NULL (why set) when it is missing, not a regular file (a
   FIFO would block the frame), larger than the Lua heap may hold, or
   unreadable. */
static void *read_path(weft_state *W, const char *path, size_t *size) {
  weft_stat st;
  int rc = weft_stat_path(path, &st);
  if (rc != WEFT_OK) { /* the C library's words, as Lua's io.open gives them */
    W->load_why = strerror(rc == WEFT_EINVAL ? ENOENT : EIO);
    return NULL;
  }
  if (!st.is_file) {
    W->load_why = "not a regular file";
    weft_logf(W, WEFT_LOG_WARN, WEFT_LOG_SCRIPT_SKIPPED, "%s is not a regular file: not read",
              path);
    return NULL;
  }
  if ((unsigned long long)st.size > W->desc.memory_limit) {
    W->load_why = "larger than the memory limit";
    weft_logf(W, WEFT_LOG_WARN, WEFT_LOG_SCRIPT_SKIPPED,
              "%s is larger than the memory limit (%.0f bytes): not read", path,
              (double)W->desc.memory_limit);
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
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
  char *full = weft_mem_join(W, W->root, rel);
  if (!full) {
    W->load_why = "not enough memory";
    return NULL;
  }
  void *p = read_path(W, full, size);
  weft_mem_free_str(W, full);
  return p;
}

void weft_load_init(weft_state *W) {
  if (!W->desc.load) {
    W->desc.load = file_load;
    W->desc.load_ud = W;
  }
}

const char *weft_script_relpath(weft_state *W, const char *path) {
  size_t lr = strlen(W->root);
  if (strncmp(path, W->root, lr) == 0 && path[lr] == '/' && path[lr + 1]) return path + lr + 1;
  return NULL;
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

int weft_push_script(lua_State *L, const char *path) {
  weft_state *W = weft_get(L);
  loaded *b = push_block(L, W);
  const char *rel = weft_script_relpath(W, path);
  W->load_why = NULL;
  size_t n = 0;
  void *p;
  if (!rel && W->desc.load == file_load)
    p = read_path(W, path, &n);
  else
    p = W->desc.load(W->desc.load_ud, rel ? rel : path, &n);
  b->p = p;
  b->n = n;
  if (!p) {
    lua_pop(L, 1);
    lua_pushfstring(L, "cannot open %s (%s)", path, W->load_why ? W->load_why : "no such script");
    return 0;
  }
  lua_pushlstring(L, p, n);
  loaded_free(b);
  lua_remove(L, -2);
  return 1;
}

int weft_push_file(lua_State *L, const char *path) {
  weft_state *W = weft_get(L);
  loaded *b = push_block(L, W);
  W->load_why = NULL;
  b->p = read_path(W, path, &b->n);
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
