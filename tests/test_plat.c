/* Unit tests for host/plat: the platform layer on its own, through its
   header only (threads, locks, once, clock, files, change notifications,
   sockets), on real files in a fresh temporary directory. The same file
   builds for Windows (mingw-w64) and passes under Wine. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <winsock2.h>
#include <direct.h>
#define make_dir(p) _mkdir(p)
typedef SOCKET client_fd;
#define close_client closesocket
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#define make_dir(p) mkdir(p, 0755)
typedef int client_fd;
#define close_client close
#endif

#include "../host/plat.h"

/* ---- another thread's CPU clock (the watchdog's) ---- */

typedef struct cpu_probe {
  weft_cpu_clock *clock;
  uint64_t seen;
} cpu_probe;
static void read_cpu(void *arg) {
  cpu_probe *p = arg;
  p->seen = weft__cpu_clock_ns(p->clock);
}

/* The main thread's CPU clock, read from another thread, counts what the
   main thread burns; a system without one says WEFT_EIO (weft then
   counts instructions for its budgets). */
static void another_thread_reads_this_threads_cpu_clock(void **state) {
  (void)state;
  weft_cpu_clock c;
  int rc = weft__cpu_clock_self(&c);
#ifdef WEFT_PLAT_GENERIC
  assert_int_equal(rc, WEFT_EIO);
  return;
#endif
  assert_int_equal(rc, WEFT_OK);
  /* 20 ms of this thread's processor time, however long a busy machine
     takes to give it */
  uint64_t t0 = weft__thread_cpu_ns(), end = t0 + 20000000u;
  volatile unsigned spin = 0;
  while (weft__thread_cpu_ns() < end) spin++;
  cpu_probe p = {&c, 0};
  weft_thread th;
  assert_int_equal(weft__thread_start(&th, read_cpu, &p, 0), WEFT_OK);
  weft__thread_join(&th);
  assert_true(p.seen >= t0 + 19000000u); /* the 20 ms burnt, within the clock's grain */
  assert_true(p.seen <= weft__thread_cpu_ns());
  weft__cpu_clock_close(&c);
}

/* ---- threads, locks, once ---- */

typedef struct shared {
  weft_mutex mu;
  weft_cond cv;
  int items, taken, done;
} shared;

static void producer(void *arg) {
  shared *s = arg;
  for (int i = 0; i < 1000; i++) {
    weft__mutex_lock(&s->mu);
    s->items++;
    weft__cond_signal(&s->cv);
    weft__mutex_unlock(&s->mu);
  }
  weft__mutex_lock(&s->mu);
  s->done = 1;
  weft__cond_broadcast(&s->cv);
  weft__mutex_unlock(&s->mu);
}

static void a_thread_hands_items_over_a_lock_and_a_condition(void **state) {
  (void)state;
  shared s = {0};
  assert_int_equal(weft__mutex_init(&s.mu), WEFT_OK);
  assert_int_equal(weft__cond_init(&s.cv), WEFT_OK);
  weft_thread t;
  assert_int_equal(weft__thread_start(&t, producer, &s, 64 * 1024), WEFT_OK);
  weft__mutex_lock(&s.mu);
  while (!s.done || s.items > 0) {
    while (s.items == 0 && !s.done) weft__cond_wait(&s.cv, &s.mu);
    s.taken += s.items;
    s.items = 0;
  }
  weft__mutex_unlock(&s.mu);
  weft__thread_join(&t);
  assert_int_equal(s.taken, 1000);
  weft__cond_destroy(&s.cv);
  weft__mutex_destroy(&s.mu);
}

static void a_timed_wait_times_out_on_the_monotonic_clock(void **state) {
  (void)state;
  weft_mutex mu;
  weft_cond cv;
  assert_int_equal(weft__mutex_init(&mu), WEFT_OK);
  assert_int_equal(weft__cond_init(&cv), WEFT_OK);
  weft__mutex_lock(&mu);
  uint64_t t0 = weft__clock_ns();
  int timed_out = 0;
  while (!timed_out && weft__clock_ns() - t0 < 20000000u) /* spurious wake-ups loop */
    timed_out = weft__cond_wait_ns(&cv, &mu, 20000000u - (weft__clock_ns() - t0));
  uint64_t t1 = weft__clock_ns();
  weft__mutex_unlock(&mu);
  assert_true(t1 - t0 >= 20000000u);
  assert_true(t1 >= t0);
  weft__cond_destroy(&cv);
  weft__mutex_destroy(&mu);
}

static weft_once once = WEFT_ONCE_INIT;
static int once_runs;
static void run_once_fn(void) { once_runs++; }
static void call_once(void *arg) {
  (void)arg;
  weft__once_run(&once, run_once_fn);
}

static void once_runs_once_whoever_calls(void **state) {
  (void)state;
  weft_thread t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(weft__thread_start(&t[i], call_once, NULL, 0), WEFT_OK);
  call_once(NULL);
  for (int i = 0; i < 4; i++) weft__thread_join(&t[i]);
  assert_int_equal(once_runs, 1);
  assert_true(weft__cpu_count() >= 1);
}

/* ---- files ---- */

typedef struct tree {
  char root[256];
} tree;

static void path_in(const tree *t, const char *rel, char *out, size_t n) {
  snprintf(out, n, "%s/%s", t->root, rel);
}

static void put(const tree *t, const char *rel, const char *text) {
  char p[512];
  path_in(t, rel, p, sizeof p);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int setup(void **state) {
  tree *t = calloc(1, sizeof *t);
  static int n;
  const char *tmp = getenv("TMPDIR");
#ifdef _WIN32
  if (!tmp) tmp = getenv("TEMP");
#endif
  snprintf(t->root, sizeof t->root, "%s/weft-plat-%llu-%d", tmp ? tmp : "/tmp",
           (unsigned long long)(weft__clock_ns() % 1000000007u), n++);
  if (make_dir(t->root) != 0) return -1;
  *state = t;
  return 0;
}

static int rm_entry(void *ud, const char *name, int is_dir);

static void rm_tree(const char *path) {
  weft__dir_list(path, rm_entry, (void *)path);
  remove(path);
#ifdef _WIN32
  _rmdir(path);
#else
  rmdir(path);
#endif
}

static int rm_entry(void *ud, const char *name, int is_dir) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", (const char *)ud, name);
  if (is_dir)
    rm_tree(p);
  else
    remove(p);
  return 0;
}

static int teardown(void **state) {
  tree *t = *state;
  rm_tree(t->root);
  free(t);
  return 0;
}

static void stat_tells_files_from_directories(void **state) {
  tree *t = *state;
  put(t, "a.lua", "return 1\n");
  char p[512];
  path_in(t, "a.lua", p, sizeof p);
  weft_stat st;
  assert_int_equal(weft__stat_path(p, &st), WEFT_OK);
  assert_int_equal(st.size, 9);
  assert_true(st.is_file && !st.is_dir);
  assert_true(st.mtime_ns > 0 && st.ctime_ns > 0);
  assert_int_equal(weft__stat_path(t->root, &st), WEFT_OK);
  assert_true(st.is_dir && !st.is_file);
  path_in(t, "missing.lua", p, sizeof p);
  assert_int_equal(weft__stat_path(p, &st), WEFT_EINVAL);
#ifndef _WIN32
  path_in(t, "fifo.lua", p, sizeof p);
  assert_int_equal(mkfifo(p, 0644), 0);
  assert_int_equal(weft__stat_path(p, &st), WEFT_OK);
  assert_true(!st.is_file && !st.is_dir);
#endif
}

typedef struct listing {
  char names[8][64];
  int dirs, n, stop_at;
} listing;

static int collect(void *ud, const char *name, int is_dir) {
  listing *l = ud;
  if (l->n < 8) snprintf(l->names[l->n], sizeof l->names[0], "%s", name);
  l->n++;
  l->dirs += is_dir;
  return l->stop_at && l->n == l->stop_at;
}

static void a_listing_names_every_entry_but_dot_and_dotdot(void **state) {
  tree *t = *state;
  put(t, "a.lua", "a");
  put(t, "b.txt", "b");
  char p[512];
  path_in(t, "sub", p, sizeof p);
  assert_int_equal(make_dir(p), 0);
  listing l = {0};
  assert_int_equal(weft__dir_list(t->root, collect, &l), WEFT_OK);
  assert_int_equal(l.n, 3);
  assert_int_equal(l.dirs, 1);
  for (int i = 0; i < l.n; i++) assert_true(l.names[i][0] != '.');
  listing one = {.stop_at = 1};
  assert_int_equal(weft__dir_list(t->root, collect, &one), WEFT_OK);
  assert_int_equal(one.n, 1);
  path_in(t, "a.lua", p, sizeof p);
  assert_int_equal(weft__dir_list(p, collect, &l), WEFT_EINVAL);
}

static void paths_resolve_to_absolute_ones(void **state) {
  tree *t = *state;
  put(t, "a.lua", "a");
  char p[512], r[WEFT_PATH_MAX], a[WEFT_PATH_MAX];
  snprintf(p, sizeof p, "%s/./sub/../a.lua", t->root);
  path_in(t, "sub", a, sizeof a);
  assert_int_equal(make_dir(a), 0);
  assert_int_equal(weft__path_resolve(p, r, sizeof r), WEFT_OK);
  assert_non_null(strstr(r, "a.lua"));
  assert_null(strstr(r, "/./"));
  assert_null(strstr(r, ".."));
  path_in(t, "missing.lua", p, sizeof p);
  assert_int_equal(weft__path_resolve(p, r, sizeof r), WEFT_EINVAL);
  assert_int_equal(weft__path_absolute("x/y.lua", a, sizeof a), WEFT_OK);
  assert_non_null(strstr(a, "x/y.lua"));
  assert_int_equal(weft__path_absolute("x/y.lua", a, 4), WEFT_EINVAL);
}

/* ---- change notifications ---- */

typedef struct counting {
  long long live;
} counting;

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  counting *c = ud;
  if (nsize == 0) {
    if (ptr) c->live -= (long long)osize;
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p) c->live += (long long)nsize - (ptr ? (long long)osize : 0);
  return p;
}

typedef struct seen {
  int saved, newdir;
  char last[128];
} seen;

static void on_fs(void *ud, int kind, const char *rel, const char *name) {
  seen *s = ud;
  if (kind == WEFT_FS_SAVED && strcmp(name, "x.lua") == 0) {
    s->saved++;
    snprintf(s->last, sizeof s->last, "%s", rel);
  }
  if (kind == WEFT_FS_NEWDIR) s->newdir++;
}

/* Reads events until want saves of x.lua came (or about 2 s passed). */
static void read_until(weft_fswatch *fw, seen *s, int want) {
  uint64_t t0 = weft__clock_ns();
  while (s->saved < want && weft__clock_ns() - t0 < 2000000000u) weft__fswatch_read(fw, on_fs, s);
}

static void notifications_name_saved_files_and_new_directories(void **state) {
  tree *t = *state;
  counting c = {0};
  weft_fswatch *fw = NULL;
  int rc = weft__fswatch_open(t->root, count_alloc, &c, &fw);
  if (rc == WEFT_EIO) skip(); /* the system has none: the watcher polls */
  assert_int_equal(rc, WEFT_OK);
  assert_int_equal(weft__fswatch_add_dir(fw, ""), WEFT_OK);
  seen s = {0};
  assert_int_equal(weft__fswatch_read(fw, on_fs, &s), 0);
  put(t, "x.lua", "one");
  read_until(fw, &s, 1);
  assert_true(s.saved >= 1);
  assert_string_equal(s.last, "x.lua");
  char p[512];
  path_in(t, "sub", p, sizeof p);
  assert_int_equal(make_dir(p), 0);
  uint64_t t0 = weft__clock_ns();
  while (!s.newdir && weft__clock_ns() - t0 < 2000000000u) weft__fswatch_read(fw, on_fs, &s);
  assert_int_equal(s.newdir, 1);
  assert_int_equal(weft__fswatch_add_dir(fw, "sub"), WEFT_OK);
  int before = s.saved;
  put(t, "sub/x.lua", "two");
  read_until(fw, &s, before + 1);
  assert_string_equal(s.last, "sub/x.lua");
  weft__fswatch_close(fw);
  assert_int_equal(c.live, 0);
}

/* ---- sockets ---- */

/* A client of the test's own (Winsock is started by weft__sock_listen). */
static client_fd connect_to(int port) {
  client_fd fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  return fd;
}

static void a_local_socket_accepts_and_carries_bytes_without_blocking(void **state) {
  (void)state;
  weft_sock l, c;
  int port = 0;
  assert_int_equal(weft__sock_listen(0, &l, &port), WEFT_OK);
  assert_true(port > 0);
  assert_int_equal(weft__sock_accept(l, &c), WEFT_EBUSY);
  assert_int_equal(weft__sock_wait(l, WEFT_SOCK_IN, 0), 0);
  client_fd fd = connect_to(port);
  assert_int_equal(weft__sock_wait(l, WEFT_SOCK_IN, 2000), 1);
  assert_int_equal(weft__sock_accept(l, &c), WEFT_OK);
  char buf[16];
  assert_int_equal(weft__sock_recv(c, buf, sizeof buf), 0); /* nothing yet: no block */
  assert_int_equal(send(fd, "ping", 4, 0), 4);
  assert_int_equal(weft__sock_wait(c, WEFT_SOCK_IN, 2000), 1);
  assert_int_equal(weft__sock_recv(c, buf, sizeof buf), 4);
  assert_memory_equal(buf, "ping", 4);
  assert_int_equal(weft__sock_wait(c, WEFT_SOCK_OUT, 2000), 1);
  assert_int_equal(weft__sock_send(c, "pong", 4), 4);
  assert_int_equal(recv(fd, buf, 4, 0), 4);
  assert_memory_equal(buf, "pong", 4);
  close_client(fd);
  assert_int_equal(weft__sock_wait(c, WEFT_SOCK_IN, 2000), 1);
  assert_int_equal(weft__sock_recv(c, buf, sizeof buf), WEFT_ECLOSED);
  /* A closed peer is an error, never a signal that ends the process. */
  long r = 0;
  for (int i = 0; i < 100 && r >= 0; i++) r = weft__sock_send(c, "x", 1);
  assert_int_equal(r, WEFT_ECLOSED);
  weft__sock_close(c);
  weft__sock_close(l);
  weft__sock_close(WEFT_SOCK_NONE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(another_thread_reads_this_threads_cpu_clock),
      cmocka_unit_test(a_thread_hands_items_over_a_lock_and_a_condition),
      cmocka_unit_test(a_timed_wait_times_out_on_the_monotonic_clock),
      cmocka_unit_test(once_runs_once_whoever_calls),
      cmocka_unit_test_setup_teardown(stat_tells_files_from_directories, setup, teardown),
      cmocka_unit_test_setup_teardown(a_listing_names_every_entry_but_dot_and_dotdot, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(paths_resolve_to_absolute_ones, setup, teardown),
      cmocka_unit_test_setup_teardown(notifications_name_saved_files_and_new_directories, setup,
                                      teardown),
      cmocka_unit_test(a_local_socket_accepts_and_carries_bytes_without_blocking),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
