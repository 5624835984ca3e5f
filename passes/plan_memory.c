/* plan_memory.c: a byte offset in one arena for every value a program reads or writes.
 *
 * For now every value keeps its own block (no reuse), so `netc check` can read every node after
 * a step; assign nodes share their target's storage and constants have none (kernels inline
 * them). Blocks are 64-byte aligned so kernels can use aligned vector loads. A GEMM-shaped node
 * whose K a GPU kernel splits (ir_split_k) also gets a workspace for the partial sums. */
#include <stdlib.h>

#include "passes/passes.h"

#define ARENA_ALIGN 64

static int64_t align(int64_t bytes) { return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

static bool needs_storage(const Graph *g, const Node *n, const char *used)
{
	if (n->op == OP_const || n->op == OP_assign)
		return false;
	return ir_is_leaf(n->op) ? used[n->id] : n->programs != 0;
}

bool pass_plan_memory(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	char *used = calloc(g->nnodes ? g->nnodes : 1, 1);
	if (!used)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; g->node[i].programs && k < g->node[i].nin; k++)
			used[g->node[i].in[k]] = 1;
	int special[] = {g->image, g->label, g->lr, g->rng};
	for (size_t k = 0; k < sizeof special / sizeof *special; k++)
		if (special[k] >= 0)
			used[special[k]] = 1;

	int64_t top = 0;
	for (int i = 0; i < g->nnodes; i++) {
		Node *n = &g->node[i];
		n->offset = -1;
		n->ws_offset = -1;
		int split = n->programs ? ir_split_k(g, n) : 1;
		if (split > 1) {
			n->ws_offset = top;
			top += align((int64_t)split * shape_numel(&n->shape) * 4);
		}
		if (n->op == OP_assign) {
			n->offset = g->node[n->in[0]].offset;
			continue;
		}
		if (!needs_storage(g, n, used))
			continue;
		n->offset = top;
		top += align(shape_numel(&n->shape) * (int64_t)dtype_size(n->dtype));
	}
	g->arena_bytes = top;
	free(used);
	return true;
}
