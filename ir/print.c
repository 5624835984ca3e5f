/* print.c: the graph as text, one node per line:
 *   %name: dtype[dims] = op(%input, ...) {attr=value, ...}
 * Leaves (inputs, params, state, runtime values, constants) come first in node order like any
 * other node; `programs` picks which computed nodes are shown. */
#include "ir/ir.h"

static void print_node(FILE *out, const Graph *g, const Node *n)
{
	char buf[128];
	fprintf(out, "  %%%s: %s%s = %s", n->name, dtype_name(n->dtype), shape_str(&n->shape, buf, sizeof buf),
		ir_ops[n->op].name);
	if (n->nin) {
		fputc('(', out);
		for (int i = 0; i < n->nin; i++)
			fprintf(out, "%s%%%s", i ? ", " : "", g->node[n->in[i]].name);
		fputc(')', out);
	}
	int na = ir_op_nattrs(n->op);
	if (n->op == OP_reshape || n->op == OP_broadcast_to)
		na = 0; /* the target shape is the node's own shape */
	for (int i = 0; i < na; i++)
		fprintf(out, "%s%s=%g", i ? ", " : " {", ir_attr_name(n->op, i, buf, sizeof buf), n->attr[i]);
	if (na)
		fputc('}', out);
	if (ir_stored_permuted(n)) { /* stored in another axis order than the public one */
		fprintf(out, " stored perm=[");
		for (int d = 0; d < n->shape.rank; d++)
			fprintf(out, "%s%d", d ? ", " : "", n->perm[d]);
		fputc(']', out);
	}
	if (n->grad_of >= 0)
		fprintf(out, "  ; grad of %%%s", g->node[n->grad_of].name);
	fputc('\n', out);
}

void ir_print(FILE *out, const Graph *g, unsigned programs)
{
	fprintf(out, "graph %s (batch %lld)\n", g->name, (long long)g->batch);
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (programs && !ir_is_leaf(n->op) && !(n->programs & programs))
			continue;
		print_node(out, g, n);
	}
	if (g->loss >= 0)
		fprintf(out, "  loss %%%s\n", g->node[g->loss].name);
}
