/* rebuild.c: a graph copied node by node into a new array, so passes can put nodes between
 * existing ones (see ir/rebuild.h). */
#include <stdlib.h>
#include <string.h>

#include "ir/rebuild.h"

int ir_rebuild_copy(Graph *dst, const Graph *src, int id, const int *map)
{
	return ir_rebuild_copy_with(dst, src, id, map, NULL);
}

int ir_rebuild_copy_with(Graph *dst, const Graph *src, int id, const int *map, const int *in)
{
	const Node *n = &src->node[id];
	int nid;
	if (ir_is_leaf(n->op)) {
		nid = ir_leaf(dst, n->op, n->name, n->shape, n->dtype, n->attr);
	} else {
		int mapped[IR_MAX_INPUTS];
		char err[256];
		for (int k = 0; k < n->nin; k++)
			mapped[k] = in ? in[k] : map[n->in[k]];
		nid = ir_add(dst, n->op, mapped, n->attr, n->name, err, sizeof err);
		if (nid < 0) {
			fprintf(stderr, "netc: internal error: rebuilding %s: %s\n", n->name, err);
			abort();
		}
	}
	Node *c = &dst->node[nid];
	c->loc = n->loc;
	c->programs = n->programs;
	c->grad_of = n->grad_of >= 0 ? map[n->grad_of] : -1;
	memcpy(c->perm, n->perm, sizeof c->perm);
	return nid;
}

#define NFIELDS 10

/* The node-naming fields of a graph, in one list so none is forgotten. */
static void id_fields(Graph *g, int *f[NFIELDS])
{
	int *all[NFIELDS] = {&g->image, &g->label, &g->output, &g->loss, &g->eval_output,
			     &g->eval_loss, &g->lr, &g->rng, &g->loss_scale, &g->finite};
	memcpy(f, all, sizeof all);
}

static Graph *empty_like(const Graph *src)
{
	Graph *dst = ir_graph_new(src->name);
	int *f[NFIELDS];
	dst->batch = src->batch;
	dst->train = src->train;
	id_fields(dst, f);
	for (int k = 0; k < NFIELDS; k++)
		*f[k] = IR_REBUILD_UNSET;
	return dst;
}

/* Fields the callback left unset follow map. */
static void remap_fields(Graph *dst, Graph *src, const int *map)
{
	int *fd[NFIELDS], *fs[NFIELDS];
	id_fields(dst, fd);
	id_fields(src, fs);
	for (int k = 0; k < NFIELDS; k++)
		if (*fd[k] == IR_REBUILD_UNSET)
			*fd[k] = *fs[k] >= 0 ? map[*fs[k]] : -1;
	dst->neval_swaps = src->neval_swaps;
	for (int k = 0; k < src->neval_swaps; k++) {
		dst->eval_swap[k].node = map[src->eval_swap[k].node];
		dst->eval_swap[k].state = map[src->eval_swap[k].state];
	}
}

void ir_rebuild(Graph *g, IrRebuildFn fn, void *ctx)
{
	Graph *dst = empty_like(g);
	int *map = malloc((g->nnodes ? g->nnodes : 1) * sizeof *map);
	if (!map)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		map[i] = fn ? fn(dst, g, i, map, ctx) : ir_rebuild_copy(dst, g, i, map);
	remap_fields(dst, g, map);
	free(map);
	/* g keeps its address (callers hold it): swap the contents and free the old ones */
	Graph old = *g;
	*g = *dst;
	*dst = old;
	ir_graph_free(dst);
}
