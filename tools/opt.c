/* opt.c: `netc opt FILE.ir [--passes=LIST]`, as LLVM's opt: reads a graph in the text form
 * `netc print` writes (ir/parse_ir.c), runs exactly the listed passes through the pass manager
 * (none without --passes, no pass required) and prints the result in the same form, so a lit
 * test can hand one pass a graph written by hand. */
#ifndef NETC_RUNTIME_ONLY
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "tools/commands.h"

/* The whole file, NUL-terminated; NULL with a message naming the file when it cannot be read or
 * holds a NUL byte (no text graph does). */
static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "netc: error: cannot read '%s'\n", path);
		return NULL;
	}
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	for (size_t got; buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
		len += got;
		if (len + 1 == cap) {
			char *grown = realloc(buf, cap *= 2);
			if (!grown)
				free(buf);
			buf = grown;
		}
	}
	bool bad = ferror(f);
	fclose(f);
	if (!buf) {
		fputs("netc: out of memory\n", stderr);
		abort();
	}
	buf[len] = 0;
	if (bad || strlen(buf) != len) {
		fprintf(stderr, "netc: error: %s: %s\n", path, bad ? "cannot read it" : "a NUL byte: not a text graph");
		free(buf);
		return NULL;
	}
	return buf;
}

int cmd_opt(const Args *a, const CompileOptions *o)
{
	char *text = read_text(a->model);
	if (!text)
		return 1;
	Diag d;
	diag_init(&d, a->model, text);
	Graph *g = ir_parse_text(text, &d);
	char err[512];
	bool grouped = false;
	for (int i = 0; g && i < g->nnodes && !grouped; i++)
		grouped = g->node[i].group >= 0 && g->node[i].group != i;
	if (g && grouped && !fuse_verify(g, err, sizeof err)) {
		diag_error(&d, (SrcLoc){0, 0}, "its fused groups: %s", err);
		ir_graph_free(g);
		g = NULL;
	}
	if (g && o->precision >= 0)
		g->train.precision = (PrecisionKind)o->precision; /* as for a .net file (tools/model.c) */
	if (g && !passes_run(g, &o->passes, &d)) {
		ir_graph_free(g);
		g = NULL;
	}
	free(text);
	if (!g)
		return 1;
	ir_print(stdout, g, 0);
	ir_graph_free(g);
	return 0;
}
#endif
