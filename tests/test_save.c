/* Saving the running world from C (weft_save, weft_load) as an engine
   does it: its verbs named, its own userdata types saved, saves refused
   where they cannot be made or read. Virtual clock only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include "../bindings/weft.h"

#define DT (1.0 / 60)

/* ---- the engine: a log its verb writes, a Door type ---- */

static char logbuf[2][8192];
static int side; /* which log the verb writes: 0 the saved state, 1 the loaded */

/* log(...): appends its arguments to the engine's log. */
static int l_log(lua_State *L) {
  char *b = logbuf[side];
  for (int i = 1; i <= lua_gettop(L); i++) {
    size_t n = strlen(b);
    snprintf(b + n, sizeof logbuf[0] - n, "%s%s", luaL_tolstring(L, i, NULL),
             i < lua_gettop(L) ? " " : "\n");
    lua_pop(L, 1);
  }
  return 0;
}

/* A door of the engine's: a userdata of type "game.door". */
typedef struct door {
  int id, open;
} door;

static int l_door(lua_State *L) {
  door *d = lua_newuserdatauv(L, sizeof *d, 0);
  d->id = (int)luaL_checkinteger(L, 1);
  d->open = 0;
  luaL_setmetatable(L, "game.door");
  return 1;
}

static int l_door_open(lua_State *L) {
  door *d = luaL_checkudata(L, 1, "game.door");
  d->open++;
  lua_pushinteger(L, d->id * 100 + d->open);
  return 1;
}

static int saved_doors, loaded_doors;

static void door_save(lua_State *L, void *block, size_t size, void *ud) {
  (void)ud;
  saved_doors++;
  lua_pushlstring(L, block, size);
}

static void door_load(lua_State *L, void *block, size_t size, void *ud) {
  (void)ud;
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  assert_int_equal(n, size);
  memcpy(block, s, size);
  loaded_doors++;
}

/* A state as the engine opens it: its verbs in the API, a door type and
   a function kept out of the API (given to scripts through a door's
   metatable). named: the engine names what is not in the API. */
static weft_state *engine(int named) {
  weft_desc d = WEFT_DESC_INIT;
  d.time_budget_us = WEFT_BUDGET_COUNTED;
  weft_state *W = weft_open(&d);
  assert_non_null(W);
  lua_State *L = weft_lua(W);
  weft_push_api(W);
  lua_pushcfunction(L, l_log);
  lua_setfield(L, -2, "log");
  lua_pushcfunction(L, l_door);
  lua_setfield(L, -2, "door");
  lua_pop(L, 1);
  luaL_newmetatable(L, "game.door");
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, l_door_open);
  lua_setfield(L, -2, "open");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  if (named) {
    assert_int_equal(weft_save_name(W, "game.door.open", l_door_open), WEFT_OK);
    assert_int_equal(weft_save_type(W, "game.door", door_save, door_load, NULL), WEFT_OK);
  }
  return W;
}

#include "membuf.h"

static const char *game =
    "local d = door(7)\n"
    "local open = d.open\n"
    "local function resumes()\n"
    "  for _, t in ipairs(weft.tasks()) do\n"
    "    if t.task == current() then return t.resumes, t.avg_ms, t.worst_ms end\n"
    "  end\n"
    "end\n"
    "for i = 1, 3 do\n"
    "  spawn(function()\n"
    "    for k = 1, 5 do\n"
    "      for n = 1, 3000 * i do end\n"
    "      log('guard', i, k, frame(), open(d), resumes())\n"
    "      wait(0.1 * i)\n"
    "    end\n"
    "  end)\n"
    "end\n"
    "wait(2)\n"
    "log('end', frame())\n";

/* Saved mid-game and loaded into a new state with the same names, the
   game goes on as it would have: the same log, the door's state, each
   task's count of resumes and its script time (counted: instructions)
   kept, the engine's type saved and loaded by its functions. */
static void test_a_loaded_game_goes_on_as_the_saved_one(void **state) {
  (void)state;
  memset(logbuf, 0, sizeof logbuf);
  side = 0;
  weft_state *W = engine(1);
  weft_task t;
  const char *err;
  assert_int_equal(weft_run_string(W, "=game", game, strlen(game), &t, &err), WEFT_OK);
  for (int f = 0; f < 14; f++) assert_int_equal(weft_step(W, DT), WEFT_OK);
  membuf b = {0};
  saved_doors = loaded_doors = 0;
  int rc = weft_save(W, mem_put, &b, &err);
  if (rc != WEFT_OK) print_error("%s\n", err);
  assert_int_equal(rc, WEFT_OK);
  assert_int_equal(saved_doors, 1);
  size_t at = strlen(logbuf[0]);

  weft_state *V = engine(1);
  rc = weft_load(V, b.p, b.n, &err);
  if (rc != WEFT_OK) print_error("%s\n", err);
  assert_int_equal(rc, WEFT_OK);
  assert_int_equal(loaded_doors, 1);
  for (int f = 0; f < 150; f++) {
    side = 0;
    assert_int_equal(weft_step(W, DT), WEFT_OK);
    side = 1;
    assert_int_equal(weft_step(V, DT), WEFT_OK);
  }
  assert_true(strlen(logbuf[0]) > at + 100);
  assert_string_equal(logbuf[0] + at, logbuf[1]);
  assert_non_null(strstr(logbuf[1], "end 120"));
  assert_int_equal(weft_task_result(W, t), WEFT_DONE);
  assert_int_equal(weft_task_result(V, t), WEFT_DONE); /* the handle C held, kept */
  weft_task_drop(W, t);
  weft_task_drop(V, t);
  assert_int_equal(weft_close(W), 0);
  assert_int_equal(weft_close(V), 0);
  free(b.p);
}

/* What the engine did not name makes the save fail, naming the path to
   it, and writes nothing. */
static void test_an_unnamed_engine_value_fails_the_save_by_its_path(void **state) {
  (void)state;
  weft_state *W = engine(0);
  weft_task t;
  const char *err;
  assert_int_equal(weft_run_string(W, "=game", game, strlen(game), &t, &err), WEFT_OK);
  assert_int_equal(weft_step(W, DT), WEFT_OK);
  membuf b = {0};
  assert_int_equal(weft_save(W, mem_put, &b, &err), WEFT_EINVAL);
  assert_non_null(err);
  assert_non_null(strstr(err, "has no name")); /* open, a local of the main task */
  assert_int_equal(b.n, 0);
  weft_task_drop(W, t);
  weft_close(W);
}

/* A save is made between frames and loaded into a state that has run
   nothing; a save of another kind of file, cut or changed, is refused
   with its reason and the state is left to be closed. */
static void test_saves_are_refused_where_they_cannot_be_made_or_read(void **state) {
  (void)state;
  weft_state *W = engine(1);
  weft_task t;
  const char *err;
  assert_int_equal(weft_run_string(W, "=game", game, strlen(game), &t, &err), WEFT_OK);
  assert_int_equal(weft_step(W, DT), WEFT_OK);
  membuf b = {0};
  assert_int_equal(weft_save(W, mem_put, &b, &err), WEFT_OK);
  assert_int_equal(weft_load(W, b.p, b.n, &err), WEFT_EINVAL); /* W has run */
  assert_non_null(strstr(err, "just opened"));
  weft_state *V = engine(1);
  assert_int_equal(weft_load(V, "hello", 5, &err), WEFT_EINVAL);
  assert_non_null(strstr(err, "not a weft save"));
  weft_close(V);
  for (size_t cut = 0; cut < b.n; cut += 1 + b.n / 97) {
    V = engine(1);
    assert_int_equal(weft_load(V, b.p, cut, &err), WEFT_EINVAL);
    assert_non_null(err);
    weft_close(V);
  }
  for (size_t at = 0; at < b.n; at += 1 + b.n / 61) {
    b.p[at] ^= 0x20;
    V = engine(1);
    assert_int_equal(weft_load(V, b.p, b.n, &err), WEFT_EINVAL);
    assert_non_null(strstr(err, "bad save"));
    weft_close(V);
    b.p[at] ^= 0x20;
  }
  weft_task_drop(W, t);
  weft_close(W);
  free(b.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_loaded_game_goes_on_as_the_saved_one),
      cmocka_unit_test(test_an_unnamed_engine_value_fails_the_save_by_its_path),
      cmocka_unit_test(test_saves_are_refused_where_they_cannot_be_made_or_read),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
