/* The debugger's view into a stopped program (debug_values.c): stack
   frames, the variables of their scopes, and expressions evaluated in a
   frame, as the server (debug.c) asks for them. */
#ifndef WEFT_DEBUG_VALUES_H
#define WEFT_DEBUG_VALUES_H

#include "debug_int.h"

/* A frame the client may refer to by the number returned (0: out of
   memory); valid until the program goes on. */
int weft__debug_add_frame(dbg *D, lua_State *th, int level);
/* Evaluates expr in frame (th, level) for a condition or a logpoint: its
   first value as text into out (n bytes) and whether it is truthy.
   Returns 1 when it ran without error. */
int weft__debug_eval_value(dbg *D, lua_State *th, int level, const char *expr, char *out, size_t n,
                           int *truthy);
/* A logpoint in L's running frame: fmt with each {expression} replaced by
   its value, sent as console output. */
void weft__debug_log_point(dbg *D, lua_State *L, const char *fmt);
/* The scopes, variables, evaluate and setVariable requests: each sends
   its response. req and args stay the caller's. */
void weft__debug_scopes(dbg *D, cJSON *req, cJSON *args);
void weft__debug_variables(dbg *D, cJSON *req, cJSON *args);
void weft__debug_evaluate(dbg *D, cJSON *req, cJSON *args);
void weft__debug_set_variable(dbg *D, cJSON *req, cJSON *args);

#endif
