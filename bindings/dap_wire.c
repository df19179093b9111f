/* The debugger's transport: a listener on 127.0.0.1, one client, and the
   Debug Adapter Protocol's Content-Length framing, on the platform
   layer's sockets. */
#include "dap_wire.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADER 4096      /* bytes of a message header */
#define MAX_BODY (16u << 20) /* bytes of a message body */
#define READ_CHUNK 65536     /* room made in the input before a read */

int dap_wire_listen(dap_wire *w, int port, int *bound) {
  memset(w, 0, sizeof *w);
  w->listener = w->client = WEFT_SOCK_NONE;
  return weft_sock_listen(port, &w->listener, bound) == WEFT_OK ? WEFT_OK : WEFT_EINVAL;
}

void dap_wire_drop(dap_wire *w) {
  weft_sock_close(w->client);
  w->client = WEFT_SOCK_NONE;
  w->inlen = 0;
}

void dap_wire_close(dap_wire *w) {
  dap_wire_drop(w);
  weft_sock_close(w->listener);
  w->listener = WEFT_SOCK_NONE;
  free(w->in);
  w->in = NULL;
  w->incap = 0;
}

int dap_wire_service(dap_wire *w, int timeout_ms) {
  int connected = dap_wire_connected(w);
  if (weft_sock_wait(connected ? w->client : w->listener, WEFT_SOCK_IN, timeout_ms) <= 0)
    return DAP_IDLE;
  if (!connected) {
    if (weft_sock_accept(w->listener, &w->client) != WEFT_OK) return DAP_IDLE;
    return DAP_CONNECTED;
  }
  if (w->inlen + READ_CHUNK > w->incap) {
    char *n = realloc(w->in, w->inlen + READ_CHUNK);
    if (!n) {
      dap_wire_drop(w);
      return DAP_CLOSED;
    }
    w->in = n;
    w->incap = w->inlen + READ_CHUNK;
  }
  long r = weft_sock_recv(w->client, w->in + w->inlen, w->incap - w->inlen);
  if (r == 0) return DAP_IDLE;
  if (r < 0) {
    dap_wire_drop(w);
    return DAP_CLOSED;
  }
  w->inlen += (size_t)r;
  return DAP_INPUT;
}

/* Whether the header line at p names the body's length. */
static int is_length(const char *p, const char *end) {
  static const char key[] = "content-length:";
  for (size_t i = 0; i < sizeof key - 1; i++)
    if (p + i >= end || tolower((unsigned char)p[i]) != key[i]) return 0;
  return 1;
}

int dap_wire_next(dap_wire *w, size_t *at, size_t *len) {
  char *end = NULL;
  for (size_t i = 0; i + 3 < w->inlen; i++)
    if (memcmp(w->in + i, "\r\n\r\n", 4) == 0) {
      end = w->in + i;
      break;
    }
  if (!end) return w->inlen > MAX_HEADER ? -1 : 0;
  size_t hlen = (size_t)(end - w->in) + 4, blen = 0;
  int found = 0;
  for (char *p = w->in; p < end; p++)
    if ((p == w->in || p[-1] == '\n') && is_length(p, end)) {
      blen = strtoul(p + 15, NULL, 10);
      found = 1;
    }
  if (!found || blen > MAX_BODY) return -1;
  if (w->inlen < hlen + blen) return 0;
  *at = hlen;
  *len = blen;
  return 1;
}

void dap_wire_consume(dap_wire *w, size_t n) {
  memmove(w->in, w->in + n, w->inlen - n);
  w->inlen -= n;
}

/* Sends all n bytes, waiting for room when the buffer is full. */
static int send_all(dap_wire *w, const char *p, size_t n) {
  while (n > 0) {
    long k = weft_sock_send(w->client, p, n);
    if (k < 0 || (k == 0 && weft_sock_wait(w->client, WEFT_SOCK_OUT, -1) < 0)) {
      dap_wire_drop(w);
      return WEFT_ECLOSED;
    }
    p += k;
    n -= (size_t)k;
  }
  return WEFT_OK;
}

/* The header and the body go in one buffer, so one small write never
   waits on another's acknowledgement (Nagle). */
int dap_wire_send(dap_wire *w, const char *body, size_t len) {
  if (!dap_wire_connected(w)) return WEFT_ECLOSED;
  char *msg = malloc(len + 40);
  if (!msg) return WEFT_ENOMEM;
  size_t hl = (size_t)snprintf(msg, 40, "Content-Length: %zu\r\n\r\n", len);
  memcpy(msg + hl, body, len);
  int rc = send_all(w, msg, hl + len);
  free(msg);
  return rc;
}
