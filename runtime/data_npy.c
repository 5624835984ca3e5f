/* data_npy.c: NumPy .npy arrays as a data set, bound to the network's inputs by name:
 * DIR/train/NAME.npy and DIR/val/NAME.npy (or DIR/test), or DIR/NAME.npy alone (no held-out
 * set), one array per input. Each array's first axis is the examples and the rest the input's
 * shape without the batch. Values are kept as doubles, exact for every input dtype, and converted
 * to the input's dtype when a batch is written; an i32 input takes whole numbers (the label input
 * classes in [0, classes)). Little-endian f4, f8, i1, i2, i4, i8, u1 and bool arrays in C order
 * are read (format versions 1 to 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/npy.h"
#include "runtime/readfile.h"
#include "runtime/rt.h"

/* The per-example shape of input x; "NAME.npy [n, dim...]" must match. */
static bool check_shape(const char *path, const RtNpyArray *a, const RtNpyInput *x, char *err, size_t errlen)
{
	bool ok = a->rank == x->rank + 1;
	for (int d = 0; ok && d < x->rank; d++)
		ok = a->dim[d + 1] == x->dim[d];
	if (ok)
		return true;
	char buf[160] = "[n", got[160] = "[";
	for (int d = 0; d < x->rank; d++)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), ", %lld", (long long)x->dim[d]);
	for (int d = 0; d < a->rank; d++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)a->dim[d]);
	return rt_file_error(err, errlen, path, "an array of shape %s]; the model's input needs %s]", got, buf);
}

/* An i32 input takes whole numbers in its range: [0, classes) for the labels, else i32's. */
static bool check_integers(const char *path, const RtArray *arr, int64_t n, bool labels, int64_t classes,
			   char *err, size_t errlen)
{
	double lo = labels ? 0 : INT32_MIN, hi = labels ? (double)classes - 1 : INT32_MAX;
	for (int64_t i = 0; i < n * arr->size; i++) {
		double v = arr->values[i];
		if (v == floor(v) && v >= lo && v <= hi)
			continue;
		if (labels)
			return rt_file_error(err, errlen, path, "label %g of example %lld is not a class in [0, %lld)", v,
					     (long long)(i / arr->size), (long long)classes);
		return rt_file_error(err, errlen, path, "value %g of example %lld is not an i32 (the input is i32)", v,
				     (long long)(i / arr->size));
	}
	return true;
}

/* DIR/NAME.npy of input k into set->arrays[k]; its examples must number *n (-1: the first sets it). */
static bool load_array(const char *dir, const RtNpyInputs *in, int k, Dataset *set, int64_t *n, char *first,
		       char *err, size_t errlen)
{
	const RtNpyInput *x = &in->input[k];
	char path[4200];
	snprintf(path, sizeof path, "%s/%s.npy", dir, x->name);
	uint8_t *raw = NULL;
	size_t size;
	RtNpyArray a;
	bool ok = rt_read_file(path, &raw, &size, err, errlen) && rt_npy_parse(path, raw, size, &a, err, errlen) &&
		  check_shape(path, &a, x, err, errlen);
	if (ok && *n >= 0 && a.dim[0] != *n)
		ok = rt_file_error(err, errlen, path, "%lld examples, but %s has %lld", (long long)a.dim[0], first,
				   (long long)*n);
	if (ok && a.dim[0] == 0)
		ok = rt_file_error(err, errlen, path, "no examples");
	RtArray *arr = &set->arrays[k];
	if (ok) {
		*n = a.dim[0];
		snprintf(first, 4200, "%s", path);
		arr->size = a.count / a.dim[0];
		arr->values = malloc((size_t)a.count * sizeof *arr->values);
		if (!arr->values)
			ok = rt_file_error(err, errlen, path, "out of memory for %lld values", (long long)a.count);
	}
	for (int64_t i = 0; ok && i < a.count; i++)
		arr->values[i] = rt_npy_element(&a, i);
	if (ok && x->dtype == DT_I32)
		ok = check_integers(path, arr, *n, k == in->label, in->classes, err, errlen);
	free(raw);
	return ok;
}

/* One split: an array per input, all of one number of examples. */
static bool load_split(const char *dir, const RtNpyInputs *in, Dataset *set, char *err, size_t errlen)
{
	*set = (Dataset){.classes = (int)in->classes, .narrays = in->n};
	set->arrays = calloc((size_t)in->n + 1, sizeof *set->arrays);
	if (!set->arrays)
		return rt_file_error(err, errlen, dir, "out of memory");
	int64_t n = -1;
	char first[4200] = "";
	bool ok = true;
	for (int k = 0; ok && k < in->n; k++)
		ok = load_array(dir, in, k, set, &n, first, err, errlen);
	set->n = ok ? n : 0;
	return ok;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "DIR/a.npy", "DIR/a.npy and b.npy", "DIR/a.npy, b.npy and c.npy" */
static void describe(char *buf, size_t len, const char *dir, const RtNpyInputs *in)
{
	size_t at = (size_t)snprintf(buf, len, "%.100s/", dir);
	for (int k = 0; k < in->n && at < len; k++)
		at += (size_t)snprintf(buf + at, len - at, "%s%.40s.npy", k == 0 ? "" : k == in->n - 1 ? " and " : ", ",
				       in->input[k].name);
}

bool rt_load_npy(const char *dir, const RtNpyInputs *in, Dataset *train, Dataset *test, char *err, size_t errlen)
{
	memset(train, 0, sizeof *train);
	memset(test, 0, sizeof *test);
	char split[4096], held[4096] = "";
	snprintf(split, sizeof split, "%s/train", dir);
	if (is_dir(split)) {
		static const char *const names[] = {"val", "test"};
		for (int k = 0; k < 2 && !held[0]; k++) {
			snprintf(held, sizeof held, "%s/%s", dir, names[k]);
			if (!is_dir(held))
				held[0] = '\0';
		}
	} else {
		snprintf(split, sizeof split, "%s", dir);
	}
	bool ok = load_split(split, in, train, err, errlen);
	if (ok && held[0]) {
		ok = load_split(held, in, test, err, errlen);
	} else if (ok) {
		*test = (Dataset){.classes = train->classes, .no_holdout = true};
	}
	if (ok) {
		char files[200];
		describe(files, sizeof files, split, in);
		snprintf(train->source, sizeof train->source, "arrays %s: %lld training examples, %lld held out", files,
			 (long long)train->n, (long long)test->n);
		snprintf(test->source, sizeof test->source, "%s", train->source);
	} else {
		rt_dataset_free(train);
		rt_dataset_free(test);
	}
	return ok;
}
