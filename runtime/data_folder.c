/* data_folder.c: an image folder as a data set, laid out as torchvision's ImageFolder: one
 * subfolder per class (sorted by name, the class numbers follow that order) holding JPEG and PNG
 * files. DIR/train and DIR/val (or DIR/test), when there, are the training and held-out sets;
 * else DIR itself is the training set and there is no held-out one.
 *
 * Loading lists the files; an image is decoded when a batch needs it (training makes batches
 * ahead on worker threads, runtime/prefetch.h), so a folder of any size costs no memory per
 * image and no time before the first step. Decoding resizes (the shorter side to 8/7 of the
 * model's side, as torchvision's Resize(256) before a 224 crop) and crops to the centre box of 8/7
 * the model's size; a batch then takes a random crop of the model's size and a random horizontal
 * flip from it in training, the centre crop in evaluation, and normalizes with ImageNet's mean and
 * std (grey: 0.5, 0.5). A file that does not decode is skipped: one warning line names it (the
 * first FOLDER_MAX_WARNINGS), and its place in every batch goes to the next file of its set, in
 * sorted order, that decodes. Loading decodes files in order until one does, so a set of which
 * no file decodes is an error. */
#include <ctype.h>
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/hash.h"
#include "runtime/image_decode.h"
#include "runtime/rt.h"

#define FOLDER_MAX_WARNINGS 10 /* lines naming skipped files; then one line saying there are more */

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
	*count = n;
	if (!names) /* an empty folder: qsort's array must not be NULL, even of no elements (the
		     * compiler may take its passing as proof that names is not NULL) */
		return calloc(1, sizeof *names);
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	return names;
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

/* ---- decoding when a batch needs an image ---- */

enum { FILE_UNTRIED, FILE_DECODES, FILE_FAILS };

struct RtFolderFiles {
	FileList list;
	_Atomic unsigned char *state; /* per file: FILE_* */
	atomic_int warned;            /* files named in a warning so far */
	char split[4096];
};

static void free_files(struct RtFolderFiles *f)
{
	if (!f)
		return;
	for (int64_t i = 0; i < f->list.n; i++)
		free(f->list.path[i]);
	free(f->list.path);
	free(f->list.label);
	free((void *)f->state);
	free(f);
}

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

/* File i of f as a c x bh x bw box; false (with its warning, once) when it does not decode. */
static bool decode_box(struct RtFolderFiles *f, int64_t i, int c, int bh, int bw, uint8_t *box)
{
	RtImage img;
	char why[160] = "";
	if (rt_image_decode(f->list.path[i], c, &img, why, sizeof why)) {
		fit_box(&img, bw, bh, box);
		free(img.px);
		atomic_store(&f->state[i], FILE_DECODES);
		return true;
	}
	if (atomic_exchange(&f->state[i], FILE_FAILS) == FILE_FAILS)
		return false; /* another thread tried it at the same time and said so */
	int k = atomic_fetch_add(&f->warned, 1);
	if (k < FOLDER_MAX_WARNINGS)
		fprintf(stderr, "warning: %s: %s (skipped)\n", f->list.path[i], why[0] ? why : "does not decode");
	else if (k == FOLDER_MAX_WARNINGS)
		fprintf(stderr, "warning: %s: more files do not decode; they are skipped without a line each\n", f->split);
	return false;
}

/* The box of example i: file i, or the next file that decodes. *label: that file's class. */
static void example_box(const Dataset *d, int64_t i, uint8_t *box, int32_t *label)
{
	struct RtFolderFiles *f = d->files;
	int64_t n = f->list.n;
	for (int64_t tries = 0; tries < n; tries++) {
		int64_t j = (i + tries) % n;
		if (atomic_load(&f->state[j]) != FILE_FAILS && decode_box(f, j, d->c, d->box_h, d->box_w, box)) {
			*label = f->list.label[j];
			return;
		}
	}
	/* loading found a file that decodes, and a file decodes alike every time */
	memset(box, 0, (size_t)d->c * d->box_h * d->box_w);
	*label = 0;
}

/* Decodes files in order until one does (the fallback of every file that does not); false with
 * err when none does. */
static bool find_one_that_decodes(const Dataset *set, char *err, size_t errlen)
{
	struct RtFolderFiles *f = set->files;
	uint8_t *box = malloc((size_t)set->c * set->box_h * set->box_w);
	if (!box) {
		snprintf(err, errlen, "%s: out of memory", f->split);
		return false;
	}
	bool found = false;
	for (int64_t i = 0; i < f->list.n && !found; i++)
		found = decode_box(f, i, set->c, set->box_h, set->box_w, box);
	free(box);
	if (!found)
		snprintf(err, errlen, "%s: none of its %lld image files decodes (the first are named above)", f->split,
			 (long long)f->list.n);
	return found;
}

/* ---- one example ---- */

static int32_t folder_example(const Dataset *d, int64_t i, bool train, uint64_t key, float *dst)
{
	static const float mean_rgb[3] = {0.485f, 0.456f, 0.406f}, std_rgb[3] = {0.229f, 0.224f, 0.225f};
	uint8_t *px = malloc((size_t)d->c * d->box_h * d->box_w);
	if (!px) {
		fputs("netc: out of memory\n", stderr);
		abort();
	}
	int32_t label;
	example_box(d, i, px, &label);
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
	free(px);
	return label;
}

static bool load_split(const char *split, char **classes, int64_t nclasses, int c, int h, int w, Dataset *set, char *err,
		       size_t errlen)
{
	int bh = (h * 8 + 6) / 7, bw = (w * 8 + 6) / 7;
	*set = (Dataset){.c = c, .h = h, .w = w, .box_h = bh, .box_w = bw, .classes = (int)nclasses,
			 .example = folder_example, .decode_ahead = true, .free_files = free_files};
	struct RtFolderFiles *f = set->files = calloc(1, sizeof *set->files);
	if (!f) {
		snprintf(err, errlen, "%s: out of memory", split);
		return false;
	}
	snprintf(f->split, sizeof f->split, "%s", split);
	bool ok = list_split(split, classes, nclasses, &f->list, err, errlen);
	if (ok && f->list.n == 0) {
		snprintf(err, errlen, "%s: no .jpg, .jpeg or .png files in its class folders", split);
		ok = false;
	}
	if (ok && !(f->state = calloc((size_t)f->list.n, sizeof *f->state))) {
		snprintf(err, errlen, "%s: out of memory for %lld files", split, (long long)f->list.n);
		ok = false;
	}
	set->n = f->list.n;
	return ok && find_one_that_decodes(set, err, errlen);
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
			 "image folder %s: %lld training images of %lld classes, %lld held out; decoded ahead at %dx%d, random %dx%d crops and flips",
			 dir, (long long)train->n, (long long)nclasses, (long long)test->n, train->box_w, train->box_h, w, h);
		snprintf(test->source, sizeof test->source, "%s", train->source);
	} else {
		rt_dataset_free(train);
		rt_dataset_free(test);
	}
	free_names(classes, nclasses);
	return ok;
}
