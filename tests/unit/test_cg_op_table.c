/* test_cg_op_table.c: the emitter and traits columns of ir/ops.def. Every op cg_lower_elemwise
 * lowers has an elemental emitter and no other op has one; the layout traits sit on ops of the
 * arity they promise; an op that reaches the elemental path without an emitter is an internal
 * error naming it, never a silent default. */
#include <signal.h>

#include "codegen/lower_table.h"
#include "ir/ops.h"
#include "tests/unit/cg_harness.h"
#include "tests/unit/test_util.h"

static void emitter_column(void)
{
	for (int op = 0; op < OP_COUNT; op++) {
		bool elemwise = cg_lowerings[op] == cg_lower_elemwise;
		CHECK(elemwise == (cg_elementals[op] != NULL), "%s: lowered by cg_lower_elemwise %d, has an emitter %d",
		      ir_ops[op].name, elemwise, cg_elementals[op] != NULL);
		if (cg_elementals[op])
			CHECK(ir_ops[op].pattern <= PAT_INJECTIVE, "%s: an emitter on an op fusion never reads in place",
			      ir_ops[op].name);
	}
}

static void traits_column(void)
{
	for (int op = 0; op < OP_COUNT; op++) {
		const OpInfo *o = &ir_ops[op];
		if (o->traits & TRAIT_LAYOUT_FREE_UNARY)
			CHECK(o->nin == 1 && o->shape == shape_unary && cg_elementals[op], "%s: not a plain unary", o->name);
		if (o->traits & TRAIT_LAYOUT_FREE_BINARY)
			CHECK(o->nin == 2 && o->shape == shape_binary && cg_elementals[op], "%s: not a plain binary", o->name);
		CHECK(!((o->traits & TRAIT_COMPUTES_F32) && (o->traits & TRAIT_HALF_COMPUTE)), "%s: both f32 and half",
		      o->name);
		CHECK(!ir_is_leaf((OpId)op) || o->traits == 0, "%s: a leaf with traits", o->name);
	}
	/* the facts the layout and mixed-precision passes relied on before the column */
	CHECK(ir_ops[OP_relu].traits & TRAIT_LAYOUT_FREE_UNARY);
	CHECK(!(ir_ops[OP_dropout].traits & TRAIT_LAYOUT_FREE_UNARY), "dropout's mask is tied to NCHW indices");
	CHECK(ir_ops[OP_add].traits & TRAIT_LAYOUT_FREE_BINARY);
	CHECK(!(ir_ops[OP_bias_add].traits & TRAIT_LAYOUT_FREE_BINARY), "bias_add needs its axis moved");
	CHECK(ir_ops[OP_softmax].traits & TRAIT_COMPUTES_F32);
	CHECK(ir_ops[OP_matmul].traits & TRAIT_HALF_COMPUTE);
}

/* mul(x, c) with the scalar const c put in the mul's group: the mul reads c in place, and const has
 * no emitter. The child must abort with a message naming const. */
static void missing_emitter_is_an_error(void)
{
	int fd[2];
	if (pipe(fd) != 0)
		abort();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		CgHarness *h = ch_new("const read in place");
		int x = ch_param(h, DT_F32, "4,8");
		int c = ir_const(h->g, 2.0);
		int y = ch_op(h, OP_mul, NULL, x, c);
		if (!ch_plan(h))
			_exit(3);
		h->g->node[c].group = y;
		h->g->node[c].programs = PROG_TRAIN;
		h->g->node[y].group = y;
		CgTarget t;
		CgOutput out;
		char err[256];
		if (cg_target_host(&t))
			cg_compile(h->g, &t, false, &out, err, sizeof err);
		_exit(0);
	}
	close(fd[1]);
	char msg[1024] = "";
	size_t len = 0;
	ssize_t r;
	while (len < sizeof msg - 1 && (r = read(fd[0], msg + len, sizeof msg - 1 - len)) > 0)
		len += (size_t)r;
	msg[len] = 0;
	close(fd[0]);
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "the child was not aborted (status %d)", status);
	CHECK(strstr(msg, "no elemental emitter for const"), "stderr: %s", msg);
}

int main(void)
{
	tu_start("test_cg_op_table");
	emitter_column();
	traits_column();
	missing_emitter_is_an_error();
	return tu_finish("test_cg_op_table");
}
