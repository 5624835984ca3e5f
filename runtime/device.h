/* device.h: what the runtime needs of a device, as a small vtable. Backends: the CPU
 * (device_cpu.c), the CUDA driver (device_cuda.c) and HIP (device_hip.c). The GPU backends load
 * their driver libraries with dlopen, so one binary runs on any machine and the build needs
 * neither CUDA nor ROCm.
 *
 * Launches on a GPU are queued: they, and copy_in, return before the work is done; copy_out and
 * synchronize wait for it. GPU errors surface late, so a backend keeps the first one and error()
 * reports it (the session checks it after each program and each read). */
#ifndef NETC_DEVICE_H
#define NETC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/bundle.h"

typedef struct RtDevice RtDevice; /* a backend's own state */

/* What `netc devices` lists and what a bundle's code objects are matched on. */
typedef struct {
	char name[128];     /* "NVIDIA H100 80GB HBM3", "AMD Radeon RX 6800", the CPU's model */
	char arch[32];      /* matched against BundleCode.arch: "sm_90", "gfx90a", "host" */
	char full_arch[64]; /* as the driver says it, features included: "gfx90a:sramecc+:xnack-" */
	uint64_t memory;    /* bytes */
	int wave;           /* warp or wavefront size; 0 on the CPU */
	int units;          /* SMs, CUs or cores */
} RtDeviceInfo;

typedef struct {
	const char *name;   /* "cpu", "cuda", "hip" */
	int code_kind;      /* the CodeKind of bundle.h this backend loads */
	const char *units;  /* what RtDeviceInfo.units counts: "SMs", "CUs", "cores" */
	/* Devices of this kind: 0 or more, or -1 when the backend cannot look (driver library
	 * missing, driver failing). why gets one line whenever there is none. */
	int (*count)(char *why, size_t len);
	bool (*query)(int index, RtDeviceInfo *info, char *err, size_t errlen);
	/* threads: CPU worker threads, 0 = all cores; GPUs ignore it */
	RtDevice *(*open)(int index, int threads, char *err, size_t errlen);
	/* One line for the run's log: "cpu (8 threads)", "cuda:0 NVIDIA H100 (sm_90, 79.1 GiB)". */
	void (*describe)(RtDevice *d, char *buf, size_t len);
	/* Zeroed device memory, 64-byte aligned at least; NULL with a message on failure. */
	void *(*alloc)(RtDevice *d, size_t bytes, char *err, size_t errlen);
	void (*free)(RtDevice *d, void *mem);
	/* src may be reused as soon as copy_in returns. */
	void (*copy_in)(RtDevice *d, void *mem, size_t offset, const void *src, size_t bytes);
	/* Waits for the work queued before it. */
	void (*copy_out)(RtDevice *d, void *dst, const void *mem, size_t offset, size_t bytes);
	/* Where the host can read and write mem directly, its address; else NULL. */
	void *(*host_view)(RtDevice *d, void *mem);
	void *(*load_code)(RtDevice *d, const void *code, size_t size, char *err, size_t errlen);
	void (*unload_code)(RtDevice *d, void *module);
	/* NULL with a message naming the kernel when the code object lacks it, or when the device
	 * cannot give its launches `shared` bytes of dynamic shared memory (BundleKernel.shared). */
	void *(*get_kernel)(RtDevice *d, void *module, const char *name, int shared, char *err, size_t errlen);
	/* Queues kernel over k's grid of work-groups of k->block work-items, each with k->shared
	 * bytes of dynamic shared memory; its arguments are the arena, k's buffer arguments
	 * (bundle_buffer_args) and its size arguments. */
	void (*launch)(RtDevice *d, void *kernel, void *arena, const BundleKernel *k);
	/* Optional graphs (NULL on devices without them): the launches queued between
	 * capture_begin and capture_end are recorded, not run, and become one graph that replay
	 * queues as a whole. Failures are reported through err and leave no sticky error: the
	 * session then launches kernel by kernel. */
	bool (*capture_begin)(RtDevice *d, char *err, size_t errlen);
	void *(*capture_end)(RtDevice *d, char *err, size_t errlen);
	void (*replay)(RtDevice *d, void *graph);
	void (*graph_free)(RtDevice *d, void *graph);
	void (*synchronize)(RtDevice *d);
	/* Optional: the stream launches go on (CUstream, hipStream_t), which NCCL queues on too. */
	void *(*stream)(RtDevice *d);
	/* Optional, all three or none: a second stream (made on first use; NULL when it cannot be)
	 * for collectives that overlap the kernels; fork orders the side stream after the work
	 * queued on the main one so far, join the main stream after the side's. Both are recorded
	 * into a graph under capture. */
	void *(*side_stream)(RtDevice *d);
	void (*fork)(RtDevice *d);
	void (*join)(RtDevice *d);
	/* Optional, all four or none: the device's clock between launches (runtime/launch_timing.h).
	 * timer_begin readies marks [0, marks) and holds the stream behind a gate until
	 * timer_release; false when it cannot (the host's clock is used). timer_mark queues mark i
	 * behind the work queued so far. timer_read opens the gate, waits for the last mark and sets
	 * ms[i] to the time between marks i and i + 1, i < marks - 1; false on a failure, which is
	 * the device's error. */
	bool (*timer_begin)(RtDevice *d, int marks);
	void (*timer_mark)(RtDevice *d, int i);
	void (*timer_release)(RtDevice *d);
	bool (*timer_read)(RtDevice *d, double *ms, int marks);
	/* Optional (CUDA): the driver's 128-byte encoding of tensor map m (runtime/tensor_map.h, m
	 * checked) for the arena at device address `arena`, into out; false with a message where
	 * the driver or the GPU has no tensor maps. */
	bool (*tensor_map)(RtDevice *d, const BundleTensorMap *m, void *arena, void *out, char *err, size_t errlen);
	/* The first error since open, NULL while there is none. */
	const char *(*error)(RtDevice *d);
	void (*close)(RtDevice *d);
} RtDeviceOps;

extern const RtDeviceOps rt_device_cpu, rt_device_cuda, rt_device_hip;

/* The device a run takes and the code object it runs (runtime/devices.c). */
typedef struct {
	const RtDeviceOps *ops;
	int index;
	RtDeviceInfo info;
	const BundleCode *code;
	char note[768]; /* why `auto` chose it, "" when nothing was passed over */
} RtChoice;

/* spec: "auto" (or NULL), "cpu", "cuda", "cuda:N", "hip", "hip:N". */
bool rt_choose_device(const Bundle *b, const char *spec, RtChoice *c, char *err, size_t errlen);
/* The code object of kind for the device: its architecture with agreeing target features, or on
 * NVIDIA the newest PTX for an older GPU, which the driver compiles for this one. */
const BundleCode *rt_code_for(const Bundle *b, int kind, const RtDeviceInfo *info);
/* ---- runtime/device_text.c ---- */
/* "512.0 KiB", "1.2 GiB" */
void rt_format_bytes(uint64_t bytes, char *buf, size_t len);
/* "cuda:0 NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB, 132 SMs)": the one way devices are named in
 * logs and in `netc devices`. */
void rt_device_line(const RtDeviceOps *ops, int index, const RtDeviceInfo *info, char *buf, size_t len);

#endif
