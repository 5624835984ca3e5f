/* interp.c: the float64 reference interpreter. Every op's reference function computes one node;
 * compiled kernels are checked against it. */
#include <stdlib.h>

#include "ir/ir.h"

/* Leaves whose values the caller fills in; constants are leaves that compute themselves. */
static bool is_given(OpId op)
{
	return ir_is_leaf(op) && op != OP_const;
}

void ir_eval_node(const Graph *g, const Node *n, const double *const *in, double *out)
{
	RefFn ref = ir_ops[n->op].ref;
	if (is_given(n->op))
		return;
	if (!ref) {
		fprintf(stderr, "netc: internal error: op %s has no reference\n", ir_ops[n->op].name);
		abort();
	}
	ref(g, n, in, out);
	/* a half-precision value is stored rounded: model that, so later nodes see what kernels see */
	if (n->dtype == DT_F16 || n->dtype == DT_BF16)
		for (int64_t i = 0, m = shape_numel(&n->shape); i < m; i++)
			out[i] = ir_round_to(out[i], n->dtype);
}

/* Constants belong to no program: they are evaluated whenever a program runs. */
void ir_interp(const Graph *g, unsigned programs, double **values)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		const double *in[IR_MAX_INPUTS];
		if (is_given(n->op) || (programs && n->op != OP_const && !(n->programs & programs)))
			continue;
		for (int k = 0; k < n->nin; k++)
			in[k] = values[n->in[k]];
		ir_eval_node(g, n, in, values[i]);
	}
}
