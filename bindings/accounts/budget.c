/* Instruction budgets. Every piece of script code runs inside a stretch: a
   task between two waits, a module's top level, a weft.on_error handler, a
   __tostring. A stretch runs in slices of so many instructions (watched:
   the time they stand for); past one a task is preempted (it goes on next
   frame, and every frame after, for as long as it needs); code that
   cannot be preempted runs on. Only a runaway dies: a stretch that has run
   desc.runaway_us of its own script time without waiting (the scripts
   thread's processor time, so a busy machine or a debugger's pause does
   not count; counted, WEFT_INSTR_PER_US instructions a microsecond) is
   killed at its line. A brief stretch (a __tostring, an evaluation) is
   killed past its one slice. Preemption changes when work lands, never
   what it computes. A kill is unstoppable: from then on every instruction of the stretch, in any of
   its threads, raises the kill again, so no pcall or coroutine.resume can
   swallow it.

   Counting costs a count hook, which Lua checks at every instruction:
   - the stretch's home thread (a task's own thread) counts whole budgets:
     its hook is armed once per task and fires every budget; a task that
     waited since the last firing starts a fresh stretch instead;
   - any other thread (a coroutine a script made) counts in quanta of
     QUANTUM instructions charged to whatever stretch is running, so
     coroutines cannot hide work from the budget, whoever made them. A
     coroutine that ends takes its unfinished quantum with it: half a
     quantum is charged for it, so a loop of short-lived coroutines is
     counted too. These charges are kept for one resume (a task preempted
     goes on with none), so a task's slot holds only what outlives it.

   Watched (the default), nothing counts until the watchdog (watchdog.c)
   sees a stretch run past its time: it then asks for a stop, and the
   thread running the stretch's code arms a count hook of one instruction
   on itself at its next jump or call, and the stretch is stopped there,
   at once: a task is preempted (killed after max_overruns), or,
   inside a C call where it cannot yield, yields as soon as its code can
   (each budget of instructions run there before then an overrun);
   anything else runs on until it is a runaway. Engine calls return between two instructions,
   and each is O(1) or O(its input), so a loop of them is stopped within
   a tick of its time too. A stretch nested in a watched one (a task's
   first resume inside spawn, a __tostring) is timed by the enclosing
   stretch's clock: a loop of short nested stretches is one long stretch,
   and a stop landing in a nested one stops the enclosing one next. */
#include <string.h>

#include "budget.h"
#include "../base/chunks.h"
#include "cost.h"
#include "profile.h"
#include "../base/sites.h"
#include "../base/watchdog.h"

#define QUANTUM 1000

static int32_t limit_of(const weft_state *W, int32_t limit) {
  return W->desc.instr_budget == WEFT_BUDGET_OFF ? 0 : limit;
}

static void hook(lua_State *L, lua_Debug *ar);
static void unhook(void *ud, weft_id id);
static void arm_until_yieldable(weft_state *W, lua_State *L);

/* Installs the hook on a thread with the given count (0: no count, only
   the extra events an attached debugger asks for). Watched, only a count
   of one (stop now) is kept. */
static void arm(weft_state *W, lua_State *co, int count) {
  if (W->watching && count != 1) count = 0;
  int mask = W->hook_extra | (count > 0 ? LUA_MASKCOUNT : 0);
  if (mask)
    weft__cost_sethook(W, co, hook, mask, count > 0 ? count : 0);
  else
    weft__cost_sethook(W, co, NULL, 0, 0);
}

/* A watched stretch's time: its budget's share of the per-resume time. */
static uint32_t time_of(const weft_state *W, int32_t limit) {
  if (!W->watching || !limit) return 0;
  if ((uint32_t)limit == W->desc.instr_budget) return W->desc.time_budget_us;
  uint64_t us = (uint64_t)limit * W->desc.time_budget_us / W->desc.instr_budget;
  return us < 1 ? 1 : us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

int weft__budget_watch(weft_state *W) { return weft__watchdog_start(W, hook); }

void weft__budget_setup(weft_state *W) {
  /* what a task's stretch begun at the bottom always is (the rest: at its begin) */
  W->bud_top.prev = &W->bud_idle;
  W->bud_top.msg = WEFT_TASK_RUNAWAY;
  W->bud_top.task = 1;
  W->bud_top.nested = W->bud_top.brief = 0;
  W->task_limit = limit_of(W, (int32_t)W->desc.instr_budget);
  W->task_us = time_of(W, W->task_limit);
  W->runaway_us = W->desc.runaway_us == WEFT_BUDGET_OFF ? 0 : W->desc.runaway_us;
  if (W->runaway_us > WEFT_RAN_MAX) W->runaway_us = WEFT_RAN_MAX; /* what a stretch counts to */
  W->runaway_instr = (uint64_t)W->runaway_us * WEFT_INSTR_PER_US;
}

void weft__budget_enter(weft_state *W, weft_budget *b, weft_stretch *s, lua_State *home,
                        const char *msg, int32_t limit, int kind) {
  limit = limit_of(W, limit);
  weft__budget_begin(W, b, s, home, msg, limit, time_of(W, limit), kind);
}

uint32_t weft__budget_clock(weft_state *W) {
  uint32_t t = (uint32_t)atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed);
  return (t ? t : (uint32_t)(weft__thread_cpu_ns() / 1000u)) - W->held_us;
}

/* Watched: the running stretch's time since t0 (now: the clock read).
   The clock is as of the watchdog's last tick and the time held is
   exact, so just after a hold it can read a little before t0 (a tick,
   EARLY_US at most): that is no time, not 71 minutes. */
#define EARLY_US 1000000u
static uint32_t since_t0(weft_state *W, uint32_t *now) {
  *now = weft__budget_clock(W);
  uint32_t d = *now - W->bud->t0;
  return d > UINT32_MAX - EARLY_US ? 0 : d;
}

/* Watched: the running stretch's script time since its last wait. */
static uint32_t ran_us(weft_state *W) {
  uint32_t now;
  return W->bud->s->ran + since_t0(W, &now);
}

/* Watched: a task stopped keeps the time it ran for its next resume. */
static void bank(weft_state *W) {
  if (!W->watching || !W->bud->us) return;
  uint32_t now, d = since_t0(W, &now);
  weft_stretch *s = W->bud->s;
  s->ran = d >= WEFT_RAN_MAX - s->ran ? WEFT_RAN_MAX : s->ran + d;
  W->bud->t0 = now;
}

/* A slice of the running stretch ran out: 1 when that makes it a
   runaway (counted, it is one more budget overrun). */
static int overran(weft_state *W) {
  weft_stretch *s = W->bud->s;
  if (W->bud->brief) return 1;
  if (W->watching) return W->runaway_us && W->bud->us && ran_us(W) >= W->runaway_us;
  if (s->ran < WEFT_RAN_MAX) s->ran++;
  return W->runaway_instr && (uint64_t)s->ran * (uint64_t)W->bud->limit >= W->runaway_instr;
}

int weft__budget_runaway(weft_state *W) {
  const weft_stretch *s = W->bud->s;
  if (!s) return 0;
  if (s->killed) return 1;
  if (!W->watching) /* counted: what weft__budget_compiled charged, with the instructions */
    return W->runaway_instr && (uint64_t)s->ran * (uint64_t)W->bud->limit >= W->runaway_instr;
  if (!W->bud->us) return 0;
  return W->bud->brief ? ran_us(W) >= W->bud->us : W->runaway_us && ran_us(W) >= W->runaway_us;
}

void weft__budget_unstop(weft_state *W, const weft_budget *outer) {
  if (outer->us) { /* nested: the enclosing stretch owns the clock that ran out */
    if (outer->run && outer->s) arm(W, outer->run, 1);
    return;
  }
  if (W->bud->run && W->bud->us && !(W->bud->s && W->bud->s->killed)) arm(W, W->bud->run, 0);
}

void weft__budget_idle(weft_state *W) { weft__budget_mark(W); }

/* What a count firing means for a watched stretch: 0, no stop of
   the running stretch came (a stop meant for a stretch that has ended);
   1, the stop takes effect now (the watchdog's hook of one instruction,
   or a nested stretch handing it on). The stop is prompt: whatever the
   stretch was doing, engine calls included, it has had its time. A
   nested stretch (a task's first run inside spawn, a __tostring) is
   stopped too but leaves the stop pending, so the stretch that owns the
   clock is stopped as soon as it runs again (weft__budget_unstop). */
static int take_fire(weft_state *W) {
  weft_watchdog *D = &W->wd;
  uint32_t gen = atomic_load_explicit(&D->gen, memory_order_relaxed);
  if (!W->bud->us || atomic_load_explicit(&D->fire, memory_order_acquire) != gen) return 0;
  if (!W->bud->nested) atomic_store_explicit(&D->fire, gen - 1, memory_order_relaxed);
  return 1;
}

/* The time held is measured afresh at both ends and taken out of every
   clock that times scripts: the stretches' (held_us: a stretch nested
   in another, or one saved under an evaluation, is timed across the
   hold by the same clock), the costs' (as the time of a resume inside
   the one held) and a profile's. */
void weft__budget_hold(weft_state *W, weft_hold *h) {
  h->us = W->bud->us;
  h->cpu_ns = weft__thread_cpu_ns();
  h->wall_ns = weft__clock_ns();
  W->holding = 1;
  W->bud->us = 0;
  weft__budget_mark(W);
}

void weft__budget_unhold(weft_state *W, const weft_hold *h) {
  uint64_t cpu = weft__thread_cpu_ns() - h->cpu_ns, wall = weft__clock_ns() - h->wall_ns;
  W->held_us += (uint32_t)(cpu / 1000u);
  weft__cost_held(W, (W->watching ? cpu : wall) / 1000u);
  if (W->prof) weft__profile_held(W, cpu);
  W->holding = 0;
  W->bud->us = h->us;
  weft__budget_mark(W);
}

void weft__budget_count(weft_state *W) {
  if (!W->watching) return;
  weft__watchdog_stop(W);
  weft__sched_set_time_flag(W->S, NULL); /* frames are counted too */
  W->watching = 0;
  weft__budget_setup(W);
  weft__sched_each_task(W->S, unhook, W);
}

void weft__budget_stop_at_once(weft_state *W, lua_State *home) {
  W->bud->s->preempt_due = 1; /* a stop it did not run into: no overrun */
  arm(W, home, 1);
}

void weft__budget_arm_home(weft_state *W, lua_State *home, int killed) {
  arm(W, home, killed ? 1 : W->task_limit);
}

/* The script line running: inside a hook, level 0 is the function that
   was running; weft's own Lua (a module system callback a C function
   made) is passed over for the script line that called into it. */
static int script_line(lua_State *L, lua_Debug *d) {
  for (int level = 0; lua_getstack(L, level, d); level++)
    if (lua_getinfo(L, "Sl", d) && d->currentline > 0 && !weft__chunk_embedded(d->source)) return 1;
  return 0;
}

/* Raises the kill of the running stretch in L, naming the line that ran
   too long (not wherever the unwinding has got to). */
static void raise_kill(weft_state *W, lua_State *L) {
  if (W->bud->kill_site) {
    lua_pushfstring(L, "%s: %s", weft__site_where(W->sites, W->bud->kill_site), W->bud->msg);
    lua_error(L);
  }
  weft__raise_here(L, W->bud->msg);
}

static void kill(weft_state *W, lua_State *L) {
  weft_stretch *s = W->bud->s;
  s->killed = 1;
  lua_Debug d;
  if (script_line(L, &d))
    W->bud->kill_site = weft__site_intern(W->sites, d.source, d.short_src, d.currentline, 0);
  arm(W, W->bud->home, 1);
  if (L != W->bud->home) arm(W, L, 1);
  raise_kill(W, L);
}

void weft__budget_stretch_end(weft_state *W, ltask *lt) {
  if (W->watching && W->bud->s == &lt->b && W->bud->us) weft__cost_stretch(W, W->cur, ran_us(W));
}

int weft__budget_piece(weft_state *W, lua_State *L, long steps) {
  weft_stretch *s = W->bud->s;
  if (!s || !W->bud->limit) return 0;
  if (s->killed) raise_kill(W, L);
  if (W->watching) {
    if (!take_fire(W)) return 0;
    if (overran(W)) kill(W, L);
  } else {
    W->bud->spent += (int32_t)(steps / WEFT_STEPS_PER_INSTR);
    W->cost.instr += (uint64_t)steps / WEFT_STEPS_PER_INSTR;
    if (W->bud->spent < W->bud->limit) return 0;
    W->bud->spent = 0;
    if (overran(W)) kill(W, L);
  }
  /* Preempted here when the task's own code called the work and can
     yield; elsewhere (inside a coroutine, a callback) it runs on. */
  if (!W->bud->task || L != W->bud->home || !lua_isyieldable(L)) return 0;
  bank(W);
  s->preempt_due = 0;
  s->preempted = 1;
  return 1;
}

void weft__budget_compiled(weft_state *W, size_t bytes) {
  weft_stretch *s = W->bud->s;
  if (W->watching || !s || !W->bud->limit) return; /* watched: the parser's time is on the clock */
  /* a byte an instruction, and a piece (a call of the reader from C into
     Lua, the parser's turn) 64 more; in whole slices as overran counts */
  uint64_t spent = (uint64_t)W->bud->spent + bytes + 64, slices = spent / (uint64_t)W->bud->limit;
  W->cost.instr += bytes + 64;
  W->bud->spent = (int32_t)(spent % (uint64_t)W->bud->limit);
  s->ran = s->ran + slices >= WEFT_RAN_MAX ? WEFT_RAN_MAX : s->ran + (uint32_t)slices;
}

/* The home thread ran a whole slice without a wait: a runaway is
   killed; a task that can yield is preempted; anything else runs on. */
static void overrun_home(weft_state *W, lua_State *L) {
  weft_stretch *s = W->bud->s;
  if (overran(W)) kill(W, L);
  if (!W->bud->task) { /* nothing can preempt it: on to its next slice */
    arm(W, L, W->bud->limit);
    return;
  }
  if (!lua_isyieldable(L)) {
    /* Inside a C call (an overlay drawn, a sort calling back): the task
       yields as soon as its code can, checked every QUANTUM
       instructions, and each budget of instructions run before then is
       another slice overrun. */
    s->preempt_due = 1;
    arm_until_yieldable(W, L);
    return;
  }
  bank(W);
  s->preempt_due = 0;
  s->preempted = 1;
  if (W->watching) arm(W, L, 0); /* before the yield (see hook) */
  lua_yield(L, 0);
}

/* Charges n instructions run away from the home thread. Past a budget a
   task is preempted there too: from inside a coroutine that can yield
   (from its hook), the yield is passed up through each resumer to the
   task's own thread (coro.c), and every level goes on where it stopped
   next frame. Where that cannot be (the coroutine is inside a C call, or
   the charge is made from C), the task yields when its home thread runs
   again (at once: its count is one from then on). */
static void charge(weft_state *W, lua_State *L, int32_t n, int in_hook) {
  weft_stretch *s = W->bud->s;
  W->bud->spent += n;
  W->cost.instr += (uint32_t)n; /* counted: on the instruction clock too (cost.h) */
  if (W->bud->spent < W->bud->limit) return;
  W->bud->spent = 0;
  if (overran(W)) kill(W, L);
  if (!W->bud->task) { /* runs on */
    if (W->watching && in_hook) arm(W, L, 0);
    return;
  }
  if (in_hook && lua_isyieldable(L)) {
    bank(W);
    s->yielding = 1;
    if (W->watching) arm(W, L, 0); /* before the yield (see hook) */
    lua_yield(L, 0);
    return;
  }
  s->preempt_due = 1;
  arm(W, W->bud->home, 1);
}

/* A stop is due on the home thread while it runs Lua code called from C
   (a comparator, a callback: no yield there): counted checks every
   QUANTUM instructions, and a return event besides, so the task yields
   at the first instruction after it is back where it can. A count alone
   could keep landing in the callback: a loop calling it runs the same
   instructions each time round. */
static void arm_until_yieldable(weft_state *W, lua_State *L) {
  weft__cost_sethook(W, L, hook, W->hook_extra | LUA_MASKCOUNT | LUA_MASKRET, QUANTUM);
}

static void hook(lua_State *L, lua_Debug *ar) {
  weft_state *W = weft__get(L);
  if (ar->event != LUA_HOOKCOUNT) {
    const weft_stretch *s = W->bud->s;
    if (ar->event == LUA_HOOKRET && s && s->preempt_due && L == W->bud->home && lua_isyieldable(L))
      weft__cost_sethook(W, L, hook, W->hook_extra | LUA_MASKCOUNT, 1); /* the next one yields */
    if (W->on_hook && (ar->event != LUA_HOOKRET || (W->hook_extra & LUA_MASKRET)))
      W->on_hook(W, L, ar);
    return;
  }
  weft__cost_fired(W, L);
  if (atomic_exchange_explicit(&W->wd.want_sample, 0, memory_order_relaxed))
    weft__profile_sample(W, L);
  weft_stretch *s = W->bud->s;
  int fired = W->watching ? take_fire(W) : 0;
  if (W->watching && !fired && (!s || !(s->killed || (s->preempt_due && L == W->bud->home)))) {
    arm(W, L, 0); /* a stop meant for a stretch that has ended */
    return;
  }
  if (!s || !W->bud->limit) return; /* no budgeted code is running */
  if (s->killed) raise_kill(W, L);
  if (L != W->bud->home) {
    charge(W, L, W->watching ? W->bud->limit : lua_gethookcount(L), 1);
  } else if (s->preempt_due) {
    if (!lua_isyieldable(L)) { /* a quantum a firing until it can yield */
      if ((W->bud->spent += QUANTUM) >= W->bud->limit) {
        W->bud->spent = 0;
        if (overran(W)) kill(W, L);
      }
      arm_until_yieldable(W, L);
      return;
    }
    bank(W);
    s->preempt_due = 0;
    s->preempted = 1;
    /* Back to whole budgets. Armed here, before the yield: Lua marks a
       hook's yield so the resumed instruction does not fire the hook
       again, and a hook set on the suspended thread would leave that mark
       to swallow the next firing instead. */
    arm(W, L, W->bud->limit);
    lua_yield(L, 0);
  } else if (!W->watching && W->bud->task && s->waited) {
    /* The count is not restarted at every resume (that costs a walk of
       the thread's call frames): a task that waited since the last
       firing is fine, one that did not ran a whole budget without
       waiting. */
    s->waited = 0;
  } else {
    overrun_home(W, L);
  }
}

void weft__budget_before_nested(weft_state *W, lua_State *co) {
  if (!W->bud->s) return;
  W->bud->run = co;
  int want = 0;
  if (W->bud->s->killed)
    want = 1;
  else if (W->bud->limit && !W->watching)
    want = W->bud->limit < QUANTUM ? W->bud->limit : QUANTUM;
  int mask = W->hook_extra | (want ? LUA_MASKCOUNT : 0);
  if (lua_gethook(co) != (mask ? hook : NULL) || lua_gethookcount(co) != want ||
      lua_gethookmask(co) != mask)
    arm(W, co, want);
}

void weft__budget_after_nested(weft_state *W, lua_State *L, lua_State *co, int status) {
  weft_stretch *s = W->bud->s;
  if (!s) return;
  W->bud->run = L;
  if (!s->killed && W->bud->limit && !W->watching && status != LUA_YIELD)
    charge(W, L, lua_gethookcount(co) / 2, 0);
  if (s->killed) {
    arm(W, L, 1);
    raise_kill(W, L);
  }
}

int weft__budget_preempting(weft_state *W, lua_State *L) {
  weft_stretch *s = W->bud->s;
  if (!s || !s->yielding) return 0;
  if (!lua_isyieldable(L)) { /* the yield stops here: yield when home runs */
    s->yielding = 0;
    s->preempt_due = 1;
    arm(W, W->bud->home, 1);
    return 2;
  }
  if (L == W->bud->home) { /* the yield reached the task's own thread */
    s->yielding = 0;
    s->preempted = 1;
  }
  return 1;
}

static void unhook(void *ud, weft_id id) {
  ltask *lt = weft__task_udata(((weft_state *)ud)->S, id);
  if (lt) lt->hooked = 0; /* re-armed at its next resume */
}

/* Re-arms a thread that is running (or resuming another) with the new
   events, keeping whether it counts and its count. */
static void rearm(weft_state *W, lua_State *co) {
  if (!co) return;
  int count = (lua_gethookmask(co) & LUA_MASKCOUNT) ? lua_gethookcount(co) : 0;
  arm(W, co, count);
}

void weft__budget_set_extra(weft_state *W, int mask, lua_State *L) {
  if (W->hook_extra == mask) return;
  W->hook_extra = mask;
  weft__sched_each_task(W->S, unhook, W);
  rearm(W, W->curL);
  if (W->bud->home != W->curL) rearm(W, W->bud->home);
  if (L && L != W->curL && L != W->bud->home) rearm(W, L);
}

void weft__raise_here(lua_State *L, const char *msg) {
  lua_Debug d;
  if (script_line(L, &d))
    lua_pushfstring(L, "%s:%d: %s", d.short_src, d.currentline, msg);
  else
    lua_pushstring(L, msg);
  lua_error(L);
}

int weft__budget_pcall(weft_state *W, lua_State *L, int nargs, int nres, int msgh, const char *msg,
                       int32_t limit) {
  weft_budget b;
  weft_stretch s;
  memset(&s, 0, sizeof s);
  lua_Hook old = lua_gethook(L);
  int omask = lua_gethookmask(L), ocount = lua_gethookcount(L);
  weft__budget_enter(W, &b, &s, L, msg, limit ? limit : (int32_t)W->desc.instr_budget,
                     limit ? WEFT_STRETCH_BRIEF : WEFT_STRETCH_PLAIN);
  arm(W, L, W->bud->limit);
  int st = lua_pcall(L, nargs, nres, msgh);
  weft__budget_leave(W, &b);
  weft__cost_sethook(W, L, old, omask, ocount);
  return st;
}

int weft__budget_resume(weft_state *W, lua_State *co, lua_State *from, int nargs, int *nres,
                        const char *msg, int32_t limit) {
  weft_budget b;
  weft_stretch s;
  memset(&s, 0, sizeof s);
  weft__budget_enter(W, &b, &s, co, msg, limit ? limit : (int32_t)W->desc.instr_budget,
                     limit ? WEFT_STRETCH_BRIEF : WEFT_STRETCH_PLAIN);
  arm(W, co, W->bud->limit);
  int st = lua_resume(co, from, nargs, nres);
  weft__budget_leave(W, &b);
  return st;
}
