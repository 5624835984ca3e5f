/* pipeline.c: the passes from a forward graph to a planned training graph. */
#include "passes/passes.h"

bool passes_run_default(Graph *g, Diag *d)
{
	PassOptions o = {0};
	char err[512];
	if (!pass_make_eval(g, &o, d) || !pass_autodiff(g, &o, d) || !pass_fuse(g, &o, d) ||
	    !pass_plan_memory(g, &o, d))
		return false;
	if (!ir_verify(g, err, sizeof err)) {
		diag_error(d, (SrcLoc){0, 0}, "internal error: %s", err);
		return false;
	}
	return true;
}
