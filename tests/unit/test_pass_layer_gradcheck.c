/* test_pass_layer_gradcheck.c: the gradients of layers that the frontend builds from several ops
 * (losses, normalizations, ...) against central finite differences in float64, on graphs built
 * from .net text: the composite's value is the layer's definition, so checking its gradient end to
 * end checks that the ops are wired as the docs say. Every param and input is random; the
 * seed is printed (NETC_TEST_SEED=n replays a run). */
#include "frontend/frontend.h"
#include "ir/ops.h"
#include "passes/passes.h"
#include "tests/unit/test_util.h"

/* Evaluates the non-leaf nodes up to the loss. */
static double forward(const Graph *g, double **v)
{
	for (int i = 0; i <= g->loss; i++) {
		const Node *n = &g->node[i];
		if (ir_is_leaf(n->op))
			continue;
		const double *in[IR_MAX_INPUTS];
		for (int k = 0; k < n->nin; k++)
			in[k] = v[n->in[k]];
		ir_eval_node(g, n, in, v[i]);
	}
	return v[g->loss][0];
}

/* Leaves: params and float inputs uniform in (lo, hi), away from zero by at least 0.05 when lo < 0
 * (so |x| and max(x, 0) have no kink in reach of the differences), labels over the classes, state
 * at its init, consts their value. */
static void fill_leaves(const Graph *g, double **v, double lo, double hi)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		int64_t m = shape_numel(&n->shape);
		if (n->op == OP_const)
			v[i][0] = ir_const_value(n);
		else if (n->op == OP_state)
			for (int64_t k = 0; k < m; k++)
				v[i][k] = ir_leaf_init(n) == INIT_ONE;
		else if (n->op == OP_input && n->dtype == DT_I32)
			for (int64_t k = 0; k < m; k++)
				v[i][k] = (int)tu_uniform(0, 3);
		else if (n->op == OP_param || n->op == OP_input)
			for (int64_t k = 0; k < m; k++) {
				double x = tu_uniform(lo, hi);
				v[i][k] = lo < 0 && fabs(x) < 0.05 ? (x < 0 ? -0.05 : 0.05) : x;
			}
	}
}

/* Builds text, differentiates its loss, and compares every param's gradient with central
 * differences of the loss. lo, hi: the range of the random leaves. */
static void check(const char *what, const char *text, double lo, double hi)
{
	Graph *g = fe_load_string("t.net", text, strlen(text), 0, DIAG_MAX_ERRORS, stdout);
	CHECK(g, "%s: does not build", what);
	if (!g)
		return;
	int nforward = g->nnodes;
	int *grads = autodiff_gradients(g, g->loss);
	double **v = calloc(g->nnodes, sizeof *v);
	for (int i = 0; i < g->nnodes; i++)
		v[i] = calloc(shape_numel(&g->node[i].shape), sizeof **v);
	fill_leaves(g, v, lo, hi);
	ir_interp(g, 0, v);
	double worst = 0;
	int nchecked = 0;
	for (int p = 0; p < nforward; p++) {
		const Node *n = &g->node[p];
		if (n->op != OP_param)
			continue;
		if (grads[p] < 0) {
			FAIL("%s: no gradient reaches %s", what, n->name);
			continue;
		}
		int64_t m = shape_numel(&n->shape);
		double *grad = malloc(m * sizeof *grad);
		memcpy(grad, v[grads[p]], m * sizeof *grad);
		for (int64_t k = 0; k < m; k++) {
			double x = v[p][k], h = 1e-6 * fmax(1, fabs(x));
			v[p][k] = x + h;
			double up = forward(g, v);
			v[p][k] = x - h;
			double down = forward(g, v);
			v[p][k] = x;
			double num = (up - down) / (2 * h), err = fabs(num - grad[k]) / fmax(1e-2, fmax(fabs(num), fabs(grad[k])));
			worst = fmax(worst, err);
			if (!(err < 1e-5)) {
				FAIL("%s: d loss / d %s[%lld] = %.10g, finite differences %.10g", what, n->name, (long long)k,
				     grad[k], num);
				break;
			}
		}
		nchecked++;
		free(grad);
	}
	CHECK(nchecked > 0, "%s: nothing to check", what);
	printf("  %-44s worst relative error %.2e\n", what, worst);
	for (int i = 0; i < g->nnodes; i++)
		free(v[i]);
	free(v);
	free(grads);
	ir_graph_free(g);
}

/* A network of inputs x: f32[4, 5] (or as declared) and target t, body, then the loss line. */
#define NET(inputs, body, loss) "network m {\n" inputs body "loss " loss "\n}\ntrain {\nbatch = 4\n}\n"
#define XT "input x: f32[b, 5]\ninput t: f32[b, 5]\n"

static void test_losses(void)
{
	check("mse_loss", NET(XT, "y = dense(x, 5)\n", "mse_loss(y, t)"), -1, 1);
	check("mse_loss reduction=sum", NET(XT, "y = dense(x, 5)\n", "mse_loss(y, t, reduction=sum)"), -1, 1);
	check("l1_loss", NET(XT, "y = dense(x, 5)\n", "l1_loss(y, t)"), -1, 1);
	/* |y - t| straddles beta = 0.5 somewhere in 20 random pairs */
	check("smooth_l1_loss beta=0.5", NET(XT, "y = dense(x, 5)\n", "smooth_l1_loss(y, t, beta=0.5)"), -1, 1);
	check("smooth_l1_loss beta=0 (l1)", NET(XT, "y = dense(x, 5)\n", "smooth_l1_loss(y, t, beta=0)"), -1, 1);
	check("binary_cross_entropy_with_logits", NET(XT, "y = dense(x, 5)\n", "binary_cross_entropy_with_logits(y, t)"),
	      -3, 3);
}

static void test_norms(void)
{
	check("layer_norm of [4, 3, 5]",
	      NET("input x: f32[b, 3, 5]\ninput t: f32[b, 3, 5]\n", "y = layer_norm(x)\n", "mse_loss(y, t)"), -2, 2);
	check("layer_norm without affine",
	      NET(XT, "h = dense(x, 5)\ny = layer_norm(h, elementwise_affine=false)\n", "mse_loss(y, t)"), -2, 2);
	check("batch_norm1d of [4, 5]", NET(XT, "y = batch_norm1d(x)\n", "mse_loss(y, t)"), -2, 2);
	check("batch_norm1d of [4, 5, 3]",
	      NET("input x: f32[b, 5, 3]\ninput t: f32[b, 5, 3]\n", "y = batch_norm1d(x, eps=0.01)\n", "mse_loss(y, t)"), -2, 2);
	/* a param upstream, so the gradient through standardize to its input is checked too */
	check("dense then batch_norm1d", NET(XT, "h = dense(x, 5)\ny = batch_norm1d(h)\n", "mse_loss(y, t)"), -2, 2);
	check("conv2d then batch_norm2d",
	      NET("input x: f32[b, 2, 4, 4]\ninput t: f32[b, 3, 4, 4]\n",
		  "h = conv2d(x, 3, kernel=3, padding=1)\ny = batch_norm2d(h, eps=0.01)\n", "mse_loss(y, t)"),
	      -2, 2);
	check("pow 3 and abs", NET(XT, "h = dense(x, 5)\ny = pow(h, 3)\nz = abs(y)\n", "mse_loss(z, t)"), -1, 1);
	check("pow 1.5", NET(XT, "h = dense(x, 5)\na = abs(h)\ny = pow(a, 1.5)\n", "mse_loss(y, t)"), -1, 1);
}

/* concat and add of any number of tensors: chains of concat2..concat4 and of add */
static void test_many_inputs(void)
{
	check("concat of six along dim 1",
	      NET("input x: f32[b, 5]\ninput t: f32[b, 14]\n",
		  "a = dense(x, 2)\nb2 = dense(x, 3)\nc = dense(x, 1)\nd = dense(x, 4)\ne = dense(x, 2)\nf = dense(x, 2)\n"
		  "y = concat(a, b2, c, d, e, f)\n", "mse_loss(y, t)"), -1, 1);
	check("add of three, one broadcast",
	      NET(XT, "a = dense(x, 5)\nb2 = dense(x, 5)\nc = dense(x, 1)\ny = add(a, b2, c)\n", "mse_loss(y, t)"), -1, 1);
}

/* products of activations (attention's scores and values) and the permutations around them */
static void test_products(void)
{
#define QK "h = reshape(x, -1, 4)\nh2 = dense(h, 4)\nq = reshape(h2, -1, 3, 4)\nk = transpose(q, 1, 2)\n"
	check("matmul of two stacks (q k^T)",
	      NET("input x: f32[b, 3, 4]\ninput t: f32[b, 3, 3]\n", QK "s = matmul(q, k)\n", "mse_loss(s, t)"), -1, 1);
	check("bmm, then permute",
	      NET("input x: f32[b, 3, 4]\ninput t: f32[b, 4, 3]\n", QK "s = matmul(q, k)\np = bmm(s, q)\no = permute(p, 0, -1, 1)\n",
		  "mse_loss(o, t)"), -1, 1);
	check("matmul of a stack by a matrix",
	      NET("input x: f32[b, 3, 4]\ninput t: f32[b, 3, 12]\n", QK "m = reshape(h2, 4, 12)\ns = matmul(q, m)\n",
		  "mse_loss(s, t)"), -1, 1);
	check("matmul of two matrices",
	      NET("input x: f32[b, 3, 4]\ninput t: f32[b, 12]\n", QK "m = reshape(h2, 4, 12)\nn = reshape(h2, 12, 4)\ns = matmul(n, m)\nr = reshape(s, 4, -1)\nu = sum(r, dim=1)\nv = reshape(u, 4, 1)\nw = add(v, m)\n",
		  "mse_loss(w, t)"), -1, 1);
#undef QK
}

/* conv1d and the 1-D pools, and conv2d of rectangular kernel, stride, padding and dilation */
static void test_convs(void)
{
	check("conv1d stride 2 padding 1, max_pool1d",
	      NET("input x: f32[b, 3, 11]\ninput t: f32[b, 4, 3]\n", "c = conv1d(x, 4, 3, stride=2, padding=1)\np = max_pool1d(c, 2)\n",
		  "mse_loss(p, t)"), -1, 1);
	check("conv1d dilation 2 no bias, avg_pool1d",
	      NET("input x: f32[b, 2, 9]\ninput t: f32[b, 3, 7]\n",
		  "c = conv1d(x, 3, 2, dilation=2, bias=false)\np = avg_pool1d(c, 3, stride=1, padding=1, count_include_pad=false)\n",
		  "mse_loss(p, t)"), -1, 1);
	check("conv2d kernel (3, 1) stride (1, 2) padding (1, 0) dilation (2, 1)",
	      NET("input x: f32[b, 2, 5, 6]\ninput t: f32[b, 3, 3, 3]\n",
		  "c = conv2d(x, 3, kernel=(3, 1), stride=(1, 2), padding=(1, 0), dilation=(2, 1))\n", "mse_loss(c, t)"),
	      -1, 1);
	check("avg_pool2d kernel (2, 3) stride (1, 2)",
	      NET("input x: f32[b, 2, 5, 7]\ninput t: f32[b, 2, 4, 3]\n",
		  "c = conv2d(x, 2, 1)\np = avg_pool2d(c, kernel=(2, 3), stride=(1, 2))\n", "mse_loss(p, t)"), -1, 1);
}

/* grouped and depthwise conv2d: unfold, a broadcast product and a sum over the window */
static void test_grouped(void)
{
	check("depthwise conv2d 3x3 stride 2 pad 1",
	      NET("input x: f32[b, 3, 5, 6]\ninput t: f32[b, 3, 3, 3]\n", "c = conv2d(x, 3, 3, stride=2, padding=1, groups=3)\n",
		  "mse_loss(c, t)"), -1, 1);
	check("depthwise with multiplier 2, no bias",
	      NET("input x: f32[b, 2, 4, 4]\ninput t: f32[b, 4, 4, 4]\n", "c = conv2d(x, 4, 3, padding=1, groups=2, bias=false)\n",
		  "mse_loss(c, t)"), -1, 1);
	check("grouped conv2d groups 2, kernel (2, 1), dilation (2, 1)",
	      NET("input x: f32[b, 4, 5, 3]\ninput t: f32[b, 6, 3, 3]\n",
		  "c = conv2d(x, 6, kernel=(2, 1), dilation=(2, 1), groups=2)\n", "mse_loss(c, t)"), -1, 1);
}

/* a parameter layer added to activations (a position embedding) gets its gradient */
static void test_parameter(void)
{
	check("parameter added with broadcasting",
	      NET("input x: f32[b, 3, 5]\ninput t: f32[b, 3, 5]\n", "pos = parameter(1, 3, 5, std=0.5)\ny = add(x, pos)\n",
		  "mse_loss(y, t)"), -1, 1);
}

static void test_upsample(void)
{
	check("upsample nearest 2 then conv_transpose2d",
	      NET("input x: f32[b, 2, 3, 3]\ninput t: f32[b, 3, 12, 12]\n",
		  "c = conv2d(x, 2, 1)\nu = upsample(c, 2)\nd = conv_transpose2d(u, 3, 3, stride=2, padding=1, output_padding=1)\n",
		  "mse_loss(d, t)"), -1, 1);
	check("upsample bilinear 3",
	      NET("input x: f32[b, 2, 3, 2]\ninput t: f32[b, 2, 9, 6]\n", "c = conv2d(x, 2, 1)\nu = upsample(c, 3, mode=bilinear)\n",
		  "mse_loss(u, t)"), -1, 1);
	check("conv_transpose2d kernel (3, 2) dilation (1, 2) no bias",
	      NET("input x: f32[b, 2, 3, 3]\ninput t: f32[b, 3, 5, 5]\n",
		  "d = conv_transpose2d(x, 3, kernel=(3, 2), dilation=(1, 2), bias=false)\n", "mse_loss(d, t)"), -1, 1);
}

int main(void)
{
	tu_start("test_pass_layer_gradcheck");
	test_losses();
	test_norms();
	test_many_inputs();
	test_products();
	test_convs();
	test_upsample();
	test_grouped();
	test_parameter();
	return tu_finish("test_pass_layer_gradcheck");
}
