/* device.h: what the runtime needs of a device, as a small vtable. The CPU is the one backend
 * now (runtime/device_cpu.c); HIP and CUDA backends fill in the same table, loading their driver
 * libraries with dlopen so that one binary runs on any machine. */
#ifndef NETC_DEVICE_H
#define NETC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct RtDevice RtDevice; /* a backend's own state */

typedef struct {
	const char *name;   /* "cpu" */
	const char *target; /* which of a bundle's code objects it runs: "host" */
	/* threads: CPU worker threads, 0 = all cores; GPUs ignore it */
	RtDevice *(*open)(int threads, char *err, size_t errlen);
	/* One line for the run's log: "cpu (8 threads)". */
	void (*describe)(RtDevice *d, char *buf, size_t len);
	/* Zeroed device memory, 64-byte aligned at least; NULL with a message on failure. */
	void *(*alloc)(RtDevice *d, size_t bytes, char *err, size_t errlen);
	void (*free)(RtDevice *d, void *mem);
	void (*copy_in)(RtDevice *d, void *mem, size_t offset, const void *src, size_t bytes);
	void (*copy_out)(RtDevice *d, void *dst, const void *mem, size_t offset, size_t bytes);
	/* Where the host can read and write mem directly, its address; else NULL. */
	void *(*host_view)(RtDevice *d, void *mem);
	void *(*load_code)(RtDevice *d, const void *code, size_t size, char *err, size_t errlen);
	void (*unload_code)(RtDevice *d, void *module);
	/* NULL with a message naming the kernel when the code object lacks it. */
	void *(*get_kernel)(RtDevice *d, void *module, const char *name, char *err, size_t errlen);
	/* Queues kernel over work-groups [0, grid); it takes the arena as its only buffer. */
	void (*launch)(RtDevice *d, void *kernel, void *arena, int64_t grid);
	void (*synchronize)(RtDevice *d);
	void (*close)(RtDevice *d);
} RtDeviceOps;

extern const RtDeviceOps rt_device_cpu;

#endif
