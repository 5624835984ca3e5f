/* ops_reduce.c: sum and mean over an axis mask, softmax and log_softmax along an axis, the
 * nll_loss and cross_entropy losses, and their gradients. */
#include <math.h>

#include "ir/ops.h"

unsigned ir_reduce_axes(const Node *n) { return (unsigned)n->attr[0]; }

/* reduction 0 = mean, 1 = sum */
bool ir_loss_is_mean(const Node *n) { return n->attr[0] == 0; }

/* ---- sum, mean ---- */

/* A column reduction's slices (ir.h). Rows of at least SLICE_ROWS each, at most SLICES_MAX
 * slices, and only while the outputs are few enough that a work-group per output would leave the
 * GPU idle or read with a stride. */
#define SLICE_ROWS 1024
#define SLICES_MAX 256
#define SLICED_OUTPUTS_MAX 65536
/* Any other sum or mean (a work-group per output: batch norm's per-channel statistics over N, H
 * and W) is sliced while its outputs are fewer than PLANE_GROUPS, into slices of at least
 * PLANE_SLICE elements, so that about PLANE_GROUPS work-groups share the GPU: 32 channels of
 * 32 x 112 x 112 took 32 work-groups of an H200's 132 multiprocessors. Below PLANE_TOTAL elements
 * in all the second kernel's launch outweighs what the idle multiprocessors lose: resnet20, whose
 * largest is 16 channels of 128 x 32 x 32, stepped 3% slower with all of them sliced (in a build
 * with other changes too). */
#define PLANE_GROUPS 1024
#define PLANE_SLICE 16384
#define PLANE_TOTAL (4 << 20)

int ir_reduce_slices(const Graph *g, const Node *n)
{
	if (n->op != OP_sum && n->op != OP_mean)
		return 1;
	const Shape *x = &op_in(g, n, 0)->shape;
	int64_t m = shape_numel(&n->shape), rows = m ? shape_numel(x) / m : 0, slices;
	if (!ir_reduce_axes(n))
		return 1;
	if (ir_reduce_columns(g, n)) {
		if (m > SLICED_OUTPUTS_MAX || rows < 4 * SLICE_ROWS)
			return 1;
		slices = rows / SLICE_ROWS;
	} else { /* a plane of elements per output */
		if (m >= PLANE_GROUPS || rows < 2 * PLANE_SLICE || shape_numel(x) < PLANE_TOTAL)
			return 1;
		int64_t enough = (PLANE_GROUPS + m - 1) / m;
		slices = rows / PLANE_SLICE < enough ? rows / PLANE_SLICE : enough;
	}
	return slices > SLICES_MAX ? SLICES_MAX : (int)slices;
}

/* the reduced axes a leading prefix, so that the kept ones are contiguous in memory */
bool ir_reduce_columns(const Graph *g, const Node *n)
{
	unsigned axes = ir_reduce_axes(n);
	return axes && !(axes & (axes + 1)) && !(axes >> (op_in(g, n, 0)->shape.rank - 1));
}

bool shape_reduce(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0);
	int64_t axes, keep;
	if (!op_need_float(n, g, 0, err, errlen) || !op_attr_int(n, 0, 0, (1 << x->shape.rank) - 1, &axes, err, errlen) ||
	    !op_attr_int(n, 1, 0, 1, &keep, err, errlen))
		return false;
	Shape s = {0};
	for (int i = 0; i < x->shape.rank; i++)
		if (!(axes >> i & 1))
			s.dim[s.rank++] = x->shape.dim[i];
		else if (keep)
			s.dim[s.rank++] = 1;
	n->shape = s;
	n->dtype = x->dtype;
	return true;
}

/* Linear index in the keepdims-shaped result of element i of x (reduced axes contribute 0). */
static int64_t reduce_index(const Shape *x, unsigned axes, int64_t i)
{
	int64_t off = 0, stride = 1;
	for (int d = x->rank - 1; d >= 0; d--) {
		int64_t c = i % x->dim[d];
		i /= x->dim[d];
		if (!(axes >> d & 1)) {
			off += c * stride;
			stride *= x->dim[d];
		}
	}
	return off;
}

void ref_sum(const Graph *g, const Node *n, const double *const *in, double *out)
{
	const Shape *x = &op_in(g, n, 0)->shape;
	int64_t m = shape_numel(&n->shape), total = shape_numel(x);
	for (int64_t i = 0; i < m; i++)
		out[i] = 0;
	for (int64_t i = 0; i < total; i++)
		out[reduce_index(x, ir_reduce_axes(n), i)] += in[0][i];
}

void ref_mean(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t m = shape_numel(&n->shape);
	double count = (double)shape_numel(&op_in(g, n, 0)->shape) / (double)m;
	ref_sum(g, n, in, out);
	for (int64_t i = 0; i < m; i++)
		out[i] /= count;
}

/* dy reshaped to x's shape with reduced axes kept as 1, then broadcast to x's shape. */
static int spread(Graph *g, const Shape *x, unsigned axes, int dy)
{
	Shape keep = *x;
	double attr[1 + IR_MAX_DIMS];
	for (int i = 0; i < x->rank; i++)
		if (axes >> i & 1)
			keep.dim[i] = 1;
	if (!shape_eq(&g->node[dy].shape, &keep)) {
		op_shape_attrs(&keep, attr);
		dy = ir_emit(g, OP_reshape, &dy, attr);
	}
	if (!shape_eq(&keep, x)) {
		op_shape_attrs(x, attr);
		dy = ir_emit(g, OP_broadcast_to, &dy, attr);
	}
	return dy;
}

void grad_sum(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0];
	Shape xs = g->node[x].shape;
	gc_accumulate(gc, x, spread(g, &xs, ir_reduce_axes(n), dy));
}

void grad_mean(GradContext *gc, const Node *n, int dy)
{
	Graph *g = gc_graph(gc);
	int x = n->in[0];
	Shape xs = g->node[x].shape;
	double count = (double)shape_numel(&xs) / (double)shape_numel(&n->shape);
	int in[2] = {spread(g, &xs, ir_reduce_axes(n), dy), ir_const(g, 1 / count)};
	gc_accumulate(gc, x, ir_emit(g, OP_mul, in, NULL));
}

double flops_reduce(const Graph *g, const Node *n) { return (double)shape_numel(&op_in(g, n, 0)->shape); }

/* ---- softmax, log_softmax ---- */

bool shape_softmax(Node *n, const Graph *g, char *err, size_t errlen)
{
	return op_attr_axis(n, 0, op_in(g, n, 0)->shape.rank, err, errlen) && shape_unary(n, g, err, errlen);
}

/* One row along the axis: element j of input k is in[k][j * stride]. */
typedef void (*RowFn)(const double *const *in, double *out, int64_t len, int64_t stride);

static void each_row(const Graph *g, const Node *n, const double *const *in, double *out, RowFn f)
{
	int64_t outer, len, inner;
	op_axis_split(&n->shape, ir_axis(n), &outer, &len, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t k = 0; k < inner; k++) {
			int64_t base = o * len * inner + k;
			const double *row[2] = {in[0] + base, n->nin > 1 ? in[1] + base : NULL};
			f(row, out + base, len, inner);
		}
}

/* log of the sum of exp over the row, shifted by its max for range */
static double row_logsumexp(const double *x, int64_t len, int64_t stride)
{
	double max = -INFINITY, sum = 0;
	for (int64_t j = 0; j < len; j++)
		max = fmax(max, x[j * stride]);
	for (int64_t j = 0; j < len; j++)
		sum += exp(x[j * stride] - max);
	return max + log(sum);
}

static void row_log_softmax(const double *const *in, double *out, int64_t len, int64_t stride)
{
	double lse = row_logsumexp(in[0], len, stride);
	for (int64_t j = 0; j < len; j++)
		out[j * stride] = in[0][j * stride] - lse;
}

static void row_softmax(const double *const *in, double *out, int64_t len, int64_t stride)
{
	row_log_softmax(in, out, len, stride);
	for (int64_t j = 0; j < len; j++)
		out[j * stride] = exp(out[j * stride]);
}

/* (dy, y): dx = y * (dy - sum(dy * y)) */
static void row_softmax_grad(const double *const *in, double *out, int64_t len, int64_t stride)
{
	double dot = 0;
	for (int64_t j = 0; j < len; j++)
		dot += in[0][j * stride] * in[1][j * stride];
	for (int64_t j = 0; j < len; j++)
		out[j * stride] = in[1][j * stride] * (in[0][j * stride] - dot);
}

/* (dy, y): dx = dy - exp(y) * sum(dy) */
static void row_log_softmax_grad(const double *const *in, double *out, int64_t len, int64_t stride)
{
	double sum = 0;
	for (int64_t j = 0; j < len; j++)
		sum += in[0][j * stride];
	for (int64_t j = 0; j < len; j++)
		out[j * stride] = in[0][j * stride] - exp(in[1][j * stride]) * sum;
}

void ref_softmax(const Graph *g, const Node *n, const double *const *in, double *out)
{
	each_row(g, n, in, out, row_softmax);
}

void ref_log_softmax(const Graph *g, const Node *n, const double *const *in, double *out)
{
	each_row(g, n, in, out, row_log_softmax);
}

void ref_softmax_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	each_row(g, n, in, out, row_softmax_grad);
}

void ref_log_softmax_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	each_row(g, n, in, out, row_log_softmax_grad);
}

static void grad_along_axis(GradContext *gc, const Node *n, int dy, OpId op)
{
	int x = n->in[0], in[2] = {dy, n->id};
	double axis = n->attr[0];
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), op, in, &axis));
}

void grad_softmax(GradContext *gc, const Node *n, int dy) { grad_along_axis(gc, n, dy, OP_softmax_grad); }
void grad_log_softmax(GradContext *gc, const Node *n, int dy) { grad_along_axis(gc, n, dy, OP_log_softmax_grad); }

double flops_softmax(const Graph *g, const Node *n) { return 5.0 * (double)shape_numel(&n->shape); }

/* ---- nll_loss, cross_entropy ---- */

/* Checks scores (input s) as float [N, C] and labels (input s + 1) as i32[N]. */
static bool check_scores(Node *n, const Graph *g, int s, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, s), *y = op_in(g, n, s + 1);
	char t[128], want[128];
	int64_t reduction;
	if (x->shape.rank != 2)
		return op_fail(n, err, errlen, "scores must be 2-D [N, C], got %s", op_type_str(x, t, sizeof t));
	if (y->dtype != DT_I32 || y->shape.rank != 1 || y->shape.dim[0] != x->shape.dim[0]) {
		Shape ws = {1, {x->shape.dim[0]}};
		shape_str(&ws, want, sizeof want);
		return op_fail(n, err, errlen, "labels must be i32%s, got %s", want, op_type_str(y, t, sizeof t));
	}
	return op_need_float(n, g, s, err, errlen) && op_attr_int(n, 0, 0, 1, &reduction, err, errlen);
}

bool shape_loss(Node *n, const Graph *g, char *err, size_t errlen)
{
	if (!check_scores(n, g, 0, err, errlen))
		return false;
	n->shape = (Shape){0};
	n->dtype = DT_F32;
	return true;
}

/* (dloss, scores, labels) -> dscores */
bool shape_loss_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *dl = op_in(g, n, 0);
	char t[128];
	if (!check_scores(n, g, 1, err, errlen) || !op_need_float(n, g, 0, err, errlen))
		return false;
	if (shape_numel(&dl->shape) != 1)
		return op_fail(n, err, errlen, "the loss gradient must be a scalar, got %s", op_type_str(dl, t, sizeof t));
	n->shape = op_in(g, n, 1)->shape;
	n->dtype = op_in(g, n, 1)->dtype;
	return true;
}

/* Label of row i, or -1 outside [0, C): such a row adds nothing (the data loaders check labels,
 * and a reference must not read out of bounds). */
static int64_t label_at(const double *labels, int64_t i, int64_t c)
{
	double l = labels[i];
	return l >= 0 && l < (double)c ? (int64_t)l : -1;
}

/* Shape [N, C] of the scores and the factor mean or sum reduction applies. */
static double loss_dims(const Graph *g, const Node *n, int s, int64_t *rows, int64_t *cols)
{
	const Shape *x = &op_in(g, n, s)->shape;
	*rows = x->dim[0];
	*cols = x->dim[1];
	return ir_loss_is_mean(n) ? 1.0 / (double)*rows : 1.0;
}

void ref_nll_loss(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t rows, cols;
	double scale = loss_dims(g, n, 0, &rows, &cols), sum = 0;
	for (int64_t i = 0; i < rows; i++) {
		int64_t l = label_at(in[1], i, cols);
		if (l >= 0)
			sum -= in[0][i * cols + l];
	}
	out[0] = sum * scale;
}

void ref_cross_entropy(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t rows, cols;
	double scale = loss_dims(g, n, 0, &rows, &cols), sum = 0;
	for (int64_t i = 0; i < rows; i++) {
		int64_t l = label_at(in[1], i, cols);
		if (l >= 0)
			sum += row_logsumexp(in[0] + i * cols, cols, 1) - in[0][i * cols + l];
	}
	out[0] = sum * scale;
}

void ref_nll_loss_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t rows, cols;
	double scale = loss_dims(g, n, 1, &rows, &cols) * in[0][0];
	for (int64_t i = 0; i < rows * cols; i++)
		out[i] = 0;
	for (int64_t i = 0; i < rows; i++) {
		int64_t l = label_at(in[2], i, cols);
		if (l >= 0)
			out[i * cols + l] = -scale;
	}
}

/* dy * (softmax(x) - onehot(label)) * scale */
void ref_cross_entropy_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t rows, cols;
	double scale = loss_dims(g, n, 1, &rows, &cols) * in[0][0];
	for (int64_t i = 0; i < rows; i++) {
		const double *row[1] = {in[1] + i * cols};
		int64_t l = label_at(in[2], i, cols);
		row_softmax(row, out + i * cols, cols, 1);
		if (l >= 0)
			out[i * cols + l] -= 1;
		for (int64_t j = 0; j < cols; j++)
			out[i * cols + j] = l >= 0 ? out[i * cols + j] * scale : 0;
	}
}

static void grad_loss(GradContext *gc, const Node *n, int dy, OpId op)
{
	int x = n->in[0], in[3] = {dy, n->in[0], n->in[1]};
	double reduction = n->attr[0];
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), op, in, &reduction));
}

void grad_nll_loss(GradContext *gc, const Node *n, int dy) { grad_loss(gc, n, dy, OP_nll_loss_grad); }
void grad_cross_entropy(GradContext *gc, const Node *n, int dy) { grad_loss(gc, n, dy, OP_cross_entropy_grad); }

double flops_loss(const Graph *g, const Node *n) { return (double)shape_numel(&op_in(g, n, n->nin == 3 ? 1 : 0)->shape); }
