/* The debugger's messages to its client (dap_conn.c): responses and
   events as the Debug Adapter Protocol's JSON, numbered in the order they
   go out, over the transport (dap_wire.c). */
#ifndef WEFT_DAP_CONN_H
#define WEFT_DAP_CONN_H

#include <cjson/cJSON.h>

#include "dap_wire.h"

typedef struct dap_conn {
  dap_wire wire;
  int seq;         /* the number of the last message sent; 0 when a client connects */
  int initialized; /* the client sent initialize: events may go out */
} dap_conn;

/* A new event message called name (owned by the caller until sent); its
   body object, empty and owned by the message, in *body. */
cJSON *dap_conn_event(const char *name, cJSON **body);
/* Sends m (owned by the call) with the next sequence number; nothing goes
   out without a client. A client found gone is dropped (dap_wire_drop):
   dap_wire_connected says so afterwards, and what the caller kept for that
   client is the caller's to clear. */
void dap_conn_send(dap_conn *c, cJSON *m);
/* Sends the response to req (error NULL: success) with body (owned by the
   call; NULL: empty). req stays the caller's. */
void dap_conn_respond(dap_conn *c, cJSON *req, const char *error, cJSON *body);
/* An output event of the category, text (len bytes) then a newline; sent
   only once the client sent initialize. */
void dap_conn_output(dap_conn *c, const char *category, const char *text, size_t len);
/* The same, said to come from a file's line (path NULL: nowhere). */
void dap_conn_output_at(dap_conn *c, const char *category, const char *text, size_t len,
                        const char *path, int line);

#endif
