/* data_idx.h: what the MNIST loader and the built-in generator share (private to the runtime).
 * The generator writes the same IDX files the loader reads, so the loader's path always runs. */
#ifndef NETC_DATA_IDX_H
#define NETC_DATA_IDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/rt.h"

#define IDX_IMAGES_MAGIC 0x00000803u /* unsigned bytes, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u /* unsigned bytes, 1 dimension */

/* One IDX file's bytes in memory, and the name messages call it. */
typedef struct {
	char name[512];
	uint8_t *data;
	size_t size;
} IdxBlob;

enum { MNIST_TRAIN_IMAGES, MNIST_TRAIN_LABELS, MNIST_TEST_IMAGES, MNIST_TEST_LABELS, MNIST_NFILES };

/* The four file names, as MNIST distributes them (without .gz): data_files.c. */
extern const char *const rt_mnist_names[MNIST_NFILES];

/* data_mnist.c: the four IDX files to the two data sets, normalized. */
bool rt_mnist_parse(const IdxBlob f[MNIST_NFILES], Dataset *train, Dataset *test, char *err, size_t errlen);
/* data_files.c (with the names above): frees the n blobs' bytes. */
void rt_blobs_free(IdxBlob *f, int n);
/* data_mnist.c: a gzipped blob (told by its magic bytes, not its name) replaced by its inflated
 * bytes; other blobs stay as they are. f->data must be malloc'd. */
bool rt_idx_inflate(IdxBlob *f, char *err, size_t errlen);

/* data_synth.c: an MNIST-like set of ntrain and ntest 28x28 digits as the four IDX files,
 * deterministic from seed. False when out of memory. */
bool rt_synth_mnist(uint64_t seed, int64_t ntrain, int64_t ntest, IdxBlob f[MNIST_NFILES]);

#endif
