/* matrix_lane_models.h: a lane model of each matrix instruction family (header only), written
 * from its document in the other direction to the code generator's index functions: which lane
 * and register slot hold element (m, k) of A, (k, n) of B and (m, n) of C/D, as the PTX ISA's
 * formulas and AMD's matrix instruction calculator state it. test_cg_matrix_layout.c checks the
 * rows of codegen/matrix_layout.c against them; the GPU GEMM tests run the template's host
 * emulation through them (cg_gpu_emulation_mma), so the emulated instruction reads its operands
 * where the hardware would, not where the code generator believes it does. */
#ifndef NETC_MATRIX_LANE_MODELS_H
#define NETC_MATRIX_LANE_MODELS_H

#include "codegen/matrix_layout.h"

#define LM_API static __attribute__((unused))

/* PTX ISA, "Matrix Fragments for mma.m16n8k8" (.tf32) and "... mma.m16n8k16 with floating point
 * type": the fragment register index i of an element, read off the documents' row/col formulas;
 * the lane is 4 * groupID + threadID_in_group. */
LM_API CgMatrixPlace mma_a_place(const CgMatrixInstr *mi, int m, int k, int copy)
{
	(void)copy;
	int group = m % 8, high_row = m >= 8;
	if (mi->k == 8) /* tf32: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4) */
		return (CgMatrixPlace){4 * group + k % 4, high_row + 2 * (k >= 4)};
	/* f16/bf16: a0,a1 (g, 2t..2t+1), a2,a3 (g + 8, ...), a4..a7 the same 8 columns further */
	return (CgMatrixPlace){4 * group + (k % 8) / 2, (k & 1) + 2 * high_row + 4 * (k >= 8)};
}

LM_API CgMatrixPlace mma_b_place(const CgMatrixInstr *mi, int k, int n, int copy)
{
	(void)copy;
	if (mi->k == 8) /* tf32: b0 row t, b1 row t + 4, column groupID */
		return (CgMatrixPlace){4 * n + k % 4, k >= 4};
	/* f16/bf16: b0,b1 rows 2t..2t+1, b2,b3 rows 2t + 8.., column groupID */
	return (CgMatrixPlace){4 * n + (k % 8) / 2, (k & 1) + 2 * (k >= 8)};
}

LM_API CgMatrixPlace mma_d_place(const CgMatrixInstr *mi, int m, int n)
{
	(void)mi; /* c0,c1 (g, 2t..2t+1), c2,c3 (g + 8, ...) */
	return (CgMatrixPlace){4 * (m % 8) + n / 2, (n & 1) + 2 * (m >= 8)};
}

/* AMD matrix instruction calculator, CDNA1-3, one block: A[i][k] is in lane i + M * (k / per)
 * at item k % per; D's rows come in blocks of 4 dealt to the 64 / N lane groups in turn. */
LM_API CgMatrixPlace mfma_a_place(const CgMatrixInstr *mi, int m, int k, int copy)
{
	(void)copy;
	return (CgMatrixPlace){m + mi->m * (k / mi->a_per_lane), k % mi->a_per_lane};
}

LM_API CgMatrixPlace mfma_b_place(const CgMatrixInstr *mi, int k, int n, int copy)
{
	(void)copy;
	return (CgMatrixPlace){n + mi->n * (k / mi->b_per_lane), k % mi->b_per_lane};
}

LM_API CgMatrixPlace mfma_d_place(const CgMatrixInstr *mi, int m, int n)
{
	int groups = 64 / mi->n, block = m / 4;
	return (CgMatrixPlace){n + mi->n * (block % groups), 4 * (block / groups) + m % 4};
}

/* RDNA 3 ISA, WMMA: A's row m (B's column n) is in lane m + 16 * copy, k in slot k; D's row m is
 * in lane group m % (wave / 16), slot m / (wave / 16). */
LM_API CgMatrixPlace wmma11_a_place(const CgMatrixInstr *mi, int m, int k, int copy)
{
	(void)mi;
	return (CgMatrixPlace){m + 16 * copy, k};
}

LM_API CgMatrixPlace wmma11_b_place(const CgMatrixInstr *mi, int k, int n, int copy)
{
	(void)mi;
	return (CgMatrixPlace){n + 16 * copy, k};
}

LM_API CgMatrixPlace wmma11_d_place(const CgMatrixInstr *mi, int m, int n)
{
	int groups = mi->wave / 16;
	return (CgMatrixPlace){n + 16 * (m % groups), m / groups};
}

/* RDNA 4 ISA, WMMA (wave32): k's bit 2 picks the lane half, its bit 3 the second four slots;
 * D's rows 0-7 are in lanes 0-15, rows 8-15 in lanes 16-31. */
LM_API CgMatrixPlace wmma12_a_place(const CgMatrixInstr *mi, int m, int k, int copy)
{
	(void)mi, (void)copy;
	return (CgMatrixPlace){m + 16 * ((k >> 2) & 1), 4 * (k >> 3) + (k & 3)};
}

LM_API CgMatrixPlace wmma12_b_place(const CgMatrixInstr *mi, int k, int n, int copy)
{
	(void)mi, (void)copy;
	return (CgMatrixPlace){n + 16 * ((k >> 2) & 1), 4 * (k >> 3) + (k & 3)};
}

LM_API CgMatrixPlace wmma12_d_place(const CgMatrixInstr *mi, int m, int n)
{
	(void)mi;
	return (CgMatrixPlace){n + 16 * (m >> 3), m & 7};
}

static const CgMatrixModel lane_models[] __attribute__((unused)) = {
	{CG_MATRIX_MMA, mma_a_place, mma_b_place, mma_d_place},
	{CG_MATRIX_MFMA, mfma_a_place, mfma_b_place, mfma_d_place},
	{CG_MATRIX_WMMA_GFX11, wmma11_a_place, wmma11_b_place, wmma11_d_place},
	{CG_MATRIX_WMMA_GFX12, wmma12_a_place, wmma12_b_place, wmma12_d_place},
};
#define LANE_NMODELS ((int)(sizeof lane_models / sizeof *lane_models))

LM_API const CgMatrixModel *lane_model_of(const CgMatrixInstr *mi)
{
	for (int i = 0; i < LANE_NMODELS; i++)
		if (lane_models[i].caps == mi->caps)
			return &lane_models[i];
	return NULL;
}

#endif
