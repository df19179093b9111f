/* What the debugger tells about the program besides frames and values:
   the names its threads go by, the hit counts and lines breakpoints stop
   at, an error's details, and the answer a second client gets. */
#include "debug_info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dap_wire.h"
#include "debug_int.h"
#include "../env/inspect.h"

/* "N" or "==N": the Nth hit; ">N", ">=N", "<N", "<=N"; "%N": every Nth. */
int weft__debug_hit_matches(const char *cond, unsigned hits) {
  while (*cond == ' ') cond++;
  char op[3] = {0};
  int k = 0;
  while (k < 2 && strchr("<>=%", cond[k])) op[k] = cond[k], k++;
  char *end;
  long v = strtol(cond + k, &end, 10);
  if (end == cond + k) return 1;
  long h = (long)hits;
  if (!op[0] || strcmp(op, "==") == 0 || strcmp(op, "=") == 0) return h == v;
  if (strcmp(op, ">") == 0) return h > v;
  if (strcmp(op, ">=") == 0) return h >= v;
  if (strcmp(op, "<") == 0) return h < v;
  if (strcmp(op, "<=") == 0) return h <= v;
  if (op[0] == '%') return v > 0 && h % v == 0;
  return 1;
}

/* Pushes the name of a task's thread: who or its name, its spawn site,
   what it waits on (protected: light userdata dbg at 1, id at 2). */
int weft__debug_thread_name(lua_State *E) {
  dbg *D = lua_touserdata(E, 1);
  weft_id id = (weft_id)lua_tointeger(E, 2);
  if (!weft__push_task_info(D->W, E, id)) return lua_pushliteral(E, "task"), 1;
  int t = lua_gettop(E);
  if (lua_getfield(E, t, "who") != LUA_TSTRING) {
    lua_pop(E, 1);
    lua_getfield(E, t, "name");
  }
  if (!lua_isstring(E, -1) || strcmp(lua_tostring(E, -1), "?") == 0) {
    lua_pop(E, 1); /* no name yet (a file's task while it starts): where it is */
    lua_getfield(E, t, "where");
  }
  const char *name = lua_tostring(E, -1);
  lua_getfield(E, t, "spawned");
  const char *spawned = lua_tostring(E, -1);
  lua_getfield(E, t, "status");
  lua_getfield(E, t, "waiting");
  const char *status = lua_tostring(E, -2), *waiting = lua_tostring(E, -1);
  if (!name) name = "task";
  if (!spawned || strcmp(spawned, "?") == 0 || strcmp(spawned, name) == 0) spawned = "";
  const char *what = status && strcmp(status, "running") == 0 ? (D->stopped ? "stopped" : "running")
                     : waiting && *waiting                    ? waiting
                                                              : "waiting";
  char buf[1024];
  snprintf(buf, sizeof buf, "%s%s%s \xe2\x80\x94 %s", name, *spawned ? " " : "", spawned, what);
  lua_pushstring(E, buf);
  return 1;
}

/* Where a long bracket ("[[", "[==[") opens at p: its level, or -1. */
static int long_open(const char *p) {
  if (*p != '[') return -1;
  int level = 0;
  while (p[1 + level] == '=') level++;
  return p[1 + level] == '[' ? level : -1;
}

/* Whether a long bracket of the level closes in line; *p is left after
   it (or at the line's end). */
static int long_close(const char **p, int level) {
  for (const char *q = *p; *q && *q != '\n'; q++) {
    if (*q != ']') continue;
    int k = 0;
    while (q[1 + k] == '=') k++;
    if (k == level && q[1 + k] == ']') {
      *p = q + 2 + k;
      return 1;
    }
  }
  *p = strchr(*p, '\n') ? strchr(*p, '\n') : *p + strlen(*p);
  return 0;
}

/* Line hooks fire only on lines with code: a breakpoint on a blank line
   or a comment would never hit, so it moves down to the next line that
   has some (long strings count as code, long comments do not). */
int weft__debug_code_line(const char *path, int line) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char buf[4096];
  int n = 0, found = 0, comment = -1; /* comment: the level of an open long comment */
  while (!found && fgets(buf, sizeof buf, f)) {
    n++;
    const char *p = buf;
    int code = 0;
    if (comment >= 0) {
      if (!long_close(&p, comment)) continue;
      comment = -1;
    }
    while (*p && *p != '\n') {
      if (*p == ' ' || *p == '\t' || *p == '\r') {
        p++;
      } else if (p[0] == '-' && p[1] == '-') {
        int level = long_open(p + 2);
        if (level < 0) break;
        p += 4 + level;
        if (!long_close(&p, level)) comment = level;
      } else {
        code = 1;
        break;
      }
    }
    if (code && n >= line) found = n;
  }
  fclose(f);
  return found;
}

void weft__debug_turn_away(dbg *D) {
  dap_wire *o = &D->other;
  if (!dap_wire_connected(o)) {
    o->client = dap_wire_take_spare(&D->conn.wire); /* accepted meanwhile (dap_wire.c) */
    if (!dap_wire_connected(o)) return;
  }
  if (dap_wire_service(o, 0) != DAP_INPUT) return;
  size_t at, len;
  int r = dap_wire_next(o, &at, &len);
  if (r == 0) return;
  cJSON *req = r > 0 ? cJSON_ParseWithLength(o->in + at, len) : NULL;
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "seq", 1);
  cJSON *rs = cJSON_GetObjectItem(req, "seq"), *cmd = cJSON_GetObjectItem(req, "command");
  if (cJSON_IsString(cmd)) {
    cJSON_AddStringToObject(m, "type", "response");
    cJSON_AddNumberToObject(m, "request_seq", cJSON_IsNumber(rs) ? rs->valuedouble : 0);
    cJSON_AddBoolToObject(m, "success", 0);
    cJSON_AddStringToObject(m, "command", cmd->valuestring);
    cJSON_AddStringToObject(m, "message", "another client is attached");
  } else { /* no request to answer: said as output */
    cJSON_AddStringToObject(m, "type", "event");
    cJSON_AddStringToObject(m, "event", "output");
    cJSON *b = cJSON_AddObjectToObject(m, "body");
    cJSON_AddStringToObject(b, "category", "important");
    cJSON_AddStringToObject(b, "output",
                            "weft: another debugger client is attached; one at a time\n");
  }
  char *body = cJSON_PrintUnformatted(m);
  if (body) dap_wire_send(o, body, strlen(body));
  free(body);
  cJSON_Delete(m);
  cJSON_Delete(req);
  static const char bye[] = "{\"seq\":2,\"type\":\"event\",\"event\":\"terminated\"}";
  dap_wire_send(o, bye, sizeof bye - 1); /* its session is over before it began */
  dap_wire_drop(o);
}

cJSON *weft__debug_exception_info(dbg *D) {
  cJSON *b = cJSON_CreateObject();
  int caught = strstr(D->exc, " (caught)") != NULL;
  cJSON_AddStringToObject(b, "exceptionId", caught ? "caught error" : "error");
  cJSON_AddStringToObject(b, "description", D->exc);
  cJSON_AddStringToObject(b, "breakMode", caught ? "always" : "unhandled");
  cJSON *d = cJSON_AddObjectToObject(b, "details");
  cJSON_AddStringToObject(d, "message", D->exc);
  cJSON_AddStringToObject(d, "typeName", caught ? "caught error" : "error");
  if (D->stop_L && lua_checkstack(D->E, 2)) {
    luaL_traceback(D->E, D->stop_L, NULL, 0);
    cJSON_AddStringToObject(d, "stackTrace", lua_tostring(D->E, -1));
    lua_pop(D->E, 1);
  }
  return b;
}
