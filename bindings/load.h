/* Reading scripts through the embedder's loader (desc.load). */
#ifndef WEFT_LOAD_H
#define WEFT_LOAD_H

#include <stddef.h>

#include <lua.h>

#include "weft.h"

/* Puts the default loader (the regular files under the scripts root) in
   the desc when it has none. */
void weft_load_init(weft_state *W);

/* Reads the script at path and pushes its text (1), or pushes "cannot
   open PATH (why)" (0). path is as chunk names show it: the scripts
   root, '/', and the path the loader is given ("scripts/ai/patrol.lua"
   reads "ai/patrol.lua"); any other path goes to the loader as it is,
   or, with the default loader, is read as a file path (the file a host
   names in weft_run_file). May raise (memory). */
int weft_push_script(lua_State *L, const char *path);

/* Reads the regular file at path itself (not through the loader: the
   assets a script reads) and pushes its text (1) or "cannot open PATH
   (why)" (0). May raise (memory). */
int weft_push_file(lua_State *L, const char *path);

/* The path the loader is given for path, or NULL when path is not under
   the scripts root. */
const char *weft_script_relpath(weft_state *W, const char *path);

#endif
