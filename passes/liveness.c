/* liveness.c: which values need storage, and when each is written and last read.
 *
 * A fused group runs as one kernel at the position of its last member (its group id), so a value
 * is written at its group's time and read at the times of the groups that use it; members read
 * inside their own group never touch storage. Values the runtime writes or reads between steps,
 * and gradients and optimizer state, are resident: they hold their block for the whole run. A
 * training value that evaluation computes again (passes/share_eval.c) has a lifetime in each. */
#include <stdlib.h>

#include "passes/passes.h"

int liveness_time(const Graph *g, const Node *n, unsigned prog)
{
	int t = n->group >= 0 ? n->group : n->id;
	return prog == PROG_EVAL ? g->nnodes + t : t;
}

int64_t liveness_bytes(const Graph *g, int id)
{
	const Node *n = &g->node[id];
	return shape_numel(&n->shape) * (int64_t)dtype_size(n->dtype);
}

int64_t liveness_ws_bytes(const Graph *g, int id)
{
	const Node *n = &g->node[id];
	int split = n->programs ? ir_split_k_most(g, n) : 1;
	return split > 1 ? (int64_t)split * shape_numel(&n->shape) * 4 : 0;
}

static bool is_gradient_of_param(const Graph *g, const Node *n)
{
	return n->grad_of >= 0 && g->node[n->grad_of].op == OP_param;
}

/* Training and accumulation run the same kernels in node order, a step at a time, so they share
 * one timeline (accumulation's own kernels come last); evaluation has its own, after it. */
static bool in_one_program(unsigned programs)
{
	return programs == PROG_EVAL || (programs && !(programs & PROG_EVAL));
}

/* A training node that evaluation runs too (passes/share_eval.c). */
static bool shared(const Node *n)
{
	return (n->programs & PROG_EVAL) && (n->programs & ~(unsigned)PROG_EVAL);
}

static void extend(int *last, int t)
{
	if (t > *last)
		*last = t;
}

/* The kind of every node before reads are looked at; leaves are resident once something reads them. */
static LiveKind kind_of(const Graph *g, const Liveness *l, const Node *n, const char *read)
{
	if (n->op == OP_const)
		return LIVE_NONE;
	if (ir_is_leaf(n->op))
		return read[n->id] ? LIVE_RESIDENT : LIVE_NONE;
	if (!n->programs)
		return LIVE_NONE;
	if (n->op == OP_assign)
		return LIVE_ALIAS;
	if (!l->groups.output[n->id])
		return LIVE_NONE;
	if (ir_is_program_root(g, n->id) || is_gradient_of_param(g, n))
		return LIVE_RESIDENT;
	return LIVE_TEMP;
}

static char *leaves_read(const Graph *g)
{
	char *read = calloc(g->nnodes ? g->nnodes : 1, 1);
	if (!read)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; g->node[i].programs && k < g->node[i].nin; k++)
			read[g->node[i].in[k]] = 1;
	/* the runtime writes these before every step, whether a kernel reads them or not: every data
	 * input, the learning rate and the dropout key */
	for (int i = 0; i < g->nnodes; i++)
		if (g->node[i].op == OP_input)
			read[i] = 1;
	int special[] = {g->image, g->label, g->lr, g->rng};
	for (size_t k = 0; k < sizeof special / sizeof *special; k++)
		if (special[k] >= 0)
			read[special[k]] = 1;
	return read;
}

/* Extends the lifetimes of temporaries to their last reader, in each program that computes
 * them; a value that a program reads without computing it stays for the whole run. */
static void extend_to_readers(const Graph *g, Liveness *l)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *u = &g->node[i];
		if (!u->programs || ir_is_leaf(u->op))
			continue;
		for (int k = 0; k < u->nin; k++) {
			int x = u->in[k];
			const Node *v = &g->node[x];
			if (l->kind[x] != LIVE_TEMP)
				continue;
			if (shared(v)) {
				if (u->programs & ~(unsigned)PROG_EVAL)
					extend(&l->last[x], liveness_time(g, u, u->programs & ~(unsigned)PROG_EVAL));
				if (u->programs & PROG_EVAL)
					extend(&l->eval_last[x], liveness_time(g, u, PROG_EVAL));
			} else if (((u->programs & PROG_EVAL) && !(v->programs & PROG_EVAL)) ||
				   (v->programs == PROG_EVAL && u->programs != PROG_EVAL)) {
				l->kind[x] = LIVE_RESIDENT;
			} else {
				extend(&l->last[x], liveness_time(g, u, u->programs));
			}
		}
	}
}

static void *xmalloc(size_t n, size_t size)
{
	void *p = malloc((n ? n : 1) * size);
	if (!p)
		abort();
	return p;
}

void liveness_compute(const Graph *g, Liveness *l)
{
	int n = g->nnodes;
	l->n = n;
	l->kind = xmalloc(n, sizeof *l->kind);
	l->ws_kind = xmalloc(n, sizeof *l->ws_kind);
	l->def = xmalloc(n, sizeof *l->def);
	l->last = xmalloc(n, sizeof *l->last);
	l->eval_def = xmalloc(n, sizeof *l->eval_def);
	l->eval_last = xmalloc(n, sizeof *l->eval_last);
	l->ws_time = xmalloc(n, sizeof *l->ws_time);
	ir_group_index(&l->groups, g);
	char *read = leaves_read(g);
	for (int i = 0; i < n; i++) {
		const Node *v = &g->node[i];
		l->kind[i] = kind_of(g, l, v, read);
		bool temp = l->kind[i] == LIVE_TEMP;
		l->def[i] = l->last[i] = temp ? liveness_time(g, v, v->programs) : -1;
		l->eval_def[i] = l->eval_last[i] = temp && shared(v) ? liveness_time(g, v, PROG_EVAL) : -1;
		l->ws_kind[i] = LIVE_NONE;
		l->ws_time[i] = -1;
		if (liveness_ws_bytes(g, i) > 0) {
			l->ws_kind[i] = in_one_program(v->programs) ? LIVE_TEMP : LIVE_RESIDENT;
			l->ws_time[i] = liveness_time(g, v, v->programs);
		}
	}
	free(read);
	extend_to_readers(g, l);
}

void liveness_hold(Liveness *l, int id)
{
	extend(&l->last[id], l->eval_last[id]);
	l->eval_def[id] = l->eval_last[id] = -1;
}

bool liveness_dies_at(const Liveness *l, int id, int t)
{
	return l->last[id] == t || l->eval_last[id] == t;
}

void liveness_free(Liveness *l)
{
	free(l->kind);
	free(l->ws_kind);
	free(l->def);
	free(l->last);
	free(l->eval_def);
	free(l->eval_last);
	free(l->ws_time);
	ir_group_index_free(&l->groups);
}

/* Ops whose kernel reads every input of the output's shape at the output's own element index. */
static bool elementwise(const Node *n)
{
	Pattern p = ir_ops[n->op].pattern;
	return n->op != OP_assign && (p == PAT_ELEMWISE || p == PAT_BROADCAST || n->op == OP_reshape);
}

/* Whether member m reads x at m's own linear index. */
static bool reads_in_step(const Graph *g, const Node *m, const Node *x)
{
	return shape_eq(&m->shape, &x->shape) || (m->op == OP_reshape && shape_numel(&m->shape) == shape_numel(&x->shape));
}

bool liveness_inplace_ok(const Graph *g, const Liveness *l, int group, int x)
{
	const Node *root = &g->node[group], *in = &g->node[x];
	if (in->op == OP_const || in->group == group || in->dtype != root->dtype ||
	    shape_numel(&in->shape) != shape_numel(&root->shape))
		return false;
	bool reads = false;
	for (int j = l->groups.first[group]; j >= 0; j = l->groups.next[j]) {
		const Node *m = &g->node[j];
		if (!m->programs)
			continue;
		if (!elementwise(m) || (j != group && l->groups.output[j]))
			return false;
		for (int k = 0; k < m->nin; k++) {
			if (m->in[k] != x)
				continue;
			if (!reads_in_step(g, m, in))
				return false;
			reads = true;
		}
	}
	return reads;
}
