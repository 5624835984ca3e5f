/* test_cg_winograd: Winograd convolution F(2x2,3x3), F(4x4,3x3), F(2x2,5x5) and F(3x3,5x5) (ir/ops_winograd.c,
 * codegen/lower_winograd.c, passes/conv_algo.c). First, in float64, the steps the pass puts in
 * place of a conv2d, conv2d_grad_input or conv2d_grad_weight give the direct convolution's values
 * (to rounding of float64). Then every kernel of the rewritten graph, on the host template and the GPU templates
 * emulated, against the float64 interpreter on random inputs: padding 0, 1 and 2 (the input
 * gradient of padding 0), odd and even planes, tiles crossing the border, batch > 1, channel
 * counts that are multiples of nothing, planes wide enough that the GPU template stages a row of
 * tiles' windows in shared memory, within each tile's tolerance (ir/winograd.h). Last, that
 * tolerance against measured error: N(0,1) inputs, 256 channels, and a weight gradient summed over
 * 16 images' tiles.
 * Half precision (f16 and bf16 operands, as --precision fp16|bf16 makes them): the pass takes
 * F(2x2) whatever tile is asked, the transformed operands keep the half type and the products
 * are f32; the float64 chain, rounded where the kernels round, stays within WINO_TOL_HALF_ULPS of
 * the direct convolution (F(4x4) would not: 6 ulps and more), and every kernel, on the host and
 * on the emulated GPU template with sm_90's half matrix products, matches the interpreter. */
#include "codegen/gemm_gpu.h"
#include "ir/ops.h"
#include "ir/winograd.h"
#include "tests/unit/cg_fused_harness.h"

typedef enum { FORWARD, GRAD_INPUT, GRAD_WEIGHT } Kind;

typedef struct {
	const char *what;
	int64_t n, c, k, h, w, pad;
	int r;     /* filter r x r */
	int s;     /* stride: over 1, space-to-depth makes blocks of s x s and a ceil(r / s) kernel */
	Kind kind; /* GRAD_INPUT: dy [n, k, oh, ow] -> dx [n, c, h, w]; GRAD_WEIGHT: (dy, x) -> dw */
} Case;

static const Case cases[] = {
	{"pad 1, odd plane", 2, 3, 5, 7, 9, 1, 3, 1, FORWARD},
	{"pad 0, even plane", 3, 5, 4, 8, 6, 0, 3, 1, FORWARD},
	{"pad 1, 1x1 tiles", 1, 7, 3, 3, 3, 1, 3, 1, FORWARD},
	{"pad 2", 2, 2, 3, 5, 4, 2, 3, 1, FORWARD},
	{"pad 1, wide channels", 2, 37, 19, 10, 11, 1, 3, 1, FORWARD},
	{"grad_input pad 1", 2, 3, 5, 7, 9, 1, 3, 1, GRAD_INPUT},
	{"grad_input pad 0", 3, 5, 4, 8, 7, 0, 3, 1, GRAD_INPUT},
	{"grad_input pad 2", 2, 6, 3, 5, 6, 2, 3, 1, GRAD_INPUT},
	{"grad_weight pad 1", 2, 3, 5, 7, 9, 1, 3, 1, GRAD_WEIGHT},
	{"grad_weight pad 0", 3, 5, 4, 8, 6, 0, 3, 1, GRAD_WEIGHT},
	{"grad_weight pad 2, 1x1 tiles", 2, 4, 3, 3, 3, 2, 3, 1, GRAD_WEIGHT},
	{"grad_weight pad 1, wide channels", 3, 37, 19, 10, 11, 1, 3, 1, GRAD_WEIGHT},
	{"5x5 pad 2, odd plane", 2, 3, 5, 7, 9, 2, 5, 1, FORWARD},
	{"5x5 pad 0, even plane", 3, 5, 4, 8, 10, 0, 5, 1, FORWARD},
	{"5x5 pad 1, 1x1 tiles", 1, 6, 3, 3, 4, 1, 5, 1, FORWARD},
	{"5x5 pad 4, wide channels", 2, 37, 19, 6, 7, 4, 5, 1, FORWARD},
	{"5x5 grad_input pad 2", 2, 3, 5, 7, 9, 2, 5, 1, GRAD_INPUT},
	{"5x5 grad_input pad 0", 3, 5, 4, 8, 7, 0, 5, 1, GRAD_INPUT},
	{"5x5 grad_input pad 3", 2, 6, 3, 5, 6, 3, 5, 1, GRAD_INPUT},
	{"5x5 grad_weight pad 2", 2, 3, 5, 7, 9, 2, 5, 1, GRAD_WEIGHT},
	{"5x5 grad_weight pad 0", 3, 5, 4, 8, 6, 0, 5, 1, GRAD_WEIGHT},
	{"5x5 grad_weight pad 1, wide channels", 3, 37, 19, 10, 11, 1, 5, 1, GRAD_WEIGHT},
	/* rows of 8 tiles and more: the GPU template stages their windows, several work-groups */
	{"pad 1, wide plane", 2, 5, 4, 20, 33, 1, 3, 1, FORWARD},
	{"grad_input pad 1, wide plane", 2, 4, 5, 20, 33, 1, 3, 1, GRAD_INPUT},
	{"grad_weight pad 1, wide plane", 2, 4, 5, 20, 33, 1, 3, 1, GRAD_WEIGHT},
	{"5x5 pad 2, wide plane", 2, 5, 4, 19, 34, 2, 5, 1, FORWARD},
	{"5x5 grad_weight pad 2, wide plane", 2, 4, 5, 19, 34, 2, 5, 1, GRAD_WEIGHT},
	{"11x11 stride 4 pad 2", 2, 3, 5, 27, 23, 2, 11, 4, FORWARD},
	{"11x11 stride 4 pad 2 grad_input", 2, 3, 5, 27, 23, 2, 11, 4, GRAD_INPUT},
	{"11x11 stride 4 pad 2 grad_weight", 2, 3, 5, 27, 23, 2, 11, 4, GRAD_WEIGHT},
	{"5x5 stride 2 pad 1 grad_input", 2, 3, 4, 13, 12, 1, 5, 2, GRAD_INPUT},
	{"6x6 stride 2 grad_weight", 2, 4, 3, 12, 11, 0, 6, 2, GRAD_WEIGHT},
	{"9x9 stride 2 pad 1, 5x5 blocks", 2, 2, 3, 17, 16, 1, 9, 2, FORWARD},
	{"9x9 stride 2 pad 1 grad_input, 5x5 blocks", 2, 2, 3, 17, 16, 1, 9, 2, GRAD_INPUT},
	{"9x9 stride 2 pad 1 grad_weight, 5x5 blocks", 2, 2, 3, 17, 16, 1, 9, 2, GRAD_WEIGHT},
	{"11x11 stride 4 pad 4, a block of padding", 2, 3, 5, 28, 24, 4, 11, 4, FORWARD},
	{"11x11 stride 4 pad 4 grad_input, a block of padding", 2, 3, 5, 28, 24, 4, 11, 4, GRAD_INPUT},
	{"11x11 stride 4 pad 5 grad_weight, a block of padding", 2, 3, 5, 26, 22, 5, 11, 4, GRAD_WEIGHT},
};

/* Convolutions the pass leaves direct: a half 5x5 one (or one whose blocks have a 5x5 kernel):
 * F(2x2,5x5)'s transforms are F(4x4,3x3)'s, which half does not take; one whose padding of a
 * whole block would hide input rows (30 rows, 28 in the blocks); 3x3 stride 2 (2x2 blocks). */
static const struct {
	Case c;
	DType t;
} stay_direct[] = {
	{{"5x5 bf16", 2, 3, 5, 7, 9, 2, 5, 1, FORWARD}, DT_BF16},
	{{"9x9 stride 2 f16, 5x5 blocks", 2, 2, 3, 17, 16, 1, 9, 2, GRAD_INPUT}, DT_F16},
	{{"11x11 stride 4 pad 4, rows past the blocks", 2, 3, 5, 30, 24, 4, 11, 4, FORWARD}, DT_F32},
	{{"3x3 stride 2", 2, 3, 5, 9, 9, 1, 3, 2, GRAD_WEIGHT}, DT_F32},
};

/* x (or dy) and w params of type t and the convolution; returns its id */
static int build(CgHarness *h, const Case *c, DType t)
{
	char xd[64], wd[64];
	int64_t oh = (c->h + 2 * c->pad - c->r) / c->s + 1, ow = (c->w + 2 * c->pad - c->r) / c->s + 1;
	snprintf(wd, sizeof wd, "%lld,%lld,%d,%d", (long long)c->k, (long long)c->c, c->r, c->r);
	if (c->kind == GRAD_WEIGHT) {
		char dyd[64];
		snprintf(dyd, sizeof dyd, "%lld,%lld,%lld,%lld", (long long)c->n, (long long)c->k, (long long)oh, (long long)ow);
		snprintf(xd, sizeof xd, "%lld,%lld,%lld,%lld", (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w);
		int dy = ch_param(h, t, dyd), x = ch_param(h, t, xd);
		double a[IR_MAX_ATTRS] = {c->s, c->s, (double)c->pad, (double)c->pad, 1, 1, c->r, c->r, LAYOUT_NCHW};
		return ch_op(h, OP_conv2d_grad_weight, a, dy, x);
	}
	if (c->kind == FORWARD) {
		snprintf(xd, sizeof xd, "%lld,%lld,%lld,%lld", (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w);
		int x = ch_param(h, t, xd), w = ch_param(h, t, wd);
		double a[IR_MAX_ATTRS] = {c->s, c->s, (double)c->pad, (double)c->pad, 1, 1, LAYOUT_NCHW};
		return ch_op(h, OP_conv2d, a, x, w);
	}
	snprintf(xd, sizeof xd, "%lld,%lld,%lld,%lld", (long long)c->n, (long long)c->k, (long long)oh, (long long)ow);
	int dy = ch_param(h, t, xd), w = ch_param(h, t, wd);
	double a[IR_MAX_ATTRS] = {c->s, c->s, (double)c->pad, (double)c->pad, 1, 1, (double)c->h, (double)c->w, LAYOUT_NCHW};
	return ch_op(h, OP_conv2d_grad_input, a, dy, w);
}

/* The tile of the rewritten graph's inverse transform. */
static const WinogradTile *last_tile(const Graph *g)
{
	for (int i = g->nnodes - 1; i >= 0; i--)
		if (g->node[i].op == OP_winograd_output || g->node[i].op == OP_winograd_weight_grad)
			return ir_winograd_tile(&g->node[i]);
	printf("FAIL: the graph has no Winograd step\n");
	exit(1);
}

/* The kernel Winograd computes: r, or over blocks ceil(r / s). */
static int blocked_r(const Case *c) { return (c->r + c->s - 1) / c->s; }

static void mark_programs(Graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (!ir_is_leaf(g->node[i].op))
			g->node[i].programs = PROG_TRAIN;
}

/* Random leaves into values[] (n nodes). */
static void fill(const Graph *g, double **values)
{
	for (int i = 0; i < g->nnodes; i++) {
		int64_t m = shape_numel(&g->node[i].shape);
		values[i] = tu_calloc((size_t)m, sizeof(double));
		if (ir_is_leaf(g->node[i].op))
			for (int64_t j = 0; j < m; j++)
				values[i][j] = (ch_next() & 1 ? 1 : -1) * ch_uniform(0.1, 1);
	}
}

/* The rewritten graph's output in float64 equals the direct convolution's: to float64's
 * rounding for f32 operands; for half ones, whose transformed operands and result the
 * interpreter rounds as the kernels store them, within WINO_TOL_HALF_ULPS of the half type. The
 * half types take F(2x2) whatever tile asks. Returns the error relative to max |direct|. */
static double check_float64(const Case *c, int tile, DType t)
{
	CgHarness *h = ch_new(c->what);
	int conv = build(h, c, t);
	mark_programs(h->g);
	int leaves = conv, n0 = h->g->nnodes;
	Shape want = h->g->node[conv].shape;
	double **direct = tu_calloc((size_t)n0, sizeof *direct);
	fill(h->g, direct);
	ir_interp(h->g, PROG_TRAIN, direct);
	conv_algo_winograd(h->g, tile);
	Graph *g = h->g;
	int out = g->nnodes - 1;
	/* stride 1: three steps more; strided: the blocks of the input and weights (one each for the
	 * forward), Winograd's steps and depth_to_space back */
	int more = c->s == 1 ? 3 : 5;
	CHECK(g->nnodes == n0 + more, "%s F(%d): %d nodes after the rewrite", c->what, tile, g->nnodes);
	OpId last = c->s > 1 && c->kind != FORWARD ? OP_depth_to_space
		    : c->kind == GRAD_WEIGHT      ? OP_winograd_weight_grad
						  : OP_winograd_output;
	CHECK(g->node[out].op == last && shape_eq(&g->node[out].shape, &want) && g->node[out].dtype == t,
	      "%s: the output is no conv's", c->what);
	const WinogradTile *wt = last_tile(g);
	CHECK(wt->r == blocked_r(c) && wt->m == (t == DT_F32 ? tile : 2), "%s: %s for a %dx%d convolution of stride %d",
	      c->what, wt->algo, c->r, c->r, c->s);
	if (t != DT_F32 && c->s == 1) {
		CHECK(ir_winograd_attrs(&g->node[out]).m == 2, "%s %s: F(%d) for a half convolution", c->what,
		      dtype_name(t), ir_winograd_attrs(&g->node[out]).m);
		CHECK(g->node[out - 1].dtype == DT_F32 && g->node[out - 2].dtype == t,
		      "%s %s: the products are %s, the transforms %s", c->what, dtype_name(t),
		      dtype_name(g->node[out - 1].dtype), dtype_name(g->node[out - 2].dtype));
	}
	double **wino = tu_calloc((size_t)g->nnodes, sizeof *wino);
	for (int i = 0; i < g->nnodes; i++)
		wino[i] = tu_calloc((size_t)shape_numel(&g->node[i].shape), sizeof(double));
	for (int i = 0; i < leaves; i++)
		memcpy(wino[i], direct[i], (size_t)shape_numel(&g->node[i].shape) * sizeof(double));
	ir_interp(g, PROG_TRAIN, wino);
	double err = 0, top = 0;
	for (int64_t j = 0; j < shape_numel(&g->node[out].shape); j++) {
		err = fmax(err, fabs(wino[out][j] - direct[conv][j]));
		top = fmax(top, fabs(direct[conv][j]));
	}
	double tol = t == DT_F32 ? 1e-12 : WINO_TOL_HALF_ULPS * wino_half_ulp(t == DT_BF16);
	CHECK(err <= tol * top, "%s %s F(%d): float64 Winograd differs from the direct convolution by %.3g (max %.3g)",
	      c->what, dtype_name(t), tile, err, top);
	for (int i = 0; i < n0; i++)
		free(direct[i]);
	for (int i = 0; i < g->nnodes; i++)
		free(wino[i]);
	free(direct);
	free(wino);
	ch_free(h);
	return err / top;
}

/* Every kernel of the rewritten graph against the float64 interpreter. Half operands: under their
 * --precision, and emulated with the GPU template's half matrix products. */
static void check_kernels(const Case *c, int tile, bool emulate, DType t)
{
	char name[120];
	snprintf(name, sizeof name, "%s %s F(%dx%d) %s", c->what, dtype_name(t), tile, tile,
		 emulate ? "gpu-emulated" : "host");
	CgHarness *h = ch_new(name);
	build(h, c, t);
	mark_programs(h->g);
	conv_algo_winograd(h->g, tile);
	h->g->train.precision = t == DT_BF16 ? PREC_BF16 : t == DT_F16 ? PREC_FP16 : PREC_FP32;
	/* half: each node within its type's tolerance (the products are f32 of rounded operands) */
	if (t == DT_F32)
		h->tol = last_tile(h->g)->tol;
	cg_gpu_emulation_mma(emulate && t != DT_F32 ? "sm_90" : NULL, 0, lane_models, LANE_NMODELS);
	tu_failures += cf_run(h, emulate);
	cg_gpu_emulation_mma(NULL, 0, NULL, 0);
	ch_free(h);
}

/* N(0,1) values for leaf id (Box-Muller). */
static void set_normal(CgHarness *h, int id)
{
	int64_t m = shape_numel(&h->g->node[id].shape);
	double *v = tu_calloc((size_t)m, sizeof *v);
	for (int64_t i = 0; i < m; i++)
		v[i] = sqrt(-2 * log(ch_uniform(1e-12, 1))) * cos(2 * M_PI * ch_uniform(0, 1));
	ch_set(h, id, v);
	free(v);
}

/* The documented tolerance holds for the inputs it was measured on: N(0,1), 256 channels. */
static void check_normal(const Case *wide, int tile)
{
	char name[120];
	snprintf(name, sizeof name, "%s F(%dx%d)", wide->what, tile, tile);
	CgHarness *h = ch_new(name);
	build(h, wide, DT_F32);
	set_normal(h, 0);
	set_normal(h, 1);
	mark_programs(h->g);
	conv_algo_winograd(h->g, tile);
	h->tol = last_tile(h->g)->tol;
	tu_failures += cf_run(h, false);
	ch_free(h);
}

/* The error of a half convolution (N(0,1) operands rounded to t, 256 channels) by Winograd with
 * this tile against the direct one, in units of t's last place: the float64 chain the pass makes,
 * rounded where the kernels round, with its tile attribute set to `tile` (what the pass would make
 * if it let half take F(4x4)). */
static double half_error_ulps(DType t, int tile)
{
	const Case c = {"N(0,1) half, 256 channels", 1, 256, 8, 12, 12, 1, 3, 1, FORWARD};
	CgHarness *h = ch_new(c.what);
	int conv = build(h, &c, t);
	mark_programs(h->g);
	conv_algo_winograd(h->g, 2);
	Graph *g = h->g;
	char e[256];
	for (int i = conv; i < g->nnodes; i++) {
		int a = ir_attr_index(g->node[i].op, "tile");
		if (a >= 0)
			g->node[i].attr[a] = tile;
		if (!ir_ops[g->node[i].op].shape(&g->node[i], g, e, sizeof e))
			CHECK(0, "%s F(%d): %s", c.what, tile, e);
	}
	double **w = tu_calloc((size_t)g->nnodes, sizeof *w);
	fill(g, w);
	for (int i = 0; i < conv; i++)
		for (int64_t j = 0; j < shape_numel(&g->node[i].shape); j++)
			w[i][j] = ir_round_to(sqrt(-2 * log(ch_uniform(1e-12, 1))) * cos(2 * M_PI * ch_uniform(0, 1)), t);
	ir_interp(g, PROG_TRAIN, w);
	/* the direct convolution of the same operands in float64 */
	const double *x = w[0], *k = w[1];
	int out = g->nnodes - 1;
	double err = 0, top = 0;
	for (int64_t o = 0; o < c.k; o++)
		for (int64_t y = 0; y < c.h; y++)
			for (int64_t xx = 0; xx < c.w; xx++) {
				double s = 0;
				for (int64_t ci = 0; ci < c.c; ci++)
					for (int i = 0; i < 3; i++)
						for (int j = 0; j < 3; j++) {
							int64_t r = y + i - 1, q = xx + j - 1;
							if (r >= 0 && r < c.h && q >= 0 && q < c.w)
								s += x[(ci * c.h + r) * c.w + q] * k[((o * c.c + ci) * 3 + i) * 3 + j];
						}
				err = fmax(err, fabs(w[out][(o * c.h + y) * c.w + xx] - s));
				top = fmax(top, fabs(s));
			}
	for (int i = 0; i < g->nnodes; i++)
		free(w[i]);
	free(w);
	ch_free(h);
	return err / top / wino_half_ulp(t == DT_BF16);
}

/* The half tolerance holds for F(2x2), and F(4x4) would break it: why half takes F(2x2) only. */
static void check_half_tolerance(DType t)
{
	double f2 = half_error_ulps(t, 2), f4 = half_error_ulps(t, 4);
	printf("  %s Winograd against direct, N(0,1), 256 channels: F(2x2) %.2f ulps, F(4x4) %.2f ulps\n",
	       dtype_name(t), f2, f4);
	CHECK(f2 <= WINO_TOL_HALF_ULPS, "%s: F(2x2) off by %.3g ulps", dtype_name(t), f2);
	CHECK(f4 > WINO_TOL_HALF_ULPS, "%s: F(4x4) within the half tolerance (%.3g ulps)", dtype_name(t), f4);
}

static void check_direct(const Case *c, DType t)
{
	CgHarness *h = ch_new(c->what);
	build(h, c, t);
	mark_programs(h->g);
	int n0 = h->g->nnodes;
	conv_algo_winograd(h->g, 2);
	CHECK(h->g->nnodes == n0, "%s %s: rewritten, should stay direct", c->what, dtype_name(t));
	ch_free(h);
}

int main(void)
{
	ch_start("test_cg_winograd");
	static const int tiles[] = {2, 3, 4};
	for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++)
		for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
			if (!wino_tile(tiles[t], blocked_r(&cases[i])))
				continue;
			check_float64(&cases[i], tiles[t], DT_F32);
			check_kernels(&cases[i], tiles[t], false, DT_F32);
			check_kernels(&cases[i], tiles[t], true, DT_F32);
		}
	/* the weight gradient sums over every tile of the batch: 16 images of 16x16 */
	static const Case normal[] = {{"N(0,1), 256 channels", 1, 256, 16, 12, 12, 1, 3, 1, FORWARD},
				      {"N(0,1) grad_weight, 16 images", 16, 32, 16, 16, 16, 1, 3, 1, GRAD_WEIGHT},
				      {"5x5 N(0,1), 256 channels", 1, 256, 16, 12, 12, 2, 5, 1, FORWARD},
				      {"5x5 N(0,1) grad_input, 256 channels", 1, 256, 16, 12, 12, 2, 5, 1, GRAD_INPUT},
				      {"5x5 N(0,1) grad_weight, 16 images", 16, 32, 16, 16, 16, 2, 5, 1, GRAD_WEIGHT}};
	for (size_t i = 0; i < sizeof normal / sizeof *normal; i++)
		for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++)
			if (wino_tile(tiles[t], normal[i].r))
				check_normal(&normal[i], tiles[t]);
	static const DType halves[] = {DT_BF16, DT_F16};
	for (size_t t = 0; t < sizeof halves / sizeof *halves; t++) {
		for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
			if (blocked_r(&cases[i]) == 5)
				continue;
			check_float64(&cases[i], 4, halves[t]);
			check_kernels(&cases[i], 4, false, halves[t]);
			check_kernels(&cases[i], 4, true, halves[t]);
		}
		check_half_tolerance(halves[t]);
	}
	for (size_t i = 0; i < sizeof stay_direct / sizeof *stay_direct; i++)
		check_direct(&stay_direct[i].c, stay_direct[i].t);
	return tu_finish("test_cg_winograd");
}
