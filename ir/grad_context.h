/* grad_context.h: the state of one reverse-mode sweep, shared by the gradient rules (ir/ops_*.c,
 * through gc_* in ir.h) and the autodiff pass that drives them (passes/autodiff.c). */
#ifndef NETC_GRAD_CONTEXT_H
#define NETC_GRAD_CONTEXT_H

#include "ir/ir.h"

struct GradContext {
	Graph *g;
	int n;       /* nodes that existed before differentiation */
	int *grad;   /* per node: gradient node id or -1 */
	char *needs; /* per node: whether a param is upstream, so a gradient is worth making */
};

#endif
