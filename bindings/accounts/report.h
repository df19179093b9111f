/* Error reports (report.c): what a failure says and where it goes, and
   weft.on_error, weft.is_cancelled and finally for scripts. */
#ifndef WEFT_REPORT_H
#define WEFT_REPORT_H

#include "../base/internal.h"

void weft__open_reports(weft_state *W, lua_State *L);
/* Nonzero when L[idx] is the cancellation error. */
int weft__is_cancel_error(weft_state *W, lua_State *L, int idx);
/* Reports the error at L[idx] for task (0: none); the traceback is
   `trace`, or taken from thread co (NULL: the message alone). Never
   raises. */
void weft__report_thread(weft_state *W, lua_State *L, int idx, weft_id task, const char *trace,
                         lua_State *co);
/* The same without a thread: the traceback is `trace` (NULL: none). */
void weft__report(weft_state *W, lua_State *L, int idx, weft_id task, const char *trace);
/* A printable form of any error value; never raises. Pushes it. */
const char *weft__tostring(lua_State *L, int idx);
/* Message handler: packs {err, traceback}. */
int weft__l_traceback_handler(lua_State *L);

#endif
