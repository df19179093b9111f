/* The CRC-32 saves are checked with. */
#ifndef WEFT_PERSIST_CRC_H
#define WEFT_PERSIST_CRC_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32 of n bytes at p (zlib's and PNG's: the reflected
   0xEDB88320 polynomial), going on from crc (0 to start; the CRC of
   bytes before p to go on). */
uint32_t weft__persist_crc(uint32_t crc, const void *p, size_t n);

#endif
