/* mimalloc for a program's weft states, loaded privately (see
   mialloc.h). Its pages hold one size of block each, so a task's
   CallInfos, its stack and the handles a spawn loop drops stay apart
   whatever the heap's history, and a block is taken and given back in a
   few instructions (tests/bench/README.md, finding 10). Linking
   -lmimalloc instead would make its malloc the whole process's. */
#include "mialloc.h"

#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define MI_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MI_OFF 1
#endif
#endif
#if defined(_WIN32) || defined(__EMSCRIPTEN__) /* no dlopen (emscripten's aborts) */
#define MI_OFF 1
#endif

#ifndef MI_OFF
#include <dlfcn.h>
#include <pthread.h>

static void *(*mi_malloc_)(size_t);
static void *(*mi_realloc_)(void *, size_t);
static void (*mi_free_)(void *);
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find(void) {
  const char *env = getenv("WEFT_LIBC_MALLOC");
  if (env && *env) return;
  void *lib = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  *(void **)&mi_malloc_ = dlsym(lib, "mi_malloc");
  *(void **)&mi_realloc_ = dlsym(lib, "mi_realloc");
  *(void **)&mi_free_ = dlsym(lib, "mi_free");
  if (!mi_malloc_ || !mi_realloc_ || !mi_free_) mi_malloc_ = NULL;
}

/* lua_Alloc's contract over mimalloc; a new block by malloc, which costs
   less than realloc(NULL). */
static void *mi_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    mi_free_(ptr);
    return NULL;
  }
  return ptr ? mi_realloc_(ptr, nsize) : mi_malloc_(nsize);
}
#endif

const char *mialloc_use(weft_desc *d) {
#ifndef MI_OFF
  pthread_once(&once, find);
  if (mi_malloc_) {
    d->alloc = mi_alloc;
    d->alloc_ud = NULL;
    return "mimalloc";
  }
#endif
  (void)d;
  return "libc";
}
