/* test_cg_gpu_anchor.c: the GPU lowerings of the anchors (the tiled GEMM template behind conv2d,
 * its gradients and matmul; pooling and its gradients).
 *
 * No GPU is at hand, so each graph is checked twice: its kernels compiled for gfx906 (wave64),
 * gfx1100 (wave32) and sm_90 (the PTX assembled by ptxas where it is installed), work-groups of
 * 256 work-items, no scratch memory on AMD (the register tiles stay registers) and LDS within a
 * work-group's share; and the same GPU kernels emulated on the host (work-items as loops) against
 * the float64 reference: strides, padding, dilation, odd sizes, every matmul transpose, the shapes
 * that pick each tile configuration, and overlapping pooling windows. */
#include "codegen/amdgpu_info.h"
#include "codegen/gemm_gpu.h"
#include "tests/unit/cg_harness.h"

static int failures;
static const char *ptxas;

static const char *const targets[] = {"gfx906", "gfx1100", "sm_90"};

static bool fail(const CgHarness *h, const char *target, const char *what)
{
	printf("FAIL %s [%s]: %s\n", h->name, target, what);
	failures++;
	return false;
}

/* ptxas assembles the PTX for sm_90; its messages go to the test's output. */
static bool ptxas_accepts(const CgHarness *h, const CgOutput *out)
{
	char src[] = "/tmp/netc-gpu-test-XXXXXX";
	int fd = mkstemp(src);
	if (fd < 0)
		return fail(h, "sm_90", "cannot write a temporary file");
	/* the code is the PTX text with its NUL */
	size_t len = strnlen((const char *)out->code, out->size);
	bool ok = write(fd, out->code, len) == (ssize_t)len;
	close(fd);
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s -arch=sm_90 -o /dev/null %s 2>&1", ptxas, src);
	int rc = ok ? system(cmd) : -1;
	unlink(src);
	if (rc != 0)
		return fail(h, "sm_90", "ptxas rejects the PTX");
	return true;
}

/* AMD code objects: every kernel without scratch (spilled or unpromoted registers) and within
 * the 64 KiB of LDS a work-group may have. */
static bool amd_resources(const CgHarness *h, const char *target, const CgOutput *out)
{
	CgAmdCode code;
	char err[256];
	if (!cg_amd_read(out->code, out->size, &code, err, sizeof err))
		return fail(h, target, err);
	bool ok = code.nkernels == out->nkernels;
	for (int i = 0; i < code.nkernels; i++) {
		const CgAmdKernel *k = &code.kernels[i];
		if (k->scratch || k->vgpr_spill || k->lds > 65536) {
			printf("FAIL %s [%s]: kernel %s: scratch %u, spills %d, LDS %u\n", h->name, target, k->name,
			       k->scratch, k->vgpr_spill, k->lds);
			ok = false;
		}
	}
	cg_amd_free(&code);
	if (!ok)
		failures++;
	return ok;
}

/* Compiles the planned graph for one GPU target and checks what came out. */
static void compile_for(const CgHarness *h, const char *spec)
{
	CgTarget t;
	CgTargetOptions o = {0};
	char err[1024];
	if (!cg_target_lookup(spec, &o, &t, err, sizeof err)) {
		fail(h, spec, err);
		return;
	}
	CgOutput out;
	if (!cg_compile(h->g, &t, false, &out, err, sizeof err)) {
		fail(h, spec, err);
		return;
	}
	for (int i = 0; i < out.nkernels; i++)
		if (out.kernels[i].block != 256 || out.kernels[i].grid < 1) {
			char msg[160];
			snprintf(msg, sizeof msg, "kernel %s: grid %lld of %d work-items, want 256", out.kernels[i].name,
				 (long long)out.kernels[i].grid, out.kernels[i].block);
			fail(h, spec, msg);
		}
	if (t.kind == CG_AMDGPU)
		amd_resources(h, spec, &out);
	else if (ptxas)
		ptxas_accepts(h, &out);
	cg_output_free(&out);
}

/* The emulated GPU kernels against the reference, then the real ones for every target. */
static void run(CgHarness *h)
{
	char err[512];
	if (!ir_verify(h->g, err, sizeof err)) {
		fail(h, "verify", err);
		ch_free(h);
		return;
	}
	cg_gpu_emulation(true);
	int bad = ch_run(h); /* marks the programs and plans memory too */
	cg_gpu_emulation(false);
	failures += bad;
	if (!bad)
		for (size_t i = 0; i < sizeof targets / sizeof *targets; i++)
			compile_for(h, targets[i]);
	ch_free(h);
}

/* ---- graphs ---- */

typedef struct {
	int n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw;
} Conv;

static int conv_out(int in, int k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

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
	conv((Conv){2, 3, 12, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F64);
	conv((Conv){2, 3, 12, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F16);
	/* the MNIST network's convolutions (fewer images): 64 x 64 tiles forward, 16 x 16 tiles with
	 * 16 k-slices for the weight gradients */
	conv((Conv){4, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0, 1, 1}, DT_F32);
	conv((Conv){2, 32, 26, 26, 64, 3, 3, 1, 1, 0, 0, 1, 1}, DT_F32);
}

/* C[m][n] = op(A) op(B) for the given transposes (bit 0: A, bit 1: B), one graph. */
static void matmul(int m, int n, int k, unsigned flags)
{
	char name[96], da[32], db[32];
	snprintf(name, sizeof name, "matmul %dx%dx%d flags 0x%x", m, n, k, flags);
	CgHarness *h = ch_new(name);
	for (int t = 0; t < 4; t++) {
		if (!(flags >> t & 1))
			continue;
		int ta = t & 1, tb = t >> 1;
		snprintf(da, sizeof da, ta ? "%d,%d" : "%2$d,%1$d", k, m);
		snprintf(db, sizeof db, tb ? "%d,%d" : "%2$d,%1$d", n, k);
		int a = ch_param(h, DT_F32, da), b = ch_param(h, DT_F32, db);
		double attr[2] = {ta, tb};
		ch_op(h, OP_matmul, attr, a, b);
	}
	run(h);
}

static void matmuls(void)
{
	static const int sizes[][3] = {{1, 1, 1}, {7, 13, 5}, {65, 130, 33}, {3, 40, 700}, {100, 17, 9}, {300, 520, 40}};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		matmul(sizes[i][0], sizes[i][1], sizes[i][2], 0xf);
	/* the MNIST dense layers at batch 64 (a quarter of the inputs): forward and both gradients */
	matmul(64, 128, 2304, 1u << 2);
	matmul(64, 10, 128, 1u << 2);
	matmul(128, 2304, 64, 1u << 1);
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
	pool((Pool){8, 64, 24, 24, 2, 2, 2, 2, 0, 0, 0});
	pool_ties();
}

/* The tile choice: large tiles for many work-groups, small ones with k-slices for few. */
static void tiles(void)
{
	static const struct {
		int64_t batch, m, n, k;
		int bm, bn, ks;
	} cases[] = {
		{64, 64, 576, 288, 64, 64, 1},   /* MNIST conv2 forward */
		{64, 32, 676, 576, 32, 64, 2},   /* MNIST conv2 grad_input */
		{1, 288, 64, 36864, 16, 16, 16}, /* MNIST conv2 grad_weight */
		{1, 1, 1, 1, 16, 16, 16},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		GemmSpec s = {.batch = cases[i].batch, .m = cases[i].m, .n = cases[i].n, .k = cases[i].k};
		GpuTiles t = cg_gemm_gpu_tiles(&s);
		bool ok = t.bm == cases[i].bm && t.bn == cases[i].bn && t.ks == cases[i].ks && t.block == 256 &&
			  (t.bm / t.tm) * (t.bn / t.tn) * t.ks == t.block && t.bk % t.ks == 0;
		if (!ok) {
			printf("FAIL tiles %lldx%lldx%lldx%lld: %dx%d k%d ks%d block %d\n", (long long)s.batch,
			       (long long)s.m, (long long)s.n, (long long)s.k, t.bm, t.bn, t.bk, t.ks, t.block);
			failures++;
		}
	}
}

static const char *find_ptxas(void)
{
	if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
		return "/usr/local/cuda/bin/ptxas";
	return system("command -v ptxas >/dev/null 2>&1") == 0 ? "ptxas" : NULL;
}

int main(void)
{
	ch_start("test_cg_gpu_anchor");
	ptxas = find_ptxas();
	printf("ptxas: %s\n", ptxas ? ptxas : "not found, PTX not assembled");
	tiles();
	convs();
	matmuls();
	pools();
	printf("%s: %d failure%s\n", failures ? "FAIL" : "ok", failures, failures == 1 ? "" : "s");
	return failures != 0;
}
