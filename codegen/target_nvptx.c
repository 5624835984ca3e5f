/* target_nvptx.c: NVIDIA GPUs (nvptx64-nvidia-cuda). Kernels use the PTX kernel calling
 * convention, nvvm intrinsics and nvvm.annotations; the code object is the PTX text, which the
 * CUDA driver assembles when it loads it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Target.h>

#include "codegen/target.h"
#include "runtime/bundle.h"

static bool init_llvm(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	return true;
}

/* Warps are 32: a --wave option is checked, and otherwise concerns AMD targets only. */
static bool configure(const CgTargetInfo *ti, const char *spec, const CgTargetOptions *o, CgTarget *t, char *err,
		      size_t errlen)
{
	if (spec[strcspn(spec, ":")]) {
		snprintf(err, errlen, "target %s takes no features", ti->name);
		return false;
	}
	if (!cg_target_check_wave(o ? o->wave : 0, err, errlen))
		return false;
	t->wave = ti->wave;
	snprintf(t->name, sizeof t->name, "%s", ti->name);
	snprintf(t->triple, sizeof t->triple, "nvptx64-nvidia-cuda");
	snprintf(t->features, sizeof t->features, "+ptx%d", ti->ptx_version);
	/* wgmma is an architecture-specific feature: its PTX targets sm_90a, which runs on sm_90 only */
	if (ti->matrix & CG_MATRIX_WGMMA)
		snprintf(t->cpu, sizeof t->cpu, "%sa", ti->name);
	return true;
}

static void signature(Cg *cg, const char *name) { cg_gpu_signature(cg, name, LLVMPTXKernelCallConv); }

/* NVPTX marks kernels and their block size in the nvvm.annotations metadata. */
static void annotate(Cg *cg, const char *key, int value)
{
	LLVMMetadataRef md[3] = {LLVMValueAsMetadata(cg->fn), LLVMMDStringInContext2(cg->ctx, key, strlen(key)),
				 LLVMValueAsMetadata(cg_i32(cg, value))};
	LLVMValueRef node = LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, md, 3));
	LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations", node);
}

static void kernel_finish(Cg *cg, CgKernel *k, int64_t ret, LLVMBasicBlockRef body)
{
	cg_gpu_launch(cg, k, ret, body);
	annotate(cg, "kernel", 1);
	annotate(cg, "maxntidx", k->block);
	/* waves per SM sub-partition as blocks per SM: 4 sub-partitions, block / 32 warps per block */
	int warps = (k->block + 31) / 32, blocks = (cg->waves * 4 + warps - 1) / warps;
	if (cg->waves > 0 && blocks > 1)
		annotate(cg, "minctasm", blocks);
}

static LLVMValueRef workitem_id(Cg *cg) { return cg_call_intrinsic0(cg, "llvm.nvvm.read.ptx.sreg.tid.x"); }
static LLVMValueRef workgroup_id(Cg *cg) { return cg_call_intrinsic0(cg, "llvm.nvvm.read.ptx.sreg.ctaid.x"); }
static void barrier(Cg *cg) { cg_call_intrinsic0(cg, "llvm.nvvm.barrier0"); }

static bool emit_unit(LLVMTargetMachineRef tm, LLVMModuleRef mod, CgBlob *code, char *err, size_t errlen)
{
	return cg_emit_file(tm, mod, LLVMAssemblyFile, &code->data, &code->size, err, errlen);
}

/* The end of a unit's PTX header (.version, .target, .address_size), which every unit repeats. */
static size_t header_end(const CgBlob *u)
{
	const char *p = strstr((const char *)u->data, "\n.address_size");
	if (!p)
		return 0;
	const char *eol = strchr(p + 1, '\n');
	return eol ? (size_t)(eol + 1 - (const char *)u->data) : u->size;
}

/* One PTX text with its NUL (what the CUDA driver loads): the first unit whole, the others without
 * their header. Shared arrays are demoted into their kernels, so units declare nothing at module
 * scope that another one declares too. */
static bool join(const CgBlob *units, int n, CgOutput *out, char *err, size_t errlen)
{
	size_t total = 1;
	for (int i = 0; i < n; i++)
		total += units[i].size;
	out->code = malloc(total);
	if (!out->code) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		size_t skip = i > 0 ? header_end(&units[i]) : 0;
		memcpy(out->code + len, units[i].data + skip, units[i].size - skip);
		len += units[i].size - skip;
	}
	out->code[len] = 0;
	out->size = len + 1;
	return true;
}

const CgTargetOps cg_target_nvptx_ops = {
	.gpu = true,
	.code_kind = CODE_PTX,
	.code_ext = "ptx",
	.code_is_text = true,
	.shared_addrspace = 3, /* shared memory */
	.gemm_wide_tiles = true,
	.winograd_windows = true,
	.reloc = LLVMRelocDefault,
	.init_llvm = init_llvm,
	.configure = configure,
	.signature = signature,
	.kernel_entry = cg_gpu_kernel_entry,
	.kernel_finish = kernel_finish,
	.workitem_id = workitem_id,
	.workgroup_id = workgroup_id,
	.barrier = barrier,
	.emit_unit = emit_unit,
	.join = join,
};
