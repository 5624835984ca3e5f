/* lower_depthwise.c: the elemental emitters of the depthwise convolution (ir/ops_depthwise.c).
 * dwconv2d's element sums its kh x kw window times the channel's weights, the positions unrolled;
 * the input gradient's element sums dy over the windows that cover it (cg_window_of, as fold);
 * a weight-gradient term is one product dy x, which the sum over the batch and the window
 * positions reads through cg_load, so fusion makes the weight gradient one reduction kernel that
 * stores no term. A position in the padding reads element 0 and is replaced by 0: nothing
 * branches. The elementwise and reduction templates run them on every target. */
#include "codegen/cg_util.h"
#include "codegen/lower_table.h"
#include "codegen/lower_window.h"
#include "ir/ops.h"

static LLVMValueRef i64(Cg *cg, int64_t v) { return cg_i64(cg, v); }

/* a * s + b */
static LLVMValueRef mul_add(Cg *cg, LLVMValueRef a, int64_t s, LLVMValueRef b)
{
	return LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, a, i64(cg, s), ""), b, "");
}

/* Image row y (or column) of window position p for output row o: o s - pad + p d, and whether it
 * lies inside the size rows (an unsigned compare: a negative row wraps past them). */
static LLVMValueRef tap_row(Cg *cg, LLVMValueRef o, LLVMValueRef p, int64_t s, int64_t d, int64_t pad, int64_t size,
			    LLVMValueRef *inside)
{
	LLVMValueRef y = LLVMBuildSub(cg->b, mul_add(cg, o, s, LLVMBuildMul(cg->b, p, i64(cg, d), "")), i64(cg, pad), "");
	*inside = LLVMBuildICmp(cg->b, LLVMIntULT, y, i64(cg, size), "");
	return y;
}

/* v where valid, else 0 */
static LLVMValueRef or_zero(Cg *cg, LLVMValueRef valid, LLVMValueRef v)
{
	return LLVMBuildSelect(cg->b, valid, v, cg_real(cg, LLVMTypeOf(v), 0), "");
}

/* input id's element lin where valid (element 0 elsewhere, never out of bounds) */
static LLVMValueRef load_valid(Cg *cg, int id, LLVMValueRef valid, LLVMValueRef lin, LLVMTypeRef t)
{
	return cg_convert(cg, cg_load(cg, id, LLVMBuildSelect(cg->b, valid, lin, i64(cg, 0), "")), t);
}

/* Element idx [n, c, y, x] of the forward (src x, planes h x w read at the taps of output y, x) or
 * of the input gradient (transposed: src dy, planes oh x ow read at the outputs whose windows hold
 * y, x): the sum over the kh x kw taps of src times channel c's weights, n->in[1]. */
static LLVMValueRef window_sum(Cg *cg, const Node *n, ElemIndex *at, bool transposed)
{
	LLVMBuilderRef b = cg->b;
	UnfoldGeom u = ir_depthwise_geom(cg->g, n);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at);
	int64_t h = transposed ? u.oh : u.h, w = transposed ? u.ow : u.w;
	LLVMValueRef plane = mul_add(cg, idx[0], u.c, idx[1]), taps = LLVMBuildMul(b, idx[1], i64(cg, u.kh * u.kw), "");
	LLVMValueRef sum = cg_real(cg, t, 0);
	for (int64_t i = 0; i < u.kh; i++) {
		LLVMValueRef vy, y = transposed ? cg_window_of(cg, idx[2], i, u.sh, u.dh, u.ph, h, &vy)
						: tap_row(cg, idx[2], i64(cg, i), u.sh, u.dh, u.ph, h, &vy);
		LLVMValueRef row = mul_add(cg, plane, h, y);
		for (int64_t j = 0; j < u.kw; j++) {
			LLVMValueRef vx, x = transposed ? cg_window_of(cg, idx[3], j, u.sw, u.dw, u.pw, w, &vx)
							: tap_row(cg, idx[3], i64(cg, j), u.sw, u.dw, u.pw, w, &vx);
			LLVMValueRef valid = LLVMBuildAnd(b, vy, vx, "");
			LLVMValueRef v = load_valid(cg, n->in[0], valid, mul_add(cg, row, w, x), t);
			LLVMValueRef wt = cg_convert(cg, cg_load(cg, n->in[1], LLVMBuildAdd(b, taps, i64(cg, i * u.kw + j), "")), t);
			sum = LLVMBuildFAdd(b, sum, or_zero(cg, valid, LLVMBuildFMul(b, v, wt, "")), "");
		}
	}
	return sum;
}

LLVMValueRef cg_elem_dwconv2d(Cg *cg, const Node *n, ElemIndex *at) { return window_sum(cg, n, at, false); }

LLVMValueRef cg_elem_dwconv2d_grad_input(Cg *cg, const Node *n, ElemIndex *at) { return window_sum(cg, n, at, true); }

LLVMValueRef cg_elem_dwconv2d_wterms(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMBuilderRef b = cg->b;
	UnfoldGeom u = ir_depthwise_geom(cg->g, n);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at); /* [c, tap, m] with m = (n OH + oy) OW + ox */
	LLVMValueRef i = LLVMBuildUDiv(b, idx[1], i64(cg, u.kw), ""), j = LLVMBuildURem(b, idx[1], i64(cg, u.kw), "");
	LLVMValueRef batch = LLVMBuildUDiv(b, idx[2], i64(cg, u.oh * u.ow), "");
	LLVMValueRef pos = LLVMBuildURem(b, idx[2], i64(cg, u.oh * u.ow), "");
	LLVMValueRef oy = LLVMBuildUDiv(b, pos, i64(cg, u.ow), ""), ox = LLVMBuildURem(b, pos, i64(cg, u.ow), "");
	LLVMValueRef plane = mul_add(cg, batch, u.c, idx[0]);
	LLVMValueRef vy, y = tap_row(cg, oy, i, u.sh, u.dh, u.ph, u.h, &vy);
	LLVMValueRef vx, x = tap_row(cg, ox, j, u.sw, u.dw, u.pw, u.w, &vx);
	LLVMValueRef valid = LLVMBuildAnd(b, vy, vx, "");
	LLVMValueRef dy = cg_convert(cg, cg_load(cg, n->in[0], mul_add(cg, mul_add(cg, plane, u.oh, oy), u.ow, ox)), t);
	LLVMValueRef v = load_valid(cg, n->in[1], valid, mul_add(cg, mul_add(cg, plane, u.h, y), u.w, x), t);
	return or_zero(cg, valid, LLVMBuildFMul(b, dy, v, ""));
}
