/* device_hip.c: AMD GPUs through HIP, loaded with dlopen from libamdhip64.so (then .so.6, .so.5).
 *
 * A code object is an .hsaco for the GPU's gfx architecture. The arena is one hipMalloc; copies
 * and launches go on one stream, and a whole program is captured from it as a HIP graph where
 * the runtime has them. The few types and entry points netc needs are declared here, so the
 * build needs no ROCm headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/bundle.h"
#include "runtime/device.h"
#include "runtime/dynlib.h"
#include "runtime/launch_timing.h"

typedef int hipError_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipGraph *hipGraph_t;
typedef struct hipGraphExec *hipGraphExec_t;
typedef struct ihipEvent_t *hipEvent_t;

enum {
	hipSuccess = 0,
	hipErrorNoDevice = 100,
	hipErrorInvalidDevice = 101,
	hipMemcpyHostToDevice = 1,
	hipMemcpyDeviceToHost = 2,
	hipStreamNonBlocking = 1,
	hipEventDisableTiming = 2,
	hipStreamCaptureModeThreadLocal = 1,
};

/* return type, field, exported symbol, parameters */
#define HIP_REQUIRED(X)                                                                         \
	X(hipError_t, Init, "hipInit", (unsigned flags))                                        \
	X(hipError_t, GetDeviceCount, "hipGetDeviceCount", (int *count))                        \
	X(hipError_t, DeviceGetName, "hipDeviceGetName", (char *name, int len, int dev))        \
	X(hipError_t, DeviceTotalMem, "hipDeviceTotalMem", (size_t *bytes, int dev))            \
	X(hipError_t, SetDevice, "hipSetDevice", (int dev))                                     \
	X(hipError_t, Malloc, "hipMalloc", (void **p, size_t bytes))                            \
	X(hipError_t, Free, "hipFree", (void *p))                                               \
	X(hipError_t, MemcpyAsync, "hipMemcpyAsync",                                            \
	  (void *dst, const void *src, size_t bytes, int kind, hipStream_t s))                  \
	X(hipError_t, MemsetAsync, "hipMemsetAsync", (void *p, int v, size_t n, hipStream_t s)) \
	X(hipError_t, StreamCreateWithFlags, "hipStreamCreateWithFlags", (hipStream_t *s, unsigned f)) \
	X(hipError_t, StreamDestroy, "hipStreamDestroy", (hipStream_t s))                       \
	X(hipError_t, StreamSynchronize, "hipStreamSynchronize", (hipStream_t s))               \
	X(hipError_t, ModuleLoadData, "hipModuleLoadData", (hipModule_t *m, const void *image)) \
	X(hipError_t, ModuleUnload, "hipModuleUnload", (hipModule_t m))                         \
	X(hipError_t, ModuleGetFunction, "hipModuleGetFunction",                                \
	  (hipFunction_t *f, hipModule_t m, const char *name))                                  \
	X(hipError_t, ModuleLaunchKernel, "hipModuleLaunchKernel",                              \
	  (hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,    \
	   unsigned bz, unsigned shared, hipStream_t s, void **params, void **extra))           \
	X(const char *, GetErrorName, "hipGetErrorName", (hipError_t rc))                       \
	X(const char *, GetErrorString, "hipGetErrorString", (hipError_t rc))

/* device properties in two layouts (see props_layout), and graphs */
#define HIP_OPTIONAL(X)                                                                         \
	X(hipError_t, PropsR0600, "hipGetDevicePropertiesR0600", (void *props, int dev))        \
	X(hipError_t, PropsR0000, "hipGetDevicePropertiesR0000", (void *props, int dev))        \
	X(hipError_t, PropsLegacy, "hipGetDeviceProperties", (void *props, int dev))            \
	X(hipError_t, StreamBeginCapture, "hipStreamBeginCapture", (hipStream_t s, int mode))   \
	X(hipError_t, StreamEndCapture, "hipStreamEndCapture", (hipStream_t s, hipGraph_t *g))  \
	X(hipError_t, GraphInstantiate, "hipGraphInstantiate",                                  \
	  (hipGraphExec_t *e, hipGraph_t g, void *error_node, char *log, size_t loglen))        \
	X(hipError_t, GraphLaunch, "hipGraphLaunch", (hipGraphExec_t e, hipStream_t s))         \
	X(hipError_t, GraphExecDestroy, "hipGraphExecDestroy", (hipGraphExec_t e))              \
	X(hipError_t, GraphDestroy, "hipGraphDestroy", (hipGraph_t g))                          \
	X(hipError_t, EventCreateWithFlags, "hipEventCreateWithFlags", (hipEvent_t *e, unsigned f)) \
	X(hipError_t, EventRecord, "hipEventRecord", (hipEvent_t e, hipStream_t s))             \
	X(hipError_t, EventDestroy, "hipEventDestroy", (hipEvent_t e))                          \
	X(hipError_t, StreamWaitEvent, "hipStreamWaitEvent", (hipStream_t s, hipEvent_t e, unsigned f)) \
	X(hipError_t, EventSynchronize, "hipEventSynchronize", (hipEvent_t e))                 \
	X(hipError_t, EventElapsedTime, "hipEventElapsedTime", (float *ms, hipEvent_t a, hipEvent_t b)) \
	X(hipError_t, LaunchHostFunc, "hipLaunchHostFunc", (hipStream_t s, void (*fn)(void *), void *data))

#define HIP_FIELD(ret, f, sym, params) ret(*f) params;
#define HIP_REQ(ret, f, sym, params) {sym, &hip.f, false},
#define HIP_OPT(ret, f, sym, params) {sym, &hip.f, true},

static struct {
	HIP_REQUIRED(HIP_FIELD)
	HIP_OPTIONAL(HIP_FIELD)
} hip;

/* The runtime is loaded and initialized once per process and stays loaded. */
static struct {
	bool tried;
	int count;     /* devices, or -1 */
	char why[256]; /* when count <= 0 */
	const char *lib;
} runtime;

static void hip_message(hipError_t rc, char *buf, size_t len)
{
	const char *name = hip.GetErrorName(rc), *str = hip.GetErrorString(rc);
	name = name ? name : "unknown error";
	if (str && strcmp(str, name) != 0)
		snprintf(buf, len, "%s (%s, %d)", name, str, rc);
	else
		snprintf(buf, len, "%s (%d)", name, rc);
}

static void runtime_load(void)
{
	runtime.tried = true;
	runtime.count = -1;
	static const char *const names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
	void *lib = rt_dlopen_first(names, 3, &runtime.lib, runtime.why, sizeof runtime.why);
	if (!lib)
		return;
	const RtSymbol syms[] = {HIP_REQUIRED(HIP_REQ) HIP_OPTIONAL(HIP_OPT)};
	if (!rt_dlsyms(lib, runtime.lib, syms, (int)(sizeof syms / sizeof syms[0]), runtime.why,
		       sizeof runtime.why))
		return;
	hipError_t rc = hip.Init(0);
	int n = 0;
	if (rc == hipSuccess)
		rc = hip.GetDeviceCount(&n);
	/* with no GPU (or no /dev/kfd), ROCm 5 says "invalid device", later ones "no device" */
	if (rc == hipErrorNoDevice || rc == hipErrorInvalidDevice || (rc == hipSuccess && n == 0)) {
		runtime.count = 0;
		snprintf(runtime.why, sizeof runtime.why, "no AMD GPU found (%s loaded)", runtime.lib);
		return;
	}
	if (rc != hipSuccess) {
		char msg[160];
		hip_message(rc, msg, sizeof msg);
		snprintf(runtime.why, sizeof runtime.why, "HIP does not start: hipInit: %s", msg);
		return;
	}
	runtime.count = n;
}

static int hip_count(char *why, size_t len)
{
	if (!runtime.tried)
		runtime_load();
	if (runtime.count <= 0)
		snprintf(why, len, "%s", runtime.why);
	return runtime.count;
}

static bool hip_ok(hipError_t rc, const char *what, char *err, size_t errlen)
{
	if (rc == hipSuccess)
		return true;
	char msg[160];
	hip_message(rc, msg, sizeof msg);
	snprintf(err, errlen, "hip: %s: %s", what, msg);
	return false;
}

/* hipDeviceProp_t changed layout in ROCm 6: R0600 is the new one, R0000 (and the unversioned
 * symbol of ROCm 5) the old. Only these fields are read; the buffer is larger than either. */
typedef struct {
	size_t warp, units, arch;
} PropsLayout;

static const PropsLayout layout_r0600 = {308, 388, 1160}, layout_r0000 = {276, 336, 396};

static hipError_t read_props(int dev, unsigned char *props, const PropsLayout **layout)
{
	if (hip.PropsR0600) {
		*layout = &layout_r0600;
		return hip.PropsR0600(props, dev);
	}
	*layout = &layout_r0000;
	return hip.PropsR0000 ? hip.PropsR0000(props, dev) : hip.PropsLegacy(props, dev);
}

static bool hip_arch(int index, RtDeviceInfo *info, char *err, size_t errlen)
{
	_Alignas(16) unsigned char props[4096] = {0};
	const PropsLayout *l;
	if (!hip.PropsR0600 && !hip.PropsR0000 && !hip.PropsLegacy) {
		snprintf(err, errlen, "hip: %s has no hipGetDeviceProperties", runtime.lib);
		return false;
	}
	if (!hip_ok(read_props(index, props, &l), "hipGetDeviceProperties", err, errlen))
		return false;
	memcpy(&info->wave, props + l->warp, sizeof info->wave);
	memcpy(&info->units, props + l->units, sizeof info->units);
	const char *arch = (const char *)props + l->arch;
	if (strncmp(arch, "gfx", 3) != 0 || !memchr(arch, 0, 256) || (info->wave != 32 && info->wave != 64)) {
		snprintf(err, errlen, "hip:%d: cannot read the GPU's architecture from %s", index, runtime.lib);
		return false;
	}
	snprintf(info->full_arch, sizeof info->full_arch, "%s", arch);
	/* bundles are matched on the processor: "gfx90a:sramecc+:xnack-" runs "gfx90a" code */
	snprintf(info->arch, sizeof info->arch, "%.*s", (int)strcspn(arch, ":"), arch);
	return true;
}

static bool hip_query(int index, RtDeviceInfo *info, char *err, size_t errlen)
{
	memset(info, 0, sizeof *info);
	char why[256];
	int n = hip_count(why, sizeof why);
	if (n <= 0 || index < 0 || index >= n) {
		if (n <= 0)
			snprintf(err, errlen, "hip: %s", why);
		else
			snprintf(err, errlen, "hip:%d: there %s only %d AMD GPU%s (hip:0%s)", index,
				 n == 1 ? "is" : "are", n, n == 1 ? "" : "s", n == 1 ? "" : " and up");
		return false;
	}
	size_t mem = 0;
	if (!hip_ok(hip.DeviceGetName(info->name, sizeof info->name, index), "hipDeviceGetName", err, errlen) ||
	    !hip_ok(hip.DeviceTotalMem(&mem, index), "hipDeviceTotalMem", err, errlen) ||
	    !hip_arch(index, info, err, errlen))
		return false;
	info->name[sizeof info->name - 1] = 0;
	info->memory = mem;
	return true;
}

/* ---- an open device ---- */

struct RtDevice {
	int index;
	hipStream_t stream;
	/* collectives' stream (data-parallel), made on first use; as device_cuda.c's */
	hipStream_t side;
	hipEvent_t forked, joined;
	/* bench --profile's marks and their gate, as device_cuda.c's */
	hipEvent_t *marks;
	int nmarks;
	RtGate gate;
	RtDeviceInfo info;
	char error[512]; /* the first failure, "" while there is none */
};

static void fail(RtDevice *d, hipError_t rc, const char *what)
{
	if (rc == hipSuccess || d->error[0])
		return;
	char msg[160];
	hip_message(rc, msg, sizeof msg);
	snprintf(d->error, sizeof d->error, "hip:%d: %s failed: %s", d->index, what, msg);
}

static void hip_close(RtDevice *d)
{
	if (!d)
		return;
	if (d->stream) {
		hip.StreamSynchronize(d->stream);
		hip.StreamDestroy(d->stream);
	}
	if (d->side) {
		hip.StreamSynchronize(d->side);
		hip.StreamDestroy(d->side);
	}
	if (d->forked)
		hip.EventDestroy(d->forked);
	if (d->joined)
		hip.EventDestroy(d->joined);
	for (int i = 0; i < d->nmarks; i++)
		hip.EventDestroy(d->marks[i]);
	free(d->marks);
	free(d);
}

static RtDevice *hip_open(int index, int threads, char *err, size_t errlen)
{
	RtDevice *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->index = index;
	bool ok = hip_query(index, &d->info, err, errlen) &&
		  hip_ok(hip.SetDevice(index), "hipSetDevice", err, errlen) &&
		  hip_ok(hip.StreamCreateWithFlags(&d->stream, hipStreamNonBlocking), "hipStreamCreate", err,
			 errlen);
	if (!ok) {
		hip_close(d);
		return NULL;
	}
	return d;
}

static void hip_describe(RtDevice *d, char *buf, size_t len)
{
	rt_device_line(&rt_device_hip, d->index, &d->info, buf, len);
}

static void *hip_alloc(RtDevice *d, size_t bytes, char *err, size_t errlen)
{
	void *p = NULL;
	hipError_t rc = hip.Malloc(&p, bytes ? bytes : 64);
	if (rc != hipSuccess) {
		char msg[160];
		hip_message(rc, msg, sizeof msg);
		char want[32], have[32];
		rt_format_bytes(bytes, want, sizeof want);
		rt_format_bytes(d->info.memory, have, sizeof have);
		snprintf(err, errlen, "hip:%d: cannot allocate the arena of %s on %s (%s): %s", d->index, want,
			 d->info.name, have, msg);
		return NULL;
	}
	rc = hip.MemsetAsync(p, 0, bytes, d->stream);
	if (rc == hipSuccess)
		rc = hip.StreamSynchronize(d->stream);
	if (!hip_ok(rc, "cannot zero the arena", err, errlen)) {
		hip.Free(p);
		return NULL;
	}
	return p;
}

static void hip_free(RtDevice *d, void *mem)
{
	hip.StreamSynchronize(d->stream);
	hip.Free(mem);
}

static void hip_copy_in(RtDevice *d, void *mem, size_t offset, const void *src, size_t bytes)
{
	fail(d, hip.MemcpyAsync((char *)mem + offset, src, bytes, hipMemcpyHostToDevice, d->stream),
	     "copy to the GPU");
	/* HIP does not promise to have read pageable src when the call returns */
	fail(d, hip.StreamSynchronize(d->stream), "copy to the GPU");
}

static void hip_copy_out(RtDevice *d, void *dst, const void *mem, size_t offset, size_t bytes)
{
	fail(d, hip.MemcpyAsync(dst, (const char *)mem + offset, bytes, hipMemcpyDeviceToHost, d->stream),
	     "copy from the GPU");
	fail(d, hip.StreamSynchronize(d->stream), "a kernel or copy");
}

static void *hip_host_view(RtDevice *d, void *mem) { return NULL; }

static void *hip_load_code(RtDevice *d, const void *code, size_t size, char *err, size_t errlen)
{
	hipModule_t m = NULL;
	hipError_t rc = hip.ModuleLoadData(&m, code);
	if (rc == hipSuccess)
		return m;
	char msg[160];
	hip_message(rc, msg, sizeof msg);
	snprintf(err, errlen, "hip:%d: cannot load the code object on %s (%s): %s", d->index, d->info.name,
		 d->info.full_arch, msg);
	return NULL;
}

static void hip_unload_code(RtDevice *d, void *module)
{
	hip.ModuleUnload(module);
}

/* Bundles give HIP kernels no dynamic shared memory (runtime/bundle.c checks it): AMD's LDS is
 * all static. */
static void *hip_get_kernel(RtDevice *d, void *module, const char *name, int shared, char *err, size_t errlen)
{
	hipFunction_t f = NULL;
	if (hip.ModuleGetFunction(&f, module, name) != hipSuccess || !f) {
		snprintf(err, errlen, "hip:%d: the code object has no kernel '%s'", d->index, name);
		return NULL;
	}
	return f;
}

static void hip_launch(RtDevice *d, void *kernel, void *arena, const BundleKernel *k)
{
	int64_t grid = k->grid;
	int block = k->block;
	if (grid <= 0)
		return;
	if (grid * block > 0xffffffffll) {
		if (!d->error[0])
			snprintf(d->error, sizeof d->error, "hip:%d: a grid of %lld work-groups of %d is more "
				 "than the GPU takes (2^32 work-items)", d->index, (long long)grid, block);
		return;
	}
	/* the arena, then the buffer arguments: device pointers, then the size arguments, each passed
	 * by its address */
	void *ptr[1 + BUNDLE_BUFFER_ARGS] = {arena}, *args[1 + BUNDLE_BUFFER_ARGS + BUNDLE_SIZE_ARGS];
	bundle_buffer_args(arena, k->nargs, k->args, ptr + 1);
	for (int i = 0; i < 1 + BUNDLE_BUFFER_ARGS; i++)
		args[i] = &ptr[i];
	for (int i = 0; i < BUNDLE_SIZE_ARGS; i++)
		args[1 + BUNDLE_BUFFER_ARGS + i] = (void *)&k->sizes[i];
	fail(d, hip.ModuleLaunchKernel(kernel, (unsigned)grid, 1, 1, (unsigned)block, 1, 1, (unsigned)k->shared, d->stream,
				       args, NULL), "a kernel launch");
}

static bool hip_capture_begin(RtDevice *d, char *err, size_t errlen)
{
	if (!hip.StreamBeginCapture || !hip.StreamEndCapture || !hip.GraphInstantiate || !hip.GraphLaunch ||
	    !hip.GraphExecDestroy || !hip.GraphDestroy) {
		snprintf(err, errlen, "hip: %s has no graph capture", runtime.lib);
		return false;
	}
	return hip_ok(hip.StreamBeginCapture(d->stream, hipStreamCaptureModeThreadLocal),
		      "hipStreamBeginCapture", err, errlen);
}

static void *hip_capture_end(RtDevice *d, char *err, size_t errlen)
{
	hipGraph_t g = NULL;
	hipGraphExec_t e = NULL;
	if (!hip_ok(hip.StreamEndCapture(d->stream, &g), "hipStreamEndCapture", err, errlen))
		return NULL;
	bool ok = hip_ok(hip.GraphInstantiate(&e, g, NULL, NULL, 0), "hipGraphInstantiate", err, errlen);
	hip.GraphDestroy(g);
	return ok ? e : NULL;
}

static void hip_replay(RtDevice *d, void *graph)
{
	fail(d, hip.GraphLaunch(graph, d->stream), "a graph launch");
}

static void hip_graph_free(RtDevice *d, void *graph)
{
	hip.StreamSynchronize(d->stream);
	hip.GraphExecDestroy(graph);
}

static void hip_synchronize(RtDevice *d)
{
	fail(d, hip.StreamSynchronize(d->stream), "a kernel");
}

static const char *hip_error(RtDevice *d) { return d->error[0] ? d->error : NULL; }
static void *hip_stream(RtDevice *d) { return d->stream; }

/* A second stream and its two events, or NULL (the collectives then stay on the main stream). */
static void *hip_side_stream(RtDevice *d)
{
	if (d->side)
		return d->side;
	if (!hip.EventCreateWithFlags || !hip.EventRecord || !hip.EventDestroy || !hip.StreamWaitEvent)
		return NULL;
	if (hip.StreamCreateWithFlags(&d->side, hipStreamNonBlocking) != hipSuccess ||
	    hip.EventCreateWithFlags(&d->forked, hipEventDisableTiming) != hipSuccess ||
	    hip.EventCreateWithFlags(&d->joined, hipEventDisableTiming) != hipSuccess)
		return NULL; /* what was made is freed at close */
	return d->side;
}

static void hip_fork(RtDevice *d)
{
	fail(d, hip.EventRecord(d->forked, d->stream), "an event record");
	fail(d, hip.StreamWaitEvent(d->side, d->forked, 0), "a stream wait");
}

static void hip_join(RtDevice *d)
{
	fail(d, hip.EventRecord(d->joined, d->side), "an event record");
	fail(d, hip.StreamWaitEvent(d->stream, d->joined, 0), "a stream wait");
}

/* ---- timer marks: events with timing, as on CUDA ---- */

static bool hip_timer_begin(RtDevice *d, int marks)
{
	if (!hip.EventCreateWithFlags || !hip.EventRecord || !hip.EventSynchronize || !hip.EventElapsedTime ||
	    d->error[0])
		return false;
	if (marks > d->nmarks) {
		hipEvent_t *more = realloc(d->marks, (size_t)marks * sizeof *more);
		if (!more)
			return false;
		d->marks = more;
		for (; d->nmarks < marks; d->nmarks++)
			if (hip.EventCreateWithFlags(&d->marks[d->nmarks], 0) != hipSuccess)
				return false;
	}
	rt_gate_close(&d->gate);
	if (hip.LaunchHostFunc && hip.LaunchHostFunc(d->stream, rt_gate_wait, &d->gate) != hipSuccess)
		rt_gate_open(&d->gate);
	return true;
}

static void hip_timer_mark(RtDevice *d, int i)
{
	fail(d, hip.EventRecord(d->marks[i], d->stream), "an event record");
}

static void hip_timer_release(RtDevice *d)
{
	rt_gate_open(&d->gate);
}

static bool hip_timer_read(RtDevice *d, double *ms, int marks)
{
	rt_gate_open(&d->gate);
	fail(d, hip.EventSynchronize(d->marks[marks - 1]), "a kernel");
	for (int i = 0; i + 1 < marks && !d->error[0]; i++) {
		float t = 0;
		fail(d, hip.EventElapsedTime(&t, d->marks[i], d->marks[i + 1]), "reading an event's time");
		ms[i] = t;
	}
	return !d->error[0];
}

const RtDeviceOps rt_device_hip = {
	.name = "hip",
	.code_kind = CODE_HSACO,
	.units = "CUs",
	.count = hip_count,
	.query = hip_query,
	.open = hip_open,
	.describe = hip_describe,
	.alloc = hip_alloc,
	.free = hip_free,
	.copy_in = hip_copy_in,
	.copy_out = hip_copy_out,
	.host_view = hip_host_view,
	.load_code = hip_load_code,
	.unload_code = hip_unload_code,
	.get_kernel = hip_get_kernel,
	.launch = hip_launch,
	.capture_begin = hip_capture_begin,
	.capture_end = hip_capture_end,
	.replay = hip_replay,
	.graph_free = hip_graph_free,
	.synchronize = hip_synchronize,
	.stream = hip_stream,
	.side_stream = hip_side_stream,
	.fork = hip_fork,
	.join = hip_join,
	.timer_begin = hip_timer_begin,
	.timer_mark = hip_timer_mark,
	.timer_release = hip_timer_release,
	.timer_read = hip_timer_read,
	.error = hip_error,
	.close = hip_close,
};
