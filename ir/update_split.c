/* update_split.c: where a training step's update begins. A data-parallel step sums each
 * parameter's gradient across the ranks between backward and the update, so the plan must
 * compute every gradient (as the optimizer reads it) into storage before any kernel of the
 * update runs. */
#include <stdlib.h>

#include "ir/ir.h"

int *ir_final_gradients(const Graph *g)
{
	int *grad = malloc((size_t)(g->nnodes ? g->nnodes : 1) * sizeof *grad);
	if (!grad)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		grad[i] = -1;
	for (int i = 0; i < g->nnodes; i++) {
		int of = g->node[i].grad_of;
		if (of >= 0 && g->node[of].op == OP_param)
			grad[of] = i; /* the last mark wins: a rewrite's result comes after what it rewrote */
	}
	return grad;
}

/* Training nodes that read a final gradient, directly or through others. */
static bool *reads_gradients(const Graph *g, const int *grad)
{
	bool *reads = calloc(g->nnodes ? (size_t)g->nnodes : 1, sizeof *reads);
	bool *final = calloc(g->nnodes ? (size_t)g->nnodes : 1, sizeof *final);
	if (!reads || !final)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		if (grad[i] >= 0)
			final[grad[i]] = true;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (ir_is_leaf(n->op) || !(n->programs & PROG_TRAIN))
			continue;
		for (int k = 0; k < n->nin && !reads[i]; k++)
			reads[i] = final[n->in[k]] || reads[n->in[k]];
	}
	free(final);
	return reads;
}

/* Backward is what the final gradients, the loss, the scores and the assigns that read no
 * gradient (batch norm's running statistics, an accumulator's reset) need; the update is every
 * other training node, so state the optimizer reads without a gradient (momentum * buf) goes
 * with it. */
bool *ir_update_nodes(const Graph *g)
{
	int *grad = ir_final_gradients(g);
	bool *reads = reads_gradients(g, grad);
	bool *need = calloc(g->nnodes ? (size_t)g->nnodes : 1, sizeof *need);
	if (!need)
		abort();
	for (int i = 0; i < g->nnodes; i++) {
		if (grad[i] >= 0)
			need[grad[i]] = true;
		need[i] |= i == g->loss || i == g->output || (g->node[i].op == OP_assign && !reads[i]);
	}
	for (int i = g->nnodes - 1; i >= 0; i--)
		for (int k = 0; need[i] && k < g->node[i].nin; k++)
			need[g->node[i].in[k]] = true;
	bool *update = reads; /* reused: every entry is rewritten below */
	for (int i = 0; i < g->nnodes; i++)
		update[i] = !ir_is_leaf(g->node[i].op) && (g->node[i].programs & PROG_TRAIN) && !need[i];
	free(grad);
	free(need);
	return update;
}

int ir_update_split(const Graph *g)
{
	bool *update = ir_update_nodes(g);
	int *grad = ir_final_gradients(g);
	int last_backward = -1, first_update = -1;
	bool clean = true;
	for (int i = 0; i < g->nnodes && clean; i++) {
		const Node *n = &g->node[i];
		if (grad[i] >= 0 && (g->node[grad[i]].programs & PROG_TRAIN))
			clean = g->node[grad[i]].offset >= 0;
		if (ir_is_leaf(n->op) || !(n->programs & PROG_TRAIN) || n->group < 0)
			continue;
		clean = update[n->group] == update[i]; /* a group lies on one side */
		if (n->group != i)
			continue;
		if (update[i] && first_update < 0)
			first_update = i;
		if (!update[i])
			last_backward = i;
	}
	free(update);
	free(grad);
	return clean && first_update > last_backward ? first_update : -1;
}
