/* lower_winograd.c: the transforms of a Winograd convolution and of its weight gradient
 * (ir/ops_winograd.c). The products over transform points are the GEMM template
 * (cg_lower_winograd_gemm and cg_lower_winograd_weight_gemm, codegen/lower_conv.c).
 *
 * The input and output transforms work a tile at a time: alpha^2 loads, the transform with the
 * constant coefficients of ir/winograd.h (zeros skipped, +-1 as additions), alpha^2 (or m^2)
 * stores. On the host a work-group takes a block of planes and loops over their tiles; on GPUs
 * each work-item takes one tile. On NVIDIA (CgTargetOps.winograd_windows) a work-group of the
 * input transform or the output gradient's takes whole rows of tiles and stages their windows in
 * shared memory first, so that the loads coalesce, and work-groups take the planes channel by
 * channel, so that their stores of transform points run long.
 * The output transform stores through the group's epilogue (cg_group_epilogue), so the bias and
 * activation after a convolution cost no extra pass; on GPUs it stages a work-group's outputs in
 * shared memory first, so that the stores coalesce.
 *
 * The weight transform is an elemental emitter writing U in order: done a filter at a time, its
 * alpha^2 stores go to alpha^2 streams K*C apart, which measured twice as slow (2026-11-24). The
 * transform point of an element is only known at run time there, so each coefficient of G is
 * chosen by a select over the rows. */
#include "codegen/cg_util.h"
#include "codegen/gemm_gpu.h"
#include "codegen/lower_table.h"
#include "ir/ops.h"
#include "ir/winograd.h"

static LLVMValueRef c64(Cg *cg, int64_t v) { return cg_i64(cg, v); }
static LLVMValueRef add(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(cg->b, a, b, ""); }
static LLVMValueRef mulc(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildMul(cg->b, a, c64(cg, b), ""); }
static LLVMValueRef udiv(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildUDiv(cg->b, a, c64(cg, b), ""); }
static LLVMValueRef urem(Cg *cg, LLVMValueRef a, int64_t b) { return LLVMBuildURem(cg->b, a, c64(cg, b), ""); }

/* ---- the weight transform, element by element ---- */

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

/* U[t][k][c] = (G g G^T)[t], g = w[k][c] (or, flipped, w[k][c] rotated by 180 degrees) */
LLVMValueRef cg_elem_winograd_weight(Cg *cg, const Node *n, ElemIndex *at)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	const WinogradTile *wt = ir_winograd_tile(n);
	int r = wt->r;
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at);
	int64_t cin = cg->g->node[n->in[0]].shape.dim[1];
	LLVMValueRef xr = udiv(cg, idx[0], wt->alpha), xc = urem(cg, idx[0], wt->alpha);
	LLVMValueRef base = mulc(cg, add(cg, mulc(cg, idx[1], cin), idx[2]), r * r);
	LLVMValueRef g[WINO_MAX_ALPHA][WINO_MAX_ALPHA], ri[WINO_MAX_R], cj[WINO_MAX_R];
	for (int i = 0; i < r; i++)
		for (int j = 0; j < r; j++) {
			int tap = a.flip ? (r - 1 - i) * r + r - 1 - j : i * r + j;
			g[i][j] = cg_load(cg, n->in[0], add(cg, base, c64(cg, tap)));
		}
	for (int i = 0; i < r; i++) {
		ri[i] = coef(cg, t, &wt->g[0][0], WINO_MAX_R, wt->alpha, xr, i);
		cj[i] = coef(cg, t, &wt->g[0][0], WINO_MAX_R, wt->alpha, xc, i);
	}
	return bilinear(cg, t, g, r, r, ri, cj);
}

/* dw[k][c][i][j] = (G^T dU G)[i][j] over the transform points dU[t][k][c] */
LLVMValueRef cg_elem_winograd_weight_grad(Cg *cg, const Node *n, ElemIndex *at)
{
	const WinogradTile *wt = ir_winograd_tile(n);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef *idx = cg_index_idx(cg, at);
	int64_t k = n->shape.dim[0], c = n->shape.dim[1];
	LLVMValueRef base = add(cg, mulc(cg, idx[0], c), idx[1]);
	LLVMValueRef du[WINO_MAX_ALPHA][WINO_MAX_ALPHA], ri[WINO_MAX_ALPHA], cj[WINO_MAX_ALPHA];
	for (int xr = 0; xr < wt->alpha; xr++)
		for (int xc = 0; xc < wt->alpha; xc++)
			du[xr][xc] = cg_load(cg, n->in[0], add(cg, base, c64(cg, (int64_t)(xr * wt->alpha + xc) * k * c)));
	/* G^T's row i (run time) is G's column i: coef picks it from G transposed */
	double gt[WINO_MAX_R][WINO_MAX_ALPHA];
	for (int i = 0; i < wt->r; i++)
		for (int x = 0; x < wt->alpha; x++)
			gt[i][x] = wt->g[x][i];
	for (int x = 0; x < wt->alpha; x++) {
		ri[x] = coef(cg, t, &gt[0][0], WINO_MAX_ALPHA, wt->r, idx[2], x);
		cj[x] = coef(cg, t, &gt[0][0], WINO_MAX_ALPHA, wt->r, idx[3], x);
	}
	/* a half gradient fused into its reader is rounded there as the stored one would be */
	return cg_round_as(cg, bilinear(cg, t, du, wt->alpha, wt->alpha, ri, cj), n->dtype);
}

/* ---- the input and output transforms, tile by tile ---- */

/* sum over l < count of k[l * stride] * v[l], constant coefficients: zeros skipped, +-1 added */
static LLVMValueRef lincomb(Cg *cg, LLVMTypeRef t, const double *k, int stride, const LLVMValueRef *v, int count)
{
	LLVMValueRef s = NULL;
	for (int l = 0; l < count; l++) {
		double c = k[l * stride];
		if (c == 0)
			continue;
		LLVMValueRef term = c == 1 || c == -1 ? v[l] : LLVMBuildFMul(cg->b, cg_real(cg, t, c), v[l], "");
		if (!s)
			s = c == -1 ? LLVMBuildFNeg(cg->b, term, "") : term;
		else
			s = c == -1 ? LLVMBuildFSub(cg->b, s, term, "") : LLVMBuildFAdd(cg->b, s, term, "");
	}
	return s ? s : cg_real(cg, t, 0);
}

/* out[r][c] = sum_{i,j} left[r][i] in[i][j] right[c][j]: nr rows of left and nc of right, both
 * of ni columns stored ld apart; in is ni x ni */
static void sandwich(Cg *cg, LLVMTypeRef t, const double *left, int nr, const double *right, int nc, int ni, int ld,
		     LLVMValueRef in[WINO_MAX_ALPHA][WINO_MAX_ALPHA], LLVMValueRef out[WINO_MAX_ALPHA][WINO_MAX_ALPHA])
{
	LLVMValueRef tmp[WINO_MAX_ALPHA][WINO_MAX_ALPHA], col[WINO_MAX_ALPHA];
	for (int r = 0; r < nr; r++)
		for (int j = 0; j < ni; j++) {
			for (int i = 0; i < ni; i++)
				col[i] = in[i][j];
			tmp[r][j] = lincomb(cg, t, left + r * ld, 1, col, ni);
		}
	for (int r = 0; r < nr; r++)
		for (int c = 0; c < nc; c++)
			out[r][c] = lincomb(cg, t, right + c * ld, 1, tmp[r], ni);
}

typedef struct {
	const WinogradTile *wt;
	int64_t planes;     /* input: N*C planes of x; output: N*K planes of y */
	int64_t chans;      /* C (input) or K (output) */
	int64_t h, w;       /* input plane */
	int64_t oh, ow, th, tw, p;
	int64_t ph, pw;
	LLVMTypeRef t;
} Wino;

static Wino wino_of(Cg *cg, const Node *n)
{
	WinogradAttrs a = ir_winograd_attrs(n);
	Wino q = {.wt = wino_tile(a.m, a.r), .ph = a.ph, .pw = a.pw, .oh = a.oh, .ow = a.ow, .t = cg_compute_type(cg, n->dtype)};
	q.th = wino_tiles(a.oh, a.m), q.tw = wino_tiles(a.ow, a.m);
	if (n->op == OP_winograd_input) {
		const Shape *x = &cg->g->node[n->in[0]].shape;
		q.planes = x->dim[0] * x->dim[1], q.chans = x->dim[1], q.h = x->dim[2], q.w = x->dim[3];
		q.p = n->shape.dim[2];
	} else if (n->op == OP_winograd_output_grad) {
		const Shape *dy = &cg->g->node[n->in[0]].shape;
		q.planes = dy->dim[0] * dy->dim[1], q.chans = dy->dim[1], q.oh = dy->dim[2], q.ow = dy->dim[3];
		q.th = wino_tiles(q.oh, a.m), q.tw = wino_tiles(q.ow, a.m);
		q.p = n->shape.dim[2];
	} else {
		q.planes = n->shape.dim[0] * n->shape.dim[1], q.chans = n->shape.dim[1];
		q.p = cg->g->node[n->in[0]].shape.dim[2];
	}
	return q;
}

/* v[xr][xc] of tile (th, tw) of image img into point xr * alpha + xc of n's [alpha^2][chans][P]
 * output at channel chan */
static void store_points(Cg *cg, const Node *n, const Wino *q, LLVMValueRef img, LLVMValueRef chan, LLVMValueRef th,
			 LLVMValueRef tw, LLVMValueRef v[WINO_MAX_ALPHA][WINO_MAX_ALPHA])
{
	LLVMValueRef p = add(cg, mulc(cg, add(cg, mulc(cg, img, q->th), th), q->tw), tw);
	for (int xr = 0; xr < q->wt->alpha; xr++)
		for (int xc = 0; xc < q->wt->alpha; xc++) {
			int64_t pt = xr * q->wt->alpha + xc;
			LLVMValueRef at = add(cg, mulc(cg, chan, q->p), add(cg, c64(cg, pt * q->chans * q->p), p));
			cg_group_epilogue(cg, n->id, at, v[xr][xc]);
		}
}

/* The window a tile's transform reads: win x win values of a plane of h x w, the tile at (th, tw)
 * starting at (th * m - ph, tw * m - pw); zero outside the plane. */
typedef struct {
	int win;
	int64_t ph, pw, h, w;
} Window;

static Window window_of(const Node *n, const Wino *q)
{
	if (n->op == OP_winograd_input)
		return (Window){q->wt->alpha, q->ph, q->pw, q->h, q->w};
	return (Window){q->wt->m, 0, 0, q->oh, q->ow}; /* winograd_output_grad: dy's m x m tiles */
}

/* On GPUs a work-group stages the windows of its tile rows in shared memory: `stage` is
 * [rows][win][wp], wp the columns a tile row's windows span; `row` the work-item's tile row in it. */
typedef struct {
	LLVMValueRef stage, row;
	int64_t wp;
} Staged;

/* a - b, no instruction for b = 0 */
static LLVMValueRef minus(Cg *cg, LLVMValueRef a, int64_t b) { return b ? LLVMBuildSub(cg->b, a, c64(cg, b), "") : a; }

/* x[at] where ok (an i1), else 0: a lane outside the plane loads x[0] and drops it, so no branch */
static LLVMValueRef load_or_zero(Cg *cg, const Node *n, LLVMValueRef ok, LLVMValueRef at, LLVMValueRef zero)
{
	return LLVMBuildSelect(cg->b, ok, cg_load(cg, n->in[0], LLVMBuildSelect(cg->b, ok, at, c64(cg, 0), "")), zero, "");
}

/* d[i][j] = the window of tile (th, tw) of `plane`: from the stage when there is one, else from
 * global memory with the plane's bounds checked */
static void load_window(Cg *cg, const Node *n, const Wino *q, const Staged *s, LLVMValueRef plane, LLVMValueRef th,
			LLVMValueRef tw, LLVMValueRef d[WINO_MAX_ALPHA][WINO_MAX_ALPHA])
{
	Window w = window_of(n, q);
	int m = q->wt->m;
	if (s) {
		LLVMValueRef base = add(cg, mulc(cg, s->row, w.win * s->wp), mulc(cg, tw, m));
		for (int i = 0; i < w.win; i++)
			for (int j = 0; j < w.win; j++) {
				LLVMValueRef at = add(cg, base, c64(cg, i * s->wp + j));
				d[i][j] = LLVMBuildLoad2(cg->b, q->t, LLVMBuildGEP2(cg->b, q->t, s->stage, &at, 1, ""), "");
			}
		return;
	}
	LLVMValueRef r0 = minus(cg, mulc(cg, th, m), w.ph), c0 = minus(cg, mulc(cg, tw, m), w.pw);
	LLVMValueRef base = mulc(cg, plane, w.h * w.w), zero = cg_real(cg, q->t, 0);
	for (int i = 0; i < w.win; i++) {
		LLVMValueRef r = add(cg, r0, c64(cg, i));
		LLVMValueRef okr = LLVMBuildICmp(cg->b, LLVMIntULT, r, c64(cg, w.h), ""); /* r < 0 wraps past h */
		for (int j = 0; j < w.win; j++) {
			LLVMValueRef col = add(cg, c0, c64(cg, j));
			LLVMValueRef ok = LLVMBuildAnd(cg->b, okr, LLVMBuildICmp(cg->b, LLVMIntULT, col, c64(cg, w.w), ""), "");
			d[i][j] = load_or_zero(cg, n, ok, add(cg, base, add(cg, mulc(cg, r, w.w), col)), zero);
		}
	}
}

/* V[t][c][p] = (B^T d B)[t] for tile (th, tw) of plane (img, c) of x, zero outside the plane */
static void input_tile(Cg *cg, const Node *n, const Wino *q, const Staged *s, LLVMValueRef plane, LLVMValueRef th,
		       LLVMValueRef tw)
{
	const WinogradTile *wt = q->wt;
	LLVMValueRef img = udiv(cg, plane, q->chans), c = urem(cg, plane, q->chans);
	LLVMValueRef d[WINO_MAX_ALPHA][WINO_MAX_ALPHA], v[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
	load_window(cg, n, q, s, plane, th, tw, d);
	sandwich(cg, q->t, &wt->bt[0][0], wt->alpha, &wt->bt[0][0], wt->alpha, wt->alpha, WINO_MAX_ALPHA, d, v);
	store_points(cg, n, q, img, c, th, tw, v);
}

/* y[i][j] of tile (th, tw) of plane (img, k) = A^T m A of the points M[t][k][p] */
static void output_values(Cg *cg, const Node *n, const Wino *q, LLVMValueRef plane, LLVMValueRef th, LLVMValueRef tw,
			  LLVMValueRef y[WINO_MAX_ALPHA][WINO_MAX_ALPHA])
{
	const WinogradTile *wt = q->wt;
	LLVMValueRef img = udiv(cg, plane, q->chans), k = urem(cg, plane, q->chans);
	LLVMValueRef p = add(cg, mulc(cg, add(cg, mulc(cg, img, q->th), th), q->tw), tw);
	LLVMValueRef base = add(cg, mulc(cg, k, q->p), p);
	LLVMValueRef mm[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
	for (int xr = 0; xr < wt->alpha; xr++)
		for (int xc = 0; xc < wt->alpha; xc++)
			mm[xr][xc] = cg_load(cg, n->in[0], add(cg, base, c64(cg, (int64_t)(xr * wt->alpha + xc) * q->chans * q->p)));
	sandwich(cg, q->t, &wt->at[0][0], wt->m, &wt->at[0][0], wt->m, wt->alpha, WINO_MAX_ALPHA, mm, y);
}

typedef void (*OutputSink)(Cg *cg, const Node *n, LLVMValueRef at, LLVMValueRef v, LLVMValueRef stage);

/* sink(at, y[i][j]) for every output of tile (th, tw) of `plane` inside the plane, `at` its index
 * in y minus `origin`; outputs past the plane's edge are skipped (a loop of 0 or 1 trips guards
 * each) */
static void tile_outputs(Cg *cg, const Node *n, const Wino *q, LLVMValueRef plane, LLVMValueRef th, LLVMValueRef tw,
			 LLVMValueRef y[WINO_MAX_ALPHA][WINO_MAX_ALPHA], LLVMValueRef origin, OutputSink sink,
			 LLVMValueRef stage)
{
	int m = q->wt->m;
	bool ragged = q->oh % m || q->ow % m;
	LLVMValueRef y0 = mulc(cg, th, m), x0 = mulc(cg, tw, m);
	LLVMValueRef out = LLVMBuildSub(cg->b, mulc(cg, plane, q->oh * q->ow), origin, "");
	for (int i = 0; i < m; i++)
		for (int j = 0; j < m; j++) {
			LLVMValueRef oy = add(cg, y0, c64(cg, i)), ox = add(cg, x0, c64(cg, j));
			CgLoop guard;
			if (ragged) {
				LLVMValueRef ok = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, oy, c64(cg, q->oh), ""),
							       LLVMBuildICmp(cg->b, LLVMIntULT, ox, c64(cg, q->ow), ""), "");
				guard = cg_for_begin(cg, c64(cg, 0), LLVMBuildZExt(cg->b, ok, cg->t_i64, ""), "edge");
			}
			sink(cg, n, add(cg, out, add(cg, mulc(cg, oy, q->ow), ox)), y[i][j], stage);
			if (ragged)
				cg_for_end(cg, &guard);
		}
}

static void epilogue_sink(Cg *cg, const Node *n, LLVMValueRef at, LLVMValueRef v, LLVMValueRef stage)
{
	(void)stage;
	cg_group_epilogue(cg, n->id, at, v);
}

static void stage_sink(Cg *cg, const Node *n, LLVMValueRef at, LLVMValueRef v, LLVMValueRef stage)
{
	(void)n;
	LLVMBuildStore(cg->b, v, LLVMBuildGEP2(cg->b, LLVMTypeOf(v), stage, &at, 1, ""));
}

/* y tile (th, tw) of plane (img, k) through the group's epilogue */
static void output_tile(Cg *cg, const Node *n, const Wino *q, const Staged *s, LLVMValueRef plane, LLVMValueRef th,
			LLVMValueRef tw)
{
	(void)s;
	LLVMValueRef y[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
	output_values(cg, n, q, plane, th, tw, y);
	tile_outputs(cg, n, q, plane, th, tw, y, c64(cg, 0), epilogue_sink, NULL);
}

/* dM[t][k][p] = (A dY A^T)[t] for tile (th, tw) of plane (img, k) of dy, zero past the plane's edge */
static void output_grad_tile(Cg *cg, const Node *n, const Wino *q, const Staged *s, LLVMValueRef plane, LLVMValueRef th,
			     LLVMValueRef tw)
{
	const WinogradTile *wt = q->wt;
	int m = wt->m;
	LLVMValueRef img = udiv(cg, plane, q->chans), k = urem(cg, plane, q->chans);
	LLVMValueRef d[WINO_MAX_ALPHA][WINO_MAX_ALPHA], v[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
	load_window(cg, n, q, s, plane, th, tw, d);
	/* A = (A^T)^T, alpha x m */
	double a[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
	for (int r = 0; r < wt->alpha; r++)
		for (int i = 0; i < m; i++)
			a[r][i] = wt->at[i][r];
	sandwich(cg, q->t, &a[0][0], wt->alpha, &a[0][0], wt->alpha, m, WINO_MAX_ALPHA, d, v);
	store_points(cg, n, q, img, k, th, tw, v);
}

/* The plane (img * chans + chan) of the u-th plane in the order NVIDIA's work-groups take them:
 * channel by channel, the images of a channel in turn, so that a work-group's tiles are
 * consecutive points p of one channel and its stores into [alpha^2][chans][P] run as long as the
 * work-group. In plane order each run was one plane's tiles (81 of alexnet's 27x27 planes, 16 of
 * its 13x13 ones), its ends sharing 32-byte sectors with runs that other work-groups wrote much
 * later: alexnet_bench's tf32 step 6.69 -> 6.36 ms on an H100 (2026-12-06). u's type: i32 or i64. */
static LLVMValueRef plane_in_order(Cg *cg, const Wino *q, LLVMValueRef u)
{
	LLVMTypeRef t = LLVMTypeOf(u);
	LLVMValueRef images = LLVMConstInt(t, (unsigned long long)(q->planes / q->chans), false);
	LLVMValueRef img = LLVMBuildURem(cg->b, u, images, ""), chan = LLVMBuildUDiv(cg->b, u, images, "");
	return LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, img, LLVMConstInt(t, (unsigned long long)q->chans, false), ""), chan, "");
}

typedef void (*TileFn)(Cg *cg, const Node *n, const Wino *q, const Staged *s, LLVMValueRef plane, LLVMValueRef th,
		       LLVMValueRef tw);

/* Every tile of every plane: on GPUs one per work-item, on the host blocks of planes per
 * work-group with their tiles in row order (the loop over a tile row is what LLVM vectorizes). */
static int64_t over_tiles(Cg *cg, const Node *n, TileFn tile)
{
	Wino q = wino_of(cg, n);
	int64_t tiles = q.th * q.tw, grid;
	if (cg_gpu_paths(cg)) {
		GpuGroup g;
		LLVMValueRef e = cg_gpu_elements_begin(cg, &g, q.planes * tiles, &grid);
		LLVMValueRef r = urem(cg, e, tiles), plane = udiv(cg, e, tiles);
		plane = cg_gpu_winograd_windows(cg) ? plane_in_order(cg, &q, plane) : plane;
		tile(cg, n, &q, NULL, plane, udiv(cg, r, q.tw), urem(cg, r, q.tw));
		cg_gpu_elements_end(cg, &g);
		return grid;
	}
	int64_t per = CG_WG_ELEMENTS / (tiles * q.wt->alpha * q.wt->alpha);
	per = per < 1 ? 1 : per > q.planes ? q.planes : per;
	grid = (q.planes + per - 1) / per;
	CgLoop wg = cg_for_begin(cg, cg->wg_begin, cg->wg_end, "wg");
	LLVMValueRef lo = mulc(cg, wg.i, per);
	CgLoop pl = cg_for_begin(cg, lo, cg_min_i64(cg, add(cg, lo, c64(cg, per)), c64(cg, q.planes)), "plane");
	CgLoop th = cg_for_begin(cg, c64(cg, 0), c64(cg, q.th), "th");
	CgLoop tw = cg_for_begin(cg, c64(cg, 0), c64(cg, q.tw), "tw");
	tile(cg, n, &q, NULL, pl.i, th.i, tw.i);
	cg_for_end(cg, &tw);
	cg_for_end(cg, &th);
	cg_for_end(cg, &pl);
	cg_for_end(cg, &wg);
	return grid;
}

/* The outputs a GPU work-group stages in shared memory: 16 KiB of float32 */
enum { STAGED_OUTPUTS = 4096 };
/* The window values a GPU work-group stages: 24 KiB of float32 */
enum { STAGED_WINDOWS = 6144 };
/* Staged only where a tile row has this many tiles: with 4 (12x12 to 14x14 planes) a row of
 * windows is little wider than one window, the stage saves few loads and its barrier cost up to
 * 39% on an H100; rows of 7 tiles and more ran 1.7-16% faster (2026-12-06, docs/performance.md). */
enum { STAGED_MIN_ROW_TILES = 6 };

/* Whole tile rows per GPU work-group, one tile per work-item, when `per_row` values of a tile row
 * are staged in at most `limit`; 0 when one row does not fit */
static int64_t rows_per_group(const Wino *q, int64_t per_row, int64_t limit)
{
	int64_t rows = CG_GPU_BLOCK / q->tw, fits = limit / per_row, total = q->planes * q->th;
	rows = rows < fits ? rows : fits;
	return rows < total ? rows : total;
}

/* Work-item tid's share of the stage of tile rows [first, past) (of `rows` at most): value e of
 * the stage for e = tid, tid + block, ..., every load issued before any store, so that they are
 * all in flight at once (one at a time in a loop, alexnet_bench's 13x13 input transforms took 0.046 ms
 * on an H100, all at once 0.040). Index arithmetic in 32 bits (the caller checked that tile rows and
 * plane offsets fit): a GPU divides those by a constant in a few instructions, 64-bit ones in
 * many. */
static void fill_windows(Cg *cg, const Node *n, const Wino *q, const Staged *s, LLVMValueRef tid, LLVMValueRef first,
			 LLVMValueRef past, int64_t rows)
{
	Window w = window_of(n, q);
	int64_t per_row = w.win * s->wp, size = rows * per_row, sweeps = (size + CG_GPU_BLOCK - 1) / CG_GPU_BLOCK;
	LLVMValueRef v[STAGED_WINDOWS / CG_GPU_BLOCK], zero = cg_real(cg, q->t, 0);
	LLVMValueRef tid32 = LLVMBuildTrunc(cg->b, tid, cg->t_i32, ""), first32 = LLVMBuildTrunc(cg->b, first, cg->t_i32, "");
	LLVMValueRef count = LLVMBuildTrunc(cg->b, mulc(cg, LLVMBuildSub(cg->b, past, first, ""), per_row), cg->t_i32, "");
	for (int64_t u = 0; u < sweeps; u++) {
		LLVMValueRef e = LLVMBuildAdd(cg->b, tid32, cg_i32(cg, u * CG_GPU_BLOCK), "");
		LLVMValueRef rem = LLVMBuildURem(cg->b, e, cg_i32(cg, per_row), "");
		LLVMValueRef row = LLVMBuildAdd(cg->b, first32, LLVMBuildUDiv(cg->b, e, cg_i32(cg, per_row), ""), "");
		LLVMValueRef th = LLVMBuildURem(cg->b, row, cg_i32(cg, q->th), "");
		LLVMValueRef r = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, th, cg_i32(cg, q->wt->m), ""),
					      LLVMBuildUDiv(cg->b, rem, cg_i32(cg, s->wp), ""), "");
		r = LLVMBuildSub(cg->b, r, cg_i32(cg, w.ph), "");
		LLVMValueRef col = LLVMBuildSub(cg->b, LLVMBuildURem(cg->b, rem, cg_i32(cg, s->wp), ""), cg_i32(cg, w.pw), "");
		LLVMValueRef ok = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, e, count, ""),
					       LLVMBuildICmp(cg->b, LLVMIntULT, r, cg_i32(cg, w.h), ""), ""); /* r < 0 wraps */
		ok = LLVMBuildAnd(cg->b, ok, LLVMBuildICmp(cg->b, LLVMIntULT, col, cg_i32(cg, w.w), ""), "");
		LLVMValueRef in_plane = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, r, cg_i32(cg, w.w), ""), col, "");
		LLVMValueRef plane = plane_in_order(cg, q, LLVMBuildUDiv(cg->b, row, cg_i32(cg, q->th), ""));
		plane = LLVMBuildZExt(cg->b, plane, cg->t_i64, "");
		LLVMValueRef at = add(cg, mulc(cg, plane, w.h * w.w), LLVMBuildZExt(cg->b, in_plane, cg->t_i64, ""));
		v[u] = load_or_zero(cg, n, ok, at, zero);
	}
	for (int64_t u = 0; u < sweeps; u++) {
		LLVMValueRef e = LLVMBuildZExt(cg->b, LLVMBuildAdd(cg->b, tid32, cg_i32(cg, u * CG_GPU_BLOCK), ""), cg->t_i64, "");
		bool last = (u + 1) * CG_GPU_BLOCK > size; /* only the last sweep can pass the stage's end */
		CgLoop in;
		if (last) {
			LLVMValueRef inside = LLVMBuildICmp(cg->b, LLVMIntULT, e, c64(cg, size), "");
			in = cg_for_begin(cg, c64(cg, 0), LLVMBuildZExt(cg->b, inside, cg->t_i64, ""), "in");
		}
		LLVMBuildStore(cg->b, v[u], LLVMBuildGEP2(cg->b, q->t, s->stage, &e, 1, ""));
		if (last)
			cg_for_end(cg, &in);
	}
}

/* The input transform and the output gradient's on GPUs: a work-group takes `rows` whole tile
 * rows, one tile per work-item; first every work-item copies the windows of those rows to shared
 * memory, neighbours at neighbouring values of the plane, then each transforms its tile from
 * there. Read straight from global memory, a warp's loads were m values apart and one sector
 * in four was used: alexnet_bench's 27x27 F(3x3,5x5) input transform at 38% of an H100's
 * bandwidth (Nsight Compute, 2026-12-06); a fused producer was also computed for every tile
 * that reads its value, (alpha/m)^2 times, where a row of windows takes it alpha/m times. */
static int64_t windows_staged(Cg *cg, const Node *n, TileFn tile)
{
	Wino q = wino_of(cg, n);
	Window w = window_of(n, &q);
	int m = q.wt->m;
	int64_t wp = (q.tw - 1) * m + w.win, per_row = w.win * wp;
	int64_t rows = rows_per_group(&q, per_row, STAGED_WINDOWS), total = q.planes * q.th;
	if (q.tw < STAGED_MIN_ROW_TILES || rows < 1 || total >= INT32_MAX || w.h * w.w >= INT32_MAX)
		return over_tiles(cg, n, tile);
	GpuGroup g;
	LLVMValueRef wg = cg_gpu_group_begin(cg, &g, CG_GPU_BLOCK);
	Staged s = {.stage = cg_gpu_shared(cg, &g, q.t, rows * per_row, "winograd_windows"), .wp = wp};
	LLVMValueRef first = mulc(cg, wg, rows), past = cg_min_i64(cg, add(cg, first, c64(cg, rows)), c64(cg, total));

	LLVMValueRef tid = cg_gpu_phase_begin(cg, &g);
	fill_windows(cg, n, &q, &s, tid, first, past, rows);
	cg_gpu_phase_end(cg, &g, true);

	tid = cg_gpu_phase_begin(cg, &g);
	s.row = udiv(cg, tid, q.tw);
	LLVMValueRef tile_row = add(cg, first, s.row);
	LLVMValueRef mine = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, tid, c64(cg, rows * q.tw), ""),
					 LLVMBuildICmp(cg->b, LLVMIntULT, tile_row, past, ""), "");
	CgLoop one = cg_for_begin(cg, c64(cg, 0), LLVMBuildZExt(cg->b, mine, cg->t_i64, ""), "tile");
	tile(cg, n, &q, &s, plane_in_order(cg, &q, udiv(cg, tile_row, q.th)), urem(cg, tile_row, q.th), urem(cg, tid, q.tw));
	cg_for_end(cg, &one);
	cg_gpu_phase_end(cg, &g, false);
	cg_gpu_group_end(cg, &g);
	return (total + rows - 1) / rows;
}

int64_t cg_lower_winograd_input(Cg *cg, const Node *n)
{
	return cg_gpu_paths(cg) && cg_gpu_winograd_windows(cg) ? windows_staged(cg, n, input_tile)
							       : over_tiles(cg, n, input_tile);
}

/* Index in y of the first output of tile row `row` (of every plane's tile rows in order): the
 * tile rows of consecutive planes cover y without gaps. */
static LLVMValueRef row_start(Cg *cg, const Wino *q, LLVMValueRef row)
{
	return add(cg, mulc(cg, udiv(cg, row, q->th), q->oh * q->ow), mulc(cg, urem(cg, row, q->th), q->wt->m * q->ow));
}

/* The output transform on GPUs: a work-group takes `rows` whole tile rows, one tile per
 * work-item, which cover one run of y; it writes their outputs to shared memory, then stores
 * the run through the epilogue with neighbouring work-items at neighbouring outputs. Stored
 * straight from the tiles, a warp's stores were m floats apart and ragged at the planes' edges:
 * 1.2-1.5 TB/s on alexnet's 55x55 and 13x13 planes (H200, 2026-11-29). */
static int64_t output_staged(Cg *cg, const Node *n)
{
	Wino q = wino_of(cg, n);
	int64_t rows = rows_per_group(&q, q.wt->m * q.ow, STAGED_OUTPUTS), total = q.planes * q.th;
	if (rows < 1)
		return over_tiles(cg, n, output_tile);
	GpuGroup g;
	LLVMValueRef wg = cg_gpu_group_begin(cg, &g, CG_GPU_BLOCK);
	LLVMValueRef stage = cg_gpu_shared(cg, &g, q.t, rows * q.wt->m * q.ow, "winograd_output");
	LLVMValueRef first = mulc(cg, wg, rows), past = cg_min_i64(cg, add(cg, first, c64(cg, rows)), c64(cg, total));
	LLVMValueRef origin = row_start(cg, &q, first);

	LLVMValueRef tid = cg_gpu_phase_begin(cg, &g);
	LLVMValueRef row = add(cg, first, udiv(cg, tid, q.tw));
	LLVMValueRef mine = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, tid, c64(cg, rows * q.tw), ""),
					 LLVMBuildICmp(cg->b, LLVMIntULT, row, past, ""), "");
	CgLoop tile = cg_for_begin(cg, c64(cg, 0), LLVMBuildZExt(cg->b, mine, cg->t_i64, ""), "tile");
	LLVMValueRef plane = udiv(cg, row, q.th), th = urem(cg, row, q.th), tw = urem(cg, tid, q.tw);
	LLVMValueRef y[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
	output_values(cg, n, &q, plane, th, tw, y);
	tile_outputs(cg, n, &q, plane, th, tw, y, origin, stage_sink, stage);
	cg_for_end(cg, &tile);
	cg_gpu_phase_end(cg, &g, true);

	tid = cg_gpu_phase_begin(cg, &g);
	CgLoop out = cg_for_begin(cg, tid, LLVMBuildSub(cg->b, row_start(cg, &q, past), origin, ""), "out");
	LLVMValueRef v = LLVMBuildLoad2(cg->b, q.t, LLVMBuildGEP2(cg->b, q.t, stage, &out.i, 1, ""), "");
	cg_group_epilogue(cg, n->id, add(cg, origin, out.i), v);
	cg_for_end_step(cg, &out, c64(cg, CG_GPU_BLOCK));
	cg_gpu_phase_end(cg, &g, false);
	cg_gpu_group_end(cg, &g);
	return (total + rows - 1) / rows;
}

int64_t cg_lower_winograd_output(Cg *cg, const Node *n)
{
	return cg_gpu_paths(cg) ? output_staged(cg, n) : over_tiles(cg, n, output_tile);
}
int64_t cg_lower_winograd_output_grad(Cg *cg, const Node *n)
{
	return cg_gpu_paths(cg) && cg_gpu_winograd_windows(cg) ? windows_staged(cg, n, output_grad_tile)
							       : over_tiles(cg, n, output_grad_tile);
}
