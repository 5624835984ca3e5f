/* dot.c: the graph as Graphviz text (`netc dot`), fused groups as clusters. */
#include "ir/dot.h"

static bool shown(const Node *n, unsigned programs)
{
	return !ir_is_leaf(n->op) && (!programs || (n->programs & programs));
}

/* Whether leaf id is read by a shown node. */
static bool leaf_used(const Graph *g, int id, unsigned programs)
{
	for (int j = id + 1; j < g->nnodes; j++)
		for (int k = 0; k < g->node[j].nin && shown(&g->node[j], programs); k++)
			if (g->node[j].in[k] == id)
				return true;
	return false;
}

/* A label string without the characters that would end it. */
static void put_escaped(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		fputc(*s, out);
	}
}

static void put_kernel_name(FILE *out, const Graph *g, int leader)
{
	fprintf(out, "k%d_%s", leader, ir_ops[g->node[leader].op].name);
}

static int group_size(const Graph *g, int leader)
{
	int n = 0;
	for (int id = 0; id <= leader; id++)
		n += g->node[id].group == leader;
	return n;
}

/* "// kernel k5_relu: conv2d %t3, bias_add %conv1 (output), relu %relu_1 (output)" */
static void put_kernel_comment(FILE *out, const Graph *g, int leader)
{
	fputs("// kernel ", out);
	put_kernel_name(out, g, leader);
	const char *sep = ": ";
	for (int id = 0; id <= leader; id++) {
		if (g->node[id].group != leader)
			continue;
		fprintf(out, "%s%s %%%s%s", sep, ir_ops[g->node[id].op].name, g->node[id].name,
			id != leader && ir_group_output(g, id) ? " (output)" : "");
		sep = ", ";
	}
	fputc('\n', out);
}

static void put_node(FILE *out, const Graph *g, int id, const char *indent)
{
	const Node *n = &g->node[id];
	char shape[128];
	fprintf(out, "%sn%d [label=\"%%", indent, id);
	put_escaped(out, n->name);
	fprintf(out, "\\n%s %s%s\"", ir_ops[n->op].name, dtype_name(n->dtype), shape_str(&n->shape, shape, sizeof shape));
	if (ir_is_leaf(n->op))
		fputs(", shape=ellipse", out);
	else if (!ir_group_output(g, id))
		fputs(", style=dashed", out);
	fputs("];\n", out);
}

static void put_cluster(FILE *out, const Graph *g, int leader)
{
	fprintf(out, "  subgraph cluster_%d {\n    label=\"", leader);
	put_kernel_name(out, g, leader);
	fputs("\";\n    style=rounded;\n    color=blue;\n", out);
	for (int id = 0; id <= leader; id++)
		if (g->node[id].group == leader)
			put_node(out, g, id, "    ");
	fputs("  }\n", out);
}

static int count_kernels(const Graph *g, unsigned programs, int *nodes)
{
	int kernels = 0;
	*nodes = 0;
	for (int id = 0; id < g->nnodes; id++) {
		if (!shown(&g->node[id], programs))
			continue;
		(*nodes)++;
		kernels += g->node[id].group == id;
	}
	return kernels;
}

void ir_dot(FILE *out, const Graph *g, unsigned programs)
{
	int nodes, kernels = count_kernels(g, programs, &nodes);
	fprintf(out, "// netc dot: graph %s (batch %lld), %s: %d kernels for %d nodes\n", g->name, (long long)g->batch,
		programs == PROG_TRAIN ? "training program" : programs == PROG_EVAL ? "evaluation program" : "every program",
		kernels, nodes);
	for (int id = 0; id < g->nnodes; id++)
		if (shown(&g->node[id], programs) && g->node[id].group == id)
			put_kernel_comment(out, g, id);
	fputs("digraph \"", out);
	put_escaped(out, g->name);
	fputs("\" {\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n", out);
	for (int id = 0; id < g->nnodes; id++) {
		const Node *n = &g->node[id];
		if (ir_is_leaf(n->op) ? leaf_used(g, id, programs) : shown(n, programs) && n->group == id) {
			if (!ir_is_leaf(n->op) && group_size(g, id) > 1)
				put_cluster(out, g, id);
			else
				put_node(out, g, id, "  ");
		}
	}
	for (int id = 0; id < g->nnodes; id++)
		for (int k = 0; k < g->node[id].nin && shown(&g->node[id], programs); k++)
			fprintf(out, "  n%d -> n%d;\n", g->node[id].in[k], id);
	fputs("}\n", out);
}
