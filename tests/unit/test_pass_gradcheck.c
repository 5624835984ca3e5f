/* test_pass_gradcheck.c: every op's gradient rule against central finite differences in float64.
 * For each case, y = op(params...), loss = sum(y * r) with r random, autodiff_gradients(loss),
 * the reference interpreter, and each param's gradient compared element by element.
 * Inputs are random; the seed is printed (NETC_TEST_SEED=n replays a run). */
#include "passes/passes.h"
#include "tests/unit/test_ir_util.h"

static int ncases;
static bool covered[OP_COUNT];

/* ---- leaves and how to fill them ---- */

typedef enum {
	ANY,      /* (-1, 1) */
	POS,      /* (0.5, 2): log, sqrt */
	AWAY,     /* |x| in (0.5, 2): denominators */
	KINK,     /* |x| in (0.01, 1): relu away from its kink */
	WIDE,     /* (-4, 4): sigmoid and tanh into their curved tails */
	DISTINCT, /* values at least 0.01 apart: max_pool away from ties */
	BETWEEN,  /* between DISTINCT's values (of up to 64), at least 0.0025 from each: maximum and
	           * minimum of the two away from ties */
	LABELS,   /* class indices */
	SEED      /* the rng (seed, step, first row) */
} Fill;

#define MAX_LEAVES 16
static Fill fill_kind[MAX_LEAVES];
static int fill_classes[MAX_LEAVES];

static int leaf(Graph *g, OpId op, Shape s, DType t, Fill f)
{
	int id = ir_leaf(g, op, NULL, s, t, NULL);
	if (id >= MAX_LEAVES)
		abort();
	fill_kind[id] = f;
	return id;
}

static int param(Graph *g, Shape s, Fill f) { return leaf(g, OP_param, s, DT_F32, f); }

static int labels(Graph *g, int n, int classes)
{
	int id = leaf(g, OP_input, S(1, n), DT_I32, LABELS);
	fill_classes[id] = classes;
	return id;
}

static int rng(Graph *g) { return leaf(g, OP_runtime, S(1, RNG_WORDS), DT_I32, SEED); }

static void fill(double *x, int64_t m, Fill f, int classes)
{
	for (int64_t i = 0; i < m; i++) {
		double s = tu_uniform(0, 1) < 0.5 ? -1 : 1;
		switch (f) {
		case ANY: x[i] = tu_uniform(-1, 1); break;
		case POS: x[i] = tu_uniform(0.5, 2); break;
		case AWAY: x[i] = s * tu_uniform(0.5, 2); break;
		case KINK: x[i] = s * tu_uniform(0.01, 1); break;
		case WIDE: x[i] = tu_uniform(-4, 4); break;
		case DISTINCT: x[i] = (double)i * 0.02 + tu_uniform(0, 0.01); break;
		case BETWEEN: x[i] = (double)(int64_t)tu_uniform(0, 64) * 0.02 + tu_uniform(0.0125, 0.0175); break;
		case LABELS: x[i] = (int)tu_uniform(0, classes); break;
		case SEED: x[i] = (int)tu_uniform(-2e9, 2e9); break;
		}
	}
	for (int64_t i = m - 1; f == DISTINCT && i > 0; i--) { /* shuffle */
		int64_t j = (int64_t)tu_uniform(0, (double)(i + 1));
		double t = x[i];
		x[i] = x[j], x[j] = t;
	}
}

/* ---- the check ---- */

/* The loss alone: the forward nodes come first, so evaluating up to it suffices. */
static double forward(const Graph *g, int loss, double **v)
{
	for (int i = 0; i <= loss; i++) {
		const Node *n = &g->node[i];
		const double *in[IR_MAX_INPUTS];
		for (int k = 0; k < n->nin; k++)
			in[k] = v[n->in[k]];
		ir_eval_node(g, n, in, v[i]);
	}
	return v[loss][0];
}

static double check_param(const char *what, const Graph *g, int loss, double **v, int p, const double *grad)
{
	double worst = 0;
	int64_t m = shape_numel(&g->node[p].shape);
	for (int64_t k = 0; k < m; k++) {
		double x = v[p][k], h = 1e-6 * fmax(1, fabs(x));
		v[p][k] = x + h;
		double up = forward(g, loss, v);
		v[p][k] = x - h;
		double down = forward(g, loss, v);
		v[p][k] = x;
		/* relative error, on a floor of 1e-2 so that rounding in the loss (about 1e-9 after the
		 * division by 2h) cannot fail a gradient near zero; gradients here are about 1 */
		double num = (up - down) / (2 * h), err = fabs(num - grad[k]) / fmax(1e-2, fmax(fabs(num), fabs(grad[k])));
		worst = fmax(worst, err);
		if (!(err < 1e-5)) {
			FAIL("%s: d loss / d %s[%lld] = %.10g, finite differences %.10g", what, g->node[p].name,
			     (long long)k, grad[k], num);
			return worst; /* one message per param is enough */
		}
	}
	return worst;
}

/* Differentiates sum(y * r) and checks the gradient of every param; frees g. */
static void gradcheck(const char *what, Graph *g, int y)
{
	int nleaves = 0;
	while (nleaves < g->nnodes && ir_is_leaf(g->node[nleaves].op))
		nleaves++;
	covered[g->node[y].op] = true;
	ncases++;
	int r = ir_leaf(g, OP_input, "r", g->node[y].shape, DT_F32, NULL);
	int prod = tu_add(g, OP_mul, (int[]){y, r}, NULL);
	double axes[2] = {(1 << g->node[prod].shape.rank) - 1, 0};
	int loss = tu_add(g, OP_sum, &prod, axes);
	int *grads = autodiff_gradients(g, loss);

	double **v = calloc(g->nnodes, sizeof *v);
	for (int i = 0; i < g->nnodes; i++) {
		int64_t m = shape_numel(&g->node[i].shape);
		v[i] = calloc(m, sizeof **v);
		if (i < nleaves)
			fill(v[i], m, fill_kind[i], fill_classes[i]);
		else if (i == r)
			fill(v[i], m, ANY, 0);
	}
	ir_interp(g, 0, v);
	double worst = 0;
	for (int p = 0; p < nleaves; p++) {
		if (g->node[p].op != OP_param)
			continue;
		if (grads[p] < 0) {
			FAIL("%s: no gradient reaches %s", what, g->node[p].name);
			continue;
		}
		/* the interpreter's gradient, kept apart: forward() rewrites the values up to the loss */
		int64_t m = shape_numel(&g->node[p].shape);
		double *grad = malloc(m * sizeof *grad);
		memcpy(grad, v[grads[p]], m * sizeof *grad);
		worst = fmax(worst, check_param(what, g, loss, v, p, grad));
		free(grad);
	}
	printf("  %-40s worst relative error %.2e\n", what, worst);
	for (int i = 0; i < g->nnodes; i++)
		free(v[i]);
	free(v);
	free(grads);
	ir_graph_free(g);
}

/* ---- cases ---- */

static void unary_attr(const char *what, OpId op, Shape s, Fill f, const double *attr)
{
	Graph *g = ir_graph_new(what);
	int x = param(g, s, f);
	gradcheck(what, g, tu_add(g, op, &x, attr));
}

static void unary(const char *what, OpId op, Shape s, Fill f) { unary_attr(what, op, s, f, NULL); }

static void binary_fills(const char *what, OpId op, Shape sa, Shape sb, Fill fa, Fill fb)
{
	Graph *g = ir_graph_new(what);
	int a = param(g, sa, fa), b = param(g, sb, fb);
	gradcheck(what, g, tu_add(g, op, (int[]){a, b}, NULL));
}

static void binary(const char *what, OpId op, Shape sa, Shape sb, Fill fb) { binary_fills(what, op, sa, sb, ANY, fb); }

static void one_attr(const char *what, OpId op, Shape s, const double *attr)
{
	Graph *g = ir_graph_new(what);
	int x = param(g, s, ANY);
	gradcheck(what, g, tu_add(g, op, &x, attr));
}

static void test_elemwise(void)
{
	unary("neg", OP_neg, S(2, 3, 4), ANY);
	unary("exp", OP_exp, S(2, 3, 4), ANY);
	unary("log", OP_log, S(2, 3, 4), POS);
	unary("sqrt", OP_sqrt, S(2, 3, 4), POS);
	unary("relu", OP_relu, S(3, 2, 3, 4), KINK);
	unary("sigmoid", OP_sigmoid, S(2, 3, 4), WIDE);
	unary("tanh", OP_tanh, S(2, 3, 4), WIDE);
	unary("silu", OP_silu, S(2, 3, 4), WIDE);
	unary_attr("leaky_relu slope 0.2", OP_leaky_relu, S(3, 2, 3, 4), KINK, A(0.2));
	unary_attr("leaky_relu slope -1.5", OP_leaky_relu, S(2, 3, 4), KINK, A(-1.5));
	unary_attr("gelu", OP_gelu, S(2, 3, 4), WIDE, A(0));
	unary_attr("gelu approximate=tanh", OP_gelu, S(2, 3, 4), WIDE, A(1));
	unary("copy", OP_copy, S(1, 5), ANY);
	unary("abs", OP_abs, S(2, 3, 4), KINK);
	unary_attr("pow 2", OP_pow, S(2, 3, 4), ANY, A(2));
	unary_attr("pow 3", OP_pow, S(2, 3, 4), ANY, A(3));
	unary_attr("pow -2", OP_pow, S(2, 3, 4), AWAY, A(-2));
	unary_attr("pow 1.7", OP_pow, S(2, 3, 4), POS, A(1.7));
	unary_attr("pow 0.5", OP_pow, S(2, 3, 4), POS, A(0.5));
	binary("add", OP_add, S(2, 3, 4), S(2, 3, 4), ANY);
	binary("add broadcast [3,4,5] + [4,1]", OP_add, S(3, 3, 4, 5), S(2, 4, 1), ANY);
	binary("sub broadcast [5] - [3,4,5]", OP_sub, S(1, 5), S(3, 3, 4, 5), ANY);
	binary("mul broadcast [3,1,5] * [4,1]", OP_mul, S(3, 3, 1, 5), S(2, 4, 1), ANY);
	binary("mul by a scalar", OP_mul, S(2, 3, 4), S(0), ANY);
	binary("div broadcast [3,4,5] / [1,4,1]", OP_div, S(3, 3, 4, 5), S(3, 1, 4, 1), AWAY);
	/* no pair within 0.0025, where finite differences would straddle the kink; the two ranges
	 * overlap, so each input wins somewhere */
	binary_fills("maximum broadcast [3,4,5], [4,1]", OP_maximum, S(3, 3, 4, 5), S(2, 4, 1), DISTINCT, BETWEEN);
	binary_fills("minimum broadcast [5], [3,4,5]", OP_minimum, S(1, 5), S(3, 3, 4, 5), BETWEEN, DISTINCT);

	Graph *g = ir_graph_new("dropout");
	int x = param(g, S(2, 8, 9), ANY), rg = rng(g);
	gradcheck("dropout p=0.4", g, tu_add(g, OP_dropout, (int[]){x, rg}, A(0.4, 3)));

	g = ir_graph_new("bias_add");
	x = param(g, S(4, 2, 3, 4, 5), ANY);
	int b = param(g, S(1, 3), ANY);
	gradcheck("bias_add axis 1 of [2,3,4,5]", g, tu_add(g, OP_bias_add, (int[]){x, b}, A(1)));
	g = ir_graph_new("bias_add1");
	x = param(g, S(1, 6), ANY);
	b = param(g, S(1, 6), ANY);
	gradcheck("bias_add on a 1-D input", g, tu_add(g, OP_bias_add, (int[]){x, b}, A(0)));
}

static void test_shape_reduce(void)
{
	one_attr("reshape [2,3,4] to [4,-1]", OP_reshape, S(3, 2, 3, 4), A(2, 4, -1));
	one_attr("broadcast_to [3,1] to [2,3,4]", OP_broadcast_to, S(2, 3, 1), A(3, 2, 3, 4));
	one_attr("sum axes {0,2}", OP_sum, S(3, 2, 3, 4), A(0x5, 0));
	one_attr("sum axes {1} keepdims", OP_sum, S(3, 2, 3, 4), A(0x2, 1));
	one_attr("mean axes {1}", OP_mean, S(3, 2, 3, 4), A(0x2, 0));
	one_attr("mean of all", OP_mean, S(2, 3, 4), A(0x3, 0));
	one_attr("softmax axis 1", OP_softmax, S(2, 3, 5), A(1));
	one_attr("softmax axis 1 of [2,4,3]", OP_softmax, S(3, 2, 4, 3), A(1));
	one_attr("log_softmax axis -1", OP_log_softmax, S(3, 2, 3, 4), A(-1));
	one_attr("log_softmax axis 0", OP_log_softmax, S(2, 4, 3), A(0));
	for (int red = 0; red < 2; red++) {
		const char *nll[2] = {"nll_loss mean", "nll_loss sum"}, *ce[2] = {"cross_entropy mean", "cross_entropy sum"};
		Graph *g = ir_graph_new("nll");
		int s = param(g, S(2, 5, 7), ANY), l = labels(g, 5, 7);
		gradcheck(nll[red], g, tu_add(g, OP_nll_loss, (int[]){s, l}, A(red)));
		g = ir_graph_new("ce");
		s = param(g, S(2, 6, 4), ANY);
		l = labels(g, 6, 4);
		gradcheck(ce[red], g, tu_add(g, OP_cross_entropy, (int[]){s, l}, A(red)));
	}
}

/* op(x, w) of an image and a weight */
static void weighted(const char *what, OpId op, Shape xs, Shape ws, const double *attr)
{
	Graph *g = ir_graph_new(what);
	int x = param(g, xs, ANY), w = param(g, ws, ANY);
	gradcheck(what, g, tu_add(g, op, (int[]){x, w}, attr));
}

static void conv(const char *what, Shape xs, Shape ws, const double *attr) { weighted(what, OP_conv2d, xs, ws, attr); }
static void dwconv(const char *what, Shape xs, Shape ws, const double *attr) { weighted(what, OP_dwconv2d, xs, ws, attr); }

static void pool(const char *what, OpId op, Shape xs, const double *attr)
{
	Graph *g = ir_graph_new(what);
	int x = param(g, xs, op == OP_max_pool2d ? DISTINCT : ANY);
	gradcheck(what, g, tu_add(g, op, &x, attr));
}

static void test_nn(void)
{
	conv("conv2d 3x3", S(4, 2, 2, 5, 5), S(4, 3, 2, 3, 3), A(1, 1, 0, 0, 1, 1));
	conv("conv2d stride 2x1 pad 1x2 dil 1x2 3x2", S(4, 2, 3, 7, 6), S(4, 2, 3, 3, 2), A(2, 1, 1, 2, 1, 2));
	conv("conv2d stride 3 pad 1 dil 2 1x3", S(4, 1, 2, 6, 8), S(4, 4, 2, 1, 3), A(3, 3, 1, 1, 2, 2));
	/* layout NHWC (x [N, H, W, C], w [O, KH, KW, I]): the layout pass's convolutions */
	conv("conv2d nhwc 3x3", S(4, 2, 5, 5, 2), S(4, 3, 3, 3, 2), A(1, 1, 0, 0, 1, 1, LAYOUT_NHWC));
	conv("conv2d nhwc stride 2x1 pad 1x2 dil 1x2 3x2", S(4, 2, 7, 6, 3), S(4, 2, 3, 2, 3), A(2, 1, 1, 2, 1, 2, LAYOUT_NHWC));
	/* conv2d_grad_input as an op of its own (conv_transpose2d): dy [2, 3, 3, 4] -> [2, 2, 7, 8] */
	Graph *gt = ir_graph_new("conv2d_grad_input");
	int dy = param(gt, S(4, 2, 3, 3, 4), ANY), wt = param(gt, S(4, 3, 2, 3, 2), ANY);
	gradcheck("conv2d_grad_input stride 2 pad 1x0 dil 2x1", gt,
		  tu_add(gt, OP_conv2d_grad_input, (int[]){dy, wt}, A(2, 2, 1, 0, 2, 1, 8, 8)));
	Graph *ge = ir_graph_new("embedding");
	int rows = param(ge, S(2, 6, 3), ANY), ids = labels(ge, 8, 6); /* each row read 0 to several times */
	int ids2 = tu_add(ge, OP_reshape, &ids, A(2, 2, 4));
	gradcheck("embedding [2, 4] of 6 rows", ge, tu_add(ge, OP_embedding, (int[]){ids2, rows}, NULL));
	one_attr("unfold 3x3 pad 1", OP_unfold, S(4, 2, 2, 4, 5), A(3, 3, 1, 1, 1, 1, 1, 1));
	one_attr("unfold 2x3 stride 2x1 pad 0x2 dil 2x1", OP_unfold, S(4, 1, 2, 6, 5), A(2, 3, 2, 1, 0, 2, 2, 1));
	one_attr("fold 3x3 stride 2 pad 1 to 5x6", OP_fold, S(3, 2, 18, 9), A(3, 3, 2, 2, 1, 1, 1, 1, 5, 6));
	/* the depthwise convolution: both gradients (dwconv2d_grad_input, the sum of dwconv2d_wterms) */
	dwconv("dwconv2d 3x3 pad 1", S(4, 2, 3, 5, 4), S(4, 3, 1, 3, 3), A(1, 1, 1, 1, 1, 1));
	dwconv("dwconv2d 3x2 stride 2x1 pad 1x0 dil 1x2", S(4, 1, 2, 7, 6), S(4, 2, 1, 3, 2), A(2, 1, 1, 0, 1, 2));
	one_attr("upsample_bilinear 2", OP_upsample_bilinear, S(4, 2, 3, 4, 5), A(2));
	one_attr("upsample_bilinear 3", OP_upsample_bilinear, S(4, 1, 2, 3, 2), A(3));
	/* blocks of the plane as channels and back (ir/ops_space_to_depth.c): padded, and a plane of
	 * blocks that leaves rows out (their gradient is 0) */
	one_attr("space_to_depth 2 pad 1", OP_space_to_depth, S(4, 2, 3, 5, 7), A(2, 1, 1, 3, 4));
	one_attr("space_to_depth 3 pad 2x0, rows left out", OP_space_to_depth, S(4, 1, 2, 7, 5), A(3, 2, 0, 2, 2));
	one_attr("depth_to_space 2 pad 1", OP_depth_to_space, S(4, 2, 12, 3, 4), A(2, 1, 1, 5, 7));
	one_attr("depth_to_space 3 pad 2x0, rows past the blocks", OP_depth_to_space, S(4, 1, 18, 2, 2), A(3, 2, 0, 7, 5));
	one_attr("transpose to nhwc", OP_transpose, S(4, 2, 3, 4, 5), A(0, 2, 3, 1));
	one_attr("transpose to nchw", OP_transpose, S(4, 2, 4, 5, 3), A(0, 3, 1, 2));
	one_attr("transpose of a matrix", OP_transpose, S(2, 3, 5), A(1, 0));
	one_attr("transpose 5-D (2,0,4,1,3)", OP_transpose, S(5, 2, 3, 2, 4, 3), A(2, 0, 4, 1, 3));
	for (int t = 0; t < 4; t++) {
		const char *names[4] = {"matmul", "matmul trans_a", "matmul trans_b", "matmul trans_a trans_b"};
		int ta = t & 1, tb = t >> 1;
		Graph *g = ir_graph_new(names[t]);
		int a = param(g, ta ? S(2, 5, 3) : S(2, 3, 5), ANY), b = param(g, tb ? S(2, 4, 5) : S(2, 5, 4), ANY);
		gradcheck(names[t], g, tu_add(g, OP_matmul, (int[]){a, b}, A(ta, tb)));
	}
	pool("max_pool2d 2x2 stride 2", OP_max_pool2d, S(4, 2, 2, 4, 6), A(2, 2, 2, 2, 0, 0));
	pool("max_pool2d 3x2 stride 2x1 pad 1x1", OP_max_pool2d, S(4, 2, 2, 7, 5), A(3, 2, 2, 1, 1, 1));
	pool("avg_pool2d 2x2 stride 2", OP_avg_pool2d, S(4, 2, 2, 4, 6), A(2, 2, 2, 2, 0, 0, 1));
	pool("avg_pool2d 3x2 pad 1x1 count_include_pad", OP_avg_pool2d, S(4, 1, 2, 7, 5), A(3, 2, 2, 1, 1, 1, 1));
	pool("avg_pool2d 3x3 pad 1 excluding pad", OP_avg_pool2d, S(4, 1, 2, 5, 6), A(3, 3, 2, 2, 1, 1, 0));
	/* ceil mode: the last windows run past the edge (max ignores it, avg divides by the window
	 * clipped to the padded input, or by its elements without count_include_pad) */
	pool("max_pool2d 3x3 stride 2 ceil", OP_max_pool2d, S(4, 2, 2, 8, 7), A(3, 3, 2, 2, 0, 0, 1));
	pool("avg_pool2d 3x3 stride 2 pad 1 ceil count_include_pad", OP_avg_pool2d, S(4, 1, 2, 10, 7),
	     A(3, 3, 2, 2, 1, 1, 1, 1));
	pool("avg_pool2d 2x2 stride 2 ceil excluding pad", OP_avg_pool2d, S(4, 1, 2, 9, 7), A(2, 2, 2, 2, 0, 0, 0, 1));
}

/* A chain, so gradients accumulate through several rules and a shared input. */
static void test_chain(void)
{
	Graph *g = ir_graph_new("chain");
	int x = param(g, S(4, 2, 2, 6, 6), ANY), w = param(g, S(4, 3, 2, 3, 3), ANY), b = param(g, S(1, 3), ANY);
	int fw = param(g, S(2, 5, 12), ANY), l = labels(g, 2, 5);
	int y = tu_add(g, OP_conv2d, (int[]){x, w}, A(1, 1, 1, 1, 1, 1));
	y = tu_add(g, OP_bias_add, (int[]){y, b}, A(1));
	y = tu_add(g, OP_avg_pool2d, &y, A(3, 3, 3, 3, 0, 0, 1));
	y = tu_add(g, OP_reshape, &y, A(2, 2, -1));
	y = tu_add(g, OP_matmul, (int[]){y, fw}, A(0, 1));
	y = tu_add(g, OP_mul, (int[]){y, y}, NULL);
	y = tu_add(g, OP_log_softmax, &y, A(1));
	gradcheck("chain conv-bias-pool-reshape-matmul-square-log_softmax-nll", g, tu_add(g, OP_nll_loss, (int[]){y, l}, A(0)));
}

/* concat (one op per input count) and LRN, the ops the documented models added */
static void test_models_ops(void)
{
	Graph *g = ir_graph_new("concat2");
	int a = param(g, S(4, 2, 3, 2, 2), ANY), b = param(g, S(4, 2, 1, 2, 2), ANY);
	gradcheck("concat2 axis 1", g, tu_add(g, OP_concat2, (int[]){a, b}, A(1)));
	g = ir_graph_new("concat3");
	a = param(g, S(2, 3, 2), ANY), b = param(g, S(2, 3, 4), ANY);
	int c = param(g, S(2, 3, 1), ANY);
	gradcheck("concat3 axis -1", g, tu_add(g, OP_concat3, (int[]){a, b, c}, A(-1)));
	g = ir_graph_new("concat4");
	a = param(g, S(4, 2, 3, 2, 2), ANY), b = param(g, S(4, 2, 1, 2, 2), ANY), c = param(g, S(4, 2, 2, 2, 2), ANY);
	int d = param(g, S(4, 2, 4, 2, 2), ANY);
	gradcheck("concat4 axis 1", g, tu_add(g, OP_concat4, (int[]){a, b, c, d}, A(1)));
	g = ir_graph_new("lrn");
	a = param(g, S(4, 2, 6, 2, 3), ANY);
	gradcheck("lrn r=2 bias=2 alpha=0.3 beta=0.75", g, tu_add(g, OP_lrn, &a, A(2, 2, 0.3, 0.75)));
	/* standardize reads x's own statistics (its contract): its gradient is the total derivative,
	 * over the channels of NCHW (batch norm) and over the last axis */
	static const struct {
		const char *what;
		int rank;
		int64_t dim[4];
		unsigned axes;
	} stds[] = {{"standardize over N, H, W", 4, {4, 3, 2, 2}, 13}, {"standardize over the last axis", 2, {3, 5}, 2}};
	for (int i = 0; i < 2; i++) {
		g = ir_graph_new("standardize");
		Shape xs = {.rank = stds[i].rank};
		memcpy(xs.dim, stds[i].dim, sizeof stds[i].dim);
		a = param(g, xs, ANY);
		int mean = tu_add(g, OP_mean, &a, A(stds[i].axes, 1));
		int dev = tu_add(g, OP_sub, (int[]){a, mean}, NULL);
		int var = tu_add(g, OP_mean, (int[]){tu_add(g, OP_mul, (int[]){dev, dev}, NULL)}, A(stds[i].axes, 1));
		int sd = tu_add(g, OP_sqrt, (int[]){tu_add(g, OP_add, (int[]){var, ir_const(g, 0.1)}, NULL)}, NULL);
		int inv = tu_add(g, OP_div, (int[]){ir_const(g, 1), sd}, NULL);
		gradcheck(stds[i].what, g, tu_add(g, OP_standardize, (int[]){a, mean, inv}, NULL));
	}
	/* cast rounds, which finite differences cannot see through: its rule (a cast back to the
	 * input's type) is checked by its shape here and numerically in test_cg_precision */
	g = ir_graph_new("cast");
	a = param(g, S(3, 2, 3, 5), ANY);
	int h = tu_add(g, OP_cast, &a, A(DT_F16));
	int l = tu_add(g, OP_sum, (int[]){tu_add(g, OP_cast, &h, A(DT_F32))}, A(7, 0));
	int *gr = autodiff_gradients(g, l);
	CHECK(g->node[gr[a]].op == OP_cast && g->node[gr[a]].dtype == DT_F32 &&
	      g->node[g->node[gr[a]].in[0]].dtype == DT_F16, "the gradient of a cast to f16 is a cast back to f32");
	covered[OP_cast] = true;
	free(gr);
	ir_graph_free(g);
}

/* Ties of maximum and minimum, which finite differences cannot check: each input gets half of dy
 * (PyTorch's rule), the winner elsewhere all of it, summed over b's broadcast axis. */
static void test_minmax_ties(void)
{
	static const OpId ops[] = {OP_maximum, OP_minimum};
	for (int k = 0; k < 2; k++) {
		Graph *g = ir_graph_new("ties");
		int a = param(g, S(2, 2, 3), ANY), b = param(g, S(1, 3), ANY);
		int y = tu_add(g, ops[k], (int[]){a, b}, NULL);
		int loss = tu_add(g, OP_sum, &y, A(3, 0));
		int *grads = autodiff_gradients(g, loss);
		double **v = calloc(g->nnodes, sizeof *v);
		for (int i = 0; i < g->nnodes; i++)
			v[i] = calloc(shape_numel(&g->node[i].shape), sizeof **v);
		/* column 0 ties in both rows, column 1 a wins in both (for k's op), column 2 one each */
		double s = k ? -1 : 1;
		memcpy(v[a], (double[]){0.75, 1 + s, 0.5 + s, 0.75, 1 + s, 0.5 - s}, sizeof(double[6]));
		memcpy(v[b], (double[]){0.75, 1, 0.5}, sizeof(double[3]));
		ir_interp(g, 0, v);
		const double want_a[6] = {0.5, 1, 1, 0.5, 1, 0}, want_b[3] = {1, 0, 1};
		for (int i = 0; i < 6; i++)
			CHECK(v[grads[a]][i] == want_a[i], "%s tie: da[%d] = %g, want %g", ir_ops[ops[k]].name, i,
			      v[grads[a]][i], want_a[i]);
		for (int i = 0; i < 3; i++)
			CHECK(v[grads[b]][i] == want_b[i], "%s tie: db[%d] = %g, want %g", ir_ops[ops[k]].name, i,
			      v[grads[b]][i], want_b[i]);
		for (int i = 0; i < g->nnodes; i++)
			free(v[i]);
		free(v);
		free(grads);
		ir_graph_free(g);
	}
}

int main(void)
{
	tu_start("test_pass_gradcheck");
	test_elemwise();
	test_shape_reduce();
	test_nn();
	test_chain();
	test_models_ops();
	test_minmax_ties();
	for (int op = 0; op < OP_COUNT; op++)
		CHECK(!ir_ops[op].grad || covered[op], "no gradient check for %s", ir_ops[op].name);
	printf("test_pass_gradcheck: %d cases\n", ncases);
	return tu_finish("test_pass_gradcheck");
}
