/* check.c: `netc check`, one training step compiled against the float64 reference interpreter.
 *
 * Each node is checked on its own: the interpreter evaluates it from the compiled values of its
 * inputs (the leaves as they were before the step), so an error points at the kernel that made it
 * rather than spreading downstream. The whole step is then interpreted from the same start and
 * the two losses are compared. */
#ifndef NETC_RUNTIME_ONLY
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/ops.h"
#include "runtime/image_dtype.h"
#include "runtime/rt.h"
#include "tools/commands.h"
#include "tools/model.h"

static double half_to_double(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
	return h & 0x8000 ? -v : v;
}

static double element(const void *p, DType t, int64_t i)
{
	switch (t) {
	case DT_F32: return ((const float *)p)[i];
	case DT_F64: return ((const double *)p)[i];
	case DT_I32: return ((const int32_t *)p)[i];
	case DT_F16: return half_to_double(((const uint16_t *)p)[i]);
	case DT_BF16: {
		uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
		float f;
		memcpy(&f, &bits, 4);
		return f;
	}
	default: return NAN;
	}
}

/* A buffer's values as doubles, read from whatever device the session runs on. */
static double *read_values(Session *s, int buf, const Node *n)
{
	int64_t count = shape_numel(&n->shape);
	size_t bytes = (size_t)count * dtype_size(n->dtype);
	void *raw = malloc(bytes ? bytes : 1);
	double *v = malloc((count ? count : 1) * sizeof *v);
	if (!raw || !v)
		abort();
	rt_read(s, buf, raw, bytes);
	for (int64_t i = 0; i < count; i++)
		v[i] = element(raw, n->dtype, i);
	free(raw);
	return v;
}

static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* A float input's values: uniform in [-2, 2) away from zero. */
static void fill_float(Session *s, int buf, const Node *n, uint64_t *st)
{
	int64_t count = shape_numel(&n->shape);
	float *v = malloc(count * sizeof *v);
	if (!v)
		abort();
	for (int64_t i = 0; i < count; i++) {
		double u = (next_random(st) >> 11) * 0x1.0p-53;
		v[i] = (float)(u < 0.5 ? -2 + 3.8 * u : 0.1 + 3.8 * (u - 0.5));
	}
	rt_write_image(s, buf, v, count);
	free(v);
}

/* i32 values uniform in [0, 8): indices for an embedding's first rows (a larger index reads
 * zeros, which the check covers as well). */
static void fill_indices(Session *s, int buf, const Node *n, uint64_t *st)
{
	int64_t count = shape_numel(&n->shape);
	int32_t *v = malloc(count * sizeof *v);
	if (!v)
		abort();
	for (int64_t i = 0; i < count; i++)
		v[i] = (int32_t)(next_random(st) % 8);
	rt_write(s, buf, v, count * sizeof *v);
	free(v);
}

/* Images (or i32 indices), float targets and further inputs from fill_float (fill_indices for
 * i32 ones); class labels uniform over the classes. */
static void fill_inputs(Session *s, const Bundle *b, const Graph *g, uint64_t seed)
{
	uint64_t st = seed * 2654435761u + 17;
	if (g->node[g->image].dtype == DT_I32)
		fill_indices(s, b->image, &g->node[g->image], &st);
	else
		fill_float(s, b->image, &g->node[g->image], &st);
	if (g->label >= 0 && g->node[g->label].dtype != DT_I32) {
		fill_float(s, b->label, &g->node[g->label], &st);
	} else if (g->label >= 0 && g->node[g->label].shape.rank > 1) {
		fill_indices(s, b->label, &g->node[g->label], &st);
	} else if (g->label >= 0) {
		int32_t *label = malloc(b->batch * sizeof *label);
		if (!label)
			abort();
		int64_t classes = g->node[g->output].shape.dim[g->node[g->output].shape.rank - 1];
		for (int64_t i = 0; i < b->batch; i++)
			label[i] = (int32_t)(next_random(&st) % (uint64_t)classes);
		rt_write(s, b->label, label, b->batch * sizeof *label);
		free(label);
	}
	for (int k = 2; k < b->ninputs; k++) { /* the inputs past image and label, as the image */
		const Node *x = &g->node[b->buf[b->inputs[k]].node];
		if (x->dtype == DT_I32)
			fill_indices(s, b->inputs[k], x, &st);
		else
			fill_float(s, b->inputs[k], x, &st);
	}
	float lr = (float)g->train.lr;
	/* a first row past 0, so that dropout's shard offset is checked too */
	int32_t rng[RT_RNG_WORDS] = {(int32_t)(seed & 0x7fffffff), 1, 5};
	rt_write(s, b->lr, &lr, sizeof lr);
	rt_write(s, b->rng, rng, sizeof rng);
	float scale = 1024; /* fp16 loss scaling: a scale that keeps the checked gradients in range */
	rt_write(s, b->loss_scale, &scale, sizeof scale);
}

/* The largest |difference| over the largest |want|, or over floor when that is larger. */
static double relative_error(const double *got, const double *want, int64_t count, double floor)
{
	double diff = 0, scale = floor;
	for (int64_t i = 0; i < count; i++) {
		double d = fabs(got[i] - want[i]);
		if (!(d <= diff))
			diff = d; /* NaN wins */
		scale = fmax(scale, fabs(want[i]));
	}
	return diff / fmax(scale, 1e-30);
}

typedef struct {
	const Graph *g;
	const Bundle *b;
	Session *s;
	int *buf_of;       /* node id -> bundle buffer */
	double **before;   /* leaves before the step */
	double **after;    /* every value after the step */
} Check;

static double *const_value(const Node *n)
{
	double *v = malloc(sizeof *v);
	if (!v)
		abort();
	*v = ir_const_value(n);
	return v;
}

static void snapshot(Check *c, double **values, bool leaves_only)
{
	for (int i = 0; i < c->g->nnodes; i++) {
		const Node *n = &c->g->node[i];
		int k = c->buf_of[i];
		if (n->op == OP_const)
			values[i] = const_value(n);
		else if (k >= 0 && (!leaves_only || ir_is_leaf(n->op)))
			values[i] = read_values(c->s, k, n);
		else if (n->op == OP_assign && !leaves_only && c->buf_of[n->in[0]] >= 0)
			values[i] = read_values(c->s, c->buf_of[n->in[0]], n);
	}
}

/* The loosest of tol and the tolerances of node m's float inputs' dtypes and its own. */
static double loosest(const Graph *g, const Node *m, double tol)
{
	if (dtype_tolerance(m->dtype) > tol)
		tol = dtype_tolerance(m->dtype);
	for (int k = 0; k < m->nin; k++) {
		DType t = g->node[m->in[k]].dtype;
		if (dtype_is_float(t) && dtype_tolerance(t) > tol)
			tol = dtype_tolerance(t);
	}
	return tol;
}

/* The tolerance of node n: the loosest dtype among n, the other members of its fused group and
 * their inputs. The kernel keeps its members at their compute type (f32 for halves) where the
 * interpreter rounds each to its dtype, so a group output inherits a half member's rounding: a
 * cast from f16 to f32 from its fused producer, a float32 weight gradient and its momentum
 * update from the bf16 transforms of the Winograd weight GEMM fused before them. */
static double node_tolerance(const Graph *g, const Node *n)
{
	double tol = loosest(g, n, 0);
	for (int i = 0; i < g->nnodes && n->group >= 0; i++)
		if (g->node[i].group == n->group)
			tol = loosest(g, &g->node[i], tol);
	return tol;
}

/* Checks every node of the step from compiled inputs; returns the number that fail. A node inside
 * a fused kernel has no storage to read: the interpreter's value of it stands in for its users. */
static int check_nodes(Check *c)
{
	const Graph *g = c->g;
	int failed = 0;
	double **inner = calloc(g->nnodes, sizeof *inner);
	if (!inner)
		abort();
	printf("  %-36s %-20s %11s %10s\n", "node", "op", "rel.error", "tolerance");
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (!(n->programs & PROG_TRAIN) || ir_is_leaf(n->op))
			continue;
		const double *in[IR_MAX_INPUTS];
		for (int k = 0; k < n->nin; k++) {
			int j = n->in[k];
			in[k] = ir_is_leaf(g->node[j].op) ? c->before[j] : c->after[j] ? c->after[j] : inner[j];
		}
		int64_t count = shape_numel(&n->shape);
		double *want = malloc((count ? count : 1) * sizeof *want);
		if (!want)
			abort();
		ir_eval_node(g, n, in, want);
		if (!c->after[i]) {
			printf("  %-36.36s %-20s %11s\n", n->name, ir_ops[n->op].name, "(fused)");
			inner[i] = want;
			continue;
		}
		/* a sum or mean that cancels (a row of softmax minus one-hot sums to 0) is measured
		 * against the size of its terms, which is what its rounding scales with */
		double floor = 0;
		if (n->op == OP_sum || n->op == OP_mean)
			for (int64_t k = 0; k < shape_numel(&g->node[n->in[0]].shape); k++)
				floor = fmax(floor, fabs(in[0][k]));
		double err = relative_error(c->after[i], want, count, floor);
		double tol = node_tolerance(g, n);
		bool ok = err <= tol;
		failed += !ok;
		printf("  %-36.36s %-20s %11.3g %10.1g  %s\n", n->name, ir_ops[n->op].name, err, tol, ok ? "ok" : "FAIL");
		free(want);
	}
	for (int i = 0; i < g->nnodes; i++)
		free(inner[i]);
	free(inner);
	return failed;
}

/* The whole step in the interpreter from the same start; returns its loss. */
static double reference_loss(Check *c)
{
	const Graph *g = c->g;
	double **values = calloc(g->nnodes, sizeof *values);
	if (!values)
		abort();
	for (int i = 0; i < g->nnodes; i++) {
		int64_t count = shape_numel(&g->node[i].shape);
		values[i] = malloc((count ? count : 1) * sizeof **values);
		if (!values[i])
			abort();
		if (c->before[i])
			memcpy(values[i], c->before[i], count * sizeof **values);
	}
	ir_interp(g, PROG_TRAIN, values);
	double loss = values[g->loss][0];
	for (int i = 0; i < g->nnodes; i++)
		free(values[i]);
	free(values);
	return loss;
}

static void free_values(double **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int cmd_check(const Args *a, const CompileOptions *o)
{
	int64_t batch = a->batch ? a->batch : 8;
	Bundle b;
	Graph *g;
	if (model_is_bundle(a->model)) {
		fprintf(stderr, "netc check: error: %s is a compiled bundle; check needs the .net file\n", a->model);
		return 1;
	}
	if (!model_compile(a->model, batch, o, &b, &g))
		return 1;
	char err[512];
	Session *s = rt_open(&b, a->device, (int)a->threads, err, sizeof err);
	if (!s) {
		fprintf(stderr, "netc: error: %s\n", err);
		bundle_free(&b);
		ir_graph_free(g);
		return 1;
	}
	Check c = {g, &b, s, calloc(g->nnodes, sizeof(int)), calloc(g->nnodes, sizeof(double *)),
		   calloc(g->nnodes, sizeof(double *))};
	if (!c.buf_of || !c.before || !c.after)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		c.buf_of[i] = -1;
	for (int k = 0; k < b.nbuf; k++)
		c.buf_of[b.buf[k].node] = k;

	printf("check %s: one training step on %s, batch %lld, seed %llu\n", g->name, rt_device_info(s),
	       (long long)batch, (unsigned long long)a->seed);
	rt_init_params(s, a->seed);
	fill_inputs(s, &b, g, a->seed);
	snapshot(&c, c.before, true);
	rt_run(s, PROG_TRAIN);
	snapshot(&c, c.after, false);
	int failed = check_nodes(&c);

	float loss;
	rt_read(s, b.loss, &loss, sizeof loss);
	double got = loss, want = reference_loss(&c);
	double loss_err = fabs(got - want) / fmax(fabs(want), 1e-30);
	/* the loss is f32, but a half-precision forward pass rounds on its way there */
	PrecisionKind prec = g->train.precision;
	bool loss_ok = loss_err <= dtype_tolerance(prec == PREC_FP16 ? DT_F16 : prec == PREC_BF16 ? DT_BF16 : g->node[g->loss].dtype);
	printf("loss: compiled %.7g, reference %.7g (relative error %.3g)%s\n", got, want, loss_err,
	       loss_ok ? "" : "  FAIL");
	if (failed || !loss_ok)
		printf("check failed: %d node(s) beyond tolerance%s\n", failed, loss_ok ? "" : ", and the loss");
	else
		printf("check passed: every node within its dtype's tolerance\n");

	free_values(c.before, g->nnodes);
	free_values(c.after, g->nnodes);
	free(c.buf_of);
	rt_close(s);
	bundle_free(&b);
	ir_graph_free(g);
	return failed || !loss_ok ? 1 : 0;
}
#endif /* NETC_RUNTIME_ONLY */
