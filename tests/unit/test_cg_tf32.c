/* test_cg_tf32.c: --precision tf32 in the GPU GEMM template: warp tiles of NVIDIA's mma.sync
 * m16n8k8 tf32 and of gfx942's v_mfma_f32_16x16x8_xf32 (wave64).
 *
 * Neither runs on the host, so each graph is checked twice per unit:
 * - emulated on the host as the unit's target (cg_gpu_emulation_mma): the work-items load their
 *   fragments of the tf32-rounded LDS tiles through the row's a_at and b_at and the instruction
 *   runs through its lane model (tests/unit/matrix_lane_models.h), so the warp tiles, the
 *   rounding, the fragment loads, c_at and the epilogue run for real; against the float64
 *   reference within TF32_TOL, and every float32 GEMM node further from it than float32
 *   arithmetic gets (TF32_FLOOR), which fails if the path or the rounding were skipped;
 * - compiled for the unit's targets: sm_80 and sm_90's PTX has mma.sync.aligned.m16n8k8 and ptxas
 *   accepts it where it is installed (in float32, no mma.sync); gfx942's assembly has the xf32
 *   MFMA (in float32 the f32 one, no xf32).
 * Cases: conv2d forward, input and weight gradients (strides, padding, dilation, the MNIST shapes
 * that pick every tile size), every matmul transpose, split-K (weight gradient, long-K matmul) and
 * fused epilogues. Then sm_90's wgmma tf32 form, which takes the GEMMs whose operands both run
 * along k (float32 copied into LDS unrounded, its low 13 bits dropped by the unit: emulated by the
 * descriptors' decoding in gemm_gpu.c, the accumulators placed by the m16n8k8 lane model): large
 * matmuls of B transposed, one split over K with a fused epilogue, and NHWC convolutions, whose
 * forward GEMM takes it. */
#include "codegen/gemm_gpu.h"
#include "codegen/target.h"
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/cg_fused_harness.h"

/* TF32 keeps 10 of float32's 23 mantissa bits: rounding each operand to the nearest (cvt.rna)
 * errs by at most 2^-11 relative, so each product by about 2^-10; the float32 accumulation adds
 * only ~2^-24 per step. The rounding errors are independent and of either sign, so over K
 * products they grow as sqrt(K), as the sum of random signed data itself does: relative to the
 * largest output (the harness's measure) the error stays near 2^-11 whatever K is (measured here:
 * 2e-4 to 6e-4). 2^-8 leaves room for the tails of the maximum over many outputs; a bf16-sized
 * error (8 bits) would fail it. */
#define TF32_TOL 0x1p-8
/* ... which needs outputs of their own scale: one output that sums a few products (a 1 x 1
 * convolution's weight gradient over 25 positions) may cancel to far below the products, and
 * its error with it does not. Errors are relative to at least 1, the scale of one product of the
 * harness's values (+-[0.1, 1]). */
#define TF32_SCALE 1.0
/* Float32 arithmetic stays below 1e-6 on these sizes; TF32 products are above 2^-15 (3e-5). */
#define TF32_FLOOR 0x1p-15

static const char *const mma_ptx = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
static const char *const xf32 = "v_mfma_f32_16x16x8_xf32", *const mfma_f32 = "v_mfma_f32_16x16x4_f32";

/* The unit emulated: NVIDIA's, or gfx942's. */
static const char *unit = "sm_80";

static bool compile_ptx(CgHarness *h, const char *target, CgOutput *out)
{
	if (cf_compile(h, target, out))
		return true;
	tu_failures++;
	return false;
}

/* gfx942's assembly: the xf32 MFMA under tf32, the f32 one and no xf32 under fp32. */
static void amd_targets(CgHarness *h)
{
	bool want = cf_has_f32_gemm(h->g);
	for (int fp32 = 0; fp32 < 2; fp32++) {
		h->g->train.precision = fp32 ? PREC_FP32 : PREC_TF32;
		CgTarget t;
		CgOutput out;
		char err[1024];
		CgTargetOptions o = {0};
		if (!cg_target_lookup("gfx942", &o, &t, err, sizeof err) || !cg_compile(h->g, &t, true, &out, err, sizeof err)) {
			FAIL("%s [gfx942]: %s", h->name, err);
			continue;
		}
		if (fp32)
			CHECK(!strstr(out.assembly, xf32) && (!want || strstr(out.assembly, mfma_f32)),
			      "%s [gfx942, fp32]: %s, or no %s", h->name, xf32, mfma_f32);
		else
			CHECK(!want || strstr(out.assembly, xf32), "%s [gfx942]: no %s in the assembly", h->name, xf32);
		cg_output_free(&out);
	}
	h->g->train.precision = PREC_TF32;
}

static const char *const wgmma_ptx = "k8.f32.tf32.tf32";

/* The wgmma cases: sm_90's PTX has the tf32 wgmma (with no transpose flags), ptxas accepts it. */
static void wgmma_target(CgHarness *h)
{
	CgOutput out;
	if (!compile_ptx(h, "sm_90", &out))
		return;
	const char *at = strstr((const char *)out.code, "wgmma.mma_async.sync.aligned.m64n");
	CHECK(at && strstr(at, wgmma_ptx), "%s [sm_90]: no wgmma ...%s in the PTX", h->name, wgmma_ptx);
	tu_failures += cf_ptxas(h, "sm_90", &out);
	cg_output_free(&out);
}

/* sm_80 and sm_90: mma.sync in the PTX, and ptxas accepts it. */
static void targets(CgHarness *h)
{
	if (!strcmp(unit, "sm_90")) {
		wgmma_target(h);
		return;
	}
	if (strcmp(unit, "sm_80")) {
		amd_targets(h);
		return;
	}
	static const char *const nv[] = {"sm_80", "sm_90"};
	bool want = cf_has_f32_gemm(h->g);
	for (size_t i = 0; i < sizeof nv / sizeof *nv; i++) {
		CgOutput out;
		if (!compile_ptx(h, nv[i], &out))
			continue;
		CHECK(!want || strstr((const char *)out.code, mma_ptx) != NULL, "%s [%s]: no %s in the PTX", h->name, nv[i],
		      mma_ptx);
		tu_failures += cf_ptxas(h, nv[i], &out);
		cg_output_free(&out);
	}
}

/* Float32 PTX of the same graph has no mma.sync. */
static void fp32_has_no_mma(CgHarness *h)
{
	if (strcmp(unit, "sm_80") && strcmp(unit, "sm_90"))
		return;
	h->g->train.precision = PREC_FP32;
	CgOutput out;
	if (compile_ptx(h, "sm_90", &out)) {
		CHECK(!strstr((const char *)out.code, "mma.sync"), "%s [sm_90, fp32]: mma.sync in the PTX", h->name);
		cg_output_free(&out);
	}
	h->g->train.precision = PREC_TF32;
}

static double least = 1, most = 0; /* the errors of the float32 GEMM nodes, for the summary */

/* Every float32 GEMM node is further from float64 than float32 arithmetic gets: the largest error
 * of at least 16 outputs (one product's two roundings may cancel by chance). */
static void tf32_is_used(const CgHarness *h)
{
	const Graph *g = h->g;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (n->dtype != DT_F32 || !h->got[i] || !(ir_ops[n->op].traits & TRAIT_HALF_COMPUTE) ||
		    shape_numel(&n->shape) < 16)
			continue;
		int64_t worst;
		double err = ch_error(h->got[i], h->want[i], shape_numel(&n->shape), n->dtype, &worst);
		least = fmin(least, err);
		most = fmax(most, err);
		CHECK(err > TF32_FLOOR, "%s: %s is as exact as float32 (error %.3g): no TF32 products", h->name, n->name,
		      err);
	}
}

static void emulate(bool on)
{
	cg_gpu_emulation(on);
	cg_gpu_emulation_mma(on ? unit : NULL, 0, lane_models, LANE_NMODELS);
}

/* Whether h, compiled emulated, has a GEMM kernel on wgmma (its tiles' note). */
static bool emulated_wgmma(CgHarness *h)
{
	CgOutput out;
	emulate(true);
	bool ok = ch_compile(h, false, &out), wg = false;
	emulate(false);
	for (int i = 0; ok && i < out.nkernels; i++)
		wg = wg || strstr(out.kernels[i].tiles.instr, "wgmma m64n") != NULL;
	if (ok)
		cg_output_free(&out);
	else
		tu_failures++;
	return wg;
}

/* An anchor graph: emulated against the reference, then the GPU targets. */
static void run(CgHarness *h)
{
	h->g->train.precision = PREC_TF32;
	h->tol = TF32_TOL;
	h->scale = TF32_SCALE;
	CHECK(strcmp(unit, "sm_90") || emulated_wgmma(h), "%s [sm_90]: no GEMM kernel on wgmma", h->name);
	emulate(true);
	int bad = ch_run(h);
	emulate(false);
	tu_failures += bad;
	if (!bad) {
		tf32_is_used(h);
		targets(h);
		fp32_has_no_mma(h);
	}
	ch_free(h);
}

/* ---- split-K and fused epilogues ---- */

/* A planned fused graph, emulated with split-K and the mma path: every kernel runs, then each
 * group's outputs are compared after its last kernel. */
static void run_fused(CgHarness *h, bool want_split)
{
	h->g->train.precision = PREC_TF32;
	h->tol = TF32_TOL;
	h->scale = TF32_SCALE;
	int splits;
	cf_mma_arch = unit;
	int bad = cf_run_split_k(h, true, &splits);
	tu_failures += bad;
	CHECK(!want_split || splits > 0, "%s: no group splits K", h->name);
	if (!bad)
		tf32_is_used(h);
	targets(h);
	ch_free(h);
}

/* matmul(a, b) of long K, bias_add(relu(.)) fused after it. */
static void matmul_epilogue(int m, int nn, int k, int ta, int tb, bool epilogue, bool want_split)
{
	char prefix[32];
	snprintf(prefix, sizeof prefix, "tf32 %s ", unit);
	CgHarness *h = cf_matmul_case(prefix, m, nn, k, ta, tb, epilogue, false);
	run_fused(h, want_split);
}

/* dw = conv2d_grad_weight(dy, x) of a 3x3 convolution (split over K at these sizes), with
 * w + dw * s fused after it. */
static void grad_weight_epilogue(int n, int cin, int hw, int cout)
{
	char name[128];
	snprintf(name, sizeof name, "tf32 %s grad_weight x[%d,%d,%d,%d] cout %d + epilogue", unit, n, cin, hw, hw, cout);
	CgHarness *h = ch_new(name);
	cf_grad_weight_update(h, DT_F32, n, cin, hw, cout);
	run_fused(h, true);
}

int main(void)
{
	ch_start("test_cg_tf32");
	anchor_run_convs(run, 4, 2);
	/* the wide tiles: 128 x 128 (64 x 32 warp tiles), 128 x 64, 64 x 128 */
	run(anchor_conv((Conv){64, 1, 15, 17, 250, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F32));
	run(anchor_conv((Conv){43, 1, 10, 15, 250, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F32));
	anchor_run_matmuls(run, false);
	run(anchor_matmul(300, 520, 40, 0xf));
	grad_weight_epilogue(3, 1, 28, 32);
	grad_weight_epilogue(2, 32, 26, 64);
	for (int t = 0; t < 4; t++)
		matmul_epilogue(24, 40, 1500, t & 1, t >> 1, t == 3, true);
	matmul_epilogue(100, 70, 260, 0, 1, true, false);
	/* sm_90's wgmma: A along k and B stored n x k (along k) on 64- and 128-row tiles, K past the
	 * last whole k-block; NHWC convolutions, whose forward GEMM reads windows and OHWI weights along
	 * k (16 channels; 8 at stride 2) */
	unit = "sm_90";
	printf("tf32 on sm_90 (wgmma)\n");
	run(anchor_matmul(1024, 1024, 40, 1u << 2));
	run(anchor_matmul(2048, 512, 100, 1u << 2));
	/* split-K slices on wgmma, as vgg16's fc6 (the planned graph's sm_90 PTX has the wgmma) */
	matmul_epilogue(64, 2048, 8192, 0, 1, true, true);
	run(anchor_conv_in((Conv){32, 16, 16, 16, 128, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F32, LAYOUT_NHWC));
	run(anchor_conv_in((Conv){72, 8, 24, 20, 128, 3, 3, 2, 2, 1, 1, 1, 1}, DT_F32, LAYOUT_NHWC));
	/* gfx942's xf32 (wave64, 64 x 64 tiles): the shared geometries, MNIST's convolutions, the
	 * matmuls and split-K */
	unit = "gfx942";
	printf("tf32 on gfx942 (%s)\n", xf32);
	anchor_run_convs(run, 4, 2);
	anchor_run_matmuls(run, false);
	grad_weight_epilogue(2, 32, 26, 64);
	matmul_epilogue(24, 40, 1500, 1, 0, true, true);
	printf("float32 GEMM errors against float64: %.3g to %.3g (tolerance %.3g, floor %.3g)\n", least, most,
	       TF32_TOL, TF32_FLOOR);
	return tu_finish("test_cg_tf32");
}
