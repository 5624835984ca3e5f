/* test_ir_ops.c: every op's shape inference (results and error messages), its float64 reference
 * against formulas written here independently, dropout masks, FLOP counts and the interpreter.
 * Inputs are random; the seed is printed (NETC_TEST_SEED=n replays a run). */
#include "ir/ops.h"
#include "tests/unit/test_ir_util.h"

/* ---- building graphs ---- */

static int leaf(Graph *g, Shape s, DType t)
{
	return ir_leaf(g, OP_param, NULL, s, t, NULL);
}

/* Values for every node; leaves random in [-1, 1]. */
static double **values_new(const Graph *g)
{
	double **v = calloc(g->nnodes, sizeof *v);
	for (int i = 0; i < g->nnodes; i++) {
		int64_t m = shape_numel(&g->node[i].shape);
		v[i] = malloc(m * sizeof **v);
		for (int64_t k = 0; k < m; k++)
			v[i][k] = tu_uniform(-1, 1);
	}
	return v;
}

static void values_free(const Graph *g, double **v)
{
	for (int i = 0; i < g->nnodes; i++)
		free(v[i]);
	free(v);
}

static double *fill(double *x, int64_t m, double lo, double hi)
{
	for (int64_t i = 0; i < m; i++)
		x[i] = tu_uniform(lo, hi);
	return x;
}

/* ---- shapes ---- */

static void test_shapes_elemwise(void)
{
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(2, 64, 10), DT_F32), b = leaf(g, S(2, 64, 12), DT_F32), c = leaf(g, S(1, 10), DT_F32);
	int h = leaf(g, S(2, 64, 10), DT_F16), l = leaf(g, S(1, 64), DT_I32), col = leaf(g, S(2, 64, 1), DT_F32);
	int rng = leaf(g, S(1, 3), DT_I32), k = ir_const(g, 2.0);
	for (OpId o = OP_neg; o <= OP_copy; o++)
		expect_shape(g, tu_add(g, o, &a, NULL), "[64, 10]");
	expect_shape(g, tu_add(g, OP_add, (int[]){a, c}, NULL), "[64, 10]");
	expect_shape(g, tu_add(g, OP_sub, (int[]){c, col}, NULL), "[64, 10]");
	expect_shape(g, tu_add(g, OP_mul, (int[]){k, a}, NULL), "[64, 10]");
	int hk = tu_add(g, OP_div, (int[]){h, k}, NULL);
	CHECK(g->node[hk].dtype == DT_F16); /* a const takes the other side's dtype */
	expect_shape(g, tu_add(g, OP_relu_grad, (int[]){a, a}, NULL), "[64, 10]");
	expect_shape(g, tu_add(g, OP_dropout, (int[]){a, rng}, A(0.5, 3)), "[64, 10]");
	expect_shape(g, tu_add(g, OP_bias_add, (int[]){a, c}, A(-1)), "[64, 10]");
	CHECK(g->node[g->nnodes - 1].attr[0] == 1); /* the axis is normalized */
	expect_shape(g, tu_add(g, OP_assign, (int[]){a, a}, NULL), "[64, 10]");

	expect_error(g, OP_add, (int[]){a, b}, NULL, "add: cannot broadcast [64, 10] and [64, 12]");
	expect_error(g, OP_add, (int[]){a, h}, NULL, "add: dtypes differ: f32 and f16");
	expect_error(g, OP_exp, &l, NULL, "exp: input 0 must be a float tensor, got i32[64]");
	expect_error(g, OP_mul, (int[]){a, l}, NULL, "mul: input 1 must be a float tensor, got i32[64]");
	expect_error(g, OP_dropout, (int[]){a, rng}, A(1, 0), "dropout: p must be in [0, 1), got 1");
	expect_error(g, OP_dropout, (int[]){a, c}, A(0.5, 0), "dropout: rng must be i32[3] (seed, step, first row), got f32[10]");
	expect_error(g, OP_dropout, (int[]){a, rng}, A(0.5, 1.5), "dropout: stream must be an integer in [0, 4294967295], got 1.5");
	expect_error(g, OP_bias_add, (int[]){b, c}, A(1), "bias_add: bias [10] does not match axis 1 of [64, 12]");
	expect_error(g, OP_bias_add, (int[]){a, c}, A(2), "bias_add: axis 2 is out of range for a rank-2 input");
	expect_error(g, OP_assign, (int[]){a, b}, NULL, "assign: target f32[64, 10] and value f32[64, 12] differ");
	expect_error(g, OP_assign, (int[]){a, h}, NULL, "assign: target f32[64, 10] and value f16[64, 10] differ");
	ir_graph_free(g);
}

static void test_shapes_injective_reduce(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(4, 2, 3, 4, 5), DT_F32), s = leaf(g, S(2, 8, 10), DT_F32), l = leaf(g, S(1, 8), DT_I32);
	int lf = leaf(g, S(1, 8), DT_F32), l9 = leaf(g, S(1, 9), DT_I32), one = ir_const(g, 1);
	int r = tu_add(g, OP_reshape, &x, A(2, 6, -1));
	expect_shape(g, r, "[6, 20]");
	CHECK(g->node[r].attr[2] == 20); /* the inferred size is written back */
	expect_shape(g, tu_add(g, OP_reshape, &one, A(0)), "[]");
	expect_shape(g, tu_add(g, OP_broadcast_to, &s, A(3, 4, 8, 10)), "[4, 8, 10]");
	expect_shape(g, tu_add(g, OP_broadcast_to, &one, A(2, 3, 2)), "[3, 2]");
	expect_shape(g, tu_add(g, OP_sum, &x, A(0x5, 0)), "[3, 5]");
	expect_shape(g, tu_add(g, OP_mean, &x, A(0xA, 1)), "[2, 1, 4, 1]");
	expect_shape(g, tu_add(g, OP_sum, &x, A(0xF, 0)), "[]");
	expect_shape(g, tu_add(g, OP_softmax, &s, A(1)), "[8, 10]");
	int ls = tu_add(g, OP_log_softmax, &x, A(-3));
	CHECK(g->node[ls].attr[0] == 1);
	int loss = tu_add(g, OP_nll_loss, (int[]){s, l}, A(0));
	expect_shape(g, loss, "[]");
	CHECK(g->node[loss].dtype == DT_F32);
	expect_shape(g, tu_add(g, OP_cross_entropy, (int[]){s, l}, A(1)), "[]");
	expect_shape(g, tu_add(g, OP_nll_loss_grad, (int[]){one, s, l}, A(0)), "[8, 10]");
	expect_shape(g, tu_add(g, OP_cross_entropy_grad, (int[]){one, s, l}, A(0)), "[8, 10]");
	expect_shape(g, tu_add(g, OP_softmax_grad, (int[]){s, s}, A(1)), "[8, 10]");

	expect_error(g, OP_reshape, &x, A(2, 7, -1), "reshape: cannot reshape [2, 3, 4, 5] (120 elements) to [7, -1]");
	expect_error(g, OP_reshape, &x, A(2, 7, 10), "reshape: cannot reshape [2, 3, 4, 5] (120 elements) to [7, 10]");
	expect_error(g, OP_reshape, &x, A(2, -1, -1), "reshape: only one dimension may be -1");
	expect_error(g, OP_reshape, &x, A(7), "reshape: rank must be an integer in [0, 6], got 7");
	expect_error(g, OP_reshape, &x, A(1, 0), "reshape: d0 must be an integer >= 1, got 0");
	expect_error(g, OP_broadcast_to, &s, A(2, 8, 3), "broadcast_to: cannot broadcast [8, 10] to [8, 3]");
	expect_error(g, OP_broadcast_to, &s, A(1, 10), "broadcast_to: cannot broadcast [8, 10] to [10]");
	expect_error(g, OP_sum, &s, A(4, 0), "sum: axes must be an integer in [0, 3], got 4");
	expect_error(g, OP_mean, &s, A(1, 2), "mean: keepdims must be an integer in [0, 1], got 2");
	expect_error(g, OP_softmax, &s, A(2), "softmax: axis 2 is out of range for a rank-2 input");
	expect_error(g, OP_nll_loss, (int[]){s, lf}, A(0), "nll_loss: labels must be i32[8], got f32[8]");
	expect_error(g, OP_nll_loss, (int[]){s, l9}, A(0), "nll_loss: labels must be i32[8], got i32[9]");
	expect_error(g, OP_cross_entropy, (int[]){x, l}, A(0), "cross_entropy: scores must be 2-D [N, C], got f32[2, 3, 4, 5]");
	expect_error(g, OP_cross_entropy, (int[]){s, l}, A(2), "cross_entropy: reduction must be an integer in [0, 1], got 2");
	expect_error(g, OP_nll_loss_grad, (int[]){s, s, l}, A(0), "nll_loss_grad: the loss gradient must be a scalar, got f32[8, 10]");
	ir_graph_free(g);
}

static void test_shapes_nn(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(4, 64, 3, 28, 28), DT_F32), w = leaf(g, S(4, 32, 3, 3, 3), DT_F32);
	int w1 = leaf(g, S(4, 32, 1, 3, 3), DT_F32), wh = leaf(g, S(4, 32, 3, 3, 3), DT_F16);
	int a = leaf(g, S(2, 64, 9216), DT_F32), b = leaf(g, S(2, 128, 9216), DT_F32), b2 = leaf(g, S(2, 128, 9215), DT_F32);
	int p = leaf(g, S(4, 64, 32, 2, 2), DT_F32), v = leaf(g, S(1, 5), DT_F32);
	/* (28 + 2*2 - 2*(3-1) - 1)/2 + 1 = 14 and (28 + 0 - 1*(3-1) - 1)/1 + 1 = 26 */
	int y = tu_add(g, OP_conv2d, (int[]){x, w}, A(2, 1, 2, 0, 2, 1));
	expect_shape(g, y, "[64, 32, 14, 26]");
	int gi = tu_add(g, OP_conv2d_grad_input, (int[]){y, w}, A(2, 1, 2, 0, 2, 1, 28, 28));
	expect_shape(g, gi, "[64, 3, 28, 28]");
	int gw = tu_add(g, OP_conv2d_grad_weight, (int[]){y, x}, A(2, 1, 2, 0, 2, 1, 3, 3));
	expect_shape(g, gw, "[32, 3, 3, 3]");
	expect_shape(g, tu_add(g, OP_matmul, (int[]){a, b}, A(0, 1)), "[64, 128]");
	expect_shape(g, tu_add(g, OP_matmul, (int[]){b, a}, A(0, 1)), "[128, 64]");
	expect_shape(g, tu_add(g, OP_matmul, (int[]){a, a}, A(1, 0)), "[9216, 9216]");
	int mp = tu_add(g, OP_max_pool2d, &x, A(3, 2, 2, 2, 1, 0));
	expect_shape(g, mp, "[64, 3, 14, 14]"); /* (28+2-3)/2+1 = 14, (28-2)/2+1 = 14 */
	int ap = tu_add(g, OP_avg_pool2d, &x, A(2, 2, 2, 2, 0, 0, 1));
	expect_shape(g, ap, "[64, 3, 14, 14]");
	int am = tu_add(g, OP_max_pool2d_argmax, &x, A(3, 2, 2, 2, 1, 0));
	expect_shape(g, am, "[64, 3, 14, 14]");
	CHECK(g->node[am].dtype == DT_I32);
	expect_shape(g, tu_add(g, OP_max_pool2d_grad, (int[]){mp, am}, A(3, 2, 2, 2, 1, 0, 0, 0, 28, 28)), "[64, 3, 28, 28]");
	/* layout=1: NHWC, the spatial axes 1 and 2 */
	int mpt = tu_add(g, OP_max_pool2d, &x, A(3, 2, 2, 2, 1, 0, 0, 1));
	expect_shape(g, mpt, "[64, 2, 14, 28]");
	int amt = tu_add(g, OP_max_pool2d_argmax, &x, A(3, 2, 2, 2, 1, 0, 0, 1));
	expect_shape(g, tu_add(g, OP_max_pool2d_grad, (int[]){mpt, amt}, A(3, 2, 2, 2, 1, 0, 0, 1, 3, 28)), "[64, 3, 28, 28]");
	expect_shape(g, tu_add(g, OP_avg_pool2d, &x, A(2, 2, 2, 2, 0, 0, 1, 0, 1)), "[64, 1, 14, 28]");
	expect_shape(g, tu_add(g, OP_avg_pool2d_grad, (int[]){ap, x}, A(2, 2, 2, 2, 0, 0, 1)), "[64, 3, 28, 28]");
	int mp2 = tu_add(g, OP_max_pool2d, &x, A(2, 2, 2, 2, 0, 0));
	expect_shape(g, tu_add(g, OP_max_pool2d_tiled_grad, (int[]){mp2, x}, A(2, 2, 2, 2, 0, 0)), "[64, 3, 28, 28]");
	expect_shape(g, ir_max_pool2d_backward(g, x, A(2, 2, 2, 2, 0, 0), mp2), "[64, 3, 28, 28]");
	CHECK(g->node[g->nnodes - 1].op == OP_max_pool2d_tiled_grad);
	expect_error(g, OP_max_pool2d_tiled_grad, (int[]){mp, x}, A(3, 2, 2, 2, 1, 0),
		     "max_pool2d_tiled_grad: windows 3x2, stride 2x2, padding 1x0 do not tile [64, 3, 28, 28] exactly");
	/* ceil mode: ceil((28-3)/2)+1 = 14 where floor gives 13; ceil((28+2-2)/3)+1 = 11 would start the
	 * last window in the right padding (10*3 - 1 = 29 >= 28), so 10 */
	int cm = tu_add(g, OP_max_pool2d, &x, A(3, 3, 2, 2, 0, 0, 1));
	expect_shape(g, cm, "[64, 3, 14, 14]");
	expect_shape(g, ir_max_pool2d_backward(g, x, A(3, 3, 2, 2, 0, 0, 1), cm), "[64, 3, 28, 28]");
	expect_shape(g, tu_add(g, OP_avg_pool2d, &x, A(2, 2, 3, 3, 1, 1, 1, 1)), "[64, 3, 10, 10]");
	expect_shape(g, tu_add(g, OP_max_pool2d, &x, A(3, 3, 2, 2, 0, 0, 0)), "[64, 3, 13, 13]");

	expect_error(g, OP_conv2d, (int[]){x, w1}, A(1, 1, 0, 0, 1, 1),
		     "conv2d: input [64, 3, 28, 28] has 3 channels but weight [32, 1, 3, 3] expects 1");
	expect_error(g, OP_conv2d, (int[]){x, wh}, A(1, 1, 0, 0, 1, 1), "conv2d: dtypes differ: f32 and f16");
	expect_error(g, OP_conv2d, (int[]){a, w}, A(1, 1, 0, 0, 1, 1), "conv2d: input must be 4-D, got f32[64, 9216]");
	expect_error(g, OP_conv2d, (int[]){x, w}, A(0, 1, 0, 0, 1, 1), "conv2d: stride_h must be an integer >= 1, got 0");
	expect_error(g, OP_conv2d, (int[]){x, w}, A(1, 1, -1, 0, 1, 1), "conv2d: pad_h must be an integer >= 0, got -1");
	expect_error(g, OP_conv2d, (int[]){x, w}, A(1, 1, 0, 0, 14, 1),
		     "conv2d: kernel 3x3 (dilation 14x1) is larger than the input [64, 3, 28, 28] padded by 0x0");
	expect_error(g, OP_conv2d_grad_input, (int[]){y, w}, A(2, 1, 2, 0, 2, 1, 28, 27),
		     "conv2d_grad_input: dy [64, 32, 14, 26] does not match the convolution's output [64, 32, 14, 25]");
	expect_error(g, OP_matmul, (int[]){a, b2}, A(0, 1), "matmul: inner sizes differ: [64, 9216] and [128, 9215]");
	expect_error(g, OP_matmul, (int[]){a, v}, A(0, 0), "matmul: dense/matmul expects 2-D inputs, got [64, 9216] and [5]");
	expect_error(g, OP_matmul, (int[]){a, b}, A(0, 0), "matmul: inner sizes differ: [64, 9216] and [128, 9216]");
	expect_error(g, OP_max_pool2d, &p, A(3, 3, 1, 1, 0, 0), "max_pool2d: window 3 is larger than the padded input [64, 32, 2, 2]");
	expect_error(g, OP_avg_pool2d, &x, A(3, 3, 1, 1, 2, 0, 1), "avg_pool2d: padding 2x0 is more than half the window 3x3");
	expect_error(g, OP_avg_pool2d, &x, A(3, 3, 1, 1, 1, 1, 2), "avg_pool2d: count_include_pad must be an integer in [0, 1], got 2");
	int xi = leaf(g, S(4, 64, 3, 28, 28), DT_I32);
	expect_error(g, OP_max_pool2d_grad, (int[]){x, xi}, A(3, 2, 2, 2, 1, 0, 0, 0, 28, 28),
		     "max_pool2d_grad: dy [64, 3, 28, 28] does not match the pooled shape [64, 3, 14, 14]");
	expect_error(g, OP_max_pool2d_grad, (int[]){mp, am}, A(3, 2, 2, 2, 1, 0, 0, 0, 28, 27),
		     "max_pool2d_grad: dy [64, 3, 14, 14] does not match the pooled shape [64, 3, 14, 13]");
	expect_error(g, OP_max_pool2d_grad, (int[]){mp, mp}, A(3, 2, 2, 2, 1, 0, 0, 0, 28, 28),
		     "max_pool2d_grad: index f32[64, 3, 14, 14] must be i32 of dy's shape [64, 3, 14, 14]");
	ir_graph_free(g);
}

/* ---- references ---- */

static void test_ref_elemwise(void)
{
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(3, 2, 3, 4), DT_F32), b = leaf(g, S(2, 3, 1), DT_F32), bias = leaf(g, S(1, 3), DT_F32);
	int b2 = leaf(g, S(2, 3, 1), DT_F32);
	int k = ir_const(g, tu_uniform(0.5, 2));
	int un[6], bin[4];
	for (int i = 0; i < 6; i++)
		un[i] = tu_add(g, OP_neg + i, &a, NULL);
	for (int i = 0; i < 4; i++)
		bin[i] = tu_add(g, OP_add + i, (int[]){a, b}, NULL);
	int scaled = tu_add(g, OP_mul, (int[]){k, a}, NULL), rg = tu_add(g, OP_relu_grad, (int[]){b, a}, NULL);
	int ba = tu_add(g, OP_bias_add, (int[]){a, bias}, A(1)), as = tu_add(g, OP_assign, (int[]){b, b2}, NULL);
	double **v = values_new(g);
	fill(v[a], 24, 0.1, 2); /* log and sqrt need positive inputs */
	fill(v[b], 3, 0.5, 2);  /* div needs a denominator away from zero */
	for (int i = 0; i < 12; i++)
		v[a][2 * i] = -v[a][2 * i]; /* relu sees both signs */
	ir_interp(g, 0, v);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int l = 0; l < 4; l++) {
				int e = (i * 3 + j) * 4 + l;
				double x = v[a][e], y = v[b][j];
				CHECK_NEAR(v[un[0]][e], -x, 1e-15);
				CHECK_NEAR(v[un[1]][e], exp(x), 1e-15);
				if (x > 0) {
					CHECK_NEAR(v[un[2]][e], log(x), 1e-15);
					CHECK_NEAR(v[un[3]][e], sqrt(x), 1e-15);
				}
				CHECK_NEAR(v[un[4]][e], x > 0 ? x : 0, 0);
				CHECK_NEAR(v[un[5]][e], x, 0);
				CHECK_NEAR(v[bin[0]][e], x + y, 1e-15);
				CHECK_NEAR(v[bin[1]][e], x - y, 1e-15);
				CHECK_NEAR(v[bin[2]][e], x * y, 1e-15);
				CHECK_NEAR(v[bin[3]][e], x / y, 1e-15);
				CHECK_NEAR(v[scaled][e], g->node[k].attr[0] * x, 1e-15);
				CHECK_NEAR(v[rg][e], x > 0 ? y : 0, 0);
				CHECK_NEAR(v[ba][e], x + v[bias][j], 1e-15);
			}
	for (int j = 0; j < 3; j++)
		CHECK(v[as][j] == v[b2][j]); /* assign holds the value written */
	values_free(g, v);
	ir_graph_free(g);
}

/* sigmoid and tanh on random inputs up to |x| = 50: the textbook formulas (valid here in
 * float64), saturating to exactly 0, 1 or +-1 without NaN or inf. */
static void test_ref_sigmoid_tanh(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(1, 64), DT_F32);
	int sg = tu_add(g, OP_sigmoid, &x, NULL), th = tu_add(g, OP_tanh, &x, NULL);
	double **v = values_new(g);
	fill(v[x], 64, 0.01, 50);
	for (int i = 0; i < 32; i++)
		v[x][2 * i] = -v[x][2 * i];
	ir_interp(g, 0, v);
	for (int i = 0; i < 64; i++) {
		double xi = v[x][i];
		CHECK(isfinite(v[sg][i]) && isfinite(v[th][i]), "x %g", xi);
		CHECK_NEAR(v[sg][i], 1 / (1 + exp(-xi)), 1e-15);
		CHECK_NEAR(v[th][i], (exp(xi) - exp(-xi)) / (exp(xi) + exp(-xi)), 1e-15);
	}
	values_free(g, v);
	ir_graph_free(g);
}

/* abs, sign and pow against hand-worked values: pow of a negative base is NaN unless the exponent is
 * whole, 0 to a negative power inf (torch.pow's rules) */
static void test_ref_abs_sign_pow(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(1, 5), DT_F32);
	int ab = tu_add(g, OP_abs, &x, NULL), sg = tu_add(g, OP_sign, &x, NULL);
	int p3 = tu_add(g, OP_pow, &x, A(3)), ph = tu_add(g, OP_pow, &x, A(1.5)), pm = tu_add(g, OP_pow, &x, A(-1));
	double **v = values_new(g);
	memcpy(v[x], (double[]){-2, 0, 0.25, 4, -0.5}, sizeof(double[5]));
	ir_interp(g, 0, v);
	const double want_abs[] = {2, 0, 0.25, 4, 0.5}, want_sign[] = {-1, 0, 1, 1, -1};
	const double want_p3[] = {-8, 0, 0.015625, 64, -0.125}, want_pm[] = {-0.5, INFINITY, 4, 0.25, -2};
	for (int i = 0; i < 5; i++) {
		CHECK(v[ab][i] == want_abs[i] && v[sg][i] == want_sign[i], "abs/sign at %d", i);
		CHECK(v[p3][i] == want_p3[i] && v[pm][i] == want_pm[i], "pow 3 / pow -1 at %d: %g %g", i, v[p3][i], v[pm][i]);
	}
	CHECK(isnan(v[ph][0]) && v[ph][1] == 0 && v[ph][2] == 0.125 && v[ph][3] == 8, "pow 1.5");
	values_free(g, v);
	ir_graph_free(g);
}

/* upsample_bilinear against torch.nn.functional.interpolate(x, scale_factor=f, mode='bilinear',
 * align_corners=False) of PyTorch 1.13 (values printed by it, float32), and its gradient as the
 * adjoint: <up(x), y> = <x, up_grad(y)> for random x and y. */
static void test_ref_upsample(void)
{
	static const double want2[16] = {1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0};
	static const double want3[54] = {
		1.0, 1.0, 1.3333333730697632, 1.6666667461395264, 2.0, 2.6666667461395264, 3.3333334922790527, 4.0, 4.0,
		1.0, 1.0000001192092896, 1.3333333730697632, 1.6666667461395264, 2.0, 2.6666667461395264, 3.3333334922790527, 4.0, 4.0,
		1.6666667461395264, 1.6666667461395264, 2.0, 2.3333334922790527, 2.6666665077209473, 2.6666667461395264,
		2.6666665077209473, 2.6666665077209473, 2.6666665077209473, 2.3333334922790527, 2.3333334922790527,
		2.6666667461395264, 3.0, 3.3333330154418945, 2.6666665077209473, 1.999999761581421, 1.3333332538604736,
		1.3333332538604736, 3.0, 3.0, 3.3333332538604736, 3.6666665077209473, 3.999999761581421, 2.666666269302368,
		1.333332896232605, 0.0, 0.0, 3.0, 3.0, 3.3333334922790527, 3.6666665077209473, 3.999999523162842,
		2.6666665077209473, 1.3333330154418945, 0.0, 0.0};
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(4, 1, 1, 2, 2), DT_F32), b = leaf(g, S(4, 1, 1, 2, 3), DT_F32);
	int ua = tu_add(g, OP_upsample_bilinear, &a, A(2)), ub = tu_add(g, OP_upsample_bilinear, &b, A(3));
	int x = leaf(g, S(4, 2, 3, 5, 4), DT_F32), y = leaf(g, S(4, 2, 3, 15, 12), DT_F32);
	int ux = tu_add(g, OP_upsample_bilinear, &x, A(3)), gy = tu_add(g, OP_upsample_bilinear_grad, &y, A(3));
	double **v = values_new(g);
	memcpy(v[a], (double[]){1, 2, 3, 4}, sizeof(double[4]));
	memcpy(v[b], (double[]){1, 2, 4, 3, 4, 0}, sizeof(double[6]));
	fill(v[x], 120, -1, 1);
	fill(v[y], 1080, -1, 1);
	ir_interp(g, 0, v);
	for (int i = 0; i < 16; i++)
		CHECK_NEAR(v[ua][i], want2[i], 1e-6);
	for (int i = 0; i < 54; i++)
		CHECK_NEAR(v[ub][i], want3[i], 1e-6);
	double lhs = 0, rhs = 0;
	for (int i = 0; i < 1080; i++)
		lhs += v[ux][i] * v[y][i];
	for (int i = 0; i < 120; i++)
		rhs += v[x][i] * v[gy][i];
	CHECK_NEAR(lhs, rhs, 1e-12);
	values_free(g, v);
	ir_graph_free(g);
}

/* maximum and minimum with broadcasting and NaN from either side, and the shares of dy of their
 * gradient ops: the winner dy, a tie dy/2, the loser 0, a NaN dy. */
static void test_ref_maximum_minimum(void)
{
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(2, 2, 3), DT_F32), b = leaf(g, S(1, 3), DT_F32), dy = leaf(g, S(2, 2, 3), DT_F32);
	int mx = tu_add(g, OP_maximum, (int[]){a, b}, NULL), mn = tu_add(g, OP_minimum, (int[]){a, b}, NULL);
	int gmx = tu_add(g, OP_maximum_grad, (int[]){dy, a, b}, NULL), gmn = tu_add(g, OP_minimum_grad, (int[]){dy, a, b}, NULL);
	double **v = values_new(g);
	memcpy(v[a], (double[]){1.5, -2, NAN, 0.25, 3, 7}, sizeof(double[6]));
	memcpy(v[b], (double[]){0.25, 3, -1}, sizeof(double[3]));
	memcpy(v[dy], (double[]){2, 4, 6, 8, 10, 12}, sizeof(double[6]));
	ir_interp(g, 0, v);
	/* pairs (a, b): (1.5, 0.25) (-2, 3) (NaN, -1) (0.25, 0.25) (3, 3) (7, -1) */
	const double want_mx[6] = {1.5, 3, NAN, 0.25, 3, 7}, want_mn[6] = {0.25, -2, NAN, 0.25, 3, -1};
	const double want_gmx[6] = {2, 0, 6, 4, 5, 12}, want_gmn[6] = {0, 4, 6, 4, 5, 0};
	for (int i = 0; i < 6; i++) {
		CHECK(isnan(want_mx[i]) ? isnan(v[mx][i]) : v[mx][i] == want_mx[i], "maximum %d: %g", i, v[mx][i]);
		CHECK(isnan(want_mn[i]) ? isnan(v[mn][i]) : v[mn][i] == want_mn[i], "minimum %d: %g", i, v[mn][i]);
		CHECK_NEAR(v[gmx][i], want_gmx[i], 0);
		CHECK_NEAR(v[gmn][i], want_gmn[i], 0);
	}
	values_free(g, v);
	ir_graph_free(g);
}

/* silu: hand-computed values (1 sigmoid(1) = 1/(1 + e^-1) = 0.7310585786, -2 sigmoid(-2) =
 * -2/(1 + e^2) = -0.2384058440), then x / (1 + e^-x) on random inputs up to |x| = 50, the far
 * negative tail -0 rather than NaN. */
static void test_ref_silu(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(1, 66), DT_F32);
	int y = tu_add(g, OP_silu, &x, NULL);
	double **v = values_new(g);
	fill(v[x], 64, 0.01, 50);
	for (int i = 0; i < 32; i++)
		v[x][2 * i] = -v[x][2 * i];
	v[x][64] = 1, v[x][65] = -2;
	ir_interp(g, 0, v);
	CHECK_NEAR(v[y][64], 0.7310585786, 1e-10);
	CHECK_NEAR(v[y][65], -0.2384058440, 1e-10);
	for (int i = 0; i < 64; i++) {
		double xi = v[x][i];
		CHECK(isfinite(v[y][i]), "x %g", xi);
		CHECK_NEAR(v[y][i], xi / (1 + exp(-xi)), 1e-14);
	}
	values_free(g, v);
	ir_graph_free(g);
}

/* leaky_relu and leaky_relu_grad: hand-computed values at slope 0.1, then random inputs of both
 * signs at a random slope against the definition. */
static void test_ref_leaky_relu(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(1, 4), DT_F32), dy = leaf(g, S(1, 4), DT_F32);
	int y = tu_add(g, OP_leaky_relu, &x, A(0.1)), dx = tu_add(g, OP_leaky_relu_grad, (int[]){dy, x}, A(0.1));
	double **v = values_new(g);
	memcpy(v[x], (double[]){-2.5, -0.3, 0.7, 4}, sizeof(double[4]));
	memcpy(v[dy], (double[]){1.5, -2, 3, -0.5}, sizeof(double[4]));
	ir_interp(g, 0, v);
	const double want_y[4] = {-0.25, -0.03, 0.7, 4}, want_dx[4] = {0.15, -0.2, 3, -0.5};
	for (int i = 0; i < 4; i++) {
		CHECK_NEAR(v[y][i], want_y[i], 1e-15);
		CHECK_NEAR(v[dx][i], want_dx[i], 1e-15);
	}
	values_free(g, v);
	ir_graph_free(g);

	g = ir_graph_new("t");
	double slope = tu_uniform(0.01, 2);
	x = leaf(g, S(1, 64), DT_F32), dy = leaf(g, S(1, 64), DT_F32);
	y = tu_add(g, OP_leaky_relu, &x, A(slope)), dx = tu_add(g, OP_leaky_relu_grad, (int[]){dy, x}, A(slope));
	CHECK(ir_leaky_relu_slope(&g->node[y]) == slope && ir_leaky_relu_slope(&g->node[dx]) == slope);
	v = values_new(g);
	fill(v[x], 64, 0.01, 20);
	fill(v[dy], 64, -3, 3);
	for (int i = 0; i < 32; i++)
		v[x][2 * i] = -v[x][2 * i];
	ir_interp(g, 0, v);
	for (int i = 0; i < 64; i++) {
		double xi = v[x][i];
		CHECK_NEAR(v[y][i], xi > 0 ? xi : slope * xi, 1e-15);
		CHECK_NEAR(v[dx][i], xi > 0 ? v[dy][i] : slope * v[dy][i], 1e-15);
	}
	values_free(g, v);
	ir_graph_free(g);
}

/* gelu and gelu_grad in both forms at x = 1, -1, 2, -0.5: the exact form from the normal table
 * (Phi(1) = 0.8413447461, Phi(2) = 0.9772498681, phi(1) = 0.2419707245), the tanh form and the
 * gradients from the formulas evaluated separately; then the definitions on random inputs. */
static void test_ref_gelu(void)
{
	static const double xs[4] = {1, -1, 2, -0.5};
	static const double want[2][2][4] = {
		{{0.8413447461, -0.1586552539, 2 * 0.9772498681, -0.15426876936299344},
		 {0.8413447461 + 0.2419707245, 0.1586552539 - 0.2419707245, 1.085231801078197, 0.13250487534383712}},
		{{0.8411919906082768, -0.15880800939172324, 1.954597694087775, -0.15428599017485606},
		 {1.0829640838457826, -0.08296408384578255, 1.0860992566236183, 0.13263009646535764}},
	}; /* [none, tanh][gelu, gelu_grad of dy = 1][x] */
	for (int form = 0; form < 2; form++) {
		Graph *g = ir_graph_new("t");
		int x = leaf(g, S(1, 4), DT_F32), dy = leaf(g, S(1, 4), DT_F32);
		int y = tu_add(g, OP_gelu, &x, A(form)), dx = tu_add(g, OP_gelu_grad, (int[]){dy, x}, A(form));
		CHECK(ir_gelu_is_tanh(&g->node[y]) == form && ir_gelu_is_tanh(&g->node[dx]) == form);
		double **v = values_new(g);
		memcpy(v[x], xs, sizeof xs);
		for (int i = 0; i < 4; i++)
			v[dy][i] = 1;
		ir_interp(g, 0, v);
		for (int i = 0; i < 4; i++) {
			CHECK_NEAR(v[y][i], want[form][0][i], 1e-9);
			CHECK_NEAR(v[dx][i], want[form][1][i], 1e-9);
		}
		/* random x and dy: x Phi(x) and dy (Phi + x phi) for none; tanh's x/2 (1 + t) */
		fill(v[x], 4, -6, 6);
		fill(v[dy], 4, -3, 3);
		ir_interp(g, 0, v);
		for (int i = 0; i < 4; i++) {
			double xi = v[x][i], cdf = 0.5 * erfc(-xi / sqrt(2)), pdf = exp(-xi * xi / 2) / sqrt(2 * M_PI);
			double t = tanh(sqrt(2 / M_PI) * (xi + 0.044715 * pow(xi, 3)));
			CHECK_NEAR(v[y][i], form ? xi / 2 * (1 + t) : xi * cdf, 1e-12);
			if (!form)
				CHECK_NEAR(v[dx][i], v[dy][i] * (cdf + xi * pdf), 1e-12);
		}
		values_free(g, v);
		ir_graph_free(g);
	}
}

static void test_ref_injective_reduce(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(3, 2, 3, 4), DT_F32), c = leaf(g, S(2, 3, 1), DT_F32);
	int r = tu_add(g, OP_reshape, &x, A(2, 4, -1));
	int bt = tu_add(g, OP_broadcast_to, &c, A(3, 2, 3, 4));
	int s = tu_add(g, OP_sum, &x, A(0x5, 0)), m = tu_add(g, OP_mean, &x, A(0x2, 1));
	int all = tu_add(g, OP_sum, &x, A(0x7, 0));
	double **v = values_new(g);
	ir_interp(g, 0, v);
	double total = 0;
	for (int i = 0; i < 24; i++) {
		CHECK(v[r][i] == v[x][i]);
		total += v[x][i];
	}
	CHECK_NEAR(v[all][0], total, 1e-14);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int l = 0; l < 4; l++)
				CHECK(v[bt][(i * 3 + j) * 4 + l] == v[c][j]);
	for (int j = 0; j < 3; j++) {
		double want = 0;
		for (int i = 0; i < 2; i++)
			for (int l = 0; l < 4; l++)
				want += v[x][(i * 3 + j) * 4 + l];
		CHECK_NEAR(v[s][j], want, 1e-14);
	}
	for (int i = 0; i < 2; i++)
		for (int l = 0; l < 4; l++) {
			double want = 0;
			for (int j = 0; j < 3; j++)
				want += v[x][(i * 3 + j) * 4 + l] / 3;
			CHECK_NEAR(v[m][i * 4 + l], want, 1e-14);
		}
	values_free(g, v);
	ir_graph_free(g);
}

static void test_ref_softmax_losses(void)
{
	enum { N = 5, C = 7 };
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(2, N, C), DT_F32), x3 = leaf(g, S(3, 2, C, 3), DT_F32);
	int lab = ir_leaf(g, OP_input, "labels", S(1, N), DT_I32, NULL);
	int sm = tu_add(g, OP_softmax, &x, A(1)), ls = tu_add(g, OP_log_softmax, &x, A(1));
	int sm3 = tu_add(g, OP_softmax, &x3, A(1));
	int nll = tu_add(g, OP_nll_loss, (int[]){ls, lab}, A(0));
	int nlls = tu_add(g, OP_nll_loss, (int[]){ls, lab}, A(1));
	int ce = tu_add(g, OP_cross_entropy, (int[]){x, lab}, A(0));
	double **v = values_new(g);
	for (int i = 0; i < N * C; i++)
		v[x][i] *= 10; /* a wide range tests the max shift */
	for (int i = 0; i < N; i++)
		v[lab][i] = (int)tu_uniform(0, C);
	ir_interp(g, 0, v);
	double want = 0;
	for (int i = 0; i < N; i++) {
		double sum = 0;
		for (int j = 0; j < C; j++) {
			sum += v[sm][i * C + j];
			CHECK(v[sm][i * C + j] > 0);
			CHECK_NEAR(v[ls][i * C + j], log(v[sm][i * C + j]), 1e-12);
		}
		CHECK_NEAR(sum, 1, 1e-14);
		want -= v[ls][i * C + (int)v[lab][i]];
	}
	CHECK_NEAR(v[nlls][0], want, 1e-12);
	CHECK_NEAR(v[nll][0], want / N, 1e-12);
	CHECK_NEAR(v[ce][0], want / N, 1e-12);
	for (int b = 0; b < 2; b++) /* softmax along a middle axis */
		for (int k = 0; k < 3; k++) {
			double sum = 0;
			for (int j = 0; j < C; j++)
				sum += v[sm3][(b * C + j) * 3 + k];
			CHECK_NEAR(sum, 1, 1e-14);
		}
	values_free(g, v);
	ir_graph_free(g);
}

/* conv2d against the direct sum; its gradients by the adjoint identities
 * <conv(x, w), dy> = <x, grad_input(dy, w)> = <w, grad_weight(dy, x)>. */
static void test_ref_conv(void)
{
	enum { B = 2, CI = 3, CO = 4, H = 7, W = 6, KH = 3, KW = 2 };
	const int sh = 2, sw = 1, ph = 1, pw = 2, dh = 1, dw = 2;
	const int OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1, OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
	double at[IR_MAX_ATTRS] = {sh, sw, ph, pw, dh, dw, H, W};
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(4, B, CI, H, W), DT_F32), w = leaf(g, S(4, CO, CI, KH, KW), DT_F32);
	int dy = leaf(g, S(4, B, CO, OH, OW), DT_F32);
	int y = tu_add(g, OP_conv2d, (int[]){x, w}, A(sh, sw, ph, pw, dh, dw));
	int dx = tu_add(g, OP_conv2d_grad_input, (int[]){dy, w}, at);
	at[6] = KH, at[7] = KW;
	int dwt = tu_add(g, OP_conv2d_grad_weight, (int[]){dy, x}, at);
	double **v = values_new(g);
	ir_interp(g, 0, v);
	for (int b = 0; b < B; b++)
	for (int co = 0; co < CO; co++)
	for (int oh = 0; oh < OH; oh++)
	for (int ow = 0; ow < OW; ow++) {
		double want = 0;
		for (int ci = 0; ci < CI; ci++)
		for (int kh = 0; kh < KH; kh++)
		for (int kw = 0; kw < KW; kw++) {
			int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
			if (ih >= 0 && ih < H && iw >= 0 && iw < W)
				want += v[x][((b * CI + ci) * H + ih) * W + iw] * v[w][((co * CI + ci) * KH + kh) * KW + kw];
		}
		CHECK_NEAR(v[y][((b * CO + co) * OH + oh) * OW + ow], want, 1e-13);
	}
	double ydy = 0, xdx = 0, wdw = 0;
	for (int i = 0; i < B * CO * OH * OW; i++)
		ydy += v[y][i] * v[dy][i];
	for (int i = 0; i < B * CI * H * W; i++)
		xdx += v[x][i] * v[dx][i];
	for (int i = 0; i < CO * CI * KH * KW; i++)
		wdw += v[w][i] * v[dwt][i];
	CHECK_NEAR(xdx, ydy, 1e-12);
	CHECK_NEAR(wdw, ydy, 1e-12);
	CHECK_NEAR(ir_flops(g, 0), 3 * 2.0 * B * CO * OH * OW * CI * KH * KW, 0);
	values_free(g, v);
	ir_graph_free(g);
}

static void test_ref_matmul(void)
{
	enum { M = 3, K = 5, N = 4 };
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(2, M, K), DT_F32), at = leaf(g, S(2, K, M), DT_F32);
	int b = leaf(g, S(2, K, N), DT_F32), bt = leaf(g, S(2, N, K), DT_F32);
	int c[4];
	for (int t = 0; t < 4; t++)
		c[t] = tu_add(g, OP_matmul, (int[]){t & 1 ? at : a, t & 2 ? bt : b}, A(t & 1, (t & 2) != 0));
	double **v = values_new(g);
	ir_interp(g, 0, v);
	for (int t = 0; t < 4; t++) {
		expect_shape(g, c[t], "[3, 4]");
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++) {
				double want = 0;
				for (int p = 0; p < K; p++)
					want += (t & 1 ? v[at][p * M + i] : v[a][i * K + p]) * (t & 2 ? v[bt][j * K + p] : v[b][p * N + j]);
				CHECK_NEAR(v[c[t]][i * N + j], want, 1e-14);
			}
	}
	CHECK_NEAR(ir_flops(g, 0), 4 * 2.0 * M * N * K, 0);
	values_free(g, v);
	ir_graph_free(g);
}

/* Windows worked out by hand on x = 1..16 in a 4x4 plane. */
static void test_ref_pool_by_hand(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(4, 1, 1, 4, 4), DT_F32), t = leaf(g, S(4, 1, 1, 2, 2), DT_F32);
	int mp = tu_add(g, OP_max_pool2d, &x, A(2, 2, 2, 2, 0, 0));
	int ap = tu_add(g, OP_avg_pool2d, &x, A(2, 2, 2, 2, 0, 0, 1));
	int inc = tu_add(g, OP_avg_pool2d, &x, A(3, 3, 2, 2, 1, 1, 1));
	int exc = tu_add(g, OP_avg_pool2d, &x, A(3, 3, 2, 2, 1, 1, 0));
	int tie = ir_max_pool2d_backward(g, x, A(2, 2, 2, 2, 0, 0), t); /* x below: all equal */
	int am = tu_add(g, OP_max_pool2d_argmax, &x, A(2, 2, 2, 2, 0, 0));
	CHECK(g->node[tie].op == OP_max_pool2d_tiled_grad, "2x2/2 windows tile 4x4: one scanning gradient node");
	double **v = values_new(g);
	for (int i = 0; i < 16; i++)
		v[x][i] = i + 1;
	ir_interp(g, 0, v);
	double want_mp[4] = {6, 8, 14, 16}, want_ap[4] = {3.5, 5.5, 11.5, 13.5};
	/* windows rows/cols -1..1 and -1..1 / 1..3: sums 14 (4 in bounds) and 30 (6 in bounds) */
	double want_inc[2] = {14.0 / 9, 30.0 / 9}, want_exc[2] = {14.0 / 4, 30.0 / 6};
	for (int i = 0; i < 4; i++) {
		CHECK(v[mp][i] == want_mp[i]);
		CHECK_NEAR(v[ap][i], want_ap[i], 1e-15);
	}
	for (int i = 0; i < 2; i++) {
		CHECK_NEAR(v[inc][i], want_inc[i], 1e-15);
		CHECK_NEAR(v[exc][i], want_exc[i], 1e-15);
	}
	for (int i = 0; i < 16; i++)
		v[x][i] = 0.5;
	ir_interp(g, 0, v);
	for (int i = 0; i < 16; i++) /* ties: the first element of each window takes it all */
		CHECK(v[tie][i] == (i % 2 == 0 && (i / 4) % 2 == 0 ? v[t][(i / 8) * 2 + (i % 4) / 2] : 0));
	/* a NaN always takes a window over, so its last NaN wins (PyTorch's val > max || isnan(val)):
	 * windows {0,1,4,5}, {2,3,6,7}, {8,9,12,13}, {10,11,14,15}; window 1 has a NaN before a 2 */
	v[x][0] = NAN, v[x][3] = NAN, v[x][7] = 2, v[x][12] = 1, v[x][13] = 1, v[x][15] = NAN, v[x][11] = 3;
	ir_interp(g, 0, v);
	double want_am[4] = {0, 3, 12, 15};
	for (int i = 0; i < 4; i++) {
		CHECK(v[am][i] == want_am[i], "argmax of window %d: got %g, want %g", i, v[am][i], want_am[i]);
		for (int e = 0; e < 16; e++) /* the tiled gradient routes dy by the same rule */
			if ((e / 8) * 2 + (e % 4) / 2 == i)
				CHECK(v[tie][e] == (e == want_am[i] ? v[t][i] : 0), "tiled gradient at %d", e);
	}
	CHECK(isnan(v[mp][0]) && isnan(v[mp][1]) && v[mp][2] == 1 && isnan(v[mp][3]));
	v[x][1] = NAN; /* two NaNs in window 0: the later one */
	ir_interp(g, 0, v);
	CHECK(v[am][0] == 1, "argmax of window 0 with NaN at 0 and 1: got %g", v[am][0]);
	values_free(g, v);
	ir_graph_free(g);
}

/* Random pooling with overlapping windows against loops here; avg gradient by adjointness, max
 * gradient by routing each dy to the window's argmax. */
/* Element (b, c, i, j) of a [B, C, rows, cols] tensor in a layout. */
static int at_layout(int layout, int b, int c, int i, int j, int nc, int rows, int cols)
{
	return layout == LAYOUT_NHWC ? ((b * rows + i) * cols + j) * nc + c : ((b * nc + c) * rows + i) * cols + j;
}

static void test_ref_pool_random(int layout)
{
	enum { B = 2, C = 3, H = 7, W = 6, KH = 3, KW = 2, SH = 2, SW = 1, PH = 1, PW = 1 };
	const int OH = (H + 2 * PH - KH) / SH + 1, OW = (W + 2 * PW - KW) / SW + 1;
	double mat[IR_MAX_ATTRS] = {KH, KW, SH, SW, PH, PW, 0, layout}, aat[IR_MAX_ATTRS] = {KH, KW, SH, SW, PH, PW, 0, 0, layout};
	bool nhwc = layout == LAYOUT_NHWC;
	Graph *g = ir_graph_new("t");
	int x = leaf(g, nhwc ? S(4, B, H, W, C) : S(4, B, C, H, W), DT_F32);
	int dy = leaf(g, nhwc ? S(4, B, OH, OW, C) : S(4, B, C, OH, OW), DT_F32);
	int mp = tu_add(g, OP_max_pool2d, &x, mat), ap = tu_add(g, OP_avg_pool2d, &x, aat);
	int mg = ir_max_pool2d_backward(g, x, mat, dy), ag = tu_add(g, OP_avg_pool2d_grad, (int[]){dy, x}, aat);
	double **v = values_new(g);
	ir_interp(g, 0, v);
	double *dx = calloc(B * C * H * W, sizeof *dx), ydy = 0, xdx = 0;
	for (int p = 0; p < B * C; p++)
	for (int oh = 0; oh < OH; oh++)
	for (int ow = 0; ow < OW; ow++) {
		double max = -INFINITY, sum = 0;
		int arg = -1, cnt = 0, o = at_layout(layout, p / C, p % C, oh, ow, C, OH, OW);
		for (int kh = 0; kh < KH; kh++)
		for (int kw = 0; kw < KW; kw++) {
			int ih = oh * SH - PH + kh, iw = ow * SW - PW + kw;
			if (ih < 0 || ih >= H || iw < 0 || iw >= W)
				continue;
			int i = at_layout(layout, p / C, p % C, ih, iw, C, H, W);
			if (v[x][i] > max)
				max = v[x][i], arg = i;
			sum += v[x][i], cnt++;
		}
		CHECK(v[mp][o] == max);
		CHECK_NEAR(v[ap][o], sum / cnt, 1e-15);
		dx[arg] += v[dy][o];
		ydy += v[ap][o] * v[dy][o];
	}
	for (int i = 0; i < B * C * H * W; i++) {
		CHECK_NEAR(v[mg][i], dx[i], 1e-15);
		xdx += v[x][i] * v[ag][i];
	}
	CHECK_NEAR(xdx, ydy, 1e-13);
	/* the forwards, the argmax and the avg gradient scan windows; the max gradient adds once per window */
	CHECK_NEAR(ir_flops(g, 0), 4.0 * B * C * OH * OW * KH * KW + B * C * OH * OW, 0);
	free(dx);
	values_free(g, v);
	ir_graph_free(g);
}

/* ---- dropout ---- */

static void test_dropout(void)
{
	enum { N = 20000 };
	const double p = 0.3;
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(1, N), DT_F32), rng = ir_leaf(g, OP_runtime, "rng", S(1, 3), DT_I32, NULL);
	int d[4], d0 = tu_add(g, OP_dropout, (int[]){x, rng}, A(0, 5));
	for (int i = 0; i < 4; i++)
		d[i] = tu_add(g, OP_dropout, (int[]){x, rng}, A(p, i < 3 ? 7 : 8));
	double **v = values_new(g);
	fill(v[x], N, 0.5, 1.5);
	v[rng][0] = (int)tu_uniform(-1e9, 1e9), v[rng][1] = (int)tu_uniform(0, 1e6);
	ir_interp(g, 0, v);
	int kept = 0, diff = 0;
	for (int i = 0; i < N; i++) {
		double y = v[d[0]][i];
		CHECK(y == 0 || y == v[x][i] / (1 - p));
		CHECK(v[d0][i] == v[x][i]); /* p = 0: identity */
		CHECK(v[d[1]][i] == y);     /* same seed, step and stream: the same mask */
		kept += y != 0;
		diff += (v[d[3]][i] != 0) != (y != 0);
	}
	/* binomial: sd = sqrt(N p (1-p)) ~ 65; allow 5 sd */
	CHECK(fabs(kept - N * (1 - p)) < 5 * sqrt(N * p * (1 - p)));
	CHECK(diff > N / 4); /* another stream: independent masks differ in 2 p (1-p) = 42% */
	double y0[N];
	memcpy(y0, v[d[0]], sizeof y0);
	for (int k = 0; k < 2; k++) { /* another seed, then also another step */
		v[rng][k] += 1;
		ir_interp(g, 0, v);
		diff = 0;
		for (int i = 0; i < N; i++)
			diff += (v[d[2]][i] != 0) != (y0[i] != 0);
		CHECK(diff > N / 4);
	}
	values_free(g, v);
	ir_graph_free(g);
}

/* A batch of R rows split into shards (ranks, micro-batches) at random rows: each shard, told its
 * first row in rng[2], draws exactly the rows of the whole batch's mask. */
static void test_dropout_shards(void)
{
	enum { R = 24, C = 37 };
	const double p = 0.4;
	Graph *g = ir_graph_new("t");
	int xw = leaf(g, S(2, R, C), DT_F32), rw = ir_leaf(g, OP_runtime, "rng", S(1, 3), DT_I32, NULL);
	int whole = tu_add(g, OP_dropout, (int[]){xw, rw}, A(p, 3));
	double **v = values_new(g);
	fill(v[xw], R * C, 0.5, 1.5);
	int32_t seed = (int32_t)tu_uniform(-1e9, 1e9), step = (int32_t)tu_uniform(0, 1e6);
	v[rw][0] = seed, v[rw][1] = step, v[rw][2] = 0;
	ir_interp(g, 0, v);
	for (int first = 0; first < R;) {
		int rows = 1 + (int)tu_uniform(0, R - first);
		rows = rows > R - first ? R - first : rows;
		Graph *h = ir_graph_new("shard");
		int xs = leaf(h, S(2, rows, C), DT_F32), rs = ir_leaf(h, OP_runtime, "rng", S(1, 3), DT_I32, NULL);
		int part = tu_add(h, OP_dropout, (int[]){xs, rs}, A(p, 3));
		double **u = values_new(h);
		memcpy(u[xs], v[xw] + first * C, (size_t)(rows * C) * sizeof **u);
		u[rs][0] = seed, u[rs][1] = step, u[rs][2] = first;
		ir_interp(h, 0, u);
		int bad = 0;
		for (int i = 0; i < rows * C; i++)
			bad += u[part][i] != v[whole][first * C + i];
		CHECK(bad == 0, "rows %d..%d: %d elements differ from the whole batch's mask", first, first + rows, bad);
		values_free(h, u);
		ir_graph_free(h);
		first += rows;
	}
	values_free(g, v);
	ir_graph_free(g);
}

/* ---- registry, flops, interpreter ---- */

static void test_registry(void)
{
	for (int o = 0; o < OP_COUNT; o++) {
		CHECK(ir_op_lookup(ir_ops[o].name) == o);
		if (ir_is_leaf(o))
			continue;
		CHECK(ir_ops[o].shape && ir_ops[o].ref && ir_ops[o].flops && ir_ops[o].nin > 0);
	}
	CHECK(ir_ops[OP_const].ref != NULL);
	CHECK(ir_attr_index(OP_conv2d_grad_input, "in_w") == 7);
	CHECK(ir_ops[OP_softmax_grad].grad == NULL && ir_ops[OP_matmul].grad != NULL);
}

static void test_flops_and_programs(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(2, 6, 10), DT_F32), l = ir_leaf(g, OP_input, "l", S(1, 6), DT_I32, NULL);
	int e = tu_add(g, OP_exp, &x, NULL), sm = tu_add(g, OP_softmax, &e, A(1));
	int s = tu_add(g, OP_sum, &sm, A(1, 0)), ce = tu_add(g, OP_cross_entropy, (int[]){e, l}, A(0));
	int cp = tu_add(g, OP_copy, &x, NULL);
	CHECK(ir_ops[OP_exp].flops(g, &g->node[e]) == 60);
	CHECK(ir_ops[OP_softmax].flops(g, &g->node[sm]) == 300);
	CHECK(ir_ops[OP_sum].flops(g, &g->node[s]) == 60);
	CHECK(ir_ops[OP_cross_entropy].flops(g, &g->node[ce]) == 60);
	CHECK(ir_ops[OP_copy].flops(g, &g->node[cp]) == 0);
	g->node[e].programs = PROG_TRAIN | PROG_EVAL;
	g->node[sm].programs = PROG_EVAL;
	double **v = values_new(g);
	double before = v[sm][0];
	ir_interp(g, PROG_TRAIN, v);
	CHECK_NEAR(v[e][0], exp(v[x][0]), 1e-15);
	CHECK(v[sm][0] == before); /* not in the train program */
	ir_interp(g, PROG_EVAL, v);
	CHECK(v[sm][0] != before);
	values_free(g, v);
	ir_graph_free(g);
}

int main(void)
{
	tu_start("test_ir_ops");
	test_registry();
	test_shapes_elemwise();
	test_shapes_injective_reduce();
	test_shapes_nn();
	test_ref_elemwise();
	test_ref_sigmoid_tanh();
	test_ref_silu();
	test_ref_maximum_minimum();
	test_ref_abs_sign_pow();
	test_ref_upsample();
	test_ref_leaky_relu();
	test_ref_gelu();
	test_ref_injective_reduce();
	test_ref_softmax_losses();
	test_ref_conv();
	test_ref_matmul();
	test_ref_pool_by_hand();
	test_ref_pool_random(LAYOUT_NCHW);
	test_ref_pool_random(LAYOUT_NHWC);
	test_dropout();
	test_dropout_shards();
	test_flops_and_programs();
	return tu_finish("test_ir_ops");
}
