/* accumulate.c: gradient accumulation over K micro-batches (train.accumulate = K > 1).
 *
 * The loss is a mean over the batch, so the gradient of a batch K times larger is the mean of the
 * K micro-batch gradients. Each parameter p with gradient g gets an f32 accumulator
 * "<p>.grad_acc" (state, zero-initialized, so checkpoints carry it), and two programs share the
 * forward and backward nodes:
 *
 *   PROG_ACCUM  (micro-batches 1..K-1)  assign(acc, acc + g), no update
 *   PROG_TRAIN  (micro-batch K)         the optimizer reads (acc + g) * (1/K); assign(acc, 0)
 *
 * The accumulation add is a node of its own in each program (not one node both read), so the
 * training side fuses into the optimizer's elementwise update and the accumulation side into its
 * assign: one kernel per parameter in each program. Two passes make them: accumulate-gradients
 * (the training side, before the optimizer, which reads the mean as the gradient) and
 * accumulation-program (after the optimizer, so the accumulation side's kernels come last, where
 * the memory plan's shared timeline expects them). K = 1 leaves the graph as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "passes/passes.h"

#define ACC_SLOT "grad_acc"
#define ACC_SUFFIX "." ACC_SLOT

static int bin(Graph *g, OpId op, int a, int b) { return ir_emit(g, op, (int[]){a, b}, NULL); }

/* A zero of shape s: the constant broadcast, so the reset is elementwise like the update. */
static int zeros(Graph *g, Shape s)
{
	double attr[IR_MAX_ATTRS] = {0};
	op_shape_attrs(&s, attr);
	return ir_emit(g, OP_broadcast_to, (int[]){ir_const(g, 0.0)}, attr);
}

bool pass_accumulate_gradients(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	int64_t k = g->train.accumulate;
	if (k <= 1)
		return true;
	int n = g->nnodes, *grad = passes_param_gradients(g);
	for (int p = 0; p < n; p++) {
		if (grad[p] < 0)
			continue;
		int acc = ir_state_for(g, p, ACC_SLOT, g->node[grad[p]].shape);
		passes_set_gradient(g, p, bin(g, OP_mul, bin(g, OP_add, acc, grad[p]), ir_const(g, 1.0 / (double)k)));
		/* after the read above in node order, so the reset runs after the update reads acc */
		bin(g, OP_assign, acc, zeros(g, g->node[acc].shape));
	}
	free(grad);
	return true;
}

static bool is_accumulator(const Graph *g, int id)
{
	const Node *n = &g->node[id];
	size_t len = strlen(n->name), suf = strlen(ACC_SUFFIX);
	return n->op == OP_state && len > suf && strcmp(n->name + len - suf, ACC_SUFFIX) == 0;
}

/* The training side's acc + g: an add whose first input is an accumulator. */
static bool is_train_sum(const Graph *g, int id)
{
	const Node *n = &g->node[id];
	return n->op == OP_add && is_accumulator(g, n->in[0]) && (n->programs & PROG_TRAIN);
}

bool pass_accumulation_program(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	if (g->train.accumulate <= 1)
		return true;
	/* the frontend's own updates (batch norm's running statistics) run every micro-batch: they
	 * are the assigns before the first accumulator (autodiff and unscaling make none) */
	int first = g->nnodes;
	for (int i = 0; i < g->nnodes && first == g->nnodes; i++)
		if (is_accumulator(g, i))
			first = i;
	int end = g->nnodes, nroots;
	int *roots = passes_step_roots(g, first, &nroots);
	for (int i = first; i < end; i++) {
		if (!is_train_sum(g, i))
			continue;
		int acc = g->node[i].in[0], grad = g->node[i].in[1];
		roots[nroots++] = bin(g, OP_assign, acc, bin(g, OP_add, acc, grad));
	}
	ir_mark_program(g, roots, nroots, PROG_ACCUM);
	free(roots);
	return true;
}
