/* passes.h: graph passes. Each pass is one file, bool pass_NAME(Graph *, const PassOptions *, Diag *). */
#ifndef NETC_PASSES_H
#define NETC_PASSES_H

#include "ir/ir.h"

typedef struct {
	int unused;
} PassOptions;

/* autodiff: from the loss, gradient nodes by each op's rule, then the optimizer update of every
 * param as graph nodes (passes/autodiff.c, passes/optimizer.c). Makes the lr runtime node. */
bool pass_autodiff(Graph *g, const PassOptions *o, Diag *d);
/* make-eval: the evaluation program, the forward nodes again with dropout taken out (passes/make_eval.c) */
bool pass_make_eval(Graph *g, const PassOptions *o, Diag *d);
/* fuse: groups of nodes that one kernel computes (Node.group), TVM's FuseOps rules (passes/fuse.c) */
bool pass_fuse(Graph *g, const PassOptions *o, Diag *d);
/* plan-memory: a byte offset in one arena for every value that needs storage (passes/plan_memory.c) */
bool pass_plan_memory(Graph *g, const PassOptions *o, Diag *d);

/* Reverse-mode gradients of loss: adds the gradient nodes and returns an array (caller frees)
 * mapping each node id that existed before to the id of its gradient, -1 where none flows. */
int *autodiff_gradients(Graph *g, int loss);

/* The optimizer's update nodes for one param p with gradient grad (passes/optimizer.c). */
void optimizer_emit_update(Graph *g, int p, int grad);

/* The whole pipeline from a forward graph to a planned training graph. */
bool passes_run_default(Graph *g, Diag *d);

#endif
