/* lower_pool.c: max and average pooling over NCHW or NHWC, max pooling's window argmax, and the
 * gradients (PyTorch semantics: floor mode, or ceil mode whose windows past the edge are clipped
 * like padding, zero padding that never wins a max, count_include_pad for the average). On the
 * host a work-group takes a block of (n, c) planes (NCHW) or of (n, row) rows of all channels
 * (NHWC); on GPUs each work-item takes one output element (forward, argmax, and the max gradient
 * of windows that tile the plane) or one input element (other gradients), consecutive work-items
 * consecutive elements of the layout, so NHWC reads and writes channel runs. A plane's elements
 * are cs apart (1, or C in NHWC); the argmax stores the spatial position ih * w + iw in both
 * layouts. Where the windows tile the plane (max_pool2d_tiled_grad) each window scans x and
 * writes its own elements. The other gradients are gathers: each input element sums what the
 * windows containing it send it, in window order, so no two threads write one element; the max
 * gradient there reads the argmax's i32 per window, not x: a window is scanned once (by the argmax
 * kernel), not once per element it contains. Every store is the group's epilogue
 * (cg_group_epilogue): fused elementwise consumers follow it. */
#include "codegen/cg_util.h"
#include "codegen/gemm_gpu.h"
#include "ir/ops.h"

/* What a forward kernel stores per window. */
typedef enum { POOL_MAX, POOL_ARGMAX, POOL_AVG } PoolOut;

typedef struct {
	int x;                                  /* pooled input node; -1 for the max gradient by index */
	int64_t planes, h, w, oh, ow;
	int64_t kh, kw, sh, sw, ph, pw;
	int64_t c, cs;  /* channels; the stride of a plane's elements (1 NCHW, c NHWC) */
	bool nhwc;
	bool include_pad;
	bool clip;      /* include_pad in ceil mode: a window's divisor is its part of the padded input */
} Pool;

/* What one window yields: the first maximum and where it is, or the sum and divisor. */
typedef struct {
	LLVMValueRef best, pos, sum, count;
} Scan;

static LLVMValueRef c64(Cg *cg, int64_t v) { return cg_i64(cg, v); }
static LLVMValueRef add(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(cg->b, a, b, ""); }
static LLVMValueRef sub(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSub(cg->b, a, b, ""); }
static LLVMValueRef mulc(Cg *cg, LLVMValueRef a, int64_t c) { return LLVMBuildMul(cg->b, a, c64(cg, c), ""); }
static LLVMValueRef ult(Cg *cg, LLVMValueRef a, int64_t n) { return LLVMBuildICmp(cg->b, LLVMIntULT, a, c64(cg, n), ""); }
static LLVMValueRef imax(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, a, b, ""), a, b, "");
}

/* Forward ops pool in[0] into n; gradients pool n's shape into dy = in[0], x = in[1] (avg only). */
static Pool pool_of(Cg *cg, const Node *n, bool grad)
{
	const Node *x = grad ? n : &cg->g->node[n->in[0]];
	const Node *y = grad ? &cg->g->node[n->in[0]] : n;
	PoolGeom a = ir_pool_geom(n);
	bool nhwc = a.layout == LAYOUT_NHWC;
	int hd = nhwc ? 1 : 2, cd = nhwc ? 3 : 1; /* the first spatial axis; the channels' */
	Pool p = {.x = !grad ? x->id : n->op == OP_max_pool2d_grad ? -1 : n->in[1],
		  .planes = x->shape.dim[0] * x->shape.dim[cd], .h = x->shape.dim[hd],
		  .w = x->shape.dim[hd + 1], .oh = y->shape.dim[hd], .ow = y->shape.dim[hd + 1],
		  .kh = a.kh, .kw = a.kw, .sh = a.sh, .sw = a.sw, .ph = a.ph, .pw = a.pw,
		  .c = x->shape.dim[cd], .cs = nhwc ? x->shape.dim[cd] : 1, .nhwc = nhwc,
		  .include_pad = a.count_include_pad, .clip = a.count_include_pad && a.ceil_mode};
	return p;
}

/* Opens the loops over this work-group's planes; returns the plane index. Close with close2. */
static LLVMValueRef planes_begin(Cg *cg, int64_t per_wg, int64_t planes, CgLoop *wg, CgLoop *pl)
{
	*wg = cg_for_begin(cg, cg->wg_begin, cg->wg_end, "wg");
	LLVMValueRef lo = mulc(cg, wg->i, per_wg);
	*pl = cg_for_begin(cg, lo, cg_min_i64(cg, add(cg, lo, c64(cg, per_wg)), c64(cg, planes)), "plane");
	return pl->i;
}

static void close2(Cg *cg, CgLoop *inner, CgLoop *outer)
{
	cg_for_end(cg, inner);
	cg_for_end(cg, outer);
}

static int64_t planes_per_wg(int64_t planes, int64_t plane_elems, int64_t *grid)
{
	int64_t per = CG_WG_ELEMENTS / (plane_elems > 0 ? plane_elems : 1);
	if (per < 1)
		per = 1;
	if (per > planes)
		per = planes;
	*grid = (planes + per - 1) / per;
	return per;
}

/* The size of the window at (h0, w0) clipped to the padded input, as Caffe divides an average in
 * ceil mode. */
static LLVMValueRef clipped_size(Cg *cg, const Pool *p, LLVMValueRef h0, LLVMValueRef w0)
{
	LLVMValueRef h1 = cg_min_i64(cg, add(cg, h0, c64(cg, p->kh)), c64(cg, p->h + p->ph));
	LLVMValueRef w1 = cg_min_i64(cg, add(cg, w0, c64(cg, p->kw)), c64(cg, p->w + p->pw));
	return LLVMBuildMul(cg->b, sub(cg, h1, h0), sub(cg, w1, w0), "");
}

/* Whether x takes over from the window's maximum so far: strictly greater, so ties keep the first
 * maximum; a NaN always takes over, as PyTorch's (val > max || isnan(val)), so the window's value
 * is NaN and its argmax the last NaN. */
static LLVMValueRef takes_max(Cg *cg, LLVMValueRef x, LLVMValueRef best)
{
	return LLVMBuildOr(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOGT, x, best, ""), LLVMBuildFCmp(cg->b, LLVMRealUNO, x, x, ""),
			   "");
}

/* Scans window (oh, ow) of plane `base` of x in row-major order. */
static Scan scan_window(Cg *cg, const Pool *p, LLVMValueRef base, LLVMValueRef oh, LLVMValueRef ow, bool want_max)
{
	LLVMTypeRef ct = cg_compute_type(cg, cg->g->node[p->x].dtype);
	LLVMValueRef best = cg_local(cg, ct, "best"), pos = cg_local(cg, cg->t_i64, "pos");
	LLVMValueRef have = cg_local(cg, cg->t_i1, "have"), cnt = cg_local(cg, cg->t_i64, "cnt");
	LLVMBuildStore(cg->b, cg_real(cg, ct, 0), best);
	LLVMBuildStore(cg->b, c64(cg, -1), pos);
	LLVMBuildStore(cg->b, LLVMConstInt(cg->t_i1, 0, 0), have);
	LLVMBuildStore(cg->b, c64(cg, 0), cnt);
	LLVMValueRef h0 = sub(cg, mulc(cg, oh, p->sh), c64(cg, p->ph)), w0 = sub(cg, mulc(cg, ow, p->sw), c64(cg, p->pw));
	CgLoop i = cg_for_begin(cg, c64(cg, 0), c64(cg, p->kh), "wi");
	CgLoop j = cg_for_begin(cg, c64(cg, 0), c64(cg, p->kw), "wj");
	LLVMValueRef ih = add(cg, h0, i.i), iw = add(cg, w0, j.i);
	LLVMValueRef ok = LLVMBuildAnd(cg->b, ult(cg, ih, p->h), ult(cg, iw, p->w), "");
	LLVMValueRef at = add(cg, mulc(cg, ih, p->w), iw);
	LLVMValueRef x = cg_load(cg, p->x, add(cg, base, mulc(cg, LLVMBuildSelect(cg->b, ok, at, c64(cg, 0), ""), p->cs)));
	LLVMValueRef b = LLVMBuildLoad2(cg->b, ct, best, "");
	if (want_max) {
		LLVMValueRef first = LLVMBuildNot(cg->b, LLVMBuildLoad2(cg->b, cg->t_i1, have, ""), "");
		LLVMValueRef take = LLVMBuildAnd(cg->b, ok, LLVMBuildOr(cg->b, first, takes_max(cg, x, b), ""), "");
		LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, take, x, b, ""), best);
		LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, take, at, LLVMBuildLoad2(cg->b, cg->t_i64, pos, ""), ""), pos);
		LLVMBuildStore(cg->b, LLVMBuildOr(cg->b, ok, LLVMBuildNot(cg->b, first, ""), ""), have);
	} else {
		LLVMBuildStore(cg->b, LLVMBuildFAdd(cg->b, b, LLVMBuildSelect(cg->b, ok, x, cg_real(cg, ct, 0), ""), ""), best);
		LLVMBuildStore(cg->b, add(cg, LLVMBuildLoad2(cg->b, cg->t_i64, cnt, ""), LLVMBuildZExt(cg->b, ok, cg->t_i64, "")), cnt);
	}
	close2(cg, &j, &i);
	Scan s = {.best = LLVMBuildLoad2(cg->b, ct, best, ""), .pos = LLVMBuildLoad2(cg->b, cg->t_i64, pos, "")};
	LLVMValueRef n = p->clip ? clipped_size(cg, p, h0, w0)
			 : p->include_pad ? c64(cg, p->kh * p->kw) : LLVMBuildLoad2(cg->b, cg->t_i64, cnt, "");
	s.count = LLVMBuildSIToFP(cg->b, n, ct, "");
	s.sum = s.best;
	return s;
}

/* Where one plane starts in x (base) and in the pooled tensor (ybase). */
typedef struct {
	LLVMValueRef base, ybase;
} Planes;

/* The planes of batch image b and channel c (NHWC: interleaved, c the offset). */
static Planes planes_nhwc(Cg *cg, const Pool *p, LLVMValueRef b, LLVMValueRef c)
{
	return (Planes){add(cg, mulc(cg, b, p->h * p->w * p->c), c), add(cg, mulc(cg, b, p->oh * p->ow * p->c), c)};
}

/* The planes of plane index `plane` (NCHW: contiguous). */
static Planes planes_nchw(Cg *cg, const Pool *p, LLVMValueRef plane)
{
	return (Planes){mulc(cg, plane, p->h * p->w), mulc(cg, plane, p->oh * p->ow)};
}

/* Element e of a tensor in the pool's layout whose planes are rows x cols: its planes and its
 * spatial coordinates (GPU work-items take consecutive elements). */
static Planes locate(Cg *cg, const Pool *p, LLVMValueRef e, int64_t rows, int64_t cols, LLVMValueRef *row,
		     LLVMValueRef *col)
{
	LLVMValueRef t = e;
	if (p->nhwc) {
		LLVMValueRef c = LLVMBuildURem(cg->b, e, c64(cg, p->c), "");
		t = LLVMBuildUDiv(cg->b, e, c64(cg, p->c), "");
		*col = LLVMBuildURem(cg->b, t, c64(cg, cols), "");
		t = LLVMBuildUDiv(cg->b, t, c64(cg, cols), "");
		*row = LLVMBuildURem(cg->b, t, c64(cg, rows), "");
		return planes_nhwc(cg, p, LLVMBuildUDiv(cg->b, t, c64(cg, rows), ""), c);
	}
	LLVMValueRef plane = LLVMBuildUDiv(cg->b, e, c64(cg, rows * cols), "");
	t = LLVMBuildURem(cg->b, e, c64(cg, rows * cols), "");
	*row = LLVMBuildUDiv(cg->b, t, c64(cg, cols), ""), *col = LLVMBuildURem(cg->b, t, c64(cg, cols), "");
	return planes_nchw(cg, p, plane);
}

/* y at (oh, ow) of the planes at pl from its window. */
static void pool_elem(Cg *cg, const Node *n, const Pool *p, Planes pl, LLVMValueRef oh, LLVMValueRef ow, PoolOut what)
{
	Scan s = scan_window(cg, p, pl.base, oh, ow, what != POOL_AVG);
	LLVMValueRef v = what == POOL_MAX      ? s.best
			 : what == POOL_ARGMAX ? LLVMBuildTrunc(cg->b, s.pos, cg->t_i32, "")
					       : LLVMBuildFDiv(cg->b, s.sum, s.count, "");
	LLVMValueRef o = add(cg, pl.ybase, mulc(cg, add(cg, mulc(cg, oh, p->ow), ow), p->cs));
	cg_group_epilogue(cg, n->id, o, v);
}

/* GPU forward: one output element per work-item. */
static int64_t lower_pool_gpu(Cg *cg, const Node *n, const Pool *p, PoolOut what)
{
	GpuGroup g;
	int64_t grid;
	LLVMValueRef e = cg_gpu_elements_begin(cg, &g, p->planes * p->oh * p->ow, &grid), oh, ow;
	Planes pl = locate(cg, p, e, p->oh, p->ow, &oh, &ow);
	pool_elem(cg, n, p, pl, oh, ow, what);
	cg_gpu_elements_end(cg, &g);
	return grid;
}

/* Opens the host loops over every (row, col) of a rows x cols plane: NCHW, the work-group's
 * block of planes, then rows and columns; NHWC, its block of (batch, row) pairs, then the row's
 * columns and channels (consecutive addresses innermost). Returns the planes, the row and the
 * column; close with host_end. */
static Planes host_begin(Cg *cg, const Pool *p, int64_t rows, int64_t cols, CgLoop loop[4], LLVMValueRef *row,
			 LLVMValueRef *col, int64_t *grid)
{
	if (!p->nhwc) {
		int64_t per = planes_per_wg(p->planes, p->h * p->w, grid);
		Planes at = planes_nchw(cg, p, planes_begin(cg, per, p->planes, &loop[0], &loop[1]));
		loop[2] = cg_for_begin(cg, c64(cg, 0), c64(cg, rows), "row");
		loop[3] = cg_for_begin(cg, c64(cg, 0), c64(cg, cols), "col");
		*row = loop[2].i, *col = loop[3].i;
		return at;
	}
	int64_t pairs = p->planes / p->c * rows, per = planes_per_wg(pairs, cols * p->c, grid);
	LLVMValueRef r = planes_begin(cg, per, pairs, &loop[0], &loop[1]);
	loop[2] = cg_for_begin(cg, c64(cg, 0), c64(cg, cols), "col");
	loop[3] = cg_for_begin(cg, c64(cg, 0), c64(cg, p->c), "ch");
	*row = LLVMBuildURem(cg->b, r, c64(cg, rows), ""), *col = loop[2].i;
	return planes_nhwc(cg, p, LLVMBuildUDiv(cg->b, r, c64(cg, rows), ""), loop[3].i);
}

static void host_end(Cg *cg, CgLoop loop[4])
{
	close2(cg, &loop[3], &loop[2]);
	close2(cg, &loop[1], &loop[0]);
}

/* Forward and argmax: y at (oh, ow) of each plane from its window. */
static int64_t lower_pool(Cg *cg, const Node *n, PoolOut what)
{
	Pool p = pool_of(cg, n, false);
	if (cg_gpu_paths(cg))
		return lower_pool_gpu(cg, n, &p, what);
	int64_t grid;
	CgLoop loop[4];
	LLVMValueRef oh, ow;
	Planes pl = host_begin(cg, &p, p.oh, p.ow, loop, &oh, &ow, &grid);
	pool_elem(cg, n, &p, pl, oh, ow, what);
	host_end(cg, loop);
	return grid;
}

int64_t cg_lower_max_pool2d(Cg *cg, const Node *n) { return lower_pool(cg, n, POOL_MAX); }
int64_t cg_lower_max_pool2d_argmax(Cg *cg, const Node *n) { return lower_pool(cg, n, POOL_ARGMAX); }
int64_t cg_lower_avg_pool2d(Cg *cg, const Node *n) { return lower_pool(cg, n, POOL_AVG); }

/* The windows along one axis that contain input coordinate i: [lo, hi] (possibly empty). */
static void window_range(Cg *cg, LLVMValueRef i, int64_t k, int64_t s, int64_t pad, int64_t nout, LLVMValueRef *lo,
			 LLVMValueRef *hi)
{
	/* window o covers o*s - pad .. o*s - pad + k - 1 */
	LLVMValueRef t = add(cg, i, c64(cg, pad - k + 1 + s - 1));
	*lo = imax(cg, LLVMBuildSDiv(cg->b, imax(cg, t, c64(cg, 0)), c64(cg, s), ""), c64(cg, 0));
	LLVMValueRef h = LLVMBuildSDiv(cg->b, add(cg, i, c64(cg, pad)), c64(cg, s), "");
	*hi = cg_min_i64(cg, add(cg, h, c64(cg, 1)), c64(cg, nout)); /* exclusive */
}

/* The argmax of window o of the plane whose windows start at ybase, as i64. */
static LLVMValueRef window_argmax(Cg *cg, const Node *n, const Pool *p, LLVMValueRef ybase, LLVMValueRef o)
{
	return LLVMBuildSExt(cg->b, cg_load(cg, n->in[1], add(cg, ybase, mulc(cg, o, p->cs))), cg->t_i64, "");
}

/* Element `at` of a window of the plane at base gets the window's dy where the window's argmax
 * pos names it, else zero (the tiled max gradients: each element is in one window). */
static void store_window_elem(Cg *cg, const Node *n, const Pool *p, LLVMValueRef base, LLVMValueRef at,
			      LLVMValueRef pos, LLVMValueRef dy)
{
	LLVMValueRef mine = LLVMBuildICmp(cg->b, LLVMIntEQ, at, pos, "");
	LLVMValueRef zero = cg_real(cg, cg_compute_type(cg, n->dtype), 0);
	cg_group_epilogue(cg, n->id, add(cg, base, mulc(cg, at, p->cs)), LLVMBuildSelect(cg->b, mine, dy, zero, ""));
}

/* Host max gradient by index when windows do not overlap and have no padding (kernel = stride)
 * but leave rows or columns past the last window (an odd size under 2x2/2; the exact tilings
 * are max_pool2d_tiled_grad): each element belongs to at most one window, so each window writes
 * its own elements once; the uncovered rows and columns get zero first. */
static int64_t lower_max_grad_tiled(Cg *cg, const Node *n, const Pool *p)
{
	LLVMTypeRef ct = cg_compute_type(cg, n->dtype);
	int64_t grid, per = planes_per_wg(p->planes, p->h * p->w, &grid);
	bool uncovered = p->oh * p->sh < p->h || p->ow * p->sw < p->w;
	CgLoop wg, pl;
	Planes first = planes_nchw(cg, p, planes_begin(cg, per, p->planes, &wg, &pl));
	LLVMValueRef base = first.base, ybase = first.ybase;
	if (uncovered) {
		CgLoop z = cg_for_begin(cg, c64(cg, 0), c64(cg, p->h * p->w), "z");
		cg_group_epilogue(cg, n->id, add(cg, base, z.i), cg_real(cg, ct, 0));
		cg_for_end(cg, &z);
	}
	CgLoop oh = cg_for_begin(cg, c64(cg, 0), c64(cg, p->oh), "oh");
	CgLoop ow = cg_for_begin(cg, c64(cg, 0), c64(cg, p->ow), "ow");
	LLVMValueRef o = add(cg, mulc(cg, oh.i, p->ow), ow.i);
	LLVMValueRef g = cg_load(cg, n->in[0], add(cg, ybase, o)), pos = window_argmax(cg, n, p, ybase, o);
	CgLoop i = cg_for_begin(cg, c64(cg, 0), c64(cg, p->kh), "wi");
	CgLoop j = cg_for_begin(cg, c64(cg, 0), c64(cg, p->kw), "wj");
	LLVMValueRef at = add(cg, mulc(cg, add(cg, mulc(cg, oh.i, p->sh), i.i), p->w), add(cg, mulc(cg, ow.i, p->sw), j.i));
	store_window_elem(cg, n, p, base, at, pos, g);
	close2(cg, &j, &i);
	close2(cg, &ow, &oh);
	close2(cg, &pl, &wg);
	return grid;
}

/* Input element `self` (ih * w + iw) of a plane (x at base, dy at ybase) and the windows
 * [ohlo, ohhi) x [owlo, owhi) that contain it. */
typedef struct {
	LLVMValueRef base, ybase, self, ohlo, ohhi, owlo, owhi;
} Gather;

/* The gather of element (ih, iw) of the planes at pl. */
static Gather gather_at(Cg *cg, const Pool *p, Planes pl, LLVMValueRef ih, LLVMValueRef iw)
{
	Gather ga = {.base = pl.base, .ybase = pl.ybase, .self = add(cg, mulc(cg, ih, p->w), iw)};
	window_range(cg, ih, p->kh, p->sh, p->ph, p->oh, &ga.ohlo, &ga.ohhi);
	window_range(cg, iw, p->kw, p->sw, p->pw, p->ow, &ga.owlo, &ga.owhi);
	return ga;
}

/* acc += what window (oh, ow) of the gather sends its element, where `valid` (an i1) holds */
static void send(Cg *cg, const Node *n, const Pool *p, const Gather *ga, LLVMValueRef acc, LLVMValueRef oh,
		 LLVMValueRef ow, LLVMValueRef valid, bool want_max)
{
	LLVMTypeRef ct = cg_compute_type(cg, n->dtype);
	LLVMValueRef o = LLVMBuildSelect(cg->b, valid, add(cg, mulc(cg, oh, p->ow), ow), c64(cg, 0), "");
	LLVMValueRef g = cg_load(cg, n->in[0], add(cg, ga->ybase, mulc(cg, o, p->cs)));
	LLVMValueRef a = LLVMBuildLoad2(cg->b, ct, acc, ""), sum;
	if (want_max) {
		LLVMValueRef mine = LLVMBuildICmp(cg->b, LLVMIntEQ, window_argmax(cg, n, p, ga->ybase, o), ga->self, "");
		valid = LLVMBuildAnd(cg->b, valid, mine, "");
		sum = LLVMBuildFAdd(cg->b, a, g, "");
	} else {
		Scan s = scan_window(cg, p, ga->base, oh, ow, false);
		sum = LLVMBuildFAdd(cg->b, a, LLVMBuildFDiv(cg->b, g, s.count, ""), "");
	}
	LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, valid, sum, a, ""), acc);
}

/* dx[plane][self] = sum over the gather's windows of what they send it (acc: a local), in window
 * order. `unrolled` (GPUs, at most 4 windows an element): every element visits ceil(k/s)
 * windows per axis, those past the gather's range sending nothing, so the code is straight-line:
 * loops over 1 or 2 windows per axis made alexnet's 3x3/2 max-pool gradients issue-bound at a
 * quarter of the memory bandwidth (H200, 2026-11-29). */
static void grad_elem(Cg *cg, const Node *n, const Pool *p, const Gather *ga, LLVMValueRef acc, bool want_max,
		      bool unrolled)
{
	LLVMTypeRef ct = cg_compute_type(cg, n->dtype);
	LLVMBuildStore(cg->b, cg_real(cg, ct, 0), acc);
	if (unrolled) {
		for (int64_t i = 0; i < (p->kh + p->sh - 1) / p->sh; i++)
			for (int64_t j = 0; j < (p->kw + p->sw - 1) / p->sw; j++) {
				LLVMValueRef oh = add(cg, ga->ohlo, c64(cg, i)), ow = add(cg, ga->owlo, c64(cg, j));
				LLVMValueRef valid = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, oh, ga->ohhi, ""),
								  LLVMBuildICmp(cg->b, LLVMIntSLT, ow, ga->owhi, ""), "");
				send(cg, n, p, ga, acc, oh, ow, valid, want_max);
			}
	} else {
		CgLoop oh = cg_for_begin(cg, ga->ohlo, ga->ohhi, "oh");
		CgLoop ow = cg_for_begin(cg, ga->owlo, ga->owhi, "ow");
		send(cg, n, p, ga, acc, oh.i, ow.i, LLVMConstInt(cg->t_i1, 1, 0), want_max);
		close2(cg, &ow, &oh);
	}
	cg_group_epilogue(cg, n->id, add(cg, ga->base, mulc(cg, ga->self, p->cs)), LLVMBuildLoad2(cg->b, ct, acc, ""));
}

/* GPU gradient: one input element per work-item, every case a gather. */
static int64_t lower_pool_grad_gpu(Cg *cg, const Node *n, const Pool *p, bool want_max)
{
	GpuGroup g;
	int64_t grid, hw = p->h * p->w;
	LLVMValueRef acc = cg_local(cg, cg_compute_type(cg, n->dtype), "acc");
	LLVMValueRef e = cg_gpu_elements_begin(cg, &g, p->planes * hw, &grid), ih, iw;
	Planes pl = locate(cg, p, e, p->h, p->w, &ih, &iw);
	Gather ga = gather_at(cg, p, pl, ih, iw);
	int64_t windows = ((p->kh + p->sh - 1) / p->sh) * ((p->kw + p->sw - 1) / p->sw);
	grad_elem(cg, n, p, &ga, acc, want_max, windows <= 4);
	cg_gpu_elements_end(cg, &g);
	return grid;
}

/* Gradient: dx[plane][ih][iw] = sum over the windows containing (ih, iw) of what they send it. */
static int64_t lower_pool_grad(Cg *cg, const Node *n, bool want_max)
{
	Pool p = pool_of(cg, n, true);
	bool tiles = want_max && p.kh == p.sh && p.kw == p.sw && p.ph == 0 && p.pw == 0;
	if (cg_gpu_paths(cg))
		return lower_pool_grad_gpu(cg, n, &p, want_max);
	bool inside = p.oh * p.sh <= p.h && p.ow * p.sw <= p.w; /* ceil mode's last windows are not */
	if (tiles && !p.nhwc && inside)
		return lower_max_grad_tiled(cg, n, &p);
	LLVMValueRef acc = cg_local(cg, cg_compute_type(cg, n->dtype), "acc");
	int64_t grid;
	CgLoop loop[4];
	LLVMValueRef ih, iw;
	Planes pl = host_begin(cg, &p, p.h, p.w, loop, &ih, &iw, &grid);
	Gather ga = gather_at(cg, &p, pl, ih, iw);
	grad_elem(cg, n, &p, &ga, acc, want_max, false);
	host_end(cg, loop);
	return grid;
}

int64_t cg_lower_max_pool2d_grad(Cg *cg, const Node *n) { return lower_pool_grad(cg, n, true); }
int64_t cg_lower_avg_pool2d_grad(Cg *cg, const Node *n) { return lower_pool_grad(cg, n, false); }

/* The first maximum of window (oh, ow) of the planes at base, every element inside the plane (the
 * windows tile it): its position ih * w + iw, straight-line over the kernel's elements. Ties keep
 * the first; a NaN takes over (takes_max, as the argmax picks it). */
static LLVMValueRef tiled_argmax(Cg *cg, const Pool *p, LLVMValueRef base, LLVMValueRef corner)
{
	LLVMValueRef best = NULL, pos = NULL;
	for (int64_t i = 0; i < p->kh; i++)
		for (int64_t j = 0; j < p->kw; j++) {
			LLVMValueRef at = add(cg, corner, c64(cg, i * p->w + j));
			LLVMValueRef x = cg_load(cg, p->x, add(cg, base, mulc(cg, at, p->cs)));
			if (!best) {
				best = x, pos = at;
				continue;
			}
			LLVMValueRef take = takes_max(cg, x, best);
			best = LLVMBuildSelect(cg->b, take, x, best, "");
			pos = LLVMBuildSelect(cg->b, take, at, pos, "");
		}
	return pos;
}

/* Window (oh, ow)'s elements of dx, the windows tiling the plane: its first maximum gets the
 * window's dy, the others zero. */
static void tiled_window_grad(Cg *cg, const Node *n, const Pool *p, Planes pl, LLVMValueRef oh, LLVMValueRef ow)
{
	LLVMValueRef o = add(cg, mulc(cg, oh, p->ow), ow);
	LLVMValueRef dy = cg_load(cg, n->in[0], add(cg, pl.ybase, mulc(cg, o, p->cs)));
	LLVMValueRef corner = add(cg, mulc(cg, mulc(cg, oh, p->sh), p->w), mulc(cg, ow, p->sw));
	LLVMValueRef pos = tiled_argmax(cg, p, pl.base, corner);
	for (int64_t i = 0; i < p->kh; i++)
		for (int64_t j = 0; j < p->kw; j++)
			store_window_elem(cg, n, p, pl.base, add(cg, corner, c64(cg, i * p->w + j)), pos, dy);
}

/* max_pool2d_tiled_grad: one window per GPU work-item (consecutive work-items consecutive windows
 * of the layout), or per innermost host iteration; x is read once, dx written once, and no
 * argmax is stored or read (vgg16's 2x2/2 gradients moved about twice the bytes through the
 * argmax kernel and a gradient that read its i32 per window). */
int64_t cg_lower_max_pool2d_tiled_grad(Cg *cg, const Node *n)
{
	Pool p = pool_of(cg, n, true);
	int64_t grid;
	LLVMValueRef oh, ow;
	if (cg_gpu_paths(cg)) {
		GpuGroup g;
		LLVMValueRef e = cg_gpu_elements_begin(cg, &g, p.planes * p.oh * p.ow, &grid);
		Planes pl = locate(cg, &p, e, p.oh, p.ow, &oh, &ow);
		tiled_window_grad(cg, n, &p, pl, oh, ow);
		cg_gpu_elements_end(cg, &g);
		return grid;
	}
	CgLoop loop[4];
	Planes pl = host_begin(cg, &p, p.oh, p.ow, loop, &oh, &ow, &grid);
	tiled_window_grad(cg, n, &p, pl, oh, ow);
	host_end(cg, loop);
	return grid;
}
