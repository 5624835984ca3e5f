/* diag.h: diagnostics with source locations ("file:line:col: error: msg", source line, caret). */
#ifndef NETC_DIAG_H
#define NETC_DIAG_H

#include <stdbool.h>
#include <stdio.h>

typedef struct {
	int line; /* 1-based; 0 when the thing has no place in a source file */
	int col;  /* 1-based */
} SrcLoc;

/* Errors printed before the rest are only counted, unless the Diag's owner says otherwise: a
 * file of junk says what is wrong in its first lines, not in thousands. */
#define DIAG_MAX_ERRORS 20

typedef struct {
	const char *file;   /* name printed in messages */
	const char *source; /* whole text of the file, for quoting the line; may be NULL */
	FILE *out;          /* where messages go (stderr by default) */
	int errors;         /* every error, printed or not */
	int max_errors;     /* errors printed; then one "too many errors" line; 0: no limit */
} Diag;

void diag_init(Diag *d, const char *file, const char *source);
/* Prints "file:line:col: error: ..." then the source line and a caret under col; past max_errors
 * counts the error and prints nothing (the first time, one line saying so). */
void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A note on the last error; silent when that error was not printed. */
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Whether max_errors is spent: what reports errors may as well stop. */
bool diag_stopped(const Diag *d);

#endif
