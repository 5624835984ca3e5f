/* targets.c: the target table (every AMD and NVIDIA architecture netc compiles for, and the
 * host), name and alias lookup, target features and wave-size options. */
#include <string.h>

#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "codegen/targets.h"

/* Register budgets of AMD generations, as the hardware (and LLVM's model of it) has them:
 * gfx8/9 allocate VGPRs in fours from 256 per lane and SGPRs in sixteens from 800 per SIMD;
 * gfx90a/gfx942 have 512 unified VGPRs in eights; gfx10/10.3 have 1024 (wave32) or 512 (wave64)
 * in eights/fours; gfx11/12 parts with the large register file 1536/768 in 24s/12s. */
#define GCN64 64, false, true
#define RDNA 32, true, true
#define GFX9_REGS 256, 0, 256, 0, 4, 800, 102, 16
#define CDNA2_REGS 512, 0, 512, 0, 8, 800, 102, 16
#define GFX10_REGS 256, 1024, 512, 8, 4, 0, 0, 0
#define GFX11_REGS 256, 1536, 768, 24, 12, 0, 0, 0
#define KIB 1024

static const CgTargetInfo table[] = {
	{"gfx803", "rx550,rx470,rx580", CG_AMDGPU, "GCN 4 (Polaris, Fiji)",
	 "RX 550/560/470/480/570/580/590, R9 Fury/Nano; ROCm dropped it (community builds still run it)",
	 GCN64, "", 64 * KIB, GFX9_REGS, 10, 0},
	{"gfx900", "vega56,vega64", CG_AMDGPU, "GCN 5 (Vega 10)",
	 "RX Vega 56/64, Vega Frontier Edition, MI25; ROCm dropped it after 4.5",
	 GCN64, "xnack", 64 * KIB, GFX9_REGS, 10, 0},
	{"gfx906", "radeon-vii,mi50,mi60", CG_AMDGPU, "GCN 5 (Vega 20)",
	 "Radeon VII, Instinct MI50/MI60; packed f16 and dot instructions; ROCm 6 keeps it in maintenance only",
	 GCN64, "sramecc,xnack", 64 * KIB, GFX9_REGS, 10, 0},
	{"gfx908", "mi100", CG_AMDGPU, "CDNA 1 (Arcturus)",
	 "Instinct MI100; first matrix cores (MFMA), 256 more AccVGPRs beside the 256 VGPRs",
	 GCN64, "sramecc,xnack", 64 * KIB, GFX9_REGS, 10, 0},
	{"gfx90a", "mi210,mi250,mi250x", CG_AMDGPU, "CDNA 2 (Aldebaran)",
	 "Instinct MI210/MI250/MI250X; 512 unified VGPRs, f64 matrix cores, packed f32",
	 GCN64, "sramecc,xnack", 64 * KIB, CDNA2_REGS, 8, 0},
	{"gfx942", "mi300x,mi300a,mi325x", CG_AMDGPU, "CDNA 3 (Aqua Vanjaram)",
	 "Instinct MI300X/MI300A/MI325X; 512 unified VGPRs, fp8 matrix cores",
	 GCN64, "sramecc,xnack", 64 * KIB, CDNA2_REGS, 8, 0},
	{"gfx1030", "rx6800,rx6800xt,rx6900xt", CG_AMDGPU, "RDNA 2 (Navi 21)",
	 "RX 6800/6800 XT/6900 XT/6950 XT, PRO W6800; wave32 by default, wave64 on request",
	 RDNA, "", 64 * KIB, GFX10_REGS, 16, 0},
	{"gfx1031", "rx6800m,rx6700xt", CG_AMDGPU, "RDNA 2 (Navi 22)",
	 "RX 6700 XT/6750 XT, RX 6800M/6850M XT; not in ROCm's list (people run it as gfx1030)",
	 RDNA, "", 64 * KIB, GFX10_REGS, 16, 0},
	{"gfx1100", "rx7900xtx,rx7900xt", CG_AMDGPU, "RDNA 3 (Navi 31)",
	 "RX 7900 XTX/XT/GRE, PRO W7900/W7800; 1536 VGPRs per SIMD, WMMA, dual-issue VALU",
	 RDNA, "", 64 * KIB, GFX11_REGS, 16, 0},
	{"gfx1101", "rx7800xt,rx7700xt", CG_AMDGPU, "RDNA 3 (Navi 32)",
	 "RX 7800 XT/7700 XT, PRO W7700; 1536 VGPRs per SIMD, WMMA",
	 RDNA, "", 64 * KIB, GFX11_REGS, 16, 0},
	{"gfx1200", "rx9060xt", CG_AMDGPU, "RDNA 4 (Navi 44)",
	 "RX 9060 XT; newest ISA (gfx12 waitcounts, WMMA with fp8); ROCm support is recent",
	 RDNA, "", 64 * KIB, GFX11_REGS, 16, 0},
	{"gfx1201", "rx9070xt,rx9070", CG_AMDGPU, "RDNA 4 (Navi 48)",
	 "RX 9070 XT/9070, AI PRO R9700; newest ISA (gfx12 waitcounts, WMMA with fp8)",
	 RDNA, "", 64 * KIB, GFX11_REGS, 16, 0},
	/* NVIDIA: 48 KiB is what a kernel may declare statically; registers per thread, warps per SM */
	{"sm_70", "v100", CG_NVPTX, "Volta", "V100, Titan V; the ptxas of CUDA 13 no longer assembles it",
	 32, true, false, "", 48 * KIB, 255, 0, 0, 0, 0, 0, 0, 0, 64, 60},
	{"sm_75", "t4,rtx2080", CG_NVPTX, "Turing", "T4, RTX 20xx, Quadro RTX",
	 32, true, false, "", 48 * KIB, 255, 0, 0, 0, 0, 0, 0, 0, 32, 63},
	{"sm_80", "a100", CG_NVPTX, "Ampere (GA100)", "A100, A30; bf16 and tf32 tensor cores",
	 32, true, false, "", 48 * KIB, 255, 0, 0, 0, 0, 0, 0, 0, 64, 70},
	{"sm_86", "rtx3090,a10", CG_NVPTX, "Ampere (GA10x)", "RTX 30xx, A10, A40, RTX A6000",
	 32, true, false, "", 48 * KIB, 255, 0, 0, 0, 0, 0, 0, 0, 48, 71},
	{"sm_89", "rtx4090,l4,l40", CG_NVPTX, "Ada Lovelace", "RTX 40xx, L4, L40/L40S; fp8 tensor cores",
	 32, true, false, "", 48 * KIB, 255, 0, 0, 0, 0, 0, 0, 0, 48, 78},
	{"sm_90", "h100,h200", CG_NVPTX, "Hopper", "H100, H200, GH200; the GPU netc's CUDA numbers come from",
	 32, true, false, "", 48 * KIB, 255, 0, 0, 0, 0, 0, 0, 0, 64, 78},
	{"host", "cpu", CG_HOST, "host CPU", "the CPU netc runs on (LLVM's host CPU name and features)",
	 0, false, false, "", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
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

/* Whether name is one of the comma-separated words of list. */
static bool in_list(const char *list, const char *name, size_t len)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n == len && !strncmp(p, name, len))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static const CgTargetInfo *find(const char *name, size_t len)
{
	for (int i = 0; i < NTARGETS; i++)
		if ((strlen(table[i].name) == len && !strncmp(table[i].name, name, len)) || in_list(table[i].aliases, name, len))
			return &table[i];
	return NULL;
}

/* ---- host ---- */

bool cg_target_host(CgTarget *t)
{
	memset(t, 0, sizeof *t);
	if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter())
		return false;
	char *triple = LLVMGetDefaultTargetTriple();
	char *cpu = LLVMGetHostCPUName();
	char *features = LLVMGetHostCPUFeatures();
	snprintf(t->name, sizeof t->name, "host");
	snprintf(t->arch, sizeof t->arch, "host");
	t->kind = CG_HOST;
	snprintf(t->triple, sizeof t->triple, "%s", triple);
	snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
	snprintf(t->features, sizeof t->features, "%s", features);
	/* "+avx512f" must not match "+avx512fp16" alone: look for the name followed by ',' or end */
	bool avx512 = in_list(t->features, "+avx512f", 8);
	bool avx = in_list(t->features, "+avx2", 5) || in_list(t->features, "+avx", 4);
	t->simd_f32 = avx512 ? 16 : avx ? 8 : 4;
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(features);
	return true;
}

/* ---- GPU targets ---- */

/* Parses ":sramecc+:xnack-" into LLVM features ("+sramecc,-xnack") and the canonical suffix
 * (features in LLVM's target-ID order, sramecc before xnack). */
static bool parse_features(const CgTargetInfo *ti, const char *p, CgTarget *t, char *suffix, size_t slen,
			   char *err, size_t errlen)
{
	static const char *const known[] = {"sramecc", "xnack"};
	int state[2] = {0, 0}; /* 0 unset, '+' or '-' */
	while (*p == ':') {
		p++;
		size_t n = strcspn(p, ":");
		char sign = n > 1 ? p[n - 1] : 0;
		int k = -1;
		for (int i = 0; i < 2; i++)
			if (n - 1 == strlen(known[i]) && !strncmp(p, known[i], n - 1))
				k = i;
		if ((sign != '+' && sign != '-') || k < 0 || !in_list(ti->features, known[k], strlen(known[k]))) {
			snprintf(err, errlen, "target %s: unknown feature '%.*s' (%s%s%s)", ti->name, (int)n, p,
				 ti->features[0] ? "it takes " : "it takes no features",
				 ti->features[0] ? ti->features : "", ti->features[0] ? ", each followed by + or -" : "");
			return false;
		}
		state[k] = sign;
		p += n;
	}
	suffix[0] = 0;
	for (int i = 0; i < 2; i++) {
		if (!state[i])
			continue;
		size_t len = strlen(suffix), flen = strlen(t->features);
		snprintf(suffix + len, slen - len, ":%s%c", known[i], state[i]);
		snprintf(t->features + flen, sizeof t->features - flen, "%s%c%s", flen ? "," : "", state[i], known[i]);
	}
	return true;
}

static bool pick_wave(const CgTargetInfo *ti, int wave, CgTarget *t, char *err, size_t errlen)
{
	if (wave && wave != 32 && wave != 64) {
		snprintf(err, errlen, "wave size %d: it is 32 or 64", wave);
		return false;
	}
	t->wave = ti->wave;
	if (ti->kind != CG_AMDGPU || !wave)
		return true; /* NVIDIA warps are 32 and the host has none: the option is for AMD */
	if ((wave == 32 && !ti->wave32) || (wave == 64 && !ti->wave64)) {
		snprintf(err, errlen, "%s runs wave%d only: wave%d needs gfx10 or newer", ti->name, ti->wave, wave);
		return false;
	}
	t->wave = wave;
	return true;
}

static bool amdgpu_target(const CgTargetInfo *ti, const char *spec, const CgTargetOptions *o, CgTarget *t,
			  char *err, size_t errlen)
{
	int cov = o && o->code_object_version ? o->code_object_version : 5;
	if (cov < 4 || cov > 6) {
		snprintf(err, errlen, "code-object version %d: netc writes 4, 5 or 6", cov);
		return false;
	}
	char suffix[32];
	if (!parse_features(ti, spec + strcspn(spec, ":"), t, suffix, sizeof suffix, err, errlen) ||
	    !pick_wave(ti, o ? o->wave : 0, t, err, errlen))
		return false;
	/* gfx10+ run either size; the feature picks it (gfx9 and older only know wave64) */
	if (ti->wave32) {
		size_t flen = strlen(t->features);
		snprintf(t->features + flen, sizeof t->features - flen, "%s+wavefrontsize%d", flen ? "," : "", t->wave);
	}
	snprintf(t->name, sizeof t->name, "%s%s", ti->name, suffix);
	snprintf(t->triple, sizeof t->triple, "amdgcn-amd-amdhsa");
	t->code_object_version = cov;
	return true;
}

static bool nvptx_target(const CgTargetInfo *ti, const char *spec, const CgTargetOptions *o, CgTarget *t,
			 char *err, size_t errlen)
{
	if (spec[strcspn(spec, ":")]) {
		snprintf(err, errlen, "target %s takes no features", ti->name);
		return false;
	}
	if (!pick_wave(ti, o ? o->wave : 0, t, err, errlen))
		return false;
	snprintf(t->name, sizeof t->name, "%s", ti->name);
	snprintf(t->triple, sizeof t->triple, "nvptx64-nvidia-cuda");
	snprintf(t->features, sizeof t->features, "+ptx%d", ti->ptx_version);
	return true;
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
	if (ti->kind == CG_HOST) {
		if (spec[len]) {
			snprintf(err, errlen, "target host takes no features");
			return false;
		}
		if (!cg_target_host(t)) {
			snprintf(err, errlen, "LLVM has no native target");
			return false;
		}
		return true;
	}
	t->kind = ti->kind;
	snprintf(t->arch, sizeof t->arch, "%s", ti->name);
	snprintf(t->cpu, sizeof t->cpu, "%s", ti->name);
	return ti->kind == CG_AMDGPU ? amdgpu_target(ti, spec, o, t, err, errlen)
				     : nvptx_target(ti, spec, o, t, err, errlen);
}

/* ---- `netc targets` ---- */

static void print_wave(FILE *out, const CgTargetInfo *ti)
{
	if (ti->kind == CG_HOST)
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
		if (ti->lds_bytes)
			fprintf(out, " %-7s", ti->lds_bytes == 64 * KIB ? "64 KiB" : "48 KiB");
		else
			fprintf(out, " %-7s", "-");
		fprintf(out, " %s: %s\n", ti->family, ti->notes);
	}
	fprintf(out, "\nAMD options: --wave32/--wave64 where the chip runs both (gfx10 and newer),\n"
		     "--code-object-version 4|5|6 (default 5), features after a colon where the chip has\n"
		     "them (gfx90a:xnack-, gfx906:sramecc+).\n");
}
