/* Scratch directories for tests that write real files: removal of a
   whole tree. Header-only; include where needed. */
#ifndef WEFT_TESTS_SCRATCH_DIR_H
#define WEFT_TESTS_SCRATCH_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
