/* ops_upsample.c: bilinear upsampling of NCHW input by a whole factor f, as PyTorch's
 * nn.Upsample(scale_factor=f, mode='bilinear') with align_corners=False: output row o reads
 * input rows i0 = floor(s) and i1 = min(i0 + 1, H - 1) at s = max((o + 0.5) / f - 0.5, 0), weighted
 * 1 - (s - i0) and s - i0; columns likewise. upsample_bilinear_grad(dy) hands each output
 * element's gradient back to its four inputs by the same weights. (nearest needs no op: the
 * frontend makes it from reshape and broadcast_to.) */
#include <math.h>

#include "ir/ops.h"

int64_t ir_upsample_scale(const Node *n) { return (int64_t)n->attr[0]; }

void ir_upsample_source(int64_t o, int64_t f, int64_t size, int64_t *i0, int64_t *i1, double *l1)
{
	double s = fmax(((double)o + 0.5) / (double)f - 0.5, 0);
	*i0 = (int64_t)s;
	*i1 = *i0 + (*i0 < size - 1);
	*l1 = s - (double)*i0;
}

static bool scale_of(Node *n, int64_t *f, char *err, size_t errlen)
{
	return op_attr_int(n, 0, 1, IR_UPSAMPLE_MAX_SCALE, f, err, errlen);
}

bool shape_upsample_bilinear(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0);
	char t[128];
	int64_t f;
	if (x->shape.rank != 4)
		return op_fail(n, err, errlen, "input must be 4-D NCHW, got %s", op_type_str(x, t, sizeof t));
	if (!op_need_float(n, g, 0, err, errlen) || !scale_of(n, &f, err, errlen))
		return false;
	n->shape = x->shape;
	n->shape.dim[2] *= f, n->shape.dim[3] *= f;
	n->dtype = x->dtype;
	return true;
}

bool shape_upsample_bilinear_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *dy = op_in(g, n, 0);
	char t[128];
	int64_t f;
	if (dy->shape.rank != 4)
		return op_fail(n, err, errlen, "dy must be 4-D NCHW, got %s", op_type_str(dy, t, sizeof t));
	if (!op_need_float(n, g, 0, err, errlen) || !scale_of(n, &f, err, errlen))
		return false;
	if (dy->shape.dim[2] % f || dy->shape.dim[3] % f)
		return op_fail(n, err, errlen, "dy %s is no whole multiple of the scale %lld", op_type_str(dy, t, sizeof t),
			       (long long)f);
	n->shape = dy->shape;
	n->shape.dim[2] /= f, n->shape.dim[3] /= f;
	n->dtype = dy->dtype;
	return true;
}

/* Calls visit(out index, in index, weight) for the four taps of every output element of one plane. */
#define FOR_TAPS(f, h, w, BODY)                                                                    \
	for (int64_t oh = 0; oh < (h) * (f); oh++) {                                               \
		int64_t h0, h1, w0, w1;                                                            \
		double lh, lw;                                                                     \
		ir_upsample_source(oh, f, h, &h0, &h1, &lh);                                       \
		for (int64_t ow = 0; ow < (w) * (f); ow++) {                                       \
			ir_upsample_source(ow, f, w, &w0, &w1, &lw);                               \
			int64_t o = oh * (w) * (f) + ow;                                           \
			const int64_t tap[4] = {h0 * (w) + w0, h0 * (w) + w1, h1 * (w) + w0, h1 * (w) + w1}; \
			const double wt[4] = {(1 - lh) * (1 - lw), (1 - lh) * lw, lh * (1 - lw), lh * lw}; \
			for (int k = 0; k < 4; k++) {                                              \
				BODY;                                                              \
			}                                                                          \
		}                                                                                  \
	}

void ref_upsample_bilinear(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const Shape *xs = &op_in(g, n, 0)->shape;
	int64_t f = ir_upsample_scale(n), h = xs->dim[2], w = xs->dim[3], planes = xs->dim[0] * xs->dim[1];
	for (int64_t p = 0; p < planes; p++) {
		const double *x = in[0] + p * h * w;
		double *y = out + p * h * w * f * f;
		for (int64_t i = 0; i < h * w * f * f; i++)
			y[i] = 0;
		FOR_TAPS(f, h, w, y[o] += wt[k] * x[tap[k]])
	}
}

void ref_upsample_bilinear_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t f = ir_upsample_scale(n), h = n->shape.dim[2], w = n->shape.dim[3], planes = n->shape.dim[0] * n->shape.dim[1];
	for (int64_t p = 0; p < planes; p++) {
		const double *dy = in[0] + p * h * w * f * f;
		double *dx = out + p * h * w;
		for (int64_t i = 0; i < h * w; i++)
			dx[i] = 0;
		FOR_TAPS(f, h, w, dx[tap[k]] += wt[k] * dy[o])
	}
}

void grad_upsample_bilinear(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	double f = (double)ir_upsample_scale(n);
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), OP_upsample_bilinear_grad, &dy, &f));
}

/* four products and three sums per output element */
double flops_upsample(const Graph *g, const Node *n)
{
	const Shape *big = n->op == OP_upsample_bilinear ? &n->shape : &op_in(g, n, 0)->shape;
	return 7.0 * (double)shape_numel(big);
}
