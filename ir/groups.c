/* groups.c: questions about fused groups that passes, codegen and tools share. */
#include <stdlib.h>

#include "ir/ir.h"

static bool is_root(const Graph *g, int id)
{
	return id == g->loss || id == g->output || id == g->eval_loss || id == g->eval_output || id == g->finite ||
	       g->node[id].op == OP_assign;
}

bool ir_group_output(const Graph *g, int id)
{
	const Node *n = &g->node[id];
	if (n->group < 0 || n->group == id || is_root(g, id))
		return true;
	for (int j = id + 1; j < g->nnodes; j++) {
		const Node *user = &g->node[j];
		if (!user->programs)
			continue;
		for (int k = 0; k < user->nin; k++)
			if (user->in[k] == id && user->group != n->group)
				return true;
	}
	return false;
}

void ir_ungroup(Graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		g->node[i].group = ir_is_leaf(g->node[i].op) ? -1 : i;
}
