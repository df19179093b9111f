/* Reading scripts through the embedder's loader (desc.load). */
#ifndef WEFT_LOAD_H
#define WEFT_LOAD_H

#include <stddef.h>

#include <lua.h>

#include "../weft.h"

/* Puts the default loader (the regular files under the scripts root) in
   the desc when it has none. */
void weft__load_init(weft_state *W);

/* The roots a path a script names may lie under (a mask). */
enum { WEFT_IN_SCRIPTS = 1, WEFT_IN_ASSETS = 2 };

/* The root among `roots` (the scripts root first) that path (len bytes,
   named as the roots are: relative to the working directory, or
   absolute) lies under by its letters: empty and "." parts dropped, each
   ".." taking the part before it. Pushes the path under that root,
   clean ("ai/patrol.lua": relative, no empty, "." or ".." part, no
   zero byte) and returns WEFT_IN_*; returns 0 with nothing pushed when
   it lies under none (a ".." that leaves the root, an absolute path
   under a relative root, a zero byte). Reads no file. May raise
   (memory). */
int weft__path_place(lua_State *L, const char *path, size_t len, int roots);

/* Whether the file at path, every symbolic link followed, lies inside
   the directory root (both as the file system has them: links, "." and
   ".." resolved): its resolved path, in real (WEFT_PATH_MAX bytes, from
   host/plat.h), to read it by; or NULL, W->load_why and W->load_errno
   saying why (ENOENT: no such file; EACCES: a symbolic link leads
   outside the root). */
const char *weft__path_confine(weft_state *W, const char *root, const char *path, char *real);

/* Reads the script at path and pushes its text (1), or pushes "cannot
   open PATH (why)" (0), W->load_why and W->load_errno saying why. A path
   under the scripts root (weft__path_place) is read through the loader
   with its clean path under the root ("scripts/ai/patrol.lua" reads
   "ai/patrol.lua"); the default loader reads it only when it lies inside
   the root with every symbolic link followed. Any other path (the file
   a host names in weft_run_file) goes to the loader as it is, or, with
   the default loader, is read as a file path. May raise (memory). */
int weft__push_script(lua_State *L, const char *path);

/* Pushes the reason in the message at idx that weft__push_script or
   weft__push_file gave for path ("cannot open PATH (why)": why; a
   recording's message too, so a replay says what the run said) and
   returns it as an errno: ENOENT (no such file or script), EACCES (a
   symbolic link leads out of the root), else EIO. May raise (memory). */
int weft__push_why(lua_State *L, int idx, const char *path);

/* Reads the asset at path (the assets root / its clean path under it)
   and pushes its text (1) or "cannot open PATH (why)" (0), W->load_why
   and W->load_errno saying why: through desc.load_asset when the
   engine gives one (with the clean path), else the regular file itself
   when it lies inside the assets root with every symbolic link
   followed. May raise (memory). */
int weft__push_file(lua_State *L, const char *path);

#endif
