/* clock.h: seconds on the monotonic clock, for timing steps and benchmarks. */
#ifndef NETC_CLOCK_H
#define NETC_CLOCK_H

#include <time.h>

static inline double rt_clock_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif
