/* test_fe_parser.c: the frontend from .net text to forward graphs, and its error messages. */
#include "frontend/frontend.h"
#include "tests/unit/test_util.h"

/* Builds text named t.net, capturing the error stream into *errs (caller frees). */
static Graph *load(const char *text, size_t len, int64_t batch, char **errs)
{
	size_t n;
	FILE *f = open_memstream(errs, &n);
	Graph *g = fe_load_string("t.net", text, len, batch, f);
	fclose(f);
	return g;
}

static const Node *node(const Graph *g, const char *name)
{
	int id = ir_find(g, name);
	return id < 0 ? NULL : &g->node[id];
}

static int count_op(const Graph *g, OpId op)
{
	int n = 0;
	for (int i = 0; i < g->nnodes; i++)
		n += g->node[i].op == op;
	return n;
}

static void test_mnist_model(void)
{
	char path[4096];
	tu_source_path("models/mnist.net", path, sizeof path);
	Graph *g = fe_load_file(path, 0, stdout);
	CHECK(g, "models/mnist.net does not build");
	if (!g)
		return;
	CHECK(ir_param_count(g) == 1199882, "params %lld", (long long)ir_param_count(g));
	CHECK(g->batch == 64 && g->train.batch == 64, "batch %lld", (long long)g->batch);
	CHECK(!strcmp(g->name, "mnist"), "name %s", g->name);
	CHECK(g->image == ir_find(g, "image") && g->label == ir_find(g, "label"), "data inputs");
	CHECK(g->output == ir_find(g, "scores"), "output %d", g->output);
	CHECK(g->loss >= 0 && g->node[g->loss].op == OP_nll_loss, "loss");
	CHECK(g->rng >= 0 && g->node[g->rng].op == OP_runtime && g->node[g->rng].attr[0] == RUNTIME_RNG, "rng");
	CHECK(count_op(g, OP_dropout) == 2 && count_op(g, OP_runtime) == 1, "dropouts share one rng");
	const Node *d2 = node(g, "dropout_2");
	CHECK(d2 && d2->attr[0] == 0.5 && d2->attr[1] == 2, "second dropout has p 0.5 and stream 2");
	const Node *w = node(g, "fc1.weight");
	CHECK(w && w->shape.rank == 2 && w->shape.dim[0] == 128 && w->shape.dim[1] == 9216, "fc1.weight shape");
	CHECK(w && w->attr[0] == INIT_UNIFORM && w->attr[1] > 0.0104 && w->attr[1] < 0.0105, "fc1 bound");
	const Node *fc1 = node(g, "fc1");
	CHECK(fc1 && fc1->loc.line == 14 && fc1->loc.col == 8, "fc1 at 14:8, got %d:%d", fc1 ? fc1->loc.line : 0,
	      fc1 ? fc1->loc.col : 0);
	const TrainConfig *c = &g->train;
	CHECK(c->optimizer == OPT_ADADELTA && c->lr == 1.0 && c->rho == 0.9 && c->eps == 1e-6, "adadelta");
	CHECK(c->schedule == SCHED_STEP && c->step_size == 1 && c->gamma == 0.7, "step schedule");
	CHECK(c->epochs == 14 && c->log_every == 100 && !strcmp(c->dataset, "mnist"), "train keys");
	ir_graph_free(g);

	g = fe_load_file(path, 7, stdout);
	CHECK(g && g->batch == 7 && g->node[g->image].shape.dim[0] == 7, "batch override");
	ir_graph_free(g);
}

/* A conv + pool + dense network of random sizes, in plain and in CRLF/comment/tab dress. */
static void test_random_sizes(void)
{
	int cin = 1 + (int)tu_below(4), cout = 1 + (int)tu_below(16), k = 1 + (int)tu_below(5);
	int h = k + (int)tu_below(12), hidden = 1 + (int)tu_below(40), batch = 1 + (int)tu_below(9);
	char text[1024], crlf[2048];
	snprintf(text, sizeof text,
		 "network r {\n"
		 "input x: f32[b, %d, %d, %d]\n"
		 "input y: i32[b]\n"
		 "const hidden = %d\n"
		 "c = conv2d(%d, %d, padding=1)\n"
		 "relu\n"
		 "p = avg_pool2d(1)\n"
		 "flatten\n"
		 "fc = dense(hidden * 2 - hidden)\n"
		 "loss cross_entropy(y)\n"
		 "}\n",
		 cin, h, h, hidden, cout, k);
	char *errs;
	Graph *g = load(text, strlen(text), batch, &errs);
	CHECK(g, "random net does not build:\n%s%s", text, errs);
	free(errs);
	if (!g)
		return;
	int64_t oh = h + 2 - k + 1;
	int64_t want = (int64_t)cout * cin * k * k + cout + (int64_t)hidden * cout * oh * oh + hidden;
	CHECK(ir_param_count(g) == want, "params %lld, want %lld", (long long)ir_param_count(g), (long long)want);
	const Node *p = node(g, "p");
	CHECK(p && p->shape.rank == 4 && p->shape.dim[0] == batch && p->shape.dim[1] == cout && p->shape.dim[2] == oh,
	      "pool shape");
	int nodes = g->nnodes;
	ir_graph_free(g);

	/* the same with CRLF, comments, tabs and trailing whitespace, and no final newline */
	size_t n = 0;
	for (const char *s = text; *s; s++) {
		if (*s == '\n')
			n += (size_t)sprintf(crlf + n, " \t# note\r\n\t");
		else
			crlf[n++] = *s;
	}
	n -= 3; /* drop the last "\r\n\t" */
	g = load(crlf, n, batch, &errs);
	CHECK(g && g->nnodes == nodes, "dressed-up text builds differently:\n%s", errs);
	free(errs);
	ir_graph_free(g);
}

static void test_all_layers(void)
{
	const char *text =
		"network all { input x: f32[b, 2, 8, 8]; input y: i32[b]\n"
		"a = conv2d(4, 3, stride=1, padding=1, bias=false); m = max_pool2d(2); v = avg_pool2d(a, 2, 2, 0, false)\n"
		"s = add(m, v); sub(s, m); mul(s, v); div(s, v); neg; exp; log; sqrt; relu; dropout(0.2)\n"
		"r = reshape(-1, 2, 32); sm = softmax(1); sum(dim=-1, keepdim=true); t = mean\n"
		"flatten(r); linear(6, bias=false); l = log_softmax\n"
		"loss nll_loss(l, y) }\n"
		"train { optimizer = sgd(0.1, momentum=0.9, nesterov=true); schedule = none; steps = 3 }\n";
	char *errs;
	Graph *g = load(text, strlen(text), 3, &errs);
	CHECK(g, "all layers:\n%s", errs);
	free(errs);
	if (!g)
		return;
	const Node *a = node(g, "a"), *r = node(g, "r"), *t = node(g, "t");
	CHECK(a && a->op == OP_conv2d && !node(g, "a.bias"), "conv without bias is named as the layer");
	CHECK(r && r->shape.rank == 3 && r->shape.dim[0] == 3 && r->shape.dim[1] == 2, "reshape -1");
	CHECK(node(g, "sm") && node(g, "sm")->attr[0] == 1, "softmax axis");
	CHECK(t && t->op == OP_mean && t->attr[0] == 7 && t->shape.rank == 0, "mean over all axes: mask 7");
	CHECK(node(g, "sum_1") && node(g, "sum_1")->attr[0] == 4 && node(g, "sum_1")->attr[1] == 1, "sum dim -1");
	CHECK(node(g, "linear_1") == NULL && node(g, "dense_1") != NULL, "linear is dense");
	CHECK(g->train.optimizer == OPT_SGD && g->train.lr == 0.1 && g->train.nesterov && g->train.steps == 3, "sgd");
	ir_graph_free(g);
}

typedef struct {
	const char *text;
	const char *want; /* the first error line, after "t.net:" */
} ErrorCase;

#define NET(body) "network m {\ninput x: f32[b, 1, 8, 8]\ninput y: i32[b]\n" body "loss cross_entropy(y)\n}\n"

static const ErrorCase errors[] = {
	{NET("a = conv2d(32, kernel=3 relu\n"), "4:25: error: expected ')' or ',' before 'relu'"},
	{NET("conv3d(3)\n"), "4:1: error: unknown op 'conv3d'"},
	{NET("conv2d(4, kernal=3)\n"), "4:11: error: unknown argument 'kernal' for conv2d"},
	{NET("c = relu\nc = relu\n"), "5:1: error: 'c' is already defined"},
	{NET("relu(x, x)\n"), "4:1: error: relu takes 1 tensor input, got 2"},
	{NET("max_pool2d(2, 2, 0, true, 1)\n"), "4:27: error: too many positional arguments for max_pool2d (it takes 4)"},
	{NET("dense(q)\n"), "4:7: error: unknown name 'q'"},
	{NET("conv2d(-4, 3)\n"), "4:8: error: argument 'out_channels' of conv2d must be a positive integer, got -4"},
	{NET("conv2d(2.5, 3)\n"), "4:8: error: argument 'out_channels' of conv2d must be a positive integer, got 2.5"},
	{NET("const z = 1 / (3 - 3)\n"), "4:13: error: division by zero in a constant expression"},
	{NET("dense(99999999999999)\n"), "4:7: error: integer 99999999999999 is too large (the limit is 2^40)"},
	{NET("dense(10)\n"), "4:1: error: dense expects a 2-D [batch, features] input, got [5, 1, 8, 8]"},
	{NET("flatten\nadd(x)\n"), "5:1: error: add: cannot broadcast"},
	{NET("flatten\ndense(4)\nloss cross_entropy(y)\n"), "7:1: error: a network has one loss; this is a second"},
	{"network m {\ninput x: f32[b, 4]\ninput y: i32[b]\n}\n", "1:1: error: network 'm' has no loss"},
	{NET("") "train {\n optimiser = sgd(lr=1)\n}\n", "7:2: error: unknown key 'optimiser' in train section"},
	{NET("") "train {\n batch = 2\n batch = 3\n}\n", "8:2: error: 'batch' is already set"},
	{NET("relu @\n"), "4:6: error: unexpected character '@'"},
	{NET("relu \x01\xff\n"), "4:6: error: unexpected character '\\x01\\xff'"},
	{"network m {\ninput x: f8[b]\n}\n", "2:10: error: unknown dtype 'f8'"},
	{"network m {\ninput x: f32[3, b]\n}\n", "2:17: error: symbolic dimension 'b' must be the first"},
	{"", "error: no network section"},
	{"network m {\n", "1:12: error: unexpected end of file"},
};

static void test_errors(void)
{
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
		const ErrorCase *e = &errors[i];
		char *errs, want[256];
		Graph *g = load(e->text, strlen(e->text), 5, &errs);
		snprintf(want, sizeof want, "t.net%s%s", e->want[0] == 'e' ? ": " : ":", e->want);
		CHECK(!g, "case %zu builds", i);
		CHECK(!strncmp(errs, want, strlen(want)), "case %zu: want\n  %s\ngot\n%s", i, want, errs);
		CHECK(strchr(errs, '^') || e->want[0] == 'e', "case %zu: no caret line", i);
		ir_graph_free(g);
		free(errs);
	}
}

/* Several broken statements: each reported once, with a note at a first definition. */
static void test_recovery(void)
{
	const char *text = NET("dense(4\nrelu )\nconv3d\nrelu\nc = relu\nc = relu\n");
	char *errs;
	Graph *g = load(text, strlen(text), 0, &errs);
	CHECK(!g, "recovery case builds");
	CHECK(strstr(errs, "t.net:5:1: error: expected ')' or ',' before 'relu'"), "first syntax error:\n%s", errs);
	int n = 0;
	for (const char *p = errs; (p = strstr(p, "error:")); p++)
		n++;
	CHECK(n == 1, "syntax errors stop the build after parsing: %d errors\n%s", n, errs);
	free(errs);

	text = NET("conv3d\nrelu\nc = relu\nc = relu\ndense(q)\n");
	g = load(text, strlen(text), 0, &errs);
	CHECK(strstr(errs, "t.net:4:1: error: unknown op 'conv3d'") && strstr(errs, "t.net:7:1: error: 'c' is already")
		      && strstr(errs, "t.net:6:1: note: 'c' was defined here") && strstr(errs, "t.net:8:7: error: unknown name"),
	      "every semantic error:\n%s", errs);
	free(errs);
	ir_graph_free(g);
}

/* Random bytes and random cuts of a good file: an error or a graph, never a crash. */
static void test_fuzz(void)
{
	const char *good = NET("conv2d(2, 3)\nrelu\nflatten\ndense(4)\n");
	for (int i = 0; i < 200; i++) {
		char buf[256];
		size_t len = strlen(good);
		memcpy(buf, good, len);
		for (int j = (int)tu_below(4); j >= 0; j--)
			buf[tu_below(len)] = (char)tu_below(256);
		if (tu_below(2))
			len = (size_t)tu_below(len);
		char *errs;
		Graph *g = load(buf, len, 0, &errs);
		CHECK(g || strstr(errs, "error:"), "no graph and no error for fuzz case %d", i);
		ir_graph_free(g);
		free(errs);
	}
}

static void test_files(void)
{
	char *errs;
	size_t n;
	FILE *f = open_memstream(&errs, &n);
	Graph *g = fe_load_file("/", 0, f);
	g = g ? g : fe_load_file("/nonexistent/x.net", 0, f);
	fclose(f);
	CHECK(!g, "a directory or missing file builds");
	CHECK(strstr(errs, "/: error: cannot read '/': Is a directory"), "directory:\n%s", errs);
	CHECK(strstr(errs, "cannot read '/nonexistent/x.net': No such file"), "missing:\n%s", errs);
	free(errs);
}

int main(void)
{
	tu_start("test_fe_parser");
	test_mnist_model();
	test_random_sizes();
	test_all_layers();
	test_errors();
	test_recovery();
	test_fuzz();
	test_files();
	return tu_finish("test_fe_parser");
}
