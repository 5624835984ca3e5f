/* autodiff.c: reverse-mode differentiation over the graph.
 *
 * Gradients are ordinary nodes made by each op's gradient rule (GradFn in ir/ops.def), so later
 * passes optimize and fuse the backward graph like the forward one. Nodes are visited from the
 * loss back to the leaves; gc_accumulate sums the contributions that reach a value. Each gradient
 * node records whose gradient it is (Node.grad_of), which is how the optimizer pass
 * (passes/optimizer.c) finds every parameter's gradient. */
#include <stdlib.h>
#include <string.h>

#include "ir/grad_context.h"
#include "passes/passes.h"

/* Marks d as param p's gradient and returns it; a copy of d where d cannot carry the mark (the
 * seed, a leaf, or already another param's gradient), so every param has a node of its own. */
static int own_gradient(Graph *g, int p, int d, int seed)
{
	if (d == seed || ir_is_leaf(g->node[d].op) || g->node[d].grad_of >= 0)
		d = ir_emit(g, OP_copy, (int[]){d}, NULL);
	g->node[d].grad_of = p;
	return d;
}

int *autodiff_gradients(Graph *g, int loss)
{
	GradContext gc = {g, g->nnodes, NULL, NULL};
	gc.grad = malloc(gc.n * sizeof *gc.grad);
	gc.needs = calloc(gc.n ? gc.n : 1, 1);
	if (!gc.grad || !gc.needs)
		abort();
	for (int i = 0; i < gc.n; i++) {
		Node *n = &g->node[i];
		gc.grad[i] = -1;
		gc.needs[i] = n->op == OP_param;
		for (int k = 0; k < n->nin; k++)
			gc.needs[i] |= gc.needs[n->in[k]];
		gc.needs[i] &= dtype_is_float(n->dtype);
	}
	/* fp16 seeds the backward pass with the loss scale, so small gradients stay above f16's range */
	gc.grad[loss] = g->loss_scale >= 0 ? g->loss_scale : ir_const(g, 1.0);
	for (int i = loss; i >= 0; i--) {
		int dy = gc.grad[i];
		if (dy < 0 || !gc.needs[i] || ir_is_leaf(g->node[i].op))
			continue;
		/* a copy: the rule adds nodes, which may move the node array */
		Node n = g->node[i];
		if (!ir_ops[n.op].grad) {
			fprintf(stderr, "netc: internal error: %s has no gradient rule\n", ir_ops[n.op].name);
			abort();
		}
		ir_ops[n.op].grad(&gc, &n, dy);
	}
	/* params first: the optimizer pass finds a param's gradient by grad_of, so a node that is the
	 * gradient of a param and of another value (add passes dy to both inputs) is the param's */
	for (int i = 0; i < gc.n; i++)
		if (g->node[i].op == OP_param && gc.grad[i] >= 0)
			gc.grad[i] = own_gradient(g, i, gc.grad[i], gc.grad[loss]);
	for (int i = 0; i < gc.n; i++) {
		int d = gc.grad[i];
		if (d >= 0 && d != gc.grad[loss] && g->node[d].grad_of < 0 && !ir_is_leaf(g->node[d].op))
			g->node[d].grad_of = i;
	}
	free(gc.needs);
	return gc.grad;
}

/* Names a gradient after its value, as "grad.<name>", where the node has no name of its own. */
static void name_gradients(Graph *g, int first)
{
	char buf[160];
	for (int i = first; i < g->nnodes; i++) {
		Node *n = &g->node[i];
		if (n->grad_of >= 0) {
			snprintf(buf, sizeof buf, "grad.%.140s", g->node[n->grad_of].name);
			if (ir_find(g, buf) < 0)
				ir_set_name(g, i, buf);
		}
	}
}

int *passes_step_roots(const Graph *g, int upto, int *n)
{
	int *roots = malloc((size_t)(g->nnodes + 2) * sizeof *roots);
	if (!roots)
		abort();
	*n = 0;
	roots[(*n)++] = g->loss;
	roots[(*n)++] = g->output;
	for (int i = 0; i < upto; i++)
		if (g->node[i].op == OP_assign)
			roots[(*n)++] = i;
	return roots;
}

int *passes_param_gradients(const Graph *g) { return ir_final_gradients(g); }

void passes_set_gradient(Graph *g, int p, int grad) { g->node[grad].grad_of = p; }

/* The forward and backward nodes: the loss, the scores (for accuracy), every parameter's gradient
 * and the frontend's updates (batch norm's running statistics). The optimizer pass adds its
 * updates to the program. */
static void mark_training(Graph *g, const int *grad, int first)
{
	int nroots;
	int *roots = passes_step_roots(g, first, &nroots);
	for (int i = 0; i < first; i++)
		if (g->node[i].op == OP_param)
			roots[nroots++] = grad[i];
	ir_mark_program(g, roots, nroots, PROG_TRAIN);
	free(roots);
}

bool pass_autodiff(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	if (g->loss < 0) {
		diag_error(d, (SrcLoc){0, 0}, "the network has no loss to train");
		return false;
	}
	int first = g->nnodes;
	int *grad = autodiff_gradients(g, g->loss);
	int nparams = 0;
	for (int i = 0; i < first; i++) {
		if (g->node[i].op != OP_param)
			continue;
		if (grad[i] < 0) {
			diag_error(d, g->node[i].loc, "parameter '%s' does not affect the loss", g->node[i].name);
			free(grad);
			return false;
		}
		nparams++;
	}
	name_gradients(g, first);
	mark_training(g, grad, first);
	free(grad);
	if (nparams == 0) {
		diag_error(d, (SrcLoc){0, 0}, "the network has no parameters to train");
		return false;
	}
	return true;
}
