/* The messages of weft's result codes (weft_base.h). */
#include "weft_base.h"

static const char *const errmsg[] = {
#define WEFT_MSG(name, code, msg) msg,
    WEFT_ERRORS(WEFT_MSG)
#undef WEFT_MSG
};

const char *weft_strerror(int code) {
  if (code > 0 || -code >= (int)(sizeof errmsg / sizeof errmsg[0])) return "unknown error";
  return errmsg[-code];
}
