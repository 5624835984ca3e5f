/* onnx_cmd.c: `netc import` (an ONNX model to a .net file and a checkpoint) and `netc export`
 * (a model and a checkpoint to an ONNX model); the translation itself is onnx/'s. A runtime-only
 * build has them when built with the ONNX kit (NETC_HAVE_ONNX). */
#ifdef NETC_HAVE_ONNX
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "onnx/onnx.h"
#include "tools/commands.h"
#include "tools/model.h"

static bool write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(text, 1, len, f) == len;
	if (f && fclose(f) != 0)
		ok = false;
	if (!ok)
		fprintf(stderr, "netc: error: cannot write %s\n", path);
	return ok;
}

/* Every parameter and running statistic of g has its tensor in w, of its shape, and w holds no
 * other: the importer's text and weights agree. */
static bool weights_match(const Graph *g, const RtTensors *w, const char *path, int64_t *params)
{
	int found = 0;
	*params = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (n->op != OP_param && n->op != OP_state)
			continue;
		const RtTensor *t = rt_tensors_find(w, n->name);
		bool same = t && t->rank == n->shape.rank;
		for (int d = 0; same && d < t->rank; d++)
			same = t->dim[d] == n->shape.dim[d];
		char b[96];
		if (!same) {
			fprintf(stderr, "netc: error: %s: the imported weights have %s for '%s', the network needs %s\n", path,
				t ? "another shape" : "no tensor", n->name, shape_str(&n->shape, b, sizeof b));
			return false;
		}
		found++;
		if (n->op == OP_param)
			*params += shape_numel(&n->shape);
	}
	if (found != w->n) {
		fprintf(stderr, "netc: error: %s: %d imported weights belong to no layer of the network\n", path, w->n - found);
		return false;
	}
	return true;
}

/* MODEL.net -> MODEL.safetensors */
static void checkpoint_path(const char *net, char *buf, size_t len)
{
	const char *slash = strrchr(net, '/'), *dot = strrchr(net, '.');
	size_t k = dot && (!slash || dot > slash) ? (size_t)(dot - net) : strlen(net);
	snprintf(buf, len, "%.*s.safetensors", (int)k, net);
}

int cmd_import(const Args *a, const CompileOptions *o)
{
	if (!a->output) {
		fprintf(stderr, "netc import: -o MODEL.net is required\n");
		return 2;
	}
	if (!model_is_onnx(a->model)) {
		fprintf(stderr, "netc import: %s: netc imports ONNX models, named MODEL.onnx\n", a->model);
		return 2;
	}
	OnnxImport m;
	char err[2048], ckpt[4096];
	if (!onnx_import_file(a->model, &m, err, sizeof err)) {
		fprintf(stderr, "netc: error: %s\n", err);
		return 1;
	}
	checkpoint_path(a->output, ckpt, sizeof ckpt);
	const char *ckpt_path = a->checkpoint ? a->checkpoint : ckpt;
	/* the text first, so that a frontend error's line can be read in the file it names */
	Graph *g = NULL;
	int64_t params = 0;
	bool ok = write_text(a->output, m.text, m.len) &&
		  (g = fe_load_string(a->output, m.text, m.len, 0, o->max_errors >= 0 ? o->max_errors : DIAG_MAX_ERRORS,
				      stderr)) &&
		  weights_match(g, &m.weights, a->model, &params);
	if (ok && !rt_tensors_save(&m.weights, g->name, ckpt_path, err, sizeof err)) {
		fprintf(stderr, "netc: error: %s\n", err);
		ok = false;
	}
	if (ok && !a->quiet)
		printf("wrote %s (network %s) and %s (%d tensors, %lld parameters)\n", a->output, g->name, ckpt_path,
		       m.weights.n, (long long)params);
	if (g)
		ir_graph_free(g);
	onnx_import_free(&m);
	return ok ? 0 : 1;
}

int cmd_export(const Args *a, const CompileOptions *o)
{
	if (!a->output || !a->checkpoint) {
		fprintf(stderr, "netc export: --checkpoint F and -o OUT.onnx are required\n");
		return 2;
	}
	if (model_is_bundle(a->model)) {
		fprintf(stderr, "netc: error: %s is a compiled bundle, which holds kernels rather than the graph: export "
				"the .net file it was compiled from\n", a->model);
		return 1;
	}
	Graph *g = model_load_graph(a->model, 0, false, o);
	if (!g)
		return 1;
	RtTensors w;
	char err[2048];
	bool ok = rt_tensors_read(a->checkpoint, &w, err, sizeof err) && onnx_export(g, &w, a->checkpoint, a->output, err, sizeof err);
	if (!ok)
		fprintf(stderr, "netc: error: %s\n", err);
	else if (!a->quiet)
		printf("wrote %s: %s, ONNX opset %d, batch dimension 'batch'\n", a->output, g->name, ONNX_OPSET_EXPORT);
	rt_tensors_free(&w);
	ir_graph_free(g);
	return ok ? 0 : 1;
}
#endif
