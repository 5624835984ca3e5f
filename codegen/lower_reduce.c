/* lower_reduce.c: sum and mean over an axis mask, softmax and log_softmax (and their gradients)
 * along an axis, and the nll_loss and cross_entropy losses (and their gradients).
 *
 * Every kernel computes whole output elements or whole rows, in a fixed order: work-groups take
 * blocks of them, so results do not depend on how the runtime splits the grid. Accumulations
 * are marked reassociable, which lets LLVM vectorize them (the order is still fixed at compile
 * time, so results repeat from run to run).
 *
 * On GPUs, short reductions (and the rows of loss gradients) take one work-item each; longer
 * ones a work-group each, whose work-items stride over the reduced elements in a fixed order and
 * then combine their partial results by a tree in LDS. The loss value is one work-group's tree
 * over the batch. No atomics: every run gives the same bits.
 *
 * A fused group may hold several sibling sums and means over one shape and the same axes
 * (passes/fuse.c): their kernel walks the elements once, with an accumulator per reduction. */
#include <math.h>

#include "codegen/cg_util.h"
#include "codegen/gemm_gpu.h"
#include "codegen/math.h"
#include "ir/ops.h"

/* Reductions up to this many elements take one GPU work-item; longer ones a work-group. */
#define GPU_SERIAL_MAX 64
/* Long reductions keep this many loads in flight per work-item, one accumulator each, added in a
 * fixed order before the tree: with one accumulator each element waited a whole memory latency
 * (vgg16's bias gradients, 3.2M elements per channel on 64 work-groups, took 5 ms each on an
 * H100). */
#define GPU_REDUCE_LANES 8
/* The work-group of a reduction whose rows are that long: every GPU target allows 1024
 * work-items, and a work-group per output leaves most of a GPU idle when outputs are few. */
#define GPU_REDUCE_BIG_BLOCK 1024

/* The work-group size for a tree over work elements: a power of two in [64, 256]. */
static int tree_block(int64_t work)
{
	int b = 64;
	while (b < CG_GPU_BLOCK && b < work)
		b *= 2;
	return b;
}

static LLVMValueRef workitem64(Cg *cg) { return LLVMBuildZExt(cg->b, cg_workitem_id(cg), cg->t_i64, ""); }
static LLVMValueRef workgroup64(Cg *cg) { return LLVMBuildZExt(cg->b, cg_workgroup_id(cg), cg->t_i64, ""); }

/* Only work-item 0 goes on (to store a work-group's result). */
static void first_item_only(Cg *cg)
{
	cg_gpu_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, cg_workitem_id(cg), cg_i32(cg, 0), ""));
}

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
	if (cg_is_gpu(cg)) { /* one item per work-item */
		cg_gpu_native(cg, CG_GPU_BLOCK);
		b.per_wg = CG_GPU_BLOCK;
		b.item.i = cg_global_id(cg);
		cg_gpu_if(cg, LLVMBuildICmp(cg->b, LLVMIntULT, b.item.i, cg_i64(cg, count), ""));
		return b;
	}
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
	if (!cg_is_gpu(cg)) {
		cg_for_end(cg, &b->item);
		cg_for_end(cg, &b->wg);
	}
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

/* The reductions one kernel computes: the node, or the sibling sums and means of its fused group
 * (passes/fuse.c), each with an accumulator over the same elements. */
typedef struct {
	const Node *r[IR_MAX_GROUP_REDUCTIONS];
	int k;
} Siblings;

static Siblings group_reductions(Cg *cg, const Node *n)
{
	Siblings s = {.k = 0};
	const int *out;
	int nout = cg_group_outputs(cg, &out);
	for (int i = 0; i < nout && s.k < IR_MAX_GROUP_REDUCTIONS; i++)
		if (ir_ops[cg->g->node[out[i]].op].pattern == PAT_REDUCE)
			s.r[s.k++] = &cg->g->node[out[i]];
	if (s.k == 0)
		s.r[s.k++] = n;
	return s;
}

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

/* What a reduction adds up for element v of its input: v itself, or for all_finite 1 where v is
 * infinite or NaN (an ordered compare, false for NaN; netc sets no fast-math flag that lets LLVM
 * assume finite values, so the test stays). */
static LLVMValueRef reduce_term(Cg *cg, const Node *n, LLVMValueRef v)
{
	if (n->op != OP_all_finite)
		return v;
	LLVMTypeRef t = LLVMTypeOf(v);
	LLVMValueRef mag = cg_intrinsic(cg, "fabs", t, &v, 1);
	LLVMValueRef ok = LLVMBuildFCmp(cg->b, LLVMRealOLT, mag, cg_real(cg, t, INFINITY), "");
	return LLVMBuildSelect(cg->b, ok, cg_real(cg, t, 0), cg_real(cg, t, 1), "");
}

/* The output element from the total of count terms: mean divides, all_finite is 1 when no
 * term counted a non-finite element. */
static LLVMValueRef reduce_finish(Cg *cg, const Node *n, LLVMValueRef v, int64_t count)
{
	LLVMTypeRef t = LLVMTypeOf(v);
	if (n->op == OP_mean)
		return LLVMBuildFDiv(cg->b, v, cg_real(cg, t, (double)count), "");
	if (n->op == OP_all_finite)
		return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOEQ, v, cg_real(cg, t, 0), ""),
				       cg_real(cg, t, 1), cg_real(cg, t, 0), "");
	return v;
}

/* The reduced axes of n (all_finite reduces every axis, or all but the first). */
static unsigned reduce_mask(const Cg *cg, const Node *n)
{
	if (n->op == OP_all_finite)
		return ((1u << cg->g->node[n->in[0]].shape.rank) - 1) & ~(ir_all_finite_rows(n) ? 1u : 0u);
	return ir_reduce_axes(n);
}

/* The term reduction r adds up at offset off of its input, in type t. idx, when not NULL, is the
 * element's index along every axis of the input, so that fused producers reading broadcast
 * operands (batch norm's per-channel statistics) need not divide it out of off per element. */
static LLVMValueRef term_at(Cg *cg, const Node *r, LLVMValueRef off, LLVMValueRef *idx, LLVMTypeRef t)
{
	int x = r->in[0];
	LLVMValueRef v = idx && cg_in_group(cg, x) ? cg_emit_member_at(cg, x, off, idx) : cg_load(cg, x, off);
	return reduce_term(cg, r, cg_convert(cg, v, t));
}

static void reduce_loops(Cg *cg, const Siblings *s, const Axis *red, int nred, LLVMValueRef off, LLVMValueRef *acc)
{
	if (nred == 0) {
		for (int i = 0; i < s->k; i++)
			acc_add(cg, acc[i], term_at(cg, s->r[i], off, NULL, LLVMGetAllocatedType(acc[i])));
		return;
	}
	CgLoop l = cg_for_begin(cg, cg_i64(cg, 0), cg_i64(cg, red->size), "r");
	LLVMValueRef o = LLVMBuildNSWAdd(cg->b, off, LLVMBuildNSWMul(cg->b, l.i, cg_i64(cg, red->stride), ""), "");
	reduce_loops(cg, s, red + 1, nred - 1, o, acc);
	cg_for_end(cg, &l);
	/* on the host, fully unrolled, googlenet's bias-gradient sums over 32 x 28 x 28 were 10,800
	 * lines of IR each and 45% of its host compile, for no speed (docs/performance.md); a GPU
	 * work-item takes this path only for short sums (GPU_SERIAL_MAX) */
	if (!cg_is_gpu(cg))
		cg_loop_no_unroll(cg, &l);
}

/* Offset of element j in [0, count) (linear over the reduced axes, the last fastest) from its
 * output's base. */
static LLVMValueRef reduced_offset(Cg *cg, const Axis *red, int nred, LLVMValueRef j, int64_t count)
{
	LLVMValueRef off = cg_i64(cg, 0);
	for (int k = nred - 1; k >= 0; k--) {
		LLVMValueRef jk = k ? cg_udiv_index(cg, j, red[k].size, count, true) : j;
		off = LLVMBuildNSWAdd(cg->b, off, LLVMBuildNSWMul(cg->b, jk, cg_i64(cg, red[k].stride), ""), "");
		if (k) {
			j = cg_udiv_index(cg, j, red[k].size, count, false);
			count = (count + red[k].size - 1) / red[k].size;
		}
	}
	return off;
}

/* Base offset in x of output element out; its index over the kept axes in idx. */
static LLVMValueRef kept_base(Cg *cg, const Shape *kept, const int64_t *kstride, LLVMValueRef out, LLVMValueRef *idx)
{
	LLVMValueRef base = cg_i64(cg, 0);
	cg_delinear(cg, kept, out, idx);
	for (int d = 0; d < kept->rank; d++)
		base = LLVMBuildNSWAdd(cg->b, base, LLVMBuildNSWMul(cg->b, idx[d], cg_i64(cg, kstride[d]), ""), "");
	return base;
}

/* The index along every axis of x (reduced ones: mask) of element j in [0, count) of the output
 * whose kept index is kidx. What a fused producer does not read, LLVM drops. */
static void element_index(Cg *cg, const Shape *xs, unsigned mask, const LLVMValueRef *kidx, LLVMValueRef j,
			  int64_t count, LLVMValueRef *idx)
{
	int nk = 0, outer = -1;
	for (int d = 0; d < xs->rank; d++)
		if (!(mask >> d & 1))
			idx[d] = kidx[nk++];
		else if (outer < 0)
			outer = d;
	for (int d = xs->rank - 1; d > outer; d--) {
		if (!(mask >> d & 1))
			continue;
		idx[d] = cg_udiv_index(cg, j, xs->dim[d], count, true);
		j = cg_udiv_index(cg, j, xs->dim[d], count, false);
		count = (count + xs->dim[d] - 1) / xs->dim[d];
	}
	if (outer >= 0)
		idx[outer] = j;
}

/* After a kernel of grid work-groups left each reduction's partial sums, slice by slice, in its
 * workspace (slices x m floats): a kernel that adds each output's partials in slice order. */
static int64_t add_slices(Cg *cg, const Siblings *s, int64_t grid, int64_t m, int64_t count, int slices)
{
	LLVMTypeRef t = cg_compute_type(cg, s->r[0]->dtype);
	cg_kernel_next(cg, grid, "sum");
	GpuGroup grp;
	LLVMValueRef e = cg_gpu_elements_begin(cg, &grp, m, &grid);
	for (int k = 0; k < s->k; k++) {
		LLVMValueRef v = NULL;
		for (int i = 0; i < slices; i++) {
			LLVMValueRef at = LLVMBuildNUWAdd(cg->b, e, cg_i64(cg, (int64_t)i * m), "");
			LLVMValueRef p = LLVMBuildLoad2(cg->b, cg->t_f32, cg_ws_ptr(cg, s->r[k], at), "");
			v = v ? LLVMBuildFAdd(cg->b, v, p, "") : p;
		}
		cg_store(cg, s->r[k]->id, e, reduce_finish(cg, s->r[k], cg_convert(cg, v, t), count));
	}
	cg_gpu_elements_end(cg, &grp);
	return grid;
}

/* A work-group per output element (and slice of its count elements, with slices > 1: the
 * partials go to the workspaces and add_slices finishes): work-items stride over the elements,
 * then a tree per reduction. */
static int64_t lower_reduce_gpu(Cg *cg, const Siblings *s, const Shape *xs, unsigned mask, const Shape *kept,
				const int64_t *kstride, const Axis *red, int nred, int64_t count, int slices)
{
	const Node *n = s->r[s->k - 1];
	int64_t m = shape_numel(&n->shape), per = (count + slices - 1) / slices;
	/* the largest work-group for the longest rows: more loads in flight on the few work-groups */
	cg_gpu_native(cg, per >= (int64_t)GPU_REDUCE_LANES * GPU_REDUCE_BIG_BLOCK * 4 ? GPU_REDUCE_BIG_BLOCK : tree_block(per));
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef sh = cg_shared_array(cg, t, cg->block, "sum");
	LLVMValueRef wg = workgroup64(cg), out = wg, slice = NULL, lo = cg_i64(cg, 0), hi = cg_i64(cg, count);
	if (slices > 1) { /* work-group wg takes slice wg % slices of output wg / slices */
		slice = LLVMBuildURem(cg->b, wg, cg_i64(cg, slices), "");
		out = LLVMBuildUDiv(cg->b, wg, cg_i64(cg, slices), "");
		lo = LLVMBuildNUWMul(cg->b, slice, cg_i64(cg, per), "");
		hi = cg_min_i64(cg, LLVMBuildNUWAdd(cg->b, lo, cg_i64(cg, per), ""), hi);
	}
	LLVMValueRef kidx[IR_MAX_DIMS], base = kept_base(cg, kept, kstride, out, kidx);
	int lanes = per >= (int64_t)GPU_REDUCE_LANES * cg->block * 4 ? GPU_REDUCE_LANES : 1;
	LLVMValueRef acc[GPU_REDUCE_LANES][IR_MAX_GROUP_REDUCTIONS];
	for (int u = 0; u < lanes; u++)
		for (int i = 0; i < s->k; i++)
			acc[u][i] = acc_new(cg, t, 0);
	/* lane u of a step takes element j + u * block (zero past the end) */
	CgLoop j = cg_for_begin(cg, LLVMBuildNUWAdd(cg->b, lo, workitem64(cg), ""), hi, "j");
	for (int u = 0; u < lanes; u++) {
		LLVMValueRef ju = LLVMBuildNUWAdd(cg->b, j.i, cg_i64(cg, (int64_t)u * cg->block), "");
		LLVMValueRef in = LLVMBuildICmp(cg->b, LLVMIntULT, ju, hi, "");
		ju = LLVMBuildSelect(cg->b, in, ju, lo, "");
		LLVMValueRef off = LLVMBuildNSWAdd(cg->b, base, reduced_offset(cg, red, nred, ju, count), "");
		LLVMValueRef idx[IR_MAX_DIMS];
		element_index(cg, xs, mask, kidx, ju, count, idx);
		for (int i = 0; i < s->k; i++) {
			LLVMValueRef term = term_at(cg, s->r[i], off, idx, t);
			acc_add(cg, acc[u][i], u ? LLVMBuildSelect(cg->b, in, term, cg_real(cg, t, 0), "") : term);
		}
	}
	cg_for_end_step(cg, &j, cg_i64(cg, (int64_t)cg->block * lanes));
	LLVMValueRef v[IR_MAX_GROUP_REDUCTIONS];
	for (int i = 0; i < s->k; i++) {
		LLVMValueRef total = acc_get(cg, acc[0][i]);
		for (int u = 1; u < lanes; u++)
			total = LLVMBuildFAdd(cg->b, total, acc_get(cg, acc[u][i]), "");
		v[i] = cg_gpu_reduce(cg, sh, total, false);
		v[i] = slices > 1 ? v[i] : reduce_finish(cg, s->r[i], v[i], count);
	}
	first_item_only(cg);
	/* the partial of (slice, output) at slice * m + output */
	LLVMValueRef part = slice ? LLVMBuildNUWAdd(cg->b, LLVMBuildNUWMul(cg->b, slice, cg_i64(cg, m), ""), out, "") : NULL;
	for (int i = 0; i < s->k; i++)
		if (part)
			LLVMBuildStore(cg->b, cg_convert(cg, v[i], cg->t_f32), cg_ws_ptr(cg, s->r[i], part));
		else
			cg_store(cg, s->r[i]->id, out, v[i]);
	return slices > 1 ? add_slices(cg, s, m * slices, m, count, slices) : m;
}

/* A column reduction (ir_reduce_slices: rows x m, the m outputs contiguous) in two kernels. The
 * first gives each work-group a band of COLUMN_WIDTH consecutive outputs (fewer where m is) and a
 * slice of the rows. A work-item reads `vec` consecutive outputs of a row at once (16 bytes where
 * the inputs allow it, column_vec), a row of the band takes `across` work-items, and a warp reads
 * per_warp = 32 / across rows side by side: lane l of warp w sums rows w * per_warp + l / across,
 * then every warps * per_warp-th after it, of its slice (GPU_REDUCE_LANES in flight). The sums go
 * through LDS, and the band's first work-items add them, one output each, in warp and row order
 * and store the slice's partial. The second kernel adds each output's partials in slice order. One
 * 2-byte load per work-item read vgg16 bf16's 224 x 224 x 64 bias gradient at 52% of an H100's
 * bandwidth, 16 bytes at 89%; bands of 256 outputs left alexnet's 256-channel ones 21 work-groups
 * (docs/performance.md, 2026-12-07). */
#define COLUMN_WIDTH 32
#define COLUMN_WARPS 8
#define COLUMN_BYTES 16

/* Outputs a work-item reads of a row: as many as fill COLUMN_BYTES of each input where every
 * input is a stored buffer that those runs keep aligned (m a multiple, a block's start), else 1. */
static int column_vec(Cg *cg, const Siblings *s, int64_t m)
{
	int vec = COLUMN_BYTES;
	for (int i = 0; i < s->k; i++) {
		const Node *x = &cg->g->node[s->r[i]->in[0]];
		int size = (int)dtype_size(x->dtype);
		if (cg_in_group(cg, x->id) || x->op == OP_const || x->offset < 0 || size > COLUMN_BYTES)
			return 1;
		if (COLUMN_BYTES / size < vec)
			vec = COLUMN_BYTES / size;
	}
	for (int i = 0; i < s->k; i++) {
		const Node *x = &cg->g->node[s->r[i]->in[0]];
		if (m % vec || x->offset % (vec * (int64_t)dtype_size(x->dtype)))
			return 1;
	}
	return vec;
}

/* Reduction r's terms of outputs off .. off + vec - 1 of a row (zeros where !in): one aligned
 * vector load where vec > 1. */
static void column_terms(Cg *cg, const Node *r, LLVMValueRef off, LLVMValueRef in, int vec, LLVMTypeRef t,
			 LLVMValueRef *terms)
{
	LLVMValueRef zero = cg_real(cg, t, 0);
	if (vec == 1) {
		terms[0] = LLVMBuildSelect(cg->b, in, term_at(cg, r, off, NULL, t), zero, "");
		return;
	}
	const Node *x = &cg->g->node[r->in[0]];
	LLVMTypeRef st = cg_storage_type(cg, x->dtype);
	LLVMValueRef v = LLVMBuildLoad2(cg->b, LLVMVectorType(st, (unsigned)vec), cg_ptr(cg, x->id, off), "");
	LLVMSetAlignment(v, (unsigned)(vec * (int)dtype_size(x->dtype)));
	for (int e = 0; e < vec; e++) {
		LLVMValueRef elem = LLVMBuildExtractElement(cg->b, v, LLVMConstInt(cg->t_i32, (unsigned)e, 0), "");
		terms[e] = LLVMBuildSelect(cg->b, in, reduce_term(cg, r, cg_convert(cg, elem, t)), zero, "");
	}
}

static int64_t lower_reduce_columns_gpu(Cg *cg, const Siblings *s, int64_t m, int64_t rows, int slices)
{
	LLVMTypeRef t = cg_compute_type(cg, s->r[0]->dtype);
	int vec = column_vec(cg, s, m);
	int64_t across = 1;
	while (across * vec < COLUMN_WIDTH && across * vec < m)
		across *= 2;
	int64_t per_warp = COLUMN_WIDTH / across, width = across * vec, step = COLUMN_WARPS * per_warp;
	int64_t bands = (m + width - 1) / width, per = (rows + slices - 1) / slices;
	GpuGroup grp;
	LLVMValueRef wg = cg_gpu_group_begin(cg, &grp, COLUMN_WIDTH * COLUMN_WARPS);
	LLVMValueRef sh[IR_MAX_GROUP_REDUCTIONS];
	for (int i = 0; i < s->k; i++)
		sh[i] = cg_gpu_shared(cg, &grp, t, grp.block * vec, "columns");
	LLVMValueRef slice = LLVMBuildUDiv(cg->b, wg, cg_i64(cg, bands), "");
	LLVMValueRef col0 = LLVMBuildNUWMul(cg->b, LLVMBuildURem(cg->b, wg, cg_i64(cg, bands), ""), cg_i64(cg, width), "");
	LLVMValueRef lo = LLVMBuildNUWMul(cg->b, slice, cg_i64(cg, per), "");
	LLVMValueRef hi = LLVMBuildNUWAdd(cg->b, lo, cg_i64(cg, per), "");
	hi = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, hi, cg_i64(cg, rows), ""), hi, cg_i64(cg, rows), "");

	LLVMValueRef tid = cg_gpu_phase_begin(cg, &grp);
	LLVMValueRef lane = LLVMBuildURem(cg->b, tid, cg_i64(cg, COLUMN_WIDTH), "");
	LLVMValueRef warp = LLVMBuildUDiv(cg->b, tid, cg_i64(cg, COLUMN_WIDTH), "");
	LLVMValueRef first_row = LLVMBuildNUWAdd(cg->b, LLVMBuildNUWMul(cg->b, warp, cg_i64(cg, per_warp), ""),
						 LLVMBuildUDiv(cg->b, lane, cg_i64(cg, across), ""), "");
	LLVMValueRef sub = LLVMBuildURem(cg->b, lane, cg_i64(cg, across), "");
	LLVMValueRef col = LLVMBuildNUWAdd(cg->b, col0, LLVMBuildNUWMul(cg->b, sub, cg_i64(cg, vec), ""), "col");
	LLVMValueRef col_ok = LLVMBuildICmp(cg->b, LLVMIntULT, col, cg_i64(cg, m), "");
	LLVMValueRef acc[GPU_REDUCE_LANES][IR_MAX_GROUP_REDUCTIONS][COLUMN_BYTES];
	for (int u = 0; u < GPU_REDUCE_LANES; u++)
		for (int i = 0; i < s->k; i++)
			for (int e = 0; e < vec; e++)
				acc[u][i][e] = acc_new(cg, t, 0);
	/* lane u of a step takes row r + u * step (zero past the slice or the outputs) */
	CgLoop r = cg_for_begin(cg, LLVMBuildNUWAdd(cg->b, lo, first_row, ""), hi, "r");
	for (int u = 0; u < GPU_REDUCE_LANES; u++) {
		LLVMValueRef ru = LLVMBuildNUWAdd(cg->b, r.i, cg_i64(cg, (int64_t)u * step), "");
		LLVMValueRef in = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, ru, hi, ""), col_ok, "");
		LLVMValueRef off = LLVMBuildNUWAdd(cg->b, LLVMBuildNUWMul(cg->b, ru, cg_i64(cg, m), ""), col, "");
		off = LLVMBuildSelect(cg->b, in, off, cg_i64(cg, 0), "");
		for (int i = 0; i < s->k; i++) {
			LLVMValueRef terms[COLUMN_BYTES];
			column_terms(cg, s->r[i], off, in, vec, t, terms);
			for (int e = 0; e < vec; e++)
				acc_add(cg, acc[u][i][e], terms[e]);
		}
	}
	cg_for_end_step(cg, &r, cg_i64(cg, step * GPU_REDUCE_LANES));
	for (int i = 0; i < s->k; i++)
		for (int e = 0; e < vec; e++) {
			LLVMValueRef total = acc_get(cg, acc[0][i][e]);
			for (int u = 1; u < GPU_REDUCE_LANES; u++)
				total = LLVMBuildFAdd(cg->b, total, acc_get(cg, acc[u][i][e]), "");
			LLVMValueRef at = LLVMBuildNUWAdd(cg->b, LLVMBuildNUWMul(cg->b, tid, cg_i64(cg, vec), ""), cg_i64(cg, e), "");
			LLVMBuildStore(cg->b, total, LLVMBuildInBoundsGEP2(cg->b, t, sh[i], &at, 1, ""));
		}
	cg_gpu_phase_end(cg, &grp, true);

	/* output c of the band: work-item c adds the sums of its column in warp and row order; the
	 * work-item that read it in row q of warp w stored it at ((w * 32 + q * across + c / vec) * vec
	 * + c % vec), that is at c + (w * 32 + q * across) * vec */
	tid = cg_gpu_phase_begin(cg, &grp);
	col = LLVMBuildNUWAdd(cg->b, col0, tid, "col");
	LLVMValueRef first = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, tid, cg_i64(cg, width), ""),
					  LLVMBuildICmp(cg->b, LLVMIntULT, col, cg_i64(cg, m), ""), "");
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "partial");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "partial_done");
	LLVMBuildCondBr(cg->b, first, then, done);
	LLVMPositionBuilderAtEnd(cg->b, then);
	LLVMValueRef idx = LLVMBuildNUWAdd(cg->b, LLVMBuildNUWMul(cg->b, slice, cg_i64(cg, m), ""), col, "");
	for (int i = 0; i < s->k; i++) {
		LLVMValueRef sum = NULL;
		for (int64_t q = 0; q < COLUMN_WARPS * per_warp; q++) {
			int64_t w = q / per_warp, row = q % per_warp;
			LLVMValueRef at = LLVMBuildNUWAdd(cg->b, tid, cg_i64(cg, (w * COLUMN_WIDTH + row * across) * vec), "");
			LLVMValueRef v = LLVMBuildLoad2(cg->b, t, LLVMBuildInBoundsGEP2(cg->b, t, sh[i], &at, 1, ""), "");
			sum = sum ? LLVMBuildFAdd(cg->b, sum, v, "") : v;
		}
		LLVMBuildStore(cg->b, cg_convert(cg, sum, cg->t_f32), cg_ws_ptr(cg, s->r[i], idx));
	}
	LLVMBuildBr(cg->b, done);
	LLVMPositionBuilderAtEnd(cg->b, done);
	cg_gpu_phase_end(cg, &grp, false);
	cg_gpu_group_end(cg, &grp);

	return add_slices(cg, s, (int64_t)slices * bands, m, rows, slices);
}

int64_t cg_lower_reduce(Cg *cg, const Node *n)
{
	int x = n->in[0];
	const Shape *xs = &cg->g->node[x].shape;
	Shape kept;
	int64_t kstride[IR_MAX_DIMS];
	Axis red[IR_MAX_DIMS];
	int nred;
	split_axes(xs, reduce_mask(cg, n), &kept, kstride, red, &nred);
	int64_t m = shape_numel(&n->shape), count = m ? shape_numel(xs) / m : 0;
	Siblings s = group_reductions(cg, n);
	bool have_ws = true;
	for (int i = 0; i < s.k; i++)
		have_ws &= s.r[i]->ws_offset >= 0;
	int slices = cg_gpu_paths(cg) && have_ws ? ir_reduce_slices(cg->g, n) : 1;
	if (slices > 1 && ir_reduce_columns(cg->g, n))
		return lower_reduce_columns_gpu(cg, &s, m, count, slices);
	if (cg_is_gpu(cg) && m > 0 && count > GPU_SERIAL_MAX)
		return lower_reduce_gpu(cg, &s, xs, reduce_mask(cg, n), &kept, kstride, red, nred, count, slices);

	Blocks b = blocks_begin(cg, m, count * s.k);
	LLVMValueRef kidx[IR_MAX_DIMS], base = kept_base(cg, &kept, kstride, b.item.i, kidx);
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	LLVMValueRef acc[IR_MAX_GROUP_REDUCTIONS];
	for (int i = 0; i < s.k; i++)
		acc[i] = acc_new(cg, t, 0);
	reduce_loops(cg, &s, red, nred, base, acc);
	for (int i = 0; i < s.k; i++)
		cg_store(cg, s.r[i]->id, b.item.i, reduce_finish(cg, s.r[i], acc_get(cg, acc[i]), count));
	return blocks_end(cg, &b);
}

/* ---- rows: softmax along an axis, losses along the class axis ---- */

/* A row of len elements at base + j * stride in the buffers of the nodes it reads. One
 * work-item walks all of it, or (sh set) a work-group does: each work-item takes j = lo, lo + step,
 * ... and row_total combines their partial results in sh. */
typedef struct {
	LLVMValueRef base;
	int64_t len, stride;
	LLVMTypeRef t;   /* compute type */
	LLVMValueRef lo; /* NULL: 0 */
	int64_t step;    /* 0: 1 */
	LLVMValueRef sh; /* NULL: one work-item has the whole row */
} Row;

/* The row split over a GPU work-group of cg->block work-items, with its LDS array. */
static void row_split(Cg *cg, Row *r)
{
	r->lo = workitem64(cg);
	r->step = cg->block;
	r->sh = cg_shared_array(cg, r->t, cg->block, "row");
}

static CgLoop row_begin(Cg *cg, const Row *r)
{
	return cg_for_begin(cg, r->lo ? r->lo : cg_i64(cg, 0), cg_i64(cg, r->len), "j");
}

static void row_end(Cg *cg, const Row *r, CgLoop *l) { cg_for_end_step(cg, l, cg_i64(cg, r->step ? r->step : 1)); }

/* The row's total of this work-item's partial v. */
static LLVMValueRef row_total(Cg *cg, const Row *r, LLVMValueRef v, bool max)
{
	return r->sh ? cg_gpu_reduce(cg, r->sh, v, max) : v;
}

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
	CgLoop l = row_begin(cg, r);
	acc_max(cg, acc, row_load(cg, r, x, l.i));
	row_end(cg, r, &l);
	return row_total(cg, r, acc_get(cg, acc), true);
}

/* sum over the row of exp(x - shift) */
static LLVMValueRef row_sum_exp(Cg *cg, const Row *r, int x, LLVMValueRef shift)
{
	LLVMValueRef acc = acc_new(cg, r->t, 0);
	CgLoop l = row_begin(cg, r);
	acc_add(cg, acc, cg_exp(cg, LLVMBuildFSub(cg->b, row_load(cg, r, x, l.i), shift, "")));
	row_end(cg, r, &l);
	return row_total(cg, r, acc_get(cg, acc), false);
}

/* sum over the row of a (times b when b >= 0) */
static LLVMValueRef row_sum(Cg *cg, const Row *r, int a, int b)
{
	LLVMValueRef acc = acc_new(cg, r->t, 0);
	CgLoop l = row_begin(cg, r);
	LLVMValueRef v = row_load(cg, r, a, l.i);
	acc_add(cg, acc, b >= 0 ? LLVMBuildFMul(cg->b, v, row_load(cg, r, b, l.i), "") : v);
	row_end(cg, r, &l);
	return row_total(cg, r, acc_get(cg, acc), false);
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

/* Row `row` of the [outer, len, inner] view of n's operands. */
static Row softmax_row(Cg *cg, const Node *n, LLVMValueRef row, int64_t inner, int64_t len)
{
	LLVMValueRef o = LLVMBuildUDiv(cg->b, row, cg_i64(cg, inner), "");
	LLVMValueRef k = LLVMBuildURem(cg->b, row, cg_i64(cg, inner), "");
	LLVMValueRef base = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, o, cg_i64(cg, len * inner), ""), k, "");
	return (Row){.base = base, .len = len, .stride = inner, .t = cg_compute_type(cg, n->dtype)};
}

/* The row's statistics, then its elements. */
static void softmax_rowwise(Cg *cg, const Node *n, const Row *r)
{
	RowStats s = softmax_stats(cg, n, r);
	CgLoop l = row_begin(cg, r);
	cg_store(cg, n->id, row_at(cg, r, l.i), softmax_element(cg, n, r, &s, l.i));
	row_end(cg, r, &l);
}

/* GPUs, long rows: a work-group per row. */
static int64_t lower_softmax_gpu(Cg *cg, const Node *n, int64_t rows, int64_t inner, int64_t len)
{
	cg_gpu_native(cg, tree_block(len));
	Row r = softmax_row(cg, n, workgroup64(cg), inner, len);
	row_split(cg, &r);
	softmax_rowwise(cg, n, &r);
	return rows;
}

int64_t cg_lower_softmax(Cg *cg, const Node *n)
{
	int axis = cg_axis(ir_axis(n), n->shape.rank);
	int64_t outer = 1, inner = 1, len = n->shape.dim[axis];
	for (int d = 0; d < n->shape.rank; d++)
		if (d != axis)
			*(d < axis ? &outer : &inner) *= n->shape.dim[d];
	if (outer * inner * len == 0)
		return 1;
	if (cg_is_gpu(cg) && len > GPU_SERIAL_MAX)
		return lower_softmax_gpu(cg, n, outer * inner, inner, len);
	Blocks b = blocks_begin(cg, outer * inner, len);
	Row r = softmax_row(cg, n, b.item.i, inner, len);
	softmax_rowwise(cg, n, &r);
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
	/* one work-group, rows in a fixed order (on GPUs strided over its work-items, then a tree) */
	Row batch = {.base = cg_i64(cg, 0), .len = rows, .stride = 1, .t = t};
	if (cg_is_gpu(cg)) {
		cg_gpu_native(cg, tree_block(rows));
		row_split(cg, &batch);
	}
	LLVMValueRef acc = acc_new(cg, t, 0);
	CgLoop i = row_begin(cg, &batch);
	Row r = {.base = LLVMBuildNSWMul(cg->b, i.i, cg_i64(cg, cols), ""), .len = cols, .stride = 1, .t = t};
	LLVMValueRef valid, l = label_of(cg, n->in[1], i.i, cols, &valid);
	LLVMValueRef v = LLVMBuildFNeg(cg->b, row_load(cg, &r, x, l), "");
	if (n->op == OP_cross_entropy) {
		LLVMValueRef m = row_max(cg, &r, x);
		LLVMValueRef lse = LLVMBuildFAdd(cg->b, m, cg_log(cg, row_sum_exp(cg, &r, x, m)), "");
		v = LLVMBuildFAdd(cg->b, lse, v, "");
	}
	LLVMValueRef sum = LLVMBuildFAdd(cg->b, acc_get(cg, acc), v, "");
	LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, valid, sum, acc_get(cg, acc), ""), acc);
	row_end(cg, &batch, &i);
	LLVMValueRef total = row_total(cg, &batch, acc_get(cg, acc), false);
	if (batch.sh)
		first_item_only(cg);
	cg_store(cg, n->id, cg_i64(cg, 0), LLVMBuildFMul(cg->b, total, cg_real(cg, t, scale), ""));
	return 1;
}

/* Row i of dscores[i, c] = dloss * scale * ((softmax(x_i)[c] when cross_entropy) - [c == label]) */
static void loss_grad_row(Cg *cg, const Node *n, Row *r, LLVMValueRef i, double scale)
{
	LLVMBuilderRef b = cg->b;
	int x = n->in[1];
	LLVMTypeRef t = r->t;
	LLVMValueRef valid, l = label_of(cg, n->in[2], i, r->len, &valid);
	LLVMValueRef dl = cg_convert(cg, cg_load_uniform(cg, n->in[0], 0), t);
	LLVMValueRef k = LLVMBuildFMul(b, dl, cg_real(cg, t, scale), "");
	k = LLVMBuildSelect(b, valid, k, cg_real(cg, t, 0), "");
	RowStats s = {0};
	if (n->op == OP_cross_entropy_grad) {
		s.max = row_max(cg, r, x);
		s.sum = row_sum_exp(cg, r, x, s.max);
	}
	CgLoop j = row_begin(cg, r);
	LLVMValueRef one = LLVMBuildICmp(b, LLVMIntEQ, j.i, l, "");
	LLVMValueRef v = LLVMBuildSelect(b, one, cg_real(cg, t, -1), cg_real(cg, t, 0), "");
	if (n->op == OP_cross_entropy_grad) {
		LLVMValueRef p = LLVMBuildFDiv(b, cg_exp(cg, LLVMBuildFSub(b, row_load(cg, r, x, j.i), s.max, "")), s.sum, "");
		v = LLVMBuildFAdd(b, p, v, "");
	}
	cg_store(cg, n->id, row_at(cg, r, j.i), LLVMBuildFMul(b, v, k, ""));
	row_end(cg, r, &j);
}

/* A row per work-item, or on GPUs, for rows longer than GPU_SERIAL_MAX, a work-group per row (one
 * work-item walking alexnet's 1000 classes three times took 0.28 ms of its step on an H100). */
static int64_t lower_loss_grad(Cg *cg, const Node *n, int64_t rows, int64_t cols, double scale)
{
	LLVMTypeRef t = cg_compute_type(cg, n->dtype);
	if (cg_is_gpu(cg) && cols > GPU_SERIAL_MAX) {
		cg_gpu_native(cg, tree_block(cols));
		LLVMValueRef i = workgroup64(cg);
		Row r = {.base = LLVMBuildNSWMul(cg->b, i, cg_i64(cg, cols), ""), .len = cols, .stride = 1, .t = t};
		row_split(cg, &r);
		loss_grad_row(cg, n, &r, i, scale);
		return rows;
	}
	Blocks blk = blocks_begin(cg, rows, cols);
	Row r = {.base = LLVMBuildNSWMul(cg->b, blk.item.i, cg_i64(cg, cols), ""), .len = cols, .stride = 1, .t = t};
	loss_grad_row(cg, n, &r, blk.item.i, scale);
	return blocks_end(cg, &blk);
}

int64_t cg_lower_loss(Cg *cg, const Node *n)
{
	bool grad = n->op == OP_nll_loss_grad || n->op == OP_cross_entropy_grad;
	const Shape *xs = &cg->g->node[n->in[grad ? 1 : 0]].shape;
	int64_t rows = xs->dim[0], cols = xs->dim[1];
	double scale = ir_loss_is_mean(n) && rows > 0 ? 1.0 / (double)rows : 1.0;
	if (rows * cols == 0 && grad)
		return 1;
	return grad ? lower_loss_grad(cg, n, rows, cols, scale) : lower_loss_value(cg, n, rows, cols, scale);
}
