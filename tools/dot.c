/* dot.c: `netc dot MODEL.net [--training [--collapse PARTS]] -o FILE.dot`: the compiled graph for
 * Graphviz, fused groups as clusters. Without --training it shows the evaluation program (the
 * forward pass as it runs for inference), with it the whole training step, whose backward pass
 * and optimizer update --collapse may draw as one box each. `-o -` writes to standard output. */
#ifndef NETC_RUNTIME_ONLY
#include <stdio.h>
#include <string.h>

#include "ir/dot.h"
#include "tools/commands.h"
#include "tools/model.h"

int cmd_dot(const Args *a, const CompileOptions *o)
{
	if (!a->output) {
		fprintf(stderr, "netc dot: -o FILE is required\n");
		return 2;
	}
	unsigned collapse = 0;
	char err[256];
	if (a->collapse && !a->training) {
		fprintf(stderr, "netc dot: --collapse needs --training (the evaluation program has no backward pass "
			"or optimizer)\n");
		return 2;
	}
	if (a->collapse && !ir_dot_parse_collapse(a->collapse, &collapse, err, sizeof err)) {
		fprintf(stderr, "netc dot: --collapse: %s\n", err);
		return 2;
	}
	Graph *g = model_load_graph(a->model, a->batch, true, o);
	if (!g)
		return 1;
	bool to_stdout = strcmp(a->output, "-") == 0;
	FILE *f = to_stdout ? stdout : fopen(a->output, "w");
	int rc = 0;
	if (!f) {
		fprintf(stderr, "netc: error: cannot write %s\n", a->output);
		rc = 1;
	} else {
		ir_dot(f, g, a->training ? PROG_TRAIN : PROG_EVAL, collapse);
		if ((to_stdout ? fflush(f) : fclose(f)) != 0) {
			fprintf(stderr, "netc: error: cannot write %s\n", a->output);
			rc = 1;
		}
	}
	ir_graph_free(g);
	return rc;
}
#endif
