/* diag.c: "file:line:col: error: message", then the source line and a caret under the column. */
#include <stdarg.h>
#include <string.h>

#include "ir/diag.h"

void diag_init(Diag *d, const char *file, const char *source)
{
	d->file = file;
	d->source = source;
	d->out = stderr;
	d->errors = 0;
	d->max_errors = DIAG_MAX_ERRORS;
}

bool diag_stopped(const Diag *d) { return d->max_errors > 0 && d->errors > d->max_errors; }

/* Prints the source line `line` (1-based) and a caret under column col. */
static void quote_line(Diag *d, int line, int col)
{
	const char *p = d->source;
	for (int l = 1; p && *p && l < line; l++) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p || !*p)
		return;
	size_t len = strcspn(p, "\r\n");
	fprintf(d->out, "  %.*s\n  ", (int)len, p);
	/* keep tabs so the caret lines up under them */
	for (int i = 0; i < col - 1 && (size_t)i < len; i++)
		fputc(p[i] == '\t' ? '\t' : ' ', d->out);
	fputs("^\n", d->out);
}

static void report(Diag *d, SrcLoc loc, const char *kind, const char *fmt, va_list ap)
{
	if (!d->out)
		d->out = stderr;
	if (loc.line > 0)
		fprintf(d->out, "%s:%d:%d: %s: ", d->file, loc.line, loc.col, kind);
	else
		fprintf(d->out, "%s: %s: ", d->file ? d->file : "netc", kind);
	vfprintf(d->out, fmt, ap);
	fputc('\n', d->out);
	if (loc.line > 0)
		quote_line(d, loc.line, loc.col);
}

void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...)
{
	d->errors++;
	if (diag_stopped(d)) {
		if (d->errors == d->max_errors + 1)
			fprintf(d->out ? d->out : stderr, "%s: fatal error: too many errors emitted, stopping now "
				"(use --max-errors N)\n", d->file ? d->file : "netc");
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	report(d, loc, "error", fmt, ap);
	va_end(ap);
}

void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...)
{
	if (diag_stopped(d))
		return;
	va_list ap;
	va_start(ap, fmt);
	report(d, loc, "note", fmt, ap);
	va_end(ap);
}
