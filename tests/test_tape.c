/* Tests for record and replay through the public API: a run is recorded
   into a file in a scratch directory, then replayed in a fresh state
   (after its scripts were changed or removed on disk) and must print the
   same lines, deliver the same jobs and input in the same frames, and
   report the first frame whose hash differs. Bad files are refused with
   a message, whatever byte is cut or changed. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lua.h>

#include "../bindings/weft.h"
#include "scratch_dir.h"

#define DT60 (1.0 / 60.0)

typedef struct run {
  char dir[64];      /* scratch directory: scripts/ and the recording */
  char tape[128];    /* the recording's path */
  char out[8192];    /* every printed line */
  char errors[2048]; /* every report */
} run;

static void on_log(void *user, const char *line, size_t len) {
  run *r = user;
  size_t n = strlen(r->out);
  snprintf(r->out + n, sizeof r->out - n, "%.*s\n", (int)len, line);
}

static void on_report(void *user, const char *msg, const char *trace) {
  run *r = user;
  (void)trace;
  size_t n = strlen(r->errors);
  snprintf(r->errors + n, sizeof r->errors - n, "%s\n", msg);
}

static void write_file(const run *r, const char *rel, const char *text) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", r->dir, rel);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int setup(void **state) {
  run *r = calloc(1, sizeof *r);
  snprintf(r->dir, sizeof r->dir, "/tmp/weft-tape-XXXXXX");
  assert_non_null(mkdtemp(r->dir));
  char p[128];
  snprintf(p, sizeof p, "%s/scripts", r->dir);
  mkdir(p, 0755);
  snprintf(r->tape, sizeof r->tape, "%s/run.tape", r->dir);
  *state = r;
  return 0;
}

static int teardown(void **state) {
  run *r = *state;
  rm_tree(r->dir);
  free(r);
  return 0;
}

static weft_desc desc_for(run *r, char *root, size_t n) {
  snprintf(root, n, "%s/scripts", r->dir);
  weft_desc d = WEFT_DESC_INIT;
  d.scripts_root = root;
  d.log = on_log;
  d.report = on_report;
  d.user = r;
  return d;
}

/* Records main.lua for `frames` frames (or until it ends); calls
   each(W, frame) before every frame. */
static void record(run *r, int frames, void (*each)(weft_state *W, int frame)) {
  char root[128], main_lua[160];
  weft_desc d = desc_for(r, root, sizeof root);
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  assert_int_equal(weft_record(W, r->tape, "meta!", 5), WEFT_OK);
  snprintf(main_lua, sizeof main_lua, "%s/main.lua", root);
  weft_task t;
  const char *err;
  assert_int_equal(weft_run_file(W, main_lua, &t, &err), WEFT_OK);
  for (int i = 0; i < frames && weft_task_result(W, t) == WEFT_RUNNING; i++) {
    if (each) each(W, i);
    assert_int_equal(weft_step(W, DT60), WEFT_OK);
  }
  weft_task_drop(W, t);
  assert_int_equal(weft_record_stop(W), WEFT_OK);
  assert_int_equal(weft_close(W), 0);
}

/* Replays the recording; calls before(W) before the script starts and
   each(W, frame) before every frame. Returns
   weft_replay_check's verdict, the difference in diff. */
static int replay(run *r, void (*before)(weft_state *W), void (*each)(weft_state *W, int frame),
                  char *diff, size_t n) {
  weft_tape *T;
  char err[256];
  assert_int_equal(weft_tape_load(r->tape, &T, err, sizeof err), WEFT_OK);
  size_t mlen;
  const char *meta = weft_tape_meta(T, &mlen);
  assert_int_equal(mlen, 5);
  assert_memory_equal(meta, "meta!", 5);
  weft_desc d = WEFT_DESC_INIT;
  d.log = on_log;
  d.report = on_report;
  d.user = r;
  weft_tape_desc(T, &d);
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  assert_int_equal(weft_replay(W, T), WEFT_OK);
  if (before) before(W);
  char main_lua[160];
  snprintf(main_lua, sizeof main_lua, "%s/main.lua", d.scripts_root);
  weft_task t;
  const char *e;
  assert_int_equal(weft_run_file(W, main_lua, &t, &e), WEFT_OK);
  double dt;
  int frame = 0;
  while (weft_replay_frame(W, &dt)) {
    if (each) each(W, frame);
    assert_int_equal(weft_step(W, dt), WEFT_OK);
    frame++;
  }
  int bad = weft_replay_check(W, diff, n);
  weft_task_drop(W, t);
  assert_int_equal(weft_close(W), 0);
  return bad;
}

static const char *const CLOCKS_MAIN =
    "local m = require('lib')\n"
    "print(os.time(), os.clock(), os.date('%c'), math.random(1 << 40))\n"
    "local t = os.date('*t')\n"
    "print(t.year, t.month, t.isdst)\n"
    "for i = 1, 5 do wait(0.05); print(frame(), m.f(), math.random(100)) end\n";

/* What a run read from the world outside its code comes back in a
   replay, even with its scripts changed on disk and another seed. */
/* Records CLOCKS_MAIN (with lib.lua at 'v1'); its output into recorded. */
static void record_clocks(run *r, char *recorded, size_t n) {
  write_file(r, "scripts/main.lua", CLOCKS_MAIN);
  write_file(r, "scripts/lib.lua", "return {f = function() return 'v1' end}\n");
  record(r, 1000, NULL);
  snprintf(recorded, n, "%s", r->out);
  assert_non_null(strstr(recorded, "v1"));
  r->out[0] = 0;
}

static void test_replay_prints_what_the_recording_printed(void **state) {
  run *r = *state;
  char recorded[sizeof r->out];
  record_clocks(r, recorded, sizeof recorded);
  write_file(r, "scripts/lib.lua", "return {f = function() return 'v2' end}\n");
  write_file(r, "scripts/main.lua", "print('edited')\n");
  char diff[256] = "";
  assert_int_equal(replay(r, NULL, NULL, diff, sizeof diff), 0);
  assert_string_equal(r->out, recorded);
  assert_string_equal(r->errors, "");
}

/* The scripts are in the recording: a replay needs none on disk. */
static void test_replay_needs_no_scripts_on_disk(void **state) {
  run *r = *state;
  char recorded[sizeof r->out];
  record_clocks(r, recorded, sizeof recorded);
  char p[160];
  snprintf(p, sizeof p, "%s/scripts/lib.lua", r->dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/scripts/main.lua", r->dir);
  unlink(p);
  assert_int_equal(replay(r, NULL, NULL, NULL, 0), 0);
  assert_string_equal(r->out, recorded);
}

/* A job on the worker threads lands in whatever frame it finished; the
   replay delivers it in that same frame. */
/* A job kind whose work waits until the test opens the gate: where it is
   delivered depends on the worker thread, not on the frame it was asked in. */
static atomic_int gate_open;
static void *gate_prepare(lua_State *L, int first, int n, void *user) {
  (void)L, (void)first, (void)n, (void)user;
  return malloc(1);
}
static void gate_run(void *data) {
  (void)data;
  while (!atomic_load(&gate_open)) sched_yield();
}
static int gate_finish(lua_State *L, void *data) {
  (void)data;
  lua_pushliteral(L, "opened");
  return 1;
}
static void gate_register(weft_state *W) {
  weft_job_kind k = {sizeof(weft_job_kind), "gate", gate_prepare, gate_run,
                     gate_finish,           free,   NULL};
  assert_int_equal(weft_register_job(W, &k), WEFT_OK);
}
static void gate_each(weft_state *W, int frame) {
  if (frame == 0) gate_register(W);
  if (frame == 5) atomic_store(&gate_open, 1);
  sched_yield(); /* the workers run whenever the machine lets them */
}

static void test_jobs_arrive_in_the_recorded_frame(void **state) {
  run *r = *state;
  write_file(r, "scripts/main.lua",
             "wait()\n"
             "local g = job('gate')\n"
             "local p = job('find_path', {'..', '..'}, 1, 1, 2, 2)\n"
             "print('path', wait(p) and frame())\n"
             "print('gate', wait(g), frame())\n");
  atomic_store(&gate_open, 0);
  record(r, 100000000, gate_each); /* until both jobs came back, however loaded the machine */
  char recorded[sizeof r->out];
  snprintf(recorded, sizeof recorded, "%s", r->out);
  int at = 0;
  const char *line = strstr(recorded, "gate\t");
  assert_non_null(line);
  assert_int_equal(sscanf(line, "gate\topened\t%d", &at), 1);
  assert_true(at >= 6); /* asked for on frame 1, delivered once the gate opened (before frame 6) */
  r->out[0] = 0;
  assert_int_equal(replay(r, gate_register, NULL, NULL, 0), 0);
  assert_string_equal(r->out, recorded); /* the same frames, the gate open from the start */
}

/* ---- the embedder's input and hashes ---- */

static void input_each(weft_state *W, int frame) {
  if (frame % 3 == 0) {
    char ev[16];
    int n = snprintf(ev, sizeof ev, "key%d", frame);
    assert_int_equal(weft_record_input(W, ev, (size_t)n), WEFT_OK);
  }
  weft_tape_hash(W, "world", &frame, sizeof frame);
}

static int replayed_inputs;

static void input_check(weft_state *W, int frame) {
  const void *data;
  size_t len;
  int got = 0;
  while (weft_replay_input(W, &data, &len)) {
    char want[16];
    int n = snprintf(want, sizeof want, "key%d", frame);
    assert_int_equal(len, (size_t)n);
    assert_memory_equal(data, want, len);
    got++;
    replayed_inputs++;
  }
  assert_int_equal(got, frame % 3 == 0);
  int h = frame == 7 ? -1 : frame; /* the world differs at the 8th frame */
  weft_tape_hash(W, "world", &h, sizeof h);
}

static void test_input_comes_back_and_the_first_difference_is_named(void **state) {
  run *r = *state;
  write_file(r, "scripts/main.lua", "for i = 1, 20 do wait() end\n");
  record(r, 20, input_each);
  char diff[256] = "";
  replayed_inputs = 0;
  assert_int_equal(replay(r, NULL, input_check, diff, sizeof diff), 1);
  assert_int_equal(replayed_inputs, 7); /* frames 0, 3, ..., 18 */
  assert_string_equal(diff, "frame 8: world differs");
}

static void set_extra(weft_state *W) {
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "EXTRA");
  lua_pop(L, 1);
}

/* A replay whose scripts draw another random number than when recorded
   parts at the frame where it happens, naming the random state. */
static void test_a_script_that_differs_is_caught_at_its_frame(void **state) {
  run *r = *state;
  write_file(r, "scripts/main.lua",
             "for i = 1, 10 do wait(); if i == 4 and EXTRA then math.random() end end\n");
  record(r, 100, NULL);
  /* the same file, but the state a replay runs it in differs */
  char diff[256];
  assert_int_equal(replay(r, set_extra, NULL, diff, sizeof diff), 1);
  assert_string_equal(diff, "frame 4: random differs");
}

/* ---- misuse ---- */

static void test_record_and_replay_refuse_a_state_in_use(void **state) {
  run *r = *state;
  write_file(r, "scripts/main.lua", "wait()\n");
  char root[128];
  weft_desc d = desc_for(r, root, sizeof root);
  weft_state *W = weft_open(&d);
  weft_task t;
  const char *err;
  assert_int_equal(weft_run_string(W, "=x", "wait()", 6, &t, &err), WEFT_OK);
  assert_int_equal(weft_record(W, r->tape, NULL, 0), WEFT_ESTATE);
  assert_int_equal(weft_record_input(W, "x", 1), WEFT_ESTATE);
  weft_task_drop(W, t);
  weft_close(W);
  record(r, 5, NULL);
  weft_tape *T;
  char msg[256];
  assert_int_equal(weft_tape_load(r->tape, &T, msg, sizeof msg), WEFT_OK);
  weft_desc other = desc_for(r, root, sizeof root);
  other.instr_budget = WEFT_BUDGET_OFF; /* looser than the recorded budget */
  W = weft_open(&other);
  assert_int_equal(weft_replay(W, T), WEFT_EINVAL);
  weft_tape_free(T);
  weft_close(W);
  assert_int_equal(weft_record(NULL, r->tape, NULL, 0), WEFT_EINVAL);
  assert_int_equal(weft_record(W = weft_open(&d), "/nonexistent/dir/x.tape", NULL, 0), WEFT_EIO);
  weft_close(W);
}

/* ---- bad files ---- */

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n);
  assert_int_equal(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void spit(const char *path, const unsigned char *b, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* Every changed byte is refused with a message; every cut either loads
   up to a checkpoint or is refused as truncated. */
static void test_every_truncation_and_corruption_is_refused(void **state) {
  run *r = *state;
  write_file(r, "scripts/main.lua", CLOCKS_MAIN);
  write_file(r, "scripts/lib.lua", "return {f = function() return 'v1' end}\n");
  record(r, 1000, NULL);
  size_t n;
  unsigned char *good = slurp(r->tape, &n);
  char bad[160];
  snprintf(bad, sizeof bad, "%s/bad.tape", r->dir);
  weft_tape *T;
  char err[256];
  for (size_t cut = 0; cut < n; cut += (cut < 64 ? 1 : 7)) {
    spit(bad, good, cut);
    err[0] = 0;
    int rc = weft_tape_load(bad, &T, err, sizeof err);
    if (rc == WEFT_OK) { /* cut after a checkpoint: the frames up to it */
      assert_int_equal(weft_tape_cut(T), 1);
      assert_true(weft_tape_frames(T) > 0);
      weft_tape_free(T);
      continue;
    }
    assert_int_equal(rc, WEFT_EINVAL);
    assert_true(strstr(err, "truncated") || strstr(err, "not a weft recording"));
  }
  for (size_t at = 0; at < n; at += (at < 64 ? 1 : 5)) {
    good[at] ^= 0x5a;
    spit(bad, good, n);
    err[0] = 0;
    assert_int_equal(weft_tape_load(bad, &T, err, sizeof err), WEFT_EINVAL);
    assert_true(err[0] != 0);
    good[at] ^= 0x5a;
  }
  spit(bad, good, n);
  assert_int_equal(weft_tape_load(bad, &T, err, sizeof err), WEFT_OK);
  assert_true(weft_tape_frames(T) > 0);
  weft_tape_free(T);
  free(good);
  assert_int_equal(weft_tape_load("/nonexistent.tape", &T, err, sizeof err), WEFT_EIO);
  assert_non_null(strstr(err, "cannot open /nonexistent.tape"));
}

/* ---- a recording is a file from someone else ---- */

static uint64_t varint_at(const unsigned char *b, size_t *at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    unsigned char c = b[(*at)++];
    v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
}

/* Sets the trailer's checksum right after a change (FNV-1a of every byte
   before it), as someone crafting a file would. */
static void resum(unsigned char *b, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n - 4; i++) h = (h ^ b[i]) * 16777619u;
  for (int i = 0; i < 4; i++) b[n - 4 + i] = (unsigned char)(h >> (8 * i));
}

/* Where the header's limits start: after the magic, 'H', its length, the
   format version and two strings (weft's version, the scripts root). */
static size_t header_limits(const unsigned char *b) {
  size_t at = 9;
  varint_at(b, &at);
  at += 4;
  for (int i = 0; i < 2; i++) at += varint_at(b, &at);
  return at;
}

/* The first step record's frame time (its flags say one follows). */
static size_t first_dt(const unsigned char *b, size_t n) {
  size_t at = 9;
  at += varint_at(b, &at);
  while (at < n) {
    int tag = b[at++];
    size_t len = varint_at(b, &at);
    if (tag == 'S' && (b[at] & 1)) return at + 1;
    at += len;
  }
  fail_msg("no step record with a frame time");
  return 0;
}

static void put_le(unsigned char *b, uint64_t v, int n) {
  for (int i = 0; i < n; i++) b[i] = (unsigned char)(v >> (8 * i));
}

/* A frame time that is NaN, negative or infinite (weft_step would refuse
   it) is refused at load, naming it: no replay spins on it. */
static void test_a_frame_time_out_of_range_is_refused(void **state) {
  run *r = *state;
  write_file(r, "scripts/main.lua", "while true do wait() end\n");
  record(r, 5, NULL);
  size_t n;
  unsigned char *b = slurp(r->tape, &n);
  size_t dt = first_dt(b, n);
  char bad[160];
  snprintf(bad, sizeof bad, "%s/bad.tape", r->dir);
  const double nan = 0.0 / 0.0, values[] = {nan, -1, 1.0 / 0.0, 2e6};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    uint64_t v;
    memcpy(&v, &values[i], 8);
    put_le(b + dt, v, 8);
    resum(b, n);
    spit(bad, b, n);
    weft_tape *T;
    char err[256] = "";
    assert_int_equal(weft_tape_load(bad, &T, err, sizeof err), WEFT_EINVAL);
    assert_non_null(strstr(err, "corrupted: a frame time of"));
  }
  free(b);
}

static int replay_warned;
static void on_logger(void *user, const char *tag, uint32_t level, uint32_t id, const char *msg,
                      const char *file, uint32_t line) {
  (void)user, (void)tag, (void)level, (void)file, (void)line;
  if (id == WEFT_LOG_REPLAY_LIMITS && strstr(msg, "memory budget runaway")) replay_warned++;
}

/* A recording that asks for no budget, no runaway limit and 64 GB is
   replayed under the replaying program's own limits (here the defaults),
   and weft_replay says so; one within them is taken as recorded. */
static void test_a_recording_with_looser_limits_replays_under_the_replayers(void **state) {
  run *r = *state;
  write_file(r, "scripts/main.lua", "while true do wait() end\n");
  record(r, 5, NULL);
  size_t n;
  unsigned char *b = slurp(r->tape, &n);
  size_t at = header_limits(b);
  put_le(b + at, (uint64_t)64 << 30, 8);   /* memory */
  put_le(b + at + 8, WEFT_BUDGET_OFF, 4);  /* instructions a slice */
  put_le(b + at + 12, WEFT_BUDGET_OFF, 4); /* runaway */
  resum(b, n);
  spit(r->tape, b, n);
  free(b);
  weft_tape *T;
  char err[256];
  assert_int_equal(weft_tape_load(r->tape, &T, err, sizeof err), WEFT_OK);
  weft_desc d = WEFT_DESC_INIT;
  d.logger = on_logger;
  weft_tape_desc(T, &d);
  assert_true(d.memory_limit == (size_t)256 << 20);
  assert_int_equal(d.instr_budget, 1000000);
  assert_int_equal(d.runaway_us, 1000000);
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  replay_warned = 0;
  assert_int_equal(weft_replay(W, T), WEFT_OK);
  assert_int_equal(replay_warned, 1);
  assert_int_equal(weft_close(W), 0);
  /* a replayer with looser limits of its own takes the recorded ones */
  assert_int_equal(weft_tape_load(r->tape, &T, err, sizeof err), WEFT_OK);
  weft_desc loose = WEFT_DESC_INIT;
  /* (on a 32-bit system 64 GB is more than a size holds: SIZE_MAX) */
  const uint64_t gb64 = (uint64_t)64 << 30;
  loose.memory_limit = SIZE_MAX > gb64 ? (size_t)(2 * gb64) : SIZE_MAX;
  loose.runaway_us = WEFT_BUDGET_OFF;
  loose.instr_budget = WEFT_BUDGET_OFF;
  weft_tape_desc(T, &loose);
  assert_true(loose.memory_limit == (SIZE_MAX > gb64 ? (size_t)gb64 : SIZE_MAX));
  assert_int_equal(loose.runaway_us, WEFT_BUDGET_OFF);
  weft_tape_free(T);
}

/* A recording cut short at any byte (a kill, a crash) replays every
   frame up to its last checkpoint as recorded; weft_tape_cut says so. */
static void test_a_recording_cut_short_replays_up_to_its_last_checkpoint(void **state) {
  run *r = *state;
  write_file(r, "scripts/main.lua",
             "local n = 0\nwhile true do n = n + math.random(3) print(frame(), n) wait() end\n");
  record(r, 300, NULL); /* 5 s of play: checkpoints every half second */
  size_t n;
  unsigned char *good = slurp(r->tape, &n);
  weft_tape *T;
  char err[256];
  assert_int_equal(weft_tape_load(r->tape, &T, err, sizeof err), WEFT_OK);
  assert_int_equal(weft_tape_cut(T), 0);
  assert_int_equal(weft_tape_frames(T), 300);
  weft_tape_free(T);
  uint64_t last = 0;
  int loads = 0;
  for (size_t cut = n - 1; cut > n / 4; cut -= n / 9) {
    spit(r->tape, good, cut);
    assert_int_equal(weft_tape_load(r->tape, &T, err, sizeof err), WEFT_OK);
    assert_int_equal(weft_tape_cut(T), 1);
    uint64_t frames = weft_tape_frames(T);
    assert_true(frames >= 1 && frames <= 300);
    assert_true(last == 0 || frames <= last);
    last = frames;
    weft_tape_free(T);
    char diff[200] = "";
    if (replay(r, NULL, NULL, diff, sizeof diff)) fail_msg("cut at %zu: %s", cut, diff);
    loads++;
  }
  assert_true(loads >= 6);
  free(good);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_replay_prints_what_the_recording_printed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_replay_needs_no_scripts_on_disk, setup, teardown),
      cmocka_unit_test_setup_teardown(test_jobs_arrive_in_the_recorded_frame, setup, teardown),
      cmocka_unit_test_setup_teardown(test_input_comes_back_and_the_first_difference_is_named,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_a_script_that_differs_is_caught_at_its_frame, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_record_and_replay_refuse_a_state_in_use, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_a_frame_time_out_of_range_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_a_recording_with_looser_limits_replays_under_the_replayers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_every_truncation_and_corruption_is_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_a_recording_cut_short_replays_up_to_its_last_checkpoint,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
