/* conv_algo.c: the conv-algo pass, which algorithm computes each convolution (--conv-algo).
 *
 * direct: the implicit GEMM of codegen/lower_conv.c, every convolution as the frontend and
 * autodiff made it. auto is direct for now. */
#include "ir/ops.h"
#include "passes/passes.h"

const char *conv_algo_name(const Graph *g, const Node *n)
{
	(void)g;
	switch (n->op) {
	case OP_conv2d:
	case OP_conv2d_grad_input:
	case OP_conv2d_grad_weight: return "direct";
	default: return NULL;
	}
}

bool pass_conv_algo(Graph *g, const PassOptions *o, Diag *d)
{
	(void)g, (void)o, (void)d;
	return true;
}
