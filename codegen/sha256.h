/* sha256.h: SHA-256 (FIPS 180-4), the kernel cache's keys and entry checksums. */
#ifndef NETC_SHA256_H
#define NETC_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	uint32_t h[8];
	uint64_t bytes;   /* fed so far */
	uint8_t block[64];
	size_t fill;      /* bytes of block in use */
} Sha256;

void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t len);
void sha256_final(Sha256 *s, uint8_t digest[32]);
/* The digest of data[0..len) in one call. */
void sha256(const void *data, size_t len, uint8_t digest[32]);

#endif
