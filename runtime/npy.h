/* npy.h: NumPy's .npy files (numpy.save): the batches `netc eval --input` reads and writes, and
 * the arrays of `data = npy` (runtime/data_npy.c). */
#ifndef NETC_RUNTIME_NPY_H
#define NETC_RUNTIME_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_DIMS 8

/* A parsed .npy file: its elements stay in the file's bytes. */
typedef struct {
	char kind; /* 'f' float, 'i' signed, 'u' unsigned, 'b' bool */
	int size;  /* bytes per element */
	int rank;
	int64_t dim[NPY_MAX_DIMS];
	int64_t count;
	const uint8_t *data; /* count little-endian elements, C order */
} RtNpyArray;

/* The header of the file's size bytes at f (versions 1 to 3; dtypes f4, f8, i1, i2, i4, i8, u1,
 * bool; C order; data as long as the shape says); errors name path. */
bool rt_npy_parse(const char *path, const uint8_t *f, size_t size, RtNpyArray *a, char *err, size_t errlen);
/* Element i as a double. */
double rt_npy_element(const RtNpyArray *a, int64_t i);

/* A C-ordered little-endian float32 array (*data malloc'd, *rank dims in dim); any other file is
 * an error naming it and what it holds. */
bool rt_npy_read(const char *path, int *rank, int64_t *dim, float **data, char *err, size_t errlen);
bool rt_npy_write(const char *path, int rank, const int64_t *dim, const float *data, char *err, size_t errlen);

#endif
