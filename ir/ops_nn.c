/* ops_nn.c: the anchors: conv2d and its two gradients, matmul, and max/avg pooling with their
 * gradients. Tensors are NCHW; conv weights are [Cout, Cin, KH, KW]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/checked.h"
#include "ir/ops.h"

/* Fails unless input i is a 4-D tensor. */
static bool need_4d(const Node *n, const Graph *g, int i, const char *what, char *err, size_t errlen)
{
	char t[128];
	const Node *x = op_in(g, n, i);
	if (x->shape.rank == 4)
		return true;
	return op_fail(n, err, errlen, "%s must be 4-D, got %s", what, op_type_str(x, t, sizeof t));
}

/* ---- conv2d ---- */

typedef struct {
	int64_t n, cin, h, w, cout, kh, kw, oh, ow;
	int64_t sh, sw, ph, pw, dh, dw;
	bool nhwc; /* x, y NHWC and w [Cout, KH, KW, Cin] */
} ConvDims;

int ir_layout(const Node *n)
{
	int i = ir_attr_index(n->op, "layout");
	return i < 0 ? LAYOUT_NCHW : (int)n->attr[i];
}

ConvGeom ir_conv_geom(const Node *n)
{
	return (ConvGeom){.sh = (int64_t)n->attr[0], .sw = (int64_t)n->attr[1], .ph = (int64_t)n->attr[2],
			  .pw = (int64_t)n->attr[3], .dh = (int64_t)n->attr[4], .dw = (int64_t)n->attr[5],
			  .layout = ir_layout(n)};
}

/* An activation [N, C, H, W] or a weight [O, I, KH, KW] in layout lay's order. */
static Shape shape_in_layout(int lay, int64_t n, int64_t c, int64_t h, int64_t w)
{
	return lay == LAYOUT_NHWC ? (Shape){4, {n, h, w, c}} : (Shape){4, {n, c, h, w}};
}

/* The channel axis of an activation (the input-channel axis of a weight) in layout lay. */
static int chan_axis(int lay) { return lay == LAYOUT_NHWC ? 3 : 1; }
/* The first spatial axis (H, or KH): the second follows it. */
static int spatial_axis(int lay) { return lay == LAYOUT_NHWC ? 1 : 2; }

static bool conv_attrs(const Node *n, ConvDims *c, char *err, size_t errlen)
{
	int64_t lay;
	int li = ir_attr_index(n->op, "layout");
	if (!op_attr_int(n, li, LAYOUT_NCHW, LAYOUT_NHWC, &lay, err, errlen))
		return false;
	c->nhwc = lay == LAYOUT_NHWC;
	return op_attr_int(n, 0, 1, OP_ATTR_MAX, &c->sh, err, errlen) &&
	       op_attr_int(n, 1, 1, OP_ATTR_MAX, &c->sw, err, errlen) &&
	       op_attr_int(n, 2, 0, OP_ATTR_MAX, &c->ph, err, errlen) &&
	       op_attr_int(n, 3, 0, OP_ATTR_MAX, &c->pw, err, errlen) &&
	       op_attr_int(n, 4, 1, OP_ATTR_MAX, &c->dh, err, errlen) &&
	       op_attr_int(n, 5, 1, OP_ATTR_MAX, &c->dw, err, errlen);
}

/* Output size along one axis, 0 when the dilated kernel does not fit the padded input (or its
 * extent does not even fit int64). */
static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d)
{
	int64_t padded, extent;
	if (ckd_mul_i64(2, p, &padded) || ckd_add_i64(padded, in, &padded) || ckd_mul_i64(d, k - 1, &extent))
		return 0;
	int64_t span = padded - extent - 1;
	return span < 0 ? 0 : span / s + 1;
}

/* The geometry from x [N, Cin, H, W] and w [Cout, Cin, KH, KW] (or their NHWC and OHWI forms)
 * and the attributes. */
static void conv_geom(const Node *n, const Shape *x, const Shape *w, ConvDims *c)
{
	char err[8];
	conv_attrs(n, c, err, sizeof err);
	int lay = c->nhwc ? LAYOUT_NHWC : LAYOUT_NCHW, ca = chan_axis(lay), sa = spatial_axis(lay);
	c->n = x->dim[0], c->cin = x->dim[ca], c->h = x->dim[sa], c->w = x->dim[sa + 1];
	c->cout = w->dim[0], c->kh = w->dim[sa], c->kw = w->dim[sa + 1];
	c->oh = conv_out(c->h, c->kh, c->sh, c->ph, c->dh);
	c->ow = conv_out(c->w, c->kw, c->sw, c->pw, c->dw);
}

static Shape shape4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	return (Shape){4, {a, b, c, d}};
}

bool shape_conv2d(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Shape *x = &op_in(g, n, 0)->shape, *w = &op_in(g, n, 1)->shape;
	ConvDims c;
	char sx[96], sw[96];
	if (!need_4d(n, g, 0, "input", err, errlen) || !need_4d(n, g, 1, "weight", err, errlen) ||
	    !op_binary_dtype(n, g, err, errlen) || !conv_attrs(n, &c, err, errlen))
		return false;
	int ca = chan_axis(c.nhwc);
	if (x->dim[ca] != w->dim[ca])
		return op_fail(n, err, errlen, "input %s has %lld channels but weight %s expects %lld",
			       shape_str(x, sx, sizeof sx), (long long)x->dim[ca], shape_str(w, sw, sizeof sw),
			       (long long)w->dim[ca]);
	conv_geom(n, x, w, &c);
	if (c.oh < 1 || c.ow < 1)
		return op_fail(n, err, errlen, "kernel %lldx%lld (dilation %lldx%lld) is larger than the input %s padded by %lldx%lld",
			       (long long)c.kh, (long long)c.kw, (long long)c.dh, (long long)c.dw,
			       shape_str(x, sx, sizeof sx), (long long)c.ph, (long long)c.pw);
	n->shape = shape_in_layout(c.nhwc, c.n, c.cout, c.oh, c.ow);
	return true;
}

/* Checks that dy [N, Cout, OH, OW] is what conv2d makes of geometry c. */
static bool conv_check_dy(const Node *n, const Shape *dy, const ConvDims *c, char *err, size_t errlen)
{
	char sd[96], se[96];
	Shape want = shape_in_layout(c->nhwc, c->n, c->cout, c->oh, c->ow);
	if (c->oh < 1 || c->ow < 1 || !shape_eq(dy, &want))
		return op_fail(n, err, errlen, "dy %s does not match the convolution's output %s",
			       shape_str(dy, sd, sizeof sd), shape_str(&want, se, sizeof se));
	return true;
}

/* (dy, w) -> dx [N, Cin, in_h, in_w] */
bool shape_conv2d_grad_input(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Shape *dy = &op_in(g, n, 0)->shape, *w = &op_in(g, n, 1)->shape;
	int64_t ih, iw;
	ConvDims c;
	if (!need_4d(n, g, 0, "dy", err, errlen) || !need_4d(n, g, 1, "weight", err, errlen) ||
	    !op_binary_dtype(n, g, err, errlen) || !conv_attrs(n, &c, err, errlen) ||
	    !op_attr_int(n, 6, 1, IR_MAX_NUMEL, &ih, err, errlen) || !op_attr_int(n, 7, 1, IR_MAX_NUMEL, &iw, err, errlen))
		return false;
	Shape x = shape_in_layout(c.nhwc, dy->dim[0], w->dim[chan_axis(c.nhwc)], ih, iw);
	conv_geom(n, &x, w, &c);
	if (!conv_check_dy(n, dy, &c, err, errlen))
		return false;
	n->shape = x;
	return true;
}

/* (dy, x) -> dw [Cout, Cin, k_h, k_w] */
bool shape_conv2d_grad_weight(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Shape *dy = &op_in(g, n, 0)->shape, *x = &op_in(g, n, 1)->shape;
	int64_t kh, kw;
	ConvDims c;
	if (!need_4d(n, g, 0, "dy", err, errlen) || !need_4d(n, g, 1, "input", err, errlen) ||
	    !op_binary_dtype(n, g, err, errlen) || !conv_attrs(n, &c, err, errlen) ||
	    !op_attr_int(n, 6, 1, IR_MAX_NUMEL, &kh, err, errlen) || !op_attr_int(n, 7, 1, IR_MAX_NUMEL, &kw, err, errlen))
		return false;
	int ca = chan_axis(c.nhwc);
	Shape w = shape_in_layout(c.nhwc, dy->dim[ca], x->dim[ca], kh, kw);
	conv_geom(n, x, &w, &c);
	if (!conv_check_dy(n, dy, &c, err, errlen))
		return false;
	n->shape = w;
	return true;
}

typedef enum { CONV_FWD, CONV_DX, CONV_DW } ConvMode;

/* Every product of the convolution: y[b,co,oh,ow] pairs with x[b,ci,ih,iw] and w[co,ci,kh,kw].
 * The mode says which of the three is accumulated into out from the other two. */
static void conv_loop(const ConvDims *c, const double *x, const double *w, const double *y, double *out, ConvMode mode)
{
	for (int64_t b = 0; b < c->n; b++)
	for (int64_t co = 0; co < c->cout; co++)
	for (int64_t oh = 0; oh < c->oh; oh++)
	for (int64_t ow = 0; ow < c->ow; ow++) {
		int64_t yi = c->nhwc ? ((b * c->oh + oh) * c->ow + ow) * c->cout + co
				     : ((b * c->cout + co) * c->oh + oh) * c->ow + ow;
		for (int64_t ci = 0; ci < c->cin; ci++)
		for (int64_t kh = 0; kh < c->kh; kh++)
		for (int64_t kw = 0; kw < c->kw; kw++) {
			int64_t ih = oh * c->sh - c->ph + kh * c->dh, iw = ow * c->sw - c->pw + kw * c->dw;
			if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w)
				continue;
			int64_t xi = c->nhwc ? ((b * c->h + ih) * c->w + iw) * c->cin + ci
					     : ((b * c->cin + ci) * c->h + ih) * c->w + iw;
			int64_t wi = c->nhwc ? ((co * c->kh + kh) * c->kw + kw) * c->cin + ci
					     : ((co * c->cin + ci) * c->kh + kh) * c->kw + kw;
			switch (mode) {
			case CONV_FWD: out[yi] += x[xi] * w[wi]; break;
			case CONV_DX: out[xi] += y[yi] * w[wi]; break;
			case CONV_DW: out[wi] += y[yi] * x[xi]; break;
			}
		}
	}
}

static void zero(const Node *n, double *out)
{
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++)
		out[i] = 0;
}

void ref_conv2d(const Graph *g, const Node *n, const double *const *in, double *out)
{
	ConvDims c;
	conv_geom(n, &op_in(g, n, 0)->shape, &op_in(g, n, 1)->shape, &c);
	zero(n, out);
	conv_loop(&c, in[0], in[1], NULL, out, CONV_FWD);
}

void ref_conv2d_grad_input(const Graph *g, const Node *n, const double *const *in, double *out)
{
	ConvDims c;
	conv_geom(n, &n->shape, &op_in(g, n, 1)->shape, &c);
	zero(n, out);
	conv_loop(&c, NULL, in[1], in[0], out, CONV_DX);
}

void ref_conv2d_grad_weight(const Graph *g, const Node *n, const double *const *in, double *out)
{
	ConvDims c;
	conv_geom(n, &op_in(g, n, 1)->shape, &n->shape, &c);
	zero(n, out);
	conv_loop(&c, in[1], NULL, in[0], out, CONV_DW);
}

/* Convolution n's stride, padding and dilation: its first six attributes. */
static void geometry_attrs(const Node *n, double *a)
{
	for (int i = 0; i < 6; i++)
		a[i] = n->attr[i];
}

/* conv2d_grad_weight(dy, x) of a convolution with n's geometry and weight w. */
static int emit_weight_grad(Graph *g, const Node *n, int dy, int x, int w)
{
	int lay = ir_layout(n), sa = spatial_axis(lay);
	double a[IR_MAX_ATTRS] = {0};
	geometry_attrs(n, a);
	a[6] = (double)g->node[w].shape.dim[sa], a[7] = (double)g->node[w].shape.dim[sa + 1], a[8] = lay;
	int in[2] = {dy, x};
	return ir_emit(g, OP_conv2d_grad_weight, in, a);
}

void grad_conv2d(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0], w = n->in[1];
	int lay = ir_layout(n), sa = spatial_axis(lay);
	double a[IR_MAX_ATTRS] = {0};
	geometry_attrs(n, a);
	a[6] = (double)g->node[x].shape.dim[sa], a[7] = (double)g->node[x].shape.dim[sa + 1], a[8] = lay;
	int in_dx[2] = {dy, w};
	int dx = ir_emit(g, OP_conv2d_grad_input, in_dx, a);
	gc_accumulate(gc, x, dx);
	gc_accumulate(gc, w, emit_weight_grad(g, n, dy, x, w));
}

/* conv2d_grad_input as an op of its own (conv_transpose2d's forward): z = grad_input(x, w) is
 * linear in each input, so dx is the convolution of dz and dw the weight gradient of a
 * convolution whose input was dz and output gradient x. */
void grad_conv2d_grad_input(GradContext *gc, const Node *n, int dz)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0], w = n->in[1];
	double a[IR_MAX_ATTRS] = {0};
	geometry_attrs(n, a);
	a[6] = ir_layout(n);
	int in_dx[2] = {dz, w};
	int dx = ir_emit(g, OP_conv2d, in_dx, a);
	int dw = emit_weight_grad(g, n, x, dz, w);
	gc_accumulate(gc, x, dx);
	gc_accumulate(gc, w, dw);
}

/* 2 * N * Cout * OH * OW * Cin * KH * KW, from y [N, Cout, OH, OW] and w [Cout, Cin, KH, KW]
 * (the same products in either layout) */
static double conv_flops(const Shape *y, const Shape *w)
{
	return 2.0 * (double)shape_numel(y) * (double)(w->dim[1] * w->dim[2] * w->dim[3]);
}

double flops_conv2d(const Graph *g, const Node *n) { return conv_flops(&n->shape, &op_in(g, n, 1)->shape); }

double flops_conv2d_grad(const Graph *g, const Node *n)
{
	const Shape *w = n->op == OP_conv2d_grad_weight ? &n->shape : &op_in(g, n, 1)->shape;
	return conv_flops(&op_in(g, n, 0)->shape, w);
}

/* ---- matmul ---- */

MatmulFlags ir_matmul_flags(const Node *n) { return (MatmulFlags){.ta = n->attr[0] != 0, .tb = n->attr[1] != 0}; }

bool shape_matmul(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Shape *a = &op_in(g, n, 0)->shape, *b = &op_in(g, n, 1)->shape;
	char sa[96], sb[96];
	int64_t ta, tb;
	if (a->rank != 2 || b->rank != 2)
		return op_fail(n, err, errlen, "dense/matmul expects 2-D inputs, got %s and %s",
			       shape_str(a, sa, sizeof sa), shape_str(b, sb, sizeof sb));
	if (!op_binary_dtype(n, g, err, errlen) || !op_attr_int(n, 0, 0, 1, &ta, err, errlen) ||
	    !op_attr_int(n, 1, 0, 1, &tb, err, errlen))
		return false;
	if (a->dim[1 - ta] != b->dim[tb])
		return op_fail(n, err, errlen, "inner sizes differ: %s and %s", shape_str(a, sa, sizeof sa),
			       shape_str(b, sb, sizeof sb));
	n->shape = (Shape){2, {a->dim[ta], b->dim[1 - tb]}};
	return true;
}

void ref_matmul(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const Shape *a = &op_in(g, n, 0)->shape;
	MatmulFlags f = ir_matmul_flags(n);
	bool ta = f.ta, tb = f.tb;
	int64_t m = n->shape.dim[0], nn = n->shape.dim[1], k = a->dim[ta ? 0 : 1];
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < nn; j++) {
			double s = 0;
			for (int64_t p = 0; p < k; p++)
				s += in[0][ta ? p * m + i : i * k + p] * in[1][tb ? j * k + p : p * nn + j];
			out[i * nn + j] = s;
		}
}

static int emit_matmul(Graph *g, int a, int b, int ta, int tb)
{
	int in[2] = {a, b};
	double attr[2] = {ta, tb};
	return ir_emit(g, OP_matmul, in, attr);
}

/* C = op(A) op(B); each case keeps its operands untransposed in memory. */
void grad_matmul(GradContext *gc, const Node *n, int dc)
{
	Graph *g = gc_graph(gc);
	MatmulFlags f = ir_matmul_flags(n);
	int a = n->in[0], b = n->in[1], ta = f.ta, tb = f.tb;
	int da, db;
	if (!ta && !tb) {        /* C = A B:     dA = dC B^T,   dB = A^T dC */
		da = emit_matmul(g, dc, b, 0, 1);
		db = emit_matmul(g, a, dc, 1, 0);
	} else if (!ta && tb) {  /* C = A B^T:   dA = dC B,     dB = dC^T A */
		da = emit_matmul(g, dc, b, 0, 0);
		db = emit_matmul(g, dc, a, 1, 0);
	} else if (ta && !tb) {  /* C = A^T B:   dA = B dC^T,   dB = A dC */
		da = emit_matmul(g, b, dc, 0, 1);
		db = emit_matmul(g, a, dc, 0, 0);
	} else {                 /* C = A^T B^T: dA = B^T dC^T, dB = dC^T A^T */
		da = emit_matmul(g, b, dc, 1, 1);
		db = emit_matmul(g, dc, a, 1, 1);
	}
	gc_accumulate(gc, a, da);
	gc_accumulate(gc, b, db);
}

double flops_matmul(const Graph *g, const Node *n)
{
	const Shape *a = &op_in(g, n, 0)->shape;
	int64_t k = a->dim[ir_matmul_flags(n).ta ? 0 : 1];
	return 2.0 * (double)shape_numel(&n->shape) * (double)k;
}

/* ---- pooling ---- */

typedef struct {
	int64_t planes, h, w, oh, ow; /* planes = N * C */
	int64_t n, c;
	int64_t kh, kw, sh, sw, ph, pw;
	bool include_pad;             /* avg: padding counts in the divisor */
	bool ceil;                    /* ceil mode: the output size rounds up (Caffe) */
	bool nhwc;                    /* channels the last axis: a plane's elements C apart */
} PoolDims;

/* A 0/1 attribute of the pooling ops by name (absent: 0). */
static bool pool_flag(const Node *n, const char *attr, bool *out, char *err, size_t errlen)
{
	int i = ir_attr_index(n->op, attr);
	int64_t v = 0;
	if (i >= 0 && !op_attr_int(n, i, 0, 1, &v, err, errlen))
		return false;
	*out = v != 0;
	return true;
}

PoolGeom ir_pool_geom(const Node *n)
{
	int inc = ir_attr_index(n->op, "count_include_pad"), ceil = ir_attr_index(n->op, "ceil_mode");
	return (PoolGeom){.kh = (int64_t)n->attr[0], .kw = (int64_t)n->attr[1], .sh = (int64_t)n->attr[2],
			  .sw = (int64_t)n->attr[3], .ph = (int64_t)n->attr[4], .pw = (int64_t)n->attr[5],
			  .count_include_pad = inc >= 0 && n->attr[inc] != 0, .ceil_mode = ceil >= 0 && n->attr[ceil] != 0,
			  .layout = ir_layout(n)};
}

/* Output size along one axis. Ceil mode rounds up, as long as the last window starts inside the
 * input or its left padding (Caffe's and PyTorch's rule). */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t pad, bool ceil)
{
	int64_t span = in + 2 * pad - k;
	int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
	if (ceil && (o - 1) * s >= in + pad)
		o--;
	return o;
}

/* Reads the attributes and checks them against x; floor mode unless ceil_mode. */
static bool pool_geom(const Node *n, const Shape *x, PoolDims *p, char *err, size_t errlen)
{
	char sx[96];
	int64_t *field[6] = {&p->kh, &p->kw, &p->sh, &p->sw, &p->ph, &p->pw};
	for (int i = 0; i < 6; i++) /* windows and strides from 1, padding from 0 */
		if (!op_attr_int(n, i, i < 4 ? 1 : 0, OP_ATTR_MAX, field[i], err, errlen))
			return false;
	if (!pool_flag(n, "count_include_pad", &p->include_pad, err, errlen) ||
	    !pool_flag(n, "ceil_mode", &p->ceil, err, errlen) || !pool_flag(n, "layout", &p->nhwc, err, errlen))
		return false;
	/* a window must hold an element of the input: padding up to half the window, as PyTorch */
	if (2 * p->ph > p->kh || 2 * p->pw > p->kw)
		return op_fail(n, err, errlen, "padding %lldx%lld is more than half the window %lldx%lld",
			       (long long)p->ph, (long long)p->pw, (long long)p->kh, (long long)p->kw);
	p->n = x->dim[0], p->c = x->dim[p->nhwc ? 3 : 1];
	p->h = x->dim[p->nhwc ? 1 : 2], p->w = x->dim[p->nhwc ? 2 : 3], p->planes = p->n * p->c;
	if (p->kh > p->h + 2 * p->ph || p->kw > p->w + 2 * p->pw)
		return op_fail(n, err, errlen, "window %lld is larger than the padded input %s",
			       (long long)(p->kh > p->h + 2 * p->ph ? p->kh : p->kw), shape_str(x, sx, sizeof sx));
	p->oh = pool_out(p->h, p->kh, p->sh, p->ph, p->ceil);
	p->ow = pool_out(p->w, p->kw, p->sw, p->pw, p->ceil);
	return true;
}

/* The [N, C, h, w] shape in a layout. */
static Shape shape_in(bool nhwc, int64_t n, int64_t c, int64_t h, int64_t w)
{
	return nhwc ? shape4(n, h, w, c) : shape4(n, c, h, w);
}

/* The same in the pool's layout. */
static Shape pool_shape(const PoolDims *p, int64_t h, int64_t w) { return shape_in(p->nhwc, p->n, p->c, h, w); }

/* Where plane (n, c) starts in a tensor of planes of hw elements, and its elements' stride. */
static int64_t plane_base(const PoolDims *p, int64_t plane, int64_t hw)
{
	return p->nhwc ? plane / p->c * hw * p->c + plane % p->c : plane * hw;
}
static int64_t plane_stride(const PoolDims *p) { return p->nhwc ? p->c : 1; }

bool shape_pool2d(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Shape *x = &op_in(g, n, 0)->shape;
	PoolDims p;
	if (!need_4d(n, g, 0, "input", err, errlen) || !op_need_float(n, g, 0, err, errlen) ||
	    !pool_geom(n, x, &p, err, errlen))
		return false;
	n->shape = pool_shape(&p, p.oh, p.ow);
	n->dtype = op_in(g, n, 0)->dtype;
	return true;
}

/* The window argmax of max_pool2d: the pooled shape, i32 */
bool shape_pool2d_argmax(Node *n, const Graph *g, char *err, size_t errlen)
{
	if (!shape_pool2d(n, g, err, errlen))
		return false;
	n->dtype = DT_I32;
	return true;
}

/* dy must have the shape x pools to. */
static bool pool_check_dy(Node *n, const Shape *dy, const Shape *x, char *err, size_t errlen)
{
	PoolDims p;
	char sd[96], sw[96];
	if (!pool_geom(n, x, &p, err, errlen))
		return false;
	Shape want = pool_shape(&p, p.oh, p.ow);
	if (!shape_eq(dy, &want))
		return op_fail(n, err, errlen, "dy %s does not match the pooled shape %s", shape_str(dy, sd, sizeof sd),
			       shape_str(&want, sw, sizeof sw));
	n->shape = *x;
	return true;
}

/* (dy, x) -> dx */
bool shape_pool2d_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	if (!need_4d(n, g, 1, "input", err, errlen) || !op_binary_dtype(n, g, err, errlen))
		return false;
	return pool_check_dy(n, &op_in(g, n, 0)->shape, &op_in(g, n, 1)->shape, err, errlen);
}

/* Whether the windows tile the input planes exactly: kernel = stride, no padding, every row and
 * column in one window (then floor and ceil mode agree). */
static bool windows_tile(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t h, int64_t w)
{
	return kh > 0 && kw > 0 && kh == sh && kw == sw && ph == 0 && pw == 0 && h % kh == 0 && w % kw == 0;
}

/* (dy, x) -> dx, the windows tiling x */
bool shape_max_pool2d_tiled_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	PoolDims p;
	char sx[96];
	const Shape *x = &op_in(g, n, 1)->shape;
	if (!shape_pool2d_grad(n, g, err, errlen) || !pool_geom(n, x, &p, err, errlen))
		return false;
	if (!windows_tile(p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.h, p.w))
		return op_fail(n, err, errlen, "windows %lldx%lld, stride %lldx%lld, padding %lldx%lld do not tile %s exactly",
			       (long long)p.kh, (long long)p.kw, (long long)p.sh, (long long)p.sw, (long long)p.ph,
			       (long long)p.pw, shape_str(x, sx, sizeof sx));
	return true;
}

/* The input shape of max_pool2d_grad: dy's planes at the attributes' in_h x in_w. */
static bool max_pool_grad_input(const Node *n, const Shape *dy, Shape *x, char *err, size_t errlen)
{
	int64_t ih, iw;
	bool nhwc;
	if (!op_attr_int(n, ir_attr_index(n->op, "in_h"), 1, IR_MAX_NUMEL, &ih, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "in_w"), 1, IR_MAX_NUMEL, &iw, err, errlen) ||
	    !pool_flag(n, "layout", &nhwc, err, errlen))
		return false;
	*x = shape_in(nhwc, dy->dim[0], dy->dim[nhwc ? 3 : 1], ih, iw);
	return true;
}

/* (dy, index) -> dx [N, C, in_h, in_w], index from max_pool2d_argmax */
bool shape_max_pool2d_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *dy = op_in(g, n, 0), *idx = op_in(g, n, 1);
	char sd[128], si[128];
	Shape x;
	if (!need_4d(n, g, 0, "dy", err, errlen) || !op_need_float(n, g, 0, err, errlen) ||
	    !max_pool_grad_input(n, &dy->shape, &x, err, errlen))
		return false;
	if (idx->dtype != DT_I32 || !shape_eq(&idx->shape, &dy->shape))
		return op_fail(n, err, errlen, "index %s must be i32 of dy's shape %s", op_type_str(idx, si, sizeof si),
			       shape_str(&dy->shape, sd, sizeof sd));
	n->dtype = dy->dtype;
	return pool_check_dy(n, &dy->shape, &x, err, errlen);
}

/* Offsets within a plane of the in-bounds elements of window (oh, ow), in row-major order. */
static int64_t pool_window(const PoolDims *p, int64_t oh, int64_t ow, int64_t *idx)
{
	int64_t k = 0;
	for (int64_t i = 0; i < p->kh; i++)
		for (int64_t j = 0; j < p->kw; j++) {
			int64_t ih = oh * p->sh - p->ph + i, iw = ow * p->sw - p->pw + j;
			if (ih >= 0 && ih < p->h && iw >= 0 && iw < p->w)
				idx[k++] = ih * p->w + iw;
		}
	return k;
}

typedef enum { POOL_MAX, POOL_ARGMAX, POOL_AVG, POOL_AVG_GRAD, POOL_MAX_GRAD } PoolMode;

/* The average's divisor for window (oh, ow) holding k input elements: with count_include_pad
 * the window clipped to the padded input, as Caffe divides (kh * kw but in ceil mode's last
 * windows), else k. */
static double pool_divisor(const PoolDims *p, int64_t oh, int64_t ow, int64_t k)
{
	if (!p->include_pad)
		return (double)k;
	int64_t h0 = oh * p->sh - p->ph, w0 = ow * p->sw - p->pw;
	int64_t h1 = h0 + p->kh < p->h + p->ph ? h0 + p->kh : p->h + p->ph;
	int64_t w1 = w0 + p->kw < p->w + p->pw ? w0 + p->kw : p->w + p->pw;
	return (double)((h1 - h0) * (w1 - w0));
}

/* One window of a plane whose elements are cs apart (x and, for the gradient, out start at the
 * plane): forward modes write out[o] from x; the gradient adds dy[o] into out (dx). */
static void pool_one(PoolMode mode, const double *x, int64_t cs, const double *dy, double *out, int64_t o,
		     const int64_t *idx, int64_t k, double div)
{
	int64_t best = 0;
	double sum = 0;
	for (int64_t i = 1; i < k; i++)
		if (x[idx[i] * cs] > x[idx[best] * cs] || isnan(x[idx[i] * cs]))
			best = i; /* ties keep the first; a NaN always takes over (so the last NaN wins), as PyTorch's */
	switch (mode) {
	case POOL_MAX: out[o] = x[idx[best] * cs]; break;
	case POOL_ARGMAX: out[o] = (double)idx[best]; break;
	case POOL_AVG:
		for (int64_t i = 0; i < k; i++)
			sum += x[idx[i] * cs];
		out[o] = sum / div;
		break;
	case POOL_AVG_GRAD:
		for (int64_t i = 0; i < k; i++)
			out[idx[i] * cs] += dy[o] / div;
		break;
	case POOL_MAX_GRAD: out[idx[best] * cs] += dy[o]; break;
	}
}

/* x is the pooled input (forward: in[0]; the gradient: in[1], with dy in[0]). */
static void pool_ref(const Graph *g, const Node *n, const double *const *in, double *out, PoolMode mode)
{
	bool grad = mode == POOL_AVG_GRAD || mode == POOL_MAX_GRAD;
	const double *x = in[grad ? 1 : 0], *dy = grad ? in[0] : NULL;
	PoolDims p;
	char err[8];
	pool_geom(n, &op_in(g, n, grad ? 1 : 0)->shape, &p, err, sizeof err);
	int64_t *idx = malloc((size_t)(p.kh * p.kw) * sizeof *idx);
	if (!idx)
		abort();
	if (grad)
		zero(n, out);
	int64_t cs = plane_stride(&p);
	for (int64_t c = 0; c < p.planes; c++) {
		int64_t xb = plane_base(&p, c, p.h * p.w), yb = plane_base(&p, c, p.oh * p.ow);
		for (int64_t oh = 0; oh < p.oh; oh++)
			for (int64_t ow = 0; ow < p.ow; ow++) {
				int64_t o = yb + (oh * p.ow + ow) * cs, k = pool_window(&p, oh, ow, idx);
				pool_one(mode, x + xb, cs, dy, out + (grad ? xb : 0), o, idx, k, pool_divisor(&p, oh, ow, k));
			}
	}
	free(idx);
}

void ref_max_pool2d(const Graph *g, const Node *n, const double *const *in, double *out)
{
	pool_ref(g, n, in, out, POOL_MAX);
}

void ref_max_pool2d_argmax(const Graph *g, const Node *n, const double *const *in, double *out)
{
	pool_ref(g, n, in, out, POOL_ARGMAX);
}

void ref_avg_pool2d(const Graph *g, const Node *n, const double *const *in, double *out)
{
	pool_ref(g, n, in, out, POOL_AVG);
}

/* dx: each window's dy goes to the position its index names, in window order. */
void ref_max_pool2d_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	PoolDims p;
	char err[8];
	(void)g;
	pool_geom(n, &n->shape, &p, err, sizeof err);
	int64_t cs = plane_stride(&p);
	zero(n, out);
	for (int64_t c = 0; c < p.planes; c++) {
		int64_t xb = plane_base(&p, c, p.h * p.w), yb = plane_base(&p, c, p.oh * p.ow);
		for (int64_t o = yb; o < yb + p.oh * p.ow * cs; o += cs)
			out[xb + (int64_t)in[1][o] * cs] += in[0][o];
	}
}

void ref_avg_pool2d_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	pool_ref(g, n, in, out, POOL_AVG_GRAD);
}

/* dx: each window's dy goes to the window's first maximum in x, as the argmax picks it. */
void ref_max_pool2d_tiled_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	pool_ref(g, n, in, out, POOL_MAX_GRAD);
}

/* max_pool2d's gradient. Where the windows tile the planes (2x2/2 on even sizes), one node that
 * scans each window of x and writes its elements: every element is in one window, so x is read
 * once and nothing else is stored. Otherwise two nodes: the window argmax, which reads x once and
 * stores a small i32 per window, and a gather in which each input element compares itself with
 * the indices of the few windows that contain it (rescanning every window per element instead
 * costs about k_h * k_w loads per window per element). */
int ir_max_pool2d_backward(Graph *g, int x, const double *attr, int dy)
{
	double a[IR_MAX_ATTRS] = {0};
	memcpy(a, attr, ir_op_nattrs(OP_max_pool2d) * sizeof *a);
	int h = a[ir_attr_index(OP_max_pool2d, "layout")] == LAYOUT_NHWC ? 1 : 2; /* x's spatial axes */
	const Shape *xs = &g->node[x].shape; /* read before emitting: the node array may move */
	int64_t ih = xs->rank == 4 ? xs->dim[h] : 0, iw = xs->rank == 4 ? xs->dim[h + 1] : 0;
	if (xs->rank == 4 && windows_tile((int64_t)a[0], (int64_t)a[1], (int64_t)a[2], (int64_t)a[3], (int64_t)a[4],
					  (int64_t)a[5], ih, iw))
		return ir_emit(g, OP_max_pool2d_tiled_grad, (int[]){dy, x}, a);
	int idx = ir_emit(g, OP_max_pool2d_argmax, &x, a);
	a[ir_attr_index(OP_max_pool2d_grad, "in_h")] = (double)ih;
	a[ir_attr_index(OP_max_pool2d_grad, "in_w")] = (double)iw;
	int in[2] = {dy, idx};
	return ir_emit(g, OP_max_pool2d_grad, in, a);
}

void grad_max_pool2d(GradContext *gc, const Node *n, int dy)
{
	gc_accumulate(gc, n->in[0], ir_max_pool2d_backward(gc_graph(gc), n->in[0], n->attr, dy));
}

void grad_avg_pool2d(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0], in[2] = {dy, x};
	double attr[IR_MAX_ATTRS];
	for (int i = 0; i < IR_MAX_ATTRS; i++)
		attr[i] = n->attr[i];
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), OP_avg_pool2d_grad, in, attr));
}

/* one add per window: the max gradient's gather by index */
double flops_max_pool2d_grad(const Graph *g, const Node *n) { return (double)shape_numel(&op_in(g, n, 0)->shape); }

/* window size per output element, for the forward ops and argmax (n) and the avg gradient (dy =
 * input 0) */
double flops_pool2d(const Graph *g, const Node *n)
{
	const Shape *y = n->nin == 2 ? &op_in(g, n, 0)->shape : &n->shape;
	PoolGeom p = ir_pool_geom(n);
	return (double)shape_numel(y) * (double)p.kh * (double)p.kw;
}
