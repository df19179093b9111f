/* A minimal engine embedding weft: one C verb that returns a future the
   engine completes two frames later, a script that waits on it, frames
   stepped until the script ends. Build: cc host.c $(pkg-config --cflags
   --libs weft) */
#include <stdio.h>

#include <weft.h>

static weft_state *W;
static weft_future door; /* the open_door() in flight */
static int door_frames;  /* frames until it opens */

/* open_door(): starts opening, returns a future the script can wait on. */
static int l_open_door(lua_State *L) {
  door = weft_future_new(W);
  door_frames = 2;
  weft_push_future(W, L, door);
  return 1;
}

int main(int argc, char **argv) {
  weft_desc d = WEFT_DESC_INIT; /* every field its default, the size set */
  d.scripts_root = ".";
  W = weft_open(&d);
  lua_State *L = weft_lua(W);
  weft_push_api(W); /* the table every script sees as its globals */
  lua_pushcfunction(L, l_open_door);
  lua_setfield(L, -2, "open_door");
  lua_pop(L, 1);
  weft_task main_task;
  const char *err;
  if (weft_run_file(W, argc > 1 ? argv[1] : "main.lua", &main_task, &err) != WEFT_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  for (int frame = 0; frame < 600 && weft_task_result(W, main_task) == WEFT_RUNNING; frame++) {
    if (door.id && --door_frames == 0) { /* the engine's side: the door is open */
      lua_pushstring(L, "open");
      weft_future_resolve(W, door, 1);
      door.id = 0;
    }
    weft_step(W, 1.0 / 60);
  }
  int ok = weft_task_result(W, main_task) == WEFT_DONE;
  printf("weft %s: script %s\n", weft_version_string(), ok ? "done" : weft_task_error(W, main_task));
  weft_task_drop(W, main_task);
  return weft_close(W) == 0 && ok ? 0 : 1;
}
