/* cg_group.c: the fused group a kernel computes, and its elements.
 *
 * The group's state (members, outputs, the memo of emitted elements) lives in cg->emit. A member
 * of the kernel's group has no storage: cg_load of one emits its element in place through its
 * op's emitter (codegen/lower_table.h), whose operands are read back through cg_operand, so the
 * recursion load -> member -> emitter -> operand -> load stays in this file. The emitters
 * themselves are in codegen/lower_elemwise.c, reached through the table only. */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_emission.h"
#include "codegen/cg_util.h"
#include "codegen/lower_table.h"
#include "ir/ops.h"
#include "passes/passes.h"

/* Outside a compile (no cg->emit) no group is being emitted. */
static GroupState *group_of(const Cg *cg)
{
	static GroupState none = {.leader = -1};
	return cg->emit ? &cg->emit->group : &none;
}

static bool is_member(const Graph *g, int id, int leader)
{
	return g->node[id].group == leader && g->node[id].programs != 0;
}

/* Plan-memory's blocks are 64-byte aligned (passes/plan_memory.c), as the buffer arguments say. */
enum { BUFFER_ALIGN = 64 };

/* The argument of the buffer of `bytes` bytes at arena offset off: the one bound to off, else a
 * new one; NULL (and the unit marked to be lowered again with arena_only) where the buffer overlaps
 * another argument's at a different offset, is not aligned as the arguments say, or the arguments
 * are used up, since `noalias` arguments must not overlap. */
static LLVMValueRef buffer_arg(Cg *cg, int64_t off, int64_t bytes)
{
	int64_t end = off + (bytes > 0 ? bytes : 1);
	int same = -1;
	for (int i = 0; i < cg->buffers.n; i++)
		if (cg->buffers.begin[i] == off)
			same = i;
	for (int i = 0; i < cg->buffers.n; i++)
		if (i != same && off < cg->buffers.end[i] && cg->buffers.begin[i] < end)
			goto clash;
	if (same >= 0) {
		if (end > cg->buffers.end[same])
			cg->buffers.end[same] = end;
		return cg->buffer_arg[same];
	}
	if (cg->buffers.n == CG_BUFFER_ARGS || off % BUFFER_ALIGN)
		goto clash;
	cg->buffers.begin[cg->buffers.n] = off;
	cg->buffers.end[cg->buffers.n] = end;
	return cg->buffer_arg[cg->buffers.n++];
clash:
	cg->buffers_clash = true;
	return NULL;
}

LLVMValueRef cg_size(Cg *cg, int64_t v)
{
	if (cg->arena_only)
		return cg_i64(cg, v);
	for (int i = 0; i < cg->sizes.n; i++)
		if (cg->sizes.value[i] == v)
			return cg->size_arg[i];
	if (cg->sizes.n == CG_SIZE_ARGS)
		return cg_i64(cg, v);
	cg->sizes.value[cg->sizes.n] = v;
	return cg->size_arg[cg->sizes.n++];
}

/* The start of the buffer at arena offset off: its buffer argument, or arena + off. */
static LLVMValueRef buffer_base(Cg *cg, int64_t off, int64_t bytes)
{
	LLVMValueRef arg = cg->arena_only ? NULL : buffer_arg(cg, off, bytes);
	if (arg)
		return arg;
	LLVMValueRef o = cg_i64(cg, off);
	return LLVMBuildInBoundsGEP2(cg->b, cg->t_i8, cg->arena, &o, 1, "");
}

LLVMValueRef cg_ptr(Cg *cg, int id, LLVMValueRef index)
{
	const Node *n = &cg->g->node[id];
	if (n->offset < 0)
		CG_FAIL("node %d (%s) has no storage", id, n->name ? n->name : "?");
	LLVMValueRef base = buffer_base(cg, n->offset, shape_numel(&n->shape) * (int64_t)dtype_size(n->dtype));
	return LLVMBuildInBoundsGEP2(cg->b, cg_storage_type(cg, n->dtype), base, &index, 1, "");
}

LLVMValueRef cg_ws_ptr(Cg *cg, const Node *owner, LLVMValueRef index)
{
	if (owner->ws_offset < 0)
		CG_FAIL("node %d (%s) has no workspace", owner->id, owner->name ? owner->name : "?");
	LLVMValueRef base = buffer_base(cg, owner->ws_offset, liveness_ws_bytes(cg->g, owner->id));
	return LLVMBuildInBoundsGEP2(cg->b, cg->t_f32, base, &index, 1, "ws");
}

/* ---- lanes: a work-item of a flat GPU kernel computes several consecutive elements ---- */

enum { LANE_BYTES = 16 };

static bool lane_aligned(const Node *n, int lanes)
{
	return n->op != OP_const && n->offset >= 0 && n->offset % (lanes * (int64_t)dtype_size(n->dtype)) == 0;
}

int cg_lanes_for(const Cg *cg, int64_t numel)
{
	GroupState *cur = group_of(cg);
	if (cur->cg != cg || cur->leader < 0)
		return 1;
	const Graph *g = cg->g;
	int64_t narrowest = LANE_BYTES;
	for (int i = 0; i < cur->noutputs; i++)
		if ((int64_t)dtype_size(g->node[cur->outputs[i]].dtype) < narrowest)
			narrowest = (int64_t)dtype_size(g->node[cur->outputs[i]].dtype);
	/* only a group that stores elements narrower than a word: one 2-byte store per work-item is
	 * what runs under the bandwidth (vgg16 bf16's weight casts at 60% of an H100's); groups of
	 * word-sized outputs lost by lanes (vgg16 bf16's cached small updates 0.009 -> 0.015 ms) */
	if (narrowest >= 4)
		return 1;
	for (int j = cur->first; j <= cur->leader; j++)
		for (int k = 0; is_member(g, j, cur->leader) && k < g->node[j].nin; k++) {
			const Node *in = &g->node[g->node[j].in[k]];
			if (!is_member(g, in->id, cur->leader) && shape_numel(&in->shape) == numel &&
			    (int64_t)dtype_size(in->dtype) < narrowest)
				narrowest = (int64_t)dtype_size(in->dtype);
		}
	int lanes = (int)(LANE_BYTES / narrowest);
	if (lanes > CG_MAX_LANES)
		lanes = CG_MAX_LANES;
	for (; lanes > 1; lanes /= 2) {
		bool ok = numel % lanes == 0;
		for (int i = 0; ok && i < cur->noutputs; i++)
			ok = lane_aligned(&g->node[cur->outputs[i]], lanes);
		if (ok)
			break;
	}
	return lanes;
}

void cg_lanes_begin(Cg *cg, int lanes, LLVMValueRef base, const LLVMValueRef *lin)
{
	GroupState *cur = group_of(cg);
	LaneState *l = &cur->lanes;
	*l = (LaneState){.n = lanes, .base = base};
	memcpy(l->lin, lin, (size_t)lanes * sizeof *lin);
	l->stored = calloc((size_t)(cur->noutputs ? cur->noutputs : 1) * (size_t)lanes, sizeof *l->stored);
	if (!l->stored)
		CG_FAIL("out of memory");
}

void cg_lanes_end(Cg *cg)
{
	GroupState *cur = group_of(cg);
	LaneState *l = &cur->lanes;
	for (int i = 0; i < cur->noutputs; i++) {
		const Node *n = &cg->g->node[cur->outputs[i]];
		LLVMTypeRef st = cg_storage_type(cg, n->dtype);
		LLVMValueRef v = LLVMGetUndef(LLVMVectorType(st, (unsigned)l->n));
		for (int e = 0; e < l->n; e++) {
			LLVMValueRef x = l->stored[i * l->n + e];
			if (!x)
				CG_FAIL("internal error: lane %d of node %d (%s) was not stored", e, n->id, n->name ? n->name : "?");
			v = LLVMBuildInsertElement(cg->b, v, x, LLVMConstInt(cg->t_i32, (unsigned)e, 0), "");
		}
		LLVMValueRef store = LLVMBuildStore(cg->b, v, cg_ptr(cg, n->id, l->base));
		LLVMSetAlignment(store, (unsigned)(l->n * (int)dtype_size(n->dtype)));
	}
	free(l->stored);
	*l = (LaneState){0};
}

/* Which lane index is (-1: none, or no lanes). */
static int lane_of(const LaneState *l, LLVMValueRef index)
{
	for (int e = 0; e < l->n; e++)
		if (l->lin[e] == index)
			return e;
	return -1;
}

/* Lane e of stored buffer n's vector at the lanes' base, read once per work-item; NULL where n is
 * not read that way (another index, not aligned, too many buffers). */
static LLVMValueRef lane_load(Cg *cg, const Node *n, LLVMValueRef index)
{
	LaneState *l = &group_of(cg)->lanes;
	int e = lane_of(l, index);
	if (e < 0 || !lane_aligned(n, l->n))
		return NULL;
	int r = 0;
	while (r < l->nread && l->read_id[r] != n->id)
		r++;
	if (r == l->nread) {
		if (r == CG_LANE_BUFFERS)
			return NULL;
		LLVMTypeRef vt = LLVMVectorType(cg_storage_type(cg, n->dtype), (unsigned)l->n);
		l->read[r] = LLVMBuildLoad2(cg->b, vt, cg_ptr(cg, n->id, l->base), "");
		LLVMSetAlignment(l->read[r], (unsigned)(l->n * (int)dtype_size(n->dtype)));
		l->read_id[l->nread++] = n->id;
	}
	return LLVMBuildExtractElement(cg->b, l->read[r], LLVMConstInt(cg->t_i32, (unsigned)e, 0), "");
}

/* Output id's value for lane index, kept for cg_lanes_end; false where it is not a lane's. */
static bool lane_store(Cg *cg, int id, LLVMValueRef index, LLVMValueRef v)
{
	GroupState *cur = group_of(cg);
	LaneState *l = &cur->lanes;
	int e = lane_of(l, index);
	for (int i = 0; e >= 0 && i < cur->noutputs; i++)
		if (cur->outputs[i] == id) {
			l->stored[i * l->n + e] = v;
			return true;
		}
	return false;
}

LLVMValueRef cg_load(Cg *cg, int id, LLVMValueRef index)
{
	/* a producer inside the kernel's group has no storage: its element is computed here */
	if (cg_in_group(cg, id))
		return cg_emit_member(cg, id, index);
	const Node *n = &cg->g->node[id];
	LLVMTypeRef ct = cg_compute_type(cg, n->dtype);
	if (n->op == OP_const)
		return n->dtype == DT_I32 ? LLVMConstInt(ct, (unsigned long long)(int64_t)ir_const_value(n), 1)
					  : cg_real(cg, ct, ir_const_value(n));
	LLVMTypeRef st = cg_storage_type(cg, n->dtype);
	LLVMValueRef v = lane_load(cg, n, index);
	if (!v) {
		v = LLVMBuildLoad2(cg->b, st, cg_ptr(cg, id, index), "");
		LLVMSetAlignment(v, (unsigned)dtype_size(n->dtype));
	}
	return st == ct ? v : LLVMBuildFPExt(cg->b, v, ct, "");
}

LLVMValueRef cg_load_uniform(Cg *cg, int id, int64_t index)
{
	/* lowerings always build at the end of the current block */
	LLVMBasicBlockRef here = LLVMGetInsertBlock(cg->b);
	LLVMPositionBuilderAtEnd(cg->b, cg->entry);
	LLVMValueRef v = cg_load(cg, id, cg_i64(cg, index));
	LLVMPositionBuilderAtEnd(cg->b, here);
	return v;
}

void cg_store(Cg *cg, int id, LLVMValueRef index, LLVMValueRef value)
{
	const Node *n = &cg->g->node[id];
	LLVMValueRef v = cg_convert(cg, value, cg_storage_type(cg, n->dtype));
	if (lane_store(cg, id, index, v))
		return;
	LLVMValueRef st = LLVMBuildStore(cg->b, v, cg_ptr(cg, id, index));
	LLVMSetAlignment(st, (unsigned)dtype_size(n->dtype));
}

void cg_group_begin(Cg *cg, int leader)
{
	GroupState *cur = group_of(cg);
	const Graph *g = cg->g;
	cur->cg = cg;
	cur->leader = leader;
	cur->first = cg_group_first(g, leader);
	cur->nmemo = 0;
	cur->noutputs = 0;
	cur->outputs = malloc((size_t)(leader + 1) * sizeof *cur->outputs);
	if (!cur->outputs)
		CG_FAIL("out of memory");
	for (int j = 0; j <= leader; j++)
		if (is_member(g, j, leader) && (j == leader || ir_group_output(g, j)))
			cur->outputs[cur->noutputs++] = j;
}

void cg_group_end(Cg *cg)
{
	GroupState *cur = group_of(cg);
	free(cur->outputs);
	free(cur->memo);
	free(cur->lanes.stored);
	memset(cur, 0, sizeof *cur);
	cur->leader = -1;
}

bool cg_in_group(const Cg *cg, int id)
{
	GroupState *cur = group_of(cg);
	return cur->cg == cg && cur->leader >= 0 && id != cur->leader && cg->g->node[id].group == cur->leader;
}

bool cg_group_alone(const Cg *cg)
{
	GroupState *cur = group_of(cg);
	return cur->cg != cg || cur->leader < 0 || cur->first == cur->leader;
}

int cg_group_outputs(const Cg *cg, const int **ids)
{
	GroupState *cur = group_of(cg);
	*ids = cur->cg == cg ? cur->outputs : NULL;
	return cur->cg == cg ? cur->noutputs : 0;
}

int cg_group_first(const Graph *g, int leader)
{
	for (int j = 0; j < leader; j++)
		if (is_member(g, j, leader))
			return j;
	return leader;
}

bool cg_group_reads_alongside(const Cg *cg, int anchor)
{
	GroupState *cur = group_of(cg);
	if (cur->cg != cg || cur->leader < 0)
		return false;
	const Graph *g = cg->g;
	int64_t size = shape_numel(&g->node[anchor].shape);
	for (int j = cur->first; j <= cur->leader; j++) {
		if (j == anchor || !is_member(g, j, cur->leader))
			continue;
		for (int k = 0; k < g->node[j].nin; k++) {
			int in = g->node[j].in[k];
			if (in != anchor && !is_member(g, in, cur->leader) && shape_numel(&g->node[in].shape) >= size)
				return true;
		}
	}
	return false;
}

LLVMValueRef cg_memo_get(Cg *cg, int id, LLVMValueRef lin)
{
	GroupState *cur = group_of(cg);
	LLVMBasicBlockRef here = LLVMGetInsertBlock(cg->b);
	for (int i = 0; cur->cg == cg && i < cur->nmemo; i++)
		if (cur->memo[i].id == id && cur->memo[i].lin == lin && cur->memo[i].block == here)
			return cur->memo[i].value;
	return NULL;
}

void cg_memo_put(Cg *cg, int id, LLVMValueRef lin, LLVMValueRef value)
{
	GroupState *cur = group_of(cg);
	if (cur->cg != cg)
		return;
	/* it grows: an anchor's value must find a place (a kernel emits a few hundred at most) */
	if (cur->nmemo == cur->memo_cap) {
		cur->memo_cap = cur->memo_cap ? 2 * cur->memo_cap : 64;
		cur->memo = realloc(cur->memo, (size_t)cur->memo_cap * sizeof *cur->memo);
		if (!cur->memo)
			CG_FAIL("out of memory");
	}
	cur->memo[cur->nmemo++] = (MemoEntry){id, lin, value, LLVMGetInsertBlock(cg->b)};
}

const Node *cg_group_template(const Graph *g, int leader)
{
	const Node *first = &g->node[cg_group_first(g, leader)];
	return ir_ops[first->op].pattern == PAT_ANCHOR ? first : &g->node[leader];
}

/* ---- elements of the group's members ---- */

static bool same_shape(const Node *a, const Node *b) { return shape_eq(&a->shape, &b->shape); }

LLVMValueRef cg_index_lin(Cg *cg, ElemIndex *at)
{
	if (!at->lin)
		at->lin = cg_linear(cg, at->shape, at->idx);
	return at->lin;
}

LLVMValueRef *cg_index_idx(Cg *cg, ElemIndex *at)
{
	if (!at->idx) {
		cg_delinear(cg, at->shape, at->lin, at->own);
		at->idx = at->own;
	}
	return at->idx;
}

/* The index along axis d alone (a bias's channel), without delinearizing every axis. */
LLVMValueRef cg_index_axis(Cg *cg, ElemIndex *at, int d)
{
	if (at->idx)
		return at->idx[d];
	int64_t inner = 1;
	for (int k = d + 1; k < at->shape->rank; k++)
		inner *= at->shape->dim[k];
	int64_t bound = shape_numel(at->shape);
	LLVMValueRef q = inner == 1 ? at->lin : cg_udiv_index(cg, at->lin, inner, bound, false);
	return d == 0 ? q : cg_udiv_index(cg, q, at->shape->dim[d], (bound + inner - 1) / inner, true);
}

/* Where input k of a concat begins along the axis (slice: the start). */
int64_t cg_piece_start(const Cg *cg, const Node *n, int k)
{
	if (n->op == OP_slice)
		return ir_slice_range(n).start;
	int64_t start = 0;
	for (int j = 0; j < k; j++)
		start += cg->g->node[n->in[j]].shape.dim[ir_axis(n)];
	return start;
}

/* Linear index of input k of concat or slice: the output index moved along the axis (a concat's
 * input read outside its piece is read at its nearest edge, and the select drops it). */
static LLVMValueRef piece_index(Cg *cg, const Node *n, int k, ElemIndex *at)
{
	const Shape *in = &cg->g->node[n->in[k]].shape;
	int axis = ir_axis(n);
	LLVMValueRef *idx = cg_index_idx(cg, at), sub[IR_MAX_DIMS];
	for (int d = 0; d < in->rank; d++)
		sub[d] = idx[d];
	int64_t start = cg_piece_start(cg, n, k);
	if (n->op == OP_slice) {
		sub[axis] = LLVMBuildAdd(cg->b, idx[axis], cg_i64(cg, start), "");
	} else {
		LLVMValueRef i = LLVMBuildSub(cg->b, idx[axis], cg_i64(cg, start), "");
		LLVMValueRef lo = LLVMBuildICmp(cg->b, LLVMIntSLT, i, cg_i64(cg, 0), "");
		i = LLVMBuildSelect(cg->b, lo, cg_i64(cg, 0), i, "");
		sub[axis] = cg_min_i64(cg, i, cg_i64(cg, in->dim[axis] - 1));
	}
	return cg_linear(cg, in, sub);
}

/* Linear index of operand k of n read at output index at. */
/* A transpose reads input axis p<d> at output index d. */
static LLVMValueRef transpose_index(Cg *cg, const Node *n, const Shape *in, ElemIndex *at)
{
	LLVMValueRef *idx = cg_index_idx(cg, at), src[IR_MAX_DIMS];
	int perm[IR_MAX_DIMS], rank = ir_transpose_perm(cg->g, n, perm);
	for (int d = 0; d < rank; d++)
		src[perm[d]] = idx[d];
	return cg_linear(cg, in, src);
}

static LLVMValueRef operand_index(Cg *cg, const Node *n, int k, ElemIndex *at)
{
	const Node *in = &cg->g->node[n->in[k]];
	if (shape_numel(&in->shape) == 1)
		return cg_i64(cg, 0);
	if (n->op == OP_transpose)
		return transpose_index(cg, n, &in->shape, at);
	if (op_is_concat(n->op) || n->op == OP_slice)
		return piece_index(cg, n, k, at);
	if (same_shape(in, n) || n->op == OP_reshape || n->op == OP_assign)
		return cg_index_lin(cg, at);
	if (n->op == OP_bias_add)
		return cg_index_axis(cg, at, cg_axis(ir_axis(n), n->shape.rank));
	return cg_broadcast_index(cg, &in->shape, &n->shape, cg_index_idx(cg, at));
}

static LLVMValueRef emit_at(Cg *cg, const Node *n, ElemIndex *at);

/* Member m of the kernel's group at index at of m's shape: emitted once per element. */
static LLVMValueRef member(Cg *cg, const Node *m, ElemIndex *at)
{
	LLVMValueRef lin = cg_index_lin(cg, at);
	LLVMValueRef v = cg_memo_get(cg, m->id, lin);
	if (v)
		return v;
	if (ir_ops[m->op].pattern > PAT_INJECTIVE) {
		fprintf(stderr, "internal error: %s (node %d) is read inside its group before it is computed\n",
			ir_ops[m->op].name, m->id);
		abort();
	}
	v = emit_at(cg, m, at);
	cg_memo_put(cg, m->id, lin, v);
	return v;
}

LLVMValueRef cg_emit_member(Cg *cg, int id, LLVMValueRef lin) { return cg_emit_member_at(cg, id, lin, NULL); }

LLVMValueRef cg_emit_member_at(Cg *cg, int id, LLVMValueRef lin, LLVMValueRef *idx)
{
	const Node *m = &cg->g->node[id];
	ElemIndex at = {.shape = &m->shape, .lin = lin, .idx = idx};
	return member(cg, m, &at);
}

/* Operand k at the output index, in n's compute type: a member of the kernel's group is emitted
 * (at the same index when it has n's shape), anything else loaded. */
LLVMValueRef cg_operand(Cg *cg, const Node *n, int k, ElemIndex *at)
{
	int id = n->in[k];
	const Node *in = &cg->g->node[id];
	LLVMValueRef v;
	if (cg_in_group(cg, id) && same_shape(in, n) && !op_is_concat(n->op) && n->op != OP_slice && n->op != OP_transpose) {
		v = member(cg, in, at);
	} else if (cg_in_group(cg, id)) {
		ElemIndex sub = {.shape = &in->shape, .lin = operand_index(cg, n, k, at)};
		v = member(cg, in, &sub);
	} else {
		v = shape_numel(&in->shape) == 1 ? cg_load_uniform(cg, id, 0) : cg_load(cg, id, operand_index(cg, n, k, at));
	}
	return cg_convert(cg, v, cg_compute_type(cg, n->dtype));
}

/* The op's emitter from ops.def: an op reaching the elemental path without one is a bug in the
 * fusion rules or the table, never something to guess at. */
static LLVMValueRef emit_at(Cg *cg, const Node *n, ElemIndex *at)
{
	ElemFn emit = cg_elementals[n->op];
	if (!emit) {
		fprintf(stderr, "internal error: no elemental emitter for %s (node %d, ir/ops.def)\n", ir_ops[n->op].name,
			n->id);
		abort();
	}
	return emit(cg, n, at);
}

LLVMValueRef cg_emit_element(Cg *cg, const Node *n, LLVMValueRef *idx)
{
	ElemIndex at = {.shape = &n->shape, .idx = idx};
	return emit_at(cg, n, &at);
}

/* Every output of the kernel's group at index at (the leader's shape, which every output has):
 * all values first, then the stores, so an assign never changes what another member reads. */
void cg_store_outputs(Cg *cg, ElemIndex *at)
{
	const int *ids;
	int n = cg_group_outputs(cg, &ids);
	LLVMValueRef *v = malloc((size_t)(n ? n : 1) * sizeof *v);
	if (!v)
		abort();
	for (int i = 0; i < n; i++)
		v[i] = member(cg, &cg->g->node[ids[i]], at);
	LLVMValueRef lin = cg_index_lin(cg, at);
	for (int i = 0; i < n; i++)
		cg_store(cg, ids[i], lin, v[i]);
	free(v);
}

void cg_group_epilogue(Cg *cg, int anchor, LLVMValueRef lin, LLVMValueRef v)
{
	if (cg_group_alone(cg)) {
		cg_store(cg, anchor, lin, v);
		return;
	}
	cg_memo_put(cg, anchor, lin, v);
	ElemIndex at = {.shape = &cg->g->node[anchor].shape, .lin = lin};
	cg_store_outputs(cg, &at);
}

