/* loss_scale.c: fp16 loss scaling on the gradient side, as two passes around accumulation.
 *
 * The mixed-precision pass makes Graph.loss_scale (a runtime value) and autodiff seeds the
 * backward pass with it, so every gradient arrives multiplied by the scale. Then:
 *
 *   unscale-gradients  each parameter's gradient divided by the scale (grad_of moves to the
 *                      quotient, which is what accumulation and the update read)
 *   check-finite       Graph.finite: 1 when every gradient the update reads is finite, else 0
 *                      (a large gradient row by row, then its rows' flags); the optimizer
 *                      makes each update select(finite, new, old)
 *
 * so an overflowing step changes nothing, and the runtime lowers the scale (runtime/loss_scale.c).
 * With accumulation the check reads the accumulated mean, so an overflow in any micro-batch skips
 * the step. Without loss scaling (fp32, bf16) both passes leave the graph as it is. */
#include <stdlib.h>

#include "passes/passes.h"

bool pass_unscale_gradients(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	if (g->loss_scale < 0)
		return true;
	int n = g->nnodes, *grad = passes_param_gradients(g);
	for (int p = 0; p < n; p++)
		if (grad[p] >= 0)
			passes_set_gradient(g, p, ir_emit(g, OP_div, (int[]){grad[p], g->loss_scale}, NULL));
	free(grad);
	return true;
}

/* A GPU reduction to one value runs on one work-group: a gradient past this many elements is
 * checked row by row (a work-group per row), then the rows' flags. */
#define FINITE_BY_ROWS 65536

/* 1 when every element of gradient x is finite, else 0. */
static int finite_flag(Graph *g, int x)
{
	const Shape *s = &g->node[x].shape;
	if (s->rank < 2 || s->dim[0] < 2 || shape_numel(s) < FINITE_BY_ROWS)
		return ir_emit(g, OP_all_finite, &x, NULL);
	double rows[IR_MAX_ATTRS] = {1};
	int r = ir_emit(g, OP_all_finite, &x, rows);
	return ir_emit(g, OP_all_finite, &r, NULL);
}

bool pass_check_finite(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	if (g->loss_scale < 0)
		return true;
	int n = g->nnodes, *grad = passes_param_gradients(g);
	int all = -1;
	for (int p = 0; p < n; p++) {
		if (grad[p] < 0)
			continue;
		int f = finite_flag(g, grad[p]);
		all = all < 0 ? f : ir_emit(g, OP_mul, (int[]){all, f}, NULL);
	}
	free(grad);
	if (all >= 0) {
		g->finite = all;
		ir_set_name(g, all, "finite");
	}
	return true;
}

int loss_scale_guard(Graph *g, int target, int value)
{
	if (g->finite < 0)
		return value;
	return ir_emit(g, OP_select, (int[]){g->finite, value, target}, NULL);
}
