/* winograd.h: the transforms of Winograd's minimal filtering F(m x m, 3 x 3) (Lavin & Gray 2015,
 * "Fast Algorithms for Convolutional Neural Networks"), shared by the float64 references
 * (ir/ops_winograd.c) and the kernels (codegen/lower_winograd.c), so both compute one algorithm.
 *
 * A tile of m x m outputs reads an alpha x alpha input tile d (alpha = m + 2) and is
 *     Y = A^T [ (G g G^T) . (B^T d B) ] A
 * with g the 3x3 filter and . the elementwise product over the alpha^2 transform points; summed
 * over input channels, the elementwise products are alpha^2 independent matrix products. */
#ifndef NETC_IR_WINOGRAD_H
#define NETC_IR_WINOGRAD_H

#define WINO_R 3         /* filter size */
#define WINO_MAX_ALPHA 6 /* m + 2 for the largest tile */

typedef struct {
	int m, alpha;
	double bt[WINO_MAX_ALPHA][WINO_MAX_ALPHA]; /* B^T: alpha x alpha */
	double g[WINO_MAX_ALPHA][WINO_R];          /* G: alpha x 3 */
	double at[WINO_MAX_ALPHA][WINO_MAX_ALPHA]; /* A^T: m x alpha */
} WinogradTile;

/* F(2x2, 3x3) and F(4x4, 3x3), the points 0, 1, -1 (and 2, -2 for m = 4) with infinity. */
static const WinogradTile wino_f2 = {
	.m = 2, .alpha = 4,
	.bt = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
	.g = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
	.at = {{1, 1, 1, 0}, {0, 1, -1, -1}},
};
static const WinogradTile wino_f4 = {
	.m = 4, .alpha = 6,
	.bt = {{4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0}, {0, -2, -1, 2, 1, 0},
	       {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}},
	.g = {{1.0 / 4, 0, 0}, {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
	      {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}},
	.at = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}},
};

/* The error a float32 Winograd convolution may have against the float64 direct one, as max |got -
 * want| / max |want| (docs/codegen.md, "Winograd numerics", has the measurements behind them):
 * F(2x2) measured below direct's own error, F(4x4) up to 1.6e-5 (about 4 bits more lost). */
#define WINO_TOL_F2 1e-5
#define WINO_TOL_F4 1e-4

/* Half precision (f16, bf16 operands) takes F(2x2) only: with its transformed operands stored in
 * the half type and f32 products, the error against the float64 direct convolution of the same
 * operands (max |got - want| / max |want|, the result's own rounding included) measured 0.45 to
 * 0.75 units of the half type's last place at 1 (N(0,1) operands, 256 channels, five seeds); F(4x4)
 * 5.5 to 8.5 (tests/unit/test_cg_winograd.c prints both). */
#define WINO_TOL_HALF_ULPS 2.0

/* The spacing of the half type's values just above 1: 2^-10 (f16), 2^-7 (bf16). */
static inline double wino_half_ulp(int bf16) { return bf16 ? 1.0 / 128 : 1.0 / 1024; }

/* The tile of output size m (2 or 4), NULL for another. */
static inline const WinogradTile *wino_tile(int m)
{
	return m == 2 ? &wino_f2 : m == 4 ? &wino_f4 : (const WinogradTile *)0;
}

/* Tiles along an axis of `out` outputs. */
static inline long long wino_tiles(long long out, int m) { return (out + m - 1) / m; }

#endif
