/* test_ir_util.h: building IR graphs by hand in the IR and pass tests (header only).
 *
 *     int x = ir_leaf(g, OP_param, NULL, S(2, 64, 10), DT_F32, NULL);
 *     int y = tu_add(g, OP_sum, &x, A(0x2, 0));
 */
#ifndef NETC_TEST_IR_UTIL_H
#define NETC_TEST_IR_UTIL_H

#include <string.h>

#include "ir/ir.h"
#include "tests/unit/test_util.h"

/* Attributes, zero-filled to the most any op has (ir_add reads as many as the op lists). */
#define A(...) ((double[IR_MAX_ATTRS]){__VA_ARGS__})

/* S(rank, dims...): a shape. */
TU_API Shape S(int rank, ...)
{
	Shape s = {rank, {0}};
	va_list ap;
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		s.dim[i] = va_arg(ap, int);
	va_end(ap);
	return s;
}

/* Adds a node that must be accepted: a refusal means the test itself is wrong, so it stops. */
TU_API int tu_add(Graph *g, OpId op, const int *in, const double *attr)
{
	char err[256] = "";
	int id = ir_add(g, op, in, attr, NULL, err, sizeof err);
	if (id < 0) {
		FAIL("test error: %s refused: %s", ir_ops[op].name, err);
		exit(1);
	}
	return id;
}

/* The node's shape must print as want, e.g. "[64, 10]". */
TU_API void expect_shape(Graph *g, int id, const char *want)
{
	char buf[128];
	shape_str(&g->node[id].shape, buf, sizeof buf);
	CHECK(!strcmp(buf, want), "%s: shape %s, want %s", ir_ops[g->node[id].op].name, buf, want);
}

/* Adds a node that must be refused with exactly the message want (leaving the graph as it was). */
TU_API void expect_error(Graph *g, OpId o, const int *in, const double *attr, const char *want)
{
	char err[256] = "";
	int before = g->nnodes;
	int id = ir_add(g, o, in, attr, NULL, err, sizeof err);
	CHECK(id < 0 && !strcmp(err, want), "%s: got id %d and \"%s\", want \"%s\"", ir_ops[o].name, id, err, want);
	CHECK(g->nnodes == before);
}

#endif
