/* share_eval.c: the evaluation program runs training's kernels where they compute the same
 * values. make-eval clones the forward nodes into the evaluation program; up to the first
 * dropout or batch statistic a clone computes what its training node computes, from the same
 * leaves, and after fusion its group is often the twin of a training group. Compiling such a
 * group again costs a forward kernel's compile time on every target (a quarter of mnist's), so
 * here evaluation takes the training group instead: its members join PROG_EVAL, the clones leave
 * every program, and evaluation's readers of the clones read the training nodes.
 *
 * A training group serves only as an exact twin: member for member the same op, attributes,
 * shape and type, reading the same leaves and the twins' values; every value evaluation reads
 * from it is one training stores already, and its other inputs come from groups evaluation takes
 * as well. So training's groups, and with them its kernels, stay as they were: only evaluation
 * changes, which now also writes what the training group stores for backward (a pre-activation
 * value, say). plan-memory keeps a shared value's block from its training write to its last
 * evaluation read or write (passes/liveness.c). Runs after fuse, on its groups (a node alone is
 * its own group). */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "passes/postdom.h"

typedef struct {
	Graph *g;
	Users users;
	GroupIndex ix;
	int *twin;  /* evaluation node -> the training node computing the same value, or -1 */
	int *taken; /* evaluation node -> the training node it is replaced by, or -1 */
	int *stamp; /* training node -> the last evaluation group that matched it */
} Sharer;

static int group_of(const Graph *g, int id) { return g->node[id].group >= 0 ? g->node[id].group : id; }

static bool eval_only(const Graph *g, int id) { return g->node[id].programs == PROG_EVAL; }

/* Training nodes, not yet run by evaluation. */
static bool training(const Graph *g, int id)
{
	unsigned p = g->node[id].programs;
	return (p & PROG_TRAIN) && !(p & PROG_EVAL) && !ir_is_leaf(g->node[id].op);
}

/* Where evaluation node e's input x is, seen from training: a leaf is itself, a clone its twin. */
static int seen_from_training(const Sharer *s, int x)
{
	return ir_is_leaf(s->g->node[x].op) ? x : s->twin[x];
}

static bool same_node(const Node *a, const Node *b)
{
	return a->op == b->op && a->nin == b->nin && a->dtype == b->dtype && shape_eq(&a->shape, &b->shape) &&
	       memcmp(a->attr, b->attr, sizeof a->attr) == 0;
}

/* The training node that computes what evaluation node e computes, or -1. */
static int find_twin(const Sharer *s, int e)
{
	const Graph *g = s->g;
	const Node *n = &g->node[e];
	int in[IR_MAX_INPUTS];
	for (int k = 0; k < n->nin; k++)
		if ((in[k] = seen_from_training(s, n->in[k])) < 0)
			return -1;
	if (n->nin == 0)
		return -1;
	for (int u = s->users.start[in[0]]; u < s->users.start[in[0] + 1]; u++) {
		int t = s->users.user[u];
		const Node *c = &g->node[t];
		if (!training(g, t) || !same_node(n, c))
			continue;
		bool inputs = true;
		for (int k = 0; k < n->nin && inputs; k++)
			inputs = c->in[k] == in[k];
		if (inputs)
			return t;
	}
	return -1;
}

static int members(const Sharer *s, int leader)
{
	int count = 0;
	for (int m = s->ix.first[leader]; m >= 0; m = s->ix.next[m])
		count += s->g->node[m].programs != 0;
	return count;
}

/* Whether evaluation group leader (its leaders before it decided) can run the training group of
 * its members' twins. */
static bool shareable(Sharer *s, int leader)
{
	const Graph *g = s->g;
	int tgroup = -1, count = 0;
	for (int m = s->ix.first[leader]; m >= 0; m = s->ix.next[m]) {
		const Node *n = &g->node[m];
		if (!n->programs)
			continue;
		int t = s->twin[m];
		if (t < 0 || (tgroup >= 0 && group_of(g, t) != tgroup) || s->stamp[t] == leader)
			return false;
		tgroup = group_of(g, t);
		s->stamp[t] = leader;
		count++;
		/* what evaluation reads of the group, training stores */
		if (s->ix.output[m] && !s->ix.output[t])
			return false;
		/* inputs from other groups: leaves, or values evaluation now takes from training */
		for (int k = 0; k < n->nin; k++) {
			int x = n->in[k];
			if (!ir_is_leaf(g->node[x].op) && group_of(g, x) != leader &&
			    (s->taken[x] < 0 || s->taken[x] != s->twin[x]))
				return false;
		}
	}
	return tgroup >= 0 && members(s, tgroup) == count;
}

/* Evaluation readers read the training nodes, which join evaluation; the clones leave it. */
static void rewire(Sharer *s)
{
	Graph *g = s->g;
	for (int i = 0; i < g->nnodes; i++) {
		Node *n = &g->node[i];
		if (s->taken[i] >= 0) {
			g->node[s->taken[i]].programs |= PROG_EVAL;
			n->programs = 0;
			n->group = i; /* a dead node alone, as unfused */
			continue;
		}
		if (!eval_only(g, i))
			continue;
		for (int k = 0; k < n->nin; k++)
			if (s->taken[n->in[k]] >= 0)
				n->in[k] = s->taken[n->in[k]];
	}
	if (g->eval_output >= 0 && s->taken[g->eval_output] >= 0)
		g->eval_output = s->taken[g->eval_output];
	if (g->eval_loss >= 0 && s->taken[g->eval_loss] >= 0)
		g->eval_loss = s->taken[g->eval_loss];
}

static int *filled(int n, int value)
{
	int *a = malloc((n ? (size_t)n : 1) * sizeof *a);
	if (!a)
		abort();
	for (int i = 0; i < n; i++)
		a[i] = value;
	return a;
}

bool pass_share_eval(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	if (g->eval_output < 0)
		return true;
	int n = g->nnodes;
	Sharer s = {.g = g, .twin = filled(n, -1), .taken = filled(n, -1), .stamp = filled(n, -1)};
	users_build(&s.users, g);
	ir_group_index(&s.ix, g);
	for (int i = 0; i < n; i++)
		if (eval_only(g, i) && !ir_is_leaf(g->node[i].op))
			s.twin[i] = find_twin(&s, i);
	/* a group's leader is its last member, so in leader order the groups it reads are decided */
	bool any = false;
	for (int leader = 0; leader < n; leader++) {
		if (!eval_only(g, leader) || group_of(g, leader) != leader || !shareable(&s, leader))
			continue;
		for (int m = s.ix.first[leader]; m >= 0; m = s.ix.next[m])
			if (g->node[m].programs)
				s.taken[m] = s.twin[m];
		any = true;
	}
	if (any)
		rewire(&s);
	users_free(&s.users);
	ir_group_index_free(&s.ix);
	free(s.twin);
	free(s.taken);
	free(s.stamp);
	return true;
}
