/* image_dtype.c: f32 images into an image buffer of another float type. */
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

void rt_write_image(Session *s, int buf, const float *values, int64_t n)
{
	DType t = (DType)rt_bundle(s)->buf[buf].dtype;
	if (t == DT_F32 || (unsigned)t >= DT_COUNT) {
		rt_write(s, buf, values, (size_t)n * sizeof *values);
		return;
	}
	size_t size = dtype_size(t);
	void *converted = malloc((size_t)(n ? n : 1) * size);
	if (!converted)
		abort();
	for (int64_t i = 0; i < n; i++) {
		switch (t) {
		case DT_F16: ((_Float16 *)converted)[i] = (_Float16)values[i]; break;
		case DT_BF16: ((uint16_t *)converted)[i] = to_bf16(values[i]); break;
		case DT_F64: ((double *)converted)[i] = values[i]; break;
		default: ((float *)converted)[i] = values[i]; break;
		}
	}
	rt_write(s, buf, converted, (size_t)n * size);
	free(converted);
}
