/* crc32.c: CRC-32 through zlib where netc has it, else a small table of its own (half a byte per
 * lookup: 16 entries, no start-up work, fast enough for bundles of a few megabytes). */
#include "runtime/crc32.h"

#ifdef NETC_HAVE_ZLIB
#include <zlib.h>
#endif

/* The CRC of each 4-bit value, reflected polynomial 0xEDB88320. */
static const uint32_t nibble_crc[16] = {
	0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4, 0x4db26158, 0x5005713c,
	0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c, 0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
};

uint32_t rt_crc32_portable(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ nibble_crc[crc & 15];
		crc = (crc >> 4) ^ nibble_crc[crc & 15];
	}
	return ~crc;
}

uint32_t rt_crc32(uint32_t crc, const void *data, size_t n)
{
#ifdef NETC_HAVE_ZLIB
	/* zlib takes 32-bit lengths */
	const uint8_t *p = data;
	while (n > 0) {
		uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
		crc = (uint32_t)crc32(crc, p, chunk);
		p += chunk;
		n -= chunk;
	}
	return crc;
#else
	return rt_crc32_portable(crc, data, n);
#endif
}
