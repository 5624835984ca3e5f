/* test_cg_mma_f32.c: --precision fp32 on CDNA's matrix cores: the GPU GEMM template's warp tiles
 * of v_mfma_f32_16x16x4f32 (wave64, full f32 products and f32 accumulators), which gfx908, gfx90a
 * and gfx942 take for float32 GEMMs (docs/codegen.md, "AMD matrix units"), and tf32 on gfx90a (no
 * xf32), which compiles as fp32.
 *
 * No AMD GPU is at hand, so each graph is checked twice per target:
 * - emulated on the host as gfx90a or gfx942 (cg_gpu_emulation_mma): the work-items stage the
 *   tiles, load their fragments through the row's a_at and b_at and keep the accumulators in its C
 *   layout, while the instruction runs through its lane model (tests/unit/matrix_lane_models.h);
 *   against the float64 reference within float32's tolerance (the products are not rounded);
 * - compiled for the target: where the graph has a float32 GEMM, the assembly has the f32 MFMA
 *   (float64 GEMMs stay SIMT).
 * Cases: conv2d forward, input and weight gradients (the shared geometries, MNIST's shapes), every
 * matmul transpose, and a weight gradient split over K with the update fused after it. */
#include "codegen/gemm_gpu.h"
#include "codegen/target.h"
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/cg_fused_harness.h"

typedef struct {
	const char *arch, *mnemonic;
} Unit;

static const Unit units[] = {{"gfx90a", "v_mfma_f32_16x16x4f32"}, {"gfx942", "v_mfma_f32_16x16x4_f32"}};
static const Unit *unit;
static PrecisionKind precision;

/* The target's assembly has the f32 MFMA. */
static void amd_target(CgHarness *h)
{
	CgTarget t;
	CgOutput out;
	char err[1024];
	CgTargetOptions o = {0};
	if (!cg_target_lookup(unit->arch, &o, &t, err, sizeof err) || !cg_compile(h->g, &t, true, &out, err, sizeof err)) {
		FAIL("%s [%s]: %s", h->name, unit->arch, err);
		return;
	}
	CHECK(!cf_has_f32_gemm(h->g) || strstr(out.assembly, unit->mnemonic), "%s [%s]: no %s in the assembly", h->name, unit->arch,
	      unit->mnemonic);
	cg_output_free(&out);
}

static void run(CgHarness *h)
{
	h->g->train.precision = precision;
	cg_gpu_emulation(true);
	cg_gpu_emulation_mma(unit->arch, 0, lane_models, LANE_NMODELS);
	int bad = ch_run(h);
	cg_gpu_emulation_mma(NULL, 0, NULL, 0);
	cg_gpu_emulation(false);
	tu_failures += bad;
	if (!bad)
		amd_target(h);
	ch_free(h);
}

/* dw = conv2d_grad_weight(dy, x) of a 3x3 convolution, split over K at these sizes, with
 * w + dw * s fused after it: every kernel runs emulated, each group checked after its last. */
static void grad_weight_split(int n, int cin, int hw, int cout)
{
	char name[128];
	snprintf(name, sizeof name, "%s grad_weight x[%d,%d,%d,%d] cout %d + update", unit->arch, n, cin, hw, hw, cout);
	CgHarness *h = ch_new(name);
	h->g->train.precision = precision;
	cf_grad_weight_update(h, DT_F32, n, cin, hw, cout);
	int splits;
	cf_mma_arch = unit->arch;
	cf_mma_wave = 0;
	int bad = cf_run_split_k(h, true, &splits);
	tu_failures += bad;
	CHECK(splits > 0, "%s: no group splits K", h->name);
	if (!bad)
		amd_target(h);
	ch_free(h);
}

int main(void)
{
	ch_start("test_cg_mma_f32");
	for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
		unit = &units[u];
		precision = PREC_FP32;
		printf("fp32 on %s (%s)\n", unit->arch, unit->mnemonic);
		anchor_run_convs(run, 4, 2);
		anchor_run_matmuls(run, false);
		grad_weight_split(2, 32, 26, 64);
	}
	/* tf32 where the unit has no TF32 products: as fp32 */
	unit = &units[0];
	precision = PREC_TF32;
	printf("tf32 on %s: as fp32 (%s)\n", unit->arch, unit->mnemonic);
	run(anchor_conv((Conv){2, 3, 12, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F32));
	run(anchor_matmul(65, 130, 33, 0xf));
	return tu_finish("test_cg_mma_f32");
}
