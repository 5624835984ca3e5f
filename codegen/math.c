/* math.c: exp and log for f32 in LLVM IR, branch-free (selects) so they vectorize.
 *
 * exp: x = n ln2 + r with n = rint(x / ln2) and |r| <= ln2/2 (ln2 split in two parts so r is
 * exact), e^r by a degree-7 polynomial, then scaled by 2^n in two halves so that results near
 * overflow and in the denormal range come out right.
 * log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), ln(m) = f - f^2/2 + f^3 P(f) with f = m - 1,
 * plus e ln2 (again ln2 in two parts). Denormal inputs are scaled by 2^23 first.
 * f64 on GPUs (no libm there) the same way, with longer series. */
#include "codegen/math.h"

#include <math.h>

static LLVMValueRef fconst(Cg *cg, double v) { return cg_real(cg, cg->t_f32, v); }

static LLVMValueRef fma3(Cg *cg, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	LLVMValueRef args[3] = {a, b, c};
	return cg_intrinsic(cg, "fma", LLVMTypeOf(a), args, 3);
}

/* Horner evaluation of c[0] x^(n-1) + ... + c[n-1], in x's type */
static LLVMValueRef horner(Cg *cg, LLVMValueRef x, const double *c, int n)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef p = cg_real(cg, t, c[0]);
	for (int i = 1; i < n; i++)
		p = fma3(cg, p, x, cg_real(cg, t, c[i]));
	return p;
}

static LLVMValueRef unary(Cg *cg, const char *name, LLVMValueRef x)
{
	return cg_intrinsic(cg, name, LLVMTypeOf(x), &x, 1);
}

static LLVMValueRef binary(Cg *cg, const char *name, LLVMValueRef a, LLVMValueRef b)
{
	LLVMValueRef args[2] = {a, b};
	return cg_intrinsic(cg, name, LLVMTypeOf(a), args, 2);
}

/* 2^k for integer k in [-126, 127] (i32), as a float built from its exponent bits */
static LLVMValueRef pow2i(Cg *cg, LLVMValueRef k)
{
	LLVMValueRef bits = LLVMBuildShl(cg->b, LLVMBuildAdd(cg->b, k, cg_i32(cg, 127), ""), cg_i32(cg, 23), "");
	return LLVMBuildBitCast(cg->b, bits, cg->t_f32, "");
}

static LLVMValueRef exp_f32(Cg *cg, LLVMValueRef x)
{
	/* e^x for x outside [-104, 89] is 0 or inf either way; clamping keeps n in range (and
	 * maxnum/minnum drop a NaN, restored at the end) */
	LLVMValueRef xc = binary(cg, "minnum", binary(cg, "maxnum", x, fconst(cg, -104.0)), fconst(cg, 89.0));
	LLVMValueRef nf = unary(cg, "rint", LLVMBuildFMul(cg->b, xc, fconst(cg, M_LOG2E), ""));
	LLVMValueRef r = fma3(cg, LLVMBuildFNeg(cg->b, nf, ""), fconst(cg, 0.693359375), xc);
	r = fma3(cg, LLVMBuildFNeg(cg->b, nf, ""), fconst(cg, -2.12194440e-4), r);
	/* e^r = 1 + r + r^2 P(r) on |r| <= ln2/2 */
	static const double c[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
				   4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
	LLVMValueRef p = horner(cg, r, c, 6);
	LLVMValueRef r2 = LLVMBuildFMul(cg->b, r, r, "");
	LLVMValueRef e = LLVMBuildFAdd(cg->b, fma3(cg, p, r2, r), fconst(cg, 1.0), "");
	LLVMValueRef n = LLVMBuildFPToSI(cg->b, nf, cg->t_i32, "");
	LLVMValueRef n1 = LLVMBuildAShr(cg->b, n, cg_i32(cg, 1), "");
	LLVMValueRef n2 = LLVMBuildSub(cg->b, n, n1, "");
	e = LLVMBuildFMul(cg->b, LLVMBuildFMul(cg->b, e, pow2i(cg, n1), ""), pow2i(cg, n2), "");
	LLVMValueRef nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, x, x, "");
	return LLVMBuildSelect(cg->b, nan, x, e, "");
}

static LLVMValueRef log_f32(Cg *cg, LLVMValueRef x)
{
	LLVMBuilderRef b = cg->b;
	/* denormals: scale into the normal range and remember the 23 */
	LLVMValueRef tiny = LLVMBuildFCmp(b, LLVMRealOLT, x, fconst(cg, 0x1p-126), "");
	LLVMValueRef xs = LLVMBuildSelect(b, tiny, LLVMBuildFMul(b, x, fconst(cg, 0x1p23), ""), x, "");
	LLVMValueRef bias = LLVMBuildSelect(b, tiny, cg_i32(cg, 126 + 23), cg_i32(cg, 126), "");
	LLVMValueRef bits = LLVMBuildBitCast(b, xs, cg->t_i32, "");
	LLVMValueRef e = LLVMBuildSub(b, LLVMBuildLShr(b, bits, cg_i32(cg, 23), ""), bias, "");
	/* m in [0.5, 1) */
	LLVMValueRef mbits = LLVMBuildOr(b, LLVMBuildAnd(b, bits, cg_i32(cg, 0x007fffff), ""), cg_i32(cg, 0x3f000000), "");
	LLVMValueRef m = LLVMBuildBitCast(b, mbits, cg->t_f32, "");
	LLVMValueRef small = LLVMBuildFCmp(b, LLVMRealOLT, m, fconst(cg, M_SQRT1_2), "");
	e = LLVMBuildSub(b, e, LLVMBuildZExt(b, small, cg->t_i32, ""), "");
	m = LLVMBuildSelect(b, small, LLVMBuildFAdd(b, m, m, ""), m, "");
	LLVMValueRef f = LLVMBuildFSub(b, m, fconst(cg, 1.0), "");
	static const double c[] = {7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
				   1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
				   3.3333331174e-1};
	LLVMValueRef f2 = LLVMBuildFMul(b, f, f, "");
	LLVMValueRef y = LLVMBuildFMul(b, LLVMBuildFMul(b, horner(cg, f, c, 9), f, ""), f2, "");
	LLVMValueRef ef = LLVMBuildSIToFP(b, e, cg->t_f32, "");
	y = fma3(cg, ef, fconst(cg, -2.12194440e-4), y);
	y = fma3(cg, f2, fconst(cg, -0.5), y);
	LLVMValueRef r = fma3(cg, ef, fconst(cg, 0.693359375), LLVMBuildFAdd(b, f, y, ""));
	/* x < 0 or NaN: NaN; 0: -inf; +inf: +inf */
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fconst(cg, INFINITY), ""), x, r, "");
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fconst(cg, 0.0), ""), fconst(cg, -INFINITY), r, "");
	return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, x, fconst(cg, 0.0), ""), r, fconst(cg, NAN), "");
}

/* ---- f64, for GPUs (the host calls libm) ---- */

static LLVMValueRef dconst(Cg *cg, double v) { return cg_real(cg, cg->t_f64, v); }

/* 2^k for integer k in [-1022, 1023] (i64) */
static LLVMValueRef pow2i_f64(Cg *cg, LLVMValueRef k)
{
	LLVMValueRef bits = LLVMBuildShl(cg->b, LLVMBuildAdd(cg->b, k, cg_i64(cg, 1023), ""), cg_i64(cg, 52), "");
	return LLVMBuildBitCast(cg->b, bits, cg->t_f64, "");
}

#define LN2_HI 6.93147180369123816490e-01 /* ln 2 in two parts: n * LN2_HI is exact */
#define LN2_LO 1.90821492927058770002e-10

/* e^x = 2^n e^r, |r| <= ln2/2, e^r by its Taylor series to r^13 (the rest < 1e-17) */
static LLVMValueRef exp_f64(Cg *cg, LLVMValueRef x)
{
	LLVMValueRef xc = binary(cg, "minnum", binary(cg, "maxnum", x, dconst(cg, -746.0)), dconst(cg, 710.0));
	LLVMValueRef nf = unary(cg, "rint", LLVMBuildFMul(cg->b, xc, dconst(cg, M_LOG2E), ""));
	LLVMValueRef r = fma3(cg, LLVMBuildFNeg(cg->b, nf, ""), dconst(cg, LN2_HI), xc);
	r = fma3(cg, LLVMBuildFNeg(cg->b, nf, ""), dconst(cg, LN2_LO), r);
	double c[14];
	double f = 1;
	for (int k = 0; k < 14; k++) {
		c[13 - k] = 1 / f;
		f *= k + 1;
	}
	LLVMValueRef e = horner(cg, r, c, 14);
	LLVMValueRef n = LLVMBuildFPToSI(cg->b, nf, cg->t_i64, "");
	LLVMValueRef n1 = LLVMBuildAShr(cg->b, n, cg_i64(cg, 1), "");
	LLVMValueRef n2 = LLVMBuildSub(cg->b, n, n1, "");
	e = LLVMBuildFMul(cg->b, LLVMBuildFMul(cg->b, e, pow2i_f64(cg, n1), ""), pow2i_f64(cg, n2), "");
	return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealUNO, x, x, ""), x, e, "");
}

/* x = 2^e m, m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| < 0.172,
 * by its series to s^23 */
static LLVMValueRef log_f64(Cg *cg, LLVMValueRef x)
{
	LLVMBuilderRef b = cg->b;
	LLVMValueRef tiny = LLVMBuildFCmp(b, LLVMRealOLT, x, dconst(cg, 0x1p-1022), "");
	LLVMValueRef xs = LLVMBuildSelect(b, tiny, LLVMBuildFMul(b, x, dconst(cg, 0x1p52), ""), x, "");
	LLVMValueRef bias = LLVMBuildSelect(b, tiny, cg_i64(cg, 1022 + 52), cg_i64(cg, 1022), "");
	LLVMValueRef bits = LLVMBuildBitCast(b, xs, cg->t_i64, "");
	LLVMValueRef e = LLVMBuildSub(b, LLVMBuildLShr(b, bits, cg_i64(cg, 52), ""), bias, "");
	LLVMValueRef mbits = LLVMBuildOr(b, LLVMBuildAnd(b, bits, cg_i64(cg, 0x000fffffffffffffll), ""),
					 cg_i64(cg, 0x3fe0000000000000ll), "");
	LLVMValueRef m = LLVMBuildBitCast(b, mbits, cg->t_f64, "");
	LLVMValueRef small = LLVMBuildFCmp(b, LLVMRealOLT, m, dconst(cg, M_SQRT1_2), "");
	e = LLVMBuildSub(b, e, LLVMBuildZExt(b, small, cg->t_i64, ""), "");
	m = LLVMBuildSelect(b, small, LLVMBuildFAdd(b, m, m, ""), m, "");
	LLVMValueRef f = LLVMBuildFSub(b, m, dconst(cg, 1.0), "");
	LLVMValueRef s = LLVMBuildFDiv(b, f, LLVMBuildFAdd(b, m, dconst(cg, 1.0), ""), "");
	double c[12];
	for (int k = 0; k < 12; k++)
		c[11 - k] = 2.0 / (2 * k + 1);
	LLVMValueRef p = LLVMBuildFMul(b, horner(cg, LLVMBuildFMul(b, s, s, ""), c, 12), s, "");
	LLVMValueRef ef = LLVMBuildSIToFP(b, e, cg->t_f64, "");
	LLVMValueRef r = fma3(cg, ef, dconst(cg, LN2_HI), fma3(cg, ef, dconst(cg, LN2_LO), p));
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, dconst(cg, INFINITY), ""), x, r, "");
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, dconst(cg, 0.0), ""), dconst(cg, -INFINITY), r, "");
	return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, x, dconst(cg, 0.0), ""), r, dconst(cg, NAN), "");
}

LLVMValueRef cg_exp(Cg *cg, LLVMValueRef x)
{
	if (LLVMTypeOf(x) == cg->t_f32)
		return exp_f32(cg, x);
	return LLVMTypeOf(x) == cg->t_f64 && cg_is_gpu(cg) ? exp_f64(cg, x) : unary(cg, "exp", x);
}

LLVMValueRef cg_log(Cg *cg, LLVMValueRef x)
{
	if (LLVMTypeOf(x) == cg->t_f32)
		return log_f32(cg, x);
	return LLVMTypeOf(x) == cg->t_f64 && cg_is_gpu(cg) ? log_f64(cg, x) : unary(cg, "log", x);
}

/* ---- erf ---- */

/* x P(x^2) / Q(x^2) on x clamped to [-4, 4] (Eigen's generic_fast_erf_float) */
static LLVMValueRef erf_f32(Cg *cg, LLVMValueRef x)
{
	static const double p[] = {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
				   -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
				   -1.60960333262415e-02};
	static const double q[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
				   -7.37332916720468e-03, -1.42647390514189e-02};
	LLVMValueRef xc = binary(cg, "minnum", binary(cg, "maxnum", x, fconst(cg, -4.0)), fconst(cg, 4.0));
	LLVMValueRef x2 = LLVMBuildFMul(cg->b, xc, xc, "");
	LLVMValueRef r = LLVMBuildFDiv(cg->b, LLVMBuildFMul(cg->b, xc, horner(cg, x2, p, 7), ""), horner(cg, x2, q, 5), "");
	/* the rounding of P/Q near |x| = 4 must not step past +-1, where 1 + erf x would change sign */
	r = binary(cg, "minnum", binary(cg, "maxnum", r, fconst(cg, -1.0)), fconst(cg, 1.0));
	return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealUNO, x, x, ""), x, r, "");
}

#define ERF_SERIES_MAX 2.0 /* the series below this |x|, the continued fraction above */

/* |x| <= 2: erf x = 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)), 38 terms (the rest < 1e-19).
 * |x| > 2: erfc x = e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), 50 levels. */
static LLVMValueRef erf_f64(Cg *cg, LLVMValueRef x)
{
	enum { TERMS = 38, LEVELS = 50 };
	LLVMBuilderRef b = cg->b;
	LLVMValueRef a = unary(cg, "fabs", x);
	double c[TERMS], f = 1;
	for (int n = 0; n < TERMS; n++) {
		c[TERMS - 1 - n] = (n % 2 ? -2 : 2) / (sqrt(M_PI) * f * (2 * n + 1));
		f *= n + 1;
	}
	LLVMValueRef s = binary(cg, "minnum", a, dconst(cg, ERF_SERIES_MAX));
	LLVMValueRef series = LLVMBuildFMul(b, s, horner(cg, LLVMBuildFMul(b, s, s, ""), c, TERMS), "");
	LLVMValueRef t = binary(cg, "maxnum", a, dconst(cg, ERF_SERIES_MAX));
	LLVMValueRef frac = t;
	for (int k = LEVELS; k >= 1; k--)
		frac = LLVMBuildFAdd(b, t, LLVMBuildFDiv(b, dconst(cg, k / 2.0), frac, ""), "");
	LLVMValueRef e = cg_exp(cg, LLVMBuildFNeg(b, LLVMBuildFMul(b, t, t, ""), ""));
	LLVMValueRef erfc = LLVMBuildFDiv(b, e, LLVMBuildFMul(b, frac, dconst(cg, sqrt(M_PI)), ""), "");
	LLVMValueRef tail = LLVMBuildFSub(b, dconst(cg, 1.0), erfc, "");
	LLVMValueRef near = LLVMBuildFCmp(b, LLVMRealOLE, a, dconst(cg, ERF_SERIES_MAX), "");
	LLVMValueRef args[2] = {LLVMBuildSelect(b, near, series, tail, ""), x};
	LLVMValueRef r = cg_intrinsic(cg, "copysign", cg->t_f64, args, 2);
	return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r, "");
}

LLVMValueRef cg_erf(Cg *cg, LLVMValueRef x)
{
	return LLVMTypeOf(x) == cg->t_f64 ? erf_f64(cg, x) : erf_f32(cg, x);
}
