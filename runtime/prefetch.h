/* prefetch.h: batches made ahead of the step on worker threads, through a bounded queue.
 *
 * The consumer (the training loop) takes batches in order m = first, first + 1, ...; workers make
 * the next ones meanwhile, at most `depth` batches ahead, each example of a batch a job of its
 * own so that the workers share a batch rather than each making a whole one. A batch depends on
 * its number alone (the order callback gives its examples and augmentation key, and
 * rt_dataset_example is a function of them), so what a run sees does not depend on the number of
 * workers or on their timing. */
#ifndef NETC_RT_PREFETCH_H
#define NETC_RT_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt.h"

typedef struct RtPrefetch RtPrefetch;

typedef struct {
	int64_t batch;  /* examples per batch */
	int64_t pixels; /* floats per example */
	int depth;      /* batches made ahead at most, >= 1 */
	int workers;    /* threads, >= 1 */
	/* batch m's examples idx[0..batch), the key of its augmentation and whether it is a training
	 * batch (augmented); called under the queue's lock, so it may keep a cache in ctx */
	void (*order)(void *ctx, int64_t m, int32_t *idx, uint64_t *key, bool *train);
	void *ctx;
} RtPrefetchSpec;

/* Workers making batches first .. end-1 of d; NULL when out of memory or no thread starts. */
RtPrefetch *rt_prefetch_start(const Dataset *d, const RtPrefetchSpec *spec, int64_t first, int64_t end);
/* The next batch in order into images (batch x pixels) and labels (batch), waiting for it. */
void rt_prefetch_take(RtPrefetch *p, float *images, int32_t *labels);
/* Stops the workers (a batch being made is finished first) and frees p; NULL is fine. */
void rt_prefetch_stop(RtPrefetch *p);
/* Worker threads for a data set that decodes ahead: NETC_DATA_WORKERS when set (1 to 64), else
 * the cores, at most 16. */
int rt_prefetch_workers(void);

#endif
