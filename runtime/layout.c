/* layout.c: moving buffers between their stored and public axis orders (runtime/layout.h). */
#include <string.h>

#include "runtime/layout.h"

bool rt_layout_identity(const BundleBuffer *x)
{
	for (int d = 0; d < x->rank; d++)
		if (x->perm[d] != d)
			return false;
	return true;
}

void rt_layout_public_shape(const BundleBuffer *x, int64_t *dim)
{
	for (int d = 0; d < x->rank; d++)
		dim[x->perm[d]] = x->dim[d];
}

void rt_layout_permute(const BundleBuffer *x, size_t esize, const void *src, void *dst, bool to_public)
{
	int64_t pub[BUNDLE_MAX_DIMS], pstride[BUNDLE_MAX_DIMS], along[BUNDLE_MAX_DIMS], n = 1;
	rt_layout_public_shape(x, pub);
	for (int d = x->rank - 1; d >= 0; d--) {
		pstride[d] = d == x->rank - 1 ? 1 : pstride[d + 1] * pub[d + 1];
		n *= x->dim[d];
	}
	for (int d = 0; d < x->rank; d++) /* public stride of each stored axis */
		along[d] = pstride[x->perm[d]];
	const char *s = src;
	char *t = dst;
	for (int64_t i = 0; i < n; i++) {
		int64_t r = i, at = 0;
		for (int d = x->rank - 1; d >= 0; d--) {
			at += (r % x->dim[d]) * along[d];
			r /= x->dim[d];
		}
		if (to_public)
			memcpy(t + at * esize, s + i * esize, esize);
		else
			memcpy(t + i * esize, s + at * esize, esize);
	}
}
