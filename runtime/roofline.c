/* roofline.c: the host's roofline, measured and cached (roofline.h). */
#include "runtime/roofline.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cache_dir.h"
#include "runtime/clock.h"
#include "runtime/threadpool.h"

/* Independent accumulators: enough to cover the FMA latency (4 cycles) on two FMA ports. */
#define CHAINS 12
#define LANES 16
typedef float Vec __attribute__((vector_size(LANES * sizeof(float))));

/* Each thread's share of the measurements. */
typedef struct {
	int64_t fma_iters;
	float *src, *dst;
	size_t floats_per_thread;
	float sink;
} Probe;

/* The widest vectors the CPU runs: the build targets the baseline ISA, the peak needs FMA. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WIDEST __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define WIDEST
#endif

WIDEST static float fma_loop(int64_t iters, float seed)
{
	Vec acc[CHAINS], m, a;
	for (int i = 0; i < LANES; i++) {
		m[i] = 0.999999f;
		a[i] = seed * 1e-7f;
	}
	for (int c = 0; c < CHAINS; c++)
		acc[c] = m * (float)(c + 1);
	for (int64_t i = 0; i < iters; i++)
		for (int c = 0; c < CHAINS; c++)
			acc[c] = acc[c] * m + a; /* contracted to one FMA (gnu11's -ffp-contract=fast) */
	float s = 0;
	for (int c = 0; c < CHAINS; c++)
		for (int i = 0; i < LANES; i++)
			s += acc[c][i];
	return s;
}

static void fma_kernel(void *arg, int64_t begin, int64_t end)
{
	Probe *p = arg;
	for (int64_t t = begin; t < end; t++) {
		float s = fma_loop(p->fma_iters, (float)t);
		if (s == 12345.0f) /* keeps the loop's result live */
			p->sink = s;
	}
}

static void copy_kernel(void *arg, int64_t begin, int64_t end)
{
	Probe *p = arg;
	for (int64_t t = begin; t < end; t++)
		memcpy(p->dst + (size_t)t * p->floats_per_thread, p->src + (size_t)t * p->floats_per_thread,
		       p->floats_per_thread * sizeof(float));
}

/* The best of a few runs: other work on the machine only ever slows a run down. */
static double best_seconds(ThreadPool *pool, RtKernelFn fn, Probe *p, int threads, int runs)
{
	double best = 1e30;
	for (int i = 0; i < runs; i++) {
		double t = rt_clock_s();
		rt_pool_run(pool, fn, p, threads);
		t = rt_clock_s() - t;
		best = t < best ? t : best;
	}
	return best;
}

static bool measure(int threads, RtRoofline *r)
{
	ThreadPool *pool = rt_pool_new(threads);
	if (!pool)
		return false;
	threads = rt_pool_threads(pool);
	/* 32 MiB per thread and array: well past any last-level cache share */
	Probe p = {.fma_iters = 1 << 22, .floats_per_thread = (size_t)8 << 20};
	size_t floats = p.floats_per_thread * (size_t)threads;
	p.src = malloc(floats * sizeof(float));
	p.dst = malloc(floats * sizeof(float));
	bool ok = p.src && p.dst;
	if (ok) {
		for (size_t i = 0; i < floats; i++)
			p.src[i] = (float)(i & 1023);
		rt_pool_run(pool, copy_kernel, &p, threads); /* maps dst's pages */
		double copy = best_seconds(pool, copy_kernel, &p, threads, 3);
		double fma = best_seconds(pool, fma_kernel, &p, threads, 3);
		r->gbs = 2.0 * (double)floats * sizeof(float) / copy / 1e9;
		r->gflops = 2.0 * CHAINS * LANES * (double)p.fma_iters * threads / fma / 1e9;
	}
	free(p.src);
	free(p.dst);
	rt_pool_free(pool);
	return ok;
}

/* Lines "threads<TAB>GFLOP/s<TAB>GB/s<TAB>cpu" */
static bool find_cached(const char *path, const char *cpu, int threads, RtRoofline *r)
{
	FILE *f = fopen(path, "r");
	char line[512];
	bool found = false;
	while (f && !found && fgets(line, sizeof line, f)) {
		int t, at = 0;
		double gflops, gbs;
		line[strcspn(line, "\n")] = 0;
		found = sscanf(line, "%d\t%lf\t%lf\t%n", &t, &gflops, &gbs, &at) == 3 && at > 0 && t == threads &&
			strcmp(line + at, cpu) == 0 && gflops > 0 && gbs > 0;
		if (found) {
			r->gflops = gflops;
			r->gbs = gbs;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* Appends the line through a new file renamed over the old, so a reader never sees half of it. */
static bool store(const char *path, const char *cpu, int threads, const RtRoofline *r)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	FILE *in = fopen(path, "r"), *out = fopen(tmp, "w");
	char line[512];
	while (in && out && fgets(line, sizeof line, in))
		fputs(line, out);
	if (in)
		fclose(in);
	if (!out)
		return false;
	fprintf(out, "%d\t%.1f\t%.1f\t%s\n", threads, r->gflops, r->gbs, cpu);
	bool ok = !ferror(out);
	ok = fclose(out) == 0 && ok && rename(tmp, path) == 0;
	if (!ok)
		remove(tmp);
	return ok;
}

bool rt_host_roofline(const char *cpu, int threads, const char *dir, RtRoofline *r)
{
	memset(r, 0, sizeof *r);
	if (threads <= 0)
		threads = rt_pool_default_threads();
	char path[4096] = "";
	if (dir && *dir && (size_t)snprintf(path, sizeof path, "%s/roofline", dir) >= sizeof path)
		path[0] = 0;
	if (path[0] && find_cached(path, cpu, threads, r)) {
		snprintf(r->source, sizeof r->source, "measured before, kept in %.120s", path);
		return true;
	}
	if (!measure(threads, r))
		return false;
	bool kept = path[0] && rt_make_dirs(dir) && store(path, cpu, threads, r);
	snprintf(r->source, sizeof r->source, "measured now%s%.120s", kept ? ", kept in " : "", kept ? path : "");
	return true;
}

double rt_roofline_share(const RtRoofline *r, double flops, double bytes, double seconds)
{
	if (!r || r->gflops <= 0 || r->gbs <= 0 || seconds <= 0 || (flops <= 0 && bytes <= 0))
		return 0;
	double compute = flops / (r->gflops * 1e9), memory = bytes / (r->gbs * 1e9);
	return (compute > memory ? compute : memory) / seconds;
}
