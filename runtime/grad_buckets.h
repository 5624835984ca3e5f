/* grad_buckets.h: which gradients a data-parallel step reduces together, and when
 * (runtime/grad_buckets.c). */
#ifndef NETC_GRAD_BUCKETS_H
#define NETC_GRAD_BUCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/bundle.h"

typedef struct {
	int after;        /* the backward kernel after which every gradient of the bucket is written */
	int first, count; /* its gradients: RtGradPlan.order[first .. first + count) */
	int64_t bytes;
} RtGradBucket;

typedef struct {
	int *order;       /* the BUF_GRAD buffers, in the order backward writes them */
	int ngrads;
	RtGradBucket *bucket; /* in launch order: bucket[i].after never decreases */
	int nbuckets;
} RtGradPlan;

/* The gradients of b (f32, with storage) grouped into buckets of at least cap bytes (the last may
 * be smaller; cap <= 0: one bucket for all), each to be reduced as soon as the last of its
 * gradients is written by kernel k[after] of the backward kernels k[0..split). A gradient whose
 * kernel is not among them counts as written by the last. False with one line in err. */
bool rt_grad_plan(const Bundle *b, const BundleKernel *k, int split, int64_t cap, RtGradPlan *p, char *err,
		  size_t errlen);
void rt_grad_plan_free(RtGradPlan *p);

#endif
