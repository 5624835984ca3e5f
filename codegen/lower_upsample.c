/* lower_upsample.c: the elemental emitters of upsample_bilinear and its gradient (the formulas are
 * in ir/ops_upsample.c). The forward reads its four taps; the gradient gathers, for each input
 * element, the output elements whose taps include it: with a whole scale f those lie within
 * -f-1 .. 2f rows (and columns) of f times its own, so the window is unrolled and a row outside
 * the output weighs 0. Inputs are read through cg_load, which computes a fused producer at the
 * index read. */
#include "codegen/cg_util.h"
#include "codegen/lower_table.h"
#include "ir/ops.h"

/* Where output row o (i64) reads along an axis of input size `size`: rows *i0 and *i1 (i64) with
 * weight *l1 for i1, in type t. */
static void source(Cg *cg, LLVMTypeRef t, LLVMValueRef o, int64_t f, int64_t size, LLVMValueRef *i0, LLVMValueRef *i1,
		   LLVMValueRef *l1)
{
	LLVMBuilderRef b = cg->b;
	LLVMValueRef s = LLVMBuildFAdd(b, LLVMBuildSIToFP(b, o, t, ""), cg_real(cg, t, 0.5), "");
	s = LLVMBuildFSub(b, LLVMBuildFDiv(b, s, cg_real(cg, t, (double)f), ""), cg_real(cg, t, 0.5), "");
	LLVMValueRef zero = cg_real(cg, t, 0);
	s = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, s, zero, ""), zero, s, "");
	*i0 = LLVMBuildFPToSI(b, s, cg->t_i64, "");
	LLVMValueRef inside = LLVMBuildICmp(b, LLVMIntSLT, *i0, cg_i64(cg, size - 1), "");
	*i1 = LLVMBuildAdd(b, *i0, LLVMBuildZExt(b, inside, cg->t_i64, ""), "");
	*l1 = LLVMBuildFSub(b, s, LLVMBuildSIToFP(b, *i0, t, ""), "");
}

/* Input id at (plane, row, col) of a plane of w columns, in type t. */
static LLVMValueRef at_plane(Cg *cg, LLVMTypeRef t, int id, LLVMValueRef plane, LLVMValueRef row, LLVMValueRef col, int64_t w)
{
	LLVMValueRef lin = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, row, cg_i64(cg, w), ""), col, "");
	return cg_convert(cg, cg_load(cg, id, LLVMBuildAdd(cg->b, plane, lin, "")), t);
}

LLVMValueRef cg_elem_upsample_bilinear(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMBuilderRef b = cg->b;
	const Shape *xs = &cg->g->node[n->in[0]].shape;
	int64_t f = ir_upsample_scale(n), h = xs->dim[2], w = xs->dim[3];
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at);
	LLVMValueRef plane = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, idx[0], cg_i64(cg, xs->dim[1]), ""), idx[1], ""),
					  cg_i64(cg, h * w), "");
	LLVMValueRef h0, h1, lh, w0, w1, lw;
	source(cg, t, idx[2], f, h, &h0, &h1, &lh);
	source(cg, t, idx[3], f, w, &w0, &w1, &lw);
	LLVMValueRef one = cg_real(cg, t, 1), mh = LLVMBuildFSub(b, one, lh, ""), mw = LLVMBuildFSub(b, one, lw, "");
	LLVMValueRef top = LLVMBuildFAdd(b, LLVMBuildFMul(b, mw, at_plane(cg, t, n->in[0], plane, h0, w0, w), ""),
					 LLVMBuildFMul(b, lw, at_plane(cg, t, n->in[0], plane, h0, w1, w), ""), "");
	LLVMValueRef bottom = LLVMBuildFAdd(b, LLVMBuildFMul(b, mw, at_plane(cg, t, n->in[0], plane, h1, w0, w), ""),
					    LLVMBuildFMul(b, lw, at_plane(cg, t, n->in[0], plane, h1, w1, w), ""), "");
	return LLVMBuildFAdd(b, LLVMBuildFMul(b, mh, top, ""), LLVMBuildFMul(b, lh, bottom, ""), "");
}

#define SPAN (3 * IR_UPSAMPLE_MAX_SCALE + 2)

/* For input row i (i64) of an axis of input size `size`: the output rows f i + k, k in
 * -f-1 .. 2f, clamped into the output (*row), and the weight with which each reads row i (0 for
 * a row outside the output). Returns how many. */
static int gather_rows(Cg *cg, LLVMTypeRef t, LLVMValueRef i, int64_t f, int64_t size, LLVMValueRef *row, LLVMValueRef *wt)
{
	LLVMBuilderRef b = cg->b;
	int count = 0;
	LLVMValueRef zero = cg_real(cg, t, 0), one = cg_real(cg, t, 1);
	for (int64_t k = -f - 1; k <= 2 * f; k++, count++) {
		LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, i, cg_i64(cg, f), ""), cg_i64(cg, k), "");
		LLVMValueRef valid = LLVMBuildICmp(b, LLVMIntULT, o, cg_i64(cg, size * f), ""); /* o < 0 wraps */
		row[count] = LLVMBuildSelect(b, valid, o, cg_i64(cg, 0), "");
		LLVMValueRef i0, i1, l1;
		source(cg, t, row[count], f, size, &i0, &i1, &l1);
		LLVMValueRef a = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, i0, i, ""), LLVMBuildFSub(b, one, l1, ""), zero, "");
		LLVMValueRef c = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, i1, i, ""), l1, zero, "");
		wt[count] = LLVMBuildSelect(b, valid, LLVMBuildFAdd(b, a, c, ""), zero, "");
	}
	return count;
}

LLVMValueRef cg_elem_upsample_bilinear_grad(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMBuilderRef b = cg->b;
	int64_t f = ir_upsample_scale(n), h = n->shape.dim[2], w = n->shape.dim[3];
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at);
	LLVMValueRef plane = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, idx[0], cg_i64(cg, n->shape.dim[1]), ""), idx[1], ""),
					  cg_i64(cg, h * w * f * f), "");
	LLVMValueRef rows[SPAN], wr[SPAN], cols[SPAN], wc[SPAN];
	int nr = gather_rows(cg, t, idx[2], f, h, rows, wr), nc = gather_rows(cg, t, idx[3], f, w, cols, wc);
	LLVMValueRef sum = cg_real(cg, t, 0);
	for (int r = 0; r < nr; r++) {
		LLVMValueRef line = cg_real(cg, t, 0);
		for (int c = 0; c < nc; c++)
			line = LLVMBuildFAdd(b, line, LLVMBuildFMul(b, wc[c], at_plane(cg, t, n->in[0], plane, rows[r], cols[c], w * f), ""), "");
		sum = LLVMBuildFAdd(b, sum, LLVMBuildFMul(b, wr[r], line, ""), "");
	}
	return sum;
}
