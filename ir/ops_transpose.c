/* ops_transpose.c: transpose of a 4-D tensor, the layout pass's transform between NCHW and NHWC
 * (and between OIHW and OHWI). Output axis d is input axis p<d>. */
#include "ir/ops.h"

void ir_transpose_perm(const Node *n, int perm[4])
{
	for (int d = 0; d < 4; d++)
		perm[d] = (int)n->attr[d];
}

/* The permutation in the attributes; false unless it is one of 0..3. */
static bool perm_of(const Node *n, int p[4], char *err, size_t errlen)
{
	unsigned seen = 0;
	for (int d = 0; d < 4; d++) {
		int64_t v;
		if (!op_attr_int(n, d, 0, 3, &v, err, errlen))
			return false;
		if (seen >> v & 1)
			return op_fail(n, err, errlen, "p0..p3 must be a permutation of 0..3");
		seen |= 1u << v;
		p[d] = (int)v;
	}
	return true;
}

bool shape_transpose(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0);
	char t[128];
	int p[4];
	if (x->shape.rank != 4)
		return op_fail(n, err, errlen, "input must be 4-D, got %s", op_type_str(x, t, sizeof t));
	if (!perm_of(n, p, err, errlen))
		return false;
	n->shape.rank = 4;
	for (int d = 0; d < 4; d++)
		n->shape.dim[d] = x->shape.dim[p[d]];
	n->dtype = x->dtype;
	return true;
}

void ref_transpose(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const Shape *xs = &op_in(g, n, 0)->shape;
	int64_t stride[4], sx[4], idx[4] = {0};
	sx[3] = 1;
	for (int d = 2; d >= 0; d--)
		sx[d] = sx[d + 1] * xs->dim[d + 1];
	for (int d = 0; d < 4; d++)
		stride[d] = sx[(int)n->attr[d]];
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++) {
		int64_t r = i, at = 0;
		for (int d = 3; d >= 0; d--) {
			idx[d] = r % n->shape.dim[d];
			r /= n->shape.dim[d];
			at += idx[d] * stride[d];
		}
		out[i] = in[0][at];
	}
}

/* The gradient of a transpose is the inverse transpose of dy. */
void grad_transpose(GradContext *gc, const Node *n, int dy)
{
	double inv[IR_MAX_ATTRS] = {0};
	for (int d = 0; d < 4; d++)
		inv[(int)n->attr[d]] = d;
	int x = n->in[0];
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), OP_transpose, &dy, inv));
}
