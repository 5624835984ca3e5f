/* lower_unfold.c: the elemental emitters of unfold and fold (ir/ops_unfold.c). unfold's element
 * is one image element or 0 in the padding. fold's element gathers the columns of every window
 * that covers it: the kh x kw kernel positions are unrolled, each valid where the window's start
 * lands on the stride grid inside the image; a read that is not valid is of column 0 and replaced
 * by 0, so nothing branches. Inputs are read through cg_load, which computes a fused producer at
 * the index read. */
#include "codegen/cg_util.h"
#include "codegen/lower_table.h"
#include "codegen/lower_window.h"
#include "ir/ops.h"

static LLVMValueRef i64(Cg *cg, int64_t v) { return cg_i64(cg, v); }

LLVMValueRef cg_elem_unfold(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMBuilderRef b = cg->b;
	UnfoldGeom u = ir_unfold_geom(cg->g, n);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at); /* [n, row, col] */
	int64_t k = u.kh * u.kw;
	LLVMValueRef ch = LLVMBuildUDiv(b, idx[1], i64(cg, k), ""), tap = LLVMBuildURem(b, idx[1], i64(cg, k), "");
	LLVMValueRef i = LLVMBuildUDiv(b, tap, i64(cg, u.kw), ""), j = LLVMBuildURem(b, tap, i64(cg, u.kw), "");
	LLVMValueRef oy = LLVMBuildUDiv(b, idx[2], i64(cg, u.ow), ""), ox = LLVMBuildURem(b, idx[2], i64(cg, u.ow), "");
	LLVMValueRef y = LLVMBuildAdd(b, LLVMBuildMul(b, oy, i64(cg, u.sh), ""), LLVMBuildMul(b, i, i64(cg, u.dh), ""), "");
	LLVMValueRef x = LLVMBuildAdd(b, LLVMBuildMul(b, ox, i64(cg, u.sw), ""), LLVMBuildMul(b, j, i64(cg, u.dw), ""), "");
	y = LLVMBuildSub(b, y, i64(cg, u.ph), ""), x = LLVMBuildSub(b, x, i64(cg, u.pw), "");
	/* unsigned compares: a negative row wraps past the image */
	LLVMValueRef valid = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntULT, y, i64(cg, u.h), ""),
					  LLVMBuildICmp(b, LLVMIntULT, x, i64(cg, u.w), ""), "");
	LLVMValueRef plane = LLVMBuildAdd(b, LLVMBuildMul(b, idx[0], i64(cg, u.c), ""), ch, "");
	LLVMValueRef img = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, plane, i64(cg, u.h), ""), y, ""),
							i64(cg, u.w), ""), x, "");
	img = LLVMBuildSelect(b, valid, img, i64(cg, 0), "");
	LLVMValueRef v = cg_convert(cg, cg_load(cg, n->in[0], img), t);
	return LLVMBuildSelect(b, valid, v, cg_real(cg, t, 0), "");
}

LLVMValueRef cg_window_of(Cg *cg, LLVMValueRef y, int64_t p, int64_t s, int64_t d, int64_t pad, int64_t out,
			  LLVMValueRef *valid)
{
	LLVMBuilderRef b = cg->b;
	LLVMValueRef num = LLVMBuildSub(b, LLVMBuildAdd(b, y, i64(cg, pad), ""), i64(cg, p * d), "");
	LLVMValueRef o = s == 1 ? num : LLVMBuildSDiv(b, num, i64(cg, s), "");
	LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, o, i64(cg, out), ""); /* num < 0 gives o < 0 or 0 below */
	ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSGE, num, i64(cg, 0), ""), "");
	if (s > 1)
		ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildSRem(b, num, i64(cg, s), ""), i64(cg, 0), ""), "");
	*valid = ok;
	return LLVMBuildSelect(b, ok, o, i64(cg, 0), "");
}

LLVMValueRef cg_elem_fold(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMBuilderRef b = cg->b;
	UnfoldGeom u = ir_unfold_geom(cg->g, n);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at); /* [n, c, y, x] */
	int64_t k = u.kh * u.kw, l = u.oh * u.ow;
	LLVMValueRef rows = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, idx[0], i64(cg, u.c), ""), idx[1], ""), i64(cg, k), "");
	LLVMValueRef sum = cg_real(cg, t, 0);
	for (int64_t i = 0; i < u.kh; i++) {
		LLVMValueRef vy, oy = cg_window_of(cg, idx[2], i, u.sh, u.dh, u.ph, u.oh, &vy);
		for (int64_t j = 0; j < u.kw; j++) {
			LLVMValueRef vx, ox = cg_window_of(cg, idx[3], j, u.sw, u.dw, u.pw, u.ow, &vx);
			LLVMValueRef valid = LLVMBuildAnd(b, vy, vx, "");
			LLVMValueRef row = LLVMBuildAdd(b, rows, i64(cg, i * u.kw + j), "");
			LLVMValueRef col = LLVMBuildAdd(b, LLVMBuildMul(b, oy, i64(cg, u.ow), ""), ox, "");
			LLVMValueRef lin = LLVMBuildAdd(b, LLVMBuildMul(b, row, i64(cg, l), ""), col, "");
			lin = LLVMBuildSelect(b, valid, lin, i64(cg, 0), "");
			LLVMValueRef v = cg_convert(cg, cg_load(cg, n->in[0], lin), t);
			sum = LLVMBuildFAdd(b, sum, LLVMBuildSelect(b, valid, v, cg_real(cg, t, 0), ""), "");
		}
	}
	return sum;
}
