/* verify.c: structural invariants every pass must keep. */
#include <stdarg.h>
#include <string.h>

#include "ir/ir.h"

static bool fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return false;
}

static bool check_ref(const Graph *g, int id, int ref, const char *what, char *err, size_t len)
{
	if (ref < -1 || ref >= g->nnodes)
		return fail(err, len, "graph %s: %s %d of node %d is out of range", g->name, what, ref, id);
	return true;
}

bool ir_verify(const Graph *g, char *err, size_t len)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (n->id != i)
			return fail(err, len, "node %d has id %d", i, n->id);
		if ((unsigned)n->op >= OP_COUNT)
			return fail(err, len, "node %d has no op", i);
		if (!n->name || !*n->name)
			return fail(err, len, "node %d has no name", i);
		if (n->nin != ir_ops[n->op].nin)
			return fail(err, len, "%%%s: %s takes %d inputs, has %d", n->name, ir_ops[n->op].name,
				    ir_ops[n->op].nin, n->nin);
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] < 0 || n->in[k] >= i)
				return fail(err, len, "%%%s: input %d (%d) is not an earlier node", n->name, k, n->in[k]);
		if (n->shape.rank < 0 || n->shape.rank > IR_MAX_DIMS)
			return fail(err, len, "%%%s: rank %d", n->name, n->shape.rank);
		for (int d = 0; d < n->shape.rank; d++)
			if (n->shape.dim[d] <= 0)
				return fail(err, len, "%%%s: dimension %d is %lld", n->name, d, (long long)n->shape.dim[d]);
		if (!shape_fits(&n->shape))
			return fail(err, len, "%%%s: more than 2^40 elements", n->name);
		if ((unsigned)n->dtype >= DT_COUNT)
			return fail(err, len, "%%%s: bad dtype", n->name);
		if (!check_ref(g, i, n->grad_of, "grad_of", err, len))
			return false;
		int first = ir_find(g, n->name);
		if (first != i)
			return fail(err, len, "%%%s: name used twice (nodes %d and %d)", n->name, first, i);
	}
	const int *refs[] = {&g->image, &g->label, &g->output, &g->loss, &g->eval_output, &g->eval_loss, &g->lr, &g->rng};
	for (size_t k = 0; k < sizeof refs / sizeof *refs; k++)
		if (!check_ref(g, -1, *refs[k], "graph reference", err, len))
			return false;
	if (g->loss >= 0 && g->node[g->loss].shape.rank != 0)
		return fail(err, len, "loss %%%s is not a scalar", g->node[g->loss].name);
	return true;
}
