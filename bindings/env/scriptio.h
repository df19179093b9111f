/* The safe part of Lua's io for scripts (scriptio.c). */
#ifndef WEFT_SCRIPTIO_H
#define WEFT_SCRIPTIO_H

#include "../base/internal.h"

/* Sets api.io: writes to the log and report sinks, reads files under the
   scripts and assets roots. */
void weft__open_io(lua_State *L, int api);
/* For a save: names the registry keys of the default input and of the
   lines written in part (base/persist.h). */
void weft__io_names(lua_State *L, int names);
/* print's line: after what io.write left without a line end. May raise
   (memory). */
void weft__io_print(lua_State *L, const char *s, size_t len);
/* Sends what io.write left without a line end to its sink (at close). */
void weft__io_flush(weft_state *W);

#endif
