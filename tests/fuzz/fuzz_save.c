/* libFuzzer target: any bytes as a save of the whole world (weft_load):
   the Lua graph (base/persist.h), then the scheduler, signals and
   channels, cold records, spawn sites and costs. Both checksums of an
   input that starts with a save's header are set right first (the
   persister's, of the graph, then the file's, of the body), and the
   lengths when their low bit is clear, so the fuzzer reaches every part
   behind them; so is the graph's string hash seed when its low bit is
   clear. A save that loads is stepped 60 frames, then the state is
   closed (its tasks cancelled, their cleanups run); a refused one is
   closed at once. Refusals are expected; a crash, a sanitizer report
   (LeakSanitizer's too), a hang, or a loaded state that leaks (weft_close
   returning non-zero: objects still live in its pools) is a finding. A
   refused load may leave objects in the pools that nothing holds (the
   save's, half read); closing frees them, and counts them.

   With WEFT_FUZZ_SEEDS=DIR set, it first writes into DIR saves of the
   programs of tests/save (timers, signals, channels, futures, groups,
   finalizers, jobs) and of programs tests/save/gen.lua writes, each at a
   few frames, made through the library as an engine makes them (make
   fuzz-save does); with WEFT_FUZZ_VERBOSE set, it says what became of
   each input. Run from the repository's root. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bindings/base/persist_crc.h"
#include "../../bindings/weft.h"
#include "lstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define DT (1.0 / 60)
#define HEAD 28  /* "WEFTSAVE", format, fingerprint, the body's length (8), its CRC */
#define PHEAD 32 /* the graph's: see persist_fmt.h */

static void quiet_report(void *user, const char *msg, const char *trace) {
  (void)user;
  (void)msg;
  (void)trace;
}

static void quiet_logger(void *user, const char *tag, uint32_t level, uint32_t id, const char *msg,
                         const char *file, uint32_t line) {
  (void)user, (void)tag, (void)level, (void)id, (void)msg, (void)file, (void)line;
}

/* What print writes, kept when the logger's user is a buffer (the text
   gen.lua writes), else dropped. */
typedef struct text {
  char *p;
  size_t n, cap;
} text;

static void keep_log(void *user, const char *line, size_t len) {
  text *t = user;
  if (!t) return;
  if (t->n + len + 2 > t->cap) {
    size_t cap = (t->n + len + 2) * 2;
    char *p = realloc(t->p, cap);
    if (!p) return;
    t->p = p;
    t->cap = cap;
  }
  memcpy(t->p + t->n, line, len);
  t->n += len;
  t->p[t->n++] = '\n';
  t->p[t->n] = 0;
}

/* A state as every input is loaded into: small limits, budgets counted
   (an input runs the same every time), jobs run on this thread. */
static weft_state *open_state(text *log) {
  weft_desc d = WEFT_DESC_INIT;
  d.memory_limit = (size_t)32 << 20;
  d.instr_budget = 20000;
  d.time_budget_us = WEFT_BUDGET_COUNTED;
  d.max_tasks = 2000;
  d.runaway_us = 20000;
  d.job_threads = WEFT_JOBS_INLINE;
  d.frame_budget = 0;
  d.scripts_root = "tests/save";
  d.logger = quiet_logger;
  d.log = keep_log;
  d.report = quiet_report;
  d.user = log;
  return weft_open(&d);
}

/* ---- seeds ---- */

typedef struct buf {
  unsigned char *p;
  size_t n;
} buf;

static int take(void *ud, const void *p, size_t n) {
  buf *b = ud;
  b->p = malloc(n ? n : 1);
  if (!b->p) return 0;
  memcpy(b->p, p, n);
  b->n = n;
  return 1;
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *p = NULL;
  size_t cap = 0;
  *n = 0;
  for (;;) {
    if (*n == cap) {
      char *q = realloc(p, cap = cap ? cap * 2 : 4096);
      if (!q) break;
      p = q;
    }
    size_t k = fread(p + *n, 1, cap - *n, f);
    *n += k;
    if (k == 0) break;
  }
  fclose(f);
  return p;
}

/* Runs src (named name) and saves it after each of the frames (a
   growing list ending in 0) into DIR/NAME-FRAME.save. */
static void seed(const char *dir, const char *name, const char *src, size_t len,
                 const int *frames) {
  weft_state *W = open_state(NULL);
  if (!W) return;
  weft_task task;
  const char *err = NULL;
  char chunk[128];
  snprintf(chunk, sizeof chunk, "@%s", name);
  if (weft_run_string(W, chunk, src, len, &task, &err) != WEFT_OK) {
    fprintf(stderr, "fuzz_save: %s: %s\n", name, err ? err : "does not run");
    weft_close(W);
    return;
  }
  int frame = 0;
  for (const int *at = frames; *at; at++) {
    while (frame < *at) {
      weft_step(W, DT);
      frame++;
    }
    buf b = {NULL, 0};
    if (weft_save(W, take, &b, &err) != WEFT_OK) {
      fprintf(stderr, "fuzz_save: %s at frame %d: %s\n", name, frame, err ? err : "no save");
      continue;
    }
    char path[512];
    const char *base = strrchr(name, '/');
    snprintf(path, sizeof path, "%s/%s-%d.save", dir, base ? base + 1 : name, frame);
    FILE *f = fopen(path, "wb");
    if (f) {
      fwrite(b.p, 1, b.n, f);
      fclose(f);
    }
    free(b.p);
  }
  weft_task_drop(W, task);
  weft_close(W);
}

/* The program tests/save/gen.lua writes for seed s, in *n bytes (NULL:
   none). */
static char *generated(int s, size_t *n) {
  text t = {NULL, 0, 0};
  weft_state *W = open_state(&t);
  if (!W) return NULL;
  char arg[16];
  snprintf(arg, sizeof arg, "%d", s);
  const char *argv[] = {arg};
  weft_task task;
  const char *err;
  if (weft_run_file_args(W, "tests/save/gen.lua", 1, argv, &task, &err) == WEFT_OK) {
    for (int f = 0; f < 10 && weft_task_result(W, task) == WEFT_RUNNING; f++) weft_step(W, DT);
    weft_task_drop(W, task);
  }
  weft_close(W);
  *n = t.n;
  return t.p;
}

static void write_seeds(const char *dir) {
  static const char *const programs[] = {"timers.lua", "waitables.lua",  "groups.lua",
                                         "state.lua",  "finalizers.lua", "jobs.lua"};
  static const int frames[] = {1, 4, 13, 40, 0};
  for (size_t i = 0; i < sizeof programs / sizeof *programs; i++) {
    char path[256];
    snprintf(path, sizeof path, "tests/save/%s", programs[i]);
    size_t n;
    char *src = read_file(path, &n);
    if (!src) {
      fprintf(stderr, "fuzz_save: cannot read %s (run from the repository's root)\n", path);
      continue;
    }
    seed(dir, path, src, n, frames);
    free(src);
  }
  static const int once[] = {7, 0};
  for (int s = 1; s <= 12; s++) {
    size_t n;
    char *src = generated(s, &n);
    if (!src) continue;
    char name[64];
    snprintf(name, sizeof name, "gen%d.lua", s);
    seed(dir, name, src, n, once);
    free(src);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *dir = getenv("WEFT_FUZZ_SEEDS");
  if (dir) write_seeds(dir);
  return 0;
}

/* ---- an input ---- */

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Sets the checksums of a save in p right (the lengths and the seed too
   when their low bit is clear); seed: this build's string hash seed. */
static void reseal(unsigned char *p, size_t size, uint32_t seed) {
  if (size < HEAD + 8 || memcmp(p, "WEFTSAVE", 8) != 0) return;
  if (!(p[16] & 1)) put64(p + 16, size - HEAD);
  uint64_t n = get64(p + HEAD);
  unsigned char *g = p + HEAD + 8;
  if (n >= PHEAD && n <= size - HEAD - 8 && memcmp(g, "WEFTSAVE", 8) == 0) {
    if (!(g[20] & 1)) put32(g + 20, seed);
    if (!(g[24] & 1)) put32(g + 24, (uint32_t)(n - PHEAD));
    put32(g + 28, weft__persist_crc(weft__persist_crc(0, g, 28), g + PHEAD, n - PHEAD));
  }
  put32(p + 24, weft__persist_crc(0, p + HEAD, size - HEAD));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weft_state *W = open_state(NULL);
  if (!W) return 0;
  unsigned char *p = malloc(size ? size : 1);
  if (!p) abort();
  memcpy(p, data, size);
  reseal(p, size, G(weft_lua(W))->seed);
  const char *err = NULL;
  int rc = weft_load(W, p, size, &err);
  if (getenv("WEFT_FUZZ_VERBOSE")) /* to see how far inputs get */
    fprintf(stderr, "%s\n", rc == WEFT_OK ? "loaded" : err ? err : "refused");
  if (rc == WEFT_OK)
    for (int f = 0; f < 60; f++) weft_step(W, DT);
  free(p);
  if (weft_close(W) != 0 && rc == WEFT_OK) __builtin_trap(); /* a leak at shutdown is a bug */
  return 0;
}
