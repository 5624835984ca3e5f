/* test_rt_prefetch.c: batches made ahead on worker threads are the batches made in place, bit for
 * bit, whatever the number of workers (1 and 4) and the queue's depth; a queue stopped early
 * ends. Data: the built-in CIFAR-like set at 24x24, whose training examples are random crops and
 * flips keyed by the batch, so the augmentation is checked too. */
#include "runtime/prefetch.h"
#include "runtime/hash.h"
#include "tests/unit/test_util.h"

#define BATCH 16
#define PIXELS (3 * 24 * 24)

typedef struct {
	int64_t n;
	uint64_t seed;
} Order;

/* Batch m: examples drawn from (seed, m), every third one an evaluation batch (no augmentation). */
static void order(void *ctx, int64_t m, int32_t *idx, uint64_t *key, bool *train)
{
	const Order *o = ctx;
	uint64_t k = rt_mix64(o->seed ^ rt_mix64((uint64_t)m));
	for (int i = 0; i < BATCH; i++)
		idx[i] = (int32_t)(rt_uniform(k, (uint64_t)i) * (double)o->n);
	*key = rt_mix64(k + 1);
	*train = m % 3 != 0;
}

static void made_in_place(const Dataset *d, Order *o, int64_t m, float *images, int32_t *labels)
{
	int32_t idx[BATCH];
	uint64_t key;
	bool train;
	order(o, m, idx, &key, &train);
	for (int i = 0; i < BATCH; i++)
		labels[i] = rt_dataset_example(d, idx[i], train, key, images + i * PIXELS);
}

static void compare(const Dataset *d, Order *o, int workers, int depth, int64_t first, int64_t end)
{
	RtPrefetchSpec spec = {.batch = BATCH, .pixels = PIXELS, .depth = depth, .workers = workers, .order = order, .ctx = o};
	RtPrefetch *p = rt_prefetch_start(d, &spec, first, end);
	CHECK(p, "%d workers, depth %d: no queue", workers, depth);
	if (!p)
		return;
	float *got = tu_calloc(BATCH * PIXELS, sizeof *got), *want = tu_calloc(BATCH * PIXELS, sizeof *want);
	int32_t gl[BATCH], wl[BATCH];
	int64_t differ = 0;
	for (int64_t m = first; m < end; m++) {
		rt_prefetch_take(p, got, gl);
		made_in_place(d, o, m, want, wl);
		differ += memcmp(got, want, BATCH * PIXELS * sizeof *got) != 0 || memcmp(gl, wl, sizeof gl) != 0;
	}
	CHECK(differ == 0, "%d workers, depth %d: %lld of %lld batches differ from the ones made in place", workers, depth,
	      (long long)differ, (long long)(end - first));
	rt_prefetch_stop(p);
	free(got);
	free(want);
}

int main(void)
{
	uint64_t seed = tu_start("test_rt_prefetch");
	Dataset tr, te;
	char err[512];
	CHECK(rt_load_cifar(NULL, seed, 24, 24, &tr, &te, err, sizeof err), "%s", err);
	Order o = {tr.n, seed};
	int64_t first = (int64_t)tu_below(1000);
	compare(&tr, &o, 1, 1, first, first + 20);
	compare(&tr, &o, 1, 3, first, first + 20);
	compare(&tr, &o, 4, 1, first, first + 20);
	compare(&tr, &o, 4, 3, first, first + 40);
	/* stopped with batches made and being made that nobody takes: it ends */
	RtPrefetchSpec spec = {.batch = BATCH, .pixels = PIXELS, .depth = 2, .workers = 4, .order = order, .ctx = &o};
	RtPrefetch *p = rt_prefetch_start(&tr, &spec, 0, 1000);
	float *images = tu_calloc(BATCH * PIXELS, sizeof *images);
	int32_t labels[BATCH];
	rt_prefetch_take(p, images, labels);
	rt_prefetch_stop(p);
	rt_prefetch_stop(NULL);
	free(images);
	rt_dataset_free(&tr);
	rt_dataset_free(&te);
	return tu_finish("test_rt_prefetch");
}
