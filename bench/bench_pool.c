/* bench_pool.c: times the backward of max_pool2d (every kernel the training step runs for it)
 * against avg_pool2d_grad of the same shape, on the host with 2 threads, and prints a table.
 *
 *     build/bench_pool [repeats]        (default 15; the median is printed)
 *
 * The shapes are cifar10_tf's and alexnet's pool inputs (3x3 stride 2 as the models have them,
 * and 2x2 stride 2 on the same inputs), in NCHW and in NHWC (the layout attribute: what the
 * layout pass keeps after NHWC convolutions). Not a test. */
#include "ir/grad_context.h"
#include "runtime/clock.h"
#include "runtime/threadpool.h"
#include "tests/unit/cg_harness.h"

typedef struct {
	const char *model;
	int64_t n, c, h, w;
	int k, s, pad;
} PoolCase;

static const PoolCase cases[] = {
	{"cifar10_tf pool1", 128, 64, 24, 24, 3, 2, 1},
	{"cifar10_tf pool2", 128, 64, 12, 12, 3, 2, 1},
	{"alexnet pool1", 32, 64, 55, 55, 3, 2, 0},
	{"alexnet pool2", 32, 192, 27, 27, 3, 2, 0},
	{"alexnet pool5", 32, 256, 13, 13, 3, 2, 0},
	{"cifar10_tf pool1", 128, 64, 24, 24, 2, 2, 0},
	{"alexnet pool1", 32, 64, 55, 55, 2, 2, 0},
	{"alexnet pool2", 32, 192, 27, 27, 2, 2, 0},
};

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The backward of pool node y over x with incoming gradient dy: the op's own gradient rule, so
 * the kernels timed are those autodiff makes for the training step. */
static void backward(CgHarness *h, int y, int dy)
{
	Graph *g = h->g;
	GradContext gc = {g, g->nnodes, malloc((size_t)g->nnodes * sizeof(int)), malloc((size_t)g->nnodes)};
	if (!gc.grad || !gc.needs)
		abort();
	for (int i = 0; i < gc.n; i++)
		gc.grad[i] = -1, gc.needs[i] = 1;
	Node n = g->node[y]; /* a copy: the rule adds nodes */
	ir_ops[n.op].grad(&gc, &n, dy);
	free(gc.grad);
	free(gc.needs);
}

/* Median milliseconds of the case's backward kernels (leaves random), or -1 on failure. */
static double time_backward(const PoolCase *pc, OpId fwd, int layout, ThreadPool *tp, int repeats)
{
	CgHarness *h = ch_new(ir_ops[fwd].name);
	char dims[64];
	if (layout == LAYOUT_NHWC)
		snprintf(dims, sizeof dims, "%lld,%lld,%lld,%lld", (long long)pc->n, (long long)pc->h, (long long)pc->w,
			 (long long)pc->c);
	else
		snprintf(dims, sizeof dims, "%lld,%lld,%lld,%lld", (long long)pc->n, (long long)pc->c, (long long)pc->h,
			 (long long)pc->w);
	double attr[IR_MAX_ATTRS] = {pc->k, pc->k, pc->s, pc->s, pc->pad, pc->pad};
	attr[ir_attr_index(fwd, "layout")] = layout;
	int x = ch_param(h, DT_F32, dims);
	int y = ch_op(h, fwd, attr, x); /* only for dy's shape: not timed */
	const Shape *ys = &h->g->node[y].shape;
	snprintf(dims, sizeof dims, "%lld,%lld,%lld,%lld", (long long)ys->dim[0], (long long)ys->dim[1],
		 (long long)ys->dim[2], (long long)ys->dim[3]);
	int dy = ch_param(h, DT_F32, dims);
	backward(h, y, dy);
	double ms = -1;
	CgOutput out;
	if (!ch_compile(h, false, &out))
		goto done;
	size_t bytes = ((size_t)h->g->arena_bytes + 63) / 64 * 64 + 64;
	uint8_t *arena = aligned_alloc(64, bytes);
	void *so = arena ? ch_load(h, &out) : NULL;
	if (so) {
		for (int id = 0; id < h->g->nnodes; id++) { /* random leaves */
			const Node *n = &h->g->node[id];
			if (ir_is_leaf(n->op) && n->offset >= 0)
				for (int64_t i = 0; i < shape_numel(&n->shape); i++)
					ch_write(arena + n->offset + i * 4, n->dtype, ch_leaf_value(h, n, i));
		}
		double *t = malloc((size_t)repeats * sizeof *t);
		for (int r = 0; r < repeats + 1; r++) { /* the first run warms the caches and pages */
			double total = 0;
			for (int k = 0; k < out.nkernels; k++) {
				if (out.kernels[k].node == y)
					continue;
				RtKernelFn fn;
				*(void **)&fn = dlsym(so, out.kernels[k].name);
				double t0 = rt_clock_s();
				rt_pool_run(tp, fn, arena, out.kernels[k].grid);
				total += rt_clock_s() - t0;
			}
			if (r)
				t[r - 1] = total * 1e3;
		}
		qsort(t, (size_t)repeats, sizeof *t, by_value);
		ms = t[repeats / 2];
		free(t);
		dlclose(so);
	}
	free(arena);
	cg_output_free(&out);
done:
	ch_free(h);
	return ms;
}

int main(int argc, char **argv)
{
	int repeats = argc > 1 ? atoi(argv[1]) : 15;
	if (repeats < 1)
		repeats = 1;
	ch_start("bench_pool");
	ThreadPool *tp = rt_pool_new(2);
	if (!tp)
		return 1;
	printf("pool backward, host, 2 threads, median of %d\n", repeats);
	printf("| input (N, C, H, W) | window | layout | max backward ms | avg backward ms | max / avg |\n"
	       "| --- | --- | --- | --- | --- | --- |\n");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int layout = LAYOUT_NCHW; layout <= LAYOUT_NHWC; layout++) {
			const PoolCase *pc = &cases[i];
			double mx = time_backward(pc, OP_max_pool2d, layout, tp, repeats);
			double av = time_backward(pc, OP_avg_pool2d, layout, tp, repeats);
			printf("| %s [%lld, %lld, %lld, %lld] | %dx%d/%d pad %d | %s | %.2f | %.2f | %.2f |\n", pc->model,
			       (long long)pc->n, (long long)pc->c, (long long)pc->h, (long long)pc->w, pc->k, pc->k, pc->s,
			       pc->pad, layout == LAYOUT_NHWC ? "NHWC" : "NCHW", mx, av, mx / av);
			fflush(stdout);
		}
	rt_pool_free(tp);
	return 0;
}
