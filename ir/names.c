/* names.c: the graph's name index, so finding a node by name and naming a new one take constant
 * time (deep networks have tens of thousands of nodes, and every node gets a name). Buckets of a
 * string hash hold node ids chained through next[]; ir_graph_free releases it. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (!p)
		abort();
	return p;
}

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int *bucket_of(const Graph *g, const char *name)
{
	return &g->names.bucket[hash(name) & (uint32_t)(g->names.nbuckets - 1)];
}

/* Doubles the buckets once nodes outnumber them (rehashing every named node but `adding`), and
 * keeps next[] as long as the node array. */
static void reserve(Graph *g, int adding)
{
	if (g->names.ncap < g->cap) {
		g->names.next = xrealloc(g->names.next, (size_t)g->cap * sizeof *g->names.next);
		g->names.ncap = g->cap;
	}
	if (g->nnodes < g->names.nbuckets)
		return;
	int nb = g->names.nbuckets ? 2 * g->names.nbuckets : 64;
	while (nb <= g->nnodes)
		nb *= 2;
	free(g->names.bucket);
	g->names.bucket = xrealloc(NULL, (size_t)nb * sizeof *g->names.bucket);
	g->names.nbuckets = nb;
	for (int b = 0; b < nb; b++)
		g->names.bucket[b] = -1;
	for (int i = 0; i < g->nnodes; i++)
		if (g->node[i].name && i != adding) {
			int *head = bucket_of(g, g->node[i].name);
			g->names.next[i] = *head;
			*head = i;
		}
}

void ir_names_insert(Graph *g, int id)
{
	reserve(g, id);
	int *head = bucket_of(g, g->node[id].name);
	g->names.next[id] = *head;
	*head = id;
}

void ir_names_remove(Graph *g, int id)
{
	if (!g->names.nbuckets)
		return;
	for (int *p = bucket_of(g, g->node[id].name); *p >= 0; p = &g->names.next[*p])
		if (*p == id) {
			*p = g->names.next[id];
			return;
		}
}

void ir_names_free(Graph *g)
{
	free(g->names.bucket);
	free(g->names.next);
	memset(&g->names, 0, sizeof g->names);
}

int ir_find(const Graph *g, const char *name)
{
	if (!g->names.nbuckets)
		return -1;
	int found = -1; /* the first node of that name, should the graph hold two */
	for (int i = *bucket_of(g, name); i >= 0; i = g->names.next[i])
		if (strcmp(g->node[i].name, name) == 0 && (found < 0 || i < found))
			found = i;
	return found;
}
