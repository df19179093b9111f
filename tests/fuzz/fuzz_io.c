/* libFuzzer target: io's file methods on files under the scripts root.
   Each 10 bytes of input are one call on the open file (a read of a
   count or a format, a seek from any whence by any 64-bit offset, lines,
   a reopen of one of a few paths, a close), the integers taken whole from
   the input so the extremes come often; the calls are written as a
   script, each in a pcall, and run. A crash, a sanitizer report, a hang
   or a leak is a finding; errors are expected. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bindings/weft.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet_log(void *user, const char *line, size_t len) {
  (void)user, (void)line, (void)len;
}
static void quiet_report(void *user, const char *msg, const char *trace) {
  (void)user, (void)msg, (void)trace;
}

static int64_t i64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  static const int64_t special[] = {INT64_MAX, INT64_MIN,     -1,           0, 1,
                                    4096,      INT64_MAX - 1, INT64_MIN + 1};
  return p[0] < 64 ? special[p[1] % 8] : (int64_t)v; /* the extremes a quarter of the time */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const fmts[] = {"l", "L", "a", "n", "*l", "*a", "x", "", "0", "1e9"};
  static const char *const whence[] = {"set", "cur", "end", "bad"};
  static const char *const paths[] = {
      "tests/fuzz/seeds/tasks.lua", "tests/fuzz/seeds/hostile.lua",   "tests/fuzz/seeds/",
      "tests/fuzz/seeds/../x",      "tests/fuzz/seeds//etc/hostname", "tests/fuzz/nope.lua"};
  size_t cap = 64 + size / 10 * 96;
  char *src = malloc(cap), *p = src;
  if (!src) return 0;
  p += sprintf(p, "local f = io.open('tests/fuzz/seeds/tasks.lua')\n");
  for (size_t at = 0; at + 10 <= size && at < 10 * 200; at += 10) {
    const uint8_t *r = data + at;
    int64_t n = i64(r + 2);
    switch (r[0] % 6) {
    case 0:
      p += sprintf(p, "pcall(function() return f:read(%" PRId64 ") end)\n", n);
      break;
    case 1:
      p += sprintf(p, "pcall(function() return f:read('%s', '%s') end)\n", fmts[r[1] % 10],
                   fmts[r[2] % 10]);
      break;
    case 2:
      p += sprintf(p, "pcall(function() return f:seek('%s', %" PRId64 ") end)\n", whence[r[1] % 4],
                   n);
      break;
    case 3:
      p += sprintf(p, "pcall(function() for l in f:lines('%s') do break end end)\n",
                   fmts[r[1] % 10]);
      break;
    case 4:
      p += sprintf(p, "f = io.open('%s') or f\n", paths[r[1] % 6]);
      break;
    default:
      p += sprintf(p, "pcall(function() return f:close() end)\n");
    }
  }
  weft_desc d = WEFT_DESC_INIT;
  d.memory_limit = (size_t)32 << 20;
  d.time_budget_us = WEFT_BUDGET_COUNTED;
  d.runaway_us = 20000;
  d.scripts_root = "tests/fuzz/seeds";
  d.assets_root = "tests/fuzz/seeds";
  d.log = quiet_log;
  d.report = quiet_report;
  weft_state *W = weft_open(&d);
  if (W) {
    weft_task t;
    const char *err;
    if (weft_run_string(W, "=fuzz_io", src, (size_t)(p - src), &t, &err) == WEFT_OK)
      weft_task_drop(W, t);
    if (weft_close(W) != 0) __builtin_trap(); /* a leak */
  }
  free(src);
  return 0;
}
