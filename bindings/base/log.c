/* What weft itself says goes to the embedder's logger; without one, to
   stderr (and `print` to stdout), the library's only use of stdio. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static void say(const weft_desc *d, uint32_t level, uint32_t id, const char *msg, const char *file,
                uint32_t line) {
  if (d->logger) {
    d->logger(d->logger_ud, "weft", level, id, msg, file, line);
    return;
  }
  if (file)
    fprintf(stderr, "weft: %s:%u: %s\n", file, (unsigned)line, msg);
  else
    fprintf(stderr, "weft: %s\n", msg);
}

void weft__log_desc(const weft_desc *d, uint32_t level, uint32_t id, const char *msg) {
  say(d, level, id, msg, NULL, 0);
}

void weft__log_at(weft_state *W, uint32_t level, uint32_t id, const char *msg, const char *file,
                  uint32_t line) {
  say(&W->desc, level, id, msg, file, line);
}

void weft__logf(weft_state *W, uint32_t level, uint32_t id, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  say(&W->desc, level, id, buf, NULL, 0);
}

void weft__log_print(weft_state *W, const char *line, size_t len) {
  const weft_desc *d = &W->desc;
  if (d->log) {
    d->log(d->user, line, len);
  } else if (d->logger) {
    d->logger(d->logger_ud, "weft", WEFT_LOG_INFO, WEFT_LOG_PRINT, line, NULL, 0);
  } else {
    fwrite(line, 1, len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
}

void weft__log_warning(weft_state *W, const char *msg, size_t len, const char *file,
                       uint32_t line) {
  const weft_desc *d = &W->desc;
  if (d->logger) {
    d->logger(d->logger_ud, "weft", WEFT_LOG_WARN, WEFT_LOG_WARNING, msg, file, line);
    return;
  }
  fputs("Lua warning: ", stderr);
  fwrite(msg, 1, len, stderr);
  fputc('\n', stderr);
  fflush(stderr);
}

void weft__log_report(weft_state *W, const char *msg, const char *trace) {
  const weft_desc *d = &W->desc;
  if (d->report) {
    d->report(d->user, msg, trace);
  } else if (d->logger) {
    d->logger(d->logger_ud, "weft", WEFT_LOG_ERROR, WEFT_LOG_REPORT, trace ? trace : msg, NULL, 0);
  } else {
    fprintf(stderr, "error: %s\n", trace ? trace : msg);
  }
}
