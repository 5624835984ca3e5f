/* traffic.c: the kernels of a program and the bytes they move, counted by the compiler.
 *
 * Each fused group is one kernel: it reads every value from outside the group once (constants are
 * inlined) and writes its stored outputs; what flows between members stays in registers. So fusing
 * a chain shows up here as fewer kernels and fewer bytes. */
#include <stdlib.h>

#include "ir/checked.h"
#include "passes/passes.h"

typedef struct {
	int group, id;
} Member;

static int member_cmp(const void *a, const void *b)
{
	const Member *x = a, *y = b;
	return x->group != y->group ? x->group - y->group : x->id - y->id;
}

/* The non-leaf nodes of prog, members of one group next to each other. */
static Member *members(const Graph *g, unsigned prog, int *count)
{
	Member *m = malloc((g->nnodes ? g->nnodes : 1) * sizeof *m);
	if (!m)
		abort();
	*count = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if ((n->programs & prog) && !ir_is_leaf(n->op))
			m[(*count)++] = (Member){n->group >= 0 ? n->group : i, i};
	}
	qsort(m, *count, sizeof *m, member_cmp);
	return m;
}

PassTraffic passes_traffic(const Graph *g, unsigned prog)
{
	return passes_traffic_by_group(g, prog, NULL);
}

PassTraffic passes_traffic_by_group(const Graph *g, unsigned prog, int64_t *bytes)
{
	PassTraffic t = {0, 0, 0};
	int count;
	Member *m = members(g, prog, &count);
	int *read_by = malloc((g->nnodes ? g->nnodes : 1) * sizeof *read_by); /* last group that read it */
	if (!read_by)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		read_by[i] = -1;
	GroupIndex ix;
	ir_group_index(&ix, g);
	for (int k = 0; k < count; k++) {
		const Node *n = &g->node[m[k].id];
		t.kernels += k == 0 || m[k - 1].group != m[k].group;
		for (int j = 0; j < n->nin; j++) {
			const Node *x = &g->node[n->in[j]];
			if (x->op == OP_const || (x->group == m[k].group && !ir_is_leaf(x->op)) || read_by[x->id] == m[k].group)
				continue;
			read_by[x->id] = m[k].group;
			t.read = sat_add_i64(t.read, liveness_bytes(g, x->id)); /* a value may be read by every kernel */
			if (bytes)
				bytes[m[k].group] = sat_add_i64(bytes[m[k].group], liveness_bytes(g, x->id));
		}
		if (ix.output[n->id]) {
			t.written = sat_add_i64(t.written, liveness_bytes(g, n->id));
			if (bytes)
				bytes[m[k].group] = sat_add_i64(bytes[m[k].group], liveness_bytes(g, n->id));
		}
	}
	ir_group_index_free(&ix);
	free(read_by);
	free(m);
	return t;
}
