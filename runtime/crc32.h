/* crc32.h: CRC-32 as zlib and gzip compute it (reflected polynomial 0xEDB88320), for the bundle's
 * section checksums (private to the runtime). */
#ifndef NETC_CRC32_H
#define NETC_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of data continued from crc (0 to start), as zlib's crc32(): zlib's own where netc has
 * zlib, else rt_crc32_portable. */
uint32_t rt_crc32(uint32_t crc, const void *data, size_t n);
/* The same function without zlib, for the runtime-only build on a machine that lacks it. */
uint32_t rt_crc32_portable(uint32_t crc, const void *data, size_t n);

#endif
