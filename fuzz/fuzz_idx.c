/* fuzz_idx.c: bytes as MNIST's four IDX files (split at FUZZ_FILE_SEPARATOR, each gzipped or
 * not) through the reader, and every example out of the sets it accepted. A crash, a sanitizer
 * report or a leak is a finding; a clean error message is not. */
#include <stdlib.h>

#include "fuzz/fuzz_input.h"

static float example[4096 * 4096];

static void read_examples(const Dataset *d)
{
	for (int64_t i = 0; i < d->n; i++)
		if ((uint32_t)rt_dataset_example(d, i, true, 1, example) > 9)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	IdxBlob f[MNIST_NFILES];
	fuzz_split(data, size, f, MNIST_NFILES, rt_mnist_names);
	char err[1024];
	bool ok = true;
	for (int i = 0; i < MNIST_NFILES && ok; i++)
		ok = rt_idx_inflate(&f[i], err, sizeof err);
	Dataset train, test;
	if (ok && rt_mnist_parse(f, &train, &test, err, sizeof err)) {
		read_examples(&train);
		read_examples(&test);
		rt_dataset_free(&train);
		rt_dataset_free(&test);
	}
	rt_blobs_free(f, MNIST_NFILES);
	return 0;
}
