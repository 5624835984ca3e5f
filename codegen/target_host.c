/* target_host.c: the CPU netc runs on. Kernels are plain functions over a range of work-groups
 * (cg.h's host ABI), compiled for LLVM's host CPU and features and linked into a shared object. */
#include <string.h>

#include <llvm-c/Target.h>

#include "codegen/target.h"
#include "runtime/bundle.h"

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
	t->ops = &cg_target_host_ops;
	t->matrix = CG_MATRIX_NONE;
	snprintf(t->triple, sizeof t->triple, "%s", triple);
	snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
	snprintf(t->features, sizeof t->features, "%s", features);
	/* Without AVX512-FP16 (Sapphire Rapids and later): LLVM 19's X86 backend miscompiles a masked
	 * compare of half vectors whose operands it commutes to fold a load (VCMPPH*rrik, predicate
	 * not swapped; llvm/llvm-project#159723, fixed by #160304 after LLVM 19). The ReLU gradient
	 * fused into mnist's dense-layer GEMM compared y < 0 where its IR says y > 0, and fp16
	 * training diverged on such a CPU (loss 2.5 -> 625 in 80 steps; 0.51 with the feature off;
	 * tests/lit/precision/train.test). */
	const char *fp16 = cg_target_find_in_list(t->features, "+avx512fp16", 11);
	if (fp16)
		t->features[fp16 - t->features] = '-';
	/* "+avx512f" must not match "+avx512fp16" alone: look for the name followed by ',' or end */
	bool avx512 = cg_target_in_list(t->features, "+avx512f", 8);
	bool avx = cg_target_in_list(t->features, "+avx2", 5) || cg_target_in_list(t->features, "+avx", 4);
	t->simd_f32 = avx512 ? 16 : avx ? 8 : 4;
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(features);
	return true;
}

static bool init_llvm(void) { return !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter(); }

static bool configure(const CgTargetInfo *ti, const char *spec, const CgTargetOptions *o, CgTarget *t, char *err,
		      size_t errlen)
{
	(void)ti, (void)o;
	if (spec[strcspn(spec, ":")]) {
		snprintf(err, errlen, "target host takes no features");
		return false;
	}
	if (!cg_target_host(t)) {
		snprintf(err, errlen, "LLVM has no native target");
		return false;
	}
	return true;
}

/* bf16 __truncsfbf2(float) or __truncdfbf2(double): x rounded to bf16, to nearest even, NaN kept
 * (quiet), by its bits. On CPUs without AVX512-BF16 LLVM lowers vector bf16 arithmetic and
 * conversions through these runtime functions, which no library of a Debian host need provide
 * (GCC 12's libgcc has neither): each module defines them, weak and hidden, so the linked shared
 * object resolves them itself. */
static void define_bf16_rounding_of(Cg *cg, const char *name, LLVMTypeRef from)
{
	LLVMValueRef fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->t_bf16, &from, 1, 0));
	LLVMSetLinkage(fn, LLVMWeakAnyLinkage);
	LLVMSetVisibility(fn, LLVMHiddenVisibility);
	LLVMPositionBuilderAtEnd(cg->b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
	LLVMValueRef x = LLVMGetParam(fn, 0);
	/* a double first to float by round-to-odd would keep the result exact; the rare double
	 * rounding of plain nearest is what LLVM's own expansion of the double case does too */
	LLVMValueRef f = from == cg->t_f32 ? x : LLVMBuildFPTrunc(cg->b, x, cg->t_f32, "");
	LLVMValueRef bits = LLVMBuildBitCast(cg->b, f, cg->t_i32, "");
	LLVMValueRef odd = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, bits, cg_i32(cg, 16), ""), cg_i32(cg, 1), "");
	LLVMValueRef up = LLVMBuildAdd(cg->b, bits, LLVMBuildAdd(cg->b, odd, cg_i32(cg, 0x7fff), ""), "");
	LLVMValueRef nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, f, f, "");
	LLVMValueRef top = LLVMBuildSelect(cg->b, nan, LLVMBuildOr(cg->b, bits, cg_i32(cg, 0x400000), ""), up, "");
	LLVMValueRef h = LLVMBuildTrunc(cg->b, LLVMBuildLShr(cg->b, top, cg_i32(cg, 16), ""), LLVMInt16TypeInContext(cg->ctx), "");
	LLVMBuildRet(cg->b, LLVMBuildBitCast(cg->b, h, cg->t_bf16, ""));
}

static void define_bf16_rounding(Cg *cg)
{
	define_bf16_rounding_of(cg, "__truncsfbf2", cg->t_f32);
	define_bf16_rounding_of(cg, "__truncdfbf2", cg->t_f64);
}

/* (ptr noalias arena, i64 wg_begin, i64 wg_end, ptr noalias b0, ..., b15, i64 s0, ..., s3) */
static void signature(Cg *cg, const char *name)
{
	LLVMTypeRef params[3 + CG_BUFFER_ARGS + CG_SIZE_ARGS] = {cg->t_ptr, cg->t_i64, cg->t_i64};
	for (int i = 0; i < CG_BUFFER_ARGS; i++)
		params[3 + i] = cg->t_ptr;
	for (int i = 0; i < CG_SIZE_ARGS; i++)
		params[3 + CG_BUFFER_ARGS + i] = cg->t_i64;
	cg->fn = LLVMAddFunction(cg->mod, name,
				 LLVMFunctionType(cg->t_void, params, 3 + CG_BUFFER_ARGS + CG_SIZE_ARGS, 0));
	cg_enum_attr(cg, cg->fn, 1, "noalias");
	cg->arena = LLVMGetParam(cg->fn, 0);
	cg->wg_begin = LLVMGetParam(cg->fn, 1);
	cg->wg_end = LLVMGetParam(cg->fn, 2);
	LLVMSetValueName2(cg->wg_begin, "wg_begin", 8);
	LLVMSetValueName2(cg->wg_end, "wg_end", 6);
	cg_buffer_params(cg, 3, 0);
}

static void kernel_finish(Cg *cg, CgKernel *k, int64_t ret, LLVMBasicBlockRef body)
{
	k->grid = ret;
	k->block = 1;
	LLVMPositionBuilderAtEnd(cg->b, cg->entry);
	LLVMBuildBr(cg->b, body);
}

/* objects -> shared object */
static bool join(const CgBlob *units, int n, CgOutput *out, char *err, size_t errlen)
{
	return cg_link_shared(units, n, false, &out->code, &out->size, err, errlen);
}

const CgTargetOps cg_target_host_ops = {
	.gpu = false,
	.buffer_args = true,
	.code_kind = CODE_HOST,
	.code_ext = "so",
	.reloc = LLVMRelocPIC,
	.module_flags = define_bf16_rounding,
	.init_llvm = init_llvm,
	.configure = configure,
	.signature = signature,
	.kernel_finish = kernel_finish,
	.emit_unit = cg_emit_object,
	.join = join,
};
