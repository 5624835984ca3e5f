/* rebuild.h: a graph rebuilt node by node, for passes that must put new nodes between existing
 * ones (casts, layout transforms). Nodes live in topological order in one array, so inserting in
 * the middle means building a new array: ir_rebuild copies g's nodes in order into a fresh graph
 * through a callback that may add nodes before and after each copy, keeps a map from old ids to
 * new ones, remaps every id the Graph holds (image, label, output, loss, eval roots, runtime
 * nodes, eval_swap, grad_of), and puts the new graph in place of g. Fused groups and arena
 * offsets are not kept (every node is its own group, no offsets): rebuild before fuse and
 * plan-memory, or run them again. */
#ifndef NETC_IR_REBUILD_H
#define NETC_IR_REBUILD_H

#include "ir/ir.h"

/* Called once per node of src in order: adds to dst whatever stands for src->node[id] and returns
 * the id in dst of the value that readers of id should read from now on. map[0..id) holds the new
 * ids of the earlier nodes. ir_rebuild_copy is the plain copy. */
typedef int (*IrRebuildFn)(Graph *dst, const Graph *src, int id, const int *map, void *ctx);

/* Rebuilds g in place through fn (NULL: copy every node). The Graph fields that name nodes start
 * as IR_REBUILD_UNSET in dst; a callback may set one (say the scores to the cast after them), and
 * those still unset afterwards become map[what src named], so by default they follow the value
 * that readers read. */
#define IR_REBUILD_UNSET (-2)
void ir_rebuild(Graph *g, IrRebuildFn fn, void *ctx);

/* Copies src's node id into dst with inputs map[src inputs]: leaves keep shape and dtype, other
 * nodes have them inferred again from their (possibly retyped) inputs. Keeps name, source
 * location, programs, perm and grad_of (through map). Aborts with the op's message when the
 * inputs do not fit the op. */
int ir_rebuild_copy(Graph *dst, const Graph *src, int id, const int *map);
/* ir_rebuild_copy reading in[0..nin) instead (say casts of the mapped inputs). */
int ir_rebuild_copy_with(Graph *dst, const Graph *src, int id, const int *map, const int *in);

#endif
