/* cg_gpu.c: what GPU lowerings build on: work-item and work-group ids, the work-group barrier
 * and work-group-shared arrays (each through the target's ops, codegen/target.h), and the kernel
 * signature and launch shape the GPU targets share. */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_util.h"
#include "codegen/target.h"

bool cg_is_gpu(const Cg *cg) { return cg->target->ops->gpu; }

LLVMValueRef cg_call_intrinsic0(Cg *cg, const char *name) { return cg_intrinsic_call(cg, name, NULL, 0); }

LLVMValueRef cg_workitem_id(Cg *cg) { return cg->target->ops->workitem_id(cg); }
LLVMValueRef cg_workgroup_id(Cg *cg) { return cg->target->ops->workgroup_id(cg); }
void cg_barrier(Cg *cg) { cg->target->ops->barrier(cg); }

/* Bytes of a scalar type that LDS arrays hold. */
static int64_t scalar_bytes(LLVMTypeRef t)
{
	switch (LLVMGetTypeKind(t)) {
	case LLVMHalfTypeKind:
	case LLVMBFloatTypeKind: return 2;
	case LLVMFloatTypeKind: return 4;
	case LLVMDoubleTypeKind: return 8;
	case LLVMIntegerTypeKind: return (LLVMGetIntTypeWidth(t) + 7) / 8;
	default: CG_FAIL("an LDS array of a non-scalar type");
	}
}

/* An array past what a kernel may declare statically is the kernel's dynamic shared memory: an
 * external array of no size that the launch gives cg->dyn_shared bytes (one per kernel). */
LLVMValueRef cg_shared_array(Cg *cg, LLVMTypeRef elem, int64_t count, const char *name)
{
	int64_t bytes = count * scalar_bytes(elem);
	if (bytes <= cg->target->lds_static) {
		LLVMTypeRef t = LLVMArrayType2(elem, (uint64_t)count);
		LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, t, name, cg->target->ops->shared_addrspace);
		LLVMSetInitializer(g, LLVMGetUndef(t));
		LLVMSetLinkage(g, LLVMInternalLinkage);
		LLVMSetAlignment(g, 16);
		return g;
	}
	if (bytes > cg->target->lds_max || cg->dyn_shared)
		CG_FAIL("%s: %lld bytes of LDS, more than %s gives a work-group", name, (long long)bytes, cg->target->name);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMArrayType2(elem, 0), name, cg->target->ops->shared_addrspace);
	LLVMSetLinkage(g, LLVMExternalLinkage);
	LLVMSetAlignment(g, 16);
	cg->dyn_shared = (int)bytes;
	return g;
}

/* ---- the GPU kernel ABI of cg.h, for the target files (target.h) ---- */

/* (ptr addrspace(1) arena[, b0, ..., b15, i64 s0, ..., s3]): the arena is not noalias (every
 * buffer lives in it), 64-byte aligned as device.h promises of alloc; the buffer and size
 * arguments where the target takes them. */
void cg_gpu_signature(Cg *cg, const char *name, LLVMCallConv cc)
{
	LLVMTypeRef params[1 + CG_BUFFER_ARGS + CG_SIZE_ARGS];
	unsigned n = cg->target->ops->buffer_args ? 1 + CG_BUFFER_ARGS + CG_SIZE_ARGS : 1;
	for (unsigned i = 0; i < n; i++)
		params[i] = i <= CG_BUFFER_ARGS ? LLVMPointerTypeInContext(cg->ctx, 1) : cg->t_i64;
	cg->fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->t_void, params, n, 0));
	LLVMSetFunctionCallConv(cg->fn, cc);
	cg_enum_attr(cg, cg->fn, 1, "nocapture");
	cg_enum_attr(cg, cg->fn, 1, "noundef");
	unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
	LLVMAddAttributeAtIndex(cg->fn, 1, LLVMCreateEnumAttribute(cg->ctx, align, 64));
	cg->arena = LLVMGetParam(cg->fn, 0);
	if (n > 1)
		cg_buffer_params(cg, 1, 64);
}

/* wg_begin = work-group id * CG_GPU_BLOCK + work-item id, first in the entry block (which the
 * lowering may extend with cg_local) */
void cg_gpu_kernel_entry(Cg *cg)
{
	LLVMPositionBuilderAtEnd(cg->b, cg->entry);
	LLVMValueRef wg = LLVMBuildZExt(cg->b, cg_workgroup_id(cg), cg->t_i64, "");
	LLVMValueRef wi = LLVMBuildZExt(cg->b, cg_workitem_id(cg), cg->t_i64, "");
	cg->wg_begin = LLVMBuildNUWAdd(cg->b, LLVMBuildNUWMul(cg->b, wg, cg_i64(cg, CG_GPU_BLOCK), ""), wi, "wg_begin");
	cg->wg_end = LLVMBuildNUWAdd(cg->b, cg->wg_begin, cg_i64(cg, 1), "wg_end");
}

/* The grid and block of a kernel whose lowering returned ret and the end of its entry block: for a
 * lowering that is not GPU-native, a guard for the work-items past its ret work-groups. */
void cg_gpu_launch(Cg *cg, CgKernel *k, int64_t ret, LLVMBasicBlockRef body)
{
	LLVMPositionBuilderAtEnd(cg->b, cg->entry);
	k->shared = cg->dyn_shared;
	if (cg->gpu_native) {
		k->grid = ret;
		k->block = cg->block;
		LLVMBuildBr(cg->b, body);
	} else {
		k->grid = (ret + CG_GPU_BLOCK - 1) / CG_GPU_BLOCK;
		k->block = CG_GPU_BLOCK;
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "done");
		LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, cg->wg_begin, cg_i64(cg, ret), ""), body, done);
		LLVMPositionBuilderAtEnd(cg->b, done);
		LLVMBuildRetVoid(cg->b);
	}
	if (k->block < 1 || k->block > 1024) {
		fprintf(stderr, "internal error: kernel %s has block %d\n", k->name, k->block);
		abort();
	}
}

/* ---- for GPU-native lowerings (cg_util.h) ---- */

void cg_gpu_native(Cg *cg, int block)
{
	cg->gpu_native = true;
	cg->block = block;
}

void cg_gpu_waves(Cg *cg, int waves) { cg->waves = waves; }

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
