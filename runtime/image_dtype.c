/* image_dtype.c: values into an input buffer of the dtype the model declared it with. */
#include <stdlib.h>
#include <string.h>

#include "runtime/image_dtype.h"

DType rt_image_dtype(const Bundle *b)
{
	if (b->image < 0)
		return DT_F32;
	DType t = (DType)b->buf[b->image].dtype;
	return (unsigned)t < DT_COUNT && dtype_is_float(t) ? t : DT_F32;
}

/* f32 to bf16, rounding to nearest even (NaN stays NaN: its top mantissa bits survive). */
static uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* Element i of a buffer of dtype t. */
static void store(DType t, void *dst, int64_t i, double v)
{
	switch (t) {
	case DT_F16: ((_Float16 *)dst)[i] = (_Float16)v; break;
	case DT_BF16: ((uint16_t *)dst)[i] = to_bf16((float)v); break;
	case DT_F64: ((double *)dst)[i] = v; break;
	case DT_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
	default: ((float *)dst)[i] = (float)v; break;
	}
}

static void *staging(DType t, int64_t n)
{
	void *p = malloc((size_t)(n ? n : 1) * dtype_size(t));
	if (!p)
		abort();
	return p;
}

void rt_write_image(Session *s, int buf, const float *values, int64_t n)
{
	DType t = (DType)rt_bundle(s)->buf[buf].dtype;
	if (t == DT_F32 || (unsigned)t >= DT_COUNT || !dtype_is_float(t)) {
		rt_write(s, buf, values, (size_t)n * sizeof *values);
		return;
	}
	void *converted = staging(t, n);
	for (int64_t i = 0; i < n; i++)
		store(t, converted, i, values[i]);
	rt_write(s, buf, converted, (size_t)n * dtype_size(t));
	free(converted);
}

void rt_write_values(Session *s, int buf, const double *values, int64_t n)
{
	DType t = (DType)rt_bundle(s)->buf[buf].dtype;
	if ((unsigned)t >= DT_COUNT)
		t = DT_F32;
	void *converted = staging(t, n);
	for (int64_t i = 0; i < n; i++)
		store(t, converted, i, values[i]);
	rt_write(s, buf, converted, (size_t)n * dtype_size(t));
	free(converted);
}
