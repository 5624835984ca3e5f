/* ops_norm.c: local response normalization across channels (TensorFlow's parameters) and its
 * gradient. Over NCHW x, with s[c] = bias + alpha * sum_{|c'-c| <= r} x[c']^2:
 *     y[c]  = x[c] * s[c]^-beta
 *     dx[c] = dy[c] s[c]^-beta - 2 alpha beta x[c] sum_{|c'-c| <= r} dy[c'] x[c'] s[c']^(-beta-1)
 * Caffe's (local_size n, alpha, beta, k) is r = (n-1)/2, alpha/n, beta, bias k (frontend/layers.c). */
#include <math.h>

#include "ir/ops.h"

typedef struct {
	int64_t r, planes, c, hw; /* planes = N; hw = H * W */
	int64_t cs;               /* channels' stride: hw (NCHW) or 1 (NHWC) */
	bool nhwc;
	double bias, alpha, beta;
} LrnGeom;

LrnParams ir_lrn_params(const Node *n)
{
	return (LrnParams){.depth_radius = (int64_t)n->attr[0], .bias = n->attr[1], .alpha = n->attr[2], .beta = n->attr[3],
			   .nhwc = n->attr[4] == LAYOUT_NHWC};
}

static bool lrn_attrs(const Node *n, LrnGeom *p, char *err, size_t errlen)
{
	int64_t layout;
	if (!op_attr_int(n, 0, 0, 32, &p->r, err, errlen) || /* codegen unrolls the window */
	    !op_attr_int(n, 4, LAYOUT_NCHW, LAYOUT_NHWC, &layout, err, errlen))
		return false;
	p->nhwc = layout == LAYOUT_NHWC;
	p->bias = n->attr[1], p->alpha = n->attr[2], p->beta = n->attr[3];
	/* bias > 0 keeps s positive, so s^-beta is finite for every input */
	if (!(p->bias > 0) || !(p->alpha >= 0) || !isfinite(p->alpha) || !isfinite(p->beta) || !isfinite(p->bias))
		return op_fail(n, err, errlen, "needs bias > 0, alpha >= 0 and a finite beta, got bias %g, alpha %g, beta %g",
			       p->bias, p->alpha, p->beta);
	return true;
}

static void lrn_geom(const Node *n, const Shape *x, LrnGeom *p)
{
	char err[8];
	lrn_attrs(n, p, err, sizeof err);
	p->planes = x->dim[0];
	p->c = x->dim[p->nhwc ? 3 : 1];
	p->hw = p->nhwc ? x->dim[1] * x->dim[2] : x->dim[2] * x->dim[3];
	p->cs = p->nhwc ? 1 : p->hw;
}

/* Where the channels of pixel i of image b start. */
static int64_t lrn_base(const LrnGeom *p, int64_t b, int64_t i) { return p->nhwc ? (b * p->hw + i) * p->c : b * p->c * p->hw + i; }

/* Fails unless input i is a 4-D float tensor. */
static bool need_nchw(const Node *n, const Graph *g, int i, char *err, size_t errlen)
{
	char t[128];
	const Node *x = op_in(g, n, i);
	if (x->shape.rank != 4)
		return op_fail(n, err, errlen, "input must be 4-D (NCHW, or NHWC with layout=1), got %s", op_type_str(x, t, sizeof t));
	return op_need_float(n, g, i, err, errlen);
}

bool shape_lrn(Node *n, const Graph *g, char *err, size_t errlen)
{
	LrnGeom p;
	if (!need_nchw(n, g, 0, err, errlen) || !lrn_attrs(n, &p, err, errlen))
		return false;
	n->shape = op_in(g, n, 0)->shape;
	n->dtype = op_in(g, n, 0)->dtype;
	return true;
}

/* (dy, x) -> dx */
bool shape_lrn_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	char sd[96], sx[96];
	const Shape *dy = &op_in(g, n, 0)->shape, *x = &op_in(g, n, 1)->shape;
	LrnGeom p;
	if (!need_nchw(n, g, 1, err, errlen) || !op_binary_dtype(n, g, err, errlen) || !lrn_attrs(n, &p, err, errlen))
		return false;
	if (!shape_eq(dy, x))
		return op_fail(n, err, errlen, "dy %s and x %s differ", shape_str(dy, sd, sizeof sd), shape_str(x, sx, sizeof sx));
	n->shape = *x;
	return true;
}

/* s at channel c of the column starting at x (channels cs apart). */
static double lrn_scale(const LrnGeom *p, const double *x, int64_t c)
{
	double sq = 0;
	for (int64_t k = c - p->r; k <= c + p->r; k++)
		if (k >= 0 && k < p->c)
			sq += x[k * p->cs] * x[k * p->cs];
	return p->bias + p->alpha * sq;
}

void ref_lrn(const Graph *g, const Node *n, const double *const *in, double *out)
{
	LrnGeom p;
	lrn_geom(n, &n->shape, &p);
	for (int64_t b = 0; b < p.planes; b++)
		for (int64_t i = 0; i < p.hw; i++) {
			int64_t base = lrn_base(&p, b, i);
			for (int64_t c = 0; c < p.c; c++)
				out[base + c * p.cs] = in[0][base + c * p.cs] * pow(lrn_scale(&p, in[0] + base, c), -p.beta);
		}
}

void ref_lrn_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	LrnGeom p;
	lrn_geom(n, &n->shape, &p);
	for (int64_t b = 0; b < p.planes; b++)
		for (int64_t i = 0; i < p.hw; i++) {
			int64_t base = lrn_base(&p, b, i);
			const double *dy = in[0] + base, *x = in[1] + base;
			for (int64_t c = 0; c < p.c; c++) {
				double acc = 0;
				for (int64_t k = c - p.r; k <= c + p.r; k++)
					if (k >= 0 && k < p.c)
						acc += dy[k * p.cs] * x[k * p.cs] * pow(lrn_scale(&p, x, k), -p.beta - 1);
				out[base + c * p.cs] = dy[c * p.cs] * pow(lrn_scale(&p, x, c), -p.beta) -
						       2 * p.alpha * p.beta * x[c * p.cs] * acc;
			}
		}
}

void grad_lrn(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0], in[2] = {dy, x};
	double attr[IR_MAX_ATTRS];
	for (int i = 0; i < IR_MAX_ATTRS; i++)
		attr[i] = n->attr[i];
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), OP_lrn_grad, in, attr));
}

/* per element: the window's squares and sum, then the power and the product */
double flops_lrn(const Graph *g, const Node *n)
{
	double w = 2 * (double)ir_lrn_params(n).depth_radius + 1;
	double per = n->op == OP_lrn ? 2 * w + 4 : (w + 1) * (2 * w + 6);
	return per * (double)shape_numel(&n->shape);
}
