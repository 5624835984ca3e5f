/* lower_lrn.c: local response normalization across channels, one element at a time (the formulas
 * are in ir/ops_norm.c). The channel window is unrolled: a load outside [0, C) reads the element's
 * own channel and is replaced by 0, so no branch breaks the vectorized loop around it. */
#include <math.h>
#include <stdlib.h>

#include "codegen/cg_util.h"
#include "codegen/lower_lrn.h"
#include "codegen/math.h"
#include "ir/ops.h"

#define LRN_MAX_SPAN 129 /* channels the gradient's window of windows reads: 4r + 1 */

typedef struct {
	int64_t r, c, cs; /* radius, channels, the channels' stride (NCHW: H * W, NHWC: 1) */
	double bias, alpha, beta;
	LLVMTypeRef t;
} Lrn;

/* x^e for s > 0: exact square roots for the common quarter powers, exp(e ln s) otherwise. */
static LLVMValueRef lrn_pow(Cg *cg, LLVMValueRef s, double e)
{
	LLVMTypeRef t = LLVMTypeOf(s);
	LLVMValueRef one = cg_real(cg, t, 1.0);
	double a = fabs(e);
	LLVMValueRef p;
	if (a == 0.5 || a == 1.0 || a == 0.75 || a == 1.5 || a == 1.75) {
		LLVMValueRef r2 = cg_intrinsic(cg, "sqrt", t, &s, 1), r4 = cg_intrinsic(cg, "sqrt", t, &r2, 1);
		p = a == 0.5 ? r2 : a == 1.0 ? s : a == 0.75 ? LLVMBuildFMul(cg->b, r2, r4, "")
		    : a == 1.5 ? LLVMBuildFMul(cg->b, s, r2, "") : LLVMBuildFMul(cg->b, s, LLVMBuildFMul(cg->b, r2, r4, ""), "");
		return e < 0 ? LLVMBuildFDiv(cg->b, one, p, "") : p;
	}
	return cg_exp(cg, LLVMBuildFMul(cg->b, cg_real(cg, t, e), cg_log(cg, s), ""));
}

/* Input id at channel c + j of the element at lin (channel c), 0 outside [0, C); *valid says
 * whether the channel exists. */
static LLVMValueRef lrn_at(Cg *cg, const Lrn *p, int id, LLVMValueRef lin, LLVMValueRef c, int64_t j, LLVMValueRef *valid)
{
	LLVMValueRef k = LLVMBuildAdd(cg->b, c, cg_i64(cg, j), "");
	*valid = LLVMBuildICmp(cg->b, LLVMIntULT, k, cg_i64(cg, p->c), ""); /* k < 0 wraps past C */
	LLVMValueRef off = LLVMBuildSelect(cg->b, *valid, cg_i64(cg, j * p->cs), cg_i64(cg, 0), "");
	LLVMValueRef v = cg_convert(cg, cg_load(cg, id, LLVMBuildAdd(cg->b, lin, off, "")), p->t);
	return LLVMBuildSelect(cg->b, *valid, v, cg_real(cg, p->t, 0), "");
}

/* bias + alpha * the sum of sq[center - r .. center + r] */
static LLVMValueRef lrn_scale(Cg *cg, const Lrn *p, LLVMValueRef *sq, int64_t center)
{
	LLVMValueRef sum = sq[center - p->r];
	for (int64_t j = center - p->r + 1; j <= center + p->r; j++)
		sum = LLVMBuildFAdd(cg->b, sum, sq[j], "");
	return LLVMBuildFAdd(cg->b, cg_real(cg, p->t, p->bias), LLVMBuildFMul(cg->b, cg_real(cg, p->t, p->alpha), sum, ""), "");
}

static LLVMValueRef emit_forward(Cg *cg, const Lrn *p, const Node *n, LLVMValueRef lin, LLVMValueRef c)
{
	LLVMValueRef sq[LRN_MAX_SPAN], x = NULL, valid;
	for (int64_t j = -p->r; j <= p->r; j++) {
		LLVMValueRef v = lrn_at(cg, p, n->in[0], lin, c, j, &valid);
		x = j == 0 ? v : x;
		sq[j + p->r] = LLVMBuildFMul(cg->b, v, v, "");
	}
	return LLVMBuildFMul(cg->b, x, lrn_pow(cg, lrn_scale(cg, p, sq, p->r), -p->beta), "");
}

/* dx = dy s^-beta - 2 alpha beta x sum_k dy[k] x[k] s[k]^(-beta-1), over k in the window of c.
 * Each window's s^(-beta-1) is one power (for beta 0.75: two square roots and one division), and
 * the centre's s^-beta its product with s: with s^-beta and a division by s per window, the
 * correctly rounded divisions and square roots made alexnet_bench's LRN gradients arithmetic-bound on
 * an H100 (docs/performance.md, 2026-12-06). */
static LLVMValueRef emit_grad(Cg *cg, const Lrn *p, const Node *n, LLVMValueRef lin, LLVMValueRef c)
{
	int64_t span = 4 * p->r + 1, mid = 2 * p->r;
	LLVMValueRef x[LRN_MAX_SPAN], sq[LRN_MAX_SPAN], dy[LRN_MAX_SPAN], valid;
	for (int64_t j = 0; j < span; j++) {
		x[j] = lrn_at(cg, p, n->in[1], lin, c, j - mid, &valid);
		sq[j] = LLVMBuildFMul(cg->b, x[j], x[j], "");
		dy[j] = j >= p->r && j < span - p->r ? lrn_at(cg, p, n->in[0], lin, c, j - mid, &valid) : NULL;
	}
	LLVMValueRef acc = cg_real(cg, p->t, 0), own = NULL;
	for (int64_t j = mid - p->r; j <= mid + p->r; j++) {
		LLVMValueRef s = lrn_scale(cg, p, sq, j), over_s = lrn_pow(cg, s, -p->beta - 1);
		if (j == mid)
			own = LLVMBuildFMul(cg->b, over_s, s, "");
		/* dy and x are 0 outside the channels, so the term vanishes there */
		LLVMValueRef term = LLVMBuildFMul(cg->b, LLVMBuildFMul(cg->b, dy[j], x[j], ""), over_s, "");
		acc = LLVMBuildFAdd(cg->b, acc, term, "");
	}
	LLVMValueRef k = cg_real(cg, p->t, 2 * p->alpha * p->beta);
	LLVMValueRef right = LLVMBuildFMul(cg->b, k, LLVMBuildFMul(cg->b, x[mid], acc, ""), "");
	return LLVMBuildFSub(cg->b, LLVMBuildFMul(cg->b, dy[mid], own, ""), right, "");
}

LLVMValueRef cg_emit_lrn(Cg *cg, const Node *n, LLVMValueRef lin, LLVMValueRef c)
{
	LrnParams a = ir_lrn_params(n);
	Lrn p = {a.depth_radius, n->shape.dim[a.nhwc ? 3 : 1], a.nhwc ? 1 : n->shape.dim[2] * n->shape.dim[3], a.bias, a.alpha,
		 a.beta, cg_compute_type(cg, n->dtype)};
	if (4 * p.r + 1 > LRN_MAX_SPAN) {
		fprintf(stderr, "netc: lrn depth_radius %lld is more than the %d this lowering unrolls\n", (long long)p.r,
			(LRN_MAX_SPAN - 1) / 4);
		abort();
	}
	return n->op == OP_lrn ? emit_forward(cg, &p, n, lin, c) : emit_grad(cg, &p, n, lin, c);
}
