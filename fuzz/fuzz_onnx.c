/* fuzz_onnx.c: bytes through the ONNX importer (protobuf-c's unpacking, the checks of tensors,
 * attributes and the graph, the operator mappings), then the .net text it writes through the
 * frontend, as `netc import` runs them. A crash, a sanitizer report or a leak is a finding; a
 * clean error message is not. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "frontend/frontend.h"
#include "onnx/onnx.h"

static FILE *out; /* the frontend's messages, to nowhere */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!out && !(out = fopen("/dev/null", "w")))
		abort();
	OnnxImport m;
	char err[2048];
	if (!onnx_import("fuzz.onnx", data, size, &m, err, sizeof err))
		return 0;
	Graph *g = fe_load_string("fuzz.onnx", m.text, m.len, 0, DIAG_MAX_ERRORS, out);
	if (g)
		ir_graph_free(g);
	onnx_import_free(&m);
	return 0;
}
