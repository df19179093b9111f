/* A recording's file format: encoding and decoding record bodies, and
   loading a recording whole, checked, for a replay (the format is
   described in docs/programs.md, "Record and replay"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapefile.h"
#include "desc.h"

/* ---- encoding ---- */

uint64_t weft__tape_fnv64(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211u;
  return h;
}

uint32_t weft__tape_fnv32(uint32_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}

void weft__tape_put(bytes *b, const void *p, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + n) cap *= 2;
    unsigned char *q = b->alloc(b->ud, b->p, b->cap, cap);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, p, n);
  b->n += n;
}

void weft__tape_put_varint(bytes *b, uint64_t v) {
  unsigned char c[10];
  int n = 0;
  do {
    c[n] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) c[n] |= 0x80;
    n++;
  } while (v);
  weft__tape_put(b, c, (size_t)n);
}

void weft__tape_put_u(bytes *b, uint64_t v, int nbytes) {
  unsigned char c[8];
  for (int i = 0; i < nbytes; i++) c[i] = (unsigned char)(v >> (8 * i));
  weft__tape_put(b, c, (size_t)nbytes);
}

void weft__tape_put_f64(bytes *b, double d) {
  uint64_t v;
  memcpy(&v, &d, 8);
  weft__tape_put_u(b, v, 8);
}

void weft__tape_put_str(bytes *b, const char *s, size_t n) {
  weft__tape_put_varint(b, n);
  weft__tape_put(b, s, n);
}

uint64_t weft__tape_get_varint(reader *r) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) break;
    unsigned char c = *r->p++;
    v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
  r->bad = 1;
  return 0;
}

uint64_t weft__tape_get_u(reader *r, int nbytes) {
  if (r->end - r->p < nbytes) {
    r->bad = 1;
    r->p = r->end;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < nbytes; i++) v |= (uint64_t)r->p[i] << (8 * i);
  r->p += nbytes;
  return v;
}

double weft__tape_get_f64(reader *r) {
  uint64_t v = weft__tape_get_u(r, 8);
  double d;
  memcpy(&d, &v, 8);
  return d;
}

const char *weft__tape_get_str(reader *r, size_t *n) {
  uint64_t len = weft__tape_get_varint(r);
  if (r->bad || len > (uint64_t)(r->end - r->p)) {
    r->bad = 1;
    *n = 0;
    return "";
  }
  const char *s = (const char *)r->p;
  r->p += len;
  *n = (size_t)len;
  return s;
}

/* ---- loading ---- */

static int fail(char *err, size_t n, const char *fmt, ...) {
  if (err && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
  }
  return WEFT_EINVAL;
}

/* Reads the header record; 0 when it is malformed. */
static int read_header(weft_tape *T, const rec *r) {
  reader rd = {r->body, r->body + r->len, 0};
  uint64_t version = weft__tape_get_u(&rd, 4); /* checked before */
  size_t n;
  weft__tape_get_str(&rd, &n); /* the library version that wrote it */
  const char *root = weft__tape_get_str(&rd, &n);
  T->root = weft__tape_mem(T, NULL, 0, n + 1);
  if (!T->root) return 0;
  memcpy(T->root, root, n);
  T->root[n] = 0;
  /* A 64-bit recorder's limit may not fit a 32-bit size: the most this
     one holds is looser still, and weft_tape_desc tightens it. */
  uint64_t memory = weft__tape_get_u(&rd, 8);
  T->desc.memory_limit = memory > SIZE_MAX ? SIZE_MAX : (size_t)memory;
  T->desc.instr_budget = (uint32_t)weft__tape_get_u(&rd, 4);
  T->desc.runaway_us = (uint32_t)weft__tape_get_u(&rd, 4);
  if (version < 3) T->desc.runaway_us = 1000000; /* the slot held overruns: the default limit */
  T->desc.frame_budget = (uint32_t)weft__tape_get_u(&rd, 4);
  T->desc.max_tasks = (uint32_t)weft__tape_get_u(&rd, 4);
  /* A recording is made with weft_open's limits, none of them 0. */
  if (!T->desc.memory_limit || !T->desc.instr_budget || !T->desc.runaway_us || !T->desc.max_tasks)
    return 0;
  if (rd.end - rd.p < RNG_BYTES) return 0;
  memcpy(T->rng, rd.p, RNG_BYTES);
  rd.p += RNG_BYTES;
  T->meta = (const unsigned char *)weft__tape_get_str(&rd, &T->meta_len);
  return !rd.bad;
}

/* Walks every record: each must fit, have a known tag and a body that
   reads whole. Counts the frames. A file cut short (T->cut: no trailer)
   ends where a record runs past its end, and is kept up to its last
   checkpoint whose frames and checksum (of every byte before it) hold:
   T->body_end and T->frames are moved there. */
static int check_records(weft_tape *T, size_t from, char *err, size_t errlen, const char *path) {
  size_t at = from;
  uint64_t frames = 0;
  uint32_t sum = FNV32_INIT; /* of T->buf[0, summed) */
  size_t summed = 0, good = 0;
  uint64_t good_frames = 0;
  while (at < T->body_end) {
    size_t start = at;
    reader rd = {T->buf + at + 1, T->buf + T->body_end, 0};
    uint64_t n = weft__tape_get_varint(&rd);
    if (rd.bad || n > (uint64_t)(rd.end - rd.p)) {
      /* The record being written when the file was cut; not a trailer
         whose length byte changed. */
      if (T->cut && !(T->buf[at] == R_END && T->len - at == 14)) break;
      return fail(err, errlen, "%s: corrupted: a record at byte %llu runs past the end", path,
                  (unsigned long long)start);
    }
    int tag = T->buf[at];
    at = (size_t)(rd.p - T->buf) + (size_t)n;
    reader b = {rd.p, rd.p + n, 0};
    size_t sl;
    switch (tag) {
    case R_INPUT:
    case R_RELOAD:
      break;
    case R_SAVE: /* the world it starts from: before anything else */
      if (start != from) b.bad = 1;
      T->save = b.p;
      T->save_len = (size_t)n;
      b.p = b.end;
      break;
    case R_FILE:
      weft__tape_get_u(&b, 1);
      weft__tape_get_str(&b, &sl);
      break;
    case R_JOB:
      weft__tape_get_varint(&b);
      break;
    case R_CLOCK:
      if (n == 0) b.bad = 1;
      break;
    case R_PART:
      if (weft__tape_get_varint(&b) >= MAX_PARTS || b.p == b.end) b.bad = 1;
      break;
    case R_STEP: {
      int flags = (int)weft__tape_get_u(&b, 1);
      double dt = flags & 1 ? weft__tape_get_f64(&b) : 0;
      if (!b.bad && !(dt >= 0 && dt <= WEFT_MAX_DT)) /* NaN, negative, infinite */
        return fail(err, errlen, "%s: corrupted: a frame time of %g s at byte %llu", path, dt,
                    (unsigned long long)start);
      weft__tape_get_u(&b, 4);
      uint64_t np = weft__tape_get_varint(&b);
      for (uint64_t i = 0; i < np && !b.bad; i++) {
        if (weft__tape_get_varint(&b) >= MAX_PARTS) b.bad = 1;
        weft__tape_get_u(&b, 2);
      }
      frames++;
      break;
    }
    case R_CHECK: {
      uint64_t f = weft__tape_get_u(&b, 8);
      uint32_t want = (uint32_t)weft__tape_get_u(&b, 4);
      if (b.bad || b.p != b.end || f != frames) {
        b.bad = 1;
        break;
      }
      if (!T->cut) break; /* the trailer's checksum covers it */
      sum = weft__tape_fnv32(sum, T->buf + summed, start - summed);
      summed = start;
      if (sum != want)
        return fail(err, errlen, "%s: corrupted: the checksum at byte %llu does not match", path,
                    (unsigned long long)start);
      good = start;
      good_frames = f;
      break;
    }
    default:
      return fail(err, errlen, "%s: corrupted: unknown record at byte %llu", path,
                  (unsigned long long)start);
    }
    if (b.bad)
      return fail(err, errlen, "%s: corrupted: a bad record at byte %llu", path,
                  (unsigned long long)start);
  }
  if (T->cut) {
    if (!good)
      return fail(err, errlen,
                  "%s: truncated: cut short before its first checkpoint (%llu bytes; a "
                  "recording is flushed every %.1f s of play)",
                  path, (unsigned long long)T->len, CHECK_EVERY_S);
    T->body_end = good;
    T->frames = good_frames;
    return WEFT_OK;
  }
  if (frames != T->frames)
    return fail(err, errlen, "%s: corrupted: the trailer counts %llu frames, the records %llu",
                path, (unsigned long long)T->frames, (unsigned long long)frames);
  return WEFT_OK;
}

int weft_tape_load(const char *path, weft_tape **out, char *err, size_t errlen) {
  if (!out || !path) return WEFT_EINVAL;
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (err && errlen) snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return WEFT_EIO;
  }
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      unsigned char *nb = cap < ((size_t)1 << 31) ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    if (err && errlen) snprintf(err, errlen, "cannot read %s", path);
    return WEFT_EIO;
  }
  return weft__tape_parse(buf, n, path, out, err, errlen);
}

int weft__tape_parse(unsigned char *buf, size_t n, const char *path, weft_tape **out, char *err,
                     size_t errlen) {
  *out = NULL;
  weft_tape *T = calloc(1, sizeof *T); /* the default allocator's: freed by weft_tape_free */
  if (T) weft__tape_set_alloc(T, weft__default_alloc, NULL);
  if (!T) {
    free(buf);
    if (err && errlen) snprintf(err, errlen, "%s: not enough memory", path);
    return WEFT_ENOMEM;
  }
  T->buf = buf;
  T->len = n;
  int rc = WEFT_EINVAL;
  if (n < 8 || memcmp(buf, MAGIC, 8) != 0) {
    fail(err, errlen, "%s: not a weft recording", path);
    goto out;
  }
  /* the header: 'H', length, version first */
  reader rd = {buf + (n < 9 ? n : 9), buf + n, 0};
  uint64_t hlen = weft__tape_get_varint(&rd);
  if (n < 9 || buf[8] != 'H' || rd.bad || hlen > (uint64_t)(rd.end - rd.p) || hlen < 4) {
    fail(err, errlen, "%s: truncated: the header is cut short (%llu bytes in all)", path,
         (unsigned long long)n);
    goto out;
  }
  reader vr = {rd.p, rd.p + hlen, 0};
  uint64_t version = weft__tape_get_u(&vr, 4);
  if (version < 1 || version > VERSION) {
    fail(err, errlen, "%s: recorded in format version %llu; this weft reads version %u", path,
         (unsigned long long)version, VERSION);
    goto out;
  }
  rec h = {'H', rd.p, (size_t)hlen};
  size_t first = (size_t)(rd.p - buf) + (size_t)hlen;
  /* the trailer: 'E', 12, frames, checksum; without one the file was cut
     short (a kill, a crash) and is read up to its last checkpoint */
  if (n < first + 14 || buf[n - 14] != R_END || buf[n - 13] != 12) {
    T->cut = 1;
    T->body_end = n;
  } else {
    reader tr = {buf + n - 12, buf + n, 0};
    T->frames = weft__tape_get_u(&tr, 8);
    uint32_t sum = (uint32_t)weft__tape_get_u(&tr, 4);
    if (weft__tape_fnv32(FNV32_INIT, buf, n - 4) != sum) {
      fail(err, errlen, "%s: corrupted: the checksum does not match (%llu bytes)", path,
           (unsigned long long)n);
      goto out;
    }
    T->body_end = n - 14;
  }
  if (!read_header(T, &h)) {
    fail(err, errlen, "%s: corrupted: a bad header", path);
    goto out;
  }
  rc = check_records(T, first, err, errlen, path);
  T->seg = first;
out:
  if (rc != WEFT_OK) {
    weft_tape_free(T);
    return rc;
  }
  *out = T;
  return WEFT_OK;
}

const void *weft_tape_meta(const weft_tape *T, size_t *len) {
  if (len) *len = T ? T->meta_len : 0;
  return T ? T->meta : NULL;
}

uint64_t weft_tape_frames(const weft_tape *T) { return T ? T->frames : 0; }

const void *weft_tape_save(const weft_tape *T, size_t *len) {
  if (len) *len = T ? T->save_len : 0;
  return T ? T->save : NULL;
}

int weft_tape_cut(const weft_tape *T) { return T ? T->cut : 0; }

void weft_tape_desc(const weft_tape *T, weft_desc *d) {
  if (!T || !d) return;
  d->scripts_root = T->root;
  weft__desc_no_looser(d, &T->desc);
}

void weft_tape_free(weft_tape *T) {
  if (!T) return;
  for (int i = 0; i < T->nfiles; i++) {
    weft__tape_mem(T, T->files[i].path, strlen(T->files[i].path) + 1, 0);
    if (T->recording) weft__tape_mem(T, (void *)T->files[i].text, T->files[i].len + 1, 0);
  }
  if (T->files) weft__tape_mem(T, T->files, sizeof *T->files * (size_t)T->capfiles, 0);
  if (T->scratch.p) weft__tape_mem(T, T->scratch.p, T->scratch.cap, 0);
  if (T->buf) weft__tape_mem(T, T->buf, T->len, 0);
  if (T->root) weft__tape_mem(T, T->root, strlen(T->root) + 1, 0);
  weft__tape_mem(T, T, sizeof *T, 0);
}
