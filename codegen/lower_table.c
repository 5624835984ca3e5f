/* lower_table.c: the lowering column of ir/ops.def as a table. */
#include "codegen/lower_table.h"

const LowerFn cg_lowerings[OP_COUNT] = {
#define OP(id, name, pattern, nin, attrs, shape, ref, grad, flops, lower) [OP_##id] = lower,
#include "ir/ops.def"
#undef OP
};
