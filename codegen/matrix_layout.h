/* matrix_layout.h: the matrix instructions netc's GEMM templates may build on (NVIDIA mma.sync,
 * AMD CDNA MFMA, RDNA 3 and RDNA 4 WMMA), one descriptor row each: shape, wave size, element
 * type, the LLVM intrinsic and its operand types, and the fragment-index functions that say which
 * element of A, B and C/D a lane holds in each of its register slots. Pure C (no LLVM), so the
 * GPU GEMM template (codegen/gemm_gpu.c) emits its fragment loads and stores through the same
 * functions that tests/unit/test_cg_matrix_layout.c checks against a lane model of each
 * instruction.
 * Where each layout comes from: codegen/matrix_layout.c and docs/codegen.md. */
#ifndef NETC_MATRIX_LAYOUT_H
#define NETC_MATRIX_LAYOUT_H

#include <stdbool.h>

#include "codegen/matrix_caps.h"

/* The element type of A and B (C and D are f32 for every row). */
typedef enum {
	CG_MELEM_F32,  /* IEEE f32 (MFMA f32) */
	CG_MELEM_XF32, /* f32 rounded to tf32 inside the unit (gfx942 xf32): stored as f32 */
	CG_MELEM_TF32, /* NVIDIA tf32: an f32 bit pattern whose low 13 mantissa bits are ignored */
	CG_MELEM_F16,
	CG_MELEM_BF16,
} CgMatrixElem;

/* The LLVM scalar an operand is made of. */
typedef enum {
	CG_MSCALAR_F32,
	CG_MSCALAR_I32,
	CG_MSCALAR_F16,
	CG_MSCALAR_I16,
} CgMatrixScalar;

/* One operand of the intrinsic: `args` arguments, each a <vector x scalar> (vector 1: the scalar
 * itself). AMD passes an operand as one vector; NVIDIA as several scalars or <2 x half>. */
typedef struct {
	CgMatrixScalar scalar;
	int vector;
	int args;
} CgMatrixArgType;

/* A matrix position: A is (m, k), B is (k, n), C and D are (m, n). */
typedef struct {
	int row, col;
} CgMatrixCoord;

typedef struct CgMatrixInstr CgMatrixInstr;

/* The element lane `lane` holds in register slot `slot` (0 <= slot < values per lane); slots
 * count elements, so two f16 in one 32-bit register are two slots, low half first. */
typedef CgMatrixCoord (*CgMatrixIndexFn)(const CgMatrixInstr *mi, int lane, int slot);

/* An architecture that has the instruction, and the mnemonic its disassembly shows there (CDNA 3
 * renamed the MFMA mnemonics; NVIDIA: the PTX instruction). */
typedef struct {
	const char *arch;
	const char *mnemonic;
} CgMatrixArch;

#define CG_MATRIX_MAX_ARCHS 4

struct CgMatrixInstr {
	const char *name;       /* the first ISA's mnemonic: "v_mfma_f32_16x16x4f32", "mma.m16n8k8.tf32" */
	unsigned caps;          /* the CgMatrixCaps bit (codegen/cg.h) a target needs for it */
	int m, n, k;
	int wave;               /* lanes that execute it together */
	CgMatrixElem elem;      /* A and B */
	int a_per_lane, b_per_lane, c_per_lane; /* values (slots) each lane holds */
	int ab_copies;          /* lanes holding each A and B value: 1, or RDNA 3's replication */
	const char *intrinsic;  /* LLVM 19's name */
	bool overloaded;        /* the intrinsic is overloaded on its result and A types (WMMA) */
	CgMatrixArgType a_type, b_type, c_type; /* D has C's type (NVIDIA: a struct of C's args) */
	int imm_args;           /* trailing i32 0 immediates (MFMA: cbsz, abid, blgp) */
	CgMatrixIndexFn a_at, b_at, c_at; /* c_at serves C and D */
	CgMatrixArch on[CG_MATRIX_MAX_ARCHS]; /* where it exists (a NULL arch ends the list) */
};

/* A lane model: an instruction's layout as its document states it, in the other direction
 * (element to lane and register slot; copy picks one of RDNA 3's replicated A and B holders).
 * Tests hold them (tests/unit/matrix_lane_models.h) as the oracle the rows are checked against,
 * and the GPU GEMM template's host emulation executes the instruction through one
 * (cg_gpu_emulation_mma); the code generator itself builds on the rows alone. */
typedef struct {
	int lane, slot;
} CgMatrixPlace;

typedef struct {
	unsigned caps; /* the family it describes: the rows of this CgMatrixCaps bit */
	CgMatrixPlace (*a)(const CgMatrixInstr *mi, int m, int k, int copy);
	CgMatrixPlace (*b)(const CgMatrixInstr *mi, int k, int n, int copy);
	CgMatrixPlace (*d)(const CgMatrixInstr *mi, int m, int n);
} CgMatrixModel;

/* Every row; *count gets how many. */
const CgMatrixInstr *cg_matrix_instrs(int *count);
/* The row of a CgMatrixCaps bit, name and wave size, or NULL (RDNA 3 and RDNA 4 share names). */
const CgMatrixInstr *cg_matrix_instr_find(unsigned caps, const char *name, int wave);
/* How many matrix elements of elem one operand of type t carries per lane (bf16 and f16 pairs
 * packed in an i32 count two). */
int cg_matrix_arg_values(const CgMatrixArgType *t, CgMatrixElem elem);
/* The size in bits of one element of elem as it sits in a register. */
int cg_matrix_elem_bits(CgMatrixElem elem);

#endif
