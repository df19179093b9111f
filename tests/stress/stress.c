/* weft-stress: the slow abuse cases, each in a fresh process on a fresh
   state with the default (watched) budgets, stepped at 1/60 s: how long
   the file's first pass and the worst frame took, and what became of the
   case (its reports). A case that hangs (60 s) or crashes fails the run;
   a frame over the target is printed OVER, and counted.
   Usage: weft-stress [--target MS] [--only NAME,...]; STRESS_FRAMES=1
   prints every frame's time on stderr. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>

#define DT (1.0 / 60)
#define HANG_S 60

typedef struct scase {
  const char *name;
  int frames;      /* frames stepped after the first pass */
  const char *src; /* the case, run as a file */
} scase;

/* The repros and the hostile cases that hold a frame longest. */
static const scase cases[] = {
    {"spawn bomb (2 x 1e6 spawns of a sleeper)", 10,
     "for i = 1, 2 do spawn(function() for j = 1, 1e6 do spawn(function() wait(1e9) end) end end) "
     "end\n"
     "while true do wait() end\n"},
    {"8 runaways looping on s:fire()", 30,
     "for i = 1, 8 do spawn(function() local s = signal() while true do s:fire() end end) end\n"
     "while true do wait() end\n"},
    {"8 runaways looping on connect/disconnect", 30,
     "for i = 1, 8 do spawn(function() local s = signal()\n"
     "  while true do s:connect(print):disconnect() end end) end\n"
     "while true do wait() end\n"},
    {"40,000 connects in one resume", 5,
     "local s = signal() for i = 1, 40000 do s:connect(print) end\nwhile true do wait() end\n"},
    {"1e6 spawns in one task", 30,
     "spawn(function() for i = 1, 1e6 do spawn(function() end) end end)\nwhile true do wait() "
     "end\n"},
    {"3e5 waiters on one future, then resolved", 60,
     "local f = future()\nspawn(function() for i = 1, 3e5 do spawn(wait, f) if i % 2e4 == 0 then "
     "wait() end end\n"
     "  f:resolve(1) end)\nwhile true do wait() end\n"},
    {"1e7-entry table", 60,
     "spawn(function() local t = {} for i = 1, 1e7 do t[i] = i end end)\nwhile true do wait() "
     "end\n"},
    {"string.rep of 128 MB in 8 tasks", 30,
     "for i = 1, 8 do spawn(function() wait() local s = string.rep('x', 128 << 20) wait() end) "
     "end\n"
     "while true do wait() end\n"},
    {"deep recursion", 10,
     "spawn(function() local function f(n) return f(n + 1) + 1 end f(1) end)\nwhile true do wait() "
     "end\n"},
    {"memory hog, then recovery", 180,
     "spawn(function() local t = {} for i = 1, 1e8 do t[i] = ('x'):rep(4000) .. i\n"
     "  if i % 1e3 == 0 then wait() end end end)\n"
     "while true do wait() end\n"},
    {"string concatenation loop (quadratic)", 30,
     "spawn(function() local s = '' for i = 1, 1e6 do s = s .. 'x' end end)\nwhile true do wait() "
     "end\n"},
    {"load of 8 MB of code", 5,
     "spawn(function() local f = load(string.rep('a = 1\\n', 14e5)) end)\nwhile true do wait() "
     "end\n"},
    {"load of 40 MB of code", 5,
     "spawn(function() local s = string.rep('a = 1\\n', 7e6) wait() local f = load(s) end)\n"
     "while true do wait() end\n"},
    {"pattern bomb", 10,
     "spawn(function() for i = 1, 100 do string.find(string.rep('a', 3e4), '.-.-.-.-.-.-b') end "
     "end)\n"
     "while true do wait() end\n"},
    {"table.concat of 1e6 strings in a loop", 30,
     "spawn(function() local t = {} for i = 1, 1e6 do t[i] = 'ab' end\n"
     "  while true do table.concat(t) end end)\nwhile true do wait() end\n"},
    {"weft.tasks() with 1e5 tasks, in a loop", 30,
     "for i = 1, 1e5 do spawn(wait, math.huge) end\n"
     "spawn(function() while true do weft.tasks() end end)\nwhile true do wait() end\n"},
    {"channel of 1e6 values, sent and drained", 60,
     "local ch = channel()\nspawn(function() for i = 1, 1e6 do ch:send(i) end end)\n"
     "spawn(function() while true do ch:recv() end end)\nwhile true do wait() end\n"},
    {"table.sort of 1e6 with a Lua comparator", 30,
     "spawn(function() local t = {} for i = 1, 1e6 do t[i] = (i * 7919) % 1e6 end\n  table.sort(t, "
     "function(a, b) return a < b end) end)\n"
     "while true do wait() end\n"},
    {"table.sort of 2e6 numbers", 30,
     "spawn(function() local t = {} for i = 1, 2e6 do t[i] = (i * 7919) % 2e6 end\n  wait() "
     "table.sort(t) end)\n"
     "while true do wait() end\n"},
    {"gsub over 16 MB, a function per match", 30,
     "spawn(function() local s = string.rep('ab', 8 << 20) wait()\n  s:gsub('a', function(c) "
     "return 'x' end) end)\n"
     "while true do wait() end\n"},
    {"gsub over 16 MB, a string per match", 30,
     "spawn(function() local s = string.rep('ab', 8 << 20) wait() s:gsub('a', 'xyz') end)\n"
     "while true do wait() end\n"},
    {"gmatch over 16 MB", 30,
     "spawn(function() local s = string.rep('ab ', 6 << 20) wait()\n  for w in s:gmatch('%a+') do "
     "end end)\n"
     "while true do wait() end\n"},
    {"string.format of a 64 MB string in a loop", 30,
     "spawn(function() local s = string.rep('x', 64 << 20) wait()\n  while true do local _ = "
     "string.format('%s%s', s, s) end end)\n"
     "while true do wait() end\n"},
    {"string.rep with a separator, 64 MB", 30,
     "spawn(function() while true do local s = string.rep('x', 8 << 20, ',') end end)\n"
     "while true do wait() end\n"},
    {"table.concat with a 1 MB separator", 30,
     "spawn(function() local t = {} for i = 1, 100 do t[i] = 'a' end local sep = ('-'):rep(1 << "
     "20)\n  while true do table.concat(t, sep) end end)\n"
     "while true do wait() end\n"},
    {"table.unpack of 1e6", 10,
     "spawn(function() local t = {} for i = 1, 1e6 do t[i] = i end\n  while true do "
     "pcall(table.unpack, t) end end)\n"
     "while true do wait() end\n"},
    {"string.byte of 16 MB", 10,
     "spawn(function() local s = string.rep('x', 16 << 20) wait()\n  while true do "
     "pcall(string.byte, s, 1, -1) end end)\n"
     "while true do wait() end\n"},
    {"utf8.len over 64 MB in a loop", 30,
     "spawn(function() local s = string.rep('\\u{3b1}', 32 << 20) wait()\n  while true do "
     "utf8.len(s) end end)\n"
     "while true do wait() end\n"},
    {"string.pack of 1e6 ints in a loop", 30,
     "spawn(function() local f = string.rep('i4', 1e6) local t = {} for i = 1, 1e6 do t[i] = i "
     "end\n  while true do pcall(string.pack, f, table.unpack(t, 1, 1e5)) end end)\n"
     "while true do wait() end\n"},
    {"deep coroutine nesting", 10,
     "spawn(function() local function f() return coroutine.wrap(f)() end f() end)\n"
     "while true do wait() end\n"},
    {"coroutines made in a loop", 30,
     "spawn(function() while true do coroutine.wrap(function() coroutine.yield(1) end)() end end)\n"
     "while true do wait() end\n"},
    {"1e6 objects with __gc", 60,
     "spawn(function() local mt = {__gc = function() end}\n  for i = 1, 1e6 do setmetatable({}, "
     "mt) if i % 1e4 == 0 then wait() end end end)\n"
     "while true do wait() end\n"},
    {"a __gc that loops forever", 30,
     "spawn(function() setmetatable({}, {__gc = function() while true do end end}) "
     "end)\ncollectgarbage()\n"
     "while true do wait() end\n"},
    {"a __close that loops forever", 30,
     "spawn(function() local x <close> = setmetatable({}, {__close = function() while true do end "
     "end}) end)\n"
     "while true do wait() end\n"},
    {"an xpcall handler that loops forever", 30,
     "spawn(function() xpcall(error, function() while true do end end, 'x') end)\n"
     "while true do wait() end\n"},
    {"a weft.on_error handler that loops forever", 30,
     "weft.on_error(function() while true do end end)\nspawn(function() error('boom') end)\n"
     "while true do wait() end\n"},
    {"collectgarbage() in a loop over a 200 MB heap", 30,
     "spawn(function() local t = {} for i = 1, 2e6 do t[i] = {i} if i % 1e5 == 0 then wait() end "
     "end\n  while true do collectgarbage() end end)\n"
     "while true do wait() end\n"},
    {"1e5 groups made and cancelled", 30,
     "spawn(function() for i = 1, 1e5 do local g = group{} g:spawn(wait, 1) g:cancel() end end)\n"
     "while true do wait() end\n"},
    {"1e5 sleepers of different lengths", 60,
     "for i = 1, 1e5 do spawn(function() while true do wait((i % 97) / 60) end end) end\n"
     "while true do wait() end\n"},
    {"all{} of 1e5 futures", 30,
     "spawn(function() local fs = {} for i = 1, 1e5 do fs[i] = future() end\n  spawn(function() "
     "wait() for i = 1, 1e5 do fs[i]:resolve(i) end end) wait(all(fs)) end)\n"
     "while true do wait() end\n"},
    {"first{} of 1e5 sleeps", 30,
     "spawn(function() local l = {} for i = 1, 1e5 do l[i] = i end wait(first(l)) end)\n"
     "while true do wait() end\n"},
    {"1e5 senders blocked on a channel", 30,
     "local ch = channel(1)\nfor i = 1, 1e5 do spawn(function() ch:send(i) end) "
     "end\nspawn(function() while true do ch:recv() end end)\n"
     "while true do wait() end\n"},
    {"1e5 waiters on a signal fired every frame", 60,
     "local s = signal()\nfor i = 1, 1e5 do spawn(function() while true do wait(s) end end) "
     "end\nspawn(function() while true do s:fire() wait() end end)\n"
     "while true do wait() end\n"},
    {"an exponential spawn tree", 30,
     "local function grow(d) if d > 0 then spawn(grow, d - 1) spawn(grow, d - 1) end wait(1e9) "
     "end\nspawn(grow, 20)\n"
     "while true do wait() end\n"},
    {"code nested 1e5 parentheses deep", 5,
     "spawn(function() print(load('return ' .. ('('):rep(1e5) .. '1' .. (')'):rep(1e5))) end)\n"
     "while true do wait() end\n"},
    {"a 1e6-field table constructor", 5,
     "spawn(function() local src = {'return {'} for i = 1, 1e6 do src[#src + 1] = i .. ',' end\n  "
     "src[#src + 1] = '}' wait() local f = load(table.concat(src)) wait() f() end)\n"
     "while true do wait() end\n"},
    {"tostring of 1e6 values in a loop", 30,
     "spawn(function() while true do for i = 1, 1e6 do tostring(i) end end end)\n"
     "while true do wait() end\n"},
    {"load from a reader that never ends", 10,
     "spawn(function() local piece = ('x = 1\\n'):rep(1000)\n  print(load(function() return piece "
     "end)) end)\n"
     "while true do wait() end\n"},
    {"errors with 64 MB messages", 30,
     "for i = 1, 4 do spawn(function() wait() error(string.rep('x', 64 << 20)) end) end\n"
     "while true do wait() end\n"},
    {"an error object whose __tostring loops", 10,
     "spawn(function() error(setmetatable({}, {__tostring = function() while true do end end})) "
     "end)\n"
     "while true do wait() end\n"},
    {"a __tostring that loops, printed", 10,
     "spawn(function() print(setmetatable({}, {__tostring = function() while true do end end})) "
     "end)\n"
     "while true do wait() end\n"},
    {"a __index chain that loops in C", 10,
     "spawn(function() local t = setmetatable({}, {}) getmetatable(t).__index = function(_, k) "
     "return t[k] end\n  while true do pcall(function() return t.x end) end end)\n"
     "while true do wait() end\n"},
    {"a __pairs that never ends", 10,
     "spawn(function() local t = setmetatable({}, {__pairs = function() return function() return "
     "1, 1 end end})\n  for k in pairs(t) do end end)\n"
     "while true do wait() end\n"},
    {"table.insert at the front of 2e5", 30,
     "spawn(function() local t = {} for i = 1, 2e5 do table.insert(t, 1, i) end end)\n"
     "while true do wait() end\n"},
    {"table.remove from the front of 2e5", 30,
     "spawn(function() local t = {} for i = 1, 2e5 do t[i] = i end wait() for i = 1, 2e5 do "
     "table.remove(t, 1) end end)\n"
     "while true do wait() end\n"},
    {"table.move of 1e7", 10,
     "spawn(function() local t = {} for i = 1, 1e6 do t[i] = i end wait() while true do "
     "table.move(t, 1, 1e6, 2) end end)\n"
     "while true do wait() end\n"},
    {"next() over a 1e6 table from the start each time", 10,
     "spawn(function() local t = {} for i = 1, 1e6 do t['k' .. i] = i end wait()\n  while true do "
     "local k = next(t) t[k] = nil end end)\n"
     "while true do wait() end\n"},
    {"os.date in a loop", 10,
     "spawn(function() while true do os.date('%c') end end)\n"
     "while true do wait() end\n"},
    {"weft.modules() and reload_errors() in a loop", 10,
     "spawn(function() while true do weft.modules() weft.reload_errors() end end)\n"
     "while true do wait() end\n"},
    {"1e5 tasks that fail at once", 10,
     "spawn(function() for i = 1, 1e5 do spawn(error, 'boom') end end)\n"
     "while true do wait() end\n"},
    {"1e4 listeners failing at every fire", 30,
     "local s = signal()\nfor i = 1, 1e4 do s:connect(function() error('listener ' .. i) end) "
     "end\nspawn(function() while true do s:fire() wait() end end)\n"
     "while true do wait() end\n"},
    {"a finally that loops forever", 10,
     "local t = spawn(function() finally(function() while true do end end) wait(1e9) "
     "end)\nspawn(function() wait() t:cancel() end)\n"
     "while true do wait() end\n"},
    {"1e5 tasks with a finally, their group cancelled", 30,
     "local g = group{}\nfor i = 1, 1e5 do g:spawn(function() finally(function() end) wait(1e9) "
     "end) end\nspawn(function() wait() g:cancel() end)\n"
     "while true do wait() end\n"},
    {"globals behind an __index that loops", 10,
     "setmetatable(_ENV, {__index = function() while true do end end})\nspawn(function() return "
     "undefined_name end)\n"
     "while true do wait() end\n"},
    {"debug.traceback of a 64 MB message", 10,
     "spawn(function() local m = string.rep('x', 64 << 20) wait() while true do debug.traceback(m) "
     "end end)\n"
     "while true do wait() end\n"},
    {"1e5 missing modules required", 10,
     "spawn(function() for i = 1, 1e5 do pcall(require, 'no.such.m' .. i) end end)\n"
     "while true do wait() end\n"},
    {"1e4 weft.start of a missing module", 10,
     "spawn(function() for i = 1, 1e4 do pcall(weft.start, 'no.such.m' .. i) end end)\n"
     "while true do wait() end\n"},
    {"1e5 jobs queued", 30,
     "spawn(function() for i = 1, 1e5 do job('read_file', 'none' .. i) end end)\n"
     "while true do wait() end\n"},
    {"weft.on_error that spawns a task per report", 30,
     "weft.on_error(function() spawn(function() error('again') end) end)\nspawn(function() "
     "error('first') end)\n"
     "while true do wait() end\n"},
    {"a finally that errors, in 1e4 tasks cancelled", 30,
     "local g = group{}\nfor i = 1, 1e4 do g:spawn(function() finally(function() error('cleanup ' "
     ".. i) end) wait(1e9) end) end\nspawn(function() wait() g:cancel() end)\n"
     "while true do wait() end\n"},
    {"signals fired from __gc", 30,
     "local s = signal()\nspawn(function() while true do wait(s) end end)\nspawn(function() while "
     "true do for i = 1, 1e4 do setmetatable({}, {__gc = function() s:fire() end}) end wait() end "
     "end)\n"
     "while true do wait() end\n"},
    {"a future resolved in a loop with 1e4 on_done", 30,
     "spawn(function() local f = future() for i = 1, 1e4 do f:on_done(function() error('cb') end) "
     "end wait() f:resolve(1) end)\n"
     "while true do wait() end\n"},
    {"1e5 channel sends with no receiver, unbounded", 30,
     "local ch = channel()\nspawn(function() for i = 1, 1e7 do ch:send(i) end end)\n"
     "while true do wait() end\n"},
    {"deep group nesting, then cancel", 10,
     "spawn(function() local g = group{} local root = g for i = 1, 1e4 do g = group{parent = g} "
     "end g:spawn(wait, 1e9) wait() root:cancel() end)\n"
     "while true do wait() end\n"},
    {"wait on a 1e5-element list", 30,
     "spawn(function() local l = {} for i = 1, 1e5 do l[i] = 0.5 end wait(l) end)\n"
     "while true do wait() end\n"},
    {"timeout of a nested all of 1e4", 30,
     "spawn(function() local l = {} for i = 1, 1e4 do l[i] = {0.1, 0.2} end wait(timeout(l, 1)) "
     "end)\n"
     "while true do wait() end\n"},
    {"1e6 sleeps with wait(0) in a loop", 30,
     "spawn(function() while true do wait(0) end end)\nfor i = 1, 1e4 do spawn(function() while "
     "true do wait(0) end end) end\n"
     "while true do wait() end\n"},
    {"coroutine.wrap generators across waits, 1e4 tasks", 30,
     "for i = 1, 1e4 do spawn(function() local g = coroutine.wrap(function() while true do "
     "coroutine.yield(1) end end) while true do g() wait() end end) end\n"
     "while true do wait() end\n"},
    {"tostring of a table with __name 1 MB", 10,
     "spawn(function() local mt = {__name = ('n'):rep(1 << 20)} local t = setmetatable({}, mt) "
     "while true do tostring(t) end end)\n"
     "while true do wait() end\n"},
    {"error with a table error, __tostring returning 64 MB", 10,
     "spawn(function() error(setmetatable({}, {__tostring = function() return ('x'):rep(64 << 20) "
     "end})) end)\n"
     "while true do wait() end\n"},
    {"a listener that fires its own signal", 10,
     "local s = signal()\ns:connect(function() s:fire() end)\nspawn(function() while true do "
     "s:fire() wait() end end)\n"
     "while true do wait() end\n"},
    {"os.date of a 4 MB format in a loop", 10,
     "spawn(function() local f = ('%c'):rep(2 << 20) while true do os.date(f) end end)\n"
     "while true do wait() end\n"},
    {"utf8.char of 1e5 code points in a loop", 10,
     "spawn(function() local t = {} for i = 1, 1e5 do t[i] = 0x3b1 end while true do "
     "utf8.char(table.unpack(t)) end end)\n"
     "while true do wait() end\n"},
    {"two tasks waiting on each other's futures in a ring of 1e4", 10,
     "local fs = {} for i = 1, 1e4 do fs[i] = future() end\nfor i = 1, 1e4 do spawn(function() "
     "wait(fs[i % 1e4 + 1]) fs[i]:resolve(i) end) end\nspawn(function() wait() fs[1]:resolve(0) "
     "end)\n"
     "while true do wait() end\n"},
    {"a task cancelling itself from its finally, 1e4 times", 10,
     "for i = 1, 1e4 do local t t = spawn(function() local _ <close> = finally(function() "
     "t:cancel() end) wait(1e9) end) end\nspawn(function() wait() for _, x in ipairs(weft.tasks()) "
     "do if x.task ~= current() then x.task:cancel() end end end)\n"
     "while true do wait() end\n"},
    {"table.move of a billion nils", 10,
     "spawn(function() table.move({}, 1, 1e9, 1) end)\n"
     "while true do wait() end\n"},
    {"table.concat through a C __index", 10,
     "spawn(function() table.concat(setmetatable({}, {__index = rawlen}), '', 1, 1e9) end)\n"
     "while true do wait() end\n"},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int reports;
static char first_report[120];
static void on_report(void *user, const char *msg, const char *trace) {
  (void)user;
  (void)trace;
  if (!reports++) snprintf(first_report, sizeof first_report, "%s", msg);
}
static void quiet(void *user, const char *line, size_t len) {
  (void)user;
  (void)line;
  (void)len;
}

/* Runs one case; prints its line. Exit status: 0, or 3 when a frame
   went over the target. */
static int run_case(const scase *c, double target) {
  weft_desc d = WEFT_DESC_INIT;
  d.report = on_report;
  d.log = quiet;
  weft_state *W = weft_open(&d);
  if (!W) return 1;
  double t0 = now_ms();
  weft_task t;
  const char *err;
  if (weft_run_string(W, "@stress.lua", c->src, strlen(c->src), &t, &err) != WEFT_OK) {
    printf("  %-44s cannot run: %s\n", c->name, err);
    return 1;
  }
  double first = now_ms() - t0, worst = 0;
  int worst_at = 0;
  for (int f = 1; f <= c->frames; f++) {
    double s = now_ms();
    weft_step(W, DT);
    double ms = now_ms() - s;
    if (ms > worst) worst = ms, worst_at = f;
    if (getenv("STRESS_FRAMES")) fprintf(stderr, "frame %d: %.1f ms\n", f, ms);
  }
  weft_stats st = WEFT_STATS_INIT;
  weft_get_stats(W, &st);
  int over = first > target || worst > target;
  printf("  %-44s %9.1f %9.1f %5d %7d %7.1f  %s%s\n", c->name, first, worst, worst_at, reports,
         (double)st.lua_bytes / (1 << 20), over ? "OVER " : "", first_report);
  fflush(stdout);
  weft_task_drop(W, t);
  weft_close(W);
  return over ? 3 : 0;
}

int main(int argc, char **argv) {
  double target = 50;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--target") == 0 && i + 1 < argc)
      target = atof(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else
      return fprintf(stderr, "usage: weft-stress [--target MS] [--only NAME,...]\n"), 2;
  }
  printf("  %-44s %9s %9s %5s %7s %7s  %s\n", "case", "1st pass", "worst", "frame", "reports",
         "heap MB", "first report");
  printf("  %-44s %9s %9s\n", "", "ms", "ms");
  int over = 0, broken = 0;
  for (int i = 0; i < NCASES; i++) {
    if (only && !strstr(only, cases[i].name)) continue;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(HANG_S);
      _exit(run_case(&cases[i], target));
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
      over++;
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      broken++;
      printf("  %-44s %s\n", cases[i].name,
             WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? "HUNG (60 s)" : "CRASHED OR FAILED");
    }
  }
  printf("  %d cases: %d with a frame over %.0f ms, %d hung or crashed\n", NCASES, over, target,
         broken);
  return broken ? 1 : 0;
}
