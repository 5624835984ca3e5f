/* ops_shape.c: reshape and broadcast_to, whose attributes (rank, d0..d5) give the target shape. */
#include "ir/checked.h"
#include "ir/ops.h"

/* Reads the target shape from the attributes; one dimension may be -1 when allow_infer, returned
 * in *infer (else -1) with that dimension left at -1. */
static bool target_shape(Node *n, bool allow_infer, Shape *s, int *infer, char *err, size_t errlen)
{
	int64_t rank;
	if (!op_attr_int(n, 0, 0, IR_MAX_DIMS, &rank, err, errlen))
		return false;
	s->rank = (int)rank;
	*infer = -1;
	int64_t total = 1;
	for (int i = 0; i < s->rank; i++) {
		if (allow_infer && n->attr[1 + i] == -1) {
			if (*infer >= 0)
				return op_fail(n, err, errlen, "only one dimension may be -1");
			*infer = i;
			s->dim[i] = -1;
		} else if (!op_attr_int(n, 1 + i, 1, IR_MAX_NUMEL, &s->dim[i], err, errlen)) {
			return false;
		} else if (ckd_mul_i64(total, s->dim[i], &total) || total > IR_MAX_NUMEL) {
			return op_fail(n, err, errlen, "the target shape has more than 2^40 elements");
		}
	}
	return true;
}

bool shape_reshape(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Shape *x = &op_in(g, n, 0)->shape;
	Shape s = {0};
	int infer;
	char sx[96], ss[96];
	if (!target_shape(n, true, &s, &infer, err, errlen))
		return false;
	/* known stays <= total, so the products cannot overflow */
	int64_t total = shape_numel(x), known = 1;
	bool fits = true;
	for (int i = 0; fits && i < s.rank; i++) {
		if (i == infer)
			continue;
		fits = s.dim[i] <= total / known;
		known *= fits ? s.dim[i] : 1;
	}
	fits = fits && (infer >= 0 ? total % known == 0 : known == total);
	if (!fits)
		return op_fail(n, err, errlen, "cannot reshape %s (%lld elements) to %s", shape_str(x, sx, sizeof sx),
			       (long long)total, shape_str(&s, ss, sizeof ss));
	if (infer >= 0) {
		s.dim[infer] = total / known;
		n->attr[1 + infer] = (double)s.dim[infer]; /* later phases see the real size */
	}
	n->shape = s;
	n->dtype = op_in(g, n, 0)->dtype;
	return true;
}

bool shape_broadcast_to(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Shape *x = &op_in(g, n, 0)->shape;
	Shape s = {0};
	int infer;
	char sx[96], ss[96];
	if (!target_shape(n, false, &s, &infer, err, errlen))
		return false;
	bool ok = x->rank <= s.rank;
	for (int i = 0; ok && i < x->rank; i++) {
		int64_t d = x->dim[i], t = s.dim[s.rank - x->rank + i];
		ok = d == t || d == 1;
	}
	if (!ok)
		return op_fail(n, err, errlen, "cannot broadcast %s to %s", shape_str(x, sx, sizeof sx),
			       shape_str(&s, ss, sizeof ss));
	n->shape = s;
	n->dtype = op_in(g, n, 0)->dtype;
	return true;
}

void ref_reshape(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++)
		out[i] = in[0][i];
}

void ref_broadcast_to(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t stride[IR_MAX_DIMS];
	int64_t m = shape_numel(&n->shape);
	op_bcast_strides(&op_in(g, n, 0)->shape, &n->shape, stride);
	for (int64_t i = 0; i < m; i++)
		out[i] = in[0][op_bcast_offset(&n->shape, stride, i)];
}

void grad_reshape(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0];
	double attr[1 + IR_MAX_DIMS];
	op_shape_attrs(&g->node[x].shape, attr);
	gc_accumulate(gc, x, ir_emit(g, OP_reshape, &dy, attr));
}

void grad_broadcast_to(GradContext *gc, const Node *n, int dy)
{
	op_give_sum_to(gc, n->in[0], dy);
}
