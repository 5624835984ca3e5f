/* ops_space_to_depth.c: blocks of a plane as channels, which turn a convolution of stride b into
 * one of stride 1 (passes/conv_algo.c): with X = space_to_depth(x) and W = space_to_depth(w),
 *
 *     conv(x, w; stride b, pad p) = conv(X, W; stride 1, pad 0)
 *
 * since tap (i, j) of w at output (y, z) reads x[b y + i - p][b z + j - p], and i = b a + u,
 * j = b c + v put it at tap (a, c) of channel (u, v) of block (y + a, z + c).
 *
 *   space_to_depth(x [N, C, H, W]) -> X [N, C b^2, out_h, out_w]
 *       X[n][(c b + u) b + v][y][z] = x[n][c][b y + u - pad_h][b z + v - pad_w], zero outside x
 *   depth_to_space(X [N, C b^2, h, w]) -> x [N, C, out_h, out_w]
 *       x[n][c][i][j] = X[n][(c b + (i + pad_h) % b) b + (j + pad_w) % b][(i + pad_h) / b][(j + pad_w) / b],
 *       zero where that block is outside X
 *
 * Each element of one is read by at most one element of the other, so each is the other's
 * transpose (and gradient): depth_to_space hands the gradients of the stride-1 convolution's
 * input and weights back to the strided one's. */
#include "ir/checked.h"
#include "ir/ops.h"

SpaceToDepth ir_space_to_depth(const Node *n)
{
	return (SpaceToDepth){.b = (int64_t)n->attr[0], .ph = (int64_t)n->attr[1], .pw = (int64_t)n->attr[2],
			      .oh = (int64_t)n->attr[3], .ow = (int64_t)n->attr[4]};
}

/* The attributes: a block of 2 .. IR_MAX_BLOCK, padding under the block, a plane of at least one. */
static bool need_attrs(const Node *n, const Graph *g, SpaceToDepth *s, char *err, size_t errlen)
{
	char t[128];
	const Node *x = op_in(g, n, 0);
	if (x->shape.rank != 4)
		return op_fail(n, err, errlen, "input must be 4-D NCHW, got %s", op_type_str(x, t, sizeof t));
	if (!op_need_float(n, g, 0, err, errlen) || !op_attr_int(n, 0, 2, IR_MAX_BLOCK, &s->b, err, errlen) ||
	    !op_attr_int(n, 1, 0, s->b - 1, &s->ph, err, errlen) || !op_attr_int(n, 2, 0, s->b - 1, &s->pw, err, errlen) ||
	    !op_attr_int(n, 3, 1, OP_ATTR_MAX, &s->oh, err, errlen) || !op_attr_int(n, 4, 1, OP_ATTR_MAX, &s->ow, err, errlen))
		return false;
	return true;
}

bool shape_space_to_depth(Node *n, const Graph *g, char *err, size_t errlen)
{
	SpaceToDepth s;
	if (!need_attrs(n, g, &s, err, errlen))
		return false;
	const Shape *x = &op_in(g, n, 0)->shape;
	n->shape = (Shape){4, {x->dim[0], x->dim[1] * s.b * s.b, s.oh, s.ow}};
	n->dtype = op_in(g, n, 0)->dtype;
	return true;
}

bool shape_depth_to_space(Node *n, const Graph *g, char *err, size_t errlen)
{
	SpaceToDepth s;
	char t[128];
	if (!need_attrs(n, g, &s, err, errlen))
		return false;
	const Node *x = op_in(g, n, 0);
	if (x->shape.dim[1] % (s.b * s.b))
		return op_fail(n, err, errlen, "input %s has no whole number of %lldx%lld blocks per channel",
			       op_type_str(x, t, sizeof t), (long long)s.b, (long long)s.b);
	n->shape = (Shape){4, {x->shape.dim[0], x->shape.dim[1] / (s.b * s.b), s.oh, s.ow}};
	n->dtype = x->dtype;
	return true;
}

/* Calls BODY with the linear index `big` of X and `small` of x for every element of X that holds
 * one of x (X of shape xs_big, x of shape xs_small). */
#define FOR_PAIRS(s, xs_big, xs_small, BODY)                                                                       \
	for (int64_t img = 0; img < (xs_small)->dim[0]; img++)                                                    \
		for (int64_t c = 0; c < (xs_small)->dim[1]; c++)                                                  \
			for (int64_t i = 0; i < (xs_small)->dim[2]; i++)                                          \
				for (int64_t j = 0; j < (xs_small)->dim[3]; j++) {                                \
					int64_t y = (i + (s).ph) / (s).b, z = (j + (s).pw) / (s).b;               \
					if (y >= (xs_big)->dim[2] || z >= (xs_big)->dim[3])                       \
						continue;                                                         \
					int64_t ch = (c * (s).b + (i + (s).ph) % (s).b) * (s).b + (j + (s).pw) % (s).b; \
					int64_t big = ((img * (xs_big)->dim[1] + ch) * (xs_big)->dim[2] + y) *    \
							      (xs_big)->dim[3] +                                  \
						      z;                                                          \
					int64_t small = ((img * (xs_small)->dim[1] + c) * (xs_small)->dim[2] + i) * \
								(xs_small)->dim[3] +                              \
							j;                                                        \
					BODY;                                                                     \
				}

void ref_space_to_depth(const Graph *g, const Node *n, const double *const *in, double *out)
{
	SpaceToDepth s = ir_space_to_depth(n);
	const Shape *x = &op_in(g, n, 0)->shape;
	for (int64_t k = 0; k < shape_numel(&n->shape); k++)
		out[k] = 0;
	FOR_PAIRS(s, &n->shape, x, out[big] = in[0][small])
}

void ref_depth_to_space(const Graph *g, const Node *n, const double *const *in, double *out)
{
	SpaceToDepth s = ir_space_to_depth(n);
	const Shape *x = &op_in(g, n, 0)->shape;
	for (int64_t k = 0; k < shape_numel(&n->shape); k++)
		out[k] = 0;
	FOR_PAIRS(s, x, &n->shape, out[small] = in[0][big])
}

/* Each is the other's transpose, with the plane of the input it came from. */
static void grad_by_adjoint(GradContext *gc, const Node *n, int dy, OpId op)
{
	int x = n->in[0];
	const Shape *xs = &gc_graph(gc)->node[x].shape;
	SpaceToDepth s = ir_space_to_depth(n);
	double attr[5] = {(double)s.b, (double)s.ph, (double)s.pw, (double)xs->dim[2], (double)xs->dim[3]};
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), op, &dy, attr));
}

void grad_space_to_depth(GradContext *gc, const Node *n, int dy) { grad_by_adjoint(gc, n, dy, OP_depth_to_space); }
void grad_depth_to_space(GradContext *gc, const Node *n, int dy) { grad_by_adjoint(gc, n, dy, OP_space_to_depth); }
