/* A stretch of code under an instruction budget (budget.c works them): a
   task between waits, a module's top level, a handler. */
#ifndef WEFT_STRETCH_H
#define WEFT_STRETCH_H

#include <stdint.h>

#include <lua.h>

/* What outlives a resume (a task's stretch goes on after a preemption),
   kept in every task's slot: what only one resume needs is in
   weft_budget. */
typedef struct weft_stretch {
  uint16_t overruns;   /* consecutive budgets overrun (tasks) */
  uint8_t killed;      /* every instruction raises now */
  uint8_t waited;      /* tasks: waited since home's hook last fired */
  uint8_t preempted;   /* tasks: the last resume was stopped by the budget */
  uint8_t preempt_due; /* tasks: overrun away from home: yield when home runs */
  uint8_t yielding;    /* tasks: a preemption's yield passes up the resumers */
} weft_stretch;

/* The stretch running now and what it means. */
typedef struct weft_budget {
  weft_stretch *s;    /* NULL: no budgeted code runs */
  lua_State *home;    /* the thread whose own count is a whole budget */
  const char *msg;    /* what a kill says */
  int32_t limit;      /* a budget, in instructions; 0: off */
  uint32_t us;        /* watched: the time it may run, microseconds; 0: counted */
  lua_State *run;     /* the thread running its code now (home or a coroutine) */
  int32_t spent;      /* instructions charged by threads other than home */
  uint32_t kill_site; /* where it ran too long, once killed (sites.c) */
  uint8_t task;       /* a task's: preempted before it is killed */
  uint8_t nested;     /* timed by the enclosing stretch's clock (watched) */
} weft_budget;

#endif
