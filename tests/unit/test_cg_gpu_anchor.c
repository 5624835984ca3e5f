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
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/test_util.h"

static char ptxas[512]; /* empty where there is none */

static const char *const targets[] = {"gfx906", "gfx1100", "sm_90"};

static void fail(const CgHarness *h, const char *target, const char *what)
{
	FAIL("%s [%s]: %s", h->name, target, what);
}

/* ptxas assembles the PTX for sm_90; what it says goes to the test's output. */
static void ptxas_accepts(const CgHarness *h, const CgOutput *out)
{
	char cmd[600], text[4096], as[48];
	snprintf(cmd, sizeof cmd, "%s -arch=%s -o /dev/null", ptxas, tu_ptx_arch(out->code, out->size, "sm_90", as, sizeof as));
	/* the code is the PTX text with its NUL */
	int rc = tu_run_on_file(cmd, out->code, strnlen((const char *)out->code, out->size), text, sizeof text);
	CHECK(rc == 0, "%s [sm_90]: ptxas rejects the PTX: %s", h->name, text);
}

/* AMD code objects: every kernel without scratch (spilled or unpromoted registers) and within
 * the 64 KiB of LDS a work-group may have. */
static void amd_resources(const CgHarness *h, const char *target, const CgOutput *out)
{
	CgAmdCode code;
	char err[256];
	if (!cg_amd_read(out->code, out->size, &code, err, sizeof err)) {
		fail(h, target, err);
		return;
	}
	CHECK(code.nkernels == out->nkernels, "%s [%s]: %d kernels in the code object, %d compiled", h->name, target,
	      code.nkernels, out->nkernels);
	for (int i = 0; i < code.nkernels; i++) {
		const CgAmdKernel *k = &code.kernels[i];
		CHECK(!k->scratch && !k->vgpr_spill && k->lds <= 65536, "%s [%s]: kernel %s: scratch %u, spills %d, LDS %u",
		      h->name, target, k->name, k->scratch, k->vgpr_spill, k->lds);
	}
	cg_amd_free(&code);
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
	else if (ptxas[0])
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
	tu_failures += bad;
	if (!bad)
		for (size_t i = 0; i < sizeof targets / sizeof *targets; i++)
			compile_for(h, targets[i]);
	ch_free(h);
}

/* ---- graphs ---- */

static void convs(void)
{
	/* the MNIST network's convolutions with fewer images: 64 x 64 tiles forward, 16 x 16 tiles
	 * with 16 k-slices for the weight gradients */
	anchor_run_convs(run, 4, 2);
	/* enough images for the wide tiles of the tiles() cases: odd M and N, K no multiple of the
	 * k-block */
	run(anchor_conv((Conv){64, 1, 15, 17, 250, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F32));
	run(anchor_conv((Conv){43, 1, 10, 15, 250, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F32));
	run(anchor_conv((Conv){128, 1, 15, 17, 60, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F32));
	/* NHWC (the layout pass's choice for strided networks): the windows along k, with and without
	 * stride, padding and dilation */
	run(anchor_conv_in((Conv){2, 5, 9, 11, 7, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F32, LAYOUT_NHWC));
	run(anchor_conv_in((Conv){3, 4, 12, 10, 6, 3, 2, 2, 1, 1, 0, 1, 2}, DT_F32, LAYOUT_NHWC));
	run(anchor_conv_in((Conv){2, 16, 8, 8, 24, 5, 5, 1, 1, 2, 2, 1, 1}, DT_F32, LAYOUT_NHWC));
}

/* Every transpose of a size in one graph. */
static void matmuls(void)
{
	anchor_run_matmuls(run, false);
	run(anchor_matmul(300, 520, 40, 0xf)); /* many work-groups: the large tiles */
	/* the MNIST dense layers at batch 64 (a quarter of the inputs): forward and both gradients */
	run(anchor_matmul(64, 128, 2304, 1u << 2));
	run(anchor_matmul(64, 10, 128, 1u << 2));
	run(anchor_matmul(128, 2304, 64, 1u << 1));
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
		{64, 250, 255, 9, 128, 128, 1},  /* the wide tiles: 8 x 8 register tiles */
		{43, 250, 150, 9, 128, 64, 1},   /* 8 x 4 */
		{128, 60, 255, 9, 64, 128, 1},   /* 4 x 8 */
		{128, 192, 729, 1600, 64, 128, 1}, /* alexnet conv2 forward at batch 128 */
		{128, 384, 169, 1728, 128, 64, 1}, /* alexnet conv3 forward */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		GemmSpec s = {.batch = cases[i].batch, .m = cases[i].m, .n = cases[i].n, .k = cases[i].k};
		GpuTiles t = cg_gemm_gpu_tiles(&s, true);
		bool ok = t.bm == cases[i].bm && t.bn == cases[i].bn && t.ks == cases[i].ks && t.block == 256 &&
			  (t.bm / t.tm) * (t.bn / t.tn) * t.ks == t.block && t.bk % t.ks == 0;
		CHECK(ok, "tiles %lldx%lldx%lldx%lld: %dx%d k%d ks%d block %d", (long long)s.batch, (long long)s.m,
		      (long long)s.n, (long long)s.k, t.bm, t.bn, t.bk, t.ks, t.block);
		/* without the wide tiles (AMD): never wider than 64, 4 x 4 register tiles at most */
		GpuTiles n = cg_gemm_gpu_tiles(&s, false);
		CHECK(n.bm <= 64 && n.bn <= 64 && n.tm <= 4 && n.tn <= 4 && (n.bm / n.tm) * (n.bn / n.tn) * n.ks == n.block,
		      "narrow tiles %lldx%lldx%lldx%lld: %dx%d (%dx%d)", (long long)s.batch, (long long)s.m, (long long)s.n,
		      (long long)s.k, n.bm, n.bn, n.tm, n.tn);
	}
}

/* Column reductions (reduced axes leading, ir_reduce_slices): NHWC bias gradients summed in
 * slices of rows, partial bands of 32 outputs, a short last slice, mean's division, bf16. */
static void column_reductions(void)
{
	static const struct {
		const char *dims;
		unsigned axes;
		OpId op;
		DType dt;
	} cases[] = {
		{"2,48,50,40", 7, OP_sum, DT_F32},
		{"9001,3", 1, OP_mean, DT_F32},
		{"3,41,37,24", 7, OP_sum, DT_BF16},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char name[96];
		snprintf(name, sizeof name, "%s x[%s] axes %u %s", ir_ops[cases[i].op].name, cases[i].dims, cases[i].axes,
			 dtype_name(cases[i].dt));
		CgHarness *h = ch_new(name);
		int x = ch_param(h, cases[i].dt, cases[i].dims);
		double attr[IR_MAX_ATTRS] = {cases[i].axes, 0};
		int y = ch_op(h, cases[i].op, attr, x);
		CHECK(ir_reduce_slices(h->g, &h->g->node[y]) > 1, "%s: not a sliced column reduction", name);
		run(h);
	}
}

int main(void)
{
	ch_start("test_cg_gpu_anchor");
	if (!tu_find_tool("ptxas", ptxas, sizeof ptxas))
		ptxas[0] = 0;
	printf("ptxas: %s\n", ptxas[0] ? ptxas : "not found, PTX not assembled");
	tiles();
	convs();
	matmuls();
	anchor_run_pools(run, 8); /* the MNIST pooling with fewer images */
	column_reductions();
	return tu_finish("test_cg_gpu_anchor");
}
