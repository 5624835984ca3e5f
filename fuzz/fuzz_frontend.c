/* fuzz_frontend.c: .net source text through the frontend (lexer, parser, builder with shape
 * inference) and the default pass pipeline up to memory planning, as `netc info` runs it; no
 * code generation. A crash, a sanitizer report, a leak or an "internal error" is a finding; a
 * clean error message is not. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "passes/passes.h"

/* Messages go here: the harness reads the passes' to tell internal errors from user errors. */
static char *messages;
static size_t messages_len;
static FILE *out;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!out && !(out = open_memstream(&messages, &messages_len)))
		abort();
	rewind(out);
	Graph *g = fe_load_string("fuzz.net", (const char *)data, size, 0, DIAG_MAX_ERRORS, out);
	if (!g)
		return 0;
	/* netc's default: the layout pass chooses, as `netc info` without --layout */
	PassOptions o = {.layout = LAYOUT_AUTO, .log = out};
	Diag d;
	diag_init(&d, "fuzz.net", NULL);
	d.out = out;
	fflush(out);
	size_t before = messages_len;
	passes_run(g, &o, &d);
	ir_graph_free(g);
	fflush(out);
	if (memmem(messages + before, messages_len - before, "internal error", 14)) {
		fprintf(stderr, "fuzz_frontend: the passes report an internal error:\n%.*s\n",
			(int)(messages_len - before), messages + before);
		abort();
	}
	return 0;
}
