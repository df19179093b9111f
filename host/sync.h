/* Signals and channels: things tasks wait on besides time and other
   tasks (the bindings' futures keep their own lists: future.c). Each
   keeps wait lists (see sched.h); whoever completes one delivers values
   to its waiters and calls weft__rec_complete. Values are opaque here: a
   channel carries uint64_t payloads the caller interprets. */
#ifndef WEFT_SYNC_H
#define WEFT_SYNC_H

#include "sched.h"

typedef struct weft_sync weft_sync;

/* Creates the object pools; alloc as in sched.h (NULL: realloc/free). */
weft_sync *weft__sync_create(weft_alloc_fn alloc, void *alloc_ud);
/* Frees everything; returns the number of objects still alive (leaks). */
int weft__sync_destroy(weft_sync *y);
/* Live objects of all kinds. */
uint32_t weft__sync_count(const weft_sync *y);

/* ---- signals ---- */

int weft__signal_create(weft_sync *y, weft_id *out);
void weft__signal_destroy(weft_sync *y, weft_id s);
int weft__signal_live(const weft_sync *y, weft_id s);
weft_wlist *weft__signal_waiters(weft_sync *y, weft_id s);
/* A set signal stays fired (waits return at once) until reset. */
int weft__signal_set_latched(weft_sync *y, weft_id s, int on);
int weft__signal_latched(const weft_sync *y, weft_id s);

/* ---- channels ---- */

#define WEFT_UNBOUNDED UINT32_MAX

/* capacity: values buffered before senders wait; 0 hands each value
   straight from sender to receiver; WEFT_UNBOUNDED never makes senders
   wait. */
int weft__channel_create(weft_sync *y, uint32_t capacity, weft_id *out);
/* Frees a channel; returns its buffered payloads through drop first. */
void weft__channel_destroy(weft_sync *y, weft_id c, void (*drop)(void *ud, uint64_t v), void *ud);
int weft__channel_live(const weft_sync *y, weft_id c);
/* Buffers v. WEFT_ELIMIT when full, WEFT_ECLOSED when closed, WEFT_ENOMEM. */
int weft__channel_push(weft_sync *y, weft_id c, uint64_t v);
/* Puts v back at the front, past the capacity and after a close if need
   be: for a value handed out that could not be used. */
int weft__channel_unshift(weft_sync *y, weft_id c, uint64_t v);
/* Takes the oldest buffered value. WEFT_ELIMIT when empty. */
int weft__channel_pop(weft_sync *y, weft_id c, uint64_t *v);
int weft__channel_close(weft_sync *y, weft_id c);
int weft__channel_closed(const weft_sync *y, weft_id c);
uint32_t weft__channel_count(const weft_sync *y, weft_id c);
uint32_t weft__channel_capacity(const weft_sync *y, weft_id c);
weft_wlist *weft__channel_senders(weft_sync *y, weft_id c);
weft_wlist *weft__channel_receivers(weft_sync *y, weft_id c);

/* ---- saving (see weft__sched_save) ---- */

/* Writes every signal and channel, buffered payloads too, with the
   handles they have now. 0 when the stream fails. */
int weft__sync_save(const weft_sync *y, weft_wire *w);
/* Reads a save into y, fresh from weft__sync_create: 0 when refused
   (w->err says why; y is then to be destroyed). Load it before the
   scheduler, whose records name its lists; then weft__sync_check. */
int weft__sync_load(weft_sync *y, weft_wire *w);
/* The name of one of its lists (a signal's waiters, a channel's senders
   or receivers), below 2^30 (the bits above are its owner's to use); 0:
   not one of its lists. */
uint32_t weft__sync_list_name(const weft_sync *y, const weft_wlist *l);
/* The list of a name; NULL: none. */
weft_wlist *weft__sync_list_at(weft_sync *y, uint32_t name);
/* After the scheduler is loaded: every list holds records that wait on
   it, linked both ways. 0 when one does not. */
int weft__sync_check(const weft_sync *y, const weft_sched *s);

#endif
