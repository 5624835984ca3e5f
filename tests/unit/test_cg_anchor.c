/* test_cg_anchor.c: the anchor lowerings (GEMM template: conv2d, its gradients, matmul; pooling
 * and its gradients) compiled for the host against the float64 reference: strides, padding,
 * dilation, non-square kernels, odd sizes that are no multiple of the tiles, all transposes of
 * matmul, overlapping pooling windows, and the MNIST network's shapes. */
#include "tests/unit/cg_harness.h"

static int failures;

static void run(CgHarness *h)
{
	failures += ch_run(h);
	ch_free(h);
}

typedef struct {
	int n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw;
} Conv;

static int conv_out(int in, int k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

/* conv2d forward, grad_input and grad_weight over one geometry, in one graph. */
static void conv(Conv c, DType dt)
{
	char name[128], dims[64];
	snprintf(name, sizeof name, "conv x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%dx%d p%dx%d d%dx%d %s", c.n, c.cin, c.h, c.w,
		 c.cout, c.cin, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, dtype_name(dt));
	CgHarness *h = ch_new(name);
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.n, c.cin, c.h, c.w);
	int x = ch_param(h, dt, dims);
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.cout, c.cin, c.kh, c.kw);
	int w = ch_param(h, dt, dims);
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.n, c.cout, conv_out(c.h, c.kh, c.sh, c.ph, c.dh),
		 conv_out(c.w, c.kw, c.sw, c.pw, c.dw));
	int dy = ch_param(h, dt, dims);
	double a[8] = {c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.h, c.w};
	ch_op(h, OP_conv2d, a, x, w);
	ch_op(h, OP_conv2d_grad_input, a, dy, w);
	a[6] = c.kh, a[7] = c.kw;
	ch_op(h, OP_conv2d_grad_weight, a, dy, x);
	run(h);
}

static void convs(void)
{
	/* n cin h w cout kh kw sh sw ph pw dh dw */
	conv((Conv){1, 1, 5, 5, 1, 1, 1, 1, 1, 0, 0, 1, 1}, DT_F32);
	conv((Conv){2, 1, 7, 9, 3, 3, 2, 1, 1, 0, 0, 1, 1}, DT_F32);
	conv((Conv){3, 3, 8, 8, 5, 3, 3, 2, 2, 1, 1, 1, 1}, DT_F32);
	conv((Conv){2, 3, 11, 10, 4, 2, 3, 2, 1, 2, 1, 2, 1}, DT_F32);
	conv((Conv){2, 2, 13, 17, 17, 3, 3, 1, 1, 2, 2, 2, 2}, DT_F32);
	conv((Conv){3, 3, 9, 14, 9, 5, 3, 1, 2, 2, 0, 1, 2}, DT_F32);
	conv((Conv){2, 5, 6, 40, 11, 1, 3, 1, 1, 0, 1, 1, 1}, DT_F32);
	conv((Conv){2, 3, 12, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F64);
	conv((Conv){2, 3, 12, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F16);
	/* the MNIST network's two convolutions */
	conv((Conv){64, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0, 1, 1}, DT_F32);
	conv((Conv){16, 32, 26, 26, 64, 3, 3, 1, 1, 0, 0, 1, 1}, DT_F32);
}

static void matmul(int m, int n, int k, int ta, int tb)
{
	char name[96], da[32], db[32];
	snprintf(name, sizeof name, "matmul %dx%dx%d ta%d tb%d", m, n, k, ta, tb);
	CgHarness *h = ch_new(name);
	snprintf(da, sizeof da, ta ? "%d,%d" : "%2$d,%1$d", k, m);
	snprintf(db, sizeof db, tb ? "%d,%d" : "%2$d,%1$d", n, k);
	int a = ch_param(h, DT_F32, da), b = ch_param(h, DT_F32, db);
	double attr[2] = {ta, tb};
	ch_op(h, OP_matmul, attr, a, b);
	run(h);
}

static void matmuls(void)
{
	static const int sizes[][3] = {{1, 1, 1}, {7, 13, 5}, {65, 130, 33}, {3, 40, 700}, {100, 17, 9}};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		for (int t = 0; t < 4; t++)
			matmul(sizes[i][0], sizes[i][1], sizes[i][2], t & 1, t >> 1);
	/* the MNIST dense layer 9216 -> 128 at batch 64: forward and both gradients */
	matmul(64, 128, 9216, 0, 1);
	matmul(64, 9216, 128, 0, 0);
	matmul(128, 9216, 64, 1, 0);
}

typedef struct {
	int n, c, h, w, kh, kw, sh, sw, ph, pw, include_pad;
} Pool;

static void pool(Pool p)
{
	char name[128], dims[64];
	snprintf(name, sizeof name, "pool x[%d,%d,%d,%d] k%dx%d s%dx%d p%dx%d incl%d", p.n, p.c, p.h, p.w, p.kh, p.kw,
		 p.sh, p.sw, p.ph, p.pw, p.include_pad);
	CgHarness *h = ch_new(name);
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", p.n, p.c, p.h, p.w);
	int x = ch_param(h, DT_F32, dims);
	int oh = (p.h + 2 * p.ph - p.kh) / p.sh + 1, ow = (p.w + 2 * p.pw - p.kw) / p.sw + 1;
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", p.n, p.c, oh, ow);
	int dy = ch_param(h, DT_F32, dims);
	double a[7] = {p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.include_pad};
	ch_op(h, OP_max_pool2d, a, x);
	ch_op(h, OP_avg_pool2d, a, x);
	ch_op(h, OP_max_pool2d_grad, a, dy, x);
	ch_op(h, OP_avg_pool2d_grad, a, dy, x);
	run(h);
}

/* Ties: the gradient goes to the first maximum of each window only. */
static void pool_ties(void)
{
	CgHarness *h = ch_new("max_pool2d ties k3 s2");
	int x = ch_param(h, DT_F32, "1,2,7,7"), dy = ch_param(h, DT_F32, "1,2,3,3");
	double v[98];
	for (int i = 0; i < 98; i++)
		v[i] = (double)(ch_next() % 3);
	ch_set(h, x, v);
	double a[6] = {3, 3, 2, 2, 0, 0};
	ch_op(h, OP_max_pool2d, a, x);
	ch_op(h, OP_max_pool2d_grad, a, dy, x);
	run(h);
}

static void pools(void)
{
	/* n c h w kh kw sh sw ph pw incl */
	pool((Pool){2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0});
	pool((Pool){2, 3, 9, 11, 3, 3, 2, 2, 0, 0, 0});
	pool((Pool){1, 4, 10, 7, 3, 3, 2, 2, 1, 1, 0});
	pool((Pool){1, 4, 10, 7, 3, 3, 2, 2, 1, 1, 1});
	pool((Pool){2, 2, 13, 6, 4, 2, 3, 1, 2, 1, 1});
	pool((Pool){1, 1, 5, 5, 5, 5, 1, 1, 0, 0, 0});
	pool((Pool){64, 64, 24, 24, 2, 2, 2, 2, 0, 0, 0});
	pool_ties();
}

int main(void)
{
	ch_start("test_cg_anchor");
	convs();
	matmuls();
	pools();
	printf("%s: %d failure%s\n", failures ? "FAIL" : "ok", failures, failures == 1 ? "" : "s");
	return failures != 0;
}
