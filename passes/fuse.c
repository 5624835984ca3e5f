/* fuse.c: operator fusion. For now every node stays in a group of its own; the fusion rules
 * come with the fusion work of the graph-optimization issue. */
#include "passes/passes.h"

bool pass_fuse(Graph *g, const PassOptions *o, Diag *d)
{
	(void)o;
	(void)d;
	ir_ungroup(g);
	return true;
}
