/* launch_timing.h: a program's kernels timed one by one (`bench --profile`). On a device with
 * timer marks (CUDA and HIP events) and graphs, each kernel is captured RT_REPLAYED_LAUNCHES
 * times into a graph of its own and the graphs are replayed back to back on one stream with a
 * mark between each two, read once at the end: a kernel's time is the device's own over its
 * launches, each paying what a launch in the step's graph pays, with no wait per kernel. Without
 * graphs the launches themselves go between the marks; elsewhere (the CPU) each kernel is
 * launched alone and waited for. A kernel runs RT_REPLAYED_LAUNCHES times in a profiled step, so
 * the values a profiled step leaves behind are not a training step's. */
#ifndef NETC_LAUNCH_TIMING_H
#define NETC_LAUNCH_TIMING_H

#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/device.h"
#include "runtime/rt.h"

/* Launches kernel i (fn[i], k[i]'s grid and block) for i in [0, n) over arena and adds its time
 * to seconds[i]; returns what timed them (RtKernelTiming, runtime/rt.h). */
RtKernelTiming rt_launch_timed(const RtDeviceOps *ops, RtDevice *d, void *arena, void *const *fn,
			       const BundleKernel *k, int n, double *seconds);

/* Each kernel's launches in its timing graph: enough that a graph's own start is small beside
 * them (a few microseconds against kernels of a few each), few enough that a long kernel's
 * repeats stay short. */
#define RT_REPLAYED_LAUNCHES 16

/* Timed launches queued while the stream is held behind a gate (a host function that returns
 * once the gate opens) before the GPU starts: launches queued faster than the host can issue
 * them leave no idle gaps between the marks. After this many launches the gate opens anyway, so
 * that a full launch queue never waits on a gate that only the host, blocked in it, could open. */
#define RT_GATED_LAUNCHES 128

/* The gate: a backend's timer_begin queues rt_gate_wait(gate) on its stream after closing it;
 * timer_release (and timer_read) open it. */
typedef struct {
	atomic_int open;
} RtGate;
void rt_gate_close(RtGate *g);
void rt_gate_open(RtGate *g);
void rt_gate_wait(void *gate); /* the host function; never calls the driver */

#endif
