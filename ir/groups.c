/* groups.c: questions about fused groups that passes, codegen and tools share. */
#include <stdlib.h>

#include "ir/ir.h"

bool ir_is_program_root(const Graph *g, int id)
{
	return id == g->loss || id == g->output || id == g->eval_loss || id == g->eval_output || id == g->finite;
}

static bool is_root(const Graph *g, int id) { return ir_is_program_root(g, id) || g->node[id].op == OP_assign; }

/* The rule of ir_group_output, given whether a node of another group reads id. */
static bool output_rule(const Graph *g, int id, bool read_outside)
{
	const Node *n = &g->node[id];
	return n->group < 0 || n->group == id || is_root(g, id) || read_outside;
}

bool ir_group_output(const Graph *g, int id)
{
	bool outside = false;
	for (int j = id + 1; j < g->nnodes && !outside; j++) {
		const Node *user = &g->node[j];
		for (int k = 0; user->programs && k < user->nin; k++)
			outside |= user->in[k] == id && user->group != g->node[id].group;
	}
	return output_rule(g, id, outside);
}

bool ir_group_output_users(const Graph *g, int id, const int *user, int nuser)
{
	bool outside = false;
	for (int k = 0; k < nuser && !outside; k++)
		outside = g->node[user[k]].programs && g->node[user[k]].group != g->node[id].group;
	return output_rule(g, id, outside);
}

static void *xmalloc(size_t n, size_t size)
{
	void *p = malloc((n ? n : 1) * size);
	if (!p)
		abort();
	return p;
}

void ir_group_index(GroupIndex *ix, const Graph *g)
{
	int n = g->nnodes;
	ix->first = xmalloc(n, sizeof *ix->first);
	ix->next = xmalloc(n, sizeof *ix->next);
	ix->output = xmalloc(n, sizeof *ix->output);
	bool *outside = ix->output;
	for (int i = 0; i < n; i++)
		ix->first[i] = ix->next[i] = -1, outside[i] = false;
	/* pushing members in descending order onto the front leaves each list ascending */
	for (int i = n - 1; i >= 0; i--) {
		int leader = g->node[i].group;
		if (leader >= 0 && leader < n) {
			ix->next[i] = ix->first[leader];
			ix->first[leader] = i;
		}
	}
	for (int j = 0; j < n; j++) {
		const Node *user = &g->node[j];
		for (int k = 0; user->programs && k < user->nin; k++)
			outside[user->in[k]] |= user->group != g->node[user->in[k]].group;
	}
	for (int i = 0; i < n; i++)
		ix->output[i] = output_rule(g, i, outside[i]);
}

void ir_group_index_free(GroupIndex *ix)
{
	free(ix->first);
	free(ix->next);
	free(ix->output);
}

void ir_ungroup(Graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		g->node[i].group = ir_is_leaf(g->node[i].op) ? -1 : i;
}
