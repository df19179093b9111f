/* The operating system, as weft uses it: threads, locks, a monotonic
   clock, files and directories, change notifications and local sockets.
   plat_posix.c implements it on POSIX (with plat_linux.c on Linux,
   plat_posix_generic.c on other POSIX systems), plat_win32.c on Windows;
   plat_nothreads.c gives the threads of a system that has none
   (WEFT_PLAT_NOTHREADS: the web build), where no thread ever starts.
   Everything else in weft is plain C11. */
#ifndef WEFT_PLAT_H
#define WEFT_PLAT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "weft_base.h"

/* ---- threads ---- */

/* Storage for an OS object, sized and aligned for the largest one weft
   wraps (each platform file checks that its type fits). */
typedef union weft_plat_store {
  void *p;
  long long ll;
  double d;
  unsigned char bytes[64];
} weft_plat_store;

/* A thread. The caller owns the struct; it must stay where it is (not be
   moved or freed) from weft__thread_start until weft__thread_join. */
typedef struct weft_thread {
  void (*fn)(void *arg);
  void *arg;
  weft_plat_store os;
} weft_thread;

/* Starts fn(arg) on a new thread with a stack of stack_size bytes (0: the
   system's default). Returns WEFT_OK, or WEFT_EIO when no thread could be
   started (fn is then never called). */
int weft__thread_start(weft_thread *t, void (*fn)(void *arg), void *arg, size_t stack_size);
/* Waits until t's function has returned and releases the thread. Call it
   exactly once for every thread started, never from t itself. */
void weft__thread_join(weft_thread *t);

/* A mutex (not recursive) and a condition variable, in the caller's
   storage. Destroy each once, while nothing holds or waits on it. */
typedef struct weft_mutex {
  weft_plat_store os;
} weft_mutex;
typedef struct weft_cond {
  weft_plat_store os;
} weft_cond;

/* Returns WEFT_OK, or WEFT_EIO (m or c is then not initialised). */
int weft__mutex_init(weft_mutex *m);
void weft__mutex_destroy(weft_mutex *m);
void weft__mutex_lock(weft_mutex *m);
void weft__mutex_unlock(weft_mutex *m);
int weft__cond_init(weft_cond *c);
void weft__cond_destroy(weft_cond *c);
/* Releases m (held by the caller), sleeps until signalled, takes m again.
   May return without a signal: callers wait in a loop over their
   condition. */
void weft__cond_wait(weft_cond *c, weft_mutex *m);
/* As weft__cond_wait, sleeping at most ns nanoseconds on the monotonic
   clock (changes of the wall clock do not shorten or lengthen it).
   Returns 0 when woken (or spuriously), 1 when the time ran out. */
int weft__cond_wait_ns(weft_cond *c, weft_mutex *m, uint64_t ns);
void weft__cond_signal(weft_cond *c);
void weft__cond_broadcast(weft_cond *c);

/* Runs fn once per weft_once, however many threads call weft__once_run at
   once: the others wait until it has returned. Zero-initialised storage
   (WEFT_ONCE_INIT) is a once not yet run. */
typedef struct weft_once {
  atomic_int state; /* 0: not run, 1: running, 2: done */
} weft_once;
#define WEFT_ONCE_INIT                                                                             \
  { 0 }
void weft__once_run(weft_once *o, void (*fn)(void));

/* The number of processors online (at least 1). */
int weft__cpu_count(void);
/* Nanoseconds on a monotonic clock with an arbitrary origin. */
uint64_t weft__clock_ns(void);
/* weft__clock_ns's clock as the system last ticked it: a few nanoseconds
   to read, a few milliseconds coarse. */
uint64_t weft__clock_coarse_ns(void);
/* Nanoseconds of processor time the calling thread has used (a system
   call: about a microsecond). */
uint64_t weft__thread_cpu_ns(void);
/* The calling thread's processor-time clock, readable from any thread
   (weft__cpu_clock_ns) until weft__cpu_clock_close. WEFT_EIO: none. */
typedef struct weft_cpu_clock {
  weft_plat_store os;
} weft_cpu_clock;
int weft__cpu_clock_self(weft_cpu_clock *c);
uint64_t weft__cpu_clock_ns(const weft_cpu_clock *c);
void weft__cpu_clock_close(weft_cpu_clock *c);

/* ---- files and directories ---- */

/* Paths are UTF-8 and may use '/' on every platform. */
typedef struct weft_stat {
  int64_t size;     /* bytes */
  int64_t mtime_ns; /* last write, nanoseconds since the epoch */
  int64_t ctime_ns; /* last change of content or metadata (POSIX st_ctime;
                       Windows: the file system's change time, or the last
                       write where it has none) */
  uint8_t is_file;  /* a regular file (not a directory, FIFO, device...) */
  uint8_t is_dir;
} weft_stat;

/* Fills *st for path, following symbolic links. Returns WEFT_OK,
   WEFT_EINVAL when there is no such file (or the path is too long), or
   WEFT_EIO. */
int weft__stat_path(const char *path, weft_stat *st);

/* Calls each(ud, name, is_dir) for every entry of the directory at path,
   "." and ".." left out, in the order the system gives. name is valid
   during the call only. is_dir is what the directory says of the entry
   (a symbolic link to a directory may read as not one: stat it when that
   matters). each returns nonzero to stop early. Returns WEFT_OK, or
   WEFT_EINVAL when path is not a readable directory. */
int weft__dir_list(const char *path, int (*each)(void *ud, const char *name, int is_dir), void *ud);

/* The longest path weft__path_resolve and weft__path_absolute give. */
#define WEFT_PATH_MAX 4096

/* The absolute path of the existing file at path, every symbolic link,
   "." and ".." resolved, into out (cap bytes; '/'-separated on every
   platform). Returns WEFT_OK, or WEFT_EINVAL when there is no such file
   or out is too small. */
int weft__path_resolve(const char *path, char *out, size_t cap);
/* path made absolute against the working directory, into out, without
   resolving links or asking that it exists. Returns WEFT_OK, or
   WEFT_EINVAL when out is too small. */
int weft__path_absolute(const char *path, char *out, size_t cap);

/* ---- change notifications ---- */

/* What happened to a path under a watched root. */
enum {
  WEFT_FS_SAVED = 1, /* a file was created, moved in, or closed after a write
                        (Windows, which tells no closes: written) */
  WEFT_FS_WRITTEN,   /* a file was written to; more writes may follow */
  WEFT_FS_NEWDIR,    /* a directory was created or moved in: its contents
                        were not reported (scan it) */
  WEFT_FS_LOST       /* events were lost: anything under the root may have
                        changed (path is "") */
};

/* The system's change notifications for a directory tree, one watch per
   directory: inotify on Linux, ReadDirectoryChangesW on Windows. Every
   path it reports is relative to the root, '/'-separated
   ("ai/patrol.lua"). */
typedef struct weft_fswatch weft_fswatch;

/* Starts watching the directory root and everything below it into *out,
   its memory from alloc(alloc_ud, ...) (weft_alloc_fn's contract).
   Directories below root that exist now or appear later are watched once
   weft__fswatch_add_dir names them. Returns WEFT_OK, WEFT_ENOMEM, or
   WEFT_EIO when the system has no notifications to give (*out is then
   NULL: poll instead). */
int weft__fswatch_open(const char *root, weft_alloc_fn alloc, void *alloc_ud, weft_fswatch **out);
/* Stops watching and frees everything. NULL is allowed. */
void weft__fswatch_close(weft_fswatch *fw);
/* Watches the directory rel (relative to the root, "" for the root) too.
   Returns WEFT_OK, WEFT_ENOMEM or WEFT_EIO. */
int weft__fswatch_add_dir(weft_fswatch *fw, const char *rel);
/* Reads the events pending, without blocking, and calls on(ud, kind,
   rel, name) for each: kind is a WEFT_FS_* value, rel the path relative
   to the root and name its last component (both valid during the call
   only). on may call weft__fswatch_add_dir. Returns the number of
   events. */
int weft__fswatch_read(weft_fswatch *fw,
                       void (*on)(void *ud, int kind, const char *rel, const char *name), void *ud);

/* ---- local sockets (the debugger's) ---- */

/* A socket; WEFT_SOCK_NONE is none. */
typedef intptr_t weft_sock;
#define WEFT_SOCK_NONE ((weft_sock)-1)

/* Connections the system holds for a listener until they are accepted. */
#define WEFT_SOCK_BACKLOG 8
/* Listens for TCP connections on 127.0.0.1 at port (0: any free port),
   into *out, the port bound in *bound (when not NULL). Not inherited by
   child processes. Returns WEFT_OK, or WEFT_EIO (the port is taken,
   sockets are unavailable). */
int weft__sock_listen(int port, weft_sock *out, int *bound);
/* Takes a waiting connection, without blocking, into *out (a socket
   that does not block either, Nagle's algorithm off: each send goes out
   at once, not after the peer acknowledged the one before). Returns
   WEFT_OK, WEFT_EBUSY when none is waiting, or WEFT_EIO. */
int weft__sock_accept(weft_sock listener, weft_sock *out);
/* What weft__sock_wait waits for. */
enum { WEFT_SOCK_IN = 1, WEFT_SOCK_OUT = 2 };
/* Waits at most timeout_ms milliseconds (0: not at all, negative: for
   ever) until s is ready for what (WEFT_SOCK_IN: something to read, for a
   listener a connection; WEFT_SOCK_OUT: room to send). Returns 1 when it
   is, 0 when the time ran out, WEFT_EIO on error. */
int weft__sock_wait(weft_sock s, int what, int timeout_ms);
/* Waits like weft__sock_wait for any of n sockets (n <= 8) to have
   something to read. Returns a mask (bit i: s[i] is ready), 0 when the
   time ran out, WEFT_EIO on error. */
int weft__sock_wait_in(const weft_sock *s, int n, int timeout_ms);
/* Receives at most n bytes into buf without blocking. Returns the number
   received (> 0), 0 when nothing is there now, or WEFT_ECLOSED when the
   peer has closed or the connection failed. */
long weft__sock_recv(weft_sock s, void *buf, size_t n);
/* Sends at most n bytes of buf without blocking. Returns the number sent
   (> 0), 0 when the system's buffer is full now (wait for WEFT_SOCK_OUT),
   or WEFT_ECLOSED when the connection is gone (no signal is raised). */
long weft__sock_send(weft_sock s, const void *buf, size_t n);
/* Closes s. WEFT_SOCK_NONE is allowed. */
void weft__sock_close(weft_sock s);

#endif
