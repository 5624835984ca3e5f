/* gemm.h: the GEMM kernel template behind the anchor lowerings (conv2d, its gradients, matmul).
 *
 *     C[b][m][n] = sum_k A(b, m, k) * B(b, k, n)
 *
 * One work-group computes one MB x NB tile of C for one b, over all of K (never split: results are
 * the same from run to run). Per k-block it packs A into MR-row slivers and B into NR-column slivers
 * in local arrays, zero-padded outside M and N, and runs an MR x NR register-blocked micro-kernel
 * (vector FMAs, accumulators in registers across the k loop) that accumulates into a local C tile.
 * At the end the epilogue stores the tile's valid part.
 *
 * The operands are emitters: the lowering says how to produce one element (and, where memory allows,
 * a vector of consecutive ones), so implicit GEMM (convolution without an im2col buffer) happens
 * while packing. */
#ifndef NETC_GEMM_H
#define NETC_GEMM_H

#include "codegen/cg.h"

typedef struct GemmOperand GemmOperand;
typedef struct GemmSpec GemmSpec;

/* Element (row, col) of batch b: (m, k) of A, (k, n) of B. All i64 values; row and col are in
 * range (the template pads M, N and K itself); whatever falls outside the operand's own tensor
 * (convolution padding) the emitter turns into zero without loading out of bounds. */
typedef LLVMValueRef (*GemmElemFn)(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row,
				   LLVMValueRef col);
/* A vector of `lanes` elements along the operand's contiguous index: `fixed` is the other index,
 * lane j is the element at run index p0 + j, for j < nvalid (an i64 that may be <= 0); the other
 * lanes are zero. Optional: the template falls back to elem. */
typedef LLVMValueRef (*GemmVecFn)(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef fixed,
				  LLVMValueRef p0, LLVMValueRef nvalid, int lanes);

/* A run of `lanes` elements along the operand's contiguous index from (row, col) (as elem's),
 * every one inside the operand and the run aligned to its size in bytes: one vector load (or
 * zeros, where the whole run lies in the padding around a window's tensor). The GPU template
 * asks only for runs that start at a multiple of `lanes` along the contiguous index. */
typedef LLVMValueRef (*GemmRunFn)(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row,
				  LLVMValueRef col, int lanes);

/* Where run (row, col) (as run's) starts in memory, in the operand's storage type: for copies that
 * keep it (the GPU template's cp.async). *inside (i1) is false where the run lies in the zeros
 * around the operand's tensor (a window's padding; the address is then any readable one), NULL
 * where every run lies inside. */
typedef LLVMValueRef (*GemmAtFn)(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col,
				 LLVMValueRef *inside);

/* A's window as padded rows, for the GPU template's halo tiles (codegen/gemm_gpu.c, "padded
 * rows"): a stride-1 window over an NHWC source whose k is (tap, channel), channel fastest, and
 * whose m is the position (img, y, x) on a gh x gw output grid, the batch folded in. Tap t reads
 * the source pixel (y + dy[t], x + dx[t]) (zero outside the source). On the padded grid of ph x pw
 * positions per image (gh and gw grown by the spans of dy and dx) every tap is a constant shift
 * of the position, so one staged run of padded positions serves every tap. */
enum { GEMM_ROWS_MAX_TAPS = 25 };
typedef struct {
	int64_t images, chans;   /* the source's N and C */
	int64_t h, w;            /* its H and W */
	int64_t gh, gw;          /* the output grid (m = (img * gh + y) * gw + x) */
	int64_t ph, pw;          /* the padded grid */
	int64_t dy0, dx0;        /* the least dy and dx: padded position (Y, X) is source (Y + dy0, X + dx0) */
	int taps;
	int64_t dy[GEMM_ROWS_MAX_TAPS], dx[GEMM_ROWS_MAX_TAPS];
	/* where channel `chan` of source pixel (img, y, x) lies (i64 values; y and x may lie outside
	 * the source, where the address is any readable one) */
	LLVMValueRef (*at)(Cg *cg, const GemmOperand *op, LLVMValueRef img, LLVMValueRef y, LLVMValueRef x,
			   LLVMValueRef chan);
} GemmRows;

/* The operand as plain memory (optional), for copies by NVIDIA's Tensor Memory Accelerator
 * (codegen/gemm_gpu.c, "tensor maps"): element (row, col) of batch b (row and col as elem's) is
 * node src's element b * sb + row * ld + col, or b * sb + col * ld + row where t; sb 0: one
 * matrix for every b. */
typedef struct {
	int src;
	int64_t ld;
	bool t;
	int64_t sb;
} GemmTensor;

struct GemmOperand {
	GemmElemFn elem;
	GemmVecFn vec;
	GemmRunFn run;      /* optional: aligned runs of up to `runs` elements (a power of two; at most
			       16 bytes), where the operand is plain memory laid out so that runs from
			       multiples of `runs` stay aligned */
	int runs;
	GemmAtFn at;        /* optional, with run: the run's address */
	DType stored;       /* with at: the storage type of the run's elements */
	bool along_k;       /* consecutive k lie next to each other in memory (else m for A, n for B) */
	bool batch_free;    /* A only: A does not depend on b, so a packed A serves every b */
	const GemmRows *rows; /* A only, optional: the window as padded rows */
	const GemmTensor *tensor; /* optional: the operand as plain memory */
	const void *ctx;    /* the lowering's */
};

/* Stores v, the finished C[b][m][n]. */
typedef void (*GemmEpilogueFn)(Cg *cg, const GemmSpec *s, LLVMValueRef b, LLVMValueRef m,
			       LLVMValueRef n, LLVMValueRef v);

struct GemmSpec {
	int64_t batch, m, n, k;
	GemmOperand a, b;
	GemmEpilogueFn epilogue;
	LLVMTypeRef type;   /* compute type: float or double */
	bool tf32;          /* float products may be TF32 (--precision tf32): the GPU template uses
			       mma.sync where the target has CG_MATRIX_MMA; everywhere else it is float */
	DType half;         /* DT_F16 or DT_BF16: both operands are of that type (--precision fp16,
			       bf16), which the GPU template multiplies on matrix units where the
			       target has them (else in `type`); DT_F32 otherwise */
	bool epilogue_loads; /* the epilogue loads full-size tensors as it stores (a fused relu_grad's
				forward output): the GPU template then stores from its fragments */
	const void *ctx;    /* the lowering's, for the epilogue */
};

typedef struct {
	int mr, nr;                 /* micro-kernel */
	int64_t mb, nb, kb;         /* work-group tile and k-block */
	int64_t nmb, nnb, nkb;      /* blocks along M, N, K */
	int64_t ka;                 /* k extent held by the packed A: kb, or all of K when it is kept */
} GemmTiles;

/* Tile sizes for a problem on target t (chosen by measurement, see docs/codegen.md). */
GemmTiles cg_gemm_tiles(const CgTarget *t, const GemmSpec *s);
/* The tilings the template supports for s, at most max into out: out[0] cg_gemm_tiles', then
 * the same rules with smaller M blocks and shorter or longer k-blocks (codegen/tuning.h). */
int cg_gemm_candidates(const CgTarget *t, const GemmSpec *s, GemmTiles *out, int max);
/* The architecture of target t in tuning keys: its arch, or for the host "host-" and the CPU the
 * code is built for. */
void cg_gemm_tune_arch(const CgTarget *t, char *buf, size_t len);
/* The tuning key of s compiled by cg in precision class cls, split-K slices split (1: none). */
void cg_gemm_tune_key(const Cg *cg, const GemmSpec *s, const char *cls, int split, CgTuneKey *k);
/* Emits the GEMM into cg->fn for work-groups [cg->wg_begin, cg->wg_end); returns the grid. */
int64_t cg_gemm(Cg *cg, const GemmSpec *s);

/* Helpers the operand emitters share (codegen/gemm.c). */
LLVMValueRef cg_gemm_splat(Cg *cg, LLVMValueRef v, int lanes);
LLVMValueRef cg_gemm_iota(Cg *cg, int lanes);               /* <lanes x i64> 0, 1, ... */
/* Masked vector load of `lanes` elements of node id from element index start (i64, may lie outside
 * the buffer where the mask is off), converted to the compute type; masked-off lanes are zero. */
LLVMValueRef cg_gemm_masked_load(Cg *cg, int id, LLVMValueRef start, LLVMValueRef mask, int lanes,
				 LLVMValueRef passthru);

#endif
