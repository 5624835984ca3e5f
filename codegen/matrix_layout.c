/* matrix_layout.c: the matrix instruction table and its fragment-index functions (see
 * matrix_layout.h). Each layout cites where it comes from. None of the AMD layouts has run on AMD
 * hardware: tests/unit/test_cg_matrix_layout.c checks them against a lane model of each
 * instruction and checks that LLVM 19 compiles each intrinsic, with these operand types, to the
 * instruction (docs/codegen.md, "Matrix instructions and their lane layouts"). */
#include <string.h>

#include "codegen/matrix_layout.h"

int cg_matrix_elem_bits(CgMatrixElem elem)
{
	return elem == CG_MELEM_F16 || elem == CG_MELEM_BF16 ? 16 : 32;
}

static int scalar_bits(CgMatrixScalar s)
{
	return s == CG_MSCALAR_F16 || s == CG_MSCALAR_I16 ? 16 : 32;
}

int cg_matrix_arg_values(const CgMatrixArgType *t, CgMatrixElem elem)
{
	return t->args * t->vector * (scalar_bits(t->scalar) / cg_matrix_elem_bits(elem));
}

/* ---- NVIDIA mma.sync, warp 32 ----
 * PTX ISA (docs.nvidia.com/cuda/parallel-thread-execution), "Matrix Fragments for mma.m16n8k8"
 * (the .tf32 part) and "Matrix Fragments for mma.m16n8k16 with floating point type": with
 * groupID = lane >> 2 and threadID_in_group = lane % 4, a fragment register holds p = 32 / bits
 * elements (tf32 one, f16 and bf16 two, low half first). A's registers go rows groupID,
 * groupID + 8, then the same rows 4p columns further; B's registers go down k in steps of 4p;
 * C/D c0,c1 are row groupID, c2,c3 row groupID + 8, columns 2 * threadID_in_group + (i & 1).
 * Operand types as llvm/test/CodeGen/NVPTX/wmma.py generates them. */

static int per_register(const CgMatrixInstr *mi)
{
	return 32 / cg_matrix_elem_bits(mi->elem);
}

static CgMatrixCoord mma_a(const CgMatrixInstr *mi, int lane, int slot)
{
	int p = per_register(mi), reg = slot / p, group = lane >> 2, thread = lane & 3;
	return (CgMatrixCoord){group + 8 * (reg & 1), p * thread + slot % p + 4 * p * (reg >> 1)};
}

static CgMatrixCoord mma_b(const CgMatrixInstr *mi, int lane, int slot)
{
	int p = per_register(mi), reg = slot / p, group = lane >> 2, thread = lane & 3;
	return (CgMatrixCoord){p * thread + slot % p + 4 * p * reg, group};
}

static CgMatrixCoord mma_c(const CgMatrixInstr *mi, int lane, int slot)
{
	(void)mi;
	int group = lane >> 2, thread = lane & 3;
	return (CgMatrixCoord){group + 8 * (slot >> 1), 2 * thread + (slot & 1)};
}

/* ---- AMD CDNA MFMA, wave64, one block (no cbsz/abid/blgp broadcast) ----
 * AMD Instinct MI300 (CDNA 3) ISA Reference Guide, "Matrix Arithmetic Instructions" (the
 * dependency and layout tables of the MFMA section), as AMD's Matrix Instruction Calculator
 * (github.com/ROCm/amd_matrix_instruction_calculator, --register-layout) prints them for CDNA1-3:
 * A's row is lane % M and its k run is (lane / M) * per_lane + slot, consecutive k in one lane;
 * B the same with n for m; D's column is lane % N and its rows go in runs of 4: lane group
 * lane / N picks the run within each group of 4 * (64 / N) rows, slot / 4 picks the group.
 * Intrinsic types as llvm/test/CodeGen/AMDGPU/llvm.amdgcn.mfma.ll (f32, f16, and gfx908's bf16 of
 * 2 values per lane), llvm.amdgcn.mfma.gfx90a.ll (bf16_1k) and llvm.amdgcn.mfma.gfx940.ll (xf32)
 * call them. */

static CgMatrixCoord mfma_a(const CgMatrixInstr *mi, int lane, int slot)
{
	return (CgMatrixCoord){lane % mi->m, (lane / mi->m) * mi->a_per_lane + slot};
}

static CgMatrixCoord mfma_b(const CgMatrixInstr *mi, int lane, int slot)
{
	return (CgMatrixCoord){(lane / mi->n) * mi->b_per_lane + slot, lane % mi->n};
}

static CgMatrixCoord mfma_c(const CgMatrixInstr *mi, int lane, int slot)
{
	int groups = mi->wave / mi->n;
	return (CgMatrixCoord){(slot / 4) * 4 * groups + 4 * (lane / mi->n) + slot % 4, lane % mi->n};
}

/* ---- AMD RDNA 3 (gfx11) WMMA, wave32 and wave64 ----
 * AMD RDNA 3 ISA Reference Guide, "Wave Matrix Multiply Accumulate (WMMA)" (section 7.9), and
 * GPUOpen's "How to accelerate AI applications on RDNA 3 using WMMA": lane % 16 is A's row and
 * B's column and holds all 16 k of it, lanes 16 and up repeat lanes 0-15 (the halves, or in wave64
 * the quarters, must hold the same values); D's column is lane % 16 and its slot r holds row
 * r * (wave / 16) + lane / 16. Types as llvm/test/CodeGen/AMDGPU/wmma_multiple_32.ll and
 * wmma_multiple_64.ll call them. */

static CgMatrixCoord wmma11_a(const CgMatrixInstr *mi, int lane, int slot)
{
	(void)mi;
	return (CgMatrixCoord){lane % 16, slot};
}

static CgMatrixCoord wmma11_b(const CgMatrixInstr *mi, int lane, int slot)
{
	(void)mi;
	return (CgMatrixCoord){slot, lane % 16};
}

static CgMatrixCoord wmma11_c(const CgMatrixInstr *mi, int lane, int slot)
{
	return (CgMatrixCoord){slot * (mi->wave / 16) + lane / 16, lane % 16};
}

/* ---- AMD RDNA 4 (gfx12) WMMA, wave32 ----
 * AMD RDNA 4 ISA Reference Guide, "Wave Matrix Multiply Accumulate (WMMA)", as AMD's Matrix
 * Instruction Calculator prints it for gfx1200 (no replication any more): lane % 16 is A's row
 * (B's column); its 8 slots take k in runs of 4: slots 0-3 hold k 0-3 in lanes 0-15 and k 4-7 in
 * lanes 16-31, slots 4-7 the same 8 further (k = 8 * (slot / 4) + 4 * (lane / 16) + slot % 4).
 * D's column is lane % 16 and slot r holds row r + 8 * (lane / 16): rows 0-7 in the low lanes,
 * 8-15 in the high ones (RDNA 3 interleaved them). Types as
 * llvm/test/CodeGen/AMDGPU/wmma-gfx12-w32.ll calls them. */

static CgMatrixCoord wmma12_a(const CgMatrixInstr *mi, int lane, int slot)
{
	(void)mi;
	return (CgMatrixCoord){lane % 16, 8 * (slot / 4) + 4 * (lane / 16) + slot % 4};
}

static CgMatrixCoord wmma12_b(const CgMatrixInstr *mi, int lane, int slot)
{
	(void)mi;
	return (CgMatrixCoord){8 * (slot / 4) + 4 * (lane / 16) + slot % 4, lane % 16};
}

static CgMatrixCoord wmma12_c(const CgMatrixInstr *mi, int lane, int slot)
{
	(void)mi;
	return (CgMatrixCoord){slot + 8 * (lane / 16), lane % 16};
}

/* ---- the table ---- */

#define ARG(s, v, n) {.scalar = CG_MSCALAR_##s, .vector = (v), .args = (n)}
#define MMA .caps = CG_MATRIX_MMA, .m = 16, .n = 8, .wave = 32, .c_per_lane = 4, .ab_copies = 1, \
	.c_type = ARG(F32, 1, 4), .a_at = mma_a, .b_at = mma_b, .c_at = mma_c
#define NV_ON(ptx) .on = {{"sm_80", ptx}, {"sm_86", ptx}, {"sm_89", ptx}, {"sm_90", ptx}}
#define MFMA .caps = CG_MATRIX_MFMA, .wave = 64, .ab_copies = 1, .imm_args = 3, \
	.a_at = mfma_a, .b_at = mfma_b, .c_at = mfma_c
#define MFMA_ON(cdna12, cdna3) .on = {{"gfx908", cdna12}, {"gfx90a", cdna12}, {"gfx942", cdna3}}
#define WMMA11 .caps = CG_MATRIX_WMMA_GFX11, .m = 16, .n = 16, .k = 16, .a_per_lane = 16, .b_per_lane = 16, \
	.overloaded = true, .a_at = wmma11_a, .b_at = wmma11_b, .c_at = wmma11_c
#define WMMA11_ON(mn) .on = {{"gfx1100", mn}, {"gfx1101", mn}}
#define WMMA12 .caps = CG_MATRIX_WMMA_GFX12, .m = 16, .n = 16, .k = 16, .wave = 32, .a_per_lane = 8, \
	.b_per_lane = 8, .c_per_lane = 8, .ab_copies = 1, .overloaded = true, .c_type = ARG(F32, 8, 1), \
	.a_at = wmma12_a, .b_at = wmma12_b, .c_at = wmma12_c
#define WMMA12_ON(mn) .on = {{"gfx1200", mn}, {"gfx1201", mn}}

static const CgMatrixInstr table[] = {
	{.name = "mma.m16n8k8.tf32", MMA, .k = 8, .elem = CG_MELEM_TF32, .a_per_lane = 4, .b_per_lane = 2,
	 .intrinsic = "llvm.nvvm.mma.m16n8k8.row.col.tf32", .a_type = ARG(I32, 1, 4), .b_type = ARG(I32, 1, 2),
	 NV_ON("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")},
	/* LLVM names f16 mma by its D and C types: .f32.f32 is f32 accumulate (.f32.f16 takes C in f16) */
	{.name = "mma.m16n8k16.f16", MMA, .k = 16, .elem = CG_MELEM_F16, .a_per_lane = 8, .b_per_lane = 4,
	 .intrinsic = "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", .a_type = ARG(F16, 2, 4), .b_type = ARG(F16, 2, 2),
	 NV_ON("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")},
	{.name = "mma.m16n8k16.bf16", MMA, .k = 16, .elem = CG_MELEM_BF16, .a_per_lane = 8, .b_per_lane = 4,
	 .intrinsic = "llvm.nvvm.mma.m16n8k16.row.col.bf16", .a_type = ARG(I32, 1, 4), .b_type = ARG(I32, 1, 2),
	 NV_ON("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")},

	{.name = "v_mfma_f32_16x16x4f32", MFMA, .m = 16, .n = 16, .k = 4, .elem = CG_MELEM_F32, .a_per_lane = 1,
	 .b_per_lane = 1, .c_per_lane = 4, .intrinsic = "llvm.amdgcn.mfma.f32.16x16x4f32",
	 .a_type = ARG(F32, 1, 1), .b_type = ARG(F32, 1, 1), .c_type = ARG(F32, 4, 1),
	 MFMA_ON("v_mfma_f32_16x16x4f32", "v_mfma_f32_16x16x4_f32")},
	{.name = "v_mfma_f32_32x32x2f32", MFMA, .m = 32, .n = 32, .k = 2, .elem = CG_MELEM_F32, .a_per_lane = 1,
	 .b_per_lane = 1, .c_per_lane = 16, .intrinsic = "llvm.amdgcn.mfma.f32.32x32x2f32",
	 .a_type = ARG(F32, 1, 1), .b_type = ARG(F32, 1, 1), .c_type = ARG(F32, 16, 1),
	 MFMA_ON("v_mfma_f32_32x32x2f32", "v_mfma_f32_32x32x2_f32")},
	{.name = "v_mfma_f32_16x16x16f16", MFMA, .m = 16, .n = 16, .k = 16, .elem = CG_MELEM_F16, .a_per_lane = 4,
	 .b_per_lane = 4, .c_per_lane = 4, .intrinsic = "llvm.amdgcn.mfma.f32.16x16x16f16",
	 .a_type = ARG(F16, 4, 1), .b_type = ARG(F16, 4, 1), .c_type = ARG(F32, 4, 1),
	 MFMA_ON("v_mfma_f32_16x16x16f16", "v_mfma_f32_16x16x16_f16")},
	{.name = "v_mfma_f32_32x32x8f16", MFMA, .m = 32, .n = 32, .k = 8, .elem = CG_MELEM_F16, .a_per_lane = 4,
	 .b_per_lane = 4, .c_per_lane = 16, .intrinsic = "llvm.amdgcn.mfma.f32.32x32x8f16",
	 .a_type = ARG(F16, 4, 1), .b_type = ARG(F16, 4, 1), .c_type = ARG(F32, 16, 1),
	 MFMA_ON("v_mfma_f32_32x32x8f16", "v_mfma_f32_32x32x8_f16")},
	/* bf16 with 4 values per lane came with CDNA 2 (gfx908 has only the 2-value form) */
	{.name = "v_mfma_f32_16x16x16bf16_1k", MFMA, .m = 16, .n = 16, .k = 16, .elem = CG_MELEM_BF16,
	 .a_per_lane = 4, .b_per_lane = 4, .c_per_lane = 4, .intrinsic = "llvm.amdgcn.mfma.f32.16x16x16bf16.1k",
	 .a_type = ARG(I16, 4, 1), .b_type = ARG(I16, 4, 1), .c_type = ARG(F32, 4, 1),
	 .on = {{"gfx90a", "v_mfma_f32_16x16x16bf16_1k"}, {"gfx942", "v_mfma_f32_16x16x16_bf16"}}},
	/* CDNA 1's bf16 form, 2 values per lane (CDNA 3 dropped it); gfx90a takes the row above */
	{.name = "v_mfma_f32_16x16x8bf16", MFMA, .m = 16, .n = 16, .k = 8, .elem = CG_MELEM_BF16, .a_per_lane = 2,
	 .b_per_lane = 2, .c_per_lane = 4, .intrinsic = "llvm.amdgcn.mfma.f32.16x16x8bf16",
	 .a_type = ARG(I16, 2, 1), .b_type = ARG(I16, 2, 1), .c_type = ARG(F32, 4, 1),
	 .on = {{"gfx908", "v_mfma_f32_16x16x8bf16"}, {"gfx90a", "v_mfma_f32_16x16x8bf16"}}},
	/* CDNA 3 only: f32 inputs multiplied at tf32 precision */
	{.name = "v_mfma_f32_16x16x8_xf32", MFMA, .m = 16, .n = 16, .k = 8, .elem = CG_MELEM_XF32, .a_per_lane = 2,
	 .b_per_lane = 2, .c_per_lane = 4, .intrinsic = "llvm.amdgcn.mfma.f32.16x16x8.xf32",
	 .a_type = ARG(F32, 2, 1), .b_type = ARG(F32, 2, 1), .c_type = ARG(F32, 4, 1),
	 .on = {{"gfx942", "v_mfma_f32_16x16x8_xf32"}}},

	{.name = "v_wmma_f32_16x16x16_f16", WMMA11, .wave = 32, .elem = CG_MELEM_F16, .c_per_lane = 8, .ab_copies = 2,
	 .intrinsic = "llvm.amdgcn.wmma.f32.16x16x16.f16", .a_type = ARG(F16, 16, 1), .b_type = ARG(F16, 16, 1),
	 .c_type = ARG(F32, 8, 1), WMMA11_ON("v_wmma_f32_16x16x16_f16")},
	{.name = "v_wmma_f32_16x16x16_f16", WMMA11, .wave = 64, .elem = CG_MELEM_F16, .c_per_lane = 4, .ab_copies = 4,
	 .intrinsic = "llvm.amdgcn.wmma.f32.16x16x16.f16", .a_type = ARG(F16, 16, 1), .b_type = ARG(F16, 16, 1),
	 .c_type = ARG(F32, 4, 1), WMMA11_ON("v_wmma_f32_16x16x16_f16")},
	{.name = "v_wmma_f32_16x16x16_bf16", WMMA11, .wave = 32, .elem = CG_MELEM_BF16, .c_per_lane = 8,
	 .ab_copies = 2, .intrinsic = "llvm.amdgcn.wmma.f32.16x16x16.bf16", .a_type = ARG(I16, 16, 1),
	 .b_type = ARG(I16, 16, 1), .c_type = ARG(F32, 8, 1), WMMA11_ON("v_wmma_f32_16x16x16_bf16")},
	{.name = "v_wmma_f32_16x16x16_bf16", WMMA11, .wave = 64, .elem = CG_MELEM_BF16, .c_per_lane = 4,
	 .ab_copies = 4, .intrinsic = "llvm.amdgcn.wmma.f32.16x16x16.bf16", .a_type = ARG(I16, 16, 1),
	 .b_type = ARG(I16, 16, 1), .c_type = ARG(F32, 4, 1), WMMA11_ON("v_wmma_f32_16x16x16_bf16")},

	{.name = "v_wmma_f32_16x16x16_f16", WMMA12, .elem = CG_MELEM_F16, .intrinsic = "llvm.amdgcn.wmma.f32.16x16x16.f16",
	 .a_type = ARG(F16, 8, 1), .b_type = ARG(F16, 8, 1), WMMA12_ON("v_wmma_f32_16x16x16_f16")},
	{.name = "v_wmma_f32_16x16x16_bf16", WMMA12, .elem = CG_MELEM_BF16,
	 .intrinsic = "llvm.amdgcn.wmma.f32.16x16x16.bf16", .a_type = ARG(I16, 8, 1), .b_type = ARG(I16, 8, 1),
	 WMMA12_ON("v_wmma_f32_16x16x16_bf16")},
};

#define NINSTRS ((int)(sizeof table / sizeof table[0]))

const CgMatrixInstr *cg_matrix_instrs(int *count)
{
	*count = NINSTRS;
	return table;
}

const CgMatrixInstr *cg_matrix_instr_find(unsigned caps, const char *name, int wave)
{
	for (int i = 0; i < NINSTRS; i++)
		if (table[i].caps == caps && !strcmp(table[i].name, name) && table[i].wave == wave)
			return &table[i];
	return NULL;
}
