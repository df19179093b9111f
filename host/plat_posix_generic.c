/* The POSIX platform layer's system pieces (plat_posix.h) for a POSIX
   system weft has no file of its own for, using nothing past POSIX:
   no change notifications (the watcher polls), no CPU clock of another
   thread (budgets count instructions: the watchdog does not start),
   timed waits on the clock condition variables have by default
   (CLOCK_REALTIME), MSG_NOSIGNAL where the system defines it. On Linux
   it is built instead of plat_linux.c with WEFT_PLAT_GENERIC, which
   make test-c does for the host tests (build/tests/generic/). A port to
   a system (macOS: kqueue or FSEvents, thread_info, SO_NOSIGPIPE)
   replaces it with a file of its own, as plat_linux.c does. */
#if !defined(_WIN32) && (!defined(__linux__) || defined(WEFT_PLAT_GENERIC))
#include "plat.h"
#include "plat_posix.h"

#include <sys/socket.h>

/* The default clock: a change of the wall clock stretches or cuts a
   wait in progress (the watchdog's naps, a job wait), which each caller's
   loop over its condition absorbs. */
clockid_t weft__plat_cond_clock(pthread_condattr_t *ca) {
  (void)ca;
  return CLOCK_REALTIME;
}

int weft__plat_sock_nosigpipe(int fd) {
  (void)fd;
  return 0;
}

/* Without MSG_NOSIGNAL (nor a port's SO_NOSIGPIPE) a write to a debugger
   client that went away raises SIGPIPE: weft installs no handler, so the
   program ignores SIGPIPE itself there. */
int weft__plat_send_flags(void) {
#ifdef MSG_NOSIGNAL
  return MSG_NOSIGNAL;
#else
  return 0;
#endif
}

/* No clock of another thread's CPU time: the watchdog cannot start and
   budgets count instructions instead (weft_open falls back by itself). */
int weft__cpu_clock_self(weft_cpu_clock *c) {
  (void)c;
  return WEFT_EIO;
}
uint64_t weft__cpu_clock_ns(const weft_cpu_clock *c) {
  (void)c;
  return 0;
}
void weft__cpu_clock_close(weft_cpu_clock *c) { (void)c; }

/* No change notifications: the watcher polls. */
int weft__fswatch_open(const char *root, weft_alloc_fn alloc, void *alloc_ud, weft_fswatch **out) {
  (void)root, (void)alloc, (void)alloc_ud;
  *out = NULL;
  return WEFT_EIO;
}
void weft__fswatch_close(weft_fswatch *fw) { (void)fw; }
int weft__fswatch_add_dir(weft_fswatch *fw, const char *rel) {
  (void)fw, (void)rel;
  return WEFT_EIO;
}
int weft__fswatch_read(weft_fswatch *fw,
                       void (*on)(void *ud, int kind, const char *rel, const char *name),
                       void *ud) {
  (void)fw, (void)on, (void)ud;
  return 0;
}
#endif
