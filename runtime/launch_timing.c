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
		ops->launch(d, fn[i], arena, k[i].grid, k[i].block, k[i].shared);
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

bool rt_launch_timed(const RtDeviceOps *ops, RtDevice *d, void *arena, void *const *fn, const BundleKernel *k,
		     int n, double *seconds)
{
	if (n > 0 && ops->timer_begin && launch_marked(ops, d, arena, fn, k, n, seconds))
		return true;
	for (int i = 0; i < n; i++) {
		double t = rt_clock_s();
		ops->launch(d, fn[i], arena, k[i].grid, k[i].block, k[i].shared);
		ops->synchronize(d);
		seconds[i] += rt_clock_s() - t;
	}
	return false;
}
