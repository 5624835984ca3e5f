/* lower_winograd.c: the transforms of a Winograd convolution (ir/ops_winograd.c) as elemental
 * emitters: each element of U, V or y is a short sum over the input tile, so the transforms are
 * elementwise kernels that fuse like any injective op (an elementwise producer of x is computed
 * where the input transform reads it; the bias and activation after y join the output transform's
 * kernel). The product over transform points is the GEMM template (cg_lower_winograd_gemm,
 * codegen/lower_conv.c).
 *
 * The transform point t of an element is only known at run time, so each coefficient of a row of
 * B^T, G or A^T is chosen by a select chain over the rows; the loads do not depend on it. */
#include "codegen/cg_util.h"
#include "codegen/lower_table.h"
#include "ir/ops.h"
#include "ir/winograd.h"

static LLVMValueRef c64(Cg *cg, int64_t v) { return cg_i64(cg, v); }
static LLVMValueRef add(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(cg->b, a, b, ""); }
static LLVMValueRef mul(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(cg->b, a, b, ""); }
static LLVMValueRef udiv(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildUDiv(cg->b, a, c64(cg, b), ""); }
static LLVMValueRef urem(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildURem(cg->b, a, c64(cg, b), ""); }

/* Column col of row `row` (run time, < rows) of a table of ld columns: a select over the rows. */
static LLVMValueRef coef(Cg *cg, LLVMTypeRef t, const double *table, int ld, int rows, LLVMValueRef row, int col)
{
	LLVMValueRef v = cg_real(cg, t, table[(rows - 1) * ld + col]);
	for (int r = rows - 2; r >= 0; r--) {
		if (table[r * ld + col] == table[(rows - 1) * ld + col] && LLVMIsConstant(v))
			continue;
		LLVMValueRef is = LLVMBuildICmp(cg->b, LLVMIntEQ, row, c64(cg, r), "");
		v = LLVMBuildSelect(cg->b, is, cg_real(cg, t, table[r * ld + col]), v, "");
	}
	return v;
}

/* sum over i, j < n of ri[i] * d[i][j] * cj[j], by rows first; a zero coefficient is skipped only
 * when it is a compile-time constant */
static LLVMValueRef bilinear(Cg *cg, LLVMTypeRef t, LLVMValueRef d[WINO_MAX_ALPHA][WINO_MAX_ALPHA], int ni, int nj,
			     const LLVMValueRef *ri, const LLVMValueRef *cj)
{
	LLVMValueRef sum = cg_real(cg, t, 0);
	for (int i = 0; i < ni; i++) {
		LLVMValueRef row = cg_real(cg, t, 0);
		for (int j = 0; j < nj; j++)
			row = LLVMBuildFAdd(cg->b, row, LLVMBuildFMul(cg->b, cj[j], d[i][j], ""), "");
		sum = LLVMBuildFAdd(cg->b, sum, LLVMBuildFMul(cg->b, ri[i], row, ""), "");
	}
	return sum;
}

/* U[t][r][c] = (G g G^T)[t], g = w[r][c] (or, flipped, w[c][r] rotated by 180 degrees) */
LLVMValueRef cg_elem_winograd_weight(Cg *cg, const Node *n, ElemIndex *at)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	const WinogradTile *wt = wino_tile(a.m);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at);
	int64_t cin = cg->g->node[n->in[0]].shape.dim[1];
	LLVMValueRef xr = udiv(cg, idx[0], wt->alpha), xc = urem(cg, idx[0], wt->alpha);
	LLVMValueRef k = a.flip ? idx[2] : idx[1], ch = a.flip ? idx[1] : idx[2];
	LLVMValueRef base = mul(cg, add(cg, mul(cg, k, c64(cg, cin)), ch), c64(cg, WINO_R * WINO_R));
	LLVMValueRef g[WINO_MAX_ALPHA][WINO_MAX_ALPHA], ri[WINO_R], cj[WINO_R];
	for (int i = 0; i < WINO_R; i++)
		for (int j = 0; j < WINO_R; j++) {
			int tap = a.flip ? (WINO_R - 1 - i) * WINO_R + WINO_R - 1 - j : i * WINO_R + j;
			g[i][j] = cg_load(cg, n->in[0], add(cg, base, c64(cg, tap)));
		}
	for (int i = 0; i < WINO_R; i++) {
		ri[i] = coef(cg, t, &wt->g[0][0], WINO_R, wt->alpha, xr, i);
		cj[i] = coef(cg, t, &wt->g[0][0], WINO_R, wt->alpha, xc, i);
	}
	return bilinear(cg, t, g, WINO_R, WINO_R, ri, cj);
}

/* V[t][c][p] = (B^T d B)[t], d the input tile of p in channel c, zero outside the plane */
LLVMValueRef cg_elem_winograd_input(Cg *cg, const Node *n, ElemIndex *at)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	const WinogradTile *wt = wino_tile(a.m);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	const Shape *xs = &cg->g->node[n->in[0]].shape;
	int64_t ch = xs->dim[1], h = xs->dim[2], w = xs->dim[3];
	int64_t th = wino_tiles(a.oh, a.m), tw = wino_tiles(a.ow, a.m);
	LLVMValueRef *idx = cg_index_idx(cg, at);
	LLVMValueRef xr = udiv(cg, idx[0], wt->alpha), xc = urem(cg, idx[0], wt->alpha), p = idx[2];
	LLVMValueRef img = udiv(cg, p, th * tw);
	LLVMValueRef r0 = LLVMBuildSub(cg->b, mul(cg, urem(cg, udiv(cg, p, tw), th), c64(cg, a.m)), c64(cg, a.ph), "");
	LLVMValueRef c0 = LLVMBuildSub(cg->b, mul(cg, urem(cg, p, tw), c64(cg, a.m)), c64(cg, a.pw), "");
	LLVMValueRef plane = mul(cg, add(cg, mul(cg, img, c64(cg, ch)), idx[1]), c64(cg, h * w));
	LLVMValueRef d[WINO_MAX_ALPHA][WINO_MAX_ALPHA], ri[WINO_MAX_ALPHA], cj[WINO_MAX_ALPHA];
	LLVMValueRef zero = cg_real(cg, t, 0);
	for (int i = 0; i < wt->alpha; i++) {
		LLVMValueRef r = add(cg, r0, c64(cg, i));
		LLVMValueRef okr = LLVMBuildICmp(cg->b, LLVMIntULT, r, c64(cg, h), ""); /* r < 0 wraps past h */
		for (int j = 0; j < wt->alpha; j++) {
			LLVMValueRef c = add(cg, c0, c64(cg, j));
			LLVMValueRef ok = LLVMBuildAnd(cg->b, okr, LLVMBuildICmp(cg->b, LLVMIntULT, c, c64(cg, w), ""), "");
			LLVMValueRef at_ij = LLVMBuildSelect(cg->b, ok, add(cg, plane, add(cg, mul(cg, r, c64(cg, w)), c)),
							     c64(cg, 0), "");
			d[i][j] = LLVMBuildSelect(cg->b, ok, cg_load(cg, n->in[0], at_ij), zero, "");
		}
	}
	for (int i = 0; i < wt->alpha; i++) {
		ri[i] = coef(cg, t, &wt->bt[0][0], WINO_MAX_ALPHA, wt->alpha, xr, i);
		cj[i] = coef(cg, t, &wt->bt[0][0], WINO_MAX_ALPHA, wt->alpha, xc, i);
	}
	return bilinear(cg, t, d, wt->alpha, wt->alpha, ri, cj);
}

/* y[img][k][y][x] = (A^T m A)[y mod m][x mod m], m the points of tile (img, y/m, x/m) */
LLVMValueRef cg_elem_winograd_output(Cg *cg, const Node *n, ElemIndex *at)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	const WinogradTile *wt = wino_tile(a.m);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	const Shape *ms = &cg->g->node[n->in[0]].shape;
	int64_t k = ms->dim[1], p = ms->dim[2];
	int64_t th = wino_tiles(a.oh, a.m), tw = wino_tiles(a.ow, a.m);
	LLVMValueRef *idx = cg_index_idx(cg, at);
	LLVMValueRef tile = add(cg, mul(cg, add(cg, mul(cg, idx[0], c64(cg, th)), udiv(cg, idx[2], a.m)), c64(cg, tw)),
				udiv(cg, idx[3], a.m));
	LLVMValueRef i = urem(cg, idx[2], a.m), j = urem(cg, idx[3], a.m);
	LLVMValueRef base = add(cg, mul(cg, idx[1], c64(cg, p)), tile);
	LLVMValueRef mm[WINO_MAX_ALPHA][WINO_MAX_ALPHA], ri[WINO_MAX_ALPHA], cj[WINO_MAX_ALPHA];
	for (int r = 0; r < wt->alpha; r++)
		for (int c = 0; c < wt->alpha; c++)
			mm[r][c] = cg_load(cg, n->in[0], add(cg, base, c64(cg, (int64_t)(r * wt->alpha + c) * k * p)));
	for (int r = 0; r < wt->alpha; r++) {
		ri[r] = coef(cg, t, &wt->at[0][0], WINO_MAX_ALPHA, a.m, i, r);
		cj[r] = coef(cg, t, &wt->at[0][0], WINO_MAX_ALPHA, a.m, j, r);
	}
	return bilinear(cg, t, mm, wt->alpha, wt->alpha, ri, cj);
}
