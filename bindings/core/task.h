/* Tasks for scripts (task.c): spawning, running and ending Lua tasks,
   their handles, and the cold records of what few tasks use. */
#ifndef WEFT_TASK_H
#define WEFT_TASK_H

#include "../accounts/handles.h"

/* spawn/g:spawn: a task for the callable at L[fidx] and the values above
   it, in group g (0: the spawner's) as a child of parent, run at once;
   pushes its handle and returns 1, or with want 0 (nobody takes it)
   pushes nothing and returns 0. */
int weft__spawn_in(lua_State *L, int fidx, weft_id g, weft_id parent, int want);
void weft__open_tasks(weft_state *W, lua_State *L);
/* Creates a task running the callable at L[fidx] with the nargs values
   above it, in group g (0: the spawner's), as a child of parent (0: none).
   Pushes nothing (no handle is made); raises a Lua error on failure, with
   no task left behind. */
weft_id weft__new_task(weft_state *W, lua_State *L, int fidx, int nargs, weft_id g, weft_id parent);
/* The same, and pushes the new task's handle. */
weft_id weft__new_task_handle(weft_state *W, lua_State *L, int fidx, int nargs, weft_id g,
                              weft_id parent);
/* The spawn site of a task the calling script line would start now. */
uint32_t weft__caller_site(weft_state *W, lua_State *L);
/* Gives a task another spawn site. */
void weft__task_set_site(weft_state *W, lua_State *L, weft_id task, uint32_t site);
/* Lua's collector marks the threads weft keeps for tasks (task.c): set
   once, by weft_open. */
void weft__task_roots_init(void);
/* Puts every live Lua task's thread in ref_tasks[chunk + 1][index in
   chunk + 1], for a save to find (and a load to read: weft__threads_in
   in save.c); unanchor sets it back to false. */
void weft__threads_anchor(weft_state *W, lua_State *L);
void weft__threads_unanchor(weft_state *W, lua_State *L);
/* A thread made outside a task's spawn (a load's) that only a slot will
   hold: the collector's next atomic step marks it (0: out of memory). */
int weft__threads_young(weft_state *W, lua_State *co);
/* Frees the list of young threads (weft_close). */
void weft__threads_free(weft_state *W);
/* Takes back a NEW task that could not be completely set up. */
void weft__discard_task(weft_state *W, lua_State *L, weft_id task);
/* After running other tasks' code (cleanups, callbacks) from inside the
   current task: if that cancelled it, it unwinds now. */
void weft__yield_if_doomed(weft_state *W, lua_State *L);
/* Runs a NEW task at once, up to its first wait. */
void weft__run_now(weft_state *W, weft_id task);

/* For a save: the class of script tasks. */
const weft_task_class *weft__lua_task_class(void);

#endif
