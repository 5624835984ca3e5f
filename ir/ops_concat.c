/* ops_concat.c: concat along an axis (one op per input count, concat2..concat4, since a node's
 * input count is its op's) and slice, the piece of one axis that concat's gradient hands back to
 * each input. */
#include "ir/checked.h"
#include "ir/ops.h"

bool op_is_concat(OpId op) { return op == OP_concat2 || op == OP_concat3 || op == OP_concat4; }

SliceRange ir_slice_range(const Node *n)
{
	return (SliceRange){.axis = (int)n->attr[0], .start = (int64_t)n->attr[1], .len = (int64_t)n->attr[2]};
}

bool shape_concat(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *first = op_in(g, n, 0);
	char s0[128], sk[128];
	if (!op_attr_axis(n, 0, first->shape.rank, err, errlen))
		return false;
	int axis = (int)n->attr[0];
	Shape s = first->shape;
	for (int k = 1; k < n->nin; k++) {
		const Node *in = op_in(g, n, k);
		bool ok = in->shape.rank == s.rank && in->dtype == first->dtype;
		for (int d = 0; ok && d < s.rank; d++)
			ok = d == axis || in->shape.dim[d] == s.dim[d];
		if (!ok)
			return op_fail(n, err, errlen, "input %d %s does not fit input 0 %s along axis %d", k,
				       op_type_str(in, sk, sizeof sk), op_type_str(first, s0, sizeof s0), axis);
		s.dim[axis] += in->shape.dim[axis];
	}
	n->shape = s;
	n->dtype = first->dtype;
	return true;
}

void ref_concat(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t outer, len, inner;
	op_axis_split(&n->shape, (int)n->attr[0], &outer, &len, &inner);
	for (int64_t o = 0; o < outer; o++) {
		double *dst = out + o * len * inner;
		for (int k = 0; k < n->nin; k++) {
			int64_t part = op_in(g, n, k)->shape.dim[(int)n->attr[0]] * inner;
			for (int64_t i = 0; i < part; i++)
				*dst++ = in[k][o * part + i];
		}
	}
}

/* Each input gets the slice of dy it filled. */
void grad_concat(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int axis = (int)n->attr[0], nin = n->nin, in[IR_MAX_INPUTS];
	for (int k = 0; k < nin; k++)
		in[k] = n->in[k];
	int64_t start = 0;
	for (int k = 0; k < nin; k++) {
		int64_t len = g->node[in[k]].shape.dim[axis];
		double attr[3] = {axis, (double)start, (double)len};
		gc_accumulate(gc, in[k], ir_emit(g, OP_slice, &dy, attr));
		start += len;
	}
}

/* ---- slice ---- */

bool shape_slice(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0);
	char sx[128];
	int64_t start, len;
	if (!op_attr_axis(n, 0, x->shape.rank, err, errlen) || !op_attr_int(n, 1, 0, IR_MAX_NUMEL, &start, err, errlen) ||
	    !op_attr_int(n, 2, 1, IR_MAX_NUMEL, &len, err, errlen))
		return false;
	int axis = (int)n->attr[0];
	if (start + len > x->shape.dim[axis])
		return op_fail(n, err, errlen, "[%lld, %lld) along axis %d is outside %s", (long long)start,
			       (long long)(start + len), axis, op_type_str(x, sx, sizeof sx));
	n->shape = x->shape;
	n->shape.dim[axis] = len;
	n->dtype = x->dtype;
	return true;
}

void ref_slice(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t outer, len, inner, start = (int64_t)n->attr[1];
	op_axis_split(&n->shape, (int)n->attr[0], &outer, &len, &inner);
	int64_t full = op_in(g, n, 0)->shape.dim[(int)n->attr[0]];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < len * inner; i++)
			out[o * len * inner + i] = in[0][(o * full + start) * inner + i];
}
