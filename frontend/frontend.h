/* frontend.h: .net source text to the forward graph (flex lexer, bison parser, AST, builder). */
#ifndef NETC_FRONTEND_H
#define NETC_FRONTEND_H

#include <stdio.h>

#include "ir/ir.h"

/* Reads and builds the .net file at path. batch > 0 overrides the training section's batch size.
 * Returns the forward graph with its loss, or NULL after printing the errors to errout as
 * "file:line:col: error: ..." with the source line and a caret: at most max_errors of them, then
 * one line saying the rest are left out (netc --max-errors; DIAG_MAX_ERRORS by default, 0: all). */
Graph *fe_load_file(const char *path, int64_t batch, int max_errors, FILE *errout);
/* The same for text already in memory; name is what messages call the file. */
Graph *fe_load_string(const char *name, const char *text, size_t len, int64_t batch, int max_errors,
		      FILE *errout);
/* Every layer a .net file can call, one per line as a call with its tensor inputs and its
 * arguments' defaults (`netc layers`), then the aliases (frontend/layer_list.c). */
void fe_print_layers(FILE *out);

#endif
