/* lower_table.c: the lowering and emitter columns of ir/ops.def as tables. */
#include "codegen/lower_table.h"

const LowerFn cg_lowerings[OP_COUNT] = {
#define OP(id, name, pattern, nin, attrs, shape, ref, grad, flops, lower, emit, traits) [OP_##id] = lower,
#include "ir/ops.def"
#undef OP
};

const ElemFn cg_elementals[OP_COUNT] = {
#define OP(id, name, pattern, nin, attrs, shape, ref, grad, flops, lower, emit, traits) [OP_##id] = emit,
#include "ir/ops.def"
#undef OP
};
