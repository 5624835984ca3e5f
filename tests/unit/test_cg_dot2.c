/* test_cg_dot2.c: --precision fp16 on AMD targets without matrix units that have v_dot2_f32_f16
 * (gfx906, gfx1030): the GPU template's register tiles read k-pairs of halves from LDS and
 * multiply them by the dot product instruction, accumulating in float32.
 *
 * Each graph is checked twice per target:
 * - emulated on the host as that target (cg_gpu_emulation_mma with the target's name: no matrix
 *   rows, so the register tiles run, with the target's dot2 bit): the staging's conversion to f16,
 *   the k-pair words in LDS, the register tiles' word reads and the sums in pair order run for
 *   real, and the instruction is two float32 multiply-adds of the exact products; against the
 *   float64 reference within the half type's tolerance (a wrong half or word gives errors of the
 *   order of the outputs);
 * - compiled for the target: its assembly has the instruction (v_dot2_f32_f16, or gfx10.3's
 *   v_dot2c_f32_f16), which the same graph in fp32 does not.
 * Cases: conv2d forward, input and weight gradients with strides, padding and dilation, odd
 * matmul sizes of every transpose, and a weight gradient split over K with the update fused. */
#include "codegen/gemm_gpu.h"
#include "codegen/target.h"
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/cg_fused_harness.h"

static const char *const archs[] = {"gfx906", "gfx1030"};
static CgTarget target;

static void emulate(bool on)
{
	cg_gpu_emulation(on);
	cg_gpu_emulation_mma(on ? target.arch : NULL, 0, NULL, 0);
}

/* The target's assembly has the dot product in fp16 and not in fp32. */
static void compiled(CgHarness *h)
{
	for (int fp16 = 0; fp16 < 2; fp16++) {
		h->g->train.precision = fp16 ? PREC_FP16 : PREC_FP32;
		CgOutput out;
		char err[1024];
		if (!cg_compile(h->g, &target, true, &out, err, sizeof err)) {
			FAIL("%s [%s]: %s", h->name, target.name, err);
			continue;
		}
		bool has = out.assembly && strstr(out.assembly, "v_dot2");
		CHECK(has == (fp16 == 1), "%s [%s, %s]: %s v_dot2 in the assembly", h->name, target.name,
		      fp16 ? "fp16" : "fp32", has ? "a" : "no");
		cg_output_free(&out);
	}
	h->g->train.precision = PREC_FP16;
}

static void run(CgHarness *h)
{
	h->g->train.precision = PREC_FP16;
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
	snprintf(name, sizeof name, "%s dot2 grad_weight split + update", target.arch);
	CgHarness *h = ch_new(name);
	h->g->train.precision = PREC_FP16;
	cf_grad_weight_update(h, DT_F16, 2, 32, 26, 64);
	int splits;
	cf_mma_arch = target.arch;
	cf_mma_wave = 0;
	tu_failures += cf_run_split_k(h, true, &splits);
	CHECK(splits > 0, "%s: no group splits K", h->name);
	ch_free(h);
}

int main(void)
{
	ch_start("test_cg_dot2");
	for (size_t a = 0; a < sizeof archs / sizeof *archs; a++) {
		char err[256];
		CgTargetOptions o = {0};
		if (!cg_target_lookup(archs[a], &o, &target, err, sizeof err)) {
			FAIL("%s: %s", archs[a], err);
			continue;
		}
		CHECK(target.matrix & CG_MATRIX_DOT2, "%s: no dot2 in the target table", archs[a]);
		CHECK(!cg_gemm_gpu_unit_row(&target, CG_MELEM_F16), "%s: a matrix row for f16", archs[a]);
		for (size_t i = 0; i < ANCHOR_NCONVS; i++)
			if (i == 2 || i == 3 || i == 5)
				run(anchor_conv(anchor_convs[i].geo, DT_F16));
		run(anchor_conv((Conv){16, 8, 15, 17, 70, 3, 3, 1, 1, 1, 1, 1, 1}, DT_F16));
		run(anchor_matmul_of(7, 13, 5, 0xf, DT_F16));
		run(anchor_matmul_of(65, 130, 33, 0xf, DT_F16));
		grad_weight_split();
	}
	return tu_finish("test_cg_dot2");
}
