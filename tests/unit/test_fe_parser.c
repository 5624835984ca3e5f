/* test_fe_parser.c: the frontend from .net text to forward graphs, and its error messages. */
#include "frontend/frontend.h"
#include "tests/unit/test_util.h"

/* Builds text named t.net, capturing the error stream into *errs (caller frees). */
static Graph *load_limited(const char *text, size_t len, int64_t batch, int max_errors, char **errs)
{
	size_t n;
	FILE *f = open_memstream(errs, &n);
	Graph *g = fe_load_string("t.net", text, len, batch, max_errors, f);
	fclose(f);
	return g;
}

static Graph *load(const char *text, size_t len, int64_t batch, char **errs)
{
	return load_limited(text, len, batch, DIAG_MAX_ERRORS, errs);
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
	Graph *g = fe_load_file(path, 0, DIAG_MAX_ERRORS, stdout);
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

	g = fe_load_file(path, 7, DIAG_MAX_ERRORS, stdout);
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

/* Word arguments: bare, by keyword or position, default the list's first word, stored as the
 * word's index. */
static void test_word_args(void)
{
	const char *text = "network w { input x: f32[b, 6]; input y: i32[b]\n"
			   "g0 = gelu; g1 = gelu(approximate=tanh); g2 = gelu(tanh); g3 = gelu(approximate=none)\n"
			   "loss cross_entropy(g3, y) }\n";
	char *errs;
	Graph *g = load(text, strlen(text), 2, &errs);
	CHECK(g, "word arguments:\n%s", errs);
	free(errs);
	if (!g)
		return;
	static const double want[4] = {0, 1, 1, 0};
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof name, "g%d", i);
		const Node *n = node(g, name);
		CHECK(n && n->op == OP_gelu && n->attr[0] == want[i], "%s: approximate %g", name, n ? n->attr[0] : -1);
	}
	ir_graph_free(g);
}

typedef struct {
	const char *text;
	const char *want; /* the first error line, after "t.net:" */
} ErrorCase;

#define NET(body) "network m {\ninput x: f32[b, 1, 8, 8]\ninput y: i32[b]\n" body "loss cross_entropy(y)\n}\n"

static const ErrorCase errors[] = {
	{NET("a = conv2d(32, kernel=3 relu\n"), "4:25: error: expected ')' or ',' before 'relu'"},
	{NET("conv3d(3)\n"), "4:1: error: unknown op 'conv3d'; did you mean 'conv2d'?"},
	{NET("ReLU\n"), "4:1: error: unknown op 'ReLU'; did you mean 'relu'?"},
	{NET("maxpool2d(2)\n"), "4:1: error: unknown op 'maxpool2d'; did you mean 'max_pool2d'?"},
	{NET("frobnicate\n"), "4:1: error: unknown op 'frobnicate' (`netc layers` lists the layers)"},
	{NET("") "train {\n optimizer = adan(lr=1)\n}\n", "7:14: error: unknown optimizer 'adan'; did you mean 'adam'?"},
	{NET("") "train {\n schedule = cosin\n}\n", "7:13: error: unknown schedule 'cosin'; did you mean 'cosine'?"},
	{NET("") "train {\n schedule = linear\n}\n", "7:13: error: unknown schedule 'linear'\n"},
	{NET("gelu(approximate=fast)\n"), "4:18: error: argument 'approximate' of gelu must be one of none, tanh, got 'fast'"},
	{NET("gelu(1)\n"), "4:6: error: argument 'approximate' of gelu must be one of none, tanh"},
	{NET("conv2d(4, kernal=3)\n"), "4:11: error: unknown argument 'kernal' for conv2d; did you mean 'kernel'?"},
	{NET("conv2d(4, 3, strides=2)\n"), "4:14: error: unknown argument 'strides' for conv2d; did you mean 'stride'?"},
	{NET("conv2d(4, 3, dilaton=2)\n"), "4:14: error: unknown argument 'dilaton' for conv2d; did you mean 'dilation'?"},
	{NET("conv2d(4, 3, shape=2)\n"), "4:14: error: unknown argument 'shape' for conv2d\n"},
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
	{NET("") "train {\n optimiser = sgd(lr=1)\n}\n", "7:2: error: unknown key 'optimiser' in train section; did you mean 'optimizer'?"},
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

static int count_errors(const char *errs)
{
	int n = 0;
	for (const char *p = errs; (p = strstr(p, "error:")); p++)
		n++;
	return n;
}

/* Each case fails to load at the given batch with exactly one error, its first line cases[i].want. */
static void expect_only_errors(const ErrorCase *cases, size_t n, int64_t batch)
{
	for (size_t i = 0; i < n; i++) {
		char *errs, want[256];
		Graph *g = load(cases[i].text, strlen(cases[i].text), batch, &errs);
		snprintf(want, sizeof want, "t.net:%s", cases[i].want);
		CHECK(!g && !strncmp(errs, want, strlen(want)) && count_errors(errs) == 1,
		      "case %zu: want only\n  %s\ngot\n%s", i, want, errs);
		ir_graph_free(g);
		free(errs);
	}
}

/* At most DIAG_MAX_ERRORS errors, then one line; the loader's max_errors changes the limit (0: none). */
static void test_error_limit(void)
{
	int broken = DIAG_MAX_ERRORS + 5 + (int)tu_below(20);
	size_t cap = (size_t)broken * 16 + 64, len = 0;
	char *text = malloc(cap);
	len += (size_t)snprintf(text + len, cap - len, "network m {\n");
	for (int i = 0; i < broken; i++)
		len += (size_t)snprintf(text + len, cap - len, "relu @%d\n", i);
	len += (size_t)snprintf(text + len, cap - len, "}\n");
	int limits[3] = {-1, 1 + (int)tu_below(DIAG_MAX_ERRORS), 0};
	for (int k = 0; k < 3; k++) {
		int shown = limits[k] < 0 ? DIAG_MAX_ERRORS : limits[k] == 0 ? broken : limits[k];
		char *errs;
		Graph *g = load_limited(text, len, 0, limits[k] < 0 ? DIAG_MAX_ERRORS : limits[k], &errs);
		const char *fatal = strstr(errs, "t.net: fatal error: too many errors emitted, stopping now (use --max-errors N)");
		CHECK(!g && count_errors(errs) == shown + (shown < broken), "limit %d: %d errors of %d\n%s", limits[k],
		      count_errors(errs), broken, errs);
		CHECK((fatal != NULL) == (shown < broken) && (!fatal || !strstr(strchr(fatal, '\n'), "error:")),
		      "limit %d: the last line says the rest is left out\n%s", limits[k], errs);
		free(errs);
	}
	free(text);
}

/* A failed statement is reported once: what uses it, and the network's loss, stay silent. */
static void test_no_follow_on(void)
{
	static const ErrorCase cases[] = {
		{NET("c = conv3d(4)\nrelu(c)\nd = relu(c)\nflatten(d)\ndense(10)\n"), "4:5: error: unknown op 'conv3d'"},
		{"network m {\ninput x: f32[b, 4]\ninput y: i32[b]\nloss l = cross_entropy3(x, y)\n}\n",
		 "4:10: error: unknown op 'cross_entropy3'"},
		{"network m {\ninput x: f32[b, 4]\ninput y: i32[b]\nloss 3 + 4\n}\n",
		 "4:8: error: expected a layer such as relu or dense(10)"},
		{NET("const k = 4 / 0\nflatten\ndense(k)\nrelu\nconst j = k + 1\n"), "4:13: error: division by zero"},
		{"network m {\ninput x: f32[b, 4]\ninput x: i32[b]\nloss mean(x)\n}\n", "3:7: error: 'x' is already defined"},
		{NET("flatten\nc = dense(1e3)\nrelu(c)\n"), "5:11: error: argument 'out_features' of dense must be"},
	};
	expect_only_errors(cases, sizeof cases / sizeof cases[0], 2);
}

/* A UTF-8 byte-order mark at the start is no character of the file: skipped, columns after it. */
static void test_bom(void)
{
	const char *body = NET("flatten\ndense(10)\n");
	size_t len = strlen(body);
	char *text = malloc(len + 4);
	memcpy(text, "\xef\xbb\xbf", 3);
	memcpy(text + 3, body, len + 1);
	char *errs;
	Graph *g = load(text, len + 3, 2, &errs);
	CHECK(g && !*errs, "a file with a byte-order mark:\n%s", errs);
	ir_graph_free(g);
	free(errs);
	const char *bad = "\xef\xbb\xbfnetwork m @\n";
	g = load(bad, strlen(bad), 2, &errs);
	CHECK(!g && !strncmp(errs, "t.net:1:11: error: unexpected character '@'", 43) && count_errors(errs) == 1,
	      "columns count from after the mark:\n%s", errs);
	free(errs);
	free(text);
}

/* A float input of another type is stored as declared and read through one cast to f32. */
static void test_input_dtypes(void)
{
	const DType types[] = {DT_F16, DT_BF16, DT_F64, DT_F32};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		char text[512];
		snprintf(text, sizeof text, "network m {\ninput x: %s[b, 2, 6, 6]\ninput y: i32[b]\n"
			 "conv2d(3, 3)\nrelu\nflatten\nz = dense(10)\nw = add(z, z)\nloss cross_entropy(y)\n}\n",
			 dtype_name(types[i]));
		char *errs;
		Graph *g = load(text, strlen(text), 1 + (int64_t)tu_below(8), &errs);
		CHECK(g, "%s input:\n%s", dtype_name(types[i]), errs);
		free(errs);
		if (!g)
			continue;
		const Node *x = &g->node[g->image], *cast = node(g, "x.f32");
		CHECK(x->op == OP_input && x->dtype == types[i], "%s: the input keeps its dtype", dtype_name(types[i]));
		CHECK((cast != NULL) == (types[i] != DT_F32) && count_op(g, OP_cast) == (types[i] != DT_F32),
		      "%s: one cast", dtype_name(types[i]));
		CHECK(!cast || (cast->dtype == DT_F32 && cast->in[0] == g->image && shape_eq(&cast->shape, &x->shape)),
		      "%s: the cast is f32 of the input's shape", dtype_name(types[i]));
		for (int k = 0; k < g->nnodes; k++)
			CHECK(k == g->image || k == g->label || g->node[k].dtype == DT_F32, "%s: %s is %s",
			      dtype_name(types[i]), g->node[k].name, dtype_name(g->node[k].dtype));
		ir_graph_free(g);
	}
}

/* Tensors past 2^40 elements: an error at the layer that makes them, never a wrapped size. */
static void test_size_limits(void)
{
	static const ErrorCase cases[] = {
		{"network m {\ninput x: f32[b, 3, 1024, 1024]\ninput y: i32[b]\nconv2d(2048, 1)\nflatten\ndense(10)\n"
		 "loss cross_entropy(y)\n}\n", "4:1: error: conv2d: the result [1024, 2048, 1024, 1024] has more than 2^40 elements"},
		{NET("conv2d(8, 3, padding=1000000)\nflatten\n"), "4:1: error: conv2d: the result [1024, 8, 2000006, 2000006] has more than 2^40 elements"},
		{NET("conv2d(8, 3, padding=3000000000)\nflatten\n"), "4:1: error: conv2d: pad_h must be at most 2147483647, got 3000000000"},
		{NET("conv2d(1000, kernel=1099511627776)\nflatten\n"), "4:1: error: parameter conv2d_1.weight would be [1000, 1, 1099511627776, 1099511627776], more than 2^40 elements"},
		{NET("conv2d(4, 3, dilation=2147483647)\nflatten\n"), "4:1: error: conv2d: kernel 3x3 (dilation 2147483647x2147483647) is larger"},
		{NET("flatten\ndense(1099511627776)\n"), "5:1: error: parameter dense_1.weight would be [1099511627776, 64], more than 2^40 elements"},
		{NET("reshape(1099511627776, 1099511627776, -1)\n"), "4:1: error: reshape cannot make 65536 elements"},
		{NET("max_pool2d(3000000000)\n"), "4:1: error: max_pool2d: k_h must be at most 2147483647, got 3000000000"},
	};
	expect_only_errors(cases, sizeof cases / sizeof cases[0], 1024);
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
	Graph *g = fe_load_file("/", 0, DIAG_MAX_ERRORS, f);
	g = g ? g : fe_load_file("/nonexistent/x.net", 0, DIAG_MAX_ERRORS, f);
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
	test_word_args();
	test_errors();
	test_recovery();
	test_error_limit();
	test_no_follow_on();
	test_bom();
	test_input_dtypes();
	test_size_limits();
	test_fuzz();
	test_files();
	return tu_finish("test_fe_parser");
}
