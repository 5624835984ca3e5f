/* test_pass_plan.c: the memory plan checked from the graph alone.
 *
 * The checker below does not use plan-memory's lifetimes: it numbers each program's kernels (one
 * per fused group, in group order), finds for every stored value the kernel that writes it and the
 * last one that reads it, and then proves for every pair of buffers whose bytes overlap that they
 * are never live in the same kernel of the same program. The one exception is in place: a kernel
 * made only of elementwise ops may write its one output over an input it reads for the last time,
 * element for element. A training value that evaluation computes again (passes/share_eval.c) is
 * two buffers at one offset, one live in each program. Values that live across steps (leaves, gradients of parameters, the losses
 * and scores) never share at all; every buffer lies in the arena, 64-byte aligned. It runs on every
 * model in models/ and tests/lit/inputs/, fused and unfused, and on random graphs with random
 * fused groups; a corrupted plan must fail it. The seed is printed (NETC_TEST_SEED replays it). */
#include <dirent.h>

#include "frontend/frontend.h"
#include "passes/passes.h"
#include "tests/unit/test_ir_util.h"

/* ---- the checker ---- */

typedef struct {
	int node;
	bool ws;        /* the node's split-K workspace rather than its value */
	unsigned prog;  /* 0: lives for the whole run; else the one program it lives in */
	int lo, hi;     /* kernel steps of prog during which it is live */
	int64_t off, bytes;
} Buf;

enum { NPROGS = 2 }; /* the programs the checker numbers: PROG_TRAIN and PROG_EVAL */
static const unsigned progs[NPROGS] = {PROG_TRAIN, PROG_EVAL};

typedef struct {
	const Graph *g;
	int *step[NPROGS]; /* node id -> kernel step of its group in each program it runs in */
	Buf *buf;
	int nbuf;
	int conflicts;  /* pairs that overlap while both live */
	int64_t sum;    /* aligned bytes of every buffer */
} Checker;

static int64_t align64(int64_t b) { return (b + 63) / 64 * 64; }

static int64_t value_bytes(const Node *n) { return shape_numel(&n->shape) * (int64_t)dtype_size(n->dtype); }

static int group_of(const Node *n) { return n->group >= 0 ? n->group : n->id; }

/* Kernel steps: the groups of each program in increasing order. */
static void number_kernels(Checker *c)
{
	const Graph *g = c->g;
	int *rank = tu_calloc(g->nnodes, sizeof *rank);
	for (int p = 0; p < NPROGS; p++) {
		int k = 0;
		c->step[p] = tu_calloc(g->nnodes, sizeof *c->step[p]);
		for (int i = 0; i < g->nnodes; i++)
			rank[i] = -1;
		for (int i = 0; i < g->nnodes; i++) {
			const Node *n = &g->node[i];
			if ((n->programs & progs[p]) && !ir_is_leaf(n->op) && group_of(n) == i)
				rank[i] = k++;
		}
		for (int i = 0; i < g->nnodes; i++) {
			const Node *n = &g->node[i];
			if ((n->programs & progs[p]) && !ir_is_leaf(n->op))
				c->step[p][i] = rank[group_of(n)];
		}
	}
	free(rank);
}

static bool lives_across_steps(const Graph *g, const Node *n)
{
	return ir_is_leaf(n->op) || n->id == g->loss || n->id == g->output || n->id == g->eval_loss ||
	       n->id == g->eval_output || (n->grad_of >= 0 && g->node[n->grad_of].op == OP_param);
}

/* Whether u reads x from storage: x comes from outside u's fused group. */
static bool reads_stored(const Node *u, const Node *x) { return group_of(u) != group_of(x) || ir_is_leaf(x->op); }

/* Node i's value: a buffer for each program it runs in, live from its kernel to its last reader
 * there; one for the whole run where it lives across steps, runs in other programs, or a program
 * reads it that does not compute it. */
static void value_bufs(Checker *c, int i)
{
	const Graph *g = c->g;
	const Node *n = &g->node[i];
	Buf whole = {i, false, 0, 0, 0, n->offset, value_bytes(n)};
	if (lives_across_steps(g, n) || (n->programs & ~(unsigned)(PROG_TRAIN | PROG_EVAL))) {
		c->buf[c->nbuf++] = whole;
		return;
	}
	Buf b[NPROGS];
	int nb = 0;
	for (int p = 0; p < NPROGS; p++)
		if (n->programs & progs[p])
			b[nb++] = (Buf){i, false, progs[p], c->step[p][i], c->step[p][i], n->offset, value_bytes(n)};
	for (int j = i + 1; j < g->nnodes; j++) {
		const Node *u = &g->node[j];
		for (int k = 0; u->programs && k < u->nin; k++) {
			if (u->in[k] != i || !reads_stored(u, n))
				continue;
			if (u->programs & ~n->programs) {
				c->buf[c->nbuf++] = whole; /* another program reads it: it must outlive its own */
				return;
			}
			for (int q = 0; q < nb; q++) {
				int p = b[q].prog == PROG_TRAIN ? 0 : 1;
				if ((u->programs & b[q].prog) && c->step[p][j] > b[q].hi)
					b[q].hi = c->step[p][j];
			}
		}
	}
	for (int q = 0; q < nb; q++)
		c->buf[c->nbuf++] = b[q];
}

static void collect(Checker *c)
{
	const Graph *g = c->g;
	c->buf = tu_calloc(3 * g->nnodes, sizeof *c->buf);
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (n->ws_offset >= 0) {
			int64_t bytes = (int64_t)ir_split_k_most(g, n) * shape_numel(&n->shape) * 4;
			bool one = n->programs == PROG_TRAIN || n->programs == PROG_EVAL;
			int step = one ? c->step[n->programs == PROG_TRAIN ? 0 : 1][i] : 0;
			c->buf[c->nbuf++] = (Buf){i, true, one ? n->programs : 0, step, step, n->ws_offset, bytes};
			c->sum += align64(bytes);
		}
		if (n->offset >= 0 && n->op != OP_assign) {
			value_bufs(c, i);
			c->sum += align64(value_bytes(n));
		}
	}
}

/* Kernels that may write in place: every member elementwise, reading its inputs of the output's
 * size at the output's own element index. That is what the elementwise and broadcast patterns
 * promise (ir/ops.def: element i from elements i of same-sized inputs; abs, pow, minimum, gelu
 * and the like), and reshape; injective ops (transpose, unfold, upsampling) read elsewhere. */
static bool elementwise_op(OpId op)
{
	Pattern p = ir_ops[op].pattern;
	return op != OP_assign && (p == PAT_ELEMWISE || p == PAT_BROADCAST || op == OP_reshape);
}

static bool in_place(const Checker *c, const Buf *x, const Buf *y)
{
	const Graph *g = c->g;
	const Node *in = &g->node[x->node], *out = &g->node[y->node];
	if (x->ws || y->ws || x->hi != y->lo || x->off != y->off || x->bytes != y->bytes || in->dtype != out->dtype ||
	    group_of(out) != out->id)
		return false;
	for (int j = 0; j <= out->id; j++) {
		const Node *m = &g->node[j];
		if (!m->programs || group_of(m) != out->id)
			continue;
		if (!elementwise_op(m->op) || (j != out->id && g->node[j].offset >= 0))
			return false;
		for (int k = 0; k < m->nin; k++)
			if (m->in[k] == in->id && !shape_eq(&m->shape, &in->shape) && m->op != OP_reshape)
				return false;
	}
	return true;
}

static bool bytes_overlap(const Buf *a, const Buf *b) { return a->off < b->off + b->bytes && b->off < a->off + a->bytes; }

static int inplace_seen; /* pairs allowed as in place, so the random graphs show they exercise it */

static bool may_share(const Checker *c, const Buf *a, const Buf *b)
{
	if (a->prog == 0 || b->prog == 0)
		return false;
	if (a->prog != b->prog || a->hi < b->lo || b->hi < a->lo)
		return true;
	bool ok = in_place(c, a, b) || in_place(c, b, a);
	inplace_seen += ok;
	return ok;
}

static void check_pairs(Checker *c, const char *what)
{
	for (int i = 0; i < c->nbuf; i++)
		for (int j = i + 1; j < c->nbuf; j++) {
			const Buf *a = &c->buf[i], *b = &c->buf[j];
			if (!a->bytes || !b->bytes || !bytes_overlap(a, b) || may_share(c, a, b))
				continue;
			c->conflicts++;
			if (c->conflicts <= 3)
				printf("  %s: %%%s%s [%d..%d] and %%%s%s [%d..%d] overlap at %lld\n", what,
				       c->g->node[a->node].name, a->ws ? " (workspace)" : "", a->lo, a->hi,
				       c->g->node[b->node].name, b->ws ? " (workspace)" : "", b->lo, b->hi,
				       (long long)(a->off > b->off ? a->off : b->off));
		}
}

/* Every value a kernel reads from outside its group, or that leaves its group, has storage. */
static void check_storage(const Checker *c, const char *what)
{
	const Graph *g = c->g;
	for (int j = 0; j < g->nnodes; j++) {
		const Node *u = &g->node[j];
		if (!u->programs || ir_is_leaf(u->op))
			continue;
		for (int k = 0; k < u->nin; k++) {
			const Node *x = &g->node[u->in[k]];
			if (x->op != OP_const && reads_stored(u, x))
				CHECK(x->offset >= 0, "%s: %%%s reads %%%s, which has no storage", what, u->name, x->name);
		}
		if (u->op == OP_assign)
			CHECK(u->offset == g->node[u->in[0]].offset, "%s: %%%s does not write its target", what, u->name);
	}
	int roots[] = {g->loss, g->output, g->eval_loss, g->eval_output, g->image, g->label, g->lr, g->rng};
	for (size_t k = 0; k < sizeof roots / sizeof *roots; k++)
		if (roots[k] >= 0 && (g->node[roots[k]].programs || ir_is_leaf(g->node[roots[k]].op)))
			CHECK(g->node[roots[k]].offset >= 0, "%s: %%%s has no storage", what, g->node[roots[k]].name);
}

static void check_bounds(const Checker *c, const char *what)
{
	for (int k = 0; k < c->nbuf; k++) {
		const Buf *b = &c->buf[k];
		CHECK(b->off >= 0 && b->off % 64 == 0 && b->off + b->bytes <= c->g->arena_bytes,
		      "%s: %%%s at %lld, %lld bytes, arena %lld", what, c->g->node[b->node].name, (long long)b->off,
		      (long long)b->bytes, (long long)c->g->arena_bytes);
	}
}

/* Runs every check on g's plan; returns the number of overlapping pairs, *sum the bytes of all
 * buffers. */
static int check_plan(const Graph *g, const char *what, int64_t *sum)
{
	Checker c = {.g = g};
	number_kernels(&c);
	collect(&c);
	check_storage(&c, what);
	check_bounds(&c, what);
	check_pairs(&c, what);
	if (sum)
		*sum = c.sum;
	for (int p = 0; p < NPROGS; p++)
		free(c.step[p]);
	free(c.buf);
	return c.conflicts;
}

/* ---- models ---- */

static Graph *load(const char *path, int64_t batch, const PassOptions *o)
{
	Graph *g = fe_load_file(path, batch, DIAG_MAX_ERRORS, stdout);
	Diag d;
	diag_init(&d, path, NULL);
	d.out = stdout;
	if (g && !passes_run(g, o, &d)) {
		ir_graph_free(g);
		g = NULL;
	}
	CHECK(g != NULL, "%s does not load", path);
	return g;
}

static void check_model(const char *path)
{
	static const PassOptions fused = {0}, unfused = {.disable = "fuse"}, plain = {.no_reuse = true};
	const PassOptions *opts[] = {&fused, &unfused, &plain};
	const char *names[] = {"fused", "unfused", "no reuse"};
	for (int k = 0; k < 3; k++) {
		Graph *g = load(path, 0, opts[k]);
		if (!g)
			continue;
		char what[2200];
		snprintf(what, sizeof what, "%s (%s)", path, names[k]);
		int64_t sum;
		CHECK(check_plan(g, what, &sum) == 0, "%s: buffers live at once overlap", what);
		CHECK(sum == plan_memory_sum(g), "%s: sum of buffers %lld, plan-memory says %lld", what, (long long)sum,
		      (long long)plan_memory_sum(g));
		CHECK(g->arena_bytes <= sum, "%s: arena %lld beyond the sum %lld", what, (long long)g->arena_bytes, (long long)sum);
		if (opts[k]->no_reuse)
			CHECK(g->arena_bytes == sum, "%s: without reuse the arena is the sum", what);
		printf("  %-60s arena %10lld of %10lld bytes\n", what, (long long)g->arena_bytes, (long long)sum);
		ir_graph_free(g);
	}
}

static int check_dir(const char *rel)
{
	char dir[1024], path[2048];
	tu_source_path(rel, dir, sizeof dir);
	DIR *d = opendir(dir);
	CHECK(d != NULL, "cannot open %s", dir);
	int count = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".net") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		check_model(path);
		count++;
	}
	if (d)
		closedir(d);
	return count;
}

/* The bar: the MNIST CNN training step at batch 64 in at most half the bytes of its buffers (the
 * training graph as autodiff makes it, before fusion removes buffers); fusion costs no arena. */
static void check_mnist_bar(void)
{
	char path[1024];
	tu_source_path("models/mnist.net", path, sizeof path);
	PassOptions unfused = {.disable = "fuse"};
	Graph *u = load(path, 64, &unfused), *f = load(path, 64, NULL);
	if (!u || !f)
		return;
	int64_t sum = plan_memory_sum(u);
	printf("mnist batch 64: unfused arena %lld of %lld bytes (%.3f); fused arena %lld of %lld bytes\n",
	       (long long)u->arena_bytes, (long long)sum, (double)u->arena_bytes / sum, (long long)f->arena_bytes,
	       (long long)plan_memory_sum(f));
	CHECK(2 * u->arena_bytes <= sum, "arena %lld, sum of buffers %lld", (long long)u->arena_bytes, (long long)sum);
	CHECK(f->arena_bytes <= u->arena_bytes, "fused arena %lld, unfused %lld", (long long)f->arena_bytes,
	      (long long)u->arena_bytes);
	ir_graph_free(u);
	ir_graph_free(f);
}

/* ---- the checker can fail: a plan with one value moved onto a live one ---- */

static void check_corruption_caught(void)
{
	char path[1024];
	tu_source_path("tests/lit/inputs/tiny.net", path, sizeof path);
	PassOptions unfused = {.disable = "fuse"};
	Graph *g = load(path, 0, &unfused);
	if (!g)
		return;
	/* the relu of %hidden is read again by the backward pass (relu_grad reads its output) long
	 * after its first reader runs */
	int hidden = ir_find(g, "hidden"), a = -1, b = -1;
	for (int i = hidden + 1; hidden >= 0 && i < g->nnodes && a < 0; i++)
		if (g->node[i].op == OP_relu && g->node[i].in[0] == hidden)
			a = i;
	for (int i = a + 1; a >= 0 && i < g->nnodes && b < 0; i++)
		if ((g->node[i].programs & PROG_TRAIN) && g->node[i].in[0] == a)
			b = i;
	CHECK(a >= 0 && b >= 0, "tiny has no relu of %%hidden and a reader of it");
	if (b >= 0) {
		CHECK(check_plan(g, "tiny", NULL) == 0);
		g->node[b].offset = g->node[a].offset;
		CHECK(check_plan(g, "corrupted on purpose", NULL) > 0, "moving %%%s onto %%%s went unnoticed",
		      g->node[b].name, g->node[a].name);
	}
	ir_graph_free(g);
}

/* ---- random graphs ---- */

static const int dims[] = {3, 5, 8, 16};

static int random_value(Graph *g, int first)
{
	int n = g->nnodes - first;
	for (int tries = 0; tries < 8; tries++) {
		int id = first + (int)tu_below((uint64_t)n);
		if (g->node[id].dtype == DT_F32 && g->node[id].op != OP_const)
			return id;
	}
	return first;
}

/* An existing f32 value of shape s, else a new param of it. */
static int value_of_shape(Graph *g, const Shape *s)
{
	for (int tries = 0; tries < 16; tries++) {
		int id = (int)tu_below((uint64_t)g->nnodes);
		if (shape_eq(&g->node[id].shape, s) && g->node[id].dtype == DT_F32 && g->node[id].op != OP_const)
			return id;
	}
	return ir_leaf(g, OP_param, NULL, *s, DT_F32, A(INIT_UNIFORM, 0.1));
}

static int random_node(Graph *g, int first)
{
	static const OpId unary[] = {OP_relu, OP_exp, OP_neg, OP_copy, OP_sqrt};
	static const OpId binary[] = {OP_add, OP_mul, OP_sub, OP_div};
	int x = random_value(g, first);
	Shape s = g->node[x].shape;
	switch (tu_below(7)) {
	case 0:
	case 1: return tu_add(g, unary[tu_below(5)], &x, NULL);
	case 2:
	case 3: return tu_add(g, binary[tu_below(4)], (int[]){x, value_of_shape(g, &s)}, NULL);
	case 4: {
		Shape ws = S(2, (int)s.dim[1], dims[tu_below(4)]);
		int w = value_of_shape(g, &ws);
		return tu_add(g, OP_matmul, (int[]){x, w}, NULL);
	}
	case 5: return tu_add(g, OP_sum, &x, A(2, 1));
	default: return tu_add(g, OP_reshape, &x, A(2, (double)s.dim[1], (double)s.dim[0]));
	}
}

/* Node id joins the group of id - 1 when it reads it, both in program prog: groups stay runs of
 * consecutive nodes, so kernel order stays valid. */
static void maybe_fuse(Graph *g, int id, int first, unsigned prog)
{
	const Node *n = &g->node[id], *prev = &g->node[id - 1];
	if (id - 1 < first || ir_is_leaf(prev->op) || ir_is_leaf(n->op) || n->programs != prog ||
	    prev->programs != prog || tu_below(2))
		return;
	bool reads = false;
	for (int k = 0; k < n->nin; k++)
		reads |= n->in[k] == id - 1;
	if (!reads)
		return;
	int old = prev->group;
	for (int j = first; j < id; j++)
		if (g->node[j].group == old)
			g->node[j].group = id;
}

/* A program that reads a value of another program's group computes that group again, as
 * evaluation does with the training groups share-eval gives it: prog joins whole groups and
 * whatever they read. */
static void runs_whole_groups(Graph *g, unsigned prog)
{
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = 0; i < g->nnodes; i++) {
			const Node *n = &g->node[i];
			if (!(n->programs & prog) || ir_is_leaf(n->op))
				continue;
			/* the group's last member, and what it reads (a random group's members each read
			 * the one before) */
			int join[IR_MAX_INPUTS + 1] = {n->group}, njoin = 1;
			for (int k = 0; k < n->nin; k++)
				join[njoin++] = n->in[k];
			for (int k = 0; k < njoin; k++) {
				Node *m = &g->node[join[k]];
				if (m->programs && !ir_is_leaf(m->op) && !(m->programs & prog)) {
					m->programs |= prog;
					changed = true;
				}
			}
		}
	}
}

/* A program of count random nodes reading values from first on; roots[0..2] are two of its values. */
static void random_program(Graph *g, int count, unsigned prog, int first, int roots[2])
{
	int start = g->nnodes;
	for (int i = 0; i < count; i++)
		random_node(g, first);
	roots[0] = g->nnodes - 1;
	roots[1] = start + (int)tu_below((uint64_t)(g->nnodes - start));
	while (ir_is_leaf(g->node[roots[1]].op))
		roots[1]++;
	ir_mark_program(g, roots, 2, prog);
	for (int id = start + 1; id < g->nnodes; id++)
		maybe_fuse(g, id, start, prog);
	runs_whole_groups(g, prog);
}

static int reuse_seen; /* random graphs whose arena is smaller than their buffers */

static void check_random_graph(int round)
{
	Graph *g = ir_graph_new("random");
	int a = dims[tu_below(4)], b = dims[tu_below(4)];
	g->image = ir_leaf(g, OP_input, "x", S(2, a, b), DT_F32, NULL);
	int train[2], eval[2];
	/* evaluation may read training values: it computes their groups again */
	random_program(g, 10 + (int)tu_below(40), PROG_TRAIN, 0, train);
	random_program(g, 5 + (int)tu_below(20), PROG_EVAL, tu_below(2) ? 0 : g->nnodes - 1, eval);
	g->output = train[0];
	g->eval_output = eval[0];
	PassOptions o = {.no_reuse = tu_below(4) == 0};
	Diag d;
	diag_init(&d, "random", NULL);
	char what[64], err[256];
	snprintf(what, sizeof what, "random graph %d", round);
	CHECK(pass_plan_memory(g, &o, &d), "%s", what);
	CHECK(ir_verify(g, err, sizeof err), "%s: %s", what, err);
	int64_t sum;
	CHECK(check_plan(g, what, &sum) == 0, "%s: buffers live at once overlap", what);
	reuse_seen += g->arena_bytes < sum;
	ir_graph_free(g);
}

int main(void)
{
	tu_start("test_pass_plan");
	int models = check_dir("models") + check_dir("tests/lit/inputs");
	CHECK(models >= 2, "found %d models", models);
	check_mnist_bar();
	check_corruption_caught();
	inplace_seen = 0;
	for (int i = 0; i < 200; i++)
		check_random_graph(i);
	printf("random graphs: %d of 200 share memory, %d in-place pairs\n", reuse_seen, inplace_seen);
	CHECK(reuse_seen > 100 && inplace_seen > 0, "the random graphs hardly exercise reuse");
	return tu_finish("test_pass_plan");
}
