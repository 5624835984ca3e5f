/* philox.h: the counter-based random numbers dropout draws (Philox4x32-10, Salmon et al. 2011).
 * The draw for an element depends only on (seed, step, stream, element index), so the compiled
 * kernels of every target and the reference interpreter make the same masks. codegen emits the
 * same rounds in LLVM IR (codegen/lower_elemwise.c); this header is the specification. */
#ifndef NETC_PHILOX_H
#define NETC_PHILOX_H

#include <stdint.h>

static inline uint32_t philox_draw(uint32_t seed, uint32_t step, uint32_t stream, uint32_t index)
{
	uint32_t c0 = index, c1 = stream, c2 = step, c3 = 0;
	uint32_t k0 = seed, k1 = 0x5EED5EEDu;
	for (int r = 0; r < 10; r++) {
		uint64_t p0 = (uint64_t)0xD2511F53u * c0;
		uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
		uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
		uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
		c1 = (uint32_t)p1;
		c3 = (uint32_t)p0;
		c0 = n0;
		c2 = n2;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	return c0;
}

/* Uniform in [0, 1) with 24 random bits, exact in float32. */
static inline float philox_uniform(uint32_t seed, uint32_t step, uint32_t stream, uint32_t index)
{
	return (float)(philox_draw(seed, step, stream, index) >> 8) * (1.0f / 16777216.0f);
}

/* Dropout keeps an element when its draw is at least p. */
static inline int philox_keep(double p, uint32_t seed, uint32_t step, uint32_t stream, uint32_t index)
{
	return (double)philox_uniform(seed, step, stream, index) >= p;
}

/* The counter of element `index` of a batch whose first axis holds examples, row_elems elements
 * each, when the batch starts at row first_row of the step's global batch (a rank's shard, a
 * micro-batch): the element's index in one tensor of the whole global batch, mod 2^32. So N ranks
 * at batch B, K micro-batches and one batch of N*K*B draw the same masks. */
static inline uint32_t philox_row_index(uint32_t index, uint32_t first_row, uint32_t row_elems)
{
	return index + first_row * row_elems;
}

#endif
