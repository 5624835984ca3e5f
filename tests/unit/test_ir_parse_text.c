/* test_ir_parse_text.c: the text form of ir/print.c reads back through ir/parse_ir.c. A graph
 * with random shapes and random (non-round) attribute values, every clause the printer writes
 * (programs, groups, offsets, a stored perm, grad of, special nodes, training settings) prints, reads back and prints
 * the same, attributes bit for bit; and the reader survives every truncation and random byte
 * mutations of that text (an error or a verified graph, never a crash). NETC_TEST_SEED=n replays. */
#include "ir/ops.h"
#include "tests/unit/test_ir_util.h"

static char *print_to_string(const Graph *g)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ir_print(f, g, 0);
	fclose(f);
	return text;
}

/* Parses text with its errors going nowhere; *errors gets how many were reported. */
static Graph *parse_quiet(const char *text, int *errors)
{
	Diag d;
	diag_init(&d, "test.ir", text);
	d.out = fopen("/dev/null", "w");
	Graph *g = ir_parse_text(text, &d);
	fclose(d.out);
	*errors = d.errors;
	return g;
}

/* x: [b, n] -> matmul -> bias_add -> relu -> log_softmax -> nll_loss, a scaled reshape, and an
 * assign into a state stored transposed; a fused group, programs, offsets, grad_of, specials. */
static Graph *random_graph(void)
{
	int64_t b = 1 + (int64_t)tu_below(8), n = 1 + (int64_t)tu_below(16), c = 2 + (int64_t)tu_below(9);
	Graph *g = ir_graph_new("rnd");
	g->batch = b;
	int x = ir_leaf(g, OP_input, "x", S(2, (int)b, (int)n), DT_F32, NULL);
	int y = ir_leaf(g, OP_input, "y", S(1, (int)b), DT_I32, NULL);
	int w = ir_leaf(g, OP_param, "w", S(2, (int)c, (int)n), DT_F32, A(INIT_UNIFORM, tu_uniform(0.01, 1)));
	int bias = ir_leaf(g, OP_param, "w.bias", S(1, (int)c), DT_F32, A(INIT_UNIFORM, tu_uniform(0.01, 1)));
	int mm = tu_add(g, OP_matmul, (int[]){x, w}, A(0, 1));
	int h = tu_add(g, OP_bias_add, (int[]){mm, bias}, A(1));
	int r = tu_add(g, OP_relu, &h, NULL);
	int s = tu_add(g, OP_log_softmax, &r, A(1));
	int loss = tu_add(g, OP_nll_loss, (int[]){s, y}, A(0));
	int k = ir_const(g, tu_uniform(-3, 3));
	int sc = tu_add(g, OP_mul, (int[]){r, k}, NULL);
	double shape[IR_MAX_ATTRS] = {0};
	Shape flat = S(1, (int)(b * c));
	op_shape_attrs(&flat, shape);
	int flat_id = tu_add(g, OP_reshape, &sc, shape);
	int st = ir_leaf(g, OP_state, "w.slot", S(2, (int)n, (int)c), DT_F32, A(INIT_ZERO));
	g->node[st].perm[0] = 1; /* stored [c, n]: the public axes swapped */
	int tw = tu_add(g, OP_matmul, (int[]){x, h}, A(1, 0));
	int as = tu_add(g, OP_assign, (int[]){st, tw}, NULL);
	for (int i = 0; i < g->nnodes; i++)
		if (!ir_is_leaf(g->node[i].op))
			g->node[i].programs = PROG_TRAIN | (i == flat_id ? PROG_EVAL : 0);
	g->node[mm].group = g->node[h].group = r; /* matmul + bias_add + relu */
	g->node[tw].grad_of = w;
	for (int i = 0; i < g->nnodes; i++)
		g->node[i].offset = 64 * (int64_t)tu_below(1000);
	g->node[mm].ws_offset = 64 * (int64_t)tu_below(1000);
	g->arena_bytes = 1 + (int64_t)tu_below(1 << 20);
	g->loss = loss, g->output = s, g->image = x, g->label = y, g->eval_output = flat_id;
	g->train.optimizer = OPT_ADAM, g->train.lr = tu_uniform(1e-4, 1), g->train.accumulate = 2;
	g->train.precision = PREC_BF16;
	g->eval_swap[g->neval_swaps].node = h;
	g->eval_swap[g->neval_swaps++].state = st;
	(void)as;
	return g;
}

static void test_round_trip(void)
{
	Graph *g = random_graph();
	char *text = print_to_string(g);
	int errors;
	Graph *back = parse_quiet(text, &errors);
	CHECK(back && errors == 0, "the printed graph does not read back:\n%s", text);
	if (back) {
		char *again = print_to_string(back);
		CHECK(strcmp(text, again) == 0, "printed again differently:\n%s\n---\n%s", text, again);
		CHECK(back->nnodes == g->nnodes);
		for (int i = 0; i < g->nnodes && i < back->nnodes; i++) {
			CHECK(memcmp(g->node[i].attr, back->node[i].attr, sizeof g->node[i].attr) == 0,
			      "node %d's attributes changed", i);
			CHECK(g->node[i].group == back->node[i].group && g->node[i].programs == back->node[i].programs &&
			      g->node[i].offset == back->node[i].offset && g->node[i].grad_of == back->node[i].grad_of &&
			      memcmp(g->node[i].perm, back->node[i].perm, sizeof g->node[i].perm) == 0,
			      "node %d's clauses changed", i);
		}
		CHECK(back->loss == g->loss && back->eval_output == g->eval_output && back->neval_swaps == 1 &&
		      back->arena_bytes == g->arena_bytes && back->batch == g->batch);
		CHECK(back->train.optimizer == OPT_ADAM && back->train.lr == g->train.lr && back->train.accumulate == 2 &&
		      back->train.precision == PREC_BF16, "the train line did not read back");
		free(again);
		ir_graph_free(back);
	}
	free(text);
	ir_graph_free(g);
}

/* A result is either NULL with an error reported, or a graph that verifies. */
static void expect_safe(const char *text, const char *what)
{
	int errors;
	Graph *g = parse_quiet(text, &errors);
	char err[256];
	CHECK(g ? errors == 0 && ir_verify(g, err, sizeof err) : errors > 0, "%s: %s", what,
	      g ? "a graph that does not verify, or errors" : "NULL without an error");
	ir_graph_free(g);
}

static void test_damage(void)
{
	Graph *g = random_graph();
	char *text = print_to_string(g);
	size_t len = strlen(text);
	char *copy = malloc(len + 1);
	for (size_t cut = 0; cut < len; cut++) {
		memcpy(copy, text, cut);
		copy[cut] = 0;
		expect_safe(copy, "a truncated text");
	}
	static const char bytes[] = "%:=[](){},;0123456789-. \nafgin\t~";
	for (int round = 0; round < 3000; round++) {
		memcpy(copy, text, len + 1);
		for (int k = 1 + (int)tu_below(3); k > 0; k--)
			copy[tu_below(len)] = bytes[tu_below(sizeof bytes - 1)];
		expect_safe(copy, "a mutated text");
	}
	free(copy);
	free(text);
	ir_graph_free(g);
}

int main(void)
{
	tu_start("test_ir_parse_text");
	for (int i = 0; i < 20; i++)
		test_round_trip();
	test_damage();
	return tu_finish("test_ir_parse_text");
}
