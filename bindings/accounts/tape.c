/* Record and replay. A recording is written as the run goes: a header,
   then records, each `tag, length, body`, with a checkpoint flushed
   every half second of play, then a trailer. The records of
   one frame come before its step record ('S'): the embedder's input, the
   script files read, the reloads, the jobs delivered and the clock reads
   of that frame, in the order they happened. A replay loads the whole
   file, checks it, and serves each read from the records of the frame
   running now. The format is described in docs/programs.md; tapefile.c encodes
   and loads it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tape.h"
#include "budget.h"
#include "../base/tapefile.h"
#include "../base/desc.h"
#include "../base/log.h"

/* ---- writing ---- */

static void write_raw(weft_tape *T, const void *p, size_t n) {
  if (T->failed || !T->f) return;
  if (fwrite(p, 1, n, T->f) != n) T->failed = 1;
  T->sum = weft__tape_fnv32(T->sum, p, n);
}

/* The scratch buffer, emptied, for the next record's body. */
static bytes *body_of(weft_tape *T) {
  T->scratch.n = 0;
  T->scratch.oom = 0;
  return &T->scratch;
}

static void write_rec(weft_tape *T, int tag, const bytes *body) {
  if (body->oom) {
    T->failed = 1;
    return;
  }
  unsigned char head[11];
  size_t n = 0;
  uint64_t len = body->n;
  head[n++] = (unsigned char)tag;
  do {
    head[n] = (unsigned char)(len & 0x7f);
    len >>= 7;
    if (len) head[n] |= 0x80;
    n++;
  } while (len);
  write_raw(T, head, n);
  write_raw(T, body->p, body->n);
}

/* After a step record: at least every CHECK_EVERY_S seconds of play
   (game time or real time, whichever comes first), a checkpoint naming
   the frames so far and the checksum of every byte before it, and the
   file flushed to the system (no fsync): a file cut short by a kill or a
   crash replays up to its last checkpoint. */
static void checkpoint(weft_tape *T) {
  uint64_t now = weft__clock_ns();
  T->check_dt += T->dt;
  if (T->check_dt < CHECK_EVERY_S - 1e-9 && now - T->check_ns < (uint64_t)(CHECK_EVERY_S * 1e9))
    return;
  T->check_dt = 0;
  T->check_ns = now;
  bytes *b = body_of(T);
  weft__tape_put_u(b, T->frame + 1, 8);
  weft__tape_put_u(b, T->sum, 4);
  write_rec(T, R_CHECK, b);
  if (!T->failed && T->f && fflush(T->f) != 0) T->failed = 1;
}

/* ---- the state a frame hashes ---- */

/* The id of a hash part, made (and named in the file) on first use. */
static int part_id(weft_tape *T, const char *name) {
  for (int i = 0; i < T->nparts; i++)
    if (strcmp(T->parts[i].name, name) == 0) return i;
  if (T->nparts >= MAX_PARTS) return -1;
  part *p = &T->parts[T->nparts];
  snprintf(p->name, sizeof p->name, "%s", name);
  p->h = FNV64_INIT;
  p->set = 0;
  if (T->recording) {
    bytes *b = body_of(T);
    weft__tape_put_varint(b, (uint64_t)T->nparts);
    weft__tape_put(b, p->name, strlen(p->name));
    write_rec(T, R_PART, b);
  }
  return T->nparts++;
}

static void fold(weft_tape *T, const char *name, const void *data, size_t len) {
  int id = part_id(T, name);
  if (id < 0) return;
  T->parts[id].h = weft__tape_fnv64(T->parts[id].h, data, len);
  T->parts[id].set = 1;
}

/* math.random's state (pushes nothing; NULL when not the expected one). */
unsigned char *weft__rng_state(lua_State *L) {
  unsigned char *st = NULL;
  lua_getglobal(L, "math");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "random");
    if (lua_iscfunction(L, -1) && lua_getupvalue(L, -1, 1)) {
      if (lua_type(L, -1) == LUA_TUSERDATA && lua_rawlen(L, -1) == RNG_BYTES)
        st = lua_touserdata(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return st;
}

/* The library's own parts: the random generator, and the scheduler's
   clocks and counts. */
static void fold_library(weft_state *W, weft_tape *T) {
  unsigned char *st = weft__rng_state(W->L);
  if (st) fold(T, "random", st, RNG_BYTES);
  struct {
    double now, real;
    uint64_t frame, resumes;
    uint32_t tasks, errors, reloads, pad;
  } s = {weft__sched_now(W->S),
         weft__sched_realtime(W->S),
         weft__sched_frame(W->S),
         weft__sched_resumes(W->S),
         weft__sched_task_count(W->S),
         W->errors,
         W->mods.reloads,
         0};
  fold(T, "tasks", &s, sizeof s);
}

void weft_tape_hash(weft_state *W, const char *name, const void *data, size_t len) {
  if (!W || !W->tape || !name || (!data && len)) return;
  fold(W->tape, name, data, len);
}

/* ---- files ---- */

static tfile *find_file(weft_tape *T, const char *path, int flags) {
  for (int i = 0; i < T->nfiles; i++)
    if ((T->files[i].flags & 2) == (flags & 2) && strcmp(T->files[i].path, path) == 0)
      return &T->files[i];
  return NULL;
}

/* Sets the latest text of a file; owned copies when recording. */
static int set_file(weft_tape *T, const char *path, size_t plen, int flags, const char *text,
                    size_t len) {
  char *key = weft__tape_mem(T, NULL, 0, plen + 1);
  if (!key) return -1;
  memcpy(key, path, plen);
  key[plen] = 0;
  tfile *f = find_file(T, key, flags);
  const char *copy = text;
  if (T->recording) {
    char *c = weft__tape_mem(T, NULL, 0, len + 1);
    if (!c) return weft__tape_mem(T, key, plen + 1, 0), -1;
    memcpy(c, text, len);
    c[len] = 0;
    copy = c;
  }
  if (f) {
    weft__tape_mem(T, key, plen + 1, 0);
    if (T->recording) weft__tape_mem(T, (void *)f->text, f->len + 1, 0);
  } else {
    if (T->nfiles == T->capfiles) {
      int cap = T->capfiles ? T->capfiles * 2 : 16;
      tfile *nf =
          weft__tape_mem(T, T->files, sizeof *nf * (size_t)T->capfiles, sizeof *nf * (size_t)cap);
      if (!nf) {
        if (T->recording) weft__tape_mem(T, (void *)copy, len + 1, 0);
        return weft__tape_mem(T, key, plen + 1, 0), -1;
      }
      T->files = nf;
      T->capfiles = cap;
    }
    f = &T->files[T->nfiles++];
    f->path = key;
  }
  f->text = copy;
  f->len = len;
  f->flags = flags;
  return 0;
}

/* The path as the tape keys it: relative to the scripts root when under
   it (flag 2), so a replay from another directory finds it. */
static const char *tape_path(weft_state *W, const char *path, int *flags) {
  size_t n = strlen(W->root);
  *flags = 0;
  if (strncmp(path, W->root, n) == 0 && path[n] == '/') {
    *flags = 2;
    return path + n + 1;
  }
  return path;
}

int weft__tape_read_file(weft_state *W, lua_State *L, const char *path,
                         int (*read)(lua_State *L, const char *path)) {
  weft_tape *T = W->tape;
  int flags;
  const char *key = tape_path(W, path, &flags);
  if (!T->recording) {
    tfile *f = find_file(T, key, flags);
    if (!f) {
      weft__tape_diverged(W, "a script read a file the recording never read");
      lua_pushfstring(L, "cannot open %s (not in the recording)", path);
      return 0;
    }
    lua_pushlstring(L, f->text, f->len);
    return f->flags & 1;
  }
  int ok = read(L, path);
  size_t len;
  const char *text = lua_tolstring(L, -1, &len);
  flags |= ok ? 1 : 0;
  tfile *f = find_file(T, key, flags);
  if (f && f->flags == flags && f->len == len && memcmp(f->text, text, len) == 0) return ok;
  bytes *b = body_of(T);
  unsigned char fl = (unsigned char)flags;
  weft__tape_put(b, &fl, 1);
  weft__tape_put_str(b, key, strlen(key));
  weft__tape_put(b, text, len);
  write_rec(T, R_FILE, b);
  if (set_file(T, key, strlen(key), flags, text, len) != 0) T->failed = 1;
  return ok;
}

/* ---- reloads, jobs, clocks ---- */

void weft__tape_reload(weft_state *W, const char *relpath) {
  if (!W->tape || !W->tape->recording) return;
  bytes *b = body_of(W->tape);
  weft__tape_put(b, relpath, strlen(relpath));
  write_rec(W->tape, R_RELOAD, b);
}

void weft__tape_job(weft_state *W, uint64_t seq) {
  if (!W->tape || !W->tape->recording) return;
  bytes *b = body_of(W->tape);
  weft__tape_put_varint(b, seq);
  write_rec(W->tape, R_JOB, b);
}

/* Reads the record at *at (advancing it) within [.., end). */
static int next_rec(const weft_tape *T, size_t *at, size_t end, rec *r) {
  if (*at >= end) return 0;
  reader rd = {T->buf + *at + 1, T->buf + end, 0};
  uint64_t n = weft__tape_get_varint(&rd);
  r->tag = T->buf[*at];
  r->body = rd.p;
  r->len = (size_t)n;
  *at = (size_t)(rd.p - T->buf) + (size_t)n;
  return 1;
}

/* The next record of kind tag in the frame about to run, from *cur. */
static int next_of(weft_tape *T, size_t *cur, int tag, rec *r) {
  while (next_rec(T, cur, T->seg_end, r))
    if (r->tag == tag) return 1;
  return 0;
}

const char *weft__tape_next_reload(weft_state *W) {
  weft_tape *T = W->tape;
  rec r;
  if (!next_of(T, &T->cur_reload, R_RELOAD, &r)) return NULL;
  size_t n = r.len < sizeof T->reload_path - 1 ? r.len : sizeof T->reload_path - 1;
  memcpy(T->reload_path, r.body, n);
  T->reload_path[n] = 0;
  return T->reload_path;
}

int weft__tape_next_job(weft_state *W, uint64_t *seq) {
  weft_tape *T = W->tape;
  rec r;
  if (!next_of(T, &T->cur_job, R_JOB, &r)) return 0;
  reader rd = {r.body, r.body + r.len, 0};
  *seq = weft__tape_get_varint(&rd);
  return 1;
}

int weft_replay_input(weft_state *W, const void **data, size_t *len) {
  if (!W || !W->tape || W->tape->recording || !data || !len) return 0;
  weft_tape *T = W->tape;
  rec r;
  if (!next_of(T, &T->cur_input, R_INPUT, &r)) return 0;
  *data = r.body;
  *len = r.len;
  return 1;
}

int weft_record_input(weft_state *W, const void *data, size_t len) {
  if (!W || !W->tape || !W->tape->recording) return WEFT_ESTATE;
  if (!data && len) return WEFT_EINVAL;
  bytes *b = body_of(W->tape);
  weft__tape_put(b, data, len);
  write_rec(W->tape, R_INPUT, b);
  return W->tape->failed ? WEFT_EIO : WEFT_OK;
}

/* A clock value: nil, boolean, integer, float, string, or a flat table
   of those under string keys (os.date("*t")). */
static void put_value(bytes *b, lua_State *L, int idx, int depth) {
  unsigned char t;
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN:
    t = lua_toboolean(L, idx) ? 'T' : 'B';
    weft__tape_put(b, &t, 1);
    break;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      t = 'i';
      weft__tape_put(b, &t, 1);
      weft__tape_put_u(b, (uint64_t)lua_tointeger(L, idx), 8);
    } else {
      t = 'f';
      weft__tape_put(b, &t, 1);
      weft__tape_put_f64(b, lua_tonumber(L, idx));
    }
    break;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    t = 's';
    weft__tape_put(b, &t, 1);
    weft__tape_put_str(b, s, n);
    break;
  }
  case LUA_TTABLE:
    if (depth == 0) {
      t = 't';
      weft__tape_put(b, &t, 1);
      idx = lua_absindex(L, idx);
      lua_pushnil(L);
      while (lua_next(L, idx)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
          size_t n;
          const char *k = lua_tolstring(L, -2, &n);
          weft__tape_put_str(b, k, n);
          put_value(b, L, -1, 1);
        }
        lua_pop(L, 1);
      }
      weft__tape_put_str(b, "", 0); /* the end */
      break;
    }
    /* fallthrough */
  default:
    t = 'n';
    weft__tape_put(b, &t, 1);
  }
}

/* Protected: pushes the value read from the reader (light userdata at 1). */
static int l_get_value(lua_State *L) {
  reader *r = lua_touserdata(L, 1);
  int tag = (int)weft__tape_get_u(r, 1);
  switch (tag) {
  case 'T':
    lua_pushboolean(L, 1);
    break;
  case 'B':
    lua_pushboolean(L, 0);
    break;
  case 'i':
    lua_pushinteger(L, (lua_Integer)weft__tape_get_u(r, 8));
    break;
  case 'f':
    lua_pushnumber(L, weft__tape_get_f64(r));
    break;
  case 's': {
    size_t n;
    const char *s = weft__tape_get_str(r, &n);
    lua_pushlstring(L, s, n);
    break;
  }
  case 't':
    lua_newtable(L);
    for (;;) {
      size_t n;
      const char *k = weft__tape_get_str(r, &n);
      if (r->bad || n == 0) break;
      lua_pushlstring(L, k, n);
      lua_pushcfunction(L, l_get_value);
      lua_pushlightuserdata(L, r);
      lua_call(L, 1, 1);
      lua_rawset(L, -3);
    }
    break;
  default:
    lua_pushnil(L);
  }
  return 1;
}

/* os.time, os.clock, os.date while recording or replaying: the library
   function (upvalue 1) runs as ever (its errors are its own); its value
   is recorded, or replaced by the recorded one. */
static int l_clock(lua_State *L) {
  weft_state *W = weft__get(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  weft_tape *T = W->tape;
  if (!T) return 1;
  if (T->recording) {
    bytes *b = body_of(T);
    put_value(b, L, -1, 0);
    write_rec(T, R_CLOCK, b);
    return 1;
  }
  rec r;
  if (!next_of(T, &T->cur_clock, R_CLOCK, &r)) {
    weft__tape_diverged(W, "a script read the clock more often than when recorded");
    return 1;
  }
  reader rd = {r.body, r.body + r.len, 0};
  lua_pushcfunction(L, l_get_value);
  lua_pushlightuserdata(L, &rd);
  lua_call(L, 1, 1);
  return 1;
}

/* Puts l_clock around the API's os.time, os.clock and os.date (before
   any script made its environment from it). The API table is taken from
   the registry, not through weft_push_api: state.c calls into tape.c,
   never the other way. */
static void wrap_clocks(weft_state *W) {
  lua_State *L = W->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, W->ref_api);
  lua_getfield(L, -1, "os");
  if (lua_istable(L, -1)) {
    static const char *const names[] = {"time", "clock", "date"};
    for (int i = 0; i < 3; i++) {
      lua_getfield(L, -1, names[i]);
      lua_pushcclosure(L, l_clock, 1);
      lua_setfield(L, -2, names[i]);
    }
  }
  lua_pop(L, 2);
}

/* ---- starting ---- */

static int fresh(const weft_state *W) {
  return !W->tape && weft__sched_resumes(W->S) == 0 && weft__sched_task_count(W->S) == 0 &&
         weft__sched_frame(W->S) == 0;
}

/* Starts a recording of W (fresh, or just loaded from save). */
static int record(weft_state *W, const char *path, const void *meta, size_t meta_len,
                  const void *save, size_t save_len) {
  const unsigned char *rng = weft__rng_state(W->L);
  if (!rng) return WEFT_EINVAL;
  weft_tape *T = weft__mem_calloc(W, 1, sizeof *T);
  if (!T) return WEFT_ENOMEM;
  weft__tape_set_alloc(T, weft__host_alloc, W);
  T->recording = 1;
  T->sum = FNV32_INIT;
  T->f = fopen(path, "wb");
  if (!T->f) return weft__mem_free(W, T, sizeof *T), WEFT_EIO;
  T->check_ns = weft__clock_ns();
  write_raw(T, MAGIC, 8);
  bytes *h = body_of(T);
  weft__tape_put_u(h, VERSION, 4);
  weft__tape_put_str(h, WEFT_VERSION_STRING, strlen(WEFT_VERSION_STRING));
  weft__tape_put_str(h, W->root, strlen(W->root));
  weft__tape_put_u(h, W->desc.memory_limit, 8);
  weft__tape_put_u(h, W->desc.instr_budget, 4);
  weft__tape_put_u(h, W->desc.runaway_us, 4);
  weft__tape_put_u(h, W->desc.frame_budget, 4);
  weft__tape_put_u(h, W->desc.max_tasks, 4);
  weft__tape_put(h, rng, RNG_BYTES);
  weft__tape_put_str(h, meta ? meta : "", meta_len);
  write_rec(T, 'H', h);
  if (save) { /* the world it starts from */
    h = body_of(T);
    weft__tape_put(h, save, save_len);
    write_rec(T, R_SAVE, h);
  }
  if (!T->failed && fflush(T->f) != 0) T->failed = 1;
  W->tape = T;
  wrap_clocks(W);
  weft__budget_count(W); /* a replay stops every stretch where this run does */
  return T->failed ? WEFT_EIO : WEFT_OK;
}

int weft_record(weft_state *W, const char *path, const void *meta, size_t meta_len) {
  if (!W || !path || (!meta && meta_len)) return WEFT_EINVAL;
  if (!fresh(W)) return WEFT_ESTATE;
  return record(W, path, meta, meta_len, NULL, 0);
}

int weft_record_from(weft_state *W, const char *path, const void *meta, size_t meta_len,
                     const void *save, size_t save_len) {
  if (!W || !path || (!meta && meta_len) || !save) return WEFT_EINVAL;
  if (W->tape || !W->loaded) return WEFT_ESTATE;
  return record(W, path, meta, meta_len, save, save_len);
}

int weft_record_stop(weft_state *W) {
  if (!W || !W->tape || !W->tape->recording) return WEFT_ESTATE;
  weft_tape *T = W->tape;
  unsigned char tail[1 + 1 + 12];
  tail[0] = R_END;
  tail[1] = 12;
  for (int i = 0; i < 8; i++) tail[2 + i] = (unsigned char)(T->frame >> (8 * i));
  uint32_t sum = weft__tape_fnv32(T->sum, tail, 10);
  for (int i = 0; i < 4; i++) tail[10 + i] = (unsigned char)(sum >> (8 * i));
  write_raw(T, tail, sizeof tail);
  if (fclose(T->f) != 0) T->failed = 1;
  T->f = NULL;
  int rc = T->failed ? WEFT_EIO : WEFT_OK;
  /* Clocks stay wrapped; with no tape they only pass through. */
  W->tape = NULL;
  weft_tape_free(T);
  return rc;
}

/* ---- replaying ---- */

/* Makes the frame starting at T->seg the one about to run: its files
   become readable, its dt known. */
static void enter_frame(weft_tape *T) {
  size_t at = T->seg;
  rec r;
  T->seg_end = T->body_end;
  T->ended = 1;
  for (;;) {
    size_t here = at;
    if (!next_rec(T, &at, T->body_end, &r)) break;
    if (r.tag == R_STEP) {
      T->seg_end = here;
      T->ended = 0;
      reader rd = {r.body, r.body + r.len, 0};
      if (weft__tape_get_u(&rd, 1) & 1) T->last_dt = weft__tape_get_f64(&rd);
      T->dt = T->last_dt;
      break;
    }
    if (r.tag == R_FILE) {
      reader rd = {r.body, r.body + r.len, 0};
      int flags = (int)weft__tape_get_u(&rd, 1);
      size_t pl;
      const char *p = weft__tape_get_str(&rd, &pl);
      if (set_file(T, p, pl, flags, (const char *)rd.p, (size_t)(rd.end - rd.p)) != 0)
        snprintf(T->diverged, sizeof T->diverged, "out of memory while replaying");
    } else if (r.tag == R_PART) {
      reader rd = {r.body, r.body + r.len, 0};
      uint64_t id = weft__tape_get_varint(&rd);
      if ((int)id == T->nparts) {
        size_t nl = (size_t)(rd.end - rd.p) < 31 ? (size_t)(rd.end - rd.p) : 31;
        memcpy(T->parts[id].name, rd.p, nl);
        T->parts[id].name[nl] = 0;
        T->parts[id].h = FNV64_INIT;
        T->nparts++;
      }
    }
  }
  T->cur_input = T->cur_reload = T->cur_job = T->cur_clock = T->seg;
}

int weft_replay(weft_state *W, weft_tape *T) {
  if (!W || !T) return WEFT_EINVAL;
  if (T->save ? W->tape || !W->loaded : !fresh(W)) return WEFT_ESTATE;
  /* W's limits are the recording's, or tighter where the recording's were
     looser than the replaying program allows (weft_tape_desc): said. */
  if (strcmp(W->root, T->root) != 0 || weft__desc_looser(&W->desc, &T->desc)) return WEFT_EINVAL;
  int tighter = weft__desc_looser(&T->desc, &W->desc);
  if (tighter) {
    char held[200];
    snprintf(held, sizeof held, "%s%s%s%s%s", tighter & WEFT_LIMIT_MEMORY ? " memory" : "",
             tighter & WEFT_LIMIT_BUDGET ? " budget" : "",
             tighter & WEFT_LIMIT_RUNAWAY ? " runaway" : "",
             tighter & WEFT_LIMIT_FRAME ? " frame-budget" : "",
             tighter & WEFT_LIMIT_TASKS ? " tasks" : "");
    weft__logf(W, WEFT_LOG_WARN, WEFT_LOG_REPLAY_LIMITS,
               "the recording was made with looser limits than this program allows (%s): it "
               "replays under this program's, and differs where its scripts ran into them",
               held + 1);
  }
  unsigned char *rng = weft__rng_state(W->L);
  if (!rng) return WEFT_EINVAL;
  memcpy(rng, T->rng, RNG_BYTES);
  T->recording = 0;
  W->tape = T;
  wrap_clocks(W);
  weft__budget_count(W);
  enter_frame(T);
  return WEFT_OK;
}

int weft__tape_replaying(const weft_state *W) { return W->tape && !W->tape->recording; }

int weft_replay_frame(weft_state *W, double *dt) {
  if (!W || !W->tape || W->tape->recording || W->tape->ended) return 0;
  if (dt) *dt = W->tape->dt;
  return 1;
}

void weft__tape_diverged(weft_state *W, const char *what) {
  weft_tape *T = W->tape;
  if (!T || T->recording || T->diverged[0]) return;
  snprintf(T->diverged, sizeof T->diverged, "frame %llu: %s", (unsigned long long)T->frame + 1,
           what);
}

int weft_replay_check(const weft_state *W, char *buf, size_t n) {
  if (!W || !W->tape || W->tape->recording || !W->tape->diverged[0]) return 0;
  if (buf && n) snprintf(buf, n, "%s", W->tape->diverged);
  return 1;
}

uint64_t weft_replay_position(const weft_state *W) {
  return W && W->tape && !W->tape->recording ? W->tape->frame : 0;
}

double weft__tape_step_begin(weft_state *W, double dt) {
  weft_tape *T = W->tape;
  if (T->recording) T->dt = dt;
  return T->recording || T->ended ? dt : T->dt;
}

static uint32_t total_hash(const weft_tape *T) {
  uint32_t h = FNV32_INIT;
  for (int i = 0; i < T->nparts; i++)
    if (T->parts[i].set) h = weft__tape_fnv32(h, &T->parts[i].h, 8);
  return h;
}

/* Replaying: compares the frame's hashes with the step record's. */
static void check_step(weft_state *W, weft_tape *T) {
  rec r = {0, NULL, 0};
  size_t at = T->seg_end;
  next_rec(T, &at, T->body_end, &r);
  reader rd = {r.body, r.body + r.len, 0};
  if (weft__tape_get_u(&rd, 1) & 1) weft__tape_get_f64(&rd);
  uint32_t total = (uint32_t)weft__tape_get_u(&rd, 4);
  uint64_t np = weft__tape_get_varint(&rd);
  char what[200] = "";
  size_t w = 0;
  int seen[MAX_PARTS] = {0};
  for (uint64_t i = 0; i < np; i++) {
    int id = (int)weft__tape_get_varint(&rd);
    uint16_t h16 = (uint16_t)weft__tape_get_u(&rd, 2);
    if (id >= T->nparts) continue;
    seen[id] = 1;
    if (!T->parts[id].set || (uint16_t)T->parts[id].h != h16)
      w += (size_t)snprintf(what + w, w < sizeof what ? sizeof what - w : 0, "%s%s", w ? ", " : "",
                            T->parts[id].name);
  }
  for (int i = 0; i < T->nparts && w < sizeof what; i++)
    if (T->parts[i].set && !seen[i])
      w += (size_t)snprintf(what + w, sizeof what - w, "%s%s (not hashed when recorded)",
                            w ? ", " : "", T->parts[i].name);
  if (!w && total != total_hash(T)) snprintf(what, sizeof what, "the state");
  if (w || what[0]) {
    char msg[sizeof what + 8];
    snprintf(msg, sizeof msg, "%s %s", what, strchr(what, ',') ? "differ" : "differs");
    weft__tape_diverged(W, msg);
  }
  if (!T->diverged[0]) {
    rec c;
    size_t cur = T->cur_clock;
    if (next_of(T, &cur, R_CLOCK, &c))
      weft__tape_diverged(W, "a script read the clock less often than when recorded");
  }
  T->seg = at;
}

void weft__tape_step_end(weft_state *W) {
  weft_tape *T = W->tape;
  if (!T->recording && T->ended) return;
  fold_library(W, T);
  if (T->recording) {
    bytes *b = body_of(T);
    int newdt = T->frame == 0 || T->last_dt != T->dt;
    weft__tape_put_u(b, (uint64_t)newdt, 1);
    if (newdt) weft__tape_put_f64(b, T->dt);
    T->last_dt = T->dt;
    weft__tape_put_u(b, total_hash(T), 4);
    int n = 0;
    for (int i = 0; i < T->nparts; i++) n += T->parts[i].set;
    weft__tape_put_varint(b, (uint64_t)n);
    for (int i = 0; i < T->nparts; i++)
      if (T->parts[i].set) {
        weft__tape_put_varint(b, (uint64_t)i);
        weft__tape_put_u(b, T->parts[i].h & 0xffff, 2);
      }
    write_rec(T, R_STEP, b);
    checkpoint(T);
  } else {
    check_step(W, T);
  }
  for (int i = 0; i < T->nparts; i++) {
    T->parts[i].h = FNV64_INIT;
    T->parts[i].set = 0;
  }
  T->frame++;
  if (!T->recording) enter_frame(T);
}

void weft__tape_free_state(weft_state *W) {
  if (!W->tape) return;
  if (W->tape->recording) {
    weft_record_stop(W);
    return;
  }
  weft_tape_free(W->tape);
  W->tape = NULL;
}
