/* plan_memory.c: a byte offset in one arena for every value a program reads or writes, as NNVM's
 * PlanMemory does it.
 *
 * Resident values (passes/liveness.c) come first, each in a block of its own. Temporaries are
 * then placed in kernel order: a value whose group may compute in place (an elementwise kernel
 * whose input dies there, same size) takes that input's block; any other value takes the
 * smallest free block that fits (best fit), or the arena grows. Blocks of values read for the
 * last time go back to the free list after the kernel's outputs are placed, so no output ever
 * shares with a value its kernel still reads, except in place. A split-K workspace lives only
 * during its node's kernel. Training and evaluation never run at once, so their temporaries
 * share. Without reuse (-O0, or `netc check`, which reads every value after a step) every value
 * keeps its own block. Blocks are 64-byte aligned so kernels can use aligned vector loads; assign
 * nodes share their target's block and constants have none (kernels inline them). */
#include <stdlib.h>
#include <string.h>

#include "ir/checked.h"
#include "passes/passes.h"

/* The most bytes a plan may hold (256 TiB, beyond any machine's memory). The arena is at most the
 * sum of the blocks, which is checked against this first, so no offset computed after can overflow. */
#define PLAN_MAX_BYTES ((int64_t)1 << 48)

int64_t plan_align(int64_t bytes) { return (bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

/* ---- free blocks, sorted by offset, neighbours merged ---- */

typedef struct {
	int64_t off, size;
} Block;

typedef struct {
	Block *free;
	int n, cap;
	int64_t top; /* end of the arena so far */
} Heap;

static void heap_remove(Heap *h, int i)
{
	for (int k = i + 1; k < h->n; k++)
		h->free[k - 1] = h->free[k];
	h->n--;
}

static int64_t heap_alloc(Heap *h, int64_t size)
{
	int best = -1;
	for (int i = 0; i < h->n; i++)
		if (h->free[i].size >= size && (best < 0 || h->free[i].size < h->free[best].size))
			best = i;
	if (best >= 0) {
		int64_t off = h->free[best].off;
		h->free[best].off += size;
		h->free[best].size -= size;
		if (h->free[best].size == 0)
			heap_remove(h, best);
		return off;
	}
	/* nothing fits: a free block at the end grows into the new space */
	int64_t off = h->top;
	if (h->n && h->free[h->n - 1].off + h->free[h->n - 1].size == h->top) {
		off = h->free[h->n - 1].off;
		heap_remove(h, h->n - 1);
	}
	h->top = off + size;
	return off;
}

static void heap_free(Heap *h, int64_t off, int64_t size)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 64;
		h->free = realloc(h->free, h->cap * sizeof *h->free);
		if (!h->free)
			abort();
	}
	int i = 0;
	while (i < h->n && h->free[i].off < off)
		i++;
	for (int k = h->n; k > i; k--)
		h->free[k] = h->free[k - 1];
	h->free[i] = (Block){off, size};
	h->n++;
	if (i + 1 < h->n && off + size == h->free[i + 1].off) {
		h->free[i].size += h->free[i + 1].size;
		heap_remove(h, i + 1);
	}
	if (i > 0 && h->free[i - 1].off + h->free[i - 1].size == off) {
		h->free[i - 1].size += h->free[i].size;
		heap_remove(h, i);
	}
}

/* Takes [off, off + size) out of the free blocks; false when part of it is in use. */
static bool heap_claim(Heap *h, int64_t off, int64_t size)
{
	for (int i = 0; i < h->n; i++) {
		Block b = h->free[i];
		if (b.off > off || b.off + b.size < off + size)
			continue;
		heap_remove(h, i);
		if (off > b.off)
			heap_free(h, b.off, off - b.off);
		if (b.off + b.size > off + size)
			heap_free(h, off + size, b.off + b.size - off - size);
		return true;
	}
	return false;
}

/* ---- placing ---- */

typedef struct {
	Graph *g;
	Liveness *l;
	Heap heap;
	int *given_at;  /* temporaries: the time an in-place output took their block over, else -1 */
	char *claimed;  /* shared values whose block evaluation has taken again */
	int conflicts;  /* shared values whose block was in use when evaluation wrote them */
} Planner;

/* Residents (and, without reuse, every value) in node order, each in a block of its own. */
static int64_t place_own_blocks(Graph *g, const Liveness *l, bool reuse)
{
	int64_t top = 0;
	for (int i = 0; i < g->nnodes; i++) {
		Node *n = &g->node[i];
		if (l->ws_kind[i] == LIVE_RESIDENT || (!reuse && l->ws_kind[i] == LIVE_TEMP)) {
			n->ws_offset = top;
			top += plan_align(liveness_ws_bytes(g, i));
		}
		if (l->kind[i] == LIVE_RESIDENT || (!reuse && l->kind[i] == LIVE_TEMP)) {
			n->offset = top;
			top += plan_align(liveness_bytes(g, i));
		}
	}
	return top;
}

/* An input of v's group that dies at time t, v's kernel, and whose block v may take, or -1. */
static int inplace_input(Planner *p, int v, int t)
{
	const Graph *g = p->g;
	int group = g->node[v].group;
	if (group != v)
		return -1;
	for (int j = p->l->groups.first[group]; j >= 0; j = p->l->groups.next[j]) {
		const Node *m = &g->node[j];
		if (!m->programs)
			continue;
		for (int k = 0; k < m->nin; k++) {
			int x = m->in[k];
			if (p->l->kind[x] == LIVE_TEMP && liveness_dies_at(p->l, x, t) && p->given_at[x] != t &&
			    liveness_inplace_ok(g, p->l, group, x))
				return x;
		}
	}
	return -1;
}

static void place_temp(Planner *p, int v, int t)
{
	int x = inplace_input(p, v, t);
	if (x >= 0) {
		p->given_at[x] = t;
		p->g->node[v].offset = p->g->node[x].offset;
		return;
	}
	p->g->node[v].offset = heap_alloc(&p->heap, plan_align(liveness_bytes(p->g, v)));
}

/* Evaluation writes shared value v at time t into its training block: in place of an input that
 * dies there, or the block taken out of the free ones. When part of it is in use, v is a
 * conflict, and the plan is made again with its lifetimes held as one. */
static void place_again(Planner *p, int v, int t)
{
	int x = inplace_input(p, v, t);
	if (x >= 0 && p->g->node[x].offset == p->g->node[v].offset) {
		p->given_at[x] = t;
		p->claimed[v] = 1;
	} else if (heap_claim(&p->heap, p->g->node[v].offset, plan_align(liveness_bytes(p->g, v)))) {
		p->claimed[v] = 1;
	} else {
		liveness_hold(p->l, v);
		p->conflicts++;
	}
}

/* Returns the block of v, whose lifetime ends at t, unless an output took it over. */
static void release(Planner *p, int v, int t, bool eval)
{
	if (p->given_at[v] == t || (eval && !p->claimed[v]))
		return;
	heap_free(&p->heap, p->g->node[v].offset, plan_align(liveness_bytes(p->g, v)));
}

typedef struct {
	int time, id;
} Event;

static int event_cmp(const void *a, const void *b)
{
	const Event *x = a, *y = b;
	return x->time != y->time ? (x->time > y->time) - (x->time < y->time) : x->id - y->id;
}

/* The temporaries (or workspaces) of l that have a time in times[], sorted by it. */
static Event *events(const Liveness *l, const LiveKind *kind, const int *times, int *count)
{
	Event *e = malloc((l->n ? l->n : 1) * sizeof *e);
	if (!e)
		abort();
	*count = 0;
	for (int i = 0; i < l->n; i++)
		if (kind[i] == LIVE_TEMP && times[i] >= 0)
			e[(*count)++] = (Event){times[i], i};
	qsort(e, *count, sizeof *e, event_cmp);
	return e;
}

/* Events by kind, each list sorted by time, with a cursor. */
enum { EV_DEF, EV_AGAIN, EV_WS, EV_LAST, EV_EVAL_LAST, EV_KINDS };
typedef struct {
	Event *e;
	int n, at;
} EventList;

static int next_time(const EventList *ev)
{
	int t = 1 << 30;
	for (int k = 0; k < EV_KINDS; k++)
		if (ev[k].at < ev[k].n && ev[k].e[ev[k].at].time < t)
			t = ev[k].e[ev[k].at].time;
	return t;
}

/* The next event of list ev at time t, or -1. */
static int take(EventList *ev, int t)
{
	return ev->at < ev->n && ev->e[ev->at].time == t ? ev->e[ev->at++].id : -1;
}

/* Kernel by kernel: place the outputs and workspaces of time t, then free what t read last. */
static void place_temps(Planner *p)
{
	Liveness *l = p->l;
	EventList ev[EV_KINDS];
	ev[EV_DEF].e = events(l, l->kind, l->def, &ev[EV_DEF].n);
	ev[EV_AGAIN].e = events(l, l->kind, l->eval_def, &ev[EV_AGAIN].n);
	ev[EV_WS].e = events(l, l->ws_kind, l->ws_time, &ev[EV_WS].n);
	ev[EV_LAST].e = events(l, l->kind, l->last, &ev[EV_LAST].n);
	ev[EV_EVAL_LAST].e = events(l, l->kind, l->eval_last, &ev[EV_EVAL_LAST].n);
	for (int k = 0; k < EV_KINDS; k++)
		ev[k].at = 0;
	for (int t; (t = next_time(ev)) < 1 << 30;) {
		for (int v; (v = take(&ev[EV_DEF], t)) >= 0;)
			place_temp(p, v, t);
		for (int v; (v = take(&ev[EV_AGAIN], t)) >= 0;)
			place_again(p, v, t);
		int first_ws = ev[EV_WS].at;
		for (int v; (v = take(&ev[EV_WS], t)) >= 0;)
			p->g->node[v].ws_offset = heap_alloc(&p->heap, plan_align(liveness_ws_bytes(p->g, v)));
		for (int v; (v = take(&ev[EV_LAST], t)) >= 0;)
			release(p, v, t, false);
		for (int v; (v = take(&ev[EV_EVAL_LAST], t)) >= 0;)
			release(p, v, t, true);
		for (int k = first_ws; k < ev[EV_WS].at; k++) {
			int v = ev[EV_WS].e[k].id;
			heap_free(&p->heap, p->g->node[v].ws_offset, plan_align(liveness_ws_bytes(p->g, v)));
		}
	}
	for (int k = 0; k < EV_KINDS; k++)
		free(ev[k].e);
}

/* The bytes of every block the plan may make, as if none were reused; INT64_MAX past int64. */
static int64_t blocks_sum(const Graph *g, const Liveness *l)
{
	int64_t sum = 0;
	for (int i = 0; i < g->nnodes; i++) {
		if (l->kind[i] == LIVE_RESIDENT || l->kind[i] == LIVE_TEMP)
			sum = sat_add_i64(sum, plan_align(liveness_bytes(g, i)));
		if (l->ws_kind[i] != LIVE_NONE)
			sum = sat_add_i64(sum, plan_align(liveness_ws_bytes(g, i)));
	}
	return sum;
}

bool pass_plan_memory(Graph *g, const PassOptions *o, Diag *d)
{
	bool reuse = !(o && (o->no_reuse || o->O0));
	Liveness l;
	liveness_compute(g, &l);
	if (blocks_sum(g, &l) > PLAN_MAX_BYTES) {
		diag_error(d, (SrcLoc){0, 0}, "'%s' at batch %lld needs more than 2^48 bytes (256 TiB) of memory: "
			   "make its layers or its batch smaller", g->name, (long long)g->batch);
		liveness_free(&l);
		return false;
	}
	/* a conflict holds one more value's lifetimes as one, so this ends */
	Planner p = {.g = g, .l = &l};
	p.given_at = malloc((g->nnodes ? g->nnodes : 1) * sizeof *p.given_at);
	p.claimed = malloc(g->nnodes ? g->nnodes : 1);
	if (!p.given_at || !p.claimed)
		abort();
	do {
		for (int i = 0; i < g->nnodes; i++) {
			g->node[i].offset = g->node[i].ws_offset = -1;
			p.given_at[i] = -1;
			p.claimed[i] = 0;
		}
		p.heap = (Heap){p.heap.free, 0, p.heap.cap, place_own_blocks(g, &l, reuse)};
		p.conflicts = 0;
		if (reuse)
			place_temps(&p);
	} while (p.conflicts);
	for (int i = 0; i < g->nnodes; i++)
		if (l.kind[i] == LIVE_ALIAS)
			g->node[i].offset = g->node[g->node[i].in[0]].offset;
	g->arena_bytes = p.heap.top;
	free(p.heap.free);
	free(p.given_at);
	free(p.claimed);
	liveness_free(&l);
	return true;
}

/* ---- reporting ---- */

int64_t plan_memory_sum(const Graph *g)
{
	Liveness l;
	liveness_compute(g, &l);
	int64_t sum = blocks_sum(g, &l);
	liveness_free(&l);
	return sum;
}

/* "train 3..7": kernel positions within the program */
static const char *span(const Graph *g, int def, int last, char *buf, size_t len)
{
	bool eval = def >= g->nnodes;
	int base = eval ? g->nnodes : 0;
	snprintf(buf, len, "%s %d..%d", eval ? "eval" : "train", def - base, last - base);
	return buf;
}

static bool overlap(int64_t a, int64_t alen, int64_t b, int64_t blen) { return a < b + blen && b < a + alen; }

/* How temporary v got its block: in place of an input, or after the latest value that held it. */
static void print_origin(FILE *out, const Graph *g, const Liveness *l, int v)
{
	const Node *n = &g->node[v];
	int64_t size = plan_align(liveness_bytes(g, v));
	int prev = -1;
	for (int y = 0; y < g->nnodes; y++) {
		const Node *m = &g->node[y];
		if (l->kind[y] != LIVE_TEMP || y == v || l->last[y] > l->def[v] ||
		    !overlap(m->offset, plan_align(liveness_bytes(g, y)), n->offset, size))
			continue;
		if (l->last[y] == l->def[v] && m->offset == n->offset && liveness_inplace_ok(g, l, n->group, y)) {
			fprintf(out, "  in place of %%%s", m->name);
			return;
		}
		if (l->last[y] < l->def[v] && (prev < 0 || l->last[y] > l->last[prev]))
			prev = y;
	}
	if (prev >= 0)
		fprintf(out, "  reuses %%%s", g->node[prev].name);
}

static void print_workspace(FILE *out, const Graph *g, const Liveness *l, int i)
{
	char buf[64];
	fprintf(out, "  %12lld %12lld  %-16s workspace of %%%s\n", (long long)g->node[i].ws_offset,
		(long long)liveness_ws_bytes(g, i),
		l->ws_kind[i] == LIVE_TEMP ? span(g, l->ws_time[i], l->ws_time[i], buf, sizeof buf) : "resident",
		g->node[i].name);
}

void plan_memory_print(FILE *out, const Graph *g)
{
	Liveness l;
	liveness_compute(g, &l);
	char buf[64];
	fprintf(out, "memory plan of %s (offset, bytes, lifetime in kernel positions, value):\n", g->name);
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (l.ws_kind[i] != LIVE_NONE)
			print_workspace(out, g, &l, i);
		if (l.kind[i] != LIVE_RESIDENT && l.kind[i] != LIVE_TEMP)
			continue;
		bool temp = l.kind[i] == LIVE_TEMP;
		if (temp && l.eval_def[i] >= 0) { /* a value evaluation computes again: both lifetimes */
			char again[32];
			span(g, l.def[i], l.last[i], buf, sizeof buf);
			snprintf(buf + strlen(buf), sizeof buf - strlen(buf), ", %s",
				 span(g, l.eval_def[i], l.eval_last[i], again, sizeof again));
		} else if (temp) {
			span(g, l.def[i], l.last[i], buf, sizeof buf);
		}
		fprintf(out, "  %12lld %12lld  %-16s %%%s = %s", (long long)n->offset, (long long)liveness_bytes(g, i),
			temp ? buf : "resident", n->name, ir_ops[n->op].name);
		if (temp)
			print_origin(out, g, &l, i);
		fputc('\n', out);
	}
	liveness_free(&l);
}
