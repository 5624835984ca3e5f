/* mixed_precision.c: the forward graph computed in f16 or bf16 with f32 master weights (the
 * mixed-precision pass).
 *
 * Every kernel computes in f32 and rounds what it stores (codegen's storage and compute types),
 * so what a half value risks is its storage: range (f16 tops out at 65504) and 8 or 11 bits of
 * precision. The pass picks a type per forward node, as PyTorch's autocast does:
 *
 *   half  conv2d and matmul (TRAIT_HALF_COMPUTE in ir/ops.def): the work that half precision makes
 *         cheaper;
 *   f32   (TRAIT_COMPUTES_F32) reductions and what can leave half's range or needs its precision:
 *         sum, mean, exp, log, sqrt, softmax, log_softmax, the losses; the scores (Graph.output), the loss and
 *         everything computed from the scores; batch norm's batch statistics (the evaluation
 *         program swaps them for f32 state) and every assign's value (state is f32);
 *   follow every other op (elementwise, bias, pooling, dropout, reshape, concat, lrn): half when
 *         a computed input is half; parameters, state and constants do not vote.
 *
 * An input of another float type is read through a cast, made once per value and type: the image
 * is cast once, a parameter once however many half ops read it, and the f32 parameter stays the
 * master copy the optimizer updates. autodiff then derives the backward pass in the same types
 * (the gradient of a cast is a cast back), so parameter gradients arrive in f32.
 *
 * fp16 (not bf16, whose range is f32's) scales the loss: this pass makes the runtime value
 * Graph.loss_scale, autodiff seeds the backward pass with it, and passes/loss_scale.c unscales
 * the gradients and guards the update. */
#include <stdlib.h>

#include "ir/ops.h"
#include "ir/rebuild.h"
#include "passes/passes.h"

typedef struct {
	DType half;
	char *f32;       /* src nodes that must compute in f32 */
	int *cast[2];    /* per src node: its cast to half [0] / to f32 [1] in dst, -1 none yet */
} MpState;

/* Nodes forced to f32: the scores and all computed from them, the loss, the f32 ops, batch
 * statistics. */
static char *forced_f32(const Graph *g)
{
	char *f = calloc(g->nnodes ? g->nnodes : 1, 1), *tail = calloc(g->nnodes ? g->nnodes : 1, 1);
	if (!f || !tail)
		abort();
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		tail[i] = i == g->output;
		for (int k = 0; k < n->nin; k++)
			tail[i] |= tail[n->in[k]];
		f[i] = tail[i] || i == g->loss || (ir_ops[n->op].traits & TRAIT_COMPUTES_F32);
	}
	for (int k = 0; k < g->neval_swaps; k++)
		f[g->eval_swap[k].node] = 1;
	free(tail);
	return f;
}

/* Whether input k of n is a value the type choice applies to: float, not a constant (weakly
 * typed), not an assign's target. */
static bool retypable(const Graph *g, const Node *n, int k)
{
	const Node *x = &g->node[n->in[k]];
	return dtype_is_float(x->dtype) && x->op != OP_const && !(n->op == OP_assign && k == 0);
}

/* The type node id computes in, given the types its inputs already have in dst. */
static DType choose(const MpState *s, Graph *dst, const Graph *src, int id, const int *map)
{
	const Node *n = &src->node[id];
	if (n->op == OP_assign)
		return src->node[n->in[0]].dtype;
	if (s->f32[id])
		return DT_F32;
	if (ir_ops[n->op].traits & TRAIT_HALF_COMPUTE)
		return s->half;
	for (int k = 0; k < n->nin; k++)
		if (retypable(src, n, k) && !ir_is_leaf(src->node[n->in[k]].op) && dst->node[map[n->in[k]]].dtype == s->half)
			return s->half;
	return DT_F32;
}

/* Value x of src (at xd in dst) as type t: a cast made once per value and type. */
static int as_type(MpState *s, Graph *dst, const Graph *src, int x, int xd, DType t)
{
	if (dst->node[xd].dtype == t)
		return xd;
	int *memo = &s->cast[t == DT_F32][x];
	if (*memo < 0) {
		double attr = t;
		char name[160];
		snprintf(name, sizeof name, "%.140s.%s", src->node[x].name, dtype_name(t));
		char err[256];
		*memo = ir_add(dst, OP_cast, &xd, &attr, name, err, sizeof err);
		if (*memo < 0) {
			fprintf(stderr, "netc: internal error: mixed-precision: %s\n", err);
			abort();
		}
		dst->node[*memo].loc = src->node[x].loc;
	}
	return *memo;
}

static int retype(Graph *dst, const Graph *src, int id, const int *map, void *ctx)
{
	MpState *s = ctx;
	const Node *n = &src->node[id];
	if (ir_is_leaf(n->op))
		return ir_rebuild_copy(dst, src, id, map);
	DType t = choose(s, dst, src, id, map);
	int in[IR_MAX_INPUTS];
	for (int k = 0; k < n->nin; k++)
		in[k] = retypable(src, n, k) ? as_type(s, dst, src, n->in[k], map[n->in[k]], t) : map[n->in[k]];
	return ir_rebuild_copy_with(dst, src, id, map, in);
}

bool pass_mixed_precision(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	/* tf32 keeps every value in f32: only the GEMM templates' products differ */
	if (g->train.precision != PREC_FP16 && g->train.precision != PREC_BF16)
		return true;
	MpState s = {g->train.precision == PREC_FP16 ? DT_F16 : DT_BF16, forced_f32(g), {NULL, NULL}};
	for (int t = 0; t < 2; t++) {
		s.cast[t] = malloc((g->nnodes ? g->nnodes : 1) * sizeof *s.cast[t]);
		if (!s.cast[t])
			abort();
		for (int i = 0; i < g->nnodes; i++)
			s.cast[t][i] = -1;
	}
	ir_rebuild(g, retype, &s);
	free(s.f32);
	free(s.cast[0]);
	free(s.cast[1]);
	if (g->train.precision == PREC_FP16 && g->loss_scale < 0) {
		double slot = RUNTIME_LOSS_SCALE;
		g->loss_scale = ir_leaf(g, OP_runtime, "loss_scale", (Shape){0}, DT_F32, &slot);
	}
	return true;
}
