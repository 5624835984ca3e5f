/* roofline.h: the host CPU's roofline for `bench --profile`: its fp32 FMA peak and memory
 * bandwidth, measured once (a short FMA loop and a streaming copy on every thread) and kept in
 * the cache directory. A GPU's come from the target table (codegen/targets.c). */
#ifndef NETC_ROOFLINE_H
#define NETC_ROOFLINE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	double gflops; /* fp32 GFLOP/s, an FMA counted as 2 */
	double gbs;    /* GB/s (1e9 bytes), read and written bytes of a copy counted */
	char source[160]; /* "measured now", "measured, cached in DIR/roofline", "--peak-gflops", ... */
} RtRoofline;

/* The roofline of this CPU (cpu: its model name) on threads threads (0: the default count):
 * from dir/roofline when a line there has the same CPU and threads, else measured (a fraction of
 * a second) and added to that file. dir NULL or "": measured, nothing kept. A file that cannot
 * be written costs nothing but the next measurement. False only when the measurement itself
 * cannot run (no memory or threads). */
bool rt_host_roofline(const char *cpu, int threads, const char *dir, RtRoofline *r);

/* The share of the roofline a kernel reaches: the least time its FLOPs and bytes take at the
 * peaks over the time it took (0..1, more when the peaks are too low). 0 when unknown. */
double rt_roofline_share(const RtRoofline *r, double flops, double bytes, double seconds);

#endif
