/* lower_conv.c: conv2d, its two gradients and matmul as instances of the GEMM templates
 * (codegen/gemm.h on the host, codegen/gemm_gpu.h on GPUs). The convolutions are implicit GEMMs:
 * their operand emitters gather the im2col matrix while the template packs or stages it, so no
 * im2col buffer exists. The store of each finished element is the group's epilogue
 * (cg_group_epilogue), so elementwise consumers fused after the anchor cost no extra pass. */
#include <stdlib.h>

#include "codegen/cg_util.h"
#include "codegen/gemm_gpu.h"
#include "ir/ops.h"

/* ---- operands ---- */

/* A window gather over planes src[img][chan][h][w]. The operand's two indices are q, which picks
 * (chan, i, j) with i < kh and j < kw, and the position p = (img, r, c) on a grid of gh x gw
 * (img is the GEMM's b unless the positions fold the batch in). The source element is
 *     forward:     row r*sh - ph + i*dh,        column c*sw - pw + j*dw
 *     transposed:  row (r + ph - i*dh) / sh,    column (c + pw - j*dw) / sw   (when exact)
 * and zero outside the plane. */
typedef struct {
	int src;
	int64_t images, chans, h, w;
	int64_t gh, gw;
	int64_t kh, kw, sh, sw, ph, pw, dh, dw;
	bool transposed;
	bool fold_batch;
	bool q_is_row;
	bool nhwc;      /* src is [img][h][w][chan] and q picks (i, j, chan), chan fastest */
	LLVMValueRef taps; /* q's tap table (win_tap_table), or NULL */
} Window;

/* A dense matrix per batch: element (row, col) of batch b = src[b*sb + row*ld + col], or
 * src[b*sb + col*ld + row] when t; its runs are along col (along row when t). */
typedef GemmTensor Dense;

static LLVMValueRef dense_batch(Cg *cg, const Dense *d, LLVMValueRef b, LLVMValueRef idx)
{
	return d->sb ? LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, b, cg_i64(cg, d->sb), ""), idx, "") : idx;
}

/* Where C[b][m][n] goes: out[b*sb + m*sm + n*sn]. */
typedef struct {
	int out;
	int64_t sb, sm, sn;
} OutMap;

static LLVMValueRef c64(Cg *cg, int64_t v) { return cg_i64(cg, v); }
/* v as a constant of like's type (the window's index math runs in i32 or i64, win_index) */
static LLVMValueRef cof(LLVMValueRef like, int64_t v) { return LLVMConstInt(LLVMTypeOf(like), (unsigned long long)v, 1); }
static LLVMValueRef add(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(cg->b, a, b, ""); }
static LLVMValueRef sub(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSub(cg->b, a, b, ""); }
static LLVMValueRef mul(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(cg->b, a, b, ""); }
static LLVMValueRef udiv(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildUDiv(cg->b, a, b, ""); }
static LLVMValueRef urem(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildURem(cg->b, a, b, ""); }
static LLVMValueRef and(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAnd(cg->b, a, b, ""); }
static LLVMValueRef ult(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(cg->b, LLVMIntULT, a, b, ""); }

/* Source coordinate along one axis for grid coordinate r and kernel tap i; *ok when it is inside
 * the plane (extent n). Scalars only (i64, or i32 where win_narrow): the vector path keeps
 * columns unit-strided. */
static LLVMValueRef win_coord(Cg *cg, bool transposed, LLVMValueRef r, LLVMValueRef i, int64_t s, int64_t pad,
			      int64_t dil, int64_t n, LLVMValueRef *ok)
{
	if (!transposed) {
		LLVMValueRef x = add(cg, sub(cg, mul(cg, r, cof(r, s)), cof(r, pad)), mul(cg, i, cof(r, dil)));
		*ok = ult(cg, x, cof(r, n));
		return x;
	}
	LLVMValueRef t = sub(cg, add(cg, r, cof(r, pad)), mul(cg, i, cof(r, dil)));
	LLVMValueRef pos = LLVMBuildICmp(cg->b, LLVMIntSGE, t, cof(r, 0), "");
	if (s == 1) {
		*ok = and(cg, pos, ult(cg, t, cof(r, n)));
		return t;
	}
	LLVMValueRef x = udiv(cg, t, cof(r, s));
	LLVMValueRef exact = LLVMBuildICmp(cg->b, LLVMIntEQ, urem(cg, t, cof(r, s)), cof(r, 0), "");
	*ok = and(cg, and(cg, pos, exact), ult(cg, x, cof(r, n)));
	return x;
}

/* Splits q into the plane's channel and the kernel taps i, j. */
static void win_q(Cg *cg, const Window *w, LLVMValueRef q, LLVMValueRef *chan, LLVMValueRef *i, LLVMValueRef *j)
{
	if (w->nhwc) {
		LLVMValueRef tap = udiv(cg, q, cof(q, w->chans));
		*chan = urem(cg, q, cof(q, w->chans));
		*i = udiv(cg, tap, cof(q, w->kw));
		*j = urem(cg, tap, cof(q, w->kw));
		return;
	}
	LLVMValueRef taps = cof(q, w->kh * w->kw);
	*chan = udiv(cg, q, taps);
	LLVMValueRef ij = urem(cg, q, taps);
	*i = udiv(cg, ij, cof(q, w->kw));
	*j = urem(cg, ij, cof(q, w->kw));
}

static LLVMValueRef win_plane(Cg *cg, const Window *w, LLVMValueRef img, LLVMValueRef chan)
{
	return mul(cg, add(cg, mul(cg, img, cof(img, w->chans)), chan), cof(img, w->h * w->w));
}

/* Element (img, row, col, chan) of an NHWC source. */
static LLVMValueRef win_nhwc_index(Cg *cg, const Window *w, LLVMValueRef img, LLVMValueRef r, LLVMValueRef c,
				   LLVMValueRef chan)
{
	LLVMValueRef pix = add(cg, mul(cg, add(cg, mul(cg, img, cof(img, w->h)), r), cof(img, w->w)), c);
	return add(cg, mul(cg, pix, cof(img, w->chans)), chan);
}

/* ---- tap tables ----
 *
 * Split per element, q -> (chan, i, j) costs the GPU template about 20 instructions (divisions by
 * constants, 64-bit products) for every staged element of every k-block, more than the products
 * it feeds. Where q runs along k and the source coordinates are linear in the tap (forward
 * windows; transposed ones of stride 1), the split is a table made at compile time instead: entry q
 * holds the tap's offset from the position's origin in source elements (int32, low half), and its
 * row and column offsets (int16 each, above), one 8-byte load that the lanes of a warp at the same
 * k share. The position's part is invariant across k-blocks: LLVM hoists it out of the loop. */

/* A compile-time table of k entries, entry(ctx, q) each, private to the kernel and named after
 * what it splits and its source node. */
static LLVMValueRef k_table(Cg *cg, const char *what, int src, int64_t k, int64_t (*entry)(const void *, int64_t),
			    const void *ctx)
{
	int64_t *v = malloc((size_t)k * sizeof *v);
	if (!v)
		CG_FAIL("out of memory for a table of %lld entries", (long long)k);
	for (int64_t q = 0; q < k; q++)
		v[q] = entry(ctx, q);
	char name[32];
	snprintf(name, sizeof name, "%s%d", what, src);
	LLVMValueRef t = cg_const_table(cg, name, v, k);
	free(v);
	return t;
}

/* Tap q of window w: its offset from the position's origin (int32, low half), its row and column
 * offsets (int16 each, above). */
static int64_t tap_entry(const void *ctx, int64_t q)
{
	const Window *w = ctx;
	int64_t chan, i, j;
	if (w->nhwc)
		chan = q % w->chans, i = q / w->chans / w->kw, j = q / w->chans % w->kw;
	else
		chan = q / (w->kh * w->kw), i = q % (w->kh * w->kw) / w->kw, j = q % w->kw;
	int64_t di = (w->transposed ? -i : i) * w->dh, dj = (w->transposed ? -j : j) * w->dw;
	int64_t delta = w->nhwc ? (di * w->w + dj) * w->chans + chan : chan * w->h * w->w + di * w->w + dj;
	return (int64_t)((uint64_t)(uint32_t)(int32_t)delta | (uint64_t)(uint16_t)(int16_t)di << 32 |
			 (uint64_t)(uint16_t)(int16_t)dj << 48);
}

/* Gives w a tap table when it pays and fits: a GPU template, q along k, more than one tap (a 1 x 1
 * window's q is its channel: nothing to divide), taps linear in the coordinates, offsets within the
 * entry's fields. */
static void win_tap_table(Cg *cg, Window *w, int64_t k)
{
	bool linear = !w->transposed || (w->sh == 1 && w->sw == 1);
	/* i32 indices: every element of the source, and every origin (padding can put it before
	 * element 0 or past the end by a row and a column) */
	int64_t numel = shape_numel(&cg->g->node[w->src].shape), margin = (w->ph + w->h) * w->w + w->pw + w->w;
	if (!cg_gpu_paths(cg) || w->kh * w->kw == 1 || !linear || numel + margin * (w->nhwc ? w->chans : 1) >= INT32_MAX ||
	    w->kh * w->dh >= INT16_MAX || w->kw * w->dw >= INT16_MAX || k != w->chans * w->kh * w->kw)
		return;
	w->taps = k_table(cg, "taps", w->src, k, tap_entry, w);
}

/* The source index of element (q, p) through the tap table (0 outside the plane; *ok whether it
 * is inside): the position's origin (row r0, column c0 of the source, element index origin) plus
 * the tap's entry. The arithmetic is i32 (win_tap_table checked that the source's indices fit):
 * half the instructions of i64 on GPUs. */
static LLVMValueRef win_index_tabled(Cg *cg, const Window *w, LLVMValueRef img, LLVMValueRef p, LLVMValueRef q,
				     LLVMValueRef *ok)
{
	LLVMTypeRef i32 = cg->t_i32;
#define C32(v) cg_i32(cg, v)
	img = LLVMBuildTrunc(cg->b, img, i32, "");
	p = LLVMBuildTrunc(cg->b, p, i32, "");
	LLVMValueRef r = udiv(cg, p, C32(w->gw)), c = urem(cg, p, C32(w->gw));
	LLVMValueRef r0 = w->transposed ? add(cg, r, C32(w->ph)) : sub(cg, mul(cg, r, C32(w->sh)), C32(w->ph));
	LLVMValueRef c0 = w->transposed ? add(cg, c, C32(w->pw)) : sub(cg, mul(cg, c, C32(w->sw)), C32(w->pw));
	LLVMValueRef origin = w->nhwc ? mul(cg, add(cg, mul(cg, add(cg, mul(cg, img, C32(w->h)), r0), C32(w->w)), c0),
					    C32(w->chans))
				      : add(cg, mul(cg, img, C32(w->chans * w->h * w->w)), add(cg, mul(cg, r0, C32(w->w)), c0));
	LLVMValueRef entry = cg_table_load(cg, w->taps, q);
	/* the entry's fields (tap_entry): offset, row offset, column offset, sign-extended to i32 */
	static const int shift[3] = {0, 32, 48}, bits[3] = {32, 16, 16};
	LLVMValueRef field[3];
	for (int f = 0; f < 3; f++) {
		LLVMValueRef x = LLVMBuildLShr(cg->b, entry, c64(cg, shift[f]), "");
		field[f] = LLVMBuildSExt(cg->b, LLVMBuildTrunc(cg->b, x, LLVMIntTypeInContext(cg->ctx, (unsigned)bits[f]), ""),
					 i32, "");
	}
	LLVMValueRef sr = add(cg, r0, field[1]), sc = add(cg, c0, field[2]);
	*ok = and(cg, ult(cg, sr, C32(w->h)), ult(cg, sc, C32(w->w)));
	LLVMValueRef idx = LLVMBuildSExt(cg->b, add(cg, origin, field[0]), cg->t_i64, "");
#undef C32
	return LLVMBuildSelect(cg->b, *ok, idx, c64(cg, 0), "");
}

/* Whether the window's index math fits i32: every source element, position and q (with a
 * tile's overrun past the ends) below 2^30. In i32 the gathers of the weight gradients (q along n,
 * no tap table) took 9% less time on an H100 (vgg16 bf16, docs/performance.md 2026-12-07): the
 * 64-bit products and sums are several instructions each, and those kernels issue about as many
 * address instructions per k-block as their products take cycles. */
static bool win_narrow(const Window *w)
{
	int64_t most = (int64_t)1 << 30;
	return w->images * w->chans * w->h * w->w < most && w->images * w->gh * w->gw < most &&
	       w->chans * w->kh * w->kw < most;
}

/* The source index of the window's element (row, col) of batch b (0 outside the plane; *ok
 * whether it is inside). */
static LLVMValueRef win_index(Cg *cg, const Window *w, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col,
			      LLVMValueRef *ok)
{
	LLVMValueRef q = w->q_is_row ? row : col, p = w->q_is_row ? col : row;
	if (w->taps) {
		LLVMValueRef img = b;
		if (w->fold_batch) {
			img = udiv(cg, p, c64(cg, w->gh * w->gw));
			p = urem(cg, p, c64(cg, w->gh * w->gw));
		}
		return win_index_tabled(cg, w, img, p, q, ok);
	}
	bool narrow = win_narrow(w);
	if (narrow) {
		b = LLVMBuildTrunc(cg->b, b, cg->t_i32, "");
		p = LLVMBuildTrunc(cg->b, p, cg->t_i32, "");
		q = LLVMBuildTrunc(cg->b, q, cg->t_i32, "");
	}
	LLVMValueRef chan, i, j, img = b, okr, okc;
	win_q(cg, w, q, &chan, &i, &j);
	if (w->fold_batch) {
		img = udiv(cg, p, cof(p, w->gh * w->gw));
		p = urem(cg, p, cof(p, w->gh * w->gw));
	}
	LLVMValueRef sr = win_coord(cg, w->transposed, udiv(cg, p, cof(p, w->gw)), i, w->sh, w->ph, w->dh, w->h, &okr);
	LLVMValueRef sc = win_coord(cg, w->transposed, urem(cg, p, cof(p, w->gw)), j, w->sw, w->pw, w->dw, w->w, &okc);
	*ok = and(cg, okr, okc);
	LLVMValueRef idx = w->nhwc ? win_nhwc_index(cg, w, img, sr, sc, chan)
				   : add(cg, win_plane(cg, w, img, chan), add(cg, mul(cg, sr, cof(sr, w->w)), sc));
	if (narrow)
		idx = LLVMBuildSExt(cg->b, idx, cg->t_i64, "");
	return LLVMBuildSelect(cg->b, *ok, idx, c64(cg, 0), "");
}

static LLVMValueRef win_elem(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col)
{
	const Window *w = op->ctx;
	LLVMValueRef ok, v = cg_load(cg, w->src, win_index(cg, w, b, row, col, &ok));
	return LLVMBuildSelect(cg->b, ok, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

/* Where the run of an NHWC window's channels from (row, col) starts (win_runs: all of it one
 * pixel's), and whether that pixel lies inside the plane. */
static LLVMValueRef win_at(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col,
			   LLVMValueRef *inside)
{
	const Window *w = op->ctx;
	return cg_ptr(cg, w->src, win_index(cg, w, b, row, col, inside));
}

/* `lanes` elements of node id from ptr, aligned to their size, as the compute type: one load. */
static LLVMValueRef run_load(Cg *cg, int id, LLVMValueRef ptr, int lanes)
{
	DType dt = cg->g->node[id].dtype;
	LLVMTypeRef st = cg_storage_type(cg, dt), ct = cg_compute_type(cg, dt);
	LLVMValueRef v = LLVMBuildLoad2(cg->b, LLVMVectorType(st, (unsigned)lanes), ptr, "");
	LLVMSetAlignment(v, (unsigned)(lanes * dtype_size(dt)));
	return st == ct ? v : LLVMBuildFPExt(cg->b, v, LLVMVectorType(ct, (unsigned)lanes), "");
}

static LLVMValueRef win_run(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col,
			    int lanes)
{
	LLVMValueRef inside, v = run_load(cg, ((const Window *)op->ctx)->src, win_at(cg, op, b, row, col, &inside), lanes);
	return LLVMBuildSelect(cg->b, inside, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

static LLVMValueRef splat32(Cg *cg, LLVMValueRef v, int lanes)
{
	return cg_gemm_splat(cg, LLVMBuildTrunc(cg->b, v, cg->t_i32, ""), lanes);
}

/* How many runs of run_len consecutive source elements lanes consecutive lanes can touch (the
 * first run may start anywhere inside one), at most one per lane. */
static int64_t runs_over(int lanes, int64_t run_len)
{
	int64_t n = (lanes - 1 + run_len - 1) / run_len + 1;
	return n > lanes ? lanes : n;
}

/* Lanes l < nvalid (a partial vector at the end of a row). */
static LLVMValueRef lanes_below(Cg *cg, LLVMValueRef nvalid, int lanes)
{
	return LLVMBuildICmp(cg->b, LLVMIntSLT, cg_gemm_iota(cg, lanes), cg_gemm_splat(cg, nvalid, lanes), "");
}

/* The vector path (unit column step): lanes p0 + l split into runs along grid rows; each run is
 * contiguous in the source, so it is one masked load. Lane arithmetic is i32 (checked to fit). */
static LLVMValueRef win_vec(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef q, LLVMValueRef p0,
			    LLVMValueRef nvalid, int lanes)
{
	const Window *w = op->ctx;
	LLVMTypeRef vi = LLVMVectorType(cg->t_i32, (unsigned)lanes);
	LLVMValueRef chan, i, j;
	win_q(cg, w, q, &chan, &i, &j);
	LLVMValueRef iota = LLVMBuildTrunc(cg->b, cg_gemm_iota(cg, lanes), vi, "");
	LLVMValueRef pv = add(cg, splat32(cg, p0, lanes), iota);
	LLVMValueRef gw = splat32(cg, c64(cg, w->gw), lanes);
	LLVMValueRef grow = udiv(cg, pv, gw);
	LLVMValueRef col = sub(cg, pv, mul(cg, grow, gw));
	/* column offset of tap j: c + off is the source column */
	LLVMValueRef coff = w->transposed ? sub(cg, c64(cg, w->pw), mul(cg, j, c64(cg, w->dw)))
					  : sub(cg, mul(cg, j, c64(cg, w->dw)), c64(cg, w->pw));
	LLVMValueRef colok = ult(cg, add(cg, col, splat32(cg, coff, lanes)), splat32(cg, c64(cg, w->w), lanes));
	LLVMValueRef lane_ok = lanes_below(cg, nvalid, lanes);
	LLVMValueRef base_ok = and(cg, colok, lane_ok);
	LLVMValueRef g0 = udiv(cg, p0, c64(cg, w->gw));
	int64_t nseg = runs_over(lanes, w->gw);
	LLVMValueRef v = LLVMConstNull(LLVMVectorType(cg_compute_type(cg, cg->g->node[w->src].dtype), (unsigned)lanes));
	for (int64_t s = 0; s < nseg; s++) {
		LLVMValueRef gr = add(cg, g0, c64(cg, s)), img = b, r = gr, okr;
		if (w->fold_batch) {
			img = udiv(cg, gr, c64(cg, w->gh));
			r = urem(cg, gr, c64(cg, w->gh));
		}
		LLVMValueRef sr = win_coord(cg, w->transposed, r, i, w->sh, w->ph, w->dh, w->h, &okr);
		LLVMValueRef in_row = LLVMBuildICmp(cg->b, LLVMIntEQ, grow, splat32(cg, gr, lanes), "");
		LLVMValueRef mask = and(cg, and(cg, in_row, base_ok), cg_gemm_splat(cg, okr, lanes));
		/* lane l of this run reads source column p0 + l - gr*gw + coff */
		LLVMValueRef c0 = add(cg, sub(cg, p0, mul(cg, gr, c64(cg, w->gw))), coff);
		LLVMValueRef start = add(cg, win_plane(cg, w, img, chan), add(cg, mul(cg, sr, c64(cg, w->w)), c0));
		start = LLVMBuildSelect(cg->b, okr, start, c64(cg, 0), "");
		v = cg_gemm_masked_load(cg, w->src, start, mask, lanes, v);
	}
	return v;
}

/* The NHWC vector path along q (p fixed): lanes q0 + l split into runs by kernel tap; within a tap
 * the channels are contiguous in the source, so each run is one masked load. */
static LLVMValueRef win_nhwc_vec(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef p, LLVMValueRef q0,
				 LLVMValueRef nvalid, int lanes)
{
	const Window *w = op->ctx;
	LLVMTypeRef vi = LLVMVectorType(cg->t_i32, (unsigned)lanes);
	LLVMValueRef img = b;
	if (w->fold_batch) {
		img = udiv(cg, p, c64(cg, w->gh * w->gw));
		p = urem(cg, p, c64(cg, w->gh * w->gw));
	}
	LLVMValueRef r = udiv(cg, p, c64(cg, w->gw)), c = urem(cg, p, c64(cg, w->gw));
	LLVMValueRef qv = add(cg, splat32(cg, q0, lanes), LLVMBuildTrunc(cg->b, cg_gemm_iota(cg, lanes), vi, ""));
	LLVMValueRef lane_tap = udiv(cg, qv, splat32(cg, c64(cg, w->chans), lanes));
	LLVMValueRef lane_ok = lanes_below(cg, nvalid, lanes);
	LLVMValueRef tap0 = udiv(cg, q0, c64(cg, w->chans));
	int64_t nseg = runs_over(lanes, w->chans);
	LLVMValueRef v = LLVMConstNull(LLVMVectorType(cg_compute_type(cg, cg->g->node[w->src].dtype), (unsigned)lanes));
	for (int64_t s = 0; s < nseg; s++) {
		LLVMValueRef tap = add(cg, tap0, c64(cg, s)), okr, okc;
		LLVMValueRef i = udiv(cg, tap, c64(cg, w->kw)), j = urem(cg, tap, c64(cg, w->kw));
		LLVMValueRef sr = win_coord(cg, w->transposed, r, i, w->sh, w->ph, w->dh, w->h, &okr);
		LLVMValueRef sc = win_coord(cg, w->transposed, c, j, w->sw, w->pw, w->dw, w->w, &okc);
		LLVMValueRef ok = and(cg, and(cg, okr, okc), ult(cg, tap, c64(cg, w->kh * w->kw)));
		LLVMValueRef in_tap = LLVMBuildICmp(cg->b, LLVMIntEQ, lane_tap, splat32(cg, tap, lanes), "");
		LLVMValueRef mask = and(cg, and(cg, in_tap, lane_ok), cg_gemm_splat(cg, ok, lanes));
		/* lane l of this run reads channel q0 + l - tap*chans of pixel (sr, sc) */
		LLVMValueRef chan0 = sub(cg, q0, mul(cg, tap, c64(cg, w->chans)));
		LLVMValueRef start = win_nhwc_index(cg, w, img, sr, sc, chan0);
		start = LLVMBuildSelect(cg->b, ok, start, c64(cg, 0), "");
		v = cg_gemm_masked_load(cg, w->src, start, mask, lanes, v);
	}
	return v;
}

/* The index of (row, col) of batch b in d's source. */
static LLVMValueRef dense_index(Cg *cg, const Dense *d, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col)
{
	LLVMValueRef idx = d->t ? add(cg, mul(cg, col, c64(cg, d->ld)), row) : add(cg, mul(cg, row, c64(cg, d->ld)), col);
	return dense_batch(cg, d, b, idx);
}

static LLVMValueRef dense_elem(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col)
{
	const Dense *d = op->ctx;
	return cg_load(cg, d->src, dense_index(cg, d, b, row, col));
}

static LLVMValueRef dense_vec(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef fixed, LLVMValueRef p0,
			      LLVMValueRef nvalid, int lanes)
{
	const Dense *d = op->ctx;
	LLVMValueRef mask = LLVMBuildICmp(cg->b, LLVMIntSLT, cg_gemm_iota(cg, lanes), cg_gemm_splat(cg, nvalid, lanes), "");
	LLVMValueRef start = dense_batch(cg, d, b, add(cg, mul(cg, fixed, c64(cg, d->ld)), p0));
	LLVMTypeRef ct = cg_compute_type(cg, cg->g->node[d->src].dtype);
	return cg_gemm_masked_load(cg, d->src, start, mask, lanes, LLVMConstNull(LLVMVectorType(ct, (unsigned)lanes)));
}

static LLVMValueRef dense_at(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col,
			     LLVMValueRef *inside)
{
	(void)inside; /* every run lies inside */
	const Dense *d = op->ctx;
	return cg_ptr(cg, d->src, dense_index(cg, d, b, row, col));
}

static LLVMValueRef dense_run(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col,
			      int lanes)
{
	return run_load(cg, ((const Dense *)op->ctx)->src, dense_at(cg, op, b, row, col, NULL), lanes);
}

/* The longest aligned run of node id's elements (GemmOperand.runs): up to 16 bytes, a power of two
 * of elements that divides the strides `pitch` and `stride` (the operand's row pitch and batch
 * stride) and the tensor's arena offset (the arena itself is aligned further); 0 where the source
 * has no storage of its own (a fused producer, a constant). */
static int src_runs(Cg *cg, int id, int64_t pitch, int64_t stride)
{
	const Node *src = &cg->g->node[id];
	if (cg_in_group(cg, id) || src->op == OP_const || src->offset < 0)
		return 0;
	int64_t esize = (int64_t)dtype_size(src->dtype), lanes = 16 / esize;
	while (lanes > 1 && (pitch % lanes || stride % lanes || src->offset % (lanes * esize)))
		lanes /= 2;
	return lanes > 1 ? (int)lanes : 0;
}

static int dense_runs(Cg *cg, const Dense *d) { return src_runs(cg, d->src, d->ld, d->sb); }

/* A dense operand: elements, vectors for the host template, aligned runs for the GPU one. */
static GemmOperand dense_operand(Cg *cg, const Dense *d, bool along_k, bool vec)
{
	return (GemmOperand){.elem = dense_elem, .vec = vec ? dense_vec : NULL, .run = dense_run,
			     .runs = dense_runs(cg, d), .at = dense_at, .stored = cg->g->node[d->src].dtype,
			     .along_k = along_k, .tensor = d, .ctx = d};
}

static void out_store(Cg *cg, const GemmSpec *s, LLVMValueRef b, LLVMValueRef m, LLVMValueRef n, LLVMValueRef v)
{
	const OutMap *o = s->ctx;
	LLVMValueRef idx = add(cg, add(cg, mul(cg, b, c64(cg, o->sb)), mul(cg, m, c64(cg, o->sm))),
			       mul(cg, n, c64(cg, o->sn)));
	cg_group_epilogue(cg, o->out, idx, v);
}

/* ---- lowerings ---- */

/* The tiled GPU template on GPUs (split over K where the anchor n has few tiles and a long K),
 * the packed CPU one on the host. */
static int64_t gemm(Cg *cg, const GemmSpec *s, const Node *n)
{
	if (!cg_gpu_paths(cg))
		return cg_gemm(cg, s);
	GpuSplitK sk = cg_gemm_gpu_split(cg, n, s);
	return sk.slices > 1 ? cg_gemm_gpu_split_k(cg, s, &sk) : cg_gemm_gpu(cg, s);
}

static const Shape *shape_of(Cg *cg, const Node *n, int i) { return &cg->g->node[n->in[i]].shape; }

/* The window of convolution n (any of the three ops) over planes of node src. */
static Window conv_window(const Node *n, int src, const Shape *plane, int64_t kh, int64_t kw)
{
	ConvGeom c = ir_conv_geom(n);
	Window w = {.src = src, .images = plane->dim[0], .chans = plane->dim[1], .h = plane->dim[2], .w = plane->dim[3], .kh = kh, .kw = kw,
		    .sh = c.sh, .sw = c.sw, .ph = c.ph, .pw = c.pw, .dh = c.dh, .dw = c.dw};
	return w;
}

/* A window that maps grid position (r, c) onto source element (r, c) (one tap, unit strides, no
 * padding, a grid as large as the plane) is a reshape: seen as one row of h*w columns, its vector
 * path loads runs as long as a plane instead of a row, and its index splits divide once. Called
 * once the grid is set, before the tap table. */
static void win_flatten_identity(Window *w)
{
	if (w->nhwc || w->kh != 1 || w->kw != 1 || w->sh != 1 || w->sw != 1 || w->ph || w->pw || w->gh != w->h ||
	    w->gw != w->w)
		return;
	w->w *= w->h, w->gw *= w->gh;
	w->h = w->gh = 1;
}

/* The vector path needs unit column steps and positions that fit i32 lanes. */
static GemmVecFn win_vec_for(const Window *w, int64_t positions)
{
	return w->sw == 1 && positions + 64 < INT32_MAX ? win_vec : NULL;
}

/* The half type both of n's operands have under --precision fp16 or bf16 (which ask for half
 * products), or DT_F32. */
static DType half_operands(Cg *cg, const Node *n)
{
	PrecisionKind p = cg->g->train.precision;
	if (n->nin < 2 || (p != PREC_FP16 && p != PREC_BF16))
		return DT_F32;
	DType a = cg->g->node[n->in[0]].dtype, b = cg->g->node[n->in[1]].dtype;
	return a == b && (a == DT_F16 || a == DT_BF16) ? a : DT_F32;
}

static GemmSpec spec(Cg *cg, const Node *n, int64_t batch, int64_t m, int64_t nn, int64_t k, const OutMap *o)
{
	GemmSpec s = {.batch = batch, .m = m, .n = nn, .k = k, .epilogue = out_store, .ctx = o,
		      .type = cg_compute_type(cg, n->dtype), .tf32 = cg->g->train.precision == PREC_TF32,
		      .half = half_operands(cg, n), .epilogue_loads = cg_group_reads_alongside(cg, o->out)};
	return s;
}

/* ---- NHWC: positions are GEMM rows, channels its columns (layout LAYOUT_NHWC) ---- */

/* An NHWC window over node src (shape [N, H, W, C]) whose q runs along the columns. */
static Window nhwc_window(const Node *n, int src, const Shape *s, int64_t kh, int64_t kw, int64_t gh, int64_t gw)
{
	ConvGeom c = ir_conv_geom(n);
	Window w = {.src = src, .images = s->dim[0], .chans = s->dim[3], .h = s->dim[1], .w = s->dim[2], .gh = gh, .gw = gw, .kh = kh,
		    .kw = kw, .sh = c.sh, .sw = c.sw, .ph = c.ph, .pw = c.pw, .dh = c.dh, .dw = c.dw,
		    .fold_batch = true, .nhwc = true};
	return w;
}

/* Whether the GEMM's matrix path stages and copies runs of its window operands: half operands, and
 * float32 ones of TF32 products (sm_90's wgmma copies them, codegen/gemm_gpu.c). */
static bool matrix_runs(const GemmSpec *s) { return s->half != DT_F32 || s->tf32; }

/* op with aligned runs of node src's elements (runs that `pitch` elements apart stay aligned),
 * read by run and addressed by at, where the GEMM's matrix path takes them (matrix_runs); op as it
 * is otherwise. */
static GemmOperand with_runs(Cg *cg, GemmOperand op, int src, int64_t pitch, const GemmSpec *s, GemmRunFn run, GemmAtFn at)
{
	op.runs = matrix_runs(s) ? src_runs(cg, src, pitch, 0) : 0;
	if (op.runs) {
		op.run = run;
		op.at = at;
		op.stored = cg->g->node[src].dtype;
	}
	return op;
}

/* Runs along channels pay for a vector load only when they are long enough. */
static GemmVecFn nhwc_vec_for(const Window *w) { return w->chans >= 8 ? win_nhwc_vec : NULL; }

/* Channel chan of source pixel (img, y, x) of a window's NHWC source (GemmRows.at). */
static LLVMValueRef rows_at(Cg *cg, const GemmOperand *op, LLVMValueRef img, LLVMValueRef y, LLVMValueRef x,
			    LLVMValueRef chan)
{
	const Window *w = op->ctx;
	return cg_ptr(cg, w->src, win_nhwc_index(cg, w, img, y, x, chan));
}

/* Fills r with window w as padded rows (GemmRows) where it is one: stride 1 (forward or
 * transposed), q along k, a few taps, the batch folded into the positions. */
static const GemmRows *nhwc_rows(const Window *w, GemmRows *r)
{
	int taps = (int)(w->kh * w->kw);
	if (w->sh != 1 || w->sw != 1 || w->q_is_row || !w->fold_batch || taps > GEMM_ROWS_MAX_TAPS)
		return NULL;
	*r = (GemmRows){.chans = w->chans, .h = w->h, .w = w->w, .gh = w->gh, .gw = w->gw, .taps = taps, .at = rows_at};
	int64_t dy1 = INT64_MIN, dx1 = INT64_MIN;
	r->dy0 = r->dx0 = INT64_MAX;
	for (int t = 0; t < taps; t++) {
		int64_t i = t / w->kw, j = t % w->kw;
		r->dy[t] = w->transposed ? w->ph - i * w->dh : i * w->dh - w->ph;
		r->dx[t] = w->transposed ? w->pw - j * w->dw : j * w->dw - w->pw;
		r->dy0 = r->dy[t] < r->dy0 ? r->dy[t] : r->dy0, dy1 = r->dy[t] > dy1 ? r->dy[t] : dy1;
		r->dx0 = r->dx[t] < r->dx0 ? r->dx[t] : r->dx0, dx1 = r->dx[t] > dx1 ? r->dx[t] : dx1;
	}
	r->ph = w->gh + dy1 - r->dy0;
	r->pw = w->gw + dx1 - r->dx0;
	return r;
}

/* An NHWC window operand (q along k, or along n): elements, vectors for the host template, and
 * where the GEMM's matrix path takes them (matrix_runs: it stages runs, gemm_gpu.c) aligned runs
 * of one pixel's channels, which a channel count that is a multiple of the run keeps inside
 * one tap: one vector load or cp.async each, zeros where the pixel lies in the padding. With
 * rows (A's windows only), the window as padded rows too where it is one. */
static GemmOperand nhwc_operand(Cg *cg, const Window *w, bool along_k, const GemmSpec *s, GemmRows *rows)
{
	GemmOperand op = {.elem = win_elem, .vec = nhwc_vec_for(w), .along_k = along_k, .ctx = w};
	op = with_runs(cg, op, w->src, w->chans, s, win_run, win_at);
	if (rows && op.runs) {
		op.rows = nhwc_rows(w, rows);
		if (op.rows)
			rows->images = cg->g->node[w->src].shape.dim[0];
	}
	return op;
}

/* y (N*Ho*Wo x Cout) = window(x) (N*Ho*Wo x KH*KW*Cin) * w^T, w [Cout, KH, KW, Cin] */
static int64_t lower_conv2d_nhwc(Cg *cg, const Node *n)
{
	const Shape *xs = shape_of(cg, n, 0), *ws = shape_of(cg, n, 1), *ys = &n->shape;
	int64_t kk = ws->dim[1] * ws->dim[2] * ws->dim[3], pos = ys->dim[0] * ys->dim[1] * ys->dim[2];
	Window x = nhwc_window(n, n->in[0], xs, ws->dim[1], ws->dim[2], ys->dim[1], ys->dim[2]);
	win_tap_table(cg, &x, kk);
	Dense w = {.src = n->in[1], .ld = kk, .t = true};
	OutMap o = {.out = n->id, .sm = ys->dim[3], .sn = 1};
	GemmSpec s = spec(cg, n, 1, pos, ys->dim[3], kk, &o);
	GemmRows rows;
	s.a = nhwc_operand(cg, &x, true, &s, &rows);
	s.b = dense_operand(cg, &w, true, true);
	return gemm(cg, &s, n);
}

/* B(q, ci) of grad_input: q = (i, j, co), co fastest, reads w[co][i][j][ci]. */
typedef struct {
	int src;
	int64_t cout, cin, taps;
} WeightNhwc;

/* Where row q of B starts in w: (co * KH*KW + tap) * Cin. */
static LLVMValueRef wn_start(Cg *cg, const WeightNhwc *w, LLVMValueRef q)
{
	LLVMValueRef tap = udiv(cg, q, c64(cg, w->cout)), co = urem(cg, q, c64(cg, w->cout));
	return mul(cg, add(cg, mul(cg, co, c64(cg, w->taps)), tap), c64(cg, w->cin));
}

static LLVMValueRef wn_elem(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col)
{
	return cg_load(cg, ((const WeightNhwc *)op->ctx)->src, add(cg, wn_start(cg, op->ctx, row), col));
}

static LLVMValueRef wn_vec(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef q, LLVMValueRef p0,
			   LLVMValueRef nvalid, int lanes)
{
	const WeightNhwc *w = op->ctx;
	LLVMValueRef mask = LLVMBuildICmp(cg->b, LLVMIntSLT, cg_gemm_iota(cg, lanes), cg_gemm_splat(cg, nvalid, lanes), "");
	LLVMTypeRef ct = cg_compute_type(cg, cg->g->node[w->src].dtype);
	return cg_gemm_masked_load(cg, w->src, add(cg, wn_start(cg, w, q), p0), mask, lanes,
				   LLVMConstNull(LLVMVectorType(ct, (unsigned)lanes)));
}

/* Row q of B from column ci on. */
static LLVMValueRef wn_at(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col,
			  LLVMValueRef *inside)
{
	(void)inside; /* every run lies inside */
	const WeightNhwc *w = op->ctx;
	return cg_ptr(cg, w->src, add(cg, wn_start(cg, w, row), col));
}

static LLVMValueRef wn_run(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col,
			   int lanes)
{
	return run_load(cg, ((const WeightNhwc *)op->ctx)->src, wn_at(cg, op, b, row, col, NULL), lanes);
}

/* grad_input's B: elements, vectors, and for the matrix path runs along ci (as nhwc_operand's). */
static GemmOperand wn_operand(Cg *cg, const WeightNhwc *w, const GemmSpec *s)
{
	GemmOperand op = {.elem = wn_elem, .vec = wn_vec, .ctx = w};
	return with_runs(cg, op, w->src, w->cin, s, wn_run, wn_at);
}

/* dx (N*H*W x Cin) = transposed-window(dy) (N*H*W x KH*KW*Cout) * B, B(q, ci) = w[co][i][j][ci] */
static int64_t lower_conv2d_grad_input_nhwc(Cg *cg, const Node *n)
{
	const Shape *dys = shape_of(cg, n, 0), *ws = shape_of(cg, n, 1), *xs = &n->shape;
	int64_t taps = ws->dim[1] * ws->dim[2], pos = xs->dim[0] * xs->dim[1] * xs->dim[2];
	Window dy = nhwc_window(n, n->in[0], dys, ws->dim[1], ws->dim[2], xs->dim[1], xs->dim[2]);
	dy.transposed = true;
	win_tap_table(cg, &dy, taps * ws->dim[0]);
	WeightNhwc w = {.src = n->in[1], .cout = ws->dim[0], .cin = ws->dim[3], .taps = taps};
	OutMap o = {.out = n->id, .sm = xs->dim[3], .sn = 1};
	GemmSpec s = spec(cg, n, 1, pos, xs->dim[3], taps * ws->dim[0], &o);
	GemmRows rows;
	s.a = nhwc_operand(cg, &dy, true, &s, &rows);
	s.b = wn_operand(cg, &w, &s);
	return gemm(cg, &s, n);
}

/* dw (Cout x KH*KW*Cin) = dy^T (Cout x N*Ho*Wo) * window(x) (N*Ho*Wo x KH*KW*Cin) */
static int64_t lower_conv2d_grad_weight_nhwc(Cg *cg, const Node *n)
{
	const Shape *dys = shape_of(cg, n, 0), *xs = shape_of(cg, n, 1), *ws = &n->shape;
	int64_t q = ws->dim[1] * ws->dim[2] * ws->dim[3], pos = dys->dim[0] * dys->dim[1] * dys->dim[2];
	Window x = nhwc_window(n, n->in[1], xs, ws->dim[1], ws->dim[2], dys->dim[1], dys->dim[2]);
	Dense dy = {.src = n->in[0], .ld = dys->dim[3], .t = true};
	OutMap o = {.out = n->id, .sm = q, .sn = 1};
	GemmSpec s = spec(cg, n, 1, ws->dim[0], q, pos, &o);
	s.a = dense_operand(cg, &dy, false, false);
	s.b = nhwc_operand(cg, &x, false, &s, NULL);
	return gemm(cg, &s, n);
}

/* y[b] (Cout x Ho*Wo) = w (Cout x Cin*KH*KW) * im2col(x[b]) */
int64_t cg_lower_conv2d(Cg *cg, const Node *n)
{
	if (ir_layout(n) == LAYOUT_NHWC)
		return lower_conv2d_nhwc(cg, n);
	const Shape *xs = shape_of(cg, n, 0), *ws = shape_of(cg, n, 1), *ys = &n->shape;
	int64_t kk = ws->dim[1] * ws->dim[2] * ws->dim[3], p = ys->dim[2] * ys->dim[3];
	Window x = conv_window(n, n->in[0], xs, ws->dim[2], ws->dim[3]);
	x.gh = ys->dim[2], x.gw = ys->dim[3], x.q_is_row = true;
	win_flatten_identity(&x);
	win_tap_table(cg, &x, kk);
	Dense w = {.src = n->in[1], .ld = kk};
	OutMap o = {.out = n->id, .sb = ys->dim[1] * p, .sm = p, .sn = 1};
	GemmSpec s = spec(cg, n, xs->dim[0], ys->dim[1], p, kk, &o);
	s.a = dense_operand(cg, &w, true, true);
	s.a.batch_free = true;
	s.b = (GemmOperand){.elem = win_elem, .vec = win_vec_for(&x, p), .ctx = &x};
	return gemm(cg, &s, n);
}

/* Weights read transposed for grad_input: A(ci, (co, tap)) = w[co][ci][tap]. */
typedef struct {
	int src;
	int64_t cin, taps;
	LLVMValueRef ktab; /* k's split as a table (wt_entry), or NULL */
} WeightT;

/* Entry k of the transposed weights' table: co * Cin * taps + tap for k = (co, tap), the
 * element's offset less row * taps. */
static int64_t wt_entry(const void *ctx, int64_t k)
{
	const WeightT *w = ctx;
	return k / w->taps * w->cin * w->taps + k % w->taps;
}

static LLVMValueRef wt_elem(Cg *cg, const GemmOperand *op, LLVMValueRef b, LLVMValueRef row, LLVMValueRef col)
{
	const WeightT *w = op->ctx;
	if (w->ktab)
		return cg_load(cg, w->src, add(cg, mul(cg, row, c64(cg, w->taps)), cg_table_load(cg, w->ktab, col)));
	LLVMValueRef co = udiv(cg, col, c64(cg, w->taps)), tap = urem(cg, col, c64(cg, w->taps));
	return cg_load(cg, w->src, add(cg, mul(cg, add(cg, mul(cg, co, c64(cg, w->cin)), row), c64(cg, w->taps)), tap));
}

/* dx[b] (Cin x H*W) = w^T (Cin x Cout*KH*KW) * transposed-window(dy[b]) */
int64_t cg_lower_conv2d_grad_input(Cg *cg, const Node *n)
{
	if (ir_layout(n) == LAYOUT_NHWC)
		return lower_conv2d_grad_input_nhwc(cg, n);
	const Shape *dys = shape_of(cg, n, 0), *ws = shape_of(cg, n, 1), *xs = &n->shape;
	int64_t taps = ws->dim[2] * ws->dim[3], hw = xs->dim[2] * xs->dim[3];
	Window dy = conv_window(n, n->in[0], dys, ws->dim[2], ws->dim[3]);
	dy.gh = xs->dim[2], dy.gw = xs->dim[3], dy.transposed = true, dy.q_is_row = true;
	win_flatten_identity(&dy);
	win_tap_table(cg, &dy, ws->dim[0] * taps);
	WeightT w = {.src = n->in[1], .cin = ws->dim[1], .taps = taps};
	if (cg_gpu_paths(cg)) /* the (co, tap) split as a table, as a window's taps */
		w.ktab = k_table(cg, "wt", w.src, ws->dim[0] * taps, wt_entry, &w);
	OutMap o = {.out = n->id, .sb = xs->dim[1] * hw, .sm = hw, .sn = 1};
	GemmSpec s = spec(cg, n, xs->dim[0], xs->dim[1], hw, ws->dim[0] * taps, &o);
	s.a = (GemmOperand){.elem = wt_elem, .along_k = true, .batch_free = true, .ctx = &w};
	s.b = (GemmOperand){.elem = win_elem, .vec = win_vec_for(&dy, hw), .ctx = &dy};
	return gemm(cg, &s, n);
}

/* dw^T (Cin*KH*KW x Cout) = window(x) (taps x N*Ho*Wo) * dy^T (N*Ho*Wo x Cout): computing the
 * transpose puts the large gather in A, packed along its contiguous k without a transpose. */
int64_t cg_lower_conv2d_grad_weight(Cg *cg, const Node *n)
{
	if (ir_layout(n) == LAYOUT_NHWC)
		return lower_conv2d_grad_weight_nhwc(cg, n);
	const Shape *dys = shape_of(cg, n, 0), *xs = shape_of(cg, n, 1), *ws = &n->shape;
	int64_t taps = ws->dim[1] * ws->dim[2] * ws->dim[3];
	int64_t pos = dys->dim[0] * dys->dim[2] * dys->dim[3];
	Window x = conv_window(n, n->in[1], xs, ws->dim[2], ws->dim[3]);
	x.gh = dys->dim[2], x.gw = dys->dim[3], x.fold_batch = true, x.q_is_row = true;
	Window dy = {.src = n->in[0], .chans = dys->dim[1], .h = dys->dim[2], .w = dys->dim[3], .gh = dys->dim[2],
		     .gw = dys->dim[3], .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .fold_batch = true};
	win_flatten_identity(&x);
	win_flatten_identity(&dy);
	OutMap o = {.out = n->id, .sb = 0, .sm = 1, .sn = taps};
	GemmSpec s = spec(cg, n, 1, taps, ws->dim[0], pos, &o);
	s.a = (GemmOperand){.elem = win_elem, .vec = win_vec_for(&x, pos), .along_k = true, .ctx = &x};
	s.b = (GemmOperand){.elem = win_elem, .vec = win_vec_for(&dy, pos), .along_k = true, .ctx = &dy};
	return gemm(cg, &s, n);
}

/* c = op(a) op(b); op transposes when the flag is set */
int64_t cg_lower_matmul(Cg *cg, const Node *n)
{
	const Shape *as = shape_of(cg, n, 0), *bs = shape_of(cg, n, 1);
	MatmulFlags f = ir_matmul_flags(n);
	bool ta = f.ta, tb = f.tb;
	int64_t m = n->shape.dim[0], nn = n->shape.dim[1], k = ta ? as->dim[0] : as->dim[1];
	Dense a = {.src = n->in[0], .ld = as->dim[1], .t = ta};
	Dense b = {.src = n->in[1], .ld = bs->dim[1], .t = tb};
	OutMap o = {.out = n->id, .sm = nn, .sn = 1};
	GemmSpec s = spec(cg, n, 1, m, nn, k, &o);
	/* dense_vec reads along the stored rows: k for A unless transposed, n for B unless transposed */
	s.a = dense_operand(cg, &a, !ta, !ta);
	s.b = dense_operand(cg, &b, tb, true);
	return gemm(cg, &s, n);
}

/* M[t] (K x P) = U[t] (K x C) * V[t] (C x P): one GEMM per Winograd transform point t, the
 * points as the template's batch. The input gradient's U is read transposed: its filters are
 * transformed along their stored order (the contiguous axis C in the weight transform's
 * work-items), which a transform storing C x K would have to read K x C apart. */
int64_t cg_lower_winograd_gemm(Cg *cg, const Node *n)
{
	const Shape *us = shape_of(cg, n, 0), *vs = shape_of(cg, n, 1);
	bool ta = ir_winograd_transpose_u(n);
	int64_t pts = us->dim[0], k = n->shape.dim[1], c = vs->dim[1], p = vs->dim[2];
	Dense u = {.src = n->in[0], .ld = us->dim[2], .t = ta, .sb = k * c};
	Dense v = {.src = n->in[1], .ld = p, .sb = c * p};
	OutMap o = {.out = n->id, .sb = k * p, .sm = p, .sn = 1};
	GemmSpec s = spec(cg, n, pts, k, p, c, &o);
	s.a = dense_operand(cg, &u, !ta, !ta);
	s.b = dense_operand(cg, &v, false, true);
	return gemm(cg, &s, n);
}

/* dU[t] (K x C) = dM[t] (K x P) * V[t]^T (P x C): the weight gradient's product per transform
 * point, summed over the batch's tiles (a long K, split on GPUs: ir_split_k) */
int64_t cg_lower_winograd_weight_gemm(Cg *cg, const Node *n)
{
	const Shape *ms = shape_of(cg, n, 0), *vs = shape_of(cg, n, 1);
	int64_t pts = ms->dim[0], k = ms->dim[1], p = ms->dim[2], c = vs->dim[1];
	Dense dm = {.src = n->in[0], .ld = p, .sb = k * p};
	Dense v = {.src = n->in[1], .ld = p, .t = true, .sb = c * p};
	OutMap o = {.out = n->id, .sb = k * c, .sm = c, .sn = 1};
	GemmSpec s = spec(cg, n, pts, k, c, p, &o);
	s.a = dense_operand(cg, &dm, true, true);
	s.b = dense_operand(cg, &v, true, true);
	return gemm(cg, &s, n);
}
