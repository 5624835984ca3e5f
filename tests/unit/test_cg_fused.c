/* test_cg_fused.c: one kernel per fused group, against the float64 reference on the host (plain
 * and with the GPU templates emulated), and the same graphs compiled for gfx906, gfx1100 and
 * sm_90. Groups of each kind: anchors with an elementwise epilogue (conv + bias + relu + dropout
 * with the bias_add also an output, matmul + bias, max pooling + dropout, the max-pool gradient
 * + relu_grad), elementwise groups with several outputs (an adadelta-like update with assigns,
 * a member broadcast inside the group), and reductions that read an elementwise producer
 * (exp -> sum, relu_grad -> sum as a bias gradient, softmax, log_softmax and cross_entropy).
 * Members inside a group lose their storage, so a kernel that still touches one aborts. */
#include <string.h>

#include "ir/ops.h"
#include "tests/unit/cg_fused_harness.h"

static const double drop_p = 0.3;

/* Host, emulated GPU templates, then the three GPU targets; frees h. */
static void check(CgHarness *h)
{
	tu_failures += cf_run(h, false);
	tu_failures += cf_run(h, true);
	tu_failures += cf_gpu(h);
	ch_free(h);
}

static int op2(CgHarness *h, OpId op, int a, int b) { return ch_op(h, op, NULL, a, b); }

/* y = dropout(relu(bias_add(conv2d(x, w), b))); the bias_add is read outside the group too. */
static void conv_bias_relu_dropout(int n, int cin, int hw, int cout, int k, int pad)
{
	char name[96], dims[64];
	snprintf(name, sizeof name, "conv+bias+relu+dropout x[%d,%d,%d,%d] k%d p%d cout %d", n, cin, hw, hw, k, pad, cout);
	CgHarness *h = ch_new(name);
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", n, cin, hw, hw);
	int x = ch_param(h, DT_F32, dims);
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", cout, cin, k, k);
	int w = ch_param(h, DT_F32, dims);
	snprintf(dims, sizeof dims, "%d", cout);
	int b = ch_param(h, DT_F32, dims);
	int rng = ch_rng(h);
	double ca[IR_MAX_ATTRS] = {1, 1, pad, pad, 1, 1}, axis1[1] = {1}, da[2] = {drop_p, 7};
	int c = ch_op(h, OP_conv2d, ca, x, w);
	int ba = ch_op(h, OP_bias_add, axis1, c, b);
	int r = ch_op(h, OP_relu, NULL, ba);
	int d = ch_op(h, OP_dropout, da, r, rng);
	op2(h, OP_mul, ba, ba); /* reads the bias_add outside the group */
	cf_group(h, (int[]){c, ba, r, d}, 4);
	check(h);
}

/* bias_add(matmul(a, b), bias); anchor_out: the matmul is read outside the group as well. */
static void matmul_bias(int m, int nn, int k, int tb, bool anchor_out)
{
	char name[96], dims[64];
	snprintf(name, sizeof name, "matmul+bias %dx%dx%d tb%d%s", m, nn, k, tb, anchor_out ? " matmul out" : "");
	CgHarness *h = ch_new(name);
	snprintf(dims, sizeof dims, "%d,%d", m, k);
	int a = ch_param(h, DT_F32, dims);
	snprintf(dims, sizeof dims, tb ? "%d,%d" : "%2$d,%1$d", nn, k);
	int b = ch_param(h, DT_F32, dims);
	snprintf(dims, sizeof dims, "%d", nn);
	int bias = ch_param(h, DT_F32, dims);
	double ma[2] = {0, tb}, axis1[1] = {1};
	int mm = ch_op(h, OP_matmul, ma, a, b);
	int ba = ch_op(h, OP_bias_add, axis1, mm, bias);
	if (anchor_out)
		ch_op(h, OP_neg, NULL, mm);
	cf_group(h, (int[]){mm, ba}, 2);
	check(h);
}

/* dropout(max_pool2d(x)) and relu(avg_pool2d(x)) */
static void pool_epilogue(int k, int s, int pad)
{
	char name[64];
	snprintf(name, sizeof name, "pool+dropout k%d s%d p%d", k, s, pad);
	CgHarness *h = ch_new(name);
	int x = ch_param(h, DT_F32, "3,5,13,11");
	int rng = ch_rng(h);
	double pa[IR_MAX_ATTRS] = {k, k, s, s, pad, pad, 1}, da[2] = {drop_p, 3};
	int mp = ch_op(h, OP_max_pool2d, pa, x);
	int d = ch_op(h, OP_dropout, da, mp, rng);
	cf_group(h, (int[]){mp, d}, 2);
	int ap = ch_op(h, OP_avg_pool2d, pa, x);
	int r = ch_op(h, OP_relu, NULL, ap);
	cf_group(h, (int[]){ap, r}, 2);
	check(h);
}

/* relu_grad(max_pool2d_grad(dy, x), z): tiled (k = s; h 8: every row in a window, h 9: the last
 * row in none) and gathering windows. */
static void pool_grad_epilogue(int k, int s, int hgt)
{
	char name[64], dims[32];
	snprintf(name, sizeof name, "max_pool2d_grad+relu_grad k%d s%d h%d", k, s, hgt);
	CgHarness *h = ch_new(name);
	snprintf(dims, sizeof dims, "2,3,%d,10", hgt);
	int x = ch_param(h, DT_F32, dims);
	double pa[IR_MAX_ATTRS] = {k, k, s, s, 0, 0};
	int y = ch_op(h, OP_max_pool2d, pa, x); /* a group of its own: dy's shape */
	int dy = ch_op(h, OP_neg, NULL, y);
	int z = ch_param(h, DT_F32, dims);
	int g = ir_max_pool2d_backward(h->g, x, pa, dy);
	int rg = op2(h, OP_relu_grad, g, z);
	cf_group(h, (int[]){g, rg}, 2);
	check(h);
}

/* An adadelta step as one group: three assigns (state, state, parameter) and dx, which a node
 * outside the group also reads. */
static void adadelta(const char *dims)
{
	char name[64];
	snprintf(name, sizeof name, "adadelta [%s]", dims);
	CgHarness *h = ch_new(name);
	Graph *g = h->g;
	int p = ch_param(h, DT_F32, dims), grad = ch_param(h, DT_F32, dims);
	int eg2 = ch_leaf(h, OP_state, DT_F32, dims, INIT_ZERO), edx = ch_leaf(h, OP_state, DT_F32, dims, INIT_ZERO);
	ch_range(h, eg2, 0.1, 1);
	ch_range(h, edx, 0.1, 1);
	int rho = ir_const(g, 0.9), rho1 = ir_const(g, 0.1), eps = ir_const(g, 1e-6), lr = ir_const(g, 0.5);
	int first = g->nnodes;
	int g2 = op2(h, OP_mul, grad, grad);
	int eg2n = op2(h, OP_add, op2(h, OP_mul, rho, eg2), op2(h, OP_mul, rho1, g2));
	int num = ch_op(h, OP_sqrt, NULL, op2(h, OP_add, edx, eps));
	int den = ch_op(h, OP_sqrt, NULL, op2(h, OP_add, eg2n, eps));
	int dx = op2(h, OP_mul, op2(h, OP_div, num, den), grad);
	int edxn = op2(h, OP_add, op2(h, OP_mul, rho, edx), op2(h, OP_mul, rho1, op2(h, OP_mul, dx, dx)));
	int pn = op2(h, OP_sub, p, op2(h, OP_mul, lr, dx));
	op2(h, OP_assign, eg2, eg2n);
	op2(h, OP_assign, edx, edxn);
	int last = op2(h, OP_assign, p, pn);
	for (int i = first; i <= last; i++)
		g->node[i].group = last;
	ch_op(h, OP_neg, NULL, dx); /* dx leaves the group */
	check(h);
}

/* A flat group whose work-items take several elements each on GPUs (cg_lanes_for): s = x * g
 * and its bfloat16 cast (both leave the group), and p -= dropout(s) in place (the mask drawn at
 * each lane's own index). On the host emulating the
 * GPU paths the lanes' vectors are checked against the reference (a lane read or stored at
 * another's place fails it); on sm_90 the loads and stores are 16-byte vectors where numel
 * allows them (8 float32 lanes: two per buffer, one for the bfloat16 cast), scalar where it
 * does not (odd numel) or where the group stores no element narrower than a word (no cast). */
static void lanes(const char *dims, bool cast, bool vectors)
{
	char name[64];
	snprintf(name, sizeof name, "lanes [%s]%s", dims, cast ? "" : " without the cast");
	CgHarness *h = ch_new(name);
	int x = ch_param(h, DT_F32, dims), g = ch_param(h, DT_F32, dims), p = ch_param(h, DT_F32, dims);
	double bf16 = DT_BF16;
	int sx = op2(h, OP_mul, x, g);
	int c = cast ? ch_op(h, OP_cast, &bf16, sx) : -1;
	double da[2] = {drop_p, 7};
	int d = ch_op(h, OP_dropout, da, sx, ch_rng(h));
	int pn = op2(h, OP_sub, p, d);
	int a = op2(h, OP_assign, p, pn);
	if (cast)
		cf_group(h, (int[]){sx, c, d, pn, a}, 5);
	else
		cf_group(h, (int[]){sx, d, pn, a}, 4);
	ch_op(h, OP_neg, NULL, sx); /* s and the cast leave the group */
	if (cast)
		ch_op(h, OP_neg, NULL, c);
	CgOutput out;
	if (cf_plan(h) && cf_compile(h, "sm_90", &out)) {
		const char *ptx = (const char *)out.code;
		bool v4 = ptx && strstr(ptx, "ld.global.v4.f32") &&
			  (!cast || (strstr(ptx, "st.global.v4.f32") && strstr(ptx, "st.global.v4.b32")));
		CHECK(v4 == vectors, "%s: sm_90 %s 16-byte vector loads and stores", name, v4 ? "has" : "lacks");
		cg_output_free(&out);
	}
	check(h);
}

/* relu(x + b * c): b * c ([cols]) is a member broadcast inside the group, x + ... an output. */
static void broadcast_member(void)
{
	CgHarness *h = ch_new("broadcast member [17,45]");
	int x = ch_param(h, DT_F32, "17,45"), b = ch_param(h, DT_F32, "45"), c = ch_param(h, DT_F32, "45");
	int bc = op2(h, OP_mul, b, c);
	int s = op2(h, OP_add, x, bc);
	int r = ch_op(h, OP_relu, NULL, s);
	int e = ch_op(h, OP_exp, NULL, r);
	op2(h, OP_mul, s, x); /* s leaves the group */
	cf_group(h, (int[]){bc, s, r, e}, 4);
	check(h);
}

/* sum(exp(x)) over an axis mask: short rows (serial on GPUs) and long ones (a work-group each). */
static void exp_sum(const char *dims, unsigned axes)
{
	char name[64];
	snprintf(name, sizeof name, "exp->sum [%s] axes %u", dims, axes);
	CgHarness *h = ch_new(name);
	int x = ch_param(h, DT_F32, dims);
	double sa[2] = {axes, 0};
	int e = ch_op(h, OP_exp, NULL, x);
	int s = ch_op(h, OP_sum, sa, e);
	cf_group(h, (int[]){e, s}, 2);
	check(h);
}

/* The bias gradient of conv + bias + relu: sum over N, H, W of relu_grad(dy, x). */
static void relu_grad_sum(const char *dims)
{
	char name[64];
	snprintf(name, sizeof name, "relu_grad->sum [%s]", dims);
	CgHarness *h = ch_new(name);
	int dy = ch_param(h, DT_F32, dims), x = ch_param(h, DT_F32, dims);
	double sa[2] = {1 | 4 | 8, 0};
	int rg = op2(h, OP_relu_grad, dy, x);
	int s = ch_op(h, OP_sum, sa, rg);
	cf_group(h, (int[]){rg, s}, 2);
	check(h);
}

/* softmax and log_softmax of an elementwise producer, and cross_entropy of one. */
static void softmax_producer(int rows, int cols)
{
	char name[64], dims[32];
	snprintf(name, sizeof name, "softmax family of a producer [%d,%d]", rows, cols);
	CgHarness *h = ch_new(name);
	snprintf(dims, sizeof dims, "%d,%d", rows, cols);
	int x = ch_param(h, DT_F32, dims), y = ch_param(h, DT_F32, dims);
	snprintf(dims, sizeof dims, "%d", cols);
	int b = ch_param(h, DT_F32, dims);
	int labels = ch_labels(h, rows, cols);
	double axis1[1] = {1}, axis0[1] = {0}, mean[1] = {0};
	int ba = ch_op(h, OP_bias_add, axis1, x, b);
	int sm = ch_op(h, OP_softmax, axis1, ba);
	cf_group(h, (int[]){ba, sm}, 2);
	int m = op2(h, OP_mul, x, y);
	int ls = ch_op(h, OP_log_softmax, axis0, m);
	cf_group(h, (int[]){m, ls}, 2);
	int a = op2(h, OP_add, x, y);
	int ce = ch_op(h, OP_cross_entropy, mean, a, labels);
	cf_group(h, (int[]){a, ce}, 2);
	check(h);
}

/* The host kernel of a fused elementwise group keeps a vectorized inner loop. */
static void vectorized(void)
{
	CgHarness *h = ch_new("bias_add+relu+mul vectorized");
	int x = ch_param(h, DT_F32, "64,100"), b = ch_param(h, DT_F32, "100");
	double axis1[1] = {1};
	int ba = ch_op(h, OP_bias_add, axis1, x, b);
	int r = ch_op(h, OP_relu, NULL, ba);
	int m = op2(h, OP_mul, r, r);
	cf_group(h, (int[]){ba, r, m}, 3);
	CgOutput out;
	CgTarget t;
	char err[256] = "no host target";
	bool ok = cf_plan(h) && cg_target_host(&t) && cg_compile(h->g, &t, true, &out, err, sizeof err);
	CHECK(ok, "%s", err);
	if (ok) {
		CHECK(out.nkernels == 1 && !strcmp(out.kernels[0].name, "k4_mul"), "%d kernels, first %s", out.nkernels,
		      out.nkernels ? out.kernels[0].name : "-");
		CHECK(out.ir && strstr(out.ir, "x float>"), "no vector arithmetic in the fused kernel");
		cg_output_free(&out);
	}
	ch_free(h);
}

/* Groups of one still compile to one kernel per node (the unfused path). */
static void unfused(void)
{
	CgHarness *h = ch_new("unfused chain");
	int x = ch_param(h, DT_F32, "9,33");
	double sa[2] = {2, 0};
	int e = ch_op(h, OP_exp, NULL, x);
	ch_op(h, OP_sum, sa, e);
	check(h);
}

int main(void)
{
	ch_start("test_cg_fused");
	conv_bias_relu_dropout(2, 3, 9, 5, 3, 1);
	conv_bias_relu_dropout(3, 4, 12, 17, 3, 0);
	matmul_bias(7, 13, 5, 0, false);
	matmul_bias(33, 70, 129, 1, true);
	pool_epilogue(2, 2, 0);
	pool_epilogue(3, 2, 1);
	pool_grad_epilogue(2, 2, 8);
	pool_grad_epilogue(2, 2, 9);
	pool_grad_epilogue(3, 2, 9);
	adadelta("37,29");
	adadelta("5000");
	broadcast_member();
	lanes("64,40", true, true);
	lanes("3,7,11", true, false);
	lanes("64,40", false, false);
	exp_sum("13,7", 2);
	exp_sum("6,300", 2);
	exp_sum("4,9,30", 5);
	relu_grad_sum("2,5,7,6");
	relu_grad_sum("8,3,12,12");
	softmax_producer(9, 10);
	softmax_producer(6, 130);
	vectorized();
	unfused();
	return tu_finish("test_cg_fused");
}
