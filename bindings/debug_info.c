/* What the debugger tells about the program besides frames and values:
   the names its threads go by and the hit counts breakpoints stop at. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_int.h"
#include "inspect.h"

/* "N" or "==N": the Nth hit; ">N", ">=N", "<N", "<=N"; "%N": every Nth. */
int weft_debug_hit_matches(const char *cond, unsigned hits) {
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
int weft_debug_thread_name(lua_State *E) {
  dbg *D = lua_touserdata(E, 1);
  weft_id id = (weft_id)lua_tointeger(E, 2);
  if (!weft_push_task_info(D->W, E, id)) return lua_pushliteral(E, "task"), 1;
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
  const char *what = status && strcmp(status, "running") == 0 ? "running"
                     : waiting && *waiting                    ? waiting
                                                              : "waiting";
  char buf[1024];
  snprintf(buf, sizeof buf, "%s%s%s \xe2\x80\x94 %s", name, *spawned ? " " : "", spawned, what);
  lua_pushstring(E, buf);
  return 1;
}
