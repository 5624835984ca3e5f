/* conv_algo.c: the conv-algo pass, which algorithm computes each convolution (--conv-algo).
 *
 * direct: the implicit GEMM of codegen/lower_conv.c, every convolution as the frontend and
 * autodiff made it. winograd: every convolution Winograd can take (3x3 or 5x5, stride 1,
 * dilation 1, padding at most r - 1, NCHW: forward, input gradient and weight gradient) becomes
 * the steps of ir/ops_winograd.c, 3x3 ones F(4x4,3x3) or, on small planes, F(2x2,3x3), 5x5 ones
 * F(2x2,5x5); the others stay direct. auto takes Winograd where it measured faster: on a GPU (the
 * first target) winograd_pays_gpu, on the host winograd_pays.
 *
 * The input gradient of an r x r stride-1 convolution with padding p is the r x r stride-1
 * convolution of dy padded by r - 1 - p with the weights rotated by 180 degrees and their channels
 * swapped (winograd_weight's flip), so both use one algorithm. NHWC convolutions (--layout nhwc)
 * stay direct: the transforms read NCHW planes.
 *
 * Half precision (--precision fp16|bf16) takes F(2x2) only: its transformed operands are stored in
 * half and multiplied on the half matrix units, with f32 products and output transform, and then
 * the result is 1.4 to 1.6 times the direct half convolution's error; F(4x4)'s larger transform
 * coefficients make it 18 to 20 times (docs/codegen.md, "Winograd numerics"), and F(2x2,5x5)
 * shares them, so half 5x5 convolutions stay direct. The inverse
 * transform stores the convolution's type, so the graph's types are as before. */
#include <stdio.h>

#include "ir/ops.h"
#include "ir/rebuild.h"
#include "ir/winograd.h"
#include "passes/passes.h"

/* auto's rule, from the CPU measurements of docs/performance.md: F(4x4) beat the direct GEMM
 * where both channel counts are at least 128 and the batch has at least 1024 output positions
 * (N*H*W) per filter to spread the weight transform over; with 64 channels, or 512 channels of
 * 14x14 at batch 2, direct won. F(2x2) never won. */
#define AUTO_MIN_CHANNELS 128
#define AUTO_MIN_POSITIONS 1024
#define GPU_MIN_CHANNELS 16
/* On an H100 (2026-11-24, docs/performance.md) Winograd for every convolution it can take beat
 * both direct and the host's rule: vgg16's step 233 ms direct, 159 by the host's rule, 144 with
 * all of them; googlenet 22.7, 20.6 and 18.0; alexnet 24.9, 20.4 and 20.4. */

const char *conv_algo_name(const Graph *g, const Node *n)
{
	(void)g;
	switch (n->op) {
	case OP_conv2d:
	case OP_conv2d_grad_input:
	case OP_conv2d_grad_weight: return "direct";
	case OP_winograd_output:
	case OP_winograd_weight_grad: return ir_winograd_tile(n) ? ir_winograd_tile(n)->algo : "winograd";
	default: return NULL;
	}
}

/* The convolution's weight-shaped node: its weight input, or for the weight gradient itself. */
static const Node *filter_of(const Graph *g, const Node *n)
{
	return n->op == OP_conv2d_grad_weight ? n : &g->node[n->in[1]];
}

/* The convolution's output (for the weight gradient: dy, its first input). */
static const Shape *conv_out(const Graph *g, const Node *n)
{
	return n->op == OP_conv2d_grad_weight ? &g->node[n->in[0]].shape : &n->shape;
}

/* Channels into the convolution (C) and out of it (K). */
static void channels(const Graph *g, const Node *n, int64_t *in, int64_t *out)
{
	const Shape *w = &filter_of(g, n)->shape;
	*out = w->dim[0], *in = w->dim[1];
}

/* Whether n computes in half: its operands are f16 or bf16 (conv2d and its gradients take both
 * operands in one type). */
static bool half(const Graph *g, const Node *n)
{
	return g->node[n->in[0]].dtype == DT_F16 || g->node[n->in[0]].dtype == DT_BF16;
}

/* The filter size r of n's square kernel. */
static int filter_size(const Graph *g, const Node *n)
{
	const Shape *w = &filter_of(g, n)->shape;
	return w->dim[2] == w->dim[3] ? (int)w->dim[2] : 0;
}

/* Whether Winograd computes n: a conv2d, conv2d_grad_input or conv2d_grad_weight with a 3x3
 * kernel (f32, f16 or bf16) or a 5x5 one (f32), stride and dilation 1, padding at most r - 1,
 * NCHW, its operands and result of one type. */
static bool winograd_fits(const Graph *g, const Node *n)
{
	if (n->op != OP_conv2d && n->op != OP_conv2d_grad_input && n->op != OP_conv2d_grad_weight)
		return false;
	ConvGeom c = ir_conv_geom(n);
	DType t = n->dtype;
	int r = filter_size(g, n);
	return c.layout == LAYOUT_NCHW && (r == 3 || (r == 5 && !half(g, n))) &&
	       (t == DT_F32 || t == DT_F16 || t == DT_BF16) && g->node[n->in[0]].dtype == t &&
	       g->node[n->in[1]].dtype == t && c.sh == 1 && c.sw == 1 && c.dh == 1 && c.dw == 1 && c.ph <= r - 1 &&
	       c.pw <= r - 1;
}

/* A node the pass adds for src's convolution: its programs, source place and a name after it
 * ("<conv>.<suffix>"; no suffix: the convolution's own name, for the step that takes its place). */
static int add_step(Graph *dst, const Node *conv, OpId op, const int *in, const double *attr, const char *suffix)
{
	int id = ir_emit(dst, op, in, attr);
	Node *n = &dst->node[id];
	n->programs = conv->programs;
	n->loc = conv->loc;
	if (!suffix) {
		ir_set_name(dst, id, conv->name);
		return id;
	}
	char name[256];
	snprintf(name, sizeof name, "%s.%s", conv->name, suffix);
	if (ir_find(dst, name) < 0)
		ir_set_name(dst, id, name);
	return id;
}

/* The last step, an inverse transform, which takes conv's place: it stores conv's type (half for
 * a half convolution, computed from f32 products). */
static int in_place_of(Graph *dst, const Node *conv, const int *map, OpId op, const int *in, double *attr)
{
	attr[ir_attr_index(op, "dtype")] = conv->dtype;
	int out = add_step(dst, conv, op, in, attr, NULL);
	dst->node[out].grad_of = conv->grad_of >= 0 ? map[conv->grad_of] : -1;
	return out;
}

/* conv (forward or input gradient) as weight transform, input transform, GEMM per transform
 * point and output transform; returns the output transform, which takes conv's place */
static int winograd(Graph *dst, const Node *conv, const int *map, int m, int r)
{
	ConvGeom c = ir_conv_geom(conv);
	bool grad = conv->op == OP_conv2d_grad_input;
	/* the input gradient convolves dy padded by r - 1 - p */
	int64_t ph = grad ? r - 1 - c.ph : c.ph, pw = grad ? r - 1 - c.pw : c.pw;
	const Shape *y = &conv->shape;
	int in_w[1] = {map[conv->in[1]]}, in_x[1] = {map[conv->in[0]]};
	double aw[IR_MAX_ATTRS] = {m, r, grad}, ax[IR_MAX_ATTRS] = {m, r, (double)ph, (double)pw, (double)y->dim[2], (double)y->dim[3]};
	int u = add_step(dst, conv, OP_winograd_weight, in_w, aw, "wino_u");
	int v = add_step(dst, conv, OP_winograd_input, in_x, ax, "wino_v");
	int in_m[2] = {u, v};
	int mm = add_step(dst, conv, OP_winograd_gemm, in_m, NULL, "wino_m");
	double ay[IR_MAX_ATTRS] = {m, r, (double)y->dim[0], (double)y->dim[2], (double)y->dim[3]};
	int in_y[1] = {mm};
	return in_place_of(dst, conv, map, OP_winograd_output, in_y, ay);
}

/* conv2d_grad_weight(dy, x) as V of x over dy's plane, dM of dy, their product per transform
 * point and the inverse weight transform, which takes its place */
static int winograd_weight_grad(Graph *dst, const Node *conv, const int *map, int m, int r)
{
	ConvGeom c = ir_conv_geom(conv);
	int in_x[1] = {map[conv->in[1]]}, in_dy[1] = {map[conv->in[0]]};
	const Shape *dy = &dst->node[in_dy[0]].shape;
	double ax[IR_MAX_ATTRS] = {m, r, (double)c.ph, (double)c.pw, (double)dy->dim[2], (double)dy->dim[3]};
	double at[IR_MAX_ATTRS] = {m, r};
	int v = add_step(dst, conv, OP_winograd_input, in_x, ax, "wino_v");
	int dm = add_step(dst, conv, OP_winograd_output_grad, in_dy, at, "wino_dm");
	int in_u[2] = {dm, v};
	int du = add_step(dst, conv, OP_winograd_weight_gemm, in_u, NULL, "wino_du");
	int in_w[1] = {du};
	return in_place_of(dst, conv, map, OP_winograd_weight_grad, in_w, at);
}

/* 3x3: F(4x4) (a quarter of direct's multiplications in the GEMM, against F(2x2)'s 4/9) unless
 * the output plane is under two such tiles a side, where F(2x2) wastes less on the border, or n
 * computes in half (F(2x2) only, above). 5x5: F(2x2,5x5), 9/25 of direct's multiplications. */
static int tile_for(const Graph *g, const Node *n)
{
	const Shape *y = conv_out(g, n);
	return filter_size(g, n) == 3 && y->dim[2] >= 8 && y->dim[3] >= 8 && !half(g, n) ? 4 : 2;
}

/* auto: whether Winograd pays for n (channels in and out, output positions of the batch). The
 * weight gradient was not measured on the host: it stays direct there. */
static bool winograd_pays(const Graph *g, const Node *n)
{
	const Shape *y = conv_out(g, n);
	int64_t positions = y->dim[0] * y->dim[2] * y->dim[3], cin, cout;
	channels(g, n, &cin, &cout);
	return n->op != OP_conv2d_grad_weight && cin >= AUTO_MIN_CHANNELS && cout >= AUTO_MIN_CHANNELS &&
	       positions >= AUTO_MIN_POSITIONS && tile_for(g, n) == 4;
}

/* auto on a GPU: every convolution with at least GPU_MIN_CHANNELS channels in and out; below, the
 * transforms cost more than the GEMM saves (cifar_simple's 3 -> 16 channels: 0.117 ms per step
 * direct, 0.127 with Winograd on an H100). */
static bool winograd_pays_gpu(const Graph *g, const Node *n)
{
	int64_t cin, cout;
	channels(g, n, &cin, &cout);
	return cin >= GPU_MIN_CHANNELS && cout >= GPU_MIN_CHANNELS;
}

typedef struct {
	ConvAlgo algo;
	int tile; /* 0: tile_for's */
	bool gpu; /* auto for a GPU: winograd_pays_gpu's rule, not the host's */
} Choice;

static int rebuild_node(Graph *dst, const Graph *src, int id, const int *map, void *ctx)
{
	const Choice *ch = ctx;
	const Node *n = &src->node[id];
	if (n->programs && winograd_fits(src, n) &&
	    (ch->algo == CONV_ALGO_WINOGRAD || (ch->gpu ? winograd_pays_gpu(src, n) : winograd_pays(src, n))))
	{
		int m = ch->tile && !half(src, n) && filter_size(src, n) == 3 ? ch->tile : tile_for(src, n);
		int r = filter_size(src, n);
		return n->op == OP_conv2d_grad_weight ? winograd_weight_grad(dst, n, map, m, r) : winograd(dst, n, map, m, r);
	}
	return ir_rebuild_copy(dst, src, id, map);
}

void conv_algo_winograd(Graph *g, int tile)
{
	Choice ch = {.algo = CONV_ALGO_WINOGRAD, .tile = tile};
	ir_rebuild(g, rebuild_node, &ch);
}

bool pass_conv_algo(Graph *g, const PassOptions *o, Diag *d)
{
	(void)d;
	if (o->conv_algo == CONV_ALGO_DIRECT)
		return true;
	Choice ch = {.algo = o->conv_algo, .gpu = o->gpu_first};
	ir_rebuild(g, rebuild_node, &ch);
	return true;
}
