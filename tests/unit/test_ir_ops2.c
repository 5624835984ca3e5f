/* test_ir_ops2.c: the ops of the model zoo: concat2..concat4, slice, lrn and lrn_grad: shapes and
 * their error messages, float64 references against formulas written here, the gradient rules
 * against finite differences of the references, and FLOP counts. Inputs are random; the seed is
 * printed (NETC_TEST_SEED=n replays a run). */
#include "ir/grad_context.h"
#include "tests/unit/test_ir_util.h"

static int leaf(Graph *g, Shape s, DType t) { return ir_leaf(g, OP_param, NULL, s, t, NULL); }

static double *random_values(int64_t m)
{
	double *v = tu_calloc((size_t)m, sizeof *v);
	for (int64_t i = 0; i < m; i++)
		v[i] = tu_uniform(-1, 1);
	return v;
}

/* ---- shapes ---- */

static void test_shapes(void)
{
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(4, 2, 3, 4, 5), DT_F32), b = leaf(g, S(4, 2, 7, 4, 5), DT_F32);
	int c = leaf(g, S(4, 2, 1, 4, 5), DT_F32), h = leaf(g, S(4, 2, 3, 4, 5), DT_F16);
	int m = leaf(g, S(2, 6, 3), DT_F32);
	expect_shape(g, tu_add(g, OP_concat2, (int[]){a, b}, A(1)), "[2, 10, 4, 5]");
	expect_shape(g, tu_add(g, OP_concat3, (int[]){a, b, c}, A(-3)), "[2, 11, 4, 5]");
	CHECK(g->node[g->nnodes - 1].attr[0] == 1); /* the axis is normalized */
	expect_shape(g, tu_add(g, OP_concat4, (int[]){a, b, c, a}, A(1)), "[2, 14, 4, 5]");
	expect_shape(g, tu_add(g, OP_concat2, (int[]){a, a}, A(3)), "[2, 3, 4, 10]");
	expect_error(g, OP_concat2, (int[]){a, b}, A(2),
		     "concat2: input 1 f32[2, 7, 4, 5] does not fit input 0 f32[2, 3, 4, 5] along axis 2");
	expect_error(g, OP_concat2, (int[]){a, h}, A(1),
		     "concat2: input 1 f16[2, 3, 4, 5] does not fit input 0 f32[2, 3, 4, 5] along axis 1");
	expect_error(g, OP_concat2, (int[]){a, m}, A(1),
		     "concat2: input 1 f32[6, 3] does not fit input 0 f32[2, 3, 4, 5] along axis 1");
	expect_error(g, OP_concat2, (int[]){a, a}, A(4), "concat2: axis 4 is out of range for a rank-4 input");

	expect_shape(g, tu_add(g, OP_slice, &b, A(1, 2, 5)), "[2, 5, 4, 5]");
	expect_shape(g, tu_add(g, OP_slice, &m, A(-1, 0, 1)), "[6, 1]");
	expect_error(g, OP_slice, &b, A(1, 3, 5), "slice: [3, 8) along axis 1 is outside f32[2, 7, 4, 5]");
	expect_error(g, OP_slice, &b, A(1, 0, 0), "slice: len must be an integer >= 1, got 0");
	expect_error(g, OP_slice, &b, A(1, -1, 2), "slice: start must be an integer >= 0, got -1");

	expect_shape(g, tu_add(g, OP_lrn, &a, A(2, 1, 1e-4, 0.75)), "[2, 3, 4, 5]");
	CHECK(g->node[tu_add(g, OP_lrn, &h, A(2, 1, 1e-4, 0.75))].dtype == DT_F16);
	expect_shape(g, tu_add(g, OP_lrn_grad, (int[]){a, a}, A(0, 2, 0.5, 1)), "[2, 3, 4, 5]");
	expect_error(g, OP_lrn, &m, A(2, 1, 1, 1), "lrn: input must be 4-D (NCHW, or NHWC with layout=1), got f32[6, 3]");
	expect_error(g, OP_lrn, &a, A(33, 1, 1, 1), "lrn: depth_radius must be an integer in [0, 32], got 33");
	expect_error(g, OP_lrn, &a, A(2, 0, 1, 1),
		     "lrn: needs bias > 0, alpha >= 0 and a finite beta, got bias 0, alpha 1, beta 1");
	expect_error(g, OP_lrn, &a, A(2, 1, -1, 1),
		     "lrn: needs bias > 0, alpha >= 0 and a finite beta, got bias 1, alpha -1, beta 1");
	expect_error(g, OP_lrn_grad, (int[]){b, a}, A(2, 1, 1, 1), "lrn_grad: dy [2, 7, 4, 5] and x [2, 3, 4, 5] differ");
	ir_graph_free(g);
}

/* ---- references ---- */

static void test_ref_concat_slice(void)
{
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(3, 2, 1, 3), DT_F32), b = leaf(g, S(3, 2, 2, 3), DT_F32), c = leaf(g, S(3, 2, 3, 3), DT_F32);
	int y = tu_add(g, OP_concat3, (int[]){a, b, c}, A(1));
	int s = tu_add(g, OP_slice, &y, A(1, 1, 4));
	double *va = random_values(6), *vb = random_values(12), *vc = random_values(18), *vy = tu_calloc(36, sizeof(double));
	double *vs = tu_calloc(24, sizeof(double));
	const double *in[3] = {va, vb, vc};
	ir_eval_node(g, &g->node[y], in, vy);
	for (int n = 0; n < 2; n++)
		for (int k = 0; k < 6; k++)
			for (int w = 0; w < 3; w++) {
				double want = k < 1 ? va[(n * 1 + k) * 3 + w] : k < 3 ? vb[(n * 2 + k - 1) * 3 + w] : vc[(n * 3 + k - 3) * 3 + w];
				CHECK(vy[(n * 6 + k) * 3 + w] == want, "concat3 [%d, %d, %d]", n, k, w);
			}
	const double *ys[1] = {vy};
	ir_eval_node(g, &g->node[s], ys, vs);
	for (int n = 0; n < 2; n++)
		for (int k = 0; k < 4; k++)
			for (int w = 0; w < 3; w++)
				CHECK(vs[(n * 4 + k) * 3 + w] == vy[(n * 6 + k + 1) * 3 + w], "slice [%d, %d, %d]", n, k, w);
	free(va), free(vb), free(vc), free(vy), free(vs);
	ir_graph_free(g);
}

/* y[c] = x[c] / (bias + alpha sum_{c' in [c-r, c+r]} x[c']^2)^beta, written out for one case */
static void test_ref_lrn(void)
{
	const int N = 2, C = 7, H = 2, W = 3, R = 2;
	const double bias = 2, alpha = 0.3, beta = 0.75;
	Graph *g = ir_graph_new("t");
	int x = leaf(g, S(4, N, C, H, W), DT_F32);
	int y = tu_add(g, OP_lrn, &x, A(R, bias, alpha, beta));
	double *vx = random_values(N * C * H * W), *vy = tu_calloc(N * C * H * W, sizeof(double));
	const double *in[1] = {vx};
	ir_eval_node(g, &g->node[y], in, vy);
	for (int n = 0; n < N; n++)
		for (int c = 0; c < C; c++)
			for (int p = 0; p < H * W; p++) {
				double sq = 0;
				for (int k = (c - R < 0 ? 0 : c - R); k <= (c + R >= C ? C - 1 : c + R); k++)
					sq += vx[(n * C + k) * H * W + p] * vx[(n * C + k) * H * W + p];
				int i = (n * C + c) * H * W + p;
				CHECK_NEAR(vy[i], vx[i] / pow(bias + alpha * sq, beta), 1e-14);
			}
	free(vx), free(vy);
	ir_graph_free(g);
}

/* ---- gradient rules against finite differences ---- */

/* d sum(y * r) / d x by the op's gradient rule (evaluated with the references), compared with
 * central differences of the reference; x is input k of y. */
static void gradcheck(const char *what, Graph *g, int y, int k)
{
	int x = g->node[y].in[k], n0 = g->nnodes;
	int64_t my = shape_numel(&g->node[y].shape), mx = shape_numel(&g->node[x].shape);
	int r = ir_leaf(g, OP_input, "r", g->node[y].shape, DT_F32, NULL);
	int grad[64], needs_n = g->nnodes;
	char needs[64];
	for (int i = 0; i < 64; i++)
		grad[i] = -1, needs[i] = 1;
	GradContext gc = {g, needs_n, grad, needs};
	const Node ny = g->node[y];
	ir_ops[ny.op].grad(&gc, &ny, r);
	CHECK(grad[x] >= n0, "%s: no gradient for input %d", what, k);
	double **v = tu_calloc((size_t)g->nnodes, sizeof *v);
	for (int i = 0; i < g->nnodes; i++)
		v[i] = random_values(shape_numel(&g->node[i].shape));
	ir_interp(g, 0, v);
	for (int64_t i = 0; i < mx && grad[x] >= 0; i++) {
		double keep = v[x][i], h = 1e-6, f[2];
		for (int side = 0; side < 2; side++) {
			v[x][i] = keep + (side ? -h : h);
			const double *in[IR_MAX_INPUTS];
			for (int j = 0; j < g->node[y].nin; j++)
				in[j] = v[g->node[y].in[j]];
			ir_eval_node(g, &g->node[y], in, v[y]);
			f[side] = 0;
			for (int64_t j = 0; j < my; j++)
				f[side] += v[y][j] * v[r][j];
		}
		v[x][i] = keep;
		double num = (f[0] - f[1]) / (2 * h), got = v[grad[x]][i];
		if (fabs(num - got) > 1e-6 * fmax(1, fabs(num))) {
			FAIL("%s: d/dx[%lld] = %.10g, finite differences %.10g", what, (long long)i, got, num);
			break;
		}
	}
	for (int i = 0; i < g->nnodes; i++)
		free(v[i]);
	free(v);
}

static void test_grads(void)
{
	for (int k = 0; k < 4; k++) {
		Graph *g = ir_graph_new("t");
		int a = leaf(g, S(3, 2, 3, 2), DT_F32), b = leaf(g, S(3, 2, 1, 2), DT_F32), c = leaf(g, S(3, 2, 4, 2), DT_F32);
		int y = tu_add(g, OP_concat4, (int[]){a, b, c, b}, A(1));
		gradcheck("concat4", g, y, k);
		ir_graph_free(g);
	}
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(2, 3, 2), DT_F32), b = leaf(g, S(2, 3, 5), DT_F32);
	gradcheck("concat2 axis 1", g, tu_add(g, OP_concat2, (int[]){a, b}, A(1)), 1);
	ir_graph_free(g);
	/* radius 0, 1 and one wider than the channels; TensorFlow's and Caffe's usual constants */
	const double cases[][4] = {{0, 1, 0.5, 0.75}, {1, 2, 0.3, 0.75}, {3, 1, 0.2, 0.5}, {2, 1.5, 0.7, 1.3}};
	for (int i = 0; i < 4; i++) {
		g = ir_graph_new("t");
		int x = leaf(g, S(4, 2, 5, 2, 3), DT_F32);
		char what[64];
		snprintf(what, sizeof what, "lrn r=%g beta=%g", cases[i][0], cases[i][3]);
		gradcheck(what, g, tu_add(g, OP_lrn, &x, A(cases[i][0], cases[i][1], cases[i][2], cases[i][3])), 0);
		ir_graph_free(g);
	}
}

static void test_registry_flops(void)
{
	Graph *g = ir_graph_new("t");
	int a = leaf(g, S(4, 2, 8, 3, 3), DT_F32);
	int y = tu_add(g, OP_lrn, &a, A(2, 1, 1, 1));
	int d = tu_add(g, OP_lrn_grad, (int[]){a, a}, A(2, 1, 1, 1));
	CHECK(ir_ops[OP_lrn].flops(g, &g->node[y]) == 144.0 * (2 * 5 + 4));
	CHECK(ir_ops[OP_lrn_grad].flops(g, &g->node[d]) > ir_ops[OP_lrn].flops(g, &g->node[y]));
	int c = tu_add(g, OP_concat2, (int[]){a, a}, A(1));
	CHECK(ir_ops[OP_concat2].flops(g, &g->node[c]) == 0);
	CHECK(ir_op_lookup("concat4") == OP_concat4 && ir_ops[OP_concat4].nin == 4 && ir_ops[OP_concat3].nin == 3);
	CHECK(ir_attr_index(OP_lrn, "beta") == 3 && ir_attr_index(OP_slice, "len") == 2);
	CHECK(ir_ops[OP_lrn].pattern == PAT_INJECTIVE && ir_ops[OP_concat2].pattern == PAT_INJECTIVE);
	CHECK(ir_ops[OP_slice].grad == NULL && ir_ops[OP_lrn_grad].grad == NULL);
	ir_graph_free(g);
}

int main(void)
{
	tu_start("test_ir_ops2");
	test_shapes();
	test_ref_concat_slice();
	test_ref_lrn();
	test_grads();
	test_registry_flops();
	return tu_finish("test_ir_ops2");
}
