/* The script face of the demo world: entity state tables with verbs
   (move_to, face, say, play_anim, ...) that return weft futures, the
   camera, fades, dialogue, doors, zones and the level loader. Uses only
   weft.h and the Lua C API. Input and test hooks are control.c's. */
#ifndef DEMO_VERBS_H
#define DEMO_VERBS_H

#include <lauxlib.h>

#include "game.h"

/* Adds the demo's functions to the script API (this module's; each
   named for saves) and the tables the demo keeps in the registry. Call
   once after weft_open, with the API table on top of g->L; it stays
   there. Runs nothing: a save can be loaded after it. */
void verbs_open(game *g);
/* Turns the world's pending events into future completions and signal
   fires. Called after world_update and after every verb. */
void verbs_dispatch(game *g);

/* Before world_update: sets the dt of every clock a timed action runs on
   from the rate of the script group that started it (the game's when
   that group is gone) and frees the unused ones. Returns the world's own
   dt: the game group's, paused by P and slowed by T and time_scale(). */
float verbs_clocks(game *g);

/* Helpers shared with control.c. L is the calling thread. */
void verbs_push_api(game *g, lua_State *L);                     /* the script API table */
void verbs_push_group(game *g, lua_State *L, const char *name); /* groups.<name> */
void verbs_push_ent(game *g, lua_State *L, int idx);            /* state table or nil */
void verbs_push_point(lua_State *L, float x, float y);          /* {x =, y =} */
/* Creates a future owned by C until completed and pushes its handle. */
uint64_t verbs_push_future(game *g, lua_State *L);
/* The live entity at arg (a state table or a name): its index; raises
   naming it when it was destroyed or is none. */
int verbs_check_ent(game *g, lua_State *L, int arg);
/* A place at arg: {x=, y=} in world units, an entity (where it stands
   now), or the name of a mark or an entity. Returns the entity index or
   -1; raises when it is none of those. */
int verbs_check_point(game *g, lua_State *L, int arg, float *x, float *y);
/* An optional argument in seconds (>= 0), def when absent. */
float verbs_opt_seconds(lua_State *L, int arg, float def);
/* Names each C function of fns (a luaL_Reg list, NULL-terminated) for
   saves as "demo.PREFIX.NAME": a save writes a function scripts can
   reach as its name, and a load finds it again by that name. */
void verbs_name(game *g, const char *prefix, const luaL_Reg *fns);
/* Calls obj:name(args) with obj below nargs arguments on g->L, reporting
   (not raising) an error; pops them. */
void verbs_call_method(game *g, const char *name, int nargs);

#endif
