/* test_pass_fuse.c: the fusion pass. Every model in models/ and tests/lit/inputs/ and many random
 * graphs are fused and checked twice: by fuse_verify (the codegen contract) and by an executor
 * simulation written here apart from fuse.c (each group's kernel runs at its leader's place and
 * must find every value it reads from outside already made). MNIST meets its kernel-count bar and
 * keeps one kernel per parameter update; fuse_verify rejects hand-made groups that break each
 * rule. Random graphs use a seed that is printed (NETC_TEST_SEED=n replays a run). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontend/frontend.h"
#include "ir/ir.h"
#include "passes/passes.h"

static int failures;

#define EXPECT(cond, ...)                                                                                   \
	do {                                                                                                \
		if (!(cond)) {                                                                              \
			failures++;                                                                         \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                               \
			fprintf(stderr, __VA_ARGS__);                                                       \
			fputc('\n', stderr);                                                                \
		}                                                                                           \
	} while (0)

/* ---- checks that do not use fuse.c ---- */

/* Runs the groups at their leaders' places; a value is made when its group's kernel has run. */
static bool simulate(const Graph *g, char *err, size_t len)
{
	bool ok = true;
	char *made = calloc(g->nnodes + 1, 1);
	for (int l = 0; l < g->nnodes && ok; l++) {
		if (!g->node[l].programs || g->node[l].group != l)
			continue;
		for (int id = 0; id <= l && ok; id++) {
			const Node *n = &g->node[id];
			if (n->group != l)
				continue;
			for (int k = 0; k < n->nin; k++) {
				const Node *x = &g->node[n->in[k]];
				if (!ir_is_leaf(x->op) && x->group != l && !made[x->id]) {
					snprintf(err, len, "%%%s reads %%%s before its kernel ran", n->name, x->name);
					ok = false;
				}
			}
		}
		for (int id = 0; id <= l; id++)
			made[id] |= g->node[id].group == l;
	}
	for (int id = 0; id < g->nnodes && ok; id++)
		if (g->node[id].programs && !ir_is_leaf(g->node[id].op) && !made[id]) {
			snprintf(err, len, "%%%s is in no group that runs", g->node[id].name);
			ok = false;
		}
	free(made);
	return ok;
}

static int kernels(const Graph *g, unsigned prog)
{
	int n = 0;
	for (int id = 0; id < g->nnodes; id++)
		n += (g->node[id].programs & prog) && g->node[id].group == id;
	return n;
}

static int nodes_in(const Graph *g, unsigned prog)
{
	int n = 0;
	for (int id = 0; id < g->nnodes; id++)
		n += (g->node[id].programs & prog) && !ir_is_leaf(g->node[id].op);
	return n;
}

static bool group_has(const Graph *g, int leader, Pattern p)
{
	for (int id = 0; id <= leader; id++)
		if (g->node[id].group == leader && ir_ops[g->node[id].op].pattern == p)
			return true;
	return false;
}

/* Each parameter's update is one elementwise group: the assigns of a param and of its state
 * (named "<param>.<slot>") share a group, different params never do. A one-element state (adam's
 * step count) has a shape of its own and may take a kernel of its own; a state of no param
 * (batch norm's running statistics) belongs to no update. */
static void check_updates(const Graph *g, const char *model)
{
	for (int a = 0; a < g->nnodes; a++) {
		if (g->node[a].op != OP_assign || !(g->node[a].programs & PROG_TRAIN))
			continue;
		const Node *t = &g->node[g->node[a].in[0]];
		int leader = g->node[a].group;
		EXPECT(!group_has(g, leader, PAT_ANCHOR) && !group_has(g, leader, PAT_REDUCE),
		       "%s: the update of %%%s shares a kernel with an anchor or reduction", model, t->name);
		for (int b = a + 1; b < g->nnodes; b++) {
			if (g->node[b].op != OP_assign)
				continue;
			const Node *u = &g->node[g->node[b].in[0]];
			const Node *pa = t->op == OP_param ? t : NULL, *pb = u->op == OP_param ? u : NULL;
			for (int i = 0; i < g->nnodes && (!pa || !pb); i++) {
				const Node *p = &g->node[i];
				size_t n = p->op == OP_param ? strlen(p->name) : 0;
				if (n && !pa && strncmp(t->name, p->name, n) == 0 && t->name[n] == '.')
					pa = p;
				if (n && !pb && strncmp(u->name, p->name, n) == 0 && u->name[n] == '.')
					pb = p;
			}
			/* states of no parameter (batch norm's running statistics) and one-element states
			 * (adam's step count, shared by every update) may go either way */
			bool scalar = shape_numel(&t->shape) == 1 || shape_numel(&u->shape) == 1;
			if (!pa || !pb || (pa == pb && scalar))
				continue;
			EXPECT((pa == pb) == (g->node[b].group == leader), "%s: assigns to %%%s and %%%s: %s", model,
			       t->name, u->name, pa == pb ? "one parameter, two kernels" : "two parameters, one kernel");
		}
	}
}

static void check_fused(const Graph *g, const char *what)
{
	char err[512];
	EXPECT(fuse_verify(g, err, sizeof err), "%s: fuse_verify: %s", what, err);
	EXPECT(simulate(g, err, sizeof err), "%s: %s", what, err);
}

/* ---- the models ---- */

static void check_model(const char *path)
{
	Graph *g = fe_load_file(path, 0, DIAG_MAX_ERRORS, stderr);
	EXPECT(g, "%s does not load", path);
	if (!g)
		return;
	Diag d;
	diag_init(&d, path, NULL);
	EXPECT(passes_run_default(g, &d), "%s: the pipeline fails", path);
	check_fused(g, path);
	check_updates(g, path);
	int k = kernels(g, PROG_TRAIN), n = nodes_in(g, PROG_TRAIN);
	printf("%s: %d training kernels for %d nodes, %d evaluation kernels for %d nodes\n", path, k, n,
	       kernels(g, PROG_EVAL), nodes_in(g, PROG_EVAL));
	EXPECT(k < n, "%s: nothing fused", path);
	if (strstr(path, "models/mnist.net")) {
		EXPECT(n == 189, "mnist: %d unfused kernels, 189 expected", n);
		EXPECT(3 * k <= n, "mnist: %d kernels is more than a third of %d", k, n);
	}
	ir_graph_free(g);
}

static void check_dir(const char *root, const char *sub)
{
	char dir[1024], path[2048];
	snprintf(dir, sizeof dir, "%s/%s", root, sub);
	DIR *dp = opendir(dir);
	EXPECT(dp, "cannot read %s", dir);
	if (!dp)
		return;
	int seen = 0;
	for (struct dirent *e; (e = readdir(dp));) {
		size_t n = strlen(e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 4, ".net") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		check_model(path);
		seen++;
	}
	closedir(dp);
	EXPECT(seen > 0, "no .net files in %s", dir);
}

/* ---- fuse_verify rejects what breaks the contract ---- */

static Shape S2(int a, int b) { return (Shape){2, {a, b}}; }

typedef struct {
	Graph *g;
	int x, w, b, mm, bias, relu, mm2, sum, exp_, loss;
} Small;

/* x -> matmul -> bias_add -> relu -> matmul -> exp -> sum, with bias_add also read by exp's
 * neighbour so that it is an output when grouped with relu. */
static Small small_graph(void)
{
	Small s;
	s.g = ir_graph_new("small");
	Graph *g = s.g;
	s.x = ir_leaf(g, OP_input, "x", S2(4, 6), DT_F32, NULL);
	s.w = ir_leaf(g, OP_param, "w", S2(6, 6), DT_F32, NULL);
	s.b = ir_leaf(g, OP_param, "b", (Shape){1, {6}}, DT_F32, NULL);
	s.mm = ir_emit(g, OP_matmul, (int[]){s.x, s.w}, NULL);
	s.bias = ir_emit(g, OP_bias_add, (int[]){s.mm, s.b}, (double[]){1});
	s.relu = ir_emit(g, OP_relu, (int[]){s.bias}, NULL);
	s.mm2 = ir_emit(g, OP_matmul, (int[]){s.relu, s.w}, NULL);
	s.exp_ = ir_emit(g, OP_exp, (int[]){s.mm2}, NULL);
	s.sum = ir_emit(g, OP_sum, (int[]){s.exp_}, (double[]){3, 0});
	s.loss = ir_emit(g, OP_add, (int[]){s.sum, s.bias}, NULL); /* reads bias_add late */
	ir_mark_program(g, &s.loss, 1, PROG_TRAIN);
	return s;
}

static void group(Graph *g, const int *ids, int n)
{
	for (int i = 0; i < n; i++)
		g->node[ids[i]].group = ids[n - 1];
}

static void expect_verdict(Small *s, bool valid, const char *what)
{
	char err[512] = "";
	bool ok = fuse_verify(s->g, err, sizeof err);
	EXPECT(ok == valid, "%s: fuse_verify says %s (%s)", what, ok ? "valid" : "invalid", err);
	ir_ungroup(s->g);
}

static void test_verify_rejects(void)
{
	Small s = small_graph();
	expect_verdict(&s, true, "every node alone");
	group(s.g, (int[]){s.mm, s.bias, s.relu}, 3);
	expect_verdict(&s, true, "matmul + bias_add (output) + relu");
	group(s.g, (int[]){s.exp_, s.sum}, 2);
	expect_verdict(&s, true, "exp -> sum");
	group(s.g, (int[]){s.mm, s.bias, s.relu, s.mm2}, 4);
	expect_verdict(&s, false, "two anchors");
	group(s.g, (int[]){s.bias, s.relu}, 2);
	expect_verdict(&s, true, "bias_add (output) + relu, elementwise");
	group(s.g, (int[]){s.mm, s.bias}, 2);
	expect_verdict(&s, true, "matmul + bias_add");
	group(s.g, (int[]){s.mm, s.bias, s.relu, s.mm2, s.exp_}, 5);
	expect_verdict(&s, false, "anchor, anchor, elementwise");
	group(s.g, (int[]){s.mm2, s.exp_, s.sum}, 3);
	expect_verdict(&s, false, "anchor in a reduction group");
	group(s.g, (int[]){s.relu, s.mm2}, 2);
	expect_verdict(&s, false, "anchor not first (prologue)");
	group(s.g, (int[]){s.mm, s.bias}, 2);
	s.g->node[s.mm].group = s.mm; /* bias_add points at a node that is not its group's leader */
	s.g->node[s.bias].group = s.mm;
	expect_verdict(&s, false, "leader is not the last member");
	group(s.g, (int[]){s.sum, s.loss}, 2);
	expect_verdict(&s, false, "reduction not the leader");
	/* order: bias_add with sum's group would run at the add, after relu reads it */
	group(s.g, (int[]){s.bias, s.sum, s.loss}, 3);
	expect_verdict(&s, false, "a member read before the group's kernel runs");
	s.g->node[s.w].group = s.w;
	expect_verdict(&s, false, "a leaf in a group");
	ir_graph_free(s.g);

	/* a reduction whose producer is also read elsewhere: the producer would be an output */
	Small t = small_graph();
	group(t.g, (int[]){t.mm, t.bias}, 2);
	group(t.g, (int[]){t.relu, t.exp_, t.sum}, 3);
	expect_verdict(&t, false, "relu, read by a matmul outside, in a reduction group");
	ir_graph_free(t.g);
}

/* ---- random graphs ---- */

static uint64_t rng_state;

static unsigned urand(unsigned n)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return (unsigned)(z % n);
}

static const OpId random_ops[] = {
	OP_relu, OP_exp, OP_neg, OP_add, OP_mul, OP_sub, OP_bias_add, OP_matmul, OP_sum, OP_softmax,
	OP_log_softmax, OP_reshape, OP_dropout, OP_assign, OP_relu_grad, OP_max_pool2d, OP_conv2d, OP_add,
};

/* Attributes for op that fit the node x it mostly reads, when that matters. */
static void random_attrs(const Graph *g, OpId op, int x, double *attr)
{
	const Shape *s = &g->node[x].shape;
	memset(attr, 0, IR_MAX_ATTRS * sizeof *attr);
	if (op == OP_bias_add || op == OP_softmax || op == OP_log_softmax)
		attr[0] = s->rank > 1 ? 1 : 0;
	else if (op == OP_sum)
		attr[0] = 1u << urand(s->rank ? s->rank : 1), attr[1] = urand(2);
	else if (op == OP_reshape) {
		attr[0] = 1;
		attr[1] = (double)shape_numel(s);
	} else if (op == OP_dropout)
		attr[0] = 0.5, attr[1] = 1;
	else if (op == OP_max_pool2d)
		attr[0] = attr[1] = attr[2] = attr[3] = 2;
	else if (op == OP_conv2d)
		attr[0] = attr[1] = attr[4] = attr[5] = 1;
	else if (op == OP_matmul)
		attr[1] = urand(2);
}

static Graph *random_graph(int size)
{
	Graph *g = ir_graph_new("random");
	Shape shapes[] = {S2(4, 6), S2(6, 6), {1, {6}}, {4, {2, 3, 4, 4}}, {4, {3, 3, 3, 3}}};
	for (int i = 0; i < 5; i++)
		ir_leaf(g, OP_param, NULL, shapes[i], DT_F32, NULL);
	int state = ir_leaf(g, OP_state, NULL, S2(4, 6), DT_F32, NULL);
	ir_leaf(g, OP_const, NULL, (Shape){0}, DT_F32, (double[]){2});
	g->rng = ir_leaf(g, OP_runtime, "rng", (Shape){1, {RNG_WORDS}}, DT_I32, (double[]){RUNTIME_RNG});
	char err[256];
	for (int tries = 0; g->nnodes < size && tries < 50 * size; tries++) {
		OpId op = random_ops[urand(sizeof random_ops / sizeof *random_ops)];
		int in[IR_MAX_INPUTS];
		for (int k = 0; k < IR_MAX_INPUTS; k++)
			in[k] = g->nnodes - 1 - (int)urand(urand(2) ? 4 : g->nnodes);
		if (op == OP_dropout)
			in[1] = g->rng;
		if (op == OP_assign)
			in[0] = state;
		if (ir_is_leaf(g->node[in[0]].op) && op != OP_assign && op != OP_matmul && op != OP_conv2d)
			continue;
		double attr[IR_MAX_ATTRS];
		random_attrs(g, op, in[op == OP_assign], attr);
		ir_add(g, op, in, attr, NULL, err, sizeof err);
	}
	/* sinks split between two programs; a node in the middle is the scores the runtime reads */
	int roots[2][512], nroots[2] = {0, 0};
	for (int id = 8; id < g->nnodes; id++) {
		bool used = false;
		for (int j = id + 1; j < g->nnodes && !used; j++)
			for (int k = 0; k < g->node[j].nin; k++)
				used |= g->node[j].in[k] == id;
		int p = urand(3) == 0;
		if (!used && nroots[p] < 512)
			roots[p][nroots[p]++] = id;
	}
	if (g->nnodes > 9)
		g->output = 8 + (int)urand(g->nnodes - 8);
	ir_mark_program(g, roots[0], nroots[0], PROG_TRAIN);
	ir_mark_program(g, roots[1], nroots[1], PROG_EVAL);
	if (g->output >= 0 && !g->node[g->output].programs)
		g->output = -1;
	return g;
}

static void test_random(uint64_t seed)
{
	rng_state = seed;
	int fused = 0, total = 0;
	for (int i = 0; i < 300; i++) {
		Graph *g = random_graph(10 + (int)urand(80));
		char what[64], err[512];
		snprintf(what, sizeof what, "random graph %d", i);
		EXPECT(ir_verify(g, err, sizeof err), "%s is malformed: %s", what, err);
		Diag d;
		diag_init(&d, what, NULL);
		EXPECT(pass_fuse(g, &(PassOptions){0}, &d), "%s: fuse fails", what);
		check_fused(g, what);
		fused += kernels(g, PROG_TRAIN | PROG_EVAL);
		total += nodes_in(g, PROG_TRAIN | PROG_EVAL);
		ir_graph_free(g);
	}
	printf("random graphs: %d kernels for %d nodes\n", fused, total);
	EXPECT(fused < total, "random graphs: nothing fused");
}

int main(void)
{
	const char *seed_env = getenv("NETC_TEST_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL);
	printf("seed %llu\n", (unsigned long long)seed);
	const char *root = getenv("NETC_SOURCE_DIR");
	if (!root)
		root = ".";
	check_dir(root, "models");
	check_dir(root, "tests/lit/inputs");
	test_verify_rejects();
	test_random(seed);
	if (failures)
		fprintf(stderr, "%d failures (seed %llu)\n", failures, (unsigned long long)seed);
	else
		printf("all fusion checks passed\n");
	return failures != 0;
}
