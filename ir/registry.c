/* registry.c: the op table, one OpInfo per row of ir/ops.def. The lowering column belongs to
 * codegen and is dropped here, so the IR links without LLVM. */
#include "ir/ops.h"

const OpInfo ir_ops[OP_COUNT] = {
#define OP(id, name, pattern, nin, attrs, shape, ref, grad, flops, lower) \
	[OP_##id] = {name, pattern, nin, attrs, shape, ref, grad, flops},
#include "ir/ops.def"
#undef OP
};
