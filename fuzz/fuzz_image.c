/* fuzz_image.c: bytes (after the first three) as the one image of an image folder through
 * rt_load_folder, which decodes it with libjpeg-turbo or libpng as its first bytes say, then the
 * example loaded as training (random crop and flip) and evaluation load it. The first three bytes
 * pick the model's input: 1 or 3 channels, height and width 1 to 40, so boxes of every aspect
 * ratio are cut from images of any. A crash, a sanitizer report or a leak is a finding; a clean
 * error message (or a warning naming the file) is not. */
#include <stdlib.h>

#include "fuzz/fuzz_input.h"

static float example[3 * 40 * 40];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	int c = data[0] & 1 ? 3 : 1, h = 1 + data[1] % 40, w = 1 + data[2] % 40;
	fuzz_write("cat/x.png", data + 3, size - 3);
	Dataset train, test;
	char err[1024];
	if (rt_load_folder(fuzz_dir(), c, h, w, &train, &test, err, sizeof err)) {
		for (int t = 0; t < 2; t++)
			if (rt_dataset_example(&train, 0, t, 0x5EED ^ size, example) != 0)
				abort();
		rt_dataset_free(&train);
		rt_dataset_free(&test);
	}
	return 0;
}
