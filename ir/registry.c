/* registry.c: the op table, one OpInfo per row of ir/ops.def. The lowering and emitter columns
 * belong to codegen (codegen/lower_table.c) and are dropped here, so the IR links without LLVM. */
#include "ir/ops.h"

const OpInfo ir_ops[OP_COUNT] = {
#define OP(id, name, pattern, nin, attrs, shape, ref, grad, flops, lower, emit, traits) \
	[OP_##id] = {name, pattern, nin, attrs, shape, ref, grad, flops, traits},
#include "ir/ops.def"
#undef OP
};
