/* layers.c: the user-facing layer table. Each row is a layer's signature (attributes in positional
 * order, with defaults as in PyTorch) and the function that turns it into IR nodes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "frontend/layers.h"
#include "frontend/suggest.h"
#include "ir/checked.h"
#include "ir/ops.h"

/* Adds a node at the layer's location; a shape error is reported there. */
static int add(LayerCall *c, OpId op, const int *in, const double *attr, const char *name)
{
	char err[256];
	int id = ir_add(c->g, op, in, attr, name, err, sizeof err);
	if (id < 0) {
		diag_error(c->d, c->loc, "%s", err);
		return -1;
	}
	c->g->node[id].loc = c->loc;
	return id;
}

static const Node *input(const LayerCall *c, int i) { return &c->g->node[c->in[i]]; }

static bool need_rank(LayerCall *c, const char *layer, int rank, const char *what)
{
	const Node *x = input(c, 0);
	if (x->shape.rank == rank)
		return true;
	char buf[96];
	diag_error(c->d, c->loc, "%s expects a %d-D %s input, got %s", layer, rank, what,
		   shape_str(&x->shape, buf, sizeof buf));
	return false;
}

/* A uniform(-bound, bound) parameter NAME.suffix, float like the layer's input; -1 after an
 * error when it would be larger than a tensor may be. */
static int param(LayerCall *c, const char *suffix, int rank, const int64_t *dim, double bound)
{
	char name[FE_NAME_BUF];
	snprintf(name, sizeof name, "%s.%s", c->name, suffix);
	Shape s = shape_make(rank, dim);
	if (!shape_fits(&s)) {
		char buf[96];
		diag_error(c->d, c->loc, "parameter %s would be %s, more than 2^40 elements", name,
			   shape_str(&s, buf, sizeof buf));
		return -1;
	}
	DType t = input(c, 0)->dtype;
	double attr[2] = {INIT_UNIFORM, bound};
	int id = ir_leaf(c->g, OP_param, name, s, dtype_is_float(t) ? t : DT_F32, attr);
	c->g->node[id].loc = c->loc;
	return id;
}

/* y + bias along axis 1, named as the layer; or y itself renamed when there is no bias. */
static int with_bias(LayerCall *c, int y, bool bias, int64_t n, double bound)
{
	if (!bias) {
		ir_set_name(c->g, y, c->name);
		return y;
	}
	int b = param(c, "bias", 1, &n, bound);
	if (b < 0)
		return -1;
	int in[2] = {y, b};
	double axis = 1;
	return add(c, OP_bias_add, in, &axis, c->name);
}

static int reshaped(LayerCall *c, int x, int rank, const int64_t *dim);
static int node(LayerCall *c, OpId op, int a, int b, const double *attr, const char *suffix);

/* A grouped convolution of x by w [Cout, Cin/G, kh, kw] with window attributes win (unfold's):
 * the windows of x as columns [N, G, 1, Cin/G kh kw, L], times the weights as
 * [1, G, Cout/G, Cin/G kh kw, 1], summed over the window axis: one fused reduction kernel that
 * reads x directly (a depthwise convolution sums kh kw products per output, no GEMM). */
static int grouped_conv(LayerCall *c, int x, int w, int64_t groups, const double *win)
{
	/* copied: adding nodes may move the node array the shapes live in */
	const Shape xs = c->g->node[x].shape, ws = c->g->node[w].shape;
	int64_t n = xs.dim[0], cout = ws.dim[0], k = ws.dim[1] * ws.dim[2] * ws.dim[3];
	int cols = node(c, OP_unfold, x, -1, win, NULL);
	if (cols < 0)
		return -1;
	int64_t l = c->g->node[cols].shape.dim[2];
	int a = reshaped(c, cols, 5, (int64_t[]){n, groups, 1, k, l});
	int b = reshaped(c, w, 5, (int64_t[]){1, groups, cout / groups, k, 1});
	double axes[2] = {8, 0};
	int y = node(c, OP_sum, node(c, OP_mul, a, b, NULL, NULL), -1, axes, NULL);
	int64_t oh = (xs.dim[2] + 2 * (int64_t)win[4] - (int64_t)win[6] * ((int64_t)win[0] - 1) - 1) / (int64_t)win[2] + 1;
	return y < 0 ? -1 : reshaped(c, y, 4, (int64_t[]){n, cout, oh, l / oh});
}

/* conv2d(out_channels, kernel, stride, padding, dilation, groups, bias), each size one number or
 * a tuple (h, w): kaiming-uniform(a=sqrt(5)) weights, whose bound works out to 1/sqrt(fan_in),
 * like the bias. groups > 1 splits the channels into groups convolved apart (weight
 * [Cout, Cin/groups, kh, kw]): by a dwconv2d when groups = Cin = out_channels (depthwise, each
 * output a direct sum over its window), else by grouped_conv. */
static int build_conv2d(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, "conv2d", 4, "NCHW"))
		return -1;
	const double *a = c->args->v, *a2 = c->args->v2;
	int64_t kh = (int64_t)a[1], kw = (int64_t)a2[1], cin = input(c, 0)->shape.dim[1], groups = (int64_t)a[5];
	if (cin % groups || (int64_t)a[0] % groups) {
		diag_error(c->d, c->loc, "conv2d: groups %lld must divide the input channels %lld and out_channels %lld",
			   (long long)groups, (long long)cin, (long long)a[0]);
		return -1;
	}
	int64_t wdim[4] = {(int64_t)a[0], cin / groups, kh, kw};
	double bound = 1 / sqrt((double)(cin / groups) * (double)kh * (double)kw); /* no int64 product to overflow */
	int w = param(c, "weight", 4, wdim, bound);
	if (w < 0)
		return -1;
	int y;
	if (groups > 1 && groups == cin && wdim[0] == cin && kh * kw <= IR_DEPTHWISE_MAX_TAPS) {
		int in[2] = {c->in[0], w};
		double attr[6] = {a[2], a2[2], a[3], a2[3], a[4], a2[4]};
		y = add(c, OP_dwconv2d, in, attr, NULL);
	} else if (groups > 1) {
		double win[8] = {(double)kh, (double)kw, a[2], a2[2], a[3], a2[3], a[4], a2[4]};
		y = grouped_conv(c, c->in[0], w, groups, win);
	} else {
		int in[2] = {c->in[0], w};
		double attr[7] = {a[2], a2[2], a[3], a2[3], a[4], a2[4], LAYOUT_NCHW}; /* the layout pass may change it */
		y = add(c, OP_conv2d, in, attr, NULL);
	}
	return y < 0 ? -1 : with_bias(c, y, a[6] != 0, wdim[0], bound);
}

/* conv_transpose2d(out_channels, kernel, stride, padding, output_padding, dilation, bias):
 * torch's ConvTranspose2d, the input gradient of the convolution whose weight is NAME.weight
 * [Cin, Cout, kh, kw] (PyTorch's layout for it), output (H - 1) stride - 2 padding +
 * dilation (k - 1) + output_padding + 1 per axis; weights uniform in 1/sqrt(Cout kh kw) as
 * PyTorch's fan-in of that weight. */
static int build_conv_transpose2d(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, l->sig.name, 4, "NCHW"))
		return -1;
	const double *a = c->args->v, *a2 = c->args->v2;
	const Shape *s = &input(c, 0)->shape;
	int64_t kh = (int64_t)a[1], kw = (int64_t)a2[1], cout = (int64_t)a[0];
	int64_t out[2], in[2] = {s->dim[2], s->dim[3]}, k[2] = {kh, kw};
	const double *v[2] = {a, a2};
	for (int d = 0; d < 2; d++) {
		if (v[d][4] >= v[d][2] && v[d][4] >= v[d][5]) {
			diag_error(c->d, c->loc, "conv_transpose2d: output_padding %g must be smaller than stride %g or dilation %g",
				   v[d][4], v[d][2], v[d][5]);
			return -1;
		}
		out[d] = (in[d] - 1) * (int64_t)v[d][2] - 2 * (int64_t)v[d][3] + (int64_t)v[d][5] * (k[d] - 1) + (int64_t)v[d][4] + 1;
		if (out[d] < 1) {
			diag_error(c->d, c->loc, "conv_transpose2d: the output would have no rows or columns (padding too large)");
			return -1;
		}
	}
	double bound = 1 / sqrt((double)cout * (double)kh * (double)kw);
	int w = param(c, "weight", 4, (int64_t[]){s->dim[1], cout, kh, kw}, bound);
	if (w < 0)
		return -1;
	double attr[9] = {a[2], a2[2], a[3], a2[3], a[5], a2[5], (double)out[0], (double)out[1], LAYOUT_NCHW};
	int y = add(c, OP_conv2d_grad_input, (int[]){c->in[0], w}, attr, NULL);
	return y < 0 ? -1 : with_bias(c, y, a[6] != 0, cout, bound);
}

/* dense(out_features, bias): x [batch, in] times weight [out, in] transposed. */
static int build_dense(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, "dense", 2, "[batch, features]"))
		return -1;
	const double *a = c->args->v;
	int64_t in_f = input(c, 0)->shape.dim[1];
	int64_t wdim[2] = {(int64_t)a[0], in_f};
	double bound = 1 / sqrt((double)in_f);
	int w = param(c, "weight", 2, wdim, bound);
	if (w < 0)
		return -1;
	int in[2] = {c->in[0], w};
	double attr[2] = {0, 1};
	int y = add(c, OP_matmul, in, attr, NULL);
	return y < 0 ? -1 : with_bias(c, y, a[1] != 0, wdim[0], bound);
}

/* One node, the layer's attributes passed in order (unary, binary, losses). */
static int build_op(const Layer *l, LayerCall *c)
{
	return add(c, l->op, c->in, c->args->v, c->name);
}

/* (kernel, stride, padding, flags) to the op's per-axis attributes; the flags (count_include_pad,
 * ceil_mode) go to the op's attributes of the same names. */
static int build_pool2d(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, l->sig.name, 4, "NCHW"))
		return -1;
	const double *a = c->args->v, *a2 = c->args->v2;
	double attr[IR_MAX_ATTRS] = {a[0], a2[0], a[1], a2[1], a[2], a2[2]};
	for (int i = 3; i < l->sig.nargs; i++)
		attr[ir_attr_index(l->op, l->sig.arg[i].name)] = a[i];
	return add(c, l->op, c->in, attr, c->name);
}

static int reshape_to(LayerCall *c, int rank, const int64_t *dim)
{
	double attr[1 + IR_MAX_DIMS] = {rank};
	for (int i = 0; i < rank; i++)
		attr[1 + i] = (double)dim[i];
	return add(c, OP_reshape, c->in, attr, c->name);
}

/* flatten(start_dim): the axes from start_dim on become one. */
static int build_flatten(const Layer *l, LayerCall *c)
{
	const Shape *s = &input(c, 0)->shape;
	int64_t start = (int64_t)c->args->v[0];
	if (start < 0)
		start += s->rank;
	if (start < 0 || start >= s->rank) {
		diag_error(c->d, c->loc, "flatten start_dim %g is out of range for a %d-D input",
			   c->args->v[0], s->rank);
		return -1;
	}
	int64_t dim[IR_MAX_DIMS], rest = 1;
	for (int i = 0; i < s->rank; i++)
		if (i < start)
			dim[i] = s->dim[i];
		else
			rest *= s->dim[i];
	dim[start] = rest;
	return reshape_to(c, (int)start + 1, dim);
}

/* reshape(d0, d1, ...): one -1 takes what the others leave. */
static int build_reshape(const Layer *l, LayerCall *c)
{
	const BoundArgs *a = c->args;
	const Shape *s = &input(c, 0)->shape;
	int64_t dim[IR_MAX_DIMS], known = 1, free_at = -1;
	bool overflow = false; /* the dims multiply past int64: they cannot match the input */
	for (int i = 0; i < a->nvar; i++) {
		dim[i] = a->var[i];
		if (dim[i] == -1 && free_at < 0)
			free_at = i;
		else if (dim[i] <= 0) {
			diag_error(c->d, c->loc, "reshape dimension %d must be positive or a single -1, got %lld",
				   i, (long long)dim[i]);
			return -1;
		} else
			overflow |= ckd_mul_i64(known, dim[i], &known);
	}
	if (a->nvar == 0) {
		diag_error(c->d, c->loc, "reshape needs at least one dimension");
		return -1;
	}
	int64_t n = shape_numel(s);
	if (!overflow && free_at >= 0 && n % known == 0)
		dim[free_at] = n / known, known = n;
	if (overflow || known != n) {
		char buf[96];
		diag_error(c->d, c->loc, "reshape cannot make %lld elements of %s into the shape asked for",
			   (long long)n, shape_str(s, buf, sizeof buf));
		return -1;
	}
	return reshape_to(c, a->nvar, dim);
}

/* dropout(p): every dropout draws from the one runtime rng node, each with its own stream. */
static int build_dropout(const Layer *l, LayerCall *c)
{
	Graph *g = c->g;
	int streams = 0;
	for (int i = 0; i < g->nnodes; i++)
		streams += g->node[i].op == OP_dropout;
	if (g->rng < 0) {
		double slot = RUNTIME_RNG;
		int64_t words = RNG_WORDS;
		g->rng = ir_leaf(g, OP_runtime, ir_find(g, "rng") < 0 ? "rng" : "rng.dropout",
				 shape_make(1, &words), DT_I32, &slot);
	}
	int in[2] = {c->in[0], g->rng};
	double attr[2] = {c->args->v[0], streams + 1};
	return add(c, OP_dropout, in, attr, c->name);
}

/* Checks axis against the input's rank and makes it non-negative. */
static bool axis_of(LayerCall *c, double dim, int *axis)
{
	int rank = input(c, 0)->shape.rank;
	int64_t d = (int64_t)dim;
	if (d < -rank || d >= rank) {
		diag_error(c->d, c->loc, "dim %lld is out of range for a %d-D input", (long long)d, rank);
		return false;
	}
	*axis = (int)(d < 0 ? d + rank : d);
	return true;
}

static int build_softmax(const Layer *l, LayerCall *c)
{
	int axis;
	if (!axis_of(c, c->args->v[0], &axis))
		return -1;
	double attr = axis;
	return add(c, l->op, c->in, &attr, c->name);
}

/* sum/mean(dim, keepdim): one axis, or every axis when dim is absent. */
static int build_reduce(const Layer *l, LayerCall *c)
{
	const BoundArgs *a = c->args;
	int axis;
	double mask = (double)((1u << input(c, 0)->shape.rank) - 1);
	if (a->given[0]) {
		if (!axis_of(c, a->v[0], &axis))
			return -1;
		mask = (double)(1u << axis);
	}
	double attr[2] = {mask, a->v[1] != 0};
	return add(c, l->op, c->in, attr, c->name);
}

/* lrn(depth_radius, bias, alpha, beta): TensorFlow's local response normalization across the
 * channels of NCHW input, its defaults as tf.nn.lrn. */
static int build_lrn(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, l->sig.name, 4, "NCHW"))
		return -1;
	const double *a = c->args->v;
	double attr[IR_MAX_ATTRS] = {a[0], a[1], a[2], a[3]}; /* layout NCHW */
	return add(c, OP_lrn, c->in, attr, c->name);
}

/* local_response_norm(size, alpha, beta, k): Caffe's LRN layer (and PyTorch's LocalResponseNorm),
 * whose alpha is per window element: TensorFlow's radius (size-1)/2 and alpha/size. */
static int build_lrn_caffe(const Layer *l, LayerCall *c)
{
	const double *a = c->args->v;
	if (!need_rank(c, l->sig.name, 4, "NCHW"))
		return -1;
	if ((int64_t)a[0] % 2 == 0) {
		diag_error(c->d, c->loc, "local_response_norm size must be odd (a window centred on the channel), got %g", a[0]);
		return -1;
	}
	double attr[IR_MAX_ATTRS] = {(a[0] - 1) / 2, a[3], a[1] / a[0], a[2]}; /* layout NCHW */
	return add(c, OP_lrn, c->in, attr, c->name);
}

/* concat(a, b, ..., dim): concat2..concat4 nodes, each taking up to four pieces, the first of the
 * next holding the previous result (pieces in order along the axis); the last is the layer's. */
static int build_concat(const Layer *l, LayerCall *c)
{
	static const OpId by_count[] = {OP_COUNT, OP_COUNT, OP_concat2, OP_concat3, OP_concat4};
	int axis;
	if (!axis_of(c, c->args->v[0], &axis))
		return -1;
	double attr = axis;
	int acc = c->in[0], next = 1;
	while (next < c->nin) {
		int take = c->nin - next < IR_MAX_INPUTS - 1 ? c->nin - next : IR_MAX_INPUTS - 1, in[IR_MAX_INPUTS] = {acc};
		memcpy(in + 1, c->in + next, (size_t)take * sizeof *in);
		next += take;
		acc = add(c, by_count[take + 1], in, &attr, next == c->nin ? c->name : NULL);
		if (acc < 0)
			return -1;
	}
	return acc;
}

/* add(a, b, ...): a + b + ..., left to right, each with numpy broadcasting. */
static int build_add(const Layer *l, LayerCall *c)
{
	int acc = c->in[0];
	for (int k = 1; k < c->nin && acc >= 0; k++)
		acc = add(c, OP_add, (int[]){acc, c->in[k]}, NULL, k == c->nin - 1 ? c->name : NULL);
	return acc;
}

/* global_avg_pool2d: the mean of each channel's plane, as [N, C, 1, 1] (a window of the plane). */
static int build_global_avg_pool(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, l->sig.name, 4, "NCHW"))
		return -1;
	const Shape *s = &input(c, 0)->shape;
	double attr[IR_MAX_ATTRS] = {(double)s->dim[2], (double)s->dim[3], 1, 1, 0, 0, 1};
	return add(c, OP_avg_pool2d, c->in, attr, c->name);
}

/* scale(factor): x * factor (a loss's 1/2). */
static int build_scale(const Layer *l, LayerCall *c)
{
	int in[2] = {c->in[0], ir_const(c->g, c->args->v[0])};
	return add(c, OP_mul, in, NULL, c->name);
}

/* ---- batch_norm2d: a composite of existing ops ---- */

/* A node the layer makes that needs no name of its own; aborts are impossible by construction. */
static int node(LayerCall *c, OpId op, int a, int b, const double *attr, const char *suffix)
{
	char name[FE_NAME_BUF];
	if (suffix)
		snprintf(name, sizeof name, "%s.%s", c->name, suffix);
	int in[2] = {a, b};
	return add(c, op, in, attr, suffix ? name : NULL);
}

static int reshaped(LayerCall *c, int x, int rank, const int64_t *dim)
{
	double attr[1 + IR_MAX_DIMS] = {rank};
	for (int i = 0; i < rank; i++)
		attr[1 + i] = (double)dim[i];
	return node(c, OP_reshape, x, -1, attr, NULL);
}

/* A running statistic NAME.suffix (a state leaf, init as PyTorch: mean 0, var 1) and its update
 * stat = (1 - momentum) stat + momentum * factor * batch. Returns the state. */
static int running_stat(LayerCall *c, const char *suffix, int batch, double init, double momentum, double factor)
{
	char name[FE_NAME_BUF];
	snprintf(name, sizeof name, "%s.%s", c->name, suffix);
	int64_t ch = c->g->node[batch].shape.dim[1];
	int s = ir_leaf(c->g, OP_state, name, shape_make(1, &ch), c->g->node[batch].dtype, &init);
	c->g->node[s].loc = c->loc;
	int flat = reshaped(c, batch, 1, &ch);
	int keep = node(c, OP_mul, s, ir_const(c->g, 1 - momentum), NULL, NULL);
	int put = node(c, OP_mul, flat, ir_const(c->g, momentum * factor), NULL, NULL);
	int next = node(c, OP_add, keep, put, NULL, NULL);
	char update[64];
	snprintf(update, sizeof update, "%.40s.update", suffix);
	node(c, OP_assign, s, next, NULL, update);
	return s;
}

/* Evaluation reads state (reshaped) where training computes batch: make-eval does the swap. */
static bool eval_swap(LayerCall *c, int batch, int state)
{
	Graph *g = c->g;
	if (g->neval_swaps == IR_MAX_EVAL_SWAPS) {
		diag_error(c->d, c->loc, "more than %d batch-norm statistics in one network", IR_MAX_EVAL_SWAPS);
		return false;
	}
	g->eval_swap[g->neval_swaps].node = batch;
	g->eval_swap[g->neval_swaps].state = state;
	g->neval_swaps++;
	return true;
}

/* batch_norm2d and batch_norm1d(eps, momentum): training-mode batch norm over every axis but the
 * channels (axis 1) of NCHW, [N, C] or [N, C, L] input, gamma and beta as NAME.weight and
 * NAME.bias, running statistics NAME.running_mean and NAME.running_var updated by assign nodes
 * (the unbiased variance, as PyTorch). The evaluation program uses the running statistics in
 * place of the batch ones NAME.batch_mean and NAME.batch_var (Graph's eval_swap table). The
 * normalization is one standardize node, whose gradient is batch norm's closed form. */
static int build_batch_norm(const Layer *l, LayerCall *c)
{
	const Shape *s = &input(c, 0)->shape;
	bool one_d = l->op == OP_sum; /* the table's mark for batch_norm1d */
	if (one_d && s->rank != 2 && s->rank != 3) {
		char buf[96];
		diag_error(c->d, c->loc, "batch_norm1d expects a 2-D [N, C] or 3-D [N, C, L] input, got %s",
			   shape_str(s, buf, sizeof buf));
		return -1;
	}
	if (!one_d && !need_rank(c, l->sig.name, 4, "NCHW"))
		return -1;
	const double *a = c->args->v;
	int rank = s->rank; /* s points into the node array, which the nodes below may move */
	int64_t ch = s->dim[1], count = shape_numel(s) / ch, col[IR_MAX_DIMS] = {0};
	double axes[2] = {(double)(((1u << rank) - 1) & ~2u), 1};
	for (int d = 1; d < rank; d++)
		col[d - 1] = d == 1 ? ch : 1;
	int x = c->in[0];
	int mean = node(c, OP_mean, x, -1, axes, "batch_mean");
	int d = node(c, OP_sub, x, mean, NULL, NULL);
	int var = node(c, OP_mean, node(c, OP_mul, d, d, NULL, NULL), -1, axes, "batch_var");
	int std = node(c, OP_sqrt, node(c, OP_add, var, ir_const(c->g, a[0]), NULL, NULL), -1, NULL, NULL);
	int invstd = node(c, OP_div, ir_const(c->g, 1), std, NULL, NULL);
	int w = param(c, "weight", 1, &ch, 0);
	c->g->node[w].attr[0] = INIT_ONE;
	int xhat = add(c, OP_standardize, (int[]){x, mean, invstd}, NULL, NULL);
	int y = node(c, OP_mul, xhat, reshaped(c, w, rank - 1, col), NULL, NULL);
	int b = param(c, "bias", 1, &ch, 0);
	c->g->node[b].attr[0] = INIT_ZERO;
	int rmean = running_stat(c, "running_mean", mean, INIT_ZERO, a[1], 1);
	int rvar = running_stat(c, "running_var", var, INIT_ONE, a[1], count > 1 ? (double)count / (double)(count - 1) : 1);
	if (!eval_swap(c, mean, rmean) || !eval_swap(c, var, rvar))
		return -1;
	double axis = 1;
	int out = node(c, OP_bias_add, y, b, &axis, NULL);
	if (out >= 0)
		ir_set_name(c->g, out, c->name);
	return out;
}

/* layer_norm(eps, elementwise_affine): PyTorch's LayerNorm over the last axis, (x - mean) /
 * sqrt(var + eps) with the biased variance, times NAME.weight plus NAME.bias ([last dim], starting
 * at 1 and 0) when elementwise_affine. */
static int build_layer_norm(const Layer *l, LayerCall *c)
{
	const double *a = c->args->v;
	const Shape *s = &input(c, 0)->shape;
	int64_t dim = s->dim[s->rank - 1];
	double axes[2] = {(double)(1u << (s->rank - 1)), 1};
	int x = c->in[0];
	int d = node(c, OP_sub, x, node(c, OP_mean, x, -1, axes, NULL), NULL, NULL);
	int var = node(c, OP_mean, node(c, OP_mul, d, d, NULL, NULL), -1, axes, NULL);
	int std = node(c, OP_sqrt, node(c, OP_add, var, ir_const(c->g, a[0]), NULL, NULL), -1, NULL, NULL);
	int y = node(c, OP_div, d, std, NULL, NULL);
	if (a[1] != 0) {
		int w = param(c, "weight", 1, &dim, 0), b = param(c, "bias", 1, &dim, 0);
		c->g->node[w].attr[0] = INIT_ONE;
		c->g->node[b].attr[0] = INIT_ZERO;
		y = node(c, OP_add, node(c, OP_mul, y, w, NULL, NULL), b, NULL, NULL);
	}
	if (y >= 0)
		ir_set_name(c->g, y, c->name);
	return y;
}

/* ---- permutations and products of activations ---- */

/* transpose with output axis d from input axis perm[d] */
static int permuted(LayerCall *c, const int *perm, int rank)
{
	double attr[IR_MAX_ATTRS] = {0};
	for (int d = 0; d < rank; d++)
		attr[d] = perm[d];
	return add(c, OP_transpose, c->in, attr, c->name);
}

/* permute(d0, d1, ...): torch.permute, output axis i is input axis d<i> (negative dims count from
 * the end). */
static int build_permute(const Layer *l, LayerCall *c)
{
	const BoundArgs *a = c->args;
	int rank = input(c, 0)->shape.rank, perm[IR_MAX_DIMS];
	unsigned seen = 0;
	if (a->nvar != rank) {
		diag_error(c->d, c->loc, "permute needs %d dimensions for a %d-D input, got %d", rank, rank, a->nvar);
		return -1;
	}
	for (int i = 0; i < rank; i++) {
		if (!axis_of(c, (double)a->var[i], &perm[i]))
			return -1;
		if (seen >> perm[i] & 1) {
			diag_error(c->d, c->loc, "permute names dimension %d twice", perm[i]);
			return -1;
		}
		seen |= 1u << perm[i];
	}
	return permuted(c, perm, rank);
}

/* transpose(dim0, dim1): torch.transpose, the two axes swapped. */
static int build_transpose(const Layer *l, LayerCall *c)
{
	int rank = input(c, 0)->shape.rank, perm[IR_MAX_DIMS], d0, d1;
	if (!axis_of(c, c->args->v[0], &d0) || !axis_of(c, c->args->v[1], &d1))
		return -1;
	for (int d = 0; d < rank; d++)
		perm[d] = d == d0 ? d1 : d == d1 ? d0 : d;
	return permuted(c, perm, rank);
}

/* matmul(a, b) and bmm(a, b): torch.matmul of two activations. Matrices are one matmul node; a
 * stack of matrices times one matrix is one matmul of the stack's rows; two stacks of the same
 * batch dimensions multiply pairwise as a product broadcast over [B, m, k, n] summed over k, which
 * fusion computes as one reduction kernel without storing the product. */
static int build_matmul(const Layer *l, LayerCall *c)
{
	const Shape *sa = &input(c, 0)->shape, *sb = &input(c, 1)->shape;
	char ta[96], tb[96];
	bool bmm = !strcmp(l->sig.name, "bmm");
	int ra = sa->rank, rb = sb->rank;
	bool ok = bmm ? ra == 3 && rb == 3 : ra >= 2 && (rb == 2 || rb == ra);
	for (int d = 0; ok && rb > 2 && d < ra - 2; d++)
		ok = sa->dim[d] == sb->dim[d];
	if (!ok || sa->dim[ra - 1] != sb->dim[rb - 2]) {
		diag_error(c->d, c->loc, "%s cannot multiply %s by %s (%s)", l->sig.name, shape_str(sa, ta, sizeof ta),
			   shape_str(sb, tb, sizeof tb),
			   bmm ? "it takes [B, m, k] and [B, k, n]"
			       : "it takes [..., m, k] and [k, n], or [..., m, k] and [..., k, n] of the same leading dimensions");
		return -1;
	}
	int64_t m = sa->dim[ra - 2], k = sa->dim[ra - 1], n = sb->dim[rb - 1], batch = shape_numel(sa) / (m * k);
	int64_t out[IR_MAX_DIMS];
	for (int d = 0; d < ra - 2; d++)
		out[d] = sa->dim[d];
	out[ra - 2] = m, out[ra - 1] = n;
	int y;
	if (ra == 2 && rb == 2) {
		return add(c, OP_matmul, c->in, (double[2]){0, 0}, c->name);
	} else if (rb == 2) {
		int a = reshaped(c, c->in[0], 2, (int64_t[]){batch * m, k});
		y = node(c, OP_matmul, a, c->in[1], (double[2]){0, 0}, NULL);
	} else {
		int a = reshaped(c, c->in[0], 4, (int64_t[]){batch, m, k, 1});
		int b = reshaped(c, c->in[1], 4, (int64_t[]){batch, 1, k, n});
		double axes[2] = {4, 0};
		y = node(c, OP_sum, node(c, OP_mul, a, b, NULL, NULL), -1, axes, NULL);
	}
	double attr[1 + IR_MAX_DIMS] = {ra};
	for (int d = 0; d < ra; d++)
		attr[1 + d] = (double)out[d];
	return y < 0 ? -1 : add(c, OP_reshape, &y, attr, c->name);
}

/* ---- one-dimensional convolution and pooling: the 2-D ops over [N, C, 1, L] ---- */

/* x [N, C, L] as [N, C, 1, L] */
static int as_plane(LayerCall *c)
{
	const Shape *s = &input(c, 0)->shape;
	return reshaped(c, c->in[0], 4, (int64_t[]){s->dim[0], s->dim[1], 1, s->dim[2]});
}

/* y [N, C, 1, L'] back to [N, C, L'], named as the layer */
static int as_line(LayerCall *c, int y)
{
	if (y < 0)
		return -1;
	const Shape *s = &c->g->node[y].shape;
	double attr[1 + IR_MAX_DIMS] = {3, (double)s->dim[0], (double)s->dim[1], (double)s->dim[3]};
	return add(c, OP_reshape, &y, attr, c->name);
}

/* conv1d(out_channels, kernel, stride, padding, dilation, bias): torch's Conv1d, its weight
 * NAME.weight [Cout, Cin, k] as PyTorch stores it, viewed as [Cout, Cin, 1, k] for conv2d. */
static int build_conv1d(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, l->sig.name, 3, "[N, C, L]"))
		return -1;
	const double *a = c->args->v;
	int64_t k = (int64_t)a[1], cin = input(c, 0)->shape.dim[1], cout = (int64_t)a[0];
	double bound = 1 / sqrt((double)cin * (double)k);
	int w = param(c, "weight", 3, (int64_t[]){cout, cin, k}, bound);
	if (w < 0)
		return -1;
	int x = as_plane(c), w4 = reshaped(c, w, 4, (int64_t[]){cout, cin, 1, k});
	double attr[7] = {1, a[2], 0, a[3], 1, a[4], LAYOUT_NCHW};
	int y = node(c, OP_conv2d, x, w4, attr, NULL);
	if (y >= 0 && a[5] != 0) {
		int b = param(c, "bias", 1, &cout, bound);
		double axis = 1;
		y = b < 0 ? -1 : node(c, OP_bias_add, y, b, &axis, NULL);
	}
	return as_line(c, y);
}

/* max_pool1d and avg_pool1d(kernel, stride, padding, ...): the 2-D pool of a 1 x kernel window. */
static int build_pool1d(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, l->sig.name, 3, "[N, C, L]"))
		return -1;
	const double *a = c->args->v;
	double attr[IR_MAX_ATTRS] = {1, a[0], 1, a[1], 0, a[2]};
	for (int i = 3; i < l->sig.nargs; i++)
		attr[ir_attr_index(l->op, l->sig.arg[i].name)] = a[i];
	int x = as_plane(c);
	return as_line(c, node(c, l->op, x, -1, attr, NULL));
}

enum { UPSAMPLE_NEAREST, UPSAMPLE_BILINEAR }; /* the words of upsample's mode, in order */

/* upsample(scale_factor, mode=nearest): nn.Upsample of NCHW input by a whole factor. nearest
 * repeats each pixel into a factor x factor block: x viewed as [N, C, H, 1, W, 1], broadcast to
 * [N, C, H, f, W, f] and viewed as [N, C, Hf, Wf] (the gradient sums each block back). bilinear
 * is the op of its own name. */
static int build_upsample(const Layer *l, LayerCall *c)
{
	if (!need_rank(c, l->sig.name, 4, "NCHW"))
		return -1;
	const Shape *s = &input(c, 0)->shape;
	int64_t f = (int64_t)c->args->v[0], n = s->dim[0], ch = s->dim[1], h = s->dim[2], w = s->dim[3];
	if (c->args->v[1] == UPSAMPLE_BILINEAR)
		return add(c, OP_upsample_bilinear, c->in, (double[1]){(double)f}, c->name);
	int x = reshaped(c, c->in[0], 6, (int64_t[]){n, ch, h, 1, w, 1});
	double to[1 + IR_MAX_DIMS] = {6, (double)n, (double)ch, (double)h, (double)f, (double)w, (double)f};
	int big = node(c, OP_broadcast_to, x, -1, to, NULL);
	double attr[1 + IR_MAX_DIMS] = {4, (double)n, (double)ch, (double)(h * f), (double)(w * f)};
	return big < 0 ? -1 : add(c, OP_reshape, &big, attr, c->name);
}

/* embedding(num_embeddings, embedding_dim): nn.Embedding of i32 indices, its rows NAME.weight
 * [num_embeddings, embedding_dim] uniform in +-sqrt(3) (the variance of PyTorch's N(0, 1)). */
static int build_embedding(const Layer *l, LayerCall *c)
{
	const Node *x = input(c, 0);
	if (x->dtype != DT_I32) {
		diag_error(c->d, c->loc, "%s reads i32 indices, got %s", l->sig.name, dtype_name(x->dtype));
		return -1;
	}
	if (l->op == OP_one_hot)
		return add(c, OP_one_hot, c->in, c->args->v, c->name);
	int w = param(c, "weight", 2, (int64_t[]){(int64_t)c->args->v[0], (int64_t)c->args->v[1]}, sqrt(3.0));
	return w < 0 ? -1 : add(c, OP_embedding, (int[]){c->in[0], w}, NULL, c->name);
}

/* parameter(d0, d1, ..., std=0.02): a learned tensor of that shape named as the statement
 * (nn.Parameter, as a vision transformer's position embedding), uniform with standard deviation
 * std (bound std sqrt(3)); f32. It reads no tensor. */
static int build_parameter(const Layer *l, LayerCall *c)
{
	const BoundArgs *a = c->args;
	if (a->nvar == 0) {
		diag_error(c->d, c->loc, "parameter needs its dimensions, such as parameter(1, 64, 128)");
		return -1;
	}
	for (int i = 0; i < a->nvar; i++)
		if (a->var[i] <= 0) {
			diag_error(c->d, c->loc, "parameter dimension %d must be positive, got %lld", i, (long long)a->var[i]);
			return -1;
		}
	Shape s = shape_make(a->nvar, a->var);
	if (!shape_fits(&s)) {
		diag_error(c->d, c->loc, "parameter %s would have more than 2^40 elements", c->name);
		return -1;
	}
	double attr[2] = {INIT_UNIFORM, a->v[0] * sqrt(3.0)};
	int id = ir_leaf(c->g, OP_param, c->name, s, DT_F32, attr);
	c->g->node[id].loc = c->loc;
	return id;
}

/* relu6: nn.ReLU6, min(max(x, 0), 6) */
static int build_relu6(const Layer *l, LayerCall *c)
{
	int r = node(c, OP_relu, c->in[0], -1, NULL, NULL);
	return r < 0 ? -1 : add(c, OP_minimum, (int[]){r, ir_const(c->g, 6)}, NULL, c->name);
}

/* pow(exponent): x to a number (torch.pow(x, exponent)). */
static int build_pow(const Layer *l, LayerCall *c) { return add(c, OP_pow, c->in, c->args->v, c->name); }

/* ---- regression losses: composites of elementwise ops and one reduction ---- */

enum { REDUCE_MEAN, REDUCE_SUM }; /* the words of `reduction`, in WORDS_REDUCTION's order */

/* The input and the target: float tensors of one shape (PyTorch warns when they differ, and a
 * broadcast target is almost always a mistake). */
static bool same_shape_pair(LayerCall *c)
{
	const Node *x = input(c, 0), *t = input(c, 1);
	char sx[96], st[96];
	if (!dtype_is_float(t->dtype) || !dtype_is_float(x->dtype)) {
		diag_error(c->d, c->loc, "%s needs float input and target, got %s and %s", c->layer, dtype_name(x->dtype),
			   dtype_name(t->dtype));
		return false;
	}
	if (shape_eq(&x->shape, &t->shape))
		return true;
	diag_error(c->d, c->loc, "%s: the input %s and the target %s differ in shape", c->layer,
		   shape_str(&x->shape, sx, sizeof sx), shape_str(&t->shape, st, sizeof st));
	return false;
}

/* The mean or sum of every element of v, named as the layer. */
static int reduce_all(LayerCall *c, int v, double reduction)
{
	double axes[2] = {(double)((1u << c->g->node[v].shape.rank) - 1), 0};
	return add(c, reduction == REDUCE_SUM ? OP_sum : OP_mean, &v, axes, c->name);
}

/* mse_loss, l1_loss, smooth_l1_loss(beta) and binary_cross_entropy_with_logits, each
 * (input, target, ..., reduction=mean) as torch.nn.functional's: the elementwise terms by
 * existing ops, so shape, reference, gradient and lowering come from theirs. */
static int build_regression_loss(const Layer *l, LayerCall *c)
{
	if (!same_shape_pair(c))
		return -1;
	const BoundArgs *a = c->args;
	double reduction = a->v[l->sig.nargs - 1];
	int x = c->in[0], t = c->in[1], d = node(c, OP_sub, x, t, NULL, NULL), v;
	const char *name = l->sig.name;
	if (!strcmp(name, "mse_loss")) {
		v = node(c, OP_mul, d, d, NULL, NULL);
	} else if (!strcmp(name, "l1_loss") || (!strcmp(name, "smooth_l1_loss") && a->v[0] == 0)) {
		v = node(c, OP_abs, d, -1, NULL, NULL);
	} else if (!strcmp(name, "smooth_l1_loss")) {
		/* 0.5 d^2 / beta below beta, |d| - beta/2 above: with m = min(|d|, beta), both are
		 * 0.5 m^2 / beta + (|d| - m) */
		double beta = a->v[0];
		int ad = node(c, OP_abs, d, -1, NULL, NULL), m = node(c, OP_minimum, ad, ir_const(c->g, beta), NULL, NULL);
		int quad = node(c, OP_mul, node(c, OP_mul, m, m, NULL, NULL), ir_const(c->g, 0.5 / beta), NULL, NULL);
		v = node(c, OP_add, quad, node(c, OP_sub, ad, m, NULL, NULL), NULL, NULL);
	} else {
		/* max(x, 0) - x t + log(1 + exp(-|x|)): no exp of a large positive number */
		int soft = node(c, OP_log, node(c, OP_add, node(c, OP_exp, node(c, OP_neg, node(c, OP_abs, x, -1, NULL, NULL), -1, NULL, NULL), -1, NULL, NULL),
						ir_const(c->g, 1), NULL, NULL), -1, NULL, NULL);
		int lin = node(c, OP_sub, node(c, OP_relu, x, -1, NULL, NULL), node(c, OP_mul, x, t, NULL, NULL), NULL, NULL);
		v = node(c, OP_add, lin, soft, NULL, NULL);
	}
	return v < 0 ? -1 : reduce_all(c, v, reduction);
}

static const char *const words_approximate[] = {"none", "tanh", NULL};
static const char *const words_reduction[] = {"mean", "sum", NULL};
static const char *const words_upsample[] = {"nearest", "bilinear", NULL};
const char *const *const arg_words[WORDS_COUNT] = {[WORDS_APPROXIMATE] = words_approximate,
						   [WORDS_REDUCTION] = words_reduction, [WORDS_UPSAMPLE] = words_upsample};

#define UNARY(id) {{#id, 0, {{0}}, false}, 1, OP_##id, build_op}
#define BINARY(id) {{#id, 0, {{0}}, false}, 2, OP_##id, build_op}
#define LOSS(id) {{#id, 0, {{0}}, false}, 2, OP_##id, build_op}

static const Layer layers[] = {
	{{"conv2d", 7, {{"out_channels", ARG_POS, 0, ARG_REQUIRED}, {"kernel", ARG_POS, 0, ARG_REQUIRED | ARG_PAIR},
			{"stride", ARG_POS, 1, ARG_PAIR}, {"padding", ARG_NONNEG, 0, ARG_PAIR},
			{"dilation", ARG_POS, 1, ARG_PAIR}, {"groups", ARG_POS, 1, 0}, {"bias", ARG_BOOL, 1, 0}}, false},
	 1, OP_conv2d, build_conv2d},
	{{"conv_transpose2d", 7, {{"out_channels", ARG_POS, 0, ARG_REQUIRED}, {"kernel", ARG_POS, 0, ARG_REQUIRED | ARG_PAIR},
				  {"stride", ARG_POS, 1, ARG_PAIR}, {"padding", ARG_NONNEG, 0, ARG_PAIR},
				  {"output_padding", ARG_NONNEG, 0, ARG_PAIR}, {"dilation", ARG_POS, 1, ARG_PAIR},
				  {"bias", ARG_BOOL, 1, 0}}, false},
	 1, OP_conv2d_grad_input, build_conv_transpose2d},
	{{"dense", 2, {{"out_features", ARG_POS, 0, ARG_REQUIRED}, {"bias", ARG_BOOL, 1, 0}}, false},
	 1, OP_matmul, build_dense},
	UNARY(relu), UNARY(sigmoid), UNARY(tanh), UNARY(silu), UNARY(exp), UNARY(log), UNARY(sqrt), UNARY(neg),
	{{"leaky_relu", 1, {{"negative_slope", ARG_NUM, 0.01, 0}}, false}, 1, OP_leaky_relu, build_op},
	{{"gelu", 1, {{"approximate", ARG_WORD, WORDS_APPROXIMATE, 0}}, false}, 1, OP_gelu, build_op},
	{{"max_pool2d", 4, {{"kernel", ARG_POS, 0, ARG_REQUIRED | ARG_PAIR}, {"stride", ARG_POS, 0, ARG_SAME | ARG_PAIR},
			    {"padding", ARG_NONNEG, 0, ARG_PAIR}, {"ceil_mode", ARG_BOOL, 0, 0}}, false},
	 1, OP_max_pool2d, build_pool2d},
	{{"avg_pool2d", 5, {{"kernel", ARG_POS, 0, ARG_REQUIRED | ARG_PAIR}, {"stride", ARG_POS, 0, ARG_SAME | ARG_PAIR},
			    {"padding", ARG_NONNEG, 0, ARG_PAIR}, {"count_include_pad", ARG_BOOL, 1, 0},
			    {"ceil_mode", ARG_BOOL, 0, 0}}, false},
	 1, OP_avg_pool2d, build_pool2d},
	{{"conv1d", 6, {{"out_channels", ARG_POS, 0, ARG_REQUIRED}, {"kernel", ARG_POS, 0, ARG_REQUIRED},
			{"stride", ARG_POS, 1, 0}, {"padding", ARG_NONNEG, 0, 0},
			{"dilation", ARG_POS, 1, 0}, {"bias", ARG_BOOL, 1, 0}}, false},
	 1, OP_conv2d, build_conv1d},
	{{"max_pool1d", 4, {{"kernel", ARG_POS, 0, ARG_REQUIRED}, {"stride", ARG_POS, 0, ARG_SAME},
			    {"padding", ARG_NONNEG, 0, 0}, {"ceil_mode", ARG_BOOL, 0, 0}}, false},
	 1, OP_max_pool2d, build_pool1d},
	{{"avg_pool1d", 5, {{"kernel", ARG_POS, 0, ARG_REQUIRED}, {"stride", ARG_POS, 0, ARG_SAME},
			    {"padding", ARG_NONNEG, 0, 0}, {"count_include_pad", ARG_BOOL, 1, 0},
			    {"ceil_mode", ARG_BOOL, 0, 0}}, false},
	 1, OP_avg_pool2d, build_pool1d},
	{{"flatten", 1, {{"start_dim", ARG_INT, 1, 0}}, false}, 1, OP_reshape, build_flatten},
	{{"reshape", 0, {{0}}, true}, 1, OP_reshape, build_reshape},
	{{"dropout", 1, {{"p", ARG_PROB, 0.5, 0}}, false}, 1, OP_dropout, build_dropout},
	{{"log_softmax", 1, {{"dim", ARG_INT, -1, 0}}, false}, 1, OP_log_softmax, build_softmax},
	{{"softmax", 1, {{"dim", ARG_INT, -1, 0}}, false}, 1, OP_softmax, build_softmax},
	{{"add", 0, {{0}}, false}, LAYER_VARIADIC, OP_add, build_add},
	BINARY(sub), BINARY(mul), BINARY(div), BINARY(maximum), BINARY(minimum),
	{{"sum", 2, {{"dim", ARG_INT, 0, ARG_OPTIONAL}, {"keepdim", ARG_BOOL, 0, 0}}, false}, 1, OP_sum, build_reduce},
	{{"mean", 2, {{"dim", ARG_INT, 0, ARG_OPTIONAL}, {"keepdim", ARG_BOOL, 0, 0}}, false}, 1, OP_mean, build_reduce},
	LOSS(nll_loss), LOSS(cross_entropy),
	{{"lrn", 4, {{"depth_radius", ARG_NONNEG, 5, 0}, {"bias", ARG_NUM, 1, 0}, {"alpha", ARG_NNUM, 1, 0},
		     {"beta", ARG_NUM, 0.5, 0}}, false}, 1, OP_lrn, build_lrn},
	{{"local_response_norm", 4, {{"size", ARG_POS, 0, ARG_REQUIRED}, {"alpha", ARG_NNUM, 1e-4, 0},
				     {"beta", ARG_NUM, 0.75, 0}, {"k", ARG_NUM, 1, 0}}, false}, 1, OP_lrn, build_lrn_caffe},
	{{"concat", 1, {{"dim", ARG_INT, 1, 0}}, false}, LAYER_VARIADIC, OP_concat4, build_concat},
	{{"concat3", 1, {{"dim", ARG_INT, 1, 0}}, false}, 3, OP_concat3, build_concat},
	{{"concat2", 1, {{"dim", ARG_INT, 1, 0}}, false}, 2, OP_concat2, build_concat},
	{{"global_avg_pool2d", 0, {{0}}, false}, 1, OP_avg_pool2d, build_global_avg_pool},
	{{"batch_norm2d", 2, {{"eps", ARG_NNUM, 1e-5, 0}, {"momentum", ARG_PROB, 0.1, 0}}, false}, 1, OP_mean, build_batch_norm},
	{{"batch_norm1d", 2, {{"eps", ARG_NNUM, 1e-5, 0}, {"momentum", ARG_PROB, 0.1, 0}}, false}, 1, OP_sum, build_batch_norm},
	{{"layer_norm", 2, {{"eps", ARG_NNUM, 1e-5, 0}, {"elementwise_affine", ARG_BOOL, 1, 0}}, false}, 1, OP_mean, build_layer_norm},
	UNARY(abs),
	{{"relu6", 0, {{0}}, false}, 1, OP_minimum, build_relu6},
	{{"parameter", 1, {{"std", ARG_NNUM, 0.02, 0}}, true}, 0, OP_param, build_parameter},
	{{"embedding", 2, {{"num_embeddings", ARG_POS, 0, ARG_REQUIRED}, {"embedding_dim", ARG_POS, 0, ARG_REQUIRED}}, false},
	 1, OP_embedding, build_embedding},
	{{"one_hot", 1, {{"num_classes", ARG_POS, 0, ARG_REQUIRED}}, false}, 1, OP_one_hot, build_embedding},
	{{"upsample", 2, {{"scale_factor", ARG_POS, 0, ARG_REQUIRED}, {"mode", ARG_WORD, WORDS_UPSAMPLE, 0}}, false}, 1,
	 OP_upsample_bilinear, build_upsample},
	{{"permute", 0, {{0}}, true}, 1, OP_transpose, build_permute},
	{{"transpose", 2, {{"dim0", ARG_INT, 0, ARG_REQUIRED}, {"dim1", ARG_INT, 0, ARG_REQUIRED}}, false}, 1, OP_transpose,
	 build_transpose},
	{{"matmul", 0, {{0}}, false}, 2, OP_matmul, build_matmul},
	{{"bmm", 0, {{0}}, false}, 2, OP_matmul, build_matmul},
	{{"pow", 1, {{"exponent", ARG_NUM, 0, ARG_REQUIRED}}, false}, 1, OP_pow, build_pow},
	{{"mse_loss", 1, {{"reduction", ARG_WORD, WORDS_REDUCTION, 0}}, false}, 2, OP_mean, build_regression_loss},
	{{"l1_loss", 1, {{"reduction", ARG_WORD, WORDS_REDUCTION, 0}}, false}, 2, OP_mean, build_regression_loss},
	{{"smooth_l1_loss", 2, {{"beta", ARG_NNUM, 1.0, 0}, {"reduction", ARG_WORD, WORDS_REDUCTION, 0}}, false}, 2, OP_mean,
	 build_regression_loss},
	{{"binary_cross_entropy_with_logits", 1, {{"reduction", ARG_WORD, WORDS_REDUCTION, 0}}, false}, 2, OP_mean,
	 build_regression_loss},
	{{"scale", 1, {{"factor", ARG_NUM, 0, ARG_REQUIRED}}, false}, 1, OP_mul, build_scale},
};

#define NLAYERS ((int)(sizeof layers / sizeof layers[0]))

static const struct {
	const char *alias, *name;
} aliases[] = {{"linear", "dense"}};

const Layer *layer_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcmp(name, aliases[i].alias))
			name = aliases[i].name;
	for (int i = 0; i < NLAYERS; i++)
		if (!strcmp(name, layers[i].sig.name))
			return &layers[i];
	return NULL;
}

int layer_index(const Layer *l) { return (int)(l - layers); }
int layer_count(void) { return NLAYERS; }
const Layer *layer_at(int i) { return &layers[i]; }
int layer_alias_count(void) { return (int)(sizeof aliases / sizeof aliases[0]); }

const char *layer_alias(int i, const Layer **layer)
{
	*layer = layer_lookup(aliases[i].name);
	return aliases[i].alias;
}

const char *layer_nearest(const char *name)
{
	enum { NALIASES = sizeof aliases / sizeof aliases[0] };
	const char *names[NLAYERS + NALIASES];
	for (int i = 0; i < NLAYERS; i++)
		names[i] = layers[i].sig.name;
	for (int i = 0; i < NALIASES; i++)
		names[NLAYERS + i] = aliases[i].alias;
	return fe_nearest(name, names, NLAYERS + NALIASES);
}
