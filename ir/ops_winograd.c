/* ops_winograd.c: the pieces of a Winograd convolution F(m x m, r x r) (ir/winograd.h), which
 * the conv-algo pass puts in place of a 3x3 or 5x5 stride-1 conv2d or conv2d_grad_input:
 *
 *   winograd_weight(w [K, C, r, r])  -> U [alpha^2, K, C]   U[t] = G g G^T at point t
 *       flip: of the filter rotated by 180 degrees; read transposed (C x K per point), the
 *       weights that make the input gradient a convolution of dy
 *   winograd_input(x [N, C, H, W])   -> V [alpha^2, C, P]   V[t] = B^T d B, d the alpha x alpha
 *       window at tile p = (n, th, tw) (rows m*th - pad_h ..., zero outside the plane); the
 *       tiles cover out_h x out_w outputs, P = N * ceil(out_h/m) * ceil(out_w/m)
 *   winograd_gemm(U, V)              -> M [alpha^2, K, P]   M[t] = U[t] V[t]
 *       transpose_u: M [alpha^2, C, P] = U[t]^T V[t] (U of a flipped filter: the input gradient)
 *   winograd_output(M)               -> y [N, K, out_h, out_w]   y tile = A^T m A
 *
 * and in place of such a conv2d_grad_weight(dy, x), with V = winograd_input(x) of the
 * forward's padding over dy's plane (the forward is Y = A^T [U . V] A per tile, so the gradient
 * of U at point t is the sum over tiles of (A dY A^T)[t] times V[t], and dw = G^T dU G):
 *
 *   winograd_output_grad(dy [N, K, oh, ow]) -> dM [alpha^2, K, P]   dM[t] = A dY A^T, dY the m x m
 *       tile p of dy (zero past the plane's edge)
 *   winograd_weight_gemm(dM, V)      -> dU [alpha^2, K, C]   dU[t] = dM[t] V[t]^T
 *   winograd_weight_grad(dU)         -> dw [K, C, r, r]      dw = G^T dU G
 *
 * Types: the transforms of the operands (U, V, dM) keep their input's type, f32 or, under
 * --precision fp16|bf16, half; the products (M, dU) are f32; the inverse transforms read them in
 * f32 and store the convolution's type (their dtype attribute).
 *
 * The references compute exactly these steps in float64, so each kernel is checked against its
 * own step and the chain against the direct convolution (tests/unit/test_cg_winograd.c). */
#include "ir/checked.h"
#include "ir/ops.h"
#include "ir/winograd.h"

static int64_t attr_of(const Node *n, const char *name)
{
	int i = ir_attr_index(n->op, name);
	return i < 0 ? 0 : (int64_t)n->attr[i];
}

WinogradAttrs ir_winograd_attrs(const Node *n)
{
	return (WinogradAttrs){.m = (int)attr_of(n, "tile"), .r = (int)attr_of(n, "kernel"), .flip = attr_of(n, "flip") != 0,
			       .ph = attr_of(n, "pad_h"), .pw = attr_of(n, "pad_w"), .n = attr_of(n, "batch"),
			       .oh = attr_of(n, "out_h"), .ow = attr_of(n, "out_w")};
}

const WinogradTile *ir_winograd_tile(const Node *n)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	return wino_tile(a.m, a.r);
}

/* The tile and filter size attributes name one of ir/winograd.h's tiles; sets *t to it. */
static bool need_tile(const Node *n, const WinogradTile **t, char *err, size_t errlen)
{
	int64_t m, r;
	if (!op_attr_int(n, ir_attr_index(n->op, "tile"), 2, 4, &m, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "kernel"), 3, WINO_MAX_R, &r, err, errlen))
		return false;
	*t = wino_tile((int)m, (int)r);
	if (!*t)
		return op_fail(n, err, errlen, "tile %lld with kernel %lld is not F(2x2,3x3), F(4x4,3x3), F(2x2,5x5) or F(3x3,5x5)",
			       (long long)m, (long long)r);
	return true;
}

/* Input i of rank `rank` and of the type `want` (DT_COUNT: f32, f16 or bf16); sets *got to it. */
static bool need_rank(const Node *n, const Graph *g, int i, int rank, DType want, DType *got, char *err, size_t errlen)
{
	char t[128];
	const Node *x = op_in(g, n, i);
	bool typed = want == DT_COUNT ? x->dtype == DT_F32 || x->dtype == DT_F16 || x->dtype == DT_BF16 : x->dtype == want;
	if (x->shape.rank != rank || !typed)
		return op_fail(n, err, errlen, "input %d must be %s of rank %d, got %s", i,
			       want == DT_COUNT ? "f32, f16 or bf16" : dtype_name(want), rank, op_type_str(x, t, sizeof t));
	*got = x->dtype;
	return true;
}

/* A transform of a convolution's operand (weights, input, output gradient): f32 or half in, the
 * same type out. Half precision stores the transformed operands in half as the direct convolution
 * stores its operands, and multiplies them on the half matrix units. */
static bool need_operand(Node *n, const Graph *g, int rank, char *err, size_t errlen)
{
	return need_rank(n, g, 0, rank, DT_COUNT, &n->dtype, err, errlen);
}

/* A product per transform point: two operands of one type, f32 or half, and f32 out (the GEMM's
 * f32 accumulators: the output transform's sums cancel, so its input keeps f32's bits). */
static bool need_gemm_operands(Node *n, const Graph *g, char *err, size_t errlen)
{
	DType a = DT_F32, b;
	if (!need_rank(n, g, 0, 3, DT_COUNT, &a, err, errlen) || !need_rank(n, g, 1, 3, a, &b, err, errlen))
		return false;
	n->dtype = DT_F32;
	return true;
}

/* The inverse transforms read the products (f32), compute in f32 and store the convolution's
 * type: attribute dtype, f32 (0, the default), f16 or bf16. */
static bool need_product(Node *n, const Graph *g, char *err, size_t errlen)
{
	DType in;
	int64_t t;
	if (!need_rank(n, g, 0, 3, DT_F32, &in, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "dtype"), 0, DT_COUNT - 1, &t, err, errlen))
		return false;
	if (t != DT_F32 && t != DT_F16 && t != DT_BF16)
		return op_fail(n, err, errlen, "dtype must be f32, f16 or bf16, got %s", dtype_name((DType)t));
	n->dtype = (DType)t;
	return true;
}

bool shape_winograd_weight(Node *n, const Graph *g, char *err, size_t errlen)
{
	const WinogradTile *wt;
	int64_t flip;
	char t[128];
	if (!need_tile(n, &wt, err, errlen) || !need_operand(n, g, 4, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "flip"), 0, 1, &flip, err, errlen))
		return false;
	const Shape *w = &op_in(g, n, 0)->shape;
	if (w->dim[2] != wt->r || w->dim[3] != wt->r)
		return op_fail(n, err, errlen, "weight must be %dx%d, got %s", wt->r, wt->r, op_type_str(op_in(g, n, 0), t, sizeof t));
	int64_t pts = (int64_t)wt->alpha * wt->alpha;
	n->shape = (Shape){3, {pts, w->dim[0], w->dim[1]}};
	return true;
}

bool shape_winograd_input(Node *n, const Graph *g, char *err, size_t errlen)
{
	const WinogradTile *wt;
	int64_t ph, pw, oh, ow;
	if (!need_tile(n, &wt, err, errlen) || !need_operand(n, g, 4, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "pad_h"), 0, wt->r - 1, &ph, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "pad_w"), 0, wt->r - 1, &pw, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "out_h"), 1, OP_ATTR_MAX, &oh, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "out_w"), 1, OP_ATTR_MAX, &ow, err, errlen))
		return false;
	const Shape *x = &op_in(g, n, 0)->shape;
	if (oh != x->dim[2] + 2 * ph - (wt->r - 1) || ow != x->dim[3] + 2 * pw - (wt->r - 1))
		return op_fail(n, err, errlen, "out_h x out_w %lldx%lld is not what a %dx%d window makes of %lldx%lld padded by %lldx%lld",
			       (long long)oh, (long long)ow, wt->r, wt->r, (long long)x->dim[2], (long long)x->dim[3],
			       (long long)ph, (long long)pw);
	int64_t pts = (int64_t)wt->alpha * wt->alpha;
	n->shape = (Shape){3, {pts, x->dim[1], x->dim[0] * wino_tiles(oh, wt->m) * wino_tiles(ow, wt->m)}};
	return true;
}

bool ir_winograd_transpose_u(const Node *n) { return attr_of(n, "transpose_u") != 0; }

bool shape_winograd_gemm(Node *n, const Graph *g, char *err, size_t errlen)
{
	char su[128], sv[128];
	int64_t ta;
	if (!need_gemm_operands(n, g, err, errlen) || !op_attr_int(n, ir_attr_index(n->op, "transpose_u"), 0, 1, &ta, err, errlen))
		return false;
	const Shape *u = &op_in(g, n, 0)->shape, *v = &op_in(g, n, 1)->shape;
	if (u->dim[0] != v->dim[0] || u->dim[ta ? 1 : 2] != v->dim[1])
		return op_fail(n, err, errlen, "U %s%s and V %s do not multiply point by point",
			       op_type_str(op_in(g, n, 0), su, sizeof su), ta ? " transposed" : "",
			       op_type_str(op_in(g, n, 1), sv, sizeof sv));
	n->shape = (Shape){3, {u->dim[0], u->dim[ta ? 2 : 1], v->dim[2]}};
	return true;
}

bool shape_winograd_output(Node *n, const Graph *g, char *err, size_t errlen)
{
	const WinogradTile *wt;
	int64_t batch, oh, ow;
	char t[128];
	if (!need_tile(n, &wt, err, errlen) || !need_product(n, g, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "batch"), 1, IR_MAX_NUMEL, &batch, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "out_h"), 1, OP_ATTR_MAX, &oh, err, errlen) ||
	    !op_attr_int(n, ir_attr_index(n->op, "out_w"), 1, OP_ATTR_MAX, &ow, err, errlen))
		return false;
	const Shape *mm = &op_in(g, n, 0)->shape;
	int m = wt->m;
	if (mm->dim[0] != (int64_t)wt->alpha * wt->alpha || mm->dim[2] != batch * wino_tiles(oh, m) * wino_tiles(ow, m))
		return op_fail(n, err, errlen, "M %s does not hold %lld images of %lldx%lld in %dx%d tiles",
			       op_type_str(op_in(g, n, 0), t, sizeof t), (long long)batch, (long long)oh, (long long)ow, m, m);
	n->shape = (Shape){4, {batch, mm->dim[1], oh, ow}};
	return true;
}

bool shape_winograd_output_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	const WinogradTile *wt;
	if (!need_tile(n, &wt, err, errlen) || !need_operand(n, g, 4, err, errlen))
		return false;
	const Shape *dy = &op_in(g, n, 0)->shape;
	int m = wt->m;
	n->shape = (Shape){3, {(int64_t)wt->alpha * wt->alpha, dy->dim[1], dy->dim[0] * wino_tiles(dy->dim[2], m) * wino_tiles(dy->dim[3], m)}};
	return true;
}

bool shape_winograd_weight_gemm(Node *n, const Graph *g, char *err, size_t errlen)
{
	char sm[128], sv[128];
	if (!need_gemm_operands(n, g, err, errlen))
		return false;
	const Shape *dm = &op_in(g, n, 0)->shape, *v = &op_in(g, n, 1)->shape;
	if (dm->dim[0] != v->dim[0] || dm->dim[2] != v->dim[2])
		return op_fail(n, err, errlen, "dM %s and V %s do not share transform points and tiles",
			       op_type_str(op_in(g, n, 0), sm, sizeof sm), op_type_str(op_in(g, n, 1), sv, sizeof sv));
	n->shape = (Shape){3, {dm->dim[0], dm->dim[1], v->dim[1]}};
	return true;
}

bool shape_winograd_weight_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	const WinogradTile *wt;
	char t[128];
	if (!need_tile(n, &wt, err, errlen) || !need_product(n, g, err, errlen))
		return false;
	const Shape *du = &op_in(g, n, 0)->shape;
	if (du->dim[0] != (int64_t)wt->alpha * wt->alpha)
		return op_fail(n, err, errlen, "dU %s does not have the tile's %d transform points",
			       op_type_str(op_in(g, n, 0), t, sizeof t), wt->alpha * wt->alpha);
	n->shape = (Shape){4, {du->dim[1], du->dim[2], wt->r, wt->r}};
	return true;
}

/* ---- float64 references ---- */

void ref_winograd_weight(const Graph *g, const Node *n, const double *const *in, double *out)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	const WinogradTile *t = ir_winograd_tile(n);
	int64_t rows = n->shape.dim[1], cols = n->shape.dim[2];
	int fr = t->r;
	for (int xr = 0; xr < t->alpha; xr++)
		for (int xc = 0; xc < t->alpha; xc++)
			for (int64_t r = 0; r < rows; r++)
				for (int64_t c = 0; c < cols; c++) {
					const double *f = in[0] + (r * cols + c) * fr * fr;
					double s = 0;
					for (int i = 0; i < fr; i++)
						for (int j = 0; j < fr; j++) {
							double v = a.flip ? f[(fr - 1 - i) * fr + fr - 1 - j] : f[i * fr + j];
							s += t->g[xr][i] * v * t->g[xc][j];
						}
					out[((int64_t)(xr * t->alpha + xc) * rows + r) * cols + c] = s;
				}
}

void ref_winograd_input(const Graph *g, const Node *n, const double *const *in, double *out)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	const WinogradTile *t = ir_winograd_tile(n);
	const Shape *x = &op_in(g, n, 0)->shape;
	int64_t nimg = x->dim[0], ch = x->dim[1], h = x->dim[2], w = x->dim[3];
	int64_t th = wino_tiles(a.oh, a.m), tw = wino_tiles(a.ow, a.m), p = nimg * th * tw;
	double d[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
	for (int64_t c = 0; c < ch; c++)
		for (int64_t q = 0; q < p; q++) {
			int64_t img = q / (th * tw), r0 = q / tw % th * a.m - a.ph, c0 = q % tw * a.m - a.pw;
			for (int i = 0; i < t->alpha; i++)
				for (int j = 0; j < t->alpha; j++) {
					int64_t r = r0 + i, cc = c0 + j;
					d[i][j] = r >= 0 && r < h && cc >= 0 && cc < w ? in[0][((img * ch + c) * h + r) * w + cc] : 0;
				}
			for (int xr = 0; xr < t->alpha; xr++)
				for (int xc = 0; xc < t->alpha; xc++) {
					double s = 0;
					for (int i = 0; i < t->alpha; i++)
						for (int j = 0; j < t->alpha; j++)
							s += t->bt[xr][i] * d[i][j] * t->bt[xc][j];
					out[((int64_t)(xr * t->alpha + xc) * ch + c) * p + q] = s;
				}
		}
}

void ref_winograd_gemm(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const Shape *u = &op_in(g, n, 0)->shape, *v = &op_in(g, n, 1)->shape;
	bool ta = ir_winograd_transpose_u(n);
	int64_t pts = u->dim[0], k = n->shape.dim[1], c = v->dim[1], p = v->dim[2];
	for (int64_t t = 0; t < pts; t++)
		for (int64_t i = 0; i < k; i++)
			for (int64_t j = 0; j < p; j++) {
				double s = 0;
				for (int64_t l = 0; l < c; l++)
					s += in[0][t * k * c + (ta ? l * k + i : i * c + l)] * in[1][(t * c + l) * p + j];
				out[(t * k + i) * p + j] = s;
			}
}

void ref_winograd_output(const Graph *g, const Node *n, const double *const *in, double *out)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	const WinogradTile *t = ir_winograd_tile(n);
	int64_t k = op_in(g, n, 0)->shape.dim[1], p = op_in(g, n, 0)->shape.dim[2];
	int64_t th = wino_tiles(a.oh, a.m), tw = wino_tiles(a.ow, a.m);
	for (int64_t img = 0; img < a.n; img++)
		for (int64_t o = 0; o < k; o++)
			for (int64_t y = 0; y < a.oh; y++)
				for (int64_t x = 0; x < a.ow; x++) {
					int64_t q = (img * th + y / a.m) * tw + x / a.m;
					int i = (int)(y % a.m), j = (int)(x % a.m);
					double s = 0;
					for (int r = 0; r < t->alpha; r++)
						for (int c = 0; c < t->alpha; c++)
							s += t->at[i][r] * in[0][((int64_t)(r * t->alpha + c) * k + o) * p + q] * t->at[j][c];
					out[((img * k + o) * a.oh + y) * a.ow + x] = s;
				}
}

void ref_winograd_output_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const WinogradTile *t = ir_winograd_tile(n);
	const Shape *dy = &op_in(g, n, 0)->shape;
	int64_t nimg = dy->dim[0], k = dy->dim[1], oh = dy->dim[2], ow = dy->dim[3];
	int64_t th = wino_tiles(oh, t->m), tw = wino_tiles(ow, t->m), p = nimg * th * tw;
	for (int64_t o = 0; o < k; o++)
		for (int64_t q = 0; q < p; q++) {
			int64_t img = q / (th * tw), y0 = q / tw % th * t->m, x0 = q % tw * t->m;
			for (int xr = 0; xr < t->alpha; xr++)
				for (int xc = 0; xc < t->alpha; xc++) {
					double s = 0;
					for (int i = 0; i < t->m; i++)
						for (int j = 0; j < t->m; j++)
							if (y0 + i < oh && x0 + j < ow)
								s += t->at[i][xr] * in[0][((img * k + o) * oh + y0 + i) * ow + x0 + j] * t->at[j][xc];
					out[((int64_t)(xr * t->alpha + xc) * k + o) * p + q] = s;
				}
		}
}

void ref_winograd_weight_gemm(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const Shape *dm = &op_in(g, n, 0)->shape, *v = &op_in(g, n, 1)->shape;
	int64_t pts = dm->dim[0], k = dm->dim[1], p = dm->dim[2], c = v->dim[1];
	for (int64_t t = 0; t < pts; t++)
		for (int64_t i = 0; i < k; i++)
			for (int64_t j = 0; j < c; j++) {
				double s = 0;
				for (int64_t l = 0; l < p; l++)
					s += in[0][(t * k + i) * p + l] * in[1][(t * c + j) * p + l];
				out[(t * k + i) * c + j] = s;
			}
}

void ref_winograd_weight_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const WinogradTile *t = ir_winograd_tile(n);
	int64_t k = n->shape.dim[0], c = n->shape.dim[1];
	for (int64_t o = 0; o < k; o++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int i = 0; i < t->r; i++)
				for (int j = 0; j < t->r; j++) {
					double s = 0;
					for (int xr = 0; xr < t->alpha; xr++)
						for (int xc = 0; xc < t->alpha; xc++)
							s += t->g[xr][i] * in[0][((int64_t)(xr * t->alpha + xc) * k + o) * c + ch] * t->g[xc][j];
					out[((o * c + ch) * t->r + i) * t->r + j] = s;
				}
}

/* ---- operation counts: what the kernels do, transforms included ---- */

double flops_winograd_weight(const Graph *g, const Node *n)
{
	(void)g;
	int r = ir_winograd_tile(n)->r;
	return 2.0 * r * r * (double)shape_numel(&n->shape);
}

double flops_winograd_input(const Graph *g, const Node *n)
{
	(void)g;
	int alpha = ir_winograd_tile(n)->alpha;
	return 2.0 * alpha * alpha * (double)shape_numel(&n->shape);
}

double flops_winograd_gemm(const Graph *g, const Node *n)
{
	return 2.0 * (double)shape_numel(&n->shape) * (double)op_in(g, n, 1)->shape.dim[1];
}

double flops_winograd_output(const Graph *g, const Node *n)
{
	(void)g;
	int alpha = ir_winograd_tile(n)->alpha;
	return 2.0 * alpha * alpha * (double)shape_numel(&n->shape);
}

double flops_winograd_output_grad(const Graph *g, const Node *n)
{
	(void)g;
	int m = ir_winograd_attrs(n).m;
	return 2.0 * m * m * (double)shape_numel(&n->shape);
}

double flops_winograd_weight_gemm(const Graph *g, const Node *n)
{
	return 2.0 * (double)shape_numel(&n->shape) * (double)op_in(g, n, 0)->shape.dim[2];
}

double flops_winograd_weight_grad(const Graph *g, const Node *n)
{
	(void)g;
	int alpha = ir_winograd_tile(n)->alpha;
	return 2.0 * alpha * alpha * (double)shape_numel(&n->shape);
}
