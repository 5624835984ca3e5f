/* data_npy.c: NumPy .npy arrays as a data set, bound to the network's inputs by name:
 * DIR/train/NAME.npy and DIR/val/NAME.npy (or DIR/test), or DIR/NAME.npy alone (no held-out
 * set), for the image input and the label input. Each array's first axis is the examples and the
 * rest the input's shape without the batch; the image array is read as floats, the label array
 * as class numbers (an i32 label input) or as float targets (a float one). Little-endian f4, f8,
 * i1, i2, i4, i8, u1 and bool arrays in C order are read (format versions 1 to 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/npy.h"
#include "runtime/readfile.h"
#include "runtime/rt.h"

/* want: the per-example shape; "NAME.npy [n, want...]" must match. */
static bool check_shape(const char *path, const RtNpyArray *a, int rank, const int64_t *want, char *err, size_t errlen)
{
	bool ok = a->rank == rank + 1;
	for (int d = 0; ok && d < rank; d++)
		ok = a->dim[d + 1] == want[d];
	if (ok)
		return true;
	char buf[160] = "[n", got[160] = "[";
	for (int d = 0; d < rank; d++)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), ", %lld", (long long)want[d]);
	for (int d = 0; d < a->rank; d++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)a->dim[d]);
	return rt_file_error(err, errlen, path, "an array of shape %s]; the model's input needs %s]", got, buf);
}

/* One split: DIR/NAME.npy for the image and, when label_name, the labels or targets. */
static bool load_split(const char *dir, const RtNpyInputs *in, Dataset *set, char *err, size_t errlen)
{
	char path[2][4200];
	uint8_t *raw[2] = {NULL, NULL};
	size_t size[2];
	RtNpyArray a[2];
	int nfiles = in->label_name ? 2 : 1;
	const char *names[2] = {in->image_name, in->label_name};
	bool ok = true;
	for (int k = 0; ok && k < nfiles; k++) {
		snprintf(path[k], sizeof path[k], "%s/%s.npy", dir, names[k]);
		ok = rt_read_file(path[k], &raw[k], &size[k], err, errlen) && rt_npy_parse(path[k], raw[k], size[k], &a[k], err, errlen);
	}
	ok = ok && check_shape(path[0], &a[0], in->image_rank, in->image_dim, err, errlen);
	if (ok && in->label_name && in->target_rank >= 0)
		ok = check_shape(path[1], &a[1], in->target_rank, in->target_dim, err, errlen);
	else if (ok && in->label_name)
		ok = check_shape(path[1], &a[1], 0, NULL, err, errlen);
	if (ok && in->label_name && a[1].dim[0] != a[0].dim[0])
		ok = rt_file_error(err, errlen, path[1], "%lld examples, but %s has %lld", (long long)a[1].dim[0], path[0],
				   (long long)a[0].dim[0]);
	if (ok && a[0].dim[0] == 0)
		ok = rt_file_error(err, errlen, path[0], "no examples");
	int64_t n = ok ? a[0].dim[0] : 0;
	*set = (Dataset){.n = n, .rank = in->image_rank};
	memcpy(set->dim, in->image_dim, sizeof set->dim);
	if (ok) {
		set->images = malloc((size_t)a[0].count * sizeof *set->images + 1);
		set->labels = calloc((size_t)n + 1, sizeof *set->labels);
		int64_t tcount = in->label_name && in->target_rank >= 0 ? a[1].count : 0;
		set->targets = tcount ? malloc((size_t)tcount * sizeof *set->targets) : NULL;
		set->target_size = tcount ? tcount / n : 0;
		if (!set->images || !set->labels || (tcount && !set->targets))
			ok = rt_file_error(err, errlen, path[0], "out of memory for %lld examples", (long long)n);
		for (int64_t i = 0; ok && i < a[0].count; i++)
			set->images[i] = (float)rt_npy_element(&a[0], i);
		for (int64_t i = 0; ok && i < tcount; i++)
			set->targets[i] = (float)rt_npy_element(&a[1], i);
		for (int64_t i = 0; ok && in->label_name && !tcount && i < n; i++) {
			double v = rt_npy_element(&a[1], i);
			if (v != floor(v) || v < 0 || v >= in->classes) {
				ok = rt_file_error(err, errlen, path[1], "label %g of example %lld is not a class in [0, %lld)", v,
						   (long long)i, (long long)in->classes);
				break;
			}
			set->labels[i] = (int32_t)v;
		}
	}
	free(raw[0]);
	free(raw[1]);
	set->classes = (int)in->classes;
	return ok;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
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
		*test = (Dataset){.rank = train->rank, .classes = train->classes, .target_size = train->target_size,
				  .no_holdout = true};
		memcpy(test->dim, train->dim, sizeof test->dim);
	}
	if (ok) {
		snprintf(train->source, sizeof train->source, "arrays %.120s/%.40s.npy%s%.40s%s: %lld training examples, %lld held out",
			 split, in->image_name, in->label_name ? " and " : "", in->label_name ? in->label_name : "",
			 in->label_name ? ".npy" : "", (long long)train->n, (long long)test->n);
		snprintf(test->source, sizeof test->source, "%s", train->source);
	} else {
		rt_dataset_free(train);
		rt_dataset_free(test);
	}
	return ok;
}
