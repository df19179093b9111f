/* What the host modules and the public API share: result codes and the
   limits of time. Public: installed beside weft.h, which includes it. */
#ifndef WEFT_BASE_H
#define WEFT_BASE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports: the functions of weft.h and weft_base.h and
   nothing else (the library is built with hidden visibility). A Windows
   DLL build defines WEFT_DLL, and WEFT_BUILD while it builds itself. */
#if defined(_WIN32) && defined(WEFT_DLL)
#ifdef WEFT_BUILD
#define WEFT_API __declspec(dllexport)
#else
#define WEFT_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

/* Result codes of host calls: 0 is success, the rest are negative. */
#define WEFT_ERRORS(X)                                                                             \
  X(OK, 0, "ok")                                                                                   \
  X(EINVAL, -1, "invalid argument")                                                                \
  X(ENOMEM, -2, "out of memory")                                                                   \
  X(ESTALE, -3, "dead handle")                                                                     \
  X(ELIMIT, -4, "limit reached")                                                                   \
  X(ESTATE, -5, "not allowed in this state")                                                       \
  X(EBUSY, -6, "target is running")                                                                \
  X(ECLOSED, -7, "closed")                                                                         \
  X(EIO, -8, "system call failed")                                                                 \
  X(ESCRIPT, -9, "the script raised an error")                                                     \
  X(ENOTSUP, -10, "not built into this library")

enum {
#define WEFT_ENUM(name, code, msg) WEFT_##name = code,
  WEFT_ERRORS(WEFT_ENUM)
#undef WEFT_ENUM
};

/* An allocator, with Lua's lua_Alloc contract: nsize 0 frees ptr (a
   block of osize bytes; ptr may be NULL) and returns NULL; otherwise it
   returns a block of nsize bytes holding the first min(osize, nsize)
   bytes of ptr (a new block when ptr is NULL, when osize is not a size),
   or NULL on failure, leaving ptr as it was. */
typedef void *(*weft_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

/* The message for a result code (static storage). */
WEFT_API const char *weft_strerror(int code);

#define WEFT_MAX_SCALE 1e6 /* largest time scale (a group's, or the game's) */
#define WEFT_MAX_DT 1e6    /* largest step, in seconds */

#ifdef __cplusplus
}
#endif

#endif
