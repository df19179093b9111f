/* libFuzzer target: any bytes as a recording. The checksum of an input
   that ends in a trailer is set right first, so the fuzzer reaches the
   records behind it. A recording that loads is replayed on a fresh state
   (its main script "fz.lua" served from it, or not) for up to 200
   frames, input and hashes read as an embedder would. Refusals are
   expected; a crash, a sanitizer report, a hang or a leak is a finding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bindings/base/tapefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t fnv32(const unsigned char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
  return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  if (size >= 22 && buf[size - 14] == 'E' && buf[size - 13] == 12) {
    uint32_t sum = fnv32(buf, size - 4);
    for (int i = 0; i < 4; i++) buf[size - 4 + i] = (unsigned char)(sum >> (8 * i));
  }
  weft_tape *T;
  char err[256];
  if (weft__tape_parse(buf, size, "fuzz", &T, err, sizeof err) != WEFT_OK) return 0;
  /* The replayer's own limits, as a program's flags set them: a
     recording asking for looser ones replays under these (weft_tape_desc). */
  weft_desc d = WEFT_DESC_INIT;
  d.memory_limit = (size_t)64 << 20;
  d.max_tasks = 5000;
  d.runaway_us = 200000;
  d.instr_budget = 100000;
  weft_tape_desc(T, &d);
  d.job_threads = WEFT_JOBS_INLINE;
  weft_state *W = weft_open(&d);
  if (!W) {
    weft_tape_free(T);
    return 0;
  }
  if (weft_replay(W, T) != WEFT_OK) {
    weft_tape_free(T);
    weft_close(W);
    return 0;
  }
  weft_task t = {0};
  const char *e;
  char path[600];
  snprintf(path, sizeof path, "%s/fz.lua", d.scripts_root);
  weft_run_file(W, path, &t, &e);
  double dt;
  for (int i = 0; i < 200 && weft_replay_frame(W, &dt); i++) {
    const void *in;
    size_t n;
    while (weft_replay_input(W, &in, &n)) weft_tape_hash(W, "input", in, n);
    weft_step(W, dt);
  }
  weft_replay_check(W, err, sizeof err);
  if (t.id) weft_task_drop(W, t);
  if (weft_close(W) != 0) abort(); /* a leak */
  return 0;
}
