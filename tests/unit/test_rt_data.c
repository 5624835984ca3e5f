/* test_rt_data.c: the MNIST loader and the built-in generator. The generator's IDX files written
 * plain and gzipped load back identically; damaged files are errors naming the file; the
 * generated set is deterministic, has 10 balanced classes and classes a nearest-mean rule tells
 * apart. */
#include "runtime/data_idx.h"
#include "tests/unit/test_util.h"

static char dir[512];

static void path_of(int i, bool gz, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%s", dir, rt_mnist_names[i], gz ? ".gz" : "");
}

static void clear_dir(void)
{
	char p[1024];
	for (int i = 0; i < MNIST_NFILES; i++)
		for (int gz = 0; gz < 2; gz++) {
			path_of(i, gz, p, sizeof p);
			remove(p);
		}
}

/* Writes file i of f, gzipped or plain, cut to size bytes (SIZE_MAX: all). */
static uint32_t crc32_of(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
	}
	return ~c;
}

static void put_le(FILE *o, uint32_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		fputc((int)(v >> (8 * i)) & 0xFF, o);
}

/* gzip with stored deflate blocks: what any inflater reads, written without zlib, so this test
 * builds where the runtime has none. */
static void write_gzip(FILE *o, const uint8_t *data, size_t n)
{
	static const uint8_t header[10] = {0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3};
	fwrite(header, 1, sizeof header, o);
	size_t at = 0;
	do {
		size_t len = n - at < 65535 ? n - at : 65535;
		fputc(at + len == n, o); /* BFINAL, BTYPE 00: stored */
		put_le(o, (uint32_t)len, 2);
		put_le(o, (uint32_t)~len, 2);
		fwrite(data + at, 1, len, o);
		at += len;
	} while (at < n);
	put_le(o, crc32_of(data, n), 4);
	put_le(o, (uint32_t)n, 4);
}

static void write_file(const IdxBlob *f, int i, bool gz, size_t size)
{
	char p[1024];
	path_of(i, gz, p, sizeof p);
	size_t n = size < f[i].size ? size : f[i].size;
	FILE *o = fopen(p, "wb");
	if (!o)
		abort();
	if (gz)
		write_gzip(o, f[i].data, n);
	else if (fwrite(f[i].data, 1, n, o) != n)
		abort();
	if (fclose(o) != 0)
		abort();
}

static void write_all(const IdxBlob *f, bool gz)
{
	clear_dir();
	for (int i = 0; i < MNIST_NFILES; i++)
		write_file(f, i, gz, SIZE_MAX);
}

static bool same_set(const Dataset *a, const Dataset *b)
{
	return a->n == b->n && a->h == b->h && a->w == b->w && a->c == b->c &&
	       memcmp(a->labels, b->labels, (size_t)a->n * sizeof *a->labels) == 0 &&
	       memcmp(a->images, b->images, (size_t)(a->n * a->h * a->w) * sizeof *a->images) == 0;
}

static void expect_load(const Dataset *tr, const Dataset *te, const char *what)
{
	Dataset a, b;
	char err[1024];
	bool ok = rt_load_mnist(dir, 0, &a, &b, err, sizeof err);
	CHECK(ok, "%s: %s", what, err);
	if (!ok)
		return;
	CHECK(same_set(&a, tr) && same_set(&b, te), "%s: loaded set differs from the generated one", what);
	CHECK(strstr(a.source, dir) != NULL, "%s: source '%s'", what, a.source);
	rt_dataset_free(&a);
	rt_dataset_free(&b);
}

/* A runtime built without zlib must say so for gzipped files, and may read none. */
static bool reads_gzip(void)
{
	Dataset a, b;
	char err[1024];
	if (rt_load_mnist(dir, 0, &a, &b, err, sizeof err)) {
		rt_dataset_free(&a);
		rt_dataset_free(&b);
		return true;
	}
	if (!strstr(err, "built without zlib"))
		return true; /* expect_load reports it */
	printf("this runtime reads no gzip: %s\n", err);
	return false;
}

/* Loading dir must fail, naming file i and saying want. */
static void expect_error(int i, const char *want, const char *what)
{
	Dataset a, b;
	char err[1024] = "";
	bool ok = rt_load_mnist(dir, 0, &a, &b, err, sizeof err);
	CHECK(!ok, "%s loaded", what);
	if (ok) {
		rt_dataset_free(&a);
		rt_dataset_free(&b);
		return;
	}
	printf("%s: %s\n", what, err);
	CHECK(strstr(err, rt_mnist_names[i]) != NULL, "%s: '%s' does not name %s", what, err, rt_mnist_names[i]);
	CHECK(strstr(err, want) != NULL, "%s: '%s' lacks '%s'", what, err, want);
}

/* Writes the valid set, then file i replaced by a damaged copy. */
static void with_damaged(const IdxBlob *f, int i, const uint8_t *data, size_t size)
{
	write_all(f, false);
	IdxBlob d = f[i];
	d.data = (uint8_t *)data;
	d.size = size;
	IdxBlob copy[MNIST_NFILES];
	memcpy(copy, f, sizeof copy);
	copy[i] = d;
	write_file(copy, i, false, SIZE_MAX);
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void test_errors(const IdxBlob *f, bool gzip)
{
	uint8_t *m = malloc(f[0].size);
	/* missing: both spellings are named */
	write_all(f, false);
	char p[1024];
	path_of(MNIST_TEST_LABELS, false, p, sizeof p);
	remove(p);
	expect_error(MNIST_TEST_LABELS, "t10k-labels-idx1-ubyte.gz", "missing file");

	with_damaged(f, MNIST_TRAIN_IMAGES, f[0].data, f[0].size - 100);
	expect_error(MNIST_TRAIN_IMAGES, "truncated: header says", "truncated images");

	memcpy(m, f[0].data, f[0].size);
	be32(m, 0x00000801);
	with_damaged(f, MNIST_TRAIN_IMAGES, m, f[0].size);
	expect_error(MNIST_TRAIN_IMAGES, "expected 0x00000803, the IDX magic of unsigned-byte images, got 0x00000801",
		     "wrong magic");

	memcpy(m, f[1].data, f[1].size);
	be32(m + 4, (uint32_t)(f[1].size - 8 - 1));
	with_damaged(f, MNIST_TRAIN_LABELS, m, f[1].size - 1);
	expect_error(MNIST_TRAIN_LABELS, "labels", "count mismatch");

	memcpy(m, f[3].data, f[3].size);
	m[8 + f[3].size / 2 - 4] = 12;
	with_damaged(f, MNIST_TEST_LABELS, m, f[3].size);
	expect_error(MNIST_TEST_LABELS, "label 12", "bad label");

	memcpy(m, f[2].data, 16);
	be32(m + 4, 0);
	with_damaged(f, MNIST_TEST_IMAGES, m, 16);
	expect_error(MNIST_TEST_IMAGES, "0 images", "zero images");

	write_all(f, false);
	path_of(MNIST_TRAIN_IMAGES, false, p, sizeof p);
	remove(p);
	write_file(f, MNIST_TRAIN_IMAGES, true, f[0].size / 2); /* a valid gzip of half the file */
	expect_error(MNIST_TRAIN_IMAGES, gzip ? "truncated" : "built without zlib", "gzip of a truncated file");
	free(m);
}

/* Ten classes of exactly n/10, and a nearest-class-mean rule fitted on train gets test right
 * far above chance: the classes differ in shape, not only in noise. */
static void test_classes(const Dataset *tr, const Dataset *te)
{
	int64_t count[10] = {0};
	int64_t pix = tr->h * tr->w;
	double *mean = calloc((size_t)(10 * pix), sizeof *mean);
	for (int64_t i = 0; i < tr->n; i++) {
		count[tr->labels[i]]++;
		for (int64_t j = 0; j < pix; j++)
			mean[tr->labels[i] * pix + j] += tr->images[i * pix + j];
	}
	for (int c = 0; c < 10; c++) {
		CHECK(count[c] == tr->n / 10, "class %d has %lld of %lld", c, (long long)count[c], (long long)tr->n);
		for (int64_t j = 0; j < pix; j++)
			mean[c * pix + j] /= (double)(count[c] ? count[c] : 1);
	}
	for (int a = 0; a < 10; a++)
		for (int b = a + 1; b < 10; b++) {
			double d = 0;
			for (int64_t j = 0; j < pix; j++)
				d += pow(mean[a * pix + j] - mean[b * pix + j], 2);
			CHECK(sqrt(d) > 2, "class means %d and %d are %.3f apart", a, b, sqrt(d));
		}
	int64_t hits = 0;
	for (int64_t i = 0; i < te->n; i++) {
		int best = 0;
		double best_d = INFINITY;
		for (int c = 0; c < 10; c++) {
			double d = 0;
			for (int64_t j = 0; j < pix; j++)
				d += pow(te->images[i * pix + j] - mean[c * pix + j], 2);
			if (d < best_d)
				best_d = d, best = c;
		}
		hits += best == te->labels[i];
	}
	double acc = (double)hits / (double)te->n;
	printf("nearest class mean: %.1f%% of the generated test set\n", 100 * acc);
	CHECK(acc > 0.5, "nearest class mean gets only %.3f", acc);
	free(mean);
}

int main(void)
{
	uint64_t seed = tu_start("test_rt_data");
	snprintf(dir, sizeof dir, "%s/test_rt_data_XXXXXX", tu_tmpdir());
	if (!mkdtemp(dir))
		abort();

	IdxBlob f[MNIST_NFILES], g[MNIST_NFILES];
	CHECK(rt_synth_mnist(seed, 3000, 700, f), "generate");
	CHECK(rt_synth_mnist(seed, 3000, 700, g), "generate again");
	for (int i = 0; i < MNIST_NFILES; i++)
		CHECK(f[i].size == g[i].size && memcmp(f[i].data, g[i].data, f[i].size) == 0,
		      "the same seed generated a different %s", rt_mnist_names[i]);
	rt_blobs_free(g, MNIST_NFILES);
	CHECK(rt_synth_mnist(seed + 1, 3000, 700, g), "generate");
	CHECK(memcmp(f[0].data, g[0].data, f[0].size) != 0, "another seed generated the same images");
	rt_blobs_free(g, MNIST_NFILES);

	Dataset tr, te;
	char err[1024];
	CHECK(rt_mnist_parse(f, &tr, &te, err, sizeof err), "parse: %s", err);
	CHECK(tr.n == 3000 && te.n == 700 && tr.h == 28 && tr.w == 28 && tr.c == 1 && tr.classes == 10,
	      "shape %lld %lld %dx%d", (long long)tr.n, (long long)te.n, tr.h, tr.w);
	CHECK(fabsf(tr.images[0] - (float)((f[0].data[16] / 255.0 - 0.1307) / 0.3081)) < 1e-6,
	      "normalization");
	write_all(f, false);
	expect_load(&tr, &te, "plain files");
	write_all(f, true);
	bool gzip = reads_gzip();
	if (gzip)
		expect_load(&tr, &te, "gzipped files");
	test_errors(f, gzip);
	rt_dataset_free(&tr);
	rt_dataset_free(&te);
	rt_blobs_free(f, MNIST_NFILES);
	clear_dir();
	rmdir(dir);

	/* the full built-in set, as training uses it */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool ok = rt_load_mnist(NULL, seed, &tr, &te, err, sizeof err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(ok, "built-in: %s", err);
	if (ok) {
		printf("built-in set in %.2f s\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
		CHECK(tr.n == 60000 && te.n == 10000, "sizes %lld %lld", (long long)tr.n, (long long)te.n);
		CHECK(strcmp(tr.source, "built-in MNIST-like set (60000 train, 10000 test, generated; "
			     "pass --data DIR for MNIST files)") == 0, "source '%s'", tr.source);
		test_classes(&tr, &te);
		rt_dataset_free(&tr);
		rt_dataset_free(&te);
	}
	return tu_finish("test_rt_data");
}
