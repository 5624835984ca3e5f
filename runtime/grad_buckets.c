/* grad_buckets.c: the gradients of a data-parallel step in buckets, as PyTorch DDP makes them:
 * backward writes the last layers' gradients first, so reducing a bucket as soon as its last
 * gradient is written lets the collective run while backward goes on with the earlier layers.
 * Large buckets amortize the collective's latency; small ones start it sooner. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/grad_buckets.h"

/* The backward kernel that writes buffer x: the one led by its group's node. */
static int writer(const BundleBuffer *x, const BundleKernel *k, int split)
{
	int32_t lead = x->group >= 0 ? x->group : x->node;
	for (int i = 0; i < split; i++)
		if (k[i].node == lead)
			return i;
	return split - 1;
}

bool rt_grad_plan(const Bundle *b, const BundleKernel *k, int split, int64_t cap, RtGradPlan *p, char *err,
		  size_t errlen)
{
	*p = (RtGradPlan){0};
	int *after = malloc((size_t)(b->nbuf ? b->nbuf : 1) * sizeof *after);
	p->order = malloc((size_t)(b->nbuf ? b->nbuf : 1) * sizeof *p->order);
	p->bucket = malloc((size_t)(b->nbuf ? b->nbuf : 1) * sizeof *p->bucket);
	if (!after || !p->order || !p->bucket) {
		free(after);
		rt_grad_plan_free(p);
		snprintf(err, errlen, "out of memory");
		return false;
	}
	for (int i = 0; i < b->nbuf; i++) {
		const BundleBuffer *x = &b->buf[i];
		if (x->role != BUF_GRAD)
			continue;
		if (x->dtype != DT_F32 || x->offset < 0) {
			snprintf(err, errlen, "%s: gradient '%s' is %s%s; the ranks sum f32 gradients in memory", b->model,
				 x->name, dtype_name((DType)x->dtype), x->offset < 0 ? " without storage" : "");
			free(after);
			rt_grad_plan_free(p);
			return false;
		}
		/* insertion by writer, stable: the bundle's order among gradients of one kernel */
		int w = writer(x, k, split), at = p->ngrads++;
		while (at > 0 && after[at - 1] > w) {
			after[at] = after[at - 1];
			p->order[at] = p->order[at - 1];
			at--;
		}
		after[at] = w;
		p->order[at] = i;
	}
	for (int i = 0; i < p->ngrads; i++) {
		RtGradBucket *last = p->nbuckets ? &p->bucket[p->nbuckets - 1] : NULL;
		if (!last || (cap > 0 && last->bytes >= cap)) {
			last = &p->bucket[p->nbuckets++];
			*last = (RtGradBucket){.first = i};
		}
		last->count++;
		last->bytes += b->buf[p->order[i]].bytes;
		last->after = after[i];
	}
	free(after);
	return true;
}

void rt_grad_plan_free(RtGradPlan *p)
{
	free(p->order);
	free(p->bucket);
	*p = (RtGradPlan){0};
}
