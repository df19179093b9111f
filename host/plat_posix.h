/* What plat_posix.c (the platform layer common to POSIX systems) asks of
   the file that knows its system: plat_linux.c on Linux,
   plat_posix_generic.c on any other POSIX system, and on Linux too when
   built with WEFT_PLAT_GENERIC (make test-c tests it so). Each of those
   files also gives plat.h's change notifications (weft_fswatch_*) and
   another thread's CPU clock (weft_cpu_clock_*). */
/* A port to another system (macOS) is one more file beside
   plat_linux.c, say plat_macos.c under #ifdef __APPLE__ (and
   plat_posix_generic.c's #if then leaves __APPLE__ out). It gives:
   - weft__plat_cond_clock: macOS has no pthread_condattr_setclock;
     CLOCK_REALTIME as the generic file does (or weft__cond_wait_ns
     rewritten over pthread_cond_timedwait_relative_np).
   - weft__cpu_clock_self/_ns/_close: another thread's CPU time, read
     from the watchdog: the mach port of pthread_mach_thread_np
     (pthread_self()) in the store, thread_info(THREAD_BASIC_INFO)'s
     user + system time. Without it (WEFT_EIO) budgets count
     instructions, as on the generic file.
   - weft__fswatch_open/_add_dir/_read/_close: FSEvents (one stream for
     the root, recursive, with kFSEventStreamCreateFlagFileEvents: its
     callback queues events under a mutex that _read drains without
     blocking) or kqueue (EVFILT_VNODE, a descriptor per directory:
     NOTE_WRITE on a directory reports WEFT_FS_NEWDIR or a rescan).
     Paths relative to the root, '/'-separated; every block from the
     alloc given to _open; a dropped event is WEFT_FS_LOST. WEFT_EIO
     from _open makes the watcher poll.
   - weft__plat_sock_nosigpipe: setsockopt SO_NOSIGPIPE on the accepted
     socket; weft__plat_send_flags: 0 (macOS has no MSG_NOSIGNAL).
   plat_posix.c already covers the rest on macOS: CLOCK_THREAD_CPUTIME_ID
   (macOS 10.12), CLOCK_MONOTONIC (no _COARSE: the fine one is used),
   st_mtimespec/st_ctimespec (#ifdef __APPLE__ in weft__stat_path).
   Outside host/: the build defines _DARWIN_C_SOURCE beside
   _POSIX_C_SOURCE, compiles Lua with LUA_USE_MACOSX, links libweft.dylib
   with an install name instead of -soname, and test_embedder needs
   another way than GNU ld's --wrap to see malloc; the demo finds its
   files with _NSGetExecutablePath instead of /proc/self/exe. */
#ifndef WEFT_PLAT_POSIX_H
#define WEFT_PLAT_POSIX_H

#include <pthread.h>
#include <time.h>

/* The clock timed condition waits count on: sets it into ca (when not
   NULL) and returns it. Every condition variable uses the same one. */
clockid_t weft__plat_cond_clock(pthread_condattr_t *ca);
/* Makes an accepted socket's sends to a closed peer fail with EPIPE
   instead of raising SIGPIPE, where the system does that per socket.
   0 on success. */
int weft__plat_sock_nosigpipe(int fd);
/* The flags of send(): the same per call, where the system does it so. */
int weft__plat_send_flags(void);

#endif
