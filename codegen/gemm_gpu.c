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
 * With TF32 or half operands on matrix units (mma_of) the same kernel, but the accumulate step is
 * mma.sync on warp tiles and the accumulators are in the instruction's C layout (see "the warp
 * tile" below).
 *
 * Split-K (S k-slices across work-groups) stores the outputs as float32 partials in the
 * workspace, slice-major, and a second kernel, one work-item per output element, sums the S
 * partials in slice order and runs the epilogue.
 *
 * Tile indices are i32 where every extent fits (they are zero-extended for the operand emitters,
 * so LLVM narrows the emitters' divisions by constants to 32 bits, which GPUs do natively). */
#include "codegen/gemm_gpu.h"
#include "codegen/cg_util.h"
#include "codegen/target.h"

enum {
	GPU_TILE = 128,         /* largest tile side (float32; float64 stops at GPU_SMALL_TILE) */
	GPU_SMALL_TILE = 64,    /* largest side of the 4 x 4 register tiles */
	GPU_MIN_TILE = 16,      /* smallest tile side */
	GPU_REG_TILE = 4,       /* register tile side of tiles up to GPU_SMALL_TILE */
	GPU_MAX_REG = 8,        /* register tile side of the GPU_TILE-wide tiles */
	GPU_WANT_GROUPS = 256,  /* shrink tiles until the grid has this many work-groups */
	GPU_STAGE_BYTES = 8192, /* LDS for one buffer of the A and B tiles; the k-block grows to fill it */
	GPU_NARROW_STAGE_BYTES = 4096, /* the same without the wide tiles: 4 work-groups of 64 x 64 tiles
					  (8.5 KiB of LDS each with the padding) fit AMD's 64 KiB per CU */
	GPU_WARP = 32,          /* lanes of one mma.sync */
	GPU_WAVES = 4,          /* waves per SIMD the widest tiles ask for (cg_gpu_waves) */
	GPU_MIN_KBLOCKS = 4,    /* AMD asks for GPU_WAVES only with more k-blocks than this (a loop) */
	GPU_WARPS = CG_GPU_BLOCK / GPU_WARP
};

/* ---- the work-group ---- */

static bool emulation, emulation_split_k, emulation_mma;

void cg_gpu_emulation(bool on) { emulation = on; }
void cg_gpu_emulation_split_k(bool on) { emulation_split_k = on; }
void cg_gpu_emulation_mma(bool on) { emulation_mma = on; }

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
	*grid = (total + CG_GPU_BLOCK - 1) / CG_GPU_BLOCK;
	LLVMValueRef wg = cg_gpu_group_begin(cg, g, CG_GPU_BLOCK);
	if (!g->emulated) {
		LLVMValueRef e = cg_global_id(cg);
		cg_gpu_if(cg, LLVMBuildICmp(cg->b, LLVMIntULT, e, cg_i64(cg, total), ""));
		return e;
	}
	LLVMValueRef tid = cg_gpu_phase_begin(cg, g);
	LLVMValueRef e = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, wg, cg_i64(cg, CG_GPU_BLOCK), ""), tid, "elem");
	LLVMValueRef in_range = LLVMBuildICmp(cg->b, LLVMIntULT, e, cg_i64(cg, total), "");
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

/* The warp tiles of an mma tile: the 8 warps 2 x 4 over the tile (128 x 128: 64 x 32, 64 x 64:
 * 32 x 16), at least one m16n8 fragment each; small tiles have fewer warps per slice and more
 * slices. 64 x 32 gives each warp 16 mma.sync per k8 for 16 A and 8 B fragment reads and 64
 * accumulators, as many as the 8 x 8 register tile it replaces, so the register budget and the
 * two resident work-groups stay. */
static void warp_tiles(GpuTiles *t, const CgMatrixInstr *mi)
{
	t->mi = mi;
	t->tm = t->tn = 0;
	t->wm = t->bm / 2 > 16 ? t->bm / 2 : 16;
	t->wn = t->bn / 4 > 8 ? t->bn / 4 : 8;
	t->ks = GPU_WARPS / ((t->bm / t->wm) * (t->bn / t->wn));
}

/* The bytes of one operand element in LDS: tf32 and SIMT tiles keep the compute type, half
 * operands their own. */
static int64_t lds_esize(const GemmSpec *s, const CgMatrixInstr *mi)
{
	return mi && mi->elem != CG_MELEM_TF32 ? 2 : is_double(s) ? 8 : 4;
}

static GpuTiles tiles(const GemmSpec *s, const CgMatrixInstr *mi, bool wide)
{
	GpuTiles t = {.block = CG_GPU_BLOCK, .wide = wide};
	small_tile(s, &t);
	wide_tile(s, &t);
	if (mi) {
		warp_tiles(&t, mi);
	} else {
		t.tm = reg_side(t.bm);
		t.tn = reg_side(t.bn);
		t.ks = t.block / ((t.bm / t.tm) * (t.bn / t.tn));
	}
	/* the k-block fills the LDS budget (fewer barriers, more loads in flight) but stays within
	 * K rounded up to a power of two and gives every slice at least 4 steps (mma: one instruction's k) */
	t.bk = (mi ? mi->k : 4) * t.ks;
	int64_t esize = lds_esize(s, mi);
	int64_t budget = wide ? GPU_STAGE_BYTES : GPU_NARROW_STAGE_BYTES;
	while ((t.bm + t.bn) * t.bk * 2 * esize <= budget && t.bk < s->k)
		t.bk *= 2;
	t.nmb = cdiv(s->m, t.bm);
	t.nnb = cdiv(s->n, t.bn);
	t.slices = 1;
	t.kslice = s->k;
	return t;
}

GpuTiles cg_gemm_gpu_tiles(const GemmSpec *s, bool wide) { return tiles(s, NULL, wide); }

static GpuTiles split_tiles(const GemmSpec *s, int slices, const CgMatrixInstr *mi, bool wide)
{
	/* the tiles of one slice's problem, with the slices counted as work-groups */
	GemmSpec one = *s;
	one.batch = s->batch * slices;
	one.k = cdiv(s->k, slices);
	GpuTiles t = tiles(&one, mi, wide);
	/* whole k-blocks per slice; rounding up may leave fewer slices */
	t.kslice = cdiv(one.k, t.bk) * t.bk;
	t.slices = (int)cdiv(s->k, t.kslice);
	return t;
}

GpuTiles cg_gemm_gpu_split_tiles(const GemmSpec *s, int slices, bool wide) { return split_tiles(s, slices, NULL, wide); }

/* Whether the target takes the 128-wide tiles (emulated: as NVIDIA does). */
static bool wide_tiles(const Cg *cg) { return !cg_is_gpu(cg) || cg->target->ops->gemm_wide_tiles; }

/* Whether fn(lane, slot) is additive in the lane's bits for every slot: fn(0, slot) plus, per
 * set bit b of the lane, fn(1 << b, slot) - fn(0, slot). frag_at relies on it. */
static bool additive(const CgMatrixInstr *mi, CgMatrixIndexFn fn, int slots)
{
	for (int slot = 0; slot < slots; slot++) {
		CgMatrixCoord base = fn(mi, 0, slot);
		for (int l = 0; l < mi->wave; l++) {
			CgMatrixCoord want = fn(mi, l, slot), got = base;
			for (int bit = 0; (1 << bit) < mi->wave; bit++)
				if (l >> bit & 1) {
					CgMatrixCoord d = fn(mi, 1 << bit, slot);
					got.row += d.row - base.row;
					got.col += d.col - base.col;
				}
			if (got.row != want.row || got.col != want.col)
				return false;
		}
	}
	return true;
}

/* Whether every register of a half operand holds two elements along k, the lower (even) k in its
 * low half: slot 2q + 1 is slot 2q one k further. load_frag reads each register as one 32-bit
 * word of the k-pair layout of LDS. */
static bool pairs_along_k(const CgMatrixInstr *mi, CgMatrixIndexFn fn, int slots, bool is_a)
{
	for (int l = 0; l < mi->wave; l++)
		for (int q = 0; q < slots; q += 2) {
			CgMatrixCoord lo = fn(mi, l, q), hi = fn(mi, l, q + 1);
			int klo = is_a ? lo.col : lo.row, khi = is_a ? hi.col : hi.row;
			int mlo = is_a ? lo.row : lo.col, mhi = is_a ? hi.row : hi.col;
			if (klo % 2 || khi != klo + 1 || mhi != mlo)
				return false;
		}
	return true;
}

/* The row `name`, checked once per GEMM against what this file assumes of it: 32-bit registers of
 * A and B (tf32 bits, or pairs of halves along k), layouts additive in the lane's bits. */
static const CgMatrixInstr *mma_instr(const char *name)
{
	const CgMatrixInstr *mi = cg_matrix_instr_find(CG_MATRIX_MMA, name, GPU_WARP);
	bool half = mi && mi->elem != CG_MELEM_TF32;
	if (!mi || (half && (!pairs_along_k(mi, mi->a_at, mi->a_per_lane, true) ||
			     !pairs_along_k(mi, mi->b_at, mi->b_per_lane, false))))
		CG_FAIL("the %s row is not as gemm_gpu.c expects", name);
	if (!additive(mi, mi->a_at, mi->a_per_lane) || !additive(mi, mi->b_at, mi->b_per_lane) ||
	    !additive(mi, mi->c_at, mi->c_per_lane))
		CG_FAIL("the layout of %s is not additive in the lane's bits", mi->name);
	return mi;
}

/* The mma.sync a float32 GEMM takes, or NULL for the SIMT register tiles: the half operands' (a
 * spec of --precision fp16 or bf16), or TF32 (--precision tf32), on a target with the unit or under
 * emulation that asks for it. */
static const CgMatrixInstr *mma_of(const Cg *cg, const GemmSpec *s)
{
	if (s->type != cg->t_f32)
		return NULL;
	if (cg_is_gpu(cg) ? !(cg->target->matrix & CG_MATRIX_MMA) : !(emulation && emulation_mma))
		return NULL;
	if (s->half == DT_BF16)
		return mma_instr("mma.m16n8k16.bf16");
	if (s->half == DT_F16)
		return mma_instr("mma.m16n8k16.f16");
	return s->tf32 ? mma_instr("mma.m16n8k8.tf32") : NULL;
}

/* ---- emission state ---- */

typedef struct {
	const GemmSpec *s;
	GpuTiles t;
	const CgMatrixInstr *mi;     /* mma: the instruction; NULL: register tiles */
	GpuGroup grp;
	LLVMTypeRef et, it;          /* compute type; index type (i32 where it fits) */
	LLVMTypeRef ht;              /* half operands: their type in LDS (f16, bf16); else NULL */
	LLVMValueRef lds;            /* two buffers of A tile [bk][lda], B tile [bk][ldb]; then slice partials */
	LLVMValueRef as, bs;         /* the k-block's buffer */
	int64_t lda, ldb;            /* row pitches in elements of et (half: in 32-bit words of k-pairs) */
	int64_t krows;               /* rows of a buffer: bk (half: bk / 2 rows of k-pairs) */
	GpuPrivate acc;              /* TM x TN accumulators per work-item (mma: its C slots) */
	GpuPrivate staged;           /* its share of the next k-block's A and B tiles */
	LLVMValueRef b, m0, n0;      /* this work-group's batch and tile origin (index type) */
	LLVMValueRef eb;             /* the batch the epilogue sees: split-K's slice * batch + b */
	LLVMValueRef kbase, kend;    /* the work-group's k range: kbase NULL is 0 */
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

/* Where operand element (k, r) of the tile at base lies: [k][ld] elements of the compute type, or
 * for half operands [k / 2][ld] 32-bit words, each the k-pair (2k', 2k' + 1) of row r, the even
 * k in the low half: the register an mma.sync fragment holds (pairs_along_k). */
static LLVMValueRef lds_elem(Cg *cg, GpuGemm *g, LLVMValueRef base, LLVMValueRef k, LLVMValueRef r, int64_t ld)
{
	if (!g->ht)
		return lds_at(cg, g, base, add(cg, mulc(cg, g, k, ld), r));
	LLVMValueRef word = add(cg, mulc(cg, g, LLVMBuildLShr(cg->b, k, ci(g, 1), ""), ld), r);
	LLVMValueRef idx = add(cg, mulc(cg, g, word, 2), LLVMBuildAnd(cg->b, k, ci(g, 1), ""));
	return LLVMBuildGEP2(cg->b, g->ht, base, &idx, 1, "");
}

/* A half operand element of LDS as the compute type. */
static LLVMValueRef load_elem(Cg *cg, GpuGemm *g, LLVMValueRef at)
{
	if (!g->ht)
		return LLVMBuildLoad2(cg->b, g->et, at, "");
	return LLVMBuildFPExt(cg->b, LLVMBuildLoad2(cg->b, g->ht, at, ""), g->et, "");
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
 * the low 13 bits (truncation, biased towards zero). Emulated: the same rounding on the bits,
 * NaN kept. */
static LLVMValueRef round_tf32(Cg *cg, GpuGemm *g, LLVMValueRef v)
{
	if (!g->grp.emulated) {
		LLVMValueRef bits = cg_intrinsic_call(cg, "llvm.nvvm.f2tf32.rna", &v, 1);
		return LLVMBuildBitCast(cg->b, bits, g->et, "");
	}
	LLVMValueRef bits = LLVMBuildBitCast(cg->b, v, cg->t_i32, "");
	bits = LLVMBuildAnd(cg->b, LLVMBuildAdd(cg->b, bits, cg_i32(cg, 0x1000), ""), cg_i32(cg, (int32_t)0xffffe000u), "");
	LLVMValueRef nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, v, v, "");
	return LLVMBuildSelect(cg->b, nan, v, LLVMBuildBitCast(cg->b, bits, g->et, ""), "tf32");
}

/* Elements per staged run of an operand: its aligned runs (GemmOperand.runs, up to 16 bytes) where
 * the tile's extent along the operand's contiguous index is a whole number of them; 1 (element by
 * element) without. Only with the wide tiles' register budget (NVIDIA, emulation): on AMD's
 * 64-VGPR budget at 4 waves the runs' registers made split-K kernels spill (alexnet's dense
 * layers on gfx906: 8 VGPRs), and no AMD GPU is at hand to measure whether they pay there. */
static int run_lanes(const GpuGemm *g, bool is_a)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	int64_t along = op->along_k ? g->t.bk : is_a ? g->t.bm : g->t.bn;
	int lanes = op->run && g->t.wide ? op->runs : 1;
	while (lanes > 1 && along % lanes)
		lanes /= 2;
	return lanes > 1 ? lanes : 1;
}

/* Runs of one tile per work-item (the last round may leave work-items idle). */
static int64_t rounds(const GpuGemm *g, bool is_a)
{
	return cdiv((is_a ? g->t.bm : g->t.bn) * g->t.bk / run_lanes(g, is_a), g->t.block);
}

static int64_t staged_count(const GpuGemm *g, bool is_a) { return rounds(g, is_a) * run_lanes(g, is_a); }

/* Loads run (r, k) of the operand at k-block k0 into regs: one aligned vector load where all of it
 * lies inside the operand and the work-group's k range, else element by element with zeros
 * outside. */
/* The run's elements at (row, kk) one by one, zero outside the operand and the k range. */
static void load_elems(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef row, LLVMValueRef kk, int lanes, LLVMValueRef *regs)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	int64_t extent = is_a ? g->s->m : g->s->n;
	for (int l = 0; l < lanes; l++) {
		LLVMValueRef rl = op->along_k || !l ? row : add(cg, row, ci(g, l)), kl = op->along_k && l ? add(cg, kk, ci(g, l)) : kk;
		LLVMValueRef in_k = LLVMBuildICmp(cg->b, LLVMIntULT, kl, g->kend, "");
		LLVMBuildStore(cg->b, operand(cg, g, is_a, rl, kl, ltc(cg, g, rl, extent), in_k), regs[l]);
	}
}

static void load_run(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef r, LLVMValueRef k, LLVMValueRef k0, int lanes,
		     LLVMValueRef *regs)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	int64_t extent = is_a ? g->s->m : g->s->n;
	LLVMValueRef row = add(cg, is_a ? g->m0 : g->n0, r), kk = add(cg, k0, k);
	if (g->kbase)
		kk = add(cg, g->kbase, kk);
	if (lanes == 1) {
		load_elems(cg, g, is_a, row, kk, 1, regs);
		return;
	}
	LLVMValueRef last_row = op->along_k ? row : add(cg, row, ci(g, lanes - 1));
	LLVMValueRef last_k = op->along_k ? add(cg, kk, ci(g, lanes - 1)) : kk;
	LLVMValueRef whole = LLVMBuildAnd(cg->b, ltc(cg, g, last_row, extent),
					  LLVMBuildICmp(cg->b, LLVMIntULT, last_k, g->kend, ""), "");
	LLVMBasicBlockRef vec = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "run");
	LLVMBasicBlockRef elems = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "run_elems");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "run_done");
	LLVMBuildCondBr(cg->b, whole, vec, elems);
	LLVMPositionBuilderAtEnd(cg->b, vec);
	LLVMValueRef bb = to_i64(cg, g, g->b), mn = to_i64(cg, g, row), k64 = to_i64(cg, g, kk);
	LLVMValueRef v = is_a ? op->run(cg, op, bb, mn, k64, lanes) : op->run(cg, op, bb, k64, mn, lanes);
	for (int l = 0; l < lanes; l++)
		LLVMBuildStore(cg->b, LLVMBuildExtractElement(cg->b, v, cg_i32(cg, l), ""), regs[l]);
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, elems);
	load_elems(cg, g, is_a, row, kk, lanes, regs);
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, done);
}

/* Stores run (r, k) from regs into the LDS tile: tf32-rounded or converted to the half type. */
static void store_run(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef r, LLVMValueRef k, int lanes, LLVMValueRef *regs)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	for (int l = 0; l < lanes; l++) {
		LLVMValueRef v = LLVMBuildLoad2(cg->b, g->et, regs[l], "");
		if (g->ht)
			v = LLVMBuildFPTrunc(cg->b, v, g->ht, "");
		else if (g->mi)
			v = round_tf32(cg, g, v);
		LLVMValueRef rl = op->along_k || !l ? r : add(cg, r, ci(g, l)), kl = op->along_k && l ? add(cg, k, ci(g, l)) : k;
		LLVMBuildStore(cg->b, v, lds_elem(cg, g, is_a ? g->as : g->bs, kl, rl, is_a ? g->lda : g->ldb));
	}
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

/* Work-item tid's share of one tile, rows x bk (rows along M for A, N for B): loaded from the
 * operand at k-block k0 into its staging registers, or (k0 NULL) from them into the LDS tile. Run
 * e = tid + i*block (run_lanes elements along the operand's contiguous index: k when the operand
 * runs along k, else the rows) so that neighbouring work-items read neighbouring addresses. Warp
 * by warp (warp_major) the 32 lanes of a warp take 32 neighbouring rows of one k, and a lane stays
 * at that k for rows/32 rounds: what an element costs per k (a window's tap entry) is paid once
 * for those rounds. */
static void stage(Cg *cg, GpuGemm *g, bool is_a, LLVMValueRef tid64, LLVMValueRef k0)
{
	const GemmOperand *op = is_a ? &g->s->a : &g->s->b;
	int lanes = run_lanes(g, is_a);
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
		for (int l = 0; l < lanes; l++)
			regs[l] = cg_gpu_private_at(cg, &g->grp, &g->staged, tid64, reg0 + i * lanes + l);
		if (k0)
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
} Place;

static Place warp_place_of(Cg *cg, GpuGemm *g, LLVMValueRef tid);

static Place place_of(Cg *cg, GpuGemm *g, LLVMValueRef tid)
{
	if (g->mi)
		return warp_place_of(cg, g, tid);
	int64_t nx = g->t.bn / g->t.tn, ny = g->t.bm / g->t.tm, per_slice = nx * ny;
	LLVMValueRef r = remc(cg, g, tid, per_slice);
	Place p = {.slice = divc(cg, g, tid, per_slice), .ty = divc(cg, g, r, nx), .tx = remc(cg, g, r, nx)};
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
	int64_t stride = (int64_t)side / (reg / GPU_REG_TILE);
	return add(cg, mulc(cg, g, t, GPU_REG_TILE), ci(g, (i / GPU_REG_TILE) * stride + i % GPU_REG_TILE));
}

static LLVMValueRef row_at(Cg *cg, GpuGemm *g, const Place *p, int i) { return tile_at(cg, g, p->ty, g->t.bm, g->t.tm, i); }
static LLVMValueRef col_at(Cg *cg, GpuGemm *g, const Place *p, int j) { return tile_at(cg, g, p->tx, g->t.bn, g->t.tn, j); }

static LLVMValueRef acc_at(Cg *cg, GpuGemm *g, LLVMValueRef tid64, int i, int j)
{
	return cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, (int64_t)i * g->t.tn + j);
}

/* GPU_REG_TILE consecutive LDS elements from idx (a multiple of 4) as scalars. */
static void lds_quad(Cg *cg, GpuGemm *g, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef *out)
{
	LLVMTypeRef vt = LLVMVectorType(g->et, GPU_REG_TILE);
	LLVMValueRef v = LLVMBuildLoad2(cg->b, vt, lds_at(cg, g, base, idx), "");
	/* the arrays are 16-byte aligned, the row pitches and idx multiples of 4 */
	LLVMSetAlignment(v, 16);
	for (int l = 0; l < GPU_REG_TILE; l++)
		out[l] = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, l), "");
}

/* The register tile's rows (columns) at LDS row k: side `side`, register side `reg`. */
static void lds_frag(Cg *cg, GpuGemm *g, LLVMValueRef base, LLVMValueRef krow, LLVMValueRef t, int side, int reg,
		     LLVMValueRef *out)
{
	for (int q = 0; q < reg; q += GPU_REG_TILE)
		lds_quad(cg, g, base, add(cg, krow, tile_at(cg, g, t, side, reg, q)), out + q);
}

/* acc[i][j] += sum over this slice's k of As[k][row i] * Bs[k][column j]. */
static void accumulate_simt(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	int tm = g->t.tm, tn = g->t.tn;
	int64_t steps = g->t.bk / g->t.ks;
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	LLVMValueRef acc[GPU_MAX_REG * GPU_MAX_REG];
	for (int i = 0; i < tm; i++)
		for (int j = 0; j < tn; j++)
			acc[i * tn + j] = LLVMBuildLoad2(cg->b, g->et, acc_at(cg, g, tid64, i, j), "");
	/* unrolled: the accumulators stay values, no memory between the steps */
	for (int64_t s = 0; s < steps; s++) {
		LLVMValueRef k = add(cg, mulc(cg, g, p.slice, steps), ci(g, s));
		LLVMValueRef a[GPU_MAX_REG], b[GPU_MAX_REG];
		lds_frag(cg, g, g->as, mulc(cg, g, k, g->lda), p.ty, g->t.bm, tm, a);
		lds_frag(cg, g, g->bs, mulc(cg, g, k, g->ldb), p.tx, g->t.bn, tn, b);
		for (int i = 0; i < tm; i++)
			for (int j = 0; j < tn; j++) {
				LLVMValueRef args[3] = {a[i], b[j], acc[i * tn + j]};
				acc[i * tn + j] = cg_intrinsic(cg, "fmuladd", g->et, args, 3);
			}
	}
	for (int i = 0; i < tm; i++)
		for (int j = 0; j < tn; j++)
			LLVMBuildStore(cg->b, acc[i * tn + j], acc_at(cg, g, tid64, i, j));
}

/* ---- the warp tile (mma.sync) ----
 *
 * Warp w of the work-group is slice w / P of P = (BM/WM) x (BN/WN) warps, which sit row-major
 * over the tile; its WM x WN warp tile is (WM/16) x (WN/8) fragments of m16n8. A work-item's
 * accumulators are the C slots of each fragment in turn: slot q of fragment (i, j) is
 * acc[(i * WN/8 + j) * 4 + q], at row 16 i + c_at(lane, q).row, column 8 j + c_at(lane, q).col of
 * the warp tile. Per k step a warp reads its A fragments (a_at) and B fragments (b_at) from LDS,
 * which lays A out as [k][m] and B as [k][n] (half: [k/2][m] and [k/2][n] words of k-pairs). A
 * register of a fragment is the word at row threadID_in_group (0..3) and column groupID (0..7)
 * plus constants, so rows padded by 8 words (MMA_PAD: k advances 8 banks) put the 32 lanes on 32
 * banks. */

static Place warp_place_of(Cg *cg, GpuGemm *g, LLVMValueRef tid)
{
	int64_t nx = g->t.bn / g->t.wn, per_slice = nx * (g->t.bm / g->t.wm);
	LLVMValueRef w = divc(cg, g, tid, GPU_WARP), r = remc(cg, g, w, per_slice);
	return (Place){.slice = divc(cg, g, w, per_slice), .ty = divc(cg, g, r, nx), .tx = remc(cg, g, r, nx),
		       .lane = remc(cg, g, tid, GPU_WARP)};
}

/* fn(lane, slot) for a lane known at run time. The layouts are additive in the lane's bits
 * (groupID and threadID_in_group are bit fields of the lane; mma_instr checked it), so the
 * coordinate is fn(0, slot) plus, per set bit b, fn(1 << b, slot) - fn(0, slot). */
static void frag_at(Cg *cg, GpuGemm *g, CgMatrixIndexFn fn, LLVMValueRef lane, int slot, LLVMValueRef *row,
		    LLVMValueRef *col)
{
	const CgMatrixInstr *mi = g->mi;
	CgMatrixCoord base = fn(mi, 0, slot);
	*row = ci(g, base.row);
	*col = ci(g, base.col);
	for (int bit = 0; (1 << bit) < mi->wave; bit++) {
		CgMatrixCoord d = fn(mi, 1 << bit, slot);
		LLVMValueRef on = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, lane, ci(g, bit), ""), ci(g, 1), "");
		if (d.row != base.row)
			*row = add(cg, *row, mulc(cg, g, on, d.row - base.row));
		if (d.col != base.col)
			*col = add(cg, *col, mulc(cg, g, on, d.col - base.col));
	}
}

static int frags_n(const GpuGemm *g) { return g->t.wn / g->mi->n; }

/* Row and column in the work-group tile of accumulator idx of the work-item at p. */
static void mma_acc_at(Cg *cg, GpuGemm *g, const Place *p, int64_t idx, LLVMValueRef *row, LLVMValueRef *col)
{
	const CgMatrixInstr *mi = g->mi;
	int64_t frag = idx / mi->c_per_lane, i = frag / frags_n(g), j = frag % frags_n(g);
	frag_at(cg, g, mi->c_at, p->lane, (int)(idx % mi->c_per_lane), row, col);
	*row = add(cg, *row, add(cg, mulc(cg, g, p->ty, g->t.wm), ci(g, i * mi->m)));
	*col = add(cg, *col, add(cg, mulc(cg, g, p->tx, g->t.wn), ci(g, j * mi->n)));
}

/* The fragment of A (rows m0..m0+15) or B (columns n0..n0+7) at k0, as the intrinsic's arguments:
 * one 32-bit LDS word per register (the tf32 bits the staging rounded, or a k-pair of halves). */
static void load_frag(Cg *cg, GpuGemm *g, bool is_a, const Place *p, LLVMValueRef k0, LLVMValueRef mn0,
		      LLVMValueRef *out)
{
	const CgMatrixInstr *mi = g->mi;
	const CgMatrixArgType *ty = is_a ? &mi->a_type : &mi->b_type;
	int slots = is_a ? mi->a_per_lane : mi->b_per_lane, per_reg = slots / ty->args;
	for (int q = 0; q < ty->args; q++) {
		LLVMValueRef r, c;
		frag_at(cg, g, is_a ? mi->a_at : mi->b_at, p->lane, q * per_reg, &r, &c);
		/* A's (m, k), B's (k, n) */
		LLVMValueRef k = add(cg, k0, is_a ? c : r), mn = add(cg, mn0, is_a ? r : c);
		LLVMValueRef at = lds_elem(cg, g, is_a ? g->as : g->bs, k, mn, is_a ? g->lda : g->ldb);
		LLVMValueRef v = LLVMBuildLoad2(cg->b, cg->t_i32, at, "");
		LLVMSetAlignment(v, 4);
		if (ty->scalar == CG_MSCALAR_F16)
			v = LLVMBuildBitCast(cg->b, v, LLVMVectorType(cg->t_f16, (unsigned)ty->vector), "");
		out[q] = v;
	}
}

/* acc += A[m0.., k0..k0+7] B[k0..k0+7, n0..] for fragment (i, j) by one mma.sync. */
static void mma_step(Cg *cg, GpuGemm *g, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *acc)
{
	const CgMatrixInstr *mi = g->mi;
	LLVMValueRef args[16];
	int n = 0;
	for (int q = 0; q < mi->a_type.args; q++)
		args[n++] = a[q];
	for (int q = 0; q < mi->b_type.args; q++)
		args[n++] = b[q];
	for (int q = 0; q < mi->c_per_lane; q++)
		args[n++] = acc[q];
	LLVMValueRef d = cg_intrinsic_call(cg, mi->intrinsic, args, n);
	for (int q = 0; q < mi->c_per_lane; q++)
		acc[q] = LLVMBuildExtractValue(cg->b, d, (unsigned)q, "");
}

/* Emulated: each C slot the work-item owns, summed over the k8 step from the LDS tiles. */
static void mma_step_emulated(Cg *cg, GpuGemm *g, const Place *p, LLVMValueRef k0, int64_t frag, LLVMValueRef *acc)
{
	const CgMatrixInstr *mi = g->mi;
	for (int q = 0; q < mi->c_per_lane; q++) {
		LLVMValueRef r, c;
		mma_acc_at(cg, g, p, frag * mi->c_per_lane + q, &r, &c);
		for (int kk = 0; kk < mi->k; kk++) {
			LLVMValueRef k = add(cg, k0, ci(g, kk));
			LLVMValueRef args[3] = {load_elem(cg, g, lds_elem(cg, g, g->as, k, r, g->lda)),
						load_elem(cg, g, lds_elem(cg, g, g->bs, k, c, g->ldb)), acc[q]};
			acc[q] = cg_intrinsic(cg, "fmuladd", g->et, args, 3);
		}
	}
}

enum { MMA_MAX_ACC = 64, MMA_MAX_FRAGS = 8, MMA_PAD = 8 };

/* The warp's accumulators += its slice of the k-block, k8 by k8. */
static void accumulate_mma(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	const CgMatrixInstr *mi = g->mi;
	int fm = g->t.wm / mi->m, fn = frags_n(g);
	int64_t per_slice = g->t.bk / g->t.ks, count = g->acc.count;
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	LLVMValueRef acc[MMA_MAX_ACC];
	for (int64_t q = 0; q < count; q++)
		acc[q] = LLVMBuildLoad2(cg->b, g->et, cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q), "");
	LLVMValueRef m0 = mulc(cg, g, p.ty, g->t.wm), n0 = mulc(cg, g, p.tx, g->t.wn);
	/* unrolled, as the register tiles: the accumulators stay values */
	for (int64_t s = 0; s < per_slice / mi->k; s++) {
		LLVMValueRef k0 = add(cg, mulc(cg, g, p.slice, per_slice), ci(g, s * mi->k));
		if (g->grp.emulated) {
			for (int64_t f = 0; f < (int64_t)fm * fn; f++)
				mma_step_emulated(cg, g, &p, k0, f, acc + f * mi->c_per_lane);
			continue;
		}
		LLVMValueRef a[MMA_MAX_FRAGS][4], b[MMA_MAX_FRAGS][2];
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

static void accumulate(Cg *cg, GpuGemm *g, LLVMValueRef tid64)
{
	if (g->mi)
		accumulate_mma(cg, g, tid64);
	else
		accumulate_simt(cg, g, tid64);
}

/* Row and column in the tile of the work-item at p's accumulator idx. */
static void acc_place(Cg *cg, GpuGemm *g, const Place *p, int64_t idx, LLVMValueRef *row, LLVMValueRef *col)
{
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
	LLVMValueRef m = add(cg, g->m0, r), n = add(cg, g->n0, c);
	LLVMValueRef ok = LLVMBuildAnd(cg->b, ltc(cg, g, m, g->s->m), ltc(cg, g, n, g->s->n), "");
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

/* Whether the epilogue goes through LDS (store_warp_rows): mma's accumulator layout gives a
 * store instruction a few words of each of 8 rows (a quarter of each 32-byte sector used for
 * half outputs, half of it for f32), so where the output's n is contiguous the tile goes out a
 * band of warp rows at a time, consecutive work-items on consecutive n; only where one band fits
 * the staging LDS, which the tile no longer needs. */
static bool stores_through_lds(const GpuGemm *g, int64_t stage)
{
	return g->mi && g->t.ks == 1 && g->s->out_n_unit && (int64_t)g->t.wm * (g->t.bn + MMA_PAD) <= stage;
}

/* The tile through LDS, a band of wm rows (one row of warp tiles) at a time: its warps store
 * their accumulators, then every work-item stores band elements, consecutive ones on consecutive
 * n. Rows are padded by MMA_PAD words (the accumulators' 8 rows of a store fall on 8 banks). */
static void store_warp_rows(Cg *cg, GpuGemm *g)
{
	int64_t pitch = g->t.bn + MMA_PAD, band = (int64_t)g->t.wm * g->t.bn, bands = g->t.bm / g->t.wm;
	/* the staging buffers, which the last k-block may still be reading */
	if (!g->grp.emulated)
		cg_barrier(cg);
	for (int64_t w = 0; w < bands; w++) {
		LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
		Place p = place_of(cg, g, to_it(cg, g, tid64));
		LLVMBasicBlockRef mine = begin_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, p.ty, ci(g, w), ""));
		for (int64_t q = 0; q < g->acc.count; q++) {
			LLVMValueRef r, c;
			acc_place(cg, g, &p, q, &r, &c);
			LLVMValueRef at = add(cg, mulc(cg, g, LLVMBuildNUWSub(cg->b, r, ci(g, w * g->t.wm), ""), pitch), c);
			LLVMValueRef v = LLVMBuildLoad2(cg->b, g->et, cg_gpu_private_at(cg, &g->grp, &g->acc, tid64, q), "");
			LLVMBuildStore(cg->b, v, lds_at(cg, g, g->lds, at));
		}
		end_if(cg, mine);
		cg_gpu_phase_end(cg, &g->grp, true);

		tid64 = cg_gpu_phase_begin(cg, &g->grp);
		LLVMValueRef tid = to_it(cg, g, tid64);
		for (int64_t q = 0; q < cdiv(band, g->t.block); q++) {
			LLVMValueRef e = add(cg, tid, ci(g, q * g->t.block));
			LLVMBasicBlockRef done = (q + 1) * g->t.block > band ? begin_if(cg, ltc(cg, g, e, band)) : NULL;
			LLVMValueRef r = divc(cg, g, e, g->t.bn), c = remc(cg, g, e, g->t.bn);
			LLVMValueRef v = LLVMBuildLoad2(cg->b, g->et, lds_at(cg, g, g->lds, add(cg, mulc(cg, g, r, pitch), c)), "");
			store_c(cg, g, add(cg, r, ci(g, w * g->t.wm)), c, v);
			if (done)
				end_if(cg, done);
		}
		/* the next band's stores wait until this one is read */
		cg_gpu_phase_end(cg, &g->grp, w + 1 < bands);
	}
}

/* Several slices: partial tiles to LDS, then each work-item sums some outputs in slice order. */
static void reduce_tiles(Cg *cg, GpuGemm *g)
{
	int64_t tile = (int64_t)g->t.bm * g->t.bn;
	/* the partials overwrite the LDS buffers, which the last k-block may still be reading */
	if (!g->grp.emulated)
		cg_barrier(cg);
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	Place p = place_of(cg, g, to_it(cg, g, tid64));
	LLVMValueRef base = mulc(cg, g, p.slice, tile);
	for (int64_t q = 0; q < g->acc.count; q++) {
		LLVMValueRef r, c;
		acc_place(cg, g, &p, q, &r, &c);
		LLVMValueRef at = add(cg, base, add(cg, mulc(cg, g, r, g->t.bn), c));
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
		LLVMValueRef v = LLVMBuildLoad2(cg->b, g->et, lds_at(cg, g, g->lds, e), "");
		for (int s = 1; s < g->t.ks; s++)
			v = LLVMBuildFAdd(cg->b, v, LLVMBuildLoad2(cg->b, g->et, lds_at(cg, g, g->lds, add(cg, e, ci(g, s * tile))), ""), "");
		store_c(cg, g, divc(cg, g, e, g->t.bn), remc(cg, g, e, g->t.bn), v);
		if (done)
			end_if(cg, done);
	}
	cg_gpu_phase_end(cg, &g->grp, false);
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

static void load_block(Cg *cg, GpuGemm *g, LLVMValueRef tid64, LLVMValueRef k0)
{
	stage(cg, g, true, tid64, k0);
	stage(cg, g, false, tid64, k0);
}

/* Points as and bs at LDS buffer kb % 2. */
static void pick_buffer(Cg *cg, GpuGemm *g, LLVMValueRef kb)
{
	LLVMValueRef off = mulc(cg, g, LLVMBuildAnd(cg->b, kb, ci(g, 1), ""), g->krows * (g->lda + g->ldb));
	g->as = lds_at(cg, g, g->lds, off);
	g->bs = lds_at(cg, g, g->as, ci(g, g->krows * g->lda));
}

/* Software-pipelined: the loads of k-block kb+1 are in flight while kb is accumulated (past K
 * they are zeros, as the emitters are asked for in-range elements only). Double-buffered LDS:
 * block kb is stored into buffer kb % 2 while stragglers may still read block kb-1 from the
 * other, so one barrier per k-block suffices; the barrier of block kb+1 comes after everyone's
 * reads of kb, before anyone stores kb+2 over it. */
static void kblocks(Cg *cg, GpuGemm *g)
{
	int64_t nkb = cdiv(g->t.kslice, g->t.bk);
	LLVMValueRef tid64 = cg_gpu_phase_begin(cg, &g->grp);
	load_block(cg, g, tid64, ci(g, 0));
	cg_gpu_phase_end(cg, &g->grp, false);
	CgLoop kb = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, nkb), "kb");
	LLVMValueRef kbi = to_it(cg, g, kb.i);
	pick_buffer(cg, g, kbi);
	tid64 = cg_gpu_phase_begin(cg, &g->grp);
	load_block(cg, g, tid64, NULL);
	cg_gpu_phase_end(cg, &g->grp, true);
	tid64 = cg_gpu_phase_begin(cg, &g->grp);
	load_block(cg, g, tid64, mulc(cg, g, add(cg, kbi, ci(g, 1)), g->t.bk));
	accumulate(cg, g, tid64);
	cg_gpu_phase_end(cg, &g->grp, false);
	cg_for_end(cg, &kb);
}

/* The kernel of tiles t (every k-slice's when t.slices > 1); returns its grid. */
static int64_t emit_tiles(Cg *cg, const GemmSpec *s, GpuTiles t)
{
	GpuGemm g = {.s = s, .t = t, .et = s->type, .mi = t.mi};
	if (g.mi && g.mi->elem != CG_MELEM_TF32)
		g.ht = g.mi->elem == CG_MELEM_BF16 ? cg->t_bf16 : cg->t_f16;
	g.krows = g.ht ? t.bk / 2 : t.bk;
	int64_t grid = (int64_t)t.slices * s->batch * g.t.nmb * g.t.nnb;
	/* every index of the kernel, padded tiles included, fits i32 or all is i64 */
	bool narrow = s->m + g.t.bm < INT32_MAX && s->n + g.t.bn < INT32_MAX && s->k + 2 * g.t.bk < INT32_MAX &&
		      (int64_t)t.slices * t.kslice + 2 * g.t.bk < INT32_MAX && grid < INT32_MAX;
	g.it = narrow ? cg->t_i32 : cg->t_i64;
	/* rows padded by 4 keep the vector reads aligned and spread the column-wise stores over banks;
	 * by 8 the fragment reads of mma.sync (see "the warp tile") */
	int pad = g.mi ? MMA_PAD : 4;
	g.lda = g.t.bm + pad;
	g.ldb = g.t.bn + pad;

	LLVMValueRef wg = cg_gpu_group_begin(cg, &g.grp, g.t.block);
	/* 8 x 8 register tiles want more than half the register file of an NVIDIA SM at 256
	 * work-items; a second resident work-group (4 warps per sub-partition) overlaps one's barrier
	 * waits and loads with the other's multiply-adds (vgg16's step on an H100: 251 -> 234 ms).
	 * Smaller tiles fit twice already, and capping them only made ptxas schedule worse (mnist
	 * 0.444 -> 0.456 ms). AMD's tiles (at most 4 x 4) ask for 4 waves per SIMD where the kernel
	 * is the k-block loop of one slice: the backend's own choice (83-131 VGPRs on gfx906) left a
	 * SIMD 1 to 3 waves to switch between. With k-slices (their partial sums) or a few k-blocks
	 * (LLVM unrolls them into straight-line code) 64 VGPRs made the backend spill. */
	int64_t accs = g.mi ? (int64_t)(g.t.wm / g.mi->m) * (g.t.wn / g.mi->n) * g.mi->c_per_lane : (int64_t)g.t.tm * g.t.tn;
	bool loop = g.t.ks == 1 && g.t.kslice > GPU_MIN_KBLOCKS * g.t.bk;
	if (accs == GPU_MAX_REG * GPU_MAX_REG || (!wide_tiles(cg) && loop))
		cg_gpu_waves(cg, GPU_WAVES);
	/* the slices' partial tiles reuse the staging LDS once the last k-block is done */
	int64_t stage = 2 * g.krows * (g.lda + g.ldb), red = g.t.ks > 1 ? (int64_t)g.t.ks * g.t.bm * g.t.bn : 0;
	g.lds = cg_gpu_shared(cg, &g.grp, g.et, stage > red ? stage : red, "gemm_lds");
	g.acc = cg_gpu_private(cg, &g.grp, g.et, accs, "acc");
	g.staged = cg_gpu_private(cg, &g.grp, g.et, staged_count(&g, true) + staged_count(&g, false), "staged");
	decode(cg, &g, wg);
	zero_acc(cg, &g);
	kblocks(cg, &g);
	if (g.t.ks > 1)
		reduce_tiles(cg, &g);
	else if (stores_through_lds(&g, stage))
		store_warp_rows(cg, &g);
	else
		store_tiles(cg, &g);
	cg_gpu_group_end(cg, &g.grp);
	return grid;
}

int64_t cg_gemm_gpu(Cg *cg, const GemmSpec *s) { return emit_tiles(cg, s, tiles(s, mma_of(cg, s), wide_tiles(cg))); }

/* ---- split-K ---- */

/* Float32 element idx (i64) of the workspace at byte offset off. */
static LLVMValueRef ws_ptr(Cg *cg, int64_t off, LLVMValueRef idx)
{
	LLVMValueRef o = cg_i64(cg, off);
	LLVMValueRef base = LLVMBuildInBoundsGEP2(cg->b, cg->t_i8, cg->arena, &o, 1, "");
	return LLVMBuildInBoundsGEP2(cg->b, cg->t_f32, base, &idx, 1, "ws");
}

/* The partials kernel's epilogue: b is slice * batch + b (decode), so the row-major index of
 * (b, m, n) is its place in the slice-major workspace. Row-major, as the tiles store (consecutive
 * work-items, consecutive n) and the sum kernel reads: the S-fold traffic coalesces, and only the
 * final stores follow the output's layout. */
static void split_store(Cg *cg, const GemmSpec *part, LLVMValueRef b, LLVMValueRef m, LLVMValueRef n, LLVMValueRef v)
{
	const GpuSplitK *sk = part->ctx;
	LLVMValueRef row = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, b, cg_i64(cg, part->m), ""), m, "");
	LLVMValueRef idx = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, row, cg_i64(cg, part->n), ""), n, "");
	LLVMValueRef store = LLVMBuildStore(cg->b, cg_convert(cg, v, cg->t_f32), ws_ptr(cg, sk->ws_offset, idx));
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
		LLVMValueRef p = LLVMBuildLoad2(cg->b, cg->t_f32, ws_ptr(cg, sk->ws_offset, idx), "");
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

int cg_gemm_gpu_slices(const Cg *cg, const Node *anchor, const GemmSpec *s)
{
	bool paths = cg_is_gpu(cg) || (emulation && emulation_split_k);
	/* the workspace holds float32 partials of every output element */
	bool fits = anchor->ws_offset >= 0 && s->type == cg->t_f32 &&
		    s->batch * s->m * s->n == shape_numel(&anchor->shape);
	return paths && fits ? ir_split_k(cg->g, anchor) : 1;
}

int64_t cg_gemm_gpu_split_k(Cg *cg, const GemmSpec *s, const GpuSplitK *sk)
{
	const CgMatrixInstr *mi = mma_of(cg, s);
	GpuTiles t = sk->slices > 1 ? split_tiles(s, sk->slices, mi, wide_tiles(cg)) : tiles(s, mi, wide_tiles(cg));
	if (t.slices < 2 || t.slices > sk->slices)
		return cg_gemm_gpu(cg, s);
	GemmSpec part = *s;
	part.epilogue = split_store;
	part.out_n_unit = true; /* the partials are row-major */
	part.ctx = sk;
	int64_t grid = emit_tiles(cg, &part, t);
	cg_kernel_next(cg, grid, "sum");
	return split_sum(cg, s, sk, t.slices);
}
