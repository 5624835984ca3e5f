/* test_cg_elemwise.c: every op of cg_lower_elemwise compiled for the host against the float64
 * reference: odd shapes, broadcasting, scalars, 4-D bias_add, long rows split into chunks, f16,
 * bf16 and f64, exp/log accuracy and special values, and dropout's mask against ir/philox.h. */
#include <float.h>

#include "ir/ops.h"
#include "ir/philox.h"
#include "tests/unit/cg_harness.h"
#include "tests/unit/test_util.h"

static void run(CgHarness *h)
{
	tu_failures += ch_run(h);
	ch_free(h);
}

/* The attributes of an op in the lists below: random where the op has any, else NULL. */
static const double *attrs_of(OpId op, double attr[IR_MAX_ATTRS])
{
	if (op == OP_leaky_relu || op == OP_leaky_relu_grad) {
		attr[0] = ch_uniform(0.01, 1.5); /* negative_slope */
		return attr;
	}
	if (op == OP_gelu || op == OP_gelu_grad) {
		attr[0] = (double)(ch_next() & 1); /* approximate: none or tanh */
		return attr;
	}
	if (op == OP_pow) { /* whole (multiplied out), square root, and exp(e ln x) exponents */
		static const double exponent[] = {2, 3, -2, 0.5, 1.7, -0.5};
		attr[0] = exponent[ch_next() % 6];
		return attr;
	}
	return NULL;
}

static void unary_ops(const char *dims, DType dt)
{
	static const OpId ops[] = {OP_neg, OP_exp, OP_log, OP_sqrt, OP_relu, OP_copy, OP_sigmoid, OP_tanh,
				   OP_leaky_relu, OP_gelu, OP_silu, OP_abs, OP_sign, OP_pow};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		double attr[IR_MAX_ATTRS];
		const double *a = attrs_of(ops[i], attr);
		char name[96];
		snprintf(name, sizeof name, "%s%s [%s] %s", ir_ops[ops[i]].name, a && ops[i] == OP_pow ? " (exponent)" : "", dims,
			 dtype_name(dt));
		CgHarness *h = ch_new(name);
		int x = ch_param(h, dt, dims);
		if (ops[i] == OP_log || ops[i] == OP_sqrt)
			ch_range(h, x, 0.01, 20);
		else if (ops[i] == OP_exp)
			ch_range(h, x, -10, 10);
		else if (ops[i] == OP_sigmoid || ops[i] == OP_tanh || ops[i] == OP_silu)
			ch_range(h, x, -50, 50);
		else if (ops[i] == OP_gelu) /* below -3, 1 + erf cancels (as PyTorch's): gelu_accuracy */
			ch_range(h, x, -3, 6);
		else if (ops[i] == OP_pow && attr[0] != floor(attr[0])) /* a fractional power of x < 0 is NaN */
			ch_range(h, x, 0.1, 4);
		else if (ops[i] == OP_pow)
			ch_range(h, x, -4, 4);
		ch_op(h, ops[i], a, x);
		run(h);
	}
}

static void binary_ops(const char *da, const char *db, DType dt)
{
	static const OpId ops[] = {OP_add, OP_sub, OP_mul, OP_div, OP_relu_grad, OP_leaky_relu_grad, OP_gelu_grad,
				   OP_maximum, OP_minimum};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		char name[96];
		snprintf(name, sizeof name, "%s [%s] [%s] %s", ir_ops[ops[i]].name, da, db, dtype_name(dt));
		CgHarness *h = ch_new(name);
		int a = ch_param(h, dt, da), b = ch_param(h, dt, db);
		double attr[IR_MAX_ATTRS];
		ch_op(h, ops[i], attrs_of(ops[i], attr), a, b);
		run(h);
	}
}

/* maximum_grad and minimum_grad(dy, x, y), x and y broadcast to dy, drawn from three values so
 * that ties (dy/2), wins and losses all occur. */
static void minmax_grads(const char *ddy, const char *dx, const char *dy_other)
{
	static const OpId ops[] = {OP_maximum_grad, OP_minimum_grad};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		char name[96];
		snprintf(name, sizeof name, "%s [%s] [%s] [%s]", ir_ops[ops[i]].name, ddy, dx, dy_other);
		CgHarness *h = ch_new(name);
		int dy = ch_param(h, DT_F32, ddy), x = ch_param(h, DT_F32, dx), y = ch_param(h, DT_F32, dy_other);
		for (int k = 0; k < 2; k++) {
			int id = k ? y : x;
			int64_t m = shape_numel(&h->g->node[id].shape);
			double *v = malloc(m * sizeof *v);
			for (int64_t j = 0; j < m; j++)
				v[j] = (double[]){-1, 0.5, 2}[ch_next() % 3];
			ch_set(h, id, v);
			free(v);
		}
		ch_op(h, ops[i], NULL, dy, x, y);
		run(h);
	}
}

/* maximum and minimum propagate NaN from either side (no maxnum), and order infinities. */
static void minmax_special(void)
{
	static const double a[] = {NAN, 1, NAN, INFINITY, -INFINITY, 2, -3, 1e-40, 0.5, -INFINITY};
	static const double b[] = {1, NAN, NAN, -INFINITY, 5, 2, -7, -1e-40, INFINITY, NAN};
	static const OpId ops[] = {OP_maximum, OP_minimum};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		char name[64];
		snprintf(name, sizeof name, "%s special values", ir_ops[ops[i]].name);
		CgHarness *h = ch_new(name);
		int x = ch_param(h, DT_F32, "10"), y = ch_param(h, DT_F32, "10");
		ch_set(h, x, a);
		ch_set(h, y, b);
		int r = ch_op(h, ops[i], NULL, x, y);
		tu_failures += ch_run(h);
		CHECK(h->got[r] && isnan(h->got[r][0]) && isnan(h->got[r][1]) && isnan(h->got[r][9]), "%s: NaN from either side",
		      name);
		ch_free(h);
	}
}

/* Constants are inlined, never loaded. */
static void with_const(void)
{
	CgHarness *h = ch_new("mul by const, add const");
	int x = ch_param(h, DT_F32, "9,11");
	int y = ch_op(h, OP_mul, NULL, x, ir_const(h->g, ch_uniform(-3, 3)));
	ch_op(h, OP_add, NULL, ir_const(h->g, ch_uniform(-3, 3)), y);
	run(h);
}

static void bias_add(const char *dx, const char *db, int axis)
{
	char name[96];
	snprintf(name, sizeof name, "bias_add [%s] [%s] axis %d", dx, db, axis);
	CgHarness *h = ch_new(name);
	double attr[1] = {axis};
	ch_op(h, OP_bias_add, attr, ch_param(h, DT_F32, dx), ch_param(h, DT_F32, db));
	run(h);
}

static void shape_ops(void)
{
	CgHarness *h = ch_new("reshape, broadcast_to");
	int x = ch_param(h, DT_F32, "6,10");
	double r[7] = {3, 3, 4, 5};
	ch_op(h, OP_reshape, r, x);
	double bt[7] = {3, 2, 3, 4};
	ch_op(h, OP_broadcast_to, bt, ch_param(h, DT_F32, "3,1"));
	double bt2[7] = {2, 5, 7};
	ch_op(h, OP_broadcast_to, bt2, ch_param(h, DT_F32, "7"));
	run(h);
}

/* transposes of every rank the layers make: a matrix, 3-D, the layout pass's 4-D, 6-D, and one
 * read by an elementwise op in the same kernel */
static void transposes(void)
{
	CgHarness *h = ch_new("transpose of ranks 2 to 6");
	ch_op(h, OP_transpose, (double[IR_MAX_ATTRS]){1, 0}, ch_param(h, DT_F32, "7,13"));
	ch_op(h, OP_transpose, (double[IR_MAX_ATTRS]){2, 0, 1}, ch_param(h, DT_F32, "3,5,4"));
	ch_op(h, OP_transpose, (double[IR_MAX_ATTRS]){0, 2, 3, 1}, ch_param(h, DT_F32, "2,3,4,5"));
	ch_op(h, OP_transpose, (double[IR_MAX_ATTRS]){5, 3, 1, 0, 2, 4}, ch_param(h, DT_F32, "2,3,1,2,3,2"));
	int t = ch_op(h, OP_transpose, (double[IR_MAX_ATTRS]){0, 2, 1}, ch_param(h, DT_F32, "2,3,5"));
	ch_op(h, OP_relu, NULL, t);
	run(h);
}

/* upsample_bilinear and its gradient (unrolled gathers) for scales 1 to 3, odd planes, f64, and a
 * producer fused into the gradient's reads */
static void upsamples(void)
{
	for (int f = 1; f <= 3; f++) {
		char name[64];
		snprintf(name, sizeof name, "upsample_bilinear scale %d", f);
		CgHarness *h = ch_new(name);
		double attr[IR_MAX_ATTRS] = {f};
		ch_op(h, OP_upsample_bilinear, attr, ch_param(h, DT_F32, "2,3,5,4"));
		ch_op(h, OP_upsample_bilinear, attr, ch_param(h, DT_F64, "1,2,1,3"));
		char dims[32];
		snprintf(dims, sizeof dims, "2,3,%d,%d", 5 * f, 4 * f);
		int dy = ch_op(h, OP_relu, NULL, ch_param(h, DT_F32, dims));
		ch_op(h, OP_upsample_bilinear_grad, attr, dy);
		run(h);
	}
}

/* embedding and one_hot of 2-D indices, some outside [0, V) (a row of zeros, no class), f32 and
 * f64 rows */
static void embeddings(void)
{
	CgHarness *h = ch_new("embedding and one_hot");
	int idx = ch_leaf(h, OP_input, DT_I32, "3,5", 0);
	h->classes[idx] = 9; /* 0..8 against 7 rows */
	ch_op(h, OP_embedding, NULL, idx, ch_param(h, DT_F32, "7,6"));
	ch_op(h, OP_embedding, NULL, idx, ch_param(h, DT_F64, "7,3"));
	ch_op(h, OP_one_hot, (double[IR_MAX_ATTRS]){7}, idx);
	run(h);
}

/* unfold and fold (im2col, col2im): padding, strides, dilation, rectangular windows, a fused
 * producer read through the gather */
static void folds(void)
{
	CgHarness *h = ch_new("unfold and fold");
	ch_op(h, OP_unfold, (double[IR_MAX_ATTRS]){3, 3, 1, 1, 1, 1, 1, 1}, ch_param(h, DT_F32, "2,3,5,6"));
	ch_op(h, OP_unfold, (double[IR_MAX_ATTRS]){2, 3, 2, 1, 0, 2, 2, 1}, ch_param(h, DT_F64, "1,2,7,5"));
	/* [2, 2*3*3, 3*3] columns of a 5x6 image, stride 2, padding 1: overlapping windows */
	int cols = ch_op(h, OP_relu, NULL, ch_param(h, DT_F32, "2,18,9"));
	ch_op(h, OP_fold, (double[IR_MAX_ATTRS]){3, 3, 2, 2, 1, 1, 1, 1, 5, 6}, cols);
	/* dilation 2, stride 3, a 2x3 window */
	ch_op(h, OP_fold, (double[IR_MAX_ATTRS]){2, 3, 3, 1, 1, 0, 2, 2, 8, 7}, ch_param(h, DT_F32, "1,12,9"));
	run(h);
}

/* the depthwise convolution and its gradients: padding, strides, dilation, rectangular windows,
 * a fused producer read through the window, and the weight gradient as the sum of its terms (one
 * reduction kernel that reads dy and x) */
static void depthwise(void)
{
	CgHarness *h = ch_new("depthwise convolution");
	int x = ch_op(h, OP_relu, NULL, ch_param(h, DT_F32, "2,3,7,6")), w = ch_param(h, DT_F32, "3,1,3,2");
	ch_op(h, OP_dwconv2d, (double[IR_MAX_ATTRS]){2, 1, 1, 0, 1, 2}, x, w);
	ch_op(h, OP_dwconv2d, (double[IR_MAX_ATTRS]){1, 1, 1, 1, 1, 1}, ch_param(h, DT_F64, "1,2,5,4"), ch_param(h, DT_F64, "2,1,3,3"));
	/* the gradients of x by w with stride 2x1, padding 1, dilation 1x2: dy [2, 3, 4, 6] */
	int dy = ch_param(h, DT_F32, "2,3,4,6");
	ch_op(h, OP_dwconv2d_grad_input, (double[IR_MAX_ATTRS]){2, 1, 1, 1, 1, 2, 7, 6}, dy, w);
	int image = ch_param(h, DT_F32, "2,3,7,6"); /* no relu: a term read in the padding would show */
	int terms = ch_op(h, OP_dwconv2d_wterms, (double[IR_MAX_ATTRS]){2, 1, 1, 1, 1, 2, 3, 2}, dy, image);
	ch_op(h, OP_sum, (double[IR_MAX_ATTRS]){4, 0}, terms);
	run(h);
}

static void assign(void)
{
	CgHarness *h = ch_new("assign");
	int t = ch_param(h, DT_F32, "7,13");
	int v = ch_op(h, OP_neg, NULL, ch_param(h, DT_F32, "7,13"));
	ch_op(h, OP_assign, NULL, t, v);
	run(h);
}

/* Long rows are split into chunks, short rows grouped: both partitions, with a chain of ops. */
static void big(void)
{
	CgHarness *h = ch_new("chunks and row blocks");
	int x = ch_param(h, DT_F32, "3,40001");
	int y = ch_op(h, OP_relu, NULL, x);
	ch_op(h, OP_mul, NULL, y, ch_param(h, DT_F32, "40001"));
	int z = ch_param(h, DT_F32, "2000,17");
	ch_op(h, OP_add, NULL, z, ch_param(h, DT_F32, "2000,1"));
	ch_op(h, OP_exp, NULL, ch_param(h, DT_F32, "50001"));
	run(h);
}

static void dropout(const char *dims, double p)
{
	char name[96];
	snprintf(name, sizeof name, "dropout [%s] p %g", dims, p);
	CgHarness *h = ch_new(name);
	int x = ch_param(h, DT_F32, dims), rng = ch_rng(h);
	double attr[2] = {p, (double)(ch_next() % 1000)};
	int y = ch_op(h, OP_dropout, attr, x, rng);
	tu_failures += ch_run(h);
	const double *got = h->got[y], *r = h->want[rng];
	int64_t m = shape_numel(&h->g->node[y].shape), bad = 0;
	uint32_t row_elems = (uint32_t)ir_dropout_row_elems(&h->g->node[y]);
	for (int64_t i = 0; got && i < m; i++) {
		uint32_t index = philox_row_index((uint32_t)i, (uint32_t)(int64_t)r[2], row_elems);
		int keep = philox_keep(p, (uint32_t)(int64_t)r[0], (uint32_t)(int64_t)r[1], (uint32_t)attr[1], index);
		bad += keep != (got[i] != 0);
	}
	CHECK(got && !bad, "%s: seed %llu: %lld mask elements differ from philox_keep", name, ch_seed, (long long)bad);
	ch_free(h);
}

/* Worst error of op over values v, each element against the float64 result: relative to that
 * result, or with per_x relative to x (for x f(x), the error of f). */
static double accuracy_per(OpId op, const double *attr, DType dt, const double *v, int64_t n, bool per_x)
{
	char dims[32];
	snprintf(dims, sizeof dims, "%lld", (long long)n);
	CgHarness *h = ch_new(ir_ops[op].name);
	int x = ch_param(h, dt, dims);
	ch_set(h, x, v);
	int y = ch_op(h, op, attr, x);
	tu_failures += ch_run(h);
	double worst = 0;
	for (int64_t i = 0; h->got[y] && i < n; i++)
		worst = fmax(worst, fabs(h->got[y][i] - h->want[y][i]) / fabs(per_x ? v[i] : h->want[y][i]));
	if (!h->got[y])
		worst = INFINITY;
	ch_free(h);
	return worst;
}

static double accuracy(OpId op, DType dt, const double *v, int64_t n)
{
	return accuracy_per(op, NULL, dt, v, n, false);
}

static void math_accuracy(void)
{
	enum { N = 200000 };
	double *v = malloc(N * sizeof *v);
	for (int i = 0; i < N; i++)
		v[i] = ch_uniform(-87.3, 88.7); /* results stay normal floats */
	double e = accuracy(OP_exp, DT_F32, v, N);
	for (int i = 0; i < N; i++)
		v[i] = exp(ch_uniform(-87, 88)) * (ch_next() & 1 ? 1 : 1e-7); /* normal and denormal */
	double l = accuracy(OP_log, DT_F32, v, N);
	for (int i = 0; i < N; i++)
		v[i] = ch_uniform(0.5, 2); /* near 1, where log is small */
	double l1 = accuracy(OP_log, DT_F32, v, N);
	printf("exp: max relative error %.3g, log: %.3g (near 1: %.3g)\n", e, l, l1);
	CHECK(e < 2e-7 && l < 2e-7 && l1 < 2e-7, "math accuracy: seed %llu: limit 2e-7", ch_seed);
	free(v);
}

/* sigmoid, tanh and silu element by element: saturated (|x| up to 50), moderate and near 0, where
 * tanh's 1 - e^-2|x| would cancel; ch_run also fails on any NaN or inf. */
static void sigmoid_tanh_accuracy(void)
{
	enum { N = 30000 };
	static const OpId ops[3] = {OP_sigmoid, OP_tanh, OP_silu};
	static const double limit[3][2] = {{3e-7, 1e-15}, {5e-7, 1e-14}, {4e-7, 1e-15}}; /* [op][f32, f64] */
	double *v = malloc(N * sizeof *v);
	for (int i = 0; i < N; i++) {
		double r = (double[]){50, 3, 0.35, 1e-3}[i % 4];
		v[i] = ch_uniform(-r, r);
	}
	for (int op = 0; op < 3; op++)
		for (int t = 0; t < 2; t++) {
			OpId id = ops[op];
			double e = accuracy(id, t ? DT_F64 : DT_F32, v, N);
			printf("%s %s: max relative error %.3g\n", ir_ops[id].name, t ? "f64" : "f32", e);
			CHECK(e < limit[op][t], "%s accuracy: seed %llu: limit %g", ir_ops[id].name, ch_seed, limit[op][t]);
		}
	free(v);
}

/* gelu = x Phi(x) in both forms, element by element as the error of Phi (relative to x: below 0
 * the 1 + erf of PyTorch's formula cancels, in the reference too), from the saturated tails
 * (|x| up to 12) to near 0. */
static void gelu_accuracy(void)
{
	enum { N = 30000 };
	static const double limit[2][2] = {{3e-7, 1e-15}, {5e-7, 1e-15}}; /* [none, tanh][f32, f64] */
	double *v = malloc(N * sizeof *v);
	for (int i = 0; i < N; i++) {
		double r = (double[]){12, 3, 0.35, 1e-3}[i % 4];
		v[i] = ch_uniform(-r, r);
	}
	for (int form = 0; form < 2; form++)
		for (int t = 0; t < 2; t++) {
			double attr[1] = {form};
			double e = accuracy_per(OP_gelu, attr, t ? DT_F64 : DT_F32, v, N, true);
			printf("gelu %s %s: max error of Phi %.3g\n", form ? "tanh" : "none", t ? "f64" : "f32", e);
			CHECK(e < limit[form][t], "gelu %s accuracy: seed %llu: limit %g", form ? "tanh" : "none", ch_seed,
			      limit[form][t]);
		}
	free(v);
}

static void special_values(void)
{
	static const double ve[] = {INFINITY, -INFINITY, NAN, 0, -0.0, 88.72, 89, 200, -103.9, -104, -1000, 1e-40, -1e-40};
	static const double vl[] = {INFINITY, 0, -0.0, -1, NAN, -INFINITY, 1e-40, 1.4e-45, FLT_MIN, FLT_MAX, 1};
	static const double vs[] = {INFINITY, -INFINITY, NAN, 0, -0.0, 1e-40, -1e-40, 200, -200, 1000, -1000, FLT_MAX, -FLT_MAX};
	static const OpId ops[] = {OP_exp, OP_log, OP_sigmoid, OP_tanh, OP_leaky_relu, OP_gelu, OP_gelu, OP_silu};
	const double *v[] = {ve, vl, vs, vs, vs, vs, vs, vs};
	int64_t n[] = {sizeof ve / sizeof *ve, sizeof vl / sizeof *vl, sizeof vs / sizeof *vs, sizeof vs / sizeof *vs,
		       sizeof vs / sizeof *vs, sizeof vs / sizeof *vs, sizeof vs / sizeof *vs, sizeof vs / sizeof *vs};
	for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
		char name[64];
		snprintf(name, sizeof name, "%s special values", ir_ops[ops[k]].name);
		CgHarness *h = ch_new(name);
		char dims[16];
		snprintf(dims, sizeof dims, "%lld", (long long)n[k]);
		int x = ch_param(h, DT_F32, dims);
		ch_set(h, x, v[k]);
		double attr[IR_MAX_ATTRS];
		const double *a = attrs_of(ops[k], attr);
		if (ops[k] == OP_gelu)
			attr[0] = ops[k - 1] == OP_gelu; /* both forms */
		ch_op(h, ops[k], a, x);
		run(h);
	}
}

/* The inner loops must vectorize: relu, a broadcast add and dropout (Philox in vector lanes). */
static void vectorized(void)
{
	CgHarness *h = ch_new("vectorized");
	int x = ch_param(h, DT_F32, "64,1024");
	ch_op(h, OP_relu, NULL, x);
	ch_op(h, OP_add, NULL, x, ch_param(h, DT_F32, "1024"));
	double attr[2] = {0.5, 1};
	ch_op(h, OP_dropout, attr, x, ch_rng(h));
	char *ir = ch_ir(h);
	const char *kernels[] = {"@k1_relu(", "@k3_add(", "@k5_dropout("};
	for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++) {
		const char *f = ir ? strstr(ir, kernels[k]) : NULL;
		const char *end = f ? strstr(f, "\n}\n") : NULL;
		const char *v = f ? strstr(f, " x float>") : NULL;
		CHECK(v && end && v <= end, "vectorized: %s has no vector float code", kernels[k]);
	}
	free(ir);
	ch_free(h);
}

int main(void)
{
	ch_start("test_cg_elemwise");
	const char *shapes[] = {"7,13", "5", "", "3,4,5,6", "1,1,33"};
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
		unary_ops(shapes[i], DT_F32);
	unary_ops("7,13", DT_F16);
	unary_ops("4,9", DT_BF16);
	unary_ops("3,17", DT_F64);
	binary_ops("7,13", "7,13", DT_F32);
	binary_ops("4,1,5", "3,1", DT_F32);
	binary_ops("", "7,13", DT_F32);
	binary_ops("7,13", "13", DT_F32);
	binary_ops("2,1,4,1", "3,1,5", DT_F32);
	binary_ops("5,3", "5,1", DT_F16);
	binary_ops("5,3", "3", DT_BF16);
	binary_ops("5,3", "5,3", DT_F64);
	minmax_grads("7,13", "7,13", "7,13");
	minmax_grads("4,5", "4,1", "5");
	minmax_grads("2,3,4", "", "3,1");
	minmax_special();
	with_const();
	bias_add("2,3,5,7", "3", 1);
	bias_add("6,10", "10", 1);
	bias_add("4,6,3", "4", 0);
	shape_ops();
	transposes();
	upsamples();
	embeddings();
	folds();
	depthwise();
	assign();
	big();
	dropout("64,300", 0.3);
	dropout("40000", 0.5);
	dropout("3,7", 0);
	math_accuracy();
	sigmoid_tanh_accuracy();
	gelu_accuracy();
	special_values();
	vectorized();
	return tu_finish("test_cg_elemwise");
}
