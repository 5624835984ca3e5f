/* cg_build.c: the IR-building helpers every lowering uses: constants, storage and compute types,
 * locals, intrinsics, loops, linear/delinear/broadcast index arithmetic, conversions and function
 * attributes. They know nothing of fused groups or kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "codegen/cg_util.h"
#include "codegen/target.h"

LLVMValueRef cg_i32(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i32, (unsigned long long)v, 1); }
LLVMValueRef cg_i64(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i64, (unsigned long long)v, 1); }
LLVMValueRef cg_real(Cg *cg, LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

LLVMTypeRef cg_storage_type(Cg *cg, DType t)
{
	switch (t) {
	case DT_F32: return cg->t_f32;
	case DT_F16: return cg->t_f16;
	case DT_BF16: return cg->t_bf16;
	case DT_F64: return cg->t_f64;
	case DT_I32: return cg->t_i32;
	default: CG_FAIL("bad dtype %d", (int)t);
	}
}

LLVMTypeRef cg_compute_type(Cg *cg, DType t)
{
	return t == DT_F16 || t == DT_BF16 ? cg->t_f32 : cg_storage_type(cg, t);
}

LLVMValueRef cg_local(Cg *cg, LLVMTypeRef t, const char *name)
{
	/* the entry block stays open (no terminator) until the driver closes the kernel */
	LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
	LLVMPositionBuilderAtEnd(b, cg->entry);
	LLVMValueRef v = LLVMBuildAlloca(b, t, name);
	LLVMDisposeBuilder(b);
	return v;
}

LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef t, LLVMValueRef *args, int nargs)
{
	char full[64];
	snprintf(full, sizeof full, "llvm.%s", name);
	unsigned id = LLVMLookupIntrinsicID(full, strlen(full));
	if (!id)
		CG_FAIL("no intrinsic %s", full);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, &t, 1);
	LLVMTypeRef ft = LLVMIntrinsicGetType(cg->ctx, id, &t, 1);
	return LLVMBuildCall2(cg->b, ft, fn, args, (unsigned)nargs, "");
}

LLVMValueRef cg_intrinsic_call(Cg *cg, const char *name, LLVMValueRef *args, int nargs)
{
	return cg_intrinsic_call_overloaded(cg, name, NULL, 0, args, nargs);
}

LLVMValueRef cg_intrinsic_call_overloaded(Cg *cg, const char *name, LLVMTypeRef *types, int ntypes,
					  LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id)
		CG_FAIL("no intrinsic %s", name);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, types, (size_t)ntypes);
	return LLVMBuildCall2(cg->b, LLVMIntrinsicGetType(cg->ctx, id, types, (size_t)ntypes), fn, args,
			      (unsigned)nargs, "");
}

CgLoop cg_for_begin(Cg *cg, LLVMValueRef lo, LLVMValueRef hi, const char *name)
{
	CgLoop l = {0};
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
	l.cond = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
	l.body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
	l.exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
	l.hi = hi;
	LLVMBuildBr(cg->b, l.cond);
	LLVMPositionBuilderAtEnd(cg->b, l.cond);
	l.i = l.var = LLVMBuildPhi(cg->b, cg->t_i64, name);
	LLVMAddIncoming(l.i, &lo, &pre, 1);
	LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, l.i, hi, ""), l.body, l.exit);
	LLVMPositionBuilderAtEnd(cg->b, l.body);
	return l;
}

void cg_for_end(Cg *cg, CgLoop *l) { cg_for_end_step(cg, l, cg_i64(cg, 1)); }

void cg_for_end_step(Cg *cg, CgLoop *l, LLVMValueRef step)
{
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
	LLVMValueRef next = LLVMBuildNSWAdd(cg->b, l->i, step, "");
	LLVMAddIncoming(l->i, &next, &latch, 1);
	l->back = LLVMBuildBr(cg->b, l->cond);
	LLVMPositionBuilderAtEnd(cg->b, l->exit);
}

void cg_loop_no_unroll(Cg *cg, const CgLoop *l)
{
	/* !llvm.loop !0, !0 = distinct !{!0, !{!"llvm.loop.unroll.disable"}}: the self-reference
	 * through a temporary node makes the loop's ID unique */
	static const char key[] = "llvm.loop.unroll.disable";
	LLVMMetadataRef self = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
	LLVMMetadataRef str = LLVMMDStringInContext2(cg->ctx, key, sizeof key - 1);
	LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(cg->ctx, &str, 1)};
	LLVMMetadataRef id = LLVMMDNodeInContext2(cg->ctx, ops, 2);
	LLVMMetadataReplaceAllUsesWith(self, id);
	LLVMSetMetadata(l->back, LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9), LLVMMetadataAsValue(cg->ctx, id));
}

LLVMValueRef cg_linear(Cg *cg, const Shape *s, LLVMValueRef *idx)
{
	LLVMValueRef lin = cg_i64(cg, 0);
	for (int d = 0; d < s->rank; d++) {
		lin = LLVMBuildNSWMul(cg->b, lin, cg_i64(cg, s->dim[d]), "");
		lin = LLVMBuildNSWAdd(cg->b, lin, idx[d], "");
	}
	return lin;
}

LLVMValueRef cg_udiv_index(Cg *cg, LLVMValueRef lin, int64_t d, int64_t bound, bool rem)
{
	LLVMValueRef (*op)(LLVMBuilderRef, LLVMValueRef, LLVMValueRef, const char *) = rem ? LLVMBuildURem : LLVMBuildUDiv;
	if (bound > INT32_MAX || d > INT32_MAX)
		return op(cg->b, lin, cg_i64(cg, d), "");
	LLVMValueRef narrow = LLVMBuildTrunc(cg->b, lin, cg->t_i32, "");
	return LLVMBuildZExt(cg->b, op(cg->b, narrow, cg_i32(cg, d), ""), cg->t_i64, "");
}

void cg_delinear(Cg *cg, const Shape *s, LLVMValueRef lin, LLVMValueRef *idx)
{
	int64_t bound = shape_numel(s);
	for (int d = s->rank - 1; d >= 0; d--) {
		if (d == 0) {
			idx[d] = lin;
			break;
		}
		idx[d] = cg_udiv_index(cg, lin, s->dim[d], bound, true);
		lin = cg_udiv_index(cg, lin, s->dim[d], bound, false);
		bound = s->dim[d] ? (bound + s->dim[d] - 1) / s->dim[d] : bound;
	}
}

LLVMValueRef cg_broadcast_index(Cg *cg, const Shape *in, const Shape *out, LLVMValueRef *idx)
{
	LLVMValueRef lin = cg_i64(cg, 0);
	int skip = out->rank - in->rank;
	for (int d = 0; d < in->rank; d++) {
		if (in->dim[d] == 1)
			continue;
		lin = LLVMBuildNSWMul(cg->b, lin, cg_i64(cg, in->dim[d]), "");
		lin = LLVMBuildNSWAdd(cg->b, lin, idx[d + skip], "");
	}
	return lin;
}

LLVMValueRef cg_const_table(Cg *cg, const char *what, const int64_t *v, int64_t n)
{
	LLVMValueRef *vals = malloc((size_t)n * sizeof *vals);
	if (!vals)
		CG_FAIL("out of memory for a table of %lld entries", (long long)n);
	for (int64_t i = 0; i < n; i++)
		vals[i] = cg_i64(cg, v[i]);
	LLVMTypeRef t = LLVMArrayType2(cg->t_i64, (uint64_t)n);
	char name[256];
	snprintf(name, sizeof name, "%s_%s", LLVMGetValueName(cg->fn), what);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, t, name, LLVMGetPointerAddressSpace(LLVMTypeOf(cg->arena)));
	LLVMSetInitializer(g, LLVMConstArray2(cg->t_i64, vals, (uint64_t)n));
	free(vals);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	LLVMSetUnnamedAddr(g, 1);
	LLVMSetAlignment(g, 8);
	return g;
}

LLVMValueRef cg_table_load(Cg *cg, LLVMValueRef table, LLVMValueRef idx)
{
	LLVMValueRef at = LLVMBuildInBoundsGEP2(cg->b, cg->t_i64, table, &idx, 1, "");
	LLVMValueRef v = LLVMBuildLoad2(cg->b, cg->t_i64, at, "");
	LLVMSetAlignment(v, 8);
	LLVMSetMetadata(v, LLVMGetMDKindIDInContext(cg->ctx, "invariant.load", 14),
			LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, NULL, 0)));
	return v;
}

LLVMValueRef cg_min_i64(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, a, b, ""), a, b, "");
}

LLVMValueRef cg_reassoc(LLVMValueRef v)
{
	if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v))
		LLVMSetFastMathFlags(v, LLVMGetFastMathFlags(v) | LLVMFastMathAllowReassoc | LLVMFastMathAllowContract);
	return v;
}

LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, LLVMTypeRef t)
{
	LLVMTypeRef from = LLVMTypeOf(v);
	if (from == t)
		return v;
	bool fi = LLVMGetTypeKind(from) == LLVMIntegerTypeKind, ti = LLVMGetTypeKind(t) == LLVMIntegerTypeKind;
	if (fi && ti)
		return LLVMBuildIntCast2(cg->b, v, t, 1, "");
	if (fi)
		return LLVMBuildSIToFP(cg->b, v, t, "");
	if (ti)
		return LLVMBuildFPToSI(cg->b, v, t, "");
	return LLVMBuildFPCast(cg->b, v, t, "");
}

LLVMValueRef cg_round_as(Cg *cg, LLVMValueRef v, DType dtype)
{
	return cg_convert(cg, cg_convert(cg, v, cg_storage_type(cg, dtype)), cg_compute_type(cg, dtype));
}

int cg_axis(double attr, int rank)
{
	int a = (int)attr;
	return a < 0 ? a + rank : a;
}
void cg_fn_attr(Cg *cg, const char *key, const char *value)
{
	LLVMAttributeRef a = LLVMCreateStringAttribute(cg->ctx, key, (unsigned)strlen(key), value, (unsigned)strlen(value));
	LLVMAddAttributeAtIndex(cg->fn, LLVMAttributeFunctionIndex, a);
}

bool cg_module_has_fn_attr(LLVMModuleRef mod, const char *key)
{
	for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
		if (LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, key, (unsigned)strlen(key)))
			return true;
	return false;
}

void cg_module_drop_fn_attr(LLVMModuleRef mod, const char *key)
{
	for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
		LLVMRemoveStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, key, (unsigned)strlen(key));
}

void cg_module_set_fn_attr(LLVMModuleRef mod, const char *key, const char *value)
{
	LLVMContextRef ctx = LLVMGetModuleContext(mod);
	for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
		if (!LLVMIsDeclaration(fn))
			LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
						LLVMCreateStringAttribute(ctx, key, (unsigned)strlen(key), value,
									  (unsigned)strlen(value)));
}

void cg_enum_attr(Cg *cg, LLVMValueRef fn, unsigned index, const char *name)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
	LLVMAddAttributeAtIndex(fn, index, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
}

void cg_buffer_params(Cg *cg, unsigned first, unsigned align)
{
	unsigned align_kind = LLVMGetEnumAttributeKindForName("align", 5);
	for (unsigned i = 0; i < CG_BUFFER_ARGS; i++) {
		char name[8];
		int len = snprintf(name, sizeof name, "b%u", i);
		cg->buffer_arg[i] = LLVMGetParam(cg->fn, first + i);
		LLVMSetValueName2(cg->buffer_arg[i], name, (size_t)len);
		/* attribute index 1 is the first parameter */
		const char *attrs[] = {"noalias", "nocapture", "noundef"};
		for (size_t a = 0; a < sizeof attrs / sizeof *attrs; a++)
			cg_enum_attr(cg, cg->fn, first + i + 1, attrs[a]);
		if (align)
			LLVMAddAttributeAtIndex(cg->fn, first + i + 1, LLVMCreateEnumAttribute(cg->ctx, align_kind, align));
	}
	for (unsigned i = 0; i < CG_SIZE_ARGS; i++) {
		char name[8];
		int len = snprintf(name, sizeof name, "s%u", i);
		cg->size_arg[i] = LLVMGetParam(cg->fn, first + CG_BUFFER_ARGS + i);
		LLVMSetValueName2(cg->size_arg[i], name, (size_t)len);
	}
}
