/* cg_util.h: helpers the lowerings share beyond codegen/cg.h: index arithmetic, fast-math flags,
 * work-group partitions and the elemental emitters. */
#ifndef NETC_CG_UTIL_H
#define NETC_CG_UTIL_H

#include "codegen/cg.h"

/* Elements a work-group aims at: enough to amortize a thread-pool dispatch, small enough that
 * a grid has work for every core. */
#define CG_WG_ELEMENTS 16384
/* Work-items per work-group of GPU kernels that do not pick their own (cg->block). */
#define CG_GPU_BLOCK 256

/* ---- codegen/cg_core.c ---- */
/* Row-major linear index of idx[0..s->rank) in shape s. */
LLVMValueRef cg_linear(Cg *cg, const Shape *s, LLVMValueRef *idx);
/* idx[0..s->rank) of linear index lin in shape s. */
void cg_delinear(Cg *cg, const Shape *s, LLVMValueRef lin, LLVMValueRef *idx);
/* Linear index into a tensor of shape in read at output index idx of shape out, with numpy
 * broadcasting (axes aligned at the right, size-1 axes of in read at 0). */
LLVMValueRef cg_broadcast_index(Cg *cg, const Shape *in, const Shape *out, LLVMValueRef *idx);
/* cg_load of one element the kernel only reads, done once in the entry block: a load inside the
 * loop could alias the kernel's stores and would keep LLVM from vectorizing the loop. */
LLVMValueRef cg_load_uniform(Cg *cg, int id, int64_t index);
LLVMValueRef cg_min_i64(Cg *cg, LLVMValueRef a, LLVMValueRef b);
/* Marks a floating-point accumulation reassociable so LLVM may vectorize the reduction. */
LLVMValueRef cg_reassoc(LLVMValueRef v);
/* Converts a value to type t (float<->float, int->float, float->int, int width). */
LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, LLVMTypeRef t);
/* Normalizes a possibly negative axis attribute against rank. */
int cg_axis(double attr, int rank);

/* cg_for_end for a loop that steps by step (i64 > 0) instead of 1. */
void cg_for_end_step(Cg *cg, CgLoop *loop, LLVMValueRef step);

/* ---- codegen/cg_gpu.c: for lowerings written for GPUs ---- */
/* Makes the kernel GPU-native with block work-items per work-group. */
void cg_gpu_native(Cg *cg, int block);
/* work-group id * cg->block + work-item id, as i64 */
LLVMValueRef cg_global_id(Cg *cg);
/* The kernel goes on where cond holds and returns where it does not (a bounds guard; no barrier
 * may follow it). */
void cg_gpu_if(Cg *cg, LLVMValueRef cond);
/* Sum (or maximum) of v over the work-group's cg->block work-items (a power of two) by a tree
 * in sh (cg->block elements of v's type, from cg_shared_array), in a fixed order: every
 * work-item gets the result. */
LLVMValueRef cg_gpu_reduce(Cg *cg, LLVMValueRef sh, LLVMValueRef v, bool max);

/* ---- codegen/lower_elemwise.c ---- */
/* The value of node n's element at index idx[0..n->shape.rank), in n's compute type. Inputs are
 * loaded (with broadcasting); a fusion pass would ask the producers' emitters instead. */
LLVMValueRef cg_emit_element(Cg *cg, const Node *n, LLVMValueRef *idx);

#endif
