/* ops_transpose.c: transpose of a tensor of any rank (torch.permute): output axis d is input axis
 * p<d>. The layout pass's transforms between NCHW and NHWC (and OIHW and OHWI) are 4-D ones;
 * permute and transpose layers make the others. Attributes past the input's rank are unused. */
#include "ir/ops.h"

int ir_transpose_perm(const Graph *g, const Node *n, int perm[IR_MAX_DIMS])
{
	int rank = g->node[n->in[0]].shape.rank;
	for (int d = 0; d < rank; d++)
		perm[d] = (int)n->attr[d];
	return rank;
}

/* The permutation in the attributes; false unless its first rank entries are one of 0..rank-1. */
static bool perm_of(const Node *n, int rank, int p[IR_MAX_DIMS], char *err, size_t errlen)
{
	unsigned seen = 0;
	for (int d = 0; d < rank; d++) {
		int64_t v;
		if (!op_attr_int(n, d, 0, rank - 1, &v, err, errlen))
			return false;
		if (seen >> v & 1)
			return op_fail(n, err, errlen, "p0..p%d must be a permutation of 0..%d", rank - 1, rank - 1);
		seen |= 1u << v;
		p[d] = (int)v;
	}
	return true;
}

bool shape_transpose(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0);
	int p[IR_MAX_DIMS];
	if (!perm_of(n, x->shape.rank, p, err, errlen))
		return false;
	n->shape.rank = x->shape.rank;
	for (int d = 0; d < x->shape.rank; d++)
		n->shape.dim[d] = x->shape.dim[p[d]];
	n->dtype = x->dtype;
	return true;
}

void ref_transpose(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const Shape *xs = &op_in(g, n, 0)->shape;
	int rank = xs->rank, perm[IR_MAX_DIMS];
	ir_transpose_perm(g, n, perm);
	int64_t stride[IR_MAX_DIMS], sx[IR_MAX_DIMS];
	sx[rank - 1] = 1;
	for (int d = rank - 2; d >= 0; d--)
		sx[d] = sx[d + 1] * xs->dim[d + 1];
	for (int d = 0; d < rank; d++)
		stride[d] = sx[perm[d]];
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++) {
		int64_t r = i, at = 0;
		for (int d = rank - 1; d >= 0; d--) {
			at += r % n->shape.dim[d] * stride[d];
			r /= n->shape.dim[d];
		}
		out[i] = in[0][at];
	}
}

/* The gradient of a transpose is the inverse transpose of dy. */
void grad_transpose(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	double inv[IR_MAX_ATTRS] = {0};
	int perm[IR_MAX_DIMS], rank = ir_transpose_perm(g, n, perm);
	for (int d = 0; d < rank; d++)
		inv[perm[d]] = d;
	int x = n->in[0];
	gc_accumulate(gc, x, ir_emit(g, OP_transpose, &dy, inv));
}
