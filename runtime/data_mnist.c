/* data_mnist.c: MNIST from its IDX files (plain or gzipped), or from the built-in generator's
 * IDX files in memory; both go through the one parser below. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef NETC_HAVE_ZLIB
#include <zlib.h>
#endif

#include "runtime/data_idx.h"
#include "runtime/readfile.h"

#define MAX_INFLATED ((size_t)1 << 31) /* far above MNIST's 47 MB: a bound against gzip bombs */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- parsing ---- */

static bool check_magic(const IdxBlob *f, uint32_t want, const char *what, char *err, size_t errlen)
{
	size_t header = want == IDX_IMAGES_MAGIC ? 16 : 8;
	if (f->size < header)
		return rt_file_error(err, errlen, f->name, "truncated: expected a %zu-byte IDX header, file has %zu bytes",
			    header, f->size);
	uint32_t got = be32(f->data);
	if (got != want)
		return rt_file_error(err, errlen, f->name, "expected 0x%08X, the IDX magic of unsigned-byte %s, got 0x%08X%s",
			    want, what, got,
			    got == IDX_LABELS_MAGIC ? " (a label file)" :
			    got == IDX_IMAGES_MAGIC ? " (an image file)" : "");
	return true;
}

static bool parse_images(const IdxBlob *f, int64_t *n, int *h, int *w, char *err, size_t errlen)
{
	if (!check_magic(f, IDX_IMAGES_MAGIC, "images", err, errlen))
		return false;
	uint32_t count = be32(f->data + 4), rows = be32(f->data + 8), cols = be32(f->data + 12);
	if (count == 0)
		return rt_file_error(err, errlen, f->name, "header says 0 images");
	if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096)
		return rt_file_error(err, errlen, f->name, "header says images of %ux%u pixels", rows, cols);
	uint64_t want = (uint64_t)count * rows * cols;
	if (want != f->size - 16)
		return rt_file_error(err, errlen, f->name, "%s: header says %u images of %ux%u = %llu bytes, file has %zu after the header",
			    want > f->size - 16 ? "truncated" : "too long", count, rows, cols,
			    (unsigned long long)want, f->size - 16);
	*n = count;
	*h = (int)rows;
	*w = (int)cols;
	return true;
}

static bool parse_labels(const IdxBlob *f, int64_t *n, char *err, size_t errlen)
{
	if (!check_magic(f, IDX_LABELS_MAGIC, "labels", err, errlen))
		return false;
	uint32_t count = be32(f->data + 4);
	if (count == 0)
		return rt_file_error(err, errlen, f->name, "header says 0 labels");
	if (count != f->size - 8)
		return rt_file_error(err, errlen, f->name, "%s: header says %u labels = %u bytes, file has %zu after the header",
			    count > f->size - 8 ? "truncated" : "too long", count, count, f->size - 8);
	for (uint32_t i = 0; i < count; i++)
		if (f->data[8 + i] > 9)
			return rt_file_error(err, errlen, f->name, "label %u of example %u is outside 0..9",
				    f->data[8 + i], i);
	*n = count;
	return true;
}

/* As the PyTorch MNIST example normalizes: (x/255 - mean) / std over the training set. */
static void normalize(const uint8_t *src, float *dst, size_t n)
{
	float lut[256];
	for (int v = 0; v < 256; v++)
		lut[v] = (float)((v / 255.0 - 0.1307) / 0.3081);
	for (size_t i = 0; i < n; i++)
		dst[i] = lut[src[i]];
}

static bool make_set(const IdxBlob *img, const IdxBlob *lbl, Dataset *d, char *err, size_t errlen)
{
	int64_t n = 0, nl = 0;
	int h = 0, w = 0;
	if (!parse_images(img, &n, &h, &w, err, errlen) || !parse_labels(lbl, &nl, err, errlen))
		return false;
	if (n != nl)
		return rt_file_error(err, errlen, img->name, "has %lld images but %s has %lld labels", (long long)n,
			    lbl->name, (long long)nl);
	size_t pixels = (size_t)n * (size_t)h * (size_t)w;
	*d = (Dataset){.n = n, .c = 1, .h = h, .w = w, .classes = 10};
	d->images = malloc(pixels * sizeof *d->images);
	d->labels = malloc((size_t)n * sizeof *d->labels);
	if (!d->images || !d->labels) {
		rt_dataset_free(d);
		return rt_file_error(err, errlen, img->name, "out of memory for %lld images", (long long)n);
	}
	normalize(img->data + 16, d->images, pixels);
	for (int64_t i = 0; i < n; i++)
		d->labels[i] = lbl->data[8 + i];
	return true;
}

bool rt_mnist_parse(const IdxBlob f[MNIST_NFILES], Dataset *train, Dataset *test, char *err, size_t errlen)
{
	memset(train, 0, sizeof *train);
	memset(test, 0, sizeof *test);
	if (!make_set(&f[MNIST_TRAIN_IMAGES], &f[MNIST_TRAIN_LABELS], train, err, errlen))
		return false;
	if (!make_set(&f[MNIST_TEST_IMAGES], &f[MNIST_TEST_LABELS], test, err, errlen)) {
		rt_dataset_free(train);
		return false;
	}
	if (test->h != train->h || test->w != train->w) {
		rt_file_error(err, errlen, f[MNIST_TEST_IMAGES].name, "has %dx%d images but %s has %dx%d",
		     test->h, test->w, f[MNIST_TRAIN_IMAGES].name, train->h, train->w);
		rt_dataset_free(train);
		rt_dataset_free(test);
		return false;
	}
	return true;
}

/* ---- files ---- */

#ifndef NETC_HAVE_ZLIB
static bool gunzip(IdxBlob *f, char *err, size_t errlen)
{
	return rt_file_error(err, errlen, f->name, "is gzipped, and this netc was built without zlib: "
		    "gunzip it, or rebuild netc with zlib");
}
#else
static bool gunzip(IdxBlob *f, char *err, size_t errlen)
{
	z_stream z = {0};
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return rt_file_error(err, errlen, f->name, "cannot start zlib");
	size_t cap = f->size * 4 + 4096, n = 0;
	uint8_t *out = malloc(cap);
	int rc = Z_OK;
	z.next_in = f->data;
	z.avail_in = (uInt)(f->size < UINT32_MAX ? f->size : UINT32_MAX);
	while (out && rc == Z_OK) {
		if (n == cap) {
			uint8_t *grown = cap < MAX_INFLATED ? realloc(out, cap * 2) : NULL;
			if (!grown)
				break;
			out = grown;
			cap *= 2;
		}
		z.next_out = out + n;
		z.avail_out = (uInt)(cap - n < UINT32_MAX ? cap - n : UINT32_MAX);
		rc = inflate(&z, Z_NO_FLUSH);
		n = (size_t)(z.next_out - out);
	}
	const char *msg = z.msg;
	inflateEnd(&z);
	if (rc != Z_STREAM_END) {
		bool oom = !out || cap < MAX_INFLATED;
		free(out);
		if (rc == Z_OK)
			return rt_file_error(err, errlen, f->name, oom ? "out of memory inflating it" :
				    "inflates to more than %zu bytes", MAX_INFLATED);
		return rt_file_error(err, errlen, f->name, "%s gzip data%s%s", rc == Z_BUF_ERROR ? "truncated" : "corrupt",
			    msg ? ": " : "", msg ? msg : "");
	}
	free(f->data);
	f->data = out;
	f->size = n;
	return true;
}
#endif

bool rt_idx_inflate(IdxBlob *f, char *err, size_t errlen)
{
	if (f->size >= 2 && f->data[0] == 0x1f && f->data[1] == 0x8b)
		return gunzip(f, err, errlen);
	return true;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* dir/name, else dir/name.gz; gzip is told by its magic bytes, not by the name. */
static bool load_file(const char *dir, const char *name, IdxBlob *f, char *err, size_t errlen)
{
	char plain[sizeof f->name - 8];
	snprintf(plain, sizeof plain, "%s/%s", dir, name);
	snprintf(f->name, sizeof f->name, "%s", plain);
	if (!exists(plain)) {
		snprintf(f->name, sizeof f->name, "%s.gz", plain);
		if (!exists(f->name))
			return rt_file_error(err, errlen, plain, "no such file (nor %s.gz): MNIST needs %s, %s, %s and %s",
				    name, rt_mnist_names[0], rt_mnist_names[1], rt_mnist_names[2], rt_mnist_names[3]);
	}
	return rt_read_file(f->name, &f->data, &f->size, err, errlen) && rt_idx_inflate(f, err, errlen);
}

bool rt_load_mnist(const char *dir, uint64_t seed, Dataset *train, Dataset *test, char *err, size_t errlen)
{
	IdxBlob f[MNIST_NFILES];
	memset(f, 0, sizeof f);
	bool ok = true;
	if (dir) {
		for (int i = 0; i < MNIST_NFILES && ok; i++)
			ok = load_file(dir, rt_mnist_names[i], &f[i], err, errlen);
	} else if (!rt_synth_mnist(seed, 60000, 10000, f)) {
		snprintf(err, errlen, "out of memory generating the built-in data set");
		ok = false;
	}
	ok = ok && rt_mnist_parse(f, train, test, err, errlen);
	rt_blobs_free(f, MNIST_NFILES);
	if (!ok)
		return false;
	if (dir) {
		snprintf(train->source, sizeof train->source, "MNIST from %s (%lld train, %lld test)", dir,
			 (long long)train->n, (long long)test->n);
	} else {
		snprintf(train->source, sizeof train->source, "built-in MNIST-like set (%lld train, %lld test, "
			 "generated; pass --data DIR for MNIST files)", (long long)train->n, (long long)test->n);
	}
	snprintf(test->source, sizeof test->source, "%s", train->source);
	return true;
}

void rt_dataset_free(Dataset *d)
{
	free(d->images);
	free(d->labels);
	free(d->bytes);
	if (d->free_files)
		d->free_files(d->files);
	for (int k = 0; k < d->narrays; k++)
		free(d->arrays[k].values);
	free(d->arrays);
	memset(d, 0, sizeof *d);
}
