/* Quicksave, quickload and rewind (see savegame.h). */
#include "savegame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "overlay.h"
#include "render.h"
#include "session.h"
#include "snapshot.h"

#define MAGIC "MOONSAVE"
#define FORMAT 1u
#define HEAD 40               /* the header's bytes */
#define MAX_FILE (512u << 20) /* a save file read whole: this many bytes at most */

typedef struct save_slot {
  unsigned char *p; /* a save as the file holds it; owned */
  size_t n;
  uint64_t frame; /* the frame after which it was taken */
} save_slot;

/* ---- the file: a header, weft's save, the demo's ----
   bytes 0-7 MOONSAVE, 8-11 the format, 12-15 0, 16-23 the length of
   weft's save, 24-31 the length of the demo's (snapshot.h), 32-35 a
   CRC-32 of both, 36-39 0; then weft's save, then the demo's. */

static void put32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *b, uint64_t v) {
  put32(b, (uint32_t)v);
  put32(b + 4, (uint32_t)(v >> 32));
}
static uint32_t get32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t get64(const unsigned char *b) { return get32(b) | (uint64_t)get32(b + 4) << 32; }

/* CRC-32 (IEEE), a table made once. */
static uint32_t crc32_of(uint32_t c, const unsigned char *p, size_t n) {
  static uint32_t table[256];
  if (!table[1])
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t x = i;
      for (int k = 0; k < 8; k++) x = (x >> 1) ^ (0xEDB88320u & (0u - (x & 1u)));
      table[i] = x;
    }
  c = ~c;
  for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

typedef struct outbuf {
  unsigned char *p;
  size_t n;
} outbuf;

/* weft_save's writer: the save after the header room. */
static int take_weft(void *ud, const void *p, size_t n) {
  outbuf *b = ud;
  unsigned char *q = malloc(HEAD + n);
  if (!q) return 0;
  memcpy(q + HEAD, p, n);
  b->p = q;
  b->n = HEAD + n;
  return 1;
}

/* The game saved now (between two frames), as the file holds it: a new
   buffer of *n bytes; NULL with why (MESSAGE_LEN bytes) when it cannot
   be. */
static unsigned char *save_now(game *g, size_t *n, char *why) {
  if (g->rp.recording || g->rp.on) {
    snprintf(why, MESSAGE_LEN, "cannot save: a recording or a replay is running");
    return NULL;
  }
  for (int i = 0; i < CONSOLE_TASKS; i++) /* its task is C's, mid-call: not a value to save */
    if (g->console.running[i].id && weft_task_result(g->W, g->console.running[i]) == WEFT_RUNNING) {
      snprintf(why, MESSAGE_LEN,
               "cannot save: a console line is still running (save once it ends)");
      return NULL;
    }
  outbuf b = {NULL, 0};
  const char *err = NULL;
  if (weft_save(g->W, take_weft, &b, &err) != WEFT_OK) {
    snprintf(why, MESSAGE_LEN, "%s", err ? err : "cannot save");
    free(b.p);
    return NULL;
  }
  size_t dn;
  unsigned char *demo = snapshot_write(g, &dn);
  unsigned char *all = demo ? realloc(b.p, b.n + dn) : NULL;
  if (!all) {
    free(demo);
    free(b.p);
    snprintf(why, MESSAGE_LEN, "cannot save: out of memory");
    return NULL;
  }
  memcpy(all + b.n, demo, dn);
  free(demo);
  memset(all, 0, HEAD);
  memcpy(all, MAGIC, 8);
  put32(all + 8, FORMAT);
  put64(all + 16, b.n - HEAD);
  put64(all + 24, dn);
  put32(all + 32, crc32_of(0, all + HEAD, b.n - HEAD + dn));
  *n = b.n + dn;
  return all;
}

/* The two saves in a file's bytes; -1 with why when it is not one. */
static int split(const unsigned char *p, size_t n, const unsigned char **wp, size_t *wn,
                 const unsigned char **dp, size_t *dn, char *why) {
  const char *bad = NULL;
  if (n < HEAD || memcmp(p, MAGIC, 8) != 0)
    bad = "not a save of weft-demo";
  else if (get32(p + 8) != FORMAT)
    bad = "a save of another version of weft-demo";
  else if (get64(p + 16) > n - HEAD || get64(p + 24) != n - HEAD - get64(p + 16))
    bad = "it is cut short";
  else if (get32(p + 32) != crc32_of(0, p + HEAD, n - HEAD))
    bad = "its checksum does not match (damaged)";
  if (bad) {
    snprintf(why, MESSAGE_LEN, "bad save: %s", bad);
    return -1;
  }
  *wp = p + HEAD;
  *wn = (size_t)get64(p + 16);
  *dp = *wp + *wn;
  *dn = (size_t)get64(p + 24);
  return 0;
}

/* ---- loading ---- */

/* Loads the save's two parts into g->W, a state that has run nothing,
   and checks that they agree; 0, or -1 with why (g->W is then to be
   closed, g untouched). On success s is applied (and freed). */
static int load_into(game *g, const unsigned char *wp, size_t wn, snapshot *s, char *why) {
  const char *err = NULL;
  if (weft_load(g->W, wp, wn, &err) != WEFT_OK) {
    snprintf(why, MESSAGE_LEN, "%s", err ? err : "cannot load");
    return -1;
  }
  if (snapshot_check(s, g->L, why, MESSAGE_LEN) != 0) return -1;
  snapshot_apply(s, g);
  render_forget_level(g);
  return 0;
}

/* Ends the state g holds (its cleanups run on its own world) and frees
   its world. */
static void close_state(game *g) {
  session_close(g);
  if (g->run.test.id) weft_task_drop(g->W, g->run.test);
  for (int i = 0; i < CONSOLE_TASKS; i++)
    if (g->console.running[i].id) weft_task_drop(g->W, g->console.running[i]);
  weft_close(g->W);
  world_free(&g->w);
}

/* Loads the save of n bytes at p in place of the game running: a fresh
   state is opened and loaded beside the running one, which is closed
   only once the new one holds the save. 0, or -1 with why (the game goes
   on as it was). */
static int load_bytes(game *g, const unsigned char *p, size_t n, char *why) {
  const unsigned char *wp, *dp;
  size_t wn, dn;
  if (split(p, n, &wp, &wn, &dp, &dn, why) != 0) return -1;
  if (g->rp.recording || g->rp.on) {
    snprintf(why, MESSAGE_LEN, "cannot load: a recording or a replay is running");
    return -1;
  }
  if (g->run.debugging) {
    snprintf(why, MESSAGE_LEN, "cannot load: a debugger may hold this state (--debug)");
    return -1;
  }
  snapshot *s = snapshot_read(dp, dn, why, MESSAGE_LEN);
  if (!s) return -1;
  /* the game as it runs: what a failed load puts back, and what the
     old state's cleanups run against */
  game *old = malloc(sizeof *old), *now = malloc(sizeof *now);
  if (!old || !now) {
    free(old), free(now), snapshot_free(s);
    snprintf(why, MESSAGE_LEN, "cannot load: out of memory");
    return -1;
  }
  *old = *g;
  g->W = NULL;
  if (g->sv.reopen(g) != 0) {
    snprintf(why, MESSAGE_LEN, "cannot load: cannot open a new state");
    if (g->W) weft_close(g->W);
    *g = *old;
    free(old), free(now), snapshot_free(s);
    return -1;
  }
  world_init(&g->w, g->run.seed); /* the running world stays the old state's */
  if (load_into(g, wp, wn, s, why) != 0) {
    weft_close(g->W);
    world_free(&g->w);
    *g = *old;
    free(old), free(now), snapshot_free(s);
    return -1;
  }
  *now = *g;
  *g = *old;
  close_state(g);
  *g = *now;
  free(old), free(now);
  return 0;
}

/* The whole file at path into a new buffer; NULL with why. */
static unsigned char *read_file(const char *path, size_t *n, char *why) {
  FILE *f = fopen(path, "rb");
  long len = -1;
  unsigned char *p = NULL;
  if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && (size_t)len <= MAX_FILE &&
      fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)len + 1)) &&
      fread(p, 1, (size_t)len, f) == (size_t)len) {
    fclose(f);
    *n = (size_t)len;
    return p;
  }
  snprintf(why, MESSAGE_LEN, "cannot read %.300s: %s", path,
           !f                     ? strerror(errno)
           : len > (long)MAX_FILE ? "too big for a save"
                                  : "read error");
  if (f) fclose(f);
  free(p);
  return NULL;
}

/* Writes n bytes to path through a file beside it, renamed over it once
   whole: a failed write never spoils the save that was there. */
static int write_file(const char *path, const unsigned char *p, size_t n, char *why) {
  char tmp[PATH_LEN + 8];
  snprintf(tmp, sizeof tmp, "%.*s.new", PATH_LEN - 1, path);
  FILE *f = fopen(tmp, "wb");
  int ok = f && fwrite(p, 1, n, f) == n;
  if (f && fclose(f) != 0) ok = 0;
  if (ok && rename(tmp, path) == 0) return 0;
  snprintf(why, MESSAGE_LEN, "cannot save: cannot write %.300s: %s", path, strerror(errno));
  remove(tmp);
  return -1;
}

/* ---- what the keys do ---- */

static double ms_since(Uint64 t0) {
  return (double)(SDL_GetPerformanceCounter() - t0) * 1000.0 /
         (double)SDL_GetPerformanceFrequency();
}

static void note(game *g, int what, int ok, size_t bytes, double ms, const char *why) {
  g->sv.last.what = what;
  g->sv.last.ok = ok;
  g->sv.last.frame = g->run.frame;
  g->sv.last.bytes = bytes;
  g->sv.last.ms = ms;
  snprintf(g->sv.last.why, sizeof g->sv.last.why, "%s", ok ? "" : why);
  if (ok) {
    g->ov.toast_at = g->run.realtime;
    fprintf(stderr, "weft-demo: %s\n", g->ov.toast);
  } else { /* "cannot load weft-demo.save: bad save: ...", "cannot rewind: ..." */
    const char *rest = why;
    if (strncmp(rest, "cannot save: ", 13) == 0 || strncmp(rest, "cannot load: ", 13) == 0)
      rest += 13;
    char msg[MESSAGE_LEN + PATH_LEN];
    if (what == SAVE_LOAD && strncmp(rest, "cannot read", 11) != 0)
      snprintf(msg, sizeof msg, "cannot load %s: %s", g->sv.path, rest);
    else if (what == SAVE_LOAD)
      snprintf(msg, sizeof msg, "%s", rest);
    else
      snprintf(msg, sizeof msg, "cannot %s: %s", what == SAVE_QUICK ? "save" : "rewind", rest);
    fprintf(stderr, "weft-demo: %s\n", msg);
    overlay_save_failed(g, msg, what != SAVE_QUICK);
  }
}

static void quicksave(game *g) {
  char why[MESSAGE_LEN];
  Uint64 t0 = SDL_GetPerformanceCounter();
  size_t n = 0;
  unsigned char *p = save_now(g, &n, why);
  int ok = p && write_file(g->sv.path, p, n, why) == 0;
  double ms = ms_since(t0);
  free(p);
  if (ok)
    snprintf(g->ov.toast, sizeof g->ov.toast, "saved frame %llu to %.100s (%zu KB, %.1f ms)",
             (unsigned long long)g->run.frame, g->sv.path, n / 1024, ms);
  note(g, SAVE_QUICK, ok, n, ms, why);
}

static void quickload(game *g) {
  char why[MESSAGE_LEN];
  Uint64 t0 = SDL_GetPerformanceCounter();
  size_t n = 0;
  unsigned char *p = read_file(g->sv.path, &n, why);
  int ok = p && load_bytes(g, p, n, why) == 0;
  free(p);
  double ms = ms_since(t0);
  if (ok) {
    snprintf(g->ov.toast, sizeof g->ov.toast, "loaded frame %llu from %.100s (%.1f ms)",
             (unsigned long long)g->run.frame, g->sv.path, ms);
    savegame_close(g); /* the ring's saves were of the game before the load */
  }
  note(g, SAVE_LOAD, ok, n, ms, why);
}

/* Backspace: the newest save of the ring at least REWIND_FRAMES old;
   those after it go (they were the future). */
static void rewind_now(game *g) {
  char why[MESSAGE_LEN];
  Uint64 t0 = SDL_GetPerformanceCounter();
  uint64_t want = g->run.frame > REWIND_FRAMES ? g->run.frame - REWIND_FRAMES : 0;
  int k = -1;
  for (int i = 0; i < g->sv.nring; i++)
    if (g->sv.ring[i].frame <= want) k = i;
  int ok = 0;
  if (k < 0 && g->sv.nring == 0)
    snprintf(why, sizeof why, "no save to go back to yet (%.400s)",
             g->sv.ring_why[0] ? g->sv.ring_why : "one is taken every second");
  else if (k < 0)
    snprintf(why, sizeof why, "the oldest save is %.1f s back; rewind goes back 5 s",
             (double)(g->run.frame - g->sv.ring[0].frame) / 60.0);
  else
    ok = load_bytes(g, g->sv.ring[k].p, g->sv.ring[k].n, why) == 0;
  if (ok) {
    for (int i = k + 1; i < g->sv.nring; i++) {
      g->sv.ring_bytes -= g->sv.ring[i].n;
      free(g->sv.ring[i].p);
    }
    g->sv.nring = k + 1;
    snprintf(g->ov.toast, sizeof g->ov.toast, "rewound to frame %llu (%.1f ms)",
             (unsigned long long)g->run.frame, ms_since(t0));
  }
  note(g, SAVE_REWIND, ok, ok ? g->sv.ring[k].n : 0, ms_since(t0), why);
}

/* Every SAVE_EVERY frames: a save into the ring, the oldest dropped
   once it is full. A save that cannot be made (a job in flight while
   the game loads) is skipped; the reason is kept for F2 and Backspace. */
static void ring_save(game *g) {
  if (!g->sv.ring && !(g->sv.ring = calloc(SAVE_RING, sizeof *g->sv.ring))) return;
  Uint64 t0 = SDL_GetPerformanceCounter();
  size_t n = 0;
  unsigned char *p = save_now(g, &n, g->sv.ring_why);
  g->sv.ring_ms = ms_since(t0);
  if (g->sv.ring_ms > g->sv.ring_ms_max) g->sv.ring_ms_max = g->sv.ring_ms;
  overlay_add_draw(g, (float)g->sv.ring_ms); /* the frame graph shows it on this frame */
  if (!p) return;
  g->sv.ring_why[0] = 0;
  if (g->sv.nring == SAVE_RING) {
    g->sv.ring_bytes -= g->sv.ring[0].n;
    free(g->sv.ring[0].p);
    memmove(g->sv.ring, g->sv.ring + 1, sizeof *g->sv.ring * (SAVE_RING - 1));
    g->sv.nring--;
  }
  g->sv.ring[g->sv.nring++] = (save_slot){p, n, g->run.frame};
  g->sv.ring_bytes += n;
}

void savegame_frame(game *g) {
  int what = g->sv.asked;
  g->sv.asked = 0;
  if (what == SAVE_QUICK) quicksave(g);
  if (what == SAVE_LOAD) quickload(g);
  if (what == SAVE_REWIND) rewind_now(g);
  int taken = g->sv.nring && g->sv.ring[g->sv.nring - 1].frame == g->run.frame; /* rewound to it */
  if (g->run.frame % SAVE_EVERY == 0 && !taken && !g->rp.on && !g->rp.recording) ring_save(g);
}

int savegame_start(game *g, const char *path) {
  char why[MESSAGE_LEN];
  size_t n = 0, wn, dn;
  const unsigned char *wp, *dp;
  unsigned char *p = read_file(path, &n, why);
  snapshot *s = NULL;
  int rc = p && split(p, n, &wp, &wn, &dp, &dn, why) == 0 &&
                   (s = snapshot_read(dp, dn, why, sizeof why)) != NULL
               ? load_into(g, wp, wn, s, why)
               : -1;
  if (rc != 0) {
    snapshot_free(s);
    fprintf(stderr, "weft-demo: --load %s: %s\n", path, why);
  } else {
    snprintf(g->ov.toast, sizeof g->ov.toast, "loaded frame %llu from %.100s",
             (unsigned long long)g->run.frame, path);
    g->ov.toast_at = g->run.realtime;
    fprintf(stderr, "weft-demo: %s\n", g->ov.toast);
  }
  free(p);
  return rc;
}

void savegame_close(game *g) {
  for (int i = 0; i < g->sv.nring; i++) free(g->sv.ring[i].p);
  free(g->sv.ring);
  g->sv.ring = NULL;
  g->sv.nring = 0;
  g->sv.ring_bytes = 0;
}
