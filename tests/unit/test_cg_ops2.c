/* test_cg_ops2.c: the kernels of concat2..concat4, slice, lrn and lrn_grad against the float64
 * reference: alone (as -O0 compiles them), fused with elementwise producers and consumers on the
 * host and with the GPU templates emulated on the host, and compiled for gfx906, gfx1100 and
 * sm_90 (ptxas checks the PTX when it is installed). Inputs are random; the seed is printed. */
#include "tests/unit/cg_fused_harness.h"

/* Alone, fused on the host, fused as the GPUs run it (emulated), and for the GPU targets. */
static void run_all(CgHarness *h, const int *group, int n)
{
	tu_failures += ch_run(h);
	ir_ungroup(h->g);
	if (n > 1)
		cf_group(h, group, n);
	tu_failures += cf_run(h, false);
	tu_failures += cf_run(h, true);
	tu_failures += cf_gpu(h);
	ch_free(h);
}

static void test_concat(void)
{
	static const char *const pieces[][4] = {{"2,3,4,5", "2,1,4,5", "2,6,4,5", "2,2,4,5"},
						{"3,2,5", "3,2,1", "3,2,7", "3,2,2"}};
	for (int shape = 0; shape < 2; shape++)
		for (int nin = 2; nin <= 4; nin++) {
			char name[64];
			snprintf(name, sizeof name, "concat%d rank %d", nin, shape ? 3 : 4);
			CgHarness *h = ch_new(name);
			int in[4], relu[4];
			for (int k = 0; k < nin; k++) {
				in[k] = ch_param(h, DT_F32, pieces[shape][k]);
				relu[k] = ch_op(h, OP_relu, NULL, in[k]);
			}
			double axis = shape ? -1 : 1;
			OpId op = nin == 2 ? OP_concat2 : nin == 3 ? OP_concat3 : OP_concat4;
			int c = ch_op(h, op, &axis, relu[0], relu[1], relu[2], relu[3]);
			int e = ch_op(h, OP_exp, NULL, c);
			int group[6];
			for (int k = 0; k < nin; k++)
				group[k] = relu[k];
			group[nin] = c, group[nin + 1] = e;
			run_all(h, group, nin + 2);
		}
}

static void test_slice(void)
{
	CgHarness *h = ch_new("slice of a concat's gradient");
	int x = ch_param(h, DT_F32, "2,9,3,4");
	int n = ch_op(h, OP_neg, NULL, x);
	int s = ch_op(h, OP_slice, (double[]){1, 3, 4}, n);
	int r = ch_op(h, OP_relu, NULL, s);
	run_all(h, (int[]){n, s, r}, 3);
	h = ch_new("slice last axis f16");
	x = ch_param(h, DT_F16, "5,11");
	ch_op(h, OP_slice, (double[]){1, 10, 1}, x);
	run_all(h, NULL, 0);
}

static void test_lrn(void)
{
	/* radius 0 to 4 (cifar10_tf's is 4), beta 0.75 (its square-root path) and others (exp/log);
	 * NCHW ([2, 7, 3, 5], channels H * W apart) and NHWC (layout=1: [2, 3, 5, 7], channels last) */
	static const double cases[][IR_MAX_ATTRS] = {{0, 1, 0.5, 0.75, LAYOUT_NCHW}, {1, 2, 1e-1, 0.5, LAYOUT_NCHW},
						     {2, 2, 1e-2, 0.75, LAYOUT_NCHW}, {4, 1, 0.3, 0.75, LAYOUT_NCHW},
						     {3, 1.5, 0.4, 1.3, LAYOUT_NCHW}, {2, 2, 1e-2, 0.75, LAYOUT_NHWC},
						     {3, 1.5, 0.4, 1.3, LAYOUT_NHWC}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		bool nhwc = cases[i][4] == LAYOUT_NHWC;
		const char *dims = nhwc ? "2,3,5,7" : "2,7,3,5";
		char name[64];
		snprintf(name, sizeof name, "lrn r=%g beta=%g%s", cases[i][0], cases[i][3], nhwc ? " nhwc" : "");
		CgHarness *h = ch_new(name);
		int x = ch_param(h, DT_F32, dims);
		ch_range(h, x, -3, 3);
		int r = ch_op(h, OP_relu, NULL, x);
		int y = ch_op(h, OP_lrn, cases[i], r);
		int dy = ch_param(h, DT_F32, dims);
		int dx = ch_op(h, OP_lrn_grad, cases[i], dy, r);
		int m = ch_op(h, OP_mul, NULL, y, dx);
		/* relu fused into both (read at neighbouring channels), mul after them */
		run_all(h, (int[]){r, y, dx, m}, 4);
	}
	CgHarness *h = ch_new("lrn f16");
	int x = ch_param(h, DT_F16, "1,9,2,3");
	static const double f16_attr[IR_MAX_ATTRS] = {2, 1, 1e-1, 0.75, LAYOUT_NCHW};
	int y = ch_op(h, OP_lrn, f16_attr, x);
	ch_op(h, OP_lrn_grad, f16_attr, y, x);
	run_all(h, NULL, 0);
}

int main(void)
{
	ch_start("test_cg_ops2");
	test_concat();
	test_slice();
	test_lrn();
	return tu_finish("test_cg_ops2");
}
