/* lower_reduce.c: sum and mean over an axis mask, softmax and log_softmax (and their gradients)
 * along an axis, and the nll_loss and cross_entropy losses (and their gradients).
 *
 * Every kernel computes whole output elements or whole rows, in a fixed order: work-groups take
 * blocks of them, so results do not depend on how the runtime splits the grid. Accumulations
 * are marked reassociable, which lets LLVM vectorize them (the order is still fixed at compile
 * time, so results repeat from run to run). */
#include <math.h>

#include "codegen/cg_util.h"
#include "codegen/math.h"

/* ---- blocks of items per work-group ---- */

typedef struct {
	CgLoop wg, item;
	int64_t count, per_wg;
} Blocks;

/* Opens the loops over items [0, count) in blocks sized so a work-group sees about
 * CG_WG_ELEMENTS elements at work items of work_per_item; the builder is left in the item loop. */
static Blocks blocks_begin(Cg *cg, int64_t count, int64_t work_per_item)
{
	Blocks b = {.count = count};
	b.per_wg = work_per_item >= CG_WG_ELEMENTS ? 1 : CG_WG_ELEMENTS / (work_per_item > 0 ? work_per_item : 1);
	b.wg = cg_for_begin(cg, cg->wg_begin, cg->wg_end, "wg");
	LLVMValueRef lo = LLVMBuildNSWMul(cg->b, b.wg.i, cg_i64(cg, b.per_wg), "");
	LLVMValueRef hi = cg_min_i64(cg, LLVMBuildNSWAdd(cg->b, lo, cg_i64(cg, b.per_wg), ""), cg_i64(cg, count));
	b.item = cg_for_begin(cg, lo, hi, "item");
	return b;
}

/* Closes the loops and returns the grid. */
static int64_t blocks_end(Cg *cg, Blocks *b)
{
	cg_for_end(cg, &b->item);
	cg_for_end(cg, &b->wg);
	int64_t grid = (b->count + b->per_wg - 1) / b->per_wg;
	return grid > 0 ? grid : 1;
}

/* ---- accumulators ---- */

static LLVMValueRef acc_new(Cg *cg, LLVMTypeRef t, double init)
{
	LLVMValueRef acc = cg_local(cg, t, "acc");
	LLVMBuildStore(cg->b, cg_real(cg, t, init), acc);
	return acc;
}

static LLVMValueRef acc_get(Cg *cg, LLVMValueRef acc)
{
	return LLVMBuildLoad2(cg->b, LLVMGetAllocatedType(acc), acc, "");
}

static void acc_add(Cg *cg, LLVMValueRef acc, LLVMValueRef v)
{
	LLVMBuildStore(cg->b, cg_reassoc(LLVMBuildFAdd(cg->b, acc_get(cg, acc), v, "")), acc);
}

static void acc_max(Cg *cg, LLVMValueRef acc, LLVMValueRef v)
{
	LLVMValueRef args[2] = {acc_get(cg, acc), v};
	LLVMBuildStore(cg->b, cg_reassoc(cg_intrinsic(cg, "maxnum", LLVMTypeOf(v), args, 2)), acc);
}

/* ---- sum, mean ---- */

typedef struct {
	int64_t size, stride;
} Axis;

/* Splits x's axes into kept ones (output order) and reduced ones, merging reduced neighbours
 * into one loop (the innermost then runs over contiguous memory when the last axis is reduced). */
static void split_axes(const Shape *x, unsigned mask, Shape *kept, int64_t *kstride, Axis *red, int *nred)
{
	int64_t stride[IR_MAX_DIMS], s = 1;
	for (int d = x->rank - 1; d >= 0; d--) {
		stride[d] = s;
		s *= x->dim[d];
	}
	kept->rank = 0;
	*nred = 0;
	for (int d = 0; d < x->rank; d++) {
		if (!(mask >> d & 1)) {
			kstride[kept->rank] = stride[d];
			kept->dim[kept->rank++] = x->dim[d];
		} else if (d > 0 && (mask >> (d - 1) & 1)) {
			red[*nred - 1].size *= x->dim[d];
			red[*nred - 1].stride = stride[d];
		} else {
			red[(*nred)++] = (Axis){x->dim[d], stride[d]};
		}
	}
}

static void reduce_loops(Cg *cg, int x, const Axis *red, int nred, LLVMValueRef off, LLVMValueRef acc)
{
	if (nred == 0) {
		acc_add(cg, acc, cg_load(cg, x, off));
		return;
	}
	CgLoop l = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, red->size), "r");
	LLVMValueRef o = LLVMBuildNSWAdd(cg->b, off, LLVMBuildNSWMul(cg->b, l.i, cg_i64(cg, red->stride), ""), "");
	reduce_loops(cg, x, red + 1, nred - 1, o, acc);
	cg_for_end(cg, &l);
}

int64_t cg_lower_reduce(Cg *cg, const Node *n)
{
	int x = n->in[0];
	const Shape *xs = &cg->g->node[x].shape;
	Shape kept;
	int64_t kstride[IR_MAX_DIMS];
	Axis red[IR_MAX_DIMS];
	int nred;
	split_axes(xs, (unsigned)n->attr[0], &kept, kstride, red, &nred);
	int64_t m = shape_numel(&n->shape), count = m ? shape_numel(xs) / m : 0;

	Blocks b = blocks_begin(cg, m, count);
	LLVMValueRef idx[IR_MAX_DIMS], base = cg_i64(cg, 0);
	cg_delinear(cg, &kept, b.item.i, idx);
	for (int d = 0; d < kept.rank; d++)
		base = LLVMBuildNSWAdd(cg->b, base, LLVMBuildNSWMul(cg->b, idx[d], cg_i64(cg, kstride[d]), ""), "");
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef acc = acc_new(cg, t, 0);
	reduce_loops(cg, x, red, nred, base, acc);
	LLVMValueRef v = acc_get(cg, acc);
	if (n->op == OP_mean)
		v = LLVMBuildFDiv(cg->b, v, cg_real(cg, t, (double)count), "");
	cg_store(cg, n->id, b.item.i, v);
	return blocks_end(cg, &b);
}

/* ---- rows: softmax along an axis, losses along the class axis ---- */

/* A row of len elements at base + j * stride in the buffers of the nodes it reads. */
typedef struct {
	LLVMValueRef base;
	int64_t len, stride;
	LLVMTypeRef t; /* compute type */
} Row;

static LLVMValueRef row_at(Cg *cg, const Row *r, LLVMValueRef j)
{
	return LLVMBuildNSWAdd(cg->b, r->base, LLVMBuildNSWMul(cg->b, j, cg_i64(cg, r->stride), ""), "");
}

static LLVMValueRef row_load(Cg *cg, const Row *r, int id, LLVMValueRef j)
{
	return cg_convert(cg, cg_load(cg, id, row_at(cg, r, j)), r->t);
}

static LLVMValueRef row_max(Cg *cg, const Row *r, int x)
{
	LLVMValueRef acc = acc_new(cg, r->t, -INFINITY);
	CgLoop l = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, r->len), "j");
	acc_max(cg, acc, row_load(cg, r, x, l.i));
	cg_for_end(cg, &l);
	return acc_get(cg, acc);
}

/* sum over the row of exp(x - shift) */
static LLVMValueRef row_sum_exp(Cg *cg, const Row *r, int x, LLVMValueRef shift)
{
	LLVMValueRef acc = acc_new(cg, r->t, 0);
	CgLoop l = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, r->len), "j");
	acc_add(cg, acc, cg_exp(cg, LLVMBuildFSub(cg->b, row_load(cg, r, x, l.i), shift, "")));
	cg_for_end(cg, &l);
	return acc_get(cg, acc);
}

/* sum over the row of a (times b when b >= 0) */
static LLVMValueRef row_sum(Cg *cg, const Row *r, int a, int b)
{
	LLVMValueRef acc = acc_new(cg, r->t, 0);
	CgLoop l = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, r->len), "j");
	LLVMValueRef v = row_load(cg, r, a, l.i);
	acc_add(cg, acc, b >= 0 ? LLVMBuildFMul(cg->b, v, row_load(cg, r, b, l.i), "") : v);
	cg_for_end(cg, &l);
	return acc_get(cg, acc);
}

/* Per-row values the element formula of a softmax-family op needs. */
typedef struct {
	LLVMValueRef max, sum, lse;
} RowStats;

static LLVMValueRef softmax_element(Cg *cg, const Node *n, const Row *r, const RowStats *s, LLVMValueRef j)
{
	LLVMBuilderRef b = cg->b;
	LLVMValueRef x = row_load(cg, r, n->in[0], j);
	switch (n->op) {
	case OP_softmax:
		return LLVMBuildFDiv(b, cg_exp(cg, LLVMBuildFSub(b, x, s->max, "")), s->sum, "");
	case OP_log_softmax:
		return LLVMBuildFSub(b, x, s->lse, "");
	case OP_softmax_grad: /* (dy, y): y * (dy - sum(dy * y)) */
		return LLVMBuildFMul(b, row_load(cg, r, n->in[1], j), LLVMBuildFSub(b, x, s->sum, ""), "");
	default: /* log_softmax_grad (dy, y): dy - exp(y) * sum(dy) */
		return LLVMBuildFSub(b, x, LLVMBuildFMul(b, cg_exp(cg, row_load(cg, r, n->in[1], j)), s->sum, ""), "");
	}
}

static RowStats softmax_stats(Cg *cg, const Node *n, const Row *r)
{
	RowStats s = {0};
	if (n->op == OP_softmax_grad)
		s.sum = row_sum(cg, r, n->in[0], n->in[1]);
	else if (n->op == OP_log_softmax_grad)
		s.sum = row_sum(cg, r, n->in[0], -1);
	else {
		s.max = row_max(cg, r, n->in[0]);
		s.sum = row_sum_exp(cg, r, n->in[0], s.max);
		s.lse = LLVMBuildFAdd(cg->b, s.max, cg_log(cg, s.sum), "");
	}
	return s;
}

int64_t cg_lower_softmax(Cg *cg, const Node *n)
{
	int axis = cg_axis(n->attr[0], n->shape.rank);
	int64_t outer = 1, inner = 1, len = n->shape.dim[axis];
	for (int d = 0; d < n->shape.rank; d++)
		if (d != axis)
			*(d < axis ? &outer : &inner) *= n->shape.dim[d];
	if (outer * inner * len == 0)
		return 1;
	Blocks b = blocks_begin(cg, outer * inner, len);
	LLVMValueRef o = LLVMBuildUDiv(cg->b, b.item.i, cg_i64(cg, inner), "");
	LLVMValueRef k = LLVMBuildURem(cg->b, b.item.i, cg_i64(cg, inner), "");
	Row r = {LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, o, cg_i64(cg, len * inner), ""), k, ""), len, inner,
		 cg_compute_type(cg, n->dtype)};
	RowStats s = softmax_stats(cg, n, &r);
	CgLoop l = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, len), "j");
	cg_store(cg, n->id, row_at(cg, &r, l.i), softmax_element(cg, n, &r, &s, l.i));
	cg_for_end(cg, &l);
	return blocks_end(cg, &b);
}

/* ---- losses over scores [N, C] and i32 labels [N] ---- */

/* The label of row i, and whether it is a class in [0, C) (rows with other labels add nothing:
 * the runtime checks labels, and a kernel must not read out of bounds). */
static LLVMValueRef label_of(Cg *cg, int labels, LLVMValueRef i, int64_t classes, LLVMValueRef *valid)
{
	LLVMValueRef l = LLVMBuildSExt(cg->b, cg_load(cg, labels, i), cg->t_i64, "");
	*valid = LLVMBuildICmp(cg->b, LLVMIntULT, l, cg_i64(cg, classes), "");
	return LLVMBuildSelect(cg->b, *valid, l, cg_i64(cg, 0), "");
}

/* loss = scale * sum over rows of (lse(row) when cross_entropy) - x[i, label] */
static int64_t lower_loss_value(Cg *cg, const Node *n, int64_t rows, int64_t cols, double scale)
{
	int x = n->in[0];
	LLVMTypeRef t = cg->t_f32;
	LLVMValueRef acc = acc_new(cg, t, 0);
	/* one work-group, rows in order: a fixed-order sum */
	CgLoop i = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, rows), "i");
	Row r = {LLVMBuildNSWMul(cg->b, i.i, cg_i64(cg, cols), ""), cols, 1, t};
	LLVMValueRef valid, l = label_of(cg, n->in[1], i.i, cols, &valid);
	LLVMValueRef v = LLVMBuildFNeg(cg->b, row_load(cg, &r, x, l), "");
	if (n->op == OP_cross_entropy) {
		LLVMValueRef m = row_max(cg, &r, x);
		LLVMValueRef lse = LLVMBuildFAdd(cg->b, m, cg_log(cg, row_sum_exp(cg, &r, x, m)), "");
		v = LLVMBuildFAdd(cg->b, lse, v, "");
	}
	LLVMValueRef sum = LLVMBuildFAdd(cg->b, acc_get(cg, acc), v, "");
	LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, valid, sum, acc_get(cg, acc), ""), acc);
	cg_for_end(cg, &i);
	cg_store(cg, n->id, cg_i64(cg, 0), LLVMBuildFMul(cg->b, acc_get(cg, acc), cg_real(cg, t, scale), ""));
	return 1;
}

/* dscores[i, c] = dloss * scale * ((softmax(x_i)[c] when cross_entropy) - [c == label]) */
static int64_t lower_loss_grad(Cg *cg, const Node *n, int64_t rows, int64_t cols, double scale)
{
	LLVMBuilderRef b = cg->b;
	int x = n->in[1];
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	Blocks blk = blocks_begin(cg, rows, cols);
	Row r = {LLVMBuildNSWMul(b, blk.item.i, cg_i64(cg, cols), ""), cols, 1, t};
	LLVMValueRef valid, l = label_of(cg, n->in[2], blk.item.i, cols, &valid);
	LLVMValueRef dl = cg_convert(cg, cg_load_uniform(cg, n->in[0], 0), t);
	LLVMValueRef k = LLVMBuildFMul(b, dl, cg_real(cg, t, scale), "");
	k = LLVMBuildSelect(b, valid, k, cg_real(cg, t, 0), "");
	RowStats s = {0};
	if (n->op == OP_cross_entropy_grad) {
		s.max = row_max(cg, &r, x);
		s.sum = row_sum_exp(cg, &r, x, s.max);
	}
	CgLoop j = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, cols), "j");
	LLVMValueRef one = LLVMBuildICmp(b, LLVMIntEQ, j.i, l, "");
	LLVMValueRef v = LLVMBuildSelect(b, one, cg_real(cg, t, -1), cg_real(cg, t, 0), "");
	if (n->op == OP_cross_entropy_grad) {
		LLVMValueRef p = LLVMBuildFDiv(b, cg_exp(cg, LLVMBuildFSub(b, row_load(cg, &r, x, j.i), s.max, "")), s.sum, "");
		v = LLVMBuildFAdd(b, p, v, "");
	}
	cg_store(cg, n->id, row_at(cg, &r, j.i), LLVMBuildFMul(b, v, k, ""));
	cg_for_end(cg, &j);
	return blocks_end(cg, &blk);
}

int64_t cg_lower_loss(Cg *cg, const Node *n)
{
	bool grad = n->op == OP_nll_loss_grad || n->op == OP_cross_entropy_grad;
	const Shape *xs = &cg->g->node[n->in[grad ? 1 : 0]].shape;
	int64_t rows = xs->dim[0], cols = xs->dim[1];
	double scale = n->attr[0] == 0 && rows > 0 ? 1.0 / (double)rows : 1.0;
	if (rows * cols == 0 && grad)
		return 1;
	return grad ? lower_loss_grad(cg, n, rows, cols, scale) : lower_loss_value(cg, n, rows, cols, scale);
}
