/* The debugger left out of the library (make DEBUGGER=0): a program
   that offers --debug still links, and is told the library has none. */
#include "../weft.h"

int weft_debug_listen(weft_state *W, const weft_debug_desc *desc, int *port) {
  (void)W, (void)desc;
  if (port) *port = 0;
  return WEFT_ENOTSUP;
}

int weft_debug_poll(weft_state *W) { return (void)W, 0; }

int weft_debug_wait(weft_state *W, double seconds) { return (void)W, (void)seconds, 0; }

int weft_debug_wait_ready(weft_state *W) { return (void)W, 0; }

void weft_debug_exit(weft_state *W, int code) { (void)W, (void)code; }
