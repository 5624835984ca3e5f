/* ops_embedding.c: embedding(idx, weight) gathers rows of weight [V, D] by the i32 indices idx
 * (any shape) into [..., D], as torch.nn.functional.embedding; an index outside [0, V) gives a
 * row of zeros (PyTorch raises; a kernel cannot). one_hot(idx) is [..., classes] of 1 where the
 * index equals the class, else 0 (F.one_hot, as floats). The gradient of the rows is
 * one_hot(idx)^T dy: one matrix product, which the GEMM template computes on every target. */
#include "ir/checked.h"
#include "ir/ops.h"

int64_t ir_one_hot_classes(const Node *n) { return (int64_t)n->attr[0]; }

static bool need_indices(const Node *n, const Graph *g, int i, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, i);
	char t[128];
	if (x->dtype != DT_I32)
		return op_fail(n, err, errlen, "indices must be i32, got %s", op_type_str(x, t, sizeof t));
	if (x->shape.rank >= IR_MAX_DIMS)
		return op_fail(n, err, errlen, "indices of rank %d leave no room for the feature axis", x->shape.rank);
	return true;
}

bool shape_embedding(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *idx = op_in(g, n, 0), *w = op_in(g, n, 1);
	char t[128];
	if (!need_indices(n, g, 0, err, errlen) || !op_need_float(n, g, 1, err, errlen))
		return false;
	if (w->shape.rank != 2)
		return op_fail(n, err, errlen, "weight must be 2-D [num_embeddings, dim], got %s", op_type_str(w, t, sizeof t));
	n->shape = idx->shape;
	n->shape.dim[n->shape.rank++] = w->shape.dim[1];
	n->dtype = w->dtype;
	return true;
}

bool shape_one_hot(Node *n, const Graph *g, char *err, size_t errlen)
{
	int64_t classes;
	if (!need_indices(n, g, 0, err, errlen) || !op_attr_int(n, 0, 1, IR_MAX_NUMEL, &classes, err, errlen))
		return false;
	n->shape = op_in(g, n, 0)->shape;
	n->shape.dim[n->shape.rank++] = classes;
	n->dtype = DT_F32;
	return true;
}

void ref_embedding(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const Shape *ws = &op_in(g, n, 1)->shape;
	int64_t v = ws->dim[0], d = ws->dim[1], p = shape_numel(&op_in(g, n, 0)->shape);
	for (int64_t i = 0; i < p; i++) {
		int64_t row = (int64_t)in[0][i];
		for (int64_t k = 0; k < d; k++)
			out[i * d + k] = row >= 0 && row < v ? in[1][row * d + k] : 0;
	}
}

void ref_one_hot(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t classes = ir_one_hot_classes(n), p = shape_numel(&op_in(g, n, 0)->shape);
	for (int64_t i = 0; i < p; i++)
		for (int64_t c = 0; c < classes; c++)
			out[i * classes + c] = in[0][i] == (double)c;
}

/* dW = one_hot(idx)^T dy over the P = numel(idx) positions; the indices get no gradient */
void grad_embedding(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int idx = n->in[0], w = n->in[1];
	int64_t v = g->node[w].shape.dim[0], d = g->node[w].shape.dim[1], p = shape_numel(&g->node[idx].shape);
	double flat[1 + IR_MAX_DIMS] = {1, (double)p}, rows[1 + IR_MAX_DIMS] = {2, (double)p, (double)d};
	double classes = (double)v, trans[2] = {1, 0};
	int hot = ir_emit(g, OP_one_hot, (int[]){ir_emit(g, OP_reshape, &idx, flat)}, &classes);
	if (g->node[w].dtype != DT_F32) {
		double to = g->node[w].dtype;
		hot = ir_emit(g, OP_cast, &hot, &to);
	}
	int dy2 = ir_emit(g, OP_reshape, &dy, rows);
	gc_accumulate(gc, w, ir_emit(g, OP_matmul, (int[]){hot, dy2}, trans));
}
