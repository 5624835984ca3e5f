/* postdom.h: the dataflow graph as fusion sees it: the users of every node, and the
 * post-dominator tree of one program over them (TVM's DominatorTree in fuse_ops.cc). */
#ifndef NETC_POSTDOM_H
#define NETC_POSTDOM_H

#include "ir/ir.h"

/* The users of node i are user[start[i] .. start[i + 1]): nodes of any program that read it. */
typedef struct {
	int *start;
	int *user;
} Users;

void users_build(Users *u, const Graph *g);
void users_free(Users *u);

/* Post-dominators of the nodes of one program. parent[i] is the nearest node that every path
 * from i to the program's exit passes through, -1 when there is none (i is a program root, has
 * no users, or its paths leave the program apart). pattern[i] is the largest edge pattern on the
 * paths from i to parent[i]; an edge's pattern is its user's, with broadcast read as elementwise
 * where the input already has the user's shape. */
typedef struct {
	int *parent;
	int *depth;
	Pattern *pattern;
	/* binary lifting for the ancestor search: node i's 2^j-th ancestor is up[i * levels + j],
	 * and jpat[i * levels + j] the largest pattern of the nodes left on the way */
	int levels;
	int *up;
	Pattern *jpat;
} PostDom;

void postdom_build(PostDom *t, const Graph *g, const Users *u, unsigned prog);
void postdom_free(PostDom *t);

/* The pattern of the edge from node `from` to its user `to`. */
Pattern postdom_edge_pattern(const Graph *g, int from, int to);

#endif
