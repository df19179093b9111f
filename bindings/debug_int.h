/* What the debugger's files share (debug.c: the server, breakpoints,
   stops, tasks as threads; debug_values.c: frames, variables and
   evaluation): the server's state and the calls between them. */
#ifndef WEFT_DEBUG_INT_H
#define WEFT_DEBUG_INT_H

#include <cjson/cJSON.h>

#include "budget.h"
#include "dap_conn.h"
#include "debug.h"

#define NO_TASK 1            /* the thread id of code running outside any task */
#define FIRST_TASK_ID 2      /* thread ids of tasks count up from here */
#define EVAL_BUDGET 1000000  /* instructions an evaluation may take */
#define SRC_CACHE 16         /* chunk names resolved to breakpoint files */
#define MAX_VALUE 200        /* characters of a value shown */

enum { STEP_NONE, STEP_IN, STEP_OVER, STEP_OUT };
enum { V_LOCALS, V_UPVALUES, V_GLOBALS, V_VALUE };

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
  int kind;   /* V_* */
  int frame;  /* frame index (frames[]), -1: none */
  int anchor; /* V_VALUE: the value's slot in the anchor table */
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
  int (*fail_alloc)(void *user, size_t nsize);
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

  int step; /* STEP_*: armed for step_task */
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

/* debug_values.c: a frame the client may refer to by the number
   returned (0: out of memory); valid until the program goes on. */
int weft_debug_add_frame(dbg *D, lua_State *th, int level);
/* Evaluates expr in frame (th, level) for a condition or a logpoint: its
   first value as text into out (n bytes) and whether it is truthy.
   Returns 1 when it ran without error. */
int weft_debug_eval_value(dbg *D, lua_State *th, int level, const char *expr, char *out, size_t n,
                          int *truthy);
/* A logpoint in L's running frame: fmt with each {expression} replaced by
   its value, sent as console output. */
void weft_debug_log_point(dbg *D, lua_State *L, const char *fmt);
/* The scopes, variables, evaluate and setVariable requests. */
void weft_debug_scopes(dbg *D, cJSON *req, cJSON *args);
void weft_debug_variables(dbg *D, cJSON *req, cJSON *args);
void weft_debug_evaluate(dbg *D, cJSON *req, cJSON *args);
void weft_debug_set_variable(dbg *D, cJSON *req, cJSON *args);

/* debug_info.c: whether a hit condition ("N", ">=N", "%N"...) holds at
   the hits-th hit. */
int weft_debug_hit_matches(const char *cond, unsigned hits);
/* debug_info.c: pushes the name of a task's thread: who or its name, its
   spawn site, what it waits on (protected: light userdata dbg at 1, id
   at 2). */
int weft_debug_thread_name(lua_State *E);
/* debug_info.c: the first line at or after line in the file at path that
   holds code (not blank, not only a comment); 0 when none does, -1 when
   the file cannot be read. */
int weft_debug_code_line(const char *path, int line);
/* debug_info.c: a second client's connection is accepted, its first
   request answered with an error ("another client is attached") and
   closed, without waiting. */
void weft_debug_turn_away(dbg *D);
/* debug_info.c: exceptionInfo's body for the error stopped at. */
cJSON *weft_debug_exception_info(dbg *D);

#endif
