/* data_synth.c: the built-in data sets.
 *
 * MNIST-like digits drawn from a small vector font: each digit is a few strokes (lines and
 * elliptic arcs) in a unit box. Every image jitters the strokes, then scales, slants and shifts
 * the box, draws the strokes anti-aliased with a random width (coverage from the distance to each
 * segment) and adds noise. The result is written as the four MNIST IDX files in memory, which the
 * real loader then reads.
 *
 * A CIFAR-like set: ten classes of colored shapes and textures at a random place, size, angle and
 * color under noise, written as CIFAR-10 binary records that the real reader then parses. And
 * ImageNet-shaped examples, each made when a batch asks for it (no 50000-image arrays). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/data_cifar.h"
#include "runtime/data_idx.h"
#include "runtime/hash.h"

#define SIDE 28
#define MAX_STROKES 4
#define MAX_SEGS 96
#define PI 3.14159265358979323846

/* 'L': line (a, b) to (c, d); 'A': arc around (a, b) with radii (c, d) from e to f degrees,
 * y pointing down (so -90 is the top). */
typedef struct {
	char kind;
	float a, b, c, d, e, f;
} Stroke;

static const Stroke font[10][MAX_STROKES] = {
	{{'A', .5f, .5f, .42f, .5f, 0, 360}},
	{{'L', .5f, 0, .5f, 1, 0, 0}, {'L', .22f, .22f, .5f, 0, 0, 0}},
	{{'A', .5f, .28f, .42f, .28f, -170, 20}, {'L', .89f, .38f, .02f, 1, 0, 0},
	 {'L', .02f, 1, 1, 1, 0, 0}},
	{{'A', .5f, .25f, .4f, .25f, -160, 90}, {'A', .5f, .75f, .45f, .25f, -90, 160}},
	{{'L', .7f, 1, .7f, 0, 0, 0}, {'L', .7f, 0, 0, .7f, 0, 0}, {'L', 0, .7f, 1, .7f, 0, 0}},
	{{'L', .9f, 0, .15f, 0, 0, 0}, {'L', .15f, 0, .13f, .5f, 0, 0},
	 {'A', .5f, .68f, .42f, .32f, -150, 150}},
	{{'A', .55f, .5f, .45f, .5f, -60, -270}, {'A', .5f, .72f, .4f, .28f, 0, 360}},
	{{'L', 0, 0, 1, 0, 0, 0}, {'L', 1, 0, .35f, 1, 0, 0}},
	{{'A', .5f, .24f, .34f, .24f, 0, 360}, {'A', .5f, .73f, .42f, .27f, 0, 360}},
	{{'A', .5f, .28f, .4f, .28f, 0, 360}, {'L', .9f, .28f, .8f, 1, 0, 0}},
};

typedef struct {
	uint64_t s;
} Rng;

/* Uniform in [lo, hi). */
static float uni(Rng *r, float lo, float hi)
{
	r->s += 0x9E3779B97F4A7C15ull;
	return lo + (hi - lo) * (float)((rt_mix64(r->s) >> 40) * 0x1p-24);
}

/* Where a unit-box point lands in the image. */
typedef struct {
	float w, h, slant, cx, cy;
} Place;

typedef struct {
	float x0, y0, x1, y1;
} Seg;

static void put(const Place *p, float x, float y, float *px, float *py)
{
	*px = p->cx + (x - .5f) * p->w + p->slant * (.5f - y) * p->h;
	*py = p->cy + (y - .5f) * p->h;
}

/* Flattens one jittered stroke into segments; returns the new count. */
static int flatten(const Stroke *s, const Place *p, Rng *r, Seg *seg, int n)
{
	float j[4];
	for (int i = 0; i < 4; i++)
		j[i] = uni(r, -.05f, .05f);
	if (s->kind == 'L') {
		put(p, s->a + j[0], s->b + j[1], &seg[n].x0, &seg[n].y0);
		put(p, s->c + j[2], s->d + j[3], &seg[n].x1, &seg[n].y1);
		return n + 1;
	}
	int pieces = (int)(fabsf(s->f - s->e) / 360 * 14) + 2;
	float px = 0, py = 0;
	for (int k = 0; k <= pieces && n < MAX_SEGS; k++) {
		float t = (float)((s->e + (s->f - s->e) * (float)k / (float)pieces) * PI / 180);
		float x, y;
		put(p, s->a + j[0] + (s->c + j[2]) * cosf(t), s->b + j[1] + (s->d + j[3]) * sinf(t), &x, &y);
		if (k > 0)
			seg[n++] = (Seg){px, py, x, y};
		px = x;
		py = y;
	}
	return n;
}

/* Noise in [-1, 1) from a cheap hash of (base, i) that vectorizes. */
static inline float pixel_noise(uint32_t base, uint32_t i)
{
	uint32_t x = (base + i) * 0x9E3779B1u;
	x ^= x >> 15;
	x *= 0x85EBCA77u;
	x ^= x >> 13;
	return (float)(x >> 8) * 0x1p-23f - 1;
}

static inline uint8_t to_byte(float v)
{
	return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static int clampi(float v, int lo, int hi)
{
	int i = (int)floorf(v);
	return i < lo ? lo : i > hi ? hi : i;
}

/* Coverage of a stroke of half-width rad, anti-aliased over one pixel: rad + .5 - distance,
 * clamped to [0, 1], over the segment's bounding box (cov starts at 0, so no lower clamp). */
static void draw_seg(const Seg *s, float rad, float *cov)
{
	float reach = rad + .5f;
	int x0 = clampi(fminf(s->x0, s->x1) - reach - .5f, 0, SIDE - 1);
	int x1 = clampi(fmaxf(s->x0, s->x1) + reach, 0, SIDE - 1);
	int y0 = clampi(fminf(s->y0, s->y1) - reach - .5f, 0, SIDE - 1);
	int y1 = clampi(fmaxf(s->y0, s->y1) + reach, 0, SIDE - 1);
	float dx = s->x1 - s->x0, dy = s->y1 - s->y0;
	float len2 = dx * dx + dy * dy;
	float inv = len2 > 0 ? 1 / len2 : 0;
	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++) {
			float px = (float)x + .5f - s->x0, py = (float)y + .5f - s->y0;
			float t = (px * dx + py * dy) * inv;
			t = t < 0 ? 0 : t > 1 ? 1 : t;
			float ex = t * dx - px, ey = t * dy - py;
			/* branch-free, so the loop vectorizes */
			float c = fminf(reach - sqrtf(ex * ex + ey * ey), 1);
			cov[y * SIDE + x] = fmaxf(cov[y * SIDE + x], c);
		}
}

static void draw_digit(int digit, Rng *r, uint8_t *img)
{
	float scale = uni(r, .8f, 1.2f);
	Place p = {
		.w = 12 * scale * uni(r, .85f, 1.15f),
		.h = 18 * scale,
		.slant = uni(r, -.3f, .3f),
		.cx = SIDE / 2.0f + uni(r, -3, 3),
		.cy = SIDE / 2.0f + uni(r, -3, 3),
	};
	Seg seg[MAX_SEGS];
	int n = 0;
	for (int i = 0; i < MAX_STROKES && font[digit][i].kind; i++)
		n = flatten(&font[digit][i], &p, r, seg, n);
	float cov[SIDE * SIDE] = {0};
	float rad = uni(r, .7f, 1.6f);
	for (int i = 0; i < n; i++)
		draw_seg(&seg[i], rad, cov);
	float peak = uni(r, 200, 255), noise = uni(r, 0, 30);
	/* pixel noise from a cheap hash of (image, pixel) that vectorizes: 55 million pixels */
	uint32_t base = (uint32_t)rt_mix64(r->s);
	for (int i = 0; i < SIDE * SIDE; i++) {
		float v = cov[i] * peak + noise * pixel_noise(base, (uint32_t)i);
		img[i] = to_byte(v);
	}
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Balanced labels: n/10 of each class, shuffled from seed. */
static void balanced_labels(uint64_t seed, int64_t n, uint8_t *lab)
{
	uint64_t s = rt_mix64(seed);
	for (int64_t i = 0; i < n; i++)
		lab[i] = (uint8_t)(i % 10);
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)(rt_mix64(s + (uint64_t)i) % (uint64_t)(i + 1));
		uint8_t t = lab[i];
		lab[i] = lab[j];
		lab[j] = t;
	}
}

/* One set: balanced labels (n/10 of each, shuffled), one image per label. */
static bool make_set(uint64_t seed, int64_t n, IdxBlob *images, IdxBlob *labels)
{
	images->size = 16 + (size_t)n * SIDE * SIDE;
	labels->size = 8 + (size_t)n;
	images->data = malloc(images->size);
	labels->data = malloc(labels->size);
	if (!images->data || !labels->data)
		return false;
	be32(images->data, IDX_IMAGES_MAGIC);
	be32(images->data + 4, (uint32_t)n);
	be32(images->data + 8, SIDE);
	be32(images->data + 12, SIDE);
	be32(labels->data, IDX_LABELS_MAGIC);
	be32(labels->data + 4, (uint32_t)n);
	uint8_t *lab = labels->data + 8;
	balanced_labels(seed, n, lab);
	for (int64_t i = 0; i < n; i++) {
		Rng ri = {rt_mix64(seed ^ rt_mix64((uint64_t)i + 1))};
		draw_digit(lab[i], &ri, images->data + 16 + i * SIDE * SIDE);
	}
	return true;
}

bool rt_synth_mnist(uint64_t seed, int64_t ntrain, int64_t ntest, IdxBlob f[MNIST_NFILES])
{
	memset(f, 0, MNIST_NFILES * sizeof *f);
	for (int i = 0; i < MNIST_NFILES; i++)
		snprintf(f[i].name, sizeof f[i].name, "built-in %s", rt_mnist_names[i]);
	/* the test set draws from its own stream, so it shares no image with the training set */
	bool ok = make_set(rt_mix64(seed), ntrain, &f[MNIST_TRAIN_IMAGES], &f[MNIST_TRAIN_LABELS]) &&
		  make_set(rt_mix64(seed ^ 0x7E57DA7A5E7ull), ntest, &f[MNIST_TEST_IMAGES], &f[MNIST_TEST_LABELS]);
	if (!ok)
		rt_blobs_free(f, MNIST_NFILES);
	return ok;
}

/* ---- the CIFAR-like set ---- */

/* Each class's base color (jittered per image): shapes 0-5, textures 6-9. */
static const float class_rgb[10][3] = {
	{220, 60, 50}, {60, 200, 70}, {60, 90, 220}, {230, 210, 60}, {200, 70, 200},
	{70, 210, 210}, {240, 140, 40}, {150, 90, 230}, {235, 235, 235}, {130, 190, 40},
};

typedef struct {
	int kind;
	float cx, cy, inv_r, cos_a, sin_a, freq;
} Shape;

static float frac(float x)
{
	return x - floorf(x);
}

/* Whether the point (u, v), in the shape's rotated frame and radius units, is covered. */
static bool covers(const Shape *s, float u, float v)
{
	float au = fabsf(u), av = fabsf(v), d2 = u * u + v * v;
	bool box = au < 1 && av < 1;
	switch (s->kind) {
	case 0: return d2 < 1;                                     /* disc */
	case 1: return au < .8f && av < .8f;                       /* square */
	case 2: return v > -.8f && v < .8f && au < (v + .8f) * .6f; /* triangle */
	case 3: return d2 < 1 && d2 > .4f;                         /* ring */
	case 4: return (au < .28f && av < 1) || (av < .28f && au < 1); /* plus */
	case 5: return au + av < 1;                                /* diamond */
	case 6: return box && frac(v * s->freq) < .5f;             /* stripes */
	case 7: return box && (((int)floorf(u * s->freq) + (int)floorf(v * s->freq)) & 1); /* checks */
	case 8: return box && fabsf(au - av) < .25f;               /* X */
	default: {                                                 /* dots */
		float du = frac(u * s->freq) - .5f, dv = frac(v * s->freq) - .5f;
		return box && du * du + dv * dv < .1f;
	}
	}
}

/* One 32x32 image of class k in rec (a label byte, then the R, G and B planes). */
static void draw_cifar(int k, Rng *r, uint8_t *rec)
{
	float angle = uni(r, 0, (float)(2 * PI));
	Shape s = {.kind = k, .cx = uni(r, 10, 22), .cy = uni(r, 10, 22), .inv_r = 1 / uni(r, 7, 13),
		   .cos_a = cosf(angle), .sin_a = sinf(angle), .freq = uni(r, 1.2f, 2.2f)};
	float fg[3], bg[3];
	for (int c = 0; c < 3; c++) {
		fg[c] = class_rgb[k][c] + uni(r, -50, 50);
		bg[c] = uni(r, 0, 150);
	}
	float noise = uni(r, 5, 30);
	uint32_t base = (uint32_t)rt_mix64(r->s);
	rec[0] = (uint8_t)k;
	uint8_t *plane = rec + 1;
	for (int y = 0; y < CIFAR_SIDE; y++)
		for (int x = 0; x < CIFAR_SIDE; x++) {
			float dx = ((float)x + .5f - s.cx) * s.inv_r, dy = ((float)y + .5f - s.cy) * s.inv_r;
			bool in = covers(&s, dx * s.cos_a + dy * s.sin_a, dy * s.cos_a - dx * s.sin_a);
			int p = y * CIFAR_SIDE + x;
			for (int c = 0; c < 3; c++) {
				float n = noise * pixel_noise(base, (uint32_t)(c * CIFAR_SIDE * CIFAR_SIDE + p));
				plane[c * CIFAR_SIDE * CIFAR_SIDE + p] = to_byte((in ? fg[c] : bg[c]) + n);
			}
		}
}

/* n records in f: balanced labels, one image per label; first is the set's index of record 0. */
static bool make_cifar_file(uint64_t seed, const uint8_t *labels, int64_t first, int64_t n, IdxBlob *f)
{
	f->size = (size_t)n * CIFAR_RECORD;
	f->data = malloc(f->size ? f->size : 1);
	if (!f->data)
		return false;
	for (int64_t i = 0; i < n; i++) {
		Rng r = {rt_mix64(seed ^ rt_mix64((uint64_t)(first + i) + 1))};
		draw_cifar(labels[first + i], &r, f->data + i * CIFAR_RECORD);
	}
	return true;
}

/* nfiles files of one set of n images, split evenly (the last takes the rest). */
static bool make_cifar_set(uint64_t seed, int64_t n, IdxBlob *f, int nfiles)
{
	uint8_t *labels = malloc((size_t)n + 1);
	if (!labels)
		return false;
	balanced_labels(seed, n, labels);
	bool ok = true;
	int64_t per = n / nfiles;
	for (int i = 0; i < nfiles && ok; i++)
		ok = make_cifar_file(seed, labels, i * per, i == nfiles - 1 ? n - i * per : per, &f[i]);
	free(labels);
	return ok;
}

bool rt_synth_cifar(uint64_t seed, int64_t ntrain, int64_t ntest, IdxBlob f[CIFAR_NFILES])
{
	memset(f, 0, CIFAR_NFILES * sizeof *f);
	for (int i = 0; i < CIFAR_NFILES; i++)
		snprintf(f[i].name, sizeof f[i].name, "built-in %s", rt_cifar_names[i]);
	/* the test set draws from its own stream, so it shares no image with the training set */
	bool ok = make_cifar_set(rt_mix64(seed ^ 0xC1FA5), ntrain, f, CIFAR_TRAIN_FILES) &&
		  make_cifar_set(rt_mix64(seed ^ 0x7E57C1FA5ull), ntest, f + CIFAR_TRAIN_FILES, 1);
	if (!ok)
		rt_blobs_free(f, CIFAR_NFILES);
	return ok;
}

/* ---- ImageNet-shaped examples on demand ---- */

/* Each class is a product of a vertical and a horizontal wave with a color of its own, so that
 * the loss can fall; each example adds as much noise as signal. */
int32_t rt_synth_example(const Dataset *d, int64_t i, bool train, uint64_t key, float *dst)
{
	(void)train, (void)key; /* no augmentation: every example is fresh noise already */
	uint64_t k = rt_mix64(d->seed ^ rt_mix64((uint64_t)i + 0x1A6E));
	int32_t label = (int32_t)(k % (uint64_t)d->classes);
	Rng r = {rt_mix64(d->seed ^ ((uint64_t)label + 1) * 0xC1A55ull)};
	float fy = uni(&r, 1, 8) * (float)(2 * PI) / (float)d->h, py = uni(&r, 0, 7);
	float fx = uni(&r, 1, 8) * (float)(2 * PI) / (float)d->w, px = uni(&r, 0, 7);
	float *col = malloc((size_t)d->w * sizeof *col);
	for (int x = 0; col && x < d->w; x++)
		col[x] = cosf(fx * (float)x + px);
	uint32_t base = (uint32_t)k;
	float *o = dst;
	for (int c = 0; c < d->c; c++) {
		float amp = uni(&r, -1, 1), bias = uni(&r, -.5f, .5f);
		for (int y = 0; y < d->h; y++) {
			float row = amp * sinf(fy * (float)y + py);
			for (int x = 0; x < d->w; x++, o++)
				*o = bias + row * (col ? col[x] : 0) + pixel_noise(base, (uint32_t)(o - dst));
		}
	}
	free(col);
	return label;
}

bool rt_load_synthetic(uint64_t seed, int c, int h, int w, int classes, Dataset *train, Dataset *test)
{
	/* as many examples as ImageNet's training set, so that epochs mean what they mean there */
	*train = (Dataset){.n = 1281167, .c = c, .h = h, .w = w, .classes = classes > 0 ? classes : 1,
			   .example = rt_synth_example, .seed = rt_mix64(seed ^ 0x5E7A), .no_holdout = true};
	snprintf(train->source, sizeof train->source, "synthetic %dx%dx%d images, %d classes (ImageNet-shaped, "
		 "made per batch; no held-out set)", c, h, w, train->classes);
	*test = *train;
	test->n = 0;
	return true;
}
