/* ops_depthwise.c: the depthwise convolution, conv2d with groups = channels = out_channels
 * (MobileNet's), as ops of its own whose kernels are direct: each output element sums its kh x kw
 * window, with no GEMM and no stored columns.
 *
 *   dwconv2d(x [N, C, H, W], w [C, 1, kh, kw])          -> y [N, C, OH, OW]
 *   dwconv2d_grad_input(dy [N, C, OH, OW], w)           -> dx [N, C, H, W]   (attrs + in_h, in_w)
 *   dwconv2d_wterms(dy [N, C, OH, OW], x [N, C, H, W])  -> [C, kh kw, N OH OW] (attrs + k_h, k_w)
 *
 * The weight gradient is the sum of wterms over its last axis (one product dy x per window
 * position), which fusion computes as one reduction kernel that reads dy and x where they are and
 * stores no term (codegen/lower_depthwise.c). */
#include "ir/checked.h"
#include "ir/ops.h"

/* attributes: stride_h, stride_w, pad_h, pad_w, dil_h, dil_w [, in_h, in_w | k_h, k_w] */
UnfoldGeom ir_depthwise_geom(const Graph *g, const Node *n)
{
	const double *a = n->attr;
	UnfoldGeom u = {.sh = (int64_t)a[0], .sw = (int64_t)a[1], .ph = (int64_t)a[2], .pw = (int64_t)a[3],
			.dh = (int64_t)a[4], .dw = (int64_t)a[5]};
	const Shape *x = n->op == OP_dwconv2d ? &op_in(g, n, 0)->shape
			 : n->op == OP_dwconv2d_wterms ? &op_in(g, n, 1)->shape : &n->shape;
	const Shape *w = n->op == OP_dwconv2d_wterms ? NULL : &op_in(g, n, 1)->shape;
	u.n = x->dim[0], u.c = x->dim[1], u.h = x->dim[2], u.w = x->dim[3];
	u.kh = w ? w->dim[2] : (int64_t)a[6], u.kw = w ? w->dim[3] : (int64_t)a[7];
	u.oh = (u.h + 2 * u.ph - u.dh * (u.kh - 1) - 1) / u.sh + 1;
	u.ow = (u.w + 2 * u.pw - u.dw * (u.kw - 1) - 1) / u.sw + 1;
	return u;
}

/* The six window attributes in range, the window no larger than IR_DEPTHWISE_MAX_TAPS (its
 * positions are unrolled) and fitting the padded h x w image. */
static bool window_ok(Node *n, int64_t kh, int64_t kw, int64_t h, int64_t w, char *err, size_t errlen)
{
	int64_t v[6];
	static const int64_t lo[6] = {1, 1, 0, 0, 1, 1};
	for (int i = 0; i < 6; i++)
		if (!op_attr_int(n, i, lo[i], OP_ATTR_MAX, &v[i], err, errlen))
			return false;
	if (kh < 1 || kw < 1 || kh * kw > IR_DEPTHWISE_MAX_TAPS)
		return op_fail(n, err, errlen, "a %lldx%lld window: 1 to %d positions", (long long)kh, (long long)kw,
			       IR_DEPTHWISE_MAX_TAPS);
	if (h + 2 * v[2] < v[4] * (kh - 1) + 1 || w + 2 * v[3] < v[5] * (kw - 1) + 1)
		return op_fail(n, err, errlen, "a %lldx%lld window (dilation %lldx%lld) does not fit a padded %lldx%lld image",
			       (long long)kh, (long long)kw, (long long)v[4], (long long)v[5], (long long)(h + 2 * v[2]),
			       (long long)(w + 2 * v[3]));
	return true;
}

/* x [N, C, H, W] (4-D, float) and the weight [C, 1, kh, kw] of its channels. */
static bool check_image_and_weight(Node *n, const Graph *g, int xi, int wi, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, xi), *w = op_in(g, n, wi);
	char t[128], u[128];
	if (x->shape.rank != 4 || w->shape.rank != 4 || w->shape.dim[1] != 1 || w->shape.dim[0] != x->shape.dim[1])
		return op_fail(n, err, errlen, "input %s and weight %s: the weight must be [C, 1, kh, kw] for C channels",
			       op_type_str(x, t, sizeof t), op_type_str(w, u, sizeof u));
	return op_need_float(n, g, xi, err, errlen) && op_need_float(n, g, wi, err, errlen);
}

bool shape_dwconv2d(Node *n, const Graph *g, char *err, size_t errlen)
{
	if (!check_image_and_weight(n, g, 0, 1, err, errlen))
		return false;
	const Shape *x = &op_in(g, n, 0)->shape, *w = &op_in(g, n, 1)->shape;
	if (!window_ok(n, w->dim[2], w->dim[3], x->dim[2], x->dim[3], err, errlen))
		return false;
	UnfoldGeom u = ir_depthwise_geom(g, n);
	n->shape = (Shape){4, {u.n, u.c, u.oh, u.ow}};
	n->dtype = op_in(g, n, 0)->dtype;
	return true;
}

/* dy must be the forward's output shape for an image of u's size. */
static bool check_dy(Node *n, const Graph *g, const UnfoldGeom *u, char *err, size_t errlen)
{
	const Node *dy = op_in(g, n, 0);
	char t[128];
	if (dy->shape.rank != 4 || dy->shape.dim[0] != u->n || dy->shape.dim[1] != u->c || dy->shape.dim[2] != u->oh ||
	    dy->shape.dim[3] != u->ow)
		return op_fail(n, err, errlen, "dy %s is not the [%lld, %lld, %lld, %lld] a %lldx%lld image gives",
			       op_type_str(dy, t, sizeof t), (long long)u->n, (long long)u->c, (long long)u->oh,
			       (long long)u->ow, (long long)u->h, (long long)u->w);
	return op_need_float(n, g, 0, err, errlen);
}

bool shape_dwconv2d_grad_input(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *dy = op_in(g, n, 0), *w = op_in(g, n, 1);
	char t[128];
	int64_t h, wd;
	if (dy->shape.rank != 4 || w->shape.rank != 4 || w->shape.dim[1] != 1 || w->shape.dim[0] != dy->shape.dim[1])
		return op_fail(n, err, errlen, "dy %s and a weight that is not [C, 1, kh, kw]", op_type_str(dy, t, sizeof t));
	if (!op_need_float(n, g, 1, err, errlen) || !op_attr_int(n, 6, 1, IR_MAX_NUMEL, &h, err, errlen) ||
	    !op_attr_int(n, 7, 1, IR_MAX_NUMEL, &wd, err, errlen) ||
	    !window_ok(n, w->shape.dim[2], w->shape.dim[3], h, wd, err, errlen))
		return false;
	n->shape = (Shape){4, {dy->shape.dim[0], dy->shape.dim[1], h, wd}};
	if (!shape_fits(&n->shape))
		return op_fail(n, err, errlen, "the result has more than 2^40 elements");
	n->dtype = dy->dtype;
	UnfoldGeom u = ir_depthwise_geom(g, n);
	return check_dy(n, g, &u, err, errlen);
}

bool shape_dwconv2d_wterms(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 1);
	char t[128];
	int64_t kh, kw;
	if (x->shape.rank != 4)
		return op_fail(n, err, errlen, "input must be 4-D NCHW, got %s", op_type_str(x, t, sizeof t));
	if (!op_need_float(n, g, 1, err, errlen) || !op_attr_int(n, 6, 1, IR_DEPTHWISE_MAX_TAPS, &kh, err, errlen) ||
	    !op_attr_int(n, 7, 1, IR_DEPTHWISE_MAX_TAPS, &kw, err, errlen) ||
	    !window_ok(n, kh, kw, x->shape.dim[2], x->shape.dim[3], err, errlen))
		return false;
	UnfoldGeom u = ir_depthwise_geom(g, n);
	if (!check_dy(n, g, &u, err, errlen))
		return false;
	int64_t m;
	if (ckd_mul_i64(u.n, u.oh * u.ow, &m))
		return op_fail(n, err, errlen, "the terms would be too many");
	n->shape = (Shape){3, {u.c, kh * kw, m}};
	if (!shape_fits(&n->shape))
		return op_fail(n, err, errlen, "the terms have more than 2^40 elements");
	n->dtype = x->dtype;
	return true;
}

/* Calls BODY for every output position (b = n C + c, oy, ox) and window position (i, j), with
 * o the output's index, img the image's (-1 in the padding) and tap = i kw + j. */
#define FOR_TAPS(u, BODY)                                                                               \
	for (int64_t b = 0; b < (u).n * (u).c; b++)                                                      \
		for (int64_t oy = 0; oy < (u).oh; oy++)                                                  \
			for (int64_t ox = 0; ox < (u).ow; ox++)                                          \
				for (int64_t i = 0; i < (u).kh; i++)                                     \
					for (int64_t j = 0; j < (u).kw; j++) {                           \
						int64_t y = oy * (u).sh - (u).ph + i * (u).dh;           \
						int64_t x = ox * (u).sw - (u).pw + j * (u).dw;           \
						int64_t o = (b * (u).oh + oy) * (u).ow + ox;             \
						int64_t img = y >= 0 && y < (u).h && x >= 0 && x < (u).w \
								      ? (b * (u).h + y) * (u).w + x : -1;  \
						int64_t tap = i * (u).kw + j;                            \
						BODY;                                                    \
					}

void ref_dwconv2d(const Graph *g, const Node *n, const double *const *in, double *out)
{
	UnfoldGeom u = ir_depthwise_geom(g, n);
	for (int64_t k = 0; k < shape_numel(&n->shape); k++)
		out[k] = 0;
	FOR_TAPS(u, if (img >= 0) out[o] += in[0][img] * in[1][b % u.c * u.kh * u.kw + tap])
}

void ref_dwconv2d_grad_input(const Graph *g, const Node *n, const double *const *in, double *out)
{
	UnfoldGeom u = ir_depthwise_geom(g, n);
	for (int64_t k = 0; k < shape_numel(&n->shape); k++)
		out[k] = 0;
	FOR_TAPS(u, if (img >= 0) out[img] += in[0][o] * in[1][b % u.c * u.kh * u.kw + tap])
}

void ref_dwconv2d_wterms(const Graph *g, const Node *n, const double *const *in, double *out)
{
	UnfoldGeom u = ir_depthwise_geom(g, n);
	int64_t m = u.n * u.oh * u.ow, k = u.kh * u.kw;
	FOR_TAPS(u, out[(b % u.c * k + tap) * m + (b / u.c * u.oh + oy) * u.ow + ox] = img >= 0 ? in[0][o] * in[1][img] : 0)
}

/* dx by dwconv2d_grad_input, dw as the sum of the terms over the batch and the window positions */
void grad_dwconv2d(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0], w = n->in[1];
	UnfoldGeom u = ir_depthwise_geom(g, n);
	double a[IR_MAX_ATTRS] = {0};
	for (int i = 0; i < 6; i++)
		a[i] = n->attr[i];
	a[6] = (double)u.h, a[7] = (double)u.w;
	gc_accumulate(gc, x, ir_emit(g, OP_dwconv2d_grad_input, (int[]){dy, w}, a));
	a[6] = (double)u.kh, a[7] = (double)u.kw;
	int terms = ir_emit(g, OP_dwconv2d_wterms, (int[]){dy, x}, a);
	double axes[2] = {4, 0}, dims[1 + IR_MAX_DIMS] = {4, (double)u.c, 1, (double)u.kh, (double)u.kw};
	int sum = ir_emit(g, OP_sum, &terms, axes);
	gc_accumulate(gc, w, ir_emit(g, OP_reshape, &sum, dims));
}

/* a multiply and an add per window position of each output (forward) or term (input gradient) */
double flops_dwconv2d(const Graph *g, const Node *n)
{
	const Shape *w = &op_in(g, n, 1)->shape;
	const Shape *y = n->op == OP_dwconv2d ? &n->shape : &op_in(g, n, 0)->shape;
	return 2.0 * (double)shape_numel(y) * (double)(w->dim[2] * w->dim[3]);
}

/* one multiply per term (the sum counts its adds) */
double flops_dwconv2d_wterms(const Graph *g, const Node *n)
{
	(void)g;
	return (double)shape_numel(&n->shape);
}
