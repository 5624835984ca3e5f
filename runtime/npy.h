/* npy.h: NumPy's .npy files of float32 arrays (numpy.save), the batches `netc eval --input`
 * reads and writes. */
#ifndef NETC_RUNTIME_NPY_H
#define NETC_RUNTIME_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_DIMS 6

/* A C-ordered little-endian float32 array (*data malloc'd, *rank dims in dim); any other file is
 * an error naming it and what it holds. */
bool rt_npy_read(const char *path, int *rank, int64_t *dim, float **data, char *err, size_t errlen);
bool rt_npy_write(const char *path, int rank, const int64_t *dim, const float *data, char *err, size_t errlen);

#endif
