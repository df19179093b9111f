/* The Linux pieces of the POSIX platform layer (plat_posix.h): inotify
   for change notifications, another thread's CPU clock through
   pthread_getcpuclockid, timed waits on CLOCK_MONOTONIC
   (pthread_condattr_setclock) and MSG_NOSIGNAL. */
#if defined(__linux__) && !defined(WEFT_PLAT_GENERIC)
#define _GNU_SOURCE /* inotify, pthread_getcpuclockid */
#include "plat.h"
#include "plat_posix.h"

#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

/* Timed waits are on CLOCK_MONOTONIC, so a change of the wall clock does
   not stretch or cut them. */
clockid_t weft__plat_cond_clock(pthread_condattr_t *ca) {
  if (ca) pthread_condattr_setclock(ca, CLOCK_MONOTONIC);
  return CLOCK_MONOTONIC;
}

int weft__plat_sock_nosigpipe(int fd) {
  (void)fd; /* send says so on each call (MSG_NOSIGNAL) */
  return 0;
}

int weft__plat_send_flags(void) { return MSG_NOSIGNAL; }

/* ---- another thread's CPU clock (the watchdog reads the main thread's) ---- */

_Static_assert(sizeof(clockid_t) <= sizeof(weft_plat_store), "clockid_t fits");

int weft__cpu_clock_self(weft_cpu_clock *c) {
  clockid_t id;
  if (pthread_getcpuclockid(pthread_self(), &id) != 0) return WEFT_EIO;
  memcpy(c->os.bytes, &id, sizeof id);
  return WEFT_OK;
}

uint64_t weft__cpu_clock_ns(const weft_cpu_clock *c) {
  clockid_t id;
  memcpy(&id, c->os.bytes, sizeof id);
  struct timespec t;
  if (clock_gettime(id, &t) != 0) return 0;
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void weft__cpu_clock_close(weft_cpu_clock *c) { (void)c; }

/* ---- change notifications: inotify, one watch per directory ---- */

#define EVENTS (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MODIFY)

typedef struct dirw {
  int wd;
  char *rel; /* relative to the root ("" for the root), owned */
} dirw;

struct weft_fswatch {
  int fd;
  char *root;
  dirw *dirs; /* looked up by wd: O(n) in the directories watched */
  int ndirs, capdirs;
  weft_alloc_fn alloc;
  void *alloc_ud;
};

static char *dup_join(weft_fswatch *fw, const char *a, const char *b) {
  return weft__str_join(fw->alloc, fw->alloc_ud, a, b);
}

static void free_str(weft_fswatch *fw, char *s) { weft__str_free(fw->alloc, fw->alloc_ud, s); }

int weft__fswatch_open(const char *root, weft_alloc_fn alloc, void *alloc_ud, weft_fswatch **out) {
  *out = NULL;
  weft_fswatch *fw = alloc(alloc_ud, NULL, 0, sizeof *fw);
  if (!fw) return WEFT_ENOMEM;
  memset(fw, 0, sizeof *fw);
  fw->alloc = alloc;
  fw->alloc_ud = alloc_ud;
  fw->root = dup_join(fw, root, "");
  if (!fw->root) {
    alloc(alloc_ud, fw, sizeof *fw, 0);
    return WEFT_ENOMEM;
  }
  fw->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fw->fd < 0) {
    weft__fswatch_close(fw);
    return WEFT_EIO;
  }
  *out = fw;
  return WEFT_OK;
}

void weft__fswatch_close(weft_fswatch *fw) {
  if (!fw) return;
  if (fw->fd >= 0) close(fw->fd);
  for (int i = 0; i < fw->ndirs; i++) free_str(fw, fw->dirs[i].rel);
  if (fw->dirs) fw->alloc(fw->alloc_ud, fw->dirs, sizeof(dirw) * (size_t)fw->capdirs, 0);
  free_str(fw, fw->root);
  fw->alloc(fw->alloc_ud, fw, sizeof *fw, 0);
}

int weft__fswatch_add_dir(weft_fswatch *fw, const char *rel) {
  char *full = dup_join(fw, fw->root, rel);
  if (!full) return WEFT_ENOMEM;
  int wd = inotify_add_watch(fw->fd, full, EVENTS);
  free_str(fw, full);
  if (wd < 0) return WEFT_EIO;
  for (int i = 0; i < fw->ndirs; i++)
    if (fw->dirs[i].wd == wd) return WEFT_OK; /* already watched */
  if (fw->ndirs == fw->capdirs) {
    int nc = fw->capdirs ? fw->capdirs * 2 : 16;
    dirw *nd = fw->alloc(fw->alloc_ud, fw->dirs, sizeof(dirw) * (size_t)fw->capdirs,
                         sizeof(dirw) * (size_t)nc);
    if (!nd) return WEFT_ENOMEM;
    fw->dirs = nd;
    fw->capdirs = nc;
  }
  fw->dirs[fw->ndirs].wd = wd;
  fw->dirs[fw->ndirs].rel = dup_join(fw, rel, "");
  if (!fw->dirs[fw->ndirs].rel) return WEFT_ENOMEM;
  fw->ndirs++;
  return WEFT_OK;
}

static const char *dir_of(weft_fswatch *fw, int wd) {
  for (int i = 0; i < fw->ndirs; i++)
    if (fw->dirs[i].wd == wd) return fw->dirs[i].rel;
  return NULL;
}

int weft__fswatch_read(weft_fswatch *fw,
                       void (*on)(void *ud, int kind, const char *rel, const char *name),
                       void *ud) {
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  int count = 0;
  for (;;) {
    ssize_t n = read(fw->fd, buf, sizeof buf);
    if (n <= 0) break;
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)(void *)p;
      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        on(ud, WEFT_FS_LOST, "", "");
        count++;
        continue;
      }
      const char *dir = dir_of(fw, ev->wd);
      if (!dir || !ev->len) continue;
      int kind;
      if (ev->mask & IN_ISDIR) {
        if (!(ev->mask & (IN_CREATE | IN_MOVED_TO))) continue;
        kind = WEFT_FS_NEWDIR;
      } else {
        kind = (ev->mask & IN_MODIFY) ? WEFT_FS_WRITTEN : WEFT_FS_SAVED;
      }
      char *rel = dup_join(fw, dir, ev->name);
      if (!rel) continue;
      /* dir may move when on adds a directory: rel is a copy. */
      on(ud, kind, rel, rel + strlen(rel) - strlen(ev->name));
      free_str(fw, rel);
      count++;
    }
  }
  return count;
}
#endif
