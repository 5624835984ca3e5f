/* ops_precision.c: the ops mixed precision needs. cast converts between float types, with a
 * float64 reference that rounds as the target type does (round to nearest even, overflow to
 * infinity, gradual underflow), so the interpreter models f16 and bf16 storage; select(c, a, b)
 * picks a where the scalar c is nonzero (an update that runs only on a finite step);
 * all_finite(x) is an f32 scalar, 1 when no element of x is infinite or NaN; with rows = 1 it is
 * one such flag per index of x's first axis (the loss-scale pass checks a large gradient row by
 * row, then the rows: a GPU reduction to one value runs on one work-group). */
#include <float.h>
#include <math.h>

#include "ir/ops.h"

/* ---- cast ---- */

bool shape_cast(Node *n, const Graph *g, char *err, size_t errlen)
{
	int64_t t;
	if (!op_need_float(n, g, 0, err, errlen) || !op_attr_int(n, 0, 0, DT_COUNT - 1, &t, err, errlen))
		return false;
	if (!dtype_is_float((DType)t))
		return op_fail(n, err, errlen, "dtype must be a float type, got %s", dtype_name((DType)t));
	n->shape = op_in(g, n, 0)->shape;
	n->dtype = (DType)t;
	return true;
}

/* Bits of precision (with the implicit one), smallest normal exponent and largest finite value. */
typedef struct {
	int bits, emin;
	double max;
} FloatFormat;

static FloatFormat float_format(DType t)
{
	switch (t) {
	case DT_F16: return (FloatFormat){11, -14, 65504.0};
	case DT_BF16: return (FloatFormat){8, -126, 0x1.fep127};
	default: return (FloatFormat){24, -126, FLT_MAX};
	}
}

double ir_round_to(double x, DType t)
{
	if (t == DT_F64 || !isfinite(x) || x == 0)
		return x;
	FloatFormat f = float_format(t);
	int e;
	frexp(x, &e); /* |x| = m 2^e, m in [0.5, 1): the leading bit is 2^(e-1) */
	int lead = e - 1 > f.emin ? e - 1 : f.emin;
	double quantum = ldexp(1.0, lead - (f.bits - 1));
	double r = rint(x / quantum) * quantum; /* the default rounding mode: nearest, ties to even */
	return fabs(r) > f.max ? copysign(INFINITY, r) : r;
}

void ref_cast(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t m = shape_numel(&n->shape);
	for (int64_t i = 0; i < m; i++)
		out[i] = ir_round_to(in[0][i], n->dtype);
}

/* The gradient goes back in the input's type. */
void grad_cast(GradContext *gc, const Node *n, int dy)
{
	int x = n->in[0];
	double attr = gc_graph(gc)->node[x].dtype;
	gc_accumulate(gc, x, ir_emit(gc_graph(gc), OP_cast, &dy, &attr));
}

/* ---- select ---- */

bool shape_select(Node *n, const Graph *g, char *err, size_t errlen)
{
	const Node *c = op_in(g, n, 0), *a = op_in(g, n, 1), *b = op_in(g, n, 2);
	char sa[128], sb[128];
	if (!op_need_float(n, g, 0, err, errlen) || shape_numel(&c->shape) != 1)
		return op_fail(n, err, errlen, "the condition must be a float scalar, got %s", op_type_str(c, sa, sizeof sa));
	if (a->dtype != b->dtype || !shape_eq(&a->shape, &b->shape))
		return op_fail(n, err, errlen, "the two values differ: %s and %s", op_type_str(a, sa, sizeof sa),
			       op_type_str(b, sb, sizeof sb));
	n->shape = a->shape;
	n->dtype = a->dtype;
	return true;
}

void ref_select(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t m = shape_numel(&n->shape);
	const double *pick = in[0][0] != 0 ? in[1] : in[2];
	for (int64_t i = 0; i < m; i++)
		out[i] = pick[i];
}

/* ---- all_finite ---- */

bool shape_all_finite(Node *n, const Graph *g, char *err, size_t errlen)
{
	int64_t rows;
	const Shape *x = &op_in(g, n, 0)->shape;
	if (!op_need_float(n, g, 0, err, errlen) || !op_attr_int(n, 0, 0, 1, &rows, err, errlen))
		return false;
	if (rows && x->rank < 1)
		return op_fail(n, err, errlen, "rows = 1 needs an input of rank 1 or more, got a scalar");
	n->shape = rows ? (Shape){1, {x->dim[0]}} : (Shape){0};
	n->dtype = DT_F32;
	return true;
}

bool ir_all_finite_rows(const Node *n) { return n->attr[0] != 0; }

void ref_all_finite(const Graph *g, const Node *n, const double *const *in, double *out)
{
	int64_t m = shape_numel(&op_in(g, n, 0)->shape), outs = shape_numel(&n->shape), per = outs ? m / outs : 0;
	for (int64_t o = 0; o < outs; o++) {
		out[o] = 1;
		for (int64_t i = o * per; i < (o + 1) * per; i++)
			if (!isfinite(in[0][i]))
				out[o] = 0;
	}
}
