/* A recording's file format (tapefile.c): its records and what a tape
   holds, the encoding of record bodies, and reading them back. Shared by
   tape.c (recording and replaying) and tapefile.c (loading). */
#ifndef WEFT_TAPEFILE_H
#define WEFT_TAPEFILE_H

#include <stdio.h>

#include "internal.h"

#define MAGIC "WEFTTAPE"
#define VERSION                                                                                    \
  3u /* 3: the runaway limit in the header; 2: checkpoints (R_CHECK); 1 and 2 load too */
#define CHECK_EVERY_S 0.5 /* a checkpoint at least this often, in game or real seconds */
#define MAX_PARTS 16
#define RNG_BYTES 32 /* Lua 5.4's math.random state: four 64-bit words */

enum {
  R_INPUT = 'I',  /* the embedder's input: its bytes */
  R_FILE = 'F',   /* a script read: flags (1 present, 2 under the root), path, text */
  R_RELOAD = 'R', /* the watcher saw a file saved: its path */
  R_JOB = 'J',    /* a job delivered: its number */
  R_CLOCK = 'C',  /* os.time/clock/date returned: a value */
  R_PART = 'P',   /* a hash part's name: id, name */
  R_STEP = 'S',   /* a frame ran: flags (1: dt follows), dt, hashes */
  R_CHECK = 'K',  /* a checkpoint after a step: frames so far, checksum of every byte before */
  R_SAVE = 'W',   /* first, when the recording starts from a save: weft_save's bytes */
  R_END = 'E'     /* the trailer: frames, checksum of everything before */
};

typedef struct part {
  char name[32];
  uint64_t h; /* FNV-1a of what was folded in this frame */
  int set;    /* folded in this frame */
} part;

/* The latest text of each script file read (replay: pointers into buf;
   record: owned copies, to write only what changed). */
typedef struct tfile {
  char *path;
  const char *text;
  size_t len;
  int flags;
} tfile;

/* A position in the loaded file and the record there. */
typedef struct rec {
  int tag;
  const unsigned char *body;
  size_t len;
} rec;

/* A growable byte buffer for one record's body. */
typedef struct bytes {
  unsigned char *p;
  size_t n, cap;
  int oom;
  weft_alloc_fn alloc; /* the tape's */
  void *ud;
} bytes;

struct weft_tape {
  int recording;
  /* Where its blocks come from: a recording's, its state's allocator; a
     loaded one's, realloc and free (no state exists yet). */
  weft_alloc_fn alloc;
  void *ud;
  /* record */
  FILE *f;
  uint32_t sum;      /* FNV-1a 32 of every byte written */
  int failed;        /* a write failed */
  double check_dt;   /* game seconds since the last checkpoint */
  uint64_t check_ns; /* when it was written (weft__clock_ns) */
  bytes scratch;     /* the record being written (reused: no allocation per frame) */
  /* replay */
  unsigned char *buf;
  size_t len, body_end; /* body_end: where the trailer starts */
  size_t seg, seg_end;  /* the frame about to run: its first record, its step (or trailer) */
  size_t cur_input, cur_reload, cur_job, cur_clock;
  int ended; /* no step record left */
  double dt;
  uint64_t frames;
  int cut;            /* the file was cut short: frames is up to its last checkpoint */
  char diverged[320]; /* the first difference, "" none */
  char reload_path[1024];
  /* header */
  const unsigned char *meta;
  size_t meta_len;
  const unsigned char *save; /* the save it starts from (R_SAVE, in buf), NULL: none */
  size_t save_len;
  unsigned char rng[RNG_BYTES];
  weft_desc desc;
  char *root;
  /* both */
  uint64_t frame; /* frames run */
  double last_dt;
  part parts[MAX_PARTS];
  int nparts;
  tfile *files;
  int nfiles, capfiles;
};

/* A block of the tape's: lua_Alloc's contract over T->alloc. */
static inline void *weft__tape_mem(weft_tape *T, void *p, size_t osize, size_t nsize) {
  return T->alloc(T->ud, p, osize, nsize);
}
/* Sets T's allocator (and its scratch buffer's). */
static inline void weft__tape_set_alloc(weft_tape *T, weft_alloc_fn alloc, void *ud) {
  T->alloc = T->scratch.alloc = alloc;
  T->ud = T->scratch.ud = ud;
}

#define FNV64_INIT 14695981039346656037u
#define FNV32_INIT 2166136261u
/* FNV-1a of n bytes at p, continuing from h (FNV64_INIT, FNV32_INIT). */
uint64_t weft__tape_fnv64(uint64_t h, const void *p, size_t n);
uint32_t weft__tape_fnv32(uint32_t h, const void *p, size_t n);

/* Appends to a record body: bytes, a varint, an nbytes little-endian
   unsigned, a double, a string (varint length, bytes). Out of memory sets
   b->oom and drops the rest. */
void weft__tape_put(bytes *b, const void *p, size_t n);
void weft__tape_put_varint(bytes *b, uint64_t v);
void weft__tape_put_u(bytes *b, uint64_t v, int nbytes);
void weft__tape_put_f64(bytes *b, double d);
void weft__tape_put_str(bytes *b, const char *s, size_t n);

/* A bounded reader over a record body. */
typedef struct reader {
  const unsigned char *p, *end;
  int bad;
} reader;

/* Reads what weft_tape_put_* wrote; past the end or malformed, r->bad is
   set and a zero (an empty string) is returned. */
uint64_t weft__tape_get_varint(reader *r);
uint64_t weft__tape_get_u(reader *r, int nbytes);
double weft__tape_get_f64(reader *r);
const char *weft__tape_get_str(reader *r, size_t *n);

/* Checks and indexes a recording in memory (buf: malloc'd, taken over,
   n bytes; name: for messages), as weft_tape_load does a file. */
int weft__tape_parse(unsigned char *buf, size_t n, const char *name, weft_tape **out, char *err,
                     size_t errlen);

#endif
