/* postdom.c: users lists and the post-dominator tree that fusion decides by. The tree is built
 * as TVM builds it: nodes in reverse topological order, each one's parent the least common
 * ancestor of its users, so the parent of a node with one path out is the next node on it. */
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

/* TVM's LeastCommonAncestor: walks the deeper side up, collecting the patterns it passes. */
static int common_ancestor(const PostDom *t, int a, int b, Pattern *pat)
{
	while (a != b) {
		if (a < 0 || b < 0)
			return -1;
		int da = t->depth[a], db = t->depth[b];
		if (da >= db) {
			*pat = max_pattern(*pat, t->pattern[a]);
			a = t->parent[a];
		}
		if (db >= da) {
			*pat = max_pattern(*pat, t->pattern[b]);
			b = t->parent[b];
		}
	}
	return a;
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
}

void postdom_build(PostDom *t, const Graph *g, const Users *u, unsigned prog)
{
	int n = g->nnodes;
	t->parent = xcalloc(n, sizeof *t->parent);
	t->depth = xcalloc(n, sizeof *t->depth);
	t->pattern = xcalloc(n, sizeof *t->pattern);
	for (int id = n - 1; id >= 0; id--) {
		if (ir_is_leaf(g->node[id].op) || !(g->node[id].programs & prog)) {
			t->parent[id] = -1;
			t->depth[id] = 1;
			t->pattern[id] = PAT_OPAQUE;
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
}
