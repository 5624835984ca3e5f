/* recompute.c: before fusion, copies of cheap producers for their readers.
 *
 * An elementwise node that rescales one tensor by smaller ones (batch norm's gradient dy * weight,
 * read by its two averages and by the input gradient) would be a kernel of its own, stored and
 * read back, because no one reader post-dominates it. Each reader after the first gets a copy
 * instead, which fuses into the reader's kernel: reading the one large input again costs what
 * reading the stored node would, and the store and its kernel are gone. Anchors read their
 * operands from memory, so a node an anchor reads keeps its single copy. */
#include <stdlib.h>

#include "ir/rebuild.h"
#include "passes/passes.h"
#include "passes/postdom.h"

typedef struct {
	bool *copy;  /* per node of the source graph: give later readers copies */
	int *served; /* readers served so far */
} Recompute;

/* The one input of the node's shape when every other is smaller (broadcast) or a constant; -1
 * when the node is not elementwise or reads two such inputs. */
static int rescaled_tensor(const Graph *g, const Node *n)
{
	if (ir_ops[n->op].pattern > PAT_BROADCAST || n->nin == 0 || n->op == OP_dropout)
		return -1;
	int full = -1;
	for (int k = 0; k < n->nin; k++) {
		const Node *x = &g->node[n->in[k]];
		if (shape_eq(&x->shape, &n->shape) && full < 0)
			full = x->id;
		else if (shape_numel(&x->shape) >= shape_numel(&n->shape))
			return -1;
	}
	return full;
}

/* Whether x is stored whatever happens to one of its readers: a leaf, a reduction's output, or a
 * value several nodes read. (A copy reads x from memory, so copying a node whose input would
 * otherwise fuse away, say an anchor's into its epilogue, stores that input instead: no gain.) */
static bool stored_anyway(const Graph *g, const Users *u, int x)
{
	return ir_is_leaf(g->node[x].op) || ir_ops[g->node[x].op].pattern == PAT_REDUCE || u->start[x + 1] - u->start[x] >= 2;
}

static bool worth_copies(const Graph *g, const Users *u, int id)
{
	const Node *n = &g->node[id];
	if (u->start[id + 1] - u->start[id] < 2 || ir_is_program_root(g, id) || rescaled_tensor(g, n) < 0 ||
	    (n->grad_of >= 0 && g->node[n->grad_of].op == OP_param))
		return false;
	for (int k = u->start[id]; k < u->start[id + 1]; k++) {
		const Node *y = &g->node[u->user[k]];
		if (ir_ops[y->op].pattern > PAT_REDUCE || y->programs != n->programs)
			return false;
		/* a reader of an anchor's output likely joins the anchor's epilogue, where a copy cannot go */
		for (int j = 0; j < y->nin; j++)
			if (ir_ops[g->node[y->in[j]].op].pattern == PAT_ANCHOR)
				return false;
	}
	return true;
}

/* A copy of src's node id in dst, unnamed, reading what the original reads. */
static int copy_of(Graph *dst, const Graph *src, int id, const int *map)
{
	const Node *n = &src->node[id];
	int in[IR_MAX_INPUTS];
	for (int k = 0; k < n->nin; k++)
		in[k] = map[n->in[k]];
	int c = ir_emit(dst, n->op, in, n->attr);
	dst->node[c].loc = n->loc;
	dst->node[c].programs = n->programs;
	return c;
}

static int rebuild_node(Graph *dst, const Graph *src, int id, const int *map, void *ctx)
{
	Recompute *r = ctx;
	const Node *n = &src->node[id];
	int in[IR_MAX_INPUTS];
	bool copied = false;
	for (int k = 0; k < n->nin; k++) {
		int x = n->in[k], same = -1;
		for (int j = 0; j < k && same < 0; j++)
			same = n->in[j] == x ? j : -1;
		if (same >= 0)
			in[k] = in[same];
		else if (r->copy[x] && r->served[x]++ > 0) {
			in[k] = copy_of(dst, src, x, map);
			copied = true;
		} else
			in[k] = map[x];
	}
	return ir_rebuild_copy_with(dst, src, id, map, copied ? in : NULL);
}

void recompute_producers(Graph *g)
{
	Users u;
	users_build(&u, g);
	Recompute r = {calloc((size_t)g->nnodes + 1, sizeof *r.copy), calloc((size_t)g->nnodes + 1, sizeof *r.served)};
	if (!r.copy || !r.served)
		abort();
	/* a node whose paths to a post-dominator are all elementwise fuses into it whole: no copies */
	PostDom pd[2];
	static const unsigned prog[2] = {PROG_TRAIN, PROG_EVAL};
	for (int p = 0; p < 2; p++)
		postdom_build(&pd[p], g, &u, prog[p]);
	for (int id = 0; id < g->nnodes; id++) {
		bool fuses_whole = false;
		for (int p = 0; p < 2; p++)
			fuses_whole |= (g->node[id].programs & prog[p]) && pd[p].parent[id] >= 0 && pd[p].pattern[id] <= PAT_INJECTIVE;
		r.copy[id] = !ir_is_leaf(g->node[id].op) && g->node[id].programs && !fuses_whole && worth_copies(g, &u, id);
	}
	for (int p = 0; p < 2; p++)
		postdom_free(&pd[p]);
	/* of a chain of such nodes only the first, whose input is stored anyway, gets copies (x < id) */
	int ncopies = 0;
	for (int id = g->nnodes - 1; id >= 0; id--)
		if (r.copy[id]) {
			int x = rescaled_tensor(g, &g->node[id]);
			r.copy[id] = !r.copy[x] && stored_anyway(g, &u, x);
			ncopies += r.copy[id];
		}
	users_free(&u);
	if (ncopies)
		ir_rebuild(g, rebuild_node, &r);
	free(r.copy);
	free(r.served);
}
