/* grad_context.c: what gradient rules may do with the sweep: add nodes, hand gradients on. */
#include "ir/grad_context.h"

Graph *gc_graph(GradContext *gc) { return gc->g; }

void gc_accumulate(GradContext *gc, int x, int grad)
{
	if (x < 0 || x >= gc->n || !gc->needs[x])
		return; /* no param upstream: the contribution is dead and never runs */
	if (gc->grad[x] < 0) {
		gc->grad[x] = grad;
		return;
	}
	int in[2] = {gc->grad[x], grad};
	gc->grad[x] = ir_emit(gc->g, OP_add, in, NULL);
}

int gc_rng(GradContext *gc)
{
	Graph *g = gc->g;
	if (g->rng < 0) {
		int64_t words = RNG_WORDS;
		double slot = RUNTIME_RNG;
		g->rng = ir_leaf(g, OP_runtime, "rng", shape_make(1, &words), DT_I32, &slot);
	}
	return g->rng;
}
