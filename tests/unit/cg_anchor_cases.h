/* cg_anchor_cases.h: the anchor graphs and case lists that test_cg_anchor (host) and
 * test_cg_gpu_anchor (GPU targets, emulated on the host) share (header only, on cg_harness.h).
 *
 *     static void run(CgHarness *h) { ...check it...; ch_free(h); }
 *     anchor_run_convs(run, 64, 16);    // the MNIST convolutions at batches 64 and 16
 *     run(anchor_matmul(64, 128, 9216, 1u << 2));
 *
 * Each builder returns a new harness with the ops added; the test's run checks and frees it.
 * The MNIST shapes come at the batches each test's runtime affords; a test adds its own cases. */
#ifndef NETC_CG_ANCHOR_CASES_H
#define NETC_CG_ANCHOR_CASES_H

#include "ir/ops.h"
#include "tests/unit/cg_harness.h"

typedef struct {
	int n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw;
} Conv;

typedef struct {
	int n, c, h, w, kh, kw, sh, sw, ph, pw, include_pad, ceil_mode;
	int layout; /* LAYOUT_NCHW (0) or LAYOUT_NHWC: x and dy are [n, h, w, c] */
} Pool;

/* strides, padding, dilation, non-square kernels, sizes that are no multiple of the tiles */
static const struct {
	Conv geo;
	DType dt;
} anchor_convs[] __attribute__((unused)) = {
	/* n cin h w cout kh kw sh sw ph pw dh dw */
	{{1, 1, 5, 5, 1, 1, 1, 1, 1, 0, 0, 1, 1}, DT_F32},
	/* 1 x 1, unit stride, no padding: windows read as one row per plane (longer than a vector,
	 * no multiple of one, several images) */
	{{3, 5, 7, 9, 6, 1, 1, 1, 1, 0, 0, 1, 1}, DT_F32},
	{{2, 1, 7, 9, 3, 3, 2, 1, 1, 0, 0, 1, 1}, DT_F32},
	{{3, 3, 8, 8, 5, 3, 3, 2, 2, 1, 1, 1, 1}, DT_F32},
	{{2, 3, 11, 10, 4, 2, 3, 2, 1, 2, 1, 2, 1}, DT_F32},
	{{2, 2, 13, 17, 17, 3, 3, 1, 1, 2, 2, 2, 2}, DT_F32},
	{{3, 3, 9, 14, 9, 5, 3, 1, 2, 2, 0, 1, 2}, DT_F32},
	{{2, 3, 12, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F64},
	{{2, 3, 12, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F16},
};
#define ANCHOR_NCONVS (sizeof anchor_convs / sizeof *anchor_convs)

/* overlapping windows, padding with and without counting it, a window of the whole image; ceil
 * mode (windows past the edge clipped; averages divided by the clipped padded window) */
static const Pool anchor_pools[] __attribute__((unused)) = {
	/* n c h w kh kw sh sw ph pw incl ceil layout */
	{2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 0},
	{2, 3, 9, 11, 3, 3, 2, 2, 0, 0, 0, 0, 0},
	{1, 4, 10, 7, 3, 3, 2, 2, 1, 1, 0, 0, 0},
	{1, 4, 10, 7, 3, 3, 2, 2, 1, 1, 1, 0, 0},
	{2, 2, 13, 6, 4, 2, 3, 1, 2, 1, 1, 0, 0},
	{1, 1, 5, 5, 5, 5, 1, 1, 0, 0, 0, 0, 0},
	{2, 3, 8, 8, 3, 3, 2, 2, 0, 0, 1, 1, 0},
	{1, 4, 10, 7, 3, 3, 2, 2, 1, 1, 1, 1, 0},
	{2, 2, 13, 6, 4, 2, 3, 3, 2, 1, 0, 1, 0},
	{1, 2, 9, 9, 2, 2, 2, 2, 0, 0, 1, 1, 0},
	{2, 3, 6, 9, 2, 3, 2, 3, 0, 0, 0, 0, 0}, /* windows tiling the plane, not square */
};
#define ANCHOR_NPOOLS (sizeof anchor_pools / sizeof *anchor_pools)

/* Errors of the GEMM-shaped anchors are relative to at least 1 (CgHarness.scale), the scale of
 * one product of the harness's values (+-[0.1, 1]): an output of a few products may cancel to far
 * below them, and its rounding error does not (a 1x1 weight gradient over 25 positions summed to
 * 1.4e-4 with a float32 error of 3e-8, 2.3e-4 of itself). A wrong index or tile still misses by a
 * product. */
#define ANCHOR_SCALE 1.0

CH_API int anchor_conv_out(int in, int k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

/* conv2d forward, grad_input and grad_weight over one geometry, in one graph, in a layout (NCHW
 * with w [Cout, Cin, KH, KW]; NHWC with w [Cout, KH, KW, Cin]). */
CH_API CgHarness *anchor_conv_in(Conv c, DType dt, int layout)
{
	char name[128], dims[64];
	bool nhwc = layout == LAYOUT_NHWC;
	int oh = anchor_conv_out(c.h, c.kh, c.sh, c.ph, c.dh), ow = anchor_conv_out(c.w, c.kw, c.sw, c.pw, c.dw);
	snprintf(name, sizeof name, "conv x[%d,%d,%d,%d] w[%d,%d,%d,%d] s%dx%d p%dx%d d%dx%d %s%s", c.n, c.cin, c.h, c.w,
		 c.cout, c.cin, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, dtype_name(dt), nhwc ? " nhwc" : "");
	CgHarness *h = ch_new(name);
	h->scale = ANCHOR_SCALE;
	if (nhwc)
		snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.n, c.h, c.w, c.cin);
	else
		snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.n, c.cin, c.h, c.w);
	int x = ch_param(h, dt, dims);
	if (nhwc)
		snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.cout, c.kh, c.kw, c.cin);
	else
		snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.cout, c.cin, c.kh, c.kw);
	int w = ch_param(h, dt, dims);
	if (nhwc)
		snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.n, oh, ow, c.cout);
	else
		snprintf(dims, sizeof dims, "%d,%d,%d,%d", c.n, c.cout, oh, ow);
	int dy = ch_param(h, dt, dims);
	double f[IR_MAX_ATTRS] = {c.sh, c.sw, c.ph, c.pw, c.dh, c.dw};
	f[ir_attr_index(OP_conv2d, "layout")] = layout;
	double a[IR_MAX_ATTRS] = {c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.h, c.w};
	a[ir_attr_index(OP_conv2d_grad_input, "layout")] = layout;
	ch_op(h, OP_conv2d, f, x, w);
	ch_op(h, OP_conv2d_grad_input, a, dy, w);
	a[6] = c.kh, a[7] = c.kw;
	a[ir_attr_index(OP_conv2d_grad_weight, "layout")] = layout;
	ch_op(h, OP_conv2d_grad_weight, a, dy, x);
	return h;
}

CH_API CgHarness *anchor_conv(Conv c, DType dt) { return anchor_conv_in(c, dt, LAYOUT_NCHW); }

/* The pooled size: floor, or Caffe's ceil with the last window starting inside the input or its
 * left padding (written out again here so the test does not take the compiler's word). */
CH_API int anchor_pool_out(int in, int k, int s, int pad, int ceil_mode)
{
	int span = in + 2 * pad - k, o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
	return ceil_mode && (o - 1) * s >= in + pad ? o - 1 : o;
}

/* The dims "n,c,h,w" of a pooled tensor in the case's layout. */
CH_API void anchor_pool_dims(char *buf, size_t size, int layout, int n, int c, int h, int w)
{
	if (layout == LAYOUT_NHWC)
		snprintf(buf, size, "%d,%d,%d,%d", n, h, w, c);
	else
		snprintf(buf, size, "%d,%d,%d,%d", n, c, h, w);
}

/* max and average pooling and both gradients over one geometry, in one graph. */
CH_API CgHarness *anchor_pool(Pool p)
{
	char name[128], dims[64];
	snprintf(name, sizeof name, "pool x[%d,%d,%d,%d] k%dx%d s%dx%d p%dx%d incl%d ceil%d%s", p.n, p.c, p.h, p.w,
		 p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.include_pad, p.ceil_mode, p.layout == LAYOUT_NHWC ? " nhwc" : "");
	CgHarness *h = ch_new(name);
	anchor_pool_dims(dims, sizeof dims, p.layout, p.n, p.c, p.h, p.w);
	int x = ch_param(h, DT_F32, dims);
	int oh = anchor_pool_out(p.h, p.kh, p.sh, p.ph, p.ceil_mode);
	int ow = anchor_pool_out(p.w, p.kw, p.sw, p.pw, p.ceil_mode);
	anchor_pool_dims(dims, sizeof dims, p.layout, p.n, p.c, oh, ow);
	int dy = ch_param(h, DT_F32, dims);
	double mx[IR_MAX_ATTRS] = {p.kh, p.kw, p.sh, p.sw, p.ph, p.pw}, av[IR_MAX_ATTRS];
	memcpy(av, mx, sizeof av);
	mx[ir_attr_index(OP_max_pool2d, "ceil_mode")] = p.ceil_mode;
	mx[ir_attr_index(OP_max_pool2d, "layout")] = p.layout;
	av[ir_attr_index(OP_avg_pool2d, "ceil_mode")] = p.ceil_mode;
	av[ir_attr_index(OP_avg_pool2d, "layout")] = p.layout;
	av[ir_attr_index(OP_avg_pool2d, "count_include_pad")] = p.include_pad;
	ch_op(h, OP_max_pool2d, mx, x);
	ch_op(h, OP_avg_pool2d, av, x);
	ir_max_pool2d_backward(h->g, x, mx, dy);
	ch_op(h, OP_avg_pool2d_grad, av, dy, x);
	return h;
}

/* Ties and NaN: the argmax is each window's first maximum, or its last NaN (a NaN always takes
 * over, as PyTorch's), and the gradient goes there only; k 3: overlapping windows, with padding
 * and ceil mode (pad, ceil 0 or 1); k 2: windows that tile the 8 x 6 plane. */
CH_API CgHarness *anchor_pool_ties(int k, int pad, int ceil, int layout)
{
	char name[64], dims[32];
	int w = k == 2 ? 6 : 7;
	snprintf(name, sizeof name, "max_pool2d ties and NaN k%d s2 p%d ceil%d%s", k, pad, ceil,
		 layout == LAYOUT_NHWC ? " nhwc" : "");
	CgHarness *h = ch_new(name);
	anchor_pool_dims(dims, sizeof dims, layout, 2, 2, 8, w);
	int x = ch_param(h, DT_F32, dims);
	int oh = anchor_pool_out(8, k, 2, pad, ceil), ow = anchor_pool_out(w, k, 2, pad, ceil);
	anchor_pool_dims(dims, sizeof dims, layout, 2, 2, oh, ow);
	int dy = ch_param(h, DT_F32, dims);
	double v[224];
	for (int i = 0; i < 224; i++) {
		uint64_t r = ch_next() % 16;
		v[i] = r == 0 ? NAN : (double)(r % 3) - 1; /* three values, so most windows tie */
	}
	ch_set(h, x, v);
	double a[IR_MAX_ATTRS] = {k, k, 2, 2, pad, pad, ceil, layout};
	ch_op(h, OP_max_pool2d, a, x);
	ir_max_pool2d_backward(h->g, x, a, dy);
	return h;
}

/* C = op(A) op(B) of operands of type dt for the transposes of flags (bit t: ta = t & 1, tb = t >>
 * 1), one graph. */
CH_API CgHarness *anchor_matmul_of(int m, int n, int k, unsigned flags, DType dt)
{
	char name[96], da[32], db[32];
	snprintf(name, sizeof name, "%s matmul %dx%dx%d flags 0x%x", dtype_name(dt), m, n, k, flags);
	CgHarness *h = ch_new(name);
	h->scale = ANCHOR_SCALE;
	for (int t = 0; t < 4; t++) {
		if (!(flags >> t & 1))
			continue;
		int ta = t & 1, tb = t >> 1;
		snprintf(da, sizeof da, ta ? "%d,%d" : "%2$d,%1$d", k, m);
		snprintf(db, sizeof db, tb ? "%d,%d" : "%2$d,%1$d", n, k);
		int a = ch_param(h, dt, da), b = ch_param(h, dt, db);
		double attr[2] = {ta, tb};
		ch_op(h, OP_matmul, attr, a, b);
	}
	return h;
}

CH_API CgHarness *anchor_matmul(int m, int n, int k, unsigned flags) { return anchor_matmul_of(m, n, k, flags, DT_F32); }

/* matmul shapes: one element, odd sizes, long k */
static const int anchor_matmul_sizes[][3] __attribute__((unused)) = {
	{1, 1, 1}, {7, 13, 5}, {65, 130, 33}, {3, 40, 700}, {100, 17, 9},
};
#define ANCHOR_NMATMULS (sizeof anchor_matmul_sizes / sizeof *anchor_matmul_sizes)

/* What a test does with each case's graph (and then frees it). */
typedef void (*AnchorRun)(CgHarness *h);

/* The shared geometries, then the MNIST network's two convolutions at batches b1 and b2. */
CH_API void anchor_run_convs(AnchorRun run, int b1, int b2)
{
	for (size_t i = 0; i < ANCHOR_NCONVS; i++)
		run(anchor_conv(anchor_convs[i].geo, anchor_convs[i].dt));
	run(anchor_conv((Conv){b1, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0, 1, 1}, DT_F32));
	run(anchor_conv((Conv){b2, 32, 26, 26, 64, 3, 3, 1, 1, 0, 0, 1, 1}, DT_F32));
}

/* Every transpose of every size: each in a graph of its own, or the four of a size in one. */
CH_API void anchor_run_matmuls(AnchorRun run, bool each_alone)
{
	for (size_t i = 0; i < ANCHOR_NMATMULS; i++) {
		const int *s = anchor_matmul_sizes[i];
		for (int t = 0; t < (each_alone ? 4 : 1); t++)
			run(anchor_matmul(s[0], s[1], s[2], each_alone ? 1u << t : 0xfu));
	}
}

/* The shared geometries in both layouts, the MNIST network's pooling at the given batch, and
 * ties (in NHWC too). */
CH_API void anchor_run_pools(AnchorRun run, int batch)
{
	for (int layout = LAYOUT_NCHW; layout <= LAYOUT_NHWC; layout++)
		for (size_t i = 0; i < ANCHOR_NPOOLS; i++) {
			Pool p = anchor_pools[i];
			p.layout = layout;
			run(anchor_pool(p));
		}
	run(anchor_pool((Pool){batch, 64, 24, 24, 2, 2, 2, 2, 0, 0, 0, 0, 0}));
	for (int t = 0; t < 8; t++)
		run(anchor_pool_ties(3, t & 1, t >> 1 & 1, t >> 2));
	for (int layout = LAYOUT_NCHW; layout <= LAYOUT_NHWC; layout++)
		run(anchor_pool_ties(2, 0, 0, layout));
}

#endif
