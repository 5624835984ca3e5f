/* target_amdgpu.c: AMD GPUs (amdgcn-amd-amdhsa). Kernels use the AMDGPU kernel calling
 * convention and amdgcn intrinsics; the object is linked by ld.lld into a code object (.hsaco).
 * Options: features after a colon (sramecc, xnack), the wave size on gfx10+, the code-object
 * version. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>

#include "codegen/amdgpu_info.h"
#include "codegen/amdgpu_notes.h"
#include "codegen/target.h"
#include "runtime/bundle.h"

static bool init_llvm(void)
{
	LLVMInitializeAMDGPUTargetInfo();
	LLVMInitializeAMDGPUTarget();
	LLVMInitializeAMDGPUTargetMC();
	LLVMInitializeAMDGPUAsmPrinter();
	return true;
}

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
		if ((sign != '+' && sign != '-') || k < 0 || !cg_target_in_list(ti->features, known[k], strlen(known[k]))) {
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
	if (!cg_target_check_wave(wave, err, errlen))
		return false;
	t->wave = wave ? wave : ti->wave;
	if ((wave == 32 && !ti->wave32) || (wave == 64 && !ti->wave64)) {
		snprintf(err, errlen, "%s runs wave%d only: wave%d needs gfx10 or newer", ti->name, ti->wave, wave);
		return false;
	}
	return true;
}

static bool configure(const CgTargetInfo *ti, const char *spec, const CgTargetOptions *o, CgTarget *t, char *err,
		      size_t errlen)
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

/* LLVM spells code-object version 5 as 500 */
static void module_flags(Cg *cg)
{
	LLVMAddModuleFlag(cg->mod, LLVMModuleFlagBehaviorError, "amdhsa_code_object_version", 26,
			  LLVMValueAsMetadata(cg_i32(cg, cg->target->code_object_version * 100)));
}

static void signature(Cg *cg, const char *name) { cg_gpu_signature(cg, name, LLVMAMDGPUKERNELCallConv); }

/* netc's AMD kernels are 1-D, call nothing and never read the implicit arguments: saying so
 * spares the SGPRs the ABI would set up for them. The grid is whole work-groups. */
static void kernel_finish(Cg *cg, CgKernel *k, int64_t ret, LLVMBasicBlockRef body)
{
	static const char *const unused[] = {
		"amdgpu-no-dispatch-ptr", "amdgpu-no-queue-ptr", "amdgpu-no-dispatch-id", "amdgpu-no-implicitarg-ptr",
		"amdgpu-no-workitem-id-y", "amdgpu-no-workitem-id-z", "amdgpu-no-workgroup-id-y",
		"amdgpu-no-workgroup-id-z", "amdgpu-no-hostcall-ptr", "amdgpu-no-heap-ptr",
		"amdgpu-no-multigrid-sync-arg", "amdgpu-no-lds-kernel-id", "amdgpu-no-default-queue",
		"amdgpu-no-completion-action"};
	cg_gpu_launch(cg, k, ret, body);
	char size[32];
	snprintf(size, sizeof size, "1,%d", k->block);
	cg_fn_attr(cg, "amdgpu-flat-work-group-size", size);
	for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++)
		cg_fn_attr(cg, unused[i], "");
	cg_fn_attr(cg, "uniform-work-group-size", "true");
	if (cg->waves > 0) {
		char waves[16];
		snprintf(waves, sizeof waves, "%d", cg->waves);
		cg_fn_attr(cg, "amdgpu-waves-per-eu", waves);
	}
}

static LLVMValueRef workitem_id(Cg *cg) { return cg_call_intrinsic0(cg, "llvm.amdgcn.workitem.id.x"); }
static LLVMValueRef workgroup_id(Cg *cg) { return cg_call_intrinsic0(cg, "llvm.amdgcn.workgroup.id.x"); }

/* The C API of LLVM 19 cannot give a fence a sync scope, and a system-scope fence would flush
 * caches at every barrier: the barrier is a small IR function, parsed once per module and
 * inlined everywhere. */
static const char barrier_ir[] =
	"define void @netc.barrier() alwaysinline convergent nounwind {\n"
	"  fence syncscope(\"workgroup\") release\n"
	"  call void @llvm.amdgcn.s.barrier()\n"
	"  fence syncscope(\"workgroup\") acquire\n"
	"  ret void\n"
	"}\n"
	"declare void @llvm.amdgcn.s.barrier() convergent nounwind\n";

static LLVMValueRef barrier_fn(Cg *cg)
{
	LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, "netc.barrier");
	if (fn)
		return fn;
	LLVMMemoryBufferRef buf =
		LLVMCreateMemoryBufferWithMemoryRangeCopy(barrier_ir, sizeof barrier_ir - 1, "netc.barrier");
	LLVMModuleRef m = NULL;
	char *msg = NULL;
	if (LLVMParseIRInContext(cg->ctx, buf, &m, &msg)) {
		fprintf(stderr, "internal error: barrier IR: %s\n", msg ? msg : "?");
		abort();
	}
	LLVMSetTarget(m, LLVMGetTarget(cg->mod));
	LLVMSetDataLayout(m, LLVMGetDataLayoutStr(cg->mod));
	if (LLVMLinkModules2(cg->mod, m)) {
		fprintf(stderr, "internal error: cannot link the barrier IR\n");
		abort();
	}
	/* linked as an external definition (the linker drops unused internal ones), then made internal */
	fn = LLVMGetNamedFunction(cg->mod, "netc.barrier");
	LLVMSetLinkage(fn, LLVMInternalLinkage);
	return fn;
}

static void barrier(Cg *cg)
{
	LLVMValueRef fn = barrier_fn(cg);
	LLVMValueRef call = LLVMBuildCall2(cg->b, LLVMGlobalGetValueType(fn), fn, NULL, 0, "");
	unsigned kind = LLVMGetEnumAttributeKindForName("convergent", 10);
	LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
}

/* The scratch bytes per work-item of a unit's object, summed over its kernels (its metadata note). */
static int64_t scratch_bytes(const CgBlob *code)
{
	CgAmdCode c;
	char why[256];
	if (!cg_amd_read(code->data, code->size, &c, why, sizeof why))
		return 0;
	int64_t sum = 0;
	for (int i = 0; i < c.nkernels; i++)
		sum += c.kernels[i].scratch;
	cg_amd_free(&c);
	return sum;
}

/* objects -> .hsaco, with one metadata note for all their kernels */
static bool join(const CgBlob *units, int n, CgOutput *out, char *err, size_t errlen)
{
	return cg_link_shared(units, n, true, &out->code, &out->size, err, errlen) &&
	       cg_amd_merge_notes(out->code, out->size, err, errlen);
}

const CgTargetOps cg_target_amdgpu_ops = {
	.gpu = true,
	.buffer_args = true,
	.code_kind = CODE_HSACO,
	.code_ext = "hsaco",
	.amd_options = true,
	.shared_addrspace = 3, /* LDS */
	.gemm_wide_tiles = false,
	.winograd_windows = false,
	.reloc = LLVMRelocPIC,
	.init_llvm = init_llvm,
	.configure = configure,
	.module_flags = module_flags,
	.signature = signature,
	.kernel_entry = cg_gpu_kernel_entry,
	.kernel_finish = kernel_finish,
	.workitem_id = workitem_id,
	.workgroup_id = workgroup_id,
	.barrier = barrier,
	.emit_unit = cg_emit_object,
	.join = join,
	.occupancy_attr = "amdgpu-waves-per-eu",
	.scratch_bytes = scratch_bytes,
};
