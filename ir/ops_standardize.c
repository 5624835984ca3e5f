/* ops_standardize.c: standardize(x, mean, invstd) = (x - mean) * invstd, batch norm's
 * normalization.
 *
 * mean and invstd are x's statistics over the axes along which they broadcast (size 1 there):
 * mean(x) and 1 / sqrt(var(x) + eps) with the biased variance, as frontend/layers.c builds them
 * (PyTorch's batch norm multiplies by the inverse too: one division per channel, not per element).
 * The gradient is the total derivative through them, the closed form PyTorch's batch norm
 * backward uses, with y the op's output and averages over those axes:
 *     dx = (dy - mean(dy) - y mean(dy y)) * invstd
 * so no gradient flows to mean and invstd. Differentiating the pieces instead chains three
 * reductions, each waiting for the last; this form has two, over the same input, side by side. */
#include "ir/ops.h"

/* The axes standardize averages over: those where the statistics have size 1 (or no axis). */
static unsigned stat_axes(const Shape *x, const Shape *stat)
{
	unsigned axes = 0;
	for (int d = 0; d < x->rank; d++) {
		int s = d - (x->rank - stat->rank);
		if (s < 0 || stat->dim[s] == 1)
			axes |= 1u << d;
	}
	return axes;
}

bool shape_standardize(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0), *mean = op_in(g, n, 1), *inv = op_in(g, n, 2);
	char sx[96], sm[96], ss[96];
	for (int k = 0; k < 3; k++)
		if (!op_need_float(n, g, k, err, errlen))
			return false;
	if (!shape_eq(&mean->shape, &inv->shape) || mean->shape.rank > x->shape.rank)
		return op_fail(n, err, errlen, "mean %s and invstd %s must have one shape that broadcasts to x %s",
			       shape_str(&mean->shape, sm, sizeof sm), shape_str(&inv->shape, ss, sizeof ss),
			       shape_str(&x->shape, sx, sizeof sx));
	for (int i = 0; i < mean->shape.rank; i++) {
		int64_t d = mean->shape.dim[i], o = x->shape.dim[x->shape.rank - mean->shape.rank + i];
		if (d != 1 && d != o)
			return op_fail(n, err, errlen, "statistics %s do not broadcast to x %s",
				       shape_str(&mean->shape, sm, sizeof sm), shape_str(&x->shape, sx, sizeof sx));
	}
	n->shape = x->shape;
	n->dtype = x->dtype;
	return true;
}

void ref_standardize(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t stride[IR_MAX_DIMS];
	op_bcast_strides(&op_in(g, n, 1)->shape, &n->shape, stride);
	for (int64_t i = 0, m = shape_numel(&n->shape); i < m; i++) {
		int64_t s = op_bcast_offset(&n->shape, stride, i);
		out[i] = (in[0][i] - in[1][s]) * in[2][s];
	}
}

void grad_standardize(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0], inv = n->in[2], y = n->id;
	double attr[2] = {stat_axes(&n->shape, &g->node[n->in[1]].shape), 1};
	int mean_dy = ir_emit(g, OP_mean, (int[]){dy}, attr);
	int dy_y = ir_emit(g, OP_mul, (int[]){dy, y}, NULL);
	int mean_dy_y = ir_emit(g, OP_mean, (int[]){dy_y}, attr);
	int centred = ir_emit(g, OP_sub, (int[]){dy, mean_dy}, NULL);
	int along = ir_emit(g, OP_mul, (int[]){y, mean_dy_y}, NULL);
	int dx = ir_emit(g, OP_mul, (int[]){ir_emit(g, OP_sub, (int[]){centred, along}, NULL), inv}, NULL);
	gc_accumulate(gc, x, dx);
}
