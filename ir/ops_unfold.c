/* ops_unfold.c: unfold and fold, torch.nn.functional's: unfold(x) takes every kernel window of
 * NCHW x into a column, [N, C kh kw, L] with L = OH OW windows (rows ordered channel, then kernel
 * row, then kernel column; zeros where a window reaches into the padding); fold(cols) sums the
 * columns back into an image of out_h x out_w, where windows overlap. Each is the other's
 * gradient. Grouped and depthwise convolutions are an unfold, a broadcast product with the
 * weights and a sum over the window (frontend/layers.c), which fusion computes as one direct
 * reduction kernel: no GEMM. */
#include "ir/checked.h"
#include "ir/ops.h"

/* attributes: k_h, k_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w [, out_h, out_w] */
UnfoldGeom ir_unfold_geom(const Graph *g, const Node *n)
{
	UnfoldGeom u;
	const double *a = n->attr;
	u.kh = (int64_t)a[0], u.kw = (int64_t)a[1], u.sh = (int64_t)a[2], u.sw = (int64_t)a[3];
	u.ph = (int64_t)a[4], u.pw = (int64_t)a[5], u.dh = (int64_t)a[6], u.dw = (int64_t)a[7];
	const Shape *s = n->op == OP_unfold ? &op_in(g, n, 0)->shape : &n->shape;
	u.n = s->dim[0], u.c = s->dim[1], u.h = s->dim[2], u.w = s->dim[3];
	u.oh = (u.h + 2 * u.ph - u.dh * (u.kh - 1) - 1) / u.sh + 1;
	u.ow = (u.w + 2 * u.pw - u.dw * (u.kw - 1) - 1) / u.sw + 1;
	return u;
}

/* The window attributes in range, and the image (h x w) big enough for one window. */
static bool window_ok(Node *n, int64_t h, int64_t w, char *err, size_t errlen)
{
	int64_t v[8];
	static const int64_t lo[8] = {1, 1, 1, 1, 0, 0, 1, 1};
	for (int i = 0; i < 8; i++)
		if (!op_attr_int(n, i, lo[i], OP_ATTR_MAX, &v[i], err, errlen))
			return false;
	if (h + 2 * v[4] < v[6] * (v[0] - 1) + 1 || w + 2 * v[5] < v[7] * (v[1] - 1) + 1)
		return op_fail(n, err, errlen, "a %lldx%lld window (dilation %lldx%lld) does not fit a padded %lldx%lld image",
			       (long long)v[0], (long long)v[1], (long long)v[6], (long long)v[7], (long long)(h + 2 * v[4]),
			       (long long)(w + 2 * v[5]));
	return true;
}

bool shape_unfold(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0);
	char t[128];
	if (x->shape.rank != 4)
		return op_fail(n, err, errlen, "input must be 4-D NCHW, got %s", op_type_str(x, t, sizeof t));
	if (!op_need_float(n, g, 0, err, errlen) || !window_ok(n, x->shape.dim[2], x->shape.dim[3], err, errlen))
		return false;
	UnfoldGeom u = ir_unfold_geom(g, n);
	int64_t rows, cols;
	if (ckd_mul_i64(u.c, u.kh * u.kw, &rows) || ckd_mul_i64(u.oh, u.ow, &cols))
		return op_fail(n, err, errlen, "the columns would be too large");
	n->shape = (Shape){3, {u.n, rows, cols}};
	n->dtype = x->dtype;
	return true;
}

bool shape_fold(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0);
	char t[128];
	int64_t oh, ow;
	if (x->shape.rank != 3)
		return op_fail(n, err, errlen, "input must be 3-D [N, C kh kw, L], got %s", op_type_str(x, t, sizeof t));
	if (!op_need_float(n, g, 0, err, errlen) || !op_attr_int(n, 8, 1, IR_MAX_NUMEL, &oh, err, errlen) ||
	    !op_attr_int(n, 9, 1, IR_MAX_NUMEL, &ow, err, errlen) || !window_ok(n, oh, ow, err, errlen))
		return false;
	int64_t k = (int64_t)n->attr[0] * (int64_t)n->attr[1];
	if (x->shape.dim[1] % k)
		return op_fail(n, err, errlen, "%lld rows are no whole number of %lld-element windows",
			       (long long)x->shape.dim[1], (long long)k);
	n->shape = (Shape){4, {x->shape.dim[0], x->shape.dim[1] / k, oh, ow}};
	n->dtype = x->dtype;
	UnfoldGeom u = ir_unfold_geom(g, n);
	if (u.oh * u.ow != x->shape.dim[2])
		return op_fail(n, err, errlen, "%lld columns, but a %lldx%lld image has %lld windows", (long long)x->shape.dim[2],
			       (long long)oh, (long long)ow, (long long)(u.oh * u.ow));
	return true;
}

/* Calls BODY with col (index into the columns) and img (into the image, -1 in the padding) for
 * every element of every window. */
#define FOR_WINDOWS(u, BODY)                                                                            \
	for (int64_t b = 0; b < (u).n * (u).c; b++)                                                      \
		for (int64_t i = 0; i < (u).kh; i++)                                                     \
			for (int64_t j = 0; j < (u).kw; j++)                                             \
				for (int64_t oy = 0; oy < (u).oh; oy++)                                  \
					for (int64_t ox = 0; ox < (u).ow; ox++) {                        \
						int64_t y = oy * (u).sh - (u).ph + i * (u).dh;           \
						int64_t x = ox * (u).sw - (u).pw + j * (u).dw;           \
						int64_t col = ((b * (u).kh + i) * (u).kw + j) * (u).oh * (u).ow + oy * (u).ow + ox; \
						int64_t img = y >= 0 && y < (u).h && x >= 0 && x < (u).w \
								      ? (b * (u).h + y) * (u).w + x : -1;  \
						BODY;                                                    \
					}

void ref_unfold(const Graph *g, const Node *n, const double *const *in, double *out)
{
	UnfoldGeom u = ir_unfold_geom(g, n);
	FOR_WINDOWS(u, out[col] = img >= 0 ? in[0][img] : 0)
}

void ref_fold(const Graph *g, const Node *n, const double *const *in, double *out)
{
	UnfoldGeom u = ir_unfold_geom(g, n);
	for (int64_t i = 0; i < shape_numel(&n->shape); i++)
		out[i] = 0;
	FOR_WINDOWS(u, if (img >= 0) out[img] += in[0][col])
}

static void attrs_with_size(const Node *n, const Shape *img, double a[IR_MAX_ATTRS])
{
	for (int i = 0; i < 8; i++)
		a[i] = n->attr[i];
	a[8] = (double)img->dim[2], a[9] = (double)img->dim[3];
}

void grad_unfold(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0];
	double a[IR_MAX_ATTRS];
	attrs_with_size(n, &g->node[x].shape, a);
	gc_accumulate(gc, x, ir_emit(g, OP_fold, &dy, a));
}

void grad_fold(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0];
	double a[IR_MAX_ATTRS] = {0};
	for (int i = 0; i < 8; i++)
		a[i] = n->attr[i];
	gc_accumulate(gc, x, ir_emit(g, OP_unfold, &dy, a));
}

/* one addition per column element */
double flops_fold(const Graph *g, const Node *n) { return (double)shape_numel(&op_in(g, n, 0)->shape); }
