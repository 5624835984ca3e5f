/* gemm_gpu.h: the GPU GEMM template behind the anchor lowerings, and the work-group helpers
 * that GPU-native lowerings share (codegen/gemm_gpu.c).
 *
 * The template computes the same C[b][m][n] = sum_k A(b, m, k) * B(b, k, n) as codegen/gemm.h,
 * through the same operand emitters and epilogue. A work-group of 256 work-items computes one
 * BM x BN tile of C for one b. Its work-items form KS slices of (BM/TM) x (BN/TN), each work-item a
 * TM x TN register tile. Per k-block of BK the work-items stage the A tile (BM x BK) and the B tile
 * (BK x BN) in LDS (shared memory), zero outside M, N and K; slice s accumulates its BK/KS share of
 * the block. With KS > 1 the slices add their partial tiles in LDS in slice order.
 *
 * Split-K: where M x N gives few tiles and K is long (ir_split_k, weight gradients), K is also
 * split across work-groups. Kernel k<leader>_<op> runs S x tiles work-groups, each summing its
 * slice of K with the same tile code and storing its partial tile as float32 in the anchor's
 * workspace (Node.ws_offset, slice-major); kernel k<leader>_<op>_sum, launched after it, gives each
 * output element a work-item that adds its S partials in slice order and runs the epilogue. No
 * atomics anywhere: every run gives the same bits.
 *
 * Matrix units (codegen/matrix_layout.h's rows that the target has: NVIDIA sm_80+ mma.sync, CDNA
 * MFMA, RDNA 3 and RDNA 4 WMMA): TF32 (GemmSpec.tf32: mma.sync m16n8k8 tf32, gfx942's xf32),
 * half operands (GemmSpec.half: --precision fp16, bf16) and on CDNA float32 (MFMA f32) take the
 * same staging, k-blocks, slices and epilogue, but each warp (a wave of the instruction's size)
 * owns a WM x WN warp tile of the slice's tile: the operands are rounded to tf32 (or converted to
 * the half type) as they are stored in LDS, which holds them in words of the runs of k one
 * register or argument holds, the fragments are loaded through the row's a_at and b_at, and the
 * float32 accumulators are in its C layout, which the epilogue maps to (row, column) through c_at.
 *
 * Emulation: the same kernels emitted for the host (work-items become loops, a barrier the end of
 * one loop, LDS and per-work-item registers become locals), so the template's numerics can be
 * tested on a machine without a GPU. The matrix instruction cannot run there: emulated, the
 * work-items load their fragments as on the GPU and the instruction runs through a lane model
 * given by the test (cg_gpu_emulation_mma), so staging, fragment loads, wave and c_at are tested
 * on the CPU against an independent statement of each instruction's layout. */
#ifndef NETC_GEMM_GPU_H
#define NETC_GEMM_GPU_H

#include "codegen/gemm.h"
#include "codegen/matrix_layout.h"

/* How register tiles (no matrix unit) multiply half operands (--precision fp16, bf16). */
typedef enum {
	GPU_HALF_F32 = 0, /* in float32 registers: LDS holds float32 (also every non-half GEMM) */
	GPU_HALF_DOT2,    /* f16 by v_dot2_f32_f16 (AMD: CG_MATRIX_DOT2): k-pairs of halves in LDS,
			     exact products, float32 sums */
	GPU_HALF_PACKED,  /* packed half FMAs on pairs of neighbouring columns (--packed-half:
			     fma.rn.f16x2 and bf16x2, v_pk_fma_f16): halves in LDS, each k-block's
			     products summed in the half type, then added to the float32 sums */
} GpuHalfMath;

typedef struct {
	int bm, bn, bk;   /* work-group tile and k-block */
	int tm, tn;       /* register tile of one work-item */
	int ks;           /* slices splitting each k-block inside the work-group */
	int block;        /* work-items: (bm/tm) * (bn/tn) * ks */
	int64_t nmb, nnb; /* tiles along M and N */
	int slices;       /* split-K: slices of K across work-groups (1: none) */
	int64_t kslice;   /* the k extent of each (whole k-blocks; all of K without split-K) */
	const CgMatrixInstr *mi; /* warp tiles of this mma.sync instead of register tiles (tm, tn 0) */
	int wm, wn;       /* mi: the warp tile */
	bool wide;        /* 128-wide tiles of 8 x 8 register tiles allowed (CgTargetOps.gemm_wide_tiles) */
	GpuHalfMath half_math; /* register tiles: how they multiply half operands */
	int stages;       /* LDS buffers the k loop cycles through: 2, more where an operand is copied */
	bool copied[2];   /* operand B [0], A [1] goes from memory into LDS by cp.async (NVIDIA) */
	bool wgmma;       /* two warpgroups multiply by sm_90's wgmma from LDS (the kernel decides) */
	int lag;          /* wgmma: k-blocks whose products stay in flight past the next barrier (0, 1) */
	bool rows;        /* A's window staged as padded rows (GemmOperand.rows; gemm_gpu.c, "padded
			     rows"): bm padded positions, k-blocks of bk channels over every tap */
	int rows_stages;  /* padded rows: the buffers a configuration asked for (0: as many as fit) */
	int tiles;        /* padded rows: tiles per work-group, whose k-blocks run as one pipeline
			     (gemm_gpu.c, "several tiles per work-group"; 0: one) */
} GpuTiles;

/* Tile sizes for a problem: large tiles where there are enough of them, smaller ones (with more
 * k-slices) where M, N and the batch give few work-groups; at most 64 wide unless `wide`. */
GpuTiles cg_gemm_gpu_tiles(const GemmSpec *s, bool wide);
/* The matrix instruction target t multiplies operands of elem with: the first row of the table
 * with its CgMatrixCaps bit, its wave size and its architecture among the row's (gfx908 has MFMA
 * but not bf16_1k or xf32); NULL: none. */
const CgMatrixInstr *cg_gemm_gpu_unit_row(const CgTarget *t, CgMatrixElem elem);
/* Emits the GEMM as a GPU-native kernel (or its host emulation); returns the grid. */
int64_t cg_gemm_gpu(Cg *cg, const GemmSpec *s);

/* ---- split-K ---- */

typedef struct {
	int slices;        /* S from cg_gemm_gpu_split (ir_split_k: the tuning key's) */
	int most;          /* the most slices the workspace holds (ir_split_k_most) */
	const Node *anchor; /* whose workspace (Node.ws_offset) holds the partial products: S x batch x
			       M x N float32, row-major */
} GpuSplitK;

/* The tiles of the problem split into at most `slices` slices of K: those of one slice's problem
 * with the slices counted as work-groups; kslice whole k-blocks, so t.slices may come out fewer. */
GpuTiles cg_gemm_gpu_split_tiles(const GemmSpec *s, int slices, bool wide);
/* How the GEMM of anchor node n splits K: into ir_split_k's slices (at most ir_split_k_most) on a
 * GPU target (or emulated with cg_gpu_emulation_split_k) when plan-memory gave it a workspace and
 * it computes in float32; else 1. */
GpuSplitK cg_gemm_gpu_split(const Cg *cg, const Node *anchor, const GemmSpec *s);
/* Emits the GEMM split over K: the partials kernel, cg_kernel_next, the sum kernel; returns the
 * sum kernel's grid. Where the tiles leave fewer than 2 slices it is cg_gemm_gpu. */
int64_t cg_gemm_gpu_split_k(Cg *cg, const GemmSpec *s, const GpuSplitK *sk);

/* ---- the work-group of a GPU-native lowering ---- */

/* Whether lowerings take their GPU paths: a GPU target, or the host under emulation. */
bool cg_gpu_paths(const Cg *cg);
/* Whether Winograd's transforms stage their windows in shared memory (CgTargetOps; emulated: as
 * the emulated unit's target does, else as NVIDIA does). */
bool cg_gpu_winograd_windows(const Cg *cg);
/* Turns emulation on or off for this process (tests use it; the host path is the default). */
void cg_gpu_emulation(bool on);
/* Whether emulated GEMMs split K as GPU ones do (off by default: harnesses that compare a node
 * after each kernel would read the partials kernel's node before its sum kernel ran). */
void cg_gpu_emulation_split_k(bool on);
/* The SMs that emulated GEMMs size their work-groups of several tiles for (padded rows' `tiles`
 * candidates), in place of the emulated target's row; 0: the row's (tests make small grids). */
void cg_gpu_emulation_sms(int sms);
/* Whether emulated GEMMs take the matrix path as target `arch` (a target name, "sm_80", "gfx942",
 * "gfx1100"; wave 0: its default wave size, else 32 or 64) does, with its rows, wave and tiles;
 * the instruction itself runs through the lane model of its family among models[0..n) (tests:
 * tests/unit/matrix_lane_models.h). NULL: off, the default (the host has no matrix unit and
 * computes them as float). */
void cg_gpu_emulation_mma(const char *arch, int wave, const CgMatrixModel *models, int nmodels);
/* The same with the target's options (wave, --no-matrix-units, --packed-half) spelled out. */
void cg_gpu_emulation_target(const char *arch, const CgTargetOptions *o, const CgMatrixModel *models, int nmodels);

typedef struct {
	int block;
	bool emulated;
	CgLoop wg, item;       /* emulation: the loops over work-groups and work-items */
	LLVMValueRef wg_id;    /* i64 */
	LLVMBasicBlockRef past; /* after the guard of cg_gpu_elements_begin */
} GpuGroup;

/* Opens the kernel's work-group of `block` work-items; returns its id (i64). On a GPU it sets
 * cg->gpu_native and cg->block; emulated, it opens a loop over [cg->wg_begin, cg->wg_end). */
LLVMValueRef cg_gpu_group_begin(Cg *cg, GpuGroup *g, int block);
void cg_gpu_group_end(Cg *cg, GpuGroup *g);
/* A phase: what every work-item does between two barriers. Returns the work-item id (i64).
 * phase_end adds the barrier when `barrier` (emulated: the loop's end is the barrier). */
LLVMValueRef cg_gpu_phase_begin(Cg *cg, GpuGroup *g);
void cg_gpu_phase_end(Cg *cg, GpuGroup *g, bool barrier);
/* An array shared by the work-group (LDS, shared memory; a local when emulated). */
LLVMValueRef cg_gpu_shared(Cg *cg, const GpuGroup *g, LLVMTypeRef elem, int64_t count, const char *name);

/* One element per work-item over [0, total): opens the work-group, its one phase and a guard
 * against the last work-group's extra work-items; returns the element index (i64) and sets
 * *grid. Close with cg_gpu_elements_end. */
LLVMValueRef cg_gpu_elements_begin(Cg *cg, GpuGroup *g, int64_t total, int64_t *grid);
/* The same with the guard's bound given (total as a size argument, cg_size). */
LLVMValueRef cg_gpu_elements_begin_at(Cg *cg, GpuGroup *g, int64_t total, LLVMValueRef bound, int64_t *grid);
void cg_gpu_elements_end(Cg *cg, GpuGroup *g);

/* Values each work-item keeps across phases (its accumulators): registers on a GPU, one row per
 * work-item of a local array when emulated. */
typedef struct {
	LLVMValueRef base;
	LLVMTypeRef elem;
	int64_t count;
} GpuPrivate;
GpuPrivate cg_gpu_private(Cg *cg, const GpuGroup *g, LLVMTypeRef elem, int64_t count, const char *name);
/* Pointer to element i of work-item tid's values (inside a phase). */
LLVMValueRef cg_gpu_private_at(Cg *cg, const GpuGroup *g, const GpuPrivate *p, LLVMValueRef tid, int64_t i);

#endif
