/* gemm_gpu.c: the GPU GEMM template (see gemm_gpu.h) and the work-group helpers of GPU-native
 * lowerings. Emission follows the kernel:
 *
 *   work-group wg -> (k-slice, b, m-tile, n-tile)
 *   zero the accumulators; each work-item loads its share of k-block 0 into registers
 *   for each k-block kb:
 *     phase: each work-item stores its share of the A and B tiles into LDS
 *            buffer kb % 2                                                     | barrier
 *     phase: each work-item loads its share of the next k-block, and
 *            accumulates its TM x TN tile over its k-slice from LDS            (no barrier)
 *   KS == 1: phase: each work-item stores its valid outputs
 *   KS > 1:  phase: partial tiles to LDS | barrier | phase: sums in slice order, stores
 *
 * On a matrix unit (mma_of: NVIDIA mma.sync, AMD MFMA and WMMA) the same kernel, but the
 * accumulate step is the unit's instruction on warp tiles and the accumulators are in its C
 * layout (see "the warp tile" below); on sm_90 with both operands copied, two warpgroups' wgmma
 * from LDS (see "warpgroup tiles").
 *
 * Split-K (S k-slices across work-groups) stores the outputs as float32 partials in the
 * workspace, slice-major, and a second kernel, one work-item per output element, sums the S
 * partials in slice order and runs the epilogue.
 *
 * Tile indices are i32 where every extent fits (they are zero-extended for the operand emitters,
 * so LLVM narrows the emitters' divisions by constants to 32 bits, which GPUs do natively). */
#include <string.h>

#include "codegen/gemm_gpu.h"
#include "runtime/tensor_map.h"
#include "codegen/cg_util.h"
#include "codegen/target.h"

enum {
	GPU_TILE = 128,         /* largest tile side (float32; float64 stops at GPU_SMALL_TILE) */
	GPU_SMALL_TILE = 64,    /* largest side of the 4 x 4 register tiles */
	GPU_MIN_TILE = 16,      /* smallest tile side */
	GPU_REG_TILE = 4,       /* register tile side of tiles up to GPU_SMALL_TILE */
	GPU_SMALL_REG = 2,      /* ... or of a GPU_MIN_TILE side, where a tuning picks it (small_regs) */
	GPU_MAX_REG = 8,        /* register tile side of the GPU_TILE-wide tiles */
	GPU_WANT_GROUPS = 256,  /* shrink tiles until the grid has this many work-groups */
	GPU_STAGE_BYTES = 8192, /* LDS for both buffers of the A and B tiles; the k-block grows to fill it */
	GPU_LONG_STAGE_BYTES = 16384, /* the same for most SIMT tiles with a GPU_TILE side (simt_long_kblock) */
	GPU_MMA_STAGE_BYTES = 16384, /* the same for the matrix units' tiles (NVIDIA) ... */
	GPU_MMA_STAGED_WORDS = 16, /* ... while a work-item stages at most this many registers of a k-block */
	GPU_NARROW_STAGE_BYTES = 4096, /* the same without the wide tiles: 4 work-groups of 64 x 64 tiles
					  (8.5 KiB of LDS each with the padding) fit AMD's 64 KiB per CU */
	GPU_WARP = 32,          /* lanes that stage a half tile warp by warp (warp_major) */
	GPU_WAVES = 4,          /* waves per SIMD the widest tiles ask for (cg_gpu_waves) */
	GPU_COPY_STAGES = 3,    /* LDS buffers where the operands go by cp.async (copy_stages) */
	GPU_COPY_LDS = 48 * 1024, /* ... within the static shared memory a kernel may declare */
	GPU_DEEP_STAGES = 4,    /* ... or, on wgmma's targets, for forward GEMMs (copy_stages), */
	GPU_DEEP_BK = 64,       /* ... k-blocks up to 64 in dynamic shared memory */
	GPU_DEEP_MN_BK = 32,    /* ... and 32 for the gradients' GEMMs */
	GPU_DEEP_ROW_BYTES = 128, /* ... and tf32's rows of k at most these bytes (f32_copies) */
	GPU_LONG_TILE = 256,    /* their tiles' widest side (long_tile) */
	GPU_DEEP_LDS = 4 * (GPU_TILE + GPU_LONG_TILE) * GPU_DEEP_BK * 2, /* what they need: 192 KiB */
};

/* ---- the work-group ---- */

static bool emulation, emulation_split_k;

/* The matrix unit emulated GEMMs take: the target whose rows they use, and the lane models that
 * execute the instruction on the host. */
static struct {
	bool on;
	CgTarget target;
	const CgMatrixModel *models;
	int nmodels;
} emulated_unit;

void cg_gpu_emulation(bool on) { emulation = on; }
void cg_gpu_emulation_split_k(bool on) { emulation_split_k = on; }

void cg_gpu_emulation_target(const char *arch, const CgTargetOptions *o, const CgMatrixModel *models, int nmodels)
{
	emulated_unit.on = arch != NULL;
	emulated_unit.models = models;
	emulated_unit.nmodels = nmodels;
	if (!arch)
		return;
	char err[256];
	if (!cg_target_lookup(arch, o, &emulated_unit.target, err, sizeof err))
		CG_FAIL("the emulated matrix unit: %s", err);
}

void cg_gpu_emulation_mma(const char *arch, int wave, const CgMatrixModel *models, int nmodels)
{
	cg_gpu_emulation_target(arch, &(CgTargetOptions){.wave = wave}, models, nmodels);
}

bool cg_gpu_paths(const Cg *cg) { return cg_is_gpu(cg) || emulation; }

LLVMValueRef cg_gpu_group_begin(Cg *cg, GpuGroup *g, int block)
{
	*g = (GpuGroup){.block = block, .emulated = !cg_is_gpu(cg)};
	if (g->emulated) {
		g->wg = cg_for_begin(cg, cg->wg_begin, cg->wg_end, "wg");
		g->wg_id = g->wg.i;
		return g->wg_id;
	}
	cg_gpu_native(cg, block);
	g->wg_id = LLVMBuildZExt(cg->b, cg_workgroup_id(cg), cg->t_i64, "wg");
	return g->wg_id;
}

void cg_gpu_group_end(Cg *cg, GpuGroup *g)
{
	if (g->emulated)
		cg_for_end(cg, &g->wg);
}

LLVMValueRef cg_gpu_phase_begin(Cg *cg, GpuGroup *g)
{
	if (g->emulated) {
		g->item = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, g->block), "item");
		return g->item.i;
	}
	return LLVMBuildZExt(cg->b, cg_workitem_id(cg), cg->t_i64, "tid");
}

void cg_gpu_phase_end(Cg *cg, GpuGroup *g, bool barrier)
{
	if (g->emulated)
		cg_for_end(cg, &g->item);
	else if (barrier)
		cg_barrier(cg);
}

LLVMValueRef cg_gpu_shared(Cg *cg, const GpuGroup *g, LLVMTypeRef elem, int64_t count, const char *name)
{
	if (!g->emulated)
		return cg_shared_array(cg, elem, count, name);
	LLVMValueRef a = cg_local(cg, LLVMArrayType2(elem, (uint64_t)count), name);
	LLVMSetAlignment(a, 16);
	return a;
}

GpuPrivate cg_gpu_private(Cg *cg, const GpuGroup *g, LLVMTypeRef elem, int64_t count, const char *name)
{
	int64_t rows = g->emulated ? g->block : 1;
	GpuPrivate p = {.elem = elem, .count = count};
	p.base = cg_local(cg, LLVMArrayType2(elem, (uint64_t)(rows * count)), name);
	return p;
}

LLVMValueRef cg_gpu_private_at(Cg *cg, const GpuGroup *g, const GpuPrivate *p, LLVMValueRef tid, int64_t i)
{
	/* on a GPU the indices are constants, so the array becomes registers */
	LLVMValueRef idx = cg_i64(cg, i);
	if (g->emulated)
		idx = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, tid, cg_i64(cg, p->count), ""), idx, "");
	return LLVMBuildGEP2(cg->b, p->elem, p->base, &idx, 1, "");
}

LLVMValueRef cg_gpu_elements_begin(Cg *cg, GpuGroup *g, int64_t total, int64_t *grid)
{
	return cg_gpu_elements_begin_at(cg, g, total, NULL, grid);
}

LLVMValueRef cg_gpu_elements_begin_at(Cg *cg, GpuGroup *g, int64_t total, LLVMValueRef bound, int64_t *grid)
{
	*grid = (total + CG_GPU_BLOCK - 1) / CG_GPU_BLOCK;
	LLVMValueRef wg = cg_gpu_group_begin(cg, g, CG_GPU_BLOCK);
	if (!bound)
		bound = cg_i64(cg, total);
	if (!g->emulated) {
		LLVMValueRef e = cg_global_id(cg);
		cg_gpu_if(cg, LLVMBuildICmp(cg->b, LLVMIntULT, e, bound, ""));
		return e;
	}
	LLVMValueRef tid = cg_gpu_phase_begin(cg, g);
	LLVMValueRef e = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, wg, cg_i64(cg, CG_GPU_BLOCK), ""), tid, "elem");
	LLVMValueRef in_range = LLVMBuildICmp(cg->b, LLVMIntULT, e, bound, "");
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "elem");
	g->past = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "past");
	LLVMBuildCondBr(cg->b, in_range, then, g->past);
	LLVMPositionBuilderAtEnd(cg->b, then);
	return e;
}

void cg_gpu_elements_end(Cg *cg, GpuGroup *g)
{
	/* on a GPU the guard returned early: nothing to close */
	if (!g->emulated)
		return;
	LLVMBuildBr(cg->b, g->past);
	LLVMPositionBuilderAtEnd(cg->b, g->past);
	cg_gpu_phase_end(cg, g, false);
	cg_gpu_group_end(cg, g);
}

/* ---- tiles ---- */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t groups(const GemmSpec *s, int bm, int bn) { return s->batch * cdiv(s->m, bm) * cdiv(s->n, bn); }

static bool is_double(const GemmSpec *s) { return s->type && LLVMGetTypeKind(s->type) == LLVMDoubleTypeKind; }

/* Register tile side for a tile side: 8 on the widest tiles (twice the multiply-adds per LDS read
 * of 4), else 4. */
static int reg_side(int side) { return side > GPU_SMALL_TILE ? GPU_MAX_REG : GPU_REG_TILE; }

/* Whether a bm x bn tile may take GPU_SMALL_REG-wide register tiles along its GPU_MIN_TILE sides:
 * float32 SIMT tiles without the wide tiles (AMD). A 16 x 16 tile of 4 x 4 register tiles has 16
 * work-items per k-slice, so 16 k-slices of at least 4 steps each, whose fragments and staging
 * kept resnet20's 16-wide GEMMs at 76 to 87 VGPRs, 2 or 3 waves per SIMD (docs/performance.md,
 * 2026-12-06); 2 x 2 register tiles give 4 k-slices and half the registers. Not the heuristic's:
 * a candidate, that AMD's tile cost model takes where the 4-wide tiles starve. */
static bool small_regs_fit(const GemmSpec *s, const CgMatrixInstr *mi, bool wide, GpuHalfMath hm, int bm, int bn)
{
	return !mi && !wide && hm == GPU_HALF_F32 && !is_double(s) && (bm == GPU_MIN_TILE || bn == GPU_MIN_TILE);
}

/* Relative cost of one multiply-add on a tm x tn register tile: the LDS reads and the staging
 * (index arithmetic included) per multiply-add go as 1/tm + 1/tn. */
static double fma_cost(int tm, int tn) { return 1.0 + 1.0 / tm + 1.0 / tn; }

static int64_t padded(int64_t extent, int tile) { return cdiv(extent, tile) * tile; }

/* Small problems: tiles up to GPU_SMALL_TILE, no side beyond what the extent needs, halved while
 * the grid has few work-groups (small M x N, large K: dense layers, weight gradients); the
 * work-items they free split each k-block instead. */
static void small_tile(const GemmSpec *s, GpuTiles *t)
{
	t->bm = t->bn = GPU_SMALL_TILE;
	while (t->bm > GPU_MIN_TILE && t->bm / 2 >= s->m)
		t->bm /= 2;
	while (t->bn > GPU_MIN_TILE && t->bn / 2 >= s->n)
		t->bn /= 2;
	while (groups(s, t->bm, t->bn) < GPU_WANT_GROUPS && (t->bm > GPU_MIN_TILE || t->bn > GPU_MIN_TILE)) {
		if (t->bm >= t->bn && t->bm > GPU_MIN_TILE)
			t->bm /= 2;
		else
			t->bn /= 2;
	}
}

/* Where the largest small tile already gives enough work-groups: the tile of sides 64 or 128 with
 * enough work-groups and the least padded area weighted by fma_cost (float32 only: 8 x 8 float64
 * accumulators would not stay in registers). */
static void wide_tile(const GemmSpec *s, GpuTiles *t)
{
	if (is_double(s) || t->bm < GPU_SMALL_TILE || t->bn < GPU_SMALL_TILE || !t->wide)
		return;
	double best = 0;
	for (int bm = GPU_SMALL_TILE; bm <= GPU_TILE; bm *= 2)
		for (int bn = GPU_SMALL_TILE; bn <= GPU_TILE; bn *= 2) {
			double cost = (double)padded(s->m, bm) * (double)padded(s->n, bn) * fma_cost(reg_side(bm), reg_side(bn));
			if (groups(s, bm, bn) >= GPU_WANT_GROUPS && (best == 0 || cost < best)) {
				best = cost;
				t->bm = bm;
				t->bn = bn;
			}
		}
}

/* The warp tiles of a matrix tile: the work-group's warps (waves of the instruction's size: 8 of
 * 32 lanes, 4 of 64) 2 x (warps / 2) over the tile, at least one M x N fragment each; small tiles
 * have fewer warps per slice and more slices. mma.sync (m16n8, 8 warps): 128 x 128 gives 64 x 32,
 * 64 x 64 gives 32 x 16; 64 x 32 gives each warp 16 mma.sync per k8 for 16 A and 8 B fragment
 * reads and 64 accumulators, as many as the 8 x 8 register tile it replaces, so the register
 * budget and the two resident work-groups stay. AMD's 64 x 64 tiles: 32 x 32 per wave64 (2 x 2
 * MFMA 16x16), 32 x 16 per wave32 (2 x 1 WMMA): 16 accumulators per lane, as the 4 x 4 register
 * tile. */
static void warp_tiles(GpuTiles *t, const CgMatrixInstr *mi)
{
	int warps = t->block / mi->wave, across = warps / 2;
	t->mi = mi;
	t->tm = t->tn = 0;
	t->wm = t->bm / 2 > mi->m ? t->bm / 2 : mi->m;
	t->wn = t->bn / across > mi->n ? t->bn / across : mi->n;
	t->ks = warps / ((t->bm / t->wm) * (t->bn / t->wn));
}

/* The bytes of one element of the compute type. */
static int64_t et_size(const GemmSpec *s) { return is_double(s) ? 8 : 4; }

/* The bytes of one operand element in LDS: the SIMT tiles keep the compute type (dot2 and packed
 * tiles the halves), matrix tiles the instruction's operand type (f32 bits for tf32 and xf32, or
 * half). */
static int64_t lds_esize(const GemmSpec *s, const GpuTiles *t)
{
	return t->mi ? cg_matrix_elem_bits(t->mi->elem) / 8 : t->half_math != GPU_HALF_F32 ? 2 : et_size(s);
}

/* Elements per staged run of an operand: its aligned runs (GemmOperand.runs, up to 16 bytes) where
 * the tile's extent along the operand's contiguous index (k-block bk) is a whole number of them;
 * 1 (element by element) without. Only with the wide tiles' register budget (NVIDIA, emulation):
 * on AMD's 64-VGPR budget at 4 waves the runs' registers made split-K kernels spill (alexnet's
 * dense layers on gfx906: 8 VGPRs), and no AMD GPU is at hand to measure whether they pay there. */
static int run_lanes_of(const GemmSpec *s, const GpuTiles *t, bool is_a, int64_t bk)
{
	const GemmOperand *op = is_a ? &s->a : &s->b;
	int64_t along = op->along_k ? bk : is_a ? t->bm : t->bn;
	int lanes = op->run && t->wide ? op->runs : 1;
	while (lanes > 1 && along % lanes)
		lanes /= 2;
	return lanes > 1 ? lanes : 1;
}

/* The 32-bit registers a work-item's staging of a k-block of bk takes on a matrix unit (t->mi):
 * a staged element of a run takes its size (two halves share a register), a lone one a register. */
static int64_t staged_words(const GemmSpec *s, const GpuTiles *t, int64_t bk)
{
	int64_t words = 0, esize = lds_esize(s, t);
	for (int is_a = 0; is_a < 2; is_a++) {
		if (t->copied[is_a])
			continue;
		int lanes = run_lanes_of(s, t, is_a, bk);
		int64_t elems = cdiv((is_a ? t->bm : t->bn) * bk / lanes, t->block) * lanes;
		words += lanes > 1 ? cdiv(elems * esize, 4) : elems;
	}
	return words;
}

static void copy_stages(const GemmSpec *s, GpuTiles *t, int64_t bk, int64_t lds);
static int rows_candidates(const GemmSpec *s, const CgMatrixInstr *mi, int64_t lds, int sms, GpuTiles *out, int max);

/* Whether a float SIMT tile (no packed halves, whose k-block is also their rounding) has a
 * GPU_TILE side (an 8-wide register tile side): the tiles whose k-blocks hold their last
 * fragments across the barrier (GpuGemm.hold). */
static bool simt_long_side(const GpuTiles *t)
{
	return !t->mi && t->wide && t->half_math == GPU_HALF_F32 && (t->bm == GPU_TILE || t->bn == GPU_TILE);
}

/* Whether a wide SIMT tile may take the k-block of GPU_LONG_STAGE_BYTES. Measured on an H200
 * (docs/performance.md, 2026-12-02): the tiles with a GPU_TILE side gain from k-blocks of 16
 * (64 x 128 Winograd GEMMs 13-15% faster, 128 x 64 split-K weight gradients 25%), except 128 x
 * 128 tiles with an operand along m or n, whose 64 accumulators leave no registers for twice the
 * staging (3-7% slower), and where the longer k-block pads K further (mobilenet_v2's 1 x 1
 * convolutions of K = 24: a third more products). */
static bool simt_long_kblock(const GemmSpec *s, const GpuTiles *t)
{
	bool square = t->bm == GPU_TILE && t->bn == GPU_TILE;
	return simt_long_side(t) && (!square || (s->a.along_k && s->b.along_k));
}

/* The k-block from t's first: doubled while it fills the LDS budget (fewer barriers, more loads
 * in flight), stays within K rounded up to a power of two and (matrix tiles) the staging
 * registers; bk > 0: bk. */
static int64_t grow_kblock(const GemmSpec *s, GpuTiles t, int64_t esize, int64_t budget, int64_t bk)
{
	while (bk ? t.bk < bk : (t.bm + t.bn) * t.bk * 2 * esize <= budget && t.bk < s->k &&
	       (!t.mi || !t.wide || staged_words(s, &t, 2 * t.bk) <= GPU_MMA_STAGED_WORDS))
		t.bk *= 2;
	return t.bk;
}

/* The tiles of a bm x bn work-group tile: register or warp tiles, k-slices, and the k-block: bk,
 * or where bk is 0 the largest the LDS budget allows (copied operands: `lds` bytes). */
static GpuTiles tiles_of(const GemmSpec *s, const CgMatrixInstr *mi, bool wide, GpuHalfMath hm, int64_t lds, int bm, int bn,
			 int64_t bk, bool small_regs)
{
	GpuTiles t = {.block = CG_GPU_BLOCK, .wide = wide, .half_math = mi ? GPU_HALF_F32 : hm, .bm = bm, .bn = bn};
	if (mi) {
		warp_tiles(&t, mi);
	} else {
		bool small = small_regs && small_regs_fit(s, mi, wide, hm, bm, bn);
		t.tm = small && bm == GPU_MIN_TILE ? GPU_SMALL_REG : reg_side(t.bm);
		t.tn = small && bn == GPU_MIN_TILE ? GPU_SMALL_REG : reg_side(t.bn);
		t.ks = t.block / ((t.bm / t.tm) * (t.bn / t.tn));
	}
	/* every slice at least 4 steps (mma: one instruction's k) */
	t.bk = (mi ? mi->k : 4) * t.ks;
	/* dot2 tiles keep float32's k-blocks: a staged half takes a register as a float does, and AMD's
	 * 64-VGPR budget at 4 waves has none to spare (twice the k-block spilled in 20 of alexnet's
	 * GEMM kernels on gfx906). Packed tiles take float32's bytes, of halves: twice its k-block,
	 * which is what they sum in the half type before one conversion and add per output into
	 * float32, so its length is both their speed and their rounding (16 on the widest tiles;
	 * docs/codegen.md) */
	int64_t esize = t.half_math == GPU_HALF_DOT2 ? et_size(s) : lds_esize(s, &t);
	int64_t budget = !wide ? GPU_NARROW_STAGE_BYTES : mi ? GPU_MMA_STAGE_BYTES : GPU_STAGE_BYTES;
	t.bk = grow_kblock(s, t, esize, budget, bk);
	if (!bk && simt_long_kblock(s, &t)) {
		/* grown on from the k-block of GPU_STAGE_BYTES, taken where it pads K no further */
		int64_t longer = grow_kblock(s, t, esize, GPU_LONG_STAGE_BYTES, 0);
		if (padded(s->k, longer) == padded(s->k, t.bk))
			t.bk = longer;
	}
	t.stages = 2;
	copy_stages(s, &t, bk, lds);
	t.nmb = cdiv(s->m, t.bm);
	t.nnb = cdiv(s->n, t.bn);
	t.slices = 1;
	t.kslice = s->k;
	return t;
}

/* Whether 128 x 128 tiles of a forward GEMM on wgmma's deep pipeline (copy_stages) widen to
 * 128 x 256 (if those take it too): half the L2 traffic per product along n (gemm4096's forward GEMM was bound by L2 bandwidth at
 * 128 x 128), 128 accumulators per work-item, one work-group per SM; where N needs no more
 * padding and the grid keeps GPU_WANT_GROUPS work-groups. */
static bool long_tile(const GemmSpec *s, const GpuTiles *t, int64_t lds)
{
	return lds > GPU_COPY_LDS && s->a.along_k && s->b.along_k && t->bm == GPU_TILE && t->bn == GPU_TILE &&
	       padded(s->n, GPU_LONG_TILE) == padded(s->n, GPU_TILE) && groups(s, GPU_TILE, GPU_LONG_TILE) >= GPU_WANT_GROUPS;
}

static GpuTiles tiles(const GemmSpec *s, const CgMatrixInstr *mi, bool wide, GpuHalfMath hm, int64_t lds)
{
	GpuTiles t = {.wide = wide};
	small_tile(s, &t);
	wide_tile(s, &t);
	GpuTiles w = tiles_of(s, mi, wide, hm, lds, t.bm, t.bn, 0, false);
	if (w.stages == GPU_DEEP_STAGES && long_tile(s, &w, lds)) {
		GpuTiles l = tiles_of(s, mi, wide, hm, lds, GPU_TILE, GPU_LONG_TILE, 0, false);
		if (l.stages == GPU_DEEP_STAGES)
			return l;
	}
	return w;
}

/* Whether a tile side suits an extent as small_tile's do: no longer than the extent needs. */
static bool side_fits(int side, int64_t extent) { return side == GPU_MIN_TILE || side / 2 < extent; }

/* How many doublings take the smaller of a and b past or to the larger. */
static int doublings(int64_t a, int64_t b)
{
	int64_t lo = a < b ? a : b, hi = a < b ? b : a;
	int n = 0;
	for (; lo > 0 && lo < hi; lo *= 2)
		n++;
	return n;
}

/* How far tiling t lies from h: the doublings between their sides and k-blocks. */
static int tiles_apart(const GpuTiles *t, const GpuTiles *h)
{
	return doublings(t->bm, h->bm) + doublings(t->bn, h->bn) + doublings(t->bk, h->bk);
}

/* out[1..n) nearest out[0] first, in their order where as near: `netc tune --max-candidates`
 * times the first ones, and the heuristic's neighbours (its tile with another k-block, a side
 * halved or doubled) are the likeliest to beat it on a large GEMM. */
static void nearest_first(GpuTiles *out, int n)
{
	for (int i = 2; i < n; i++) {
		GpuTiles t = out[i];
		int d = tiles_apart(&t, &out[0]), j = i;
		for (; j > 1 && tiles_apart(&out[j - 1], &out[0]) > d; j--)
			out[j] = out[j - 1];
		out[j] = t;
	}
}

/* Every tiling tiles() makes for some problem, for s: out[0] the heuristic's, then each tile of
 * sides 16 to 64 (with `wide`, float32: 64 and 128 as wide_tile's) that fits the extents, with
 * each k-block from the smallest to the largest the LDS budget allows it, and the same with
 * GPU_SMALL_REG-wide register tiles where small_regs_fit, nearest the heuristic's first. Returns
 * the count. */
static int candidates(const GemmSpec *s, const CgMatrixInstr *mi, bool wide, GpuHalfMath hm, int64_t lds, int sms,
		      GpuTiles *out, int max)
{
	int n = 0;
	out[n++] = tiles(s, mi, wide, hm, lds);
	int top = wide && !is_double(s) ? GPU_TILE : GPU_SMALL_TILE;
	for (int bm = GPU_MIN_TILE; bm <= top; bm *= 2)
		for (int bn = GPU_MIN_TILE; bn <= (top == GPU_TILE ? GPU_LONG_TILE : top); bn *= 2) {
			bool is_wide = bm > GPU_SMALL_TILE || bn > GPU_SMALL_TILE;
			if (!side_fits(bm, s->m) || !side_fits(bn, s->n) ||
			    (is_wide && (bm < GPU_SMALL_TILE || bn < GPU_SMALL_TILE)))
				continue;
			/* the long tiles only where the deep pipeline takes them (long_tile): a matrix
			 * unit's warp tiles (SIMT register tiles of 128 x 256 leave no k-slice) */
			if (bn > top && (bm != GPU_TILE || lds <= GPU_COPY_LDS))
				continue;
			for (int small = 0; small < 2; small++) {
				if (small && !small_regs_fit(s, mi, wide, hm, bm, bn))
					continue;
				GpuTiles most = tiles_of(s, mi, wide, hm, lds, bm, bn, 0, small);
				if (bn > top && most.stages != GPU_DEEP_STAGES)
					continue;
				for (int64_t bk = tiles_of(s, mi, wide, hm, lds, bm, bn, 1, small).bk; bk <= most.bk && n < max;
				     bk *= 2) {
					GpuTiles t = tiles_of(s, mi, wide, hm, lds, bm, bn, bk, small);
					if (t.bm != out[0].bm || t.bn != out[0].bn || t.bk != out[0].bk || t.tm != out[0].tm ||
					    t.tn != out[0].tn)
						out[n++] = t;
				}
			}
		}
	nearest_first(out, n);
	/* the padded rows' tiles right after the heuristic's, so that the first few candidates that
	 * netc tune times include them */
	enum { MOST_ROWS = 16 };
	GpuTiles rows[2 * MOST_ROWS];
	int nr = mi ? rows_candidates(s, mi, lds, sms, rows, (max - 1) / 2 < MOST_ROWS ? (max - 1) / 2 : MOST_ROWS) : 0;
	if (n + nr > max)
		n = max - nr;
	memmove(out + 1 + nr, out + 1, (size_t)(n - 1) * sizeof *out);
	memcpy(out + 1, rows, (size_t)nr * sizeof *out);
	return n + nr;
}

GpuTiles cg_gemm_gpu_tiles(const GemmSpec *s, bool wide) { return tiles(s, NULL, wide, GPU_HALF_F32, GPU_COPY_LDS); }

/* The problem of one slice of K, with the slices counted as work-groups. */
static GemmSpec slice_of(const GemmSpec *s, int slices)
{
	GemmSpec one = *s;
	one.batch = s->batch * slices;
	one.k = cdiv(s->k, slices);
	return one;
}

/* t, the tiles of one slice's problem, over the whole K: whole k-blocks per slice; rounding up may
 * leave fewer slices. */
static GpuTiles sliced(const GemmSpec *s, int slices, GpuTiles t)
{
	t.kslice = cdiv(cdiv(s->k, slices), t.bk) * t.bk;
	t.slices = (int)cdiv(s->k, t.kslice);
	return t;
}

static GpuTiles split_tiles(const GemmSpec *s, int slices, const CgMatrixInstr *mi, bool wide, GpuHalfMath hm)
{
	GemmSpec one = slice_of(s, slices);
	return sliced(s, slices, tiles(&one, mi, wide, hm, GPU_COPY_LDS));
}

GpuTiles cg_gemm_gpu_split_tiles(const GemmSpec *s, int slices, bool wide) { return split_tiles(s, slices, NULL, wide, GPU_HALF_F32); }

/* The target whose matrix unit a GEMM may use: the GPU's, or under emulation the emulated one;
 * NULL: none. */
static const CgTarget *unit_target(const Cg *cg)
{
	if (cg_is_gpu(cg))
		return cg->target;
	return emulation && emulated_unit.on ? &emulated_unit.target : NULL;
}

/* Whether the target takes the 128-wide tiles (emulated: as the emulated unit's target does, else
 * as NVIDIA does). */
static bool wide_tiles(const Cg *cg)
{
	const CgTarget *t = unit_target(cg);
	return !t || t->ops->gemm_wide_tiles;
}

bool cg_gpu_winograd_windows(const Cg *cg)
{
	const CgTarget *t = unit_target(cg);
	return !t || t->ops->winograd_windows;
}

/* Whether wgmma has a form for the row's operand type: f16, bf16 and tf32. */
static bool wgmma_elem(const CgMatrixInstr *mi)
{
	return cg_matrix_elem_bits(mi->elem) == 16 || mi->elem == CG_MELEM_TF32;
}

/* The SMs of the product the target's row describes (0: not NVIDIA, or not known); tests may set
 * another for the emulated unit (cg_gpu_emulation_sms). */
static int sms_override;
void cg_gpu_emulation_sms(int sms) { sms_override = sms; }

static int unit_sms(const Cg *cg)
{
	const CgTarget *t = unit_target(cg);
	if (!t)
		return 0;
	if (sms_override && !cg_is_gpu(cg))
		return sms_override;
	const CgTargetInfo *ti = cg_target_info(t->arch);
	return ti ? ti->sms : 0;
}

/* The LDS the copied operands' buffers may fill: on wgmma's targets, for the operands it takes
 * (wgmma_elem), all that a work-group may have (copy_stages says which GEMMs take it, long_tile
 * which widen); else the static 48 KiB. */
static int64_t copy_lds(const Cg *cg, const CgMatrixInstr *mi)
{
	const CgTarget *t = unit_target(cg);
	bool deep = t && (t->matrix & CG_MATRIX_WGMMA) && mi && wgmma_elem(mi) && t->lds_max >= GPU_DEEP_LDS;
	return deep ? t->lds_max : GPU_COPY_LDS;
}

/* Whether tab[lane] (lane < wave) is additive in the lane's bits: tab[0] plus, per set bit b of
 * the lane, tab[1 << b] - tab[0]. coord_at relies on it. */
static bool table_additive(const CgMatrixCoord *tab, int wave)
{
	for (int l = 0; l < wave; l++) {
		CgMatrixCoord got = tab[0];
		for (int bit = 0; (1 << bit) < wave; bit++)
			if (l >> bit & 1) {
				got.row += tab[1 << bit].row - tab[0].row;
				got.col += tab[1 << bit].col - tab[0].col;
			}
		if (got.row != tab[l].row || got.col != tab[l].col)
			return false;
	}
	return true;
}

/* Whether fn(lane, slot) is additive in the lane's bits for every slot (frag_at relies on it). */
static bool additive(const CgMatrixInstr *mi, CgMatrixIndexFn fn, int slots)
{
	for (int slot = 0; slot < slots; slot++) {
		CgMatrixCoord tab[64];
		for (int l = 0; l < mi->wave; l++)
			tab[l] = fn(mi, l, slot);
		if (!table_additive(tab, mi->wave))
			return false;
	}
	return true;
}

/* The run of k that the template loads as one LDS word for an operand: the longest power of two
 * (at most 16 bytes, dividing the values of one intrinsic argument) such that in every lane each
 * aligned run of slots of an argument holds consecutive k, from a multiple of the run, of one row
 * (A) or column (B). mma.sync's half registers hold k-pairs (2), MFMA's f16 operands 4 halves,
 * RDNA 3's WMMA all 16 k of a row (8 per word), tf32's registers one element (1). */
static int k_run(const CgMatrixInstr *mi, bool is_a)
{
	const CgMatrixArgType *ty = is_a ? &mi->a_type : &mi->b_type;
	CgMatrixIndexFn fn = is_a ? mi->a_at : mi->b_at;
	int slots = is_a ? mi->a_per_lane : mi->b_per_lane, per_arg = slots / ty->args, best = 1;
	for (int run = 2; run <= per_arg && per_arg % run == 0 && run * cg_matrix_elem_bits(mi->elem) <= 128; run *= 2) {
		for (int l = 0; l < mi->wave; l++)
			for (int q = 0; q < slots; q += run) {
				CgMatrixCoord first = fn(mi, l, q);
				int k0 = is_a ? first.col : first.row, mn0 = is_a ? first.row : first.col;
				if (k0 % run)
					return best;
				for (int i = 1; i < run; i++) {
					CgMatrixCoord c = fn(mi, l, q + i);
					if ((is_a ? c.col : c.row) != k0 + i || (is_a ? c.row : c.col) != mn0)
						return best;
				}
			}
		best = run;
	}
	return best;
}

/* The k run of both operands: LDS holds A and B as [k / run][row] words of `run` k. */
static int lds_run(const CgMatrixInstr *mi)
{
	int a = k_run(mi, true), b = k_run(mi, false);
	return a < b ? a : b;
}

/* A row, checked once per GEMM against what this file assumes of it: LDS words of whole 32-bit
 * registers (tf32 bits, or runs of halves along k), layouts additive in the lane's bits. */
static const CgMatrixInstr *checked_row(const CgMatrixInstr *mi)
{
	if (lds_run(mi) * cg_matrix_elem_bits(mi->elem) % 32)
		CG_FAIL("the %s row is not as gemm_gpu.c expects: its operands hold no whole 32-bit words along k", mi->name);
	if (!additive(mi, mi->a_at, mi->a_per_lane) || !additive(mi, mi->b_at, mi->b_per_lane) ||
	    !additive(mi, mi->c_at, mi->c_per_lane))
		CG_FAIL("the layout of %s is not additive in the lane's bits", mi->name);
	return mi;
}

static bool row_on(const CgMatrixInstr *mi, const char *arch)
{
	for (int i = 0; i < CG_MATRIX_MAX_ARCHS && mi->on[i].arch; i++)
		if (!strcmp(mi->on[i].arch, arch))
			return true;
	return false;
}

/* The table puts the 16 x 16 shapes first: they fit the smallest tiles. */
const CgMatrixInstr *cg_gemm_gpu_unit_row(const CgTarget *t, CgMatrixElem elem)
{
	int n;
	const CgMatrixInstr *rows = cg_matrix_instrs(&n);
	for (int i = 0; i < n; i++)
		if ((t->matrix & rows[i].caps) && rows[i].wave == t->wave && rows[i].elem == elem && row_on(&rows[i], t->arch))
			return checked_row(&rows[i]);
	return NULL;
}

/* The matrix instruction a float32 GEMM takes, or NULL for the SIMT register tiles, on a target
 * with a matrix unit (or under emulation of one): the half operands' (a spec of --precision fp16
 * or bf16); TF32 products (--precision tf32: mma.sync tf32, gfx942's xf32); else f32 products
 * where the unit has them (CDNA's MFMA f32: --precision fp32, and tf32 on gfx908 and gfx90a,
 * which compiles as float32 as on every target without TF32 products; docs/codegen.md). */
static const CgMatrixInstr *mma_of(const Cg *cg, const GemmSpec *s)
{
	const CgTarget *t = unit_target(cg);
	if (s->type != cg->t_f32 || !t)
		return NULL;
	if (s->half == DT_BF16)
		return cg_gemm_gpu_unit_row(t, CG_MELEM_BF16);
	if (s->half == DT_F16)
		return cg_gemm_gpu_unit_row(t, CG_MELEM_F16);
	const CgMatrixInstr *mi = s->tf32 ? cg_gemm_gpu_unit_row(t, CG_MELEM_TF32) : NULL;
	if (!mi && s->tf32)
		mi = cg_gemm_gpu_unit_row(t, CG_MELEM_XF32);
	return mi ? mi : cg_gemm_gpu_unit_row(t, CG_MELEM_F32);
}

/* How a GEMM without a matrix instruction multiplies the half operands of --precision fp16 or
 * bf16 on the target (or the emulated one): f16 by v_dot2_f32_f16 where the target has it
 * (gfx906, gfx10.3; the targets with matrix units take those): products exact and sums in f32, as
 * the matrix units', and as fast as packed FMAs; else by packed FMAs of the type where the target
 * has them and --packed-half asks (sums of a k-block in the half type, CgTarget.packed_half); else
 * in f32 registers. */
static GpuHalfMath half_math_of(const Cg *cg, const GemmSpec *s)
{
	const CgTarget *t = unit_target(cg);
	if (!t || s->type != cg->t_f32 || (s->half != DT_F16 && s->half != DT_BF16))
		return GPU_HALF_F32;
	if (s->half == DT_F16 && (t->matrix & CG_MATRIX_DOT2))
		return GPU_HALF_DOT2;
	unsigned packed = s->half == DT_F16 ? CG_MATRIX_PACKED_F16 : CG_MATRIX_PACKED_BF16;
	return t->packed_half && (t->matrix & packed) ? GPU_HALF_PACKED : GPU_HALF_F32;
}

/* ldmatrix: a warp's lanes give the addresses of 8-element (16-byte) rows */
enum { LDM_LANES = 32, LDM_ROW_BYTES = 16 };

/* ---- emission state ---- */

/* An operand's tile in one LDS buffer, in elements of the LDS type: [k / kvec][ld] words of kvec
 * elements along k, each row one m (A) or n (B) (the SIMT tiles: kvec 1; the matrix rows' words:
 * lds_run); or, where ldmatrix reads the fragments (ldm, NVIDIA), plain elements in rows of the
 * operand's contiguous index, so that a staged run is one store: [mn][ld] rows along k (kmajor:
 * the operand runs along k in memory, ldmatrix) or [k][ld] rows along m or n (ldmatrix.trans). */
typedef struct {
	bool ldm, kmajor;
	int kvec;
	int swz_shift, swz_mask; /* ldm rows unpadded: 16-byte unit u of row r lies at u ^ ((r >> shift) & mask) */
	int atom;       /* swizzled rows along m or n longer than 8 units: the elements of one 8-unit
			   atom; a row's atoms lie 8 rows apart, in groups of 8 rows (wgmma's MN-major
			   layout); 0: whole rows */
	int64_t ld;     /* row pitch in words (kvec elements) */
	int64_t elems;  /* elements of the tile, padding included */
	CgMatrixCoord rows[32]; /* ldm: the (row, column) of A or B whose address lane l gives */
} LdsTile;

typedef struct {
	const GemmSpec *s;
	GpuTiles t;
	const CgMatrixInstr *mi;     /* mma: the instruction; NULL: register tiles */
	GpuGroup grp;
	LLVMTypeRef et, it;          /* compute type; index type (i32 where it fits) */
	LLVMTypeRef ht;              /* half operands: their type in LDS (f16, bf16); else NULL */
	LLVMTypeRef lt;              /* the operands' type in LDS: ht, else et */
	LLVMValueRef lds;            /* t.stages buffers of the A tile, then the B tile; then slice partials */
	LLVMValueRef as, bs;         /* the k-block's buffer */
	LLVMValueRef an, bn;         /* the buffer the copies in flight go into */
	LdsTile la, lb;              /* how A and B lie in a buffer */
	GpuPrivate acc;              /* TM x TN accumulators per work-item (mma: its C slots) */
	bool out_lds;                /* the finished tile goes out through LDS (out_through_lds) */
	int64_t out_pitch;           /* ... in rows of this many words */
	GpuPrivate staged;           /* its share of the next k-block's A and B tiles */
	bool hold;                   /* SIMT: the k-block's last fragments held across the barrier */
	GpuPrivate held;             /* ... those fragments: TM of A, then TN of B */
	LLVMValueRef b, m0, n0;      /* this work-group's batch and tile origin (index type) */
	LLVMValueRef eb;             /* the batch the epilogue sees: split-K's slice * batch + b */
	LLVMValueRef kbase, kend;    /* the work-group's k range: kbase NULL is 0 */
	/* emulated matrix instructions: each work-item's fragments, and the lane model as tables */
	GpuPrivate frags;
	LLVMValueRef model_d, model_a, model_b;
	/* tensor maps: operand B [0], A [1] copied by the Tensor Memory Accelerator, its map, the
	 * byte offset of the buffers' mbarriers in the LDS; the buffer the copies in flight go into
	 * and the k-block being accumulated (index type) */
	bool tma[2];
	BundleTensorMap map[2];
	int64_t bars_at;
	LLVMValueRef copy_buf, kb_now;
} GpuGemm;

static LLVMValueRef ci(GpuGemm *g, int64_t v) { return LLVMConstInt(g->it, (unsigned long long)v, 1); }
static LLVMValueRef add(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildNUWAdd(cg->b, a, b, ""); }
static LLVMValueRef mulc(Cg *cg, GpuGemm *g, LLVMValueRef a, int64_t c) { return LLVMBuildNUWMul(cg->b, a, ci(g, c), ""); }
static LLVMValueRef divc(Cg *cg, GpuGemm *g, LLVMValueRef a, int64_t c) { return LLVMBuildUDiv(cg->b, a, ci(g, c), ""); }
static LLVMValueRef remc(Cg *cg, GpuGemm *g, LLVMValueRef a, int64_t c) { return LLVMBuildURem(cg->b, a, ci(g, c), ""); }
static LLVMValueRef ltc(Cg *cg, GpuGemm *g, LLVMValueRef a, int64_t c) { return LLVMBuildICmp(cg->b, LLVMIntULT, a, ci(g, c), ""); }
static LLVMValueRef to_it(Cg *cg, GpuGemm *g, LLVMValueRef v) { return LLVMBuildTrunc(cg->b, v, g->it, ""); }
static LLVMValueRef to_i64(Cg *cg, GpuGemm *g, LLVMValueRef v)
{
	return g->it == cg->t_i64 ? v : LLVMBuildZExt(cg->b, v, cg->t_i64, "");
}

static LLVMValueRef lds_at(Cg *cg, GpuGemm *g, LLVMValueRef base, LLVMValueRef idx)
{
	return LLVMBuildGEP2(cg->b, g->et, base, &idx, 1, "");
}

static const LdsTile *lds_tile(const GpuGemm *g, bool is_a) { return is_a ? &g->la : &g->lb; }

/* Where operand element (k, r) of the tile at base lies (r: its m or n): [k][ld] elements, or
 * with runs of k (kvec > 1) [k / kvec][ld] words, each the kvec elements k' kvec .. k' kvec +
 * kvec - 1 of row r, the lowest k first: what one register (mma.sync's k-pair of halves) or one
 * load of a fragment argument (MFMA's 4 halves, WMMA's 8) holds (lds_run); kmajor: [r][ld]. */
static LLVMValueRef lds_elem(Cg *cg, GpuGemm *g, const LdsTile *t, LLVMValueRef base, LLVMValueRef k, LLVMValueRef r)
{
	LLVMValueRef idx;
	if (t->swz_mask) {
		/* row `row`, element `col` of it, its 16-byte unit swizzled */
		LLVMValueRef row = t->kmajor ? r : k, col = t->kmajor ? k : r;
		int per_unit = LDM_ROW_BYTES * 8 / cg_matrix_elem_bits(g->mi->elem);
		LLVMValueRef swz = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, row, ci(g, t->swz_shift), ""), ci(g, t->swz_mask), "");
		LLVMValueRef base = mulc(cg, g, row, t->ld);
		if (t->atom) {
			/* the atom's 8 rows of a group of 8 rows */
			LLVMValueRef group = mulc(cg, g, divc(cg, g, row, 8), 8 * t->ld);
			base = add(cg, add(cg, group, mulc(cg, g, divc(cg, g, col, t->atom), 8 * t->atom)),
				   mulc(cg, g, remc(cg, g, row, 8), t->atom));
			col = remc(cg, g, col, t->atom);
		}
		LLVMValueRef unit = LLVMBuildXor(cg->b, divc(cg, g, col, per_unit), swz, "");
		idx = add(cg, base, add(cg, mulc(cg, g, unit, per_unit), remc(cg, g, col, per_unit)));
	} else if (t->kmajor) {
		idx = add(cg, mulc(cg, g, r, t->ld), k);
	} else if (t->kvec == 1) {
		idx = add(cg, mulc(cg, g, k, t->ld), r);
	} else {
		int shift = 0;
		while (1 << shift < t->kvec)
			shift++;
		LLVMValueRef word = add(cg, mulc(cg, g, LLVMBuildLShr(cg->b, k, ci(g, shift), ""), t->ld), r);
		idx = add(cg, mulc(cg, g, word, t->kvec), LLVMBuildAnd(cg->b, k, ci(g, t->kvec - 1), ""));
	}
	return LLVMBuildGEP2(cg->b, g->lt, base, &idx, 1, "");
}

/* Opens `if (cond)`; returns the block after it, for end_if. */
static LLVMBasicBlockRef begin_if(Cg *cg, LLVMValueRef cond)
{
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "then");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "endif");
	LLVMBuildCondBr(cg->b, cond, then, done);
	LLVMPositionBuilderAtEnd(cg->b, then);
	return done;
}

static void end_if(Cg *cg, LLVMBasicBlockRef done)
{
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, done);
}

/* ---- staging the tiles ---- */

/* The operand's element at (mn, k) (row and column as the operand has them) where both are in
 * range, else zero; an index out of range reads 0 instead. Each index is clamped by its own test,
 * so the emitter's arithmetic on mn stays invariant across k-blocks and LLVM hoists it out of the
 * k loop. */
static LLVMValueRef operand(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef mn, LLVMValueRef k, LLVMValueRef mn_ok,
			    LLVMValueRef k_ok)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	LLVMValueRef zero = ci(g, 0);
	mn = to_i64(cg, g, LLVMBuildSelect(cg->b, mn_ok, mn, zero, ""));
	k = to_i64(cg, g, LLVMBuildSelect(cg->b, k_ok, k, zero, ""));
	LLVMValueRef bb = to_i64(cg, g, g->b);
	LLVMValueRef v = is_a ? op->elem(cg, op, bb, mn, k) : op->elem(cg, op, bb, k, mn);
	return LLVMBuildSelect(cg->b, LLVMBuildAnd(cg->b, mn_ok, k_ok, ""), v, LLVMConstNull(g->et), "");
}

/* v rounded to tf32 (nearest, ties away from zero: cvt.rna.tf32.f32, as cuBLAS and CUTLASS
 * round), as an f32. Rounded once where the tile enters LDS, not per fragment read: every warp
 * that reads the element shares the rounding, and it halves the error of letting the unit ignore
 * the low 13 bits (truncation, biased towards zero). gfx942's xf32 takes the same rounded values,
 * which its own conversion then keeps exactly, so both units multiply the same tf32 numbers.
 * Emulated, and on AMD: the same rounding on the bits, NaN kept. */
static LLVMValueRef round_tf32(Cg *cg, GpuGemm *g, LLVMValueRef v)
{
	if (!g->grp.emulated && g->mi->elem == CG_MELEM_TF32) {
		LLVMValueRef bits = cg_intrinsic_call(cg, "llvm.nvvm.f2tf32.rna", &v, 1);
		return LLVMBuildBitCast(cg->b, bits, g->et, "");
	}
	LLVMValueRef bits = LLVMBuildBitCast(cg->b, v, cg->t_i32, "");
	bits = LLVMBuildAnd(cg->b, LLVMBuildAdd(cg->b, bits, cg_i32(cg, 0x1000), ""), cg_i32(cg, (int32_t)0xffffe000u), "");
	LLVMValueRef nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, v, v, "");
	return LLVMBuildSelect(cg->b, nan, v, LLVMBuildBitCast(cg->b, bits, g->et, ""), "tf32");
}

static int run_lanes(const GpuGemm *g, bool is_a) { return run_lanes_of(g->s, &g->t, is_a, g->t.bk); }

/* Runs of one tile per work-item (the last round may leave work-items idle). */
static int64_t rounds(const GpuGemm *g, bool is_a)
{
	return cdiv((is_a ? g->t.bm : g->t.bn) * g->t.bk / run_lanes(g, is_a), g->t.block);
}

static int64_t staged_count(const GpuGemm *g, bool is_a)
{
	return g->t.copied[is_a] ? 0 : rounds(g, is_a) * run_lanes(g, is_a);
}

/* v as the staging registers keep it: in the half type the LDS holds (half the registers, and the
 * conversion of a half operand's run cancels against the emitter's widening), else as is. */
static LLVMValueRef to_staged(Cg *cg, GpuGemm *g, LLVMValueRef v) { return g->ht ? cg_convert(cg, v, g->ht) : v; }

/* The run's elements at (row, kk) one by one, zero outside the operand and the k range. */
static void load_elems(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef row, LLVMValueRef kk, int lanes, LLVMValueRef *regs)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	int64_t extent = is_a ? g->s->m : g->s->n;
	for (int l = 0; l < lanes; l++) {
		LLVMValueRef rl = op->along_k || !l ? row : add(cg, row, ci(g, l)), kl = op->along_k && l ? add(cg, kk, ci(g, l)) : kk;
		LLVMValueRef in_k = LLVMBuildICmp(cg->b, LLVMIntULT, kl, g->kend, "");
		LLVMBuildStore(cg->b, to_staged(cg, g, operand(cg, g, is_a, rl, kl, ltc(cg, g, rl, extent), in_k)), regs[l]);
	}
}

/* Loads run (r, k) of the operand at k-block k0 into regs: one aligned vector load where all of it
 * lies inside the operand and the work-group's k range, else element by element with zeros
 * outside. */
/* The operand's row and k of run (r, k) of the k-block at k0. */
static void run_origin(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef r, LLVMValueRef k, LLVMValueRef k0, LLVMValueRef *row,
		       LLVMValueRef *kk)
{
	*row = add(cg, is_a ? g->m0 : g->n0, r);
	*kk = add(cg, k0, k);
	if (g->kbase)
		*kk = add(cg, g->kbase, *kk);
}

/* Whether the run of `lanes` at the operand's (row, kk) lies inside the operand and the
 * work-group's k range. */
static LLVMValueRef run_whole(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef row, LLVMValueRef kk, int lanes)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	LLVMValueRef last_row = op->along_k ? row : add(cg, row, ci(g, lanes - 1));
	LLVMValueRef last_k = op->along_k ? add(cg, kk, ci(g, lanes - 1)) : kk;
	return LLVMBuildAnd(cg->b, ltc(cg, g, last_row, is_a ? g->s->m : g->s->n),
			    LLVMBuildICmp(cg->b, LLVMIntULT, last_k, g->kend, ""), "");
}

static void load_run(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef r, LLVMValueRef k, LLVMValueRef k0, int lanes,
		     LLVMValueRef *regs)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	LLVMValueRef row, kk;
	run_origin(cg, g, is_a, r, k, k0, &row, &kk);
	if (lanes == 1) {
		load_elems(cg, g, is_a, row, kk, 1, regs);
		return;
	}
	LLVMValueRef whole = run_whole(cg, g, is_a, row, kk, lanes);
	LLVMBasicBlockRef vec = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "run");
	LLVMBasicBlockRef elems = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "run_elems");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "run_done");
	LLVMBuildCondBr(cg->b, whole, vec, elems);
	LLVMPositionBuilderAtEnd(cg->b, vec);
	LLVMValueRef bb = to_i64(cg, g, g->b), mn = to_i64(cg, g, row), k64 = to_i64(cg, g, kk);
	LLVMValueRef v = is_a ? op->run(cg, op, bb, mn, k64, lanes) : op->run(cg, op, bb, k64, mn, lanes);
	for (int l = 0; l < lanes; l++)
		LLVMBuildStore(cg->b, to_staged(cg, g, LLVMBuildExtractElement(cg->b, v, cg_i32(cg, l), "")), regs[l]);
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, elems);
	load_elems(cg, g, is_a, row, kk, lanes, regs);
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, done);
}

/* Stores run (r, k) from regs into the LDS tile: tf32-rounded for a matrix unit, or already in
 * the half type; one vector store where the tile's rows run along the run (ldm layouts). */
static void store_run(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef r, LLVMValueRef k, int lanes, LLVMValueRef *regs)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	const LdsTile *t = lds_tile(g, is_a);
	LLVMValueRef base = is_a ? g->as : g->bs, v[16];
	for (int l = 0; l < lanes; l++) {
		v[l] = LLVMBuildLoad2(cg->b, g->staged.elem, regs[l], "");
		if (!g->ht && g->mi && (g->mi->elem == CG_MELEM_TF32 || g->mi->elem == CG_MELEM_XF32))
			v[l] = round_tf32(cg, g, v[l]);
	}
	if (t->ldm && lanes > 1) {
		LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(g->lt, (unsigned)lanes));
		for (int l = 0; l < lanes; l++)
			vec = LLVMBuildInsertElement(cg->b, vec, v[l], cg_i32(cg, l), "");
		LLVMValueRef st = LLVMBuildStore(cg->b, vec, lds_elem(cg, g, t, base, k, r));
		/* runs start at multiples of their length, rows at multiples of 16 bytes */
		LLVMSetAlignment(st, (unsigned)(lanes * cg_matrix_elem_bits(g->mi->elem) / 8));
		return;
	}
	for (int l = 0; l < lanes; l++) {
		LLVMValueRef rl = op->along_k || !l ? r : add(cg, r, ci(g, l)), kl = op->along_k && l ? add(cg, k, ci(g, l)) : k;
		LLVMBuildStore(cg->b, v[l], lds_elem(cg, g, t, base, kl, rl));
	}
}

/* 16 bytes from src into LDS at dst: cp.async; where inside (i1, or NULL: always) is false, no
 * bytes read and 16 zeros written. Emulated: a load and a store. */
static void copy16(Cg *cg, GpuGemm *g, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef inside)
{
	if (!g->grp.emulated && !inside) {
		cg_intrinsic_call(cg, "llvm.nvvm.cp.async.cg.shared.global.16", (LLVMValueRef[]){dst, src}, 2);
	} else if (!g->grp.emulated) {
		LLVMValueRef bytes = LLVMBuildSelect(cg->b, inside, cg_i32(cg, 16), cg_i32(cg, 0), "");
		cg_intrinsic_call(cg, "llvm.nvvm.cp.async.cg.shared.global.16.s", (LLVMValueRef[]){dst, src, bytes}, 3);
	} else {
		LLVMTypeRef vt = LLVMVectorType(cg->t_i8, 16);
		LLVMValueRef v = LLVMBuildLoad2(cg->b, vt, src, "");
		LLVMSetAlignment(v, 16);
		if (inside)
			v = LLVMBuildSelect(cg->b, inside, v, LLVMConstNull(vt), "");
		LLVMSetAlignment(LLVMBuildStore(cg->b, v, dst), 16);
	}
}

/* The cp.async of run (r, k) into the copies' buffer (an, bn) from the operand at (row, kk), where
 * the run is whole (run_whole); none read where it lies in the padding. */
static void copy_whole(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef r, LLVMValueRef k, LLVMValueRef row, LLVMValueRef kk)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	LLVMValueRef bb = to_i64(cg, g, g->b), mn = to_i64(cg, g, row), k64 = to_i64(cg, g, kk), inside = NULL;
	LLVMValueRef src = is_a ? op->at(cg, op, bb, mn, k64, &inside) : op->at(cg, op, bb, k64, mn, &inside);
	copy16(cg, g, lds_elem(cg, g, lds_tile(g, is_a), is_a ? g->an : g->bn, k, r), src, inside);
}

/* Run (r, k) of the k-block at k0 into the copies' buffer: cp.async of its 16 bytes where it is
 * whole, else its elements one by one, zero outside (stored at once). */
static void copy_run(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef r, LLVMValueRef k, LLVMValueRef k0, int lanes)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	const LdsTile *t = lds_tile(g, is_a);
	LLVMValueRef base = is_a ? g->an : g->bn, row, kk;
	run_origin(cg, g, is_a, r, k, k0, &row, &kk);
	LLVMBasicBlockRef whole = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "copy");
	LLVMBasicBlockRef elems = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "copy_elems");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "copy_done");
	LLVMBuildCondBr(cg->b, run_whole(cg, g, is_a, row, kk, lanes), whole, elems);
	LLVMPositionBuilderAtEnd(cg->b, whole);
	copy_whole(cg, g, is_a, r, k, row, kk);
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, elems);
	for (int l = 0; l < lanes; l++) {
		LLVMValueRef rl = op->along_k || !l ? row : add(cg, row, ci(g, l)), kl = op->along_k && l ? add(cg, kk, ci(g, l)) : kk;
		LLVMValueRef in_k = LLVMBuildICmp(cg->b, LLVMIntULT, kl, g->kend, "");
		LLVMValueRef v = to_staged(cg, g, operand(cg, g, is_a, rl, kl, ltc(cg, g, rl, is_a ? g->s->m : g->s->n), in_k));
		LLVMValueRef lr = op->along_k || !l ? r : add(cg, r, ci(g, l)), lk = op->along_k && l ? add(cg, k, ci(g, l)) : k;
		LLVMBuildStore(cg->b, v, lds_elem(cg, g, t, base, lk, lr));
	}
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, done);
}

/* Runs r[0] < ... < r[n-1] of one k of the k-block at k0: where the last is whole all are, and
 * their copies share one block, in which LLVM computes the operand's address math of that k
 * once (a window's position: image, row and column); else run by run. */
static void copy_runs_at_k(Cg *cg, GpuGemm *g, bool is_a, const LLVMValueRef *r, int n, LLVMValueRef k,
			   LLVMValueRef k0, int lanes)
{
	LLVMValueRef row, kk;
	run_origin(cg, g, is_a, r[n - 1], k, k0, &row, &kk);
	LLVMBasicBlockRef whole = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "copies");
	LLVMBasicBlockRef apart = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "copies_apart");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "copies_done");
	LLVMBuildCondBr(cg->b, run_whole(cg, g, is_a, row, kk, lanes), whole, apart);
	LLVMPositionBuilderAtEnd(cg->b, whole);
	for (int i = 0; i < n; i++) {
		run_origin(cg, g, is_a, r[i], k, k0, &row, &kk);
		copy_whole(cg, g, is_a, r[i], k, row, kk);
	}
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, apart);
	for (int i = 0; i < n; i++)
		copy_run(cg, g, is_a, r[i], k, k0, lanes);
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, done);
}

/* Whether an operand's tile is staged warp by warp (stage): half operands (their k-pair LDS
 * words), single elements along the rows (the window gathers), in whole rounds of whole warps.
 * Measured on an H100 (docs/performance.md, 2026-11-24): 10-13% off the bf16 convolution steps,
 * but 1-5% onto fp32's and tf32's (more registers for the rows' hoisted origins), which keep
 * one row per work-item. */
static bool warp_major(const GpuGemm *g, bool is_a)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	int64_t rows = is_a ? g->t.bm : g->t.bn, warps = g->t.block / GPU_WARP;
	return g->ht && !op->along_k && run_lanes(g, is_a) == 1 && g->t.block % GPU_WARP == 0 &&
	       rows % GPU_WARP == 0 && g->t.bk % warps == 0;
}

/* How many runs a work-item copies of one k of an operand's tile that runs along its rows (not
 * k), where its rounds can take runs of one k: the rounds fill the tile exactly, and each row at k
 * splits into as many runs per work-item as there are rounds. Their copies share the address math
 * of k (copy_runs_at_k): a weight gradient's window along n splits its k, the position, into
 * image, row and column for every run. 0 where the rounds take runs as stage's rounds do.
 * Only on tiles of 128 rows or more that the operand's rows fill: measured on an H100 (vgg16
 * bf16, docs/performance.md, 2026-12-07), 64-row tiles and tiles the rows end inside (whose
 * last run fails the shared test, so every run takes its own) were up to 2x slower with it. */
static int64_t runs_at_one_k(const GpuGemm *g, bool is_a)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	int lanes = run_lanes(g, is_a);
	int64_t rows = is_a ? g->t.bm : g->t.bn, n = rounds(g, is_a), extent = is_a ? g->s->m : g->s->n;
	if (!g->t.copied[is_a] || op->along_k || lanes == 1 || n < 2 || n > 16 || rows < 128 || extent % rows)
		return 0;
	return rows / lanes % n == 0 && rows * g->t.bk / lanes == n * g->t.block ? n : 0;
}

/* Work-item tid's share of one tile, rows x bk (rows along M for A, N for B): loaded from the
 * operand at k-block k0 into its staging registers, or (k0 NULL) from them into the LDS tile. Run
 * e = tid + i*block (run_lanes elements along the operand's contiguous index: k when the operand
 * runs along k, else the rows) so that neighbouring work-items read neighbouring addresses. Warp
 * by warp (warp_major) the 32 lanes of a warp take 32 neighbouring rows of one k, and a lane stays
 * at that k for rows/32 rounds: what an element costs per k (a window's tap entry) is paid once
 * for those rounds. A copied operand (t.copied) goes from k-block k0 into the copies' buffer. */
static void stage(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef tid64, LLVMValueRef k0)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	int lanes = run_lanes(g, is_a);
	int64_t at_k = runs_at_one_k(g, is_a);
	if (at_k) {
		/* per_k work-items share a row of the tile at k; work-item tid takes every per_k-th run */
		int64_t per_k = (is_a ? g->t.bm : g->t.bn) / lanes / at_k;
		LLVMValueRef tid = to_it(cg, g, tid64), k = divc(cg, g, tid, per_k), r[16];
		LLVMValueRef first = mulc(cg, g, remc(cg, g, tid, per_k), lanes);
		for (int64_t i = 0; i < at_k; i++)
			r[i] = add(cg, first, ci(g, i * per_k * lanes));
		copy_runs_at_k(cg, g, is_a, r, (int)at_k, k, k0, lanes);
		return;
	}
	int64_t rows = is_a ? g->t.bm : g->t.bn, bk = g->t.bk, total = rows * bk / lanes;
	int64_t reg0 = is_a ? 0 : staged_count(g, true);
	/* runs per row of the tile along the contiguous index */
	int64_t across = op->along_k ? bk / lanes : rows / lanes;
	bool by_warp = warp_major(g, is_a);
	LLVMValueRef tid = to_it(cg, g, tid64);
	LLVMValueRef lane = by_warp ? remc(cg, g, tid, GPU_WARP) : NULL, warp = by_warp ? divc(cg, g, tid, GPU_WARP) : NULL;
	for (int64_t i = 0; i < rounds(g, is_a); i++) {
		LLVMBasicBlockRef done = NULL;
		LLVMValueRef e = add(cg, tid, ci(g, i * g->t.block));
		if ((i + 1) * g->t.block > total)
			done = begin_if(cg, ltc(cg, g, e, total));
		LLVMValueRef r, k;
		if (by_warp) {
			int64_t per_k = rows / GPU_WARP;
			r = add(cg, lane, ci(g, i % per_k * GPU_WARP));
			k = add(cg, warp, ci(g, i / per_k * (g->t.block / GPU_WARP)));
		} else {
			LLVMValueRef at = mulc(cg, g, remc(cg, g, e, across), lanes), line = divc(cg, g, e, across);
			r = op->along_k ? line : at, k = op->along_k ? at : line;
		}
		LLVMValueRef regs[16];
		for (int l = 0; l < lanes && !g->t.copied[is_a]; l++)
			regs[l] = cg_gpu_private_at(cg, &g->grp, &g->staged, tid64, reg0 + i * lanes + l);
		if (g->t.copied[is_a])
			copy_run(cg, g, is_a, r, k, k0, lanes);
		else if (k0)
			load_run(cg, g, is_a, r, k, k0, lanes, regs);
		else
			store_run(cg, g, is_a, r, k, lanes, regs);
		if (done)
			end_if(cg, done);
	}
}

/* ---- the register tile ----
 *
 * A work-item's TM x TN tile is (TM/4) x (TN/4) blocks of 4 x 4, a quarter (half) of the work-group
 * tile apart: row i of work-item ty is (i/4) * BM/(TM/4) + ty*4 + i%4, and likewise the columns.
 * Per k each block row is one 4-wide LDS read, and neighbouring work-items read neighbouring
 * 16 bytes. Groups of 32 work-items (a warp; half a wave64) span 4 x 8 tiles, so per k they read 4
 * rows of A and 8 of B: 64 and 128 contiguous bytes, no bank conflicts. */

enum { GPU_LANES = 32, GPU_LANE_COLS = 8, GPU_LANE_ROWS = GPU_LANES / GPU_LANE_COLS };

typedef struct {
	LLVMValueRef slice, ty, tx; /* index type; mma: the warp's row and column among the warp tiles */
	LLVMValueRef lane;          /* mma: the lane in the warp */
	LLVMValueRef tid;           /* the work-item */
} Place;

static Place warp_place_of(Cg *cg, GpuGemm *g, LLVMValueRef tid);

static Place place_of(Cg *cg, GpuGemm *g, LLVMValueRef tid)
{
	if (g->mi) {
		Place p = warp_place_of(cg, g, tid);
		p.tid = tid;
		return p;
	}
	int64_t nx = g->t.bn / g->t.tn, ny = g->t.bm / g->t.tm, per_slice = nx * ny;
	LLVMValueRef r = remc(cg, g, tid, per_slice);
	Place p = {.slice = divc(cg, g, tid, per_slice), .ty = divc(cg, g, r, nx), .tx = remc(cg, g, r, nx), .tid = tid};
	if (nx % GPU_LANE_COLS || ny % GPU_LANE_ROWS)
		return p;
	/* lane l of group w: 4 x 8 lanes, the groups row-major over the tile */
	LLVMValueRef lane = remc(cg, g, r, GPU_LANES), w = divc(cg, g, r, GPU_LANES);
	int64_t across = nx / GPU_LANE_COLS;
	p.ty = add(cg, mulc(cg, g, divc(cg, g, w, across), GPU_LANE_ROWS), divc(cg, g, lane, GPU_LANE_COLS));
	p.tx = add(cg, mulc(cg, g, remc(cg, g, w, across), GPU_LANE_COLS), remc(cg, g, lane, GPU_LANE_COLS));
	return p;
}

/* Row (column) i of the register tile of the work-item at t (ty or tx) in a tile side of `side`
 * with register tile side `reg`. */
static LLVMValueRef tile_at(Cg *cg, GpuGemm *g, LLVMValueRef t, int side, int reg, int i)
{
	if (reg < GPU_REG_TILE)
		return add(cg, mulc(cg, g, t, reg), ci(g, i));
	int64_t stride = (int64_t)side / (reg / GPU_REG_TILE);
	return add(cg, mulc(cg, g, t, GPU_REG_TILE), ci(g, (i / GPU_REG_TILE) * stride + i % GPU_REG_TILE));
}

static LLVMValueRef row_at(Cg *cg, GpuGemm *g, const Place *p, int i) { return tile_at(cg, g, p->ty, g->t.bm, g->t.tm, i); }
static LLVMValueRef col_at(Cg *cg, GpuGemm *g, const Place *p, int j) { return tile_at(cg, g, p->tx, g->t.bn, g->t.tn, j); }

static LLVMValueRef acc_at(Cg *cg, GpuGemm *g, LLVMValueRef tid64, int i, int j)
{
	return cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, (int64_t)i * g->t.tn + j);
}

/* n (GPU_REG_TILE, or GPU_SMALL_REG of float32) consecutive LDS elements from idx (a multiple
 * of n) as scalars. */
static void lds_quad(Cg *cg, GpuGemm *g, LLVMValueRef base, LLVMValueRef idx, int n, LLVMValueRef *out)
{
	LLVMTypeRef vt = LLVMVectorType(g->et, (unsigned)n);
	LLVMValueRef v = LLVMBuildLoad2(cg->b, vt, lds_at(cg, g, base, idx), "");
	/* the arrays are 16-byte aligned, the row pitches multiples of 4 and idx of n */
	LLVMSetAlignment(v, n == GPU_REG_TILE ? 16 : (unsigned)n * 4);
	for (int l = 0; l < n; l++)
		out[l] = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, l), "");
}

/* The register tile's rows (columns) at LDS row k: side `side`, register side `reg`. */
static void lds_frag(Cg *cg, GpuGemm *g, LLVMValueRef base, LLVMValueRef krow, LLVMValueRef t, int side, int reg,
		     LLVMValueRef *out)
{
	int n = reg < GPU_REG_TILE ? reg : GPU_REG_TILE;
	for (int q = 0; q < reg; q += n)
		lds_quad(cg, g, base, add(cg, krow, tile_at(cg, g, t, side, reg, q)), n, out + q);
}

/* acc + a . b for k-pairs of halves (words read as f32): v_dot2_f32_f16; emulated, its products
 * (exact in f32) added one after the other. */
static LLVMValueRef dot2(Cg *cg, GpuGemm *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef acc)
{
	LLVMTypeRef h2 = LLVMVectorType(cg->t_f16, 2);
	a = LLVMBuildBitCast(cg->b, a, h2, "");
	b = LLVMBuildBitCast(cg->b, b, h2, "");
	if (!g->grp.emulated)
		return cg_intrinsic_call(cg, "llvm.amdgcn.fdot2", (LLVMValueRef[]){a, b, acc, LLVMConstInt(cg->t_i1, 0, 0)}, 4);
	for (int e = 0; e < 2; e++) {
		LLVMValueRef args[3] = {LLVMBuildFPExt(cg->b, LLVMBuildExtractElement(cg->b, a, cg_i32(cg, e), ""), g->et, ""),
					LLVMBuildFPExt(cg->b, LLVMBuildExtractElement(cg->b, b, cg_i32(cg, e), ""), g->et, ""), acc};
		acc = cg_intrinsic(cg, "fmuladd", g->et, args, 3);
	}
	return acc;
}

static int64_t simt_steps(const GpuGemm *g) { return g->t.bk / g->t.ks / g->la.kvec; }

/* The register tile's A and B fragments of step s of this work-item's k-slice, from LDS. */
static void simt_frags(Cg *cg, GpuGemm *g, const Place *p, int64_t s, LLVMValueRef *a, LLVMValueRef *b)
{
	LLVMValueRef k = add(cg, mulc(cg, g, p->slice, simt_steps(g)), ci(g, s));
	lds_frag(cg, g, g->as, mulc(cg, g, k, g->la.ld), p->ty, g->t.bm, g->t.tm, a);
	lds_frag(cg, g, g->bs, mulc(cg, g, k, g->lb.ld), p->tx, g->t.bn, g->t.tn, b);
}

/* acc[i][j] += a[i] . b[j] (dot2: per k-pair word). */
static void simt_products(Cg *cg, GpuGemm *g, const LLVMValueRef *a, const LLVMValueRef *b, LLVMValueRef *acc)
{
	int tn = g->t.tn;
	for (int i = 0; i < g->t.tm; i++)
		for (int j = 0; j < tn; j++) {
			LLVMValueRef *c = &acc[i * tn + j];
			*c = g->t.half_math == GPU_HALF_DOT2 ? dot2(cg, g, a[i], b[j], *c)
				       : cg_intrinsic(cg, "fmuladd", g->et, (LLVMValueRef[]){a[i], b[j], *c}, 3);
		}
}

/* The accumulators, or the held fragments (a then b), of work-item tid64: loaded into vals, or
 * (store) from them. */
static void private_io(Cg *cg, GpuGemm *g, const GpuPrivate *p, LLVMValueRef tid64, LLVMValueRef *vals, bool store)
{
	for (int64_t q = 0; q < p->count; q++) {
		LLVMValueRef at = cg_gpu_private_at(cg, &g->grp, p, tid64, q);
		if (store)
			LLVMBuildStore(cg->b, vals[q], at);
		else
			vals[q] = LLVMBuildLoad2(cg->b, g->et, at, "");
	}
}

/* acc[i][j] += sum over this slice's k of As[k][row i] * Bs[k][column j]. Holding (g->hold), the
 * k-block's last step is held back: its fragments stay in registers across the next barrier,
 * and its products are the first thing after it, behind the next block's first LDS reads, so
 * that they wait for those reads instead of the work-item (the same products in the same
 * order; held_products adds the last block's). */
static void accumulate_simt(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	int tm = g->t.tm;
	int64_t steps = simt_steps(g);
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	LLVMValueRef acc[GPU_MAX_REG * GPU_MAX_REG], cur[2 * GPU_MAX_REG], next[2 * GPU_MAX_REG];
	private_io(cg, g, &g->acc, tid64, acc, false);
	/* unrolled: the accumulators stay values, no memory between the steps */
	if (g->hold) {
		LLVMValueRef held[2 * GPU_MAX_REG];
		private_io(cg, g, &g->held, tid64, held, false);
		simt_frags(cg, g, &p, 0, cur, cur + tm);
		simt_products(cg, g, held, held + tm, acc);
		for (int64_t s = 1; s < steps; s++) {
			simt_frags(cg, g, &p, s, next, next + tm);
			simt_products(cg, g, cur, cur + tm, acc);
			memcpy(cur, next, sizeof cur);
		}
		private_io(cg, g, &g->held, tid64, cur, true);
	} else {
		for (int64_t s = 0; s < steps; s++) {
			simt_frags(cg, g, &p, s, cur, cur + tm);
			simt_products(cg, g, cur, cur + tm, acc);
		}
	}
	private_io(cg, g, &g->acc, tid64, acc, true);
}

/* Holding: the held fragments zero before the first k-block (0 . 0 adds nothing to the zero
 * accumulators), or the last k-block's held products added after the loop. */
static void held_begin(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	LLVMValueRef zeros[2 * GPU_MAX_REG];
	for (int64_t q = 0; q < g->held.count; q++)
		zeros[q] = LLVMConstNull(g->et);
	private_io(cg, g, &g->held, tid64, zeros, true);
}

static void held_products(Cg *cg, GpuGemm *g)
{
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	LLVMValueRef acc[GPU_MAX_REG * GPU_MAX_REG], held[2 * GPU_MAX_REG];
	private_io(cg, g, &g->acc, tid64, acc, false);
	private_io(cg, g, &g->held, tid64, held, false);
	simt_products(cg, g, held, held + g->t.tm, acc);
	private_io(cg, g, &g->acc, tid64, acc, true);
	cg_gpu_phase_end(cg, &g->grp, false);
}

/* GPU_REG_TILE consecutive halves of LDS from idx (a multiple of 4), as one vector. */
static LLVMValueRef lds_quad_halves(Cg *cg, GpuGemm *g, LLVMValueRef base, LLVMValueRef idx)
{
	LLVMValueRef v = LLVMBuildLoad2(cg->b, LLVMVectorType(g->ht, GPU_REG_TILE), LLVMBuildGEP2(cg->b, g->ht, base, &idx, 1, ""), "");
	/* the buffers are 16-byte aligned, the row pitches and idx multiples of 4 halves */
	LLVMSetAlignment(v, 8);
	return v;
}

/* <v[i], v[j]>: a pair of halves for one packed instruction (the GPUs select halves of a
 * register in the instruction itself: op_sel on AMD, .H0_H0 in NVIDIA's SASS). */
static LLVMValueRef half_pair(Cg *cg, LLVMValueRef v, int i, int j)
{
	LLVMValueRef mask[2] = {cg_i32(cg, i), cg_i32(cg, j)};
	return LLVMBuildShuffleVector(cg->b, v, LLVMGetUndef(LLVMTypeOf(v)), LLVMConstVector(mask, 2), "");
}

/* a * b + c on pairs of halves, rounded once to the half type: the packed instruction; emulated,
 * each half's FMA in float32 (its product is exact there) rounded to the half type, since the
 * host has no half arithmetic. */
static LLVMValueRef packed_fma(Cg *cg, GpuGemm *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	if (!g->grp.emulated)
		return cg_intrinsic(cg, "fma", LLVMTypeOf(c), (LLVMValueRef[]){a, b, c}, 3);
	LLVMValueRef d = c;
	for (int e = 0; e < 2; e++) {
		LLVMValueRef args[3], at = cg_i32(cg, e);
		LLVMValueRef in[3] = {a, b, c};
		for (int q = 0; q < 3; q++)
			args[q] = LLVMBuildFPExt(cg->b, LLVMBuildExtractElement(cg->b, in[q], at, ""), g->et, "");
		d = LLVMBuildInsertElement(cg->b, d, cg_convert(cg, cg_intrinsic(cg, "fma", g->et, args, 3), g->ht), at, "");
	}
	return d;
}

/* Packed tiles (GPU_HALF_PACKED): per k, each row's A half paired with itself times a pair of
 * neighbouring columns' B halves, one packed FMA per two outputs, into partial sums in the half
 * type that start at zero each k-block; at its end each partial is widened and added to its
 * output's float32 accumulator. */
static void accumulate_packed(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	int tm = g->t.tm, tn = g->t.tn, pairs = tn / 2;
	int64_t steps = g->t.bk / g->t.ks;
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	LLVMTypeRef h2 = LLVMVectorType(g->ht, 2);
	LLVMValueRef part[GPU_MAX_REG * GPU_MAX_REG / 2];
	for (int q = 0; q < tm * pairs; q++)
		part[q] = LLVMConstNull(h2);
	for (int64_t s = 0; s < steps; s++) {
		LLVMValueRef k = add(cg, mulc(cg, g, p.slice, steps), ci(g, s));
		LLVMValueRef arow = mulc(cg, g, k, g->la.ld), brow = mulc(cg, g, k, g->lb.ld);
		LLVMValueRef a[GPU_MAX_REG / GPU_REG_TILE], b[GPU_MAX_REG / GPU_REG_TILE];
		for (int q = 0; q < tm; q += GPU_REG_TILE)
			a[q / GPU_REG_TILE] = lds_quad_halves(cg, g, g->as, add(cg, arow, row_at(cg, g, &p, q)));
		for (int q = 0; q < tn; q += GPU_REG_TILE)
			b[q / GPU_REG_TILE] = lds_quad_halves(cg, g, g->bs, add(cg, brow, col_at(cg, g, &p, q)));
		for (int i = 0; i < tm; i++) {
			LLVMValueRef ai = half_pair(cg, a[i / GPU_REG_TILE], i % GPU_REG_TILE, i % GPU_REG_TILE);
			for (int j = 0; j < pairs; j++) {
				int c = 2 * j % GPU_REG_TILE;
				LLVMValueRef bj = half_pair(cg, b[2 * j / GPU_REG_TILE], c, c + 1);
				LLVMValueRef *d = &part[i * pairs + j];
				*d = packed_fma(cg, g, ai, bj, *d);
			}
		}
	}
	for (int i = 0; i < tm; i++)
		for (int j = 0; j < tn; j++) {
			LLVMValueRef at = acc_at(cg, g, tid64, i, j);
			LLVMValueRef sum = LLVMBuildExtractElement(cg->b, part[i * pairs + j / 2], cg_i32(cg, j % 2), "");
			LLVMValueRef v = LLVMBuildFAdd(cg->b, LLVMBuildLoad2(cg->b, g->et, at, ""), LLVMBuildFPExt(cg->b, sum, g->et, ""), "");
			LLVMBuildStore(cg->b, v, at);
		}
}

/* ---- the warp tile (matrix units) ----
 *
 * Warp w of the work-group (a wave of the instruction's size: 32 lanes, or 64 on CDNA) is slice
 * w / P of P = (BM/WM) x (BN/WN) warps, which sit row-major over the tile; its WM x WN warp tile
 * is (WM/M) x (WN/N) fragments of the instruction's M x N. A work-item's accumulators are the C
 * slots of each fragment in turn: slot q of fragment (i, j) is acc[(i * WN/N + j) * C + q] (C
 * slots per lane), at row M i + c_at(lane, q).row, column N j + c_at(lane, q).col of the warp
 * tile. Per k step a warp reads its A fragments (a_at) and B fragments (b_at) from LDS, which
 * lays A out as [k][m] and B as [k][n] (with runs of k, lds_run: [k/run][m] and [k/run][n] words
 * of `run` elements along k). mma.sync: a register of a fragment is the word at row
 * threadID_in_group (0..3) and column groupID (0..7) plus constants, so rows padded by 8 words
 * (MMA_PAD: k advances 8 banks) put the 32 lanes on 32 banks. */

static Place warp_place_of(Cg *cg, GpuGemm *g, LLVMValueRef tid)
{
	int64_t nx = g->t.bn / g->t.wn, per_slice = nx * (g->t.bm / g->t.wm), wave = g->mi->wave;
	LLVMValueRef w = divc(cg, g, tid, wave), r = remc(cg, g, w, per_slice);
	return (Place){.slice = divc(cg, g, w, per_slice), .ty = divc(cg, g, r, nx), .tx = remc(cg, g, r, nx),
		       .lane = remc(cg, g, tid, wave)};
}

/* tab[lane] for a lane known at run time, where tab is additive in the lane's bits: tab[0] plus,
 * per set bit b, tab[1 << b] - tab[0]. */
static void coord_at(Cg *cg, GpuGemm *g, const CgMatrixCoord *tab, int wave, LLVMValueRef lane, LLVMValueRef *row,
		     LLVMValueRef *col)
{
	*row = ci(g, tab[0].row);
	*col = ci(g, tab[0].col);
	for (int bit = 0; (1 << bit) < wave; bit++) {
		CgMatrixCoord d = tab[1 << bit];
		LLVMValueRef on = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, lane, ci(g, bit), ""), ci(g, 1), "");
		if (d.row != tab[0].row)
			*row = add(cg, *row, mulc(cg, g, on, d.row - tab[0].row));
		if (d.col != tab[0].col)
			*col = add(cg, *col, mulc(cg, g, on, d.col - tab[0].col));
	}
}

/* fn(lane, slot) for a lane known at run time. The layouts are additive in the lane's bits
 * (mma.sync's groupID and threadID_in_group, MFMA's and WMMA's lane % 16 and lane / 16 are bit
 * fields of the lane; checked_row checked it). */
static void frag_at(Cg *cg, GpuGemm *g, CgMatrixIndexFn fn, LLVMValueRef lane, int slot, LLVMValueRef *row,
		    LLVMValueRef *col)
{
	CgMatrixCoord tab[64];
	for (int bit = 0; (1 << bit) < g->mi->wave; bit++)
		tab[1 << bit] = fn(g->mi, 1 << bit, slot);
	tab[0] = fn(g->mi, 0, slot);
	coord_at(cg, g, tab, g->mi->wave, lane, row, col);
}

static int frags_n(const GpuGemm *g) { return g->t.wn / g->mi->n; }
static int frags_m(const GpuGemm *g) { return g->t.wm / g->mi->m; }

/* Row and column in the work-group tile of accumulator idx of the work-item at p. */
static void mma_acc_at(Cg *cg, GpuGemm *g, const Place *p, int64_t idx, LLVMValueRef *row, LLVMValueRef *col)
{
	const CgMatrixInstr *mi = g->mi;
	int64_t frag = idx / mi->c_per_lane, i = frag / frags_n(g), j = frag % frags_n(g);
	frag_at(cg, g, mi->c_at, p->lane, (int)(idx % mi->c_per_lane), row, col);
	*row = add(cg, *row, add(cg, mulc(cg, g, p->ty, g->t.wm), ci(g, i * mi->m)));
	*col = add(cg, *col, add(cg, mulc(cg, g, p->tx, g->t.wn), ci(g, j * mi->n)));
}

static LLVMTypeRef scalar_type(Cg *cg, CgMatrixScalar s)
{
	switch (s) {
	case CG_MSCALAR_F32: return cg->t_f32;
	case CG_MSCALAR_I32: return cg->t_i32;
	case CG_MSCALAR_F16: return cg->t_f16;
	case CG_MSCALAR_I16: return LLVMInt16TypeInContext(cg->ctx);
	}
	CG_FAIL("unknown matrix operand scalar %d", (int)s);
}

/* One argument of the intrinsic: <vector x scalar>, or the scalar. */
static LLVMTypeRef arg_type(Cg *cg, const CgMatrixArgType *t)
{
	LLVMTypeRef s = scalar_type(cg, t->scalar);
	return t->vector == 1 ? s : LLVMVectorType(s, (unsigned)t->vector);
}

enum { MMA_MAX_ACC = 128, MMA_MAX_FRAGS = 8, MMA_MAX_ARGS = 4, MMA_MAX_WORDS = 8, MMA_PAD = 8 };

/* ---- ldmatrix (NVIDIA) ----
 *
 * ldmatrix.x{1,2,4} reads 1, 2 or 4 matrices of 8 LDS rows of 16 bytes: lane 8q + r gives the
 * address of row r of matrix q, and lane l receives of matrix q the 32-bit word at row l / 4,
 * byte 4 (l % 4) (.trans, 16-bit elements: the elements at rows 2 (l % 4) and 2 (l % 4) + 1,
 * column l / 4). Matrix q is argument q of the instruction's fragment (a register: a k-pair of
 * halves, or one tf32), so the rows follow from the row's a_at and b_at (ldm_rows), which also
 * checks, for every lane and slot, that what ldmatrix hands the lane is the element the
 * instruction expects there. A warp reads a fragment of A (16 x 16 halves) in one instruction
 * where the word reads took four, and the 8 rows of a matrix, padded to an odd number of 16-byte
 * units (lds_layout), fall on 8 different groups of 4 banks. */

/* Whether rows of the tile run along A's or B's column index (else the row index): A is (m, k),
 * B is (k, n), and k-major rows run along k. */
static bool along_col(bool is_a, bool kmajor) { return is_a == kmajor; }

static CgMatrixCoord ldm_step(CgMatrixCoord c, bool is_a, bool kmajor, int along)
{
	if (along_col(is_a, kmajor))
		c.col += along;
	else
		c.row += along;
	return c;
}

static bool same_coord(CgMatrixCoord a, CgMatrixCoord b) { return a.row == b.row && a.col == b.col; }

/* Fills t->rows (the element of A or B, for a fragment at the origin, at the start of the row
 * whose address each lane gives) for t's layout; false where ldmatrix cannot deliver the
 * instruction's fragments from it. */
static bool ldm_rows(const CgMatrixInstr *mi, bool is_a, LdsTile *t)
{
	const CgMatrixArgType *ty = is_a ? &mi->a_type : &mi->b_type;
	CgMatrixIndexFn fn = is_a ? mi->a_at : mi->b_at;
	int mats = ty->args, per_arg = (is_a ? mi->a_per_lane : mi->b_per_lane) / mats;
	int bits = cg_matrix_elem_bits(mi->elem), per_row = LDM_ROW_BYTES * 8 / bits;
	bool trans = !t->kmajor;
	if (mi->wave != LDM_LANES || per_arg * bits != 32 || (mats != 1 && mats != 2 && mats != 4) || (trans && bits != 16))
		return false;
	/* lanes past the last matrix repeat the others' addresses (ignored by ldmatrix) */
	for (int q = 0; q < 4; q++)
		for (int r = 0; r < 8; r++)
			t->rows[8 * q + r] = trans ? fn(mi, r / 2, q % mats * per_arg + r % 2) : fn(mi, 4 * r, q % mats * per_arg);
	if (!table_additive(t->rows, LDM_LANES))
		return false;
	for (int l = 0; l < LDM_LANES; l++) {
		CgMatrixCoord c = t->rows[l];
		if ((along_col(is_a, t->kmajor) ? c.col : c.row) % per_row)
			return false;
		for (int q = 0; q < mats; q++)
			for (int e = 0; e < per_arg; e++) {
				CgMatrixCoord got = trans ? ldm_step(t->rows[8 * q + 2 * (l % 4) + e], is_a, t->kmajor, l / 4)
							  : ldm_step(t->rows[8 * q + l / 4], is_a, t->kmajor, l % 4 * per_arg + e);
				if (!same_coord(got, fn(mi, l, q * per_arg + e)))
					return false;
			}
	}
	return true;
}

/* The LDS address of the row that lane `lane` gives for the fragment at (k0, mn0), `along`
 * elements into it. */
static LLVMValueRef ldm_row_ptr(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef k0, LLVMValueRef mn0, LLVMValueRef lane,
				LLVMValueRef along)
{
	const LdsTile *t = lds_tile(g, is_a);
	LLVMValueRef r, c;
	coord_at(cg, g, t->rows, LDM_LANES, lane, &r, &c);
	if (along) {
		if (along_col(is_a, t->kmajor))
			c = add(cg, c, along);
		else
			r = add(cg, r, along);
	}
	LLVMValueRef k = add(cg, k0, is_a ? c : r), mn = add(cg, mn0, is_a ? r : c);
	return lds_elem(cg, g, t, is_a ? g->as : g->bs, k, mn);
}

/* The fragment at (k0, mn0) by ldmatrix; emulated, each lane reads what ldmatrix would hand it,
 * where the lanes that give the rows point. */
static void ldm_frag(Cg *cg, GpuGemm *g, bool is_a, const Place *p, LLVMValueRef k0, LLVMValueRef mn0, LLVMValueRef *out)
{
	const LdsTile *t = lds_tile(g, is_a);
	const CgMatrixArgType *ty = is_a ? &g->mi->a_type : &g->mi->b_type;
	int mats = ty->args, per_arg = (is_a ? g->mi->a_per_lane : g->mi->b_per_lane) / mats;
	LLVMTypeRef at_type = arg_type(cg, ty);
	LLVMValueRef words[4];
	if (!g->grp.emulated) {
		LLVMValueRef ptr = ldm_row_ptr(cg, g, is_a, k0, mn0, p->lane, NULL);
		char name[64];
		snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", mats, t->kmajor ? "" : ".trans");
		LLVMTypeRef pt = LLVMTypeOf(ptr);
		LLVMValueRef d = cg_intrinsic_call_overloaded(cg, name, &pt, 1, &ptr, 1);
		for (int q = 0; q < mats; q++)
			words[q] = mats == 1 ? d : LLVMBuildExtractValue(cg->b, d, (unsigned)q, "");
	} else {
		LLVMValueRef quad = remc(cg, g, p->lane, 4), group = divc(cg, g, p->lane, 4);
		for (int q = 0; q < mats; q++) {
			if (t->kmajor) {
				LLVMValueRef src = add(cg, ci(g, 8 * q), group);
				LLVMValueRef ptr = ldm_row_ptr(cg, g, is_a, k0, mn0, src, mulc(cg, g, quad, per_arg));
				words[q] = LLVMBuildLoad2(cg->b, cg->t_i32, ptr, "");
				continue;
			}
			words[q] = cg_i32(cg, 0);
			for (int e = 0; e < 2; e++) {
				LLVMValueRef src = add(cg, ci(g, 8 * q + e), mulc(cg, g, quad, 2));
				LLVMValueRef h = LLVMBuildLoad2(cg->b, g->lt, ldm_row_ptr(cg, g, is_a, k0, mn0, src, group), "");
				LLVMValueRef bits = LLVMBuildZExt(cg->b, LLVMBuildBitCast(cg->b, h, LLVMInt16TypeInContext(cg->ctx), ""),
								  cg->t_i32, "");
				words[q] = LLVMBuildOr(cg->b, words[q], LLVMBuildShl(cg->b, bits, cg_i32(cg, 16 * e), ""), "");
			}
		}
	}
	for (int q = 0; q < mats; q++)
		out[q] = LLVMTypeOf(words[q]) == at_type ? words[q] : LLVMBuildBitCast(cg->b, words[q], at_type, "");
}

/* The fragment of A (rows mn0..) or B (columns mn0..) at k0, as the intrinsic's arguments. Each
 * argument is its words in slot order, one LDS load of kvec elements along k each: a 32-bit word
 * (the tf32 bits the staging rounded, an f32, or a k-pair of halves), 64 bits (MFMA's 4 halves,
 * xf32's 2 floats), 128 (8 of WMMA's 16 halves); bit-cast to the argument's type. */
static void load_frag(Cg *cg, GpuGemm *g, bool is_a, const Place *p, LLVMValueRef k0, LLVMValueRef mn0,
		      LLVMValueRef *out)
{
	const CgMatrixInstr *mi = g->mi;
	const LdsTile *t = lds_tile(g, is_a);
	if (t->ldm) {
		ldm_frag(cg, g, is_a, p, k0, mn0, out);
		return;
	}
	const CgMatrixArgType *ty = is_a ? &mi->a_type : &mi->b_type;
	int slots = is_a ? mi->a_per_lane : mi->b_per_lane, per_arg = slots / ty->args;
	int words = t->kvec * cg_matrix_elem_bits(mi->elem) / 32, loads = per_arg / t->kvec;
	LLVMTypeRef wt = words == 1 ? cg->t_i32 : LLVMVectorType(cg->t_i32, (unsigned)words);
	LLVMTypeRef at_type = arg_type(cg, ty);
	if (loads < 1 || loads > MMA_MAX_WORDS)
		CG_FAIL("%s: %d loads per argument", mi->name, loads);
	for (int q = 0; q < ty->args; q++) {
		LLVMValueRef parts[MMA_MAX_WORDS] = {NULL};
		for (int w = 0; w < loads; w++) {
			LLVMValueRef r, c;
			frag_at(cg, g, is_a ? mi->a_at : mi->b_at, p->lane, q * per_arg + w * t->kvec, &r, &c);
			/* A's (m, k), B's (k, n) */
			LLVMValueRef k = add(cg, k0, is_a ? c : r), mn = add(cg, mn0, is_a ? r : c);
			LLVMValueRef at = lds_elem(cg, g, t, is_a ? g->as : g->bs, k, mn);
			parts[w] = LLVMBuildLoad2(cg->b, wt, at, "");
			LLVMSetAlignment(parts[w], (unsigned)(4 * words));
		}
		LLVMValueRef v = parts[0];
		if (loads > 1) {
			/* the loads' 32-bit words, one after the other */
			v = LLVMGetUndef(LLVMVectorType(cg->t_i32, (unsigned)(loads * words)));
			for (int w = 0; w < loads; w++)
				for (int e = 0; e < words; e++) {
					LLVMValueRef x = words == 1 ? parts[w] : LLVMBuildExtractElement(cg->b, parts[w], cg_i32(cg, e), "");
					v = LLVMBuildInsertElement(cg->b, v, x, cg_i32(cg, w * words + e), "");
				}
		}
		out[q] = LLVMTypeOf(v) == at_type ? v : LLVMBuildBitCast(cg->b, v, at_type, "");
	}
}

/* acc += A B for one fragment by one instruction: C as one argument per slot (mma.sync, whose D
 * is a struct) or one vector (MFMA, WMMA), then MFMA's immediates (cbsz, abid, blgp: 0). */
static void mma_step(Cg *cg, GpuGemm *g, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *acc)
{
	const CgMatrixInstr *mi = g->mi;
	bool vector_c = mi->c_type.args == 1 && mi->c_type.vector > 1;
	LLVMValueRef args[24];
	int n = 0;
	for (int q = 0; q < mi->a_type.args; q++)
		args[n++] = a[q];
	for (int q = 0; q < mi->b_type.args; q++)
		args[n++] = b[q];
	LLVMTypeRef ct = arg_type(cg, &mi->c_type);
	if (vector_c) {
		LLVMValueRef c = LLVMGetUndef(ct);
		for (int q = 0; q < mi->c_per_lane; q++)
			c = LLVMBuildInsertElement(cg->b, c, acc[q], cg_i32(cg, q), "");
		args[n++] = c;
	} else {
		for (int q = 0; q < mi->c_per_lane; q++)
			args[n++] = acc[q];
	}
	for (int q = 0; q < mi->imm_args; q++)
		args[n++] = cg_i32(cg, 0);
	LLVMTypeRef overloads[2] = {ct, arg_type(cg, &mi->a_type)};
	LLVMValueRef d = mi->overloaded ? cg_intrinsic_call_overloaded(cg, mi->intrinsic, overloads, 2, args, n)
					: cg_intrinsic_call(cg, mi->intrinsic, args, n);
	for (int q = 0; q < mi->c_per_lane; q++)
		acc[q] = vector_c ? LLVMBuildExtractElement(cg->b, d, cg_i32(cg, q), "")
				  : LLVMBuildExtractValue(cg->b, d, (unsigned)q, "");
}

/* The warp's accumulators += its slice of the k-block, one instruction's k at a time. */
static void accumulate_mma(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	const CgMatrixInstr *mi = g->mi;
	int fm = frags_m(g), fn = frags_n(g);
	int64_t per_slice = g->t.bk / g->t.ks, count = g->acc.count;
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	LLVMValueRef acc[MMA_MAX_ACC];
	for (int64_t q = 0; q < count; q++)
		acc[q] = LLVMBuildLoad2(cg->b, g->et, cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q), "");
	LLVMValueRef m0 = mulc(cg, g, p.ty, g->t.wm), n0 = mulc(cg, g, p.tx, g->t.wn);
	/* unrolled, as the register tiles: the accumulators stay values */
	for (int64_t s = 0; s < per_slice / mi->k; s++) {
		LLVMValueRef k0 = add(cg, mulc(cg, g, p.slice, per_slice), ci(g, s * mi->k));
		LLVMValueRef a[MMA_MAX_FRAGS][MMA_MAX_ARGS], b[MMA_MAX_FRAGS][MMA_MAX_ARGS];
		for (int i = 0; i < fm; i++)
			load_frag(cg, g, true, &p, k0, add(cg, m0, ci(g, i * mi->m)), a[i]);
		for (int j = 0; j < fn; j++)
			load_frag(cg, g, false, &p, k0, add(cg, n0, ci(g, j * mi->n)), b[j]);
		for (int i = 0; i < fm; i++)
			for (int j = 0; j < fn; j++)
				mma_step(cg, g, a[i], b[j], acc + (i * fn + j) * mi->c_per_lane);
	}
	for (int64_t q = 0; q < count; q++)
		LLVMBuildStore(cg->b, acc[q], cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q));
}

/* ---- the emulated instruction ----
 *
 * The host has no matrix unit. Emulated, each k step is two phases: every work-item loads its A
 * and B fragments from LDS as on the GPU (load_frag: frag_at, the words of the LDS layout, the
 * argument types) and leaves their slots in a scratch array; then every work-item computes its C
 * slots as the instruction does by its lane model (CgMatrixModel, a test's statement of the
 * instruction's document: which lane and slot hold each element), reading its warp's fragments
 * where the model says the instruction reads them. So the staging, the LDS words, the fragment
 * loads (a_at, b_at), the wave, the warp tiles and c_at run against an independent description of
 * the instruction: a wrong lane or slot in any of them gives wrong sums. The model is three
 * constant tables: D's element per (lane, slot), and the fragment slot of each A and B element
 * per copy (RDNA 3 replicates A and B: each lane group reads its own copy). */

enum { MODEL_DIM = 64 }; /* D's table packs (m, n) as m * MODEL_DIM + n */

static const CgMatrixModel *model_of(const CgMatrixInstr *mi)
{
	for (int i = 0; i < emulated_unit.nmodels; i++)
		if (emulated_unit.models[i].caps == mi->caps)
			return &emulated_unit.models[i];
	CG_FAIL("no lane model of %s to emulate it with (cg_gpu_emulation_mma)", mi->name);
}

static bool place_in(CgMatrixPlace p, int wave, int slots)
{
	return p.lane >= 0 && p.lane < wave && p.slot >= 0 && p.slot < slots;
}

/* The lane model's tables for this kernel, and the fragment scratch (count: A's then B's slots of
 * each fragment per work-item). */
static void model_tables(Cg *cg, GpuGemm *g)
{
	const CgMatrixInstr *mi = g->mi;
	const CgMatrixModel *lm = model_of(mi);
	int64_t count = (int64_t)frags_m(g) * mi->a_per_lane + (int64_t)frags_n(g) * mi->b_per_lane;
	int copies = mi->ab_copies, nd = mi->wave * mi->c_per_lane, na = copies * mi->m * mi->k, nb = copies * mi->k * mi->n;
	int64_t *d = calloc((size_t)nd, sizeof *d), *a = calloc((size_t)na, sizeof *a), *b = calloc((size_t)nb, sizeof *b);
	if (!d || !a || !b)
		CG_FAIL("out of memory for the lane model of %s", mi->name);
	for (int i = 0; i < nd; i++)
		d[i] = -1;
	for (int m = 0; m < mi->m; m++)
		for (int n = 0; n < mi->n; n++) {
			CgMatrixPlace pd = lm->d(mi, m, n);
			if (!place_in(pd, mi->wave, mi->c_per_lane) || d[pd.lane * mi->c_per_lane + pd.slot] >= 0)
				CG_FAIL("the lane model of %s puts D[%d][%d] on no slot or a taken one", mi->name, m, n);
			d[pd.lane * mi->c_per_lane + pd.slot] = m * MODEL_DIM + n;
		}
	for (int c = 0; c < copies; c++)
		for (int k = 0; k < mi->k; k++) {
			for (int m = 0; m < mi->m; m++) {
				CgMatrixPlace pa = lm->a(mi, m, k, c);
				if (!place_in(pa, mi->wave, mi->a_per_lane))
					CG_FAIL("the lane model of %s puts A[%d][%d] outside the registers", mi->name, m, k);
				a[(c * mi->m + m) * mi->k + k] = pa.lane * count + pa.slot;
			}
			for (int n = 0; n < mi->n; n++) {
				CgMatrixPlace pb = lm->b(mi, k, n, c);
				if (!place_in(pb, mi->wave, mi->b_per_lane))
					CG_FAIL("the lane model of %s puts B[%d][%d] outside the registers", mi->name, k, n);
				b[(c * mi->k + k) * mi->n + n] = pb.lane * count + pb.slot;
			}
		}
	g->model_d = cg_const_table(cg, "model_d", d, nd);
	g->model_a = cg_const_table(cg, "model_a", a, na);
	g->model_b = cg_const_table(cg, "model_b", b, nb);
	free(d), free(a), free(b);
	g->frags = cg_gpu_private(cg, &g->grp, g->et, count, "frags");
}

static LLVMValueRef frag_slot(Cg *cg, GpuGemm *g, LLVMValueRef idx)
{
	return LLVMBuildGEP2(cg->b, g->frags.elem, g->frags.base, &idx, 1, "");
}

/* Phase 1: the work-item's fragments at k0, slot by slot (as the compute type) into the scratch. */
static void frags_to_scratch(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef k0)
{
	const CgMatrixInstr *mi = g->mi;
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	int64_t at = 0;
	for (int f = 0; f < frags_m(g) + frags_n(g); f++) {
		bool is_a = f < frags_m(g);
		int i = is_a ? f : f - frags_m(g);
		const CgMatrixArgType *ty = is_a ? &mi->a_type : &mi->b_type;
		int per_arg = (is_a ? mi->a_per_lane : mi->b_per_lane) / ty->args;
		LLVMValueRef origin = mulc(cg, g, is_a ? p.ty : p.tx, is_a ? g->t.wm : g->t.wn);
		LLVMValueRef args[MMA_MAX_ARGS];
		load_frag(cg, g, is_a, &p, k0, add(cg, origin, ci(g, i * (is_a ? mi->m : mi->n))), args);
		for (int q = 0; q < ty->args; q++) {
			LLVMValueRef v = LLVMBuildBitCast(cg->b, args[q], per_arg == 1 ? g->lt : LLVMVectorType(g->lt, (unsigned)per_arg), "");
			for (int e = 0; e < per_arg; e++, at++) {
				LLVMValueRef x = per_arg == 1 ? v : LLVMBuildExtractElement(cg->b, v, cg_i32(cg, e), "");
				if (g->lt != g->et)
					x = LLVMBuildFPExt(cg->b, x, g->et, "");
				LLVMBuildStore(cg->b, x, cg_gpu_private_at(cg, &g->grp, &g->frags, tid64, at));
			}
		}
	}
}

/* Phase 2: the work-item's C slots += A B of each fragment by the lane model, from its warp's
 * fragments in the scratch; k in a loop (the emulation's code stays small), the sums in k order. */
static void model_step(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	const CgMatrixInstr *mi = g->mi;
	int64_t count = g->frags.count, wave = mi->wave, b0 = (int64_t)frags_m(g) * mi->a_per_lane;
	LLVMValueRef lane = LLVMBuildURem(cg->b, tid64, cg_i64(cg, wave), "");
	LLVMValueRef warp0 = LLVMBuildMul(cg->b, LLVMBuildSub(cg->b, tid64, lane, ""), cg_i64(cg, count), "");
	LLVMValueRef copy = LLVMBuildUDiv(cg->b, lane, cg_i64(cg, wave / mi->ab_copies), "");
	CgLoop kk = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, mi->k), "kk");
	for (int q = 0; q < mi->c_per_lane; q++) {
		LLVMValueRef e = cg_table_load(cg, g->model_d, LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lane, cg_i64(cg, mi->c_per_lane), ""), cg_i64(cg, q), ""));
		LLVMValueRef m = LLVMBuildUDiv(cg->b, e, cg_i64(cg, MODEL_DIM), ""), n = LLVMBuildURem(cg->b, e, cg_i64(cg, MODEL_DIM), "");
		/* model_a[copy][m][kk], model_b[copy][kk][n]: lane * count + slot in the scratch */
		LLVMValueRef ai = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, copy, cg_i64(cg, mi->m), ""), m, ""), cg_i64(cg, mi->k), ""), kk.i, "");
		LLVMValueRef bi = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, copy, cg_i64(cg, mi->k), ""), kk.i, ""), cg_i64(cg, mi->n), ""), n, "");
		LLVMValueRef ia = LLVMBuildAdd(cg->b, warp0, cg_table_load(cg, g->model_a, ai), "");
		LLVMValueRef ib = LLVMBuildAdd(cg->b, warp0, cg_table_load(cg, g->model_b, bi), "");
		for (int i = 0; i < frags_m(g); i++)
			for (int j = 0; j < frags_n(g); j++) {
				LLVMValueRef at = cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, (int64_t)(i * frags_n(g) + j) * mi->c_per_lane + q);
				LLVMValueRef x = frag_slot(cg, g, LLVMBuildAdd(cg->b, ia, cg_i64(cg, (int64_t)i * mi->a_per_lane), ""));
				LLVMValueRef y = frag_slot(cg, g, LLVMBuildAdd(cg->b, ib, cg_i64(cg, b0 + (int64_t)j * mi->b_per_lane), ""));
				LLVMValueRef args[3] = {LLVMBuildLoad2(cg->b, g->et, x, ""), LLVMBuildLoad2(cg->b, g->et, y, ""),
							LLVMBuildLoad2(cg->b, g->et, at, "")};
				LLVMBuildStore(cg->b, cg_intrinsic(cg, "fmuladd", g->et, args, 3), at);
			}
	}
	cg_for_end(cg, &kk);
}

/* The emulated accumulate step: per k step, the fragments of every work-item, then (a phase
 * later) the model's sums. Leaves the last phase open, as the GPU's accumulate leaves its own. */
static void accumulate_emulated(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	int64_t per_slice = g->t.bk / g->t.ks;
	for (int64_t s = 0; s < per_slice / g->mi->k; s++) {
		Place p = place_of(cg, g, to_it(cg, g, tid64));
		LLVMValueRef k0 = add(cg, mulc(cg, g, p.slice, per_slice), ci(g, s * g->mi->k));
		frags_to_scratch(cg, g, tid64, k0);
		cg_gpu_phase_end(cg, &g->grp, false);
		tid64 = cg_gpu_phase_begin(cg, &g->grp);
		model_step(cg, g, tid64);
		if (s + 1 < per_slice / g->mi->k) {
			cg_gpu_phase_end(cg, &g->grp, false);
			tid64 = cg_gpu_phase_begin(cg, &g->grp);
		}
	}
}


/* ---- warpgroup tiles: sm_90's wgmma ----
 *
 * Where the target has wgmma (CG_MATRIX_WGMMA) and both half operands are copied into LDS rows
 * along k (the forward GEMMs: convolutions' NHWC windows and OHWI weights, dense layers), the
 * work-group's 256 work-items are two warpgroups of 128, each owning a 64 x WGN part of the tile
 * (the upper and lower halves of a 128-row tile, or the left and right halves of a 64-row one),
 * and each k16 of the k-block is one wgmma.mma_async m64nWGNk16 per warpgroup that reads A and B
 * straight from LDS through a 64-bit descriptor: the operands take no registers and no ldmatrix.
 *
 * The descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 the start address / 16, 16-29
 * the leading byte offset / 16 (unused by K-major swizzled tiles: 1), 32-45 the stride byte offset
 * / 16 (from one 8-row group to the next), 62-63 the swizzle (1: 128-byte, 2: 64-byte, 3: 32-byte).
 * The copied rows are unpadded and their 16-byte units swizzled (lds_elem: unit u of row r at u ^
 * ((r >> shift) & mask)); for rows of 32, 64 or 128 bytes that is exactly the hardware's swizzle
 * of that width, which XORs address bits 4.. with bits 7.. (so the LDS is aligned to 1024 bytes),
 * the 8-row groups 8 rows apart. The k16 steps of a k-block advance the start address by 32 bytes.
 *
 * The accumulators are f32 in the per-warp layout of mma.sync m16n8 repeated along n: warp w of a
 * warpgroup holds rows 16 w.., slot 4 j + e the element c_at(lane, e) of the j-th 8 columns.
 *
 * Emulated, the instruction runs by its document: each work-item computes its slots where the
 * m16n8k16 lane model (the test's) puts them, reading A and B through the descriptors decoded as
 * the hardware decodes them (wg_model_elem), so the descriptors, the swizzle of the copies and the
 * accumulators' c_at run against a statement of the instruction independent of the writers. */

enum { WG_ITEMS = 128, WG_M = 64, WG_K_BYTES = 32, WG_ALIGN = 1024, WG_MAX_ACC = 128 };

/* The k of one wgmma: 32 bytes of each operand's rows (k16 of halves, k8 of tf32). */
static int64_t wg_k(const GpuGemm *g) { return WG_K_BYTES / lds_esize(g->s, &g->t); }

/* The elements of one swizzle atom's row: a K-major row of the k-block, an MN-major atom. */
static int64_t wg_atom(const LdsTile *t) { return t->atom ? t->atom : t->ld; }

/* The descriptor's swizzle mode of an LDS tile (0: none that wgmma reads). */
static int wg_swizzle(const GpuGemm *g, const LdsTile *t)
{
	int64_t row_bytes = wg_atom(t) * lds_esize(g->s, &g->t);
	if (!t->ldm || !t->swz_mask || t->kvec != 1 || (t->kmajor && t->ld != g->t.bk))
		return 0;
	return row_bytes == 128 ? 1 : row_bytes == 64 ? 2 : row_bytes == 32 ? 3 : 0;
}

/* Whether the warpgroups split the tile's rows (128 rows: upper and lower halves; padded rows'
 * tiles: halves of 1, 2 or 4 m64 blocks each) rather than its columns (64 rows: left and right
 * halves). */
static bool wg_tall(const GpuGemm *g) { return g->t.bm == 2 * WG_M || g->t.rows; }

/* The m64 blocks of each warpgroup's rows: one wgmma per block and k16. */
static int wg_blocks(const GpuGemm *g) { return wg_tall(g) ? g->t.bm / (2 * WG_M) : 1; }

/* The n extent of one warpgroup's part of the tile. */
static int wg_n(const GpuGemm *g) { return wg_tall(g) ? g->t.bn : g->t.bn / 2; }

/* Whether the tiles run on wgmma: the unit has it, both operands copied into swizzled rows, two
 * warpgroups over a 128- or 64-row tile whose parts start on whole MN-major atoms, one k-slice. */
static bool wgmma_fits(const Cg *cg, const GpuGemm *g)
{
	const CgTarget *t = unit_target(cg);
	int n = wg_n(g);
	bool tall = wg_tall(g);
	bool tf32 = g->mi && g->mi->elem == CG_MELEM_TF32;
	return t && (t->matrix & CG_MATRIX_WGMMA) && g->mi && wgmma_elem(g->mi) &&
	       (!tf32 || (g->la.kmajor && g->lb.kmajor)) && g->mi->c_per_lane == 4 && g->t.copied[0] && g->t.copied[1] &&
	       g->t.ks == 1 && g->t.block == 2 * WG_ITEMS && (tall || g->t.bm == WG_M) && n % 8 == 0 && n >= 8 &&
	       n / 2 <= WG_MAX_ACC && wg_swizzle(g, &g->la) && wg_swizzle(g, &g->lb) && g->t.bk % wg_k(g) == 0 &&
	       (g->la.kmajor || WG_M % wg_atom(&g->la) == 0) && (g->lb.kmajor || tall || n % wg_atom(&g->lb) == 0);
}

/* The accumulators of a work-item: n / 2 per block. */
static int wg_accs(const GpuGemm *g) { return wg_blocks(g) * wg_n(g) / 2; }

/* The warpgroup's origin in the tile: its first row (A) and column (B). */
static void wg_origin(Cg *cg, GpuGemm *g, LLVMValueRef group, LLVMValueRef *row0, LLVMValueRef *col0)
{
	*row0 = wg_tall(g) ? mulc(cg, g, group, g->t.bm / 2) : ci(g, 0);
	*col0 = wg_tall(g) ? ci(g, 0) : mulc(cg, g, group, wg_n(g));
}

/* The descriptor of LDS element idx (of the LDS type) from `tile`: byte offsets lbo and sbo,
 * swizzle mode `swizzle`. The address is shared memory's; emulated, the offset from the LDS's
 * start (both aligned to WG_ALIGN). */
static LLVMValueRef wg_desc_at(Cg *cg, GpuGemm *g, LLVMValueRef tile, LLVMValueRef idx, int64_t lbo, int64_t sbo, int swizzle)
{
	LLVMValueRef at = LLVMBuildPtrToInt(cg->b, LLVMBuildGEP2(cg->b, g->lt, tile, &idx, 1, ""), cg->t_i64, "");
	if (g->grp.emulated)
		at = LLVMBuildSub(cg->b, at, LLVMBuildPtrToInt(cg->b, g->lds, cg->t_i64, ""), "");
	uint64_t fixed = (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 | (uint64_t)swizzle << 62;
	LLVMValueRef start = LLVMBuildLShr(cg->b, LLVMBuildAnd(cg->b, at, cg_i64(cg, 0x3ffff), ""), cg_i64(cg, 4), "");
	return LLVMBuildOr(cg->b, start, LLVMConstInt(cg->t_i64, fixed, 0), "");
}

/* The descriptor of the tile at `tile` from its m or n `mn` and k `k0` on (k0 a multiple of wg_k).
 * K-major: rows of m or n, 8-row groups SBO apart, k0 bytes into the rows (LBO unused: 1).
 * MN-major: rows of k in groups of 8, SBO apart, each row's atoms LBO apart (lds_elem's atoms). */
static LLVMValueRef wg_desc(Cg *cg, GpuGemm *g, const LdsTile *t, LLVMValueRef tile, LLVMValueRef mn, int64_t k0)
{
	int64_t esize = lds_esize(g->s, &g->t), atom = wg_atom(t);
	LLVMValueRef idx = t->kmajor ? add(cg, mulc(cg, g, mn, t->ld), ci(g, k0))
				     : add(cg, mulc(cg, g, divc(cg, g, mn, atom), 8 * atom), ci(g, k0 / 8 * 8 * t->ld));
	return wg_desc_at(cg, g, tile, idx, t->kmajor ? 16 : 8 * atom * esize, 8 * t->ld * esize, wg_swizzle(g, t));
}

/* Inline PTX with side effects: text, its constraints, the operands; returns its result. */
static LLVMValueRef ptx_asm(Cg *cg, LLVMTypeRef ret, const char *text, const char *constraints, LLVMValueRef *args, int n)
{
	LLVMTypeRef types[2 * WG_MAX_ACC + 3];
	for (int i = 0; i < n; i++)
		types[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(ret ? ret : LLVMVoidTypeInContext(cg->ctx), types, (unsigned)n, 0);
	LLVMValueRef f = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints), 1, 0,
					  LLVMInlineAsmDialectATT, 0);
	return LLVMBuildCall2(cg->b, fty, f, args, (unsigned)n, "");
}

/* The accumulators through an asm statement that names them as operands read and written, so
 * that their uses stay on its side: `text` then accs[0..n) -> accs, extra operands after them. */
static void asm_on_accs(Cg *cg, const char *text, const char *extra, LLVMValueRef *accs, int n, LLVMValueRef *more,
			int nmore)
{
	char cons[16 * (2 * WG_MAX_ACC + 3)];
	size_t len = 0;
	LLVMValueRef args[2 * WG_MAX_ACC + 3];
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(cons + len, sizeof cons - len, "%s=f", i ? "," : "");
	for (int i = 0; i < n; i++) {
		len += (size_t)snprintf(cons + len, sizeof cons - len, ",%d", i);
		args[i] = accs[i];
	}
	snprintf(cons + len, sizeof cons - len, "%s", extra);
	for (int i = 0; i < nmore; i++)
		args[n + i] = more[i];
	LLVMTypeRef fields[WG_MAX_ACC];
	for (int i = 0; i < n; i++)
		fields[i] = cg->t_f32;
	LLVMValueRef d = ptx_asm(cg, LLVMStructTypeInContext(cg->ctx, fields, (unsigned)n, 0), text, cons, args, n + nmore);
	for (int i = 0; i < n; i++)
		accs[i] = LLVMBuildExtractValue(cg->b, d, (unsigned)i, "");
}

/* The accumulators (loaded) after the warpgroup's wgmma groups but `pending` are done, stored
 * back. The last wait adds -0 to each (exact: x + -0 is x, NaNs and zeros included) inside the
 * asm, where LLVM cannot fold it: with groups left in flight across the k loop, ptxas (CUDA 13)
 * serialized every wgmma of a kernel whose epilogue rounds accumulators to bf16 or f16 one by one
 * ("C7514: non wgmma instructions reading accumulator registers"), and epilogues reading copies
 * made by an arithmetic instruction keep the pipeline. */
static void wgmma_wait(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef *acc, int pending)
{
	int count = wg_accs(g);
	char text[48 + 40 * WG_MAX_ACC];
	size_t len = (size_t)snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", pending);
	for (int q = 0; q < count && g->t.lag && !pending; q++)
		len += (size_t)snprintf(text + len, sizeof text - len, "\nadd.f32 $%d, $%d, 0f80000000;", q, q);
	asm_on_accs(cg, text, "", acc, count, NULL, 0);
	for (int q = 0; q < count; q++)
		LLVMBuildStore(cg->b, acc[q], cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q));
}

/* After the k loop: the last k-blocks' products in flight (t.lag) land in the accumulators. */
static void wgmma_drain(Cg *cg, GpuGemm *g)
{
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp), acc[WG_MAX_ACC];
	for (int q = 0; q < wg_accs(g); q++)
		acc[q] = LLVMBuildLoad2(cg->b, g->et, cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q), "");
	wgmma_wait(cg, g, tid64, acc, 0);
	cg_gpu_phase_end(cg, &g->grp, false);
}

/* The operands' type as wgmma names it. */
static const char *wg_type(const GpuGemm *g)
{
	return g->mi->elem == CG_MELEM_BF16 ? "bf16" : g->mi->elem == CG_MELEM_TF32 ? "tf32" : "f16";
}

/* One wgmma of the warpgroup's n on `count` accumulators $0.., descriptors after them and the
 * scale-d flag: its text (asm_on_accs with ",l,l,r"). The transpose flags (halves only: tf32's
 * operands are K-major): 1 where the operand's rows run along m or n (MN-major). */
static void wg_text(const GpuGemm *g, bool a_kmajor, bool b_kmajor, char *text, size_t size)
{
	int n = wg_n(g), count = n / 2;
	const char *type = wg_type(g);
	size_t len = (size_t)snprintf(text, size, "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\n"
					   "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {", 2 * count + 2, n, (int)wg_k(g), type, type);
	for (int q = 0; q < count; q++)
		len += (size_t)snprintf(text + len, size - len, "%s$%d", q ? ", " : "", q);
	if (g->mi->elem == CG_MELEM_TF32)
		snprintf(text + len, size - len, "}, $%d, $%d, p, 1, 1;\n}", 2 * count, 2 * count + 1);
	else
		snprintf(text + len, size - len, "}, $%d, $%d, p, 1, 1, %d, %d;\n}", 2 * count, 2 * count + 1, !a_kmajor,
			 !b_kmajor);
}

/* The work-item's accumulators, loaded. */
static void wg_load_accs(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef *acc)
{
	for (int q = 0; q < wg_accs(g); q++)
		acc[q] = LLVMBuildLoad2(cg->b, g->et, cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q), "");
}

/* acc += A B over the k-block, wg_k by wg_k, then waits for the warpgroup's products. */
static void accumulate_wgmma(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	int count = wg_n(g) / 2;
	LLVMValueRef tid = to_it(cg, g, tid64), row0, col0, acc[WG_MAX_ACC];
	wg_origin(cg, g, divc(cg, g, tid, WG_ITEMS), &row0, &col0);
	wg_load_accs(cg, g, tid64, acc);
	int64_t k = wg_k(g);
	char text[2048];
	wg_text(g, g->la.kmajor, g->lb.kmajor, text, sizeof text);
	ptx_asm(cg, NULL, "wgmma.fence.sync.aligned;", "", NULL, 0);
	for (int64_t s = 0; s < g->t.bk / k; s++) {
		LLVMValueRef d[3] = {wg_desc(cg, g, &g->la, g->as, row0, s * k), wg_desc(cg, g, &g->lb, g->bs, col0, s * k),
				     cg_i32(cg, 1)};
		asm_on_accs(cg, text, ",l,l,r", acc, count, d, 3);
	}
	ptx_asm(cg, NULL, "wgmma.commit_group.sync.aligned;", "", NULL, 0);
	wgmma_wait(cg, g, tid64, acc, g->t.lag);
}

/* Row and column in the tile of accumulator idx of the work-item tid. */
static void wg_acc_at(Cg *cg, GpuGemm *g, LLVMValueRef tid, int64_t idx, LLVMValueRef *row, LLVMValueRef *col)
{
	LLVMValueRef row0, col0, in_group = remc(cg, g, tid, WG_ITEMS);
	wg_origin(cg, g, divc(cg, g, tid, WG_ITEMS), &row0, &col0);
	int64_t per_block = wg_n(g) / 2, block = idx / per_block, q = idx % per_block;
	frag_at(cg, g, g->mi->c_at, remc(cg, g, tid, GPU_WARP), (int)(q % 4), row, col);
	if (block)
		row0 = add(cg, row0, ci(g, block * WG_M));
	*row = add(cg, *row, add(cg, row0, mulc(cg, g, divc(cg, g, in_group, GPU_WARP), 16)));
	*col = add(cg, *col, add(cg, col0, ci(g, q / 4 * 8)));
}

/* A 14-bit field of a descriptor, times 16 (bytes). */
static LLVMValueRef desc_field(Cg *cg, LLVMValueRef desc, int shift)
{
	LLVMValueRef f = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, desc, cg_i64(cg, shift), ""), cg_i64(cg, 0x3fff), "");
	return LLVMBuildShl(cg->b, f, cg_i64(cg, 4), "");
}

/* Element (mn, k) of the operand a descriptor names, as the hardware finds it (PTX ISA, "Shared
 * Memory Matrix Layout"): swizzle rows of 128, 64 or 32 bytes (mode 1, 2, 3) in atoms of 8 rows,
 * or without swizzle (mode 0) core matrices of 8 rows of 16 bytes, each 128 bytes in one piece.
 * K-major: row mn % 8 of 8-row group mn / 8 (SBO apart), k along the row (without swizzle: k in
 * 16-byte pieces, the core matrices along k LBO apart). MN-major (trans): row k % 8 of k-group
 * k / 8 (SBO apart), mn along the rows of atom mn / row (LBO apart). Then bits 4.. of the address
 * XOR bits 7.. (the swizzle). */
static LLVMValueRef wg_model_elem(Cg *cg, GpuGemm *g, LLVMValueRef desc, bool trans, LLVMValueRef mn, LLVMValueRef k)
{
	LLVMValueRef start = desc_field(cg, desc, 0), lbo = desc_field(cg, desc, 16), sbo = desc_field(cg, desc, 32);
	LLVMValueRef mode = LLVMBuildLShr(cg->b, desc, cg_i64(cg, 62), "");
	LLVMValueRef plain = LLVMBuildICmp(cg->b, LLVMIntEQ, mode, cg_i64(cg, 0), "");
	LLVMValueRef width = LLVMBuildSelect(cg->b, plain, cg_i64(cg, 16), LLVMBuildLShr(cg->b, cg_i64(cg, 256), mode, ""), "");
	LLVMValueRef mask = LLVMBuildSelect(cg->b, plain, cg_i64(cg, 0),
					    LLVMBuildSub(cg->b, LLVMBuildLShr(cg->b, cg_i64(cg, 16), mode, ""), cg_i64(cg, 1), ""), "");
	LLVMValueRef esize = cg_i64(cg, lds_esize(g->s, &g->t)), eight = cg_i64(cg, 8);
	LLVMValueRef row = trans ? k : mn, along = trans ? mn : k;
	LLVMValueRef addr = LLVMBuildAdd(cg->b, start, LLVMBuildMul(cg->b, LLVMBuildUDiv(cg->b, row, eight, ""), sbo, ""), "");
	addr = LLVMBuildAdd(cg->b, addr, LLVMBuildMul(cg->b, LLVMBuildURem(cg->b, row, eight, ""), width, ""), "");
	LLVMValueRef per_row = LLVMBuildUDiv(cg->b, width, esize, "");
	LLVMValueRef pieces = LLVMBuildAdd(cg->b, addr, LLVMBuildMul(cg->b, LLVMBuildUDiv(cg->b, along, per_row, ""), lbo, ""), "");
	LLVMValueRef within = LLVMBuildURem(cg->b, along, per_row, "");
	if (trans) {
		addr = pieces;
		along = within;
	} else {
		addr = LLVMBuildSelect(cg->b, plain, pieces, addr, "");
		along = LLVMBuildSelect(cg->b, plain, within, along, "");
	}
	addr = LLVMBuildAdd(cg->b, addr, LLVMBuildMul(cg->b, along, esize, ""), "");
	LLVMValueRef swz = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, addr, cg_i64(cg, 7), ""), mask, "");
	addr = LLVMBuildXor(cg->b, addr, LLVMBuildShl(cg->b, swz, cg_i64(cg, 4), ""), "");
	LLVMValueRef p = LLVMBuildGEP2(cg->b, LLVMInt8TypeInContext(cg->ctx), g->lds, &addr, 1, "");
	LLVMValueRef v = LLVMBuildLoad2(cg->b, g->lt, p, "");
	if (g->lt != g->et)
		return LLVMBuildFPExt(cg->b, v, g->et, "");
	/* tf32 from float32 in LDS: the unit multiplies the top 19 bits (sign, exponent, 10 of the
	 * mantissa's bits), the others dropped */
	LLVMValueRef bits = LLVMBuildAnd(cg->b, LLVMBuildBitCast(cg->b, v, cg->t_i32, ""), cg_i32(cg, (int32_t)0xffffe000u), "");
	return LLVMBuildBitCast(cg->b, bits, g->et, "");
}

/* Emulated: one wgmma of the work-item's warpgroup from descriptors da and db (trans: MN-major)
 * into its slots slot0..: each slot += A B over one wg_k at the D element the lane model puts it. */
static void wgmma_emulated(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef da, bool a_trans, LLVMValueRef db,
			   bool b_trans, int64_t slot0)
{
	LLVMValueRef in_group = LLVMBuildURem(cg->b, tid64, cg_i64(cg, WG_ITEMS), "");
	LLVMValueRef lane = LLVMBuildURem(cg->b, tid64, cg_i64(cg, GPU_WARP), "");
	LLVMValueRef warp_row = LLVMBuildMul(cg->b, LLVMBuildUDiv(cg->b, in_group, cg_i64(cg, GPU_WARP), ""), cg_i64(cg, 16), "");
	/* the slots in a loop too: unrolled, 128 of them (n = 256) took LLVM half a minute */
	CgLoop q = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, wg_n(g) / 2), "q");
	LLVMValueRef q4 = LLVMBuildURem(cg->b, q.i, cg_i64(cg, 4), "");
	LLVMValueRef e = cg_table_load(cg, g->model_d, LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lane, cg_i64(cg, 4), ""), q4, ""));
	LLVMValueRef m = LLVMBuildAdd(cg->b, warp_row, LLVMBuildUDiv(cg->b, e, cg_i64(cg, MODEL_DIM), ""), "");
	LLVMValueRef n = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, LLVMBuildUDiv(cg->b, q.i, cg_i64(cg, 4), ""), cg_i64(cg, 8), ""),
				      LLVMBuildURem(cg->b, e, cg_i64(cg, MODEL_DIM), ""), "");
	LLVMValueRef slot = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, tid64, cg_i64(cg, g->acc.count), ""),
					 LLVMBuildAdd(cg->b, q.i, cg_i64(cg, slot0), ""), "");
	LLVMValueRef at = LLVMBuildGEP2(cg->b, g->acc.elem, g->acc.base, &slot, 1, "");
	CgLoop kk = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, wg_k(g)), "kk");
	LLVMValueRef args[3] = {wg_model_elem(cg, g, da, a_trans, m, kk.i), wg_model_elem(cg, g, db, b_trans, n, kk.i),
				LLVMBuildLoad2(cg->b, g->et, at, "")};
	LLVMBuildStore(cg->b, cg_intrinsic(cg, "fmuladd", g->et, args, 3), at);
	cg_for_end(cg, &kk);
	cg_for_end(cg, &q);
}

/* Emulated: the work-item's slots += A B over the k-block, A and B through the descriptors. */
static void accumulate_wgmma_emulated(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	LLVMValueRef tid = to_it(cg, g, tid64), row0, col0;
	wg_origin(cg, g, divc(cg, g, tid, WG_ITEMS), &row0, &col0);
	int64_t k = wg_k(g);
	for (int64_t s = 0; s < g->t.bk / k; s++)
		wgmma_emulated(cg, g, tid64, wg_desc(cg, g, &g->la, g->as, row0, s * k), !g->la.kmajor,
			       wg_desc(cg, g, &g->lb, g->bs, col0, s * k), !g->lb.kmajor, 0);
}

/* ---- padded rows: a stride-1 window staged once for all its taps (sm_90's wgmma) ----
 *
 * An implicit GEMM gathers a convolution's window once per tap: with 3 x 3 taps each source
 * element is staged 9 times per tile, through L2, which bounds vgg16's 224 x 224 x 64 layers to
 * 20-28% of an H100's bf16 peak (docs/performance.md). Where A is a stride-1 window over an NHWC
 * source (GemmRows: forward convolutions and their input gradients), its positions may run over
 * the padded grid instead (ph x pw per image: the output grid grown by the taps' spans), on which
 * tap t is the constant shift rows_shift(t) of the position. A tile of bm padded positions then
 * stages, per k-block of bk channels, the bm + largest shift padded positions of the source once
 * (the halo; zeros where a padded position lies outside the source) and one B tile per tap
 * (k = tap * C + c0..), and tap t's wgmmas read A from the halo at t's shift. The halo takes no
 * swizzle (mode 0): K-major core matrices of 8 positions x 16 bytes, each one piece, so that any
 * position can start one; the planes of 8 channels lie LBO = halo_positions x 16 bytes apart.
 * Padded positions outside the output grid are computed and not stored (store_c): ph pw / gh gw
 * times the products (1.02 at 224 x 224, 1.31 at 14 x 14).
 *
 * The warpgroups take the upper and lower halves of the tile's rows, 1, 2 or 4 m64 blocks each.
 * The halo and the B tiles go by cp.async into copy_stages' deep pipeline (4 buffers where they
 * fit, a k-block's products in flight). Tuning chooses these tiles (`rows` in a configuration:
 * netc tune offers them first after the heuristic's, which never takes them). */

static LdsTile lds_layout(const GemmSpec *s, const GpuTiles *gt, bool is_a);
static bool copyable(const GemmSpec *s, const GpuTiles *t, bool is_a);

/* The shift of tap t on the padded grid. */
static int64_t rows_shift(const GemmRows *r, int t) { return (r->dy[t] - r->dy0) * r->pw + r->dx[t] - r->dx0; }

/* The padded positions a tile of bm stages: bm and the largest shift, in whole core matrices. */
static int64_t halo_positions(const GemmRows *r, int64_t bm)
{
	int64_t most = 0;
	for (int t = 0; t < r->taps; t++)
		most = rows_shift(r, t) > most ? rows_shift(r, t) : most;
	return padded(bm + most, 8);
}

/* The LDS bytes of the halo, and of one tap's B tile: each a whole number of WG_ALIGN (the B
 * tiles' swizzle repeats on the address bits). */
static int64_t halo_bytes(const GemmSpec *s, const GpuTiles *t)
{
	return padded(halo_positions(s->a.rows, t->bm) * t->bk * lds_esize(s, t), WG_ALIGN);
}
static int64_t tap_bytes(const GemmSpec *s, const GpuTiles *t)
{
	return padded(lds_layout(s, t, false).elems * lds_esize(s, t), WG_ALIGN);
}

/* The LDS bytes of one buffer of padded rows' tiles t: the halo and one B tile per tap. */
static int64_t rows_stage_bytes(const GemmSpec *s, const GpuTiles *t)
{
	return halo_bytes(s, t) + s->a.rows->taps * tap_bytes(s, t);
}

/* Padded rows' tiles of bm x bn and k-blocks of bk, or bm 0 where they cannot be: A no window as
 * rows, no wgmma of halves, channels not in whole k-blocks, B not copied into wgmma's rows, too
 * little LDS for the buffers. `stages` buffers, or (0) as many as fit up to GPU_DEEP_STAGES. */
static GpuTiles rows_tiles(const GemmSpec *s, const CgMatrixInstr *mi, int64_t lds, int bm, int bn, int64_t bk,
			   int stages, int tiles)
{
	const GemmRows *r = s->a.rows;
	GpuTiles t = {.block = 2 * WG_ITEMS, .wide = true, .bm = bm, .bn = bn, .bk = (int)bk, .rows = true,
		      .slices = 1, .kslice = s->k, .copied = {false, true}};
	bool fits = r && mi && (mi->elem == CG_MELEM_F16 || mi->elem == CG_MELEM_BF16) && mi->c_per_lane == 4 &&
		    lds > GPU_COPY_LDS && s->batch == 1 && s->k == r->taps * r->chans && s->a.at &&
		    s->a.stored == s->half && s->a.runs * 2 == 16 && r->chans % bk == 0 && bk % (WG_K_BYTES / 2) == 0 &&
		    bm % (2 * WG_M) == 0 && bm / (2 * WG_M) * bn / 2 <= WG_MAX_ACC && bn % 16 == 0;
	if (!fits)
		return (GpuTiles){0};
	warp_tiles(&t, mi);
	t.copied[0] = copyable(s, &t, false);
	GpuGemm probe = {.s = s, .t = t};
	LdsTile lb = lds_layout(s, &t, false);
	if (!t.copied[0] || !wg_swizzle(&probe, &lb))
		return (GpuTiles){0};
	int64_t per_stage = rows_stage_bytes(s, &t);
	t.stages = stages ? stages : GPU_DEEP_STAGES;
	while (!stages && t.stages > 2 && t.stages * per_stage > lds)
		t.stages--;
	if (t.stages * per_stage > lds)
		return (GpuTiles){0};
	t.rows_stages = stages;
	t.nmb = cdiv(r->images * r->ph * r->pw, bm);
	t.nnb = cdiv(s->n, bn);
	t.tiles = tiles > 1 && tiles < t.nmb * t.nnb ? tiles : 0;
	return t;
}

/* The work-groups of padded rows' tiles t that one SM holds by their LDS (at most 2: the
 * registers of two warpgroups' accumulators allow no more). */
static int rows_resident(const GemmSpec *s, const GpuTiles *t, int64_t lds)
{
	return t->stages * rows_stage_bytes(s, t) * 2 <= lds ? 2 : 1;
}

/* Tiles t again with several tiles per work-group, as many as make one work-group per place the
 * GPU's sms hold (rows_resident): t with tiles 0 where that is one tile or the SMs are unknown. */
static GpuTiles rows_streamed(const GemmSpec *s, const CgMatrixInstr *mi, int64_t lds, int sms, GpuTiles t)
{
	int64_t places = (int64_t)sms * rows_resident(s, &t, lds), per = places ? cdiv(t.nmb * t.nnb, places) : 0;
	return rows_tiles(s, mi, lds, t.bm, t.bn, t.bk, t.rows_stages, per > 4096 ? 4096 : (int)per);
}

/* The padded rows' tilings of s, at most max of them into out, the longest tiles and k-blocks
 * of 16 first; none where A is no window as rows. Tiles of at most ROWS_SHARED_ACCS accumulators
 * per work-item come also with two buffers (`stages=2`), whose LDS lets a second work-group share
 * the SM: on an H100 the 256 x 64 tiles of vgg16 bf16's input gradients took 4-22% less time
 * with two buffers than with three or four, most of its forward convolutions 10-26% less
 * (docs/performance.md, 2026-12-07). After them, those that make more tiles than the SMs hold
 * places again with several tiles per work-group (rows_streamed): out holds up to 2 max. */
enum { ROWS_SHARED_ACCS = 64 };
static int rows_candidates(const GemmSpec *s, const CgMatrixInstr *mi, int64_t lds, int sms, GpuTiles *out, int max)
{
	int n = 0;
	for (int bm = 8 * WG_M; bm >= 2 * WG_M; bm /= 2)
		for (int bn = 64; bn <= GPU_LONG_TILE && side_fits(bn, s->n); bn *= 2)
			for (int64_t bk = WG_K_BYTES / 2; bk <= WG_K_BYTES; bk *= 2) {
				GpuTiles t = rows_tiles(s, mi, lds, bm, bn, bk, 0, 0);
				if (t.bm && n < max)
					out[n++] = t;
				bool shared = t.bm && t.stages > 2 && bm / (2 * WG_M) * bn / 2 <= ROWS_SHARED_ACCS;
				if (shared && n < max)
					out[n++] = rows_tiles(s, mi, lds, bm, bn, bk, 2, 0);
			}
	/* then each again with several tiles per work-group, after all of them: a run of netc tune
	 * capped by --max-candidates times the same tilings first as before these existed */
	for (int i = 0, one = n; i < one && n < 2 * max; i++) {
		GpuTiles streamed = rows_streamed(s, mi, lds, sms, out[i]);
		if (streamed.tiles)
			out[n++] = streamed;
	}
	return n;
}

/* Padded position p (index type) as its image, row and column on the padded grid. */
static void padded_place(Cg *cg, GpuGemm *g, LLVMValueRef p, LLVMValueRef *img, LLVMValueRef *y, LLVMValueRef *x)
{
	const GemmRows *r = g->s->a.rows;
	LLVMValueRef in_plane = remc(cg, g, p, r->ph * r->pw);
	*img = divc(cg, g, p, r->ph * r->pw);
	*y = divc(cg, g, in_plane, r->pw);
	*x = remc(cg, g, in_plane, r->pw);
}

/* Tap t's B tile among the buffer's B tiles from b. */
static LLVMValueRef tap_tile(Cg *cg, GpuGemm *g, LLVMValueRef b, int t)
{
	return lds_at(cg, g, b, ci(g, t * tap_bytes(g->s, &g->t) / et_size(g->s)));
}

/* The halo of k-block c0 (its first channel) into the copies' buffer an: run e of the 16-byte
 * runs (8 channels) of each padded position, consecutive work-items along a position's channels
 * and then the positions, which lie apart by the channel count in memory. */
static void copy_halo(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef c0)
{
	const GemmRows *r = g->s->a.rows;
	int64_t units = g->t.bk / 8, hp = halo_positions(r, g->t.bm), total = hp * units;
	LLVMValueRef tid = to_it(cg, g, tid64);
	for (int64_t i = 0; i < cdiv(total, g->t.block); i++) {
		LLVMValueRef e = add(cg, tid, ci(g, i * g->t.block));
		LLVMBasicBlockRef done = (i + 1) * g->t.block > total ? begin_if(cg, ltc(cg, g, e, total)) : NULL;
		LLVMValueRef pos = divc(cg, g, e, units), unit = remc(cg, g, e, units);
		LLVMValueRef img, y, x;
		padded_place(cg, g, add(cg, g->m0, pos), &img, &y, &x);
		img = to_i64(cg, g, img);
		y = LLVMBuildAdd(cg->b, to_i64(cg, g, y), cg_i64(cg, r->dy0), "");
		x = LLVMBuildAdd(cg->b, to_i64(cg, g, x), cg_i64(cg, r->dx0), "");
		/* y and x below zero wrap to large unsigned values; the k-blocks past the last that the
		 * pipeline copies read nothing */
		LLVMValueRef inside = LLVMBuildAnd(cg->b, LLVMBuildAnd(cg->b, ltc(cg, g, c0, r->chans),
			LLVMBuildICmp(cg->b, LLVMIntULT, img, cg_i64(cg, r->images), ""), ""),
			LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, y, cg_i64(cg, r->h), ""),
				     LLVMBuildICmp(cg->b, LLVMIntULT, x, cg_i64(cg, r->w), ""), ""), "");
		LLVMValueRef zero = cg_i64(cg, 0), chan = to_i64(cg, g, add(cg, c0, mulc(cg, g, unit, 8)));
		LLVMValueRef src = r->at(cg, &g->s->a, LLVMBuildSelect(cg->b, inside, img, zero, ""),
					 LLVMBuildSelect(cg->b, inside, y, zero, ""), LLVMBuildSelect(cg->b, inside, x, zero, ""), chan);
		LLVMValueRef dst = lds_at(cg, g, g->an, mulc(cg, g, add(cg, mulc(cg, g, unit, hp), pos), 16 / et_size(g->s)));
		copy16(cg, g, dst, src, inside);
		if (done)
			end_if(cg, done);
	}
}

/* K-block c0's copies into the copies' buffer: each tap's B tile (k from tap * C + c0) from bn,
 * then the halo at an. */
static void copy_rows(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef c0)
{
	const GemmRows *r = g->s->a.rows;
	LLVMValueRef taps = g->bn;
	for (int t = 0; t < r->taps; t++) {
		g->bn = tap_tile(cg, g, taps, t);
		stage(cg, g, false, tid64, add(cg, c0, ci(g, t * r->chans)));
	}
	g->bn = taps;
	copy_halo(cg, g, tid64, c0);
}

/* The descriptor of the halo at padded position pos (from the tile's first) and 8-channel plane
 * `plane`: mode 0, core matrices of 8 positions 128 bytes apart, planes LBO apart. */
static LLVMValueRef halo_desc(Cg *cg, GpuGemm *g, LLVMValueRef pos, int64_t plane)
{
	int64_t hp = halo_positions(g->s->a.rows, g->t.bm), per16 = 16 / lds_esize(g->s, &g->t);
	LLVMValueRef idx = mulc(cg, g, add(cg, pos, ci(g, plane * hp)), per16);
	return wg_desc_at(cg, g, g->as, idx, hp * 16, 8 * 16, 0);
}

/* acc += A B over k-block: per tap, per k16 of the k-block, one wgmma per m64 block of the
 * warpgroup's rows, A from the halo at the tap's shift (emulated: through the lane model). */
static void accumulate_rows(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	const GemmRows *r = g->s->a.rows;
	int count = wg_n(g) / 2;
	int64_t k = wg_k(g), per16 = 16 / lds_esize(g->s, &g->t);
	LLVMValueRef tid = to_it(cg, g, tid64), row0, col0, acc[WG_MAX_ACC];
	wg_origin(cg, g, divc(cg, g, tid, WG_ITEMS), &row0, &col0);
	char text[2048];
	if (!g->grp.emulated) {
		wg_load_accs(cg, g, tid64, acc);
		wg_text(g, true, g->lb.kmajor, text, sizeof text);
		ptx_asm(cg, NULL, "wgmma.fence.sync.aligned;", "", NULL, 0);
	}
	for (int t = 0; t < r->taps; t++)
		for (int64_t s = 0; s < g->t.bk / k; s++)
			for (int j = 0; j < wg_blocks(g); j++) {
				LLVMValueRef da = halo_desc(cg, g, add(cg, row0, ci(g, j * WG_M + rows_shift(r, t))), s * k / per16);
				LLVMValueRef db = wg_desc(cg, g, &g->lb, tap_tile(cg, g, g->bs, t), col0, s * k);
				if (g->grp.emulated) {
					wgmma_emulated(cg, g, tid64, da, false, db, !g->lb.kmajor, (int64_t)j * count);
					continue;
				}
				LLVMValueRef d[3] = {da, db, cg_i32(cg, 1)};
				asm_on_accs(cg, text, ",l,l,r", acc + j * count, count, d, 3);
			}
	if (!g->grp.emulated) {
		ptx_asm(cg, NULL, "wgmma.commit_group.sync.aligned;", "", NULL, 0);
		wgmma_wait(cg, g, tid64, acc, g->t.lag);
	}
}

/* Padded position m of the tile's output as the GEMM's row (*ok: whether the output grid has it). */
static LLVMValueRef rows_output(Cg *cg, GpuGemm *g, LLVMValueRef m, LLVMValueRef *ok)
{
	const GemmRows *r = g->s->a.rows;
	LLVMValueRef img, y, x;
	padded_place(cg, g, m, &img, &y, &x);
	*ok = LLVMBuildAnd(cg->b, ltc(cg, g, img, r->images), LLVMBuildAnd(cg->b, ltc(cg, g, y, r->gh), ltc(cg, g, x, r->gw), ""), "");
	return add(cg, mulc(cg, g, add(cg, mulc(cg, g, img, r->gh), y), r->gw), x);
}

static void accumulate(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	if (g->t.rows)
		accumulate_rows(cg, g, tid64);
	else if (g->t.wgmma && g->grp.emulated)
		accumulate_wgmma_emulated(cg, g, tid64);
	else if (g->t.wgmma)
		accumulate_wgmma(cg, g, tid64);
	else if (g->mi && g->grp.emulated)
		accumulate_emulated(cg, g, tid64);
	else if (g->mi)
		accumulate_mma(cg, g, tid64);
	else if (g->t.half_math == GPU_HALF_PACKED)
		accumulate_packed(cg, g, tid64);
	else
		accumulate_simt(cg, g, tid64);
}

/* Row and column in the tile of the work-item at p's accumulator idx. */
static void acc_place(Cg *cg, GpuGemm *g, const Place *p, int64_t idx, LLVMValueRef *row, LLVMValueRef *col)
{
	if (g->t.wgmma) {
		wg_acc_at(cg, g, p->tid, idx, row, col);
		return;
	}
	if (g->mi) {
		mma_acc_at(cg, g, p, idx, row, col);
		return;
	}
	*row = row_at(cg, g, p, (int)(idx / g->t.tn));
	*col = col_at(cg, g, p, (int)(idx % g->t.tn));
}

/* ---- epilogue ---- */

/* C[b][m0 + r][n0 + c] = v where it lies inside M x N. */
static void store_c(Cg *cg, GpuGemm *g, LLVMValueRef r, LLVMValueRef c, LLVMValueRef v)
{
	LLVMValueRef m = add(cg, g->m0, r), n = add(cg, g->n0, c), on_grid = NULL;
	/* padded rows: the padded position's output, where it has one */
	if (g->t.rows)
		m = rows_output(cg, g, m, &on_grid);
	LLVMValueRef ok = LLVMBuildAnd(cg->b, on_grid ? on_grid : ltc(cg, g, m, g->s->m), ltc(cg, g, n, g->s->n), "");
	LLVMBasicBlockRef done = begin_if(cg, ok);
	g->s->epilogue(cg, g->s, to_i64(cg, g, g->eb), to_i64(cg, g, m), to_i64(cg, g, n), v);
	end_if(cg, done);
}

/* One slice: each work-item stores its register tile. */
static void store_tiles(Cg *cg, GpuGemm *g)
{
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	for (int64_t q = 0; q < g->acc.count; q++) {
		LLVMValueRef v = LLVMBuildLoad2(cg->b, g->et, cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q), "");
		LLVMValueRef r, c;
		acc_place(cg, g, &p, q, &r, &c);
		store_c(cg, g, r, c, v);
	}
	cg_gpu_phase_end(cg, &g->grp, false);
}

static void split_store(Cg *cg, const GemmSpec *part, LLVMValueRef b, LLVMValueRef m, LLVMValueRef n, LLVMValueRef v);

/* Whether the finished tile goes out through LDS, and its rows there (g->out_lds, out_pitch):
 * always where k-slices sum their partials. The fragments of NVIDIA's matrix instructions hold
 * two neighbouring columns on each of 8 rows of a warp, so stores straight from them write 8
 * bytes of a row's 32-byte sector per instruction where the outputs are halves (vgg16 bf16's
 * first convolution on an H100, Nsight Compute: 15.1 of 32 bytes a sector used); through LDS the
 * work-items of a warp store consecutive columns. Those tiles take it where their rows, padded by
 * 8 words (the 8 rows of a fragment's store then fall into distinct bank quarters), fit the LDS
 * the kernel has anyway, and on wgmma's targets, whose deep pipelines have LDS to spare, always;
 * but not where the epilogue loads full-size tensors as it stores (the input gradients' fused
 * relu_grad: 30-70% slower through LDS on an H100), nor split-K's float32 partials, whose pairs
 * already store as whole 8-byte words (8% slower through LDS). */
static void out_through_lds(const Cg *cg, GpuGemm *g, int64_t stage_words)
{
	int64_t slices = (int64_t)g->t.ks * g->t.bm, padded = g->t.bn + 8;
	g->out_lds = g->t.ks > 1;
	g->out_pitch = g->t.bn;
	/* several tiles per work-group: the LDS holds the next tile's copies (stream_tiles) */
	if (g->t.tiles > 1)
		return;
	if (!g->mi || !(g->mi->caps & (CG_MATRIX_MMA | CG_MATRIX_WGMMA)) || g->s->epilogue_loads ||
	    g->s->epilogue == split_store)
		return;
	int64_t partials = g->t.ks > 1 ? slices * g->t.bn : 0, room = partials > stage_words ? partials : stage_words;
	if (copy_lds(cg, g->mi) > GPU_COPY_LDS || slices * padded <= room) {
		g->out_lds = true;
		g->out_pitch = padded;
	}
}

/* The tile's outputs through LDS (out_through_lds): each work-item puts its
 * accumulators in LDS, then sums some outputs in slice order and stores them. */
static void reduce_tiles(Cg *cg, GpuGemm *g)
{
	int64_t tile = (int64_t)g->t.bm * g->t.bn, pitch = g->out_pitch, span = g->t.bm * pitch;
	/* the partials overwrite the LDS buffers, which the last k-block may still be reading */
	if (!g->grp.emulated)
		cg_barrier(cg);
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	LLVMValueRef base = mulc(cg, g, p.slice, span);
	for (int64_t q = 0; q < g->acc.count; q++) {
		LLVMValueRef r, c;
		acc_place(cg, g, &p, q, &r, &c);
		LLVMValueRef at = add(cg, base, add(cg, mulc(cg, g, r, pitch), c));
		LLVMValueRef v = LLVMBuildLoad2(cg->b, g->et, cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q), "");
		LLVMBuildStore(cg->b, v, lds_at(cg, g, g->lds, at));
	}
	cg_gpu_phase_end(cg, &g->grp, true);

	tid64 = cg_gpu_phase_begin(cg, &g->grp);
	LLVMValueRef tid = to_it(cg, g, tid64);
	for (int64_t q = 0; q < cdiv(tile, g->t.block); q++) {
		/* consecutive work-items take consecutive columns: coalesced stores */
		LLVMValueRef e = add(cg, tid, ci(g, q * g->t.block));
		LLVMBasicBlockRef done = (q + 1) * g->t.block > tile ? begin_if(cg, ltc(cg, g, e, tile)) : NULL;
		LLVMValueRef at = pitch == g->t.bn ? e : add(cg, mulc(cg, g, divc(cg, g, e, g->t.bn), pitch), remc(cg, g, e, g->t.bn));
		LLVMValueRef v = LLVMBuildLoad2(cg->b, g->et, lds_at(cg, g, g->lds, at), "");
		for (int s = 1; s < g->t.ks; s++)
			v = LLVMBuildFAdd(cg->b, v, LLVMBuildLoad2(cg->b, g->et, lds_at(cg, g, g->lds, add(cg, at, ci(g, s * span))), ""), "");
		/* the column before the row, as the unpadded rows' code always had it */
		LLVMValueRef c = remc(cg, g, e, g->t.bn), r = divc(cg, g, e, g->t.bn);
		store_c(cg, g, r, c, v);
		if (done)
			end_if(cg, done);
	}
	cg_gpu_phase_end(cg, &g->grp, false);
}

/* How operand is_a lies in an LDS buffer. Rows padded by 4 elements keep the SIMT tiles' vector
 * reads aligned and spread the column-wise stores over banks; by 8 words the fragment reads of
 * the matrix rows (see "the warp tile"); ldmatrix's rows to an odd number of 16-byte units. */
static LdsTile lds_layout(const GemmSpec *s, const GpuTiles *gt, bool is_a)
{
	const CgMatrixInstr *mi = gt->mi;
	int64_t rows = is_a ? gt->bm : gt->bn, bk = gt->bk;
	LdsTile t = {.kvec = mi ? lds_run(mi) : gt->half_math == GPU_HALF_DOT2 ? 2 : 1};
	if (mi && (mi->caps & CG_MATRIX_MMA)) {
		t.kmajor = (is_a ? s->a : s->b).along_k;
		t.ldm = ldm_rows(mi, is_a, &t);
	}
	if (!t.ldm) {
		t.kmajor = false;
		t.ld = rows + (mi ? MMA_PAD : 4);
		t.elems = bk / t.kvec * t.ld * t.kvec;
		return t;
	}
	int64_t esize = cg_matrix_elem_bits(mi->elem) / 8, units = (t.kmajor ? bk : rows) * esize / LDM_ROW_BYTES;
	t.kvec = 1;
	t.ld = (units | 1) * LDM_ROW_BYTES / esize;
	if ((gt->copied[0] || gt->copied[1]) && units >= 2 && !(units & (units - 1))) {
		/* unpadded rows, their units swizzled so that the 8 rows an ldmatrix matrix or 8 copies
		 * of a row's units touch lie in 8 different 16-byte bank groups of 128 bytes */
		t.ld = units * LDM_ROW_BYTES / esize;
		t.swz_mask = (int)(units < 8 ? units : 8) - 1;
		while (units << t.swz_shift < 8)
			t.swz_shift++;
		if (units > 8)
			t.atom = 8 * LDM_ROW_BYTES / (int)esize;
	}
	t.elems = (t.kmajor ? rows : bk) * t.ld;
	return t;
}

/* Whether operand is_a can go from memory into LDS by cp.async (NVIDIA sm_80+, whose mma rows
 * have ldmatrix layouts; emulated, as a copy): plain memory holding the LDS's half type (no
 * conversion on the way), whole 16-byte runs, LDS rows along the run. tf32 operands go as float32
 * (no rounding on the way: the unit reads their top 19 bits) only into the tiles that wgmma takes
 * (f32_copies). */
static bool copyable(const GemmSpec *s, const GpuTiles *t, bool is_a)
{
	const GemmOperand *op = is_a ? &s->a : &s->b;
	if (!t->mi || !t->wide || !wgmma_elem(t->mi) || !op->at || op->stored != s->half)
		return false;
	return lds_layout(s, t, is_a).ldm && run_lanes_of(s, t, is_a, t->bk) * cg_matrix_elem_bits(t->mi->elem) == 128;
}

/* Whether tf32 tiles t on the deep pipeline (copy_stages: one k-slice, 64 or 128 rows) are ones
 * that wgmma takes (wgmma_fits), as the tiles of half operands may fall back to mma.sync but
 * tf32's may not: mma.sync wants rounded tf32 registers. wgmma's tf32 forms read both operands
 * K-major (the PTX ISA has the transpose for f16 and bf16 only), in rows of at most
 * GPU_DEEP_ROW_BYTES (the K-major descriptors here name no atoms). */
static bool f32_copies(const GemmSpec *s, const GpuTiles *t)
{
	return s->a.along_k && s->b.along_k && t->block == 2 * WG_ITEMS && t->bk * lds_esize(s, t) <= GPU_DEEP_ROW_BYTES;
}

/* The bytes of LDS one buffer of A and B tiles takes at k-block bk. */
static int64_t stage_bytes(const GemmSpec *s, GpuTiles t, int64_t bk)
{
	t.bk = (int)bk;
	return (lds_layout(s, &t, true).elems + lds_layout(s, &t, false).elems) * lds_esize(s, &t);
}

/* Where both operands are copyable (the dense and Winograd GEMMs), they go into GPU_COPY_STAGES
 * buffers: the copies of k-block kb + 2 are in flight while kb is accumulated, and no staging
 * registers hold them. The k-block is the largest whose buffers fit the static shared memory
 * (unpadded, swizzled rows: 3 x 16 KiB for 128 x 128 x 32 tiles of halves). Measured on an H100
 * (docs/performance.md, 2026-11-25): two buffers gained nothing over the registers' staging, four
 * of half the k-block lost 8%; copying only the dense operand of a convolution, whose gathers
 * stay in registers, made alexnet's step 3% slower.
 *
 * Where `lds` is more than the static 48 KiB (wgmma's targets, copy_lds), GPU_DEEP_STAGES buffers
 * in dynamic shared memory, with a k-block's wgmmas left in flight (t.lag): k-blocks up to
 * GPU_DEEP_BK where both operands run along k (the forward GEMMs: vgg16's forward convolutions
 * 6-33% faster on an H100), up to GPU_DEEP_MN_BK for the gradients' MN-major GEMMs, which lost
 * up to 13% with 64 (one work-group per SM instead of two) and gained 2-7% per kernel with 32
 * (docs/performance.md, 2026-11-25, 12:57, and 2026-11-28, 14:14). bk: the k-block asked for (a
 * tuning's), 0 for the largest that fits. */
static void copy_stages(const GemmSpec *s, GpuTiles *t, int64_t bk, int64_t lds)
{
	GpuTiles c = *t;
	c.bk = c.mi ? c.mi->k * c.ks : 0;
	if (bk > c.bk)
		c.bk = (int)bk;
	for (int is_a = 0; is_a < 2; is_a++)
		c.copied[is_a] = c.mi && copyable(s, &c, is_a);
	if (!c.copied[0] || !c.copied[1])
		return;
	/* the tiles that wgmma takes (wgmma_fits): 64 or 128 rows, one k-slice; the gradients' GEMMs
	 * (an operand along m or n) with k-blocks of at most GPU_DEEP_MN_BK, so that two work-groups
	 * still share an SM; tf32's k-blocks of GPU_DEEP_ROW_BYTES */
	bool kmajor = s->a.along_k && s->b.along_k, tf32 = c.mi->elem == CG_MELEM_TF32;
	bool deep = lds > GPU_COPY_LDS && c.ks == 1 && (c.bm == 64 || c.bm == 128);
	int64_t most_bk = !deep ? s->k : tf32 ? GPU_DEEP_ROW_BYTES / lds_esize(s, &c) : kmajor ? GPU_DEEP_BK : GPU_DEEP_MN_BK;
	if (tf32 && (!deep || !f32_copies(s, &c)))
		return;
	c.stages = deep ? GPU_DEEP_STAGES : GPU_COPY_STAGES;
	if (!deep)
		lds = GPU_COPY_LDS;
	if (c.stages * stage_bytes(s, c, c.bk) > lds)
		return;
	while (!bk && c.bk < s->k && 2 * c.bk <= most_bk && c.stages * stage_bytes(s, c, 2 * c.bk) <= lds)
		c.bk *= 2;
	/* no more buffers than k-blocks (at least two): the rest would only hold LDS that a second
	 * work-group on the SM could use (the first convolution's K of 72, 1x1 convolutions of 64
	 * to 192 channels) */
	int64_t kblocks = cdiv(s->k, c.bk);
	if (deep && kblocks < c.stages)
		c.stages = kblocks < 2 ? 2 : (int)kblocks;
	*t = c;
}

/* ---- tensor maps: operands copied by the Tensor Memory Accelerator (sm_90; NETC_TMA=1) ----
 *
 * Where an operand is plain memory (GemmOperand.tensor) and its tile in a buffer of the deep wgmma
 * pipeline is one box of a tensor map (runtime/tensor_map.h) -- K-major rows, or the k rows of an
 * MN-major tile one atom wide, of 32, 64 or 128 bytes, whose swizzle (lds_layout's) is the map's --
 * work-item 0 copies a k-block's tile with one cp.async.bulk.tensor instead of every work-item's
 * cp.async of 16-byte runs. Each buffer has an mbarrier: work-item 0 arms it with the bytes of the
 * k-block's boxes (mbarrier.arrive.expect_tx) and the copies complete them; every work-item waits
 * for its phase, (k-block / stages) & 1, before the barrier that orders each k-block already (so
 * a buffer is copied over only after every warpgroup's products of it are done). No copies go
 * past the slice's last k-block, so none is in flight at the end. The maps go into the bundle,
 * each in a slot of the arena past the plan's (cg_tensor_map_slot), where the runtime stores the
 * driver's encoding; zeros outside the tensor come from the hardware. Emulated, work-item 0
 * copies the boxes element by element as the map says (rt_tensor_map_copy's rule) and the waits
 * are nothing, so the emulated GEMMs test each map's extents, strides, box and swizzle against
 * the LDS layout the descriptors read. Experimental: on only where NETC_TMA=1 (no GPU has timed
 * it yet), with NVIDIA's Tensor Memory Accelerator under test (tests/unit/test_rt_tensor_map.c). */

static bool tma_asked(void)
{
	const char *e = getenv("NETC_TMA");
	return e && strcmp(e, "1") == 0;
}

/* The map of operand is_a's tiles where they are one box (the file's rules), in *m without its
 * slot; false where they are not. */
static bool tma_map(const Cg *cg, const GpuGemm *g, bool is_a, BundleTensorMap *m)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	const GemmTensor *x = op->tensor;
	const LdsTile *t = lds_tile(g, is_a);
	const CgTarget *target = unit_target(cg);
	if (!x || !target || !(target->matrix & CG_MATRIX_WGMMA) || !g->t.copied[is_a] || g->t.rows || !t->ldm ||
	    !t->swz_mask || t->atom || t->kvec != 1 || g->t.ks != 1)
		return false;
	const Node *src = &cg->g->node[x->src];
	int64_t esize = lds_esize(g->s, &g->t), rows = is_a ? g->t.bm : g->t.bn, mn = is_a ? g->s->m : g->s->n;
	bool contiguous_k = is_a ? !x->t : x->t; /* the tensor's contiguous index: col unless t */
	if (src->offset < 0 || contiguous_k != op->along_k || contiguous_k != t->kmajor ||
	    (int64_t)dtype_size(src->dtype) != esize)
		return false;
	int64_t inner = t->kmajor ? g->t.bk : rows, outer = t->kmajor ? rows : g->t.bk;
	*m = (BundleTensorMap){.tensor = src->offset, .dtype = src->dtype, .rank = x->sb ? 3 : 2,
			       .dim = {contiguous_k ? g->s->k : mn, contiguous_k ? mn : g->s->k, g->s->batch},
			       .stride = {0, x->ld * esize, x->sb * esize},
			       .box = {(int32_t)inner, (int32_t)outer, 1}, .swizzle = (int)(inner * esize)};
	char why[200];
	return t->ld == inner && rt_tensor_map_check(m, src->offset + m->stride[m->rank - 1] * m->dim[m->rank - 1] +
							      esize * m->dim[0], why, sizeof why);
}

/* Which operands the TMA copies (g->tma, g->map), and where their mbarriers lie past `lds`
 * bytes of LDS; returns the LDS bytes with them. */
static int64_t tma_choose(Cg *cg, GpuGemm *g, bool wgmma, int64_t lds)
{
	const CgTarget *target = unit_target(cg);
	g->tma[0] = g->tma[1] = false;
	if (!wgmma || !tma_asked() || !target || g->t.stages < 2)
		return lds;
	int64_t bars_at = (lds + 7) / 8 * 8, with = bars_at + 8 * g->t.stages;
	if (with > target->lds_max)
		return lds;
	for (int is_a = 0; is_a < 2; is_a++)
		g->tma[is_a] = tma_map(cg, g, is_a, &g->map[is_a]);
	if (!g->tma[0] && !g->tma[1])
		return lds;
	g->bars_at = bars_at;
	if (!g->grp.emulated) /* the maps' slots, and the maps into the bundle */
		for (int is_a = 1, which = 0; is_a >= 0; is_a--)
			if (g->tma[is_a]) {
				g->map[is_a].at = cg_tensor_map_slot(cg, which++);
				cg_tensor_map_add(cg, &g->map[is_a]);
			}
	return with;
}

static bool tma_any(const GpuGemm *g) { return g->tma[0] || g->tma[1]; }

/* The shared-memory address (i32) of buffer `buffer`'s mbarrier. */
static LLVMValueRef tma_bar(Cg *cg, GpuGemm *g, LLVMValueRef buffer)
{
	LLVMValueRef at = add(cg, ci(g, g->bars_at), mulc(cg, g, buffer, 8));
	LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->t_i8, g->lds, (LLVMValueRef[]){to_i64(cg, g, at)}, 1, "");
	return LLVMBuildTrunc(cg->b, LLVMBuildPtrToInt(cg->b, p, cg->t_i64, ""), cg->t_i32, "");
}

/* Work-item 0 readies the buffers' mbarriers (one arrival each: its own), then a barrier. */
static void tma_init(Cg *cg, GpuGemm *g)
{
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	if (!g->grp.emulated) {
		LLVMBasicBlockRef done = begin_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, tid64, cg_i64(cg, 0), ""));
		for (int s = 0; s < g->t.stages; s++)
			ptx_asm(cg, NULL, "mbarrier.init.shared::cta.b64 [$0], 1;", "r,~{memory}",
				(LLVMValueRef[]){tma_bar(cg, g, ci(g, s))}, 1);
		ptx_asm(cg, NULL, "fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
		end_if(cg, done);
	}
	cg_gpu_phase_end(cg, &g->grp, true);
}

/* The box's coordinates (i32, innermost first) for operand is_a's tile at k (index type). */
static void tma_coords(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef k, LLVMValueRef *c)
{
	LLVMValueRef mn = is_a ? g->m0 : g->n0;
	bool kmajor = lds_tile(g, is_a)->kmajor;
	c[0] = kmajor ? k : mn;
	c[1] = kmajor ? mn : k;
	c[2] = g->b;
	for (int i = 0; i < 3; i++)
		c[i] = LLVMBuildTrunc(cg->b, to_i64(cg, g, c[i]), cg->t_i32, "");
}

/* Emulated: the box of map m at coordinates c into the tile at dst, element by element as the
 * hardware copies it (rt_tensor_map_copy): dense and row-major, then each 16-byte unit u of a
 * row r of the swizzle's bytes at u ^ the row's flip; zeros outside the tensor. */
static void tma_copy_emulated(Cg *cg, GpuGemm *g, const GemmTensor *x, const BundleTensorMap *m, const LLVMValueRef *c,
			      LLVMValueRef dst)
{
	int64_t esize = (int64_t)dtype_size((DType)m->dtype);
	CgLoop e = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, (int64_t)m->box[0] * m->box[1]), "tma_e");
	LLVMValueRef i0 = LLVMBuildAdd(cg->b, LLVMBuildSExt(cg->b, c[0], cg->t_i64, ""),
				       LLVMBuildURem(cg->b, e.i, cg_i64(cg, m->box[0]), ""), "");
	LLVMValueRef i1 = LLVMBuildAdd(cg->b, LLVMBuildSExt(cg->b, c[1], cg->t_i64, ""),
				       LLVMBuildUDiv(cg->b, e.i, cg_i64(cg, m->box[0]), ""), "");
	LLVMValueRef inside = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, i0, cg_i64(cg, m->dim[0]), ""),
					   LLVMBuildICmp(cg->b, LLVMIntULT, i1, cg_i64(cg, m->dim[1]), ""), "");
	LLVMValueRef idx = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, i1, cg_i64(cg, x->ld), ""), i0, "");
	if (x->sb)
		idx = LLVMBuildAdd(cg->b, idx, LLVMBuildMul(cg->b, LLVMBuildSExt(cg->b, c[2], cg->t_i64, ""), cg_i64(cg, x->sb), ""), "");
	idx = LLVMBuildSelect(cg->b, inside, idx, cg_i64(cg, 0), "");
	LLVMValueRef v = LLVMBuildLoad2(cg->b, g->lt, cg_ptr(cg, x->src, idx), "");
	v = LLVMBuildSelect(cg->b, inside, v, LLVMConstNull(g->lt), "");
	LLVMValueRef byte = LLVMBuildMul(cg->b, e.i, cg_i64(cg, esize), "");
	LLVMValueRef flip = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, byte, cg_i64(cg, 7), ""), cg_i64(cg, m->swizzle / 16 - 1), "");
	byte = LLVMBuildXor(cg->b, byte, LLVMBuildShl(cg->b, flip, cg_i64(cg, 4), ""), "");
	LLVMValueRef to = LLVMBuildGEP2(cg->b, cg->t_i8, dst, &byte, 1, "");
	LLVMBuildStore(cg->b, v, to);
	cg_for_end(cg, &e);
}

/* Work-item 0's copies of the TMA operands' tiles of k-block k0 (relative to the slice) into the
 * copies' buffer, where k0 is inside the slice. */
static void tma_issue(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef k0)
{
	LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, tid64, cg_i64(cg, 0), "");
	LLVMBasicBlockRef done = begin_if(cg, LLVMBuildAnd(cg->b, first, ltc(cg, g, k0, g->t.kslice), ""));
	LLVMValueRef k = g->kbase ? add(cg, g->kbase, k0) : k0, bar = NULL;
	int64_t bytes = 0;
	for (int is_a = 0; is_a < 2; is_a++)
		bytes += g->tma[is_a] ? rt_tensor_map_box_bytes(&g->map[is_a]) : 0;
	if (!g->grp.emulated) {
		bar = tma_bar(cg, g, g->copy_buf);
		ptx_asm(cg, NULL, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}",
			(LLVMValueRef[]){bar, cg_i32(cg, (int32_t)bytes)}, 2);
	}
	for (int is_a = 1; is_a >= 0; is_a--) {
		if (!g->tma[is_a])
			continue;
		const BundleTensorMap *m = &g->map[is_a];
		LLVMValueRef c[3], dst = is_a ? g->an : g->bn;
		tma_coords(cg, g, is_a, k, c);
		if (g->grp.emulated) {
			tma_copy_emulated(cg, g, (is_a ? &g->s->a : &g->s->b)->tensor, m, c, dst);
			continue;
		}
		LLVMValueRef slot = LLVMBuildGEP2(cg->b, cg->t_i8, cg->arena, (LLVMValueRef[]){cg_i64(cg, m->at)}, 1, "");
		LLVMValueRef map = LLVMBuildPtrToInt(cg->b, LLVMBuildAddrSpaceCast(cg->b, slot, cg->t_ptr, ""), cg->t_i64, "");
		LLVMValueRef to = LLVMBuildTrunc(cg->b, LLVMBuildPtrToInt(cg->b, dst, cg->t_i64, ""), cg->t_i32, "");
		char text[256];
		snprintf(text, sizeof text,
			 "cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3%s}], [$%d];",
			 m->rank, m->rank == 3 ? ", $4" : "", m->rank + 2);
		LLVMValueRef args[6] = {to, map, c[0], c[1], m->rank == 3 ? c[2] : bar, bar};
		ptx_asm(cg, NULL, text, m->rank == 3 ? "r,l,r,r,r,r,~{memory}" : "r,l,r,r,r,~{memory}", args, m->rank + 3);
	}
	end_if(cg, done);
}

/* Every work-item waits until the TMA copies of the k-block being accumulated have landed. */
static void tma_wait(Cg *cg, GpuGemm *g)
{
	if (g->grp.emulated)
		return;
	int stages = g->t.stages;
	LLVMValueRef buffer = remc(cg, g, g->kb_now, stages);
	LLVMValueRef parity = LLVMBuildAnd(cg->b, divc(cg, g, g->kb_now, stages), ci(g, 1), "");
	LLVMValueRef args[2] = {tma_bar(cg, g, buffer), LLVMBuildTrunc(cg->b, to_i64(cg, g, parity), cg->t_i32, "")};
	LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "tma_wait");
	LLVMBasicBlockRef landed = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "tma_landed");
	LLVMBuildBr(cg->b, spin);
	LLVMPositionBuilderAtEnd(cg->b, spin);
	LLVMValueRef ok = ptx_asm(cg, cg->t_i32,
				  "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\nselp.u32 $0, 1, 0, p;\n}",
				  "=r,r,r,~{memory}", args, 2);
	LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntNE, ok, cg_i32(cg, 0), ""), landed, spin);
	LLVMPositionBuilderAtEnd(cg->b, landed);
}

/* ---- the kernel ---- */

static void decode(Cg *cg, GpuGemm *g, LLVMValueRef wg64)
{
	LLVMValueRef wg = to_it(cg, g, wg64);
	int64_t per_b = g->t.nmb * g->t.nnb;
	/* split-K: the slices are batches of batches, so the partials come out slice-major */
	g->eb = g->b = divc(cg, g, wg, per_b);
	g->kend = ci(g, g->s->k);
	if (g->t.slices > 1) {
		g->b = remc(cg, g, g->eb, g->s->batch);
		g->kbase = mulc(cg, g, divc(cg, g, g->eb, g->s->batch), g->t.kslice);
		LLVMValueRef end = add(cg, g->kbase, ci(g, g->t.kslice));
		g->kend = LLVMBuildSelect(cg->b, ltc(cg, g, end, g->s->k), end, g->kend, "kend");
	}
	LLVMValueRef r = remc(cg, g, wg, per_b);
	g->m0 = mulc(cg, g, divc(cg, g, r, g->t.nnb), g->t.bm);
	g->n0 = mulc(cg, g, remc(cg, g, r, g->t.nnb), g->t.bn);
}

static void zero_acc(Cg *cg, GpuGemm *g)
{
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	for (int64_t q = 0; q < g->acc.count; q++)
		LLVMBuildStore(cg->b, LLVMConstNull(g->et), cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q));
	cg_gpu_phase_end(cg, &g->grp, false);
}

/* The register-staged operands' shares: loaded from k-block k0 into the staging registers, or
 * (k0 NULL) from them into the k-block's buffer. */
static void stage_regs(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef k0)
{
	for (int is_a = 1; is_a >= 0; is_a--)
		if (!g->t.copied[is_a])
			stage(cg, g, is_a, tid64, k0);
}

static bool copies(const GpuGemm *g) { return g->t.copied[0] || g->t.copied[1]; }

/* The copied operands' shares of k-block k0 into the copies' buffer: one group of copies per
 * work-item (an empty one where nothing is copied, so that the waits count k-blocks). */
static void stage_copies(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef k0)
{
	if (g->t.rows)
		copy_rows(cg, g, tid64, k0);
	for (int is_a = 1; is_a >= 0 && !g->t.rows; is_a--)
		if (g->t.copied[is_a] && !g->tma[is_a])
			stage(cg, g, is_a, tid64, k0);
	if (tma_any(g))
		tma_issue(cg, g, tid64, k0);
	if (!g->grp.emulated)
		cg_intrinsic_call(cg, "llvm.nvvm.cp.async.commit.group", NULL, 0);
}

/* Waits until at most `pending` groups of this work-item's copies are in flight. */
static void wait_copies(Cg *cg, GpuGemm *g, int pending)
{
	if (!g->grp.emulated)
		cg_intrinsic_call(cg, "llvm.nvvm.cp.async.wait.group", (LLVMValueRef[]){cg_i32(cg, pending)}, 1);
}

/* The elements of et that a tile takes in LDS (whole ones: the half tiles' sizes are even). */
static int64_t tile_span(const GpuGemm *g, const LdsTile *t) { return t->elems * lds_esize(g->s, &g->t) / et_size(g->s); }

/* The elements of et that one buffer's A tile and its B tiles take (padded rows: the halo, and
 * one B tile per tap). */
static int64_t a_span(const GpuGemm *g)
{
	return g->t.rows ? halo_bytes(g->s, &g->t) / et_size(g->s) : tile_span(g, &g->la);
}
static int64_t b_span(const GpuGemm *g)
{
	return g->t.rows ? g->s->a.rows->taps * tap_bytes(g->s, &g->t) / et_size(g->s) : tile_span(g, &g->lb);
}

/* A's and B's tiles in LDS buffer `buffer` (index type) of t.stages. */
static void buffer_at(Cg *cg, GpuGemm *g, LLVMValueRef buffer, LLVMValueRef *a, LLVMValueRef *b)
{
	*a = lds_at(cg, g, g->lds, mulc(cg, g, buffer, a_span(g) + b_span(g)));
	*b = lds_at(cg, g, *a, ci(g, a_span(g)));
}

/* The k-blocks whose copies are in flight ahead of the one being accumulated: every buffer but
 * its own and those of the k-blocks whose products are still in flight (t.lag). */
static int copies_ahead(const GpuGemm *g) { return g->t.stages - 1 - g->t.lag; }

/* Points as and bs at k-block kb's buffer, an and bn at that of kb + copies_ahead. */
static void pick_buffer(Cg *cg, GpuGemm *g, LLVMValueRef kb)
{
	int stages = g->t.stages;
	buffer_at(cg, g, stages == 2 ? LLVMBuildAnd(cg->b, kb, ci(g, 1), "") : remc(cg, g, kb, stages), &g->as, &g->bs);
	g->kb_now = kb;
	if (copies(g)) {
		g->copy_buf = remc(cg, g, add(cg, kb, ci(g, copies_ahead(g))), stages);
		buffer_at(cg, g, g->copy_buf, &g->an, &g->bn);
	}
}

/* The work-item's copies of the k-block about to be accumulated landed (the others' by the
 * barrier after): at most copies_ahead - 1 groups in flight; wgmma reads LDS through the async
 * proxy, so the copies' writes are made visible to it. */
static void copies_landed(Cg *cg, GpuGemm *g)
{
	if (copies(g))
		wait_copies(cg, g, copies_ahead(g) - 1);
	if (tma_any(g))
		tma_wait(cg, g);
	if (g->t.wgmma && !g->grp.emulated)
		ptx_asm(cg, NULL, "fence.proxy.async.shared::cta;", "", NULL, 0);
}

/* Software-pipelined: the loads of k-block kb+1 into the staging registers, and the copies of
 * kb + copies_ahead (copied operands), are in flight while kb is accumulated (past K they are
 * zeros, as the emitters are asked for in-range elements only). Block kb is stored into (or was
 * copied into) buffer kb % stages while stragglers may still read block kb-1 from another, so one
 * barrier per k-block suffices: the barrier of block kb comes after everyone's reads of kb-1,
 * before anyone stores or copies over it. Before the barrier each work-item waits for its own
 * copies of kb. With wgmma's products of kb-1 still in flight (t.lag), each warpgroup waits for
 * them after issuing kb's, so the barrier of kb + 1 is the one after which block kb-1's buffer
 * is free: the copies stay one buffer further behind. */
static void kblocks(Cg *cg, GpuGemm *g)
{
	/* padded rows: k-blocks of bk channels, each over every tap */
	int64_t nkb = cdiv(g->t.rows ? g->s->a.rows->chans : g->t.kslice, g->t.bk), ahead = copies_ahead(g);
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	stage_regs(cg, g, tid64, ci(g, 0));
	if (g->hold)
		held_begin(cg, g, tid64);
	for (int64_t s = 0; s < ahead && copies(g); s++) {
		g->copy_buf = ci(g, s);
		buffer_at(cg, g, g->copy_buf, &g->an, &g->bn);
		stage_copies(cg, g, tid64, ci(g, s * g->t.bk));
	}
	cg_gpu_phase_end(cg, &g->grp, false);
	CgLoop kb = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, nkb), "kb");
	LLVMValueRef kbi = to_it(cg, g, kb.i);
	pick_buffer(cg, g, kbi);
	tid64 = cg_gpu_phase_begin(cg, &g->grp);
	stage_regs(cg, g, tid64, NULL);
	copies_landed(cg, g);
	cg_gpu_phase_end(cg, &g->grp, true);
	tid64 = cg_gpu_phase_begin(cg, &g->grp);
	if (copies(g))
		stage_copies(cg, g, tid64, mulc(cg, g, add(cg, kbi, ci(g, ahead)), g->t.bk));
	stage_regs(cg, g, tid64, mulc(cg, g, add(cg, kbi, ci(g, 1)), g->t.bk));
	accumulate(cg, g, tid64);
	cg_gpu_phase_end(cg, &g->grp, false);
	cg_for_end(cg, &kb);
	/* AMD's one-slice tiles: rolled however few the k-blocks (emit_tiles) */
	if (!wide_tiles(cg) && g->t.ks == 1)
		cg_loop_no_unroll(cg, &kb);
	if (g->hold)
		held_products(cg, g);
	/* the copies past the last k-block land in LDS that the slices' partials reuse */
	if (copies(g))
		wait_copies(cg, g, 0);
	if (g->t.lag && !g->grp.emulated)
		wgmma_drain(cg, g);
}

/* ---- several tiles per work-group (padded rows' t.tiles) ----
 *
 * A tile of padded rows runs few k-blocks (vgg16's 224 x 224 x 64 layers: 4 of 16 channels, every
 * tap in each), so filling its pipeline and storing its outputs take much of its life. With
 * t.tiles, work-group w of a grid of G takes tiles w, w + G, w + 2G, ... (G about one work-group
 * per place the SMs hold: rows_streamed) and their k-blocks run as one stream through the
 * buffers: the copies of the next tile's first k-blocks are in flight while this tile's last ones
 * are accumulated and its outputs stored, from the fragments (the LDS holds those copies). */

/* The tile (index type) of stream index j of the work-group whose first tile is wg. */
static LLVMValueRef stream_tile(Cg *cg, GpuGemm *g, LLVMValueRef wg, LLVMValueRef j, int64_t nkb, int64_t grid)
{
	return add(cg, wg, mulc(cg, g, divc(cg, g, j, nkb), grid));
}

/* The copies of stream index j into the copies' buffer; past the stream's end (len), those of a
 * k-block past K of the first tile, which the k-blocks accumulated never read. */
static void copy_stream(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef wg, LLVMValueRef j, LLVMValueRef len,
			int64_t nkb, int64_t grid)
{
	LLVMValueRef in = LLVMBuildICmp(cg->b, LLVMIntULT, j, len, "");
	LLVMValueRef tile = LLVMBuildSelect(cg->b, in, stream_tile(cg, g, wg, j, nkb, grid), wg, "");
	LLVMValueRef kb = LLVMBuildSelect(cg->b, in, remc(cg, g, j, nkb), ci(g, nkb), "");
	GpuGemm at = *g;
	decode(cg, &at, to_i64(cg, g, tile));
	stage_copies(cg, &at, tid64, mulc(cg, g, kb, g->t.bk));
}

/* kblocks and the epilogue of every tile of the work-group wg64 of a grid of `grid`. */
static void stream_tiles(Cg *cg, GpuGemm *g, LLVMValueRef wg64, int64_t grid)
{
	int64_t nkb = cdiv(g->s->a.rows->chans, g->t.bk), ahead = copies_ahead(g), total = g->t.nmb * g->t.nnb;
	LLVMValueRef wg = to_it(cg, g, wg64);
	/* its tiles: wg, wg + grid, ... below total */
	LLVMValueRef count = add(cg, divc(cg, g, LLVMBuildNUWSub(cg->b, ci(g, total - 1), wg, ""), grid), ci(g, 1));
	LLVMValueRef len = mulc(cg, g, count, nkb);
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	for (int64_t s = 0; s < ahead; s++) {
		buffer_at(cg, g, ci(g, s), &g->an, &g->bn);
		copy_stream(cg, g, tid64, wg, ci(g, s), len, nkb, grid);
	}
	cg_gpu_phase_end(cg, &g->grp, false);
	CgLoop j = cg_for_begin(cg, cg_i64(cg, 0), to_i64(cg, g, len), "j");
	LLVMValueRef ji = to_it(cg, g, j.i);
	pick_buffer(cg, g, ji);
	cg_gpu_phase_begin(cg, &g->grp);
	copies_landed(cg, g);
	cg_gpu_phase_end(cg, &g->grp, true);
	tid64 = cg_gpu_phase_begin(cg, &g->grp);
	copy_stream(cg, g, tid64, wg, add(cg, ji, ci(g, ahead)), len, nkb, grid);
	accumulate(cg, g, tid64);
	cg_gpu_phase_end(cg, &g->grp, false);
	/* after a tile's last k-block: its outputs, then zeros for the next tile's sums */
	LLVMBasicBlockRef done = begin_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, remc(cg, g, ji, nkb), ci(g, nkb - 1), ""));
	if (g->t.lag && !g->grp.emulated)
		wgmma_drain(cg, g);
	GpuGemm at = *g;
	decode(cg, &at, to_i64(cg, g, stream_tile(cg, g, wg, ji, nkb, grid)));
	store_tiles(cg, &at);
	zero_acc(cg, g);
	end_if(cg, done);
	cg_for_end(cg, &j);
	wait_copies(cg, g, 0);
}

/* The kernel of tiles t (every k-slice's when t.slices > 1); returns its grid. */
static int64_t emit_tiles(Cg *cg, const GemmSpec *s, GpuTiles t)
{
	GpuGemm g = {.s = s, .t = t, .et = s->type, .mi = t.mi};
	if (g.mi && cg_matrix_elem_bits(g.mi->elem) == 16)
		g.ht = g.mi->elem == CG_MELEM_BF16 ? cg->t_bf16 : cg->t_f16;
	else if (t.half_math != GPU_HALF_F32)
		g.ht = s->half == DT_BF16 ? cg->t_bf16 : cg->t_f16;
	g.lt = g.ht ? g.ht : g.et;
	g.la = lds_layout(s, &g.t, true);
	g.lb = lds_layout(s, &g.t, false);
	if (t.rows)
		g.la = (LdsTile){.kmajor = true}; /* the halo (halo_desc) */
	int64_t grid = (int64_t)t.slices * s->batch * g.t.nmb * g.t.nnb;
	if (t.tiles > 1)
		grid = cdiv(grid, t.tiles);
	/* every index of the kernel, padded tiles (padded rows' halo) included, fits i32 or all is i64 */
	int64_t rows_m = t.rows ? g.t.nmb * g.t.bm + halo_positions(s->a.rows, g.t.bm) : 0;
	bool narrow = s->m + g.t.bm < INT32_MAX && rows_m < INT32_MAX && s->n + g.t.bn < INT32_MAX && s->k + 2 * g.t.bk < INT32_MAX &&
		      (int64_t)t.slices * t.kslice + 2 * g.t.bk < INT32_MAX && grid < INT32_MAX;
	g.it = narrow ? cg->t_i32 : cg->t_i64;

	LLVMValueRef wg = cg_gpu_group_begin(cg, &g.grp, g.t.block);
	/* 8 x 8 register tiles want more than half the register file of an NVIDIA SM at 256
	 * work-items; a second resident work-group (4 warps per sub-partition) overlaps one's barrier
	 * waits and loads with the other's multiply-adds (vgg16's step on an H100: 251 -> 234 ms).
	 * Smaller tiles fit twice already, and capping them only made ptxas schedule worse (mnist
	 * 0.444 -> 0.456 ms). AMD's tiles (at most 4 x 4) all ask for 4 waves per SIMD: the
	 * backend's own choice (83-131 VGPRs on gfx906) left a SIMD 1 to 3 waves to switch between.
	 * Some overrun the budget (k-slices' partial sums, a K of 9 on gfx906): a unit that then
	 * spills is compiled again without asking (CgTargetOps.occupancy_attr, cg_driver.c). A loop
	 * of a few k-blocks stays a loop there (kblocks): unrolled into straight-line code, four
	 * k-blocks of a 64 x 64 tile took all 256 VGPRs of gfx803. */
	int64_t accs = g.mi ? (int64_t)(g.t.wm / g.mi->m) * (g.t.wn / g.mi->n) * g.mi->c_per_lane : (int64_t)g.t.tm * g.t.tn;
	if (accs == GPU_MAX_REG * GPU_MAX_REG || !wide_tiles(cg))
		cg_gpu_waves(cg, GPU_WAVES);
	/* several tiles per work-group: the grid counts on the work-groups per SM rows_resident sees */
	if (t.tiles > 1 && rows_resident(s, &t, copy_lds(cg, t.mi)) > 1)
		cg_gpu_waves(cg, GPU_WAVES);
	/* the slices' partial tiles reuse the staging LDS once the last k-block is done */
	int64_t stage = g.t.stages * (a_span(&g) + b_span(&g));
	out_through_lds(cg, &g, stage);
	int64_t red = g.out_lds ? (int64_t)g.t.ks * g.t.bm * g.out_pitch : 0;
	bool wgmma = t.rows || wgmma_fits(cg, &g);
	int64_t lds_bytes = tma_choose(cg, &g, wgmma, (stage > red ? stage : red) * et_size(s));
	g.lds = cg_gpu_shared(cg, &g.grp, g.et, cdiv(lds_bytes, et_size(s)), "gemm_lds");
	g.t.wgmma = wgmma;
	/* a k-block's products in flight past the next barrier cost the copies one buffer */
	g.t.lag = g.t.wgmma && g.t.stages > GPU_COPY_STAGES;
	char out_note[48] = "";
	if (g.out_lds && g.t.ks == 1)
		snprintf(out_note, sizeof out_note, ", outputs through LDS");
	else if (t.tiles > 1)
		snprintf(out_note, sizeof out_note, ", %d tiles per work-group", t.tiles % 10000);
	if (g.t.wgmma) {
		char instr[160];
		int kib = (int)((a_span(&g) + b_span(&g)) * et_size(s) / 1024);
		const char *tma = g.tma[0] && g.tma[1] ? ", A and B by TMA" : g.tma[1] ? ", A by TMA" : g.tma[0] ? ", B by TMA" : "";
		snprintf(instr, sizeof instr, "wgmma m64n%dk%d %s%s, %d stages of %d KiB%s%s", wg_n(&g) % 1024,
			 (int)wg_k(&g) % 100, wg_type(&g), t.rows ? " on padded rows" : "", g.t.stages % 100, kib % 1024,
			 out_note, tma);
		cg_tuning_note_instr(cg, instr);
		LLVMSetAlignment(g.lds, WG_ALIGN);
	} else if (*out_note) {
		cg_tuning_note_instr(cg, "mma.sync, outputs through LDS");
	}
	if (g.t.half_math == GPU_HALF_PACKED) {
		char instr[64];
		const char *type = s->half == DT_BF16 ? "bf16" : "f16";
		snprintf(instr, sizeof instr, "packed %sx2 FMAs, sums of %d in %s", type, g.t.bk / g.t.ks % 1000, type);
		cg_tuning_note_instr(cg, instr);
	}
	g.acc = cg_gpu_private(cg, &g.grp, g.et, accs, "acc");
	g.staged = cg_gpu_private(cg, &g.grp, g.lt, staged_count(&g, true) + staged_count(&g, false), "staged");
	g.hold = simt_long_side(&g.t);
	if (g.hold)
		g.held = cg_gpu_private(cg, &g.grp, g.et, g.t.tm + g.t.tn, "held");
	if (g.mi && g.grp.emulated)
		model_tables(cg, &g);
	decode(cg, &g, wg);
	zero_acc(cg, &g);
	if (t.tiles > 1) {
		stream_tiles(cg, &g, wg, grid);
		cg_gpu_group_end(cg, &g.grp);
		return grid;
	}
	if (tma_any(&g))
		tma_init(cg, &g);
	kblocks(cg, &g);
	if (g.out_lds)
		reduce_tiles(cg, &g);
	else
		store_tiles(cg, &g);
	cg_gpu_group_end(cg, &g.grp);
	return grid;
}

/* The precision class of tiles t (codegen/tuning.h). */
static const char *class_of(const GemmSpec *s, const GpuTiles *t)
{
	if (t->mi) {
		static const char *const names[] = {[CG_MELEM_F32] = "mf32", [CG_MELEM_XF32] = "xf32",
						    [CG_MELEM_TF32] = "tf32", [CG_MELEM_F16] = "f16", [CG_MELEM_BF16] = "bf16"};
		return names[t->mi->elem];
	}
	if (t->half_math == GPU_HALF_DOT2)
		return "dot2";
	if (t->half_math == GPU_HALF_PACKED)
		return s->half == DT_BF16 ? "bf16x2" : "f16x2";
	/* half operands in f32 registers take other registers than float32 ones (their conversions
	 * differ too), so each type's keys are its own */
	return is_double(s) ? "f64" : s->half == DT_F16 ? "f16f32" : s->half == DT_BF16 ? "bf16f32" : "f32";
}

/* The tiles the GEMM takes (slices: the split-K slices asked for, 1: none): the heuristic's or
 * another candidate, as codegen/tuning.c chooses. */
static GpuTiles choose_tiles(Cg *cg, const GemmSpec *s, int slices)
{
	enum { MAX_CANDIDATES = 96 };
	GpuTiles cand[MAX_CANDIDATES];
	CgTileConfig cfg[MAX_CANDIDATES];
	GemmSpec one = slice_of(s, slices);
	const CgMatrixInstr *mi = mma_of(cg, s);
	int n = candidates(&one, mi, wide_tiles(cg), half_math_of(cg, s), copy_lds(cg, mi), unit_sms(cg), cand,
			   MAX_CANDIDATES);
	for (int i = 0; i < n; i++) {
		bool own = cand[i].mi || (cand[i].tm == reg_side(cand[i].bm) && cand[i].tn == reg_side(cand[i].bn));
		cfg[i] = (CgTileConfig){cand[i].bm, cand[i].bn, cand[i].bk, own ? 0 : cand[i].tm, own ? 0 : cand[i].tn,
					cand[i].rows, cand[i].rows_stages, cand[i].tiles};
	}
	CgTuneKey key;
	cg_gemm_tune_key(cg, s, class_of(s, &cand[0]), slices, &key);
	GpuTiles t = cand[cg_tuning_choose(cg, &key, cfg, n)];
	return slices > 1 ? sliced(s, slices, t) : t;
}

int64_t cg_gemm_gpu(Cg *cg, const GemmSpec *s) { return emit_tiles(cg, s, choose_tiles(cg, s, 1)); }

/* ---- split-K ---- */

/* The partials kernel's epilogue: b is slice * batch + b (decode), so the row-major index of
 * (b, m, n) is its place in the slice-major workspace. Row-major, as the tiles store (consecutive
 * work-items, consecutive n) and the sum kernel reads: the S-fold traffic coalesces, and only the
 * final stores follow the output's layout. */
static void split_store(Cg *cg, const GemmSpec *part, LLVMValueRef b, LLVMValueRef m, LLVMValueRef n, LLVMValueRef v)
{
	const GpuSplitK *sk = part->ctx;
	LLVMValueRef row = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, b, cg_i64(cg, part->m), ""), m, "");
	LLVMValueRef idx = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, row, cg_i64(cg, part->n), ""), n, "");
	LLVMValueRef store = LLVMBuildStore(cg->b, cg_convert(cg, v, cg->t_f32), cg_ws_ptr(cg, sk->anchor, idx));
	LLVMSetAlignment(store, 4);
}

/* The second kernel: work-item e adds output element e's partials in slice order, and the spec's
 * epilogue stores the sum. */
static int64_t split_sum(Cg *cg, const GemmSpec *s, const GpuSplitK *sk, int slices)
{
	int64_t total = s->batch * s->m * s->n, grid;
	GpuGroup grp;
	LLVMValueRef e = cg_gpu_elements_begin(cg, &grp, total, &grid);
	LLVMValueRef v = NULL;
	for (int i = 0; i < slices; i++) {
		LLVMValueRef idx = LLVMBuildAdd(cg->b, e, cg_i64(cg, (int64_t)i * total), "");
		LLVMValueRef p = LLVMBuildLoad2(cg->b, cg->t_f32, cg_ws_ptr(cg, sk->anchor, idx), "");
		LLVMSetAlignment(p, 4);
		v = v ? LLVMBuildFAdd(cg->b, v, p, "") : p;
	}
	LLVMValueRef row = LLVMBuildUDiv(cg->b, e, cg_i64(cg, s->n), "");
	LLVMValueRef b = LLVMBuildUDiv(cg->b, row, cg_i64(cg, s->m), "");
	LLVMValueRef m = LLVMBuildURem(cg->b, row, cg_i64(cg, s->m), "");
	s->epilogue(cg, s, b, m, LLVMBuildURem(cg->b, e, cg_i64(cg, s->n), ""), cg_convert(cg, v, s->type));
	cg_gpu_elements_end(cg, &grp);
	return grid;
}

GpuSplitK cg_gemm_gpu_split(const Cg *cg, const Node *anchor, const GemmSpec *s)
{
	bool paths = cg_is_gpu(cg) || (emulation && emulation_split_k);
	/* the workspace holds float32 partials of every output element */
	bool fits = anchor->ws_offset >= 0 && s->type == cg->t_f32 &&
		    s->batch * s->m * s->n == shape_numel(&anchor->shape);
	if (!paths || !fits)
		return (GpuSplitK){.slices = 1, .most = 1, .anchor = anchor};
	return (GpuSplitK){.slices = ir_split_k(cg->g, anchor), .most = ir_split_k_most(cg->g, anchor), .anchor = anchor};
}

/* t (split into sk's slices) with as many times more slices as its tile has outputs beyond
 * IR_SPLIT_TILE x IR_SPLIT_TILE, where the workspace holds them all: ir_split_k counts the
 * work-groups of those tiles, and a 128 x 256 tile makes half as many (vgg16 bf16's 56 x 56 x 256
 * weight gradient split 15 ways: 270 work-groups, two per SM on an H100's 132, a second wave of
 * 6). A part of the factor would make neither count: alexnet tf32's first dense layer (K 9216, 18
 * slices at most) took 288 work-groups of 128 x 256 for 256 and was 13% slower (H100, 2026-12-07). */
static GpuTiles widened(const GemmSpec *s, const GpuSplitK *sk, GpuTiles t)
{
	int64_t wide = (int64_t)t.bm * t.bn / (IR_SPLIT_TILE * IR_SPLIT_TILE), slices = (int64_t)sk->slices * wide;
	if (wide < 2 || t.slices < 2 || slices > sk->most)
		return t;
	return sliced(s, (int)slices, t);
}

int64_t cg_gemm_gpu_split_k(Cg *cg, const GemmSpec *s, const GpuSplitK *sk)
{
	GpuTiles t = widened(s, sk, choose_tiles(cg, s, sk->slices > 1 ? sk->slices : 1));
	if (t.slices < 2 || t.slices > sk->most)
		return emit_tiles(cg, s, choose_tiles(cg, s, 1));
	GemmSpec part = *s;
	part.epilogue = split_store;
	part.ctx = sk;
	int64_t grid = emit_tiles(cg, &part, t);
	cg_kernel_next(cg, grid, "sum");
	return split_sum(cg, s, sk, t.slices);
}
