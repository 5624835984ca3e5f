/* test_ir_attrs.c: the attribute decoders of ir/ops.h (ir_conv_geom, ir_pool_geom, ir_axis, ...)
 * return each attribute under its name for every op of the family, wherever ops.def puts it (the
 * conv gradients' layout comes after their sizes, avg pooling's ceil_mode after count_include_pad).
 * Attribute values are random; the seed is printed (NETC_TEST_SEED=n replays a run). */
#include "ir/ops.h"
#include "tests/unit/test_ir_util.h"

static int leaf(Graph *g, Shape s, DType t) { return ir_leaf(g, OP_param, NULL, s, t, NULL); }

static int64_t draw(int64_t lo, int64_t hi) { return lo + (int64_t)tu_below((uint64_t)(hi - lo + 1)); }

static void expect_conv(const Graph *g, int id, const int64_t a[6], int layout)
{
	ConvGeom c = ir_conv_geom(&g->node[id]);
	const char *op = ir_ops[g->node[id].op].name;
	CHECK(c.sh == a[0] && c.sw == a[1] && c.ph == a[2] && c.pw == a[3] && c.dh == a[4] && c.dw == a[5],
	      "%s: got stride %lldx%lld pad %lldx%lld dil %lldx%lld", op, (long long)c.sh, (long long)c.sw,
	      (long long)c.ph, (long long)c.pw, (long long)c.dh, (long long)c.dw);
	CHECK(c.layout == layout, "%s: layout %d, want %d", op, c.layout, layout);
}

/* conv2d and both gradients, in either layout, with a random window. */
static void test_conv(int layout)
{
	Graph *g = ir_graph_new("t");
	int64_t a[6] = {draw(1, 3), draw(1, 3), draw(0, 2), draw(0, 2), draw(1, 2), draw(1, 2)};
	bool nhwc = layout == LAYOUT_NHWC;
	int64_t h = 11, w = 13, kh = 3, kw = 2;
	int x = leaf(g, nhwc ? S(4, 2, h, w, 3) : S(4, 2, 3, h, w), DT_F32);
	int k = leaf(g, nhwc ? S(4, 4, kh, kw, 3) : S(4, 4, 3, kh, kw), DT_F32);
	double at[IR_MAX_ATTRS] = {0};
	for (int i = 0; i < 6; i++)
		at[i] = (double)a[i];
	at[6] = layout;
	int y = tu_add(g, OP_conv2d, (int[]){x, k}, at);
	expect_conv(g, y, a, layout);
	at[6] = (double)h, at[7] = (double)w, at[8] = layout;
	expect_conv(g, tu_add(g, OP_conv2d_grad_input, (int[]){y, k}, at), a, layout);
	at[6] = (double)kh, at[7] = (double)kw;
	expect_conv(g, tu_add(g, OP_conv2d_grad_weight, (int[]){y, x}, at), a, layout);
	ir_graph_free(g);
}

static void expect_pool(const Graph *g, int id, const int64_t a[6], bool include_pad, bool ceil)
{
	PoolGeom p = ir_pool_geom(&g->node[id]);
	const char *op = ir_ops[g->node[id].op].name;
	CHECK(p.kh == a[0] && p.kw == a[1] && p.sh == a[2] && p.sw == a[3] && p.ph == a[4] && p.pw == a[5],
	      "%s: got window %lldx%lld stride %lldx%lld pad %lldx%lld", op, (long long)p.kh, (long long)p.kw,
	      (long long)p.sh, (long long)p.sw, (long long)p.ph, (long long)p.pw);
	CHECK(p.count_include_pad == include_pad && p.ceil_mode == ceil, "%s: count_include_pad %d ceil_mode %d", op,
	      p.count_include_pad, p.ceil_mode);
}

/* Every combination of the flags, on the forward ops and their gradients. */
static void test_pool(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(4, 2, 3, 12, 10), DT_F32);
	for (int flags = 0; flags < 4; flags++) {
		bool inc = flags & 1, ceil = flags & 2;
		int64_t a[6] = {draw(2, 4), draw(2, 4), draw(1, 3), draw(1, 3), 0, 1};
		double mx[IR_MAX_ATTRS] = {0}, av[IR_MAX_ATTRS] = {0};
		for (int i = 0; i < 6; i++)
			mx[i] = av[i] = (double)a[i];
		mx[6] = ceil;
		av[6] = inc, av[7] = ceil;
		int ym = tu_add(g, OP_max_pool2d, &x, mx), ya = tu_add(g, OP_avg_pool2d, &x, av);
		expect_pool(g, ym, a, false, ceil);
		expect_pool(g, ya, a, inc, ceil);
		int dxm = ir_max_pool2d_backward(g, x, mx, ym);
		expect_pool(g, g->node[dxm].in[1], a, false, ceil); /* the argmax */
		expect_pool(g, dxm, a, false, ceil);
		expect_pool(g, tu_add(g, OP_avg_pool2d_grad, (int[]){ya, x}, av), a, inc, ceil);
	}
	ir_graph_free(g);
}

/* The single attributes: axes (normalized by the shape functions), flags, and parameters. */
static void test_small(void)
{
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(4, 2, 3, 4, 5), DT_F32), b = leaf(g, S(1, 5), DT_F32), m = leaf(g, S(2, 6, 3), DT_F32);
	int labels = ir_leaf(g, OP_input, "labels", S(1, 6), DT_I32, NULL);
	int rng = ir_leaf(g, OP_runtime, "rng", S(1, 3), DT_I32, A(RUNTIME_RNG));

	CHECK(ir_axis(&g->node[tu_add(g, OP_softmax, &x, A(-1))]) == 3);
	CHECK(ir_axis(&g->node[tu_add(g, OP_log_softmax, &x, A(2))]) == 2);
	CHECK(ir_axis(&g->node[tu_add(g, OP_bias_add, (int[]){x, b}, A(-1))]) == 3);
	CHECK(ir_axis(&g->node[tu_add(g, OP_concat3, (int[]){x, x, x}, A(-3))]) == 1);
	int s = tu_add(g, OP_slice, &x, A(-2, 1, 2));
	SliceRange r = ir_slice_range(&g->node[s]);
	CHECK(r.axis == 2 && r.start == 1 && r.len == 2 && ir_axis(&g->node[s]) == 2);

	unsigned mask = 1 + (unsigned)tu_below(15);
	CHECK(ir_reduce_axes(&g->node[tu_add(g, OP_sum, &x, A(mask, 1))]) == mask);
	CHECK(ir_reduce_axes(&g->node[tu_add(g, OP_mean, &x, A(0x6, 0))]) == 0x6);
	CHECK(ir_loss_is_mean(&g->node[tu_add(g, OP_nll_loss, (int[]){m, labels}, A(0))]));
	CHECK(!ir_loss_is_mean(&g->node[tu_add(g, OP_cross_entropy, (int[]){m, labels}, A(1))]));

	for (int t = 0; t < 4; t++) {
		int a = leaf(g, t & 1 ? S(2, 7, 6) : S(2, 6, 7), DT_F32), c = leaf(g, t & 2 ? S(2, 5, 7) : S(2, 7, 5), DT_F32);
		MatmulFlags f = ir_matmul_flags(&g->node[tu_add(g, OP_matmul, (int[]){a, c}, A(t & 1, t >> 1))]);
		CHECK(f.ta == (t & 1) && f.tb == (t >> 1), "matmul flags %d: got %d %d", t, f.ta, f.tb);
	}

	double bias = tu_uniform(0.5, 2), alpha = tu_uniform(1e-5, 1e-3), beta = tu_uniform(0.5, 1);
	LrnParams l = ir_lrn_params(&g->node[tu_add(g, OP_lrn, &x, A(2, bias, alpha, beta))]);
	CHECK(l.depth_radius == 2 && l.bias == bias && l.alpha == alpha && l.beta == beta);

	int perm[IR_MAX_DIMS];
	int rank = ir_transpose_perm(g, &g->node[tu_add(g, OP_transpose, &x, A(0, 2, 3, 1))], perm);
	CHECK(rank == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1);

	double p = tu_uniform(0.1, 0.9);
	uint32_t stream = (uint32_t)tu_below(1000) + 1;
	DropoutParams d = ir_dropout_params(&g->node[tu_add(g, OP_dropout, (int[]){x, rng}, A(p, stream))]);
	CHECK(d.p == p && d.stream == stream);

	double v = tu_uniform(-3, 3);
	CHECK(ir_const_value(&g->node[ir_const(g, v)]) == v);
	double bound = tu_uniform(0.01, 1);
	int w = ir_leaf(g, OP_param, "w", S(1, 3), DT_F32, A(INIT_UNIFORM, bound));
	CHECK(ir_leaf_init(&g->node[w]) == INIT_UNIFORM && ir_param_bound(&g->node[w]) == bound);
	CHECK(ir_leaf_init(&g->node[ir_leaf(g, OP_state, "m", S(1, 3), DT_F32, A(INIT_ONE))]) == INIT_ONE);
	CHECK(ir_runtime_slot(&g->node[rng]) == RUNTIME_RNG);
	CHECK(ir_runtime_slot(&g->node[ir_leaf(g, OP_runtime, "lr", S(0), DT_F32, A(RUNTIME_LR))]) == RUNTIME_LR);
	ir_graph_free(g);
}

int main(void)
{
	tu_start("test_ir_attrs");
	for (int i = 0; i < 8; i++) {
		test_conv(LAYOUT_NCHW);
		test_conv(LAYOUT_NHWC);
		test_pool();
	}
	test_small();
	return tu_finish("test_ir_attrs");
}
