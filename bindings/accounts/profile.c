/* A profile on demand: each task resume as a slice, frames, wake-ups
   from the task that woke another, and the Lua stacks sampled at the
   watchdog's ticks (a count hook of one instruction on the running
   thread, as a stop is made, only sampling). Written when it
   stops as Chrome's Trace Event JSON and speedscope's file format. Its
   blocks are the embedder's (desc.alloc, counted as the host's), taken
   on the scripts thread: samples are taken there too.
   The real clock is read once a watchdog tick, not once a resume: a
   read costs about as much as a short resume (see weft__profile_begin). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handles.h"
#include "../base/mem.h"
#include "profile.h"

#define MAX_DEPTH 64   /* resumes inside resumes */
#define MAX_FRAMES 128 /* Lua frames of a sample */

typedef struct slice {
  weft_id id;
  uint64_t t0, t1; /* ns since the start */
} slice;

/* Slices are many (a resume is one: a frame of 10,000 tasks makes
   10,000), so they are kept as a stream of events of a few bytes in
   blocks that never move, not as records of 24 bytes: a profile's
   memory growing by that much a resume, fresh pages and their faults
   were most of what a profile cost. An event is its kind, then varints:
   the task's slot index as a difference from the last event's, its
   generation, times as differences from the last time written. A
   top-level resume's slice ends where the next top-level one begins, or
   at an EV_CLOSE (a frame's start or end, the stop). An EV_LATER is a
   top-level resume begun with no clock read: it begins between the
   times written before and after it, which are exact (see later_at).
   An EV_NEXT is an EV_LATER of the slot after the last event's (a
   frame's tasks mostly run in slot order): its kind and generation.
   An EV_MARK is only a time: the clock read inside a slice (a wake-up,
   a sample, a resume inside it beginning) or at a frame's start, so what
   is placed around it stays in order with it. EV_END: the rest of a
   block is unused. */
enum { EV_END = 0, EV_TOP, EV_NEST, EV_CLOSE, EV_LATER, EV_MARK, EV_NEXT };
#define SBLOCK 65536 /* bytes a block */
#define EV_MAX 40    /* bytes an event takes at most */

typedef struct wake {
  weft_id waker, woken;
  uint64_t t, tf; /* when it was woken; when it next ran (0: never) */
} wake;

typedef struct sample {
  weft_id id;
  uint32_t at, n; /* its frames in stack[], leaf first */
  uint32_t us;    /* processor time since the sample before (or the frame's start) */
} sample;

/* What is known of a task: its label, and the wake-up its next slice
   ends (index + 1, 0: none). */
typedef struct tinfo {
  weft_id id;
  char *label;
  char *module; /* a start's task: its module ("ai.patrol"); NULL: its spawn site's file */
  uint32_t wake;
} tinfo;

#define VEC(T, name)                                                                               \
  T *name;                                                                                         \
  size_t n##name, cap##name

struct weft_profile {
  weft_state *W; /* its blocks come from W's allocator */
  char *path;
  lua_State *E; /* a thread of its own for labels */
  int ref_E;
  uint64_t start;
  uint64_t t0[MAX_DEPTH];
  size_t s0[MAX_DEPTH]; /* samples taken before each resume running */
  int depth;
  uint64_t frame_t0;
  uint64_t cpu;            /* the thread's processor time at the last sample or frame start */
  int failed;              /* out of memory: what was kept is written */
  weft_id last;            /* the task whose resume just ended (its end wakes its waiters) */
  uint32_t pending;        /* woken tasks that have not run since */
  int open;                /* a top-level resume's slice is open */
  uint64_t tick;           /* the watchdog's clock at the last clock read (0: none) */
  VEC(uint8_t *, sblocks); /* the slices' events, in blocks of SBLOCK bytes (see put_event) */
  uint8_t *ev_p, *ev_end;  /* where the next event goes in the last block, and its end */
  uint32_t ev_index;       /* the last event's task slot index... */
  uint64_t ev_t;           /* ...and time written */
  VEC(wake, wakes);
  VEC(sample, samples);
  VEC(uint32_t, stack);
  VEC(uint64_t, frames); /* pairs of (start, end) */
  tinfo *tasks;          /* open addressing by id */
  uint32_t tcap, ntasks;
  char **fnames;   /* interned frame names ("fn\tfile\tline") */
  uint32_t *fhash; /* open addressing: index + 1 into fnames */
  uint32_t nf, capf, hcap;
};

typedef struct weft_profile prof;

/* Makes room for one more in a vector. */
static int grow(prof *P, void **v, size_t n, size_t *cap, size_t size) {
  if (n < *cap) return 1;
  size_t c = *cap ? *cap * 2 : 1024;
  void *m = weft__mem_realloc(P->W, *v, *cap * size, c * size);
  if (!m) return P->failed = 1, 0;
  *v = m;
  *cap = c;
  return 1;
}
#define PUSH(P, name) grow(P, (void **)&(P)->name, (P)->n##name, &(P)->cap##name, sizeof *(P)->name)

static inline uint8_t *put_u(uint8_t *p, uint64_t v) {
  for (; v >= 0x80; v >>= 7) *p++ = (uint8_t)(v | 0x80);
  *p++ = (uint8_t)v;
  return p;
}

/* A new block for the events; 0 when out of memory. */
static int new_block(prof *P) {
  uint8_t *b = PUSH(P, sblocks) ? weft__mem_alloc(P->W, SBLOCK) : NULL;
  if (!b) return P->failed = 1, 0;
  if (P->ev_p) *P->ev_p = EV_END;
  P->sblocks[P->nsblocks++] = b;
  P->ev_p = b;
  P->ev_end = b + SBLOCK;
  return 1;
}
static uint64_t zigzag(uint64_t d) { return (d << 1) ^ (uint64_t) - (int64_t)(d >> 63); }

/* An event's task: its slot index's difference from the last one's, and
   its generation. */
static inline uint8_t *put_id(prof *P, uint8_t *p, weft_id id) {
  p = put_u(p, zigzag((uint64_t)WEFT_ID_INDEX(id) - P->ev_index));
  P->ev_index = WEFT_ID_INDEX(id);
  return put_u(p, WEFT_ID_GEN(id));
}

/* Appends an event (kind; id but for EV_CLOSE and EV_MARK; t but for
   EV_LATER, and t1 for EV_NEST). Out of memory, it is dropped. */
static void put_event(prof *P, int kind, weft_id id, uint64_t t, uint64_t t1) {
  if ((!P->ev_p || P->ev_end - P->ev_p < EV_MAX + 1) && !new_block(P)) return;
  uint8_t *p = P->ev_p;
  *p++ = (uint8_t)kind;
  if (kind != EV_CLOSE && kind != EV_MARK) p = put_id(P, p, id);
  if (kind == EV_LATER) {
    P->ev_p = p;
    return;
  }
  p = put_u(p, zigzag(t - P->ev_t));
  P->ev_t = t;
  if (kind == EV_NEST) {
    p = put_u(p, t1 - t);
    P->ev_t = t1;
  }
  P->ev_p = p;
}

static uint64_t get_u(const uint8_t **p) {
  uint64_t v = 0;
  for (int s = 0;; s += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << s;
    if (b < 0x80) return v;
  }
}
static uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (uint64_t) - (int64_t)(z & 1); }

/* Reading the events back, in the order written. */
typedef struct cursor {
  size_t b;         /* block */
  const uint8_t *p; /* where in it, NULL: not started */
  uint32_t index;   /* as the writer had them */
  uint64_t t;       /* the last time read (an EV_NEST's: its end) */
} cursor;

/* The next event: its kind and id, and an EV_NEST's start in *t0 (its
   end, like every other time, in c->t). 0 at the end. */
static int ev_next(const prof *P, cursor *c, int *kind, weft_id *id, uint64_t *t0) {
  for (;;) {
    if (c->b >= P->nsblocks) return 0;
    if (!c->p) c->p = P->sblocks[c->b];
    if (c->p == P->ev_p || *c->p == EV_END) {
      c->b++;
      c->p = NULL;
      continue;
    }
    *kind = *c->p++;
    *id = 0;
    if (*kind == EV_NEXT) {
      *kind = EV_LATER;
      *id = WEFT_ID_MAKE(++c->index, get_u(&c->p));
      return 1;
    }
    if (*kind != EV_CLOSE && *kind != EV_MARK) {
      c->index += (uint32_t)unzigzag(get_u(&c->p));
      *id = WEFT_ID_MAKE(c->index, get_u(&c->p));
    }
    if (*kind == EV_LATER) return 1;
    c->t += unzigzag(get_u(&c->p));
    *t0 = c->t;
    if (*kind == EV_NEST) c->t += get_u(&c->p);
    return 1;
  }
}

/* Reading the slices back: each call gives the next one (0 at the end). */
typedef struct slices_read {
  cursor c;
  int open;         /* a top-level slice is open... */
  slice top;        /* ...this one, its end not known yet */
  uint64_t ta, tb;  /* a run of EV_LATERs: the exact times around it */
  uint32_t run, at; /* ...how many it holds, how many were placed */
} slices_read;

/* Where the next EV_LATER begins. The resumes of a run of them, begun
   between two clock reads (ta, tb), share the time between evenly: the
   first slice of the stretch is the one open at ta (a timed resume, or a
   frame's start when none is), so a run of k makes k + 1 parts. Each
   resume's exact time is lost, not the order, what ran in which frame,
   or the total: what each took is in the samples. */
static uint64_t later_at(const prof *P, slices_read *r) {
  if (r->at == r->run) { /* a run begins: the next time read closes it */
    cursor c = r->c;
    int kind;
    weft_id id;
    uint64_t t0;
    r->ta = r->tb = r->c.t;
    r->run = 1;
    r->at = 0;
    while (ev_next(P, &c, &kind, &id, &t0)) {
      if (kind != EV_LATER) {
        r->tb = t0 > r->ta ? t0 : r->ta; /* an EV_NEST's start */
        break;
      }
      r->run++;
    }
  }
  r->at++;
  return r->ta + (uint64_t)((double)(r->tb - r->ta) * r->at / (r->run + 1));
}

static int slice_next(const prof *P, slices_read *r, slice *out) {
  int kind;
  weft_id id;
  uint64_t t0;
  while (ev_next(P, &r->c, &kind, &id, &t0)) {
    if (kind == EV_MARK) continue;
    if (kind == EV_NEST) {
      *out = (slice){id, t0, r->c.t};
      return 1;
    }
    uint64_t t = kind == EV_LATER ? later_at(P, r) : r->c.t;
    int had = r->open;
    slice done = r->top;
    done.t1 = t;
    r->open = kind != EV_CLOSE;
    r->top = (slice){id, t, t};
    if (had) {
      *out = done;
      return 1;
    }
  }
  return 0;
}

static uint64_t now(prof *P) { return weft__clock_ns() - P->start; }

/* The real clock, read; the watchdog's clock is remembered with it. */
static uint64_t read_now(weft_state *W, prof *P) {
  P->tick = W->watching ? atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed) : 0;
  return now(P);
}

static tinfo *task_info(prof *P, weft_id id) {
  if ((P->ntasks + 1) * 2 > P->tcap) {
    uint32_t cap = P->tcap ? P->tcap * 2 : 256;
    tinfo *t = weft__mem_calloc(P->W, cap, sizeof *t);
    if (!t) return NULL;
    for (uint32_t i = 0; i < P->tcap; i++)
      if (P->tasks[i].id) {
        uint32_t j = (uint32_t)(P->tasks[i].id * 0x9E3779B97F4A7C15ull >> 40) & (cap - 1);
        while (t[j].id) j = (j + 1) & (cap - 1);
        t[j] = P->tasks[i];
      }
    weft__mem_free(P->W, P->tasks, P->tcap * sizeof *t);
    P->tasks = t;
    P->tcap = cap;
  }
  uint32_t j = (uint32_t)(id * 0x9E3779B97F4A7C15ull >> 40) & (P->tcap - 1);
  while (P->tasks[j].id && P->tasks[j].id != id) j = (j + 1) & (P->tcap - 1);
  if (!P->tasks[j].id) {
    P->tasks[j].id = id;
    P->ntasks++;
  }
  return &P->tasks[j];
}

static void on_ready(void *user, weft_id woken) {
  weft_state *W = user;
  prof *P = W->prof;
  weft_id waker = W->cur ? W->cur : P ? P->last : 0;
  if (!P || !waker || waker == woken || !PUSH(P, wakes)) return;
  tinfo *t = task_info(P, woken);
  if (!t) return;
  uint64_t at = read_now(W, P);
  if (P->open) put_event(P, EV_MARK, 0, at, 0); /* inside the waker's slice */
  P->wakes[P->nwakes++] = (wake){waker, woken, at, 0};
  if (!t->wake) P->pending++;
  t->wake = (uint32_t)P->nwakes;
}

/* Protected (W at 1, the task's id at 2): the task's name in a profile
   and its module. A start's task (a brain, a cinematic: weft.start named
   it after its module) is "who module" and belongs to its module, so
   every guard on ai.patrol is "gate_guard ai.patrol", not the line that
   started it; any other task is weft's label ("ears patrol.lua:12"),
   and belongs to its spawn site's file (nothing pushed for the module). */
static int l_label(lua_State *L) {
  weft_state *W = lua_touserdata(L, 1);
  weft_id id = (weft_id)lua_tointeger(L, 2);
  char base[300];
  if (!weft__task_label(W, L, id, base, sizeof base)) return 0;
  lua_settop(L, 2);
  lua_getfield(L, LUA_REGISTRYINDEX, WEFT_START_GROUPS); /* 3 */
  weft__push_group_id(W, L, weft__task_group(W->S, id)); /* 4 */
  int started = lua_istable(L, 3) && !lua_isnil(L, 4) && lua_rawget(L, 3) != LUA_TNIL;
  lua_settop(L, 2);
  if (started && weft__push_task_name(W, L, id) && lua_isstring(L, 3)) { /* 3: the module */
    if (weft__push_who(W, L, id) && lua_isstring(L, 4) &&
        strcmp(lua_tostring(L, 4), lua_tostring(L, 3)) != 0)
      lua_pushfstring(L, "%s %s", lua_tostring(L, 4), lua_tostring(L, 3));
    else
      lua_pushvalue(L, 3);
    lua_pushvalue(L, 3);
    return 2;
  }
  lua_pushstring(L, base);
  return 1;
}

static void label(weft_state *W, prof *P, weft_id id) {
  tinfo *t = task_info(P, id);
  if (!t || t->label || !lua_checkstack(P->E, 6)) return;
  int top = lua_gettop(P->E);
  lua_pushcfunction(P->E, l_label);
  lua_pushlightuserdata(P->E, W);
  lua_pushinteger(P->E, (lua_Integer)id);
  if (lua_pcall(P->E, 2, 2, 0) == LUA_OK && lua_isstring(P->E, -2)) {
    t->label = weft__mem_strdup(W, lua_tostring(P->E, -2));
    if (lua_isstring(P->E, -1)) t->module = weft__mem_strdup(W, lua_tostring(P->E, -1));
  }
  lua_settop(P->E, top);
}

/* The slice a top-level resume left open ends at t. */
static void close_open(prof *P, uint64_t t) {
  if (P->open) put_event(P, EV_CLOSE, 0, t, 0);
  P->open = 0;
}

/* A top-level resume's slice ends where the next one starts (or the
   frame ends), the scheduler's fraction of a microsecond between them
   going to the one before. The real clock is read at a resume's start
   only once the watchdog's clock (which it moves every 250 us while a
   profile is on) has moved since the last read: a read costs 20-30 ns,
   a short resume 100, so one a resume was most of a profile's cost. The
   resumes in between are EV_LATERs, placed between the reads around
   them when the profile is written. A woken task's first resume (the
   end of a wake-up's arrow), and resumes inside resumes, at both ends,
   read it always; so does a counted budget, with no watchdog. */
WEFT_NOINLINE static void begin_timed(weft_state *W, prof *P) {
  tinfo *ti = P->pending && W->cur ? task_info(P, W->cur) : NULL; /* a woken task's first run */
  if (ti && !ti->wake) ti = NULL;
  if (P->depth < MAX_DEPTH) P->s0[P->depth] = P->nsamples;
  if (P->depth == 0 && !ti && P->tick &&
      atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed) == P->tick) {
    put_event(P, EV_LATER, W->cur, 0, 0); /* it ends the one open */
    P->open = 1;
    P->depth++;
    return;
  }
  uint64_t t = read_now(W, P);
  if (P->depth < MAX_DEPTH) P->t0[P->depth] = t;
  if (P->depth == 0) {
    put_event(P, EV_TOP, W->cur, t, 0); /* it ends the one open */
    P->open = 1;
  } else {
    put_event(P, EV_MARK, 0, t, 0); /* the slice around it began before */
  }
  P->depth++;
  if (ti) {
    P->wakes[ti->wake - 1].tf = t;
    ti->wake = 0;
    P->pending--;
  }
}

/* The commonest resume (top level, no woken task waiting for its first
   run, the watchdog's clock where it was last read, room in the block)
   is an EV_LATER put here, with no call; begin_timed does the rest. */
void weft__profile_begin(weft_state *W) {
  prof *P = W->prof;
  P->last = 0;
  if (P->depth || P->pending || !P->tick || P->ev_end - P->ev_p < EV_MAX + 1 ||
      atomic_load_explicit(&W->wd.clock_us, memory_order_relaxed) != P->tick) {
    begin_timed(W, P);
    return;
  }
  P->s0[0] = P->nsamples;
  uint8_t *p = P->ev_p;
  uint32_t index = WEFT_ID_INDEX(W->cur);
  if (index == P->ev_index + 1) {
    *p = EV_NEXT;
    P->ev_index = index;
    P->ev_p = put_u(p + 1, WEFT_ID_GEN(W->cur));
  } else {
    *p = EV_LATER;
    P->ev_p = put_id(P, p + 1, W->cur);
  }
  P->open = 1;
  P->depth = 1;
}

WEFT_NOINLINE static void end_nested_or_sampled(weft_state *W, prof *P, weft_id id) {
  if (--P->depth >= MAX_DEPTH || P->depth < 0) {
    if (P->depth < 0) P->depth = 0;
    return;
  }
  if (P->depth > 0) put_event(P, EV_NEST, id, P->t0[P->depth], read_now(W, P));
  /* A sampled resume's time after its last sample is its own too (else
     the next sample, another task's, would take it): one clock read a
     sampled resume, none for the many short ones. */
  if (P->nsamples != P->s0[P->depth] && P->samples[P->nsamples - 1].id == id) {
    uint64_t cpu = weft__thread_cpu_ns();
    if (cpu > P->cpu) P->samples[P->nsamples - 1].us += (uint32_t)((cpu - P->cpu) / 1000u);
    P->cpu = cpu;
  }
}

void weft__profile_end(weft_state *W, weft_id id) {
  prof *P = W->prof;
  P->last = id;
  if (P->depth != 1 || P->nsamples != P->s0[0]) {
    end_nested_or_sampled(W, P, id);
    return;
  }
  P->depth = 0; /* a top-level resume no sample landed in */
}

/* Its label is made once, when it ends (it is gone by the time the
   profile is written) or when the profile stops. */
void weft__profile_ended(weft_state *W, weft_id id) { label(W, W->prof, id); }

void weft__profile_frame(weft_state *W, int end) {
  prof *P = W->prof;
  P->last = 0; /* timers wake tasks at a frame's start */
  /* The slice open ends, and either way a time is written: the first
     resumes of a frame are placed after its start, not in the gap. */
  uint64_t t = read_now(W, P);
  put_event(P, P->open ? EV_CLOSE : EV_MARK, 0, t, 0);
  P->open = 0;
  if (!end) {
    P->frame_t0 = t;
    P->cpu = weft__thread_cpu_ns();
    return;
  }
  if (!PUSH(P, frames)) return; /* room for the pair: the sizes are even, pairs go in whole */
  P->frames[P->nframes++] = P->frame_t0;
  P->frames[P->nframes++] = t;
}

static uint32_t str_hash(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
  return h;
}

/* The index of a frame name, interned. */
static int intern(prof *P, const char *name) {
  if ((P->nf + 1) * 2 > P->hcap) {
    uint32_t cap = P->hcap ? P->hcap * 2 : 1024;
    uint32_t *h = weft__mem_calloc(P->W, cap, sizeof *h);
    if (!h) return -1;
    for (uint32_t i = 0; i < P->nf; i++) {
      uint32_t j = str_hash(P->fnames[i]) & (cap - 1);
      while (h[j]) j = (j + 1) & (cap - 1);
      h[j] = i + 1;
    }
    weft__mem_free(P->W, P->fhash, P->hcap * sizeof *h);
    P->fhash = h;
    P->hcap = cap;
  }
  uint32_t j = str_hash(name) & (P->hcap - 1);
  for (; P->fhash[j]; j = (j + 1) & (P->hcap - 1))
    if (strcmp(P->fnames[P->fhash[j] - 1], name) == 0) return (int)P->fhash[j] - 1;
  if (P->nf == P->capf) {
    uint32_t c = P->capf ? P->capf * 2 : 256;
    char **m = weft__mem_realloc(P->W, P->fnames, P->capf * sizeof *m, c * sizeof *m);
    if (!m) return -1;
    P->fnames = m;
    P->capf = c;
  }
  char *s = weft__mem_strdup(P->W, name);
  if (!s) return -1;
  P->fnames[P->nf] = s;
  P->fhash[j] = ++P->nf;
  return (int)P->nf - 1;
}

/* The frames of th from level 0, leaf first, into the stack vector. */
static void walk(prof *P, lua_State *th, uint32_t *n) {
  lua_Debug ar;
  for (int level = 0; *n < MAX_FRAMES && lua_getstack(th, level, &ar); level++) {
    if (!lua_getinfo(th, "Sn", &ar)) break;
    char name[400], fn[200];
    weft__frame_name(&ar, fn, sizeof fn);
    snprintf(name, sizeof name, "%s\t%s\t%d", fn, ar.short_src, ar.linedefined);
    int f = intern(P, name);
    if (f < 0 || !PUSH(P, stack)) return;
    P->stack[P->nstack++] = (uint32_t)f;
    (*n)++;
  }
}

void weft__profile_sample(weft_state *W, lua_State *L) {
  prof *P = W->prof;
  if (!P || !W->cur || W->holding || !PUSH(P, samples)) return;
  /* A tick: the clock is read inside the resume it lands in, so a long
     one is placed to within a tick (see weft__profile_begin). */
  uint64_t t = read_now(W, P);
  if (P->open) put_event(P, EV_MARK, 0, t, 0);
  uint32_t at = (uint32_t)P->nstack, n = 0;
  walk(P, L, &n);
  if (W->curL && W->curL != L) walk(P, W->curL, &n); /* a coroutine the task resumed */
  uint64_t cpu = weft__thread_cpu_ns();
  uint64_t us = cpu > P->cpu ? (cpu - P->cpu) / 1000u : 0;
  P->cpu = cpu;
  if (n)
    P->samples[P->nsamples++] =
        (sample){W->cur, at, n, us > UINT32_MAX ? UINT32_MAX : (uint32_t)us};
}

void weft__profile_held(weft_state *W, uint64_t cpu_ns) { W->prof->cpu += cpu_ns; }

/* ---- writing ---- */

static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 32)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static const char *label_of(prof *P, weft_id id) {
  tinfo *t = task_info(P, id);
  return t && t->label ? t->label : "task";
}

/* The module of a task: a start's own, else its label's file ("who
   file.lua:12"). */
static void module_of(prof *P, weft_id id, const char *label, char *out, size_t n) {
  tinfo *t = task_info(P, id);
  if (t && t->module) {
    snprintf(out, n, "%s", t->module);
    return;
  }
  const char *sp = strrchr(label, ' ');
  snprintf(out, n, "%s", sp ? sp + 1 : label);
  char *colon = strrchr(out, ':');
  if (colon) *colon = 0;
}

static int write_trace(prof *P, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return WEFT_EIO;
  fprintf(f,
          "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"weft\"},\"traceEvents\":[\n");
  fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":"
             "\"weft\"}},\n");
  fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":"
             "\"tasks\"}},\n");
  fprintf(
      f,
      "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"frames\"}}");
  for (size_t i = 0; i + 1 < P->nframes; i += 2)
    fprintf(f,
            ",\n{\"ph\":\"X\",\"cat\":\"frame\",\"name\":\"frame "
            "%zu\",\"pid\":1,\"tid\":2,\"ts\":%.3f,\"dur\":%.3f}",
            i / 2 + 1, P->frames[i] / 1e3, (P->frames[i + 1] - P->frames[i]) / 1e3);
  slices_read r = {0};
  slice sl, *s = &sl;
  while (slice_next(P, &r, s)) {
    const char *label = label_of(P, s->id);
    char mod[300];
    module_of(P, s->id, label, mod, sizeof mod);
    fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"task\",\"name\":");
    put_str(f, label);
    fprintf(f, ",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"task\":%u,\"module\":",
            s->t0 / 1e3, (s->t1 - s->t0) / 1e3, WEFT_ID_INDEX(s->id) + 1);
    put_str(f, mod);
    fprintf(f, "}}");
  }
  for (size_t i = 0; i < P->nwakes; i++) {
    wake *w = &P->wakes[i];
    if (!w->tf) continue;
    fprintf(f,
            ",\n{\"ph\":\"s\",\"cat\":\"wake\",\"name\":\"wake\",\"id\":%zu,\"pid\":1,\"tid\":1,"
            "\"ts\":%.3f}",
            i + 1, w->t / 1e3);
    fprintf(f,
            ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"wake\",\"name\":\"wake\",\"id\":%zu,\"pid\":1,"
            "\"tid\":1,\"ts\":%.3f}",
            i + 1, w->tf / 1e3);
  }
  fprintf(f, "\n]}\n");
  int bad = ferror(f);
  return fclose(f) == 0 && !bad ? WEFT_OK : WEFT_EIO;
}

/* By task, then in the order taken. */
static int cmp_id(const void *a, const void *b) {
  const sample *p = a, *q = b;
  if (p->id != q->id) return (p->id > q->id) - (p->id < q->id);
  return (p->at > q->at) - (p->at < q->at);
}

/* One task's samples in samples[i .. j) and their time. */
typedef struct group_span {
  size_t i, j;
  uint64_t total;
} group_span;

/* The costliest first; ties by task, as taken. */
static int by_total(const void *a, const void *b) {
  const group_span *p = a, *q = b;
  if (p->total != q->total) return p->total < q->total ? 1 : -1;
  return (p->i > q->i) - (p->i < q->i);
}

static int write_speedscope(prof *P, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return WEFT_EIO;
  if (P->nsamples)
    qsort(P->samples, P->nsamples, sizeof *P->samples, cmp_id); /* none yet: no array */
  fprintf(
      f,
      "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"weft\","
      "\"name\":\"weft profile\",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
  for (uint32_t i = 0; i < P->nf; i++) {
    char name[400];
    snprintf(name, sizeof name, "%s", P->fnames[i]);
    char *file = strchr(name, '\t');
    char *line = file ? strchr(file + 1, '\t') : NULL;
    if (file) *file++ = 0;
    if (line) *line++ = 0;
    fprintf(f, "%s{\"name\":", i ? "," : "");
    put_str(f, name);
    if (file) {
      fprintf(f, ",\"file\":");
      put_str(f, file);
      fprintf(f, ",\"line\":%d", line ? atoi(line) : 0);
    }
    fputc('}', f);
  }
  fprintf(f, "]},\"profiles\":[");
  /* a profile a task, the costliest first: speedscope opens the first */
  size_t ngroups = 0;
  for (size_t i = 0; i < P->nsamples; i++)
    ngroups += i == 0 || P->samples[i].id != P->samples[i - 1].id;
  size_t spans_size = sizeof(group_span) * (ngroups ? ngroups : 1);
  group_span *spans = weft__mem_alloc(P->W, spans_size);
  if (!spans) {
    fclose(f);
    return WEFT_ENOMEM;
  }
  for (size_t i = 0, g = 0; i < P->nsamples;) {
    size_t j = i;
    uint64_t total = 0;
    while (j < P->nsamples && P->samples[j].id == P->samples[i].id) total += P->samples[j++].us;
    spans[g++] = (group_span){i, j, total};
    i = j;
  }
  qsort(spans, ngroups, sizeof *spans, by_total);
  int first = 1;
  for (size_t g = 0; g < ngroups; g++) {
    size_t i = spans[g].i, j = spans[g].j;
    fprintf(f, "%s\n{\"type\":\"sampled\",\"name\":", first ? "" : ",");
    first = 0;
    put_str(f, label_of(P, P->samples[i].id));
    uint64_t total = spans[g].total;
    fprintf(f, ",\"unit\":\"microseconds\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
            (unsigned long long)total);
    for (size_t k = i; k < j; k++) {
      sample *s = &P->samples[k];
      fputs(k > i ? ",[" : "[", f);
      for (uint32_t d = s->n; d-- > 0;) fprintf(f, "%u%s", P->stack[s->at + d], d ? "," : "");
      fputc(']', f);
    }
    fprintf(f, "],\"weights\":[");
    for (size_t k = i; k < j; k++) fprintf(f, "%s%u", k > i ? "," : "", P->samples[k].us);
    fprintf(f, "]}");
  }
  weft__mem_free(P->W, spans, spans_size);
  fprintf(f, "]}\n");
  return fclose(f) == 0 ? WEFT_OK : WEFT_EIO;
}

/* path with .json (or nothing) replaced by .speedscope.json */
static char *speedscope_path(weft_state *W, const char *path) {
  size_t n = strlen(path);
  if (n >= 5 && strcmp(path + n - 5, ".json") == 0) n -= 5;
  size_t k = n + sizeof ".speedscope.json"; /* the string and its 0: weft__mem_free_str's size */
  char *p = weft__mem_alloc(W, k);
  if (p) snprintf(p, k, "%.*s.speedscope.json", (int)n, path);
  return p;
}

int weft_profile_start(weft_state *W, const char *path) {
  if (!W || !path) return WEFT_EINVAL;
  if (W->prof) return WEFT_ESTATE;
  prof *P = weft__mem_calloc(W, 1, sizeof *P);
  if (P) P->W = W;
  if (!P || !(P->path = weft__mem_strdup(W, path)) || !lua_checkstack(W->L, 2)) {
    if (P) weft__mem_free_str(W, P->path);
    weft__mem_free(W, P, sizeof *P);
    return WEFT_ENOMEM;
  }
  P->E = lua_newthread(W->L);
  P->ref_E = luaL_ref(W->L, LUA_REGISTRYINDEX);
  P->start = weft__clock_ns();
  P->cpu = weft__thread_cpu_ns();
  W->prof = P;
  W->cost.slow_way = weft__cost_way(W->prof != NULL, W->cost.clock);
  weft__sched_on_ready(W->S, on_ready, W);
  atomic_store(&W->wd.sample, 1);
  return WEFT_OK;
}

static void free_prof(weft_state *W, prof *P) {
  for (uint32_t i = 0; i < P->tcap; i++)
    weft__mem_free_str(W, P->tasks[i].label), weft__mem_free_str(W, P->tasks[i].module);
  for (uint32_t i = 0; i < P->nf; i++) weft__mem_free_str(W, P->fnames[i]);
  if (W->L) luaL_unref(W->L, LUA_REGISTRYINDEX, P->ref_E);
  weft__mem_free(W, P->tasks, P->tcap * sizeof *P->tasks);
  weft__mem_free(W, P->fnames, P->capf * sizeof *P->fnames);
  weft__mem_free(W, P->fhash, P->hcap * sizeof *P->fhash);
  for (size_t i = 0; i < P->nsblocks; i++) weft__mem_free(W, P->sblocks[i], SBLOCK);
  weft__mem_free(W, P->sblocks, P->capsblocks * sizeof *P->sblocks);
  weft__mem_free(W, P->wakes, P->capwakes * sizeof *P->wakes);
  weft__mem_free(W, P->samples, P->capsamples * sizeof *P->samples);
  weft__mem_free(W, P->stack, P->capstack * sizeof *P->stack);
  weft__mem_free(W, P->frames, P->capframes * sizeof *P->frames);
  weft__mem_free_str(W, P->path);
  weft__mem_free(W, P, sizeof *P);
}

int weft_profile_stop(weft_state *W) {
  prof *P = W ? W->prof : NULL;
  if (!P) return WEFT_ESTATE;
  atomic_store(&W->wd.sample, 0);
  weft__sched_on_ready(W->S, NULL, NULL);
  close_open(P, read_now(W, P));
  slices_read r = {0};
  slice s;
  while (slice_next(P, &r, &s)) label(W, P, s.id); /* the tasks still live */
  W->prof = NULL;
  W->cost.slow_way = weft__cost_way(W->prof != NULL, W->cost.clock);
  char *sp = speedscope_path(W, P->path);
  int rc = write_trace(P, P->path);
  if (rc == WEFT_OK) rc = sp ? write_speedscope(P, sp) : WEFT_ENOMEM;
  weft__mem_free_str(W, sp);
  free_prof(W, P);
  return rc;
}

void weft__profile_free(weft_state *W) {
  if (W->prof) weft_profile_stop(W);
}
