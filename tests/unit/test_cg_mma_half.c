/* test_cg_mma_half.c: --precision fp16 and bf16 in the GPU GEMM template on every matrix unit:
 * warp tiles of NVIDIA's mma.sync m16n8k16, CDNA's MFMA (16x16x16 f16 and bf16_1k, gfx908's
 * 16x16x8 bf16; wave64), RDNA 3's WMMA (wave32 and wave64) and RDNA 4's, on half operands that
 * LDS holds in words of the runs of k a fragment register holds, with float32 accumulators.
 *
 * Each graph is checked twice per unit:
 * - emulated on the host as that unit's target (cg_gpu_emulation_mma): the staging's conversion
 *   to the half type, the LDS words, the warp tiles of the unit's wave, the fragment loads through
 *   the row's a_at and b_at, and c_at run for real, while the instruction itself runs through the
 *   lane model of its document (tests/unit/matrix_lane_models.h); against the float64 reference
 *   within the half type's tolerance (a misplaced element, lane or k run gives errors of the order
 *   of the outputs);
 * - compiled for the unit's target: NVIDIA's PTX has the m16n8k16 instruction and ptxas accepts it
 *   (fp32: no mma.sync); an AMD target's assembly of the split-K case has the row's mnemonic
 *   (tests/lit/targets/amd_matrix.test checks every GEMM kernel of a model).
 * Cases: conv2d forward, input and weight gradients over the shared geometries and the wide
 * tiles, matmuls of every transpose (long K, odd sizes), and a weight gradient split over K with
 * the update fused after it; NVIDIA all of them, each AMD row a subset (strides, padding and
 * dilation, the 64 x 64 tiles, odd matmul sizes, split-K). */
#include "codegen/gemm_gpu.h"
#include "codegen/target.h"
#include "tests/unit/cg_anchor_cases.h"
#include "tests/unit/cg_fused_harness.h"

typedef struct {
	DType type;
	PrecisionKind precision;
	CgMatrixElem elem;
	const char *ptx, *wgmma;
} Mode;

static const Mode modes[] = {
	{DT_BF16, PREC_BF16, CG_MELEM_BF16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", ".f32.bf16.bf16 {"},
	{DT_F16, PREC_FP16, CG_MELEM_F16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", ".f32.f16.f16 {"},
};

/* The graphs of the wgmma cases: their sm_90 PTX must have wgmma. */
static bool want_wgmma;

/* A target whose unit is emulated, at a wave size (0: its default). */
typedef struct {
	const char *arch;
	int wave;
} Unit;

static const Unit units[] = {{"sm_80", 0}, {"sm_90", 0}, {"gfx908", 0}, {"gfx90a", 0}, {"gfx942", 0},
			     {"gfx1100", 0}, {"gfx1100", 64}, {"gfx1200", 0}};

static const Mode *mode;
static const Unit *unit;
static CgTarget unit_target;
static const CgMatrixInstr *unit_instr;

/* Whether the PTX has a wgmma of the mode's operands. */
static bool has_wgmma(const CgOutput *out)
{
	const char *at = strstr((const char *)out->code, "wgmma.mma_async.sync.aligned.m64n");
	return at && strstr(at, mode->wgmma);
}

/* sm_80 and sm_90: the instruction in the PTX (sm_90: mma.sync or wgmma; the wgmma cases' wgmma),
 * and ptxas accepts it; fp32: no mma.sync. */
static void nvidia_targets(CgHarness *h)
{
	static const char *const nv[] = {"sm_80", "sm_90"};
	for (size_t i = 0; i < sizeof nv / sizeof *nv; i++) {
		CgOutput out;
		if (!cf_compile(h, nv[i], &out)) {
			tu_failures++;
			continue;
		}
		bool sm90 = !strcmp(nv[i], "sm_90"), mma = strstr((const char *)out.code, mode->ptx) != NULL;
		CHECK(mma || (sm90 && has_wgmma(&out)), "%s [%s]: no %s in the PTX", h->name, nv[i], mode->ptx);
		CHECK(!sm90 || !want_wgmma || has_wgmma(&out), "%s [sm_90]: no wgmma in the PTX", h->name);
		tu_failures += cf_ptxas(h, nv[i], &out);
		cg_output_free(&out);
	}
	h->g->train.precision = PREC_FP32;
	CgOutput out;
	if (cf_compile(h, "sm_90", &out)) {
		CHECK(!strstr((const char *)out.code, "mma.sync") && !strstr((const char *)out.code, "wgmma"),
		      "%s [sm_90, fp32]: mma.sync or wgmma in the PTX", h->name);
		cg_output_free(&out);
	} else {
		tu_failures++;
	}
	h->g->train.precision = mode->precision;
}

/* The AMD target's assembly has the row's mnemonic for it. */
static void amd_target(CgHarness *h)
{
	const char *mnemonic = NULL;
	for (int i = 0; i < CG_MATRIX_MAX_ARCHS && unit_instr->on[i].arch; i++)
		if (!strcmp(unit_instr->on[i].arch, unit_target.arch))
			mnemonic = unit_instr->on[i].mnemonic;
	CgOutput out;
	char err[1024];
	if (!cg_compile(h->g, &unit_target, true, &out, err, sizeof err)) {
		FAIL("%s [%s]: %s", h->name, unit_target.name, err);
		return;
	}
	CHECK(mnemonic && out.assembly && strstr(out.assembly, mnemonic), "%s [%s wave%d]: no %s in the assembly",
	      h->name, unit_target.name, unit_target.wave, mnemonic ? mnemonic : unit_instr->name);
	cg_output_free(&out);
}

static void emulate(bool on)
{
	cg_gpu_emulation(on);
	cg_gpu_emulation_mma(on ? unit->arch : NULL, unit->wave, lane_models, LANE_NMODELS);
}

/* A graph: emulated against the reference, then the unit's targets. */
static void run(CgHarness *h)
{
	h->g->train.precision = mode->precision;
	emulate(true);
	int bad = ch_run(h);
	emulate(false);
	tu_failures += bad;
	if (!bad && unit_target.kind == CG_NVPTX)
		nvidia_targets(h);
	ch_free(h);
}

/* C = op(A) op(B) of half operands, the transposes t (bit 0: A's, bit 1: B's) of mask `ts` in one
 * graph. */
static CgHarness *matmul_of(int m, int n, int k, unsigned ts)
{
	char name[96], da[32], db[32];
	snprintf(name, sizeof name, "%s %s matmul %dx%dx%d", unit_instr->name, dtype_name(mode->type), m, n, k);
	CgHarness *h = ch_new(name);
	for (int t = 0; t < 4; t++) {
		if (!(ts >> t & 1))
			continue;
		int ta = t & 1, tb = t >> 1;
		snprintf(da, sizeof da, ta ? "%d,%d" : "%2$d,%1$d", k, m);
		snprintf(db, sizeof db, tb ? "%d,%d" : "%2$d,%1$d", n, k);
		int a = ch_param(h, mode->type, da), b = ch_param(h, mode->type, db);
		double attr[2] = {ta, tb};
		ch_op(h, OP_matmul, attr, a, b);
	}
	return h;
}

static CgHarness *matmul(int m, int n, int k) { return matmul_of(m, n, k, 0xf); }

/* Whether a compile of h, emulated, has a GEMM kernel on wgmma with 128 or 256 columns and
 * k-blocks of kb (its tiles' note). */
static bool on_wide_wgmma(CgHarness *h, int kb)
{
	CgOutput out;
	emulate(true);
	bool ok = ch_compile(h, false, &out), wg = false;
	emulate(false);
	for (int i = 0; ok && i < out.nkernels; i++) {
		const CgTileNote *t = &out.kernels[i].tiles;
		wg = wg || (strstr(t->instr, "wgmma") && t->cfg.tn >= 128 && t->cfg.kb == kb);
	}
	if (ok)
		cg_output_free(&out);
	else
		tu_failures++;
	return wg;
}

/* The deep pipeline (codegen/gemm_gpu.c copy_stages: 4 buffers in dynamic shared memory, a
 * k-block's wgmmas in flight past the next barrier) over more k-blocks than buffers and a tail:
 * the last three candidate tilings of a small matmul of transposes ts (matmul_of) whose kernels
 * take wgmma on 64 x 128, 128 x 128 and 128 x 256 tiles with k-blocks of kb (the heuristic gives
 * so small a problem small tiles), emulated against the reference. Both operands along k (the
 * forward GEMMs' case) take k-blocks of 64, an operand along m or n (the gradients') of 32. */
static void deep_candidates(int m, int n, int k, unsigned ts, int kb)
{
	CgHarness *h = matmul_of(m, n, k, ts);
	h->g->train.precision = mode->precision;
	cg_tuning_reset_seen();
	on_wide_wgmma(h, kb);
	ch_free(h);
	/* the widest tiles and longest k-blocks come last among the candidates */
	int ran = 0;
	for (int i = cg_tuning_candidates_seen() - 1; i > 0 && ran < 3; i--) {
		h = matmul_of(m, n, k, ts);
		h->g->train.precision = mode->precision;
		cg_tuning_candidate(i);
		if (on_wide_wgmma(h, kb)) {
			emulate(true);
			int bad = ch_run(h);
			emulate(false);
			CHECK(!bad, "%s: candidate %d", h->name, i);
			tu_failures += bad;
			ran++;
		}
		cg_tuning_candidate(-1);
		ch_free(h);
	}
	printf("matmul %dx%dx%d (transposes %u): %d candidates on wide wgmma tiles\n", m, n, k, ts, ran);
	CHECK(ran > 0, "no candidate of matmul %dx%dx%d (transposes %u) takes wgmma", m, n, k, ts);
}

/* The GEMM kernels of h (compiled emulated) on padded rows' tiles (codegen/gemm_gpu.c); *two
 * (where not NULL) counts those of two buffers (`rows stages=2`), *streamed (where not NULL)
 * those of several tiles per work-group (`tiles=N`). */
static int rows_kernels(CgHarness *h, int *two, int *streamed)
{
	CgOutput out;
	emulate(true);
	bool ok = ch_compile(h, false, &out);
	emulate(false);
	int rows = 0;
	for (int i = 0; ok && i < out.nkernels; i++) {
		const CgTileNote *t = &out.kernels[i].tiles;
		bool on_rows = t->cfg.rows && strstr(t->instr, "on padded rows") != NULL;
		rows += on_rows;
		if (two && on_rows && t->cfg.stages == 2)
			*two += strstr(t->instr, "2 stages of") != NULL;
		if (streamed && on_rows && t->cfg.tiles > 1)
			*streamed += strstr(t->instr, "tiles per work-group") != NULL;
	}
	if (ok)
		cg_output_free(&out);
	else
		tu_failures++;
	return rows;
}

static int rows_two_buffers; /* kernels of rows_candidates' runs in two buffers */

/* Padded rows: a stride-1 NHWC convolution's forward and input-gradient GEMMs on the halo tiles,
 * the first `most` of every `stride`-th candidate index that give some of its kernels those tiles
 * (listed by m64 blocks per warpgroup, 4, 2, 1, then k-blocks of 16 and 32 channels), emulated
 * against the reference: the halo's copies
 * with zeros outside the source, the taps' shifts, the mode-0 descriptors (read by the hardware's
 * rules in wg_model_elem) and the padded positions' outputs. With sms > 0, the emulated GPU's
 * SMs (cg_gpu_emulation_sms), only the candidates of several tiles per work-group (`tiles=N`,
 * gemm_gpu.c "several tiles per work-group"), whose grids then come out of a few work-groups,
 * the last ones a tile short: the tiles' stores, the accumulators zeroed between tiles and the
 * copies of the next tile's first k-blocks in the buffers of the last one's. */
static void rows_candidates(Conv c, int sms, int want, int most, int stride)
{
	CgHarness *h = anchor_conv_in(c, mode->type, LAYOUT_NHWC);
	h->g->train.precision = mode->precision;
	cg_gpu_emulation_sms(sms);
	cg_tuning_reset_seen();
	rows_kernels(h, NULL, NULL);
	int seen = cg_tuning_candidates_seen(), ran = 0, two = 0;
	ch_free(h);
	for (int i = 1; i < seen && ran < most; i += stride) {
		h = anchor_conv_in(c, mode->type, LAYOUT_NHWC);
		h->g->train.precision = mode->precision;
		cg_tuning_candidate(i);
		int two_here = 0, streamed = 0, rows = rows_kernels(h, &two_here, &streamed);
		if (sms ? streamed : rows) {
			two += two_here;
			emulate(true);
			int bad = ch_run(h);
			emulate(false);
			CHECK(!bad, "%s: candidate %d (%d kernels on padded rows, %d of several tiles per work-group)", h->name,
			      i, rows, streamed);
			tu_failures += bad;
			/* the first such candidate's PTX through ptxas (wgmma with mode-0 descriptors) */
			if (!bad && !ran++)
				nvidia_targets(h);
		}
		cg_tuning_candidate(-1);
		ch_free(h);
	}
	cg_gpu_emulation_sms(0);
	printf("%s nhwc conv %dx%d cin %d cout %d%s: %d candidates on padded rows (%d kernels in two buffers)\n",
	       dtype_name(mode->type), c.kh, c.kw, c.cin, c.cout, sms ? ", several tiles per work-group" : "", ran, two);
	rows_two_buffers += sms ? 0 : two;
	CHECK(ran >= want, "%d candidates of a %dx%d convolution on padded rows, expected %d", ran, c.kh, c.kw, want);
}

/* dw = conv2d_grad_weight(dy, x) of a 3x3 convolution, split over K at these sizes, with
 * w + dw * s fused after it: every kernel runs emulated, each group checked after its last. */
static void grad_weight_split(int n, int cin, int hw, int cout)
{
	char name[128];
	snprintf(name, sizeof name, "%s %s grad_weight x[%d,%d,%d,%d] cout %d + update", unit_instr->name,
		 dtype_name(mode->type), n, cin, hw, hw, cout);
	CgHarness *h = ch_new(name);
	h->g->train.precision = mode->precision;
	cf_grad_weight_update(h, mode->type, n, cin, hw, cout);
	int splits;
	cf_mma_arch = unit->arch;
	cf_mma_wave = unit->wave;
	int bad = cf_run_split_k(h, true, &splits);
	tu_failures += bad;
	CHECK(splits > 0, "%s: no group splits K", h->name);
	if (!bad && unit_target.kind == CG_NVPTX)
		nvidia_targets(h);
	else if (!bad)
		amd_target(h);
	ch_free(h);
}

/* Whether an earlier unit emulates the same row in this mode. */
static bool seen(size_t u, const CgMatrixInstr *mi)
{
	for (size_t i = 0; i < u; i++) {
		CgTarget t;
		char err[256];
		CgTargetOptions o = {.wave = units[i].wave};
		if (cg_target_lookup(units[i].arch, &o, &t, err, sizeof err) && cg_gemm_gpu_unit_row(&t, mode->elem) == mi)
			return true;
	}
	return false;
}

/* How many of the graph's GEMM kernels copy A and B by the TMA (emulated compile: the tiles'
 * notes). */
static void tma_count(CgHarness *h, int *a, int *b)
{
	CgOutput out;
	h->g->train.precision = mode->precision;
	emulate(true);
	bool ok = ch_compile(h, false, &out);
	emulate(false);
	for (int i = 0; ok && i < out.nkernels; i++) {
		const char *instr = out.kernels[i].tiles.instr;
		*a += strstr(instr, "A and B by TMA") || strstr(instr, "A by TMA");
		*b += strstr(instr, "A and B by TMA") || strstr(instr, "B by TMA");
	}
	if (ok)
		cg_output_free(&out);
	else
		tu_failures++;
}

/* NETC_TMA=1 (codegen/gemm_gpu.c, "tensor maps"): matmuls of every transpose whose plain operands
 * go into the deep wgmma pipeline's buffers as tensor-map boxes, emulated against the reference
 * (each box's extents, strides, coordinates and swizzle against the LDS layout the descriptors
 * read), on the heuristic's tiles and on wide candidates of k-blocks of 64 and 32; the sm_90 PTX
 * has the copies, and ptxas takes it. */
static void tma_matmuls(void)
{
	setenv("NETC_TMA", "1", 1);
	int a = 0, b = 0;
	CgHarness *h = matmul(1024, 1024, 40);
	tma_count(h, &a, &b);
	CgOutput out;
	if (cf_compile(h, "sm_90", &out)) {
		CHECK(strstr((const char *)out.code, "cp.async.bulk.tensor.2d") && strstr((const char *)out.code, "mbarrier.try_wait"),
		      "%s [sm_90]: no tensor-map copies in the PTX", h->name);
		cg_output_free(&out);
	} else {
		tu_failures++;
	}
	run(h);
	deep_candidates(128, 256, 392, 1u << 2, 64);
	deep_candidates(128, 256, 200, 1u << 1, 32);
	printf("tensor maps: %d GEMM kernels copy A, %d B by the TMA\n", a, b);
	CHECK(a > 0 && b > 0, "no GEMM copies A (%d) or B (%d) by the TMA", a, b);
	unsetenv("NETC_TMA");
}

int main(void)
{
	ch_start("test_cg_mma_half");
	for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
		for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
			mode = &modes[m];
			unit = &units[u];
			char err[256];
			CgTargetOptions o = {.wave = unit->wave};
			if (!cg_target_lookup(unit->arch, &o, &unit_target, err, sizeof err)) {
				FAIL("%s: %s", unit->arch, err);
				continue;
			}
			unit_instr = cg_gemm_gpu_unit_row(&unit_target, mode->elem);
			CHECK(unit_instr, "%s (wave%d) has no %s matrix instruction", unit->arch, unit_target.wave,
			      dtype_name(mode->type));
			if (unit_instr && (unit_target.matrix & CG_MATRIX_WGMMA)) {
				/* sm_90: sm_80's cases again would be the same mma.sync; the wgmma tiles */
				printf("%s on %s: wgmma\n", dtype_name(mode->type), unit->arch);
				want_wgmma = true;
				run(matmul(1024, 1024, 40));
				run(matmul(2048, 1024, 24));
				/* 128 x 128 tiles: B (and A) MN-major over two atoms per warpgroup */
				run(anchor_matmul_of(2048, 2048, 24, 3u, mode->type));
				if (mode->type == DT_BF16) /* f16 copies the same bytes */
					tma_matmuls();
				want_wgmma = false;
				/* A (m x k) and B (stored n x k) both along k: the transpose of B alone; then
				 * A stored k x m, along m (an MN-major A, as the gradients have) */
				deep_candidates(128, 256, 392, 1u << 2, 64);
				deep_candidates(128, 256, 200, 1u << 1, 32);
				/* padded rows (bf16 only: f16 takes the same code): 3 x 3 same (forward: 64
				 * channels out; input gradient: 48 in; 4, 2 and 1 blocks per warpgroup, some
				 * in two buffers), 5 x 5
				 * without padding, 3 x 3 dilated by 2 down the rows across two images (k-blocks
				 * of 16 and 32) */
				if (mode->type == DT_BF16) {
					rows_candidates((Conv){2, 48, 7, 10, 64, 3, 3, 1, 1, 1, 1, 1, 1}, 0, 3, 3, 2);
					rows_candidates((Conv){1, 16, 9, 12, 64, 5, 5, 1, 1, 0, 0, 1, 1}, 0, 1, 1, 1);
					rows_candidates((Conv){2, 32, 6, 9, 128, 3, 3, 1, 1, 2, 1, 2, 1}, 0, 2, 2, 1);
					CHECK(rows_two_buffers > 0, "no padded-rows kernel in two buffers (`stages=2`) ran");
					/* 3 x 16 x 15 padded positions: the first such candidate takes 3 tiles
					 * of 256 (work-groups of 2 and 1) */
					rows_candidates((Conv){3, 32, 14, 13, 64, 3, 3, 1, 1, 1, 1, 1, 1}, 1, 1, 1, 1);
				}
				continue;
			}
			if (!unit_instr || seen(u, unit_instr))
				continue;
			printf("%s on %s wave%d: %s\n", dtype_name(mode->type), unit->arch, unit_target.wave, unit_instr->name);
			/* NVIDIA: every case; each AMD row: strides, padding and dilation, the 64 x 64 tiles (2 x 2
			 * or 2 x 1 fragments per warp), odd matmul sizes and split-K (seconds per row) */
			bool all = unit_target.kind == CG_NVPTX;
			for (size_t i = 0; i < ANCHOR_NCONVS; i++)
				if (all || i == 2 || i == 5)
					run(anchor_conv(anchor_convs[i].geo, mode->type));
			/* the wide tiles: 128 x 128 (64 x 32 warp tiles), 128 x 64; AMD: 64 x 64 */
			run(anchor_conv((Conv){64, 1, 15, 17, 250, 3, 3, 1, 1, 1, 1, 1, 1}, mode->type));
			if (all) {
				run(anchor_conv((Conv){43, 1, 10, 15, 250, 3, 3, 1, 1, 1, 1, 1, 1}, mode->type));
				run(matmul(7, 13, 5));
				run(matmul(3, 40, 700));
				/* whole 16-byte runs of both operands (cp.async), K past the last whole k-block */
				run(matmul(72, 48, 200));
				/* NHWC windows of channel runs (cp.async, zeros for the padding's pixels): stride 1
				 * and 2, dilation, 16 and 24 channels; the weights' runs along ci in grad_input */
				run(anchor_conv_in((Conv){2, 16, 9, 11, 24, 3, 3, 1, 1, 1, 1, 1, 1}, mode->type, LAYOUT_NHWC));
				run(anchor_conv_in((Conv){3, 24, 10, 7, 16, 3, 3, 2, 2, 1, 1, 1, 1}, mode->type, LAYOUT_NHWC));
				run(anchor_conv_in((Conv){2, 16, 12, 12, 8, 3, 3, 1, 1, 2, 2, 2, 2}, mode->type, LAYOUT_NHWC));
			}
			run(matmul(65, 130, 33));
			grad_weight_split(2, 32, 26, 64);
		}
	return tu_finish("test_cg_mma_half");
}
