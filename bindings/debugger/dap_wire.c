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
  w->listener = w->client = w->spare = WEFT_SOCK_NONE;
  return weft__sock_listen(port, &w->listener, bound) == WEFT_OK ? WEFT_OK : WEFT_EINVAL;
}

void dap_wire_drop(dap_wire *w) {
  weft__sock_close(w->client);
  w->client = WEFT_SOCK_NONE;
  w->inlen = 0;
}

weft_sock dap_wire_take_spare(dap_wire *w) {
  weft_sock s = w->spare;
  w->spare = WEFT_SOCK_NONE;
  return s;
}

void dap_wire_close(dap_wire *w) {
  dap_wire_drop(w);
  weft__sock_close(w->spare);
  w->spare = WEFT_SOCK_NONE;
  weft__sock_close(w->listener);
  w->listener = WEFT_SOCK_NONE;
  free(w->in);
  w->in = NULL;
  w->incap = 0;
}

/* A client past the first: told at once that the debugger is taken (an
   output event and a terminated event), then closed. */
static void turn_away(weft_sock s) {
  static const char out[] =
      "{\"seq\":1,\"type\":\"event\",\"event\":\"output\",\"body\":{\"category\":\"important\","
      "\"output\":\"weft: another debugger client is attached; one at a time\\n\"}}";
  static const char bye[] = "{\"seq\":2,\"type\":\"event\",\"event\":\"terminated\"}";
  char msg[400];
  int n = snprintf(msg, sizeof msg, "Content-Length: %d\r\n\r\n%sContent-Length: %d\r\n\r\n%s",
                   (int)sizeof out - 1, out, (int)sizeof bye - 1, bye);
  if (n > 0 && (size_t)n < sizeof msg) (void)weft__sock_send(s, msg, (size_t)n);
  weft__sock_close(s); /* a fresh socket has room for it all */
}

/* Takes every connection waiting (the listener does not block): the
   first becomes the client when there is none; one more waits as the
   spare, whose first request is answered with an error (an editor shows
   it); the others are turned away at once. None waits in the backlog. */
static int accept_all(dap_wire *w) {
  int got = 0;
  weft_sock s;
  while (weft__sock_accept(w->listener, &s) == WEFT_OK) {
    if (dap_wire_connected(w) && w->spare == WEFT_SOCK_NONE) {
      w->spare = s;
    } else if (dap_wire_connected(w)) {
      turn_away(s);
    } else {
      w->client = s;
      got = 1;
    }
  }
  return got;
}

/* Reads what the client sent into the input. */
static int read_input(dap_wire *w) {
  if (w->inlen + READ_CHUNK > w->incap) {
    char *n = realloc(w->in, w->inlen + READ_CHUNK);
    if (!n) {
      dap_wire_drop(w);
      return DAP_CLOSED;
    }
    w->in = n;
    w->incap = w->inlen + READ_CHUNK;
  }
  long r = weft__sock_recv(w->client, w->in + w->inlen, w->incap - w->inlen);
  if (r == 0) return DAP_IDLE;
  if (r < 0) {
    dap_wire_drop(w);
    return DAP_CLOSED;
  }
  w->inlen += (size_t)r;
  return DAP_INPUT;
}

/* The client's input goes before a new connection: a client that sent
   disconnect, or closed, and connected again at once is seen gone first,
   so its new connection becomes the client and is not turned away. */
int dap_wire_service(dap_wire *w, int timeout_ms) {
  int connected = dap_wire_connected(w);
  weft_sock s[2] = {w->listener, w->client};
  int ready = weft__sock_wait_in(s, connected ? 2 : 1, timeout_ms);
  if (ready <= 0) return DAP_IDLE;
  if (connected && (ready & 2)) {
    int what = read_input(w);
    if (what != DAP_IDLE) return what;
  }
  if ((ready & 1) && accept_all(w)) return DAP_CONNECTED;
  return DAP_IDLE;
}

void dap_wire_adopt(dap_wire *w, dap_wire *from) {
  char *in = w->in;
  size_t cap = w->incap;
  w->client = from->client;
  w->in = from->in;
  w->inlen = from->inlen;
  w->incap = from->incap;
  from->client = WEFT_SOCK_NONE;
  from->in = in;
  from->inlen = 0;
  from->incap = cap;
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
    long k = weft__sock_send(w->client, p, n);
    if (k < 0 || (k == 0 && weft__sock_wait(w->client, WEFT_SOCK_OUT, -1) < 0)) {
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
