/* lower_space_to_depth.c: the elemental emitters of space_to_depth and depth_to_space (the index
 * maps are in ir/ops_space_to_depth.c). Each element reads at most one element of its input,
 * through cg_load (which computes a fused producer at the index read); a read outside the input
 * is made at index 0 and dropped by a select. */
#include "codegen/cg_util.h"
#include "codegen/lower_table.h"
#include "ir/ops.h"

static LLVMValueRef add(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildAdd(cg->b, a, cg_i64(cg, b), ""); }
static LLVMValueRef mulc(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildMul(cg->b, a, cg_i64(cg, b), ""); }
static LLVMValueRef udiv(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildUDiv(cg->b, a, cg_i64(cg, b), ""); }
static LLVMValueRef urem(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildURem(cg->b, a, cg_i64(cg, b), ""); }
static LLVMValueRef below(Cg *cg, LLVMValueRef a, int64_t bound)
{
	return LLVMBuildICmp(cg->b, LLVMIntULT, a, cg_i64(cg, bound), ""); /* a < 0 wraps past bound */
}

/* n's input at (img, ch, row, col) of its shape where ok holds, else 0, in n's compute type */
static LLVMValueRef read_or_zero(Cg *cg, const Node *n, LLVMValueRef ok, LLVMValueRef img, LLVMValueRef ch, LLVMValueRef row,
				 LLVMValueRef col)
{
	const Shape *x = &cg->g->node[n->in[0]].shape;
	LLVMValueRef plane = LLVMBuildAdd(cg->b, mulc(cg, img, x->dim[1]), ch, "");
	LLVMValueRef lin = LLVMBuildAdd(cg->b, mulc(cg, LLVMBuildAdd(cg->b, mulc(cg, plane, x->dim[2]), row, ""), x->dim[3]), col, "");
	lin = LLVMBuildSelect(cg->b, ok, lin, cg_i64(cg, 0), "");
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef v = cg_convert(cg, cg_load(cg, n->in[0], lin), t);
	return LLVMBuildSelect(cg->b, ok, v, cg_real(cg, t, 0), "");
}

/* X[n][(c b + u) b + v][y][z] = x[n][c][b y + u - pad_h][b z + v - pad_w] */
LLVMValueRef cg_elem_space_to_depth(Cg *cg, const Node *n, ElemIndex *at)
{
	SpaceToDepth s = ir_space_to_depth(n);
	const Shape *x = &cg->g->node[n->in[0]].shape;
	LLVMValueRef *idx = cg_index_idx(cg, at);
	LLVMValueRef c = udiv(cg, idx[1], s.b * s.b), u = urem(cg, udiv(cg, idx[1], s.b), s.b), v = urem(cg, idx[1], s.b);
	LLVMValueRef row = LLVMBuildAdd(cg->b, mulc(cg, idx[2], s.b), add(cg, u, -s.ph), "");
	LLVMValueRef col = LLVMBuildAdd(cg->b, mulc(cg, idx[3], s.b), add(cg, v, -s.pw), "");
	LLVMValueRef ok = LLVMBuildAnd(cg->b, below(cg, row, x->dim[2]), below(cg, col, x->dim[3]), "");
	return read_or_zero(cg, n, ok, idx[0], c, row, col);
}

/* x[n][c][i][j] = X[n][(c b + (i + pad_h) % b) b + (j + pad_w) % b][(i + pad_h) / b][(j + pad_w) / b] */
LLVMValueRef cg_elem_depth_to_space(Cg *cg, const Node *n, ElemIndex *at)
{
	SpaceToDepth s = ir_space_to_depth(n);
	const Shape *big = &cg->g->node[n->in[0]].shape;
	LLVMValueRef *idx = cg_index_idx(cg, at);
	LLVMValueRef i = add(cg, idx[2], s.ph), j = add(cg, idx[3], s.pw);
	LLVMValueRef y = udiv(cg, i, s.b), z = udiv(cg, j, s.b);
	LLVMValueRef ch = LLVMBuildAdd(cg->b, mulc(cg, LLVMBuildAdd(cg->b, mulc(cg, idx[1], s.b), urem(cg, i, s.b), ""), s.b),
				       urem(cg, j, s.b), "");
	LLVMValueRef ok = LLVMBuildAnd(cg->b, below(cg, y, big->dim[2]), below(cg, z, big->dim[3]), "");
	return read_or_zero(cg, n, ok, idx[0], ch, y, z);
}
