/* The boot script and soft reset (see session.h). */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "assets.h"
#include "overlay.h"
#include "render.h"
#include "replay.h"
#include "verbs.h"

#define G(L) ((game *)lua_touserdata(L, lua_upvalueindex(1)))

enum { STAMP_EVERY = 15 }; /* frames between two looks at main.lua while the boot is dead */

/* main.lua's modification time and size in one number (0: cannot tell). */
static long long main_stamp(game *g) {
  char path[FILE_LEN];
  struct stat st;
  snprintf(path, sizeof path, "%.*s/main.lua", DIR_LEN, g->run.scripts_dir);
  if (stat(path, &st) != 0) return 0;
  return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec + st.st_size;
}

/* How many files weft.reload_errors() lists (-1 when it cannot say). */
static int broken_files(game *g) {
  lua_State *L = g->L;
  int top = lua_gettop(L), n = -1;
  weft_push_api(g->W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "reload_errors");
  if (lua_pcall(L, 0, 1, 0) == LUA_OK && lua_istable(L, -1)) n = (int)luaL_len(L, -1);
  lua_settop(L, top);
  return n;
}

static void died(game *g, const char *why) {
  g->boot.dead = 1;
  snprintf(g->boot.why, sizeof g->boot.why, "%s", why && *why ? why : "the boot script failed");
  g->boot.reloads = weft_reload_count(g->W);
  g->boot.nbroken = broken_files(g);
  g->boot.main_stamp = main_stamp(g);
}

void session_boot(game *g) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  char path[FILE_LEN];
  snprintf(path, sizeof path, "%.*s/main.lua", DIR_LEN, g->run.scripts_dir);
  g->boot.dead = 0;
  g->boot.why[0] = 0;
  /* loadfile called from C: the chunk gets an environment of its own,
     as weft_run_file gives a file */
  weft_push_api(g->W);
  lua_getfield(L, -1, "loadfile");
  lua_pushstring(L, path);
  if (lua_pcall(L, 1, 2, 0) != LUA_OK || !lua_isfunction(L, -2)) {
    const char *err = lua_tostring(L, -1) ? lua_tostring(L, -1) : "cannot load scripts/main.lua";
    fprintf(stderr, "%s\n", err);
    overlay_error(g, err, err);
    died(g, err);
    lua_settop(L, top);
    return;
  }
  lua_pop(L, 1);
  int fn = lua_gettop(L);
  verbs_push_group(g, L, "game");
  lua_getfield(L, -1, "spawn");
  lua_insert(L, -2);
  lua_pushvalue(L, fn);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) { /* out of memory, too many tasks */
    const char *err = lua_tostring(L, -1) ? lua_tostring(L, -1) : "cannot start scripts/main.lua";
    overlay_error(g, err, err);
    died(g, err);
    lua_settop(L, top);
    return;
  }
  if (g->boot.task != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, g->boot.task);
  g->boot.task = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, top);
}

void session_reset(game *g, const char *beat, int record) {
  g->boot.pending = 1;
  snprintf(g->boot.beat, sizeof g->boot.beat, "%s", beat ? beat : "");
  if (record) replay_note_text(g, REPLAY_RESET, g->boot.beat);
}

/* A new empty table in place of the one at registry reference ref. */
static void renew(lua_State *L, int ref) {
  lua_newtable(L);
  lua_rawseti(L, LUA_REGISTRYINDEX, ref);
}

/* Cancels the game group: the boot, every entity's scripts, the
   cinematics, the console's plays; their cleanups run now. */
static void cancel_game(game *g) {
  verbs_push_group(g, g->L, "game");
  verbs_call_method(g, "cancel", 0);
}

/* The reset: what the game runs stops, the world ends (every future it
   held fails or settles, so nothing waits on it), the game's modes and
   the panel start over, math.random gets the run's seed again (a reset
   game plays as a new one with that seed), and the boot script runs
   again. */
static void reset_now(game *g) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  char beat[MODULE_LEN];
  snprintf(beat, sizeof beat, "%s", g->boot.beat);
  g->boot.pending = 0;
  g->boot.beat[0] = 0;
  g->boot.resets++;
  cancel_game(g);
  world_end(&g->w, "reset");
  verbs_dispatch(g);
  cancel_game(g); /* what a cleanup started meanwhile (a walk to bed in the captain's group) */
  renew(L, g->refs.ents);
  renew(L, g->refs.zones);
  world_renew(&g->w, g->run.seed);
  render_forget_level(g);
  level *left = assets_take_level(g); /* a level loaded and not built */
  if (left) level_free(left), free(left);
  g->load.on = 0;
  g->load.frac = g->load.shown = 0;
  g->modes.paused = 0; /* P and T start over */
  g->modes.time_scale = 1.0;
  verbs_push_group(g, L, "game");
  lua_pushnumber(L, 1.0);
  lua_setfield(L, -2, "time_scale");
  verbs_call_method(g, "resume", 0);
  for (int i = g->ov.nerrors - 1; i >= 0; i--) /* the reports of files still broken stay */
    if (!g->ov.errors[i].was_broken) {
      memmove(g->ov.errors + i, g->ov.errors + i + 1,
              sizeof g->ov.errors[0] * (size_t)(g->ov.nerrors - i - 1));
      g->ov.nerrors--;
    }
  g->run.beat[0] = 0;
  g->run.fast_forward = 0;
  if (beat[0]) {
    snprintf(g->run.beat_wanted, sizeof g->run.beat_wanted, "%s", beat);
    g->run.fast_forward = 1;
  }
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "randomseed");
  lua_pushinteger(L, (lua_Integer)g->run.seed);
  lua_call(L, 1, 0);
  lua_settop(L, top);
  snprintf(g->ov.toast, sizeof g->ov.toast, "reset: the boot script runs again%s%s",
           beat[0] ? " to beat " : "", beat);
  g->ov.toast_at = g->run.realtime;
  fprintf(stderr, "weft-demo: reset at frame %llu%s%s\n", (unsigned long long)g->run.frame,
          beat[0] ? ", to beat " : "", beat);
  session_boot(g);
}

/* The boot task's status; a failure is noted with its error. */
static void watch_boot(game *g) {
  if (g->boot.dead || g->boot.task == LUA_NOREF) return;
  lua_State *L = g->L;
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->boot.task);
  lua_getfield(L, -1, "status");
  if (lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "failed") == 0) {
    lua_getfield(L, -2, "error");
    died(g, luaL_tolstring(L, -1, NULL));
  }
  lua_settop(L, top);
}

/* While the boot is dead: a save that leaves no file broken (a module
   committed, a broken file loaded, main.lua saved) tries again. */
static int fixed(game *g) {
  int n = broken_files(g), was = g->boot.nbroken;
  g->boot.nbroken = n;
  if (n != 0) return 0;
  if (weft_reload_count(g->W) != g->boot.reloads || was > 0) return 1;
  if (g->run.frame % STAMP_EVERY) return 0;
  long long s = main_stamp(g);
  return s && s != g->boot.main_stamp;
}

void session_frame(game *g) {
  watch_boot(g);
  if (g->boot.dead && !g->boot.pending && !g->rp.on && fixed(g)) {
    fprintf(stderr, "weft-demo: a save fixed what stopped the boot script: reset\n");
    session_reset(g, NULL, 1);
  }
  if (g->boot.pending) reset_now(g);
}

void session_close(game *g) {
  if (g->boot.task != LUA_NOREF) luaL_unref(g->L, LUA_REGISTRYINDEX, g->boot.task);
  g->boot.task = LUA_NOREF;
}

/* reset([beat]): a soft reset at the next frame's start, then unseen up
   to that beat of the cinematic playing (as --beat). */
static int l_reset(lua_State *L) {
  game *g = G(L);
  const char *beat = luaL_optstring(L, 1, NULL);
  if (beat && strlen(beat) >= MODULE_LEN) return luaL_argerror(L, 1, "a beat's name is shorter");
  session_reset(g, beat, 0);
  lua_pushfstring(L, "resetting%s%s", beat ? " to beat " : "", beat ? beat : "");
  return 1;
}

/* Notes the game group (its clock is the world's): asked from a task in it. */
static int l_note_game_group(lua_State *L) {
  game *g = G(L);
  g->modes.group = weft_current_group(g->W);
  return 0;
}

void session_new_game(game *g) {
  lua_State *L = g->L;
  weft_push_api(g->W);
  int api = lua_gettop(L);
  /* groups: game (paused and slowed by the keys) > world, cutscenes */
  lua_createtable(L, 0, 3);
  int gt = lua_gettop(L);
  static const char *const names[3] = {"game", "world", "cutscenes"};
  for (int i = 0; i < 3; i++) {
    lua_getfield(L, api, "group");
    lua_createtable(L, 0, 2);
    lua_pushstring(L, names[i]);
    lua_setfield(L, -2, "name");
    if (i > 0) {
      lua_getfield(L, gt, "game");
      lua_setfield(L, -2, "parent");
    }
    lua_call(L, 1, 1);
    lua_setfield(L, gt, names[i]);
  }
  lua_getfield(L, gt, "game");
  lua_getfield(L, -1, "spawn");
  lua_insert(L, -2);
  lua_pushlightuserdata(L, g);
  lua_pushcclosure(L, l_note_game_group, 1);
  lua_call(L, 2, 0);
  /* scripts read them through an empty table: what the API table holds
     itself a save names, as it is when the state opens, and a loading
     state has no groups yet (they come from the save) */
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, gt);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_setfield(L, api, "groups");
  g->refs.groups = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, api - 1);
}

void session_open(game *g) {
  static const luaL_Reg fns[] = {{"reset", l_reset}, {NULL, NULL}};
  lua_pushlightuserdata(g->L, g);
  luaL_setfuncs(g->L, fns, 1);
  verbs_name(g, "session", fns);
}
