/* libFuzzer target: arbitrary script text run against the whole API on a
   virtual clock with small budgets. Any crash, sanitizer report or leak is
   a bug; script errors are expected and ignored. */
#include <stddef.h>
#include <stdint.h>

#include "../../bindings/weft.h"

static void quiet_log(void *user, const char *line, size_t len) {
  (void)len;
  (void)user;
  (void)line;
}

static void quiet_report(void *user, const char *msg, const char *trace) {
  (void)user;
  (void)msg;
  (void)trace;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weft_desc d = WEFT_DESC_INIT;
  d.memory_limit = (size_t)16 << 20;
  d.instr_budget = 20000;
  d.time_budget_us = WEFT_BUDGET_COUNTED; /* an input runs the same every time */
  d.max_tasks = 2000;
  d.runaway_us = 20000; /* a loop is killed after 4e6 instructions, not 2e8 */
  d.job_threads = 2;
  d.scripts_root = "tests/fuzz/seeds";
  d.log = quiet_log;
  d.report = quiet_report;
  weft_state *W = weft_open(&d);
  if (!W) return 0;
  weft_task task;
  const char *err;
  if (weft_run_string(W, "=fuzz", (const char *)data, size, &task, &err) == WEFT_OK) {
    for (int frame = 0; frame < 120 && weft_task_result(W, task) == 0; frame++)
      weft_step(W, 1.0 / 60);
    weft_task_drop(W, task);
  }
  if (weft_close(W) != 0) __builtin_trap(); /* a leak at shutdown is a bug */
  return 0;
}
