/* data_cifar.h: what the CIFAR-10 reader and the built-in generator share (private to the
 * runtime). The generator writes the same binary records the reader parses, so the reader's path
 * always runs. */
#ifndef NETC_DATA_CIFAR_H
#define NETC_DATA_CIFAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/data_idx.h"

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS) /* a label byte, then the R, G and B planes */
#define CIFAR_TRAIN_FILES 5
#define CIFAR_NFILES (CIFAR_TRAIN_FILES + 1) /* the last one is the held-out set */

/* data_batch_1.bin ... data_batch_5.bin, test_batch.bin, as CIFAR-10 distributes them
 * (data_files.c). */
extern const char *const rt_cifar_names[CIFAR_NFILES];

/* data_cifar.c: the six files' records to the two sets, kept as bytes; each example becomes the
 * model's h x w input as it is loaded (rt_dataset_example). */
bool rt_cifar_parse(const IdxBlob f[CIFAR_NFILES], int h, int w, Dataset *train, Dataset *test, char *err,
		    size_t errlen);

/* data_synth.c: a CIFAR-like set of ntrain and ntest images (10 classes of colored shapes and
 * textures) as the six files' records, ntrain spread over the five training files; deterministic
 * from seed. False when out of memory. */
bool rt_synth_cifar(uint64_t seed, int64_t ntrain, int64_t ntest, IdxBlob f[CIFAR_NFILES]);

/* data_synth.c: example i of an ImageNet-shaped synthetic set (d->seed, d->c x d->h x d->w,
 * d->classes): a class pattern under noise, made on demand; returns its label. */
int32_t rt_synth_example(const Dataset *d, int64_t i, bool train, uint64_t key, float *dst);

#endif
