/* test_cg_packed_half.c: --packed-half on targets whose half GEMMs have no matrix unit: the GPU
 * template's register tiles multiply pairs of neighbouring columns by packed half FMAs, sum each
 * k-block in the half type and add it to float32 accumulators (codegen/gemm_gpu.h,
 * GPU_HALF_PACKED).
 *
 * Targets: gfx900 in fp16 (v_pk_fma_f16; it has no dot product), sm_75 in fp16 (fma.rn.f16x2;
 * netc uses no matrix unit there), and sm_90 with --no-matrix-units in fp16 and bf16
 * (fma.rn.f16x2, fma.rn.bf16x2). Each graph is checked twice per target:
 * - emulated on the host as that target with its options (the same IR: halves staged into LDS,
 *   the quads of halves read back, the pairs, the packed FMAs in the half type, their widening):
 *   against the float64 reference within the half type's tolerance, and with a bound on the error
 *   that the half sums may add (PACKED_TOL below): a wrong half, pair or partial sum gives errors
 *   of the order of the outputs;
 * - compiled for the target: its assembly has the packed instruction with --packed-half, and not
 *   without it (the f32-register path).
 * Cases: conv2d forward, input and weight gradients with strides, padding and dilation, odd
 * matmul sizes of every transpose, and a weight gradient split over K with the update fused. */
#include "codegen/gemm_gpu.h"
#include "codegen/target.h"
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/cg_fused_harness.h"

static const struct {
	const char *arch;
	DType dt;
	bool no_units; /* --no-matrix-units: the target has matrix units that would take the GEMM */
	const char *instr; /* in the assembly */
} cases[] = {
	{"gfx900", DT_F16, false, "v_pk_fma_f16"},
	{"sm_75", DT_F16, false, "fma.rn.f16x2"},
	{"sm_90", DT_F16, true, "fma.rn.f16x2"},
	{"sm_90", DT_BF16, true, "fma.rn.bf16x2"},
};

/* The largest relative error (of the largest output, as ch_compare measures) a packed GEMM may
 * show: its partial sums of k-blocks of up to 16 products round at each of up to 16 additions
 * (2^-11 for f16, 2^-8 for bf16, relative), on top of the operands' own rounding; outputs of sums
 * of random signs are about sqrt(K) times a product while the partials' errors add up as a random
 * walk too, so a few units of rounding of the result bound it with room. Tighter than bf16's
 * dtype tolerance (0.1), which would let a lost pair through. */
static double packed_tol(DType dt) { return dt == DT_BF16 ? 3e-2 : 5e-3; }

static PrecisionKind precision_of(DType dt) { return dt == DT_BF16 ? PREC_BF16 : PREC_FP16; }

static int c; /* the case being run */
static CgTarget target, plain;

static void emulate(bool on)
{
	cg_gpu_emulation(on);
	CgTargetOptions o = {.no_matrix_units = cases[c].no_units, .packed_half = true};
	cg_gpu_emulation_target(on ? cases[c].arch : NULL, &o, NULL, 0);
}

/* The target's assembly has the packed instruction with --packed-half and not without. */
static void compiled(CgHarness *h)
{
	for (int packed = 0; packed < 2; packed++) {
		CgOutput out;
		char err[1024];
		if (!cg_compile(h->g, packed ? &target : &plain, true, &out, err, sizeof err)) {
			FAIL("%s [%s]: %s", h->name, target.name, err);
			continue;
		}
		bool has = out.assembly && strstr(out.assembly, cases[c].instr);
		CHECK(has == (packed == 1), "%s [%s, %s]: %s %s in the assembly", h->name, target.name,
		      packed ? "packed" : "not packed", has ? "a" : "no", cases[c].instr);
		cg_output_free(&out);
	}
}

static void run(CgHarness *h)
{
	h->g->train.precision = precision_of(cases[c].dt);
	h->tol = packed_tol(cases[c].dt);
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
	snprintf(name, sizeof name, "%s packed %s grad_weight split + update", cases[c].arch, dtype_name(cases[c].dt));
	CgHarness *h = ch_new(name);
	h->g->train.precision = precision_of(cases[c].dt);
	h->tol = packed_tol(cases[c].dt);
	cf_grad_weight_update(h, cases[c].dt, 2, 32, 26, 64);
	int splits;
	cf_mma_arch = cases[c].arch;
	cf_mma_wave = 0;
	cf_mma_options = (CgTargetOptions){.no_matrix_units = cases[c].no_units, .packed_half = true};
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
	ch_start("test_cg_packed_half");
	options();
	for (c = 0; c < (int)(sizeof cases / sizeof *cases); c++) {
		char err[256];
		CgTargetOptions o = {.no_matrix_units = cases[c].no_units, .packed_half = true};
		CgTargetOptions p = {.no_matrix_units = cases[c].no_units};
		if (!cg_target_lookup(cases[c].arch, &o, &target, err, sizeof err) ||
		    !cg_target_lookup(cases[c].arch, &p, &plain, err, sizeof err)) {
			FAIL("%s: %s", cases[c].arch, err);
			continue;
		}
		DType dt = cases[c].dt;
		for (size_t i = 0; i < ANCHOR_NCONVS; i++)
			if (i == 2 || i == 3 || i == 5)
				run(anchor_conv(anchor_convs[i].geo, dt));
		run(anchor_conv((Conv){16, 8, 15, 17, 70, 3, 3, 1, 1, 1, 1, 1, 1}, dt));
		run(anchor_matmul_of(7, 13, 5, 0xf, dt));
		run(anchor_matmul_of(65, 130, 33, 0xf, dt));
		/* NVIDIA: 256 work-groups of 128 x 128, the 8 x 8 register tiles */
		run(anchor_matmul_of(128, target.ops->gemm_wide_tiles ? 32768 : 512, 40, 0x1, dt));
		grad_weight_split();
	}
	return tu_finish("test_cg_packed_half");
}
