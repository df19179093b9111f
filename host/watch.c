/* Script file watcher: inotify with a quiet window and content hashes, or
   stat() polling. One entry per known *.lua file. */
#define _DEFAULT_SOURCE
#include "watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EVENTS (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MODIFY)

typedef struct file {
  char *path;                   /* relative to root, owned */
  uint64_t hash;                /* content hash last reported (or seen at start) */
  long long size, mtime, ctime; /* stat in nanoseconds, for polling */
  double due;                   /* end of the quiet window, 0 when not armed */
  int seen;                     /* found in the current poll scan */
} file;

typedef struct dirw {
  int wd;
  char *path; /* relative to root ("" for root), owned */
} dirw;

struct weft_watch {
  char *root;
  weft_watch_desc desc;
  int fd; /* inotify, -1 when polling */
  file *files;
  int nfiles, capfiles;
  dirw *dirs;
  int ndirs, capdirs;
  double next_poll;
};

double weft_watch_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int weft_watch_ignored(const char *name) {
  size_t n = strlen(name);
  if (n < 5 || name[0] == '.' || name[0] == '#') return 1; /* hidden, emacs locks/autosaves */
  if (strcmp(name + n - 4, ".lua") != 0) return 1;         /* backups~, .swp, 4913, .tmp */
  return 0;
}

static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 2);
  if (!s) return NULL;
  memcpy(s, a, la);
  size_t k = la;
  if (la && lb) s[k++] = '/';
  memcpy(s + k, b, lb + 1);
  return s;
}

/* FNV-1a over the file's bytes; 0 when it cannot be read. */
static uint64_t hash_file(const char *full) {
  FILE *f = fopen(full, "rb");
  if (!f) return 0;
  uint64_t h = 1469598103934665603ull;
  unsigned char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    for (size_t i = 0; i < n; i++) h = (h ^ buf[i]) * 1099511628211ull;
  fclose(f);
  return h ? h : 1;
}

static file *find_file(weft_watch *w, const char *rel) {
  for (int i = 0; i < w->nfiles; i++)
    if (strcmp(w->files[i].path, rel) == 0) return &w->files[i];
  return NULL;
}

static void stat_into(file *f, const struct stat *st) {
  f->size = (long long)st->st_size;
  f->mtime = (long long)st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec;
  f->ctime = (long long)st->st_ctim.tv_sec * 1000000000ll + st->st_ctim.tv_nsec;
}

/* Finds or adds a file entry. A new entry's hash is taken now when
   `baseline`, so only later edits count as changes. */
static file *track(weft_watch *w, const char *rel, int baseline) {
  file *f = find_file(w, rel);
  if (f) return f;
  if (w->nfiles == w->capfiles) {
    int nc = w->capfiles ? w->capfiles * 2 : 32;
    file *nf = realloc(w->files, sizeof(file) * (size_t)nc);
    if (!nf) return NULL;
    w->files = nf;
    w->capfiles = nc;
  }
  f = &w->files[w->nfiles];
  memset(f, 0, sizeof *f);
  f->path = strdup(rel);
  if (!f->path) return NULL;
  w->nfiles++;
  char *full = join(w->root, rel);
  if (full) {
    struct stat st;
    if (stat(full, &st) == 0) stat_into(f, &st);
    if (baseline) f->hash = hash_file(full);
    free(full);
  }
  return f;
}

static void add_dir_watch(weft_watch *w, const char *rel) {
  if (w->fd < 0) return;
  char *full = join(w->root, rel);
  if (!full) return;
  int wd = inotify_add_watch(w->fd, full, EVENTS);
  free(full);
  if (wd < 0) return;
  for (int i = 0; i < w->ndirs; i++)
    if (w->dirs[i].wd == wd) return; /* already watched */
  if (w->ndirs == w->capdirs) {
    int nc = w->capdirs ? w->capdirs * 2 : 16;
    dirw *nd = realloc(w->dirs, sizeof(dirw) * (size_t)nc);
    if (!nd) return;
    w->dirs = nd;
    w->capdirs = nc;
  }
  w->dirs[w->ndirs].wd = wd;
  w->dirs[w->ndirs].path = strdup(rel);
  if (w->dirs[w->ndirs].path) w->ndirs++;
}

/* Walks the tree under rel: watches directories; for files, either
   records a baseline (`baseline`), or arms those whose stat changed or
   that are new (`arm_at` > 0). */
static void scan(weft_watch *w, const char *rel, int baseline, double arm_at) {
  char *full = join(w->root, rel);
  if (!full) return;
  DIR *d = opendir(full);
  free(full);
  if (!d) return;
  add_dir_watch(w, rel);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char *sub = join(rel, e->d_name);
    if (!sub) continue;
    char *subfull = join(w->root, sub);
    struct stat st;
    if (subfull && stat(subfull, &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        scan(w, sub, baseline, arm_at);
      } else if (S_ISREG(st.st_mode) && !weft_watch_ignored(e->d_name)) {
        int known = find_file(w, sub) != NULL;
        file *f = track(w, sub, baseline);
        if (f) {
          f->seen = 1;
          long long size = f->size, mt = f->mtime, ct = f->ctime;
          stat_into(f, &st);
          /* A file new since the last scan, or whose stat changed, is armed. */
          if (!baseline && arm_at > 0 &&
              (!known || size != f->size || mt != f->mtime || ct != f->ctime))
            f->due = arm_at;
        }
      }
    }
    free(subfull);
    free(sub);
  }
  closedir(d);
}

int weft_watch_open(const char *root, const weft_watch_desc *desc, weft_watch **out) {
  *out = NULL;
  struct stat st;
  if (!root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) return WEFT_EINVAL;
  weft_watch *w = calloc(1, sizeof *w);
  if (!w) return WEFT_ENOMEM;
  if (desc) w->desc = *desc;
  if (w->desc.quiet <= 0) w->desc.quiet = 0.1;
  if (w->desc.poll_every <= 0) w->desc.poll_every = 0.25;
  const char *env = getenv("WEFT_WATCH");
  if (env && strcmp(env, "poll") == 0) w->desc.force_poll = 1;
  w->root = strdup(root);
  w->fd = w->desc.force_poll ? -1 : inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (!w->root) {
    weft_watch_close(w);
    return WEFT_ENOMEM;
  }
  scan(w, "", 1, 0);
  *out = w;
  return WEFT_OK;
}

void weft_watch_close(weft_watch *w) {
  if (!w) return;
  if (w->fd >= 0) close(w->fd);
  for (int i = 0; i < w->nfiles; i++) free(w->files[i].path);
  for (int i = 0; i < w->ndirs; i++) free(w->dirs[i].path);
  free(w->files);
  free(w->dirs);
  free(w->root);
  free(w);
}

int weft_watch_polling(const weft_watch *w) { return w->fd < 0; }

static const char *dir_of(weft_watch *w, int wd) {
  for (int i = 0; i < w->ndirs; i++)
    if (w->dirs[i].wd == wd) return w->dirs[i].path;
  return NULL;
}

/* Drains inotify: arms (or extends) the quiet window of touched files,
   watches new directories, rescans on overflow. */
static void read_events(weft_watch *w, double now) {
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n <= 0) break;
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        scan(w, "", 0, now + w->desc.quiet);
        /* A rescan cannot see edits that kept size and times: recheck hashes. */
        for (int i = 0; i < w->nfiles; i++) w->files[i].due = now + w->desc.quiet;
        continue;
      }
      const char *dir = dir_of(w, ev->wd);
      if (!dir || !ev->len) continue;
      char *rel = join(dir, ev->name);
      if (!rel) continue;
      if (ev->mask & IN_ISDIR) {
        if (ev->mask & (IN_CREATE | IN_MOVED_TO)) scan(w, rel, 0, now + w->desc.quiet);
      } else if (!weft_watch_ignored(ev->name)) {
        /* Close, rename-in and create arm the quiet window; a write only
           extends one already armed (truncate-then-write, slow writers). */
        file *f = track(w, rel, 0);
        if (f && (!(ev->mask & IN_MODIFY) || f->due > 0)) f->due = now + w->desc.quiet;
      }
      free(rel);
    }
  }
}

int weft_watch_poll(weft_watch *w, double now, void (*changed)(void *ud, const char *path),
                    void *ud) {
  if (w->fd >= 0) {
    read_events(w, now);
  } else if (now >= w->next_poll) {
    w->next_poll = now + w->desc.poll_every;
    scan(w, "", 0, now + w->desc.quiet);
  }
  int reported = 0;
  for (int i = 0; i < w->nfiles; i++) {
    file *f = &w->files[i];
    if (f->due <= 0 || now < f->due) continue;
    f->due = 0;
    char *full = join(w->root, f->path);
    uint64_t h = full ? hash_file(full) : 0;
    free(full);
    if (h == 0 || h == f->hash) continue; /* gone, unreadable, or unchanged */
    f->hash = h;
    reported++;
    changed(ud, f->path);
  }
  return reported;
}
