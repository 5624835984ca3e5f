/* checked.h: integer arithmetic that reports overflow instead of wrapping (header only). Shape
 * inference multiplies sizes a .net file chooses, so every product of user-controlled sizes goes
 * through these; a tensor is then held to IR_MAX_NUMEL elements (ir/graph.c), which keeps the
 * sums that liveness, traffic and plan-memory make of byte counts far from int64's range. */
#ifndef NETC_CHECKED_H
#define NETC_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* The most elements one tensor may have, inputs, parameters and computed values alike: 2^40
 * (8 TiB of f64), so its byte count needs at most 43 bits. */
#define IR_MAX_NUMEL ((int64_t)1 << 40)

/* *out = a * b; true when the exact result does not fit (C23's ckd_mul, arguments reordered). */
static inline bool ckd_mul_i64(int64_t a, int64_t b, int64_t *out) { return __builtin_mul_overflow(a, b, out); }

/* *out = a + b; true when the exact result does not fit (C23's ckd_add). */
static inline bool ckd_add_i64(int64_t a, int64_t b, int64_t *out) { return __builtin_add_overflow(a, b, out); }

/* a + b, or INT64_MAX when that overflows: for totals that are only reported. */
static inline int64_t sat_add_i64(int64_t a, int64_t b)
{
	int64_t s;
	return ckd_add_i64(a, b, &s) ? INT64_MAX : s;
}

/* The product of dim[0..rank) into *numel; false when a dimension is not positive or the product
 * exceeds limit (it is then never computed past int64). */
static inline bool ckd_numel(const int64_t *dim, int rank, int64_t limit, int64_t *numel)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		if (dim[i] < 1 || ckd_mul_i64(n, dim[i], &n) || n > limit)
			return false;
	*numel = n;
	return true;
}

#endif
