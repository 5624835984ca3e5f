/* conv_algo.c: the conv-algo pass, which algorithm computes each convolution (--conv-algo).
 *
 * direct: the implicit GEMM of codegen/lower_conv.c, every convolution as the frontend and
 * autodiff made it. winograd: every convolution Winograd can take (3x3 or 5x5, stride 1,
 * dilation 1, padding at most r - 1, NCHW: forward, input gradient and weight gradient) becomes
 * the steps of ir/ops_winograd.c, 3x3 ones F(4x4,3x3) or, on small planes, F(2x2,3x3), 5x5 ones
 * F(3x3,5x5) or, on small planes, F(2x2,5x5); the others stay direct. auto takes Winograd where it measured faster: on a GPU (the
 * first target) winograd_pays_gpu, on the host winograd_pays.
 *
 * The input gradient of an r x r stride-1 convolution with padding p is the r x r stride-1
 * convolution of dy padded by r - 1 - p with the weights rotated by 180 degrees and their channels
 * swapped (winograd_weight's flip, which rotates, and winograd_gemm's transpose_u, which swaps), so
 * both use one algorithm. NHWC convolutions (--layout nhwc)
 * stay direct: the transforms read NCHW planes.
 *
 * Half precision (--precision fp16|bf16) takes F(2x2) only: its transformed operands are stored in
 * half and multiplied on the half matrix units, with f32 products and output transform, and then
 * the result is 1.4 to 1.6 times the direct half convolution's error; F(4x4)'s larger transform
 * coefficients make it 18 to 20 times (docs/codegen.md, "Winograd numerics"), and F(2x2,5x5)
 * shares them, so half 5x5 convolutions stay direct. The inverse
 * transform stores the convolution's type, so the graph's types are as before. */
#include <stdio.h>
#include <string.h>

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

/* The name of an algorithm after space-to-depth (the strided convolution's own line). */
static const char *blocked_name(const char *algo)
{
	static const struct {
		const char *algo, *blocked;
	} names[] = {
		{"direct", "space-to-depth, direct"},
		{"winograd F(2x2,3x3)", "space-to-depth, winograd F(2x2,3x3)"},
		{"winograd F(4x4,3x3)", "space-to-depth, winograd F(4x4,3x3)"},
		{"winograd F(2x2,5x5)", "space-to-depth, winograd F(2x2,5x5)"},
		{"winograd F(3x3,5x5)", "space-to-depth, winograd F(3x3,5x5)"},
	};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(names[i].algo, algo) == 0)
			return names[i].blocked;
	return algo;
}

/* Whether the forward convolution (or its Winograd output) n reads space_to_depth's blocks. */
static bool reads_blocks(const Graph *g, const Node *n)
{
	int x = n->op == OP_winograd_output ? g->node[g->node[n->in[0]].in[1]].in[0] /* M = U V, V of the input */
					    : n->op == OP_conv2d ? n->in[0] : -1;
	return x >= 0 && g->node[x].op == OP_space_to_depth;
}

/* Whether depth_to_space reads n: the convolution is a piece of a strided one, named there. */
static bool read_by_depth_to_space(const Graph *g, const Node *n)
{
	for (int i = n->id + 1; i < g->nnodes; i++)
		if (g->node[i].op == OP_depth_to_space && g->node[i].in[0] == n->id)
			return true;
	return false;
}

static const char *algo_of(const Node *n)
{
	switch (n->op) {
	case OP_conv2d:
	case OP_conv2d_grad_input:
	case OP_conv2d_grad_weight: return "direct";
	case OP_winograd_output:
	case OP_winograd_weight_grad: return ir_winograd_tile(n) ? ir_winograd_tile(n)->algo : "winograd";
	default: return NULL;
	}
}

const char *conv_algo_name(const Graph *g, const Node *n)
{
	if (n->op == OP_depth_to_space) {
		const char *inner = algo_of(&g->node[n->in[0]]);
		return inner ? blocked_name(inner) : NULL;
	}
	const char *algo = algo_of(n);
	if (!algo || read_by_depth_to_space(g, n))
		return NULL;
	return n->grad_of < 0 && reads_blocks(g, n) ? blocked_name(algo) : algo;
}

/* What auto weighs about a convolution (forward, input or weight gradient). */
typedef struct {
	OpId op;
	int64_t cin, cout;  /* channels into the convolution (C) and out of it (K) */
	int64_t n, oh, ow;  /* its output's batch and plane (the weight gradient's: dy's) */
	int r;              /* a square kernel's size, 0 for another */
	bool half;          /* operands f16 or bf16 */
} Conv;

static Conv conv_of(const Graph *g, const Node *n)
{
	/* the weight-shaped node: the weight input, or for the weight gradient itself */
	const Shape *w = n->op == OP_conv2d_grad_weight ? &n->shape : &g->node[n->in[1]].shape;
	const Shape *y = n->op == OP_conv2d_grad_weight ? &g->node[n->in[0]].shape : &n->shape;
	DType t = g->node[n->in[0]].dtype;
	return (Conv){.op = n->op, .cin = w->dim[1], .cout = w->dim[0], .n = y->dim[0], .oh = y->dim[2], .ow = y->dim[3],
		      .r = w->dim[2] == w->dim[3] ? (int)w->dim[2] : 0, .half = t == DT_F16 || t == DT_BF16};
}

static bool is_conv(const Node *n)
{
	return n->op == OP_conv2d || n->op == OP_conv2d_grad_input || n->op == OP_conv2d_grad_weight;
}

/* Whether Winograd's transforms have a tile for c's kernel in its precision: 3x3 (f32, f16,
 * bf16) or 5x5 (f32). */
static bool has_tile(Conv c) { return c.r == 3 || (c.r == 5 && !c.half); }

/* Whether n is a convolution (forward or gradient) in NCHW with its operands and result of one
 * float type (f32, f16 or bf16): what both rewrites ask first. */
static bool rewritable(const Graph *g, const Node *n)
{
	DType t = n->dtype;
	return is_conv(n) && ir_conv_geom(n).layout == LAYOUT_NCHW && (t == DT_F32 || t == DT_F16 || t == DT_BF16) &&
	       g->node[n->in[0]].dtype == t && g->node[n->in[1]].dtype == t;
}

/* Whether Winograd computes n: a rewritable convolution with a kernel has_tile takes, stride and
 * dilation 1, padding at most r - 1. */
static bool winograd_fits(const Graph *g, const Node *n)
{
	if (!rewritable(g, n))
		return false;
	ConvGeom geom = ir_conv_geom(n);
	Conv c = conv_of(g, n);
	return has_tile(c) && geom.sh == 1 && geom.sw == 1 && geom.dh == 1 && geom.dw == 1 && geom.ph <= c.r - 1 &&
	       geom.pw <= c.r - 1;
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
	double am[IR_MAX_ATTRS] = {grad};
	int mm = add_step(dst, conv, OP_winograd_gemm, in_m, am, "wino_m");
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
 * the output plane is under two such tiles a side, where F(2x2) wastes less on the border, or c
 * computes in half (F(2x2) only, above). 5x5: F(3x3,5x5) (49/225 of direct's multiplications,
 * against F(2x2,5x5)'s 36/100) on the same terms: alexnet's conv2 GEMMs on an H200 took 0.40-0.43
 * ms each against 0.70-0.74, its step 9.42 ms against 10.45 (2026-11-29). */
static int tile_for(Conv c)
{
	bool large = c.oh >= 8 && c.ow >= 8 && !c.half;
	return c.r == 3 ? (large ? 4 : 2) : large ? 3 : 2;
}

/* auto: whether Winograd pays for c (channels in and out, output positions of the batch). The
 * weight gradient was not measured on the host: it stays direct there. */
static bool winograd_pays(Conv c)
{
	return c.op != OP_conv2d_grad_weight && c.cin >= AUTO_MIN_CHANNELS && c.cout >= AUTO_MIN_CHANNELS &&
	       c.n * c.oh * c.ow >= AUTO_MIN_POSITIONS && tile_for(c) == 4;
}

/* auto on a GPU: every convolution with at least GPU_MIN_CHANNELS channels in and out; below, the
 * transforms cost more than the GEMM saves (cifar_simple's 3 -> 16 channels: 0.117 ms per step
 * direct, 0.127 with Winograd on an H100). */
static bool winograd_pays_gpu(Conv c) { return c.cin >= GPU_MIN_CHANNELS && c.cout >= GPU_MIN_CHANNELS; }

typedef struct {
	ConvAlgo algo;
	int tile; /* 0: tile_for's */
	bool gpu; /* auto for a GPU: winograd_pays_gpu's rule, not the host's */
} Choice;

/* Whether the choice takes Winograd for a convolution that fits it. */
static bool takes_winograd(const Choice *ch, Conv c)
{
	return ch->algo == CONV_ALGO_WINOGRAD || (ch->gpu ? winograd_pays_gpu(c) : winograd_pays(c));
}

static int rebuild_winograd(Graph *dst, const Graph *src, int id, const int *map, void *ctx)
{
	const Choice *ch = ctx;
	const Node *n = &src->node[id];
	Conv c = conv_of(src, n);
	if (n->programs && winograd_fits(src, n) && takes_winograd(ch, c)) {
		int m = ch->tile && !c.half && wino_tile(ch->tile, c.r) ? ch->tile : tile_for(c);
		return n->op == OP_conv2d_grad_weight ? winograd_weight_grad(dst, n, map, m, c.r) : winograd(dst, n, map, m, c.r);
	}
	return ir_rebuild_copy(dst, src, id, map);
}

/* ---- space-to-depth: strided convolutions as stride-1 ones over blocks ----
 *
 * A convolution of stride s with an r x r kernel is one of stride 1 over s x s blocks of its input
 * (ir/ops_space_to_depth.c), C s^2 channels and a ceil(r / s) square kernel of the weights' blocks
 * (taps past r zero). Where that kernel is one Winograd has a tile for and the choice would take
 * Winograd for the blocked convolution, the pass rewrites (before Winograd's rewrite, which then
 * takes the blocked one): alexnet's 11x11 stride-4 convolution over 3 channels becomes a 3x3 one
 * over 48 (432 products per output where direct takes 363), whose F(4x4,3x3) takes 108.
 *
 * The padding p = q s + p' splits in two: p' < s goes into the blocks, q whole blocks become the
 * blocked convolution's padding. That padding is symmetric while the blocks' plane ends where
 * the output needs it to, so the q blocks past its end must hold no input (else no rewrite). */
typedef struct {
	int64_t s, a; /* block s x s (0: no rewrite), blocked kernel a x a */
	int64_t p, q; /* padding inside the blocks (p'), and in whole blocks */
	int64_t bh, bw; /* the blocks' plane */
} Blocks;

static Blocks blocks_for(const Choice *ch, const Graph *g, const Node *n)
{
	Blocks none = {0}, b;
	if (!n->programs || !rewritable(g, n))
		return none;
	ConvGeom geom = ir_conv_geom(n);
	Conv c = conv_of(g, n);
	b.s = geom.sh;
	if (b.s < 2 || b.s > IR_MAX_BLOCK || geom.sw != b.s || geom.dh != 1 || geom.dw != 1 || geom.ph != geom.pw || c.r == 0)
		return none;
	Conv blocked = c;
	blocked.r = (int)((c.r + b.s - 1) / b.s);
	blocked.cin = c.cin * b.s * b.s;
	/* the strided convolution's output plane (the gradients': dy's) and input plane (x's, or the
	 * input gradient's own) */
	const Shape *y = n->op == OP_conv2d ? &n->shape : &g->node[n->in[0]].shape;
	const Shape *x = n->op == OP_conv2d_grad_input ? &n->shape : &g->node[n->in[n->op == OP_conv2d ? 0 : 1]].shape;
	b.a = blocked.r, b.p = geom.ph % b.s, b.q = geom.ph / b.s;
	b.bh = y->dim[2] + b.a - 1 - 2 * b.q, b.bw = y->dim[3] + b.a - 1 - 2 * b.q;
	if (n->op == OP_conv2d_grad_input) /* the blocked input gradient's output: the blocks */
		blocked.oh = b.bh, blocked.ow = b.bw;
	bool covered = b.q == 0 || (b.s * b.bh - b.p >= x->dim[2] && b.s * b.bw - b.p >= x->dim[3]);
	if (!covered || b.bh < 1 || b.bw < 1 || b.q > b.a - 1 || !has_tile(blocked) || !takes_winograd(ch, blocked))
		return none;
	return b;
}

static int add_blocks(Graph *dst, const Node *conv, int in, const Blocks *b, bool weights, const char *suffix)
{
	double attr[IR_MAX_ATTRS] = {(double)b->s, weights ? 0 : (double)b->p, weights ? 0 : (double)b->p,
				     (double)(weights ? b->a : b->bh), (double)(weights ? b->a : b->bw)};
	return add_step(dst, conv, OP_space_to_depth, &in, attr, suffix);
}

/* The step that takes conv's place: its name, and the gradient it is. */
static int take_place(Graph *dst, const Node *conv, const int *map, OpId op, const int *in, const double *attr)
{
	int out = add_step(dst, conv, op, in, attr, NULL);
	dst->node[out].grad_of = conv->grad_of >= 0 ? map[conv->grad_of] : -1;
	return out;
}

static int blocked(Graph *dst, const Node *conv, const int *map, const Blocks *b)
{
	double q = (double)b->q;
	if (conv->op == OP_conv2d) {
		int in[2] = {add_blocks(dst, conv, map[conv->in[0]], b, false, "blocks_x"),
			     add_blocks(dst, conv, map[conv->in[1]], b, true, "blocks_w")};
		double attr[IR_MAX_ATTRS] = {1, 1, q, q, 1, 1, LAYOUT_NCHW};
		return take_place(dst, conv, map, OP_conv2d, in, attr);
	}
	int inner;
	double back[IR_MAX_ATTRS] = {(double)b->s, 0, 0, (double)conv->shape.dim[2], (double)conv->shape.dim[3]};
	if (conv->op == OP_conv2d_grad_input) {
		int in[2] = {map[conv->in[0]], add_blocks(dst, conv, map[conv->in[1]], b, true, "blocks_w")};
		double attr[IR_MAX_ATTRS] = {1, 1, q, q, 1, 1, (double)b->bh, (double)b->bw, LAYOUT_NCHW};
		inner = add_step(dst, conv, OP_conv2d_grad_input, in, attr, "blocks");
		back[1] = back[2] = (double)b->p; /* dx from the input's blocks */
	} else {
		int in[2] = {map[conv->in[0]], add_blocks(dst, conv, map[conv->in[1]], b, false, "blocks_x")};
		double attr[IR_MAX_ATTRS] = {1, 1, q, q, 1, 1, (double)b->a, (double)b->a, LAYOUT_NCHW};
		inner = add_step(dst, conv, OP_conv2d_grad_weight, in, attr, "blocks");
	}
	return take_place(dst, conv, map, OP_depth_to_space, &inner, back);
}

static int rebuild_blocks(Graph *dst, const Graph *src, int id, const int *map, void *ctx)
{
	const Node *n = &src->node[id];
	Blocks b = blocks_for(ctx, src, n);
	return b.s ? blocked(dst, n, map, &b) : ir_rebuild_copy(dst, src, id, map);
}

/* Space-to-depth where it gives Winograd a convolution, then Winograd. */
static void rewrite(Graph *g, const Choice *ch)
{
	ir_rebuild(g, rebuild_blocks, (void *)ch);
	ir_rebuild(g, rebuild_winograd, (void *)ch);
}

void conv_algo_winograd(Graph *g, int tile)
{
	Choice ch = {.algo = CONV_ALGO_WINOGRAD, .tile = tile};
	rewrite(g, &ch);
}

bool pass_conv_algo(Graph *g, const PassOptions *o, Diag *d)
{
	(void)d;
	if (o->conv_algo == CONV_ALGO_DIRECT)
		return true;
	Choice ch = {.algo = o->conv_algo, .gpu = o->gpu_first};
	rewrite(g, &ch);
	return true;
}
