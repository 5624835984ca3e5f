/* test_rt_grad_buckets.c: a data-parallel step's buckets on random plans: every gradient in
 * exactly one bucket, in the order backward writes them, each bucket reduced after the kernel
 * that writes its last gradient and holding at least the cap (but the last), one bucket without a
 * cap; a gradient that is not f32 is refused by name. */
#include "runtime/grad_buckets.h"
#include "tests/unit/test_util.h"

enum { KERNELS = 12, BUFFERS = 40 };

/* Backward kernels led by nodes 10, 20, ...; random buffers, some gradients written by one of
 * them (through their group's leader), some by a leader that is not a kernel. */
static void make_plan(Bundle *b, BundleKernel *k, int *writer)
{
	memset(b, 0, sizeof *b);
	snprintf(b->model, sizeof b->model, "m");
	b->nbuf = BUFFERS;
	b->buf = tu_calloc(BUFFERS, sizeof *b->buf);
	for (int i = 0; i < KERNELS; i++)
		k[i] = (BundleKernel){.node = 10 * (i + 1), .grid = 1, .block = 1};
	for (int i = 0; i < BUFFERS; i++) {
		BundleBuffer *x = &b->buf[i];
		snprintf(x->name, sizeof x->name, "b%d", i);
		x->dtype = DT_F32;
		x->offset = 64 * i;
		x->bytes = 4 * (1 + (int64_t)tu_below(1000));
		x->role = tu_below(3) ? BUF_GRAD : BUF_PARAM;
		int w = (int)tu_below(KERNELS + 1); /* KERNELS: a leader no backward kernel has */
		x->node = 10 * (w + 1) - (int)tu_below(5);
		x->group = tu_below(4) ? 10 * (w + 1) : -1;
		if (x->group < 0)
			x->node = 10 * (w + 1); /* a kernel of its own */
		writer[i] = w < KERNELS ? w : KERNELS - 1;
	}
}

static void check_plan(const Bundle *b, const RtGradPlan *p, const int *writer, int64_t cap)
{
	int seen[BUFFERS] = {0}, grads = 0;
	for (int i = 0; i < BUFFERS; i++)
		grads += b->buf[i].role == BUF_GRAD;
	CHECK(p->ngrads == grads, "%d of %d gradients", p->ngrads, grads);
	int at = 0;
	for (int j = 0; j < p->nbuckets; j++) {
		const RtGradBucket *q = &p->bucket[j];
		CHECK(q->first == at && q->count > 0, "bucket %d starts at %d", j, q->first);
		int64_t bytes = 0;
		int last = -1;
		for (int i = q->first; i < q->first + q->count; i++) {
			int g = p->order[i];
			CHECK(b->buf[g].role == BUF_GRAD && !seen[g]++, "buffer %d twice or not a gradient", g);
			CHECK(writer[g] >= last, "gradient %d out of backward's order", g);
			last = writer[g];
			bytes += b->buf[g].bytes;
		}
		CHECK(q->after == last && q->bytes == bytes, "bucket %d: after %d, want %d", j, q->after, last);
		CHECK(j == 0 || q->after >= p->bucket[j - 1].after);
		if (cap > 0 && j + 1 < p->nbuckets)
			CHECK(bytes >= cap && bytes - b->buf[p->order[q->first + q->count - 1]].bytes < cap,
			      "bucket %d holds %lld bytes for a cap of %lld", j, (long long)bytes, (long long)cap);
		at += q->count;
	}
	CHECK(at == p->ngrads);
	if (cap <= 0)
		CHECK(p->nbuckets == (grads > 0), "%d buckets without a cap", p->nbuckets);
}

int main(void)
{
	tu_start("test_rt_grad_buckets");
	for (int round = 0; round < 50; round++) {
		Bundle b;
		BundleKernel k[KERNELS];
		int writer[BUFFERS];
		make_plan(&b, k, writer);
		int64_t cap = round % 5 == 0 ? 0 : 4 * (int64_t)tu_below(3000);
		RtGradPlan p;
		char err[256];
		CHECK(rt_grad_plan(&b, k, KERNELS, cap, &p, err, sizeof err), "%s", err);
		check_plan(&b, &p, writer, cap);
		rt_grad_plan_free(&p);
		for (int i = 0; i < BUFFERS; i++)
			if (b.buf[i].role == BUF_GRAD) {
				b.buf[i].dtype = DT_F16;
				CHECK(!rt_grad_plan(&b, k, KERNELS, cap, &p, err, sizeof err));
				char want[128];
				snprintf(want, sizeof want, "m: gradient 'b%d' is f16; the ranks sum f32 gradients", i);
				CHECK(strncmp(err, want, strlen(want)) == 0, "got '%s'", err);
				break;
			}
		free(b.buf);
	}
	return tu_finish("test_rt_grad_buckets");
}
