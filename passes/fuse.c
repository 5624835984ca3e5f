/* fuse.c: operator fusion, TVM's FuseOps (src/relay/transforms/fuse_ops.cc) adapted to training
 * graphs. Per program, over the post-dominator tree (passes/postdom.c):
 *
 *   phase 0  an anchor (conv, matmul, pooling and their gradients) takes its post-dominator when
 *            every path to it is elementwise or broadcast, and so on down the chain;
 *   phase 1  elementwise and broadcast ops fuse into a post-dominator that is elementwise,
 *            injective or a reduction; injective ops into an injective post-dominator;
 *   phase 2  the injective ops that phase 1 left;
 *   phase 3  multi-output fusion, which a post-dominator cannot see: elementwise groups joined by
 *            an edge merge (each parameter's optimizer update ends with several assigns, so no
 *            node of it post-dominates the rest), then elementwise groups join the anchor group
 *            they read (conv + bias_add + leaky_relu where bias_add also feeds leaky_relu_grad), and
 *            update groups that read the same state (an accumulator's reset and its reader),
 *            and sibling reductions (sums and means over one shape and the same axes) that read a
 *            value in common, one kernel with an accumulator each.
 *
 * Every merge is tried on the graph and kept only if the result is a group of one of the kinds
 * that codegen compiles (check_group, the contract in ir/ir.h's terms), so no phase can leave an
 * invalid group behind. An anchor group never takes a node of an optimizer update: each
 * parameter's update stays one elementwise kernel. With --data-parallel (PassOptions.split_update)
 * no group holds both a node that reads a final gradient and one that does not, so every gradient
 * is stored before the update's kernels run and the ranks can sum it in between
 * (ir/update_split.c). */
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "passes/passes.h"
#include "passes/postdom.h"

#define FUSE_MAX_GROUP 32

static Pattern op_pattern(const Graph *g, int id) { return ir_ops[g->node[id].op].pattern; }

/* ---- what a valid group is ---- */

static bool fail(char *err, size_t len, const Graph *g, int leader, const char *what, int id)
{
	snprintf(err, len, "group k%d_%s: %%%s %s", leader, ir_ops[g->node[leader].op].name, g->node[id].name, what);
	return false;
}

/* The members of leader's group in ascending order, from the member lists (GroupIndex's first
 * and next); -1 when there are more than max. */
static int group_members(const int *first, const int *next, int leader, int *m, int max)
{
	int n = 0;
	for (int id = first[leader]; id >= 0; id = next[id]) {
		if (n == max)
			return -1;
		m[n++] = id;
	}
	return n;
}

static int member_index(const int *m, int n, int id)
{
	for (int i = 0; i < n; i++)
		if (m[i] == id)
			return i;
	return -1;
}

static void sort_ids(int *m, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && m[j - 1] > m[j]; j--) {
			int t = m[j];
			m[j] = m[j - 1];
			m[j - 1] = t;
		}
}

/* ir_group_output with the users fusion keeps at hand */
static bool group_output(const Graph *g, const Users *u, int id)
{
	return ir_group_output_users(g, id, &u->user[u->start[id]], u->start[id + 1] - u->start[id]);
}

/* Rule 4: the kernel runs at its leader's place, so whatever reads a member from outside must
 * run later: its own group's kernel, at that group's leader. (Inputs from outside come earlier by
 * topological order.) */
static bool check_order(const Graph *g, const Users *u, const int *m, int n, char *err, size_t len)
{
	int leader = m[n - 1];
	for (int i = 0; i < n; i++)
		for (int k = u->start[m[i]]; k < u->start[m[i] + 1]; k++) {
			int y = u->user[k];
			if (g->node[y].group != leader && g->node[y].group < leader)
				return fail(err, len, g, leader, "is read by a node that runs before the group's kernel", m[i]);
		}
	return true;
}

static bool check_elemwise(const Graph *g, const Users *u, const int *m, int n, char *err, size_t len)
{
	int leader = m[n - 1];
	for (int i = 0; i < n; i++) {
		const Node *x = &g->node[m[i]];
		if (group_output(g, u, m[i]) && !shape_eq(&x->shape, &g->node[leader].shape))
			return fail(err, len, g, leader, "is a group output without the leader's shape", m[i]);
		if (x->op == OP_reshape && shape_numel(&x->shape) != shape_numel(&g->node[x->in[0]].shape))
			return fail(err, len, g, leader, "is a reshape that changes the element count", m[i]);
	}
	return true;
}

/* Reductions one kernel computes side by side, an accumulator each: sums and means of one dtype
 * over inputs of one shape along the same axes. */
static bool sibling_reductions(const Graph *g, int a, int b)
{
	const Node *x = &g->node[a], *y = &g->node[b];
	return (x->op == OP_sum || x->op == OP_mean) && (y->op == OP_sum || y->op == OP_mean) && x->dtype == y->dtype &&
	       ir_reduce_axes(x) == ir_reduce_axes(y) && shape_eq(&g->node[x->in[0]].shape, &g->node[y->in[0]].shape);
}

static bool check_reduce(const Graph *g, const Users *u, const int *m, int n, char *err, size_t len)
{
	int leader = m[n - 1], reductions = 0;
	bool feeds[FUSE_MAX_GROUP] = {0};
	if (op_pattern(g, leader) != PAT_REDUCE)
		return fail(err, len, g, leader, "leads a group with a reduction inside", leader);
	for (int i = n - 1; i >= 0; i--) {
		const Node *x = &g->node[m[i]];
		for (int k = 0; k < x->nin; k++) {
			int j = member_index(m, n, x->in[k]);
			if (j >= 0 && op_pattern(g, m[j]) == PAT_REDUCE)
				return fail(err, len, g, leader, "reads a reduction of its own group", m[i]);
		}
		if (op_pattern(g, m[i]) == PAT_REDUCE) {
			if (i < n - 1 && !sibling_reductions(g, leader, m[i]))
				return fail(err, len, g, leader, "is a reduction unlike its group's leader", m[i]);
			if (++reductions > IR_MAX_GROUP_REDUCTIONS)
				return fail(err, len, g, leader, "leads a group of too many reductions", leader);
			feeds[i] = true;
			continue;
		}
		if (op_pattern(g, m[i]) > PAT_BROADCAST)
			return fail(err, len, g, leader, "is neither elementwise nor broadcast in a reduction group", m[i]);
		if (group_output(g, u, m[i]))
			return fail(err, len, g, leader, "is a group output in a reduction group", m[i]);
		for (int k = u->start[m[i]]; k < u->start[m[i] + 1]; k++) {
			int j = member_index(m, n, u->user[k]);
			feeds[i] |= j >= 0 && feeds[j];
		}
		if (!feeds[i])
			return fail(err, len, g, leader, "does not feed the reduction", m[i]);
	}
	return true;
}

static bool check_anchor(const Graph *g, const Users *u, const int *m, int n, char *err, size_t len)
{
	int leader = m[n - 1], anchor = m[0];
	bool dep[FUSE_MAX_GROUP] = {true};
	if (op_pattern(g, anchor) != PAT_ANCHOR)
		return fail(err, len, g, leader, "is an anchor but not the group's first member", anchor);
	if (group_output(g, u, anchor))
		return fail(err, len, g, leader, "is an anchor and a group output", anchor);
	for (int i = 1; i < n; i++) {
		const Node *x = &g->node[m[i]];
		if (op_pattern(g, m[i]) > PAT_BROADCAST)
			return fail(err, len, g, leader, "is neither elementwise nor broadcast in an anchor group", m[i]);
		if (!shape_eq(&x->shape, &g->node[anchor].shape))
			return fail(err, len, g, leader, "does not have the anchor's shape", m[i]);
		for (int k = 0; k < x->nin; k++) {
			int j = member_index(m, n, x->in[k]);
			dep[i] |= j >= 0 && dep[j];
		}
		if (!dep[i])
			return fail(err, len, g, leader, "does not depend on the anchor", m[i]);
	}
	return true;
}

/* Whether the group led by leader, with members m[0..n) in ascending order (n < 0: too many), is
 * one codegen compiles: alone, or elementwise, reduction or anchor group by the contract. */
static bool check_group(const Graph *g, const Users *u, int leader, const int *m, int n, char *err, size_t len)
{
	if (n < 0)
		return fail(err, len, g, leader, "leads a group of too many members", leader);
	if (n == 0 || m[n - 1] != leader)
		return fail(err, len, g, leader, "leads a group but is not its last member", leader);
	int anchors = 0, reductions = 0;
	for (int i = 0; i < n; i++) {
		const Node *x = &g->node[m[i]];
		if (ir_is_leaf(x->op))
			return fail(err, len, g, leader, "is a leaf in a group", m[i]);
		if (x->programs != g->node[leader].programs)
			return fail(err, len, g, leader, "runs in other programs than its group", m[i]);
		if (n > 1 && op_pattern(g, m[i]) == PAT_OPAQUE)
			return fail(err, len, g, leader, "is opaque in a group", m[i]);
		anchors += op_pattern(g, m[i]) == PAT_ANCHOR;
		reductions += op_pattern(g, m[i]) == PAT_REDUCE;
	}
	if (!check_order(g, u, m, n, err, len))
		return false;
	if (n == 1)
		return true;
	if (anchors > 1 || (anchors && reductions))
		return fail(err, len, g, leader, "leads a group with more than one anchor or reduction", leader);
	if (anchors)
		return check_anchor(g, u, m, n, err, len);
	if (reductions)
		return check_reduce(g, u, m, n, err, len);
	return check_elemwise(g, u, m, n, err, len);
}

bool fuse_verify(const Graph *g, char *err, size_t errlen)
{
	Users u;
	users_build(&u, g);
	GroupIndex ix;
	ir_group_index(&ix, g);
	bool ok = true;
	for (int id = 0; id < g->nnodes && ok; id++) {
		const Node *x = &g->node[id];
		if (ir_is_leaf(x->op)) {
			if (x->group != -1)
				ok = fail(err, errlen, g, id, "is a leaf with a group", id);
		} else if (x->group < id || x->group >= g->nnodes || g->node[x->group].group != x->group) {
			snprintf(err, errlen, "%%%s: group %d is not a group's leader", x->name, x->group);
			ok = false;
		} else if (x->group == id) {
			int m[FUSE_MAX_GROUP];
			int n = group_members(ix.first, ix.next, id, m, FUSE_MAX_GROUP);
			ok = check_group(g, &u, id, m, n, err, errlen);
		}
	}
	ir_group_index_free(&ix);
	users_free(&u);
	return ok;
}

/* ---- the pass ---- */

typedef struct {
	Graph *g;
	Users users;
	PostDom pd;
	unsigned prog;
	unsigned done; /* nodes of these programs are grouped already: leave them */
	bool *update;  /* nodes of an optimizer update: they reach an assign through elementwise ops */
	bool *after_grads; /* --data-parallel: the nodes that read a final gradient (ir_update_nodes),
			    * which no group mixes with others; NULL without */
	Pattern *gpat; /* by leader: the largest pattern among the group's members */
	int *first;    /* by leader: its first member in node order, -1 for a node that leads none */
	int *next;     /* the next member of the same group in node order, -1 after the last */
	bool *mark;    /* scratch: nodes a path search has seen (listed in seen, to clear them) */
	int *seen;
	int *stack;
} Fuser;

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

static bool in_program(const Fuser *f, int id)
{
	unsigned p = f->g->node[id].programs;
	return !ir_is_leaf(f->g->node[id].op) && (p & f->prog) && !(p & f->done);
}

static void find_updates(Fuser *f)
{
	const Graph *g = f->g;
	for (int id = g->nnodes - 1; id >= 0; id--) {
		if (ir_is_leaf(g->node[id].op) || op_pattern(g, id) > PAT_INJECTIVE)
			continue;
		f->update[id] = g->node[id].op == OP_assign;
		for (int k = f->users.start[id]; k < f->users.start[id + 1]; k++)
			f->update[id] |= f->update[f->users.user[k]];
	}
}

/* The members of the groups led by lead[0..nlead), group by group; -1 when there are more than max. */
static int members_of(const Fuser *f, const int *lead, int nlead, int *m, int max)
{
	int n = 0;
	for (int i = 0; i < nlead; i++) {
		if (member_index(lead, i, lead[i]) >= 0)
			continue;
		for (int id = f->first[lead[i]]; id >= 0; id = f->next[id]) {
			if (n == max)
				return -1;
			m[n++] = id;
		}
	}
	return n;
}

/* Merges the groups led by lead[0..nlead) into one if that makes a valid group. */
static bool try_merge(Fuser *f, const int *lead, int nlead)
{
	Graph *g = f->g;
	int m[FUSE_MAX_GROUP], old[FUSE_MAX_GROUP];
	int n = members_of(f, lead, nlead, m, FUSE_MAX_GROUP);
	sort_ids(m, n);
	bool anchor = false, update = false;
	Pattern pat = PAT_ELEMWISE;
	bool sides_mixed = false;
	for (int i = 0; i < n; i++) {
		anchor |= op_pattern(g, m[i]) == PAT_ANCHOR;
		update |= f->update[m[i]];
		pat = op_pattern(g, m[i]) > pat ? op_pattern(g, m[i]) : pat;
		sides_mixed |= f->after_grads && f->after_grads[m[i]] != f->after_grads[m[0]];
	}
	if (n <= 0 || (anchor && update) || sides_mixed)
		return false;
	int leader = m[n - 1];
	for (int i = 0; i < n; i++) {
		old[i] = g->node[m[i]].group;
		g->node[m[i]].group = leader;
	}
	char err[256];
	if (!check_group(g, &f->users, leader, m, n, err, sizeof err)) {
		for (int i = 0; i < n; i++)
			g->node[m[i]].group = old[i];
		return false;
	}
	f->gpat[leader] = pat;
	for (int i = 0; i < n; i++) {
		f->first[old[i]] = -1;
		f->next[m[i]] = i + 1 < n ? m[i + 1] : -1;
	}
	f->first[leader] = m[0];
	return true;
}

/* TVM's CheckPath condition: whether a node on a path from src to its post-dominator (sink:
 * the post-dominator itself) may fuse, by the pattern of its group. */
typedef bool (*PathCond)(Pattern group, bool sink);

static bool cond_anchor(Pattern p, bool sink) { (void)sink; return p <= PAT_BROADCAST; }
static bool cond_injective(Pattern p, bool sink) { (void)sink; return p <= PAT_INJECTIVE; }
static bool cond_elemwise(Pattern p, bool sink) { return sink ? p != PAT_OPAQUE : p <= PAT_INJECTIVE; }

/* Collects the leaders of src's group and of every group on the paths from src to sink, or
 * returns -1 when a node on them fails ok or there are too many. */
static int path_groups(Fuser *f, int src, int sink, PathCond ok, int *lead)
{
	const Graph *g = f->g;
	int nlead = 0, top = 0, result = 0, nseen = 0;
	lead[nlead++] = g->node[src].group;
	f->stack[top++] = src;
	f->mark[src] = true;
	f->seen[nseen++] = src;
	while (top > 0 && result == 0) {
		int x = f->stack[--top];
		for (int k = f->users.start[x]; k < f->users.start[x + 1] && result == 0; k++) {
			int y = f->users.user[k];
			if (!in_program(f, y) || f->mark[y])
				continue;
			f->mark[y] = true;
			f->seen[nseen++] = y;
			int gy = g->node[y].group;
			if (!ok(f->gpat[gy], y == sink))
				result = -1;
			else if (member_index(lead, nlead, gy) < 0 && nlead == FUSE_MAX_GROUP)
				result = -1;
			else if (member_index(lead, nlead, gy) < 0)
				lead[nlead++] = gy;
			if (y != sink)
				f->stack[top++] = y;
		}
	}
	while (nseen > 0)
		f->mark[f->seen[--nseen]] = false;
	return result < 0 ? -1 : nlead;
}

static void merge_path(Fuser *f, int src, int sink, PathCond ok)
{
	int lead[FUSE_MAX_GROUP];
	int nlead = path_groups(f, src, sink, ok, lead);
	if (nlead > 0)
		try_merge(f, lead, nlead);
}

/* One of TVM's RunFuse phases over the nodes in topological order. */
static void fuse_dominated(Fuser *f, int phase)
{
	const Graph *g = f->g;
	for (int id = 0; id < g->nnodes; id++) {
		int sink = f->pd.parent[id];
		if (!in_program(f, id) || sink < 0 || g->node[sink].group == g->node[id].group)
			continue;
		Pattern group = f->gpat[g->node[id].group], path = f->pd.pattern[id];
		if (group == PAT_ANCHOR && phase == 0 && path <= PAT_BROADCAST)
			merge_path(f, id, sink, cond_anchor);
		else if (group <= PAT_BROADCAST && phase < 2 && (path <= PAT_INJECTIVE || path == PAT_REDUCE))
			merge_path(f, id, sink, cond_elemwise);
		else if (group == PAT_INJECTIVE && phase >= 1)
			merge_path(f, id, sink, cond_injective);
	}
}

/* Phase 3: for every edge from a group `from` to a group `to` that `want` accepts, a merge of
 * the two and of the groups that must come along: those that read a member yet would run before
 * the merged kernel (each parameter's update needs three groups at once: the values shared by
 * its assigns, and each assign's chain). `take` says which groups may come along; the validity
 * check decides the rest. */
typedef bool (*EdgeWant)(const Fuser *f, int from_leader, int to_leader);
typedef bool (*GroupTake)(const Fuser *f, int leader);

static bool take_elemwise(const Fuser *f, int leader) { return f->gpat[leader] <= PAT_INJECTIVE; }
static bool take_epilogue(const Fuser *f, int leader) { return f->gpat[leader] <= PAT_BROADCAST; }

static bool want_elemwise(const Fuser *f, int a, int b) { return take_elemwise(f, a) && take_elemwise(f, b); }

static bool want_epilogue(const Fuser *f, int a, int b)
{
	return f->gpat[a] == PAT_ANCHOR && take_epilogue(f, b);
}

/* The leader of the first group outside lead[] that reads a member of lead[]'s groups before
 * the largest leader among them, -1 when none does. */
static int early_reader(const Fuser *f, const int *lead, int nlead)
{
	const Graph *g = f->g;
	int last = lead[0];
	for (int i = 1; i < nlead; i++)
		last = lead[i] > last ? lead[i] : last;
	/* the reader of the first member in node order that has one */
	int m[FUSE_MAX_GROUP], first = g->nnodes, reader = -1;
	int n = members_of(f, lead, nlead, m, FUSE_MAX_GROUP);
	for (int i = 0; i < n; i++) {
		int id = m[i];
		for (int k = f->users.start[id]; k < f->users.start[id + 1] && id < first; k++) {
			int y = f->users.user[k];
			if (y < last && member_index(lead, nlead, g->node[y].group) < 0) {
				first = id;
				reader = g->node[y].group;
			}
		}
	}
	return reader;
}

static void merge_closed(Fuser *f, int *lead, int nlead, GroupTake take)
{
	int m[FUSE_MAX_GROUP];
	for (int y; members_of(f, lead, nlead, m, FUSE_MAX_GROUP) >= 0 && (y = early_reader(f, lead, nlead)) >= 0;) {
		if (nlead == FUSE_MAX_GROUP || !in_program(f, y) || !take(f, y))
			return;
		lead[nlead++] = y;
	}
	try_merge(f, lead, nlead);
}

static void fuse_edges(Fuser *f, EdgeWant want, GroupTake take)
{
	const Graph *g = f->g;
	for (int id = 0; id < g->nnodes; id++) {
		if (!in_program(f, id))
			continue;
		for (int k = 0; k < g->node[id].nin; k++) {
			int x = g->node[id].in[k];
			int lead[FUSE_MAX_GROUP] = {g->node[x].group, g->node[id].group};
			if (in_program(f, x) && lead[0] != lead[1] && want(f, lead[0], lead[1]))
				merge_closed(f, lead, 2, take);
		}
	}
}

/* Update groups that read the same state: gradient accumulation resets its accumulator
 * (assign(acc, 0)) in a group that no edge joins to the update reading acc; one kernel does both. */
static void fuse_state_readers(Fuser *f)
{
	const Graph *g = f->g;
	for (int x = 0; x < g->nnodes; x++) {
		if (g->node[x].op != OP_state)
			continue;
		int first = -1;
		for (int k = f->users.start[x]; k < f->users.start[x + 1]; k++) {
			int y = f->users.user[k];
			if (!in_program(f, y) || !f->update[y] || !take_elemwise(f, g->node[y].group))
				continue;
			int lead[FUSE_MAX_GROUP] = {first < 0 ? -1 : g->node[first].group, g->node[y].group};
			if (first < 0)
				first = y;
			else if (lead[0] != lead[1])
				merge_closed(f, lead, 2, take_elemwise);
		}
	}
}

/* The first reduction group other than a's own and not marked, sibling to a's reductions, whose
 * members read a value from outside that a's group reads too; -1 when none. Looking only through
 * the readers of a's inputs keeps the search near-linear in the graph. */
static int sibling_sharing_input(const Fuser *f, int a)
{
	const Graph *g = f->g;
	int la = g->node[a].group;
	for (int id = f->first[la]; id >= 0; id = f->next[id])
		for (int k = 0; k < g->node[id].nin; k++) {
			int x = g->node[id].in[k];
			if (g->node[x].group == la || g->node[x].op == OP_const)
				continue;
			for (int u = f->users.start[x]; u < f->users.start[x + 1]; u++) {
				int b = g->node[f->users.user[u]].group;
				if (b != la && !f->mark[b] && in_program(f, b) && op_pattern(g, b) == PAT_REDUCE &&
				    sibling_reductions(g, a, b))
					return b;
			}
		}
	return -1;
}

/* Sibling reductions (sibling_reductions) that read a value in common become one kernel, which
 * reads it once: batch norm's gradient sums dy and dy * y for its weight and bias, and its input
 * gradient averages the same two. */
static void fuse_sibling_reductions(Fuser *f)
{
	const Graph *g = f->g;
	for (int a = 0; a < g->nnodes; a++) {
		if (!in_program(f, a) || op_pattern(g, a) != PAT_REDUCE)
			continue;
		/* each failed candidate is skipped by marking it, so the loop ends */
		int nseen = 0, b;
		while ((b = sibling_sharing_input(f, a)) >= 0) {
			int lead[2] = {g->node[a].group, b};
			if (!try_merge(f, lead, 2)) {
				f->mark[b] = true;
				f->seen[nseen++] = b;
			}
		}
		while (nseen > 0)
			f->mark[f->seen[--nseen]] = false;
	}
}

static void fuse_program(Fuser *f, unsigned prog)
{
	f->prog = prog;
	postdom_build(&f->pd, f->g, &f->users, prog);
	for (int phase = 0; phase < 3; phase++)
		fuse_dominated(f, phase);
	postdom_free(&f->pd);
	fuse_edges(f, want_elemwise, take_elemwise);
	fuse_edges(f, want_epilogue, take_epilogue);
	fuse_state_readers(f);
	fuse_sibling_reductions(f);
}

bool pass_fuse(Graph *g, const PassOptions *o, Diag *d)
{
	recompute_producers(g);
	ir_ungroup(g);
	Fuser f = {.g = g, .after_grads = o->split_update ? ir_update_nodes(g) : NULL};
	users_build(&f.users, g);
	f.update = xcalloc(g->nnodes, sizeof *f.update);
	f.gpat = xcalloc(g->nnodes, sizeof *f.gpat);
	f.mark = xcalloc(g->nnodes, sizeof *f.mark);
	f.seen = xcalloc(g->nnodes, sizeof *f.seen);
	f.stack = xcalloc(g->nnodes, sizeof *f.stack);
	GroupIndex ix;
	ir_group_index(&ix, g);
	f.first = ix.first;
	f.next = ix.next;
	for (int id = 0; id < g->nnodes; id++)
		f.gpat[id] = op_pattern(g, id);
	find_updates(&f);
	fuse_program(&f, PROG_TRAIN);
	fuse_program(&f, PROG_EVAL);
	/* accumulation shares the training program's forward and backward groups: only its own
	 * nodes (acc += g) are left to fuse */
	f.done = PROG_TRAIN;
	fuse_program(&f, PROG_ACCUM);
	users_free(&f.users);
	free(f.update);
	free(f.after_grads);
	free(f.gpat);
	free(f.mark);
	free(f.seen);
	free(f.stack);
	ir_group_index_free(&ix);
#ifndef NDEBUG
	char err[512];
	if (!fuse_verify(g, err, sizeof err)) {
		diag_error(d, (SrcLoc){0, 0}, "internal error: fuse: %s", err);
		return false;
	}
#else
	(void)d;
#endif
	return true;
}
