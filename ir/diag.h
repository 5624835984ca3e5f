/* diag.h: diagnostics with source locations ("file:line:col: error: msg", source line, caret). */
#ifndef NETC_DIAG_H
#define NETC_DIAG_H

#include <stdio.h>

typedef struct {
	int line; /* 1-based; 0 when the thing has no place in a source file */
	int col;  /* 1-based */
} SrcLoc;

typedef struct {
	const char *file;   /* name printed in messages */
	const char *source; /* whole text of the file, for quoting the line; may be NULL */
	FILE *out;          /* where messages go (stderr by default) */
	int errors;
} Diag;

void diag_init(Diag *d, const char *file, const char *source);
/* Prints "file:line:col: error: ..." then the source line and a caret under col. */
void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
