/* data_cifar.c: CIFAR-10 from its binary files, or from the built-in generator's records in
 * memory; both go through the one parser below. The images stay bytes (150 MB rather than 600 as
 * floats): each example is cropped, flipped and normalized as a batch loads it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/data_cifar.h"
#include "runtime/hash.h"
#include "runtime/readfile.h"

/* ---- one example as the model's input ---- */

/* TensorFlow's per_image_standardization: (x - mean) / max(stddev, 1/sqrt(n)) over the image. */
static void standardize(float *x, int64_t n)
{
	double sum = 0, sq = 0;
	for (int64_t i = 0; i < n; i++) {
		sum += x[i];
		sq += (double)x[i] * x[i];
	}
	double mean = sum / (double)n, var = sq / (double)n - mean * mean;
	double sd = sqrt(var > 0 ? var : 0), floor_sd = 1 / sqrt((double)n);
	float scale = (float)(1 / (sd > floor_sd ? sd : floor_sd));
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)(x[i] - mean) * scale;
}

/* cifar10_tf: a random crop and a random horizontal flip in training, the central crop in
 * evaluation (TensorFlow's resize_image_with_crop_or_pad), then per-image standardization. */
static void crop_example(const Dataset *d, const uint8_t *px, int64_t i, bool train, uint64_t key, float *dst)
{
	int dy = (CIFAR_SIDE - d->h) / 2, dx = (CIFAR_SIDE - d->w) / 2;
	bool flip = false;
	if (train) {
		uint64_t k = rt_mix64(key ^ rt_mix64((uint64_t)i));
		dy = (int)(rt_uniform(k, 0) * (CIFAR_SIDE - d->h + 1));
		dx = (int)(rt_uniform(k, 1) * (CIFAR_SIDE - d->w + 1));
		flip = rt_uniform(k, 2) < 0.5;
	}
	float *o = dst;
	for (int c = 0; c < 3; c++)
		for (int y = 0; y < d->h; y++) {
			const uint8_t *row = px + (c * CIFAR_SIDE + y + dy) * CIFAR_SIDE + dx;
			for (int x = 0; x < d->w; x++)
				*o++ = row[flip ? d->w - 1 - x : x];
		}
	standardize(dst, 3 * (int64_t)d->h * d->w);
}

static int32_t cifar_example(const Dataset *d, int64_t i, bool train, uint64_t key, float *dst)
{
	const uint8_t *rec = d->bytes + i * CIFAR_RECORD;
	if (d->crop) {
		crop_example(d, rec + 1, i, train, key, dst);
	} else {
		/* cifar_simple: ToTensor, then Normalize with mean and std 0.5 per channel */
		for (int k = 0; k < CIFAR_PIXELS; k++)
			dst[k] = (float)(rec[1 + k] / 255.0 - 0.5) / 0.5f;
	}
	return rec[0];
}

int32_t rt_dataset_example(const Dataset *d, int64_t i, bool train, uint64_t key, float *dst)
{
	if (d->example)
		return d->example(d, i, train, key, dst);
	size_t pixels = (size_t)d->c * (size_t)d->h * (size_t)d->w;
	memcpy(dst, d->images + (size_t)i * pixels, pixels * sizeof *dst);
	return d->labels[i];
}

/* ---- parsing ---- */

static bool check_records(const IdxBlob *f, char *err, size_t errlen)
{
	if (f->size == 0)
		return rt_file_error(err, errlen, f->name, "is empty: expected records of %d bytes (a label byte and %d pixel bytes)",
			    CIFAR_RECORD, CIFAR_PIXELS);
	if (f->size % CIFAR_RECORD)
		return rt_file_error(err, errlen, f->name, "has %zu bytes, not a multiple of the %d-byte record (a label byte "
			    "and 3x32x32 pixel bytes): truncated, or not the binary version of CIFAR-10", f->size,
			    CIFAR_RECORD);
	for (size_t r = 0; r < f->size / CIFAR_RECORD; r++)
		if (f->data[r * CIFAR_RECORD] > 9)
			return rt_file_error(err, errlen, f->name, "record %zu has label %u, outside 0..9 (CIFAR-10 has 10 classes)",
				    r, f->data[r * CIFAR_RECORD]);
	return true;
}

/* The records of files f[0..nf) as one set of the model's h x w examples. */
static bool make_set(const IdxBlob *f, int nf, int h, int w, Dataset *d, char *err, size_t errlen)
{
	size_t bytes = 0;
	for (int i = 0; i < nf; i++) {
		if (!check_records(&f[i], err, errlen))
			return false;
		bytes += f[i].size;
	}
	int64_t n = (int64_t)(bytes / CIFAR_RECORD);
	bool fits = h >= 1 && w >= 1 && h <= CIFAR_SIDE && w <= CIFAR_SIDE;
	/* a shape that does not fit stays 32x32, and the check against the model names both */
	*d = (Dataset){.n = n, .c = 3, .h = fits ? h : CIFAR_SIDE, .w = fits ? w : CIFAR_SIDE, .classes = 10,
		       .example = cifar_example, .crop = fits && (h < CIFAR_SIDE || w < CIFAR_SIDE)};
	d->bytes = malloc(bytes);
	d->labels = malloc((size_t)n * sizeof *d->labels);
	if (!d->bytes || !d->labels) {
		rt_dataset_free(d);
		return rt_file_error(err, errlen, f[0].name, "out of memory for %lld images", (long long)n);
	}
	size_t at = 0;
	for (int i = 0; i < nf; i++) {
		memcpy(d->bytes + at, f[i].data, f[i].size);
		at += f[i].size;
	}
	for (int64_t i = 0; i < n; i++)
		d->labels[i] = d->bytes[i * CIFAR_RECORD];
	return true;
}

bool rt_cifar_parse(const IdxBlob f[CIFAR_NFILES], int h, int w, Dataset *train, Dataset *test, char *err,
		    size_t errlen)
{
	memset(train, 0, sizeof *train);
	memset(test, 0, sizeof *test);
	if (!make_set(f, CIFAR_TRAIN_FILES, h, w, train, err, errlen))
		return false;
	if (!make_set(f + CIFAR_TRAIN_FILES, 1, h, w, test, err, errlen)) {
		rt_dataset_free(train);
		return false;
	}
	return true;
}

/* ---- files ---- */

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* The folder holding the files: dir, or the cifar-10-batches-bin folder the archive unpacks to. */
static void files_dir(const char *dir, char *out, size_t len)
{
	char probe[1024];
	snprintf(out, len, "%s", dir);
	snprintf(probe, sizeof probe, "%s/%s", dir, rt_cifar_names[0]);
	if (exists(probe))
		return;
	snprintf(probe, sizeof probe, "%s/cifar-10-batches-bin/%s", dir, rt_cifar_names[0]);
	if (exists(probe))
		snprintf(out, len, "%s/cifar-10-batches-bin", dir);
}

static bool load_files(const char *dir, IdxBlob f[CIFAR_NFILES], char *err, size_t errlen)
{
	char base[480];
	files_dir(dir, base, sizeof base);
	for (int i = 0; i < CIFAR_NFILES; i++) {
		snprintf(f[i].name, sizeof f[i].name, "%s/%s", base, rt_cifar_names[i]);
		if (!exists(f[i].name))
			return rt_file_error(err, errlen, f[i].name, "no such file: CIFAR-10 needs %s ... %s and %s (the binary "
				    "version, cifar-10-binary.tar.gz)", rt_cifar_names[0], rt_cifar_names[4],
				    rt_cifar_names[5]);
		if (!rt_read_file(f[i].name, &f[i].data, &f[i].size, err, errlen))
			return false;
	}
	return true;
}

bool rt_load_cifar(const char *dir, uint64_t seed, int h, int w, Dataset *train, Dataset *test, char *err,
		   size_t errlen)
{
	IdxBlob f[CIFAR_NFILES];
	memset(f, 0, sizeof f);
	bool ok = true;
	if (dir) {
		ok = load_files(dir, f, err, errlen);
	} else if (!rt_synth_cifar(seed, 50000, 10000, f)) {
		snprintf(err, errlen, "out of memory generating the built-in data set");
		ok = false;
	}
	ok = ok && rt_cifar_parse(f, h, w, train, test, err, errlen);
	rt_blobs_free(f, CIFAR_NFILES);
	if (!ok)
		return false;
	const char *how = train->crop ? "random %dx%d crops and flips, per-image standardization" :
					"whole %dx%d images, mean and std 0.5";
	char prep[96];
	snprintf(prep, sizeof prep, how, train->h, train->w);
	if (dir)
		snprintf(train->source, sizeof train->source, "CIFAR-10 from %s (%lld train, %lld test; %s)", dir,
			 (long long)train->n, (long long)test->n, prep);
	else
		snprintf(train->source, sizeof train->source, "built-in CIFAR-like set (%lld train, %lld test, "
			 "generated; %s; pass --data DIR for CIFAR-10 files)", (long long)train->n, (long long)test->n,
			 prep);
	snprintf(test->source, sizeof test->source, "%s", train->source);
	return true;
}
