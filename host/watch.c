/* Script file watcher: the system's change notifications (plat.h) with a
   quiet window and content hashes, or stat() polling. One entry per known
   *.lua file. */
#include "watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plat.h"

typedef struct file {
  char *path;                   /* relative to root, owned */
  uint64_t hash;                /* content hash last reported (or seen at start) */
  long long size, mtime, ctime; /* stat in nanoseconds, for polling */
  double due;                   /* end of the quiet window, 0 when not armed */
  int seen;                     /* found in the current poll scan */
} file;

struct weft_watch {
  char *root;
  weft_watch_desc desc;
  weft_fswatch *fw; /* the system's notifications, NULL when polling */
  file *files;      /* looked up by path: O(n) in the files known */
  int nfiles, capfiles;
  double next_poll;
  weft_alloc_fn alloc;
  void *alloc_ud;
};

double weft__watch_clock(void) { return (double)weft__clock_ns() * 1e-9; }

int weft__watch_ignored(const char *name) {
  size_t n = strlen(name);
  if (n < 5 || name[0] == '.' || name[0] == '#') return 1; /* hidden, emacs locks/autosaves */
  if (strcmp(name + n - 4, ".lua") != 0) return 1;         /* backups~, .swp, 4913, .tmp */
  return 0;
}

static void free_str(weft_watch *w, char *s) { weft__str_free(w->alloc, w->alloc_ud, s); }

/* a and b joined by '/' (just b when a is ""), owned by the caller. */
static char *join(weft_watch *w, const char *a, const char *b) {
  return weft__str_join(w->alloc, w->alloc_ud, a, b);
}

/* FNV-1a over the file's bytes; 0 when it cannot be read. Only a regular
   file is opened: a FIFO or a device named *.lua would block or never
   end. */
static uint64_t hash_file(const char *full) {
  weft_stat st;
  if (weft__stat_path(full, &st) != WEFT_OK || !st.is_file) return 0;
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

static void stat_into(file *f, const weft_stat *st) {
  f->size = st->size;
  f->mtime = st->mtime_ns;
  f->ctime = st->ctime_ns;
}

/* Finds or adds a file entry. A new entry's hash is taken now when
   `baseline`, so only later edits count as changes. */
static file *track(weft_watch *w, const char *rel, int baseline) {
  file *f = find_file(w, rel);
  if (f) return f;
  if (w->nfiles == w->capfiles) {
    int nc = w->capfiles ? w->capfiles * 2 : 32;
    file *nf = w->alloc(w->alloc_ud, w->files, sizeof(file) * (size_t)w->capfiles,
                        sizeof(file) * (size_t)nc);
    if (!nf) return NULL;
    w->files = nf;
    w->capfiles = nc;
  }
  f = &w->files[w->nfiles];
  memset(f, 0, sizeof *f);
  f->path = join(w, rel, "");
  if (!f->path) return NULL;
  w->nfiles++;
  char *full = join(w, w->root, rel);
  if (full) {
    weft_stat st;
    if (weft__stat_path(full, &st) == WEFT_OK) stat_into(f, &st);
    if (baseline) f->hash = hash_file(full);
    free_str(w, full);
  }
  return f;
}

typedef struct scan_ctx {
  weft_watch *w;
  const char *rel;
  int baseline;
  double arm_at;
} scan_ctx;

static void scan(weft_watch *w, const char *rel, int baseline, double arm_at);

static int scan_entry(void *ud, const char *name, int is_dir) {
  scan_ctx *c = ud;
  weft_watch *w = c->w;
  (void)is_dir; /* stat below says it, following links */
  if (name[0] == '.') return 0;
  char *sub = join(w, c->rel, name);
  char *subfull = sub ? join(w, w->root, sub) : NULL;
  weft_stat st;
  if (subfull && weft__stat_path(subfull, &st) == WEFT_OK) {
    if (st.is_dir) {
      scan(w, sub, c->baseline, c->arm_at);
    } else if (st.is_file && !weft__watch_ignored(name)) {
      int known = find_file(w, sub) != NULL;
      file *f = track(w, sub, c->baseline);
      if (f) {
        f->seen = 1;
        long long size = f->size, mt = f->mtime, ct = f->ctime;
        stat_into(f, &st);
        /* A file new since the last scan, or whose stat changed, is armed. */
        if (!c->baseline && c->arm_at > 0 &&
            (!known || size != f->size || mt != f->mtime || ct != f->ctime))
          f->due = c->arm_at;
      }
    }
  }
  free_str(w, subfull);
  free_str(w, sub);
  return 0;
}

/* Walks the tree under rel: watches directories; for files, either
   records a baseline (`baseline`), or arms those whose stat changed or
   that are new (`arm_at` > 0). Only regular files are scripts. */
static void scan(weft_watch *w, const char *rel, int baseline, double arm_at) {
  char *full = join(w, w->root, rel);
  if (!full) return;
  if (w->fw) weft__fswatch_add_dir(w->fw, rel);
  scan_ctx c = {w, rel, baseline, arm_at};
  weft__dir_list(full, scan_entry, &c);
  free_str(w, full);
}

int weft__watch_open(const char *root, const weft_watch_desc *desc, weft_alloc_fn alloc,
                     void *alloc_ud, weft_watch **out) {
  *out = NULL;
  weft_stat st;
  if (!root || weft__stat_path(root, &st) != WEFT_OK || !st.is_dir) return WEFT_EINVAL;
  if (!alloc) alloc = weft__default_alloc;
  weft_watch *w = alloc(alloc_ud, NULL, 0, sizeof *w);
  if (!w) return WEFT_ENOMEM;
  memset(w, 0, sizeof *w);
  w->alloc = alloc;
  w->alloc_ud = alloc_ud;
  if (desc) w->desc = *desc;
  if (w->desc.quiet <= 0) w->desc.quiet = 0.1;
  if (w->desc.poll_every <= 0) w->desc.poll_every = 0.25;
  w->root = join(w, root, "");
  if (!w->root) {
    weft__watch_close(w);
    return WEFT_ENOMEM;
  }
  /* Without notifications (none on this system, or too many watches) the
     watcher polls. */
  if (!w->desc.force_poll && weft__fswatch_open(root, alloc, alloc_ud, &w->fw) == WEFT_ENOMEM) {
    weft__watch_close(w);
    return WEFT_ENOMEM;
  }
  scan(w, "", 1, 0);
  *out = w;
  return WEFT_OK;
}

void weft__watch_close(weft_watch *w) {
  if (!w) return;
  weft__fswatch_close(w->fw);
  for (int i = 0; i < w->nfiles; i++) free_str(w, w->files[i].path);
  if (w->files) w->alloc(w->alloc_ud, w->files, sizeof(file) * (size_t)w->capfiles, 0);
  free_str(w, w->root);
  w->alloc(w->alloc_ud, w, sizeof *w, 0);
}

int weft__watch_polling(const weft_watch *w) { return w->fw == NULL; }

typedef struct event_ctx {
  weft_watch *w;
  double now;
} event_ctx;

/* One notification: arms (or extends) the quiet window of a touched
   file, scans a new directory, rescans everything when events were
   lost. */
static void on_event(void *ud, int kind, const char *rel, const char *name) {
  event_ctx *c = ud;
  weft_watch *w = c->w;
  double due = c->now + w->desc.quiet;
  if (kind == WEFT_FS_LOST) {
    scan(w, "", 0, due);
    /* A rescan cannot see edits that kept size and times: recheck hashes. */
    for (int i = 0; i < w->nfiles; i++) w->files[i].due = due;
    return;
  }
  if (kind == WEFT_FS_NEWDIR) {
    scan(w, rel, 0, due);
    return;
  }
  if (weft__watch_ignored(name)) return;
  char *full = join(w, w->root, rel);
  weft_stat st;
  int regular = full && weft__stat_path(full, &st) == WEFT_OK && st.is_file;
  free_str(w, full);
  if (!regular && !find_file(w, rel)) return; /* gone already, or a FIFO, a device... */
  /* A save (close, rename-in, create) arms the quiet window; a write only
     extends one already armed (truncate-then-write, slow writers). */
  file *f = track(w, rel, 0);
  if (f && (kind == WEFT_FS_SAVED || f->due > 0)) f->due = due;
}

int weft__watch_poll(weft_watch *w, double now, void (*changed)(void *ud, const char *path),
                     void *ud) {
  if (w->fw) {
    event_ctx c = {w, now};
    weft__fswatch_read(w->fw, on_event, &c);
  } else if (now >= w->next_poll) {
    w->next_poll = now + w->desc.poll_every;
    scan(w, "", 0, now + w->desc.quiet);
  }
  int reported = 0;
  for (int i = 0; i < w->nfiles; i++) {
    file *f = &w->files[i];
    if (f->due <= 0 || now < f->due) continue;
    f->due = 0;
    char *full = join(w, w->root, f->path);
    uint64_t h = full ? hash_file(full) : 0;
    free_str(w, full);
    if (h == 0 || h == f->hash) continue; /* gone, unreadable, not a file, or unchanged */
    f->hash = h;
    reported++;
    changed(ud, f->path);
  }
  return reported;
}
