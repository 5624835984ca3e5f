/* registry.c: the op table, one OpInfo per row of ir/ops.def. The lowering column belongs to
 * codegen and is dropped here, so the IR links without LLVM. */
#include <stdlib.h>

#include "ir/ops.h"

const OpInfo ir_ops[OP_COUNT] = {
#define OP(id, name, pattern, nin, attrs, shape, ref, grad, flops, lower) \
	[OP_##id] = {name, pattern, nin, attrs, shape, ref, grad, flops},
#include "ir/ops.def"
#undef OP
};

/* The gradient rules in the table call gc_* from passes/autodiff.c, but the ir library links on
 * its own too (its tests, the frontend). These weak stand-ins satisfy such links; wherever
 * autodiff.c is linked its definitions take precedence. */
static void no_autodiff(void)
{
	fprintf(stderr, "netc: internal error: gradient rules need passes/autodiff.c\n");
	abort();
}

__attribute__((weak)) Graph *gc_graph(GradContext *gc) { no_autodiff(); return NULL; }
__attribute__((weak)) void gc_accumulate(GradContext *gc, int x, int grad) { no_autodiff(); }
__attribute__((weak)) int gc_rng(GradContext *gc) { no_autodiff(); return -1; }
