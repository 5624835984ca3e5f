/* targets.c: the target table (every AMD and NVIDIA architecture netc compiles for, and the
 * host), name and alias lookup, `netc targets`, and the LLVM target machine of a target. What a
 * kind of target does is its ops in codegen/target_*.c. */
#include <string.h>

#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "codegen/target.h"

/* Register budgets of AMD generations, as the hardware (and LLVM's model of it) has them:
 * gfx8/9 allocate VGPRs in fours from 256 per lane and SGPRs in sixteens from 800 per SIMD;
 * gfx90a/gfx942 have 512 unified VGPRs in eights; gfx10/10.3 have 1024 (wave32) or 512 (wave64)
 * in eights/fours; gfx11/12 parts with the large register file 1536/768 in 24s/12s. */
#define GCN64 .wave = 64, .wave64 = true
#define RDNA .wave = 32, .wave32 = true, .wave64 = true
#define GFX9_REGS .max_vgprs = 256, .vgprs_simd64 = 256, .vgpr_granule64 = 4, \
	.sgprs_simd = 800, .max_sgprs = 102, .sgpr_granule = 16, .max_waves_simd = 10
#define CDNA2_REGS .max_vgprs = 512, .vgprs_simd64 = 512, .vgpr_granule64 = 8, \
	.sgprs_simd = 800, .max_sgprs = 102, .sgpr_granule = 16, .max_waves_simd = 8
#define GFX10_REGS .max_vgprs = 256, .vgprs_simd32 = 1024, .vgprs_simd64 = 512, .vgpr_granule32 = 8, \
	.vgpr_granule64 = 4, .max_waves_simd = 16
#define GFX11_REGS .max_vgprs = 256, .vgprs_simd32 = 1536, .vgprs_simd64 = 768, .vgpr_granule32 = 24, \
	.vgpr_granule64 = 12, .max_waves_simd = 16
#define AMD .kind = CG_AMDGPU, .lds_bytes = 64 * KIB
/* NVIDIA: 48 KiB is what a kernel may declare statically, shared_optin what a block may take as
 * dynamic shared memory (CUDA C++ Programming Guide, "Technical Specifications per Compute
 * Capability": 96, 64, 163, 99, 99 and 227 KiB for 7.0, 7.5, 8.0, 8.6, 8.9 and 9.0); registers per
 * thread, warps per SM */
#define NVIDIA .kind = CG_NVPTX, .wave = 32, .wave32 = true, .lds_bytes = 48 * KIB, .max_vgprs = 255
#define KIB 1024
/* matrix and dot instructions (docs/targets.md) */
#define PK_F16 CG_MATRIX_PACKED_F16
#define DOT2 CG_MATRIX_DOT2
#define PK_BF16 CG_MATRIX_PACKED_BF16

static const CgTargetInfo table[] = {
	/* roofline: RX 580 (AMD: 6.17 TFLOP/s fp32, 256 GB/s) */
	{.name = "gfx803", .aliases = "rx550,rx470,rx580", AMD, .family = "GCN 4 (Polaris, Fiji)",
	 .notes = "RX 550/560/470/480/570/580/590, R9 Fury/Nano; ROCm dropped it (community builds still run it); "
		  "float32 denormals flushed to zero, so multiply-adds are full-rate v_mac_f32",
	 GCN64, .features = "", GFX9_REGS, .matrix = CG_MATRIX_NONE,
	 .peak_gflops = 6175, .peak_gbs = 256, .peak_of = "RX 580", .cus = 36, .o3_class = "gcn",
	 .flush_f32_denormals = true},
	/* roofline: RX Vega 64 (AMD: 12.66 TFLOP/s, 484 GB/s) */
	{.name = "gfx900", .aliases = "vega56,vega64", AMD, .family = "GCN 5 (Vega 10)",
	 .notes = "RX Vega 56/64, Vega Frontier Edition, MI25; ROCm dropped it after 4.5",
	 GCN64, .features = "xnack", GFX9_REGS, .matrix = PK_F16,
	 .peak_gflops = 12665, .peak_gbs = 484, .peak_of = "RX Vega 64", .cus = 64, .o3_class = "gcn"},
	/* roofline: Instinct MI50 (AMD: 13.3 TFLOP/s, 1 TB/s) */
	{.name = "gfx906", .aliases = "radeon-vii,mi50,mi60", AMD, .family = "GCN 5 (Vega 20)",
	 .notes = "Radeon VII, Instinct MI50/MI60; packed f16 and dot instructions; ROCm 6 keeps it in maintenance only",
	 GCN64, .features = "sramecc,xnack", GFX9_REGS, .matrix = PK_F16 | DOT2,
	 .peak_gflops = 13300, .peak_gbs = 1024, .peak_of = "Instinct MI50", .cus = 60, .o3_class = "gcn"},
	/* roofline: Instinct MI100 (AMD: 23.1 TFLOP/s vector fp32, 1.23 TB/s; matrix fp32 46.1,
	 * fp16 184.6, bf16 92.3) */
	{.name = "gfx908", .aliases = "mi100", AMD, .family = "CDNA 1 (Arcturus)",
	 .notes = "Instinct MI100; first matrix cores (MFMA), 256 more AccVGPRs beside the 256 VGPRs",
	 GCN64, .features = "sramecc,xnack", GFX9_REGS, .matrix = CG_MATRIX_MFMA | PK_F16 | DOT2,
	 .peak_gflops = 23100, .peak_gbs = 1229, .peak_of = "Instinct MI100", .cus = 120, .peak_mf32 = 46100, .peak_f16 = 184600,
	 .peak_bf16 = 92300, .o3_class = "gcn"},
	/* roofline: Instinct MI250X (AMD: 47.9 TFLOP/s vector fp32, 3.2 TB/s; matrix fp32 95.7,
	 * fp16 and bf16 383) */
	{.name = "gfx90a", .aliases = "mi210,mi250,mi250x", AMD, .family = "CDNA 2 (Aldebaran)",
	 .notes = "Instinct MI210/MI250/MI250X; 512 unified VGPRs, f64 matrix cores, packed f32",
	 GCN64, .features = "sramecc,xnack", CDNA2_REGS, .matrix = CG_MATRIX_MFMA | PK_F16 | DOT2,
	 .peak_gflops = 47900, .peak_gbs = 3277, .peak_of = "Instinct MI250X", .cus = 220, .peak_mf32 = 95700, .peak_f16 = 383000,
	 .peak_bf16 = 383000, .o3_class = "cdna2"},
	/* roofline: Instinct MI300X (AMD: 81.7 TFLOP/s vector fp32, 5.3 TB/s; matrix fp32 163.4,
	 * tf32 653.7, fp16 and bf16 1307.4, dense) */
	{.name = "gfx942", .aliases = "mi300x,mi300a,mi325x", AMD, .family = "CDNA 3 (Aqua Vanjaram)",
	 .notes = "Instinct MI300X/MI300A/MI325X; 512 unified VGPRs, fp8 matrix cores",
	 GCN64, .features = "sramecc,xnack", CDNA2_REGS, .matrix = CG_MATRIX_MFMA | PK_F16 | DOT2,
	 .peak_gflops = 81700, .peak_gbs = 5300, .peak_of = "Instinct MI300X", .cus = 304, .peak_mf32 = 163400, .peak_tf32 = 653700,
	 .peak_f16 = 1307400, .peak_bf16 = 1307400, .o3_class = "cdna2"},
	/* roofline: RX 6900 XT (AMD: 23.04 TFLOP/s, 512 GB/s) */
	{.name = "gfx1030", .aliases = "rx6800,rx6800xt,rx6900xt", AMD, .family = "RDNA 2 (Navi 21)",
	 .notes = "RX 6800/6800 XT/6900 XT/6950 XT, PRO W6800; wave32 by default, wave64 on request",
	 RDNA, .features = "", GFX10_REGS, .matrix = PK_F16 | DOT2,
	 .peak_gflops = 23040, .peak_gbs = 512, .peak_of = "RX 6900 XT", .cus = 80, .o3_class = "rdna", .isa_class = "gfx10.3"},
	/* roofline: RX 6700 XT (AMD: 13.21 TFLOP/s, 384 GB/s) */
	{.name = "gfx1031", .aliases = "rx6800m,rx6700xt", AMD, .family = "RDNA 2 (Navi 22)",
	 .notes = "RX 6700 XT/6750 XT, RX 6800M/6850M XT; not in ROCm's list (people run it as gfx1030)",
	 RDNA, .features = "", GFX10_REGS, .matrix = PK_F16 | DOT2,
	 .peak_gflops = 13210, .peak_gbs = 384, .peak_of = "RX 6700 XT", .cus = 40, .o3_class = "rdna", .isa_class = "gfx10.3"},
	/* roofline: RX 7900 XTX (AMD: 61.4 TFLOP/s with dual issue, 960 GB/s) */
	{.name = "gfx1100", .aliases = "rx7900xtx,rx7900xt", AMD, .family = "RDNA 3 (Navi 31)",
	 .notes = "RX 7900 XTX/XT/GRE, PRO W7900/W7800; 1536 VGPRs per SIMD, WMMA, dual-issue VALU",
	 RDNA, .features = "", GFX11_REGS, .matrix = CG_MATRIX_WMMA_GFX11 | PK_F16 | DOT2,
	 .peak_gflops = 61400, .peak_gbs = 960, .peak_of = "RX 7900 XTX", .cus = 96, .o3_class = "rdna"},
	/* roofline: RX 7800 XT (AMD: 37.3 TFLOP/s with dual issue, 624 GB/s). No ISA class with gfx1100:
	 * LLVM gives gfx1100 user-sgpr-init16-bug (at least 16 user and system SGPRs enabled), which
	 * changes kernel descriptors and register assignment (docs/targets.md). */
	{.name = "gfx1101", .aliases = "rx7800xt,rx7700xt", AMD, .family = "RDNA 3 (Navi 32)",
	 .notes = "RX 7800 XT/7700 XT, PRO W7700; 1536 VGPRs per SIMD, WMMA",
	 RDNA, .features = "", GFX11_REGS, .matrix = CG_MATRIX_WMMA_GFX11 | PK_F16 | DOT2,
	 .peak_gflops = 37320, .peak_gbs = 624, .peak_of = "RX 7800 XT", .cus = 60, .o3_class = "rdna"},
	/* roofline: RX 9060 XT (AMD: 25.6 TFLOP/s, 320 GB/s) */
	{.name = "gfx1200", .aliases = "rx9060xt", AMD, .family = "RDNA 4 (Navi 44)",
	 .notes = "RX 9060 XT; newest ISA (gfx12 waitcounts, WMMA with fp8); ROCm support is recent",
	 RDNA, .features = "", GFX11_REGS, .matrix = CG_MATRIX_WMMA_GFX12 | PK_F16 | DOT2,
	 .peak_gflops = 25640, .peak_gbs = 320, .peak_of = "RX 9060 XT", .cus = 32, .o3_class = "rdna", .isa_class = "gfx12"},
	/* roofline: RX 9070 XT (AMD: 48.7 TFLOP/s, 640 GB/s) */
	{.name = "gfx1201", .aliases = "rx9070xt,rx9070", AMD, .family = "RDNA 4 (Navi 48)",
	 .notes = "RX 9070 XT/9070, AI PRO R9700; newest ISA (gfx12 waitcounts, WMMA with fp8)",
	 RDNA, .features = "", GFX11_REGS, .matrix = CG_MATRIX_WMMA_GFX12 | PK_F16 | DOT2,
	 .peak_gflops = 48660, .peak_gbs = 640, .peak_of = "RX 9070 XT", .cus = 64, .o3_class = "rdna", .isa_class = "gfx12"},
	/* roofline: V100 SXM2 (NVIDIA: 15.7 TFLOP/s fp32, 900 GB/s) */
	{.name = "sm_70", .aliases = "v100", NVIDIA, .family = "Volta",
	 .notes = "V100, Titan V; the ptxas of CUDA 13 no longer assembles it",
	 .features = "", .max_waves_simd = 64, .shared_optin = 96 * KIB, .ptx_version = 60, .matrix = PK_F16,
	 .peak_gflops = 15700, .peak_gbs = 900, .peak_of = "V100 SXM2"},
	/* roofline: T4 (NVIDIA: 8.1 TFLOP/s fp32, 320 GB/s) */
	{.name = "sm_75", .aliases = "t4,rtx2080", NVIDIA, .family = "Turing", .notes = "T4, RTX 20xx, Quadro RTX",
	 .features = "", .max_waves_simd = 32, .shared_optin = 64 * KIB, .ptx_version = 63, .matrix = PK_F16,
	 .peak_gflops = 8100, .peak_gbs = 320, .peak_of = "T4"},
	/* roofline: A100 SXM 80GB (NVIDIA: 19.5 TFLOP/s fp32, 2039 GB/s; tensor tf32 156, fp16 and
	 * bf16 312, dense) */
	{.name = "sm_80", .aliases = "a100", NVIDIA, .family = "Ampere (GA100)", .notes = "A100, A30; bf16 and tf32 tensor cores",
	 .features = "", .max_waves_simd = 64, .shared_optin = 163 * KIB, .ptx_version = 70, .matrix = CG_MATRIX_MMA | PK_F16 | PK_BF16,
	 .peak_gflops = 19500, .peak_gbs = 2039, .peak_of = "A100 SXM 80GB", .peak_tf32 = 156000, .peak_f16 = 312000,
	 .peak_bf16 = 312000},
	/* roofline: RTX 3090 (NVIDIA: 35.6 TFLOP/s fp32, 936 GB/s; tensor with fp32 accumulation tf32
	 * 35.6, fp16 and bf16 71, dense) */
	{.name = "sm_86", .aliases = "rtx3090,a10", NVIDIA, .family = "Ampere (GA10x)", .notes = "RTX 30xx, A10, A40, RTX A6000",
	 .features = "", .max_waves_simd = 48, .shared_optin = 99 * KIB, .ptx_version = 71, .matrix = CG_MATRIX_MMA | PK_F16 | PK_BF16,
	 .peak_gflops = 35580, .peak_gbs = 936, .peak_of = "RTX 3090", .peak_tf32 = 35600, .peak_f16 = 71000,
	 .peak_bf16 = 71000},
	/* roofline: RTX 4090 (NVIDIA: 82.6 TFLOP/s fp32, 1008 GB/s; tensor with fp32 accumulation tf32
	 * 82.6, fp16 and bf16 165.2, dense) */
	{.name = "sm_89", .aliases = "rtx4090,l4,l40", NVIDIA, .family = "Ada Lovelace",
	 .notes = "RTX 40xx, L4, L40/L40S; fp8 tensor cores",
	 .features = "", .max_waves_simd = 48, .shared_optin = 99 * KIB, .ptx_version = 78, .matrix = CG_MATRIX_MMA | PK_F16 | PK_BF16,
	 .peak_gflops = 82580, .peak_gbs = 1008, .peak_of = "RTX 4090", .peak_tf32 = 82600, .peak_f16 = 165200,
	 .peak_bf16 = 165200},
	/* roofline: H100 SXM (NVIDIA: 67 TFLOP/s fp32, 3.35 TB/s; tensor tf32 494.7, fp16 and bf16
	 * 989.4, dense) */
	{.name = "sm_90", .aliases = "h100,h200", NVIDIA, .family = "Hopper",
	 .notes = "H100, H200, GH200; the GPU netc's CUDA numbers come from",
	 .features = "", .max_waves_simd = 64, .shared_optin = 227 * KIB, .ptx_version = 80, .matrix = CG_MATRIX_MMA | CG_MATRIX_WGMMA | PK_F16 | PK_BF16,
	 .peak_gflops = 66900, .peak_gbs = 3350, .peak_of = "H100 SXM", .sms = 132, .peak_tf32 = 494700, .peak_f16 = 989400,
	 .peak_bf16 = 989400},
	{.name = "host", .aliases = "cpu", .kind = CG_HOST, .family = "host CPU",
	 .notes = "the CPU netc runs on (LLVM's host CPU name and features)", .features = "", .matrix = CG_MATRIX_NONE},
};

double cg_target_peak_gflops(const CgTarget *target, PrecisionKind precision, const char **unit)
{
	const CgTargetInfo *t = cg_target_info(target->arch);
	*unit = "fp32 vector";
	if (!t)
		return 0;
	bool units = target->matrix & CG_MATRIX_UNITS;
	struct {
		double peak;
		const char *unit;
	} pick[] = {
		{precision == PREC_FP16 ? t->peak_f16 : 0, "f16 matrix"},
		{precision == PREC_BF16 ? t->peak_bf16 : 0, "bf16 matrix"},
		{precision == PREC_TF32 ? t->peak_tf32 : 0, "tf32 matrix"},
		/* CDNA multiplies f32 (and tf32 where it has no xf32) on its f32 MFMA */
		{precision == PREC_FP32 || precision == PREC_TF32 ? t->peak_mf32 : 0, "f32 matrix"},
	};
	for (size_t i = 0; i < sizeof pick / sizeof *pick && units; i++)
		if (pick[i].peak > 0) {
			*unit = pick[i].unit;
			return pick[i].peak;
		}
	/* two products per lane and instruction: v_dot2_f32_f16, or packed FMAs where asked */
	bool f16 = precision == PREC_FP16, bf16 = precision == PREC_BF16;
	if (f16 && (target->matrix & CG_MATRIX_DOT2)) {
		*unit = "f16 dot2 vector";
		return 2 * t->peak_gflops;
	}
	if (target->packed_half && ((f16 && (target->matrix & CG_MATRIX_PACKED_F16)) ||
				    (bf16 && (target->matrix & CG_MATRIX_PACKED_BF16)))) {
		*unit = f16 ? "packed f16 vector" : "packed bf16 vector";
		return 2 * t->peak_gflops;
	}
	return t->peak_gflops;
}

/* How code is made for each kind of target. */
static const CgTargetOps *const ops_of_kind[] = {
	[CG_HOST] = &cg_target_host_ops,
	[CG_AMDGPU] = &cg_target_amdgpu_ops,
	[CG_NVPTX] = &cg_target_nvptx_ops,
};

#define NTARGETS ((int)(sizeof table / sizeof table[0]))

const CgTargetInfo *cg_target_table(int *count)
{
	*count = NTARGETS;
	return table;
}

const CgTargetInfo *cg_target_info(const char *arch)
{
	for (int i = 0; i < NTARGETS; i++)
		if (!strcmp(table[i].name, arch))
			return &table[i];
	return NULL;
}

static const CgTargetInfo *find(const char *name, size_t len)
{
	for (int i = 0; i < NTARGETS; i++)
		if ((strlen(table[i].name) == len && !strncmp(table[i].name, name, len)) ||
		    cg_target_in_list(table[i].aliases, name, len))
			return &table[i];
	return NULL;
}

bool cg_target_lookup(const char *spec, const CgTargetOptions *o, CgTarget *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	size_t len = strcspn(spec, ":");
	const CgTargetInfo *ti = find(spec, len);
	if (!ti) {
		snprintf(err, errlen, "unknown target '%.*s' (`netc targets` lists them)", (int)len, spec);
		return false;
	}
	t->kind = ti->kind;
	t->ops = ops_of_kind[ti->kind];
	t->matrix = ti->matrix;
	if (o && o->no_matrix_units)
		t->matrix &= ~(unsigned)CG_MATRIX_UNITS;
	t->packed_half = o && o->packed_half;
	t->lds_static = ti->lds_bytes;
	t->lds_max = ti->shared_optin > ti->lds_bytes ? ti->shared_optin : ti->lds_bytes;
	t->o3_class = ti->o3_class;
	t->isa_class = ti->isa_class;
	t->flush_f32_denormals = ti->flush_f32_denormals;
	snprintf(t->arch, sizeof t->arch, "%s", ti->name);
	snprintf(t->cpu, sizeof t->cpu, "%s", ti->name);
	return t->ops->configure(ti, spec, o, t, err, errlen);
}

/* ---- `netc targets` ---- */

static void print_wave(FILE *out, const CgTargetInfo *ti)
{
	if (!ti->wave)
		fprintf(out, "%-9s", "-");
	else if (ti->wave32 && ti->wave64)
		fprintf(out, "%-9s", "32 (+64)");
	else
		fprintf(out, "%-9d", ti->wave);
}

void cg_targets_print(FILE *out)
{
	fprintf(out, "%-8s %-25s %-9s %-7s %s\n", "target", "aliases", "wave", "LDS", "family: what is known");
	for (int i = 0; i < NTARGETS; i++) {
		const CgTargetInfo *ti = &table[i];
		fprintf(out, "%-8s %-25s ", ti->name, ti->aliases);
		print_wave(out, ti);
		char lds[32] = "-";
		if (ti->shared_optin > ti->lds_bytes)
			snprintf(lds, sizeof lds, "%d/%d", ti->lds_bytes / KIB, ti->shared_optin / KIB);
		else if (ti->lds_bytes)
			snprintf(lds, sizeof lds, "%d KiB", ti->lds_bytes / KIB);
		fprintf(out, " %-7s", lds);
		fprintf(out, " %s: %s\n", ti->family, ti->notes);
	}
	fprintf(out, "\nLDS: per work-group; NVIDIA's static/opt-in KiB (kernels past the static 48 take\n"
		     "dynamic shared memory).\n");
	fprintf(out, "\nAMD options: --wave32/--wave64 where the chip runs both (gfx10 and newer),\n"
		     "--code-object-version 4|5|6 (default 5), features after a colon where the chip has\n"
		     "them (gfx90a:xnack-, gfx906:sramecc+).\n");
}

LLVMTargetMachineRef cg_target_machine(const CgTarget *t, char *err, size_t errlen)
{
	LLVMTargetRef target;
	char *msg = NULL;
	if (!t->ops->init_llvm()) {
		snprintf(err, errlen, "LLVM has no native target");
		return NULL;
	}
	if (LLVMGetTargetFromTriple(t->triple, &target, &msg)) {
		snprintf(err, errlen, "no LLVM target for %s: %s", t->triple, msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return NULL;
	}
	return LLVMCreateTargetMachine(target, t->triple, t->cpu, t->features, LLVMCodeGenLevelAggressive,
				       t->ops->reloc, LLVMCodeModelDefault);
}
