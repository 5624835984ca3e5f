/* npy.c: the .npy format, version 1 to 3: the magic "\x93NUMPY", a version, the length of a
 * header that is a Python dict literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), })
 * and the data. netc writes float32 arrays and reads the dtypes of RtNpyArray. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/npy.h"
#include "runtime/readfile.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return false;
}

/* The value of key in the header dict, as the text after "'key':" with spaces skipped. */
static const char *dict_value(const char *h, const char *key)
{
	char pat[32];
	snprintf(pat, sizeof pat, "'%s'", key);
	const char *p = strstr(h, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	if (*p++ != ':')
		return NULL;
	while (*p == ' ')
		p++;
	return p;
}

bool rt_npy_parse(const char *path, const uint8_t *f, size_t size, RtNpyArray *a, char *err, size_t errlen)
{
	if (size < 10 || memcmp(f, magic, sizeof magic))
		return rt_file_error(err, errlen, path, "not a .npy file (no \\x93NUMPY magic)");
	int major = f[6];
	size_t hlen, start;
	if (major == 1) {
		hlen = (size_t)f[8] | (size_t)f[9] << 8, start = 10;
	} else if ((major == 2 || major == 3) && size >= 12) {
		hlen = (size_t)f[8] | (size_t)f[9] << 8 | (size_t)f[10] << 16 | (size_t)f[11] << 24, start = 12;
	} else {
		return rt_file_error(err, errlen, path, ".npy format version %d is not one of 1, 2, 3", major);
	}
	if (hlen > 65536 || start + hlen > size)
		return rt_file_error(err, errlen, path, "the header runs past the end of the file");
	char h[65537];
	memcpy(h, f + start, hlen);
	h[hlen] = '\0';
	const char *descr = dict_value(h, "descr"), *order = dict_value(h, "fortran_order"), *shape = dict_value(h, "shape");
	if (!descr || !order || !shape)
		return rt_file_error(err, errlen, path, "the header lacks descr, fortran_order or shape");
	if (strncmp(order, "False", 5))
		return rt_file_error(err, errlen, path, "a Fortran-order array (save it in C order: np.ascontiguousarray)");
	char endian, kind;
	int bytes;
	if (sscanf(descr, "'%c%c%d'", &endian, &kind, &bytes) != 3 || !strchr("<|=", endian) || !strchr("fiub", kind) ||
	    !(bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) || (kind == 'f' && bytes < 4) ||
	    (kind == 'u' && bytes != 1) || (kind == 'b' && bytes != 1))
		return rt_file_error(err, errlen, path, "dtype %.12s is not one netc reads (f4, f8, i1, i2, i4, i8, u1, bool)",
				     descr);
	*a = (RtNpyArray){.kind = kind, .size = bytes, .data = f + start + hlen, .count = 1};
	const char *p = shape + 1;
	if (*shape != '(')
		return rt_file_error(err, errlen, path, "malformed shape in the header");
	while (*p && *p != ')') {
		char *end;
		long long v = strtoll(p, &end, 10);
		if (end == p || v < 0 || a->rank == NPY_MAX_DIMS)
			return rt_file_error(err, errlen, path, "malformed shape in the header");
		a->dim[a->rank++] = v;
		if (v > 0 && a->count > INT64_MAX / v)
			return rt_file_error(err, errlen, path, "the shape is too large");
		a->count *= v;
		p = end;
		while (*p == ',' || *p == ' ')
			p++;
	}
	if ((size_t)a->count > (size - start - hlen) / (size_t)bytes)
		return rt_file_error(err, errlen, path, "the data is shorter than its shape %s says", shape);
	return true;
}

double rt_npy_element(const RtNpyArray *a, int64_t i)
{
	const uint8_t *p = a->data + i * a->size;
	switch (a->kind) {
	case 'f': {
		if (a->size == 4) {
			float f;
			memcpy(&f, p, 4);
			return f;
		}
		double d;
		memcpy(&d, p, 8);
		return d;
	}
	case 'u':
	case 'b': return *p;
	default: {
		int64_t v = 0;
		memcpy(&v, p, (size_t)a->size); /* little-endian: the low bytes first */
		int shift = 64 - 8 * a->size;
		return (double)((int64_t)((uint64_t)v << shift) >> shift);
	}
	}
}

bool rt_npy_read(const char *path, int *rank, int64_t *dim, float **data, char *err, size_t errlen)
{
	uint8_t *raw = NULL;
	size_t size = 0;
	RtNpyArray a;
	*data = NULL;
	bool ok = rt_read_file(path, &raw, &size, err, errlen) && rt_npy_parse(path, raw, size, &a, err, errlen);
	if (ok && (a.kind != 'f' || a.size != 4))
		ok = rt_file_error(err, errlen, path, "holds %s%d values; netc reads float32 arrays (numpy.save of "
				   "x.astype(numpy.float32))", a.kind == 'f' ? "float" : a.kind == 'b' ? "bool" : "integer",
				   8 * a.size);
	else if (ok && (size_t)(raw + size - a.data) != (size_t)a.count * 4)
		ok = rt_file_error(err, errlen, path, "holds other than the %lld float32 values its shape says",
				   (long long)a.count);
	if (ok && !(*data = malloc(a.count ? (size_t)a.count * sizeof **data : 1)))
		ok = rt_file_error(err, errlen, path, "out of memory");
	if (ok) {
		memcpy(*data, a.data, (size_t)a.count * sizeof **data);
		*rank = a.rank;
		memcpy(dim, a.dim, (size_t)a.rank * sizeof *dim);
	}
	free(raw);
	return ok;
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
