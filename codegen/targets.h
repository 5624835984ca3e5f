/* targets.h: what netc knows of each target beyond CgTarget: products, wave sizes, matrix
 * instructions, and the register and LDS budgets that `netc info` turns into occupancy
 * (codegen/targets.c). How code is made for a kind of target is its CgTargetOps (target.h). */
#ifndef NETC_TARGETS_H
#define NETC_TARGETS_H

#include "codegen/cg.h"

typedef struct CgTargetInfo {
	const char *name;       /* architecture: "gfx906", "sm_90", "host" */
	const char *aliases;    /* comma-separated product names: "radeon-vii,mi50" */
	CgTargetKind kind;
	const char *family;     /* "GCN 5 (Vega 20)" */
	const char *notes;      /* products and what is known of the target */
	int wave;               /* default wavefront/warp size (0 on the host) */
	bool wave32, wave64;    /* which sizes the chip runs */
	const char *features;   /* target features it accepts after a colon: "sramecc,xnack" */
	int lds_bytes;          /* LDS / static shared memory one work-group may use */
	/* NVIDIA: shared memory one block may use when its kernel opts in to more than lds_bytes
	 * (dynamic shared memory, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); 0: lds_bytes */
	int shared_optin;
	int max_vgprs;          /* VGPRs one wave may address (NVIDIA: registers per thread) */
	/* AMD occupancy: VGPRs per SIMD lane, and their allocation granule, by wave size */
	int vgprs_simd32, vgprs_simd64;
	int vgpr_granule32, vgpr_granule64;
	/* AMD gfx8/gfx9 only (0 elsewhere: SGPRs do not limit waves on gfx10+) */
	int sgprs_simd, max_sgprs, sgpr_granule;
	int max_waves_simd;     /* wave slots per SIMD (NVIDIA: warps per SM) */
	int ptx_version;        /* NVIDIA: PTX ISA version the code declares (78 = 7.8) */
	unsigned matrix;        /* CgMatrixCaps: its matrix and dot-product instructions */
	/* The roofline of `bench --profile`: the vendor's fp32 vector (not matrix) peak and memory
	 * bandwidth of one product of the row (peak_of); 0 on the host, which is measured. */
	double peak_gflops, peak_gbs;
	const char *peak_of;
	int cus;                /* AMD: compute units of that product (the tile cost model's, tile_cost.h) */
	int sms;                /* NVIDIA: streaming multiprocessors of that product (the grids of the GEMM
				   template's work-groups of several tiles, gemm_gpu.c) */
	/* The same product's dense matrix-unit peaks (GFLOP/s, f32 accumulation) for the operands
	 * netc multiplies there: f32 (CDNA's f32 MFMA), tf32 (NVIDIA; gfx942's xf32), f16, bf16; 0
	 * where netc does not use such a unit on the row or no figure is cited. */
	double peak_mf32, peak_tf32, peak_f16, peak_bf16;
	/* Targets of one class get the same O3 result from the same IR, so they optimize a unit
	 * once (codegen/o3_share.h; tests/lit/targets/o3_share.test checks it); NULL: alone. */
	const char *o3_class;
	/* Targets of one ISA class make the same machine code from the same IR: LLVM gives them the
	 * same subtarget features and scheduling model, so their code objects differ only in the
	 * target's name (codegen/isa_twins.h; tests/lit/targets/isa_twins.test); NULL: alone. */
	const char *isa_class;
	/* Its code flushes float32 denormals to zero: where the only full-rate float32 multiply-add
	 * (v_mad_f32, v_mac_f32) flushes them and v_fma_f32 is slow (gfx8), as clang's AMDGPU
	 * driver defaults to for such chips; elsewhere IEEE (codegen/cg_driver.c). */
	bool flush_f32_denormals;
} CgTargetInfo;

/* The peak FLOP/s that bounds t's GEMM kernels under precision p (whose element type the ops
 * in PrecisionKind's comment say): a matrix unit's where netc uses one (t->matrix) and the row
 * cites it, twice the fp32 vector peak where two half products take one instruction (dot2, or
 * packed FMAs under --packed-half), else the fp32 vector peak; *unit gets its words ("bf16
 * matrix", "fp32 vector"). 0 for an architecture without a row. */
double cg_target_peak_gflops(const CgTarget *t, PrecisionKind precision, const char **unit);

/* The row of an architecture ("gfx90a", not "gfx90a:xnack-"; no aliases), or NULL. */
const CgTargetInfo *cg_target_info(const char *arch);
/* Every row, in the order `netc targets` lists them; *count gets how many. */
const CgTargetInfo *cg_target_table(int *count);

#endif
