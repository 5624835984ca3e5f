/* test_cg_mma_half.c: --precision fp16 and bf16 in the GPU GEMM template: warp tiles of
 * mma.sync m16n8k16 on half operands, which LDS holds two along k per 32-bit word, with float32
 * accumulators.
 *
 * As test_cg_tf32.c, each graph is checked twice:
 * - emulated on the host with the mma path on (cg_gpu_emulation_mma): the staging's conversion
 *   to the half type, the k-pair layout of LDS, the warp tiles, c_at and the epilogue run for
 *   real, against the float64 reference within the half type's tolerance (a misplaced k-pair or
 *   row gives errors of the order of the outputs);
 * - compiled for sm_80 and sm_90: the PTX has the m16n8k16 instruction of the type and ptxas
 *   accepts it; under --precision fp32 the same graph has no mma.sync.
 * The fragment loads themselves only run on a GPU (scripts/gpu/mma_check.sh).
 * Cases: conv2d forward, input and weight gradients over the shared geometries and the wide
 * tiles, matmuls of every transpose (long K, odd sizes), and a weight gradient split over K with
 * the update fused after it. */
#include "codegen/gemm_gpu.h"
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/cg_fused_harness.h"

typedef struct {
	DType type;
	PrecisionKind precision;
	const char *ptx;
} Mode;

static const Mode modes[] = {
	{DT_BF16, PREC_BF16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"},
	{DT_F16, PREC_FP16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
};

static const Mode *mode;

/* sm_80 and sm_90: the instruction in the PTX, and ptxas accepts it; fp32: no mma.sync. */
static void targets(CgHarness *h)
{
	static const char *const nv[] = {"sm_80", "sm_90"};
	for (size_t i = 0; i < sizeof nv / sizeof *nv; i++) {
		CgOutput out;
		if (!cf_compile(h, nv[i], &out)) {
			tu_failures++;
			continue;
		}
		CHECK(strstr((const char *)out.code, mode->ptx) != NULL, "%s [%s]: no %s in the PTX", h->name, nv[i],
		      mode->ptx);
		tu_failures += cf_ptxas(h, nv[i], &out);
		cg_output_free(&out);
	}
	h->g->train.precision = PREC_FP32;
	CgOutput out;
	if (cf_compile(h, "sm_90", &out)) {
		CHECK(!strstr((const char *)out.code, "mma.sync"), "%s [sm_90, fp32]: mma.sync in the PTX", h->name);
		cg_output_free(&out);
	} else {
		tu_failures++;
	}
	h->g->train.precision = mode->precision;
}

static void emulate(bool on)
{
	cg_gpu_emulation(on);
	cg_gpu_emulation_mma(on);
}

/* A graph: emulated against the reference, then the GPU targets. */
static void run(CgHarness *h)
{
	h->g->train.precision = mode->precision;
	emulate(true);
	int bad = ch_run(h);
	emulate(false);
	tu_failures += bad;
	if (!bad)
		targets(h);
	ch_free(h);
}

/* C = op(A) op(B) of half operands, every transpose in one graph. */
static CgHarness *matmul(int m, int n, int k)
{
	char name[96], da[32], db[32];
	snprintf(name, sizeof name, "%s matmul %dx%dx%d", dtype_name(mode->type), m, n, k);
	CgHarness *h = ch_new(name);
	for (int t = 0; t < 4; t++) {
		int ta = t & 1, tb = t >> 1;
		snprintf(da, sizeof da, ta ? "%d,%d" : "%2$d,%1$d", k, m);
		snprintf(db, sizeof db, tb ? "%d,%d" : "%2$d,%1$d", n, k);
		int a = ch_param(h, mode->type, da), b = ch_param(h, mode->type, db);
		double attr[2] = {ta, tb};
		ch_op(h, OP_matmul, attr, a, b);
	}
	return h;
}

/* dw = conv2d_grad_weight(dy, x) of a 3x3 convolution, split over K at these sizes, with
 * w + dw * s fused after it: every kernel runs emulated, each group checked after its last. */
static void grad_weight_split(int n, int cin, int hw, int cout)
{
	char name[128], dims[64];
	snprintf(name, sizeof name, "%s grad_weight x[%d,%d,%d,%d] cout %d + update", dtype_name(mode->type), n, cin, hw,
		 hw, cout);
	CgHarness *h = ch_new(name);
	h->g->train.precision = mode->precision;
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", n, cout, hw - 2, hw - 2);
	int dy = ch_param(h, mode->type, dims);
	snprintf(dims, sizeof dims, "%d,%d,%d,%d", n, cin, hw, hw);
	int x = ch_param(h, mode->type, dims);
	double a[IR_MAX_ATTRS] = {1, 1, 0, 0, 1, 1, 3, 3};
	int dw = ch_op(h, OP_conv2d_grad_weight, a, dy, x);
	snprintf(dims, sizeof dims, "%d,%d,3,3", cout, cin);
	int w = ch_param(h, mode->type, dims), s = ch_param(h, mode->type, dims);
	int scaled = ch_op(h, OP_mul, NULL, dw, s);
	int upd = ch_op(h, OP_add, NULL, w, scaled);
	cf_group(h, (int[]){dw, scaled, upd}, 3);
	int splits;
	int bad = cf_run_split_k(h, true, &splits);
	tu_failures += bad;
	CHECK(splits > 0, "%s: no group splits K", h->name);
	if (!bad)
		targets(h);
	ch_free(h);
}

int main(void)
{
	ch_start("test_cg_mma_half");
	for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
		mode = &modes[m];
		for (size_t i = 0; i < ANCHOR_NCONVS; i++)
			run(anchor_conv(anchor_convs[i].geo, mode->type));
		/* the wide tiles: 128 x 128 (64 x 32 warp tiles), 128 x 64 */
		run(anchor_conv((Conv){64, 1, 15, 17, 250, 3, 3, 1, 1, 1, 1, 1, 1}, mode->type));
		run(anchor_conv((Conv){43, 1, 10, 15, 250, 3, 3, 1, 1, 1, 1, 1, 1}, mode->type));
		run(matmul(7, 13, 5));
		run(matmul(65, 130, 33));
		run(matmul(3, 40, 700));
		grad_weight_split(2, 32, 26, 64);
	}
	return tu_finish("test_cg_mma_half");
}
