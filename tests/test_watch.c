/* Unit tests for host/watch: the script file watcher, on real files in a
   fresh temporary directory per test, with real syscalls and the clock
   driven by the test (`now` passed to weft__watch_poll). Never sleeps. Each
   case runs twice: with inotify, and with the polling fallback. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../host/watch.h"
#include "scratch_dir.h"

#define MAXCH 64
#define QUIET 0.1 /* the default quiet window, seconds */

/* One test's world: a temp dir, its watcher, the changes it reported. */
typedef struct fx {
  char root[64];
  int poll; /* the watcher under test polls */
  weft_watch *w;
  double t;        /* the test's clock */
  long long stamp; /* next distinct mtime (seconds) for polling saves */
  int n;           /* changes reported, ever */
  char path[MAXCH][128];
  char content[MAXCH][256]; /* the file's bytes when it was reported */
  long long live;           /* bytes the watcher holds (its allocator) */
} fx;

/* The watcher's allocator: counts what it holds, so a test can tell that
   every byte came from it and went back. */
static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  fx *f = ud;
  if (nsize == 0) {
    if (ptr) f->live -= (long long)osize;
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p) f->live += (long long)nsize - (ptr ? (long long)osize : 0);
  return p;
}

/* ---- files ---- */

static void full_path(const fx *f, const char *rel, char *out, size_t n) {
  snprintf(out, n, "%s/%s", f->root, rel);
}

static void read_all(const char *full, char *out, size_t n) {
  out[0] = 0;
  FILE *fp = fopen(full, "rb");
  if (!fp) return;
  size_t k = fread(out, 1, n - 1, fp);
  out[k] = 0;
  fclose(fp);
}

/* Polling only sees what stat() shows; two writes inside one kernel timer
   tick share their mtime and ctime. So under polling every save also
   stamps a distinct mtime, as the seconds between a designer's saves
   would. Unneeded with inotify, which must work on the bare syscalls. */
static void stamp(fx *f, const char *full) {
  if (!f->poll) return;
  struct timespec ts[2] = {{f->stamp, 0}, {f->stamp, 0}};
  f->stamp++;
  assert_int_equal(utimensat(AT_FDCWD, full, ts, 0), 0);
}

/* Writes the file with plain open/write/close (O_TRUNC: an in-place save). */
static void put(fx *f, const char *rel, const char *text) {
  char full[256];
  full_path(f, rel, full, sizeof full);
  int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  size_t len = strlen(text);
  assert_int_equal(write(fd, text, len), (ssize_t)len);
  assert_int_equal(close(fd), 0);
  if (!weft__watch_ignored(strrchr(full, '/') + 1)) stamp(f, full);
}

static void mv(fx *f, const char *from, const char *to) {
  char a[256], b[256];
  full_path(f, from, a, sizeof a);
  full_path(f, to, b, sizeof b);
  assert_int_equal(rename(a, b), 0);
  if (!weft__watch_ignored(strrchr(b, '/') + 1)) stamp(f, b);
}

static void rm(fx *f, const char *rel) {
  char full[256];
  full_path(f, rel, full, sizeof full);
  assert_int_equal(unlink(full), 0);
}

static void mkdir_in(fx *f, const char *rel) {
  char full[256];
  full_path(f, rel, full, sizeof full);
  assert_int_equal(mkdir(full, 0755), 0);
}

/* Removes a directory tree (the temp dir). */
/* ---- the watcher ---- */

static void on_changed(void *ud, const char *path) {
  fx *f = ud;
  if (f->n < MAXCH) {
    snprintf(f->path[f->n], sizeof f->path[0], "%s", path);
    char full[256];
    full_path(f, path, full, sizeof full);
    read_all(full, f->content[f->n], sizeof f->content[0]);
  }
  f->n++;
}

/* Polls at time t; returns the changes this poll reported. */
static int poll_at(fx *f, double t) {
  int before = f->n;
  int r = weft__watch_poll(f->w, t, on_changed, f);
  assert_int_equal(r, f->n - before);
  return r;
}

/* Starts a new round well after everything before it settled: with
   polling, the first poll of the round rescans. */
static double round_start(fx *f) {
  f->t += 10.0;
  return f->t;
}

/* Polls a long while after t: any window still armed ends, polling
   rescans twice. Returns the changes reported. */
static int settle(fx *f, double t) {
  return poll_at(f, t + 1.0) + poll_at(f, t + 2.0) + poll_at(f, t + 3.0);
}

static void open_watch(fx *f) {
  weft_watch_desc d = {0};
  d.force_poll = f->poll;
  assert_int_equal(weft__watch_open(f->root, &d, count_alloc, f, &f->w), WEFT_OK);
  assert_non_null(f->w);
#ifdef WEFT_PLAT_GENERIC /* no notifications there: every case polls */
  f->poll = 1;
#endif
  assert_int_equal(weft__watch_polling(f->w) != 0, f->poll);
}

static int setup_with(void **state, int poll) {
  fx *f = calloc(1, sizeof *f);
  if (!f) return -1;
  snprintf(f->root, sizeof f->root, "/tmp/weft-watch-XXXXXX");
  if (!mkdtemp(f->root)) {
    free(f);
    return -1;
  }
  f->poll = poll;
  f->t = 1000.0;
  f->stamp = 1000000000;
  /* Files present before the watcher opens: its baseline. */
  put(f, "patrol.lua", "local M = {}\nM.SPEED = 60\nreturn M\n");
  put(f, "other.lua", "return {}\n");
  open_watch(f);
  *state = f;
  return 0;
}

static int setup_inotify(void **state) { return setup_with(state, 0); }
static int setup_poll(void **state) { return setup_with(state, 1); }

static int teardown(void **state) {
  fx *f = *state;
  weft__watch_close(f->w);
  int leaked = f->live != 0;
  rm_tree(f->root);
  free(f);
  if (leaked) fail_msg("the watcher kept bytes after close");
  return 0;
}

/* A distinct version of patrol.lua, one byte longer per k. */
static const char *version(int k) {
  static char buf[256];
  snprintf(buf, sizeof buf, "local M = {}\nM.SPEED = %d -- %.*s\nreturn M\n", k, k % 40,
           "========================================");
  return buf;
}

/* ---- the cases ---- */

static void opening_reports_nothing(void **state) {
  fx *f = *state;
  assert_int_equal(poll_at(f, f->t), 0);
  assert_int_equal(settle(f, f->t), 0);
}

static void in_place_save_reports_once_after_quiet_window(void **state) {
  fx *f = *state;
  double t = round_start(f);
  put(f, "patrol.lua", version(1));
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(poll_at(f, t + 0.05), 0);
  assert_int_equal(poll_at(f, t + QUIET - 0.001), 0);
  assert_int_equal(poll_at(f, t + QUIET + 0.001), 1);
  assert_string_equal(f->path[0], "patrol.lua");
  assert_string_equal(f->content[0], version(1));
  assert_int_equal(poll_at(f, t + 0.2), 0);
  assert_int_equal(settle(f, t), 0);
}

static void six_rename_saves_report_one_change_each(void **state) {
  fx *f = *state;
  for (int k = 1; k <= 6; k++) {
    double t = round_start(f);
    /* An atomic saver: write a temp file beside it, rename over. */
    const char *tmp = k % 2 ? "patrol.lua.tmp" : ".patrol.lua.swx";
    put(f, tmp, version(k));
    mv(f, tmp, "patrol.lua");
    assert_int_equal(poll_at(f, t), 0);
    assert_int_equal(poll_at(f, t + 0.05), 0);
    assert_int_equal(poll_at(f, t + 0.2), 1);
    assert_string_equal(f->path[k - 1], "patrol.lua");
    assert_string_equal(f->content[k - 1], version(k));
  }
  assert_int_equal(settle(f, f->t), 0);
  assert_int_equal(f->n, 6);
}

static void vim_save_sequence_reports_once(void **state) {
  fx *f = *state;
  double t = round_start(f);
  /* vim (backupcopy=no, writebackup): probe the directory with "4913",
     move the file to its backup, write a new file, drop the backup. */
  put(f, "4913", "");
  rm(f, "4913");
  mv(f, "patrol.lua", "patrol.lua~");
  put(f, "patrol.lua", version(7));
  assert_int_equal(poll_at(f, t), 0);
  rm(f, "patrol.lua~");
  assert_int_equal(poll_at(f, t + 0.05), 0);
  assert_int_equal(poll_at(f, t + 0.2), 1);
  assert_string_equal(f->path[0], "patrol.lua");
  assert_string_equal(f->content[0], version(7));
  assert_int_equal(settle(f, t), 0);
}

static void emacs_save_sequence_reports_once(void **state) {
  fx *f = *state;
  double t = round_start(f);
  char lock[256];
  full_path(f, ".#patrol.lua", lock, sizeof lock);
  /* Editing: a lock symlink and an autosave file appear. */
  assert_int_equal(symlink("user@host.1234:1700000000", lock), 0);
  put(f, "#patrol.lua#", version(3));
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(poll_at(f, t + 0.5), 0);
  /* Saving: keep a backup, write a temp file, rename it over, then the
     autosave and the lock go. */
  char src[256], bak[256];
  full_path(f, "patrol.lua", src, sizeof src);
  full_path(f, "patrol.lua~", bak, sizeof bak);
  assert_int_equal(link(src, bak), 0);
  put(f, "patrol.lua#tmp", version(8));
  mv(f, "patrol.lua#tmp", "patrol.lua");
  rm(f, "#patrol.lua#");
  rm(f, ".#patrol.lua");
  t += 1.0;
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(poll_at(f, t + 0.05), 0);
  assert_int_equal(poll_at(f, t + 0.2), 1);
  assert_string_equal(f->path[0], "patrol.lua");
  assert_string_equal(f->content[0], version(8));
  assert_int_equal(settle(f, t), 0);
}

static void rapid_saves_report_once_with_last_content(void **state) {
  fx *f = *state;
  double t = round_start(f);
  /* Ten saves 10 ms apart; every one lands inside the window the one
     before it opened. */
  for (int k = 1; k <= 10; k++) {
    put(f, "patrol.lua", version(10 + k));
    assert_int_equal(poll_at(f, t + (k - 1) * 0.01), 0);
  }
  double last = t + 0.09;
  if (!f->poll) {
    /* inotify sees every save: the window runs from the last one. */
    assert_int_equal(poll_at(f, last + QUIET - 0.005), 0);
    assert_int_equal(poll_at(f, last + QUIET + 0.005), 1);
  }
  settle(f, t);
  assert_int_equal(f->n, 1);
  assert_string_equal(f->path[0], "patrol.lua");
  assert_string_equal(f->content[0], version(20));
}

static void touch_reports_nothing(void **state) {
  fx *f = *state;
  char full[256];
  full_path(f, "patrol.lua", full, sizeof full);
  for (int k = 0; k < 3; k++) {
    double t = round_start(f);
    struct timespec ts[2] = {{2000000000 + k, 5}, {2000000000 + k, 5}};
    assert_int_equal(utimensat(AT_FDCWD, full, ts, 0), 0);   /* touch -d */
    assert_int_equal(utimensat(AT_FDCWD, full, NULL, 0), 0); /* touch */
    assert_int_equal(poll_at(f, t), 0);
    assert_int_equal(settle(f, t), 0);
  }
  assert_int_equal(f->n, 0);
}

static void identical_save_reports_nothing(void **state) {
  fx *f = *state;
  char full[256], text[256];
  full_path(f, "patrol.lua", full, sizeof full);
  read_all(full, text, sizeof text);
  double t = round_start(f);
  put(f, "patrol.lua", text);
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(settle(f, t), 0);
  /* ...and by rename, too. */
  t = round_start(f);
  put(f, "patrol.lua.tmp", text);
  mv(f, "patrol.lua.tmp", "patrol.lua");
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(settle(f, t), 0);
  assert_int_equal(f->n, 0);
  /* A real change after them is still seen. */
  t = round_start(f);
  put(f, "patrol.lua", version(2));
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(settle(f, t), 1);
}

static void truncate_then_write_reports_once_with_final_content(void **state) {
  fx *f = *state;
  double t = round_start(f);
  char full[256];
  full_path(f, "patrol.lua", full, sizeof full);
  /* VS Code style: truncate (and close), then write the new bytes. */
  int fd = open(full, O_WRONLY | O_TRUNC);
  assert_true(fd >= 0);
  assert_int_equal(close(fd), 0);
  stamp(f, full);
  assert_int_equal(poll_at(f, t), 0);
  const char *text = version(30);
  fd = open(full, O_WRONLY);
  assert_true(fd >= 0);
  size_t half = strlen(text) / 2;
  assert_int_equal(write(fd, text, half), (ssize_t)half);
  assert_int_equal(poll_at(f, t + 0.03), 0);
  assert_int_equal(write(fd, text + half, strlen(text) - half), (ssize_t)(strlen(text) - half));
  assert_int_equal(close(fd), 0);
  stamp(f, full);
  assert_int_equal(poll_at(f, t + 0.06), 0);
  if (!f->poll) {
    /* The window was extended by the writes: still quiet at t + 0.12. */
    assert_int_equal(poll_at(f, t + 0.12), 0);
    assert_int_equal(poll_at(f, t + 0.06 + QUIET + 0.001), 1);
  }
  settle(f, t);
  assert_int_equal(f->n, 1);
  assert_string_equal(f->content[0], text); /* never the empty file */
}

static void new_subdirectory_is_watched(void **state) {
  fx *f = *state;
  double t = round_start(f);
  mkdir_in(f, "sub");
  assert_int_equal(poll_at(f, t), 0);
  t = round_start(f);
  put(f, "sub/new.lua", "return {}\n");
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(settle(f, t), 1);
  assert_string_equal(f->path[0], "sub/new.lua");
  /* Later saves in it are seen like any other. */
  t = round_start(f);
  put(f, "sub/new.lua", version(5));
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(poll_at(f, t + 0.05), 0);
  assert_int_equal(poll_at(f, t + 0.2), 1);
  assert_string_equal(f->path[1], "sub/new.lua");
  assert_string_equal(f->content[1], version(5));
  /* Nested deeper, too. */
  t = round_start(f);
  mkdir_in(f, "sub/deep");
  assert_int_equal(poll_at(f, t), 0);
  t = round_start(f);
  put(f, "sub/deep/x.lua", version(6));
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(settle(f, t), 1);
  assert_string_equal(f->path[2], "sub/deep/x.lua");
}

/* A directory created together with its file (mkdir -p && save, a git
   checkout) before the watcher had a chance to watch it. */
static void file_saved_with_its_new_directory_is_reported(void **state) {
  fx *f = *state;
  double t = round_start(f);
  mkdir_in(f, "fresh");
  put(f, "fresh/boss.lua", version(9));
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(settle(f, t), 1);
  assert_string_equal(f->path[0], "fresh/boss.lua");
  assert_string_equal(f->content[0], version(9));
}

static void ignored_names_are_never_reported(void **state) {
  fx *f = *state;
  static const char *const names[] = {"foo.txt",      ".hidden.lua", "foo.lua~",    "#foo.lua#",
                                      ".foo.lua.swp", "4913",        "foo.lua.tmp", ".#foo.lua"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    assert_true(weft__watch_ignored(names[i]));
  assert_false(weft__watch_ignored("foo.lua"));
  assert_false(weft__watch_ignored("a.lua"));
  for (int k = 0; k < 3; k++) {
    double t = round_start(f);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      char text[64];
      snprintf(text, sizeof text, "return %d%.*s\n", k, k, "xxx");
      put(f, names[i], text);
      if (k == 2) rm(f, names[i]);
    }
    assert_int_equal(poll_at(f, t), 0);
    assert_int_equal(settle(f, t), 0);
  }
  assert_int_equal(f->n, 0);
}

static void two_files_saved_together_report_once_each(void **state) {
  fx *f = *state;
  double t = round_start(f);
  put(f, "patrol.lua", version(11));
  put(f, "other.lua", "return { changed = true }\n");
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(settle(f, t), 2);
  int a = strcmp(f->path[0], "patrol.lua") == 0 ? 0 : 1;
  assert_string_equal(f->path[a], "patrol.lua");
  assert_string_equal(f->path[1 - a], "other.lua");
}

/* inotify only: more events than the kernel queue holds make it overflow;
   the rescan must still find the one real change, and only it. */
static void queue_overflow_rescans(void **state) {
  fx *f = *state;
  if (f->poll) skip();
  FILE *q = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
  long max = 0;
  if (q) {
    if (fscanf(q, "%ld", &max) != 1) max = 0;
    fclose(q);
  }
  if (max <= 0 || max > 200000) skip();
  double t = round_start(f);
  char a[256], b[256];
  full_path(f, "a.txt", a, sizeof a);
  full_path(f, "b.txt", b, sizeof b);
  int fa = open(a, O_WRONLY | O_CREAT, 0644), fb = open(b, O_WRONLY | O_CREAT, 0644);
  assert_true(fa >= 0 && fb >= 0);
  /* Alternating files: consecutive identical events would be merged. */
  for (long i = 0; i < max + 100; i++) {
    assert_int_equal(write(i % 2 ? fb : fa, "x", 1), 1);
  }
  close(fa);
  close(fb);
  /* The real change, same size as before (only its hash tells). */
  char full[256], text[256];
  full_path(f, "other.lua", full, sizeof full);
  read_all(full, text, sizeof text);
  text[0] = 'R'; /* "return {}" -> "Return {}" */
  put(f, "other.lua", text);
  poll_at(f, t);
  settle(f, t);
  assert_int_equal(f->n, 1);
  assert_string_equal(f->path[0], "other.lua");
}

/* A FIFO named like a script (here before the watcher opened, and made
   while it watches) is never opened: opening one blocks until a writer
   comes. It is never reported; scripts beside it still are. */
static void a_fifo_named_like_a_script_is_skipped(void **state) {
  fx *f = *state;
  char full[256];
  mkdir_in(f, "sub");
  full_path(f, "sub/early.lua", full, sizeof full);
  assert_int_equal(mkfifo(full, 0644), 0);
  weft__watch_close(f->w);
  open_watch(f); /* the baseline scan meets the FIFO */
  double t = round_start(f);
  full_path(f, "late.lua", full, sizeof full);
  assert_int_equal(mkfifo(full, 0644), 0);
  full_path(f, "sub/late.lua", full, sizeof full);
  assert_int_equal(mkfifo(full, 0644), 0);
  put(f, "patrol.lua", version(3));
  assert_int_equal(poll_at(f, t), 0);
  assert_int_equal(poll_at(f, t + 0.2), 1);
  assert_string_equal(f->path[0], "patrol.lua");
  assert_int_equal(settle(f, t), 0);
  assert_int_equal(f->n, 1);
}

#define BOTH(fn)                                                                                   \
  {"inotify: " #fn, fn, setup_inotify, teardown, NULL}, {                                          \
    "poll: " #fn, fn, setup_poll, teardown, NULL                                                   \
  }

int main(void) {
  alarm(120); /* a watcher that blocks on a file fails the run, not hangs it */
  const struct CMUnitTest tests[] = {
      BOTH(opening_reports_nothing),
      BOTH(in_place_save_reports_once_after_quiet_window),
      BOTH(six_rename_saves_report_one_change_each),
      BOTH(vim_save_sequence_reports_once),
      BOTH(emacs_save_sequence_reports_once),
      BOTH(rapid_saves_report_once_with_last_content),
      BOTH(touch_reports_nothing),
      BOTH(identical_save_reports_nothing),
      BOTH(truncate_then_write_reports_once_with_final_content),
      BOTH(new_subdirectory_is_watched),
      BOTH(file_saved_with_its_new_directory_is_reported),
      BOTH(ignored_names_are_never_reported),
      BOTH(two_files_saved_together_report_once_each),
      BOTH(a_fifo_named_like_a_script_is_skipped),
      {"inotify: queue_overflow_rescans", queue_overflow_rescans, setup_inotify, teardown, NULL},
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
