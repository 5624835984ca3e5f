/* lower_embedding.c: the elemental emitters of embedding and one_hot (ir/ops_embedding.c). An
 * element's index is read through cg_load at its position (the output index without the feature
 * axis), so a fused producer of the indices is computed in place; an index outside [0, V) reads
 * row 0 and is replaced by 0. */
#include "codegen/cg_util.h"
#include "codegen/lower_table.h"
#include "ir/ops.h"

/* The i32 index at output index at of n, whose last axis has `inner` elements, as i64; *k is the
 * position along that axis. */
static LLVMValueRef index_at(Cg *cg, const Node *n, ElemIndex *at, int64_t inner, LLVMValueRef *k)
{
	LLVMValueRef lin = cg_index_lin(cg, at);
	LLVMValueRef pos = LLVMBuildUDiv(cg->b, lin, cg_i64(cg, inner), "");
	*k = LLVMBuildURem(cg->b, lin, cg_i64(cg, inner), "");
	LLVMValueRef v = cg_load(cg, n->in[0], pos);
	return LLVMTypeOf(v) == cg->t_i64 ? v : LLVMBuildSExt(cg->b, v, cg->t_i64, "");
}

LLVMValueRef cg_elem_embedding(Cg *cg, const Node *n, ElemIndex *at)
{
	const Shape *ws = &cg->g->node[n->in[1]].shape;
	int64_t rows = ws->dim[0], d = ws->dim[1];
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef k, row = index_at(cg, n, at, d, &k);
	LLVMValueRef valid = LLVMBuildICmp(cg->b, LLVMIntULT, row, cg_i64(cg, rows), ""); /* < 0 wraps */
	row = LLVMBuildSelect(cg->b, valid, row, cg_i64(cg, 0), "");
	LLVMValueRef at_w = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, row, cg_i64(cg, d), ""), k, "");
	LLVMValueRef v = cg_convert(cg, cg_load(cg, n->in[1], at_w), t);
	return LLVMBuildSelect(cg->b, valid, v, cg_real(cg, t, 0), "");
}

LLVMValueRef cg_elem_one_hot(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef k, cls = index_at(cg, n, at, ir_one_hot_classes(n), &k);
	LLVMValueRef hit = LLVMBuildICmp(cg->b, LLVMIntEQ, cls, k, "");
	return LLVMBuildSelect(cg->b, hit, cg_real(cg, t, 1), cg_real(cg, t, 0), "");
}
