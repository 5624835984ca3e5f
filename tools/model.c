/* model.c: loading models for the commands: .net files are parsed, differentiated, planned and
 * compiled for the host; bundle files are read as they are. */
#include <stdio.h>
#include <string.h>

#include "tools/model.h"

#ifndef NETC_RUNTIME_ONLY
#include "codegen/make_bundle.h"
#include "frontend/frontend.h"
#include "passes/passes.h"
#endif

bool model_is_bundle(const char *path)
{
	char magic[8];
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	bool yes = fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, BUNDLE_MAGIC, 8) == 0;
	fclose(f);
	return yes;
}

#ifdef NETC_RUNTIME_ONLY
Graph *model_load_graph(const char *path, int64_t batch, bool training)
{
	(void)batch, (void)training;
	fprintf(stderr, "netc: error: %s: this netc is a runtime-only build and cannot compile .net files; "
			"compile it with a full netc (netc compile) and pass the bundle\n", path);
	return NULL;
}
#else
Graph *model_load_graph(const char *path, int64_t batch, bool training)
{
	Graph *g = fe_load_file(path, batch, stderr);
	if (!g || !training)
		return g;
	Diag d;
	diag_init(&d, path, NULL);
	if (!passes_run_default(g, &d)) {
		ir_graph_free(g);
		return NULL;
	}
	return g;
}
#endif

static void free_graph(Graph *g)
{
#ifndef NETC_RUNTIME_ONLY
	ir_graph_free(g);
#endif
}

static bool compile_graph(Graph *g, Bundle *b)
{
#ifdef NETC_RUNTIME_ONLY
	(void)g, (void)b;
	return false;
#else
	CgTarget target;
	CgOutput out;
	char err[1024];
	if (!cg_target_host(&target)) {
		fprintf(stderr, "netc: error: the host CPU is not a target LLVM knows\n");
		return false;
	}
	if (!cg_compile(g, &target, false, &out, err, sizeof err)) {
		fprintf(stderr, "netc: error: %s\n", err);
		return false;
	}
	cg_make_bundle(g, &out, target.name, b);
	cg_output_free(&out);
	return true;
#endif
}

bool model_load_bundle(const char *path, int64_t batch, Bundle *b, Graph **graph_out)
{
	if (graph_out)
		*graph_out = NULL;
	if (model_is_bundle(path)) {
		char err[1024];
		if (!bundle_read(b, path, err, sizeof err)) {
			fprintf(stderr, "netc: error: %s\n", err);
			return false;
		}
		if (batch > 0 && batch != b->batch) {
			fprintf(stderr, "netc: error: %s was compiled for batch %lld, not %lld; compile it again "
					"with `netc compile MODEL.net --batch %lld -o FILE`\n",
				path, (long long)b->batch, (long long)batch, (long long)batch);
			bundle_free(b);
			return false;
		}
		return true;
	}
	Graph *g = model_load_graph(path, batch, true);
	if (!g)
		return false;
	bool ok = compile_graph(g, b);
	if (ok && graph_out)
		*graph_out = g;
	else
		free_graph(g);
	return ok;
}
