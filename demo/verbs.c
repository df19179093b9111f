/* Entity verbs and world functions for scripts. Every function here gets
   the game as upvalue 1. Long actions create a weft future, hand it to the
   script, and let the world complete it later (see verbs_dispatch). */
#include "verbs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "assets.h"

#define G(L) ((game *)lua_touserdata(L, lua_upvalueindex(1)))

static int dispatching; /* verbs_dispatch is on the stack */

/* ---- helpers ---- */

static float to_world(float tiles) { return tiles * TILE + TILE / 2.0f; }

void verbs_push_point(lua_State *L, float x, float y) {
  lua_createtable(L, 0, 2);
  lua_pushnumber(L, x);
  lua_setfield(L, -2, "x");
  lua_pushnumber(L, y);
  lua_setfield(L, -2, "y");
}

/* Pushes the state table of entity idx (nil when there is none). */
void verbs_push_ent(game *g, lua_State *L, int idx) {
  if (!world_ent(&g->w, idx)) {
    lua_pushnil(L);
    return;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.ents);
  lua_rawgeti(L, -1, idx);
  lua_remove(L, -2);
}

/* The entity at arg: a state table, or an entity's name. Raises a script
   error for anything else, or for a destroyed entity. */
int verbs_check_ent(game *g, lua_State *L, int arg) {
  if (lua_type(L, arg) == LUA_TSTRING) {
    int idx = world_find(&g->w, lua_tostring(L, arg));
    if (idx < 0)
      luaL_argerror(L, arg, lua_pushfstring(L, "no entity named '%s'", lua_tostring(L, arg)));
    return idx;
  }
  if (!lua_istable(L, arg)) luaL_typeerror(L, arg, "entity");
  lua_pushliteral(L, "id");
  lua_rawget(L, arg);
  int isnum;
  lua_Integer id = lua_tointegerx(L, -1, &isnum);
  lua_pop(L, 1);
  if (!isnum) luaL_typeerror(L, arg, "entity");
  int idx = (int)(id & 255);
  entity *e = world_ent(&g->w, idx);
  if (!e || e->gen != (uint32_t)(id >> 8)) {
    lua_pushliteral(L, "name");
    lua_rawget(L, arg);
    const char *name = lua_tostring(L, -1);
    luaL_error(L, "entity '%s' was destroyed", name ? name : "?");
  }
  return idx;
}

static int mark_find(game *g, const char *name, float *x, float *y) {
  for (int i = 0; i < g->w.lv.nmarks; i++)
    if (strcmp(g->w.lv.marks[i].name, name) == 0) {
      *x = to_world(g->w.lv.marks[i].x);
      *y = to_world(g->w.lv.marks[i].y);
      return 1;
    }
  return 0;
}

int verbs_check_point(game *g, lua_State *L, int arg, float *x, float *y) {
  if (lua_type(L, arg) == LUA_TSTRING) {
    const char *s = lua_tostring(L, arg);
    if (mark_find(g, s, x, y)) return -1;
    int idx = world_find(&g->w, s);
    if (idx < 0) luaL_argerror(L, arg, lua_pushfstring(L, "no mark or entity named '%s'", s));
    *x = g->w.ents[idx].x;
    *y = g->w.ents[idx].y;
    return idx;
  }
  if (!lua_istable(L, arg)) luaL_typeerror(L, arg, "position, entity or mark name");
  lua_pushliteral(L, "id");
  int has_id = lua_rawget(L, arg) != LUA_TNIL;
  lua_pop(L, 1);
  if (has_id) {
    int idx = verbs_check_ent(g, L, arg);
    *x = g->w.ents[idx].x;
    *y = g->w.ents[idx].y;
    return idx;
  }
  lua_getfield(L, arg, "x");
  lua_getfield(L, arg, "y");
  if (!lua_isnumber(L, -2) || !lua_isnumber(L, -1))
    luaL_argerror(L, arg, "position needs numeric x and y");
  *x = (float)lua_tonumber(L, -2);
  *y = (float)lua_tonumber(L, -1);
  lua_pop(L, 2);
  if (!isfinite(*x) || !isfinite(*y)) luaL_argerror(L, arg, "position is not finite");
  return -1;
}

float verbs_opt_seconds(lua_State *L, int arg, float def) {
  if (lua_isnoneornil(L, arg)) return def;
  lua_Number s = luaL_checknumber(L, arg);
  if (s != s || s < 0) luaL_argerror(L, arg, "seconds must be >= 0");
  return (float)s;
}

/* Creates a future owned by C and pushes its handle on L. */
uint64_t verbs_push_future(game *g, lua_State *L) {
  weft_future f = weft_future_new(g->W);
  if (!f.id) luaL_error(L, "not enough memory");
  lua_Debug ar; /* name it after the verb, for the task inspector */
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name)
    weft_future_set_name(g->W, f, ar.name);
  weft_push_future(g->W, L, f);
  luaL_where(L, 1); /* the script's line that asked: a failure names it */
  g->sites[f.id % VERB_SITES].fut = f.id;
  snprintf(g->sites[f.id % VERB_SITES].where, sizeof g->sites[0].where, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  world_use_clock(
      &g->w, weft_current_group(g->W).id); /* the action it stands for follows its caller's clock */
  return f.id;
}

float verbs_clocks(game *g) {
  world *w = &g->w;
  world_sweep_clocks(w);
  double game_rate = weft_group_rate(g->W, g->modes.group);
  float dt = (float)(STEP_DT * (game_rate > 0 ? game_rate : 0));
  for (int i = 1; i < WORLD_MAX_CLOCKS; i++) {
    if (!w->clocks[i].key) continue;
    double rate = weft_group_rate(g->W, (weft_group){w->clocks[i].key});
    w->clocks[i].dt = rate < 0 ? dt : (float)(STEP_DT * rate); /* gone: the game's */
  }
  return dt;
}

/* Calls obj:name(args) where obj is below its nargs arguments on g->L;
   reports an error instead of raising. Pops obj and the arguments. */
void verbs_call_method(game *g, const char *name, int nargs) {
  lua_State *L = g->L;
  int obj = lua_gettop(L) - nargs;
  lua_getfield(L, obj, name);
  lua_insert(L, obj);
  if (lua_pcall(L, nargs + 1, 0, 0) != LUA_OK) {
    fprintf(stderr, "weft-demo: %s: %s\n", name, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
}

/* Pushes the script API table onto L (weft_push_api pushes onto the main
   thread). */
void verbs_push_api(game *g, lua_State *L) {
  weft_push_api(g->W);
  if (L != g->L) lua_xmove(g->L, L, 1);
}

/* Pushes groups.<name>. */
void verbs_push_group(game *g, lua_State *L, const char *name) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.groups);
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
}

/* ---- entity tables ---- */

/* Creates the state table of entity idx: id, name, kind, group (a child
   of the world group), saw_player (a signal), waypoints. */
static void make_ent_table(game *g, lua_State *L, int idx) {
  entity *e = &g->w.ents[idx];
  static const char *const kinds[KIND_COUNT] = {"hero", "guard", "captain", "sage"};
  lua_createtable(L, 0, 8);
  int t = lua_gettop(L);
  lua_pushinteger(L, (lua_Integer)e->gen << 8 | idx);
  lua_setfield(L, t, "id");
  lua_pushstring(L, e->name);
  lua_setfield(L, t, "name");
  lua_pushstring(L, kinds[e->kind]);
  lua_setfield(L, t, "kind");
  /* group{name = name, parent = groups.world} */
  verbs_push_api(g, L);
  lua_getfield(L, -1, "group");
  lua_createtable(L, 0, 2);
  lua_pushstring(L, e->name);
  lua_setfield(L, -2, "name");
  verbs_push_group(g, L, "world");
  lua_setfield(L, -2, "parent");
  lua_call(L, 1, 1);
  lua_setfield(L, t, "group");
  lua_getfield(L, -1, "signal");
  lua_pushfstring(L, "%s saw player", e->name);
  lua_call(L, 1, 1);
  lua_setfield(L, t, "saw_player");
  lua_pop(L, 1); /* api */
  lua_newtable(L);
  lua_setfield(L, t, "waypoints");
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.ent_mt);
  lua_setmetatable(L, t);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.ents);
  lua_pushvalue(L, t);
  lua_rawseti(L, -2, idx);
  lua_pop(L, 1);
}

/* ---- casting ---- */

/* Whether the running task belongs to group (on top of L; popped) or a
   group inside it. */
static int runs_in(game *g, lua_State *L) {
  int top = lua_gettop(L), found = 0;
  verbs_push_api(g, L);
  lua_getfield(L, -1, "current");
  lua_call(L, 0, 1);
  if (!lua_isnil(L, -1)) {
    lua_getfield(L, -1, "group");
    for (int depth = 0; depth < 16 && !lua_isnil(L, -1) && !found; depth++) {
      found = lua_rawequal(L, -1, top);
      lua_getfield(L, -1, "parent");
      lua_remove(L, -2);
    }
  }
  lua_settop(L, top - 1);
  return found;
}

/* Nonzero when the running task belongs to groups.cutscenes (or a group
   inside it): a cinematic is speaking. */
static int in_cutscene(game *g, lua_State *L) {
  verbs_push_group(g, L, "cutscenes");
  return runs_in(g, L);
}

/* Calls group:name() for the group of entity idx's state table. */
static void group_call(game *g, lua_State *L, int idx, const char *name) {
  verbs_push_ent(g, L, idx);
  if (lua_istable(L, -1) && lua_getfield(L, -1, "group") != LUA_TNIL) {
    lua_getfield(L, -1, name);
    lua_insert(L, -2);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
  } else
    lua_pop(L, 2);
}

/* Casts entity idx in the cinematic playing: its group is paused (its
   brain and helpers hold, where they are, so none of them moves it
   against the scene) until release_cast(). Not the player; not an
   entity whose group was paused already or runs the caller (a guard
   whose brain plays "caught"): those are left alone. */
static void cast(game *g, lua_State *L, int idx) {
  entity *e = world_ent(&g->w, idx);
  if (!e || e->cast || idx == g->w.player) return;
  e->cast = 2;
  verbs_push_ent(g, L, idx);
  if (!lua_istable(L, -1) || lua_getfield(L, -1, "group") == LUA_TNIL) {
    lua_pop(L, 2);
    return;
  }
  lua_getfield(L, -1, "paused");
  int paused = lua_toboolean(L, -1);
  lua_pop(L, 1);
  int caller = runs_in(g, L); /* pops the group */
  lua_pop(L, 1);
  if (paused || caller) return;
  e->cast = 1;
  group_call(g, L, idx, "pause");
}

/* The entity at arg for a verb that acts on it: a cinematic that acts on
   an entity casts it. */
static int act_on(game *g, lua_State *L, int arg) {
  int idx = verbs_check_ent(g, L, arg);
  entity *e = &g->w.ents[idx];
  if (!e->cast && idx != g->w.player && in_cutscene(g, L)) cast(g, L, idx);
  return idx;
}

/* cast(e): casts e in the cinematic playing (cinema.play casts the
   scene's actors so). */
static int l_cast(lua_State *L) {
  game *g = G(L);
  cast(g, L, verbs_check_ent(g, L, 1));
  return 0;
}

/* release_cast([e]): e's group runs again and the scene leaves it alone
   from now on (an actor that goes its own way before the scene ends);
   without e, every entity cast goes back to its scripts (the cinematic
   ended, however). */
static int l_release_cast(lua_State *L) {
  game *g = G(L);
  if (!lua_isnoneornil(L, 1)) {
    int idx = verbs_check_ent(g, L, 1);
    if (g->w.ents[idx].cast == 1) group_call(g, L, idx, "resume");
    g->w.ents[idx].cast = 2;
    return 0;
  }
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(&g->w, i);
    if (!e) continue;
    if (e->cast == 1) group_call(g, L, i, "resume");
    e->cast = 0;
  }
  return 0;
}

/* ---- entity verbs ---- */

/* e:move_to(place [, speed]) -> future resolving to "arrived", or to
   "interrupted" when another move or stop replaces it, or "blocked" when
   there is no way there. */
static int l_move_to(lua_State *L) {
  game *g = G(L);
  int idx = act_on(g, L, 1);
  float x, y;
  verbs_check_point(g, L, 2, &x, &y);
  lua_Number speed = luaL_optnumber(L, 3, 40);
  if (!(speed > 0) || !isfinite(speed)) luaL_argerror(L, 3, "speed must be a positive number");
  uint64_t f = verbs_push_future(g, L);
  if (world_move_to(&g->w, idx, x, y, (float)speed, f) != 0)
    world_emit(&g->w, EV_RESOLVE, f, idx, -1, "blocked");
  verbs_dispatch(g);
  return 1;
}

static int l_stop(lua_State *L) {
  game *g = G(L);
  world_stop(&g->w, act_on(g, L, 1));
  verbs_dispatch(g);
  return 0;
}

/* e:alpha([a]) -> how opaque it is drawn (0..1); sets it when given. */
static int l_alpha(lua_State *L) {
  game *g = G(L);
  entity *e = world_ent(&g->w, verbs_check_ent(g, L, 1));
  if (!lua_isnoneornil(L, 2)) {
    lua_Number a = luaL_checknumber(L, 2);
    e->alpha = (float)(a < 0 ? 0 : a > 1 ? 1 : a);
  }
  lua_pushnumber(L, e->alpha);
  return 1;
}

/* stop_walks(): stops every walk that a script of the caller's group
   started (a cinematic's, when it is skipped: the entities it fetched
   itself included). */
static int l_stop_walks(lua_State *L) {
  game *g = G(L);
  uint64_t group = weft_current_group(g->W).id;
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(&g->w, i);
    if (e && e->ipath < e->npath && e->move_clk && g->w.clocks[e->move_clk].key == group)
      world_stop(&g->w, i);
  }
  verbs_dispatch(g);
  return 0;
}

/* An angle in degrees or "right", "down", "left", "up" at arg; 0 when it
   is neither. */
static int direction(lua_State *L, int arg, float *deg) {
  static const char *const dirs[] = {"right", "down", "left", "up", NULL};
  if (lua_type(L, arg) == LUA_TNUMBER) {
    *deg = (float)lua_tonumber(L, arg);
    return isfinite(*deg);
  }
  for (int i = 0; dirs[i] && lua_type(L, arg) == LUA_TSTRING; i++)
    if (strcmp(lua_tostring(L, arg), dirs[i]) == 0) return *deg = 90.0f * (float)i, 1;
  return 0;
}

/* e:face(target) with an angle in degrees (0 right, 90 down), a direction
   name, an entity or a place -> future resolving to "done". */
static int l_face(lua_State *L) {
  game *g = G(L);
  int idx = act_on(g, L, 1);
  entity *e = &g->w.ents[idx];
  float deg;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    deg = (float)lua_tonumber(L, 2);
    if (!isfinite(deg)) luaL_argerror(L, 2, "angle is not finite");
  } else if (!direction(L, 2, &deg)) {
    float x, y;
    verbs_check_point(g, L, 2, &x, &y);
    deg = atan2f(y - e->y, x - e->x) * 180.0f / 3.14159265f;
  }
  uint64_t f = verbs_push_future(g, L);
  world_face(&g->w, idx, deg, f);
  verbs_dispatch(g);
  return 1;
}

/* e:say(text [, seconds]) -> future resolving to "key" (the player
   advanced it), "timeout", "interrupted" or "skipped". Said by a
   cinematic (a task in groups.cutscenes) it is a dialogue box, else a
   balloon over the head.
   Without seconds it stays for a reading time; math.huge waits for the
   key. */
/* Who speaks in a dialogue box, from the entity's state table: `title`
   (a string; else its kind's name) and `portrait` (a kind whose face to
   show, "captain", or {"guard", tint = {r, g, b}} with channels 0..1;
   else its own kind's face). */
static void speaker_look(game *g, lua_State *L, int idx) {
  entity *e = world_ent(&g->w, idx);
  verbs_push_ent(g, L, idx);
  if (!e || !lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_getfield(L, -1, "title");
  snprintf(e->title, sizeof e->title, "%s",
           lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : world_kind_title(e->kind));
  lua_pop(L, 1);
  e->portrait = e->kind;
  memset(e->tint, 255, sizeof e->tint);
  int t = lua_getfield(L, -1, "portrait");
  if (t == LUA_TTABLE) {
    lua_rawgeti(L, -1, 1);
    if (lua_getfield(L, -2, "tint") == LUA_TTABLE)
      for (int i = 0; i < 3; i++) {
        lua_rawgeti(L, -1, i + 1);
        lua_Number c = lua_tonumber(L, -1);
        e->tint[i] = (uint8_t)(c <= 0 ? 0 : c >= 1 ? 255 : c * 255);
        lua_pop(L, 1);
      }
    lua_pop(L, 1);
  }
  if (lua_type(L, -1) == LUA_TSTRING && world_kind(lua_tostring(L, -1)) >= 0)
    e->portrait = world_kind(lua_tostring(L, -1));
  lua_pop(L, t == LUA_TTABLE ? 3 : 2);
}

static int l_say(lua_State *L) {
  game *g = G(L);
  int idx = act_on(g, L, 1);
  const char *text = luaL_checkstring(L, 2);
  float secs = lua_isnoneornil(L, 3) ? 0 : (float)luaL_checknumber(L, 3);
  if (secs != secs || secs < 0) luaL_argerror(L, 3, "seconds must be >= 0");
  int box = in_cutscene(g, L);
  if (box) speaker_look(g, L, idx);
  uint64_t f = verbs_push_future(g, L);
  world_say(&g->w, idx, text, secs, box, f);
  verbs_dispatch(g);
  return 1;
}

/* e:play_anim(name [, seconds]) -> future resolving to "done" (or
   "interrupted"): wave, jump, shake, spin, nod, sleep (until replaced),
   none. */
static int l_play_anim(lua_State *L) {
  game *g = G(L);
  static const char *const names[] = {"none", "wave", "jump",  "shake",
                                      "spin", "nod",  "sleep", NULL};
  int idx = act_on(g, L, 1);
  int anim = luaL_checkoption(L, 2, NULL, names);
  float secs = verbs_opt_seconds(L, 3, 0);
  uint64_t f = verbs_push_future(g, L);
  world_anim(&g->w, idx, anim, secs, f);
  verbs_dispatch(g);
  return 1;
}

/* e:can_see(target) -> boolean: in the vision cone and not behind walls.
   Nobody sees the player while a cinematic holds the input. */
static int l_can_see(lua_State *L) {
  game *g = G(L);
  int idx = verbs_check_ent(g, L, 1);
  float x, y;
  int t = verbs_check_point(g, L, 2, &x, &y);
  int ok = !(t >= 0 && t == g->w.player && g->w.input_lock > 0) && world_can_see(&g->w, idx, x, y);
  lua_pushboolean(L, ok);
  return 1;
}

static int l_distance(lua_State *L) {
  game *g = G(L);
  int idx = verbs_check_ent(g, L, 1);
  float x, y;
  verbs_check_point(g, L, 2, &x, &y);
  lua_pushnumber(L, world_dist(&g->w, idx, x, y));
  return 1;
}

static int l_position(lua_State *L) {
  game *g = G(L);
  int idx = verbs_check_ent(g, L, 1);
  verbs_push_point(L, g->w.ents[idx].x, g->w.ents[idx].y);
  return 1;
}

static int l_teleport(lua_State *L) {
  game *g = G(L);
  int idx = act_on(g, L, 1);
  float x, y;
  verbs_check_point(g, L, 2, &x, &y);
  world_stop(&g->w, idx);
  g->w.ents[idx].x = x;
  g->w.ents[idx].y = y;
  if (g->w.cam_follow == idx) g->w.cam_x = x, g->w.cam_y = y - 8;
  world_update_vision(&g->w);
  verbs_dispatch(g);
  return 0;
}

/* e:mood("calm" | "suspicious" | "alert"): colours the vision cone. With
   no argument returns the current mood. */
static int l_mood(lua_State *L) {
  game *g = G(L);
  static const char *const moods[] = {"calm", "suspicious", "alert", NULL};
  int idx = verbs_check_ent(g, L, 1);
  if (lua_isnoneornil(L, 2)) {
    lua_pushstring(L, moods[g->w.ents[idx].mood]);
    return 1;
  }
  g->w.ents[idx].mood = luaL_checkoption(L, 2, NULL, moods);
  return 0;
}

/* e:destroy(): its pending futures fail, its group is cancelled (its
   scripts stop, their cleanups run), the table goes stale. */
static int l_destroy(lua_State *L) {
  game *g = G(L);
  int idx = verbs_check_ent(g, L, 1);
  lua_settop(L, 1);
  verbs_push_ent(g, L, idx); /* 2: the state table (arg 1 may be a name) */
  world_destroy(&g->w, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.ents);
  lua_pushnil(L);
  lua_rawseti(L, -2, idx);
  lua_pop(L, 1);
  verbs_dispatch(g);
  /* last: this may cancel the calling task itself */
  lua_getfield(L, 2, "group");
  if (!lua_isnil(L, -1)) {
    lua_getfield(L, -1, "cancel");
    lua_insert(L, -2);
    lua_call(L, 1, 0);
  }
  return 0;
}

/* e:facing() -> degrees the entity faces (0 right, 90 down). */
static int l_facing(lua_State *L) {
  game *g = G(L);
  int idx = verbs_check_ent(g, L, 1);
  float a = fmodf(g->w.ents[idx].facing, 360.0f);
  lua_pushnumber(L, a < 0 ? a + 360 : a);
  return 1;
}

static int l_alive(lua_State *L) {
  game *g = G(L);
  int alive = 0;
  if (lua_istable(L, 1)) {
    lua_pushliteral(L, "id");
    lua_rawget(L, 1);
    lua_Integer id = lua_tointeger(L, -1);
    entity *e = world_ent(&g->w, (int)(id & 255));
    alive = e && e->gen == (uint32_t)(id >> 8);
  }
  lua_pushboolean(L, alive);
  return 1;
}

static int l_ent_tostring(lua_State *L) {
  lua_getfield(L, 1, "name");
  lua_pushfstring(L, "entity %s", lua_tostring(L, -1));
  return 1;
}

/* ---- entities ---- */

static int l_player(lua_State *L) {
  game *g = G(L);
  verbs_push_ent(g, L, g->w.player);
  return 1;
}

static int l_entity(lua_State *L) {
  game *g = G(L);
  verbs_push_ent(g, L, world_find(&g->w, luaL_checkstring(L, 1)));
  return 1;
}

/* entities([kind]) -> list of entity tables, in spawn-slot order. */
static int l_entities(lua_State *L) {
  game *g = G(L);
  int kind = -1, n = 0;
  if (!lua_isnoneornil(L, 1)) {
    kind = world_kind(luaL_checkstring(L, 1));
    if (kind < 0) luaL_argerror(L, 1, "unknown kind");
  }
  lua_newtable(L);
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(&g->w, i);
    if (!e || (kind >= 0 && e->kind != kind)) continue;
    verbs_push_ent(g, L, i);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

/* spawn_entity(kind, place [, name [, facing]]) -> entity table. */
static int l_spawn_entity(lua_State *L) {
  game *g = G(L);
  int kind = world_kind(luaL_checkstring(L, 1));
  if (kind < 0) luaL_argerror(L, 1, "kind is one of hero, guard, captain, sage");
  float x, y;
  verbs_check_point(g, L, 2, &x, &y);
  char name[LEVEL_NAME];
  if (lua_isnoneornil(L, 3))
    snprintf(name, sizeof name, "%s%d", lua_tostring(L, 1), ++g->w.unnamed);
  else
    snprintf(name, sizeof name, "%s", luaL_checkstring(L, 3));
  if (world_find(&g->w, name) >= 0) luaL_argerror(L, 3, "an entity with that name exists");
  float facing = 90;
  if (!lua_isnoneornil(L, 4) && !direction(L, 4, &facing))
    luaL_argerror(L, 4, "facing is an angle or \"right\", \"down\", \"left\", \"up\"");
  int idx = world_spawn(&g->w, kind, name, x, y, facing);
  if (idx < 0) return luaL_error(L, "too many entities");
  make_ent_table(g, L, idx);
  return 1;
}

/* ---- level: marks, zones, doors ---- */

static int l_mark(lua_State *L) {
  game *g = G(L);
  float x, y;
  const char *name = luaL_checkstring(L, 1);
  if (!mark_find(g, name, &x, &y))
    return luaL_argerror(L, 1, lua_pushfstring(L, "no mark '%s'", name));
  verbs_push_point(L, x, y);
  return 1;
}

static int l_marks(lua_State *L) {
  game *g = G(L);
  lua_newtable(L);
  for (int i = 0; i < g->w.lv.nmarks; i++) {
    verbs_push_point(L, to_world(g->w.lv.marks[i].x), to_world(g->w.lv.marks[i].y));
    lua_setfield(L, -2, g->w.lv.marks[i].name);
  }
  return 1;
}

/* tile(tx, ty) -> the place at the centre of that tile. */
static int l_tile(lua_State *L) {
  double tx = luaL_checknumber(L, 1), ty = luaL_checknumber(L, 2);
  if (!isfinite(tx) || !isfinite(ty)) luaL_argerror(L, isfinite(tx) ? 2 : 1, "tile is not finite");
  verbs_push_point(L, to_world((float)tx), to_world((float)ty));
  return 1;
}

static int zone_index(game *g, const char *name) {
  for (int i = 0; i < g->w.lv.nzones; i++)
    if (strcmp(g->w.lv.zones[i].name, name) == 0) return i;
  return -1;
}

/* zone(name) -> {name, cinematic, x, y, w, h, entered = signal,
   left = signal}; nil when there is no such zone. */
static int l_zone(lua_State *L) {
  game *g = G(L);
  int z = zone_index(g, luaL_checkstring(L, 1));
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.zones);
  if (z < 0)
    lua_pushnil(L);
  else
    lua_rawgeti(L, -1, z + 1);
  return 1;
}

static int l_zones(lua_State *L) {
  game *g = G(L);
  lua_newtable(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.zones);
  for (int i = 0; i < g->w.lv.nzones; i++) {
    lua_rawgeti(L, -1, i + 1);
    lua_rawseti(L, -3, i + 1);
  }
  lua_pop(L, 1);
  return 1;
}

static int l_in_zone(lua_State *L) {
  game *g = G(L);
  int z = zone_index(g, luaL_checkstring(L, 1));
  lua_pushboolean(L, z >= 0 && g->w.zone_in[z]);
  return 1;
}

static int door_verb(lua_State *L, int open) {
  game *g = G(L);
  const char *name = luaL_checkstring(L, 1);
  int d = world_door_find(&g->w, name);
  if (d < 0) return luaL_argerror(L, 1, lua_pushfstring(L, "no door '%s'", name));
  uint64_t f = verbs_push_future(g, L);
  world_door_set(&g->w, d, open, f);
  verbs_dispatch(g);
  return 1;
}
/* open_door(name) / close_door(name) -> future resolving to "open" /
   "closed" when the door has swung. */
static int l_open_door(lua_State *L) { return door_verb(L, 1); }
static int l_close_door(lua_State *L) { return door_verb(L, 0); }

static int l_door_open(lua_State *L) {
  game *g = G(L);
  int d = world_door_find(&g->w, luaL_checkstring(L, 1));
  if (d < 0) return luaL_argerror(L, 1, "no such door");
  lua_pushboolean(L, g->w.doors[d].open);
  return 1;
}

/* set_tile(tx, ty, char): changes one cell of the map (a tile character
   of the level legend). */
static int l_set_tile(lua_State *L) {
  game *g = G(L);
  lua_Integer x = luaL_checkinteger(L, 1), y = luaL_checkinteger(L, 2);
  size_t len;
  const char *c = luaL_checklstring(L, 3, &len);
  if (!g->w.loaded) return luaL_error(L, "no level");
  if (x < 0 || y < 0 || x >= g->w.lv.w || y >= g->w.lv.h)
    return luaL_argerror(L, 1, "outside the map");
  if (len != 1 || c[0] == 'D') return luaL_argerror(L, 3, "one tile character (not a door)");
  world_set_cell(&g->w, (int)x, (int)y, c[0]);
  world_update_vision(&g->w);
  verbs_dispatch(g);
  return 0;
}

/* build_level(level): builds the world from the level a load_level()
   future resolved to (or from a level file's text) and spawns its
   entities; scripts start their behaviours. */
/* The level's zones as tables with their entered/left signals, in the
   registry's zone list. */
static void push_zones(game *g, lua_State *L, const level *l) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.zones);
  int zt = lua_gettop(L);
  verbs_push_api(g, L);
  int api = lua_gettop(L);
  for (int i = 0; i < l->nzones; i++) {
    const level_zone *z = &l->zones[i];
    lua_createtable(L, 0, 8);
    lua_pushstring(L, z->name);
    lua_setfield(L, -2, "name");
    if (z->cinematic[0]) {
      lua_pushstring(L, z->cinematic);
      lua_setfield(L, -2, "cinematic");
    }
    static const char *const f[4] = {"x", "y", "w", "h"};
    const int v[4] = {z->x, z->y, z->w, z->h};
    for (int k = 0; k < 4; k++) {
      lua_pushinteger(L, v[k]);
      lua_setfield(L, -2, f[k]);
    }
    static const char *const sig[2] = {"entered", "left"};
    for (int k = 0; k < 2; k++) {
      lua_getfield(L, api, "signal");
      lua_pushfstring(L, "zone %s %s", z->name, sig[k]);
      lua_call(L, 1, 1);
      lua_setfield(L, -2, sig[k]);
    }
    lua_rawseti(L, zt, i + 1);
  }
  lua_settop(L, zt - 1);
}

static int l_build_level(lua_State *L) {
  game *g = G(L);
  if (g->w.loaded) return luaL_error(L, "a level is already built");
  level lv;
  if (lua_type(L, 1) == LUA_TSTRING) {
    size_t len;
    const char *text = lua_tolstring(L, 1, &len);
    char err[256];
    if (level_parse(&lv, text, len, err, sizeof err) != 0) return luaL_error(L, "%s", err);
  } else {
    luaL_checktype(L, 1, LUA_TTABLE);
    level *p = assets_take_level(g);
    if (!p) return luaL_argerror(L, 1, "no level loaded (wait for load_level first)");
    lv = *p;
    free(p);
  }
  world_load(&g->w, &lv);
  if (!g->w.loaded) return luaL_error(L, "not enough memory");
  const level *l = &g->w.lv;
  for (int i = 0; i < l->nents; i++) {
    const level_entity *le = &l->ents[i];
    int kind = world_kind(le->kind);
    if (kind < 0)
      return luaL_error(L, "castle.level: entity '%s' has unknown kind '%s'", le->name, le->kind);
    int idx = world_spawn(&g->w, kind, le->name, to_world(le->x), to_world(le->y), le->facing);
    if (idx < 0) return luaL_error(L, "too many entities");
    make_ent_table(g, L, idx);
    int t = lua_gettop(L);
    if (le->brain[0]) {
      lua_pushstring(L, le->brain);
      lua_setfield(L, t, "brain");
    }
    if (le->route >= 0) {
      lua_getfield(L, t, "waypoints");
      const level_route *r = &l->routes[le->route];
      for (int k = 0; k < r->n; k++) {
        verbs_push_point(L, to_world(r->pts[k][0]), to_world(r->pts[k][1]));
        lua_rawseti(L, -2, k + 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  push_zones(g, L, l);
  entity *p = world_ent(&g->w, g->w.player);
  if (p) {
    g->w.cam_x = p->x;
    g->w.cam_y = p->y - 8;
    g->w.cam_follow = g->w.player;
  }
  return 0;
}

/* ---- registration ---- */

static const luaL_Reg ent_methods[] = {
    {"move_to", l_move_to},   {"stop", l_stop},           {"face", l_face},
    {"say", l_say},           {"play_anim", l_play_anim}, {"can_see", l_can_see},
    {"distance", l_distance}, {"position", l_position},   {"teleport", l_teleport},
    {"mood", l_mood},         {"destroy", l_destroy},     {"alive", l_alive},
    {"facing", l_facing},     {"alpha", l_alpha},         {NULL, NULL}};

static const luaL_Reg globals[] = {{"player", l_player},
                                   {"entity", l_entity},
                                   {"entities", l_entities},
                                   {"spawn_entity", l_spawn_entity},
                                   {"stop_walks", l_stop_walks},
                                   {"cast", l_cast},
                                   {"release_cast", l_release_cast},
                                   {"destroy", l_destroy},
                                   {"say", l_say},
                                   {"move_to", l_move_to},
                                   {"face", l_face},
                                   {"play_anim", l_play_anim},
                                   {"can_see", l_can_see},
                                   {"distance", l_distance},
                                   {"position", l_position},
                                   {"mark", l_mark},
                                   {"marks", l_marks},
                                   {"tile", l_tile},
                                   {"zone", l_zone},
                                   {"zones", l_zones},
                                   {"in_zone", l_in_zone},
                                   {"open_door", l_open_door},
                                   {"close_door", l_close_door},
                                   {"door_open", l_door_open},
                                   {"build_level", l_build_level},
                                   {"set_tile", l_set_tile},
                                   {NULL, NULL}};

void verbs_name(game *g, const char *prefix, const luaL_Reg *fns) {
  for (; fns->name; fns++) {
    char name[96];
    snprintf(name, sizeof name, "demo.%s.%s", prefix, fns->name);
    weft_save_name(g->W, name, fns->func);
  }
}

static int new_ref_table(lua_State *L) {
  lua_newtable(L);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

void verbs_open(game *g) {
  lua_State *L = g->L;
  /* what a save meets that is not in the API table: the game (every
     function's upvalue), the entities' methods */
  weft_save_pointer(g->W, "demo.game", g);
  verbs_name(g, "verbs", globals);
  verbs_name(g, "entity", ent_methods);
  weft_save_name(g->W, "demo.entity.__tostring", l_ent_tostring);
  g->refs.ents = new_ref_table(L);
  g->refs.zones = new_ref_table(L);
  g->refs.keys = new_ref_table(L);
  g->ov.versions = new_ref_table(L);
  /* the entity metatable: verbs as methods */
  lua_createtable(L, 0, 4);
  lua_newtable(L);
  lua_pushlightuserdata(L, g);
  luaL_setfuncs(L, ent_methods, 1);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_ent_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "entity");
  lua_setfield(L, -2, "__name");
  g->refs.ent_mt = luaL_ref(L, LUA_REGISTRYINDEX);
  weft_push_api(g->W);
  int api = lua_gettop(L);
  lua_pushlightuserdata(L, g);
  luaL_setfuncs(L, globals, 1);
  lua_getfield(L, api, "finally");
  g->refs.finally = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, api); /* leave the API table for the other modules */
}

void verbs_dispatch(game *g) {
  if (dispatching) return;
  dispatching = 1;
  lua_State *L = g->L;
  world *w = &g->w;
  for (int i = 0; i < w->nev; i++) {
    world_event ev = w->ev[i];
    switch (ev.kind) {
    case EV_RESOLVE:
    case EV_FAIL:
      if (ev.kind == EV_FAIL && g->sites[ev.fut % VERB_SITES].fut == ev.fut)
        lua_pushfstring(L, "%s%s", g->sites[ev.fut % VERB_SITES].where, ev.value);
      else
        lua_pushstring(L, ev.value);
      if (ev.kind == EV_RESOLVE)
        weft_future_resolve(g->W, (weft_future){ev.fut}, 1);
      else
        weft_future_fail(g->W, (weft_future){ev.fut});
      break;
    case EV_SAW: /* set while seen: a wait that starts then returns at once */
    case EV_LOST:
      verbs_push_ent(g, L, ev.ent);
      if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "saw_player");
        lua_remove(L, -2);
        if (ev.kind == EV_SAW) verbs_push_ent(g, L, w->player);
        verbs_call_method(g, ev.kind == EV_SAW ? "set" : "reset", ev.kind == EV_SAW);
      } else
        lua_pop(L, 1);
      break;
    case EV_ZONE_IN:
    case EV_ZONE_OUT:
      lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.zones);
      lua_rawgeti(L, -1, ev.zone + 1);
      lua_remove(L, -2);
      if (lua_istable(L, -1)) {
        lua_getfield(L, -1, ev.kind == EV_ZONE_IN ? "entered" : "left");
        lua_remove(L, -2);
        verbs_push_ent(g, L, w->player);
        verbs_call_method(g, "fire", 1);
      } else
        lua_pop(L, 1);
      break;
    }
  }
  w->nev = 0;
  dispatching = 0;
}
