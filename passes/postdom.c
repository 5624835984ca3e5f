/* postdom.c: users lists and the post-dominator tree that fusion decides by. The tree is built
 * as TVM builds it: nodes in reverse topological order, each one's parent the least common
 * ancestor of its users, so the parent of a node with one path out is the next node on it.
 * Unlike TVM, the ancestor search jumps by powers of two (binary lifting), so a deep network
 * (every forward node has a user in the backward pass, far down the tree) costs a logarithm per
 * search, not the depth of the tree. */
#include <stdlib.h>

#include "passes/postdom.h"

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

void users_build(Users *u, const Graph *g)
{
	int n = g->nnodes, edges = 0;
	u->start = xcalloc(n + 1, sizeof *u->start);
	for (int j = 0; j < n; j++)
		if (g->node[j].programs)
			for (int k = 0; k < g->node[j].nin; k++, edges++)
				u->start[g->node[j].in[k] + 1]++;
	for (int i = 0; i < n; i++)
		u->start[i + 1] += u->start[i];
	u->user = xcalloc(edges, sizeof *u->user);
	int *fill = xcalloc(n, sizeof *fill);
	for (int j = 0; j < n; j++) {
		if (!g->node[j].programs)
			continue;
		/* an op that reads one value twice (mul(x, x)) is one user */
		for (int k = 0; k < g->node[j].nin; k++) {
			int x = g->node[j].in[k];
			int s = u->start[x], f = fill[x];
			if (f == 0 || u->user[s + f - 1] != j)
				u->user[s + fill[x]++] = j;
		}
	}
	/* close the gaps that repeated inputs left */
	int w = 0;
	for (int i = 0; i < n; i++) {
		int s = u->start[i];
		u->start[i] = w;
		for (int k = 0; k < fill[i]; k++)
			u->user[w++] = u->user[s + k];
	}
	u->start[n] = w;
	free(fill);
}

void users_free(Users *u)
{
	free(u->start);
	free(u->user);
}

Pattern postdom_edge_pattern(const Graph *g, int from, int to)
{
	Pattern p = ir_ops[g->node[to].op].pattern;
	if (p == PAT_BROADCAST && shape_eq(&g->node[from].shape, &g->node[to].shape))
		return PAT_ELEMWISE;
	return p;
}

static Pattern max_pattern(Pattern a, Pattern b) { return a > b ? a : b; }

/* The jump tables of node id, once its parent and pattern are set: up[j] is its 2^j-th
 * ancestor (-1 past the root) and jpat[j] the largest pattern of the nodes left on the way. */
static void set_jumps(PostDom *t, int id)
{
	int *up = &t->up[(size_t)id * t->levels];
	Pattern *jp = &t->jpat[(size_t)id * t->levels];
	up[0] = t->parent[id];
	jp[0] = t->pattern[id];
	for (int j = 1; j < t->levels; j++) {
		int mid = up[j - 1];
		up[j] = mid >= 0 ? t->up[(size_t)mid * t->levels + j - 1] : -1;
		jp[j] = mid >= 0 ? max_pattern(jp[j - 1], t->jpat[(size_t)mid * t->levels + j - 1]) : jp[j - 1];
	}
}

/* Moves *a up 2^j nodes, collecting the patterns of the nodes it leaves. */
static void jump(const PostDom *t, int *a, int j, Pattern *pat)
{
	*pat = max_pattern(*pat, t->jpat[(size_t)*a * t->levels + j]);
	*a = t->up[(size_t)*a * t->levels + j];
}

/* TVM's LeastCommonAncestor: the nearest node above both a and b (-1 when their paths leave the
 * program apart), collecting the patterns of the nodes passed on the way. */
static int common_ancestor(const PostDom *t, int a, int b, Pattern *pat)
{
	if (a < 0 || b < 0)
		return -1;
	if (t->depth[a] < t->depth[b]) {
		int x = a;
		a = b;
		b = x;
	}
	for (int j = t->levels - 1; j >= 0; j--)
		if (t->depth[a] - t->depth[b] >= (1 << j))
			jump(t, &a, j, pat);
	if (a == b)
		return a;
	for (int j = t->levels - 1; j >= 0; j--)
		if (t->up[(size_t)a * t->levels + j] != t->up[(size_t)b * t->levels + j]) {
			jump(t, &a, j, pat);
			jump(t, &b, j, pat);
		}
	int pa = t->parent[a];
	if (pa < 0 || pa != t->parent[b])
		return -1;
	jump(t, &a, 0, pat);
	jump(t, &b, 0, pat);
	return pa;
}

/* Values the runtime reads after a step leave the program even where nodes also use them. */
static bool leaves_program(const Graph *g, int id)
{
	return id == g->loss || id == g->output || id == g->eval_loss || id == g->eval_output ||
	       id == g->finite;
}

static void postdom_node(PostDom *t, const Graph *g, const Users *u, unsigned prog, int id)
{
	int parent = -1;
	bool first = true;
	Pattern pat = PAT_ELEMWISE;
	int end = leaves_program(g, id) ? u->start[id] : u->start[id + 1];
	for (int k = u->start[id]; k < end; k++) {
		int user = u->user[k];
		if (!(g->node[user].programs & prog))
			continue;
		pat = max_pattern(pat, postdom_edge_pattern(g, id, user));
		parent = first ? user : common_ancestor(t, parent, user, &pat);
		first = false;
	}
	t->parent[id] = parent;
	t->depth[id] = parent >= 0 ? t->depth[parent] + 1 : 1;
	t->pattern[id] = parent >= 0 ? pat : PAT_OPAQUE;
	set_jumps(t, id);
}

void postdom_build(PostDom *t, const Graph *g, const Users *u, unsigned prog)
{
	int n = g->nnodes;
	t->parent = xcalloc(n, sizeof *t->parent);
	t->depth = xcalloc(n, sizeof *t->depth);
	t->pattern = xcalloc(n, sizeof *t->pattern);
	for (t->levels = 1; (1 << t->levels) < n; t->levels++)
		;
	t->up = xcalloc((size_t)n * t->levels, sizeof *t->up);
	t->jpat = xcalloc((size_t)n * t->levels, sizeof *t->jpat);
	for (int id = n - 1; id >= 0; id--) {
		if (ir_is_leaf(g->node[id].op) || !(g->node[id].programs & prog)) {
			t->parent[id] = -1;
			t->depth[id] = 1;
			t->pattern[id] = PAT_OPAQUE;
			set_jumps(t, id);
			continue;
		}
		postdom_node(t, g, u, prog, id);
	}
}

void postdom_free(PostDom *t)
{
	free(t->parent);
	free(t->depth);
	free(t->pattern);
	free(t->up);
	free(t->jpat);
}
