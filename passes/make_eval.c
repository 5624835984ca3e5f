/* make_eval.c: the evaluation program. The forward nodes that the scores and the loss depend on
 * are cloned into nodes of PROG_EVAL, with dropout taken out (evaluation mode); leaves (inputs and
 * parameters) are shared, so evaluation reads the parameters training writes. Runs before
 * autodiff, so no gradient ever flows into the clones. */
#include <stdlib.h>

#include "passes/passes.h"

bool pass_make_eval(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	if (g->output < 0)
		return true;
	int n = g->nnodes;
	int *map = malloc(n * sizeof *map);
	char *live = calloc(n, 1);
	if (!map || !live)
		abort();
	live[g->output] = 1;
	if (g->loss >= 0)
		live[g->loss] = 1;
	for (int i = n - 1; i >= 0; i--)
		for (int k = 0; live[i] && k < g->node[i].nin; k++)
			live[g->node[i].in[k]] = 1;

	char name[160], err[256];
	for (int i = 0; i < n; i++) {
		Node src = g->node[i];
		map[i] = i;
		if (!live[i] || ir_is_leaf(src.op))
			continue;
		if (src.op == OP_dropout) {
			map[i] = map[src.in[0]];
			continue;
		}
		int in[IR_MAX_INPUTS];
		for (int k = 0; k < src.nin; k++)
			in[k] = map[src.in[k]];
		snprintf(name, sizeof name, "eval.%.140s", src.name);
		map[i] = ir_add(g, src.op, in, src.attr, name, err, sizeof err);
		if (map[i] < 0) {
			fprintf(stderr, "netc: internal error: make-eval: %s\n", err);
			abort();
		}
		g->node[map[i]].loc = src.loc;
	}
	g->eval_output = map[g->output];
	g->eval_loss = g->loss >= 0 ? map[g->loss] : -1;
	int roots[2] = {g->eval_output, g->eval_loss};
	ir_mark_program(g, roots, 2, PROG_EVAL);
	free(map);
	free(live);
	return true;
}
