/* Scratch directories for tests that write real files: removal of a
   whole tree. Header-only; include where needed. */
#ifndef WEFT_TESTS_SCRATCH_DIR_H
#define WEFT_TESTS_SCRATCH_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef _WIN32
/* The POSIX calls the tests make that Windows spells differently. A
   "/tmp/..." template names \tmp on the current drive (under Wine, the
   Unix /tmp). */
#include <direct.h>
#include <stdlib.h>

static inline char *scratch_mkdtemp(char *tmpl) {
  if (_mktemp_s(tmpl, strlen(tmpl) + 1) != 0 || _mkdir(tmpl) != 0) return NULL;
  return tmpl;
}
#define mkdtemp scratch_mkdtemp
#define mkdir(path, mode) _mkdir(path)
#define lstat stat
#endif

/* Removes dir and everything under it (best effort; links not followed). */
static inline void rm_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char sub[4096];
    int n = snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
    if (n < 0 || (size_t)n >= sizeof sub) continue;
    struct stat st;
    if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
      rm_tree(sub);
    else
      unlink(sub);
  }
  closedir(d);
  rmdir(dir);
}

#endif
