/* winograd.h: the transforms of Winograd's minimal filtering F(m x m, r x r) (Lavin & Gray 2015,
 * "Fast Algorithms for Convolutional Neural Networks"), shared by the float64 references
 * (ir/ops_winograd.c) and the kernels (codegen/lower_winograd.c), so both compute one algorithm.
 *
 * A tile of m x m outputs reads an alpha x alpha input tile d (alpha = m + r - 1) and is
 *     Y = A^T [ (G g G^T) . (B^T d B) ] A
 * with g the r x r filter and . the elementwise product over the alpha^2 transform points; summed
 * over input channels, the elementwise products are alpha^2 independent matrix products.
 *
 * The tiles are F(2x2, 3x3), F(4x4, 3x3), F(2x2, 5x5) and F(3x3, 5x5). F(4x4, 3x3) and
 * F(2x2, 5x5) interpolate at the same points (0, 1, -1, 2, -2 and infinity), so they share B^T;
 * F(3x3, 5x5) adds 1/2. A^T holds the powers 0 .. m-1 of the points and G the powers 0 .. r-1,
 * scaled by 1 / prod (p_j - p_k) over the other finite points; B^T is then the inverse of the
 * matrix whose row s holds each point's p^s / prod (p_j - p_k) (infinity: 1 in the last row), as
 * the product A^T [(G g) . (B^T d)] must give each output sum_k d[i + k] g[k]. A row of B^T may
 * be scaled when the same row of G is divided by as much: F(3x3, 5x5)'s rows are, so B^T holds
 * integers. */
#ifndef NETC_IR_WINOGRAD_H
#define NETC_IR_WINOGRAD_H

#define WINO_MAX_R 5     /* the largest filter */
#define WINO_MAX_ALPHA 7 /* m + r - 1 for the largest tile */

typedef struct WinogradTile {
	const char *algo; /* as netc info names the algorithm */
	int m, r, alpha;
	/* the error a float32 convolution by this tile may have against the float64 direct one, as
	 * max |got - want| / max |want|, 5 to 10 times the worst measured (docs/codegen.md, "Winograd
	 * numerics"): F(2x2,3x3) below the direct GEMM's own error, F(4x4,3x3) up to 1.6e-5,
	 * F(2x2,5x5) 1e-5 (forward) and 3.5e-5 (the weight gradient, a sum over every tile),
	 * F(3x3,5x5) 8.5e-6 (forward) and 2.7e-5 (the weight gradient) */
	double tol;
	double bt[WINO_MAX_ALPHA][WINO_MAX_ALPHA]; /* B^T: alpha x alpha */
	double g[WINO_MAX_ALPHA][WINO_MAX_R];      /* G: alpha x r */
	double at[WINO_MAX_ALPHA][WINO_MAX_ALPHA]; /* A^T: m x alpha */
} WinogradTile;

/* F(2x2, 3x3), the points 0, 1, -1 with infinity; F(4x4, 3x3) and F(2x2, 5x5), the points 0, 1,
 * -1, 2, -2 with infinity, whose B^T is */
#define WINO_BT6                                                                                             \
	{                                                                                                    \
		{4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0}, {0, -2, -1, 2, 1, 0},       \
			{0, 2, -1, -2, 1, 0}, { 0, 4, 0, -5, 0, 1 }                                          \
	}
static const WinogradTile wino_f2 = {
	.algo = "winograd F(2x2,3x3)", .m = 2, .r = 3, .alpha = 4, .tol = 1e-5,
	.bt = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
	.g = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
	.at = {{1, 1, 1, 0}, {0, 1, -1, -1}},
};
static const WinogradTile wino_f4 = {
	.algo = "winograd F(4x4,3x3)", .m = 4, .r = 3, .alpha = 6, .tol = 1e-4,
	.bt = WINO_BT6,
	.g = {{1.0 / 4, 0, 0}, {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
	      {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}},
	.at = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}},
};
static const WinogradTile wino_f2r5 = {
	.algo = "winograd F(2x2,5x5)", .m = 2, .r = 5, .alpha = 6, .tol = 2e-4,
	.bt = WINO_BT6,
	.g = {{1.0 / 4, 0, 0, 0, 0},
	      {-1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6},
	      {-1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6},
	      {1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 3, 2.0 / 3},
	      {1.0 / 24, -1.0 / 12, 1.0 / 6, -1.0 / 3, 2.0 / 3},
	      {0, 0, 0, 0, 1}},
	.at = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 1}},
};
/* the points 0, 1, -1, 2, -2, 1/2 with infinity; B^T's rows but the sixth doubled, G's halved */
static const WinogradTile wino_f3r5 = {
	.algo = "winograd F(3x3,5x5)", .m = 3, .r = 5, .alpha = 7, .tol = 2e-4,
	.bt = {{-4, 8, 5, -10, -1, 2, 0},
	       {0, 4, -4, -9, 1, 2, 0},
	       {0, -4, 12, -7, -3, 2, 0},
	       {0, 2, -3, -4, 3, 2, 0},
	       {0, -2, 5, 0, -5, 2, 0},
	       {0, 4, 0, -5, 0, 1, 0},
	       {0, -4, 8, 5, -10, -1, 2}},
	.g = {{-1.0 / 4, 0, 0, 0, 0},
	      {-1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6},
	      {1.0 / 18, -1.0 / 18, 1.0 / 18, -1.0 / 18, 1.0 / 18},
	      {1.0 / 72, 1.0 / 36, 1.0 / 18, 1.0 / 9, 2.0 / 9},
	      {-1.0 / 120, 1.0 / 60, -1.0 / 30, 1.0 / 15, -2.0 / 15},
	      {32.0 / 45, 16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45},
	      {0, 0, 0, 0, 1.0 / 2}},
	.at = {{1, 1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 1.0 / 2, 0}, {0, 1, 1, 4, 4, 1.0 / 4, 1}},
};


/* Half precision (f16, bf16 operands) takes F(2x2) only: with its transformed operands stored in
 * the half type and f32 products, the error against the float64 direct convolution of the same
 * operands (max |got - want| / max |want|, the result's own rounding included) measured 0.45 to
 * 0.75 units of the half type's last place at 1 (N(0,1) operands, 256 channels, five seeds); F(4x4)
 * 5.5 to 8.5 (tests/unit/test_cg_winograd.c prints both). */
#define WINO_TOL_HALF_ULPS 2.0

/* The spacing of the half type's values just above 1: 2^-10 (f16), 2^-7 (bf16). */
static inline double wino_half_ulp(int bf16) { return bf16 ? 1.0 / 128 : 1.0 / 1024; }

/* The tile of output size m for filters of size r: F(2x2,3x3), F(4x4,3x3), F(2x2,5x5),
 * F(3x3,5x5); NULL for another. */
static inline const WinogradTile *wino_tile(int m, int r)
{
	if (r == 3)
		return m == 2 ? &wino_f2 : m == 4 ? &wino_f4 : (const WinogradTile *)0;
	if (r == 5)
		return m == 2 ? &wino_f2r5 : m == 3 ? &wino_f3r5 : (const WinogradTile *)0;
	return (const WinogradTile *)0;
}

/* Tiles along an axis of `out` outputs. */
static inline long long wino_tiles(long long out, int m) { return (out + m - 1) / m; }

#endif
