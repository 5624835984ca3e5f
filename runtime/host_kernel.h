/* host_kernel.h: calling a kernel of a host code object (the ABI of codegen/cg.h): the arena, a
 * range of work-groups, the buffer arguments, b<i> = arena + args[i] for i < nargs and the arena
 * past them, and the size arguments. For the CPU device and the tests that run kernels themselves. */
#ifndef NETC_HOST_KERNEL_H
#define NETC_HOST_KERNEL_H

#include <stdint.h>
#include <string.h>

#include "runtime/bundle.h"

typedef void (*RtHostKernel)(void *arena, int64_t wg_begin, int64_t wg_end, void *b0, void *b1, void *b2, void *b3,
			     void *b4, void *b5, void *b6, void *b7, void *b8, void *b9, void *b10, void *b11,
			     void *b12, void *b13, void *b14, void *b15, int64_t s0, int64_t s1, int64_t s2,
			     int64_t s3);
_Static_assert(BUNDLE_BUFFER_ARGS == 16, "RtHostKernel takes every buffer argument");
_Static_assert(BUNDLE_SIZE_ARGS == 4, "RtHostKernel takes every size argument");

/* The kernel at `kernel` (as dlsym gives it) over work-groups [wg_begin, wg_end). */
static inline void rt_host_kernel_call(void *kernel, void *arena, int64_t wg_begin, int64_t wg_end, int nargs,
				       const int64_t *args, const int64_t sizes[BUNDLE_SIZE_ARGS])
{
	RtHostKernel fn;
	/* dlsym returns functions as data pointers; POSIX guarantees the round trip */
	memcpy(&fn, &kernel, sizeof fn);
	void *b[BUNDLE_BUFFER_ARGS];
	bundle_buffer_args(arena, nargs, args, b);
	fn(arena, wg_begin, wg_end, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
	   b[13], b[14], b[15], sizes[0], sizes[1], sizes[2], sizes[3]);
}

#endif
