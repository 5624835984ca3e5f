/* init.c: parameters as PyTorch initializes them by default (the compiler puts each parameter's
 * bound, from kaiming-uniform with a = sqrt(5) or the bias rule, in the bundle), ones where the
 * bundle says so (batch norm's weight and running variance), and zeroed optimizer state.
 *
 * The draws come from a counter-based generator keyed by (seed, hash of the buffer's name): a
 * parameter's values depend on nothing else, so adding a layer leaves the others' start alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/hash.h"
#include "runtime/layout.h"
#include "runtime/rt.h"

/* Element i of the stream key: uniform in [-bound, bound). */
static double draw(uint64_t key, uint64_t i, double bound)
{
	return (2 * rt_uniform(key, i) - 1) * bound;
}

static void store(void *dst, DType t, int64_t i, double v)
{
	switch (t) {
	case DT_F32: ((float *)dst)[i] = (float)v; break;
	case DT_F64: ((double *)dst)[i] = v; break;
	case DT_F16: ((_Float16 *)dst)[i] = (_Float16)v; break;
	case DT_BF16: {
		float f = (float)v;
		uint32_t u;
		memcpy(&u, &f, sizeof u);
		u += 0x7FFF + ((u >> 16) & 1); /* round to nearest even */
		((uint16_t *)dst)[i] = (uint16_t)(u >> 16);
		break;
	}
	case DT_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
	default: break;
	}
}

static void init_uniform(void *dst, const BundleBuffer *x, uint64_t seed, int64_t n)
{
	uint64_t key = rt_mix64(seed ^ rt_mix64(rt_hash_str(x->name)));
	/* a draw just below the bound may round up to it in f32: pull it back in */
	float top = nextafterf((float)x->bound, 0);
	for (int64_t i = 0; i < n; i++) {
		double v = draw(key, (uint64_t)i, x->bound);
		if (x->dtype != DT_F64 && (float)v >= (float)x->bound)
			v = top;
		store(dst, (DType)x->dtype, i, v);
	}
}

/* pub (public order, malloc'd) as a new buffer in x's stored order; frees pub. */
static void *stored_order(const BundleBuffer *x, void *pub)
{
	void *t = malloc((size_t)(x->bytes ? x->bytes : 1));
	if (!t)
		abort();
	rt_layout_permute(x, dtype_size((DType)x->dtype), pub, t, false);
	free(pub);
	return t;
}

void rt_init_params(Session *s, uint64_t seed)
{
	const Bundle *b = rt_bundle(s);
	for (int i = 0; i < b->nbuf; i++) {
		const BundleBuffer *x = &b->buf[i];
		if ((x->role != BUF_PARAM && x->role != BUF_STATE) || x->offset < 0)
			continue;
		int64_t n = x->bytes / (int64_t)dtype_size((DType)x->dtype);
		void *tmp = calloc((size_t)(x->bytes ? x->bytes : 1), 1);
		if (!tmp)
			abort();
		if (x->role == BUF_PARAM && x->init == RT_INIT_UNIFORM)
			init_uniform(tmp, x, seed, n);
		if (!rt_layout_identity(x)) /* drawn in the public order, so every layout starts alike */
			tmp = stored_order(x, tmp);
		else if (x->init == RT_INIT_ONE)
			for (int64_t k = 0; k < n; k++)
				store(tmp, (DType)x->dtype, k, 1);
		rt_write(s, i, tmp, (size_t)x->bytes);
		free(tmp);
	}
}
