/* lower_elemwise.c: elementwise, broadcast and injective ops by elemental emitters.
 *
 * An emitter (cg_elem_*) gives one element of a node at an output index; the kernel loops over the
 * output as [rows, last dim] (or as one flat row when no operand needs the index), work-groups
 * taking blocks of rows or chunks of a long row, the innermost loop contiguous so LLVM
 * vectorizes it. On GPUs each work-item computes one element, or several
 * consecutive ones of a flat group (lower_elemwise_lanes).
 *
 * A fused elementwise group is one such kernel over its leader's shape: an operand that is a
 * member of the group is emitted in place (once per element), others are loaded, and every
 * group output is stored. The same emitters give the epilogue of anchor groups
 * (cg_group_epilogue) and the producers that reductions read (cg_emit_member): the group's
 * element machinery is codegen/cg_group.c. */
#include <math.h>
#include <stdlib.h>

#include "codegen/cg_util.h"
#include "codegen/gemm_gpu.h"
#include "codegen/lower_lrn.h"
#include "codegen/lower_table.h"
#include "codegen/math.h"
#include "ir/ops.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
#define PHILOX_K1 0x5EED5EEDu

static bool same_shape(const Node *a, const Node *b) { return shape_eq(&a->shape, &b->shape); }

/* The emitters' names for the index and operand readers of the fused group (codegen/cg_group.c). */
static inline LLVMValueRef index_lin(Cg *cg, ElemIndex *at) { return cg_index_lin(cg, at); }
static inline LLVMValueRef *index_idx(Cg *cg, ElemIndex *at) { return cg_index_idx(cg, at); }
static inline LLVMValueRef index_axis(Cg *cg, ElemIndex *at, int d) { return cg_index_axis(cg, at, d); }
static inline int64_t piece_start(const Cg *cg, const Node *n, int k) { return cg_piece_start(cg, n, k); }
static inline LLVMValueRef operand(Cg *cg, const Node *n, int k, ElemIndex *at) { return cg_operand(cg, n, k, at); }

static LLVMValueRef mul_hi_lo(Cg *cg, uint32_t m, LLVMValueRef c, LLVMValueRef *lo)
{
	LLVMValueRef p = LLVMBuildMul(cg->b, LLVMBuildZExt(cg->b, c, cg->t_i64, ""), cg_i64(cg, m), "");
	*lo = LLVMBuildTrunc(cg->b, p, cg->t_i32, "");
	return LLVMBuildTrunc(cg->b, LLVMBuildLShr(cg->b, p, cg_i64(cg, 32), ""), cg->t_i32, "");
}

/* Philox4x32-10 draw, word 0, exactly as ir/philox.h. */
static LLVMValueRef philox(Cg *cg, LLVMValueRef seed, LLVMValueRef step, uint32_t stream, LLVMValueRef index)
{
	LLVMBuilderRef b = cg->b;
	LLVMValueRef c0 = index, c1 = cg_i32(cg, stream), c2 = step, c3 = cg_i32(cg, 0);
	LLVMValueRef k0 = seed;
	uint32_t k1 = PHILOX_K1;
	for (int r = 0; r < 10; r++) {
		LLVMValueRef lo0, lo1;
		LLVMValueRef hi0 = mul_hi_lo(cg, PHILOX_M0, c0, &lo0);
		LLVMValueRef hi1 = mul_hi_lo(cg, PHILOX_M1, c2, &lo1);
		c0 = LLVMBuildXor(b, LLVMBuildXor(b, hi1, c1, ""), k0, "");
		c2 = LLVMBuildXor(b, LLVMBuildXor(b, hi0, c3, ""), cg_i32(cg, k1), "");
		c1 = lo1;
		c3 = lo0;
		k0 = LLVMBuildAdd(b, k0, cg_i32(cg, PHILOX_W0), "");
		k1 += PHILOX_W1;
	}
	return c0;
}

/* x / (1 - p) where the draw's top 24 bits, scaled to [0, 1), are >= p; else 0. */
LLVMValueRef cg_elem_dropout(Cg *cg, const Node *n, ElemIndex *at)
{
	DropoutParams d = ir_dropout_params(n);
	double p = d.p;
	LLVMValueRef x = operand(cg, n, 0, at);
	if (p <= 0)
		return x;
	LLVMValueRef lin = index_lin(cg, at);
	LLVMValueRef seed = cg_load_uniform(cg, n->in[1], 0);
	LLVMValueRef step = cg_load_uniform(cg, n->in[1], 1);
	/* philox_row_index: the element's place in the step's global batch, mod 2^32 */
	LLVMValueRef first_row = cg_load_uniform(cg, n->in[1], 2);
	LLVMValueRef offset = LLVMBuildMul(cg->b, first_row, cg_i32(cg, (uint32_t)ir_dropout_row_elems(n)), "");
	LLVMValueRef index = LLVMBuildAdd(cg->b, LLVMBuildTrunc(cg->b, lin, cg->t_i32, ""), offset, "");
	LLVMValueRef draw = philox(cg, seed, step, d.stream, index);
	/* u = k 2^-24 >= p  <=>  k >= ceil(p 2^24), exact in integers */
	double t = fmin(ceil(p * 16777216.0), 16777216.0);
	LLVMValueRef k = LLVMBuildLShr(cg->b, draw, cg_i32(cg, 8), "");
	LLVMValueRef keep = LLVMBuildICmp(cg->b, LLVMIntUGE, k, cg_i32(cg, (int64_t)t), "");
	LLVMTypeRef ct = LLVMTypeOf(x);
	LLVMValueRef y = LLVMBuildFMul(cg->b, x, cg_real(cg, ct, 1.0 / (1.0 - p)), "");
	return LLVMBuildSelect(cg->b, keep, y, cg_real(cg, ct, 0.0), "");
}

/* The input whose piece holds the output index: the last piece starting at or before it. */
LLVMValueRef cg_elem_concat(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef pos = index_idx(cg, at)[ir_axis(n)], v = operand(cg, n, 0, at);
	for (int k = 1; k < n->nin; k++) {
		LLVMValueRef here = LLVMBuildICmp(cg->b, LLVMIntSGE, pos, cg_i64(cg, piece_start(cg, n, k)), "");
		v = LLVMBuildSelect(cg->b, here, operand(cg, n, k, at), v, "");
	}
	return v;
}

/* The arithmetic binaries: both operands (in order, so the IR is the same every build), then
 * the instruction. */
#define ELEM_ARITH(name, build)                                                  \
	LLVMValueRef cg_elem_##name(Cg *cg, const Node *n, ElemIndex *at)       \
	{                                                                        \
		LLVMValueRef a = operand(cg, n, 0, at), b = operand(cg, n, 1, at); \
		return build(cg->b, a, b, "");                                   \
	}
ELEM_ARITH(add, LLVMBuildFAdd)
ELEM_ARITH(sub, LLVMBuildFSub)
ELEM_ARITH(mul, LLVMBuildFMul)
ELEM_ARITH(div, LLVMBuildFDiv)
#undef ELEM_ARITH

/* maximum and minimum: the winner of an ordered compare, then NaN (a + b) where either is NaN;
 * not llvm.maxnum/minnum, which return the other input */
static LLVMValueRef minmax(Cg *cg, const Node *n, ElemIndex *at, LLVMRealPredicate wins)
{
	LLVMValueRef a = operand(cg, n, 0, at), b = operand(cg, n, 1, at);
	LLVMValueRef r = LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, wins, a, b, ""), a, b, "");
	LLVMValueRef nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, a, b, "");
	return LLVMBuildSelect(cg->b, nan, LLVMBuildFAdd(cg->b, a, b, ""), r, "");
}

LLVMValueRef cg_elem_maximum(Cg *cg, const Node *n, ElemIndex *at) { return minmax(cg, n, at, LLVMRealOGT); }
LLVMValueRef cg_elem_minimum(Cg *cg, const Node *n, ElemIndex *at) { return minmax(cg, n, at, LLVMRealOLT); }

/* (dy, x, y): 0 where x loses to y, dy/2 on a tie, else dy (NaN compares false: dy) */
static LLVMValueRef minmax_share(Cg *cg, const Node *n, ElemIndex *at, LLVMRealPredicate loses)
{
	LLVMValueRef dy = operand(cg, n, 0, at), x = operand(cg, n, 1, at), y = operand(cg, n, 2, at);
	LLVMTypeRef t = LLVMTypeOf(dy);
	LLVMValueRef tie = LLVMBuildFCmp(cg->b, LLVMRealOEQ, x, y, "");
	LLVMValueRef r = LLVMBuildSelect(cg->b, tie, LLVMBuildFMul(cg->b, dy, cg_real(cg, t, 0.5), ""), dy, "");
	return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, loses, x, y, ""), cg_real(cg, t, 0), r, "");
}

LLVMValueRef cg_elem_maximum_grad(Cg *cg, const Node *n, ElemIndex *at) { return minmax_share(cg, n, at, LLVMRealOLT); }
LLVMValueRef cg_elem_minimum_grad(Cg *cg, const Node *n, ElemIndex *at) { return minmax_share(cg, n, at, LLVMRealOGT); }

/* standardize(x, mean, invstd): (x - mean) * invstd */
LLVMValueRef cg_elem_standardize(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at), mean = operand(cg, n, 1, at), inv = operand(cg, n, 2, at);
	return LLVMBuildFMul(cg->b, LLVMBuildFSub(cg->b, x, mean, ""), inv, "");
}

/* relu_grad(dy, x): dy where x > 0 */
LLVMValueRef cg_elem_relu_grad(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef a = operand(cg, n, 0, at), b = operand(cg, n, 1, at);
	return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOGT, b, cg_real(cg, LLVMTypeOf(b), 0), ""), a,
			       cg_real(cg, LLVMTypeOf(a), 0), "");
}

/* cast: through the target's storage type and back, so a cast fused into a kernel rounds as
 * the stored value would. */
LLVMValueRef cg_elem_cast(Cg *cg, const Node *n, ElemIndex *at)
{
	return cg_round_as(cg, operand(cg, n, 0, at), n->dtype);
}

/* select(c, a, b): a where the scalar c is nonzero (an unordered compare: NaN picks a too, which
 * never happens for the 0/1 of all_finite) */
LLVMValueRef cg_elem_select(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef c = operand(cg, n, 0, at);
	LLVMValueRef nz = LLVMBuildFCmp(cg->b, LLVMRealUNE, c, cg_real(cg, LLVMTypeOf(c), 0), "");
	return LLVMBuildSelect(cg->b, nz, operand(cg, n, 1, at), operand(cg, n, 2, at), "");
}

LLVMValueRef cg_elem_neg(Cg *cg, const Node *n, ElemIndex *at)
{
	return LLVMBuildFNeg(cg->b, operand(cg, n, 0, at), "");
}

LLVMValueRef cg_elem_exp(Cg *cg, const Node *n, ElemIndex *at) { return cg_exp(cg, operand(cg, n, 0, at)); }

LLVMValueRef cg_elem_log(Cg *cg, const Node *n, ElemIndex *at) { return cg_log(cg, operand(cg, n, 0, at)); }

LLVMValueRef cg_elem_sqrt(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at);
	return cg_intrinsic(cg, "sqrt", LLVMTypeOf(x), &x, 1);
}

LLVMValueRef cg_elem_relu(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at), zero = cg_real(cg, LLVMTypeOf(x), 0);
	return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOGT, x, zero, ""), x, zero, "");
}

LLVMValueRef cg_elem_abs(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at);
	return cg_intrinsic(cg, "fabs", LLVMTypeOf(x), &x, 1);
}

/* 1 above 0, -1 below, else x itself (0, -0 and NaN) */
LLVMValueRef cg_elem_sign(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at);
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef zero = cg_real(cg, t, 0);
	LLVMValueRef y = LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOLT, x, zero, ""), cg_real(cg, t, -1), x, "");
	return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOGT, x, zero, ""), cg_real(cg, t, 1), y, "");
}

/* x^k for a whole k by repeated squaring, 1/x^|k| below 0: exact signs for negative x, as pow */
static LLVMValueRef powi(Cg *cg, LLVMValueRef x, int64_t k)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef r = cg_real(cg, t, 1), base = x;
	for (int64_t m = k < 0 ? -k : k; m; m >>= 1) {
		if (m & 1)
			r = LLVMBuildFMul(cg->b, r, base, "");
		if (m > 1)
			base = LLVMBuildFMul(cg->b, base, base, "");
	}
	return k < 0 ? LLVMBuildFDiv(cg->b, cg_real(cg, t, 1), r, "") : r;
}

/* x^e: whole exponents up to 64 by multiplication, 0.5 by sqrt, others as exp(e ln x) with x = 0
 * giving 0 (e > 0) or inf (e < 0) and x < 0 NaN, as pow */
LLVMValueRef cg_elem_pow(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at);
	LLVMTypeRef t = LLVMTypeOf(x);
	double e = ir_pow_exponent(n);
	if (e == floor(e) && fabs(e) <= 64)
		return powi(cg, x, (int64_t)e);
	if (e == 0.5)
		return cg_intrinsic(cg, "sqrt", t, &x, 1);
	LLVMValueRef y = cg_exp(cg, LLVMBuildFMul(cg->b, cg_real(cg, t, e), cg_log(cg, x), ""));
	LLVMValueRef zero = LLVMBuildFCmp(cg->b, LLVMRealOEQ, x, cg_real(cg, t, 0), "");
	LLVMValueRef neg = LLVMBuildFCmp(cg->b, LLVMRealOLT, x, cg_real(cg, t, 0), "");
	y = LLVMBuildSelect(cg->b, neg, cg_real(cg, t, NAN), y, "");
	return LLVMBuildSelect(cg->b, zero, cg_real(cg, t, e > 0 ? 0 : INFINITY), y, "");
}

/* 1/(1+e) for x >= 0 and e/(1+e) below, e = exp(-|x|) in (0, 1]: never inf/inf at large |x|. */
static LLVMValueRef sigmoid_of(Cg *cg, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef one = cg_real(cg, t, 1);
	LLVMValueRef e = cg_exp(cg, LLVMBuildFNeg(cg->b, cg_intrinsic(cg, "fabs", t, &x, 1), ""));
	LLVMValueRef r = LLVMBuildFDiv(cg->b, one, LLVMBuildFAdd(cg->b, one, e, ""), "");
	LLVMValueRef nonneg = LLVMBuildFCmp(cg->b, LLVMRealOGE, x, cg_real(cg, t, 0), "");
	return LLVMBuildSelect(cg->b, nonneg, r, LLVMBuildFMul(cg->b, e, r, ""), "");
}

LLVMValueRef cg_elem_sigmoid(Cg *cg, const Node *n, ElemIndex *at) { return sigmoid_of(cg, operand(cg, n, 0, at)); }

/* silu: x sigmoid(x), the sigmoid stable as above, so large |x| gives x or -0, never NaN */
LLVMValueRef cg_elem_silu(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at);
	return LLVMBuildFMul(cg->b, x, sigmoid_of(cg, x), "");
}

/* tanh |x| = (1-e)/(1+e), e = exp(-2|x|), with x's sign; near 0, where 1-e cancels, its Taylor
 * series to x^9 instead (the bound keeps the series' error below the type's rounding). Not
 * llvm.tanh: that is a libm call on the host and has no lowering on GPUs. */
static LLVMValueRef tanh_of(Cg *cg, LLVMValueRef x)
{
	static const double taylor[] = {62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3};
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef a = cg_intrinsic(cg, "fabs", t, &x, 1), one = cg_real(cg, t, 1);
	LLVMValueRef e = cg_exp(cg, LLVMBuildFMul(cg->b, a, cg_real(cg, t, -2), ""));
	LLVMValueRef far = LLVMBuildFDiv(cg->b, LLVMBuildFSub(cg->b, one, e, ""),
					 LLVMBuildFAdd(cg->b, one, e, ""), "");
	LLVMValueRef a2 = LLVMBuildFMul(cg->b, a, a, ""), p = cg_real(cg, t, taylor[0]);
	for (size_t i = 1; i < sizeof taylor / sizeof *taylor; i++)
		p = LLVMBuildFAdd(cg->b, LLVMBuildFMul(cg->b, p, a2, ""), cg_real(cg, t, taylor[i]), "");
	LLVMValueRef near = LLVMBuildFAdd(cg->b, a, LLVMBuildFMul(cg->b, a, LLVMBuildFMul(cg->b, a2, p, ""), ""), "");
	LLVMValueRef bound = cg_real(cg, t, t == cg->t_f64 ? 0.04 : 0.3);
	LLVMValueRef small = LLVMBuildFCmp(cg->b, LLVMRealOLT, a, bound, "");
	LLVMValueRef args[2] = {LLVMBuildSelect(cg->b, small, near, far, ""), x};
	return cg_intrinsic(cg, "copysign", t, args, 2);
}

LLVMValueRef cg_elem_tanh(Cg *cg, const Node *n, ElemIndex *at) { return tanh_of(cg, operand(cg, n, 0, at)); }

#define GELU_KAPPA 0.044715

/* The pieces both gelu and gelu_grad need, as PyTorch's kernels compute them: the exact form's
 * Phi(x) = (1 + erf(x / sqrt 2)) / 2, or the tanh form's t = tanh(sqrt(2/pi) (x + kappa x^3)). */
static LLVMValueRef gelu_erf_cdf(Cg *cg, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef e = cg_erf(cg, LLVMBuildFMul(cg->b, x, cg_real(cg, t, M_SQRT1_2), ""));
	return LLVMBuildFMul(cg->b, cg_real(cg, t, 0.5), LLVMBuildFAdd(cg->b, cg_real(cg, t, 1), e, ""), "");
}

static LLVMValueRef gelu_tanh_inner(Cg *cg, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef x3 = LLVMBuildFMul(cg->b, LLVMBuildFMul(cg->b, x, x, ""), x, "");
	LLVMValueRef inner = LLVMBuildFAdd(cg->b, x, LLVMBuildFMul(cg->b, cg_real(cg, t, GELU_KAPPA), x3, ""), "");
	return tanh_of(cg, LLVMBuildFMul(cg->b, cg_real(cg, t, sqrt(2 / M_PI)), inner, ""));
}

/* gelu: x Phi(x), or x/2 (1 + t) */
LLVMValueRef cg_elem_gelu(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at);
	LLVMTypeRef t = LLVMTypeOf(x);
	if (!ir_gelu_is_tanh(n))
		return LLVMBuildFMul(cg->b, x, gelu_erf_cdf(cg, x), "");
	LLVMValueRef half_x = LLVMBuildFMul(cg->b, cg_real(cg, t, 0.5), x, "");
	return LLVMBuildFMul(cg->b, half_x, LLVMBuildFAdd(cg->b, cg_real(cg, t, 1), gelu_tanh_inner(cg, x), ""), "");
}

/* gelu_grad(dy, x): dy (Phi(x) + x e^(-x^2/2) / sqrt(2 pi)), or
 * dy ((1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 kappa x^2)) */
LLVMValueRef cg_elem_gelu_grad(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef dy = operand(cg, n, 0, at), x = operand(cg, n, 1, at);
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMBuilderRef b = cg->b;
	LLVMValueRef one = cg_real(cg, t, 1), half = cg_real(cg, t, 0.5), x2 = LLVMBuildFMul(b, x, x, ""), d;
	if (!ir_gelu_is_tanh(n)) {
		LLVMValueRef pdf = LLVMBuildFMul(b, cg_exp(cg, LLVMBuildFMul(b, cg_real(cg, t, -0.5), x2, "")),
						 cg_real(cg, t, 1 / sqrt(2 * M_PI)), "");
		d = LLVMBuildFAdd(b, gelu_erf_cdf(cg, x), LLVMBuildFMul(b, x, pdf, ""), "");
	} else {
		LLVMValueRef th = gelu_tanh_inner(cg, x);
		LLVMValueRef inner_d = LLVMBuildFMul(b, cg_real(cg, t, sqrt(2 / M_PI)),
						     LLVMBuildFAdd(b, one, LLVMBuildFMul(b, cg_real(cg, t, 3 * GELU_KAPPA), x2, ""), ""), "");
		LLVMValueRef left = LLVMBuildFMul(b, half, x, "");
		LLVMValueRef right_d = LLVMBuildFMul(b, LLVMBuildFMul(b, left, LLVMBuildFSub(b, one, LLVMBuildFMul(b, th, th, ""), ""), ""),
						     inner_d, "");
		d = LLVMBuildFAdd(b, LLVMBuildFMul(b, half, LLVMBuildFAdd(b, one, th, ""), ""), right_d, "");
	}
	return LLVMBuildFMul(b, dy, d, "");
}

/* v where x > 0, else negative_slope * v: leaky_relu (v = x) and leaky_relu_grad(dy, x) */
static LLVMValueRef leaky(Cg *cg, const Node *n, LLVMValueRef v, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef pos = LLVMBuildFCmp(cg->b, LLVMRealOGT, x, cg_real(cg, t, 0), "");
	LLVMValueRef scaled = LLVMBuildFMul(cg->b, v, cg_real(cg, t, ir_leaky_relu_slope(n)), "");
	return LLVMBuildSelect(cg->b, pos, v, scaled, "");
}

LLVMValueRef cg_elem_leaky_relu(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef x = operand(cg, n, 0, at);
	return leaky(cg, n, x, x);
}

LLVMValueRef cg_elem_leaky_relu_grad(Cg *cg, const Node *n, ElemIndex *at)
{
	LLVMValueRef dy = operand(cg, n, 0, at), x = operand(cg, n, 1, at);
	return leaky(cg, n, dy, x);
}

/* Ops that move elements: operand_index maps the output index to the input's. */
LLVMValueRef cg_elem_first(Cg *cg, const Node *n, ElemIndex *at) { return operand(cg, n, 0, at); }

/* assign(target, value): the value. */
LLVMValueRef cg_elem_assign(Cg *cg, const Node *n, ElemIndex *at) { return operand(cg, n, 1, at); }

LLVMValueRef cg_elem_lrn(Cg *cg, const Node *n, ElemIndex *at)
{
	return cg_emit_lrn(cg, n, index_lin(cg, at), index_axis(cg, at, ir_lrn_params(n).nhwc ? 3 : 1));
}

/* Whether every operand can be read at the output's linear index alone. */
static bool is_flat(const Cg *cg, const Node *n)
{
	if (n->op == OP_reshape || n->op == OP_assign)
		return true;
	if (n->op == OP_bias_add || n->op == OP_broadcast_to || op_is_concat(n->op) || n->op == OP_slice)
		return false;
	int nin = n->op == OP_dropout ? 1 : n->nin;
	for (int k = 0; k < nin; k++) {
		const Node *in = &cg->g->node[n->in[k]];
		if (!same_shape(in, n) && shape_numel(&in->shape) != 1)
			return false;
	}
	return true;
}

/* Whether every member of leader's group is flat: the kernel then needs no per-axis index. */
static bool group_flat(const Cg *cg, const Node *leader)
{
	const Graph *g = cg->g;
	for (int j = cg_group_first(g, leader->id); j <= leader->id; j++)
		if (g->node[j].group == leader->id && g->node[j].programs && !is_flat(cg, &g->node[j]))
			return false;
	return true;
}

/* The work-group partition of a [rows, cols] view: blocks of whole rows, or chunks of a row. */
typedef struct {
	int64_t rows, cols, rows_per_wg, chunk, nchunks;
} Partition;

static Partition partition(int64_t rows, int64_t cols)
{
	Partition p = {rows, cols, 1, cols, 1};
	if (cols > CG_WG_ELEMENTS) {
		p.chunk = CG_WG_ELEMENTS;
		p.nchunks = (cols + p.chunk - 1) / p.chunk;
	} else {
		p.rows_per_wg = CG_WG_ELEMENTS / cols;
	}
	return p;
}

/* A flat kernel whose buffers allow lanes (cg_lanes_for): a work-item computes `lanes`
 * consecutive elements and reads and writes each buffer as one aligned vector of up to 16 bytes.
 * One element per work-item wrote vgg16 bf16's 2-byte casts at 60% of an H100's bandwidth
 * (docs/performance.md, 2026-12-07). Emulated on the host where the GPU paths are (tests). */
static int64_t lower_elemwise_lanes(Cg *cg, const Node *n, int64_t numel, int lanes)
{
	GpuGroup grp;
	int64_t grid, items = numel / lanes;
	LLVMValueRef item = cg_gpu_elements_begin_at(cg, &grp, items, cg_size(cg, items), &grid);
	LLVMValueRef base = LLVMBuildNUWMul(cg->b, item, cg_i64(cg, lanes), "lanes");
	LLVMValueRef lin[CG_MAX_LANES];
	for (int e = 0; e < lanes; e++)
		lin[e] = e ? LLVMBuildNUWAdd(cg->b, base, cg_i64(cg, e), "") : base;
	cg_lanes_begin(cg, lanes, base, lin);
	for (int e = 0; e < lanes; e++) {
		ElemIndex at = {.shape = &n->shape, .lin = lin[e]};
		cg_store_outputs(cg, &at);
	}
	cg_lanes_end(cg);
	cg_gpu_elements_end(cg, &grp);
	return grid;
}

/* GPUs: one element per work-item, at the delinearized index (the linear one when flat: then the
 * element count is all that tells kernels of the same group apart, and is a size argument). */
static int64_t lower_elemwise_gpu(Cg *cg, const Node *n, int64_t numel, bool flat)
{
	cg_gpu_native(cg, CG_GPU_BLOCK);
	LLVMValueRef i = cg_global_id(cg);
	LLVMValueRef end = flat ? cg_size(cg, numel) : cg_i64(cg, numel);
	cg_gpu_if(cg, LLVMBuildICmp(cg->b, LLVMIntULT, i, end, ""));
	LLVMValueRef idx[IR_MAX_DIMS];
	if (!flat)
		cg_delinear(cg, &n->shape, i, idx);
	ElemIndex at = {.shape = &n->shape, .idx = flat ? NULL : idx, .lin = i};
	cg_store_outputs(cg, &at);
	return (numel + CG_GPU_BLOCK - 1) / CG_GPU_BLOCK;
}

/* The host, flat: work-group w takes elements [w, w + 1) * CG_WG_ELEMENTS of the numel, which is
 * a size argument (as on GPUs). */
static int64_t lower_elemwise_flat_host(Cg *cg, const Node *n, int64_t numel)
{
	LLVMBuilderRef b = cg->b;
	CgLoop wg = cg_for_begin(cg, cg->wg_begin, cg->wg_end, "wg");
	LLVMValueRef lo = LLVMBuildNSWMul(b, wg.i, cg_i64(cg, CG_WG_ELEMENTS), "");
	LLVMValueRef hi = cg_min_i64(cg, LLVMBuildNSWAdd(b, lo, cg_i64(cg, CG_WG_ELEMENTS), ""), cg_size(cg, numel));
	CgLoop i = cg_for_begin(cg, lo, hi, "i");
	ElemIndex at = {.shape = &n->shape, .lin = i.i};
	cg_store_outputs(cg, &at);
	cg_for_end(cg, &i);
	cg_for_end(cg, &wg);
	return (numel + CG_WG_ELEMENTS - 1) / CG_WG_ELEMENTS;
}

int64_t cg_lower_elemwise(Cg *cg, const Node *n)
{
	int64_t numel = shape_numel(&n->shape);
	if (numel == 0)
		return 1;
	bool flat = group_flat(cg, n) || n->shape.rank == 0;
	int lanes = flat && cg_gpu_paths(cg) ? cg_lanes_for(cg, numel) : 1;
	if (lanes > 1)
		return lower_elemwise_lanes(cg, n, numel, lanes);
	if (cg_is_gpu(cg))
		return lower_elemwise_gpu(cg, n, numel, flat);
	if (flat)
		return lower_elemwise_flat_host(cg, n, numel);
	int64_t cols = n->shape.dim[n->shape.rank - 1];
	Partition p = partition(numel / cols, cols);
	LLVMBuilderRef b = cg->b;

	CgLoop wg = cg_for_begin(cg, cg->wg_begin, cg->wg_end, "wg");
	LLVMValueRef block = LLVMBuildSDiv(b, wg.i, cg_i64(cg, p.nchunks), "");
	LLVMValueRef chunk = LLVMBuildSRem(b, wg.i, cg_i64(cg, p.nchunks), "");
	LLVMValueRef row_lo = LLVMBuildMul(b, block, cg_i64(cg, p.rows_per_wg), "");
	LLVMValueRef row_hi = cg_min_i64(cg, LLVMBuildAdd(b, row_lo, cg_i64(cg, p.rows_per_wg), ""), cg_i64(cg, p.rows));
	LLVMValueRef col_lo = LLVMBuildMul(b, chunk, cg_i64(cg, p.chunk), "");
	LLVMValueRef col_hi = cg_min_i64(cg, LLVMBuildAdd(b, col_lo, cg_i64(cg, p.chunk), ""), cg_i64(cg, p.cols));

	CgLoop row = cg_for_begin(cg, row_lo, row_hi, "row");
	LLVMValueRef idx[IR_MAX_DIMS];
	Shape outer = n->shape;
	outer.rank = n->shape.rank - 1;
	cg_delinear(cg, &outer, row.i, idx);
	LLVMValueRef base = LLVMBuildNSWMul(b, row.i, cg_i64(cg, cols), "");
	CgLoop col = cg_for_begin(cg, col_lo, col_hi, "col");
	idx[n->shape.rank - 1] = col.i;
	ElemIndex at = {.shape = &n->shape, .idx = idx, .lin = LLVMBuildNSWAdd(b, base, col.i, "")};
	cg_store_outputs(cg, &at);
	cg_for_end(cg, &col);
	cg_for_end(cg, &row);
	cg_for_end(cg, &wg);
	int64_t blocks = (p.rows + p.rows_per_wg - 1) / p.rows_per_wg;
	return blocks * p.nchunks;
}
