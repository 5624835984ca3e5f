/* frontend.h: .net source text to the forward graph (flex lexer, bison parser, AST, builder). */
#ifndef NETC_FRONTEND_H
#define NETC_FRONTEND_H

#include <stdio.h>

#include "ir/ir.h"

/* Reads and builds the .net file at path. batch > 0 overrides the training section's batch size.
 * Returns the forward graph with its loss, or NULL after printing every error to errout as
 * "file:line:col: error: ..." with the source line and a caret. */
Graph *fe_load_file(const char *path, int64_t batch, FILE *errout);
/* The same for text already in memory; name is what messages call the file. */
Graph *fe_load_string(const char *name, const char *text, size_t len, int64_t batch, FILE *errout);
/* Errors the loads above print before one line says the rest are left out (netc --max-errors);
 * 0: no limit. The default is DIAG_MAX_ERRORS. */
void fe_set_max_errors(int n);

#endif
