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
 * assign: one kernel per parameter in each program. K = 1 leaves the graph as it is. */
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

int accumulate_gradient(Graph *g, int p, int grad)
{
	int64_t k = g->train.accumulate;
	if (k <= 1)
		return grad;
	int acc = ir_state_for(g, p, ACC_SLOT, g->node[grad].shape);
	int mean = bin(g, OP_mul, bin(g, OP_add, acc, grad), ir_const(g, 1.0 / (double)k));
	bin(g, OP_assign, acc, zeros(g, g->node[acc].shape));
	return mean;
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

void accumulate_mark_program(Graph *g, int first)
{
	if (g->train.accumulate <= 1)
		return;
	int end = g->nnodes, nroots;
	/* the frontend's own updates (batch norm's running statistics) run every micro-batch */
	int *roots = passes_step_roots(g, first, &nroots);
	for (int i = first; i < end; i++) {
		if (!is_train_sum(g, i))
			continue;
		int acc = g->node[i].in[0], grad = g->node[i].in[1];
		roots[nroots++] = bin(g, OP_assign, acc, bin(g, OP_add, acc, grad));
	}
	ir_mark_program(g, roots, nroots, PROG_ACCUM);
	free(roots);
}
