/* data_synth.c: the built-in data set, MNIST-like digits drawn from a small vector font.
 *
 * Each digit is a few strokes (lines and elliptic arcs) in a unit box. Every image jitters the
 * strokes, then scales, slants and shifts the box, draws the strokes anti-aliased with a random
 * width (coverage from the distance to each segment) and adds noise. The result is written as
 * the four MNIST IDX files in memory, which the real loader then reads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		uint32_t x = (base + (uint32_t)i) * 0x9E3779B1u;
		x ^= x >> 15;
		x *= 0x85EBCA77u;
		x ^= x >> 13;
		float v = cov[i] * peak + noise * ((float)(x >> 8) * 0x1p-23f - 1);
		img[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
	}
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
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
	Rng r = {rt_mix64(seed)};
	for (int64_t i = 0; i < n; i++)
		lab[i] = (uint8_t)(i % 10);
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)(rt_mix64(r.s + (uint64_t)i) % (uint64_t)(i + 1));
		uint8_t t = lab[i];
		lab[i] = lab[j];
		lab[j] = t;
	}
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
