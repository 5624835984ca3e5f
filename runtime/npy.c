/* npy.c: the .npy format, version 1 to 3: the magic "\x93NUMPY", a version, the length of a
 * header that is a Python dict literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), })
 * and the data. Only what numpy.save writes for a float32 array is read. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/npy.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return false;
}

/* The text after 'key': in the header dict, or NULL. */
static const char *value_of(const char *header, const char *key)
{
	char quoted[32];
	snprintf(quoted, sizeof quoted, "'%s':", key);
	const char *p = strstr(header, quoted);
	if (!p)
		return NULL;
	p += strlen(quoted);
	while (*p == ' ')
		p++;
	return p;
}

/* (d0, d1, ...) into dim; the rank, or -1 when it is not a tuple of at most NPY_MAX_DIMS sizes. */
static int parse_shape(const char *p, int64_t *dim)
{
	if (!p || *p++ != '(')
		return -1;
	int rank = 0;
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			return rank;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v < 0 || v > (1ll << 40) || rank == NPY_MAX_DIMS)
			return -1;
		dim[rank++] = v;
		p = end;
	}
}

bool rt_npy_read(const char *path, int *rank, int64_t *dim, float **data, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
	unsigned char head[10];
	char header[4096];
	bool ok = fread(head, 1, 10, f) == 10 && !memcmp(head, magic, sizeof magic) && head[6] >= 1 && head[6] <= 3;
	size_t hlen = 0, at = 10;
	if (ok && head[6] == 1) {
		hlen = head[8] | (size_t)head[9] << 8;
	} else if (ok) {
		unsigned char more[2];
		ok = fread(more, 1, 2, f) == 2;
		hlen = head[8] | (size_t)head[9] << 8 | (size_t)more[0] << 16 | (size_t)more[1] << 24;
		at = 12;
	}
	ok = ok && hlen < sizeof header && fread(header, 1, hlen, f) == hlen;
	if (!ok) {
		fclose(f);
		return fail(err, errlen, "%s: not a .npy file (numpy.save writes them)", path);
	}
	header[hlen] = 0;
	const char *descr = value_of(header, "descr"), *order = value_of(header, "fortran_order");
	*rank = parse_shape(value_of(header, "shape"), dim);
	if (!descr || strncmp(descr, "'<f4'", 5) || !order || strncmp(order, "False", 5) || *rank < 0) {
		fclose(f);
		return fail(err, errlen, "%s: holds %s; netc reads C-ordered float32 arrays (numpy.save of "
			    "x.astype(numpy.float32))", path, header);
	}
	int64_t n = 1;
	for (int d = 0; d < *rank; d++)
		if (__builtin_mul_overflow(n, dim[d], &n) || n > (1ll << 40)) {
			fclose(f);
			return fail(err, errlen, "%s: the array is too large", path);
		}
	*data = malloc(n ? (size_t)n * sizeof **data : 1);
	ok = *data && fread(*data, sizeof **data, (size_t)n, f) == (size_t)n && fgetc(f) == EOF;
	fclose(f);
	if (!ok) {
		free(*data);
		*data = NULL;
		return fail(err, errlen, "%s: holds other than %lld float32 values after its %zu-byte header", path,
			    (long long)n, at + hlen);
	}
	return true;
}

bool rt_npy_write(const char *path, int rank, const int64_t *dim, const float *data, char *err, size_t errlen)
{
	char header[256];
	int len = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
	int64_t n = 1;
	for (int d = 0; d < rank; d++) {
		len += snprintf(header + len, sizeof header - (size_t)len, "%lld,%s", (long long)dim[d],
				d + 1 < rank ? " " : "");
		n *= dim[d];
	}
	len += snprintf(header + len, sizeof header - (size_t)len, "), }");
	/* the data start at a multiple of 64 bytes; the header ends with a line end */
	while ((10 + len + 1) % 64)
		header[len++] = ' ';
	header[len++] = '\n';
	unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)len, (unsigned char)(len >> 8)};
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(head, 1, 10, f) == 10 && fwrite(header, 1, (size_t)len, f) == (size_t)len &&
		  fwrite(data, sizeof *data, (size_t)n, f) == (size_t)n;
	if (f && fclose(f) != 0)
		ok = false;
	return ok || fail(err, errlen, "%s: cannot write: %s", path, strerror(errno));
}
