/* Error panel, task inspector and frame graph. */
#include "overlay.h"

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

static const SDL_Color WHITE = {255, 255, 255, 255};
static const SDL_Color DIM = {160, 166, 186, 255};

void overlay_error(game *g, const char *msg, const char *trace) {
  if (g->nerrors > 0 && strcmp(g->errors[g->nerrors - 1].msg, msg) == 0) {
    error_note *e = &g->errors[g->nerrors - 1];
    e->repeats++;
    e->at = g->realtime;
    return;
  }
  if (g->nerrors == MAX_ERRORS) {
    memmove(g->errors, g->errors + 1, sizeof g->errors[0] * (MAX_ERRORS - 1));
    g->nerrors--;
  }
  error_note *e = &g->errors[g->nerrors++];
  snprintf(e->msg, sizeof e->msg, "%s", msg);
  snprintf(e->trace, sizeof e->trace, "%s", trace ? trace : "");
  e->at = g->realtime;
  e->repeats = 0;
  g->errors_total++;
}

void overlay_record(game *g, float frame_ms, float script_ms) {
  g->frame_ms[g->graph_i] = frame_ms;
  g->script_ms[g->graph_i] = script_ms;
  g->graph_i = (g->graph_i + 1) % GRAPH_N;
}

void overlay_add_draw(game *g, float draw_ms) {
  g->frame_ms[(g->graph_i + GRAPH_N - 1) % GRAPH_N] += draw_ms;
}

static void box(game *g, SDL_Rect r, SDL_Color fill, SDL_Color border) {
  SDL_SetRenderDrawBlendMode(g->r, SDL_BLENDMODE_BLEND);
  SDL_SetRenderDrawColor(g->r, fill.r, fill.g, fill.b, fill.a);
  SDL_RenderFillRect(g->r, &r);
  SDL_SetRenderDrawColor(g->r, border.r, border.g, border.b, border.a);
  SDL_RenderDrawRect(g->r, &r);
}

/* Draws at most max_lines lines of s (split at newlines, tabs as two
   spaces, cut at max_chars); returns the y after the last. */
static int lines(game *g, font *f, const char *s, int x, int y, int max_lines, int max_chars,
                 SDL_Color c) {
  char buf[256];
  int n = 0;
  while (*s && n < max_lines) {
    int k = 0;
    while (*s && *s != '\n' && k < (int)sizeof buf - 3) {
      if (*s == '\t')
        buf[k++] = ' ', buf[k++] = ' ';
      else
        buf[k++] = *s;
      s++;
    }
    while (*s && *s != '\n') s++;
    if (*s == '\n') s++;
    if (k > max_chars) k = max_chars;
    buf[k] = 0;
    font_draw(f, g->r, buf, x, y, c);
    y += font_height(f);
    n++;
  }
  return y;
}

static int count_lines(const char *s, int max) {
  int n = *s ? 1 : 0;
  for (; *s; s++)
    if (*s == '\n' && s[1]) n++;
  return n < max ? n : max;
}

static void draw_errors(game *g) {
  if (g->nerrors == 0) return;
  error_note *e = &g->errors[g->nerrors - 1];
  /* the trace without its first line (the message again) */
  const char *t = e->trace;
  if (strncmp(t, e->msg, strlen(e->msg)) == 0) {
    t += strlen(e->msg);
    if (*t == '\n') t++;
  }
  int lh = font_height(g->f_mono), nl = count_lines(t, 10);
  int ml = font_width(g->f_ui, e->msg) > 900 ? 2 : 1;
  SDL_Rect r = {SCREEN_W / 2 - 470, 60, 940, 48 + ml * font_height(g->f_ui) + lh * nl + 14};
  box(g, r, (SDL_Color){28, 8, 12, 232}, (SDL_Color){230, 70, 70, 255});
  SDL_Rect head = {r.x, r.y, r.w, 30};
  box(g, head, (SDL_Color){150, 28, 36, 255}, (SDL_Color){230, 70, 70, 255});
  char title[96];
  if (g->nerrors > 1)
    snprintf(title, sizeof title, "Script error (%d errors, the game goes on)", g->nerrors);
  else
    snprintf(title, sizeof title, "Script error%s (the game goes on)",
             e->repeats ? " (repeated)" : "");
  font_draw(g->f_bold, g->r, title, r.x + 12, r.y + 4, WHITE);
  const char *hint = "F4 dismiss";
  font_draw(g->f_small, g->r, hint, r.x + r.w - font_width(g->f_small, hint) - 12, r.y + 7,
            (SDL_Color){255, 210, 210, 255});
  int y = font_draw_wrapped(g->f_ui, g->r, e->msg, -1, r.x + 14, r.y + 38, r.w - 28,
                            (SDL_Color){255, 226, 200, 255});
  lines(g, g->f_mono, t, r.x + 14, r.y + 38 + y + 6, nl, 125, DIM);
}

/* Under the task list: each module from weft.modules() with its version,
   its running starts, how many still run old code, and a reload error. */
static void draw_modules(game *g, int x, int y0, int w) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  weft_push_api(g->W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "modules");
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    lua_settop(L, top);
    return;
  }
  int n = (int)luaL_len(L, -1), lh = font_height(g->f_mono);
  SDL_Rect r = {x, y0, w, 36 + lh * (n + 1)};
  box(g, r, (SDL_Color){8, 12, 22, 228}, (SDL_Color){90, 150, 220, 255});
  font_draw(g->f_bold, g->r, "Modules (weft.modules)", r.x + 12, r.y + 6,
            (SDL_Color){150, 200, 255, 255});
  int y = r.y + 34;
  char line[256];
  snprintf(line, sizeof line, "%-22s %-8s %-8s %-12s %s", "module", "version", "tasks", "old code",
           "reload error");
  font_draw(g->f_mono, g->r, line, r.x + 12, y, (SDL_Color){120, 130, 150, 255});
  for (int i = 1; i <= n; i++) {
    y += lh;
    lua_rawgeti(L, -1, i);
    lua_getfield(L, -1, "name");
    lua_getfield(L, -2, "version");
    lua_getfield(L, -3, "tasks");
    lua_getfield(L, -4, "old");
    lua_getfield(L, -5, "error");
    const char *err = lua_tostring(L, -1);
    snprintf(line, sizeof line, "%-22.22s v%-7d %-8d %-12d %.40s", lua_tostring(L, -5),
             (int)lua_tointeger(L, -4), (int)lua_tointeger(L, -3), (int)lua_tointeger(L, -2),
             err ? err : "");
    font_draw(g->f_mono, g->r, line, r.x + 12, y,
              err ? (SDL_Color){255, 150, 140, 255} : (SDL_Color){220, 226, 240, 255});
    lua_pop(L, 6);
  }
  lua_settop(L, top);
}

/* F1: one line per live task from weft.tasks(). */
static void draw_tasks(game *g) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  weft_push_api(g->W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "tasks");
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    lua_settop(L, top);
    return;
  }
  int n = (int)luaL_len(L, -1);
  int lh = font_height(g->f_mono);
  int rows = (SCREEN_H - 140) / lh;
  SDL_Rect r = {SCREEN_W - 900, 50, 880, 44 + lh * (n < rows ? n + 1 : rows + 1)};
  box(g, r, (SDL_Color){8, 12, 22, 228}, (SDL_Color){90, 150, 220, 255});
  char head[96];
  snprintf(head, sizeof head, "Task inspector: %d live task%s (weft.tasks)", n, n == 1 ? "" : "s");
  font_draw(g->f_bold, g->r, head, r.x + 12, r.y + 6, (SDL_Color){150, 200, 255, 255});
  font_draw(g->f_small, g->r, "F1 close", r.x + r.w - 80, r.y + 9, DIM);
  int y = r.y + 36;
  char line[256];
  snprintf(line, sizeof line, "%-22s %-11s %-8s %-30s %s", "task", "group", "status", "waiting on",
           "suspended at");
  font_draw(g->f_mono, g->r, line, r.x + 12, y, (SDL_Color){120, 130, 150, 255});
  y += lh;
  int list = lua_gettop(L), row = list + 1;
  for (int i = 1; i <= n && i <= rows - 1; i++, y += lh) {
    lua_rawgeti(L, -1, i);
    const char *f[5] = {"name", "group", "status", "waiting", "where"};
    char v[5][64];
    for (int k = 0; k < 5; k++) {
      lua_getfield(L, -1, f[k]);
      const char *s = lua_tostring(L, -1);
      snprintf(v[k], sizeof v[k], "%s", s ? s : "-");
      lua_pop(L, 1);
    }
    /* a module started with g:start runs in a group named after it, under
       the entity's group: show the entity */
    if (strcmp(v[0], v[1]) == 0 && lua_getfield(L, -1, "task") == LUA_TUSERDATA &&
        lua_getfield(L, -1, "group") == LUA_TUSERDATA &&
        lua_getfield(L, -1, "parent") == LUA_TUSERDATA &&
        lua_getfield(L, -1, "name") == LUA_TSTRING)
      snprintf(v[1], sizeof v[1], "%s", lua_tostring(L, -1));
    lua_settop(L, row);
    /* shorten "scripts/ai/patrol.lua:12" to "ai/patrol.lua:12" */
    const char *where = strstr(v[4], "scripts/") ? strstr(v[4], "scripts/") + 8 : v[4];
    const char *name = strstr(v[0], "scripts/") ? strstr(v[0], "scripts/") + 8 : v[0];
    snprintf(line, sizeof line, "%-22.22s %-11.11s %-8.8s %-30.30s %.28s", name, v[1], v[2], v[3],
             where);
    SDL_Color c = strcmp(v[2], "running") == 0 ? (SDL_Color){140, 255, 160, 255}
                                               : (SDL_Color){220, 226, 240, 255};
    font_draw(g->f_mono, g->r, line, r.x + 12, y, c);
    lua_settop(L, list);
  }
  if (n > rows - 1) {
    snprintf(line, sizeof line, "... and %d more", n - (rows - 1));
    font_draw(g->f_mono, g->r, line, r.x + 12, y, DIM);
  }
  lua_settop(L, top);
  draw_modules(g, r.x, r.y + r.h + 8, r.w);
}

/* F2: the last GRAPH_N frames: the whole frame (update, scripts, drawing)
   and the script part (weft_step), on a scale that fits the worst frame. */
static void draw_graph(game *g) {
  const int W = GRAPH_N * 2, H = 100;
  SDL_Rect r = {SCREEN_W - W - 30, SCREEN_H - H - 110, W + 16, H + 70};
  box(g, r, (SDL_Color){8, 12, 22, 225}, (SDL_Color){90, 150, 220, 255});
  float sum_f = 0, sum_s = 0, max_f = 0, max_s = 0;
  for (int i = 0; i < GRAPH_N; i++) {
    sum_f += g->frame_ms[i], sum_s += g->script_ms[i];
    if (g->frame_ms[i] > max_f) max_f = g->frame_ms[i];
    if (g->script_ms[i] > max_s) max_s = g->script_ms[i];
  }
  float top = 2.0f; /* ms at the top of the graph: 2, 4, 8, ... */
  while (top < max_f && top < 64) top *= 2;
  float scale = (float)H / top;
  int bx = r.x + 8, by = r.y + 60 + H;
  for (int i = 0; i < GRAPH_N; i++) {
    int k = (g->graph_i + i) % GRAPH_N;
    float f = g->frame_ms[k], sc = g->script_ms[k];
    int hf = (int)(f * scale + 0.5f), hs = (int)(sc * scale + 0.5f);
    if (hf > H) hf = H;
    if (hs > H) hs = H;
    if (hs < 1 && sc > 0) hs = 1;
    SDL_SetRenderDrawColor(g->r, 70, 96, 150, 255);
    SDL_Rect a = {bx + i * 2, by - hf, 2, hf};
    SDL_RenderFillRect(g->r, &a);
    SDL_SetRenderDrawColor(g->r, 110, 230, 130, 255);
    SDL_Rect b = {bx + i * 2, by - hs, 2, hs};
    SDL_RenderFillRect(g->r, &b);
  }
  if (16.7f < top) {
    SDL_SetRenderDrawColor(g->r, 230, 190, 90, 200);
    SDL_RenderDrawLine(g->r, bx, by - (int)(16.7f * scale), bx + W, by - (int)(16.7f * scale));
  }
  weft_stats st;
  weft_get_stats(g->W, &st);
  char s[160];
  snprintf(s, sizeof s, "frame %.2f ms    script %.3f ms  (max %.2f)", sum_f / GRAPH_N,
           sum_s / GRAPH_N, max_s);
  font_draw(g->f_small, g->r, s, r.x + 10, r.y + 8, WHITE);
  snprintf(s, sizeof s, "%u tasks    Lua %zu KB    %u errors    scale %g ms", st.tasks,
           st.lua_bytes / 1024, st.errors, top);
  font_draw(g->f_small, g->r, s, r.x + 10, r.y + 30, DIM);
  SDL_SetRenderDrawColor(g->r, 70, 96, 150, 255);
}

void overlay_draw(game *g) {
  if (g->show_graph) draw_graph(g);
  if (g->show_tasks) draw_tasks(g);
  draw_errors(g);
}
