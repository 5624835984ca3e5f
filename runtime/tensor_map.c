/* tensor_map.c: checking tensor maps and copying through them on the CPU (tensor_map.h). */
#include <stdio.h>
#include <string.h>

#include "ir/dtype.h"
#include "runtime/tensor_map.h"

/* The driver's limits (cuTensorMapEncodeTiled). */
enum { BOX_MAX = 256, MAP_ALIGN = 128, TENSOR_ALIGN = 16 };
#define EXTENT_MAX ((int64_t)1 << 32)
#define STRIDE_MAX ((int64_t)1 << 40)

static bool fail(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s", what);
	return false;
}

bool rt_tensor_map_check(const BundleTensorMap *m, int64_t arena_bytes, char *err, size_t errlen)
{
	char msg[200];
	if (m->rank < 1 || m->rank > BUNDLE_TMAP_DIMS) {
		snprintf(msg, sizeof msg, "rank %d, expected 1 to %d", m->rank, BUNDLE_TMAP_DIMS);
		return fail(err, errlen, msg);
	}
	if ((unsigned)m->dtype >= DT_COUNT)
		return fail(err, errlen, "an element type netc does not have");
	int64_t esize = (int64_t)dtype_size((DType)m->dtype), span = esize; /* bytes of the dims below */
	for (int d = 0; d < m->rank; d++) {
		if (m->dim[d] < 1 || m->dim[d] > EXTENT_MAX) {
			snprintf(msg, sizeof msg, "dimension %d has %lld elements, expected 1 to 2^32", d, (long long)m->dim[d]);
			return fail(err, errlen, msg);
		}
		if (m->box[d] < 1 || m->box[d] > BOX_MAX) {
			snprintf(msg, sizeof msg, "the box takes %d elements along dimension %d, expected 1 to %d", m->box[d], d,
				 BOX_MAX);
			return fail(err, errlen, msg);
		}
		if (d > 0) {
			int64_t st = m->stride[d];
			if (st % TENSOR_ALIGN || st < span || st >= STRIDE_MAX) {
				snprintf(msg, sizeof msg, "dimension %d's stride of %lld bytes is not a multiple of 16 from %lld "
					 "(the dimensions below) to 2^40", d, (long long)st, (long long)span);
				return fail(err, errlen, msg);
			}
			span = st * m->dim[d];
		} else {
			span = esize * m->dim[0];
		}
	}
	int64_t run = esize * m->box[0];
	if (run % 16)
		return fail(err, errlen, "the box's innermost run is not a multiple of 16 bytes");
	if (m->swizzle != 0 && m->swizzle != 32 && m->swizzle != 64 && m->swizzle != 128) {
		snprintf(msg, sizeof msg, "a swizzle of %d bytes, expected 0, 32, 64 or 128", m->swizzle);
		return fail(err, errlen, msg);
	}
	if (m->swizzle && run != m->swizzle) {
		snprintf(msg, sizeof msg, "the box's innermost run is %lld bytes, not the swizzle's %d", (long long)run,
			 m->swizzle);
		return fail(err, errlen, msg);
	}
	if (m->at < 0 || m->at % MAP_ALIGN || m->at > arena_bytes - BUNDLE_TMAP_BYTES)
		return fail(err, errlen, "the map's place is not a 128-byte-aligned slot inside the arena");
	if (m->tensor < 0 || m->tensor % TENSOR_ALIGN || m->tensor > arena_bytes || span > arena_bytes - m->tensor)
		return fail(err, errlen, "the tensor is not 16-byte aligned inside the arena");
	return true;
}

int64_t rt_tensor_map_box_bytes(const BundleTensorMap *m)
{
	int64_t n = (int64_t)dtype_size((DType)m->dtype);
	for (int d = 0; d < m->rank; d++)
		n *= m->box[d];
	return n;
}

int64_t rt_tensor_map_swizzled(const BundleTensorMap *m, int64_t offset)
{
	if (!m->swizzle)
		return offset;
	int64_t mask = m->swizzle / 16 - 1; /* 7, 3, 1: the 16-byte units of one row */
	return offset ^ (((offset >> 7) & mask) << 4);
}

void rt_tensor_map_copy(const BundleTensorMap *m, const void *tensor, const int32_t *coord, void *dst)
{
	int64_t esize = (int64_t)dtype_size((DType)m->dtype), count = rt_tensor_map_box_bytes(m) / esize;
	const uint8_t *src = tensor;
	uint8_t *out = dst;
	for (int64_t e = 0; e < count; e++) {
		int64_t rest = e, at = 0;
		bool inside = true;
		for (int d = 0; d < m->rank; d++) {
			int64_t i = (int64_t)coord[d] + rest % m->box[d];
			rest /= m->box[d];
			inside = inside && i >= 0 && i < m->dim[d];
			at += i * (d ? m->stride[d] : esize);
		}
		uint8_t *to = out + rt_tensor_map_swizzled(m, e * esize);
		if (inside)
			memcpy(to, src + at, (size_t)esize);
		else
			memset(to, 0, (size_t)esize);
	}
}
