/* hash.h: the integer mixing that the runtime's counter-based random streams are built of
 * (private to the runtime). */
#ifndef NETC_HASH_H
#define NETC_HASH_H

#include <stdint.h>

/* A bijective 64-bit finalizer: consecutive inputs give unrelated outputs (SplitMix64). */
static inline uint64_t rt_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* Draw i of the stream key, uniform in [0, 1) with 53 bits. */
static inline double rt_uniform(uint64_t key, uint64_t i)
{
	return (double)(rt_mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull) >> 11) * 0x1p-53;
}

/* FNV-1a of a string. */
static inline uint64_t rt_hash_str(const char *s)
{
	uint64_t h = 0xCBF29CE484222325ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001B3ull;
	return h;
}

#endif
