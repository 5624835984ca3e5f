/* dot.h: the graph as Graphviz text, fused groups as clusters. */
#ifndef NETC_IR_DOT_H
#define NETC_IR_DOT_H

#include <stdio.h>

#include "ir/ir.h"

/* Writes the nodes of the given programs (0: every node) and the leaves they read as a digraph:
 * each node labelled with its name, op and type, leaves as ellipses, each fused group of more
 * than one node a cluster `cluster_<leader>` labelled with its kernel's name k<leader>_<op>,
 * members whose value stays inside the kernel dashed. Comment lines before the graph list every
 * kernel with its members, so tests can read the grouping without Graphviz. */
void ir_dot(FILE *out, const Graph *g, unsigned programs);

#endif
