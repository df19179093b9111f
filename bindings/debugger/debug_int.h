/* The debugger's state, as its files share it (debug.c: the server,
   breakpoints, stops, tasks as threads; debug_values.c: frames, variables
   and evaluation; debug_info.c: thread names, hit conditions, the second
   client): types and request-argument helpers only; each file's functions
   are in its own header. */
#ifndef WEFT_DEBUG_INT_H
#define WEFT_DEBUG_INT_H

#include <cjson/cJSON.h>

#include "dap_conn.h"
#include "../base/internal.h"

#define SRC_CACHE 16 /* chunk names resolved to breakpoint files */

typedef struct bpoint {
  int id, line;
  char *cond, *hit, *log; /* NULL: none */
  unsigned hits;
  int cond_failed; /* its condition's error was shown */
} bpoint;

/* The breakpoints of one file, by its resolved absolute path. */
typedef struct bfile {
  char *path;
  bpoint *bp;
  int n;
} bfile;

typedef struct frame_ref {
  lua_State *th;
  int level;
} frame_ref;

typedef struct var_ref {
  int kind;   /* what it lists (debug_values.c): a frame's scope or a value */
  int frame;  /* frame index (frames[]), -1: none */
  int anchor; /* a value's: its slot in the anchor table */
} var_ref;

/* A known task: its thread id, and the poll that last saw it. */
typedef struct known {
  weft_id id;
  int dap;
  unsigned stamp;
} known;

struct weft_debug {
  weft_state *W;
  weft_debug_desc desc;
  dap_conn conn;  /* the client's socket, its messages' numbering */
  dap_wire other; /* a second client, answered with an error and closed */
  int port;
  int client; /* the state below is set up for a client (gone when the wire says so) */
  int configured, terminate;

  /* the output sinks W had before, which the server forwards to */
  void (*log)(void *user, const char *line, size_t len);
  void (*report)(void *user, const char *msg, const char *trace);
  void *user;

  bfile *files;
  int nfiles, nbps, next_bp;
  uint16_t *lines; /* breakpoints at each line number, in any file */
  int nlines;
  struct {
    char *src;
    int file;
  } cache[SRC_CACHE];
  int cache_next;
  int exc_uncaught, exc_all;
  int *hit; /* the ids of the breakpoints a stop names (debug.c), room for hitcap */
  int hitcap;

  int step; /* the step armed for step_task (debug.c), 0: none */
  weft_id step_task;
  int step_depth;
  int pause_req;

  int stopped, resume, in_eval;
  lua_State *stop_L; /* the thread that stopped (NULL: between frames) */
  weft_id stop_task;
  char exc[512]; /* the error of an exception stop, "" for other stops */
  frame_ref *frames;
  int nframes, capframes;
  var_ref *vars;
  int nvars, capvars, nanchors;
  int ref_anchors; /* registry: the values variables refer to */
  lua_State *E;    /* the debugger's own thread: evaluation, descriptions */
  int ref_E;

  known *tasks; /* open addressing by id; id 0: empty */
  uint32_t cap, ntasks;
  unsigned stamp;
  int next_dap;
  int synced;            /* the tasks above are as of: */
  uint64_t spawned_seen; /* ...W->spawned */
  uint32_t live_seen;    /* ...and the live tasks (C tasks too) */
};

typedef struct weft_debug dbg;

static inline const char *str_arg(cJSON *args, const char *k) {
  cJSON *v = cJSON_GetObjectItem(args, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static inline double num_arg(cJSON *args, const char *k, double def) {
  cJSON *v = cJSON_GetObjectItem(args, k);
  return cJSON_IsNumber(v) ? v->valuedouble : def;
}

#endif
