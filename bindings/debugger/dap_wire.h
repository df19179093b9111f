/* The debugger's transport (dap_wire.c): one client at a time over a
   local TCP socket, its messages framed as the Debug Adapter Protocol
   frames them (a Content-Length header, a blank line, the body). No JSON
   here: bodies are bytes. */
#ifndef WEFT_DAP_WIRE_H
#define WEFT_DAP_WIRE_H

#include <stddef.h>

#include "../../host/plat.h"

typedef struct dap_wire {
  weft_sock listener; /* WEFT_SOCK_NONE: not listening */
  weft_sock client;   /* WEFT_SOCK_NONE: no client */
  weft_sock spare;    /* a second client accepted while one is attached, waiting to be
                         answered with an error (dap_wire_take_spare); NONE: none */
  char *in;           /* bytes received and not yet taken */
  size_t inlen, incap;
} dap_wire;

/* What dap_wire_service saw. */
enum { DAP_IDLE, DAP_CONNECTED, DAP_INPUT, DAP_CLOSED };

/* Listens on 127.0.0.1 at port (0: any free port), the port bound in
 *bound. Returns WEFT_OK, or WEFT_EINVAL when the port cannot be had. */
int dap_wire_listen(dap_wire *w, int port, int *bound);
/* A second client accepted meanwhile, handed over (WEFT_SOCK_NONE: none),
   so its first request can be answered with an error. */
weft_sock dap_wire_take_spare(dap_wire *w);
/* Closes the client and the listener and frees the input. */
void dap_wire_close(dap_wire *w);
static inline int dap_wire_connected(const dap_wire *w) { return w->client != WEFT_SOCK_NONE; }
/* Closes the client (the listener takes the next one); its input is
   dropped. */
void dap_wire_drop(dap_wire *w);
/* Waits up to timeout_ms (0: not at all) for a connection when there is
   no client, or for input from it, and takes what came: DAP_CONNECTED, a
   client was accepted; DAP_INPUT, bytes were added to the input;
   DAP_CLOSED, the client went away (or its input could not be kept) and
   was dropped; DAP_IDLE, nothing came. The client's input is read before
   a new connection is accepted: one that went away is dropped before its
   next connection is taken. */
int dap_wire_service(dap_wire *w, int timeout_ms);
/* Makes from's client w's (w has none), its input with it; from is left
   without a client, its buffer w's old one. */
void dap_wire_adopt(dap_wire *w, dap_wire *from);
/* The next whole message in the input: returns 1 with its body at
   w->in + *at, *len bytes long (valid until dap_wire_consume), 0 when no
   whole message is there yet, or -1 when the framing is broken (a header
   too long or without a length, a body too large: drop the client). */
int dap_wire_next(dap_wire *w, size_t *at, size_t *len);
/* Takes the first n bytes (a message: *at + *len) out of the input. */
void dap_wire_consume(dap_wire *w, size_t n);
/* Sends body (len bytes) as one message, waiting while the system's
   buffer is full. Returns WEFT_OK, WEFT_ENOMEM (nothing sent), or
   WEFT_ECLOSED when the client is gone (it is then dropped). */
int dap_wire_send(dap_wire *w, const char *body, size_t len);

#endif
