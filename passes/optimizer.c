/* optimizer.c: the parameter update as graph nodes, with PyTorch's formulas.
 *
 *   sgd:      g += wd*p;  buf = g on the first step, momentum*buf + (1-dampening)*g after;
 *             g = nesterov ? g + momentum*buf : buf;  p -= lr*g
 *   adadelta: g += wd*p;  sq = rho*sq + (1-rho)*g*g;  delta = sqrt(acc + eps) / sqrt(sq + eps) * g;
 *             acc = rho*acc + (1-rho)*delta*delta;  p -= lr*delta
 *   adam:     g += wd*p;  t = step + 1;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;
 *             p -= lr/(1 - b1^t) * m / (sqrt(v)/sqrt(1 - b2^t) + eps)
 *   adamw:    p *= 1 - lr*wd, then adam's update without weight decay in the gradient
 *
 * Adam's step count is state too ("<param>.step", f32, as PyTorch keeps it per parameter), so
 * the bias corrections need nothing from the runtime and a checkpoint carries them:
 * b^t = exp(t*ln b). SGD with dampening knows its first step the same way: "<param>.momentum_started"
 * (f32, 0 until the first step writes 1) weighs the gradient by 1 - dampening*started, so the
 * first buffer is g itself, as torch.optim.SGD's buf = clone(g); without dampening the weight is 1
 * on every step and the scalar is not made.
 * State lives in `state` leaves named "<param>.<slot>"; new values are written back with assign
 * nodes, which run after every read of the old value because they come last in node order.
 *
 * The optimizer pass runs after autodiff and the passes that rewrite gradients (fp16 unscaling and
 * the finite check, passes/loss_scale.c; accumulation, passes/accumulate.c): it reads each
 * parameter's gradient where Node.grad_of last marks it, and emits the updates, each guarded by
 * Graph.finite when there is one. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "passes/passes.h"

static int bin(Graph *g, OpId op, int a, int b)
{
	int in[2] = {a, b};
	return ir_emit(g, op, in, NULL);
}

static int scaled(Graph *g, double c, int x) { return bin(g, OP_mul, ir_const(g, c), x); }

static int state(Graph *g, int p, const char *slot) { return ir_state_for(g, p, slot, g->node[p].shape); }

/* (fp16: only when the step's gradients are finite) */
static void assign(Graph *g, int target, int value)
{
	int in[2] = {target, loss_scale_guard(g, target, value)};
	ir_emit(g, OP_assign, in, NULL);
}

static int unary(Graph *g, OpId op, int x) { return ir_emit(g, op, (int[]){x}, NULL); }

/* c*x + (1-c)*y: every moving average of the optimizers */
static int blend(Graph *g, double c, int x, int y)
{
	return bin(g, OP_add, scaled(g, c, x), scaled(g, 1 - c, y));
}

static int with_weight_decay(Graph *g, int p, int grad)
{
	double wd = g->train.weight_decay;
	bool coupled = g->train.optimizer != OPT_ADAMW;
	return wd != 0 && coupled ? bin(g, OP_add, grad, scaled(g, wd, p)) : grad;
}

/* The gradient's part of the new momentum buffer: (1 - dampening*started)*g, with *started 0
 * before the first step and 1 after it, so the first buffer is g itself. */
static int sgd_damped(Graph *g, int p, int grad, int *started)
{
	double dampening = g->train.dampening;
	if (dampening == 0)
		return grad;
	*started = ir_state_for(g, p, "momentum_started", (Shape){0});
	int weight = bin(g, OP_sub, ir_const(g, 1.0), scaled(g, dampening, *started));
	return bin(g, OP_mul, weight, grad);
}

static int sgd_step(Graph *g, int p, int grad, int *started)
{
	const TrainConfig *c = &g->train;
	if (c->momentum == 0)
		return grad;
	int buf = state(g, p, "momentum_buffer");
	int next = bin(g, OP_add, scaled(g, c->momentum, buf), sgd_damped(g, p, grad, started));
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

/* 1 - b^t for the step count t (a scalar node) */
static int bias_correction(Graph *g, double beta, int t)
{
	return bin(g, OP_sub, ir_const(g, 1.0), unary(g, OP_exp, scaled(g, log(beta), t)));
}

/* Adam's step direction; the caller multiplies it by lr. */
static int adam_step(Graph *g, int p, int grad)
{
	const TrainConfig *c = &g->train;
	int m = state(g, p, "exp_avg");
	int v = state(g, p, "exp_avg_sq");
	int step = ir_state_for(g, p, "step", (Shape){0});
	int t = bin(g, OP_add, step, ir_const(g, 1.0));
	int m_next = blend(g, c->beta1, m, grad);
	int v_next = blend(g, c->beta2, v, bin(g, OP_mul, grad, grad));
	int bc2_sqrt = unary(g, OP_sqrt, bias_correction(g, c->beta2, t));
	int denom = bin(g, OP_add, bin(g, OP_div, unary(g, OP_sqrt, v_next), bc2_sqrt), ir_const(g, c->eps));
	int dir = bin(g, OP_div, bin(g, OP_div, m_next, bias_correction(g, c->beta1, t)), denom);
	assign(g, m, m_next);
	assign(g, v, v_next);
	assign(g, step, t);
	return dir;
}

/* AdamW decays the parameter itself, before the step: p * (1 - lr*wd). */
static int decoupled_decay(Graph *g, int p)
{
	double wd = g->train.weight_decay;
	if (g->train.optimizer != OPT_ADAMW || wd == 0)
		return p;
	int keep = bin(g, OP_sub, ir_const(g, 1.0), scaled(g, wd, g->lr));
	return bin(g, OP_mul, p, keep);
}

void optimizer_emit_update(Graph *g, int p, int grad)
{
	grad = with_weight_decay(g, p, grad);
	int step, started = -1;
	switch (g->train.optimizer) {
	case OPT_ADADELTA:
		step = adadelta_step(g, p, grad);
		break;
	case OPT_ADAM:
	case OPT_ADAMW:
		step = adam_step(g, p, grad);
		break;
	default:
		step = sgd_step(g, p, grad, &started);
		break;
	}
	assign(g, p, bin(g, OP_sub, decoupled_decay(g, p), bin(g, OP_mul, g->lr, step)));
	/* Last: a scalar is not in the update's kernel (group outputs share one shape), and kernels run
	 * in the order of their last node, so this one runs after the kernel that reads the old value. */
	if (started >= 0)
		assign(g, started, ir_const(g, 1.0));
}

/* The training step: the loss, the scores (for accuracy) and every update, the optimizer's and
 * the frontend's (batch norm's running statistics). */
static void mark_training(Graph *g)
{
	int nroots;
	int *roots = passes_step_roots(g, g->nnodes, &nroots);
	ir_mark_program(g, roots, nroots, PROG_TRAIN);
	free(roots);
}

bool pass_optimizer(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	int first = g->nnodes;
	int *grad = passes_param_gradients(g);
	for (int i = 0; i < first; i++)
		if (g->node[i].op == OP_param && grad[i] < 0) {
			diag_error(d, g->node[i].loc, "parameter '%s' has no gradient (no node's grad_of names it): "
				   "the optimizer pass needs autodiff before it", g->node[i].name);
			free(grad);
			return false;
		}
	if (g->lr < 0) {
		double slot = RUNTIME_LR;
		g->lr = ir_leaf(g, OP_runtime, "lr", (Shape){0}, DT_F32, &slot);
	}
	for (int i = 0; i < first; i++)
		if (g->node[i].op == OP_param)
			optimizer_emit_update(g, i, grad[i]);
	free(grad);
	mark_training(g);
	return true;
}
