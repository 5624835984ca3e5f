/* fuzz_cifar.c: bytes as the model's input size (the first two bytes: h and w, 0 to 34, so sizes
 * that do not fit occur) and CIFAR-10's six files (the rest, split at FUZZ_FILE_SEPARATOR)
 * through the reader, and every example of the sets it accepted, cropped and flipped as training
 * and evaluation load them. A crash, a sanitizer report or a leak is a finding; a clean error
 * message is not. */
#include <stdlib.h>

#include "fuzz/fuzz_input.h"
#include "runtime/data_cifar.h"

static float example[CIFAR_PIXELS];

static void read_examples(const Dataset *d, uint64_t key)
{
	for (int64_t i = 0; i < d->n; i++)
		for (int train = 0; train < 2; train++)
			if ((uint32_t)rt_dataset_example(d, i, train, key, example) > 9)
				abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	int h = data[0] % 35, w = data[1] % 35;
	IdxBlob f[CIFAR_NFILES];
	fuzz_split(data + 2, size - 2, f, CIFAR_NFILES, rt_cifar_names);
	Dataset train, test;
	char err[1024];
	if (rt_cifar_parse(f, h, w, &train, &test, err, sizeof err)) {
		read_examples(&train, data[0] ^ (uint64_t)data[1] << 8);
		read_examples(&test, size);
		rt_dataset_free(&train);
		rt_dataset_free(&test);
	}
	rt_blobs_free(f, CIFAR_NFILES);
	return 0;
}
