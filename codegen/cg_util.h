/* cg_util.h: helpers the lowerings share beyond codegen/cg.h: index arithmetic, fast-math flags,
 * work-group partitions, the fused group and its elements. */
#ifndef NETC_CG_UTIL_H
#define NETC_CG_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "codegen/lower_table.h"

/* Elements a work-group aims at: enough to amortize a thread-pool dispatch, small enough that
 * a grid has work for every core. */
#define CG_WG_ELEMENTS 16384
/* Work-items per work-group of GPU kernels that do not pick their own (cg->block). */
#define CG_GPU_BLOCK 256

/* A bug in netc, never the user's input: says where and aborts. */
#define CG_FAIL(...) (fprintf(stderr, "%s:%d: internal error: ", __FILE__, __LINE__), \
		      fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), abort())

/* ---- codegen/cg_build.c ---- */
/* Row-major linear index of idx[0..s->rank) in shape s. */
LLVMValueRef cg_linear(Cg *cg, const Shape *s, LLVMValueRef *idx);
/* idx[0..s->rank) of linear index lin in shape s. */
void cg_delinear(Cg *cg, const Shape *s, LLVMValueRef lin, LLVMValueRef *idx);
/* lin / d (rem: lin % d) for an i64 index known to lie in [0, bound): in 32 bits where bound and d
 * allow, widened back, since a GPU divides 64-bit integers in many instructions even by constants
 * (the index math of a broadcast operand then outweighed the memory traffic of batch norm's
 * reductions). */
LLVMValueRef cg_udiv_index(Cg *cg, LLVMValueRef lin, int64_t d, int64_t bound, bool rem);
/* Linear index into a tensor of shape in read at output index idx of shape out, with numpy
 * broadcasting (axes aligned at the right, size-1 axes of in read at 0). */
LLVMValueRef cg_broadcast_index(Cg *cg, const Shape *in, const Shape *out, LLVMValueRef *idx);
LLVMValueRef cg_min_i64(Cg *cg, LLVMValueRef a, LLVMValueRef b);
/* Marks a floating-point accumulation reassociable so LLVM may vectorize the reduction. */
LLVMValueRef cg_reassoc(LLVMValueRef v);
/* Converts a value to type t (float<->float, int->float, float->int, int width). */
LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, LLVMTypeRef t);
/* A compute-type value rounded as dtype stores it (half: through its storage type), still of
 * the compute type: what an elemental of a half node yields when fused, as its reference rounds. */
LLVMValueRef cg_round_as(Cg *cg, LLVMValueRef v, DType dtype);
/* Normalizes a possibly negative axis attribute against rank. */
int cg_axis(double attr, int rank);
/* cg_for_end for a loop that steps by step (i64 > 0) instead of 1. */
void cg_for_end_step(Cg *cg, CgLoop *loop, LLVMValueRef step);
/* Asks LLVM not to unroll a closed loop (the vectorizer may still interleave it): for loops whose
 * unrolled copies would cost compile time and buy nothing (memory-bound sums). */
void cg_loop_no_unroll(Cg *cg, const CgLoop *loop);
/* A read-only table of n i64 values made at compile time, private to the kernel being emitted (its
 * name is the kernel's plus `what`), in the arena's address space. */
LLVMValueRef cg_const_table(Cg *cg, const char *what, const int64_t *v, int64_t n);
/* Entry idx (i64, in range) of a cg_const_table: an invariant load. */
LLVMValueRef cg_table_load(Cg *cg, LLVMValueRef table, LLVMValueRef idx);

/* ---- codegen/cg_driver.c ---- */
/* For a group that needs more than one launch (split-K: partial products, then their sum): closes
 * the kernel being emitted, whose part of the lowering ran over `grid` work-groups, and opens the
 * group's next kernel, k<leader>_<op>_<suffix>, launched after it. The builder is left in the new
 * kernel's body with cg->fn, arena, entry, wg_begin and wg_end its own and gpu_native and block
 * reset; the lowering returns the last kernel's grid as usual. */
void cg_kernel_next(Cg *cg, int64_t grid, const char *suffix);
/* The arena slot of tensor map `which` (0 or 1) of the kernel being emitted: past the plan's
 * arena, one 128-byte slot per node and map, so that a kernel's slots are its own however the
 * units are compiled (the bundle grows the arena over the slots used, codegen/make_bundle.c). */
int64_t cg_tensor_map_slot(const Cg *cg, int which);
/* Records tensor map m as one the kernel being emitted reads (CgKernel.tmaps). */
void cg_tensor_map_add(Cg *cg, const BundleTensorMap *m);


/* ---- codegen/cg_gpu.c: for lowerings written for GPUs ---- */
/* Makes the kernel GPU-native with block work-items per work-group. */
void cg_gpu_native(Cg *cg, int block);
/* Asks the target to keep `waves` waves of the kernel resident per SIMD, four SIMDs to a compute
 * unit (NVIDIA: warps per SM sub-partition; minctasm, so ptxas caps the registers to fit them;
 * AMD: amdgpu-waves-per-eu, the VGPR budget of that many waves). */
void cg_gpu_waves(Cg *cg, int waves);
/* work-group id * cg->block + work-item id, as i64 */
LLVMValueRef cg_global_id(Cg *cg);
/* The kernel goes on where cond holds and returns where it does not (a bounds guard; no barrier
 * may follow it). */
void cg_gpu_if(Cg *cg, LLVMValueRef cond);
/* Sum (or maximum) of v over the work-group's cg->block work-items (a power of two) by a tree
 * in sh (cg->block elements of v's type, from cg_shared_array), in a fixed order: every
 * work-item gets the result. */
LLVMValueRef cg_gpu_reduce(Cg *cg, LLVMValueRef sh, LLVMValueRef v, bool max);

/* ---- fused groups: the kernel being emitted computes one group (codegen/cg_group.c) ----
 *
 * A group's kernel is its leader's (Node.group); the lowering that emits it is its anchor's when
 * it has one (its first member), else its leader's. Members inside the group have no storage:
 * cg_load of one computes its element in place (the lowerings of reductions read their input
 * through it, which fuses elementwise producers into them). */
/* Whether node id is a member of the kernel's group other than its leader. */
bool cg_in_group(const Cg *cg, int id);
/* Whether the kernel's group is one node (it compiles exactly as an unfused node). */
bool cg_group_alone(const Cg *cg);
/* The group outputs (ir_group_output) of the kernel's group, in node order; returns their count. */
int cg_group_outputs(const Cg *cg, const int **ids);
/* The first member of leader's group (the anchor of an anchor group). */
int cg_group_first(const Graph *g, int leader);
/* Whether a member of the kernel's group other than `anchor` reads, element for element, a tensor
 * from outside the group at least as large as anchor's result (relu_grad's forward output): the
 * epilogue then loads as it stores. */
bool cg_group_reads_alongside(const Cg *cg, int anchor);
/* Element values already emitted: node id's element at linear index lin, valid in the block the
 * builder is in (NULL when none). Keeps a value used twice from being computed twice. */
LLVMValueRef cg_memo_get(Cg *cg, int id, LLVMValueRef lin);
void cg_memo_put(Cg *cg, int id, LLVMValueRef lin, LLVMValueRef value);
/* cg_load of one element the kernel only reads, done once in the entry block: a load inside the
 * loop could alias the kernel's stores and would keep LLVM from vectorizing the loop. */
LLVMValueRef cg_load_uniform(Cg *cg, int id, int64_t index);

/* Lanes: a work-item of a flat GPU kernel computes `lanes` consecutive elements at lin[0..lanes)
 * from base (a multiple of lanes); between begin and end, a stored buffer read at lin[e] is read
 * as one aligned vector per work-item, and each group output is stored as one at end.
 * cg_lanes_for gives the lanes of the kernel's group over numel elements: where it stores elements
 * narrower than a word, as many as fill 16 bytes of its narrowest buffer, where numel and every
 * output's offset allow it; else 1. */
#define CG_MAX_LANES 8
int cg_lanes_for(const Cg *cg, int64_t numel);
void cg_lanes_begin(Cg *cg, int lanes, LLVMValueRef base, const LLVMValueRef *lin);
void cg_lanes_end(Cg *cg);

/* An output index in shape: idx (one value per axis) and/or lin (row-major); whichever is
 * missing is computed when first asked for. */
struct ElemIndex {
	const Shape *shape;
	LLVMValueRef *idx;
	LLVMValueRef lin;
	LLVMValueRef own[IR_MAX_DIMS];
};
LLVMValueRef cg_index_lin(Cg *cg, ElemIndex *at);
LLVMValueRef *cg_index_idx(Cg *cg, ElemIndex *at);
/* The index along axis d alone (a bias's channel), without delinearizing every axis. */
LLVMValueRef cg_index_axis(Cg *cg, ElemIndex *at, int d);
/* Where input k of a concat begins along the axis (slice: the start). */
int64_t cg_piece_start(const Cg *cg, const Node *n, int k);
/* Operand k of n at output index at, in n's compute type: a member of the kernel's group is
 * emitted (memoized), anything else loaded. The emitters (codegen/lower_elemwise.c) read their
 * operands with it. */
LLVMValueRef cg_operand(Cg *cg, const Node *n, int k, ElemIndex *at);
/* The value of node n's element at index idx[0..n->shape.rank), in n's compute type. Inputs are
 * loaded (with broadcasting), or emitted in place when they are members of the kernel's group. */
LLVMValueRef cg_emit_element(Cg *cg, const Node *n, LLVMValueRef *idx);
/* Group member id's element at linear index lin of its shape, in its compute type (memoized). */
LLVMValueRef cg_emit_member(Cg *cg, int id, LLVMValueRef lin);
/* The same with the element's index along every axis of the member's shape known (idx[0..rank),
 * kept for the emission): readers of broadcast operands take it instead of dividing lin. */
LLVMValueRef cg_emit_member_at(Cg *cg, int id, LLVMValueRef lin, LLVMValueRef *idx);
/* Stores anchor's finished element v at linear index lin. Alone in its group: the plain store.
 * Fused: the epilogue, every group output evaluated at lin with v as the anchor's value and
 * stored (the anchor itself only when it is a group output). */
void cg_group_epilogue(Cg *cg, int anchor, LLVMValueRef lin, LLVMValueRef v);
/* Every output of the kernel's group at index at (the leader's shape, which every output has):
 * all values first, then the stores, so an assign never changes what another member reads. */
void cg_store_outputs(Cg *cg, ElemIndex *at);

#endif
