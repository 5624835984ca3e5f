/* test_rt_cifar.c: the CIFAR-10 reader, the CIFAR-like generator and the ImageNet-shaped
 * synthetic set. The generator's records written as files load back identically; damaged files
 * (missing, a size that is not a multiple of 3073, a label above 9) are errors naming the file;
 * each example becomes the model's input as the original scripts make it: the whole image as
 * (x/255 - 0.5)/0.5, or a crop (random in training, central in evaluation), maybe flipped, with
 * per-image standardization; synthetic examples are deterministic with labels in range. */
#include <sys/stat.h>

#include "runtime/data_cifar.h"
#include "tests/unit/test_util.h"

#define NTRAIN 250
#define NTEST 60

static char dir[512];

static void write_files(const IdxBlob *f, int cut, size_t cut_size)
{
	for (int i = 0; i < CIFAR_NFILES; i++) {
		char p[1024];
		snprintf(p, sizeof p, "%s/%s", dir, rt_cifar_names[i]);
		size_t n = i == cut && cut_size < f[i].size ? cut_size : f[i].size;
		FILE *o = fopen(p, "wb");
		if (!o || fwrite(f[i].data, 1, n, o) != n || fclose(o) != 0)
			abort();
	}
}

/* The generator: deterministic, balanced, labels in range, split over five training files. */
static void test_generator(uint64_t seed, IdxBlob *f)
{
	IdxBlob g[CIFAR_NFILES];
	CHECK(rt_synth_cifar(seed, NTRAIN, NTEST, f) && rt_synth_cifar(seed, NTRAIN, NTEST, g));
	int counts[10] = {0};
	size_t total = 0;
	for (int i = 0; i < CIFAR_NFILES; i++) {
		CHECK(f[i].size == g[i].size && memcmp(f[i].data, g[i].data, f[i].size) == 0, "file %d differs", i);
		CHECK(f[i].size % CIFAR_RECORD == 0);
		for (size_t r = 0; i < CIFAR_TRAIN_FILES && r < f[i].size / CIFAR_RECORD; r++)
			counts[f[i].data[r * CIFAR_RECORD] < 10 ? f[i].data[r * CIFAR_RECORD] : 0]++;
		total += i < CIFAR_TRAIN_FILES ? f[i].size : 0;
	}
	CHECK(total == (size_t)NTRAIN * CIFAR_RECORD, "train bytes %zu", total);
	CHECK(f[CIFAR_TRAIN_FILES].size == (size_t)NTEST * CIFAR_RECORD);
	for (int k = 0; k < 10; k++)
		CHECK(counts[k] == NTRAIN / 10, "class %d has %d examples", k, counts[k]);
	rt_blobs_free(g, CIFAR_NFILES);
	CHECK(rt_synth_cifar(seed + 1, NTRAIN, NTEST, g));
	CHECK(memcmp(f[0].data, g[0].data, f[0].size) != 0, "another seed gives the same images");
	rt_blobs_free(g, CIFAR_NFILES);
}

static void expect_error(const char *what, const char *file, const char *want)
{
	Dataset tr, te;
	char err[1024] = "";
	bool ok = rt_load_cifar(dir, 1, 32, 32, &tr, &te, err, sizeof err);
	CHECK(!ok, "%s loaded", what);
	if (ok) {
		rt_dataset_free(&tr);
		rt_dataset_free(&te);
	}
	CHECK(strstr(err, file) != NULL, "%s: '%s' does not name %s", what, err, file);
	CHECK(strstr(err, want) != NULL, "%s: '%s' lacks '%s'", what, err, want);
}

static void test_files(IdxBlob *f)
{
	write_files(f, -1, 0);
	Dataset tr, te;
	char err[1024];
	bool ok = rt_load_cifar(dir, 1, 32, 32, &tr, &te, err, sizeof err);
	CHECK(ok, "%s", err);
	if (ok) {
		CHECK(tr.n == NTRAIN && te.n == NTEST && tr.c == 3 && tr.h == 32 && !tr.crop);
		CHECK(memcmp(tr.bytes, f[0].data, f[0].size) == 0, "the first file's records differ");
		CHECK(te.labels[NTEST - 1] == f[CIFAR_TRAIN_FILES].data[(NTEST - 1) * CIFAR_RECORD]);
		CHECK(strstr(tr.source, dir) != NULL, "source '%s'", tr.source);
		rt_dataset_free(&tr);
		rt_dataset_free(&te);
	}
	write_files(f, 2, f[2].size - 100);
	expect_error("a truncated file", rt_cifar_names[2], "not a multiple of the 3073-byte record");
	f[CIFAR_TRAIN_FILES].data[5 * CIFAR_RECORD] = 12;
	write_files(f, -1, 0);
	f[CIFAR_TRAIN_FILES].data[5 * CIFAR_RECORD] = 0;
	expect_error("a bad label", rt_cifar_names[5], "record 5 has label 12");
	write_files(f, 4, 0);
	expect_error("an empty file", rt_cifar_names[4], "empty");
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", dir, rt_cifar_names[3]);
	remove(p);
	expect_error("a missing file", rt_cifar_names[3], "no such file");
	for (int i = 0; i < CIFAR_NFILES; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, rt_cifar_names[i]);
		remove(p);
	}
}

/* The standardized crop of rec at (dy, dx), maybe flipped, computed here in double. */
static void reference_crop(const uint8_t *px, int h, int w, int dy, int dx, bool flip, double *out)
{
	int n = 3 * h * w, k = 0;
	double sum = 0, sq = 0;
	for (int c = 0; c < 3; c++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				int sx = flip ? dx + w - 1 - x : dx + x;
				out[k] = px[(c * 32 + dy + y) * 32 + sx];
				sum += out[k];
				sq += out[k] * out[k];
				k++;
			}
	double mean = sum / n, sd = sqrt(sq / n - mean * mean);
	sd = sd > 1 / sqrt((double)n) ? sd : 1 / sqrt((double)n);
	for (k = 0; k < n; k++)
		out[k] = (out[k] - mean) / sd;
}

static bool near_all(const float *got, const double *want, int n)
{
	for (int k = 0; k < n; k++)
		if (fabs(got[k] - want[k]) > 1e-4 * (1 + fabs(want[k])))
			return false;
	return true;
}

static void test_examples(const IdxBlob *f)
{
	Dataset whole, wt, crop, ct;
	char err[1024];
	CHECK(rt_cifar_parse(f, 32, 32, &whole, &wt, err, sizeof err), "%s", err);
	CHECK(rt_cifar_parse(f, 24, 24, &crop, &ct, err, sizeof err), "%s", err);
	CHECK(!whole.crop && crop.crop && crop.h == 24 && crop.w == 24);
	float x[CIFAR_PIXELS];
	double ref[CIFAR_PIXELS];
	int64_t i = (int64_t)tu_below(NTRAIN);
	const uint8_t *rec = whole.bytes + i * CIFAR_RECORD;
	CHECK(rt_dataset_example(&whole, i, true, tu_next(), x) == rec[0]);
	int k = (int)tu_below(CIFAR_PIXELS);
	CHECK_NEAR(x[k], (rec[1 + k] / 255.0 - 0.5) / 0.5, 1e-6);
	/* evaluation: the central crop */
	rt_dataset_example(&crop, i, false, tu_next(), x);
	reference_crop(rec + 1, 24, 24, 4, 4, false, ref);
	CHECK(near_all(x, ref, 3 * 24 * 24), "the central crop of example %lld differs", (long long)i);
	/* training: some window, flipped or not, and both flips over many keys */
	int found[2] = {0, 0};
	for (int trial = 0; trial < 24; trial++) {
		uint64_t key = tu_next();
		rt_dataset_example(&crop, i, true, key, x);
		bool match = false;
		for (int dy = 0; dy <= 8 && !match; dy++)
			for (int dx = 0; dx <= 8 && !match; dx++)
				for (int fl = 0; fl < 2 && !match; fl++) {
					reference_crop(rec + 1, 24, 24, dy, dx, fl, ref);
					if (near_all(x, ref, 3 * 24 * 24)) {
						match = true;
						found[fl]++;
					}
				}
		CHECK(match, "training crop %d of example %lld is no window of it", trial, (long long)i);
		float again[CIFAR_PIXELS];
		rt_dataset_example(&crop, i, true, key, again);
		CHECK(memcmp(x, again, 3 * 24 * 24 * sizeof *x) == 0, "the same key gave another crop");
	}
	CHECK(found[0] > 0 && found[1] > 0, "flips: %d plain, %d flipped", found[0], found[1]);
	rt_dataset_free(&whole);
	rt_dataset_free(&wt);
	rt_dataset_free(&crop);
	rt_dataset_free(&ct);
}

static void test_synthetic(uint64_t seed)
{
	Dataset tr, te;
	CHECK(rt_load_synthetic(seed, 3, 40, 36, 7, &tr, &te));
	CHECK(tr.n > 1000000 && te.n == 0 && te.no_holdout && tr.c == 3 && tr.h == 40 && tr.w == 36);
	float *a = tu_calloc(3 * 40 * 36, sizeof *a), *b = tu_calloc(3 * 40 * 36, sizeof *b);
	int seen[7] = {0};
	for (int t = 0; t < 50; t++) {
		int64_t i = (int64_t)tu_below((uint64_t)tr.n);
		int32_t la = rt_dataset_example(&tr, i, true, tu_next(), a);
		int32_t lb = rt_dataset_example(&tr, i, false, tu_next(), b);
		CHECK(la >= 0 && la < 7 && la == lb, "labels %d, %d", la, lb);
		seen[la >= 0 && la < 7 ? la : 0]++;
		CHECK(memcmp(a, b, 3 * 40 * 36 * sizeof *a) == 0, "example %lld changes", (long long)i);
	}
	int classes = 0;
	for (int k = 0; k < 7; k++)
		classes += seen[k] > 0;
	CHECK(classes >= 5, "50 examples show %d of 7 classes", classes);
	free(a);
	free(b);
}

int main(void)
{
	uint64_t seed = tu_start("test_rt_cifar");
	snprintf(dir, sizeof dir, "%s/test_rt_cifar_XXXXXX", tu_tmpdir());
	if (!mkdtemp(dir))
		abort();
	IdxBlob f[CIFAR_NFILES];
	test_generator(seed, f);
	test_examples(f);
	test_files(f);
	rt_blobs_free(f, CIFAR_NFILES);
	test_synthetic(seed);
	rmdir(dir);
	return tu_finish("test_rt_cifar");
}
