/* prefetch.c: the bounded queue of batches made ahead (prefetch.h). Slot m % depth holds batch m;
 * a worker takes the next (batch, example) job while the batch is fewer than depth ahead of the
 * consumer, so a slot is reused only after its batch was taken. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/prefetch.h"

#define PREFETCH_MAX_WORKERS 64

typedef struct {
	int32_t *idx;
	int32_t *labels;
	float *images;
	uint64_t key;
	bool train;
	int64_t done; /* examples made */
} Slot;

struct RtPrefetch {
	const Dataset *d;
	RtPrefetchSpec spec;
	Slot *slot;
	int64_t next_m, next_k; /* the next job */
	int64_t taken;          /* batches the consumer took: the next one it takes */
	int64_t end;
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t space, ready;
	pthread_t thread[PREFETCH_MAX_WORKERS];
	int nthreads;
};

static void *worker(void *arg)
{
	RtPrefetch *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && (p->next_m >= p->end || p->next_m >= p->taken + p->spec.depth))
			pthread_cond_wait(&p->space, &p->lock);
		if (p->stop)
			break;
		Slot *s = &p->slot[p->next_m % p->spec.depth];
		if (p->next_k == 0) {
			p->spec.order(p->spec.ctx, p->next_m, s->idx, &s->key, &s->train);
			s->done = 0;
		}
		int64_t k = p->next_k;
		if (++p->next_k == p->spec.batch)
			p->next_k = 0, p->next_m++;
		pthread_mutex_unlock(&p->lock);
		int32_t label = rt_dataset_example(p->d, s->idx[k], s->train, s->key, s->images + k * p->spec.pixels);
		pthread_mutex_lock(&p->lock);
		s->labels[k] = label;
		if (++s->done == p->spec.batch)
			pthread_cond_broadcast(&p->ready);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void free_slots(RtPrefetch *p)
{
	for (int i = 0; p->slot && i < p->spec.depth; i++) {
		free(p->slot[i].idx);
		free(p->slot[i].labels);
		free(p->slot[i].images);
	}
	free(p->slot);
}

RtPrefetch *rt_prefetch_start(const Dataset *d, const RtPrefetchSpec *spec, int64_t first, int64_t end)
{
	RtPrefetch *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	*p = (RtPrefetch){.d = d, .spec = *spec, .next_m = first, .taken = first, .end = end};
	p->slot = calloc((size_t)spec->depth, sizeof *p->slot);
	bool ok = p->slot != NULL;
	for (int i = 0; ok && i < spec->depth; i++) {
		Slot *s = &p->slot[i];
		s->idx = malloc((size_t)spec->batch * sizeof *s->idx);
		s->labels = malloc((size_t)spec->batch * sizeof *s->labels);
		s->images = malloc((size_t)(spec->batch * spec->pixels) * sizeof *s->images);
		ok = s->idx && s->labels && s->images;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->space, NULL);
	pthread_cond_init(&p->ready, NULL);
	int want = spec->workers < 1 ? 1 : spec->workers > PREFETCH_MAX_WORKERS ? PREFETCH_MAX_WORKERS : spec->workers;
	while (ok && p->nthreads < want && pthread_create(&p->thread[p->nthreads], NULL, worker, p) == 0)
		p->nthreads++;
	if (!ok || p->nthreads == 0) {
		rt_prefetch_stop(p);
		return NULL;
	}
	return p;
}

void rt_prefetch_take(RtPrefetch *p, float *images, int32_t *labels)
{
	pthread_mutex_lock(&p->lock);
	Slot *s = &p->slot[p->taken % p->spec.depth];
	/* the slot holds this batch once its first job was taken (next_m passed it) and all are done */
	while (p->next_m <= p->taken || s->done < p->spec.batch)
		pthread_cond_wait(&p->ready, &p->lock);
	pthread_mutex_unlock(&p->lock);
	memcpy(images, s->images, (size_t)(p->spec.batch * p->spec.pixels) * sizeof *images);
	memcpy(labels, s->labels, (size_t)p->spec.batch * sizeof *labels);
	pthread_mutex_lock(&p->lock);
	s->done = 0;
	p->taken++;
	pthread_cond_broadcast(&p->space);
	pthread_mutex_unlock(&p->lock);
}

void rt_prefetch_stop(RtPrefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->space);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->thread[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->space);
	pthread_cond_destroy(&p->ready);
	free_slots(p);
	free(p);
}

int rt_prefetch_workers(void)
{
	const char *env = getenv("NETC_DATA_WORKERS");
	if (env && *env) {
		char *end;
		long n = strtol(env, &end, 10);
		if (!*end && n >= 1 && n <= PREFETCH_MAX_WORKERS)
			return (int)n;
		fprintf(stderr, "warning: NETC_DATA_WORKERS='%s' is not a number of threads from 1 to %d; ignored\n", env,
			PREFETCH_MAX_WORKERS);
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	return cores < 1 ? 1 : cores > 16 ? 16 : (int)cores;
}
