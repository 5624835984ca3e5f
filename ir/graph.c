/* graph.c: building graphs, op metadata lookups and shape helpers. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/checked.h"
#include "ir/ir.h"

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "netc: out of memory\n");
		abort();
	}
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

/* ---- ops ---- */

int ir_op_lookup(const char *name)
{
	for (int i = 0; i < OP_COUNT; i++)
		if (strcmp(ir_ops[i].name, name) == 0)
			return i;
	return -1;
}

/* The i-th name in a comma-separated list, or NULL. */
static const char *list_item(const char *list, int i, size_t *len)
{
	const char *p = list;
	for (; i > 0 && p; i--) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p || !*p)
		return NULL;
	*len = strcspn(p, ",");
	return p;
}

int ir_op_nattrs(OpId op)
{
	size_t len;
	int n = 0;
	while (list_item(ir_ops[op].attrs, n, &len))
		n++;
	return n;
}

int ir_attr_index(OpId op, const char *attr)
{
	size_t len;
	const char *p;
	for (int i = 0; (p = list_item(ir_ops[op].attrs, i, &len)); i++)
		if (strlen(attr) == len && strncmp(p, attr, len) == 0)
			return i;
	return -1;
}

const char *ir_attr_name(OpId op, int i, char *buf, size_t len)
{
	size_t n;
	const char *p = list_item(ir_ops[op].attrs, i, &n);
	if (!p)
		return NULL;
	snprintf(buf, len, "%.*s", (int)n, p);
	return buf;
}

/* ---- shapes ---- */

int64_t shape_numel(const Shape *s)
{
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++)
		n *= s->dim[i];
	return n;
}

bool shape_fits(const Shape *s)
{
	int64_t n;
	return s->rank >= 0 && s->rank <= IR_MAX_DIMS && ckd_numel(s->dim, s->rank, IR_MAX_NUMEL, &n);
}

bool shape_eq(const Shape *a, const Shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dim[i] != b->dim[i])
			return false;
	return true;
}

Shape shape_make(int rank, const int64_t *dim)
{
	Shape s = {0};
	s.rank = rank;
	for (int i = 0; i < rank && i < IR_MAX_DIMS; i++)
		s.dim[i] = dim[i];
	return s;
}

const char *shape_str(const Shape *s, char *buf, size_t len)
{
	size_t n = 0;
	n += snprintf(buf + n, n < len ? len - n : 0, "[");
	for (int i = 0; i < s->rank; i++)
		n += snprintf(buf + n, n < len ? len - n : 0, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
	snprintf(buf + n, n < len ? len - n : 0, "]");
	return buf;
}

/* ---- graphs ---- */

Graph *ir_graph_new(const char *name)
{
	Graph *g = xrealloc(NULL, sizeof *g);
	memset(g, 0, sizeof *g);
	snprintf(g->name, sizeof g->name, "%s", name ? name : "model");
	g->train = train_config_default();
	g->batch = g->train.batch;
	g->image = g->label = g->output = g->loss = -1;
	g->eval_output = g->eval_loss = -1;
	g->lr = g->rng = -1;
	g->loss_scale = g->finite = -1;
	return g;
}

void ir_graph_free(Graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->nnodes; i++)
		free(g->node[i].name);
	ir_names_free(g);
	free(g->node);
	free(g);
}

static Node *new_node(Graph *g, OpId op)
{
	if (g->nnodes == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 64;
		g->node = xrealloc(g->node, g->cap * sizeof *g->node);
	}
	Node *n = &g->node[g->nnodes];
	memset(n, 0, sizeof *n);
	n->id = g->nnodes;
	n->op = op;
	n->grad_of = -1;
	n->offset = -1;
	n->ws_offset = -1;
	n->group = ir_is_leaf(op) ? -1 : n->id;
	return n;
}

void ir_set_name(Graph *g, int id, const char *name)
{
	ir_names_remove(g, id);
	free(g->node[id].name);
	g->node[id].name = xstrdup(name);
	ir_names_insert(g, id);
}

/* Anonymous values are called t<id>; a user name that collides gets a suffix. */
static void name_node(Graph *g, Node *n, const char *name)
{
	char buf[128];
	if (!name) {
		snprintf(buf, sizeof buf, "t%d", n->id);
		name = buf;
	}
	if (ir_find(g, name) >= 0) {
		snprintf(buf, sizeof buf, "%.100s.%d", name, n->id);
		name = buf;
	}
	n->name = xstrdup(name);
	ir_names_insert(g, n->id);
}

int ir_add(Graph *g, OpId op, const int *in, const double *attr, const char *name, char *err, size_t errlen)
{
	const OpInfo *info = &ir_ops[op];
	for (int i = 0; i < info->nin; i++)
		if (in[i] < 0 || in[i] >= g->nnodes) {
			snprintf(err, errlen, "%s: input %d does not exist", info->name, i);
			return -1;
		}
	Node *n = new_node(g, op);
	n->nin = info->nin;
	for (int i = 0; i < info->nin; i++)
		n->in[i] = in[i];
	if (attr)
		memcpy(n->attr, attr, ir_op_nattrs(op) * sizeof *attr);
	if (info->shape && !info->shape(n, g, err, errlen))
		return -1; /* the node was never counted: the graph is unchanged */
	if (!shape_fits(&n->shape)) {
		char s[96];
		snprintf(err, errlen, "%s: the result %s has more than 2^40 elements", info->name,
			 shape_str(&n->shape, s, sizeof s));
		return -1;
	}
	g->nnodes++;
	name_node(g, n, name);
	return n->id;
}

int ir_emit(Graph *g, OpId op, const int *in, const double *attr)
{
	char err[256];
	int id = ir_add(g, op, in, attr, NULL, err, sizeof err);
	if (id < 0) {
		fprintf(stderr, "netc: internal error: %s\n", err);
		abort();
	}
	return id;
}

int ir_leaf(Graph *g, OpId op, const char *name, Shape shape, DType dtype, const double *attr)
{
	Node *n = new_node(g, op);
	n->shape = shape;
	n->dtype = dtype;
	if (attr)
		memcpy(n->attr, attr, ir_op_nattrs(op) * sizeof *attr);
	g->nnodes++;
	name_node(g, n, name);
	return n->id;
}

int ir_state_for(Graph *g, int param, const char *slot, Shape shape)
{
	char name[160];
	snprintf(name, sizeof name, "%.120s.%s", g->node[param].name, slot);
	double init = INIT_ZERO;
	int s = ir_leaf(g, OP_state, name, shape, DT_F32, &init);
	if (shape_eq(&shape, &g->node[param].shape))
		memcpy(g->node[s].perm, g->node[param].perm, sizeof g->node[s].perm);
	return s;
}

bool ir_stored_permuted(const Node *n) { return n->perm[0] || n->perm[1]; }

int ir_const(Graph *g, double value)
{
	Shape scalar = {0};
	return ir_leaf(g, OP_const, NULL, scalar, DT_F32, &value);
}

int ir_sum_to(Graph *g, int x, const Shape *to)
{
	const Shape *from = &g->node[x].shape;
	if (shape_eq(from, to))
		return x;
	int lead = from->rank - to->rank;
	unsigned mask = 0;
	for (int i = 0; i < from->rank; i++)
		if (i < lead || (to->dim[i - lead] == 1 && from->dim[i] != 1))
			mask |= 1u << i;
	int y = x;
	if (mask) {
		double attr[2] = {mask, 1};
		y = ir_emit(g, OP_sum, &y, attr);
	}
	if (!shape_eq(&g->node[y].shape, to)) {
		double attr[1 + IR_MAX_DIMS] = {to->rank};
		for (int i = 0; i < to->rank; i++)
			attr[1 + i] = to->dim[i];
		y = ir_emit(g, OP_reshape, &y, attr);
	}
	return y;
}

/* ---- summaries ---- */

double ir_flops(const Graph *g, unsigned programs)
{
	double total = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (ir_ops[n->op].flops && (programs == 0 || (n->programs & programs)))
			total += ir_ops[n->op].flops(g, n);
	}
	return total;
}

int64_t ir_param_count(const Graph *g)
{
	int64_t total = 0;
	for (int i = 0; i < g->nnodes; i++)
		if (g->node[i].op == OP_param)
			total = sat_add_i64(total, shape_numel(&g->node[i].shape));
	return total;
}

bool ir_is_leaf(OpId op)
{
	return op == OP_input || op == OP_param || op == OP_state || op == OP_runtime || op == OP_const;
}

void ir_mark_program(Graph *g, const int *roots, int nroots, unsigned prog)
{
	char *live = calloc(g->nnodes ? g->nnodes : 1, 1);
	if (!live)
		abort();
	for (int i = 0; i < nroots; i++)
		if (roots[i] >= 0)
			live[roots[i]] = 1;
	/* inputs come before their users, so one backward sweep sees every dependency */
	for (int i = g->nnodes - 1; i >= 0; i--) {
		if (!live[i])
			continue;
		Node *n = &g->node[i];
		if (!ir_is_leaf(n->op))
			n->programs |= prog;
		for (int k = 0; k < n->nin; k++)
			live[n->in[k]] = 1;
	}
	free(live);
}
