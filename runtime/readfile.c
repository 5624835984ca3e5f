/* readfile.c: a whole file into memory, and errors about a file. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/readfile.h"

bool rt_read_file(const char *path, uint8_t **data, size_t *size, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return false;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *p = malloc(cap);
	while (p) {
		n += fread(p + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *q = realloc(p, cap * 2);
		if (!q)
			free(p);
		p = q;
		cap *= 2;
	}
	int e = ferror(f) ? errno : 0;
	fclose(f);
	if (!p || e) {
		snprintf(err, errlen, "%s: %s", path, p ? strerror(e) : "out of memory");
		free(p);
		return false;
	}
	*data = p;
	*size = n;
	return true;
}

bool rt_file_error(char *err, size_t errlen, const char *file, const char *fmt, ...)
{
	int n = snprintf(err, errlen, "%s: ", file);
	if (n >= 0 && (size_t)n < errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return false;
}
