/* The watchdog: a budget with no cost per instruction. A thread looks,
   every tick, at which stretch of script code runs (budget.c bumps a
   generation number at each stretch's start and end). A stretch seen
   running past its time is asked to stop: the watchdog raises its
   state's flag and counts it in weft__lua_stops, and touches nothing of
   the Lua state. Lua's VM, built with weft's stop check (mk/lua), looks
   at that count at every jump and every call; the thread running the
   script sees it, takes its state's flag (on_vm_stop) and arms a count
   hook of one instruction on itself, which stops the stretch at once as
   a counted budget does (budget.c), the way Luau's interrupt works. No
   thread ever writes into another's Lua state, no signal is sent and no
   handler installed: nothing process-wide changes but the count.

   It also times each step (a step's start wakes it from a nap): past the
   frame's time for tasks it raises frame_over, and the scheduler starts
   no more tasks in that frame. The scripts' fast path pays a few stores
   a resume. Between frames the watchdog naps (ten wake-ups a second); a
   stretch or a step starting during a nap wakes it. */
#include "watchdog.h"
#include "internal.h"
#include "weft_luai.h"

#define IDLE_TICKS 64   /* ticks with nothing running before it naps */
#define NAP_US 100000   /* how long a nap is */
#define MIN_TICK_US 200 /* the finest tick */
#define STACK (64 * 1024)

static uint64_t now_us(void) { return weft__clock_ns() / 1000u; }

/* Waits us microseconds or until asked to stop (under D->mu); returns 0
   when asked. */
static int pause_for(weft_watchdog *D, uint64_t us) {
  uint64_t end = weft__clock_ns() + us * 1000u;
  for (;;) {
    if (D->quit) return 0;
    if (D->wake) {
      D->wake = 0;
      return 1;
    }
    uint64_t t = weft__clock_ns();
    if (t >= end) return 1;
    weft__cond_wait_ns(&D->cv, &D->mu, end - t);
  }
}

/* Asks the running script code to stop (gen 0: a profile's sample, no
   stop): the next jump or call of the thread running it takes the ask
   (on_vm_stop). The stretch it was meant for may have ended by then:
   the hook tells (budget.c's take_fire). */
static void interrupt(weft_watchdog *D) {
  if (!atomic_exchange_explicit(&D->asked, 1, memory_order_acq_rel))
    atomic_fetch_add_explicit(&weft__lua_stops, 1, memory_order_release);
}

void weft__watchdog_retract(weft_watchdog *D) {
  if (atomic_exchange_explicit(&D->asked, 0, memory_order_acq_rel))
    atomic_fetch_sub_explicit(&weft__lua_stops, 1, memory_order_relaxed);
}

/* On the thread running Lua, inside the VM (weft_luai.h): some state has
   a stop asked. If it is L's, L arms its own count hook of one
   instruction (keeping the events a debugger asked for), unless it
   counts already (a kill, or a stop on its way). Lua's lua_sethook may be
   called at any instruction boundary (lua.c's Ctrl-C handler calls it
   from a signal handler). States of other hosts' on the same Lua (their
   allocator is not weft's) are left alone. */
static int on_vm_stop(lua_State *L) {
  void *ud;
  if (lua_getallocf(L, &ud) != weft__lua_alloc) return 0;
  weft_watchdog *D = &((weft_state *)ud)->wd;
  if (!atomic_load_explicit(&D->asked, memory_order_relaxed)) return 0;
  weft__watchdog_retract(D);
  int mask = lua_gethookmask(L);
  if (!(mask & LUA_MASKCOUNT)) lua_sethook(L, D->stop, mask | LUA_MASKCOUNT, 1);
  return 1;
}

static void watch(void *ud) {
  weft_state *W = ud;
  weft_watchdog *D = &W->wd;
  uint32_t seen = 0;  /* the stretch last seen */
  uint64_t since = 0; /* ...when it was first seen */
  unsigned idle = 0;  /* ticks nothing ran */
  weft__mutex_lock(&D->mu);
  for (;;) {
    int nap = idle >= IDLE_TICKS;
    atomic_store_explicit(&D->napping, nap, memory_order_seq_cst);
    /* A step or stretch that started before napping was set did not wake us. */
    if (nap && (atomic_load_explicit(&D->frame_at, memory_order_seq_cst) ||
                atomic_load_explicit(&D->limit_us, memory_order_seq_cst)))
      nap = 0;
    if (nap)
      atomic_store_explicit(&D->clock_us, 0, memory_order_relaxed); /* still: read it yourself */
    uint32_t tick =
        atomic_load_explicit(&D->sample, memory_order_relaxed) && D->tick_us > PROFILE_TICK_US
            ? PROFILE_TICK_US /* a profile samples finer */
            : D->tick_us;
    int go = pause_for(D, nap ? NAP_US : tick);
    atomic_store_explicit(&D->napping, 0, memory_order_relaxed);
    if (!go) break;
    uint32_t limit = atomic_load_explicit(&D->limit_us, memory_order_acquire);
    uint32_t gen = atomic_load_explicit(&D->gen, memory_order_acquire);
    uint64_t t = now_us();
    atomic_store_explicit(&D->clock_us, weft__cpu_clock_ns(&D->cpu) / 1000u,
                          memory_order_relaxed); /* the cost clock (cost.h) */
    if (limit && atomic_load_explicit(&D->sample, memory_order_relaxed)) {
      atomic_store_explicit(&D->want_sample, 1, memory_order_relaxed);
      interrupt(D);
    }
    uint64_t at = atomic_load_explicit(&D->frame_at, memory_order_acquire);
    if (at && t + 1 - at >= D->frame_us)
      atomic_store_explicit(&D->frame_over, 1, memory_order_relaxed);
    if (!limit && !at) {
      idle++;
      continue;
    }
    idle = 0;
    if (!limit) continue;
    if (gen != seen) {
      seen = gen;
      since = t;
      continue;
    }
    if (t - since < limit) continue;
    since = t; /* ask again a whole time later if it goes on */
    atomic_store_explicit(&D->fire, gen, memory_order_release);
    interrupt(D);
  }
  weft__mutex_unlock(&D->mu);
}

void weft__watchdog_frame(weft_watchdog *D, int on) {
  if (!D->frame_us || !D->on) return;
  if (!on) {
    atomic_store_explicit(&D->frame_at, 0, memory_order_release);
    return;
  }
  atomic_store_explicit(&D->frame_over, 0, memory_order_relaxed);
  atomic_store_explicit(&D->frame_at, weft__clock_ns() / 1000u + 1, memory_order_seq_cst);
  if (atomic_load_explicit(&D->napping, memory_order_seq_cst)) weft__watchdog_wake(D);
}

void weft__watchdog_wake(weft_watchdog *D) {
  weft__mutex_lock(&D->mu);
  D->wake = 1;
  weft__cond_signal(&D->cv);
  weft__mutex_unlock(&D->mu);
}

int weft__watchdog_start(weft_state *W, lua_Hook stop) {
  weft_watchdog *D = &W->wd;
  D->stop = stop;
  D->tick_us = (uint32_t)(W->desc.time_budget_us / 2);
  uint32_t ft = W->desc.frame_time_budget_us;
  if (ft && ft != WEFT_BUDGET_OFF && ft / 2 < D->tick_us) D->tick_us = ft / 2;
  if (D->tick_us > COST_TICK_US) D->tick_us = COST_TICK_US; /* the cost clock's resolution */
  if (D->tick_us < MIN_TICK_US) D->tick_us = MIN_TICK_US;
  if (weft__cpu_clock_self(&D->cpu) != WEFT_OK) return -1;
  atomic_store(&D->clock_us, weft__thread_cpu_ns() / 1000u);
  atomic_store(&D->napping, 0);
  D->quit = 0;
  D->wake = 0;
  atomic_store(&D->fire, 0);
  atomic_store(&D->asked, 0);
  weft__lua_stop_handler(on_vm_stop);
  if (weft__cond_init(&D->cv) != WEFT_OK) {
    weft__cpu_clock_close(&D->cpu);
    return -1;
  }
  if (weft__mutex_init(&D->mu) != WEFT_OK) {
    weft__cond_destroy(&D->cv);
    weft__cpu_clock_close(&D->cpu);
    return -1;
  }
  if (weft__thread_start(&D->thread, watch, W, STACK) != WEFT_OK) {
    weft__mutex_destroy(&D->mu);
    weft__cond_destroy(&D->cv);
    weft__cpu_clock_close(&D->cpu);
    return -1;
  }
  D->on = 1;
  return 0;
}

void weft__watchdog_stop(weft_state *W) {
  weft_watchdog *D = &W->wd;
  if (!D->on) return;
  weft__mutex_lock(&D->mu);
  D->quit = 1;
  weft__cond_signal(&D->cv);
  weft__mutex_unlock(&D->mu);
  weft__thread_join(&D->thread);
  weft__watchdog_retract(D); /* an ask no script code took */
  weft__cpu_clock_close(&D->cpu);
  weft__mutex_destroy(&D->mu);
  weft__cond_destroy(&D->cv);
  D->on = 0;
}
