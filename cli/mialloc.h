/* mimalloc for a program's weft states (the weft program, the demo, the
   benchmarks): the library itself takes whatever allocator its embedder
   gives it. */
#ifndef WEFT_MIALLOC_H
#define WEFT_MIALLOC_H

#include <weft.h>

/* Sets d->alloc to mimalloc's (libmimalloc.so.2, loaded privately on
   first use: the program's own malloc stays the C library's, so
   everything else it measures or links is unchanged) and returns its
   name, "mimalloc"; or leaves d as it is and returns "libc" where the
   library is missing, under AddressSanitizer (which watches the C
   library's blocks only), on Windows and the web, or when WEFT_LIBC_MALLOC is set
   (for valgrind). */
const char *mialloc_use(weft_desc *d);

#endif
