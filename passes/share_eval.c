/* share_eval.c: the evaluation program runs training's kernels where they compute the same
 * values. make-eval clones the forward nodes into the evaluation program; up to the first dropout
 * or batch statistic a clone computes what its training node computes, from the same leaves, so
 * compiling its kernel again costs a forward kernel's compile time on every target (a seventh of
 * mnist's, a sixth of googlenet's). Here evaluation takes training's groups instead: their members
 * join PROG_EVAL, the clones leave every program, and evaluation's readers of the clones read the
 * training nodes.
 *
 * Evaluation takes a training group whose every member has a twin among the clones (the same op,
 * attributes, shape and type, reading the same leaves or the twins of its inputs), whose inputs
 * from other groups come from groups evaluation takes as well, and whose values that evaluation
 * reads outside the group training stores already. So training's groups, and its kernels, stay
 * as they were: only evaluation changes, which now also writes what a training group stores for
 * backward (a ReLU output that a dropout then masks, say). The two programs may fuse the shared part differently,
 * so an evaluation group is given up whole or not at all: where training would take only some of
 * its members (a weight's reshape fused into a batch norm that evaluation computes otherwise),
 * the training groups of those stay training's. plan-memory keeps a shared value in one block
 * with a lifetime in each program (passes/liveness.c). Runs after fuse, on its groups (a node
 * alone is its own group). */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "passes/postdom.h"

typedef struct {
	Graph *g;
	Users users;
	GroupIndex ix;
	int *twin;  /* clone -> the training node computing the same value, or -1 */
	int *clone; /* training node -> a clone whose twin it is, or -1 */
	int *taken; /* clone -> the training node evaluation reads instead, or -1 */
	bool *in_eval; /* training group leader -> evaluation runs the group */
	bool *kept;    /* training group leader -> stays training's: it would split an evaluation group */
} Sharer;

static int group_of(const Graph *g, int id) { return g->node[id].group >= 0 ? g->node[id].group : id; }

static bool eval_only(const Graph *g, int id) { return g->node[id].programs == PROG_EVAL; }

/* Training nodes, not yet run by evaluation. */
static bool training(const Graph *g, int id)
{
	unsigned p = g->node[id].programs;
	return (p & PROG_TRAIN) && !(p & PROG_EVAL) && !ir_is_leaf(g->node[id].op);
}

/* Where clone input x is seen from training: a leaf is itself, a clone its twin. */
static int seen_from_training(const Sharer *s, int x)
{
	return ir_is_leaf(s->g->node[x].op) ? x : s->twin[x];
}

static bool same_node(const Node *a, const Node *b)
{
	return a->op == b->op && a->nin == b->nin && a->dtype == b->dtype && shape_eq(&a->shape, &b->shape) &&
	       memcmp(a->attr, b->attr, sizeof a->attr) == 0;
}

/* The training node that computes what clone e computes, or -1. */
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

static bool is_eval_root(const Graph *g, int id) { return id == g->eval_output || id == g->eval_loss; }

/* Whether evaluation's readers of member t's clone can read t: training stores t, or every such
 * reader is the clone of a member of t's own group (and goes with it). */
static bool readable(const Sharer *s, int t, int leader)
{
	const Graph *g = s->g;
	int e = s->clone[t];
	if (s->ix.output[t])
		return true;
	if (is_eval_root(g, e))
		return false;
	for (int u = s->users.start[e]; u < s->users.start[e + 1]; u++) {
		int r = s->users.user[u];
		if (s->twin[r] < 0 || group_of(g, s->twin[r]) != leader || s->clone[s->twin[r]] != r)
			return false;
	}
	return true;
}

/* Whether evaluation can run training group leader (the groups before it decided). */
static bool takeable(const Sharer *s, int leader)
{
	const Graph *g = s->g;
	for (int t = s->ix.first[leader]; t >= 0; t = s->ix.next[t]) {
		const Node *n = &g->node[t];
		if (!n->programs)
			continue;
		if (s->clone[t] < 0 || !readable(s, t, leader))
			return false;
		for (int k = 0; k < n->nin; k++) {
			int x = n->in[k];
			if (!ir_is_leaf(g->node[x].op) && group_of(g, x) != leader && !s->in_eval[group_of(g, x)])
				return false;
		}
	}
	return !s->kept[leader];
}

/* The training groups evaluation runs, in leader order (a group's leader is its last member, so
 * the groups it reads are decided before it). */
static void choose(Sharer *s)
{
	Graph *g = s->g;
	for (int leader = 0; leader < g->nnodes; leader++) {
		s->in_eval[leader] = training(g, leader) && group_of(g, leader) == leader && takeable(s, leader);
		for (int t = s->ix.first[leader]; s->in_eval[leader] && t >= 0; t = s->ix.next[t])
			if (g->node[t].programs)
				s->taken[s->clone[t]] = t;
	}
}

/* Keeps training's the groups that would take part of an evaluation group; false: none does. */
static bool keep_split_groups(Sharer *s)
{
	Graph *g = s->g;
	bool changed = false;
	for (int leader = 0; leader < g->nnodes; leader++) {
		if (!eval_only(g, leader) || group_of(g, leader) != leader)
			continue;
		int members = 0, taken = 0;
		for (int e = s->ix.first[leader]; e >= 0; e = s->ix.next[e])
			if (g->node[e].programs)
				members++, taken += s->taken[e] >= 0;
		if (taken == 0 || taken == members)
			continue;
		for (int e = s->ix.first[leader]; e >= 0; e = s->ix.next[e])
			if (s->taken[e] >= 0 && !s->kept[group_of(g, s->taken[e])])
				s->kept[group_of(g, s->taken[e])] = changed = true;
	}
	return changed;
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
	Sharer s = {.g = g, .twin = filled(n, -1), .clone = filled(n, -1), .taken = filled(n, -1)};
	s.in_eval = calloc(n ? (size_t)n : 1, sizeof *s.in_eval);
	s.kept = calloc(n ? (size_t)n : 1, sizeof *s.kept);
	if (!s.in_eval || !s.kept)
		abort();
	users_build(&s.users, g);
	ir_group_index(&s.ix, g);
	for (int i = 0; i < n; i++) {
		if (!eval_only(g, i) || ir_is_leaf(g->node[i].op))
			continue;
		s.twin[i] = find_twin(&s, i);
		if (s.twin[i] >= 0 && s.clone[s.twin[i]] < 0)
			s.clone[s.twin[i]] = i;
		else
			s.twin[i] = -1; /* a second clone of one node keeps its own kernel */
	}
	/* each round keeps at least one more group training's, so this ends */
	do {
		for (int i = 0; i < n; i++)
			s.taken[i] = -1;
		choose(&s);
	} while (keep_split_groups(&s));
	rewire(&s);
	users_free(&s.users);
	ir_group_index_free(&s.ix);
	free(s.twin);
	free(s.clone);
	free(s.taken);
	free(s.in_eval);
	free(s.kept);
	return true;
}
