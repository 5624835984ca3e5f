/* optimizer.c: the parameter update as graph nodes, with PyTorch's formulas.
 *
 *   sgd:      g += wd*p;  buf = momentum*buf + (1-dampening)*g;  g = nesterov ? g + momentum*buf : buf;
 *             p -= lr*g
 *   adadelta: g += wd*p;  sq = rho*sq + (1-rho)*g*g;  delta = sqrt(acc + eps) / sqrt(sq + eps) * g;
 *             acc = rho*acc + (1-rho)*delta*delta;  p -= lr*delta
 *
 * State lives in `state` leaves named "<param>.<slot>"; new values are written back with assign
 * nodes, which run after every read of the old value because they come last in node order. */
#include <stdio.h>

#include "passes/passes.h"

static int bin(Graph *g, OpId op, int a, int b)
{
	int in[2] = {a, b};
	return ir_emit(g, op, in, NULL);
}

static int scaled(Graph *g, double c, int x) { return bin(g, OP_mul, ir_const(g, c), x); }

static int state(Graph *g, int p, const char *slot)
{
	char name[160];
	snprintf(name, sizeof name, "%.120s.%s", g->node[p].name, slot);
	double init = INIT_ZERO;
	return ir_leaf(g, OP_state, name, g->node[p].shape, g->node[p].dtype, &init);
}

static void assign(Graph *g, int target, int value)
{
	int in[2] = {target, value};
	ir_emit(g, OP_assign, in, NULL);
}

static int with_weight_decay(Graph *g, int p, int grad)
{
	double wd = g->train.weight_decay;
	return wd != 0 ? bin(g, OP_add, grad, scaled(g, wd, p)) : grad;
}

static int sgd_step(Graph *g, int p, int grad)
{
	const TrainConfig *c = &g->train;
	if (c->momentum == 0)
		return grad;
	int buf = state(g, p, "momentum_buffer");
	int next = bin(g, OP_add, scaled(g, c->momentum, buf), scaled(g, 1 - c->dampening, grad));
	assign(g, buf, next);
	return c->nesterov ? bin(g, OP_add, grad, scaled(g, c->momentum, next)) : next;
}

static int adadelta_step(Graph *g, int p, int grad)
{
	const TrainConfig *c = &g->train;
	int sq = state(g, p, "square_avg");
	int acc = state(g, p, "acc_delta");
	int eps = ir_const(g, c->eps);
	int sq_next = bin(g, OP_add, scaled(g, c->rho, sq), scaled(g, 1 - c->rho, bin(g, OP_mul, grad, grad)));
	int std = ir_emit(g, OP_sqrt, (int[]){bin(g, OP_add, sq_next, eps)}, NULL);
	int rms_acc = ir_emit(g, OP_sqrt, (int[]){bin(g, OP_add, acc, eps)}, NULL);
	int delta = bin(g, OP_mul, bin(g, OP_div, rms_acc, std), grad);
	int acc_next = bin(g, OP_add, scaled(g, c->rho, acc), scaled(g, 1 - c->rho, bin(g, OP_mul, delta, delta)));
	assign(g, sq, sq_next);
	assign(g, acc, acc_next);
	return delta;
}

void optimizer_emit_update(Graph *g, int p, int grad)
{
	grad = with_weight_decay(g, p, grad);
	int step;
	switch (g->train.optimizer) {
	case OPT_ADADELTA:
		step = adadelta_step(g, p, grad);
		break;
	default:
		step = sgd_step(g, p, grad);
		break;
	}
	assign(g, p, bin(g, OP_sub, p, bin(g, OP_mul, g->lr, step)));
}
