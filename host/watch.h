/* Watches a scripts directory tree for saved *.lua files: the system's
   change notifications on every directory, new ones too (plat.h: inotify,
   ReadDirectoryChangesW), a trailing quiet window per file
   so any editor's save sequence gives one change, and a content hash so a
   touch or an identical save gives none. Only regular files count. Falls
   back to polling stat() every 250 ms where notifications are unavailable
   (or when the desc asks: force_poll). */
#ifndef WEFT_WATCH_H
#define WEFT_WATCH_H

#include <stdint.h>

#include "pool.h"
#include "weft_base.h"

typedef struct weft_watch weft_watch;

typedef struct weft_watch_desc {
  double quiet;      /* seconds a file must stay untouched; 0: 0.1 */
  double poll_every; /* polling fallback period in seconds; 0: 0.25 */
  int force_poll;    /* nonzero: poll even when notifications work */
} weft_watch_desc;

/* Starts watching root (a directory) into *out. Records the content hash
   of every *.lua file now present. Every byte the watcher holds comes
   from alloc(alloc_ud, ...) (weft_alloc_fn's contract; NULL:
   weft__default_alloc), called only inside these functions. desc may be
   NULL (defaults). Returns WEFT_OK, WEFT_EINVAL when root is not a
   readable directory, or WEFT_ENOMEM (*out is then NULL). */
int weft__watch_open(const char *root, const weft_watch_desc *desc, weft_alloc_fn alloc,
                     void *alloc_ud, weft_watch **out);
void weft__watch_close(weft_watch *w);

/* Reads pending events without blocking. `now` is the caller's monotonic
   clock in seconds (tests pass their own). For every file whose quiet
   window ended and whose content changed, calls changed(ud, path) with
   the path relative to root ("ai/patrol.lua"; valid during the call).
   Returns the number of changes reported. */
int weft__watch_poll(weft_watch *w, double now, void (*changed)(void *ud, const char *path),
                     void *ud);
/* Nonzero when the watcher polls instead of using notifications. */
int weft__watch_polling(const weft_watch *w);
/* Seconds on a monotonic clock, for callers without a clock of their own. */
double weft__watch_clock(void);
/* Nonzero for names a save may produce that are not scripts: editor
   temporaries, locks, backups, hidden files, anything not *.lua. */
int weft__watch_ignored(const char *name);

#endif
