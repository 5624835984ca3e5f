/* test_cg_reduce.c: sum and mean over axis masks (with and without keepdims), softmax and
 * log_softmax and their gradients along several axes, nll_loss and cross_entropy and their
 * gradients (mean and sum), compiled for the host against the float64 reference. */
#include "tests/unit/cg_harness.h"
#include "tests/unit/test_util.h"

static void run(CgHarness *h)
{
	tu_failures += ch_run(h);
	ch_free(h);
}

static void reduce(OpId op, const char *dims, unsigned mask, int keepdims, DType dt)
{
	char name[96];
	snprintf(name, sizeof name, "%s [%s] axes 0x%x keepdims %d %s", ir_ops[op].name, dims, mask, keepdims, dtype_name(dt));
	CgHarness *h = ch_new(name);
	/* A sum of mixed-sign terms can cancel to near zero, where rounding alone exceeds a relative
	 * tolerance: errors are relative to at least the output's spread, sqrt(count E[x^2]) for a
	 * sum of count leaves of the default fill (E[x^2] = 0.37), divided by count for a mean. */
	int x = ch_param(h, dt, dims);
	const Shape *xs = &h->g->node[x].shape;
	int64_t count = 1;
	for (int axis = 0; axis < xs->rank; axis++)
		if (mask >> axis & 1)
			count *= xs->dim[axis];
	double spread = sqrt(0.37 * (double)count);
	h->scale = op == OP_mean ? spread / (double)count : spread;
	double attr[2] = {mask, keepdims};
	ch_op(h, op, attr, x);
	run(h);
}

static void reductions(void)
{
	for (unsigned mask = 1; mask < 8; mask++)
		for (int k = 0; k < 2; k++)
			reduce(k ? OP_mean : OP_sum, "5,7,9", mask, (mask + k) & 1, DT_F32);
	reduce(OP_sum, "64,64,24,24", 0xd, 0, DT_F32); /* a bias gradient */
	reduce(OP_mean, "3,4,5,6", 0xa, 1, DT_F32);
	reduce(OP_sum, "100003", 1, 0, DT_F32);
	reduce(OP_sum, "300,2", 1, 0, DT_F32);
	reduce(OP_mean, "8,33", 2, 0, DT_F16);
	reduce(OP_sum, "6,17", 1, 1, DT_F64);
}

/* op along axis of x, and both gradients with y from the forward op */
static void softmax(const char *dims, int axis)
{
	static const OpId fwd[2] = {OP_softmax, OP_log_softmax}, bwd[2] = {OP_softmax_grad, OP_log_softmax_grad};
	for (int k = 0; k < 2; k++) {
		char name[96];
		snprintf(name, sizeof name, "%s [%s] axis %d", ir_ops[fwd[k]].name, dims, axis);
		CgHarness *h = ch_new(name);
		double attr[1] = {axis};
		int x = ch_param(h, DT_F32, dims);
		ch_range(h, x, -8, 8);
		int y = ch_op(h, fwd[k], attr, x);
		ch_op(h, bwd[k], attr, ch_param(h, DT_F32, dims), y);
		run(h);
	}
}

static void softmaxes(void)
{
	softmax("7,13", 1);
	softmax("4,5,6", 1);
	softmax("4,5,6", 0);
	softmax("3,1000", 1);
	softmax("10", 0);
	softmax("2000,3", 1);
}

/* loss, and its gradient for a random dloss */
static void loss(OpId op, OpId grad, int64_t n, int classes, int reduction, bool bad_labels)
{
	char name[96];
	snprintf(name, sizeof name, "%s [%lld, %d] reduction %d%s", ir_ops[op].name, (long long)n, classes, reduction,
		 bad_labels ? " bad labels" : "");
	CgHarness *h = ch_new(name);
	char dims[64];
	snprintf(dims, sizeof dims, "%lld,%d", (long long)n, classes);
	int x = ch_param(h, DT_F32, dims), l = ch_labels(h, n, classes);
	/* nll_loss reads log-probabilities: negative, so that a mean over many rows cannot cancel to
	 * near zero, where f32 rounding alone exceeds a relative tolerance */
	ch_range(h, x, -6, op == OP_nll_loss ? -0.01 : 6);
	if (bad_labels) {
		double *v = malloc((size_t)n * sizeof *v);
		for (int64_t i = 0; i < n; i++)
			v[i] = i % 3 == 0 ? -1 : i % 3 == 1 ? classes : (double)(ch_next() % (uint64_t)classes);
		ch_set(h, l, v);
		free(v);
	}
	double attr[1] = {reduction};
	ch_op(h, op, attr, x, l);
	ch_op(h, grad, attr, ch_param(h, DT_F32, ""), x, l);
	run(h);
}

static void losses(void)
{
	for (int r = 0; r < 2; r++) {
		loss(OP_nll_loss, OP_nll_loss_grad, 16, 10, r, false);
		loss(OP_cross_entropy, OP_cross_entropy_grad, 16, 10, r, false);
		loss(OP_cross_entropy, OP_cross_entropy_grad, 67, 3, r, false);
		loss(OP_nll_loss, OP_nll_loss_grad, 1000, 10, r, false);
		loss(OP_cross_entropy, OP_cross_entropy_grad, 1000, 37, r, false);
	}
	loss(OP_nll_loss, OP_nll_loss_grad, 9, 5, 0, true);
	loss(OP_cross_entropy, OP_cross_entropy_grad, 9, 5, 1, true);
}

/* The bias-gradient sum's inner loop (contiguous, reassociable) must vectorize. */
static void vectorized(void)
{
	CgHarness *h = ch_new("vectorized");
	double attr[2] = {0xd, 0};
	ch_op(h, OP_sum, attr, ch_param(h, DT_F32, "64,64,24,24"));
	char *ir = ch_ir(h);
	CHECK(ir && strstr(ir, "fadd reassoc contract <"), "vectorized: the sum has no vector accumulation");
	free(ir);
	ch_free(h);
}

int main(void)
{
	ch_start("test_cg_reduce");
	reductions();
	softmaxes();
	losses();
	vectorized();
	return tu_finish("test_cg_reduce");
}
