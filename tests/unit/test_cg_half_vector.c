/* test_cg_half_vector.c: --precision fp16 and bf16 on targets whose half GEMMs have no matrix unit,
 * where the GPU template's register tiles multiply two halves per instruction (codegen/gemm_gpu.h,
 * GpuHalfMath):
 * - dot2: v_dot2_f32_f16 on gfx906 and gfx1030 in fp16: k-pairs of halves in LDS, exact
 *   products, float32 sums;
 * - packed (--packed-half): packed FMAs on pairs of neighbouring columns, each k-block summed in
 *   the half type and added to float32 accumulators: gfx900 in fp16 (v_pk_fma_f16; it has no dot
 *   product), sm_75 in fp16 (fma.rn.f16x2; netc uses no matrix unit there), and sm_90 with
 *   --no-matrix-units in fp16 and bf16 (fma.rn.f16x2, fma.rn.bf16x2).
 *
 * Each graph is checked twice per case:
 * - emulated on the host as that target with its options (the same IR: the staging's conversion to
 *   the half type, the words or halves in LDS, the register tiles' reads, the sums in order; the
 *   instruction as float32 multiply-adds of its exact products, packed ones rounded to the half
 *   type): against the float64 reference within the case's tolerance, tighter than bf16's dtype
 *   tolerance (0.1), which would let a lost pair through (a wrong half, word, pair or partial sum
 *   gives errors of the order of the outputs);
 * - compiled for the target: its assembly has the instruction, which the baseline (fp32 for dot2,
 *   the same precision without --packed-half for packed) does not.
 * Cases: conv2d forward, input and weight gradients with strides, padding and dilation, odd
 * matmul sizes of every transpose, 256 work-groups of 128 x 128 (NVIDIA's 8 x 8 register tiles),
 * and a weight gradient split over K with the update fused. */
#include "codegen/gemm_gpu.h"
#include "codegen/target.h"
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/cg_fused_harness.h"

/* The largest relative error (of the largest output, as ch_compare measures) a case may show.
 * dot2: products exact, sums in float32, so the operands' own rounding; packed: the k-block's
 * partial sums of up to 16 products round at each addition (2^-11 for f16, 2^-8 for bf16,
 * relative), and outputs of random signs are about sqrt(K) products while the partials' errors
 * add up as a random walk too, so a few units of rounding of the result bound it with room. */
static const struct {
	const char *arch;
	DType dt;
	CgTargetOptions options;
	const char *instr;     /* in the assembly */
	double tol;
} cases[] = {
	{"gfx906", DT_F16, {0}, "v_dot2", 5e-3},
	{"gfx1030", DT_F16, {0}, "v_dot2", 5e-3}, /* or gfx10.3's v_dot2c_f32_f16 */
	{"gfx900", DT_F16, {.packed_half = true}, "v_pk_fma_f16", 5e-3},
	{"sm_75", DT_F16, {.packed_half = true}, "fma.rn.f16x2", 5e-3},
	{"sm_90", DT_F16, {.no_matrix_units = true, .packed_half = true}, "fma.rn.f16x2", 5e-3},
	{"sm_90", DT_BF16, {.no_matrix_units = true, .packed_half = true}, "fma.rn.bf16x2", 3e-2},
};

static int c; /* the case being run */
static CgTarget target, baseline;

static PrecisionKind precision_of(DType dt) { return dt == DT_BF16 ? PREC_BF16 : PREC_FP16; }

static void emulate(bool on)
{
	cg_gpu_emulation(on);
	cg_gpu_emulation_target(on ? cases[c].arch : NULL, &cases[c].options, NULL, 0);
}

/* The target's assembly has the instruction, the baseline's not: for dot2 the same target in
 * fp32, for packed the target without --packed-half. */
static void compiled(CgHarness *h)
{
	bool packed = cases[c].options.packed_half;
	for (int base = 0; base < 2; base++) {
		h->g->train.precision = base && !packed ? PREC_FP32 : precision_of(cases[c].dt);
		CgOutput out;
		char err[1024];
		if (!cg_compile(h->g, base && packed ? &baseline : &target, true, &out, err, sizeof err)) {
			FAIL("%s [%s]: %s", h->name, target.name, err);
			continue;
		}
		bool has = out.assembly && strstr(out.assembly, cases[c].instr);
		CHECK(has == !base, "%s [%s%s]: %s %s in the assembly", h->name, target.name, base ? ", baseline" : "",
		      has ? "a" : "no", cases[c].instr);
		cg_output_free(&out);
	}
	h->g->train.precision = precision_of(cases[c].dt);
}

static void run(CgHarness *h)
{
	h->g->train.precision = precision_of(cases[c].dt);
	h->tol = cases[c].tol;
	emulate(true);
	int bad = ch_run(h);
	emulate(false);
	tu_failures += bad;
	if (!bad)
		compiled(h);
	ch_free(h);
}

/* A 3x3 weight gradient split over K with w + dw * s fused after it. */
static void grad_weight_split(void)
{
	char name[96];
	snprintf(name, sizeof name, "%s %s %s grad_weight split + update", cases[c].arch, cases[c].instr,
		 dtype_name(cases[c].dt));
	CgHarness *h = ch_new(name);
	h->g->train.precision = precision_of(cases[c].dt);
	h->tol = cases[c].tol;
	cf_grad_weight_update(h, cases[c].dt, 2, 32, 26, 64);
	int splits;
	cf_mma_arch = cases[c].arch;
	cf_mma_wave = 0;
	cf_mma_options = cases[c].options;
	tu_failures += cf_run_split_k(h, true, &splits);
	cf_mma_options = (CgTargetOptions){0};
	CHECK(splits > 0, "%s: no group splits K", h->name);
	ch_free(h);
}

/* What the options do to the target: --packed-half is recorded, --no-matrix-units clears the
 * matrix units and keeps the dot and packed bits. */
static void options(void)
{
	char err[256];
	CgTarget t;
	CHECK(cg_target_lookup("sm_90", &(CgTargetOptions){.no_matrix_units = true}, &t, err, sizeof err), "%s", err);
	CHECK(!(t.matrix & CG_MATRIX_UNITS) && (t.matrix & CG_MATRIX_PACKED_BF16) && !t.packed_half,
	      "sm_90 --no-matrix-units: matrix bits %#x", t.matrix);
	CHECK(!cg_gemm_gpu_unit_row(&t, CG_MELEM_BF16), "sm_90 --no-matrix-units: a matrix row for bf16");
	CHECK(cg_target_lookup("gfx1100", &(CgTargetOptions){.no_matrix_units = true, .packed_half = true}, &t, err,
			       sizeof err),
	      "%s", err);
	CHECK(!(t.matrix & CG_MATRIX_UNITS) && (t.matrix & CG_MATRIX_DOT2) && t.packed_half,
	      "gfx1100 --no-matrix-units --packed-half: matrix bits %#x", t.matrix);
	CHECK(cg_target_lookup("gfx803", &(CgTargetOptions){.packed_half = true}, &t, err, sizeof err), "%s", err);
	CHECK(!(t.matrix & (CG_MATRIX_PACKED_F16 | CG_MATRIX_PACKED_BF16)), "gfx803 has packed halves in the table");
}

int main(void)
{
	ch_start("test_cg_half_vector");
	options();
	for (c = 0; c < (int)(sizeof cases / sizeof *cases); c++) {
		char err[256];
		CgTargetOptions plain = cases[c].options;
		plain.packed_half = false;
		if (!cg_target_lookup(cases[c].arch, &cases[c].options, &target, err, sizeof err) ||
		    !cg_target_lookup(cases[c].arch, &plain, &baseline, err, sizeof err)) {
			FAIL("%s: %s", cases[c].arch, err);
			continue;
		}
		CHECK(!cg_gemm_gpu_unit_row(&target, cases[c].dt == DT_BF16 ? CG_MELEM_BF16 : CG_MELEM_F16),
		      "%s: a matrix row for the case's type", cases[c].arch);
		DType dt = cases[c].dt;
		for (size_t i = 0; i < ANCHOR_NCONVS; i++)
			if (i == 2 || i == 3 || i == 5)
				run(anchor_conv(anchor_convs[i].geo, dt));
		run(anchor_conv((Conv){16, 8, 15, 17, 70, 3, 3, 1, 1, 1, 1, 1, 1}, dt));
		run(anchor_matmul_of(7, 13, 5, 0xf, dt));
		run(anchor_matmul_of(65, 130, 33, 0xf, dt));
		if (target.ops->gemm_wide_tiles)
			run(anchor_matmul_of(128, 32768, 40, 0x1, dt));
		grad_weight_split();
	}
	return tu_finish("test_cg_half_vector");
}
