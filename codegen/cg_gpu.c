/* cg_gpu.c: what GPU lowerings build on: work-item and work-group ids, the work-group barrier
 * and work-group-shared arrays, for AMDGPU and NVPTX. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>

#include "codegen/cg_util.h"

bool cg_is_gpu(const Cg *cg) { return cg->target->kind != CG_HOST; }

/* Calls a target intrinsic that is not overloaded. */
static LLVMValueRef call0(Cg *cg, const char *name)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id) {
		fprintf(stderr, "internal error: no intrinsic %s\n", name);
		abort();
	}
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, NULL, 0);
	return LLVMBuildCall2(cg->b, LLVMIntrinsicGetType(cg->ctx, id, NULL, 0), fn, NULL, 0, "");
}

LLVMValueRef cg_workitem_id(Cg *cg)
{
	return call0(cg, cg->target->kind == CG_AMDGPU ? "llvm.amdgcn.workitem.id.x" : "llvm.nvvm.read.ptx.sreg.tid.x");
}

LLVMValueRef cg_workgroup_id(Cg *cg)
{
	return call0(cg, cg->target->kind == CG_AMDGPU ? "llvm.amdgcn.workgroup.id.x" : "llvm.nvvm.read.ptx.sreg.ctaid.x");
}

/* The C API of LLVM 19 cannot give a fence a sync scope, and a system-scope fence would flush
 * caches at every barrier: the AMD barrier is a small IR function, parsed once per module and
 * inlined everywhere. */
static const char amd_barrier_ir[] =
	"define void @netc.barrier() alwaysinline convergent nounwind {\n"
	"  fence syncscope(\"workgroup\") release\n"
	"  call void @llvm.amdgcn.s.barrier()\n"
	"  fence syncscope(\"workgroup\") acquire\n"
	"  ret void\n"
	"}\n"
	"declare void @llvm.amdgcn.s.barrier() convergent nounwind\n";

static LLVMValueRef amd_barrier_fn(Cg *cg)
{
	LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, "netc.barrier");
	if (fn)
		return fn;
	LLVMMemoryBufferRef buf =
		LLVMCreateMemoryBufferWithMemoryRangeCopy(amd_barrier_ir, sizeof amd_barrier_ir - 1, "netc.barrier");
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

void cg_barrier(Cg *cg)
{
	if (cg->target->kind == CG_NVPTX) {
		call0(cg, "llvm.nvvm.barrier0");
		return;
	}
	LLVMValueRef fn = amd_barrier_fn(cg);
	LLVMValueRef call = LLVMBuildCall2(cg->b, LLVMGlobalGetValueType(fn), fn, NULL, 0, "");
	unsigned kind = LLVMGetEnumAttributeKindForName("convergent", 10);
	LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
}

LLVMValueRef cg_shared_array(Cg *cg, LLVMTypeRef elem, int64_t count, const char *name)
{
	LLVMTypeRef t = LLVMArrayType2(elem, (uint64_t)count);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, t, name, 3);
	LLVMSetInitializer(g, LLVMGetUndef(t));
	LLVMSetLinkage(g, LLVMInternalLinkage);
	LLVMSetAlignment(g, 16);
	return g;
}

/* ---- for GPU-native lowerings (cg_util.h) ---- */

void cg_gpu_native(Cg *cg, int block)
{
	cg->gpu_native = true;
	cg->block = block;
}

LLVMValueRef cg_global_id(Cg *cg)
{
	LLVMValueRef wg = LLVMBuildZExt(cg->b, cg_workgroup_id(cg), cg->t_i64, "");
	LLVMValueRef wi = LLVMBuildZExt(cg->b, cg_workitem_id(cg), cg->t_i64, "");
	return LLVMBuildNUWAdd(cg->b, LLVMBuildNUWMul(cg->b, wg, cg_i64(cg, cg->block), ""), wi, "gid");
}

void cg_gpu_if(Cg *cg, LLVMValueRef cond)
{
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "in");
	LLVMBasicBlockRef out = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "out");
	LLVMBuildCondBr(cg->b, cond, then, out);
	LLVMPositionBuilderAtEnd(cg->b, out);
	LLVMBuildRetVoid(cg->b);
	LLVMPositionBuilderAtEnd(cg->b, then);
}

/* Runs the builder into a block that only work-items with cond enter; returns the join. */
static LLVMBasicBlockRef when_begin(Cg *cg, LLVMValueRef cond)
{
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "tree");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "tree.join");
	LLVMBuildCondBr(cg->b, cond, then, join);
	LLVMPositionBuilderAtEnd(cg->b, then);
	return join;
}

static void when_end(Cg *cg, LLVMBasicBlockRef join)
{
	LLVMBuildBr(cg->b, join);
	LLVMPositionBuilderAtEnd(cg->b, join);
}

static LLVMValueRef sh_at(Cg *cg, LLVMValueRef sh, LLVMValueRef i)
{
	LLVMValueRef idx[2] = {cg_i32(cg, 0), i};
	return LLVMBuildInBoundsGEP2(cg->b, LLVMGlobalGetValueType(sh), sh, idx, 2, "");
}

static LLVMValueRef combine(Cg *cg, LLVMValueRef a, LLVMValueRef b, bool max)
{
	LLVMValueRef args[2] = {a, b};
	return max ? cg_intrinsic(cg, "maxnum", LLVMTypeOf(a), args, 2) : LLVMBuildFAdd(cg->b, a, b, "");
}

LLVMValueRef cg_gpu_reduce(Cg *cg, LLVMValueRef sh, LLVMValueRef v, bool max)
{
	LLVMTypeRef t = LLVMTypeOf(v);
	LLVMValueRef tid = cg_workitem_id(cg);
	LLVMBuildStore(cg->b, v, sh_at(cg, sh, tid));
	cg_barrier(cg);
	for (int s = cg->block / 2; s > 0; s /= 2) {
		LLVMBasicBlockRef join = when_begin(cg, LLVMBuildICmp(cg->b, LLVMIntULT, tid, cg_i32(cg, s), ""));
		LLVMValueRef mine = LLVMBuildLoad2(cg->b, t, sh_at(cg, sh, tid), "");
		LLVMValueRef other = LLVMBuildLoad2(cg->b, t, sh_at(cg, sh, LLVMBuildAdd(cg->b, tid, cg_i32(cg, s), "")), "");
		LLVMBuildStore(cg->b, combine(cg, mine, other, max), sh_at(cg, sh, tid));
		when_end(cg, join);
		cg_barrier(cg);
	}
	LLVMValueRef total = LLVMBuildLoad2(cg->b, t, sh_at(cg, sh, cg_i32(cg, 0)), "");
	/* sh may be reused at once: every work-item must have read it first */
	cg_barrier(cg);
	return total;
}
