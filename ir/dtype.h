/* dtype.h: element types shared by the compiler and the runtime (header only). */
#ifndef NETC_DTYPE_H
#define NETC_DTYPE_H

#include <stddef.h>

typedef enum {
	DT_F32,
	DT_F16,
	DT_BF16,
	DT_F64,
	DT_I32,
	DT_COUNT
} DType;

static inline size_t dtype_size(DType t)
{
	static const size_t size[DT_COUNT] = {4, 2, 2, 8, 4};
	return (unsigned)t < DT_COUNT ? size[t] : 0;
}

static inline const char *dtype_name(DType t)
{
	static const char *const name[DT_COUNT] = {"f32", "f16", "bf16", "f64", "i32"};
	return (unsigned)t < DT_COUNT ? name[t] : "?";
}

static inline int dtype_is_float(DType t) { return t != DT_I32; }

/* Largest relative error a compiled result may show against the float64 reference. */
static inline double dtype_tolerance(DType t)
{
	static const double tol[DT_COUNT] = {2e-4, 2e-2, 1e-1, 1e-10, 0};
	return (unsigned)t < DT_COUNT ? tol[t] : 0;
}

#endif
