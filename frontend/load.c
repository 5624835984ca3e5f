/* load.c: the frontend's entry points: read a .net file, parse it, build its forward graph. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/ast.h"
#include "frontend/frontend.h"

#define FE_MAX_FILE (64u << 20) /* no network description comes near this */

/* A UTF-8 byte-order mark, which some editors write at the start of a text file. */
static const char utf8_bom[3] = {'\xef', '\xbb', '\xbf'};

Graph *fe_load_string(const char *name, const char *text, size_t len, int64_t batch, int max_errors, FILE *errout)
{
	/* skipped, as compilers do: it is no character of the file, so columns start after it */
	if (len >= sizeof utf8_bom && !memcmp(text, utf8_bom, sizeof utf8_bom))
		text += sizeof utf8_bom, len -= sizeof utf8_bom;
	/* the quoted source lines stop at NUL, so the copy for messages has none */
	char *src = malloc(len + 1);
	if (!src) {
		fputs("netc: out of memory\n", stderr);
		abort();
	}
	for (size_t i = 0; i < len; i++)
		src[i] = text[i] ? text[i] : ' ';
	src[len] = '\0';
	Diag d;
	diag_init(&d, name, src);
	d.max_errors = max_errors;
	if (errout)
		d.out = errout;

	Graph *g = NULL;
	if (len > FE_MAX_FILE) {
		diag_error(&d, (SrcLoc){0, 0}, "file is larger than %u MiB", FE_MAX_FILE >> 20);
	} else {
		FeParse p = {.arena = ast_arena_new(), .diag = &d};
		if (fe_parse(&p, text, len))
			g = fe_build(&p.file, &d, batch);
		ast_arena_free(p.arena);
	}
	free(src);
	return g;
}

/* Reads the whole file; NULL with *err set (an errno value, or EFBIG) when it cannot. */
static char *read_file(const char *path, size_t *len, int *err)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		*err = EISDIR;
		return NULL;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		*err = errno;
		return NULL;
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap || n > FE_MAX_FILE)
			break;
		char *grown = realloc(buf, cap *= 2);
		if (!grown)
			free(buf);
		buf = grown;
	}
	*err = !buf ? ENOMEM : ferror(f) ? EIO : n > FE_MAX_FILE ? EFBIG : 0;
	fclose(f);
	if (*err) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

Graph *fe_load_file(const char *path, int64_t batch, int max_errors, FILE *errout)
{
	size_t len = 0;
	int err = 0;
	char *text = read_file(path, &len, &err);
	if (!text) {
		Diag d;
		diag_init(&d, path, NULL);
		if (errout)
			d.out = errout;
		diag_error(&d, (SrcLoc){0, 0}, "cannot read '%s': %s", path,
			   err == EFBIG ? "file is too large" : strerror(err));
		return NULL;
	}
	Graph *g = fe_load_string(path, text, len, batch, max_errors, errout);
	free(text);
	return g;
}
