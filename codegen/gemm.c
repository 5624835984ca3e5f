/* gemm.c: the GEMM kernel template (see gemm.h). Emission follows the loop nest:
 *
 *   for wg in [wg_begin, wg_end):                      (b, m-block, n-block)
 *     for each k-block (one body: the last block's length is a run-time value when K is no
 *                       multiple of the k-block, so the body is emitted once, not twice):
 *       pack A [MB x KB] into MR-row slivers           (skipped when a kept A is still there)
 *       for each NR-column sliver:  pack B [KB x NR]
 *         for each MR-row sliver:   micro-kernel MR x NR into the C tile
 *     epilogue over the valid part of the C tile
 */
#include <string.h>

#include "codegen/gemm.h"
#include "codegen/targets.h"
#include "codegen/cg_util.h"
#include "codegen/target.h"

/* Chosen by measurement on AVX-512 (docs/codegen.md): an 8 x 2-vector micro-kernel (16
 * accumulators), M blocks up to 96 rows, k-blocks of 256-384, local arrays (packed A, one packed B
 * sliver, the C tile) within 72K elements of the work-group's stack, and at least 4 work-groups. */
enum { GEMM_MR = 8, GEMM_NR_VECS = 2, GEMM_MB = 96, GEMM_KB = 256, GEMM_LOCAL_BUDGET = 72 * 1024, GEMM_MIN_GRID = 4 };

typedef struct {
	const GemmSpec *s;
	GemmTiles t;
	int lanes;
	LLVMTypeRef et, vt;                  /* element and vector types */
	LLVMValueRef pa, pb, pc;             /* packed A, packed B sliver, C tile */
	LLVMValueRef a_mb;                   /* local i64: m-block the kept A holds, -1 none */
	LLVMValueRef b, mb, m0, n0, mlen, nlen;
	LLVMValueRef msl;                    /* MR slivers covering mlen */
} Gemm;

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t rup(int64_t a, int64_t b) { return cdiv(a, b) * b; }

/* ---- tiles ---- */

static int lanes_of(const CgTarget *t, const GemmSpec *s)
{
	int l = t->simd_f32 > 0 ? t->simd_f32 : 4;
	return LLVMGetTypeKind(s->type) == LLVMDoubleTypeKind ? (l > 1 ? l / 2 : 1) : l;
}

/* Splits extent into blocks of at most max that are multiples of q, as even as possible. */
static int64_t even_block(int64_t extent, int64_t max, int64_t q, int64_t *nblocks)
{
	int64_t nb = cdiv(extent, max);
	int64_t b = rup(cdiv(extent, nb), q);
	*nblocks = cdiv(extent, b);
	return b;
}

/* The tiles of M blocks up to mbmax rows and k-blocks up to kbmax. */
static GemmTiles tiles_within(const CgTarget *tg, const GemmSpec *s, int64_t mbmax, int64_t kbmax)
{
	GemmTiles t = {.mr = GEMM_MR};
	int lanes = lanes_of(tg, s);
	t.nr = GEMM_NR_VECS * lanes;
	t.kb = even_block(s->k, kbmax, lanes, &t.nkb);
	t.mb = even_block(s->m, mbmax, t.mr, &t.nmb);
	t.ka = rup(t.kb, lanes);
	/* A that serves every b is packed once for all of K where it fits */
	if (s->a.batch_free && s->batch > 1 && t.mb * rup(s->k, lanes) <= GEMM_LOCAL_BUDGET / 3)
		t.ka = rup(s->k, lanes);
	int64_t nbmax = (GEMM_LOCAL_BUDGET - t.mb * t.ka - t.ka * t.nr) / t.mb;
	nbmax = nbmax < t.nr ? t.nr : nbmax / t.nr * t.nr;
	t.nb = even_block(s->n, nbmax, t.nr, &t.nnb);
	/* work for every thread without split K: smaller M blocks while they stay large (each
	 * repacks B), then smaller N blocks (each repacks A), then any M block */
	while (s->batch * t.nmb * t.nnb < GEMM_MIN_GRID && t.mb > 64)
		t.mb = even_block(s->m, t.mb - t.mr, t.mr, &t.nmb);
	while (s->batch * t.nmb * t.nnb < GEMM_MIN_GRID && t.nb > t.nr)
		t.nb = even_block(s->n, t.nb - t.nr, t.nr, &t.nnb);
	while (s->batch * t.nmb * t.nnb < GEMM_MIN_GRID && t.mb > t.mr)
		t.mb = even_block(s->m, t.mb - t.mr, t.mr, &t.nmb);
	return t;
}

GemmTiles cg_gemm_tiles(const CgTarget *tg, const GemmSpec *s) { return tiles_within(tg, s, GEMM_MB, GEMM_KB + GEMM_KB / 2); }

int cg_gemm_candidates(const CgTarget *tg, const GemmSpec *s, GemmTiles *out, int max)
{
	static const int64_t mbs[] = {GEMM_MB, 64, 32}, kbs[] = {GEMM_KB + GEMM_KB / 2, GEMM_KB / 2 + GEMM_KB / 4, GEMM_KB / 4};
	int n = 0;
	out[n++] = cg_gemm_tiles(tg, s);
	for (size_t i = 0; i < sizeof mbs / sizeof *mbs; i++)
		for (size_t j = 0; j < sizeof kbs / sizeof *kbs && n < max; j++) {
			GemmTiles t = tiles_within(tg, s, mbs[i], kbs[j]);
			bool had = false;
			for (int c = 0; c < n; c++)
				had |= out[c].mb == t.mb && out[c].nb == t.nb && out[c].kb == t.kb;
			if (!had)
				out[n++] = t;
		}
	return n;
}

/* ISA twins make the same code from the same IR (codegen/isa_twins.h), and the second takes the
 * first's code object: so they share tuned tiles, under the name of their class's first row. */
static const char *tune_arch_of(const CgTarget *t)
{
	int n;
	const CgTargetInfo *rows = cg_target_table(&n);
	for (int i = 0; t->isa_class && i < n; i++)
		if (rows[i].isa_class && strcmp(rows[i].isa_class, t->isa_class) == 0)
			return rows[i].name;
	return t->arch;
}

void cg_gemm_tune_arch(const CgTarget *t, char *buf, size_t len)
{
	if (t->ops->gpu)
		snprintf(buf, len, "%s", tune_arch_of(t));
	else
		snprintf(buf, len, "host-%.63s", t->cpu);
}

void cg_gemm_tune_key(const Cg *cg, const GemmSpec *s, const char *cls, int split, CgTuneKey *k)
{
	memset(k, 0, sizeof *k);
	cg_gemm_tune_arch(cg->target, k->arch, sizeof k->arch);
	snprintf(k->cls, sizeof k->cls, "%s", cls);
	k->batch = s->batch;
	k->m = s->m;
	k->n = s->n;
	k->k = s->k;
	snprintf(k->a, sizeof k->a, "%c%d%s", s->a.along_k ? 'k' : 'm', s->a.run && s->a.runs > 1 ? s->a.runs : 1,
		 s->a.batch_free && s->batch > 1 ? "s" : "");
	snprintf(k->b, sizeof k->b, "%c%d", s->b.along_k ? 'k' : 'n', s->b.run && s->b.runs > 1 ? s->b.runs : 1);
	k->split = split;
}

/* The tiles the GEMM takes: the heuristic's or another candidate, as codegen/tuning.c chooses. */
static GemmTiles choose_tiles(Cg *cg, const GemmSpec *s)
{
	enum { MAX_CANDIDATES = 16 };
	GemmTiles cand[MAX_CANDIDATES];
	CgTileConfig cfg[MAX_CANDIDATES];
	int n = cg_gemm_candidates(cg->target, s, cand, MAX_CANDIDATES);
	for (int i = 0; i < n; i++)
		cfg[i] = (CgTileConfig){.tm = cand[i].mb, .tn = cand[i].nb, .kb = cand[i].kb};
	CgTuneKey key;
	cg_gemm_tune_key(cg, s, LLVMGetTypeKind(s->type) == LLVMDoubleTypeKind ? "f64" : "f32", 1, &key);
	return cand[cg_tuning_choose(cg, &key, cfg, n)];
}

/* ---- small emission helpers ---- */

LLVMValueRef cg_gemm_splat(Cg *cg, LLVMValueRef v, int lanes)
{
	LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), (unsigned)lanes);
	LLVMValueRef one = LLVMBuildInsertElement(cg->b, LLVMGetPoison(vt), v, cg_i32(cg, 0), "");
	return LLVMBuildShuffleVector(cg->b, one, LLVMGetPoison(vt),
				      LLVMConstNull(LLVMVectorType(cg->t_i32, (unsigned)lanes)), "");
}

LLVMValueRef cg_gemm_iota(Cg *cg, int lanes)
{
	LLVMValueRef e[64];
	for (int i = 0; i < lanes; i++)
		e[i] = cg_i64(cg, i);
	return LLVMConstVector(e, (unsigned)lanes);
}

LLVMValueRef cg_gemm_masked_load(Cg *cg, int id, LLVMValueRef start, LLVMValueRef mask, int lanes,
				 LLVMValueRef passthru)
{
	DType dt = cg->g->node[id].dtype;
	LLVMTypeRef st = cg_storage_type(cg, dt), ct = cg_compute_type(cg, dt);
	LLVMTypeRef svt = LLVMVectorType(st, (unsigned)lanes), cvt = LLVMVectorType(ct, (unsigned)lanes);
	/* plain GEP: start may point outside the buffer where every lane is masked off */
	LLVMValueRef p = LLVMBuildGEP2(cg->b, st, cg_ptr(cg, id, cg_i64(cg, 0)), &start, 1, "");
	LLVMTypeRef tys[2] = {svt, cg->t_ptr};
	unsigned iid = LLVMLookupIntrinsicID("llvm.masked.load", 16);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, iid, tys, 2);
	LLVMTypeRef fty = LLVMIntrinsicGetType(cg->ctx, iid, tys, 2);
	bool same = st == ct;
	LLVMValueRef args[4] = {p, cg_i32(cg, (int64_t)dtype_size(dt)), mask,
				same ? passthru : LLVMConstNull(svt)};
	LLVMValueRef v = LLVMBuildCall2(cg->b, fty, fn, args, 4, "");
	if (same)
		return v;
	v = LLVMBuildFPExt(cg->b, v, cvt, "");
	return LLVMBuildSelect(cg->b, mask, v, passthru, "");
}

static LLVMValueRef imin(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, a, b, ""), a, b, "");
}

static LLVMValueRef add(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(cg->b, a, b, ""); }
static LLVMValueRef sub(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSub(cg->b, a, b, ""); }
static LLVMValueRef mul(Cg *cg, LLVMValueRef a, int64_t c) { return LLVMBuildMul(cg->b, a, cg_i64(cg, c), ""); }
/* ceil(a / c) of a non-negative a (a constant stays one) */
static LLVMValueRef cdiv_v(Cg *cg, LLVMValueRef a, int64_t c)
{
	return LLVMBuildUDiv(cg->b, add(cg, a, cg_i64(cg, c - 1)), cg_i64(cg, c), "");
}

static LLVMValueRef local_array(Cg *cg, LLVMTypeRef et, int64_t n, const char *name)
{
	LLVMValueRef a = cg_local(cg, LLVMArrayType2(et, (uint64_t)n), name);
	LLVMSetAlignment(a, 64);
	return a;
}

static LLVMValueRef elt(Cg *cg, Gemm *g, LLVMValueRef base, LLVMValueRef idx)
{
	return LLVMBuildGEP2(cg->b, g->et, base, &idx, 1, "");
}

static void store_elt(Cg *cg, Gemm *g, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef v)
{
	LLVMBuildStore(cg->b, v, elt(cg, g, base, idx));
}

static LLVMValueRef load_vec(Cg *cg, Gemm *g, LLVMValueRef base, LLVMValueRef idx, unsigned align)
{
	LLVMValueRef v = LLVMBuildLoad2(cg->b, g->vt, elt(cg, g, base, idx), "");
	LLVMSetAlignment(v, align);
	return v;
}

static void store_vec(Cg *cg, Gemm *g, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef v, unsigned align)
{
	LLVMValueRef st = LLVMBuildStore(cg->b, v, elt(cg, g, base, idx));
	LLVMSetAlignment(st, align);
}

/* Zero-fills dst[row*stride + k] for rows [lo, hi), k in [0, n). */
static void zero_rows(Cg *cg, Gemm *g, LLVMValueRef dst, LLVMValueRef lo, LLVMValueRef hi, int64_t stride,
		      LLVMValueRef off, LLVMValueRef n)
{
	CgLoop r = cg_for_begin(cg, lo, hi, "zr");
	CgLoop k = cg_for_begin(cg, cg_i64(cg, 0), n, "zk");
	store_elt(cg, g, dst, add(cg, add(cg, mul(cg, r.i, stride), off), k.i), LLVMConstNull(g->et));
	cg_for_end(cg, &k);
	cg_for_end(cg, &r);
}

/* ---- packing ---- */

/* dst[0 .. n) (padded to whole vectors) from the operand's run at p0 with `fixed`. */
static void pack_run(Cg *cg, Gemm *g, const GemmOperand *op, LLVMValueRef fixed, LLVMValueRef p0,
		     LLVMValueRef dst, LLVMValueRef n, bool row_is_fixed)
{
	if (op->vec) {
		CgLoop k = cg_for_begin(cg, cg_i64(cg, 0), cdiv_v(cg, n, g->lanes), "pv");
		LLVMValueRef off = mul(cg, k.i, g->lanes);
		LLVMValueRef v = op->vec(cg, op, g->b, fixed, add(cg, p0, off), sub(cg, n, off), g->lanes);
		store_vec(cg, g, dst, off, v, 4);
		cg_for_end(cg, &k);
		return;
	}
	CgLoop k = cg_for_begin(cg, cg_i64(cg, 0), n, "ps");
	LLVMValueRef p = add(cg, p0, k.i);
	LLVMValueRef v = row_is_fixed ? op->elem(cg, op, g->b, fixed, p) : op->elem(cg, op, g->b, p, fixed);
	store_elt(cg, g, dst, k.i, v);
	cg_for_end(cg, &k);
}

/* A rows [0, mlen) x k [k0, k0+klen) into pa: layout [row][ka] when A runs along k, else
 * [sliver][k][MR]; rows up to whole slivers are zero. koff: where k0 lands in the packed k. */
static void pack_a(Cg *cg, Gemm *g, LLVMValueRef k0, LLVMValueRef koff, LLVMValueRef klen)
{
	const GemmOperand *a = &g->s->a;
	int64_t mr = g->t.mr, ka = g->t.ka;
	LLVMValueRef mpad = mul(cg, g->msl, mr);
	if (a->along_k) {
		CgLoop i = cg_for_begin(cg, cg_i64(cg, 0), g->mlen, "pai");
		LLVMValueRef dst = elt(cg, g, g->pa, add(cg, mul(cg, i.i, ka), koff));
		pack_run(cg, g, a, add(cg, g->m0, i.i), k0, dst, klen, true);
		cg_for_end(cg, &i);
		zero_rows(cg, g, g->pa, g->mlen, mpad, ka, koff, klen);
		return;
	}
	CgLoop k = cg_for_begin(cg, cg_i64(cg, 0), klen, "pak");
	LLVMValueRef kk = add(cg, k0, k.i);
	CgLoop i = cg_for_begin(cg, cg_i64(cg, 0), mpad, "pai");
	LLVMValueRef sl = LLVMBuildUDiv(cg->b, i.i, cg_i64(cg, mr), "");
	LLVMValueRef r = LLVMBuildURem(cg->b, i.i, cg_i64(cg, mr), "");
	LLVMValueRef at = add(cg, add(cg, mul(cg, sl, ka * mr), mul(cg, add(cg, koff, k.i), mr)), r);
	/* rows past M read row 0 (in range) and store zero */
	LLVMValueRef ok = LLVMBuildICmp(cg->b, LLVMIntSLT, i.i, g->mlen, "");
	LLVMValueRef row = LLVMBuildSelect(cg->b, ok, add(cg, g->m0, i.i), g->m0, "");
	LLVMValueRef v = a->elem(cg, a, g->b, row, kk);
	store_elt(cg, g, g->pa, at, LLVMBuildSelect(cg->b, ok, v, LLVMConstNull(g->et), ""));
	cg_for_end(cg, &i);
	cg_for_end(cg, &k);
}

/* Transposes `lanes` vectors in place (log2(lanes) stages swapping off-diagonal blocks). */
static void transpose(Cg *cg, LLVMValueRef *v, int lanes)
{
	for (int h = lanes / 2; h >= 1; h /= 2) {
		LLVMValueRef lo[64], hi[64];
		for (int l = 0; l < lanes; l++) {
			lo[l] = cg_i32(cg, (l & h) ? lanes + l - h : l);
			hi[l] = cg_i32(cg, (l & h) ? lanes + l : l + h);
		}
		LLVMValueRef mlo = LLVMConstVector(lo, (unsigned)lanes), mhi = LLVMConstVector(hi, (unsigned)lanes);
		for (int i = 0; i < lanes; i++) {
			if (i & h)
				continue;
			LLVMValueRef x = v[i], y = v[i + h];
			v[i] = LLVMBuildShuffleVector(cg->b, x, y, mlo, "");
			v[i + h] = LLVMBuildShuffleVector(cg->b, x, y, mhi, "");
		}
	}
}

/* B along k with a vector emitter: lanes x lanes blocks read along k, transposed in registers. */
static void pack_b_transposed(Cg *cg, Gemm *g, LLVMValueRef k0, LLVMValueRef klen, LLVMValueRef n,
			      LLVMValueRef nvalid)
{
	const GemmOperand *op = &g->s->b;
	int lanes = g->lanes;
	CgLoop k = cg_for_begin(cg, cg_i64(cg, 0), cdiv_v(cg, klen, lanes), "ptk");
	LLVMValueRef kk = mul(cg, k.i, lanes);
	LLVMValueRef left = sub(cg, klen, kk);
	for (int c = 0; c < g->t.nr / lanes; c++) {
		LLVMValueRef v[64];
		for (int j = 0; j < lanes; j++) {
			/* columns past N read the last valid one (in range) and become zero */
			LLVMValueRef col = cg_i64(cg, c * lanes + j);
			LLVMValueRef ok = LLVMBuildICmp(cg->b, LLVMIntSLT, col, nvalid, "");
			LLVMValueRef cl = LLVMBuildSelect(cg->b, ok, col, cg_i64(cg, 0), "");
			LLVMValueRef x = op->vec(cg, op, g->b, add(cg, n, cl), add(cg, k0, kk), left, lanes);
			v[j] = LLVMBuildSelect(cg->b, ok, x, LLVMConstNull(g->vt), "");
		}
		transpose(cg, v, lanes);
		for (int j = 0; j < lanes; j++)
			store_vec(cg, g, g->pb, add(cg, mul(cg, add(cg, kk, cg_i64(cg, j)), g->t.nr),
						    cg_i64(cg, c * lanes)), v[j], 64);
	}
	cg_for_end(cg, &k);
}

/* One NR-column sliver of B: k in [k0, k0+klen), columns n .. n+nvalid, into pb [k][NR]. */
static void pack_b(Cg *cg, Gemm *g, LLVMValueRef k0, LLVMValueRef klen, LLVMValueRef n, LLVMValueRef nvalid)
{
	const GemmOperand *op = &g->s->b;
	int64_t nr = g->t.nr;
	if (!op->along_k) {
		CgLoop k = cg_for_begin(cg, cg_i64(cg, 0), klen, "pbk");
		LLVMValueRef kk = add(cg, k0, k.i);
		LLVMValueRef dst = elt(cg, g, g->pb, mul(cg, k.i, nr));
		if (op->vec) {
			for (int c = 0; c < nr / g->lanes; c++) {
				LLVMValueRef off = cg_i64(cg, c * g->lanes);
				LLVMValueRef v = op->vec(cg, op, g->b, kk, add(cg, n, off),
							 LLVMBuildSub(cg->b, nvalid, off, ""), g->lanes);
				store_vec(cg, g, dst, off, v, 64);
			}
		} else {
			CgLoop j = cg_for_begin(cg, cg_i64(cg, 0), nvalid, "pbj");
			store_elt(cg, g, dst, j.i, op->elem(cg, op, g->b, kk, add(cg, n, j.i)));
			cg_for_end(cg, &j);
			CgLoop z = cg_for_begin(cg, nvalid, cg_i64(cg, nr), "pbz");
			store_elt(cg, g, dst, z.i, LLVMConstNull(g->et));
			cg_for_end(cg, &z);
		}
		cg_for_end(cg, &k);
		return;
	}
	if (op->vec) {
		pack_b_transposed(cg, g, k0, klen, n, nvalid);
		return;
	}
	CgLoop j = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, nr), "pbj");
	LLVMValueRef ok = LLVMBuildICmp(cg->b, LLVMIntSLT, j.i, nvalid, "");
	LLVMValueRef col = add(cg, n, LLVMBuildSelect(cg->b, ok, j.i, cg_i64(cg, 0), ""));
	CgLoop k = cg_for_begin(cg, cg_i64(cg, 0), klen, "pbk");
	LLVMValueRef v = op->elem(cg, op, g->b, add(cg, k0, k.i), col);
	store_elt(cg, g, g->pb, add(cg, mul(cg, k.i, nr), j.i), LLVMBuildSelect(cg->b, ok, v, LLVMConstNull(g->et), ""));
	cg_for_end(cg, &k);
	cg_for_end(cg, &j);
}

/* ---- micro-kernel ---- */

/* C tile rows is*MR .. +MR, columns j0 .. j0+NR, += packed A sliver x packed B sliver over klen. */
static void micro(Cg *cg, Gemm *g, LLVMValueRef is, LLVMValueRef j0, LLVMValueRef koff, LLVMValueRef klen,
		  LLVMValueRef first)
{
	int mr = g->t.mr, nv = g->t.nr / g->lanes;
	int64_t nb = g->t.nb, ka = g->t.ka;
	LLVMValueRef acc[16][8], cidx[16];
	for (int r = 0; r < mr; r++) {
		cidx[r] = add(cg, mul(cg, add(cg, mul(cg, is, mr), cg_i64(cg, r)), nb), j0);
		for (int v = 0; v < nv; v++) {
			acc[r][v] = cg_local(cg, g->vt, "acc");
			LLVMValueRef c = load_vec(cg, g, g->pc, add(cg, cidx[r], cg_i64(cg, v * g->lanes)), 64);
			LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, first, LLVMConstNull(g->vt), c, ""), acc[r][v]);
		}
	}
	bool ak = g->s->a.along_k;
	LLVMValueRef abase = ak ? mul(cg, is, mr * ka) : mul(cg, is, ka * mr);
	CgLoop k = cg_for_begin(cg, cg_i64(cg, 0), klen, "mk");
	LLVMValueRef bv[8];
	for (int v = 0; v < nv; v++)
		bv[v] = load_vec(cg, g, g->pb, add(cg, mul(cg, k.i, g->t.nr), cg_i64(cg, v * g->lanes)), 64);
	LLVMValueRef kk = add(cg, koff, k.i);
	for (int r = 0; r < mr; r++) {
		LLVMValueRef ai = ak ? add(cg, abase, add(cg, cg_i64(cg, r * ka), kk))
				     : add(cg, abase, add(cg, mul(cg, kk, mr), cg_i64(cg, r)));
		LLVMValueRef a = cg_gemm_splat(cg, LLVMBuildLoad2(cg->b, g->et, elt(cg, g, g->pa, ai), ""), g->lanes);
		for (int v = 0; v < nv; v++) {
			LLVMValueRef args[3] = {a, bv[v], LLVMBuildLoad2(cg->b, g->vt, acc[r][v], "")};
			LLVMBuildStore(cg->b, cg_intrinsic(cg, "fma", g->vt, args, 3), acc[r][v]);
		}
	}
	cg_for_end(cg, &k);
	for (int r = 0; r < mr; r++)
		for (int v = 0; v < nv; v++)
			store_vec(cg, g, g->pc, add(cg, cidx[r], cg_i64(cg, v * g->lanes)),
				  LLVMBuildLoad2(cg->b, g->vt, acc[r][v], ""), 64);
}

/* ---- the work-group ---- */

/* Packs A for k-block k0 unless the kept A already holds this m-block. */
static void pack_a_block(Cg *cg, Gemm *g, LLVMValueRef k0, LLVMValueRef koff, LLVMValueRef klen, bool kept)
{
	if (!kept) {
		pack_a(cg, g, k0, koff, klen);
		return;
	}
	LLVMValueRef have = LLVMBuildICmp(cg->b, LLVMIntEQ, LLVMBuildLoad2(cg->b, cg->t_i64, g->a_mb, ""), g->mb, "");
	LLVMBasicBlockRef pack = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "pack_a");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "packed_a");
	LLVMBuildCondBr(cg->b, have, done, pack);
	LLVMPositionBuilderAtEnd(cg->b, pack);
	pack_a(cg, g, k0, koff, klen);
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, done);
}

static void kblock(Cg *cg, Gemm *g, LLVMValueRef k0, LLVMValueRef klen, LLVMValueRef first)
{
	bool kept = g->t.ka > g->t.kb || (g->t.nkb == 1 && g->s->a.batch_free && g->s->batch > 1);
	LLVMValueRef koff = g->t.ka > g->t.kb ? k0 : cg_i64(cg, 0);
	pack_a_block(cg, g, k0, koff, klen, kept);
	int64_t nr = g->t.nr;
	LLVMValueRef nsl = LLVMBuildUDiv(cg->b, add(cg, g->nlen, cg_i64(cg, nr - 1)), cg_i64(cg, nr), "");
	CgLoop js = cg_for_begin(cg, cg_i64(cg, 0), nsl, "js");
	LLVMValueRef j0 = mul(cg, js.i, nr);
	pack_b(cg, g, k0, klen, add(cg, g->n0, j0), imin(cg, cg_i64(cg, nr), LLVMBuildSub(cg->b, g->nlen, j0, "")));
	CgLoop is = cg_for_begin(cg, cg_i64(cg, 0), g->msl, "is");
	micro(cg, g, is.i, j0, koff, klen, first);
	cg_for_end(cg, &is);
	cg_for_end(cg, &js);
}

static void epilogue(Cg *cg, Gemm *g)
{
	CgLoop i = cg_for_begin(cg, cg_i64(cg, 0), g->mlen, "ei");
	CgLoop j = cg_for_begin(cg, cg_i64(cg, 0), g->nlen, "ej");
	LLVMValueRef v = LLVMBuildLoad2(cg->b, g->et, elt(cg, g, g->pc, add(cg, mul(cg, i.i, g->t.nb), j.i)), "");
	g->s->epilogue(cg, g->s, g->b, add(cg, g->m0, i.i), add(cg, g->n0, j.i), v);
	cg_for_end(cg, &j);
	cg_for_end(cg, &i);
}

/* Decodes work-group wg into b, the m- and n-blocks and their valid extents. */
static void decode(Cg *cg, Gemm *g, LLVMValueRef wg)
{
	const GemmSpec *s = g->s;
	LLVMValueRef per_b = cg_i64(cg, g->t.nmb * g->t.nnb);
	g->b = LLVMBuildUDiv(cg->b, wg, per_b, "b");
	LLVMValueRef r = LLVMBuildURem(cg->b, wg, per_b, "");
	g->mb = LLVMBuildUDiv(cg->b, r, cg_i64(cg, g->t.nnb), "mb");
	LLVMValueRef nb = LLVMBuildURem(cg->b, r, cg_i64(cg, g->t.nnb), "nb");
	g->m0 = mul(cg, g->mb, g->t.mb);
	g->n0 = mul(cg, nb, g->t.nb);
	g->mlen = imin(cg, cg_i64(cg, g->t.mb), LLVMBuildSub(cg->b, cg_i64(cg, s->m), g->m0, ""));
	g->nlen = imin(cg, cg_i64(cg, g->t.nb), LLVMBuildSub(cg->b, cg_i64(cg, s->n), g->n0, ""));
	g->msl = LLVMBuildUDiv(cg->b, add(cg, g->mlen, cg_i64(cg, g->t.mr - 1)), cg_i64(cg, g->t.mr), "");
}

int64_t cg_gemm(Cg *cg, const GemmSpec *s)
{
	Gemm g = {.s = s, .t = choose_tiles(cg, s), .et = s->type};
	g.lanes = lanes_of(cg->target, s);
	g.vt = LLVMVectorType(g.et, (unsigned)g.lanes);
	g.pa = local_array(cg, g.et, g.t.mb * g.t.ka, "pack_a");
	g.pb = local_array(cg, g.et, rup(g.t.kb, g.lanes) * g.t.nr, "pack_b");
	g.pc = local_array(cg, g.et, g.t.mb * g.t.nb, "ctile");
	g.a_mb = cg_local(cg, cg->t_i64, "a_mb");
	LLVMBuildStore(cg->b, cg_i64(cg, -1), g.a_mb);

	CgLoop wg = cg_for_begin(cg, cg->wg_begin, cg->wg_end, "wg");
	decode(cg, &g, wg.i);
	/* one k-block body for all of K: a full block and a shorter last one emitted apart doubled
	 * the kernel, and its compile time, for no measurable speed */
	int64_t nkb = cdiv(s->k, g.t.kb);
	if (nkb == 1) {
		kblock(cg, &g, cg_i64(cg, 0), cg_i64(cg, s->k), LLVMConstInt(cg->t_i1, 1, 0));
	} else {
		CgLoop kb = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, nkb), "kb");
		LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, kb.i, cg_i64(cg, 0), "");
		LLVMValueRef k0 = mul(cg, kb.i, g.t.kb), klen = cg_i64(cg, g.t.kb);
		if (s->k % g.t.kb)
			klen = imin(cg, klen, sub(cg, cg_i64(cg, s->k), k0));
		kblock(cg, &g, k0, klen, first);
		cg_for_end(cg, &kb);
	}
	LLVMBuildStore(cg->b, g.mb, g.a_mb);
	epilogue(cg, &g);
	cg_for_end(cg, &wg);
	return s->batch * g.t.nmb * g.t.nnb;
}
