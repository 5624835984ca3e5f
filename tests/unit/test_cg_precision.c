/* test_cg_precision.c: the mixed-precision ops compiled for the host (and through the GPU
 * emulation) against the float64 interpreter, which rounds f16 and bf16 values as they are
 * stored: cast in both directions on random values that need rounding (and overflow f16's
 * range), the gradient of a cast (a cast back), select, all_finite over finite and non-finite
 * tensors, and matmul and conv2d with f16 and bf16 operands. Seeds are printed. */
#include "tests/unit/cg_harness.h"
#include "codegen/gemm_gpu.h"

static int failures;

static void expect(bool ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s\n", what);
		failures++;
	}
}

static double dt(DType t) { return (double)t; }

/* f32 -> half -> f32 over values wide enough that f16 overflows on some of them */
static void casts(DType half)
{
	CgHarness *h = ch_new(half == DT_F16 ? "cast f32 <-> f16" : "cast f32 <-> bf16");
	int x = ch_param(h, DT_F32, "37,129");
	ch_range(h, x, -1.2e5, 1.2e5);
	double a = dt(half), b = dt(DT_F32);
	int y = ch_op(h, OP_cast, &a, x);
	ch_op(h, OP_cast, &b, y);
	failures += ch_run(h);
	ch_free(h);
}

/* ir_round_to against hand-made cases: ties to even, the largest values, overflow, subnormals */
static void rounding(void)
{
	expect(ir_round_to(1 + 0x1p-11, DT_F16) == 1, "f16: a tie rounds to the even 1");
	expect(ir_round_to(1 + 3 * 0x1p-11, DT_F16) == 1 + 0x1p-9, "f16: a tie rounds up to even");
	expect(ir_round_to(65504, DT_F16) == 65504, "f16: 65504 is exact");
	expect(isinf(ir_round_to(65520, DT_F16)), "f16: 65520 overflows");
	expect(ir_round_to(65519, DT_F16) == 65504, "f16: 65519 rounds down");
	expect(ir_round_to(0x1p-25 * 3, DT_F16) == 0x1p-23, "f16: subnormal quantum 2^-24");
	expect(ir_round_to(1 + 0x1p-8, DT_BF16) == 1, "bf16: a tie rounds to the even 1");
	expect(ir_round_to(0x1.fep127, DT_BF16) == 0x1.fep127, "bf16: its largest value is exact");
	expect(isinf(ir_round_to(0x1.ffp127, DT_BF16)), "bf16: a tie past it overflows");
	expect(ir_round_to(0.1, DT_F32) == (double)0.1f, "f32: as C rounds");
}

/* d/dx sum(cast(cast(x, half) * w, f32)): the cast gradients go back to each input's type */
static void cast_gradient(DType half)
{
	CgHarness *h = ch_new("gradient of cast");
	Graph *g = h->g;
	int x = ch_param(h, DT_F32, "9,17");
	int w = ch_param(h, half, "9,17");
	double a = dt(half), b = dt(DT_F32), axes[2] = {3, 0};
	int y = ch_op(h, OP_mul, NULL, ch_op(h, OP_cast, &a, x), w);
	int loss = ch_op(h, OP_sum, axes, ch_op(h, OP_cast, &b, y));
	int *grad = autodiff_gradients(g, loss);
	const Node *gx = &g->node[grad[x]];
	expect(gx->op == OP_cast && gx->dtype == DT_F32, "the gradient of x is a cast to f32");
	expect(g->node[gx->in[0]].dtype == half, "it casts a half-precision gradient");
	expect(g->node[grad[y]].dtype == half, "the gradient of the half product is half");
	free(grad);
	failures += ch_run(h);
	ch_free(h);
}

static void select_finite(bool emulate)
{
	for (int bad = 0; bad < 3; bad++) {
		char name[96];
		snprintf(name, sizeof name, "%s%s", bad == 0 ? "all_finite, select: finite" : bad == 1 ? "... with an inf" : "... with a NaN",
			 emulate ? " (GPU emulation)" : "");
		CgHarness *h = ch_new(name);
		int x = ch_param(h, DT_F32, "300,70");
		double v[300 * 70];
		for (int i = 0; i < 300 * 70; i++)
			v[i] = ch_uniform(-1e3, 1e3);
		if (bad)
			v[ch_next() % (300 * 70)] = bad == 1 ? -INFINITY : NAN;
		ch_set(h, x, v);
		int f = ch_op(h, OP_all_finite, NULL, x);
		int a = ch_param(h, DT_F32, "5,3"), b = ch_param(h, DT_F32, "5,3");
		ch_op(h, OP_select, NULL, f, a, b);
		/* one flag per row, and the flag of the rows' flags (the loss-scale pass's form for
		 * large gradients): the bad row's flag is 0, the others 1 */
		double rows[1] = {1};
		int r = ch_op(h, OP_all_finite, rows, x);
		expect(h->g->node[r].shape.rank == 1 && h->g->node[r].shape.dim[0] == 300, "all_finite rows: one flag per row");
		ch_op(h, OP_all_finite, NULL, r);
		cg_gpu_emulation(emulate);
		failures += ch_run(h);
		cg_gpu_emulation(false);
		ch_free(h);
	}
}

/* matmul and conv2d on half operands, accumulating in f32 and storing half */
static void anchors(DType half, bool emulate)
{
	char name[96];
	snprintf(name, sizeof name, "%s matmul and conv2d%s", dtype_name(half), emulate ? " (GPU emulation)" : "");
	CgHarness *h = ch_new(name);
	int a = ch_param(h, half, "33,70"), b = ch_param(h, half, "70,45");
	double mm[2] = {0, 0};
	ch_op(h, OP_matmul, mm, a, b);
	int x = ch_param(h, half, "2,3,11,11"), w = ch_param(h, half, "8,3,3,3");
	double conv[7] = {1, 1, 1, 1, 1, 1, 0};
	ch_op(h, OP_conv2d, conv, x, w);
	cg_gpu_emulation(emulate);
	failures += ch_run(h);
	cg_gpu_emulation(false);
	ch_free(h);
}

int main(void)
{
	ch_start("test_cg_precision");
	rounding();
	DType halves[2] = {DT_F16, DT_BF16};
	for (int k = 0; k < 2; k++) {
		casts(halves[k]);
		cast_gradient(halves[k]);
		anchors(halves[k], false);
		anchors(halves[k], true);
	}
	select_finite(false);
	select_finite(true);
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}
