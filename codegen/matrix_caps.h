/* matrix_caps.h: the matrix and dot-product capability bits of a target (CgTarget.matrix, the
 * target table's .matrix) and of each matrix instruction (codegen/matrix_layout.h); a header of
 * its own so that the pure-C matrix layouts need no LLVM header. */
#ifndef NETC_MATRIX_CAPS_H
#define NETC_MATRIX_CAPS_H

/* The matrix and dot-product instructions an architecture has, as bits: what the GEMM templates
 * may build on (docs/targets.md). */
typedef enum {
	CG_MATRIX_NONE = 0,
	CG_MATRIX_MMA = 1 << 0,        /* NVIDIA sm_80+: warp-level mma.sync (f16, bf16, tf32) */
	CG_MATRIX_WGMMA = 1 << 1,      /* NVIDIA sm_90: warp-group wgmma */
	CG_MATRIX_MFMA = 1 << 2,       /* AMD CDNA gfx908/gfx90a/gfx942: matrix cores */
	CG_MATRIX_WMMA_GFX11 = 1 << 3, /* AMD RDNA 3 gfx11: WMMA */
	CG_MATRIX_WMMA_GFX12 = 1 << 4, /* AMD RDNA 4 gfx12: WMMA (its own encodings, fp8) */
	CG_MATRIX_DOT2 = 1 << 5,       /* AMD gfx906, CDNA, gfx10.3, gfx11, gfx12: v_dot2_f32_f16 */
	CG_MATRIX_PACKED_F16 = 1 << 6, /* packed f16 FMAs: AMD gfx9+ v_pk_fma_f16, NVIDIA fma.rn.f16x2 */
	CG_MATRIX_PACKED_BF16 = 1 << 7, /* packed bf16 FMAs: NVIDIA sm_80+ fma.rn.bf16x2 */
} CgMatrixCaps;

/* The matrix units among the bits (what --no-matrix-units clears; docs/targets.md). */
#define CG_MATRIX_UNITS (CG_MATRIX_MMA | CG_MATRIX_WGMMA | CG_MATRIX_MFMA | CG_MATRIX_WMMA_GFX11 | CG_MATRIX_WMMA_GFX12)

#endif
