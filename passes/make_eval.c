/* make_eval.c: the evaluation program. The forward nodes that the scores and the loss depend on
 * are cloned into nodes of PROG_EVAL, with dropout taken out (evaluation mode) and the nodes of
 * Graph.eval_swap replaced by their state leaf reshaped to their shape (batch norm's running
 * statistics for its batch ones). Leaves (inputs, parameters, states) are shared, so evaluation
 * reads the values training writes. Runs before autodiff, so no gradient ever flows into the
 * clones. */
#include <stdlib.h>

#include "ir/ops.h"
#include "passes/passes.h"

/* swap[i]: the state that node i reads as in evaluation, or -1. */
static int *eval_swaps(const Graph *g)
{
	int *swap = malloc((g->nnodes ? g->nnodes : 1) * sizeof *swap);
	if (!swap)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		swap[i] = -1;
	for (int k = 0; k < g->neval_swaps; k++)
		swap[g->eval_swap[k].node] = g->eval_swap[k].state;
	return swap;
}

/* The nodes the evaluation roots depend on, not looking past a swapped node. */
static char *eval_live(const Graph *g, const int *swap)
{
	char *live = calloc(g->nnodes ? g->nnodes : 1, 1);
	if (!live)
		abort();
	live[g->output] = 1;
	if (g->loss >= 0)
		live[g->loss] = 1;
	for (int i = g->nnodes - 1; i >= 0; i--) {
		if (!live[i])
			continue;
		if (swap[i] >= 0) {
			live[swap[i]] = 1;
			continue;
		}
		for (int k = 0; k < g->node[i].nin; k++)
			live[g->node[i].in[k]] = 1;
	}
	return live;
}

/* reshape(state) to node id's shape, named after the state. */
static int reshaped_state(Graph *g, int id, int state)
{
	Shape s = g->node[id].shape;
	double attr[1 + IR_MAX_DIMS];
	op_shape_attrs(&s, attr);
	int in[1] = {state};
	int r = ir_emit(g, OP_reshape, in, attr);
	char name[160];
	snprintf(name, sizeof name, "eval.%.140s", g->node[state].name);
	ir_set_name(g, r, name);
	g->node[r].loc = g->node[id].loc;
	return r;
}

/* The evaluation clone of node i, whose inputs map already covers. */
static int clone(Graph *g, int i, const int *map)
{
	Node src = g->node[i];
	int in[IR_MAX_INPUTS];
	for (int k = 0; k < src.nin; k++)
		in[k] = map[src.in[k]];
	char name[160], err[256];
	snprintf(name, sizeof name, "eval.%.140s", src.name);
	int id = ir_add(g, src.op, in, src.attr, name, err, sizeof err);
	if (id < 0) {
		fprintf(stderr, "netc: internal error: make-eval: %s\n", err);
		abort();
	}
	g->node[id].loc = src.loc;
	return id;
}

bool pass_make_eval(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	if (g->output < 0)
		return true;
	int n = g->nnodes;
	int *map = malloc(n * sizeof *map);
	if (!map)
		abort();
	int *swap = eval_swaps(g);
	char *live = eval_live(g, swap);
	for (int i = 0; i < n; i++) {
		map[i] = i;
		if (!live[i] || ir_is_leaf(g->node[i].op))
			continue;
		if (swap[i] >= 0)
			map[i] = reshaped_state(g, i, swap[i]);
		else if (g->node[i].op == OP_dropout)
			map[i] = map[g->node[i].in[0]];
		else
			map[i] = clone(g, i, map);
	}
	g->eval_output = map[g->output];
	g->eval_loss = g->loss >= 0 ? map[g->loss] : -1;
	int roots[2] = {g->eval_output, g->eval_loss};
	ir_mark_program(g, roots, 2, PROG_EVAL);
	free(map);
	free(swap);
	free(live);
	return true;
}
