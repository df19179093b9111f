/* Modules and hot reload (reload.c), as the rest of the bindings see it:
   what the state keeps for them, and the calls that start and poll them. */
#ifndef WEFT_RELOAD_H
#define WEFT_RELOAD_H

#include <stdint.h>

#include <lua.h>

#include "weft.h"

/* Registry key of the weak set of the groups weft.start makes. */
#define WEFT_START_GROUPS "weft.start_groups"

typedef struct weft_modules {
  int ref_group_start;      /* the module system's g:start */
  int ref_reload;           /* ...reload(name) */
  int ref_changed;          /* ...changed(path) */
  struct weft_watch *watch; /* scripts watcher, NULL when off */
  uint32_t reloads;         /* successful reload transactions */
  int loading;              /* running modules' top levels */
} weft_modules;

int weft_open_modules(weft_state *W);
void weft_poll_reload(weft_state *W);
int weft_l_group_start(lua_State *L);

#endif
