/* launch_timing.c: kernels timed one by one (launch_timing.h). */
#include "runtime/launch_timing.h"

#include <stdlib.h>
#include <time.h>

#include "runtime/clock.h"

void rt_gate_close(RtGate *g)
{
	atomic_store(&g->open, 0);
}

void rt_gate_open(RtGate *g)
{
	atomic_store(&g->open, 1);
}

void rt_gate_wait(void *gate)
{
	RtGate *g = gate;
	while (!atomic_load(&g->open))
		nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
}

/* Back to back, a mark before the first kernel and after each. */
static bool launch_marked(const RtDeviceOps *ops, RtDevice *d, void *arena, void *const *fn, const BundleKernel *k,
			  int n, double *seconds)
{
	double *ms = malloc((size_t)n * sizeof *ms);
	if (!ms || !ops->timer_begin(d, n + 1)) {
		free(ms);
		return false;
	}
	ops->timer_mark(d, 0);
	for (int i = 0; i < n; i++) {
		ops->launch(d, fn[i], arena, &k[i]);
		ops->timer_mark(d, i + 1);
		if (i + 1 == RT_GATED_LAUNCHES)
			ops->timer_release(d);
	}
	if (ops->timer_read(d, ms, n + 1))
		for (int i = 0; i < n; i++)
			seconds[i] += ms[i] / 1e3;
	free(ms);
	return true; /* the kernels ran; a failed read is the device's sticky error */
}

static void free_graphs(const RtDeviceOps *ops, RtDevice *d, void **graph, int n)
{
	for (int i = 0; i < n; i++)
		if (graph[i])
			ops->graph_free(d, graph[i]);
	free(graph);
}

/* Kernel i launched RT_REPLAYED_LAUNCHES times into a graph of its own, graph[i]; NULL when a
 * capture fails (the others freed). */
static void **capture_each(const RtDeviceOps *ops, RtDevice *d, void *arena, void *const *fn, const BundleKernel *k,
			   int n)
{
	void **graph = calloc((size_t)n, sizeof *graph);
	char err[256];
	for (int i = 0; graph && i < n; i++) {
		if (!ops->capture_begin(d, err, sizeof err))
			break;
		for (int r = 0; r < RT_REPLAYED_LAUNCHES; r++)
			ops->launch(d, fn[i], arena, &k[i]);
		if (!(graph[i] = ops->capture_end(d, err, sizeof err)))
			break;
	}
	if (graph && n > 0 && !graph[n - 1]) {
		free_graphs(ops, d, graph, n);
		return NULL;
	}
	return graph;
}

/* The graphs of capture_each replayed back to back, a mark before the first and after each: a
 * kernel's time is the graph's over its launches, which pay what the launches of the step's own
 * graph pay rather than an event's cost each (docs/profiling.md). */
static bool replay_marked(const RtDeviceOps *ops, RtDevice *d, void *arena, void *const *fn, const BundleKernel *k,
			  int n, double *seconds)
{
	void **graph = capture_each(ops, d, arena, fn, k, n);
	double *ms = malloc((size_t)n * sizeof *ms);
	if (!graph || !ms || !ops->timer_begin(d, n + 1)) {
		if (graph)
			free_graphs(ops, d, graph, n);
		free(ms);
		return false;
	}
	ops->timer_mark(d, 0);
	for (int i = 0; i < n; i++) {
		ops->replay(d, graph[i]);
		ops->timer_mark(d, i + 1);
		if (i + 1 == RT_GATED_LAUNCHES)
			ops->timer_release(d);
	}
	if (ops->timer_read(d, ms, n + 1))
		for (int i = 0; i < n; i++)
			seconds[i] += ms[i] / RT_REPLAYED_LAUNCHES / 1e3;
	free_graphs(ops, d, graph, n);
	free(ms);
	return true; /* the kernels ran; a failed read is the device's sticky error */
}

RtKernelTiming rt_launch_timed(const RtDeviceOps *ops, RtDevice *d, void *arena, void *const *fn,
			       const BundleKernel *k, int n, double *seconds)
{
	if (n > 0 && ops->timer_begin && ops->capture_begin && replay_marked(ops, d, arena, fn, k, n, seconds))
		return RT_TIMED_BY_GRAPHS;
	if (n > 0 && ops->timer_begin && launch_marked(ops, d, arena, fn, k, n, seconds))
		return RT_TIMED_BY_EVENTS;
	for (int i = 0; i < n; i++) {
		double t = rt_clock_s();
		ops->launch(d, fn[i], arena, &k[i]);
		ops->synchronize(d);
		seconds[i] += rt_clock_s() - t;
	}
	return RT_TIMED_BY_HOST;
}
