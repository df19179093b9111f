/* The debugger's messages to its client: a DAP response or event built as
   JSON, numbered, and sent whole over the wire. */
#include "dap_conn.h"

#include <stdlib.h>
#include <string.h>

cJSON *dap_conn_event(const char *name, cJSON **body) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "type", "event");
  cJSON_AddStringToObject(m, "event", name);
  *body = cJSON_AddObjectToObject(m, "body");
  return m;
}

/* A client gone mid-send is dropped by dap_wire_send itself: the server
   sees it at its next look at the wire, so no call goes back up from
   here. */
void dap_conn_send(dap_conn *c, cJSON *m) {
  if (!dap_wire_connected(&c->wire)) {
    cJSON_Delete(m);
    return;
  }
  cJSON_AddNumberToObject(m, "seq", ++c->seq);
  char *body = cJSON_PrintUnformatted(m);
  cJSON_Delete(m);
  if (!body) return;
  (void)dap_wire_send(&c->wire, body, strlen(body));
  free(body);
}

void dap_conn_respond(dap_conn *c, cJSON *req, const char *error, cJSON *body) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "type", "response");
  cJSON *rs = cJSON_GetObjectItem(req, "seq");
  cJSON_AddNumberToObject(m, "request_seq", cJSON_IsNumber(rs) ? rs->valuedouble : 0);
  cJSON_AddBoolToObject(m, "success", error == NULL);
  cJSON *cmd = cJSON_GetObjectItem(req, "command");
  cJSON_AddStringToObject(m, "command", cJSON_IsString(cmd) ? cmd->valuestring : "");
  if (error) cJSON_AddStringToObject(m, "message", error);
  cJSON_AddItemToObject(m, "body", body ? body : cJSON_CreateObject());
  dap_conn_send(c, m);
}

void dap_conn_output(dap_conn *c, const char *category, const char *text, size_t len) {
  dap_conn_output_at(c, category, text, len, NULL, 0);
}

void dap_conn_output_at(dap_conn *c, const char *category, const char *text, size_t len,
                        const char *path, int line) {
  if (!dap_wire_connected(&c->wire) || !c->initialized) return;
  cJSON *body;
  cJSON *m = dap_conn_event("output", &body);
  cJSON_AddStringToObject(body, "category", category);
  if (path) {
    cJSON_AddStringToObject(cJSON_AddObjectToObject(body, "source"), "path", path);
    cJSON_AddNumberToObject(body, "line", line);
  }
  char *s = malloc(len + 2);
  if (s) {
    memcpy(s, text, len);
    s[len] = '\n';
    s[len + 1] = 0;
    cJSON_AddStringToObject(body, "output", s);
    free(s);
  }
  dap_conn_send(c, m);
}
