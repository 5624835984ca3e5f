/* fuzz_npy.c: bytes (after the first) as a .npy file through rt_npy_parse with every element
 * read, rt_npy_read (the float32 reader of `netc eval --input`) and the data = npy loader, which
 * binds the file to an input whose dtype the first byte picks (and, for an i32 one, the number of
 * classes) and whose shape is the array's own, so that arrays the parser accepts go on through the
 * loader's checks. A crash, a sanitizer report or a leak is a finding; a clean error message is
 * not. */
#include <stdlib.h>

#include "fuzz/fuzz_input.h"
#include "runtime/npy.h"

static void load_as_input(const uint8_t *f, size_t n, const RtNpyArray *a, uint8_t pick)
{
	fuzz_write("x.npy", f, n);
	RtNpyInput in = {.name = "x", .dtype = (DType)(pick % DT_COUNT), .rank = a->rank - 1, .dim = a->dim + 1};
	RtNpyInputs set = {.input = &in, .n = 1, .label = in.dtype == DT_I32 && a->rank == 1 ? 0 : -1,
			   .classes = 1 + pick / DT_COUNT};
	Dataset train, test;
	char err[1024];
	if (rt_load_npy(fuzz_dir(), &set, &train, &test, err, sizeof err)) {
		if (train.narrays != 1 || train.n != a->dim[0] || train.arrays[0].size * train.n != a->count)
			abort();
		rt_dataset_free(&train);
		rt_dataset_free(&test);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *f = data + 1;
	size_t n = size - 1;
	RtNpyArray a;
	char err[1024];
	volatile double sum = 0;
	if (rt_npy_parse("x.npy", f, n, &a, err, sizeof err)) {
		for (int64_t i = 0; i < a.count; i++)
			sum += rt_npy_element(&a, i);
		if (a.rank >= 1)
			load_as_input(f, n, &a, data[0]);
	}
	int rank;
	int64_t dim[NPY_MAX_DIMS];
	float *values;
	if (rt_npy_read(fuzz_as_file(f, n), &rank, dim, &values, err, sizeof err))
		free(values);
	return 0;
}
