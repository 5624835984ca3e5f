/* session.c: a bundle loaded on a device: its code object, its kernels resolved, one arena.
 *
 * On a device with graphs, the first run of a program captures its launches as one graph and
 * every later run replays it. That is valid because nothing a step reads moves: the kernels take
 * only the arena's address, and the learning rate, the dropout key and the inputs are written
 * into fixed places in the arena before each run.
 *
 * A data-parallel session (rt_set_comm) runs the training program in two parts, backward and the
 * update, split where the bundle says (Bundle.update_node), and between them replaces every
 * gradient (BUF_GRAD) by its mean over the ranks: on the CPU through MPI on the arena itself, on a
 * GPU through NCCL on the device's stream, inside the captured graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/comm.h"
#include "runtime/device.h"
#include "runtime/grad_buckets.h"
#include "runtime/launch_timing.h"
#include "runtime/rt.h"
#include "runtime/tensor_map.h"

/* Values rt_ranks_sum takes at once. */
#define RANKS_SUM_MAX 16

/* One program's kernels as the device resolved them, and its graph once captured. */
typedef struct {
	const BundleKernel *k;
	int n;
	void **fn;
	void *graph;
	bool no_graph;   /* capture failed or is off: launch kernel by kernel */
	int split;       /* data-parallel training: the gradients are reduced before kernel split; -1 */
} Program;

struct Session {
	const Bundle *b;
	const RtDeviceOps *ops;
	const BundleCode *code; /* the code object this device runs */
	RtDevice *dev;
	void *arena;      /* device memory */
	uint8_t *host;    /* the host's view of the arena, NULL where the device has none */
	void *module;
	Program train, eval, accum; /* accum: a gradient-accumulation micro-batch */
	RtComm *comm;     /* data-parallel: the ranks; NULL for one process */
	RtGradPlan grads; /* the BUF_GRAD buffers, which the ranks average, in buckets */
	bool overlap;     /* the collectives run on the device's side stream (rt_comm_stream) */
	void *scratch;    /* device memory for rt_ranks_sum where the ranks sum device memory */
	double *profile;  /* rt_profile: seconds per training kernel, added to; NULL: not profiling */
	RtKernelTiming profile_timing; /* what timed the last profiled run */
	RtDeviceInfo device; /* what the device says of itself: its model and architecture */
	char info[256];
	char note[1024];
};

static bool resolve(Session *s, Program *p, const BundleKernel *k, int n, char *err, size_t errlen)
{
	p->k = k;
	p->n = n;
	p->split = -1;
	p->fn = calloc(n ? (size_t)n : 1, sizeof *p->fn);
	if (!p->fn) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	for (int i = 0; i < n; i++)
		if (!(p->fn[i] = s->ops->get_kernel(s->dev, s->module, k[i].symbol, k[i].shared, err, errlen)))
			return false;
	return true;
}

/* NETC_GRAPHS=0 launches kernel by kernel even where the device has graphs (to compare). */
static bool graphs_wanted(const RtDeviceOps *ops)
{
	const char *env = getenv("NETC_GRAPHS");
	return ops->capture_begin && !(env && strcmp(env, "0") == 0);
}

static void describe(Session *s, const RtChoice *c)
{
	s->ops->describe(s->dev, s->info, sizeof s->info);
	size_t n = 0;
	if (strcmp(s->code->arch, c->info.arch) != 0)
		n = (size_t)snprintf(s->note, sizeof s->note, "runs the bundle's %s code, which the driver "
				     "compiles for %s", s->code->target, c->info.arch);
	if (c->note[0] && n < sizeof s->note)
		snprintf(s->note + n, sizeof s->note - n, "%sauto: %s", n ? "; " : "", c->note);
}

/* The code's tensor maps encoded for this arena and stored in it, where its kernels read them. */
static bool store_tensor_maps(Session *s, const BundleCode *c, char *err, size_t errlen)
{
	for (int i = 0; i < c->ntmaps; i++) {
		const BundleTensorMap *m = &c->tmaps[i];
		char why[256];
		if (!rt_tensor_map_check(m, s->b->arena_bytes, why, sizeof why)) {
			snprintf(err, errlen, "tensor map %d of the %s code: %s", i, c->target, why);
			return false;
		}
		if (!s->ops->tensor_map) {
			snprintf(err, errlen, "the %s code reads tensor maps, which %s devices do not have", c->target,
				 s->ops->name);
			return false;
		}
		_Alignas(BUNDLE_TMAP_BYTES) uint8_t bytes[BUNDLE_TMAP_BYTES];
		if (!s->ops->tensor_map(s->dev, m, s->arena, bytes, err, errlen))
			return false;
		s->ops->copy_in(s->dev, s->arena, (size_t)m->at, bytes, sizeof bytes);
	}
	return true;
}

Session *rt_open(const Bundle *b, const char *device, int threads, char *err, size_t errlen)
{
	RtChoice c;
	if (!rt_choose_device(b, device, &c, err, errlen))
		return NULL;
	Session *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->b = b;
	s->ops = c.ops;
	s->code = c.code;
	bool ok = (s->dev = c.ops->open(c.index, threads, err, errlen)) &&
		  (s->arena = c.ops->alloc(s->dev, (size_t)b->arena_bytes, err, errlen)) &&
		  store_tensor_maps(s, c.code, err, errlen) &&
		  (s->module = c.ops->load_code(s->dev, c.code->data, c.code->size, err, errlen)) &&
		  resolve(s, &s->train, c.code->train_kernels, c.code->ntrain, err, errlen) &&
		  resolve(s, &s->eval, c.code->eval_kernels, c.code->neval, err, errlen) &&
		  resolve(s, &s->accum, c.code->accum_kernels, c.code->naccum, err, errlen);
	if (!ok) {
		rt_close(s);
		return NULL;
	}
	s->train.no_graph = s->eval.no_graph = s->accum.no_graph = !graphs_wanted(c.ops);
	s->host = c.ops->host_view(s->dev, s->arena);
	s->device = c.info;
	describe(s, &c);
	return s;
}

static void program_free(Session *s, Program *p)
{
	if (p->graph)
		s->ops->graph_free(s->dev, p->graph);
	free(p->fn);
	p->graph = NULL;
}

void rt_close(Session *s)
{
	if (!s)
		return;
	program_free(s, &s->train);
	program_free(s, &s->eval);
	program_free(s, &s->accum);
	rt_grad_plan_free(&s->grads);
	if (s->scratch)
		s->ops->free(s->dev, s->scratch);
	if (s->module)
		s->ops->unload_code(s->dev, s->module);
	if (s->arena)
		s->ops->free(s->dev, s->arena);
	if (s->dev)
		s->ops->close(s->dev);
	free(s);
}

static void launch_range(Session *s, const Program *p, int from, int to)
{
	for (int i = from; i < to; i++)
		s->ops->launch(s->dev, p->fn[i], s->arena, &p->k[i]);
}

/* The bucket's gradients replaced by their mean over the ranks, in one group where the engine
 * fuses calls. A failed collective ends every rank: the ranks' parameters would part ways. */
static void average_bucket(Session *s, const RtGradBucket *bucket)
{
	RtComm *c = s->comm;
	bool ok = !c->ops->group_begin || c->ops->group_begin(c);
	for (int i = bucket->first; i < bucket->first + bucket->count && ok; i++) {
		const BundleBuffer *x = &s->b->buf[s->grads.order[i]];
		char what[160];
		snprintf(what, sizeof what, "the all-reduce of gradient '%s'", x->name);
		float *at = s->host ? (float *)(s->host + x->offset) : (float *)((char *)s->arena + x->offset);
		ok = rt_comm_allreduce_mean(c, at, (size_t)x->bytes / sizeof(float), what);
	}
	ok = ok && (!c->ops->group_end || c->ops->group_end(c));
	if (!ok)
		rt_comm_abort(c, c->error);
}

/* Backward, the gradients' means, the update. With a side stream each bucket is reduced there as
 * soon as backward has written it, while backward goes on, and the update waits for them all;
 * else the buckets follow backward on the one stream. */
static void launch_all(Session *s, const Program *p)
{
	if (p->split < 0) {
		launch_range(s, p, 0, p->n);
		return;
	}
	int next = 0;
	for (int k = 0; k < p->split; k++) {
		launch_range(s, p, k, k + 1);
		for (; s->overlap && next < s->grads.nbuckets && s->grads.bucket[next].after == k; next++) {
			s->ops->fork(s->dev);
			average_bucket(s, &s->grads.bucket[next]);
		}
	}
	for (; next < s->grads.nbuckets; next++)
		average_bucket(s, &s->grads.bucket[next]);
	if (s->overlap)
		s->ops->join(s->dev);
	launch_range(s, p, p->split, p->n);
}

/* NETC_DP_BUCKET_MB: the bucket size in MiB (PyTorch DDP's default, 25, without). */
static int64_t bucket_bytes(void)
{
	const char *env = getenv("NETC_DP_BUCKET_MB");
	char *end;
	double mb = env ? strtod(env, &end) : 0;
	return (int64_t)((env && end != env && *end == 0 && mb > 0 ? mb : 25) * 1048576.0);
}

/* The training program without the collectives again: recaptured, launched whole. */
static void detach(Session *s)
{
	Program *p = &s->train;
	if (p->graph)
		s->ops->graph_free(s->dev, p->graph);
	p->graph = NULL;
	p->split = -1;
	s->comm = NULL;
}

bool rt_set_comm(Session *s, RtComm *c, char *err, size_t errlen)
{
	const Bundle *b = s->b;
	if (!c) {
		detach(s);
		return true;
	}
	if (b->update_node < 0) {
		snprintf(err, errlen, "%s: backward and the optimizer update share kernels in this bundle, so the ranks "
			 "cannot sum the gradients in between: compile it with --data-parallel", b->model);
		return false;
	}
	if (c->ops->host_buffers != (s->host != NULL)) {
		snprintf(err, errlen, "%s ranks cannot reach the memory of the %s device (MPI sums host memory: the "
			 "CPU device; GPUs use NCCL or RCCL)", c->ops->name, s->ops->name);
		return false;
	}
	if (!c->ops->host_buffers && !s->scratch &&
	    !(s->scratch = s->ops->alloc(s->dev, RANKS_SUM_MAX * sizeof(float), err, errlen)))
		return false;
	Program *p = &s->train;
	for (p->split = 0; p->split < p->n && p->k[p->split].node < b->update_node; p->split++)
		;
	rt_grad_plan_free(&s->grads);
	if (!rt_grad_plan(b, p->k, p->split, bucket_bytes(), &s->grads, err, errlen))
		return false;
	if (p->graph) /* recorded without the collectives */
		s->ops->graph_free(s->dev, p->graph);
	p->graph = NULL;
	s->comm = c;
	return true;
}

void *rt_comm_stream(Session *s)
{
	const char *env = getenv("NETC_DP_OVERLAP");
	bool wanted = !(env && strcmp(env, "0") == 0);
	void *side = wanted && s->ops->side_stream ? s->ops->side_stream(s->dev) : NULL;
	s->overlap = side != NULL;
	return side ? side : s->ops->stream ? s->ops->stream(s->dev) : NULL;
}

void rt_ranks_sum(Session *s, float *v, int n)
{
	RtComm *c = s->comm;
	if (!c || n <= 0)
		return;
	if (n > RANKS_SUM_MAX) {
		fprintf(stderr, "%s:%d: rt_ranks_sum: %d values, more than %d\n", __FILE__, __LINE__, n, RANKS_SUM_MAX);
		abort();
	}
	float *at = v;
	if (!c->ops->host_buffers) {
		s->ops->copy_in(s->dev, s->scratch, 0, v, (size_t)n * sizeof *v);
		at = s->scratch;
	}
	const char *what = "the all-reduce of the step's loss";
	if (s->overlap)
		s->ops->fork(s->dev);
	if (!rt_comm_allreduce_sum(c, at, (size_t)n, what))
		rt_comm_abort(c, c->error);
	if (s->overlap)
		s->ops->join(s->dev);
	if (!c->ops->host_buffers) {
		rt_comm_watch(c, what); /* the stream holds the step's collectives: this read waits for them */
		s->ops->copy_out(s->dev, v, s->scratch, 0, (size_t)n * sizeof *v);
		rt_comm_unwatch(c);
	}
}


/* Records the program as a graph; where that fails, it stays kernel by kernel, and says so
 * once on stderr: slower, not wrong. */
static void capture(Session *s, Program *p)
{
	char err[512] = "";
	if (s->ops->capture_begin(s->dev, err, sizeof err)) {
		launch_all(s, p);
		p->graph = s->ops->capture_end(s->dev, err, sizeof err);
	}
	if (!p->graph) {
		p->no_graph = true;
		fprintf(stderr, "netc: warning: no graph capture, launching kernel by kernel: %s\n", err);
	}
}

void rt_profile(Session *s, double *seconds)
{
	if (seconds)
		rt_sync(s);
	s->profile = seconds;
}

RtKernelTiming rt_profile_timing(const Session *s) { return s->profile_timing; }

const BundleKernel *rt_train_kernels(const Session *s, int *n)
{
	*n = s->train.n;
	return s->train.k;
}

bool rt_run(Session *s, int program)
{
	Program *p = program == RT_PROG_TRAIN ? &s->train : program == RT_PROG_EVAL ? &s->eval
			 : program == RT_PROG_ACCUM ? &s->accum : NULL;
	if (!p) {
		fprintf(stderr, "%s:%d: rt_run: no program %d\n", __FILE__, __LINE__, program);
		abort();
	}
	if (s->profile && p == &s->train) {
		s->profile_timing = rt_launch_timed(s->ops, s->dev, s->arena, p->fn, p->k, p->n, s->profile);
		return !s->ops->error(s->dev);
	}
	if (!p->graph && !p->no_graph)
		capture(s, p);
	if (p->graph)
		s->ops->replay(s->dev, p->graph);
	else
		launch_all(s, p);
	return !s->ops->error(s->dev);
}

bool rt_sync(Session *s)
{
	s->ops->synchronize(s->dev);
	return !s->ops->error(s->dev);
}

const char *rt_error(const Session *s)
{
	return s->ops->error(s->dev);
}

void *rt_buffer(Session *s, int buf)
{
	if (!s->host || buf < 0 || buf >= s->b->nbuf || s->b->buf[buf].offset < 0)
		return NULL;
	return s->host + s->b->buf[buf].offset;
}

static size_t clamp_bytes(const Session *s, int buf, size_t bytes)
{
	const BundleBuffer *x = &s->b->buf[buf];
	return bytes < (size_t)x->bytes ? bytes : (size_t)x->bytes;
}

void rt_write(Session *s, int buf, const void *src, size_t bytes)
{
	if (buf < 0 || buf >= s->b->nbuf || s->b->buf[buf].offset < 0)
		return;
	s->ops->copy_in(s->dev, s->arena, (size_t)s->b->buf[buf].offset, src, clamp_bytes(s, buf, bytes));
}

void rt_read(Session *s, int buf, void *dst, size_t bytes)
{
	if (buf < 0 || buf >= s->b->nbuf || s->b->buf[buf].offset < 0)
		return;
	s->ops->copy_out(s->dev, dst, s->arena, (size_t)s->b->buf[buf].offset, clamp_bytes(s, buf, bytes));
}

const Bundle *rt_bundle(const Session *s) { return s->b; }
const char *rt_device_name(const Session *s) { return s->ops->name; }
const char *rt_device_info(const Session *s) { return s->info; }
const char *rt_device_note(const Session *s) { return s->note; }
const char *rt_device_arch(const Session *s) { return s->device.arch; }
const char *rt_device_model(const Session *s) { return s->device.name; }
bool rt_graphs(const Session *s) { return s->train.graph != NULL; }
