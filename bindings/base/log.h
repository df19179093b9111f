/* What weft itself says, through the embedder's logger (desc.logger). */
#ifndef WEFT_LOG_H
#define WEFT_LOG_H

#include <stdint.h>

#include "../weft.h"

/* Says msg (printf-style) at level with item id (weft.h's WEFT_LOG_*);
   file and line are 0 here. Never raises, allocates nothing. */
void weft__logf(weft_state *W, uint32_t level, uint32_t id, const char *fmt, ...)
#if defined(__MINGW32__) && __USE_MINGW_ANSI_STDIO /* mingw's C99 printf: %zu */
    __attribute__((format(gnu_printf, 4, 5)))
#elif defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The same before a state exists (weft_open's failures). */
void weft__log_desc(const weft_desc *d, uint32_t level, uint32_t id, const char *msg);
/* Says msg as it is, about a script's place (file may be NULL). */
void weft__log_at(weft_state *W, uint32_t level, uint32_t id, const char *msg, const char *file,
                  uint32_t line);
/* A `print` line (len bytes, may hold zeros): desc.log, else the logger,
   else stdout. */
void weft__log_print(weft_state *W, const char *line, size_t len);
/* A script's warn() message (len bytes, msg[len] is 0) from file:line
   (file may be NULL): the logger at level WARN (WEFT_LOG_WARNING), where
   weft's own warnings go, else stderr as lua.c writes a warning ("Lua
   warning: msg"). */
void weft__log_warning(weft_state *W, const char *msg, size_t len, const char *file, uint32_t line);
/* An error report nobody handled: desc.report, else the logger (the
   message and trace as one text), else stderr. */
void weft__log_report(weft_state *W, const char *msg, const char *trace);

#endif
