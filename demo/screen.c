/* The camera and the screen for scripts: pans, following, shakes, zooms, fades,
   the ambient light, banners, the objective line and clearing speech.
   Every function here gets the game as upvalue 1; the long ones return a
   future the world completes (see verbs.c). */
#include "screen.h"

#include <string.h>

#include <lauxlib.h>

#include "verbs.h"

#define G(L) ((game *)lua_touserdata(L, lua_upvalueindex(1)))

/* pan_camera(target [, seconds]) -> future resolving to "done". An entity
   target is followed once reached; a place stays put. */
static int l_pan_camera(lua_State *L) {
  game *g = G(L);
  float x, y;
  int ent = verbs_check_point(g, L, 1, &x, &y);
  float secs = verbs_opt_seconds(L, 2, 1.0f);
  uint64_t f = verbs_push_future(g, L);
  world_pan(&g->w, x, y - (ent >= 0 ? 8 : 0), ent, secs, f);
  verbs_dispatch(g);
  return 1;
}

static int l_follow_camera(lua_State *L) {
  game *g = G(L);
  world_follow(&g->w, verbs_check_ent(g, L, 1));
  verbs_dispatch(g);
  return 0;
}

static int l_shake_camera(lua_State *L) {
  game *g = G(L);
  g->w.shake_clk = world_use_clock(&g->w, weft_current_group(g->W).id);
  g->w.shake = (float)luaL_optnumber(L, 1, 2);
  g->w.shake_t = verbs_opt_seconds(L, 2, 0.4f);
  return 0;
}

/* fade(alpha [, seconds]) -> future: 0 is clear, 1 is black. */
static int l_fade(lua_State *L) {
  game *g = G(L);
  lua_Number a = luaL_checknumber(L, 1);
  if (!(a >= 0 && a <= 1)) luaL_argerror(L, 1, "alpha is between 0 and 1");
  float secs = verbs_opt_seconds(L, 2, 1.0f);
  uint64_t f = verbs_push_future(g, L);
  world_fade(&g->w, (float)a, secs, f);
  verbs_dispatch(g);
  return 1;
}

/* zoom_camera(z [, seconds]) -> future resolving to "done": 1 is the
   usual view, 2 shows the middle half as big again; from 1 to 4. */
static int l_zoom_camera(lua_State *L) {
  game *g = G(L);
  lua_Number z = luaL_checknumber(L, 1);
  if (!(z >= 1 && z <= 4)) luaL_argerror(L, 1, "zoom is from 1 to 4");
  float secs = verbs_opt_seconds(L, 2, 1.0f);
  uint64_t f = verbs_push_future(g, L);
  world_zoom(&g->w, (float)z, secs, f);
  verbs_dispatch(g);
  return 1;
}

static int fade_to(lua_State *L, float to) {
  game *g = G(L);
  float secs = verbs_opt_seconds(L, 1, 1.0f);
  uint64_t f = verbs_push_future(g, L);
  world_fade(&g->w, to, secs, f);
  verbs_dispatch(g);
  return 1;
}
static int l_fade_in(lua_State *L) { return fade_to(L, 0); }
static int l_fade_out(lua_State *L) { return fade_to(L, 1); }

/* ambient(r, g, b [, seconds]) or ambient("night" | "dawn" | "day"
   [, seconds]) -> future: the light where no lamp shines. */
static int l_ambient(lua_State *L) {
  game *g = G(L);
  float rgb[3];
  int arg;
  if (lua_type(L, 1) == LUA_TSTRING) {
    static const char *const names[] = {"night", "dawn", "day", NULL};
    static const float cols[3][3] = {{0.30f, 0.34f, 0.52f}, {1.0f, 0.86f, 0.80f}, {1, 1, 1}};
    int k = luaL_checkoption(L, 1, NULL, names);
    memcpy(rgb, cols[k], sizeof rgb);
    arg = 2;
  } else {
    for (int i = 0; i < 3; i++) {
      rgb[i] = (float)luaL_checknumber(L, 1 + i);
      if (!(rgb[i] >= 0 && rgb[i] <= 1)) luaL_argerror(L, 1 + i, "colour channels are 0..1");
    }
    arg = 4;
  }
  float secs = verbs_opt_seconds(L, arg, 0);
  uint64_t f = verbs_push_future(g, L);
  world_ambient(&g->w, rgb, secs, f);
  verbs_dispatch(g);
  return 1;
}

/* banner(text [, subtitle [, seconds]]) -> future: a title over the
   screen. */
static int l_banner(lua_State *L) {
  game *g = G(L);
  const char *text = luaL_checkstring(L, 1);
  const char *sub = luaL_optstring(L, 2, "");
  float secs = verbs_opt_seconds(L, 3, 3.0f);
  uint64_t f = verbs_push_future(g, L);
  world_banner(&g->w, text, sub, secs, f);
  verbs_dispatch(g);
  return 1;
}

static int l_objective(lua_State *L) {
  game *g = G(L);
  snprintf(g->w.objective, sizeof g->w.objective, "%s", luaL_optstring(L, 1, ""));
  return 0;
}

static int l_clear_speech(lua_State *L) {
  game *g = G(L);
  world_clear_speech(&g->w);
  verbs_dispatch(g);
  return 0;
}

static const luaL_Reg fns[] = {{"pan_camera", l_pan_camera},
                               {"follow_camera", l_follow_camera},
                               {"shake_camera", l_shake_camera},
                               {"zoom_camera", l_zoom_camera},
                               {"fade", l_fade},
                               {"fade_in", l_fade_in},
                               {"fade_out", l_fade_out},
                               {"ambient", l_ambient},
                               {"banner", l_banner},
                               {"objective", l_objective},
                               {"clear_speech", l_clear_speech},
                               {NULL, NULL}};

void screen_open(game *g) {
  lua_pushlightuserdata(g->L, g);
  luaL_setfuncs(g->L, fns, 1);
  verbs_name(g, "screen", fns);
}
