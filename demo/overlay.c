/* Error panel, task inspector and frame graph. */
#include "overlay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "render.h"

static const SDL_Color WHITE = {255, 255, 255, 255};
static const SDL_Color DIM = {160, 166, 186, 255};

void overlay_module_of(game *g, const char *path, size_t len, char *out, size_t cap) {
  char p[512];
  snprintf(p, sizeof p, "%.*s", (int)(len < sizeof p ? len : sizeof p - 1), path);
  out[0] = 0;
  size_t n = strlen(p), rl = strlen(g->run.scripts_dir);
  if (n < 5 || strcmp(p + n - 4, ".lua") != 0) return;
  const char *rel = NULL;
  if (strncmp(p, g->run.scripts_dir, rl) == 0 && p[rl] == '/') rel = p + rl + 1;
  for (const char *q = p; !rel && (q = strstr(q, "scripts/")) != NULL; q++)
    if (!strstr(q + 1, "scripts/")) rel = q + 8;
  if (!rel) return;
  snprintf(out, cap, "%.*s", (int)(strlen(rel) - 4), rel);
  for (char *c = out; *c; c++)
    if (*c == '/') *c = '.';
}

/* Splits "who: path/x.lua:12: text" into who and the module of x.lua. */
static void parse_note(game *g, error_note *e) {
  e->who[0] = e->module[0] = 0;
  const char *p = strstr(e->msg, ".lua:");
  if (!p) return;
  const char *s = p;
  while (s > e->msg && s[-1] != ' ') s--;
  overlay_module_of(g, s, (size_t)(p + 4 - s), e->module, sizeof e->module);
  if (s - e->msg >= 3 && s[-2] == ':' && s[-1] == ' ') {
    size_t n = (size_t)(s - 2 - e->msg);
    if (n >= sizeof e->who) n = sizeof e->who - 1;
    memcpy(e->who, e->msg, n);
    e->who[n] = 0;
  }
}

void overlay_error(game *g, const char *msg, const char *trace) {
  uint32_t epoch = g->W ? weft_reload_count(g->W) : 0;
  if (g->ov.nerrors > 0 && strcmp(g->ov.errors[g->ov.nerrors - 1].msg, msg) == 0) {
    error_note *e = &g->ov.errors[g->ov.nerrors - 1];
    e->repeats++;
    e->at = g->run.realtime;
    e->epoch = epoch;
    return;
  }
  if (g->ov.nerrors == MAX_ERRORS) {
    memmove(g->ov.errors, g->ov.errors + 1, sizeof g->ov.errors[0] * (MAX_ERRORS - 1));
    g->ov.nerrors--;
  }
  error_note *e = &g->ov.errors[g->ov.nerrors++];
  snprintf(e->msg, sizeof e->msg, "%s", msg);
  snprintf(e->trace, sizeof e->trace, "%s", trace ? trace : "");
  e->at = g->run.realtime;
  e->repeats = 0;
  e->epoch = epoch;
  e->was_broken = 0;
  e->warning = 0;
  e->task[0] = 0;
  parse_note(g, e);
  int idx = e->who[0] ? world_find(&g->w, e->who) : -1;
  entity *ent = idx >= 0 ? world_ent(&g->w, idx) : NULL;
  if (ent) ent->script_error = 1;
  g->ov.errors_total++;
}

void overlay_warning(game *g, const char *msg) {
  overlay_error(g, msg, NULL);
  g->ov.errors[g->ov.nerrors - 1].warning = 1;
  error_note w = g->ov.errors[g->ov.nerrors - 1];
  memmove(g->ov.errors + 1, g->ov.errors, sizeof g->ov.errors[0] * (size_t)(g->ov.nerrors - 1));
  g->ov.errors[0] = w;
}

void overlay_slow(game *g, const char *msg, const char *file, unsigned line) {
  const char *rest = strstr(msg, " ms of script time");
  while (rest && rest > msg && !(rest[0] == ':' && rest[1] == ' ')) rest--;
  char note[MESSAGE_LEN], label[sizeof g->ov.errors[0].task] = "";
  if (rest && rest > msg) snprintf(label, sizeof label, "%.*s", (int)(rest - msg), msg);
  if (file && label[0])
    snprintf(note, sizeof note, "slow: %s at %s:%u%s", label, file, line, rest);
  else
    snprintf(note, sizeof note, "slow: %s", msg);
  overlay_warning(g, note);
  snprintf(g->ov.errors[0].task, sizeof g->ov.errors[0].task, "%s", label);
}

void overlay_save_failed(game *g, const char *msg, int load) {
  overlay_error(g, msg, NULL);
  g->ov.errors[g->ov.nerrors - 1].warning = load ? 4 : 3;
}

void overlay_growth(game *g, const char *msg) {
  overlay_warning(g, msg);
  g->ov.errors[0].warning = 2;
}

static void drop_note(game *g, int i) {
  memmove(g->ov.errors + i, g->ov.errors + i + 1,
          sizeof g->ov.errors[0] * (size_t)(g->ov.nerrors - i - 1));
  g->ov.nerrors--;
}

/* The label weft gives the task of row t (on top of L): who (else its
   name), then its spawn site unless that is the name. */
static void row_label(lua_State *L, char *out, size_t n) {
  lua_getfield(L, -1, "who");
  if (!lua_isstring(L, -1)) lua_pop(L, 1), lua_getfield(L, -1, "name");
  lua_getfield(L, -2, "spawned");
  const char *who = lua_tostring(L, -2), *site = lua_tostring(L, -1);
  if (!who || !*who) who = "task";
  if (site && strcmp(site, "?") != 0 && strcmp(site, who) != 0)
    snprintf(out, n, "%s %s", who, site);
  else
    snprintf(out, n, "%s", who);
  lua_pop(L, 2);
}

void overlay_settle_slow(game *g) {
  enum { ROWS = 256 };
  const double low_ms = 2.0; /* half the 4 ms that names a slow task */
  int any = 0;
  for (int i = 0; i < g->ov.nerrors; i++) any |= g->ov.errors[i].task[0] != 0;
  if (!any || g->run.frame % 30) return;
  lua_State *L = g->L;
  int top = lua_gettop(L);
  weft_push_api(g->W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "tasks");
  lua_createtable(L, 0, 2);
  lua_pushliteral(L, "avg_ms");
  lua_setfield(L, -2, "by");
  lua_pushinteger(L, ROWS);
  lua_setfield(L, -2, "count");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_istable(L, -1)) return (void)lua_settop(L, top);
  int list = lua_gettop(L), n = (int)luaL_len(L, list);
  for (int i = g->ov.nerrors - 1; i >= 0; i--) {
    if (!g->ov.errors[i].task[0]) continue;
    int still = 0;
    for (int k = 1; k <= n && !still; k++) { /* the costliest first: stop under the mark */
      lua_rawgeti(L, list, k);
      lua_getfield(L, -1, "avg_ms");
      double ms = lua_tonumber(L, -1);
      lua_pop(L, 1);
      char label[sizeof g->ov.errors[0].task];
      row_label(L, label, sizeof label);
      lua_pop(L, 1);
      if (ms < low_ms) break;
      still = strcmp(label, g->ov.errors[i].task) == 0;
    }
    if (!still) drop_note(g, i);
  }
  lua_settop(L, top);
}

void overlay_errors_fixed(game *g, const char *module, uint32_t epoch) {
  for (int i = g->ov.nerrors - 1; i >= 0; i--)
    if (strcmp(g->ov.errors[i].module, module) == 0 && g->ov.errors[i].epoch < epoch)
      drop_note(g, i);
}

void overlay_errors_unbroken(game *g, const char *const *broken, int nbroken) {
  for (int i = g->ov.nerrors - 1; i >= 0; i--) {
    error_note *e = &g->ov.errors[i];
    if (!e->module[0]) continue;
    int is = 0;
    for (int k = 0; k < nbroken && !is; k++) is = strcmp(broken[k], e->module) == 0;
    if (is)
      e->was_broken = 1;
    else if (e->was_broken)
      drop_note(g, i);
  }
}

static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
  return h ? h : 1;
}

/* The name a task goes by in the overlays: who, else its name. */
static const char *task_label(lua_State *L, int t) {
  lua_getfield(L, t, "who");
  if (!lua_isstring(L, -1)) {
    lua_pop(L, 1);
    lua_getfield(L, t, "name");
  }
  const char *s = lua_tostring(L, -1);
  lua_pop(L, 1); /* the task table holds the string */
  return s ? s : "?";
}

/* F2's shares: the three tasks that cost the most in frame k (weft.tasks
   is asked only while the graph shows). */
static void record_top(game *g, int k) {
  memset(g->ov.top_ms[k], 0, sizeof g->ov.top_ms[k]);
  memset(g->ov.top_hue[k], 0, sizeof g->ov.top_hue[k]);
  if (!g->modes.show_graph) return;
  lua_State *L = weft_lua(g->W);
  int top = lua_gettop(L);
  weft_push_api(g->W);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "tasks");
  lua_createtable(L, 0, 2); /* {by = "ms", count = 3}: three rows, however many tasks */
  lua_pushliteral(L, "ms");
  lua_setfield(L, -2, "by");
  lua_pushinteger(L, 3);
  lua_setfield(L, -2, "count");
  if (lua_pcall(L, 1, 2, 0) != LUA_OK) return (void)lua_settop(L, top);
  g->ov.live_tasks = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  int list = lua_gettop(L), n = (int)luaL_len(L, list);
  for (int j = 0; j < 3; j++) {
    g->ov.top_name[j][0] = 0;
    if (j >= n) continue;
    lua_rawgeti(L, list, j + 1);
    lua_getfield(L, -1, "ms");
    float ms = (float)lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (ms <= 0) {
      lua_pop(L, 1);
      continue;
    }
    g->ov.top_ms[k][j] = ms;
    const char *name = task_label(L, lua_gettop(L));
    snprintf(g->ov.top_name[j], sizeof g->ov.top_name[j], "%s", name);
    g->ov.top_hue[k][j] = hash_name(name);
    lua_pop(L, 1);
  }
  lua_settop(L, top);
}

/* F2 turned the graph on: its count and top three now, not at the next
   frame a pause may hold back. */
void overlay_graph_on(game *g) { record_top(g, (g->ov.graph_i + GRAPH_N - 1) % GRAPH_N); }

void overlay_record(game *g, float frame_ms, float script_ms) {
  g->ov.frame_ms[g->ov.graph_i] = frame_ms;
  g->ov.script_ms[g->ov.graph_i] = script_ms;
  record_top(g, g->ov.graph_i);
  g->ov.graph_i = (g->ov.graph_i + 1) % GRAPH_N;
}

/* A bright colour for a task's hash (its name's). */
static SDL_Color hue_color(uint32_t h) {
  static const SDL_Color pal[] = {{240, 120, 90, 255},  {250, 200, 80, 255}, {120, 180, 250, 255},
                                  {210, 130, 240, 255}, {90, 220, 210, 255}, {250, 150, 190, 255}};
  return pal[h % (sizeof pal / sizeof pal[0])];
}

void overlay_add_draw(game *g, float draw_ms) {
  g->ov.frame_ms[(g->ov.graph_i + GRAPH_N - 1) % GRAPH_N] += draw_ms;
}

/* Pushes the script API on g->L, which screenshot() points at the
   calling task's thread while it draws. */
static void push_api(game *g) {
  weft_push_api(g->W);
  if (g->L != weft_lua(g->W)) lua_xmove(weft_lua(g->W), g->L, 1);
}

static void box(game *g, SDL_Rect r, SDL_Color fill, SDL_Color border) {
  SDL_SetRenderDrawBlendMode(g->video.r, SDL_BLENDMODE_BLEND);
  SDL_SetRenderDrawColor(g->video.r, fill.r, fill.g, fill.b, fill.a);
  SDL_RenderFillRect(g->video.r, &r);
  SDL_SetRenderDrawColor(g->video.r, border.r, border.g, border.b, border.a);
  SDL_RenderDrawRect(g->video.r, &r);
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
    if (k > max_chars && max_chars > 3) k = max_chars, memcpy(buf + k - 3, "...", 3);
    buf[k] = 0;
    font_draw(f, g->video.r, buf, x, y, c);
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

/* s cut to width characters from the left ("...ematics/intro.lua:19"),
   so a file name keeps its line number. */
static void fit_left(char *out, size_t cap, const char *s, int width) {
  int n = (int)strlen(s);
  if (n <= width || width < 4)
    snprintf(out, cap, "%.*s", width, s);
  else
    snprintf(out, cap, "...%s", s + n - (width - 3));
}

/* s cut to width characters at the right, with "..." when cut. */
static void fit_right(char *out, size_t cap, const char *s, int width) {
  int n = (int)strlen(s);
  if (n <= width || width < 4)
    snprintf(out, cap, "%.*s", width, s);
  else
    snprintf(out, cap, "%.*s...", width - 3, s);
}

/* The overlays' layout. Every overlay can be on at once and none covers
   another or the game's own text: they keep below the top bar (objective,
   slow motion, the reload note at y 52-82) and above the dialogue box,
   the letterbox or the key line (render_free_bottom). The error panel
   and the frame graph share the left column, the task inspector has the
   right one. */
enum { TOP = 90, GAP = 8, LEFT_X = 16, LEFT_W = 520, RIGHT_X = 548, RIGHT_W = 716 };
enum { GRAPH_H = 192, GRAPH_W = GRAPH_N * 2 + 16 };

/* The error panel inside area: the newest report, its message wrapped,
   as much of the trace as fits. */
static void draw_errors(game *g, SDL_Rect area) {
  if (g->ov.nerrors == 0 || area.h < 80) return;
  error_note *e = &g->ov.errors[g->ov.nerrors - 1];
  /* the trace without its first line (the message again) */
  const char *t = e->trace;
  if (strncmp(t, e->msg, strlen(e->msg)) == 0) {
    t += strlen(e->msg);
    if (*t == '\n') t++;
  }
  int lh = font_height(g->video.f_mono), tw = area.w - 28;
  int mh = font_draw_wrapped(g->video.f_ui, NULL, e->msg, -1, 0, 0, tw, WHITE);
  int max_mh = 3 * font_height(g->video.f_ui);
  if (mh > max_mh) mh = max_mh;
  int room = (area.h - 38 - mh - 6 - 10) / lh;
  int nl = count_lines(t, room < 12 ? (room > 0 ? room : 0) : 12);
  SDL_Rect r = {area.x, area.y, area.w, 38 + mh + 6 + lh * nl + 10};
  render_note(g, "errors", r);
  /* a slow task's line is a warning: amber, not an error's red */
  SDL_Color edge = e->warning ? (SDL_Color){230, 170, 60, 255} : (SDL_Color){230, 70, 70, 255};
  box(g, r, e->warning ? (SDL_Color){28, 20, 8, 235} : (SDL_Color){28, 8, 12, 235}, edge);
  SDL_Rect head = {r.x, r.y, r.w, 30};
  box(g, head, e->warning ? (SDL_Color){140, 90, 20, 255} : (SDL_Color){150, 28, 36, 255}, edge);
  static const char *const kinds[] = {"Script error", "Slow script", "Tasks pile up", "Not saved",
                                      "Not loaded"};
  const char *kind = kinds[e->warning >= 0 && e->warning <= 4 ? e->warning : 0];
  const char *goes = g->boot.dead ? "stopped" : "goes on";
  char title[96];
  if (g->ov.nerrors > 1)
    snprintf(title, sizeof title, "%s (%d, the game %s)", kind, g->ov.nerrors, goes);
  else
    snprintf(title, sizeof title, "%s%s (the game %s)", kind, e->repeats ? " (repeated)" : "",
             goes);
  const char *hint = "F4 dismiss";
  if (font_width(g->video.f_bold, title) + font_width(g->video.f_small, hint) + 36 > r.w) {
    if (g->ov.nerrors > 1) /* the panel is narrow: the count stays, the reassurance goes */
      snprintf(title, sizeof title, "%s (%d)", kind, g->ov.nerrors);
    else
      snprintf(title, sizeof title, "%s%s", kind, e->repeats ? " (repeated)" : "");
  }
  font_draw(g->video.f_bold, g->video.r, title, r.x + 12, r.y + 4, WHITE);
  font_draw(g->video.f_small, g->video.r, hint, r.x + r.w - font_width(g->video.f_small, hint) - 12,
            r.y + 7, (SDL_Color){255, 210, 210, 255});
  SDL_Rect clip = {r.x, r.y + 38, r.w, mh}; /* at most three lines of message */
  SDL_RenderSetClipRect(g->video.r, &clip);
  font_draw_wrapped(g->video.f_ui, g->video.r, e->msg, -1, r.x + 14, r.y + 38, tw,
                    (SDL_Color){255, 226, 200, 255});
  SDL_RenderSetClipRect(g->video.r, NULL);
  int cw = font_width(g->video.f_mono, "M");
  lines(g, g->video.f_mono, t, r.x + 14, r.y + 38 + mh + 6, nl, cw > 0 ? tw / cw : 60, DIM);
}

/* Under the task list: each module from weft.modules() in two columns
   with its version, its running starts, how many run old code and its
   starts' script time a frame on average; then the reload errors. Returns the height drawn (0 if it
   does not fit). */
static int draw_modules(game *g, int x, int y0, int w, int max_h, int measure) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  push_api(g);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "modules");
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    lua_settop(L, top);
    return 0;
  }
  int n = (int)luaL_len(L, -1), lh = font_height(g->video.f_mono), nerr = 0;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    nerr += lua_getfield(L, -1, "error") == LUA_TSTRING;
    lua_pop(L, 2);
  }
  int rows = (n + 1) / 2, h = 34 + lh * (rows + 1 + nerr) + 6;
  if (measure || h > max_h) {
    lua_settop(L, top);
    return h > max_h ? 0 : h;
  }
  SDL_Rect r = {x, y0, w, h};
  render_note(g, "modules", r);
  box(g, r, (SDL_Color){8, 12, 22, 228}, (SDL_Color){90, 150, 220, 255});
  font_draw(g->video.f_bold, g->video.r, "Modules (weft.modules)", r.x + 12, r.y + 6,
            (SDL_Color){150, 200, 255, 255});
  int cw = font_width(g->video.f_mono, "M"), colw = (w - 24) / 2, chars = cw ? colw / cw - 1 : 40;
  char line[256], name[96];
  for (int c = 0; c < 2; c++) {
    snprintf(line, sizeof line, "%-*s %-4s %5s %4s %5s", chars - 23, "module", "ver", "tasks",
             "old", "ms");
    font_draw(g->video.f_mono, g->video.r, line, r.x + 12 + c * colw, r.y + 34,
              (SDL_Color){120, 130, 150, 255});
  }
  int ey = r.y + 34 + lh * (rows + 1);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    lua_getfield(L, -1, "name");
    lua_getfield(L, -2, "version");
    lua_getfield(L, -3, "tasks");
    lua_getfield(L, -4, "old");
    lua_getfield(L, -5, "avg_ms");
    lua_getfield(L, -6, "error");
    const char *err = lua_tostring(L, -1);
    fit_left(name, sizeof name, lua_tostring(L, -6) ? lua_tostring(L, -6) : "?", chars - 23);
    snprintf(line, sizeof line, "%-*s v%-3d %5d %4d %5.1f", chars - 23, name,
             (int)lua_tointeger(L, -5), (int)lua_tointeger(L, -4), (int)lua_tointeger(L, -3),
             lua_tonumber(L, -2));
    int col = (i - 1) / rows, row = (i - 1) % rows;
    SDL_Color c = err ? (SDL_Color){255, 150, 140, 255} : (SDL_Color){220, 226, 240, 255};
    font_draw(g->video.f_mono, g->video.r, line, r.x + 12 + col * colw, r.y + 34 + lh * (row + 1),
              c);
    if (err) {
      char m[256];
      fit_right(m, sizeof m, err, cw ? (w - 24) / cw : 80);
      font_draw(g->video.f_mono, g->video.r, m, r.x + 12, ey, c);
      ey += lh;
    }
    lua_pop(L, 7);
  }
  lua_settop(L, top);
  return h;
}

/* A task's fields as the inspector shows them: who, task, status,
   waiting on, suspended at ("scripts/ai/patrol.lua:12" reads
   "ai/patrol.lua:12"). The task's table is on top of L. */
typedef struct task_row {
  char v[5][160];
  double ms; /* its script time a frame, on average */
} task_row;

static void read_row(lua_State *L, task_row *t) {
  static const char *const f[5] = {"who", "name", "status", "waiting", "where"};
  for (int k = 0; k < 5; k++) {
    lua_getfield(L, -1, f[k]);
    const char *s = lua_tostring(L, -1);
    if (s && (k == 1 || k == 4) && strstr(s, "scripts/")) s = strstr(s, "scripts/") + 8;
    if (s && k <= 1 && strchr(s, '/') && strstr(s, ".lua")) /* a file: its name is enough */
      s = strrchr(s, '/') + 1;
    snprintf(t->v[k], sizeof t->v[k], "%s", s ? s : "-");
    lua_pop(L, 1);
  }
  lua_getfield(L, -1, "avg_ms");
  t->ms = lua_tonumber(L, -1);
  lua_pop(L, 1);
}

/* Pushes the rows of the live tasks from+1 .. from+count, the costliest
   first (their moving average; weft.tasks makes only those rows) and
   returns its index, *n the number of live tasks; 0 on an error. */
static int costliest(game *g, int from, int count, int *n) {
  lua_State *L = g->L;
  push_api(g);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "tasks");
  lua_createtable(L, 0, 3);
  lua_pushliteral(L, "avg_ms");
  lua_setfield(L, -2, "by");
  lua_pushinteger(L, from + 1);
  lua_setfield(L, -2, "first");
  lua_pushinteger(L, count);
  lua_setfield(L, -2, "count");
  if (lua_pcall(L, 1, 2, 0) != LUA_OK) return 0; /* the caller resets the stack */
  *n = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return lua_gettop(L);
}

/* F1 inside area: one line per live task from weft.tasks(), who first
   (the entity, or the task's own name), then the modules. The who and
   task columns are as wide as their longest entry (up to a limit); the
   list scrolls with PgUp/PgDn when it does not fit. */
/* F1 with G: the places tasks were spawned at, with how many of their
   tasks live, the most first (weft.sites()); a place whose tasks keep
   growing is marked. Lines go to task_lines as the task rows do. */
static void draw_sites(game *g, SDL_Rect area, int rows) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  push_api(g);
  lua_getfield(L, -1, "weft");
  lua_getfield(L, -1, "sites");
  lua_pushinteger(L, rows);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_istable(L, -1)) return (void)lua_settop(L, top);
  int list = lua_gettop(L), shown = (int)luaL_len(L, list), lh = font_height(g->video.f_mono);
  SDL_Rect r = {area.x, area.y, area.w, 44 + lh * (shown + 1)};
  render_note(g, "tasks", r);
  box(g, r, (SDL_Color){8, 12, 22, 228}, (SDL_Color){90, 150, 220, 255});
  char head[128];
  snprintf(head, sizeof head, "Live tasks by spawn site (weft.sites)");
  font_draw(g->video.f_bold, g->video.r, head, r.x + 12, r.y + 6, (SDL_Color){150, 200, 255, 255});
  const char *keys = "G tasks   F1 close";
  font_draw(g->video.f_small, g->video.r, keys, r.x + r.w - 12 - font_width(g->video.f_small, keys),
            r.y + 9, DIM);
  int cw = font_width(g->video.f_mono, "M");
  int chars = cw ? (r.w - 24) / cw : 80, cwhere = (chars - 6 - 10) / 2;
  char line[512], where[160], by[160];
  int y = r.y + 36;
  snprintf(line, sizeof line, "%5s  %-*s %s", "live", cwhere, "spawned at", "spawned by");
  font_draw(g->video.f_mono, g->video.r, line, r.x + 12, y, (SDL_Color){120, 130, 150, 255});
  y += lh;
  g->ov.ntask_lines = 0;
  for (int i = 1; i <= shown; i++, y += lh) {
    lua_rawgeti(L, list, i);
    lua_getfield(L, -1, "spawned");
    lua_getfield(L, -2, "by");
    lua_getfield(L, -3, "live");
    lua_getfield(L, -4, "growing");
    const char *s = lua_tostring(L, -4), *b = lua_tostring(L, -3);
    if (s && strstr(s, "scripts/")) s = strstr(s, "scripts/") + 8;
    if (b && strstr(b, "scripts/")) b = strstr(b, "scripts/") + 8;
    fit_left(where, sizeof where, s ? s : "?", cwhere);
    fit_left(by, sizeof by, b ? b : "-", chars - 6 - cwhere - 12);
    int growing = lua_toboolean(L, -1);
    snprintf(line, sizeof line, "%5d  %-*s %s%s", (int)lua_tointeger(L, -2), cwhere, where, by,
             growing ? "  growing" : "");
    SDL_Color c = growing ? (SDL_Color){250, 200, 110, 255} : (SDL_Color){220, 226, 240, 255};
    font_draw(g->video.f_mono, g->video.r, line, r.x + 12, y, c);
    if (g->ov.ntask_lines < TASK_LINES)
      snprintf(g->ov.task_lines[g->ov.ntask_lines++], sizeof g->ov.task_lines[0], "%.199s", line);
    lua_pop(L, 5);
  }
  lua_settop(L, top);
}

static void draw_tasks(game *g, SDL_Rect area) {
  lua_State *L = g->L;
  int top = lua_gettop(L);
  int mh = draw_modules(g, 0, 0, area.w, area.h - 120, 1);
  int lh = font_height(g->video.f_mono);
  int rows = (area.h - (mh ? mh + GAP : 0) - 44) / lh - 1; /* task lines below the header */
  if (rows < 2) rows = 2;
  if (g->modes.by_site) {
    draw_sites(g, area, rows);
    if (mh) { /* the modules below the list, as with the tasks */
      SDL_Rect t = {0, 0, 0, 0};
      for (int i = 0; i < g->ov.ndrawn; i++)
        if (strcmp(g->ov.drawn[i].name, "tasks") == 0) t = g->ov.drawn[i].r;
      draw_modules(g, area.x, t.y + t.h + GAP, area.w, mh, 0);
    }
    return;
  }
  int from = g->modes.tasks_from, n = 0, list = 0;
  for (int pass = 0; pass < 2; pass++) { /* again when the list got shorter than the page */
    lua_settop(L, top);
    if (!(list = costliest(g, from, rows, &n))) return (void)lua_settop(L, top);
    if (from <= n - rows || from == 0) break;
    from = n - rows > 0 ? n - rows : 0;
  }
  g->modes.tasks_from = from;
  int shown = (int)luaL_len(L, list);
  SDL_Rect r = {area.x, area.y, area.w, 44 + lh * (shown + 1)};
  render_note(g, "tasks", r);
  box(g, r, (SDL_Color){8, 12, 22, 228}, (SDL_Color){90, 150, 220, 255});
  char head[128];
  if (shown < n)
    snprintf(head, sizeof head, "Task inspector: %d-%d of %d tasks", from + 1, from + shown, n);
  else
    snprintf(head, sizeof head, "Task inspector: %d live task%s (weft.tasks)", n,
             n == 1 ? "" : "s");
  font_draw(g->video.f_bold, g->video.r, head, r.x + 12, r.y + 6, (SDL_Color){150, 200, 255, 255});
  const char *keys = shown < n ? "PgUp/PgDn scroll   G by site   F1 close" : "G by site   F1 close";
  font_draw(g->video.f_small, g->video.r, keys, r.x + r.w - 12 - font_width(g->video.f_small, keys),
            r.y + 9, DIM);
  /* columns: who and task as wide as their longest entry, status, then
     waiting on and suspended at share the rest */
  enum { MAX_ROWS = 64 };
  task_row rowv[MAX_ROWS];
  if (shown > MAX_ROWS) shown = MAX_ROWS;
  int cwho = 3, ctask = 4;
  for (int i = 0; i < shown; i++) {
    lua_rawgeti(L, list, i + 1);
    read_row(L, &rowv[i]);
    lua_settop(L, list);
    int a = (int)strlen(rowv[i].v[0]), b = (int)strlen(rowv[i].v[1]);
    if (a > cwho) cwho = a;
    if (b > ctask) ctask = b;
  }
  int cw = font_width(g->video.f_mono, "M");
  int chars = cw ? (r.w - 24) / cw : 80, cst = 9, cms = 6; /* ms: a frame's, on average */
  int names = chars - cst - cms - 5 - 13 - 14; /* waiting on and suspended at keep 13 and 14 */
  if (cwho > names / 2 && cwho + ctask > names) cwho = names / 2 > 8 ? names / 2 : 8;
  if (ctask > names - cwho) ctask = names - cwho > 8 ? names - cwho : 8;
  int rest = chars - cwho - ctask - cst - cms - 5;
  int cwait = rest / 2, cwhere = rest - cwait;
  int y = r.y + 36;
  char line[512];
  snprintf(line, sizeof line, "%-*s %-*s %*s %-*s %-*s %s", cwho, "who", ctask, "task", cms, "ms",
           cst - 1, "status", cwait, "waiting on", "suspended at");
  font_draw(g->video.f_mono, g->video.r, line, r.x + 12, y, (SDL_Color){120, 130, 150, 255});
  y += lh;
  g->ov.ntask_lines = 0;
  for (int i = 0; i < shown; i++, y += lh) {
    const task_row *t = &rowv[i];
    char who[64], task[64], wait_on[96], at[128];
    fit_right(who, sizeof who, t->v[0], cwho);
    fit_left(task, sizeof task, t->v[1], ctask);
    fit_right(wait_on, sizeof wait_on, t->v[3], cwait);
    const char *where = t->v[4]; /* too long: the file's name and line are enough */
    if ((int)strlen(where) > cwhere && strrchr(where, '/')) where = strrchr(where, '/') + 1;
    fit_left(at, sizeof at, where, cwhere);
    char ms[16]; /* a brain at rest takes hundredths of a millisecond: shown, not blank */
    snprintf(ms, sizeof ms,
             t->ms >= 0.95     ? "%.1f"
             : t->ms >= 0.0005 ? "%.3f"
             : t->ms > 0       ? "<.001"
                               : "",
             t->ms);
    snprintf(line, sizeof line, "%-*s %-*s %*s %-*.*s %-*s %s", cwho, who, ctask, task, cms, ms,
             cst - 1, cst - 1, t->v[2], cwait, wait_on, at);
    SDL_Color c = strcmp(t->v[2], "running") == 0 ? (SDL_Color){140, 255, 160, 255}
                                                  : (SDL_Color){220, 226, 240, 255};
    font_draw(g->video.f_mono, g->video.r, line, r.x + 12, y, c);
    if (g->ov.ntask_lines < TASK_LINES)
      snprintf(g->ov.task_lines[g->ov.ntask_lines++], sizeof g->ov.task_lines[0], "%.199s", line);
  }
  lua_settop(L, top);
  if (mh) draw_modules(g, r.x, r.y + r.h + GAP, r.w, mh, 0);
}

/* F2: the last GRAPH_N frames: the whole frame (update, scripts, drawing,
   a save into the rewind ring once a second) and the script part
   (weft_step), on a scale that fits the worst frame; under them, what
   the rewind ring holds and what its saves cost. */
static void draw_graph(game *g, int x, int y) {
  const int W = GRAPH_N * 2, H = 100;
  SDL_Rect r = {x, y, W + 16, GRAPH_H - 8};
  render_note(g, "graph", r);
  box(g, r, (SDL_Color){8, 12, 22, 225}, (SDL_Color){90, 150, 220, 255});
  float sum_f = 0, sum_s = 0, max_f = 0, max_s = 0;
  for (int i = 0; i < GRAPH_N; i++) {
    sum_f += g->ov.frame_ms[i], sum_s += g->ov.script_ms[i];
    if (g->ov.frame_ms[i] > max_f) max_f = g->ov.frame_ms[i];
    if (g->ov.script_ms[i] > max_s) max_s = g->ov.script_ms[i];
  }
  float top = 2.0f; /* ms at the top of the graph: 2, 4, 8, ... */
  while (top < max_f && top < 64) top *= 2;
  float scale = (float)H / top;
  int bx = r.x + 8, by = r.y + 60 + H;
  for (int i = 0; i < GRAPH_N; i++) {
    int k = (g->ov.graph_i + i) % GRAPH_N;
    float f = g->ov.frame_ms[k], sc = g->ov.script_ms[k];
    int hf = (int)(f * scale + 0.5f), hs = (int)(sc * scale + 0.5f);
    if (hf > H) hf = H;
    if (hs > H) hs = H;
    if (hs < 1 && sc > 0) hs = 1;
    SDL_SetRenderDrawColor(g->video.r, 70, 96, 150, 255);
    SDL_Rect a = {bx + i * 2, by - hf, 2, hf};
    SDL_RenderFillRect(g->video.r, &a);
    SDL_SetRenderDrawColor(g->video.r, 110, 230, 130, 255);
    SDL_Rect b = {bx + i * 2, by - hs, 2, hs};
    SDL_RenderFillRect(g->video.r, &b);
    int base = by; /* the costliest tasks' shares, stacked from the bottom of the script bar */
    for (int j = 0; j < 3 && g->ov.top_hue[k][j]; j++) {
      int ht = (int)(g->ov.top_ms[k][j] * scale + 0.5f);
      if (ht > base - (by - hs)) ht = base - (by - hs);
      if (ht <= 0) continue;
      SDL_Color c = hue_color(g->ov.top_hue[k][j]);
      SDL_SetRenderDrawColor(g->video.r, c.r, c.g, c.b, 255);
      SDL_Rect t = {bx + i * 2, base - ht, 2, ht};
      SDL_RenderFillRect(g->video.r, &t);
      base -= ht;
    }
  }
  int last = (g->ov.graph_i + GRAPH_N - 1) % GRAPH_N, lx = r.x + 10;
  for (int j = 0; j < 3 && g->ov.top_hue[last][j]; j++) { /* the legend: the last frame's */
    char s[96];
    snprintf(s, sizeof s, "%s %.1f", g->ov.top_name[j], g->ov.top_ms[last][j]);
    font_draw(g->video.f_small, g->video.r, s, lx, r.y + 46, hue_color(g->ov.top_hue[last][j]));
    lx += font_width(g->video.f_small, s) + 12;
  }
  if (16.7f < top) {
    SDL_SetRenderDrawColor(g->video.r, 230, 190, 90, 200);
    SDL_RenderDrawLine(g->video.r, bx, by - (int)(16.7f * scale), bx + W,
                       by - (int)(16.7f * scale));
  }
  weft_stats st = WEFT_STATS_INIT;
  weft_get_stats(g->W, &st);
  char s[160];
  snprintf(s, sizeof s, "frame %.2f ms    script %.3f ms  (max %.2f)", sum_f / GRAPH_N,
           sum_s / GRAPH_N, max_s);
  font_draw(g->video.f_small, g->video.r, s, r.x + 10, r.y + 8, WHITE);
  snprintf(s, sizeof s, "%d tasks    Lua %zu KB    %u errors    scale %g ms", g->ov.live_tasks,
           st.lua_bytes / 1024, st.errors, top);
  font_draw(g->video.f_small, g->video.r, s, r.x + 10, r.y + 30, DIM);
  if (g->sv.ring_why[0] && !g->sv.nring)
    snprintf(s, sizeof s, "rewind: no save yet (%.100s)", g->sv.ring_why);
  else
    snprintf(s, sizeof s, "rewind: %d saves, %.1f MB; a save %.1f ms (max %.1f) a second",
             g->sv.nring, (double)g->sv.ring_bytes / (1024.0 * 1024.0), g->sv.ring_ms,
             g->sv.ring_ms_max);
  font_draw(g->video.f_small, g->video.r, s, r.x + 10, by + 4, DIM);
  SDL_SetRenderDrawColor(g->video.r, 70, 96, 150, 255);
}

/* While the boot script is dead: what stopped it, and the two ways back
   (a save that fixes it resets by itself; Ctrl-R resets now), in a box
   above the key line that the other overlays keep clear of. */
static void draw_boot_offer(game *g) {
  if (!g->boot.dead) return;
  SDL_Rect r = {SCREEN_W / 2 - 470, SCREEN_H - 34 - BOOT_OFFER_H, 940, BOOT_OFFER_H};
  render_note(g, "boot", r);
  SDL_Color edge = {240, 120, 90, 255};
  box(g, r, (SDL_Color){30, 10, 12, 240}, edge);
  font_draw(g->video.f_bold, g->video.r, "The game stopped: its boot script failed", r.x + 14,
            r.y + 8, (SDL_Color){255, 210, 190, 255});
  char why[MESSAGE_LEN];
  snprintf(why, sizeof why, "%s", g->boot.why);
  char *nl = strchr(why, '\n');
  if (nl) *nl = 0;                    /* the message; its trace is in the panel */
  char *in = strstr(why, "scripts/"); /* scripts/lib/x.lua:12: the root's path is no help */
  if (in && in > why && in[-1] == '/') {
    char *start = in;
    while (start > why && start[-1] != ' ') start--;
    memmove(start, in, strlen(in) + 1);
  }
  int cw = font_width(g->video.f_mono, "M");
  char shown[MESSAGE_LEN];
  fit_right(shown, sizeof shown, why, cw ? (r.w - 28) / cw : 100);
  font_draw(g->video.f_mono, g->video.r, shown, r.x + 14, r.y + 42,
            (SDL_Color){255, 226, 200, 255});
  const char *hint = "Save the fix: the game resets by itself.     Ctrl-R: reset now.";
  font_draw(g->video.f_ui, g->video.r, hint, r.x + 14, r.y + 72, WHITE);
}

void overlay_draw(game *g) {
  draw_boot_offer(g);
  int bottom = render_free_bottom(g), h = bottom - TOP;
  int errors = g->ov.nerrors > 0;
  if (g->modes.show_tasks) {
    SDL_Rect right = {RIGHT_X, TOP, RIGHT_W, h};
    draw_tasks(g, right);
    int eh = h - (g->modes.show_graph ? GRAPH_H + GAP : 0);
    if (g->modes.show_graph) draw_graph(g, LEFT_X, errors && eh >= 80 ? bottom - GRAPH_H : TOP);
    if (errors) draw_errors(g, (SDL_Rect){LEFT_X, TOP, LEFT_W, eh});
  } else if (g->modes.show_graph) {
    draw_graph(g, RIGHT_X + RIGHT_W - GRAPH_W, TOP);
    if (errors)
      draw_errors(g, (SDL_Rect){LEFT_X, TOP, RIGHT_X + RIGHT_W - GRAPH_W - GAP - LEFT_X, h});
  } else if (errors) {
    draw_errors(g, (SDL_Rect){SCREEN_W / 2 - 470, TOP, 940, h});
  }
}
