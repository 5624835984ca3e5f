/* ops_elemwise.c: elementwise ops (unary, binary with numpy broadcasting, bias_add, dropout,
 * assign), the shape functions other ops share, and the helpers of all ir/ops_*.c files. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>

#include "ir/checked.h"
#include "ir/ops.h"
#include "ir/philox.h"

/* ---- helpers shared by the ops files ---- */

int ir_axis(const Node *n) { return (int)n->attr[ir_attr_index(n->op, "axis")]; }

bool op_fail(const Node *n, char *err, size_t errlen, const char *fmt, ...)
{
	int k = snprintf(err, errlen, "%s: ", ir_ops[n->op].name);
	if (k >= 0 && (size_t)k < errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err + k, errlen - k, fmt, ap);
		va_end(ap);
	}
	return false;
}

bool op_attr_int(const Node *n, int i, int64_t lo, int64_t hi, int64_t *v, char *err, size_t errlen)
{
	double a = n->attr[i];
	char name[32];
	if (!(a >= (double)lo && a <= (double)hi) || a != floor(a)) {
		ir_attr_name(n->op, i, name, sizeof name);
		/* the bound of a size is only worth stating to a value past it */
		bool size_bound = hi == OP_ATTR_MAX || hi == IR_MAX_NUMEL;
		if (size_bound && a > hi)
			return op_fail(n, err, errlen, "%s must be at most %lld, got %.15g", name, (long long)hi, a);
		if (size_bound)
			return op_fail(n, err, errlen, "%s must be an integer >= %lld, got %g", name, (long long)lo, a);
		return op_fail(n, err, errlen, "%s must be an integer in [%lld, %lld], got %g", name, (long long)lo,
			       (long long)hi, a);
	}
	*v = (int64_t)a;
	return true;
}

bool op_attr_axis(Node *n, int i, int rank, char *err, size_t errlen)
{
	double a = n->attr[i];
	if (!(a >= -rank && a < rank) || a != floor(a))
		return op_fail(n, err, errlen, "axis %g is out of range for a rank-%d input", a, rank);
	if (a < 0)
		n->attr[i] = a + rank;
	return true;
}

const char *op_type_str(const Node *v, char *buf, size_t len)
{
	char s[96];
	snprintf(buf, len, "%s%s", dtype_name(v->dtype), shape_str(&v->shape, s, sizeof s));
	return buf;
}

bool op_need_float(const Node *n, const Graph *g, int i, char *err, size_t errlen)
{
	char t[128];
	const Node *x = op_in(g, n, i);
	if (dtype_is_float(x->dtype))
		return true;
	return op_fail(n, err, errlen, "input %d must be a float tensor, got %s", i, op_type_str(x, t, sizeof t));
}

void op_shape_attrs(const Shape *s, double attr[1 + IR_MAX_DIMS])
{
	attr[0] = s->rank;
	for (int i = 0; i < IR_MAX_DIMS; i++)
		attr[1 + i] = i < s->rank ? (double)s->dim[i] : 0;
}

void op_bcast_strides(const Shape *in, const Shape *out, int64_t stride[IR_MAX_DIMS])
{
	int lead = out->rank - in->rank;
	int64_t s = 1;
	for (int i = out->rank - 1; i >= 0; i--) {
		int k = i - lead;
		if (k < 0 || in->dim[k] == 1) {
			stride[i] = 0;
		} else {
			stride[i] = s;
			s *= in->dim[k];
		}
	}
}

int64_t op_bcast_offset(const Shape *out, const int64_t stride[IR_MAX_DIMS], int64_t i)
{
	int64_t off = 0;
	for (int d = out->rank - 1; d >= 0; d--) {
		off += (i % out->dim[d]) * stride[d];
		i /= out->dim[d];
	}
	return off;
}

void op_axis_split(const Shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < axis; i++)
		*outer *= s->dim[i];
	*len = s->dim[axis];
	for (int i = axis + 1; i < s->rank; i++)
		*inner *= s->dim[i];
}

void op_give_sum_to(GradContext *gc, int x, int grad)
{
	Graph *g = gc_graph(gc);
	Shape to = g->node[x].shape; /* a copy: emitting nodes may move g->node */
	gc_accumulate(gc, x, ir_sum_to(g, grad, &to));
}

/* ---- shape functions ---- */

bool shape_unary(Node *n, const Graph *g, char *err, size_t errlen)
{
	if (!op_need_float(n, g, 0, err, errlen))
		return false;
	n->shape = op_in(g, n, 0)->shape;
	n->dtype = op_in(g, n, 0)->dtype;
	return true;
}

bool shape_first(Node *n, const Graph *g, char *err, size_t errlen)
{
	return shape_unary(n, g, err, errlen);
}

bool op_binary_dtype(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *a = op_in(g, n, 0), *b = op_in(g, n, 1);
	if (!op_need_float(n, g, 0, err, errlen) || !op_need_float(n, g, 1, err, errlen))
		return false;
	if (a->dtype != b->dtype && a->op != OP_const && b->op != OP_const)
		return op_fail(n, err, errlen, "dtypes differ: %s and %s", dtype_name(a->dtype), dtype_name(b->dtype));
	n->dtype = a->op == OP_const ? b->dtype : a->dtype;
	return true;
}

bool shape_binary(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Shape *a = &op_in(g, n, 0)->shape, *b = &op_in(g, n, 1)->shape;
	char sa[96], sb[96];
	Shape s = {0};
	if (!op_binary_dtype(n, g, err, errlen))
		return false;
	s.rank = a->rank > b->rank ? a->rank : b->rank;
	for (int i = 0; i < s.rank; i++) {
		int ia = i - (s.rank - a->rank), ib = i - (s.rank - b->rank);
		int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
		if (da != db && da != 1 && db != 1)
			return op_fail(n, err, errlen, "cannot broadcast %s and %s", shape_str(a, sa, sizeof sa),
				       shape_str(b, sb, sizeof sb));
		s.dim[i] = da == 1 ? db : da;
	}
	n->shape = s;
	return true;
}

bool shape_dropout(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *rng = op_in(g, n, 1);
	char t[128];
	int64_t stream;
	if (!(n->attr[0] >= 0 && n->attr[0] < 1))
		return op_fail(n, err, errlen, "p must be in [0, 1), got %g", n->attr[0]);
	if (!op_attr_int(n, 1, 0, UINT32_MAX, &stream, err, errlen))
		return false;
	if (rng->dtype != DT_I32 || rng->shape.rank != 1 || rng->shape.dim[0] != RNG_WORDS)
		return op_fail(n, err, errlen, "rng must be i32[3] (seed, step, first row), got %s",
			       op_type_str(rng, t, sizeof t));
	return shape_unary(n, g, err, errlen);
}

/* (dy, x, y): x and y (the forward's inputs) broadcast to dy's shape, which the share has */
bool shape_minmax_grad(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *dy = op_in(g, n, 0);
	char sd[96], sx[96];
	for (int k = 0; k < 3; k++)
		if (!op_need_float(n, g, k, err, errlen))
			return false;
	for (int k = 1; k < 3; k++) {
		const Shape *in = &op_in(g, n, k)->shape;
		bool fits = in->rank <= dy->shape.rank;
		for (int i = 0; fits && i < in->rank; i++) {
			int64_t d = in->dim[i], o = dy->shape.dim[dy->shape.rank - in->rank + i];
			fits = d == 1 || d == o;
		}
		if (!fits)
			return op_fail(n, err, errlen, "input %s does not broadcast to dy %s", shape_str(in, sx, sizeof sx),
				       shape_str(&dy->shape, sd, sizeof sd));
	}
	n->shape = dy->shape;
	n->dtype = dy->dtype;
	return true;
}

bool shape_assign(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *t = op_in(g, n, 0), *v = op_in(g, n, 1);
	char st[128], sv[128];
	if (t->dtype != v->dtype || !shape_eq(&t->shape, &v->shape))
		return op_fail(n, err, errlen, "target %s and value %s differ", op_type_str(t, st, sizeof st),
			       op_type_str(v, sv, sizeof sv));
	n->shape = t->shape;
	n->dtype = t->dtype;
	return true;
}

bool shape_bias_add(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *x = op_in(g, n, 0), *b = op_in(g, n, 1);
	char sx[96], sb[96];
	if (!op_attr_axis(n, 0, x->shape.rank, err, errlen) || !op_binary_dtype(n, g, err, errlen))
		return false;
	int axis = (int)n->attr[0];
	if (b->shape.rank != 1 || b->shape.dim[0] != x->shape.dim[axis])
		return op_fail(n, err, errlen, "bias %s does not match axis %d of %s", shape_str(&b->shape, sb, sizeof sb),
			       axis, shape_str(&x->shape, sx, sizeof sx));
	n->shape = x->shape;
	return true;
}

/* ---- references ---- */

typedef double (*Fn1)(double);
typedef double (*Fn2)(double, double);

static void map1(const Node *n, const double *x, double *out, Fn1 f)
{
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++)
		out[i] = f(x[i]);
}

static void map2(const Graph *g, const Node *n, const double *const *in, double *out, Fn2 f)
{
	int64_t sa[IR_MAX_DIMS], sb[IR_MAX_DIMS];
	int64_t m = shape_numel(&n->shape);
	op_bcast_strides(&op_in(g, n, 0)->shape, &n->shape, sa);
	op_bcast_strides(&op_in(g, n, 1)->shape, &n->shape, sb);
	for (int64_t i = 0; i < m; i++)
		out[i] = f(in[0][op_bcast_offset(&n->shape, sa, i)], in[1][op_bcast_offset(&n->shape, sb, i)]);
}

/* map2 for rules with one numeric parameter (an attribute) */
typedef double (*Fn2Arg)(double, double, double);

static void map2_arg(const Graph *g, const Node *n, const double *const *in, double *out, Fn2Arg f, double arg)
{
	int64_t sa[IR_MAX_DIMS], sb[IR_MAX_DIMS];
	int64_t m = shape_numel(&n->shape);
	op_bcast_strides(&op_in(g, n, 0)->shape, &n->shape, sa);
	op_bcast_strides(&op_in(g, n, 1)->shape, &n->shape, sb);
	for (int64_t i = 0; i < m; i++)
		out[i] = f(in[0][op_bcast_offset(&n->shape, sa, i)], in[1][op_bcast_offset(&n->shape, sb, i)], arg);
}

static double f_neg(double x) { return -x; }
static double f_relu(double x) { return x > 0 ? x : 0; }
static double f_copy(double x) { return x; }
/* exp of a negative magnitude only, so large |x| gives 0 or 1, never inf/inf */
static double f_sigmoid(double x)
{
	double e = exp(-fabs(x));
	return x >= 0 ? 1 / (1 + e) : e / (1 + e);
}
static double f_silu(double x) { return x * f_sigmoid(x); }
static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static double f_relu_grad(double dy, double x) { return x > 0 ? dy : 0; }
/* NaN when either is (a NaN compares false), else the larger or smaller */
static double f_maximum(double a, double b) { return isnan(a) || isnan(b) ? a + b : a > b ? a : b; }
static double f_minimum(double a, double b) { return isnan(a) || isnan(b) ? a + b : a < b ? a : b; }

double ir_const_value(const Node *n) { return n->attr[0]; }

void ref_const(const Graph *g, const Node *n, const double *const *in, double *out) { out[0] = ir_const_value(n); }
void ref_neg(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, f_neg); }
void ref_exp(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, exp); }
void ref_log(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, log); }
void ref_sqrt(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, sqrt); }
void ref_relu(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, f_relu); }
void ref_copy(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, f_copy); }
void ref_sigmoid(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, f_sigmoid); }
void ref_tanh(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, tanh); }
void ref_silu(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, f_silu); }
void ref_add(const Graph *g, const Node *n, const double *const *in, double *out) { map2(g, n, in, out, f_add); }
void ref_sub(const Graph *g, const Node *n, const double *const *in, double *out) { map2(g, n, in, out, f_sub); }
void ref_mul(const Graph *g, const Node *n, const double *const *in, double *out) { map2(g, n, in, out, f_mul); }
void ref_div(const Graph *g, const Node *n, const double *const *in, double *out) { map2(g, n, in, out, f_div); }
void ref_maximum(const Graph *g, const Node *n, const double *const *in, double *out) { map2(g, n, in, out, f_maximum); }
void ref_minimum(const Graph *g, const Node *n, const double *const *in, double *out) { map2(g, n, in, out, f_minimum); }

/* x's share of dy: PyTorch's where(x == y, dy / 2, dy).masked_fill_(x loses, 0), where x loses to
 * y when x < y for maximum (sign 1), x > y for minimum (sign -1) */
static void minmax_share(const Graph *g, const Node *n, const double *const *in, double *out, double sign)
{
	int64_t sx[IR_MAX_DIMS], sy[IR_MAX_DIMS];
	int64_t m = shape_numel(&n->shape);
	op_bcast_strides(&op_in(g, n, 1)->shape, &n->shape, sx);
	op_bcast_strides(&op_in(g, n, 2)->shape, &n->shape, sy);
	for (int64_t i = 0; i < m; i++) {
		double x = in[1][op_bcast_offset(&n->shape, sx, i)], y = in[2][op_bcast_offset(&n->shape, sy, i)];
		out[i] = sign * x < sign * y ? 0 : x == y ? in[0][i] / 2 : in[0][i];
	}
}

void ref_maximum_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	minmax_share(g, n, in, out, 1);
}

void ref_minimum_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	minmax_share(g, n, in, out, -1);
}

void ref_relu_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	map2(g, n, in, out, f_relu_grad);
}

static double f_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; /* 0 and NaN stay */ }

void ref_abs(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, fabs); }
void ref_sign(const Graph *g, const Node *n, const double *const *in, double *out) { map1(n, in[0], out, f_sign); }

double ir_pow_exponent(const Node *n) { return n->attr[0]; }

void ref_pow(const Graph *g, const Node *n, const double *const *in, double *out)
{
	double e = ir_pow_exponent(n);
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++)
		out[i] = pow(in[0][i], e);
}

double ir_leaky_relu_slope(const Node *n) { return n->attr[0]; }

/* v where x > 0 (NaN x gives slope * v, as PyTorch's x > 0 does): the forward with v = x, the
 * gradient with v = dy */
static double f_leaky(double v, double x, double slope) { return x > 0 ? v : slope * v; }

void ref_leaky_relu(const Graph *g, const Node *n, const double *const *in, double *out)
{
	double slope = ir_leaky_relu_slope(n);
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++)
		out[i] = f_leaky(in[0][i], in[0][i], slope);
}

void ref_leaky_relu_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	map2_arg(g, n, in, out, f_leaky, ir_leaky_relu_slope(n));
}

bool ir_gelu_is_tanh(const Node *n) { return n->attr[0] != 0; }

#define GELU_KAPPA 0.044715

/* PyTorch's GeluKernel: x Phi(x) = x/2 (1 + erf(x / sqrt 2)), or with tanh(sqrt(2/pi)(x + kappa x^3))
 * in place of the erf */
static double gelu(double x, double tanh_form)
{
	if (tanh_form)
		return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + GELU_KAPPA * x * x * x)));
	return 0.5 * x * (1 + erf(x * M_SQRT1_2));
}

/* PyTorch's GeluBackwardKernel: dy (Phi(x) + x phi(x)); tanh form: dy (left' + right') of
 * left = x/2, right = 1 + tanh(inner) */
static double gelu_grad(double dy, double x, double tanh_form)
{
	if (tanh_form) {
		double inner = sqrt(2 / M_PI) * (x + GELU_KAPPA * x * x * x), t = tanh(inner);
		double inner_d = sqrt(2 / M_PI) * (1 + 3 * GELU_KAPPA * x * x);
		return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner_d);
	}
	double cdf = 0.5 * (1 + erf(x * M_SQRT1_2)), pdf = exp(-0.5 * x * x) / sqrt(2 * M_PI);
	return dy * (cdf + x * pdf);
}

void ref_gelu(const Graph *g, const Node *n, const double *const *in, double *out)
{
	double tanh_form = ir_gelu_is_tanh(n);
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++)
		out[i] = gelu(in[0][i], tanh_form);
}

void ref_gelu_grad(const Graph *g, const Node *n, const double *const *in, double *out)
{
	map2_arg(g, n, in, out, gelu_grad, ir_gelu_is_tanh(n));
}

/* The assign node stands for its target's storage after the write: it holds the value. */
void ref_assign(const Graph *g, const Node *n, const double *const *in, double *out)
{
	map1(n, in[1], out, f_copy);
}

DropoutParams ir_dropout_params(const Node *n)
{
	return (DropoutParams){.p = n->attr[0], .stream = (uint32_t)(int64_t)n->attr[1]};
}

int64_t ir_dropout_row_elems(const Node *n)
{
	int64_t m = shape_numel(&n->shape);
	return n->shape.rank > 0 && n->shape.dim[0] > 0 ? m / n->shape.dim[0] : m;
}

void ref_dropout(const Graph *g, const Node *n, const double *const *in, double *out)
{
	DropoutParams d = ir_dropout_params(n);
	double p = d.p;
	/* rng holds i32 values: go through int64 so negative seeds keep their bits */
	uint32_t seed = (uint32_t)(int64_t)in[1][0], step = (uint32_t)(int64_t)in[1][1];
	uint32_t first_row = (uint32_t)(int64_t)in[1][2], stream = d.stream;
	int64_t m = shape_numel(&n->shape);
	uint32_t row_elems = (uint32_t)ir_dropout_row_elems(n);
	for (int64_t i = 0; i < m; i++) {
		uint32_t index = philox_row_index((uint32_t)i, first_row, row_elems);
		out[i] = p == 0 ? in[0][i] : philox_keep(p, seed, step, stream, index) ? in[0][i] / (1 - p) : 0;
	}
}

void ref_bias_add(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t outer, len, inner;
	op_axis_split(&n->shape, (int)n->attr[0], &outer, &len, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t c = 0; c < len; c++)
			for (int64_t k = 0; k < inner; k++) {
				int64_t i = (o * len + c) * inner + k;
				out[i] = in[0][i] + in[1][c];
			}
}

/* ---- gradient rules ---- */

static int emit1(GradContext *gc, OpId op, int a)
{
	return ir_emit(gc_graph(gc), op, &a, NULL);
}

static int emit2(GradContext *gc, OpId op, int a, int b)
{
	int in[2] = {a, b};
	return ir_emit(gc_graph(gc), op, in, NULL);
}

void grad_neg(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	gc_accumulate(gc, x, emit1(gc, OP_neg, dy));
}

void grad_exp(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0], y = n->id;
	gc_accumulate(gc, x, emit2(gc, OP_mul, dy, y));
}

void grad_log(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	gc_accumulate(gc, x, emit2(gc, OP_div, dy, x));
}

void grad_sqrt(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0], y = n->id;
	int half = ir_const(gc_graph(gc), 0.5);
	gc_accumulate(gc, x, emit2(gc, OP_mul, dy, emit2(gc, OP_div, half, y)));
}

/* From the output, as PyTorch's threshold_backward(grad, result, 0): relu(x) > 0 exactly where
 * x > 0 (NaN and -0 included), and a fused conv + bias + relu then need not store its input. */
void grad_relu(GradContext *gc, const Node *n, int dy)
{
	gc_accumulate(gc, n->in[0], emit2(gc, OP_relu_grad, dy, n->id));
}

void grad_copy(GradContext *gc, const Node *n, int dy)
{
	gc_accumulate(gc, n->in[0], dy);
}

/* sigmoid' = s (1 - s) and tanh' = 1 - t^2, both from the output y */
void grad_sigmoid(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0], y = n->id;
	int one = ir_const(gc_graph(gc), 1);
	gc_accumulate(gc, x, emit2(gc, OP_mul, dy, emit2(gc, OP_mul, y, emit2(gc, OP_sub, one, y))));
}

void grad_tanh(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0], y = n->id;
	int one = ir_const(gc_graph(gc), 1);
	gc_accumulate(gc, x, emit2(gc, OP_mul, dy, emit2(gc, OP_sub, one, emit2(gc, OP_mul, y, y))));
}

void grad_abs(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	gc_accumulate(gc, x, emit2(gc, OP_mul, dy, emit1(gc, OP_sign, x)));
}

/* PyTorch's pow_backward: dy e x^(e-1), and zeros for e = 0 (where x^-1 could be inf) */
void grad_pow(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	Graph *g = gc_graph(gc);
	double e = ir_pow_exponent(n), e1 = e - 1;
	if (e == 0) {
		gc_accumulate(gc, x, emit2(gc, OP_mul, dy, ir_const(g, 0)));
		return;
	}
	int power = e1 == 0 ? -1 : ir_emit(g, OP_pow, &x, &e1);
	int slope = power < 0 ? ir_const(g, e) : emit2(gc, OP_mul, power, ir_const(g, e));
	gc_accumulate(gc, x, emit2(gc, OP_mul, dy, slope));
}

void grad_leaky_relu(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	double slope = ir_leaky_relu_slope(n);
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), OP_leaky_relu_grad, (int[]){dy, x}, &slope));
}

void grad_gelu(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	double approximate = ir_gelu_is_tanh(n);
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), OP_gelu_grad, (int[]){dy, x}, &approximate));
}

/* silu' = s (1 + x (1 - s)), s = sigmoid(x) (PyTorch's silu_backward) */
void grad_silu(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	Graph *g = gc_graph(gc);
	int one = ir_const(g, 1), s = emit1(gc, OP_sigmoid, x);
	int slope = emit2(gc, OP_add, one, emit2(gc, OP_mul, x, emit2(gc, OP_sub, one, s)));
	gc_accumulate(gc, x, emit2(gc, OP_mul, dy, emit2(gc, OP_mul, s, slope)));
}

/* Dropout is linear for fixed draws: the same mask and scale apply to dy. */
void grad_dropout(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0], in[2] = {dy, n->in[1]};
	double attr[2] = {n->attr[0], n->attr[1]};
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), OP_dropout, in, attr));
}

void grad_add(GradContext *gc, const Node *n, int dy)
{
	int a = n->in[0], b = n->in[1];
	op_give_sum_to(gc, a, dy);
	op_give_sum_to(gc, b, dy);
}

void grad_sub(GradContext *gc, const Node *n, int dy)
{
	int a = n->in[0], b = n->in[1];
	op_give_sum_to(gc, a, dy);
	op_give_sum_to(gc, b, emit1(gc, OP_neg, dy));
}

void grad_mul(GradContext *gc, const Node *n, int dy)
{
	int a = n->in[0], b = n->in[1];
	op_give_sum_to(gc, a, emit2(gc, OP_mul, dy, b));
	op_give_sum_to(gc, b, emit2(gc, OP_mul, dy, a));
}

/* y = a / b: da = dy / b, db = -dy * a / b^2 = -dy * y / b */
void grad_div(GradContext *gc, const Node *n, int dy)
{
	int a = n->in[0], b = n->in[1], y = n->id;
	op_give_sum_to(gc, a, emit2(gc, OP_div, dy, b));
	op_give_sum_to(gc, b, emit1(gc, OP_neg, emit2(gc, OP_mul, dy, emit2(gc, OP_div, y, b))));
}

/* Each input gets its share (the *_grad op with itself first), summed to its shape. */
static void grad_minmax(GradContext *gc, const Node *n, int dy, OpId share)
{
	int a = n->in[0], b = n->in[1];
	Graph *g = gc_graph(gc);
	op_give_sum_to(gc, a, ir_emit(g, share, (int[]){dy, a, b}, NULL));
	op_give_sum_to(gc, b, ir_emit(g, share, (int[]){dy, b, a}, NULL));
}

void grad_maximum(GradContext *gc, const Node *n, int dy) { grad_minmax(gc, n, dy, OP_maximum_grad); }
void grad_minimum(GradContext *gc, const Node *n, int dy) { grad_minmax(gc, n, dy, OP_minimum_grad); }

void grad_bias_add(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0], b = n->in[1], axis = (int)n->attr[0];
	Graph *g = gc_graph(gc);
	unsigned mask = ((1u << g->node[dy].shape.rank) - 1) & ~(1u << axis);
	double attr[2] = {mask, 0};
	gc_accumulate(gc, x, dy);
	gc_accumulate(gc, b, mask ? ir_emit(g, OP_sum, &dy, attr) : dy);
}

/* ---- flops ---- */

double flops_zero(const Graph *g, const Node *n) { return 0; }
double flops_elemwise(const Graph *g, const Node *n) { return (double)shape_numel(&n->shape); }
