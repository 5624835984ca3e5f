/* dot.h: the graph as Graphviz text, fused groups as clusters. */
#ifndef NETC_IR_DOT_H
#define NETC_IR_DOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ir/ir.h"

/* The parts of a training step, which `netc dot --collapse` may draw as one box each. */
enum { DOT_COLLAPSE_BACKWARD = 1 << 0, DOT_COLLAPSE_OPTIMIZER = 1 << 1 };

/* "backward", "optimizer" or both, comma-separated, into DOT_COLLAPSE_* bits; false with a
 * message in err for another name. */
bool ir_dot_parse_collapse(const char *list, unsigned *collapse, char *err, size_t errlen);

/* Writes the nodes of the given programs (0: every node) and the leaves they read as a digraph:
 * each node labelled with its name, op and type, leaves as ellipses, each fused group of more
 * than one node a cluster `cluster_<leader>` labelled with its kernel's name k<leader>_<op>,
 * members whose value stays inside the kernel dashed. Comment lines before the graph list every
 * kernel with its members, so tests can read the grouping without Graphviz.
 * collapse (DOT_COLLAPSE_* bits) draws the kernels of the backward pass (those computing
 * gradients) or of the optimizer update (those the assigns to parameters and their optimizer
 * state need) as one box each, `backward` or `optimizer`, labelled with its node and kernel
 * counts; edges go to and from the box, once per node, and the leaves only the box reads are not
 * drawn. A kernel belongs to the part of its last node. */
void ir_dot(FILE *out, const Graph *g, unsigned programs, unsigned collapse);

#endif
