/* The platform layer (plat.h) on every POSIX system: pthreads,
   clock_gettime, stat, opendir, realpath and BSD sockets. What differs
   between systems (change notifications, another thread's CPU clock, the
   clock of timed waits, sockets without SIGPIPE) is in plat_linux.c on
   Linux and plat_posix_generic.c elsewhere (plat_posix.h), as libuv
   keeps src/unix/core.c apart from linux.c. */
#ifndef _WIN32
#define _DEFAULT_SOURCE /* DT_DIR, realpath */
#include "plat.h"
#include "plat_posix.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(pthread_t) <= sizeof(weft_plat_store), "pthread_t fits");
_Static_assert(sizeof(pthread_mutex_t) <= sizeof(weft_plat_store), "pthread_mutex_t fits");
_Static_assert(sizeof(pthread_cond_t) <= sizeof(weft_plat_store), "pthread_cond_t fits");
_Static_assert(_Alignof(pthread_mutex_t) <= _Alignof(weft_plat_store), "aligned");
_Static_assert(_Alignof(pthread_cond_t) <= _Alignof(weft_plat_store), "aligned");

#define MUTEX(m) ((pthread_mutex_t *)(void *)(m)->os.bytes)
#define COND(c) ((pthread_cond_t *)(void *)(c)->os.bytes)
#define THREAD(t) ((pthread_t *)(void *)(t)->os.bytes)

/* ---- threads (plat_nothreads.c's instead with WEFT_PLAT_NOTHREADS) ---- */

#ifndef WEFT_PLAT_NOTHREADS
static void *thread_main(void *arg) {
  weft_thread *t = arg;
  t->fn(t->arg);
  return NULL;
}

int weft__thread_start(weft_thread *t, void (*fn)(void *arg), void *arg, size_t stack_size) {
  t->fn = fn;
  t->arg = arg;
  pthread_attr_t a;
  if (pthread_attr_init(&a) != 0) return WEFT_EIO;
  if (stack_size) pthread_attr_setstacksize(&a, stack_size);
  int bad = pthread_create(THREAD(t), &a, thread_main, t);
  pthread_attr_destroy(&a);
  return bad ? WEFT_EIO : WEFT_OK;
}

void weft__thread_join(weft_thread *t) { pthread_join(*THREAD(t), NULL); }

int weft__mutex_init(weft_mutex *m) {
  return pthread_mutex_init(MUTEX(m), NULL) == 0 ? WEFT_OK : WEFT_EIO;
}
void weft__mutex_destroy(weft_mutex *m) { pthread_mutex_destroy(MUTEX(m)); }
void weft__mutex_lock(weft_mutex *m) { pthread_mutex_lock(MUTEX(m)); }
void weft__mutex_unlock(weft_mutex *m) { pthread_mutex_unlock(MUTEX(m)); }

/* Timed waits count on the clock the system's file chooses (monotonic
   where the system lets a condition variable use it). */
int weft__cond_init(weft_cond *c) {
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0) return WEFT_EIO;
  weft__plat_cond_clock(&ca);
  int bad = pthread_cond_init(COND(c), &ca);
  pthread_condattr_destroy(&ca);
  return bad ? WEFT_EIO : WEFT_OK;
}
void weft__cond_destroy(weft_cond *c) { pthread_cond_destroy(COND(c)); }
void weft__cond_wait(weft_cond *c, weft_mutex *m) { pthread_cond_wait(COND(c), MUTEX(m)); }
void weft__cond_signal(weft_cond *c) { pthread_cond_signal(COND(c)); }
void weft__cond_broadcast(weft_cond *c) { pthread_cond_broadcast(COND(c)); }

int weft__cond_wait_ns(weft_cond *c, weft_mutex *m, uint64_t ns) {
  struct timespec t;
  clock_gettime(weft__plat_cond_clock(NULL), &t);
  uint64_t sum = (uint64_t)t.tv_nsec + ns % 1000000000u;
  t.tv_sec += (time_t)(ns / 1000000000u + sum / 1000000000u);
  t.tv_nsec = (long)(sum % 1000000000u);
  return pthread_cond_timedwait(COND(c), MUTEX(m), &t) == ETIMEDOUT;
}

void weft__once_run(weft_once *o, void (*fn)(void)) {
  if (atomic_load_explicit(&o->state, memory_order_acquire) == 2) return;
  int expect = 0;
  if (atomic_compare_exchange_strong(&o->state, &expect, 1)) {
    fn();
    atomic_store_explicit(&o->state, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&o->state, memory_order_acquire) != 2) sched_yield();
}

int weft__cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
#endif

/* clock_gettime of id, or of the monotonic clock where the system names
   id but refuses it (EINVAL: emscripten has neither the coarse nor the
   thread's processor clock). */
static uint64_t read_clock(clockid_t id) {
  struct timespec t;
  if (clock_gettime(id, &t) != 0 && clock_gettime(CLOCK_MONOTONIC, &t) != 0) return 0;
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t weft__clock_ns(void) { return read_clock(CLOCK_MONOTONIC); }

uint64_t weft__clock_coarse_ns(void) {
#ifdef CLOCK_MONOTONIC_COARSE
  return read_clock(CLOCK_MONOTONIC_COARSE);
#else
  return read_clock(CLOCK_MONOTONIC);
#endif
}

/* Without a thread processor clock, the costs and budgets count wall
   time. */
uint64_t weft__thread_cpu_ns(void) {
#ifdef CLOCK_THREAD_CPUTIME_ID
  return read_clock(CLOCK_THREAD_CPUTIME_ID);
#else
  return read_clock(CLOCK_MONOTONIC);
#endif
}

/* ---- files and directories ---- */

int weft__stat_path(const char *path, weft_stat *st) {
  struct stat s;
  if (stat(path, &s) != 0)
    return errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG ? WEFT_EINVAL : WEFT_EIO;
  st->size = (int64_t)s.st_size;
#if defined(__APPLE__)
  st->mtime_ns = (int64_t)s.st_mtimespec.tv_sec * 1000000000 + s.st_mtimespec.tv_nsec;
  st->ctime_ns = (int64_t)s.st_ctimespec.tv_sec * 1000000000 + s.st_ctimespec.tv_nsec;
#else
  st->mtime_ns = (int64_t)s.st_mtim.tv_sec * 1000000000 + s.st_mtim.tv_nsec;
  st->ctime_ns = (int64_t)s.st_ctim.tv_sec * 1000000000 + s.st_ctim.tv_nsec;
#endif
  st->is_file = S_ISREG(s.st_mode) != 0;
  st->is_dir = S_ISDIR(s.st_mode) != 0;
  return WEFT_OK;
}

int weft__dir_list(const char *path, int (*each)(void *ud, const char *name, int is_dir),
                   void *ud) {
  DIR *d = opendir(path);
  if (!d) return WEFT_EINVAL;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *n = e->d_name;
    if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]))) continue;
    int is_dir = 0;
#ifdef DT_DIR
    is_dir = e->d_type == DT_DIR;
#endif
    if (each(ud, n, is_dir)) break;
  }
  closedir(d);
  return WEFT_OK;
}

int weft__path_resolve(const char *path, char *out, size_t cap) {
  char buf[PATH_MAX];
  if (!realpath(path, buf) || strlen(buf) >= cap) return WEFT_EINVAL;
  memcpy(out, buf, strlen(buf) + 1);
  return WEFT_OK;
}

int weft__path_absolute(const char *path, char *out, size_t cap) {
  if (path[0] == '/') return (size_t)snprintf(out, cap, "%s", path) < cap ? WEFT_OK : WEFT_EINVAL;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return WEFT_EINVAL;
  return (size_t)snprintf(out, cap, "%s/%s", cwd, path) < cap ? WEFT_OK : WEFT_EINVAL;
}

/* ---- local sockets ---- */

static int nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0;
}

int weft__sock_listen(int port, weft_sock *out, int *bound) {
  *out = WEFT_SOCK_NONE;
  if (port < 0 || port > 65535) return WEFT_EINVAL;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return WEFT_EIO;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  int one = 1;
  socklen_t alen = sizeof a;
  if (!nonblocking(fd) || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, WEFT_SOCK_BACKLOG) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
    close(fd);
    return WEFT_EIO;
  }
  if (bound) *bound = ntohs(a.sin_port);
  *out = fd;
  return WEFT_OK;
}

int weft__sock_accept(weft_sock listener, weft_sock *out) {
  *out = WEFT_SOCK_NONE;
  int fd;
  do fd = accept((int)listener, NULL, NULL);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? WEFT_EBUSY : WEFT_EIO;
  if (!nonblocking(fd) || weft__plat_sock_nosigpipe(fd) != 0) {
    close(fd);
    return WEFT_EIO;
  }
  int one = 1; /* no Nagle: a message sent right after another does not wait for its ACK */
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *out = fd;
  return WEFT_OK;
}

int weft__sock_wait(weft_sock s, int what, int timeout_ms) {
  struct pollfd p = {
      (int)s, (short)((what & WEFT_SOCK_IN ? POLLIN : 0) | (what & WEFT_SOCK_OUT ? POLLOUT : 0)),
      0};
  int r = poll(&p, 1, timeout_ms < 0 ? -1 : timeout_ms);
  if (r < 0) return errno == EINTR ? 0 : WEFT_EIO;
  return r > 0;
}

int weft__sock_wait_in(const weft_sock *s, int n, int timeout_ms) {
  struct pollfd p[8];
  if (n < 1 || n > 8) return WEFT_EINVAL;
  for (int i = 0; i < n; i++) p[i] = (struct pollfd){(int)s[i], POLLIN, 0};
  int r = poll(p, (nfds_t)n, timeout_ms < 0 ? -1 : timeout_ms);
  if (r < 0) return errno == EINTR ? 0 : WEFT_EIO;
  int mask = 0;
  for (int i = 0; i < n; i++)
    if (p[i].revents) mask |= 1 << i;
  return mask;
}

long weft__sock_recv(weft_sock s, void *buf, size_t n) {
  for (;;) {
    ssize_t r = recv((int)s, buf, n, 0);
    if (r > 0) return (long)r;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return WEFT_ECLOSED;
  }
}

long weft__sock_send(weft_sock s, const void *buf, size_t n) {
  int flags = weft__plat_send_flags(); /* a closed peer is an error here, not SIGPIPE */
  for (;;) {
    ssize_t r = send((int)s, buf, n, flags);
    if (r >= 0) return (long)r;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return WEFT_ECLOSED;
  }
}

void weft__sock_close(weft_sock s) {
  if (s != WEFT_SOCK_NONE) close((int)s);
}
#endif
