/* data_folder.c: an image folder as a data set, laid out as torchvision's ImageFolder: one
 * subfolder per class (sorted by name, the class numbers follow that order) holding JPEG and PNG
 * files. DIR/train and DIR/val (or DIR/test), when there, are the training and held-out sets;
 * else DIR itself is the training set and there is no held-out one.
 *
 * Every image is decoded once, when the set loads, on worker threads: resized (its shorter side
 * to 8/7 of the model's side, as torchvision's Resize(256) before a 224 crop) and cropped to the
 * centre box of 8/7 the model's size, kept as bytes. A batch then takes a random crop of the
 * model's size and a random horizontal flip from each in training, the centre crop in
 * evaluation, and normalizes with ImageNet's mean and std (grey: 0.5, 0.5). A file that does not
 * decode is skipped with one warning line naming it; a set left with no image, or with more files
 * skipped than decoded, is an error. */
#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/hash.h"
#include "runtime/image_decode.h"
#include "runtime/rt.h"

#define FOLDER_MAX_WARNINGS 10 /* lines naming skipped files; then a count */

typedef struct {
	char **path;
	int32_t *label;
	int64_t n, cap;
} FileList;

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool image_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (!dot || name[0] == '.')
		return false;
	char ext[8] = "";
	for (int i = 0; dot[i + 1] && i < 7; i++)
		ext[i] = (char)tolower((unsigned char)dot[i + 1]), ext[i + 1] = '\0';
	return !strcmp(ext, "jpg") || !strcmp(ext, "jpeg") || !strcmp(ext, "png");
}

/* The entries of dir that are folders (want_dirs) or image files, sorted; NULL with err set when
 * dir cannot be read. */
static char **list_dir(const char *dir, bool want_dirs, int64_t *count, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(err, errlen, "%s: cannot read the folder", dir);
		return NULL;
	}
	char **names = NULL;
	int64_t n = 0, cap = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		char *full = malloc(len);
		if (!full)
			break;
		snprintf(full, len, "%s/%s", dir, e->d_name);
		if (want_dirs ? !is_dir(full) : (!image_name(e->d_name) || is_dir(full))) {
			free(full);
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **grown = realloc(names, (size_t)cap * sizeof *names);
			if (!grown) {
				free(full);
				break;
			}
			names = grown;
		}
		names[n++] = full;
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	*count = n;
	return names ? names : calloc(1, sizeof *names);
}

static void free_names(char **names, int64_t n)
{
	for (int64_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

/* The class name of a class folder path: its last component. */
static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Every image of split (its class folders named as classes[0..nclasses)) into files; a class
 * folder the classes lack is an error. */
static bool list_split(const char *split, char **classes, int64_t nclasses, FileList *files, char *err, size_t errlen)
{
	int64_t ndirs;
	char **dirs = list_dir(split, true, &ndirs, err, errlen);
	if (!dirs)
		return false;
	bool ok = true;
	for (int64_t k = 0; ok && k < ndirs; k++) {
		int64_t label = -1;
		for (int64_t c = 0; c < nclasses && label < 0; c++)
			if (!strcmp(base(classes[c]), base(dirs[k])))
				label = c;
		if (label < 0) {
			snprintf(err, errlen, "%s: class folder '%s' is not among the training set's classes", split, base(dirs[k]));
			ok = false;
			break;
		}
		int64_t nf;
		char **names = list_dir(dirs[k], false, &nf, err, errlen);
		if (!names) {
			ok = false;
			break;
		}
		for (int64_t i = 0; i < nf; i++) {
			if (files->n == files->cap) {
				files->cap = files->cap ? 2 * files->cap : 256;
				files->path = realloc(files->path, (size_t)files->cap * sizeof *files->path);
				files->label = realloc(files->label, (size_t)files->cap * sizeof *files->label);
				if (!files->path || !files->label) {
					fputs("netc: out of memory\n", stderr);
					abort();
				}
			}
			files->path[files->n] = names[i];
			files->label[files->n++] = (int32_t)label;
		}
		free(names); /* the paths moved into files */
	}
	free_names(dirs, ndirs);
	return ok;
}

/* ---- decoding on worker threads ---- */

typedef struct {
	const FileList *files;
	int c, bh, bw;       /* the stored box */
	uint8_t *bytes;      /* n boxes, CHW */
	char (*why)[160];    /* per file: empty, or why it did not decode */
	int64_t next;        /* the next file to take */
	pthread_mutex_t lock;
} Decoder;

/* src (w x h, c channels last) resized so that the box bw x bh is covered, centre-cropped to it,
 * CHW into dst: an area average when shrinking (each box pixel the mean of the source pixels it
 * covers), the nearest pixel when enlarging. */
static void fit_box(const RtImage *src, int bw, int bh, uint8_t *dst)
{
	double scale = (double)bw / src->w > (double)bh / src->h ? (double)bw / src->w : (double)bh / src->h;
	double ox = (src->w * scale - bw) / 2, oy = (src->h * scale - bh) / 2; /* crop offsets, scaled */
	for (int y = 0; y < bh; y++) {
		double y0 = (y + oy) / scale, y1 = (y + 1 + oy) / scale;
		int sy0 = (int)y0, sy1 = (int)(y1 - 1e-9);
		if (sy1 < sy0)
			sy1 = sy0;
		if (sy1 >= src->h)
			sy1 = src->h - 1;
		for (int x = 0; x < bw; x++) {
			double x0 = (x + ox) / scale, x1 = (x + 1 + ox) / scale;
			int sx0 = (int)x0, sx1 = (int)(x1 - 1e-9);
			if (sx1 < sx0)
				sx1 = sx0;
			if (sx1 >= src->w)
				sx1 = src->w - 1;
			for (int ch = 0; ch < src->c; ch++) {
				unsigned sum = 0, count = 0;
				for (int sy = sy0; sy <= sy1; sy++)
					for (int sx = sx0; sx <= sx1; sx++, count++)
						sum += src->px[((size_t)sy * src->w + sx) * src->c + ch];
				dst[((size_t)ch * bh + y) * bw + x] = (uint8_t)((sum + count / 2) / count);
			}
		}
	}
}

static void *decode_worker(void *arg)
{
	Decoder *d = arg;
	size_t box = (size_t)d->c * d->bh * d->bw;
	for (;;) {
		pthread_mutex_lock(&d->lock);
		int64_t i = d->next++;
		pthread_mutex_unlock(&d->lock);
		if (i >= d->files->n)
			return NULL;
		RtImage img;
		if (rt_image_decode(d->files->path[i], d->c, &img, d->why[i], sizeof d->why[i])) {
			fit_box(&img, d->bw, d->bh, d->bytes + (size_t)i * box);
			free(img.px);
		} else if (!d->why[i][0]) {
			snprintf(d->why[i], sizeof d->why[i], "does not decode");
		}
	}
}

/* Decodes files into set (c channels, boxes bh x bw), dropping the ones that fail with a warning
 * each; false with err when too few decode. */
static bool decode_all(const char *split, FileList *files, int c, int bh, int bw, Dataset *set, char *err, size_t errlen)
{
	size_t box = (size_t)c * bh * bw;
	Decoder d = {files, c, bh, bw, malloc(files->n * box + 1), calloc((size_t)files->n + 1, sizeof *d.why), 0,
		     PTHREAD_MUTEX_INITIALIZER};
	set->labels = malloc((size_t)files->n * sizeof *set->labels + 1);
	if (!d.bytes || !d.why || !set->labels) {
		free(d.bytes), free(d.why);
		snprintf(err, errlen, "%s: out of memory for %lld images of %dx%d", split, (long long)files->n, bw, bh);
		return false;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int nthreads = cores < 1 ? 1 : cores > 16 ? 16 : (int)cores;
	pthread_t th[16];
	int started = 0;
	for (; started < nthreads; started++)
		if (pthread_create(&th[started], NULL, decode_worker, &d))
			break;
	if (started == 0)
		decode_worker(&d);
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	int64_t kept = 0, skipped = 0;
	for (int64_t i = 0; i < files->n; i++) {
		if (d.why[i][0]) {
			if (skipped++ < FOLDER_MAX_WARNINGS)
				fprintf(stderr, "warning: %s: %s (skipped)\n", files->path[i], d.why[i]);
			continue;
		}
		memmove(d.bytes + kept * box, d.bytes + i * box, box);
		set->labels[kept++] = files->label[i];
	}
	if (skipped > FOLDER_MAX_WARNINGS)
		fprintf(stderr, "warning: %s: %lld more files skipped\n", split, (long long)(skipped - FOLDER_MAX_WARNINGS));
	free(d.why);
	set->bytes = d.bytes;
	set->n = kept;
	if (kept == 0 || skipped > kept) {
		snprintf(err, errlen, "%s: %lld of %lld image files did not decode (the first are named above)", split,
			 (long long)skipped, (long long)files->n);
		return false;
	}
	return true;
}

/* ---- one example ---- */

static int32_t folder_example(const Dataset *d, int64_t i, bool train, uint64_t key, float *dst)
{
	static const float mean_rgb[3] = {0.485f, 0.456f, 0.406f}, std_rgb[3] = {0.229f, 0.224f, 0.225f};
	const uint8_t *px = d->bytes + (size_t)i * d->c * d->box_h * d->box_w;
	int dy = (d->box_h - d->h) / 2, dx = (d->box_w - d->w) / 2;
	bool flip = false;
	if (train) {
		uint64_t k = rt_mix64(key ^ rt_mix64((uint64_t)i));
		dy = (int)(rt_uniform(k, 0) * (d->box_h - d->h + 1));
		dx = (int)(rt_uniform(k, 1) * (d->box_w - d->w + 1));
		flip = rt_uniform(k, 2) < 0.5;
	}
	float *o = dst;
	for (int c = 0; c < d->c; c++) {
		float mean = d->c == 3 ? mean_rgb[c] : 0.5f, std = d->c == 3 ? std_rgb[c] : 0.5f;
		for (int y = 0; y < d->h; y++) {
			const uint8_t *row = px + ((size_t)c * d->box_h + y + dy) * d->box_w + dx;
			for (int x = 0; x < d->w; x++)
				*o++ = (row[flip ? d->w - 1 - x : x] / 255.0f - mean) / std;
		}
	}
	return d->labels[i];
}

static bool load_split(const char *split, char **classes, int64_t nclasses, int c, int h, int w, Dataset *set, char *err,
		       size_t errlen)
{
	FileList files = {0};
	bool ok = list_split(split, classes, nclasses, &files, err, errlen);
	if (ok && files.n == 0) {
		snprintf(err, errlen, "%s: no .jpg, .jpeg or .png files in its class folders", split);
		ok = false;
	}
	int bh = (h * 8 + 6) / 7, bw = (w * 8 + 6) / 7;
	*set = (Dataset){.c = c, .h = h, .w = w, .box_h = bh, .box_w = bw, .classes = (int)nclasses,
			 .example = folder_example};
	ok = ok && decode_all(split, &files, c, bh, bw, set, err, errlen);
	for (int64_t i = 0; i < files.n; i++)
		free(files.path[i]);
	free(files.path);
	free(files.label);
	return ok;
}

bool rt_load_folder(const char *dir, int c, int h, int w, Dataset *train, Dataset *test, char *err, size_t errlen)
{
	memset(train, 0, sizeof *train);
	memset(test, 0, sizeof *test);
	if (!rt_image_decode_available()) {
		snprintf(err, errlen, "data = folder: this netc was built without libjpeg and libpng");
		return false;
	}
	if (c != 1 && c != 3) {
		snprintf(err, errlen, "data = folder decodes grey or RGB images; the model's image input has %d channels", c);
		return false;
	}
	char train_dir[4096], test_dir[4096] = "";
	snprintf(train_dir, sizeof train_dir, "%s/train", dir);
	if (is_dir(train_dir)) {
		static const char *const held_out[] = {"val", "test"};
		for (int k = 0; k < 2 && !test_dir[0]; k++) {
			snprintf(test_dir, sizeof test_dir, "%s/%s", dir, held_out[k]);
			if (!is_dir(test_dir))
				test_dir[0] = '\0';
		}
	} else {
		snprintf(train_dir, sizeof train_dir, "%s", dir);
	}
	int64_t nclasses;
	char **classes = list_dir(train_dir, true, &nclasses, err, errlen);
	if (!classes)
		return false;
	bool ok = true;
	if (nclasses == 0) {
		snprintf(err, errlen, "%s: no class folders (an image folder holds one folder of images per class)", train_dir);
		ok = false;
	}
	ok = ok && load_split(train_dir, classes, nclasses, c, h, w, train, err, errlen);
	if (ok && test_dir[0])
		ok = load_split(test_dir, classes, nclasses, c, h, w, test, err, errlen);
	else if (ok)
		*test = (Dataset){.c = c, .h = h, .w = w, .classes = (int)nclasses, .no_holdout = true};
	if (ok) {
		snprintf(train->source, sizeof train->source,
			 "image folder %s: %lld training images of %lld classes, %lld held out; decoded at %dx%d, random %dx%d crops and flips",
			 dir, (long long)train->n, (long long)nclasses, (long long)test->n, train->box_w, train->box_h, w, h);
		snprintf(test->source, sizeof test->source, "%s", train->source);
	} else {
		rt_dataset_free(train);
		rt_dataset_free(test);
	}
	free_names(classes, nclasses);
	return ok;
}
