/* launch_timing.h: a program's kernels timed one by one (`bench --profile`). On a device with
 * timer marks (CUDA and HIP events) the launches are queued back to back on one stream with a
 * mark between each two, and read once at the end: a kernel's time is the device's own, with no
 * wait per kernel. Elsewhere (the CPU) each kernel is launched alone and waited for. */
#ifndef NETC_LAUNCH_TIMING_H
#define NETC_LAUNCH_TIMING_H

#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/device.h"

/* Launches kernel i (fn[i], k[i]'s grid and block) for i in [0, n) over arena and adds its time
 * to seconds[i]. True when the device's marks timed them, false when the host's clock did. */
bool rt_launch_timed(const RtDeviceOps *ops, RtDevice *d, void *arena, void *const *fn, const BundleKernel *k,
		     int n, double *seconds);

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
