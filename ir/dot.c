/* dot.c: the graph as Graphviz text (`netc dot`), fused groups as clusters; the backward pass and
 * the optimizer update may be drawn as one box each, which keeps a training step readable. */
#include <stdlib.h>
#include <string.h>

#include "ir/dot.h"

enum { PART_FORWARD, PART_BACKWARD, PART_OPTIMIZER, NPARTS, PART_UNSET = 0xff };
static const char *const part_names[NPARTS] = {"forward", "backward", "optimizer"};

/* The DOT_COLLAPSE_* bit of a part other than forward. */
static unsigned part_bit(int part) { return 1u << (part - PART_BACKWARD); }

static bool shown(const Node *n, unsigned programs)
{
	return !ir_is_leaf(n->op) && (!programs || (n->programs & programs));
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

bool ir_dot_parse_collapse(const char *list, unsigned *collapse, char *err, size_t errlen)
{
	*collapse = 0;
	for (const char *p = list; *p; p += *p == ',') {
		size_t len = strcspn(p, ",");
		int part = PART_BACKWARD;
		while (part < NPARTS && !(strlen(part_names[part]) == len && strncmp(p, part_names[part], len) == 0))
			part++;
		if (part == NPARTS) {
			snprintf(err, errlen, "'%.*s' is not a part to collapse: backward, optimizer or both (backward,optimizer)",
				 (int)len, p);
			return false;
		}
		*collapse |= part_bit(part);
		p += len;
	}
	if (!*collapse)
		snprintf(err, errlen, "give the parts to collapse: backward, optimizer or both (backward,optimizer)");
	return *collapse != 0;
}

/* n zeroed elements (at least one), or an abort: dot's arrays are small */
static void *zalloc(int n, size_t size)
{
	void *p = calloc(n > 0 ? (size_t)n : 1, size);
	if (!p)
		abort();
	return p;
}

/* Gives part p to the inputs of every node of part p, from the last node to the first, where they
 * have none yet: what the nodes of a part are made of belongs to it. */
static void spread(const Graph *g, unsigned char *part, unsigned char p)
{
	for (int id = g->nnodes - 1; id >= 0; id--)
		for (int k = 0; part[id] == p && k < g->node[id].nin; k++) {
			int x = g->node[id].in[k];
			if (!ir_is_leaf(g->node[x].op) && part[x] == PART_UNSET)
				part[x] = p;
		}
}

/* The optimizer's assigns to state: those whose state an optimizer node reads (momentum buffers,
 * Adam's moments and step count, SGD's first-step flag), not batch norm's running statistics. */
static void optimizer_state_assigns(const Graph *g, unsigned char *part)
{
	bool *read = zalloc(g->nnodes, sizeof *read);
	for (int id = 0; id < g->nnodes; id++)
		for (int k = g->node[id].op == OP_assign; part[id] == PART_OPTIMIZER && k < g->node[id].nin; k++)
			read[g->node[id].in[k]] = true;
	for (int id = 0; id < g->nnodes; id++)
		if (part[id] == PART_UNSET && g->node[id].op == OP_assign && read[g->node[id].in[0]])
			part[id] = PART_OPTIMIZER;
	free(read);
}

/* Each node's part: forward (what the loss and the scores need, and the rest, such as batch norm's
 * running statistics), backward (the gradients and what they are made of), optimizer (what the
 * assigns to parameters and to optimizer state need). A node in a kernel takes the kernel's part,
 * that of its last node. */
static void classify(const Graph *g, unsigned char *part)
{
	memset(part, PART_UNSET, g->nnodes > 0 ? (size_t)g->nnodes : 0);
	if (g->loss >= 0)
		part[g->loss] = PART_FORWARD;
	if (g->output >= 0)
		part[g->output] = PART_FORWARD;
	spread(g, part, PART_FORWARD);
	for (int id = 0; id < g->nnodes; id++)
		if (part[id] == PART_UNSET && g->node[id].grad_of >= 0)
			part[id] = PART_BACKWARD;
	spread(g, part, PART_BACKWARD);
	for (int id = 0; id < g->nnodes; id++)
		if (part[id] == PART_UNSET && g->node[id].op == OP_assign && g->node[g->node[id].in[0]].op == OP_param)
			part[id] = PART_OPTIMIZER;
	spread(g, part, PART_OPTIMIZER);
	optimizer_state_assigns(g, part);
	spread(g, part, PART_OPTIMIZER);
	for (int id = 0; id < g->nnodes; id++) {
		if (part[id] == PART_UNSET)
			part[id] = PART_FORWARD;
		if (!ir_is_leaf(g->node[id].op) && g->node[id].group > id)
			part[id] = part[g->node[id].group];
	}
}

/* What is drawn, and where edges end: a node of its own ("n<id>") or a part's box. */
typedef struct {
	const Graph *g;
	unsigned char *part;
	bool *collapsed; /* by node: inside a part's box */
	bool *drawn;     /* by node: drawn on its own */
	bool *linked;    /* [2 * NPARTS][nnodes]: an edge from the node to box p, from box p to the node */
	bool boxes_linked[NPARTS][NPARTS];
} Drawing;

static void drawing_init(Drawing *d, const Graph *g, unsigned programs, unsigned collapse)
{
	*d = (Drawing){.g = g};
	d->part = zalloc(g->nnodes, 1);
	d->collapsed = zalloc(g->nnodes, sizeof *d->collapsed);
	d->drawn = zalloc(g->nnodes, sizeof *d->drawn);
	d->linked = zalloc(2 * NPARTS * g->nnodes, sizeof *d->linked);
	classify(g, d->part);
	for (int id = 0; id < g->nnodes; id++) {
		const Node *n = &g->node[id];
		d->collapsed[id] = shown(n, programs) && d->part[id] != PART_FORWARD &&
				   (collapse & part_bit(d->part[id]));
		d->drawn[id] = shown(n, programs) && !d->collapsed[id];
	}
	/* a leaf is drawn when a node drawn on its own reads it */
	for (int id = 0; id < g->nnodes; id++)
		for (int k = 0; d->drawn[id] && !ir_is_leaf(g->node[id].op) && k < g->node[id].nin; k++)
			d->drawn[g->node[id].in[k]] |= ir_is_leaf(g->node[g->node[id].in[k]].op);
}

static void drawing_free(Drawing *d)
{
	free(d->part);
	free(d->collapsed);
	free(d->drawn);
	free(d->linked);
}

/* The edge from x to its reader y: between nodes drawn on their own as before, once per node and
 * box where a box is at an end, none inside a box or from a leaf that is not drawn. */
static void put_edge(FILE *out, Drawing *d, int x, int y)
{
	size_t n = (size_t)d->g->nnodes;
	int px = d->part[x], py = d->part[y];
	bool bx = d->collapsed[x], by = d->collapsed[y];
	if (!(bx || d->drawn[x]) || (bx && by && px == py))
		return;
	if (bx && by) {
		if (!d->boxes_linked[px][py])
			fprintf(out, "  %s -> %s;\n", part_names[px], part_names[py]);
		d->boxes_linked[px][py] = true;
	} else if (by) {
		if (!d->linked[(size_t)py * n + (size_t)x])
			fprintf(out, "  n%d -> %s;\n", x, part_names[py]);
		d->linked[(size_t)py * n + (size_t)x] = true;
	} else if (bx) {
		if (!d->linked[(NPARTS + (size_t)px) * n + (size_t)y])
			fprintf(out, "  %s -> n%d;\n", part_names[px], y);
		d->linked[(NPARTS + (size_t)px) * n + (size_t)y] = true;
	} else
		fprintf(out, "  n%d -> n%d;\n", x, y);
}

/* "backward [label="backward\n412 nodes, 120 kernels", ...]" for each collapsed part */
static void put_boxes(FILE *out, const Drawing *d)
{
	for (int p = PART_BACKWARD; p < NPARTS; p++) {
		int nodes = 0, kernels = 0;
		for (int id = 0; id < d->g->nnodes; id++)
			if (d->collapsed[id] && d->part[id] == p) {
				nodes++;
				kernels += d->g->node[id].group == id;
			}
		if (nodes)
			fprintf(out, "  %s [label=\"%s\\n%d nodes, %d kernels\", shape=box3d, style=filled, "
				"fillcolor=\"#e8e8f4\", fontsize=14];\n", part_names[p], part_names[p], nodes, kernels);
	}
}

void ir_dot(FILE *out, const Graph *g, unsigned programs, unsigned collapse)
{
	int nodes, kernels = count_kernels(g, programs, &nodes);
	Drawing d;
	drawing_init(&d, g, programs, collapse);
	fprintf(out, "// netc dot: graph %s (batch %lld), %s: %d kernels for %d nodes\n", g->name, (long long)g->batch,
		programs == PROG_TRAIN ? "training program" : programs == PROG_EVAL ? "evaluation program" : "every program",
		kernels, nodes);
	for (int id = 0; id < g->nnodes; id++)
		if (shown(&g->node[id], programs) && g->node[id].group == id)
			put_kernel_comment(out, g, id);
	fputs("digraph \"", out);
	put_escaped(out, g->name);
	/* Nodes packed closer than Graphviz's default. With the backward pass collapsed, the forward
	 * nodes' edges into its box would spread the forward pass sideways: newrank ranks across the
	 * clusters (without it, each cluster is ranked apart and blocks sit side by side) and
	 * concentrate merges those edges. Both are left out otherwise: newrank takes minutes on a
	 * whole training step. */
	fprintf(out, "\" {\n  graph [rankdir=TB, nodesep=0.15, ranksep=0.3%s];\n"
		"  node [shape=box, fontname=\"monospace\", fontsize=10];\n",
		collapse & DOT_COLLAPSE_BACKWARD ? ", newrank=true, concentrate=true" : "");
	for (int id = 0; id < g->nnodes; id++) {
		const Node *n = &g->node[id];
		if (!d.drawn[id] || (!ir_is_leaf(n->op) && n->group != id))
			continue;
		if (!ir_is_leaf(n->op) && group_size(g, id) > 1)
			put_cluster(out, g, id);
		else
			put_node(out, g, id, "  ");
	}
	put_boxes(out, &d);
	for (int id = 0; id < g->nnodes; id++)
		for (int k = 0; k < g->node[id].nin && shown(&g->node[id], programs); k++)
			put_edge(out, &d, g->node[id].in[k], id);
	fputs("}\n", out);
	drawing_free(&d);
}
