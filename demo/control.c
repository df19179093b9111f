/* Input and test hooks for scripts: the input lock, key signals, keys
   driven by test scripts, what the overlays show, screenshots, the
   loading screen; the keyboard (SDL's events, a recording's keys) and
   what each key does (the keyboard's and a test script's alike); and the
   per-frame chores of the game loop (held keys, the player's walking
   direction, reload notices, pause and slow motion). */
#include "control.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "console.h"
#include "overlay.h"
#include "render.h"
#include "replay.h"
#include "savegame.h"
#include "session.h"
#include "verbs.h"

#define G(L) ((game *)lua_touserdata(L, lua_upvalueindex(1)))

static int l_unlock(lua_State *L) {
  game *g = G(L);
  if (g->w.input_lock > 0) g->w.input_lock--;
  world_update_vision(&g->w); /* seen again at once: saw_player agrees with can_see */
  verbs_dispatch(g);
  return 0;
}

/* lock_input() -> a to-be-closed value: the player cannot move until it
   is closed (local _ <close> = lock_input()). Locks nest. */
static int l_lock_input(lua_State *L) {
  game *g = G(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.finally);
  lua_pushlightuserdata(L, g);
  lua_pushcclosure(L, l_unlock, 1);
  lua_call(L, 1, 1);
  g->w.input_lock++;
  world_update_vision(&g->w);
  verbs_dispatch(g);
  return 1;
}

static int l_input_locked(lua_State *L) {
  lua_pushboolean(L, G(L)->w.input_lock > 0);
  return 1;
}

static SDL_Scancode check_key(lua_State *L, int arg) {
  const char *name = luaL_checkstring(L, arg);
  SDL_Scancode sc = SDL_GetScancodeFromName(name);
  if (sc == SDL_SCANCODE_UNKNOWN)
    luaL_argerror(L, arg, lua_pushfstring(L, "unknown key '%s'", name));
  return sc;
}

/* key_pressed(name) -> the signal fired each time that key goes down
   (SDL key names: "escape", "space", "e", "f1", ...). */
static int l_key_pressed(lua_State *L) {
  game *g = G(L);
  SDL_Scancode sc = check_key(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.keys);
  if (lua_rawgeti(L, -1, sc) == LUA_TNIL) {
    lua_pop(L, 1);
    verbs_push_api(g, L);
    lua_getfield(L, -1, "signal");
    lua_pushfstring(L, "key %s", lua_tostring(L, 1));
    lua_call(L, 1, 1);
    lua_remove(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, sc);
  }
  return 1;
}

/* Test helpers: drive the keyboard like a player. What they do is not
   recorded as input (a console line they run, a reset): the script that
   made them plays in the replay too. */
static void script_key(game *g, SDL_Scancode sc, int down) {
  g->input.scripted = 1;
  game_key(g, sc, down);
  g->input.scripted = 0;
}
static int l_key_down(lua_State *L) {
  script_key(G(L), check_key(L, 1), 1);
  return 0;
}
static int l_key_up(lua_State *L) {
  script_key(G(L), check_key(L, 1), 0);
  return 0;
}
/* tap(name): press and release on the next frame. */
static int l_tap(lua_State *L) {
  game *g = G(L);
  SDL_Scancode sc = check_key(L, 1);
  script_key(g, sc, 1);
  for (int i = 0; i < MAX_HOLDS; i++)
    if (!g->input.holds[i].frames) {
      g->input.holds[i] = (key_hold){sc, 1, 0};
      return 0;
    }
  script_key(g, sc, 0);
  return 0;
}
/* hold(name, seconds) -> future resolving when the key is released. */
static int l_hold(lua_State *L) {
  game *g = G(L);
  SDL_Scancode sc = check_key(L, 1);
  float secs = verbs_opt_seconds(L, 2, 0.5f);
  for (int i = 0; i < MAX_HOLDS; i++)
    if (!g->input.holds[i].frames) {
      uint64_t f = verbs_push_future(g, L);
      g->input.holds[i] = (key_hold){sc, (int)lroundf(secs * 60.0f) + 1, f};
      script_key(g, sc, 1);
      return 1;
    }
  return luaL_error(L, "too many keys held");
}

/* errors() -> list of {message =, trace =, repeats =, who =, module =}
   shown by the error overlay, oldest first (who: the entity or task the
   report names first; module: the one whose file raised it). errors(true)
   lists the panel's warnings too, with warning = "slow" (a slow task),
   "save" or "load" (a quicksave, quickload or rewind not made) or
   "pile-up" (a spawn site whose tasks keep growing). */
static int l_errors(lua_State *L) {
  game *g = G(L);
  int warnings = lua_toboolean(L, 1), n = 0;
  lua_createtable(L, g->ov.nerrors, 0);
  for (int i = 0; i < g->ov.nerrors; i++) {
    if (g->ov.errors[i].warning && !warnings) continue;
    lua_createtable(L, 0, 3);
    if (g->ov.errors[i].warning) {
      static const char *const kinds[] = {"", "slow", "pile-up", "save", "load"};
      int k = g->ov.errors[i].warning;
      lua_pushstring(L, kinds[k >= 1 && k <= 4 ? k : 1]);
      lua_setfield(L, -2, "warning");
    }
    lua_pushstring(L, g->ov.errors[i].msg);
    lua_setfield(L, -2, "message");
    lua_pushstring(L, g->ov.errors[i].trace);
    lua_setfield(L, -2, "trace");
    lua_pushinteger(L, g->ov.errors[i].repeats);
    lua_setfield(L, -2, "repeats");
    if (g->ov.errors[i].who[0]) {
      lua_pushstring(L, g->ov.errors[i].who);
      lua_setfield(L, -2, "who");
    }
    if (g->ov.errors[i].module[0]) {
      lua_pushstring(L, g->ov.errors[i].module);
      lua_setfield(L, -2, "module");
    }
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

/* overlay_shown(name) -> boolean for "errors", "tasks", "graph",
   "paused", "loading", "dialogue", "letterbox". */
static int l_overlay_shown(lua_State *L) {
  game *g = G(L);
  static const char *const names[] = {"errors",  "tasks",    "graph",     "paused",
                                      "loading", "dialogue", "letterbox", NULL};
  int k = luaL_checkoption(L, 1, NULL, names);
  int v[] = {g->ov.nerrors > 0, g->modes.show_tasks, g->modes.show_graph,  g->modes.paused,
             g->load.on,        g->w.dlg.active,     g->w.letterbox > 0.5f};
  lua_pushboolean(L, v[k]);
  return 1;
}

/* screenshot(path): draws the frame as it is at the call (the world,
   the overlays) and saves it as a PNG. Raises if the file cannot be
   written. */
static int l_screenshot(lua_State *L) {
  game *g = G(L);
  const char *path = luaL_checkstring(L, 1);
  lua_State *main = g->L;
  g->L = L; /* the overlays call weft.tasks() and weft.modules() on this thread */
  render_frame(g);
  overlay_draw(g);
  console_draw(g);
  g->L = main;
  if (render_save_png(g, path) != 0) return luaL_error(L, "screenshot: cannot write %s", path);
  return 0;
}

/* overlay_rects() -> {name = {x =, y =, w =, h =}, ...}: draws the frame
   as screenshot() would and gives the box of every overlay and piece of
   text it drew ("errors", "tasks", "modules", "graph", "reload_note",
   "dialogue", "objective", "paused", "slow_motion", "keys"). */
static int l_overlay_rects(lua_State *L) {
  game *g = G(L);
  lua_State *main = g->L;
  g->L = L;
  render_frame(g);
  overlay_draw(g);
  console_draw(g);
  g->L = main;
  lua_createtable(L, 0, g->ov.ndrawn);
  for (int i = 0; i < g->ov.ndrawn; i++) {
    lua_createtable(L, 0, 4);
    const int v[4] = {g->ov.drawn[i].r.x, g->ov.drawn[i].r.y, g->ov.drawn[i].r.w,
                      g->ov.drawn[i].r.h};
    const char *k[4] = {"x", "y", "w", "h"};
    for (int j = 0; j < 4; j++) {
      lua_pushinteger(L, v[j]);
      lua_setfield(L, -2, k[j]);
    }
    lua_setfield(L, -2, g->ov.drawn[i].name);
  }
  return 1;
}

/* beat([name]): marks a beat of a cinematic. weft-demo --play MODULE
   --beat NAME runs the game unseen, as fast as it goes, until the beat of
   that name; a beat() without a name (the end of the --play cinematic)
   ends that too. */
static int l_beat(lua_State *L) {
  game *g = G(L);
  const char *name = luaL_optstring(L, 1, NULL);
  if (name) snprintf(g->run.beat, sizeof g->run.beat, "%s", name);
  if (g->run.fast_forward && (!name || strcmp(name, g->run.beat_wanted) == 0)) {
    g->run.fast_forward = 0;
    if (name)
      fprintf(stderr, "weft-demo: at beat \"%s\" (frame %llu)\n", name,
              (unsigned long long)g->run.frame);
    else
      fprintf(stderr, "weft-demo: no beat \"%s\" before the cinematic ended (frame %llu)\n",
              g->run.beat_wanted, (unsigned long long)g->run.frame);
  }
  return 0;
}

/* run_to_beat(name): from now on the game runs unseen, as fast as it
   goes, until beat(name) (or a beat() without one), as --beat does. */
static int l_run_to_beat(lua_State *L) {
  game *g = G(L);
  snprintf(g->run.beat_wanted, sizeof g->run.beat_wanted, "%s", luaL_checkstring(L, 1));
  g->run.fast_forward = 1;
  return 0;
}

/* overlay_text("tasks") -> the task inspector's lines as drawn now (a
   frame is drawn as screenshot() would); {} while it is closed. */
static int l_overlay_text(lua_State *L) {
  game *g = G(L);
  luaL_checkoption(L, 1, NULL, (const char *const[]){"tasks", NULL});
  lua_State *main = g->L;
  g->L = L;
  g->ov.ntask_lines = 0;
  render_frame(g);
  overlay_draw(g);
  g->L = main;
  lua_createtable(L, g->ov.ntask_lines, 0);
  for (int i = 0; i < g->ov.ntask_lines; i++) {
    lua_pushstring(L, g->ov.task_lines[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* Sets game_state()'s `save` (the last quicksave, quickload or rewind:
   {what = "save" | "load" | "rewind", ok =, frame =, bytes =, ms =,
   why = the reason it failed}, nil before the first) and `rewind` (the
   ring: {saves =, bytes =, ms = the last save's, max_ms =, why = the
   reason the last could not be made}) in the table on top. */
static void push_saves(game *g, lua_State *L) {
  static const char *const whats[] = {"", "save", "load", "rewind"};
  if (g->sv.last.what >= SAVE_QUICK && g->sv.last.what <= SAVE_REWIND) {
    lua_createtable(L, 0, 6);
    lua_pushstring(L, whats[g->sv.last.what]);
    lua_setfield(L, -2, "what");
    lua_pushboolean(L, g->sv.last.ok);
    lua_setfield(L, -2, "ok");
    lua_pushinteger(L, (lua_Integer)g->sv.last.frame);
    lua_setfield(L, -2, "frame");
    lua_pushinteger(L, (lua_Integer)g->sv.last.bytes);
    lua_setfield(L, -2, "bytes");
    lua_pushnumber(L, g->sv.last.ms);
    lua_setfield(L, -2, "ms");
    lua_pushstring(L, g->sv.last.why);
    lua_setfield(L, -2, "why");
    lua_setfield(L, -2, "save");
  }
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, g->sv.nring);
  lua_setfield(L, -2, "saves");
  lua_pushinteger(L, (lua_Integer)g->sv.ring_bytes);
  lua_setfield(L, -2, "bytes");
  lua_pushnumber(L, g->sv.ring_ms);
  lua_setfield(L, -2, "ms");
  lua_pushnumber(L, g->sv.ring_ms_max);
  lua_setfield(L, -2, "max_ms");
  lua_pushstring(L, g->sv.ring_why);
  lua_setfield(L, -2, "why");
  lua_setfield(L, -2, "rewind");
}

/* game_state() -> {paused =, time_scale =, fade =, zoom =, camera = {x, y},
   following = entity or nil, input_lock =, frame =, headless =, ambient =,
   light = the ambient {r, g, b}, keys = the line of key hints, beat = the
   last beat passed, fast_forward = running unseen to --beat's, boot =
   "failed" once the boot script stopped (until a reset) or "ok",
   resets = soft resets so far, save =, rewind = (see push_saves),
   dialogue = {speaker =, text =, portrait = kind, tint = {r, g, b}} or nil}:
   for tests and debug displays. */
static int l_game_state(lua_State *L) {
  game *g = G(L);
  lua_createtable(L, 0, 8);
  lua_pushboolean(L, g->modes.paused);
  lua_setfield(L, -2, "paused");
  lua_pushnumber(L, g->modes.time_scale);
  lua_setfield(L, -2, "time_scale");
  lua_pushnumber(L, g->w.fade);
  lua_setfield(L, -2, "fade");
  lua_pushnumber(L, g->w.zoom);
  lua_setfield(L, -2, "zoom");
  verbs_push_point(L, g->w.cam_x, g->w.cam_y);
  lua_setfield(L, -2, "camera");
  verbs_push_ent(g, L, g->w.cam_follow);
  lua_setfield(L, -2, "following");
  lua_pushinteger(L, g->w.input_lock);
  lua_setfield(L, -2, "input_lock");
  lua_pushinteger(L, (lua_Integer)g->run.frame);
  lua_setfield(L, -2, "frame");
  lua_pushboolean(L, g->run.headless);
  lua_setfield(L, -2, "headless");
  lua_pushnumber(L, g->w.amb[0]);
  lua_setfield(L, -2, "ambient");
  lua_createtable(L, 3, 0);
  for (int i = 0; i < 3; i++) {
    lua_pushnumber(L, g->w.amb[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "light"); /* the ambient light's {r, g, b} */
  char keys[KEY_HINTS_LEN];
  render_key_hints(g, keys, sizeof keys);
  lua_pushstring(L, keys);
  lua_setfield(L, -2, "keys");
  lua_pushstring(L, g->run.beat);
  lua_setfield(L, -2, "beat");
  lua_pushboolean(L, g->run.fast_forward);
  lua_setfield(L, -2, "fast_forward");
  lua_pushstring(L, g->boot.dead ? "failed" : "ok");
  lua_setfield(L, -2, "boot");
  lua_pushinteger(L, g->boot.resets);
  lua_setfield(L, -2, "resets");
  push_saves(g, L);
  if (g->w.dlg.active) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, g->w.dlg.speaker);
    lua_setfield(L, -2, "speaker");
    lua_pushstring(L, g->w.dlg.text);
    lua_setfield(L, -2, "text");
    lua_pushstring(L, world_kind_name(g->w.dlg.portrait));
    lua_setfield(L, -2, "portrait");
    lua_createtable(L, 3, 0);
    for (int i = 0; i < 3; i++) {
      lua_pushnumber(L, g->w.dlg.tint[i] / 255.0);
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "tint");
    lua_setfield(L, -2, "dialogue");
  }
  return 1;
}

/* loading(fraction [, label]) shows the loading screen; loading(false)
   hides it. */
static int l_loading(lua_State *L) {
  game *g = G(L);
  if (lua_isboolean(L, 1) && !lua_toboolean(L, 1)) {
    g->load.on = 0;
    return 0;
  }
  lua_Number f = luaL_checknumber(L, 1);
  g->load.on = 1;
  g->load.frac = (float)(f < 0 ? 0 : f > 1 ? 1 : f);
  snprintf(g->load.label, sizeof g->load.label, "%s", luaL_optstring(L, 2, ""));
  return 0;
}

static const luaL_Reg fns[] = {{"lock_input", l_lock_input},
                               {"input_locked", l_input_locked},
                               {"key_pressed", l_key_pressed},
                               {"key_down", l_key_down},
                               {"key_up", l_key_up},
                               {"tap", l_tap},
                               {"hold", l_hold},
                               {"errors", l_errors},
                               {"overlay_shown", l_overlay_shown},
                               {"screenshot", l_screenshot},
                               {"overlay_rects", l_overlay_rects},
                               {"overlay_text", l_overlay_text},
                               {"beat", l_beat},
                               {"run_to_beat", l_run_to_beat},
                               {"game_state", l_game_state},
                               {"loading", l_loading},
                               {NULL, NULL}};

void control_open(game *g) {
  weft_push_api(g->W);
  lua_pushlightuserdata(g->L, g);
  luaL_setfuncs(g->L, fns, 1);
  lua_pop(g->L, 1);
  verbs_name(g, "control", fns);
  weft_save_name(g->W, "demo.control.unlock", l_unlock); /* what lock_input hands out */
}

void control_key(game *g, SDL_Scancode sc) {
  lua_State *L = g->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->refs.keys);
  lua_rawgeti(L, -1, sc);
  lua_remove(L, -2);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  verbs_call_method(g, "fire", 0);
}

void control_frame(game *g) {
  for (int i = 0; i < MAX_HOLDS; i++) {
    key_hold *h = &g->input.holds[i];
    if (!h->frames || --h->frames > 0) continue;
    g->input.scripted = 1;
    game_key(g, h->key, 0);
    g->input.scripted = 0;
    if (h->fut) {
      lua_pushstring(g->L, "released");
      weft_future_resolve(g->W, (weft_future){h->fut}, 1);
    }
    h->fut = 0;
  }
}

/* An entity keeps its script-error marker while the panel holds a report
   naming it, or while no live task is its (weft.tasks() `who`): its
   behaviour died and has not restarted. Calls Lua only while an entity
   is marked and no report names it. */
static void unmark(game *g) {
  int check[WORLD_MAX_ENTS], n = 0;
  for (int i = 0; i < WORLD_MAX_ENTS; i++) {
    entity *e = world_ent(&g->w, i);
    if (!e || !e->script_error) continue;
    int named = 0;
    for (int k = 0; k < g->ov.nerrors && !named; k++)
      named = strcmp(g->ov.errors[k].who, e->name) == 0;
    if (!named) check[n++] = i;
  }
  if (!n) return;
  lua_State *L = g->L;
  int top = lua_gettop(L);
  weft_push_api(g->W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "tasks");
  if (lua_pcall(L, 0, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    for (lua_Integer t = 1; t <= (lua_Integer)luaL_len(L, -1); t++) {
      lua_rawgeti(L, -1, t);
      lua_getfield(L, -1, "who");
      const char *who = lua_tostring(L, -1);
      for (int k = 0; who && k < n; k++) {
        entity *e = world_ent(&g->w, check[k]);
        if (e && strcmp(e->name, who) == 0) e->script_error = 0;
      }
      lua_pop(L, 2);
    }
  }
  lua_settop(L, top);
}

/* While reports are shown: the modules weft.reload_errors() lists; a
   report whose file was listed and is not any more loaded cleanly. */
static void check_broken(game *g) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  weft_push_api(g->W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "reload_errors");
  if (lua_pcall(L, 0, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    enum { MAXB = 32 };
    char names[MAXB][MODULE_LEN];
    const char *list[MAXB];
    int n = 0;
    for (lua_Integer i = 1; i <= (lua_Integer)luaL_len(L, -1) && n < MAXB; i++) {
      lua_rawgeti(L, -1, i);
      lua_getfield(L, -1, "file");
      size_t len;
      const char *f = lua_tolstring(L, -1, &len);
      if (f) {
        overlay_module_of(g, f, len, names[n], sizeof names[n]);
        list[n] = names[n];
        n++;
      }
      lua_pop(L, 2);
    }
    overlay_errors_unbroken(g, list, n);
  }
  lua_settop(L, top);
}

/* Once a frame: the green reload note after a commit, and the error
   reports a clean reload answered. A report belongs to the module whose
   file raised it: a commit of a new version of that module drops the
   reports made before it; reports of other modules stay. */
void control_check_reload(game *g) {
  uint32_t n = weft_reload_count(g->W);
  int committed = n != g->ov.reloads;
  if (!committed && g->ov.nerrors == 0) {
    unmark(g);
    return;
  }
  if (g->ov.nerrors) check_broken(g);
  g->ov.reloads = n;
  lua_State *L = g->L;
  int top = lua_gettop(L);
  weft_push_api(g->W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "modules");
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    lua_settop(L, top);
    unmark(g);
    return;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->ov.versions);
  int seen = lua_gettop(L), list = seen - 1;
  char msg[sizeof g->ov.toast] = "reloaded";
  size_t used = strlen(msg);
  int changed = 0;
  for (lua_Integer i = 1; i <= (lua_Integer)luaL_len(L, list); i++) {
    lua_rawgeti(L, list, i);
    lua_getfield(L, -1, "name");
    lua_getfield(L, -2, "version");
    const char *name = lua_tostring(L, -2);
    lua_Integer v = lua_tointeger(L, -1);
    lua_getfield(L, seen, name ? name : "");
    lua_Integer old = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (name && v != old) {
      if (old) overlay_errors_fixed(g, name, n);
      if (committed && v > 1 && used + strlen(name) + 12 < sizeof msg)
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s %s v%lld", changed ? "," : "",
                                 name, (long long)v);
      changed += committed && v > 1;
      lua_pushinteger(L, v);
      lua_setfield(L, seen, name);
    }
    lua_pop(L, 3);
  }
  if (changed) {
    snprintf(g->ov.toast, sizeof g->ov.toast, "%s", msg);
    g->ov.toast_at = g->run.realtime;
  }
  lua_settop(L, top);
  unmark(g);
}

void control_apply_speed(game *g) {
  lua_State *L = g->L;
  verbs_push_group(g, L, "game");
  lua_pushnumber(L, g->modes.time_scale);
  lua_setfield(L, -2, "time_scale");
  verbs_call_method(g, g->modes.paused ? "pause" : "resume", 0);
}

/* F3: stops the profile being taken and writes it, or starts one into
   the next numbered file (BASE-N.json, one no file has yet), so a second
   pair does not write over the first. */
static void profile_key(game *g) {
  if (weft_profile_stop(g->W) == WEFT_OK) {
    snprintf(g->ov.toast, sizeof g->ov.toast, "profile written: %.150s (and .speedscope.json)",
             g->run.profile_path);
  } else {
    struct stat st;
    do
      snprintf(g->run.profile_path, sizeof g->run.profile_path, "%.900s-%d.json",
               g->run.profile_base, ++g->run.profiles);
    while (stat(g->run.profile_path, &st) == 0 && g->run.profiles < 100000);
    if (weft_profile_start(g->W, g->run.profile_path) == WEFT_OK)
      snprintf(g->ov.toast, sizeof g->ov.toast, "profiling into %.150s (F3 again: stop and write)",
               g->run.profile_path);
    else
      snprintf(g->ov.toast, sizeof g->ov.toast, "cannot start a profile");
  }
  g->ov.toast_at = g->run.realtime;
}

/* What a key does when it goes down, from the keyboard or a test
   script's tap alike: the demo's own keys, then the scripts' key signal. */
/* The keys that only change what is shown, not the game: a replay's
   viewer takes them too. Returns 1 when it took the key. */
static int view_key(game *g, SDL_Scancode sc) {
  switch (sc) {
  case SDL_SCANCODE_F1:
    g->modes.show_tasks = !g->modes.show_tasks;
    return 1;
  case SDL_SCANCODE_F2:
    g->modes.show_graph = !g->modes.show_graph;
    if (g->modes.show_graph) overlay_graph_on(g);
    return 1;
  case SDL_SCANCODE_F4:
    g->ov.nerrors = 0;
    return 1;
  case SDL_SCANCODE_F3: /* a profile: start, or stop and write it */
    profile_key(g);
    return 1;
  case SDL_SCANCODE_G: /* the inspector: tasks, or spawn sites with their counts */
    if (!g->modes.show_tasks) return 0;
    g->modes.by_site = !g->modes.by_site;
    g->modes.tasks_from = 0;
    return 1;
  case SDL_SCANCODE_PAGEDOWN: /* the inspector's list; drawing clamps it */
  case SDL_SCANCODE_PAGEUP:
    if (!g->modes.show_tasks) return 0;
    g->modes.tasks_from += sc == SDL_SCANCODE_PAGEDOWN ? 10 : -10;
    if (g->modes.tasks_from < 0) g->modes.tasks_from = 0;
    return 1;
  case SDL_SCANCODE_F11:
    if (g->video.win) {
      int full = SDL_GetWindowFlags(g->video.win) & SDL_WINDOW_FULLSCREEN_DESKTOP;
      SDL_SetWindowFullscreen(g->video.win, full ? 0 : SDL_WINDOW_FULLSCREEN_DESKTOP);
    }
    return 1;
  case SDL_SCANCODE_F12: { /* a frame shown again (a load, a rewind): -2, -3, ... */
    struct stat st;
    int k = 1;
    do
      snprintf(g->run.shot_path, sizeof g->run.shot_path,
               k > 1 ? "weft-demo-%06llu-%d.png" : "weft-demo-%06llu.png",
               (unsigned long long)g->run.frame, k);
    while (stat(g->run.shot_path, &st) == 0 && ++k < 1000);
    return 1;
  }
  default:
    return 0;
  }
}

static void press(game *g, SDL_Scancode sc) {
  static const double speeds[] = {1.0, 0.5, 0.25};
  if (view_key(g, sc)) {
    control_key(g, sc);
    return;
  }
  switch (sc) {
  case SDL_SCANCODE_GRAVE:
    console_toggle(g);
    break;
  case SDL_SCANCODE_R: /* Ctrl-R: a soft reset (the keys are recorded: a replay resets too) */
    if (g->input.held[SDL_SCANCODE_LCTRL] || g->input.held[SDL_SCANCODE_RCTRL])
      session_reset(g, NULL, 0);
    break;
  case SDL_SCANCODE_P:
    g->modes.paused = !g->modes.paused;
    control_apply_speed(g);
    break;
  case SDL_SCANCODE_T: {
    int k = 0;
    for (int i = 0; i < 3; i++)
      if (fabs(g->modes.time_scale - speeds[i]) < 1e-9) k = i;
    g->modes.time_scale = speeds[(k + 1) % 3];
    control_apply_speed(g);
    break;
  }
  case SDL_SCANCODE_F9: /* saves and loads are made between two frames */
    g->sv.asked = SAVE_QUICK;
    break;
  case SDL_SCANCODE_F10:
    g->sv.asked = SAVE_LOAD;
    break;
  case SDL_SCANCODE_BACKSPACE:
    g->sv.asked = SAVE_REWIND;
    break;
  case SDL_SCANCODE_SPACE:
  case SDL_SCANCODE_RETURN:
  case SDL_SCANCODE_E:
    world_advance(&g->w);
    verbs_dispatch(g);
    break;
  default:
    break;
  }
  control_key(g, sc);
}

void game_key(game *g, SDL_Scancode sc, int down) {
  if (sc <= SDL_SCANCODE_UNKNOWN || sc >= SDL_NUM_SCANCODES) return;
  if (g->console.open) { /* the console takes the keys */
    if (down) console_key(g, sc);
    return;
  }
  int was = g->input.held[sc];
  g->input.held[sc] = (uint8_t)(down != 0);
  if (down && !was) press(g, sc);
}

void control_poll(game *g) {
  SDL_Event ev;
  while (SDL_PollEvent(&ev)) {
    SDL_Scancode sc = ev.key.keysym.scancode;
    if (ev.type == SDL_QUIT) {
      g->run.quit = 1;
    } else if (ev.type == SDL_TEXTINPUT && g->console.open) {
      console_text(g, ev.text.text);
    } else if (ev.type == SDL_KEYDOWN && sc == SDL_SCANCODE_GRAVE && !ev.key.repeat) {
      /* the console is not the game's: not recorded, but the keys it
         takes from the game are let go in the recording too */
      replay_note_key(g, SDL_SCANCODE_UNKNOWN, 0);
      console_toggle(g);
    } else if (ev.type == SDL_KEYDOWN && g->console.open &&
               !(sc == SDL_SCANCODE_Q && (ev.key.keysym.mod & KMOD_CTRL))) {
      console_key(g, sc); /* typing: nothing reaches the game (a held key repeats) */
    } else if (ev.type == SDL_KEYUP && g->console.open) {
      continue;
    } else if (ev.type == SDL_KEYDOWN && !ev.key.repeat) {
      if (sc == SDL_SCANCODE_Q && (ev.key.keysym.mod & KMOD_CTRL))
        g->run.quit = 1;
      else if (g->rp.on) { /* the recording plays the game; keys drive the viewer */
        if (!replay_key(g, sc)) view_key(g, sc);
      } else
        replay_note_key(g, sc, 1), game_key(g, sc, 1);
    } else if (ev.type == SDL_KEYUP && !g->rp.on) {
      replay_note_key(g, sc, 0), game_key(g, sc, 0);
    } else if (ev.type == SDL_WINDOWEVENT && ev.window.event == SDL_WINDOWEVENT_FOCUS_LOST &&
               !g->rp.on) {
      replay_note_key(g, SDL_SCANCODE_UNKNOWN, 0);
      memset(g->input.held, 0, sizeof g->input.held);
    }
  }
}

void control_replay_input(game *g) {
  replay_input in;
  while (replay_next_input(g, &in)) {
    if (in.kind == REPLAY_RESET)
      session_reset(g, in.text, 0);
    else if (in.kind == REPLAY_LINE)
      console_replay(g, in.text);
    else if (in.kind != REPLAY_KEY)
      continue;
    else if (in.key == SDL_SCANCODE_UNKNOWN)
      memset(g->input.held, 0, sizeof g->input.held); /* the window lost focus */
    else
      game_key(g, in.key, in.down);
  }
}

static int held(game *g, SDL_Scancode a, SDL_Scancode b) {
  return g->input.held[a] || g->input.held[b];
}

void control_move(game *g) {
  float mx = (float)(held(g, SDL_SCANCODE_RIGHT, SDL_SCANCODE_D) -
                     held(g, SDL_SCANCODE_LEFT, SDL_SCANCODE_A));
  float my = (float)(held(g, SDL_SCANCODE_DOWN, SDL_SCANCODE_S) -
                     held(g, SDL_SCANCODE_UP, SDL_SCANCODE_W));
  if (g->w.input_lock > 0 || g->modes.paused || g->load.on) mx = my = 0;
  g->w.move_x = mx;
  g->w.move_y = my;
}
