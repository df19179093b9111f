/* The console: a line of Lua typed over the running game, run as a task
   (it may wait) under weft's frame budget, with the values or the error
   it ends with printed below it. Lines share their globals; they read the
   script API (entity, player, weft, ...) and play(name) plays a
   cinematic. Its scrollback also holds what the game says: print, warn
   and weft's own warnings. */
#include "console.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "render.h"
#include "replay.h"
#include "verbs.h"

#define G(L) ((game *)lua_touserdata(L, lua_upvalueindex(1)))

enum { REPLAY_STEPS = 1000000 }; /* instructions a replay's line may take */

/* The play(name [, beat [, state]]) the lines see: the cinematic plays in
   the game group, so it outlives the line, from the beat as --beat shows
   it, in that world state of lib/states.lua as --from sets it up. */
static const char prelude_src[] =
    "local env = ...\n"
    "function env.play(name, at, state)\n"
    "  if at then run_to_beat(at) end\n"
    "  groups.game:spawn(function() require('lib.cinema').play_now(name, state) beat() end)\n"
    "  return 'playing ' .. name .. (at and ' from ' .. at or '') ..\n"
    "    (state and ' in world state ' .. state or '')\n"
    "end\n";

/* One line into the scrollback, wrapped at CONSOLE_COLS (control
   characters but the tab as spaces: the font draws them as boxes); the
   oldest go once it is full. */
static void add_row(game *g, int kind, const char *s, size_t n) {
  if (g->console.nout == CONSOLE_KEEP) {
    memmove(g->console.out, g->console.out + 1, sizeof g->console.out[0] * (CONSOLE_KEEP - 1));
    memmove(g->console.kind, g->console.kind + 1, CONSOLE_KEEP - 1);
    g->console.nout--;
  }
  char *row = g->console.out[g->console.nout];
  size_t k = 0;
  for (size_t i = 0; i < n && k < CONSOLE_COLS; i++) {
    unsigned char c = (unsigned char)s[i];
    row[k++] = (c < ' ' && c != '\t') || c == 127 ? ' ' : (char)c;
  }
  row[k] = 0;
  g->console.kind[g->console.nout++] = (uint8_t)kind;
  if (g->console.scroll) g->console.scroll++; /* a view scrolled back stays where it is */
}

void console_log(game *g, int kind, const char *text) {
  const char *s = text;
  do {
    size_t n = strcspn(s, "\n");
    size_t at = 0;
    do { /* a long line: in pieces of CONSOLE_COLS */
      size_t piece = n - at > CONSOLE_COLS ? CONSOLE_COLS : n - at;
      add_row(g, kind, s + at, piece);
      at += piece;
    } while (at < n);
    s += n;
  } while (*s++ == '\n' && *s);
}

/* What the console itself says: into the scrollback, and the game's
   output as "console: ..." (the session's log keeps it). */
static void print_line(game *g, int kind, const char *s) {
  console_log(g, kind, s);
  printf("console: %s\n", s);
  fflush(stdout);
}

/* Appends to out (cap bytes, always terminated) the value at idx: a
   plain table as {k = v, ...} (its first few fields, a level deep),
   anything else as tostring shows it. */
static void add_value(lua_State *L, char *out, size_t cap, int idx, int depth) {
  size_t n = strlen(out);
  idx = lua_absindex(L, idx);
  int plain = lua_type(L, idx) == LUA_TTABLE && depth <= 1 && !lua_getmetatable(L, idx);
  if (lua_type(L, idx) == LUA_TTABLE && depth <= 1 && !plain) lua_pop(L, 1); /* the metatable */
  if (!plain) {
    const char *s = luaL_tolstring(L, idx, NULL);
    snprintf(out + n, cap - n, depth > 0 && lua_type(L, idx) == LUA_TSTRING ? "\"%s\"" : "%s", s);
    lua_pop(L, 1);
    return;
  }
  snprintf(out + n, cap - n, "{");
  int k = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    n = strlen(out);
    if (k++ == 8) {
      snprintf(out + n, cap - n, ", ...");
      lua_pop(L, 2);
      break;
    }
    if (lua_type(L, -2) == LUA_TSTRING)
      snprintf(out + n, cap - n, "%s%s = ", k > 1 ? ", " : "", lua_tostring(L, -2));
    else
      snprintf(out + n, cap - n, "%s", k > 1 ? ", " : "");
    add_value(L, out, cap, -1, depth + 1);
    lua_pop(L, 1);
  }
  n = strlen(out);
  snprintf(out + n, cap - n, "}");
}

/* Prints the values from index first to the top of L, tab-separated
   ("(nothing)" for none). */
static void print_values(game *g, lua_State *L, int first) {
  char out[MESSAGE_LEN] = "";
  int top = lua_gettop(L);
  for (int i = first; i <= top; i++) {
    if (i > first) strncat(out, "\t", sizeof out - strlen(out) - 1);
    add_value(L, out, sizeof out, i, 0);
  }
  print_line(g, CONSOLE_RESULT, top < first ? "(nothing)" : out);
}

/* The end of a line's task (lua_pcallk's continuation): its values or
   its error. The line's function is all the task runs, so an error's
   place is the line's own ("console:1:"), with no frame of the
   console's around it. */
static int line_done(lua_State *L, int status, lua_KContext ctx) {
  game *g = (game *)ctx;
  if (status == LUA_OK || status == LUA_YIELD) {
    print_values(g, L, 1);
  } else {
    lua_pushfstring(L, "error: %s", luaL_tolstring(L, -1, NULL));
    print_line(g, CONSOLE_ERROR, lua_tostring(L, -1));
  }
  return 0;
}

/* A line's task: the compiled line at 1, run protected (it may wait). */
static int l_run_line(lua_State *L) {
  game *g = G(L);
  lua_settop(L, 1);
  return line_done(L, lua_pcallk(L, 0, LUA_MULTRET, 0, (lua_KContext)g, line_done),
                   (lua_KContext)g);
}

/* Compiles the line as an expression list (so `1 + 2` prints 3) or else
   as statements, with the shared globals. Pushes the function; 0, or -1
   after printing the syntax error. */
static int compile(game *g, lua_State *L, const char *line) {
  lua_pushfstring(L, "return %s", line);
  int rc = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=console");
  lua_remove(L, -2);
  if (rc != LUA_OK) {
    lua_pop(L, 1);
    rc = luaL_loadbuffer(L, line, strlen(line), "=console");
  }
  if (rc != LUA_OK) {
    print_line(g, CONSOLE_ERROR, lua_tostring(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, g->console.env);
  lua_setupvalue(L, -2, 1);
  return 0;
}

static void stop_runaway(lua_State *L, lua_Debug *ar) {
  (void)ar;
  luaL_error(L, "the line took too long");
}

/* Runs a line as a task in the game (the function compiled on top of
   g->L). */
static void run_task(game *g) {
  lua_State *L = g->L;
  lua_pushlightuserdata(L, g);
  lua_pushcclosure(L, l_run_line, 1);
  lua_insert(L, -2);
  weft_task t = weft_spawn(g->W, 1);
  if (!t.id) {
    print_line(g, CONSOLE_ERROR, weft_task_error(g->W, t));
    return;
  }
  for (int i = 0; i < CONSOLE_TASKS; i++)
    if (!g->console.running[i].id) {
      g->console.running[i] = t;
      return;
    }
  weft_task_drop(g->W, t); /* too many at once: a kill of this one is told in the panel only */
}

void console_frame(game *g) {
  for (int i = 0; i < CONSOLE_TASKS; i++) {
    weft_task t = g->console.running[i];
    if (!t.id) continue;
    int res = weft_task_result(g->W, t);
    if (res == WEFT_RUNNING) continue;
    if (res == WEFT_FAILED) { /* no continuation ran: killed (a runaway) */
      char msg[MESSAGE_LEN];
      snprintf(msg, sizeof msg, "error: %s", weft_task_error(g->W, t));
      print_line(g, CONSOLE_ERROR, msg);
    }
    weft_task_drop(g->W, t);
    g->console.running[i].id = 0;
  }
}

/* Runs a line: as a task in the game (a recording keeps the line, typed
   at the keyboard, in the frame about to run), or at once in a replay
   (the viewer's line: a task of its own would throw off the replay). */
static void run(game *g, const char *line) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  char echo[sizeof g->console.line + 4];
  snprintf(echo, sizeof echo, "> %s", line);
  print_line(g, CONSOLE_INPUT, echo);
  if (g->rp.recording && !g->input.scripted) replay_note_text(g, REPLAY_LINE, line);
  if (compile(g, L, line) != 0) return;
  if (g->rp.on) {
    lua_sethook(L, stop_runaway, LUA_MASKCOUNT, REPLAY_STEPS);
    int rc = lua_pcall(L, 0, LUA_MULTRET, 0);
    lua_sethook(L, NULL, 0, 0);
    if (rc == LUA_OK)
      print_values(g, L, top + 1);
    else {
      lua_pushfstring(L, "error: %s", lua_tostring(L, -1));
      print_line(g, CONSOLE_ERROR, lua_tostring(L, -1));
    }
    lua_settop(L, top);
    return;
  }
  run_task(g);
  lua_settop(L, top);
}

void console_replay(game *g, const char *line) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  char echo[sizeof g->console.line + 16];
  snprintf(echo, sizeof echo, "> %s   (recorded)", line);
  print_line(g, CONSOLE_INPUT, echo);
  if (compile(g, L, line) == 0) run_task(g);
  lua_settop(L, top);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Tab: completes the name being typed from the globals the lines see (a
   field after "name."), to the longest common start; more than one
   candidate are printed. */
static void complete(game *g) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  char *line = g->console.line;
  size_t n = strlen(line), start = n;
  while (start > 0 && (isalnum((unsigned char)line[start - 1]) || line[start - 1] == '_' ||
                       line[start - 1] == '.'))
    start--;
  const char *word = line + start, *dot = strrchr(word, '.');
  const char *prefix = dot ? dot + 1 : word;
  size_t plen = strlen(prefix);
  lua_newtable(L); /* candidates, as keys */
  int cands = lua_gettop(L);
  for (int src = 0; src < 2; src++) {
    if (src == 0)
      lua_rawgeti(L, LUA_REGISTRYINDEX, g->console.env);
    else
      weft_push_api(g->W);
    if (dot) { /* the table named before the dot */
      char base[sizeof g->console.line];
      snprintf(base, sizeof base, "%.*s", (int)(dot - word), word);
      for (char *p = strtok(base, "."); p && lua_istable(L, -1); p = strtok(NULL, "."))
        lua_getfield(L, -1, p), lua_remove(L, -2);
    }
    if (lua_istable(L, -1)) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING && strncmp(lua_tostring(L, -1), prefix, plen) == 0) {
          lua_pushvalue(L, -1);
          lua_pushboolean(L, 1);
          lua_rawset(L, cands);
        }
      }
    }
    lua_pop(L, 1);
  }
  char common[sizeof g->console.line] = "", list[MESSAGE_LEN] = "";
  enum { MAX_CANDS = 64 };
  const char *names[MAX_CANDS];
  int count = 0;
  lua_pushnil(L);
  while (lua_next(L, cands)) {
    lua_pop(L, 1);
    if (count < MAX_CANDS) names[count++] = lua_tostring(L, -1); /* kept alive by cands */
  }
  qsort(names, (size_t)count, sizeof names[0], by_name);
  for (int i = 0; i < count; i++) {
    if (i == 0)
      snprintf(common, sizeof common, "%s", names[i]);
    else
      for (size_t k = 0; common[k]; k++)
        if (common[k] != names[i][k]) {
          common[k] = 0;
          break;
        }
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%s%s", used ? "  " : "", names[i]);
  }
  lua_settop(L, top);
  if (count > 1) print_line(g, CONSOLE_RESULT, list);
  if (count && strlen(common) > plen &&
      (size_t)(prefix - line) + strlen(common) < sizeof g->console.line)
    strcpy(line + (prefix - line), common);
}

void console_toggle(game *g) {
  g->console.open = !g->console.open;
  g->console.browsing = 0;
  memset(g->input.held, 0, sizeof g->input.held); /* keys go to the console now, or back */
  if (g->video.win) {
    if (g->console.open)
      SDL_StartTextInput();
    else
      SDL_StopTextInput();
  }
}

/* Up/Down: the line `back` lines back in the history (0: a new one). */
static void browse(game *g, int back) {
  if (back < 0 || back > g->console.nhistory) return;
  g->console.browsing = back;
  snprintf(g->console.line, sizeof g->console.line, "%s",
           back ? g->console.history[g->console.nhistory - back] : "");
}

void console_key(game *g, SDL_Scancode sc) {
  char *line = g->console.line;
  switch (sc) {
  case SDL_SCANCODE_RETURN:
  case SDL_SCANCODE_KP_ENTER:
    if (!line[0]) return;
    if (g->console.nhistory == CONSOLE_HISTORY) {
      memmove(g->console.history, g->console.history + 1,
              sizeof g->console.history[0] * (CONSOLE_HISTORY - 1));
      g->console.nhistory--;
    }
    snprintf(g->console.history[g->console.nhistory++], sizeof g->console.history[0], "%s", line);
    char copy[sizeof g->console.line];
    snprintf(copy, sizeof copy, "%s", line);
    line[0] = 0;
    g->console.browsing = 0;
    run(g, copy);
    break;
  case SDL_SCANCODE_BACKSPACE:
    if (*line) line[strlen(line) - 1] = 0;
    break;
  case SDL_SCANCODE_UP:
    browse(g, g->console.browsing + 1);
    break;
  case SDL_SCANCODE_DOWN:
    browse(g, g->console.browsing - 1);
    break;
  case SDL_SCANCODE_TAB:
    complete(g);
    break;
  case SDL_SCANCODE_PAGEUP: /* the scrollback; drawing clamps it */
  case SDL_SCANCODE_PAGEDOWN:
    g->console.scroll += sc == SDL_SCANCODE_PAGEUP ? CONSOLE_OUT - 1 : -(CONSOLE_OUT - 1);
    if (g->console.scroll < 0) g->console.scroll = 0;
    break;
  case SDL_SCANCODE_ESCAPE:
  case SDL_SCANCODE_GRAVE:
    console_toggle(g);
    break;
  default:
    break;
  }
}

void console_text(game *g, const char *text) {
  size_t n = strlen(g->console.line);
  for (; *text && n + 1 < sizeof g->console.line; text++)
    if (*text != '`' && (unsigned char)*text >= ' ') g->console.line[n++] = *text;
  g->console.line[n] = 0;
}

void console_draw(game *g) {
  if (!g->console.open) return;
  static const SDL_Color colours[] = {[CONSOLE_INPUT] = {150, 160, 180, 255},
                                      [CONSOLE_RESULT] = {220, 226, 240, 255},
                                      [CONSOLE_ERROR] = {255, 150, 140, 255},
                                      [CONSOLE_PRINT] = {170, 230, 180, 255},
                                      [CONSOLE_WARN] = {250, 200, 110, 255}};
  int lh = font_height(g->video.f_mono);
  SDL_Rect r = {16, 12, SCREEN_W - 32, 16 + lh * (CONSOLE_OUT + 1) + 8};
  render_note(g, "console", r);
  /* opaque: the panels and the game under it do not show through */
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_NONE);
  SDL_SetRenderDrawColor(g->video.r, 4, 6, 12, 255);
  SDL_RenderFillRect(g->video.r, &r);
  SDL_SetRenderDrawColor(g->video.r, 230, 190, 90, 255);
  SDL_RenderDrawRect(g->video.r, &r);
  int back = g->console.scroll, most = g->console.nout - CONSOLE_OUT;
  if (back > most) back = most > 0 ? most : 0;
  g->console.scroll = back;
  int last = g->console.nout - back, first = last - CONSOLE_OUT > 0 ? last - CONSOLE_OUT : 0;
  int y = r.y + 8 + lh * (CONSOLE_OUT - (last - first));
  for (int i = first; i < last; i++, y += lh) {
    int k = g->console.kind[i];
    char row[2 * CONSOLE_COLS + 1]; /* a tab as two spaces: the font has no glyph for it */
    size_t n = 0;
    for (const char *c = g->console.out[i]; *c; c++)
      if (*c == '\t')
        row[n++] = ' ', row[n++] = ' ';
      else
        row[n++] = *c;
    row[n] = 0;
    font_draw(g->video.f_mono, g->video.r, row, r.x + 10, y,
              colours[k <= CONSOLE_WARN ? k : CONSOLE_RESULT]);
  }
  char prompt[sizeof g->console.line + 8];
  snprintf(prompt, sizeof prompt, "> %s%s", g->console.line,
           (int)(g->run.realtime * 2) & 1 ? "_" : " ");
  font_draw(g->video.f_mono, g->video.r, prompt, r.x + 10, y, (SDL_Color){255, 225, 140, 255});
  char help[96];
  snprintf(help, sizeof help,
           "%sEnter run   Up/Down history   Tab complete   PgUp/PgDn scroll   Esc close",
           back ? "(scrolled back)   " : "");
  font_draw(g->video.f_mono, g->video.r, help, r.x + r.w - 10 - font_width(g->video.f_mono, help),
            y, (SDL_Color){110, 116, 136, 255});
}

/* console_input(text): types text into the console (test scripts). */
static int l_console_input(lua_State *L) {
  console_text(G(L), luaL_checkstring(L, 1));
  return 0;
}

/* console_lines() -> the console's output lines, oldest first. */
static int l_console_lines(lua_State *L) {
  game *g = G(L);
  lua_createtable(L, g->console.nout, 0);
  for (int i = 0; i < g->console.nout; i++) {
    lua_pushstring(L, g->console.out[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

void console_open(game *g) {
  lua_State *L = g->L;
  static const luaL_Reg fns[] = {
      {"console_input", l_console_input}, {"console_lines", l_console_lines}, {NULL, NULL}};
  lua_pushlightuserdata(L, g);
  luaL_setfuncs(L, fns, 1);
  verbs_name(g, "console", fns);
  weft_save_name(g->W, "demo.console.run_line", l_run_line); /* a line's task */
  /* the lines' globals: their own, then the script API's */
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  if (luaL_loadstring(L, prelude_src) == LUA_OK) { /* its globals are the lines' too */
    lua_pushvalue(L, -2);
    lua_setupvalue(L, -2, 1);
    lua_pushvalue(L, -2);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);
  } else
    lua_pop(L, 1);
  g->console.env = luaL_ref(L, LUA_REGISTRYINDEX);
}
