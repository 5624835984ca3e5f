/* import_ops.c: the ONNX operators netc imports, one row each, and how each maps onto the layers
 * of the .net language (docs/language.md). An operator, attribute or case without a row here is
 * an error naming it, never a network that computes something else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import.h"

#define MAX_WINDOW ((int64_t)0x7fffffff) /* the language's cap on window, stride, padding, dilation */

/* Copies of input values: a Value pointer dies when im_out grows the table. */
static bool act(Importer *im, int i, Value *out)
{
	Value *v = im_act(im, i);
	if (v)
		*out = *v;
	return v != NULL;
}

static bool need_rank(Importer *im, const Value *x, int rank, const char *what)
{
	char buf[160];
	if (x->rank == rank)
		return true;
	return im_fail(im, "input '%s' is %s; netc maps it for %d-D %s input only", x->onnx,
		       im_shape_str(x, buf, sizeof buf), rank, what);
}

/* ---- element by element ---- */

static bool unary(Importer *im, const char *layer)
{
	Value x;
	if (!act(im, 0, &x) || !im_out(im, NULL, x.rank, x.dim))
		return false;
	im_stmt(im, "%s = %s(%s)", im->v[im->nv - 1].net, layer, x.net);
	return true;
}

static bool op_relu(Importer *im, const Onnx__NodeProto *n) { return unary(im, "relu"); }
static bool op_sigmoid(Importer *im, const Onnx__NodeProto *n) { return unary(im, "sigmoid"); }
static bool op_tanh(Importer *im, const Onnx__NodeProto *n) { return unary(im, "tanh"); }
static bool op_exp(Importer *im, const Onnx__NodeProto *n) { return unary(im, "exp"); }
static bool op_log(Importer *im, const Onnx__NodeProto *n) { return unary(im, "log"); }
static bool op_sqrt(Importer *im, const Onnx__NodeProto *n) { return unary(im, "sqrt"); }
static bool op_neg(Importer *im, const Onnx__NodeProto *n) { return unary(im, "neg"); }

static bool op_leaky_relu(Importer *im, const Onnx__NodeProto *n)
{
	float alpha;
	char a[32];
	Value x;
	if (!im_attr_float(im, "alpha", 0.01f, &alpha) || !act(im, 0, &x) || !im_out(im, NULL, x.rank, x.dim))
		return false;
	im_stmt(im, "%s = leaky_relu(%s, negative_slope=%s)", im->v[im->nv - 1].net, x.net, im_float_str(alpha, a, sizeof a));
	return true;
}

static bool op_gelu(Importer *im, const Onnx__NodeProto *n)
{
	char approx[16];
	Value x;
	if (!im_attr_string(im, "approximate", "none", approx, sizeof approx))
		return false;
	if (strcmp(approx, "none") && strcmp(approx, "tanh"))
		return im_fail(im, "approximate='%s' is neither 'none' nor 'tanh'", approx);
	if (!act(im, 0, &x) || !im_out(im, NULL, x.rank, x.dim))
		return false;
	im_stmt(im, "%s = gelu(%s%s)", im->v[im->nv - 1].net, x.net, strcmp(approx, "tanh") ? "" : ", approximate=tanh");
	return true;
}

/* Identity: the value itself; PyTorch's exporter (2.x) passes weights that modules share, and
 * the folded batch norm's, through Identity nodes, so a constant stays a constant. */
static bool op_identity(Importer *im, const Onnx__NodeProto *n)
{
	(void)n;
	Value *in = im_in(im, 0);
	if (in && in->tensor) {
		Value c = {.tensor = in->tensor};
		return im_alias(im, &c);
	}
	Value x;
	return act(im, 0, &x) && im_alias(im, &x);
}

/* A constant of one element, as a float; false (no error) when it has more. */
static bool scalar_of(Importer *im, const Onnx__TensorProto *t, float *v)
{
	int64_t count;
	char why[64];
	return im_const_numel(im, t, &count) && count == 1 && onnx_tensor_floats(t, v, 1, why, sizeof why);
}

/* Dropout: the ratio (an input from opset 12 on, 0.5 when absent); training_mode says nothing
 * about the network netc trains, whose dropout is on in training and off in evaluation. */
static bool op_dropout(Importer *im, const Onnx__NodeProto *n)
{
	Value x;
	if (!act(im, 0, &x))
		return false;
	float p = 0.5f;
	const Onnx__TensorProto *ratio = im_const(im, 1, true);
	if (im->failed)
		return false;
	if (ratio && !scalar_of(im, ratio, &p))
		return im->failed ? false : im_fail(im, "its ratio is not one number");
	if (!(p >= 0 && p < 1))
		return im_fail(im, "ratio %g is outside [0, 1)", (double)p);
	if (p == 0)
		return im_alias(im, &x);
	char a[32];
	if (!im_out(im, NULL, x.rank, x.dim))
		return false;
	im_stmt(im, "%s = dropout(%s, p=%s)", im->v[im->nv - 1].net, x.net, im_float_str(p, a, sizeof a));
	return true;
}

/* numpy's broadcasting of two shapes into out; false when they do not broadcast. */
static bool broadcast(const Value *a, const Value *b, int *rank, int64_t *out)
{
	*rank = a->rank > b->rank ? a->rank : b->rank;
	for (int d = 0; d < *rank; d++) {
		int ia = d - (*rank - a->rank), ib = d - (*rank - b->rank);
		int64_t x = ia >= 0 ? a->dim[ia] : 1, y = ib >= 0 ? b->dim[ib] : 1;
		if (x != y && x != 1 && y != 1)
			return false;
		out[d] = x == 1 ? y : x;
	}
	return true;
}

/* x * c (Mul) or x / c (Div) by a constant scalar c: the scale layer. */
static bool scale_by_constant(Importer *im, const Onnx__NodeProto *n, const char *op)
{
	Value *v0 = im_in(im, 0), *v1 = im_in(im, 1);
	if (!v0 || !v1)
		return false;
	int xi = v0->tensor ? 1 : 0;
	const Onnx__TensorProto *c = (xi ? v0 : v1)->tensor;
	float f;
	if (!strcmp(op, "div") && xi == 1)
		return im_fail(im, "it divides a constant by a computed value, which netc has no layer for");
	if (!scalar_of(im, c, &f))
		return im->failed ? false
				  : im_fail(im, "input '%s' is a constant tensor; netc has no constant tensors (a bias after "
					    "a MatMul or Conv is taken in by that layer)", onnx_str(c->name));
	if (!strcmp(op, "div")) {
		if (f == 0)
			return im_fail(im, "it divides by the constant 0");
		f = 1 / f;
	}
	Value x;
	char a[32];
	if (!act(im, xi, &x) || !im_out(im, NULL, x.rank, x.dim))
		return false;
	im_stmt(im, "%s = scale(%s, %s)", im->v[im->nv - 1].net, x.net, im_float_str(f, a, sizeof a));
	return true;
}

static bool binary(Importer *im, const Onnx__NodeProto *n, const char *layer)
{
	if (im_ninputs(im) != 2)
		return im_fail(im, "it has %d inputs; netc maps it for 2", im_ninputs(im));
	Value *v0 = im_in(im, 0), *v1 = im_in(im, 1);
	if (!v0 || !v1)
		return false;
	if ((v0->tensor || v1->tensor) && (!strcmp(layer, "mul") || !strcmp(layer, "div")))
		return scale_by_constant(im, n, layer);
	Value a, b;
	int rank;
	int64_t dim[IR_MAX_DIMS];
	char x[160], y[160];
	if (!act(im, 0, &a) || !act(im, 1, &b))
		return false;
	if (!broadcast(&a, &b, &rank, dim))
		return im_fail(im, "its inputs %s and %s do not broadcast", im_shape_str(&a, x, sizeof x),
			       im_shape_str(&b, y, sizeof y));
	if (!im_out(im, NULL, rank, dim))
		return false;
	im_stmt(im, "%s = %s(%s, %s)", im->v[im->nv - 1].net, layer, a.net, b.net);
	return true;
}

static bool op_add(Importer *im, const Onnx__NodeProto *n) { return binary(im, n, "add"); }
static bool op_sub(Importer *im, const Onnx__NodeProto *n) { return binary(im, n, "sub"); }
static bool op_mul(Importer *im, const Onnx__NodeProto *n) { return binary(im, n, "mul"); }
static bool op_div(Importer *im, const Onnx__NodeProto *n) { return binary(im, n, "div"); }

/* Max and Min of one input are the input; of two, the layer. */
static bool extremum(Importer *im, const Onnx__NodeProto *n, const char *layer)
{
	if (im_ninputs(im) == 1) {
		Value x;
		return act(im, 0, &x) && im_alias(im, &x);
	}
	return binary(im, n, layer);
}

static bool op_max(Importer *im, const Onnx__NodeProto *n) { return extremum(im, n, "maximum"); }
static bool op_min(Importer *im, const Onnx__NodeProto *n) { return extremum(im, n, "minimum"); }

static bool softmax_like(Importer *im, const char *layer)
{
	int64_t axis;
	Value x;
	if (!im_attr_int(im, "axis", -1, &axis) || !act(im, 0, &x))
		return false;
	if (axis < -x.rank || axis >= x.rank)
		return im_fail(im, "axis %lld is out of range for a %d-D input", (long long)axis, x.rank);
	if (axis < 0)
		axis += x.rank;
	if (!im_out(im, NULL, x.rank, x.dim))
		return false;
	im_stmt(im, "%s = %s(%s, dim=%lld)", im->v[im->nv - 1].net, layer, x.net, (long long)axis);
	return true;
}

static bool op_softmax(Importer *im, const Onnx__NodeProto *n) { return softmax_like(im, "softmax"); }
static bool op_log_softmax(Importer *im, const Onnx__NodeProto *n) { return softmax_like(im, "log_softmax"); }

/* ---- windows: convolution and pooling ---- */

typedef struct {
	int64_t kernel, stride, pad, dilation;
	int64_t out[2]; /* H and W of the result */
} Window;

static bool in_range(Importer *im, const char *what, const int64_t *v, int n, int64_t lo)
{
	for (int i = 0; i < n; i++)
		if (v[i] < lo || v[i] > MAX_WINDOW)
			return im_fail(im, "%s %lld is out of range (%lld to 2^31 - 1)", what, (long long)v[i], (long long)lo);
	return true;
}

static bool all_equal(Importer *im, const char *what, const int64_t *v, int n)
{
	for (int i = 1; i < n; i++)
		if (v[i] != v[0]) {
			char buf[160];
			return im_fail(im, "%s %s differ; netc's windows are square, with one %s for both axes", what,
				       rt_shape_text(n, v, buf, sizeof buf), what);
		}
	return true;
}

/* The window of a Conv or pooling node over x (NCHW): kernel (from the attribute, else from the
 * weight's kernel[2]), strides, dilations, pads (with a folded Pad's), auto_pad and ceil_mode, as
 * one size each, as netc's layers take them. */
static bool window(Importer *im, const Value *x, const int64_t *kernel, bool ceil_mode, Window *w)
{
	int64_t k[2] = {0, 0}, s[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0, 0, 0, 0};
	int nk = im_attr_ints(im, "kernel_shape", k, 2), ns = im_attr_ints(im, "strides", s, 2);
	int nd = im_attr_ints(im, "dilations", d, 2), np = im_attr_ints(im, "pads", p, 4);
	if (nk < 0 || ns < 0 || nd < 0 || np < 0)
		return false;
	if (nk == 0 && kernel)
		k[0] = kernel[0], k[1] = kernel[1], nk = 2;
	if (nk != 2 || (ns && ns != 2) || (nd && nd != 2) || (np && np != 4))
		return im_fail(im, "kernel_shape, strides, dilations and pads are not those of a 2-D window");
	if (!in_range(im, "kernel size", k, 2, 1) || !in_range(im, "stride", s, 2, 1) ||
	    !in_range(im, "dilation", d, 2, 1) || !in_range(im, "padding", p, 4, 0))
		return false;
	char auto_pad[16];
	if (!im_attr_string(im, "auto_pad", "NOTSET", auto_pad, sizeof auto_pad))
		return false;
	if (!strcmp(auto_pad, "VALID")) {
		memset(p, 0, sizeof p);
	} else if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
		for (int a = 0; a < 2; a++) {
			int64_t in = x->dim[2 + a], out = (in + s[a] - 1) / s[a];
			int64_t total = (out - 1) * s[a] + (k[a] - 1) * d[a] + 1 - in;
			if (total < 0)
				total = 0;
			if (total % 2)
				return im_fail(im, "auto_pad=%s pads axis %d by %lld, unevenly; netc pads both sides alike",
					       auto_pad, 2 + a, (long long)total);
			p[a] = p[a + 2] = total / 2;
		}
	} else if (strcmp(auto_pad, "NOTSET")) {
		return im_fail(im, "auto_pad='%s' is not an ONNX value", auto_pad);
	}
	if (x->padded)
		for (int i = 0; i < 4; i++)
			p[i] += x->pad[i];
	if (!all_equal(im, "kernel sizes", k, 2) || !all_equal(im, "strides", s, 2) ||
	    !all_equal(im, "dilations", d, 2) || !all_equal(im, "pads", p, 4))
		return false;
	*w = (Window){k[0], s[0], p[0], d[0], {0, 0}};
	for (int a = 0; a < 2; a++) {
		int64_t span = x->dim[2 + a] + 2 * p[0] - d[0] * (k[0] - 1) - 1;
		if (span < 0)
			return im_fail(im, "the window (%lld with dilation %lld) is larger than the padded input's axis %d",
				       (long long)k[0], (long long)d[0], 2 + a);
		w->out[a] = span / s[0] + 1;
		if (ceil_mode && span % s[0]) {
			w->out[a]++;
			if ((w->out[a] - 1) * s[0] >= x->dim[2 + a] + p[0]) /* the last window starts in the input */
				w->out[a]--;
		}
	}
	return true;
}

/* ", stride=S" and the like for the arguments that differ from the layer's defaults. */
static void window_args(char *buf, size_t len, const Window *w, int64_t default_stride, bool dilation)
{
	size_t n = 0;
	buf[0] = 0;
	if (w->stride != default_stride)
		n += (size_t)snprintf(buf + n, len - n, ", stride=%lld", (long long)w->stride);
	if (w->pad)
		n += (size_t)snprintf(buf + n, len - n, ", padding=%lld", (long long)w->pad);
	if (dilation && w->dilation != 1)
		snprintf(buf + n, len - n, ", dilation=%lld", (long long)w->dilation);
}

/* The constant that the sole reader of value `out` adds to it, when that reader is an Add of a
 * constant of `channels` elements along axis 1 (shape [C], [1, C] for dense; [C, 1, 1] or
 * [1, C, 1, 1] for a conv): a bias the layer takes in. */
static const Onnx__TensorProto *bias_after(Importer *im, const char *out, int64_t channels, bool conv, int *node)
{
	int i = -1;
	for (int k = 0; k < im->nv; k++)
		if (!strcmp(im->v[k].onnx, out))
			i = im_sole_user(im, &im->v[k]);
	if (i < 0)
		return NULL;
	const Onnx__NodeProto *add = im->graph->node[i];
	if (strcmp(onnx_str(add->op_type), "Add") || onnx_str(add->domain)[0] || add->n_input != 2)
		return NULL;
	int other = strcmp(onnx_str(add->input[0]), out) ? 0 : 1;
	int v = -1;
	for (int k = 0; k < im->nv; k++)
		if (!strcmp(im->v[k].onnx, onnx_str(add->input[other])))
			v = k;
	const Onnx__TensorProto *t = v >= 0 ? im->v[v].tensor : NULL;
	if (!t)
		return NULL;
	/* the dims after the leading ones: [C] along axis 1 of [N, C] or [C, 1, 1] of [N, C, H, W] */
	size_t lead = 0;
	while (lead < t->n_dims && t->dims[lead] == 1 && t->n_dims - lead > (conv ? 3u : 1u))
		lead++;
	size_t rest = t->n_dims - lead;
	bool fits = conv ? rest == 3 && t->dims[lead] == channels && t->dims[lead + 1] == 1 && t->dims[lead + 2] == 1
			 : rest == 1 && t->dims[lead] == channels;
	if (!fits || t->n_dims > (conv ? 4u : 2u))
		return NULL;
	*node = i;
	return t;
}

/* The output [N, m, oh, ow] (dim) of a Conv or ConvTranspose n with weight w, named after w, and
 * its weight and bias (*b, or a bias the node after n adds: *fold names that node) as the layer's
 * parameters; returns the layer's name, NULL on an error. */
static const char *conv_layer(Importer *im, const Onnx__NodeProto *n, const Onnx__TensorProto *w,
			      const Onnx__TensorProto **b, int64_t m, const int64_t *dim, int *fold)
{
	char layer[IM_NAME + 8];
	im_layer_hint(im, w, layer, sizeof layer);
	Value *y = im_out(im, layer, 4, dim);
	if (!y)
		return NULL;
	if (!*b)
		*b = bias_after(im, n->output[0], m, true, fold);
	if (!im_weight(im, y->net, "weight", w, 4, w->dims) || (*b && !im_weight(im, y->net, "bias", *b, 1, &m)))
		return NULL;
	return y->net;
}

static bool op_conv(Importer *im, const Onnx__NodeProto *n)
{
	Value x;
	const Onnx__TensorProto *w = im_const(im, 1, false);
	if (!w || !act(im, 0, &x) || !need_rank(im, &x, 4, "NCHW"))
		return false;
	const Onnx__TensorProto *b = im_const(im, 2, true);
	int64_t group;
	if (im->failed || !im_attr_int(im, "group", 1, &group))
		return false;
	char buf[160];
	if (group < 1 || x.dim[1] % group)
		return im_fail(im, "group=%lld does not divide the %lld input channels", (long long)group, (long long)x.dim[1]);
	if (w->n_dims != 4 || w->dims[1] != x.dim[1] / group || w->dims[0] % group)
		return im_fail(im, "its weight '%s' is %s; for %lld input channels in %lld groups netc needs [M, %lld, k, k] "
			       "with M a multiple of %lld", onnx_str(w->name), rt_shape_text((int)w->n_dims, w->dims, buf, sizeof buf),
			       (long long)x.dim[1], (long long)group, (long long)(x.dim[1] / group), (long long)group);
	Window win;
	if (!window(im, &x, w->dims + 2, false, &win))
		return false;
	int64_t m = w->dims[0], dim[4] = {x.dim[0], m, win.out[0], win.out[1]};
	int fold = -1;
	const char *name = conv_layer(im, n, w, &b, m, dim, &fold);
	if (!name)
		return false;
	char args[96], groups[48] = "";
	window_args(args, sizeof args, &win, 1, true);
	if (group > 1)
		snprintf(groups, sizeof groups, ", groups=%lld", (long long)group);
	im_stmt(im, "%s = conv2d(%s, %lld, kernel=%lld%s%s%s)", name, x.net, (long long)m, (long long)win.kernel, args,
		groups, b ? "" : ", bias=false");
	return fold < 0 || im_fold(im, fold);
}

/* ", name=v" or ", name=(h, w)" where the pair differs from the layer's default. */
static size_t pair_arg(char *buf, size_t len, const char *name, const int64_t *v, int64_t def)
{
	if (v[0] == def && v[1] == def)
		return 0;
	if (v[0] == v[1])
		return (size_t)snprintf(buf, len, ", %s=%lld", name, (long long)v[0]);
	return (size_t)snprintf(buf, len, ", %s=(%lld, %lld)", name, (long long)v[0], (long long)v[1]);
}

/* ConvTranspose: conv_transpose2d, whose weight [Cin, Cout, kh, kw] is ONNX's W for one group;
 * each size one number or (h, w), the pads the same on both sides of an axis. */
static bool op_conv_transpose(Importer *im, const Onnx__NodeProto *n)
{
	Value x;
	const Onnx__TensorProto *w = im_const(im, 1, false);
	if (!w || !act(im, 0, &x) || !need_rank(im, &x, 4, "NCHW"))
		return false;
	const Onnx__TensorProto *b = im_const(im, 2, true);
	int64_t group, k[2] = {0, 0}, s[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0, 0, 0, 0}, op[2] = {0, 0}, shape[2];
	char auto_pad[16], buf[160];
	if (im->failed || !im_attr_int(im, "group", 1, &group) ||
	    !im_attr_string(im, "auto_pad", "NOTSET", auto_pad, sizeof auto_pad))
		return false;
	int nk = im_attr_ints(im, "kernel_shape", k, 2), ns = im_attr_ints(im, "strides", s, 2);
	int nd = im_attr_ints(im, "dilations", d, 2), np = im_attr_ints(im, "pads", p, 4);
	int no = im_attr_ints(im, "output_padding", op, 2), nshape = im_attr_ints(im, "output_shape", shape, 2);
	if (nk < 0 || ns < 0 || nd < 0 || np < 0 || no < 0 || nshape < 0)
		return false;
	if (group != 1)
		return im_fail(im, "group=%lld: netc's conv_transpose2d has no groups", (long long)group);
	if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID"))
		return im_fail(im, "auto_pad=%s; netc reads a ConvTranspose's explicit pads", auto_pad);
	if (nshape)
		return im_fail(im, "it gives output_shape; netc reads a ConvTranspose's pads and output_padding");
	if (w->n_dims != 4 || w->dims[0] != x.dim[1])
		return im_fail(im, "its weight '%s' is %s; for %lld input channels netc needs [%lld, M, kh, kw]",
			       onnx_str(w->name), rt_shape_text((int)w->n_dims, w->dims, buf, sizeof buf),
			       (long long)x.dim[1], (long long)x.dim[1]);
	if (nk == 0)
		k[0] = w->dims[2], k[1] = w->dims[3], nk = 2;
	if (nk != 2 || (ns && ns != 2) || (nd && nd != 2) || (np && np != 4) || (no && no != 2))
		return im_fail(im, "kernel_shape, strides, dilations, pads and output_padding are not those of a 2-D window");
	if (k[0] != w->dims[2] || k[1] != w->dims[3])
		return im_fail(im, "kernel_shape %s is not its weight's", rt_shape_text(2, k, buf, sizeof buf));
	if (!strcmp(auto_pad, "VALID"))
		memset(p, 0, sizeof p);
	if (!in_range(im, "stride", s, 2, 1) || !in_range(im, "dilation", d, 2, 1) || !in_range(im, "padding", p, 4, 0) ||
	    !in_range(im, "output padding", op, 2, 0))
		return false;
	if (p[0] != p[2] || p[1] != p[3])
		return im_fail(im, "pads %s differ at the two ends of an axis; netc pads both ends alike",
			       rt_shape_text(4, p, buf, sizeof buf));
	int64_t m = w->dims[1], dim[4] = {x.dim[0], m, 0, 0};
	for (int a = 0; a < 2; a++) {
		if (op[a] >= s[a] && op[a] >= d[a])
			return im_fail(im, "output_padding %lld is not below the stride %lld or the dilation %lld", (long long)op[a],
				       (long long)s[a], (long long)d[a]);
		dim[2 + a] = (x.dim[2 + a] - 1) * s[a] - 2 * p[a] + d[a] * (k[a] - 1) + op[a] + 1;
	}
	int fold = -1;
	const char *name = conv_layer(im, n, w, &b, m, dim, &fold);
	if (!name)
		return false;
	size_t at = 0;
	buf[0] = 0;
	at += pair_arg(buf + at, sizeof buf - at, "stride", s, 1);
	at += pair_arg(buf + at, sizeof buf - at, "padding", (int64_t[]){p[0], p[1]}, 0);
	at += pair_arg(buf + at, sizeof buf - at, "output_padding", op, 0);
	pair_arg(buf + at, sizeof buf - at, "dilation", d, 1);
	char kernel[48];
	if (k[0] == k[1])
		snprintf(kernel, sizeof kernel, "%lld", (long long)k[0]);
	else
		snprintf(kernel, sizeof kernel, "(%lld, %lld)", (long long)k[0], (long long)k[1]);
	im_stmt(im, "%s = conv_transpose2d(%s, %lld, kernel=%s%s%s)", name, x.net, (long long)m, kernel, buf,
		b ? "" : ", bias=false");
	return fold < 0 || im_fold(im, fold);
}

static bool op_max_pool(Importer *im, const Onnx__NodeProto *n)
{
	int64_t ceil_mode, order;
	Value x;
	Window w;
	if (!act(im, 0, &x) || !need_rank(im, &x, 4, "NCHW") || !im_attr_int(im, "ceil_mode", 0, &ceil_mode) ||
	    !im_attr_int(im, "storage_order", 0, &order))
		return false;
	if (order != 0)
		return im_fail(im, "storage_order=%lld; netc's indices are row-major", (long long)order);
	if (!window(im, &x, NULL, ceil_mode != 0, &w))
		return false;
	if (w.dilation != 1)
		return im_fail(im, "dilations of %lld; netc's max_pool2d has none", (long long)w.dilation);
	int64_t dim[4] = {x.dim[0], x.dim[1], w.out[0], w.out[1]};
	if (!im_out(im, NULL, 4, dim))
		return false;
	char args[96];
	window_args(args, sizeof args, &w, w.kernel, false);
	im_stmt(im, "%s = max_pool2d(%s, %lld%s%s)", im->v[im->nv - 1].net, x.net, (long long)w.kernel, args,
		ceil_mode ? ", ceil_mode=true" : "");
	return true;
}

static bool op_average_pool(Importer *im, const Onnx__NodeProto *n)
{
	int64_t ceil_mode, include_pad;
	Value x;
	Window w;
	if (!act(im, 0, &x) || !need_rank(im, &x, 4, "NCHW") || !im_attr_int(im, "ceil_mode", 0, &ceil_mode) ||
	    !im_attr_int(im, "count_include_pad", 0, &include_pad) || !window(im, &x, NULL, ceil_mode != 0, &w))
		return false;
	if (w.dilation != 1)
		return im_fail(im, "dilations of %lld; netc's avg_pool2d has none", (long long)w.dilation);
	int64_t dim[4] = {x.dim[0], x.dim[1], w.out[0], w.out[1]};
	if (!im_out(im, NULL, 4, dim))
		return false;
	char args[96];
	window_args(args, sizeof args, &w, w.kernel, false);
	im_stmt(im, "%s = avg_pool2d(%s, %lld%s%s%s)", im->v[im->nv - 1].net, x.net, (long long)w.kernel, args,
		w.pad && !include_pad ? ", count_include_pad=false" : "", ceil_mode ? ", ceil_mode=true" : "");
	return true;
}

static bool op_global_average_pool(Importer *im, const Onnx__NodeProto *n)
{
	Value x;
	if (!act(im, 0, &x) || !need_rank(im, &x, 4, "NCHW"))
		return false;
	int64_t dim[4] = {x.dim[0], x.dim[1], 1, 1};
	if (!im_out(im, NULL, 4, dim))
		return false;
	im_stmt(im, "%s = global_avg_pool2d(%s)", im->v[im->nv - 1].net, x.net);
	return true;
}

/* Pad: zeros around H and W, taken in by the Conv that reads it (PyTorch's padding='same' and
 * some exporters write a Pad before the Conv). */
static bool op_pad(Importer *im, const Onnx__NodeProto *n)
{
	char mode[16];
	Value x;
	if (!im_attr_string(im, "mode", "constant", mode, sizeof mode) || !act(im, 0, &x) || !need_rank(im, &x, 4, "NCHW"))
		return false;
	if (strcmp(mode, "constant"))
		return im_fail(im, "mode='%s'; netc folds zero padding only", mode);
	const Onnx__TensorProto *pads = im_const(im, 1, false), *value = im_const(im, 2, true);
	if (!pads || im->failed)
		return false;
	if (im_ninputs(im) > 3)
		return im_fail(im, "it pads chosen axes (an axes input); netc folds pads of all four axes");
	float zero;
	if (value && !scalar_of(im, value, &zero))
		return im->failed ? false : im_fail(im, "its constant_value is not one number");
	if (value && zero != 0)
		return im_fail(im, "it pads with %g; netc folds zero padding only", (double)zero);
	int64_t count, p[8];
	if (!im_const_numel(im, pads, &count))
		return false;
	if (count != 8)
		return im_fail(im, "it has %lld pads; a 4-D input has 8", (long long)count);
	if (!im_const_ints(im, pads, p, 8))
		return false;
	if (p[0] || p[1] || p[4] || p[5])
		return im_fail(im, "it pads the batch or channel axis; netc folds pads of H and W into a Conv");
	for (int i = 0; i < 8; i++)
		if (p[i] < 0 || p[i] > MAX_WINDOW)
			return im_fail(im, "pad %lld is out of range (0 to 2^31 - 1)", (long long)p[i]);
	x.padded = true;
	x.pad[0] += p[2], x.pad[1] += p[3], x.pad[2] += p[6], x.pad[3] += p[7];
	x.dim[2] += p[2] + p[6], x.dim[3] += p[3] + p[7];
	return im_alias(im, &x);
}

/* ---- dense layers ---- */

/* A weight [out, in] from B, transposed when B is [in, out], scaled by alpha. */
static RtTensor *dense_weight(Importer *im, const char *layer, const Onnx__TensorProto *b, bool trans_b, float alpha)
{
	int64_t out = b->dims[trans_b ? 0 : 1], in = b->dims[trans_b ? 1 : 0], dim[2] = {out, in};
	RtTensor *w = im_weight(im, layer, "weight", b, 2, dim);
	if (!w)
		return NULL;
	if (!trans_b) {
		float *t = malloc((size_t)(out * in) * sizeof *t);
		if (!t)
			return im_fail(im, "out of memory"), NULL;
		for (int64_t i = 0; i < in; i++)
			for (int64_t o = 0; o < out; o++)
				t[o * in + i] = w->data[i * out + o];
		free(w->data);
		w->data = t;
	}
	if (alpha != 1)
		for (int64_t i = 0; i < out * in; i++)
			w->data[i] *= alpha;
	return w;
}

/* dense(x, B[, bias]) for Gemm and MatMul; c: the bias constant or NULL. */
static bool dense(Importer *im, const Onnx__NodeProto *n, const Onnx__TensorProto *b, bool trans_b, float alpha,
		  const Onnx__TensorProto *c, float beta)
{
	Value x;
	char buf[160];
	if (!act(im, 0, &x))
		return false;
	if (x.rank != 2)
		return im_fail(im, "input '%s' is %s; netc's dense takes [batch, features] (Flatten first)", x.onnx,
			       im_shape_str(&x, buf, sizeof buf));
	if (b->n_dims != 2 || b->dims[trans_b ? 1 : 0] != x.dim[1])
		return im_fail(im, "its weight '%s' is %s, which does not multiply [batch, %lld]", onnx_str(b->name),
			       rt_shape_text((int)b->n_dims, b->dims, buf, sizeof buf), (long long)x.dim[1]);
	int64_t out = b->dims[trans_b ? 0 : 1], dim[2] = {x.dim[0], out};
	char layer[IM_NAME + 8];
	im_layer_hint(im, b, layer, sizeof layer);
	Value *y = im_out(im, layer, 2, dim);
	if (!y)
		return false;
	const char *name = y->net;
	int fold = -1;
	if (!c)
		c = bias_after(im, n->output[0], out, false, &fold), beta = 1;
	if (!dense_weight(im, name, b, trans_b, alpha))
		return false;
	if (c) {
		int64_t count;
		if (!im_const_numel(im, c, &count))
			return false;
		if (count != out && count != 1)
			return im_fail(im, "its bias '%s' is %s; netc's dense adds one per output feature", onnx_str(c->name),
				       rt_shape_text((int)c->n_dims, c->dims, buf, sizeof buf));
		int64_t one = 1;
		RtTensor *bias = im_weight(im, name, "bias", c, 1, count == 1 ? &one : &out);
		if (!bias)
			return false;
		if (count == 1) { /* a scalar bias broadcasts over the features */
			float v = bias->data[0];
			if (!(bias->data = realloc(bias->data, (size_t)out * sizeof *bias->data)))
				abort();
			for (int64_t i = 0; i < out; i++)
				bias->data[i] = v;
			bias->dim[0] = out;
		}
		for (int64_t i = 0; i < out; i++)
			bias->data[i] *= beta;
	}
	im_stmt(im, "%s = dense(%s, %lld%s)", name, x.net, (long long)out, c ? "" : ", bias=false");
	return fold < 0 || im_fold(im, fold);
}

static bool op_gemm(Importer *im, const Onnx__NodeProto *n)
{
	int64_t trans_a, trans_b;
	float alpha, beta;
	if (!im_attr_int(im, "transA", 0, &trans_a) || !im_attr_int(im, "transB", 0, &trans_b) ||
	    !im_attr_float(im, "alpha", 1, &alpha) || !im_attr_float(im, "beta", 1, &beta))
		return false;
	if (trans_a)
		return im_fail(im, "transA=1: the batch would be the reduced axis");
	Value *bv = im_in(im, 1);
	if (bv && !bv->tensor)
		return im_fail(im, "its B input '%s' is computed; netc maps a Gemm to a dense layer, whose B is a weight "
			       "(a MatMul multiplies two computed values)", bv->onnx);
	const Onnx__TensorProto *b = im_const(im, 1, false), *c = im_const(im, 2, true);
	if (!b || im->failed)
		return false;
	return dense(im, n, b, trans_b != 0, alpha, c, beta);
}

/* A MatMul of two computed stacks of matrices [batch, ..., m, k] by [batch, ..., k, n] with the same
 * leading dimensions: netc's matmul of two activations (attention's products). */
static bool matmul_activations(Importer *im)
{
	Value a, b;
	char x[160], y[160];
	if (!act(im, 0, &a) || !act(im, 1, &b))
		return false;
	int r = a.rank;
	bool ok = r >= 3 && b.rank == r && a.dim[r - 1] == b.dim[r - 2];
	for (int d = 0; ok && d < r - 2; d++)
		ok = a.dim[d] == b.dim[d];
	if (!ok)
		return im_fail(im, "its inputs %s and %s are not two stacks of matrices [batch, ..., m, k] and "
			       "[batch, ..., k, n] of the same leading dimensions, which netc's matmul multiplies",
			       im_shape_str(&a, x, sizeof x), im_shape_str(&b, y, sizeof y));
	int64_t dim[IR_MAX_DIMS];
	memcpy(dim, a.dim, sizeof dim);
	dim[r - 1] = b.dim[r - 1];
	if (!im_out(im, NULL, r, dim))
		return false;
	im_stmt(im, "%s = matmul(%s, %s)", im->v[im->nv - 1].net, a.net, b.net);
	return true;
}

static bool op_matmul(Importer *im, const Onnx__NodeProto *n)
{
	Value *bv = im_in(im, 1);
	if (bv && !bv->tensor)
		return matmul_activations(im);
	const Onnx__TensorProto *b = im_const(im, 1, false);
	return b && dense(im, n, b, false, 1, NULL, 1);
}

/* ---- normalization ---- */

static bool op_batch_norm(Importer *im, const Onnx__NodeProto *n)
{
	Value x;
	float eps, momentum;
	int64_t training;
	if (!act(im, 0, &x) || !need_rank(im, &x, 4, "NCHW") || !im_attr_float(im, "epsilon", 1e-5f, &eps) ||
	    !im_attr_float(im, "momentum", 0.9f, &momentum) || !im_attr_int(im, "training_mode", 0, &training))
		return false;
	if (training)
		return im_fail(im, "training_mode=1: the graph normalizes by batch statistics where an exported model "
			       "uses the running ones (export the model in evaluation mode)");
	if (!(eps >= 0) || !(momentum >= 0 && momentum <= 1))
		return im_fail(im, "epsilon %g or momentum %g is out of range", (double)eps, (double)momentum);
	const Onnx__TensorProto *t[4];
	for (int i = 0; i < 4; i++)
		if (!(t[i] = im_const(im, 1 + i, false)))
			return false;
	char layer[IM_NAME + 8];
	im_layer_hint(im, t[0], layer, sizeof layer);
	Value *y = im_out(im, layer, 4, x.dim);
	if (!y)
		return false;
	const char *name = y->net;
	static const char *const suffix[4] = {"weight", "bias", "running_mean", "running_var"};
	int64_t c = x.dim[1];
	for (int i = 0; i < 4; i++)
		if (!im_weight(im, name, suffix[i], t[i], 1, &c))
			return false;
	/* ONNX's momentum weighs the running statistic, PyTorch's (and netc's) the batch's */
	char e[48] = "", m[48] = "", f[32];
	double mom = 1.0 - (double)momentum;
	if (eps != 1e-5f)
		snprintf(e, sizeof e, ", eps=%s", im_float_str(eps, f, sizeof f));
	if (mom < 0.1 - 1e-6 || mom > 0.1 + 1e-6)
		snprintf(m, sizeof m, ", momentum=%.6g", mom);
	im_stmt(im, "%s = batch_norm2d(%s%s%s)", name, x.net, e, m);
	return true;
}

/* t was written by a Constant node, not listed among the graph's initializers (which are weights). */
static bool is_fixed(const Importer *im, const Onnx__TensorProto *t)
{
	for (size_t i = 0; i < im->graph->n_initializer; i++)
		if (im->graph->initializer[i] == t)
			return false;
	return true;
}

/* The constant t (count elements) holds only v; false (no error) when it holds another value. */
static bool all_equal_to(Importer *im, const Onnx__TensorProto *t, int64_t count, float v)
{
	float *f = malloc((size_t)count * sizeof *f);
	char why[256];
	if (!f)
		abort();
	bool same = onnx_tensor_floats(t, f, count, why, sizeof why);
	for (int64_t i = 0; same && i < count; i++)
		same = f[i] == v;
	free(f);
	return same;
}

/* LayerNormalization over the last axis: layer_norm, Scale and B its weight and bias. Scale and B
 * written as Constant nodes of ones and zeros (B absent) are a layer_norm without parameters
 * (elementwise_affine=false), as netc exports one; a missing B of a weighted one is a bias of
 * zeros. */
static bool op_layer_norm(Importer *im, const Onnx__NodeProto *n)
{
	Value x;
	int64_t axis, stash;
	float eps;
	if (!act(im, 0, &x) || !im_attr_int(im, "axis", -1, &axis) || !im_attr_float(im, "epsilon", 1e-5f, &eps) ||
	    !im_attr_int(im, "stash_type", 1, &stash))
		return false;
	if (axis < 0)
		axis += x.rank;
	if (x.rank < 2 || axis != x.rank - 1)
		return im_fail(im, "axis %lld of a %d-D input; netc's layer_norm normalizes over the last axis of [batch, ...]",
			       (long long)axis, x.rank);
	if (stash != 1)
		return im_fail(im, "stash_type=%lld; netc computes the statistics in float (1)", (long long)stash);
	if (!(eps >= 0))
		return im_fail(im, "epsilon %g is negative", (double)eps);
	const Onnx__TensorProto *scale = im_const(im, 1, false), *bias = scale ? im_const(im, 2, true) : NULL;
	if (!scale || im->failed)
		return false;
	int64_t c = x.dim[x.rank - 1], count;
	const Onnx__TensorProto *t[2] = {scale, bias};
	for (int i = 0; i < 2; i++)
		if (t[i] && (!im_const_numel(im, t[i], &count) || count != c))
			return im->failed ? false : im_fail(im, "its %s '%s' has %lld elements; the last axis has %lld",
							    i ? "bias" : "scale", onnx_str(t[i]->name), (long long)count, (long long)c);
	bool affine = !is_fixed(im, scale) || !all_equal_to(im, scale, c, 1) ||
		      (bias && (!is_fixed(im, bias) || !all_equal_to(im, bias, c, 0)));
	char layer[IM_NAME + 8], e[48] = "", f[32];
	im_layer_hint(im, affine ? scale : NULL, layer, sizeof layer);
	Value *y = im_out(im, layer, x.rank, x.dim);
	if (!y)
		return false;
	const char *name = y->net;
	if (affine) {
		char bias_name[IM_NAME + 8];
		snprintf(bias_name, sizeof bias_name, "%s.bias", name);
		if (!im_weight(im, name, "weight", scale, 1, &c) || (bias && !im_weight(im, name, "bias", bias, 1, &c)))
			return false;
		if (!bias && !rt_tensors_add(im->weights, bias_name, 1, &c)) /* zeros */
			return im_fail(im, "out of memory");
	}
	if (eps != 1e-5f)
		snprintf(e, sizeof e, ", eps=%s", im_float_str(eps, f, sizeof f));
	im_stmt(im, "%s = layer_norm(%s%s%s)", name, x.net, e, affine ? "" : ", elementwise_affine=false");
	return true;
}

static bool op_lrn(Importer *im, const Onnx__NodeProto *n)
{
	int64_t size;
	float alpha, beta, bias;
	Value x;
	if (!im_attr_int(im, "size", 0, &size) || !im_attr_float(im, "alpha", 1e-4f, &alpha) ||
	    !im_attr_float(im, "beta", 0.75f, &beta) || !im_attr_float(im, "bias", 1, &bias) || !act(im, 0, &x) ||
	    !need_rank(im, &x, 4, "NCHW"))
		return false;
	if (size < 1 || size % 2 == 0 || size > 65)
		return im_fail(im, "size %lld; netc's local_response_norm takes an odd size up to 65 (a window centred on "
			       "the channel)", (long long)size);
	if (!im_out(im, NULL, 4, x.dim))
		return false;
	char a[32], b[32], k[32];
	im_stmt(im, "%s = local_response_norm(%s, %lld, alpha=%s, beta=%s, k=%s)", im->v[im->nv - 1].net, x.net,
		(long long)size, im_float_str(alpha, a, sizeof a), im_float_str(beta, b, sizeof b),
		im_float_str(bias, k, sizeof k));
	return true;
}

/* ---- shapes ---- */

static bool flatten_to(Importer *im, const Value *x)
{
	int64_t dim[2] = {x->dim[0], 1};
	for (int d = 1; d < x->rank; d++)
		dim[1] *= x->dim[d];
	if (!im_out(im, NULL, 2, dim))
		return false;
	im_stmt(im, "%s = flatten(%s)", im->v[im->nv - 1].net, x->net);
	return true;
}

static bool op_flatten(Importer *im, const Onnx__NodeProto *n)
{
	int64_t axis;
	Value x;
	if (!im_attr_int(im, "axis", 1, &axis) || !act(im, 0, &x))
		return false;
	if (axis < 0)
		axis += x.rank;
	if (axis != 1)
		return im_fail(im, "axis=%lld folds the batch into another axis; netc keeps the batch first (axis=1 only)",
			       (long long)axis);
	return flatten_to(im, &x);
}

/* Reshape to a constant shape whose first dimension stays the batch: 0 copies an input
 * dimension, one -1 takes what the others leave. */
static bool op_reshape(Importer *im, const Onnx__NodeProto *n)
{
	Value x;
	int64_t allowzero, count, t[IR_MAX_DIMS];
	const Onnx__TensorProto *shape = im_const(im, 1, false);
	if (!shape || !act(im, 0, &x) || !im_attr_int(im, "allowzero", 0, &allowzero) || !im_const_numel(im, shape, &count))
		return false;
	if (count < 1 || count > IR_MAX_DIMS)
		return im_fail(im, "the shape has %lld dimensions; netc's tensors have 1 to %d", (long long)count, IR_MAX_DIMS);
	if (!im_const_ints(im, shape, t, count))
		return false;
	int64_t per_example = 1, known = 1, free_at = -1;
	for (int d = 1; d < x.rank; d++)
		per_example *= x.dim[d];
	for (int d = 0; d < count; d++) {
		if (t[d] == 0 && !allowzero && d < x.rank)
			t[d] = x.dim[d];
		if (t[d] == -1 && free_at < 0) {
			free_at = d;
			continue;
		}
		if (t[d] <= 0 || t[d] > ONNX_MAX_NUMEL)
			return im_fail(im, "shape dimension %d is %lld", d, (long long)t[d]);
		if (d > 0 && (__builtin_mul_overflow(known, t[d], &known) || known > ONNX_MAX_NUMEL))
			return im_fail(im, "the shape has more than 2^40 elements per example");
	}
	/* dimension 0 is the batch when the rest hold one example */
	bool batch_first = (free_at == 0 && known == per_example) || (free_at > 0 && t[0] == x.dim[0] &&
		per_example % known == 0) || (free_at < 0 && t[0] == x.dim[0] && known == per_example);
	char buf[160];
	if (!batch_first)
		return im_fail(im, "the shape %s does not keep the batch as the first dimension of [batch, ...] with %lld "
			       "values per example", rt_shape_text((int)count, t, buf, sizeof buf), (long long)per_example);
	if (free_at > 0)
		t[free_at] = per_example / known;
	t[0] = x.dim[0];
	if (count == 2)
		return flatten_to(im, &x);
	if (!im_out(im, NULL, (int)count, t))
		return false;
	size_t at = (size_t)snprintf(buf, sizeof buf, "-1");
	for (int d = 1; d < count; d++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, ", %lld", (long long)t[d]);
	im_stmt(im, "%s = reshape(%s, %s)", im->v[im->nv - 1].net, x.net, buf);
	return true;
}

/* Transpose with the batch kept first: transpose(x, i, j) when it swaps two axes, else permute. */
static bool op_transpose(Importer *im, const Onnx__NodeProto *n)
{
	Value x;
	int64_t perm[IR_MAX_DIMS];
	if (!act(im, 0, &x))
		return false;
	int k = im_attr_ints(im, "perm", perm, IR_MAX_DIMS);
	if (k < 0)
		return false;
	if (k == 0) /* ONNX's default reverses the axes */
		for (k = 0; k < x.rank; k++)
			perm[k] = x.rank - 1 - k;
	char buf[160];
	unsigned seen = 0;
	bool ok = k == x.rank;
	for (int d = 0; ok && d < k; d++) {
		ok = perm[d] >= 0 && perm[d] < x.rank && !(seen >> perm[d] & 1);
		if (ok)
			seen |= 1u << perm[d];
	}
	if (!ok)
		return im_fail(im, "perm %s is not a permutation of the %d axes of its input", rt_shape_text(k, perm, buf, sizeof buf),
			       x.rank);
	if (perm[0] != 0)
		return im_fail(im, "perm %s moves the batch axis; netc keeps the batch first", rt_shape_text(k, perm, buf, sizeof buf));
	int64_t dim[IR_MAX_DIMS];
	int moved[IR_MAX_DIMS], nmoved = 0;
	for (int d = 0; d < k; d++) {
		dim[d] = x.dim[perm[d]];
		if (perm[d] != d)
			moved[nmoved++] = d;
	}
	if (nmoved == 0)
		return im_alias(im, &x);
	if (!im_out(im, NULL, k, dim))
		return false;
	if (nmoved == 2) {
		im_stmt(im, "%s = transpose(%s, %d, %d)", im->v[im->nv - 1].net, x.net, moved[0], moved[1]);
		return true;
	}
	size_t at = 0;
	for (int d = 0; d < k; d++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, ", %lld", (long long)perm[d]);
	im_stmt(im, "%s = permute(%s%s)", im->v[im->nv - 1].net, x.net, buf);
	return true;
}

/* Concat of any number of inputs as concat (4), concat3 and concat2 layers, the first folding in
 * up to four and each next one the result and up to three more. */
static bool op_concat(Importer *im, const Onnx__NodeProto *n)
{
	int64_t axis;
	int k = im_ninputs(im);
	if (!im_attr_int(im, "axis", 0, &axis) || k < 1)
		return im->failed ? false : im_fail(im, "it has no inputs");
	Value *in = calloc((size_t)k, sizeof *in);
	if (!in)
		abort();
	bool ok = true;
	for (int i = 0; ok && i < k; i++)
		ok = act(im, i, &in[i]);
	int rank = ok ? in[0].rank : 0;
	if (ok && (axis < -rank || axis >= rank))
		ok = im_fail(im, "axis %lld is out of range for %d-D inputs", (long long)axis, rank);
	if (axis < 0)
		axis += rank;
	if (ok && axis == 0)
		ok = im_fail(im, "it concatenates along the batch axis; netc's batch is one size");
	int64_t dim[IR_MAX_DIMS];
	if (ok)
		memcpy(dim, in[0].dim, sizeof dim);
	for (int i = 1; ok && i < k; i++) {
		bool same = in[i].rank == rank;
		for (int d = 0; same && d < rank; d++)
			same = d == axis || in[i].dim[d] == dim[d];
		if (!same)
			ok = im_fail(im, "input '%s' does not match the first's shape but on axis %lld", in[i].onnx, (long long)axis);
		else
			dim[axis] += in[i].dim[axis];
	}
	if (ok && k == 1)
		ok = im_alias(im, &in[0]);
	else if (ok) {
		Value *y = im_out(im, NULL, rank, dim);
		char acc[IM_NAME] = "", part[IM_NAME], list[4 * (IM_NAME + 2)], axis_arg[32] = "";
		if (axis != 1)
			snprintf(axis_arg, sizeof axis_arg, ", dim=%lld", (long long)axis);
		ok = y != NULL;
		const char *name = ok ? y->net : "";
		static const char *const layer[5] = {"", "", "concat2", "concat3", "concat"};
		for (int i = 0; ok && i < k;) {
			int take = (acc[0] ? 3 : 4) < k - i ? (acc[0] ? 3 : 4) : k - i;
			size_t at = (size_t)snprintf(list, sizeof list, "%s", acc);
			for (int j = 0; j < take; j++)
				at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", in[i + j].net);
			i += take;
			int count = take + (acc[0] != 0);
			if (i < k) {
				char hint[IM_NAME + 16];
				snprintf(hint, sizeof hint, "%s_part", name);
				im_take_name(im, hint, part);
				im_stmt(im, "%s = %s(%s%s)", part, layer[count], list, axis_arg);
				snprintf(acc, sizeof acc, "%s", part);
			} else {
				im_stmt(im, "%s = %s(%s%s)", name, layer[count], list, axis_arg);
			}
		}
	}
	free(in);
	return ok;
}

/* Constant: its value as a constant the readers take (a Reshape's shape, a Dropout's ratio). */
static bool op_constant(Importer *im, const Onnx__NodeProto *n)
{
	if (n->n_attribute != 1)
		return im_fail(im, "it has %zu attributes; a Constant has one", n->n_attribute);
	const Onnx__AttributeProto *a = n->attribute[0];
	const char *name = onnx_str(a->name);
	Onnx__TensorProto *t = NULL;
	if (!strcmp(name, "value")) {
		if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t)
			return im_fail(im, "its value is not a tensor");
	} else {
		/* the scalar and list forms, as a tensor pointing at the attribute's numbers */
		OwnedTensor *o = calloc(1, sizeof *o);
		OwnedTensor **owned = realloc(im->owned, (size_t)(im->nowned + 1) * sizeof *owned);
		if (!o || !owned)
			abort();
		im->owned = owned;
		im->owned[im->nowned++] = o;
		t = &o->t;
		onnx__tensor_proto__init(t);
		t->has_data_type = true;
		if (!strcmp(name, "value_float") && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) {
			t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, t->n_float_data = 1, t->float_data = (float *)&a->f;
		} else if (!strcmp(name, "value_int") && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
			t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64, t->n_int64_data = 1, t->int64_data = (int64_t *)&a->i;
		} else if (!strcmp(name, "value_floats") && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS) {
			t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, t->n_float_data = a->n_floats, t->float_data = a->floats;
			o->dim = (int64_t)a->n_floats, t->n_dims = 1, t->dims = &o->dim;
		} else if (!strcmp(name, "value_ints") && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) {
			t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64, t->n_int64_data = a->n_ints, t->int64_data = a->ints;
			o->dim = (int64_t)a->n_ints, t->n_dims = 1, t->dims = &o->dim;
		} else {
			return im_fail(im, "its value is given as '%s', which netc does not read", name);
		}
	}
	Value c = {.tensor = t ? t : a->t};
	return im_alias(im, &c);
}

/* ---- the table ---- */

static const OpRow rows[] = {
	{"Add", op_add, "", 1},
	{"AveragePool", op_average_pool, "auto_pad,ceil_mode,count_include_pad,kernel_shape,pads,strides,dilations", 1},
	{"BatchNormalization", op_batch_norm, "epsilon,momentum,training_mode", 1},
	{"Concat", op_concat, "axis", 1},
	{"Constant", op_constant, "value,value_float,value_floats,value_int,value_ints,sparse_value,value_string,value_strings", 1},
	{"Conv", op_conv, "auto_pad,dilations,group,kernel_shape,pads,strides", 1},
	{"ConvTranspose", op_conv_transpose, "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides", 1},
	{"Div", op_div, "", 1},
	{"Dropout", op_dropout, "seed", 1},
	{"Exp", op_exp, "", 1},
	{"Flatten", op_flatten, "axis", 1},
	{"Gelu", op_gelu, "approximate", 1},
	{"Gemm", op_gemm, "alpha,beta,transA,transB", 1},
	{"GlobalAveragePool", op_global_average_pool, "", 1},
	{"Identity", op_identity, "", 1},
	{"LRN", op_lrn, "alpha,beta,bias,size", 1},
	{"LayerNormalization", op_layer_norm, "axis,epsilon,stash_type", 1},
	{"LeakyRelu", op_leaky_relu, "alpha", 1},
	{"Log", op_log, "", 1},
	{"LogSoftmax", op_log_softmax, "axis", 1},
	{"MatMul", op_matmul, "", 1},
	{"Max", op_max, "", 1},
	{"MaxPool", op_max_pool, "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides", 1},
	{"Min", op_min, "", 1},
	{"Mul", op_mul, "", 1},
	{"Neg", op_neg, "", 1},
	{"Pad", op_pad, "mode", 1},
	{"Relu", op_relu, "", 1},
	{"Reshape", op_reshape, "allowzero", 1},
	{"Sigmoid", op_sigmoid, "", 1},
	{"Softmax", op_softmax, "axis", 1},
	{"Sqrt", op_sqrt, "", 1},
	{"Sub", op_sub, "", 1},
	{"Tanh", op_tanh, "", 1},
	{"Transpose", op_transpose, "perm", 1},
};

#define NROWS ((int)(sizeof rows / sizeof rows[0]))

const OpRow *im_op_lookup(const char *op)
{
	for (int i = 0; i < NROWS; i++)
		if (!strcmp(rows[i].op, op))
			return &rows[i];
	return NULL;
}

int im_op_count(void) { return NROWS; }
const OpRow *im_op_row(int i) { return &rows[i]; }

const char *onnx_supported_ops(void)
{
	static char list[1024];
	if (!list[0]) {
		size_t at = 0;
		for (int i = 0; i < NROWS; i++)
			at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", rows[i].op);
	}
	return list;
}
