/* device_cuda.c: NVIDIA GPUs through the CUDA driver API, loaded from libcuda.so.1 with dlopen.
 *
 * A code object is PTX text that the driver compiles for the GPU when it loads it. The arena is
 * one cuMemAlloc; copies and launches go on one stream of the device's primary context, and a
 * whole program is captured from that stream as a CUDA graph. The few types and entry points
 * netc needs are declared here, so the build needs no CUDA headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "runtime/bundle.h"
#include "runtime/device.h"
#include "runtime/dynlib.h"
#include "runtime/launch_timing.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUevent_st *CUevent;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
	CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_STREAM_NON_BLOCKING = 1,
	CU_EVENT_DISABLE_TIMING = 2,
	CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
	CU_JIT_ERROR_LOG_BUFFER = 5,
	CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
	CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

/* field, exported symbol, parameters: every entry point returns a CUresult */
#define CU_REQUIRED(X)                                                                          \
	X(Init, "cuInit", (unsigned flags))                                                     \
	X(DeviceGetCount, "cuDeviceGetCount", (int *count))                                     \
	X(DeviceGet, "cuDeviceGet", (CUdevice *dev, int ordinal))                               \
	X(DeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice dev))                \
	X(DeviceGetAttribute, "cuDeviceGetAttribute", (int *v, int attr, CUdevice dev))         \
	X(DeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *bytes, CUdevice dev))                 \
	X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *ctx, CUdevice dev))         \
	X(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))                    \
	X(CtxSetCurrent, "cuCtxSetCurrent", (CUcontext ctx))                                    \
	X(ModuleLoadDataEx, "cuModuleLoadDataEx",                                               \
	  (CUmodule *m, const void *image, unsigned n, int *options, void **values))            \
	X(ModuleUnload, "cuModuleUnload", (CUmodule m))                                         \
	X(ModuleGetFunction, "cuModuleGetFunction", (CUfunction *f, CUmodule m, const char *name)) \
	X(MemAlloc, "cuMemAlloc_v2", (CUdeviceptr *p, size_t bytes))                            \
	X(MemFree, "cuMemFree_v2", (CUdeviceptr p))                                             \
	X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                              \
	  (CUdeviceptr dst, const void *src, size_t bytes, CUstream s))                         \
	X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                              \
	  (void *dst, CUdeviceptr src, size_t bytes, CUstream s))                               \
	X(MemsetD8Async, "cuMemsetD8Async", (CUdeviceptr p, unsigned char v, size_t n, CUstream s)) \
	X(StreamCreate, "cuStreamCreate", (CUstream *s, unsigned flags))                        \
	X(StreamDestroy, "cuStreamDestroy_v2", (CUstream s))                                    \
	X(StreamSynchronize, "cuStreamSynchronize", (CUstream s))                               \
	X(FuncSetAttribute, "cuFuncSetAttribute", (CUfunction f, int attr, int value))          \
	X(LaunchKernel, "cuLaunchKernel",                                                       \
	  (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,       \
	   unsigned bz, unsigned shared, CUstream s, void **params, void **extra))              \
	X(GetErrorName, "cuGetErrorName", (CUresult rc, const char **s))                        \
	X(GetErrorString, "cuGetErrorString", (CUresult rc, const char **s))

/* graphs: CUDA 11.4 and newer */
#define CU_OPTIONAL(X)                                                                          \
	X(StreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream s, int mode))                \
	X(StreamEndCapture, "cuStreamEndCapture", (CUstream s, CUgraph *g))                     \
	X(GraphInstantiate, "cuGraphInstantiateWithFlags",                                      \
	  (CUgraphExec *e, CUgraph g, unsigned long long flags))                                \
	X(GraphLaunch, "cuGraphLaunch", (CUgraphExec e, CUstream s))                            \
	X(GraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec e))                              \
	X(GraphDestroy, "cuGraphDestroy", (CUgraph g))                                          \
	X(EventCreate, "cuEventCreate", (CUevent *e, unsigned flags))                           \
	X(EventRecord, "cuEventRecord", (CUevent e, CUstream s))                                \
	X(EventDestroy, "cuEventDestroy_v2", (CUevent e))                                       \
	X(StreamWaitEvent, "cuStreamWaitEvent", (CUstream s, CUevent e, unsigned flags))     \
	X(EventSynchronize, "cuEventSynchronize", (CUevent e))                                  \
	X(EventElapsedTime, "cuEventElapsedTime", (float *ms, CUevent start, CUevent end))      \
	X(LaunchHostFunc, "cuLaunchHostFunc", (CUstream s, void (*fn)(void *), void *data))     \
	X(TensorMapEncodeTiled, "cuTensorMapEncodeTiled",                                       \
	  (void *map, int dtype, unsigned rank, void *address, const unsigned long long *dim,   \
	   const unsigned long long *strides, const unsigned *box, const unsigned *element_strides, \
	   int interleave, int swizzle, int l2_promotion, int oob_fill))

#define CU_FIELD(f, sym, params) CUresult(*f) params;
#define CU_REQ(f, sym, params) {sym, &cu.f, false},
#define CU_OPT(f, sym, params) {sym, &cu.f, true},

static struct {
	CU_REQUIRED(CU_FIELD)
	CU_OPTIONAL(CU_FIELD)
} cu;

#define LIBCUDA "libcuda.so.1"

/* The driver is loaded and initialized once per process and stays loaded. */
static struct {
	bool tried;
	int count;     /* devices, or -1 */
	char why[256]; /* when count <= 0 */
} driver;

static void cu_message(CUresult rc, char *buf, size_t len)
{
	const char *name = NULL, *str = NULL;
	if (cu.GetErrorName(rc, &name) != CUDA_SUCCESS || !name)
		name = "unknown error";
	if (cu.GetErrorString(rc, &str) != CUDA_SUCCESS || !str)
		str = "";
	snprintf(buf, len, "%s%s%s%s", name, *str ? " (" : "", str, *str ? ")" : "");
}

static void driver_load(void)
{
	driver.tried = true;
	driver.count = -1;
	static const char *const names[] = {LIBCUDA};
	const char *loaded;
	void *lib = rt_dlopen_first(names, 1, &loaded, driver.why, sizeof driver.why);
	if (!lib)
		return;
	const RtSymbol syms[] = {CU_REQUIRED(CU_REQ) CU_OPTIONAL(CU_OPT)};
	if (!rt_dlsyms(lib, LIBCUDA, syms, (int)(sizeof syms / sizeof syms[0]), driver.why, sizeof driver.why))
		return;
	CUresult rc = cu.Init(0);
	int n = 0;
	if (rc == CUDA_SUCCESS)
		rc = cu.DeviceGetCount(&n);
	if (rc == CUDA_ERROR_NO_DEVICE || (rc == CUDA_SUCCESS && n == 0)) {
		driver.count = 0;
		snprintf(driver.why, sizeof driver.why, "no NVIDIA GPU found");
		return;
	}
	if (rc != CUDA_SUCCESS) {
		char msg[160];
		cu_message(rc, msg, sizeof msg);
		snprintf(driver.why, sizeof driver.why, "the NVIDIA driver does not start: cuInit: %s", msg);
		return;
	}
	driver.count = n;
}

static int cuda_count(char *why, size_t len)
{
	if (!driver.tried)
		driver_load();
	if (driver.count <= 0)
		snprintf(why, len, "%s", driver.why);
	return driver.count;
}

/* False with "cuda: what: CUDA_ERROR_..." in err when rc is an error. */
static bool cu_ok(CUresult rc, const char *what, char *err, size_t errlen)
{
	if (rc == CUDA_SUCCESS)
		return true;
	char msg[160];
	cu_message(rc, msg, sizeof msg);
	snprintf(err, errlen, "cuda: %s: %s", what, msg);
	return false;
}

static bool cuda_query(int index, RtDeviceInfo *info, char *err, size_t errlen)
{
	memset(info, 0, sizeof *info);
	char why[256];
	int n = cuda_count(why, sizeof why);
	if (n <= 0 || index < 0 || index >= n) {
		if (n <= 0)
			snprintf(err, errlen, "cuda: %s", why);
		else
			snprintf(err, errlen, "cuda:%d: there %s only %d CUDA device%s (cuda:0%s)", index,
				 n == 1 ? "is" : "are", n, n == 1 ? "" : "s", n == 1 ? "" : " and up");
		return false;
	}
	CUdevice dev;
	int major = 0, minor = 0;
	size_t mem = 0;
	if (!cu_ok(cu.DeviceGet(&dev, index), "cuDeviceGet", err, errlen) ||
	    !cu_ok(cu.DeviceGetName(info->name, sizeof info->name, dev), "cuDeviceGetName", err, errlen) ||
	    !cu_ok(cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
		   "cuDeviceGetAttribute", err, errlen) ||
	    !cu_ok(cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
		   "cuDeviceGetAttribute", err, errlen) ||
	    !cu_ok(cu.DeviceGetAttribute(&info->wave, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev),
		   "cuDeviceGetAttribute", err, errlen) ||
	    !cu_ok(cu.DeviceGetAttribute(&info->units, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
		   "cuDeviceGetAttribute", err, errlen) ||
	    !cu_ok(cu.DeviceTotalMem(&mem, dev), "cuDeviceTotalMem", err, errlen))
		return false;
	info->name[sizeof info->name - 1] = 0;
	info->memory = mem;
	snprintf(info->arch, sizeof info->arch, "sm_%d%d", major, minor);
	snprintf(info->full_arch, sizeof info->full_arch, "sm_%d%d", major, minor);
	return true;
}

/* ---- an open device ---- */

struct RtDevice {
	int index;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	/* collectives' stream (data-parallel), made on first use: it waits for the main stream at
	 * each fork and the main stream for it at the join (cuda_side_stream) */
	CUstream side;
	CUevent forked, joined;
	/* bench --profile's marks, timing events made as needed, and the gate before them */
	CUevent *marks;
	int nmarks;
	RtGate gate;
	RtDeviceInfo info;
	char error[512]; /* the first failure, "" while there is none */
};

/* Keeps the first failure: later ones are usually its consequences. */
static void fail(RtDevice *d, CUresult rc, const char *what)
{
	if (rc == CUDA_SUCCESS || d->error[0])
		return;
	char msg[160];
	cu_message(rc, msg, sizeof msg);
	snprintf(d->error, sizeof d->error, "cuda:%d: %s failed: %s", d->index, what, msg);
}

static void cuda_close(RtDevice *d)
{
	if (!d)
		return;
	if (d->stream) {
		cu.StreamSynchronize(d->stream);
		cu.StreamDestroy(d->stream);
	}
	if (d->side) {
		cu.StreamSynchronize(d->side);
		cu.StreamDestroy(d->side);
	}
	if (d->forked)
		cu.EventDestroy(d->forked);
	if (d->joined)
		cu.EventDestroy(d->joined);
	for (int i = 0; i < d->nmarks; i++)
		cu.EventDestroy(d->marks[i]);
	free(d->marks);
	if (d->ctx)
		cu.PrimaryCtxRelease(d->dev);
	free(d);
}

static RtDevice *cuda_open(int index, int threads, char *err, size_t errlen)
{
	RtDevice *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->index = index;
	bool ok = cuda_query(index, &d->info, err, errlen) &&
		  cu_ok(cu.DeviceGet(&d->dev, index), "cuDeviceGet", err, errlen) &&
		  cu_ok(cu.PrimaryCtxRetain(&d->ctx, d->dev), "cannot create a context", err, errlen) &&
		  cu_ok(cu.CtxSetCurrent(d->ctx), "cuCtxSetCurrent", err, errlen) &&
		  cu_ok(cu.StreamCreate(&d->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", err, errlen);
	if (!ok) {
		cuda_close(d);
		return NULL;
	}
	return d;
}

static void cuda_describe(RtDevice *d, char *buf, size_t len)
{
	rt_device_line(&rt_device_cuda, d->index, &d->info, buf, len);
}

static void *cuda_alloc(RtDevice *d, size_t bytes, char *err, size_t errlen)
{
	CUdeviceptr p = 0;
	CUresult rc = cu.MemAlloc(&p, bytes ? bytes : 64);
	if (rc != CUDA_SUCCESS) {
		char msg[160];
		cu_message(rc, msg, sizeof msg);
		char want[32], have[32];
		rt_format_bytes(bytes, want, sizeof want);
		rt_format_bytes(d->info.memory, have, sizeof have);
		snprintf(err, errlen, "cuda:%d: cannot allocate the arena of %s on %s (%s): %s", d->index, want,
			 d->info.name, have, msg);
		return NULL;
	}
	rc = cu.MemsetD8Async(p, 0, bytes, d->stream);
	if (rc == CUDA_SUCCESS)
		rc = cu.StreamSynchronize(d->stream);
	if (!cu_ok(rc, "cannot zero the arena", err, errlen)) {
		cu.MemFree(p);
		return NULL;
	}
	return (void *)(uintptr_t)p;
}

static void cuda_free(RtDevice *d, void *mem)
{
	cu.StreamSynchronize(d->stream);
	cu.MemFree((CUdeviceptr)(uintptr_t)mem);
}

static void cuda_copy_in(RtDevice *d, void *mem, size_t offset, const void *src, size_t bytes)
{
	/* from pageable memory the driver stages src before it returns */
	fail(d, cu.MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)mem + offset, src, bytes, d->stream),
	     "copy to the GPU");
}

static void cuda_copy_out(RtDevice *d, void *dst, const void *mem, size_t offset, size_t bytes)
{
	fail(d, cu.MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)mem + offset, bytes, d->stream),
	     "copy from the GPU");
	fail(d, cu.StreamSynchronize(d->stream), "a kernel or copy");
}

static void *cuda_host_view(RtDevice *d, void *mem) { return NULL; }

/* The first line of the JIT's log, which names the problem. */
static void first_line(char *log)
{
	log[strcspn(log, "\n")] = 0;
}

static void *cuda_load_code(RtDevice *d, const void *code, size_t size, char *err, size_t errlen)
{
	char *ptx = malloc(size + 1), log[1024] = "";
	if (!ptx) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(ptx, code, size);
	ptx[size] = 0; /* the driver reads PTX as a C string */
	int opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *val[2] = {log, (void *)(uintptr_t)sizeof log};
	CUmodule m = NULL;
	CUresult rc = cu.ModuleLoadDataEx(&m, ptx, 2, opt, val);
	free(ptx);
	if (rc == CUDA_SUCCESS)
		return m;
	char msg[160];
	cu_message(rc, msg, sizeof msg);
	first_line(log);
	snprintf(err, errlen, "cuda:%d: the driver cannot load the PTX for %s: %s%s%s%s", d->index,
		 d->info.arch, msg, log[0] ? ": " : "", log,
		 rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ? " (the NVIDIA driver is older than the PTX: "
							    "update the driver)" : "");
	return NULL;
}

static void cuda_unload_code(RtDevice *d, void *module)
{
	cu.ModuleUnload(module);
}

/* A kernel opts in to the dynamic shared memory its launches take past the default 48 KiB. */
static void *cuda_get_kernel(RtDevice *d, void *module, const char *name, int shared, char *err, size_t errlen)
{
	CUfunction f = NULL;
	if (cu.ModuleGetFunction(&f, module, name) != CUDA_SUCCESS || !f) {
		snprintf(err, errlen, "cuda:%d: the PTX has no kernel '%s'", d->index, name);
		return NULL;
	}
	CUresult rc = shared > 0 ? cu.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
				 : CUDA_SUCCESS;
	if (rc != CUDA_SUCCESS) {
		char why[160];
		cu_message(rc, why, sizeof why);
		snprintf(err, errlen, "cuda:%d: kernel '%s' takes %d bytes of shared memory, which this GPU "
			 "does not give a block (%s): compile for its architecture", d->index, name, shared, why);
		return NULL;
	}
	return f;
}

/* CUtensorMapDataType of a DType; -1: none */
static int tmap_type(int32_t dtype)
{
	enum { TMAP_INT32 = 3, TMAP_FLOAT16 = 6, TMAP_FLOAT32 = 7, TMAP_FLOAT64 = 8, TMAP_BFLOAT16 = 9 };
	switch (dtype) {
	case DT_F32: return TMAP_FLOAT32;
	case DT_F16: return TMAP_FLOAT16;
	case DT_BF16: return TMAP_BFLOAT16;
	case DT_F64: return TMAP_FLOAT64;
	case DT_I32: return TMAP_INT32;
	default: return -1;
	}
}

static bool cuda_tensor_map(RtDevice *d, const BundleTensorMap *m, void *arena, void *out, char *err, size_t errlen)
{
	/* CUtensorMapSwizzle by span (none, 32, 64, 128 bytes); no interleave; L2 promotion of 128
	 * bytes (as CUTLASS's loads); zeros outside the tensor */
	enum { INTERLEAVE_NONE = 0, L2_128B = 2, OOB_ZEROS = 0 };
	if (!cu.TensorMapEncodeTiled) {
		snprintf(err, errlen, "cuda:%d: the driver has no tensor maps (cuTensorMapEncodeTiled: CUDA 12 and newer)",
			 d->index);
		return false;
	}
	int swizzle = m->swizzle == 128 ? 3 : m->swizzle == 64 ? 2 : m->swizzle == 32 ? 1 : 0;
	unsigned long long dim[BUNDLE_TMAP_DIMS], stride[BUNDLE_TMAP_DIMS];
	unsigned box[BUNDLE_TMAP_DIMS], ones[BUNDLE_TMAP_DIMS];
	for (int i = 0; i < m->rank; i++) {
		dim[i] = (unsigned long long)m->dim[i];
		stride[i] = i + 1 < m->rank ? (unsigned long long)m->stride[i + 1] : 0;
		box[i] = (unsigned)m->box[i];
		ones[i] = 1;
	}
	void *address = (void *)((uintptr_t)arena + (uintptr_t)m->tensor);
	CUresult rc = cu.TensorMapEncodeTiled(out, tmap_type(m->dtype), (unsigned)m->rank, address, dim, stride, box, ones,
					      INTERLEAVE_NONE, swizzle, L2_128B, OOB_ZEROS);
	if (rc != CUDA_SUCCESS) {
		char msg[160];
		cu_message(rc, msg, sizeof msg);
		snprintf(err, errlen, "cuda:%d: the driver cannot encode a tensor map of rank %d at arena offset %lld: %s",
			 d->index, m->rank, (long long)m->tensor, msg);
		return false;
	}
	return true;
}

static void cuda_launch(RtDevice *d, void *kernel, void *arena, const BundleKernel *k)
{
	int64_t grid = k->grid;
	if (grid <= 0)
		return;
	if (grid > 0x7fffffff) {
		if (!d->error[0])
			snprintf(d->error, sizeof d->error, "cuda:%d: a grid of %lld blocks is more than the "
				 "GPU takes (2^31 - 1)", d->index, (long long)grid);
		return;
	}
	/* the arena, then the buffer arguments: device pointers, each passed by its address (NVIDIA
	 * kernels take the arena alone, codegen/cg.h, and the driver reads no more than a kernel
	 * declares) */
	void *ptr[1 + BUNDLE_BUFFER_ARGS] = {arena}, *args[1 + BUNDLE_BUFFER_ARGS];
	bundle_buffer_args(arena, k->nargs, k->args, ptr + 1);
	for (int i = 0; i < 1 + BUNDLE_BUFFER_ARGS; i++)
		args[i] = &ptr[i];
	fail(d, cu.LaunchKernel(kernel, (unsigned)grid, 1, 1, (unsigned)k->block, 1, 1, (unsigned)k->shared, d->stream,
				args, NULL),
	     "a kernel launch");
}

static bool cuda_capture_begin(RtDevice *d, char *err, size_t errlen)
{
	if (!cu.StreamBeginCapture || !cu.StreamEndCapture || !cu.GraphInstantiate || !cu.GraphLaunch ||
	    !cu.GraphExecDestroy || !cu.GraphDestroy) {
		snprintf(err, errlen, "cuda: the driver has no graph capture (it needs CUDA 11.4 or newer)");
		return false;
	}
	return cu_ok(cu.StreamBeginCapture(d->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
		     "cuStreamBeginCapture", err, errlen);
}

static void *cuda_capture_end(RtDevice *d, char *err, size_t errlen)
{
	CUgraph g = NULL;
	CUgraphExec e = NULL;
	if (!cu_ok(cu.StreamEndCapture(d->stream, &g), "cuStreamEndCapture", err, errlen))
		return NULL;
	bool ok = cu_ok(cu.GraphInstantiate(&e, g, 0), "cuGraphInstantiate", err, errlen);
	cu.GraphDestroy(g); /* the executable graph keeps what it needs */
	return ok ? e : NULL;
}

static void cuda_replay(RtDevice *d, void *graph)
{
	fail(d, cu.GraphLaunch(graph, d->stream), "a graph launch");
}

static void cuda_graph_free(RtDevice *d, void *graph)
{
	cu.StreamSynchronize(d->stream);
	cu.GraphExecDestroy(graph);
}

static void cuda_synchronize(RtDevice *d)
{
	fail(d, cu.StreamSynchronize(d->stream), "a kernel");
}

static const char *cuda_error(RtDevice *d) { return d->error[0] ? d->error : NULL; }
static void *cuda_stream(RtDevice *d) { return d->stream; }

/* A second stream and its two events, or NULL (without events the collectives stay on the main
 * stream, in order). */
static void *cuda_side_stream(RtDevice *d)
{
	if (d->side)
		return d->side;
	if (!cu.EventCreate || !cu.EventRecord || !cu.EventDestroy || !cu.StreamWaitEvent)
		return NULL;
	if (cu.StreamCreate(&d->side, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
	    cu.EventCreate(&d->forked, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
	    cu.EventCreate(&d->joined, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
		return NULL; /* what was made is freed at close */
	return d->side;
}

/* What the main stream has queued so far comes before what the side stream queues next. */
static void cuda_fork(RtDevice *d)
{
	fail(d, cu.EventRecord(d->forked, d->stream), "an event record");
	fail(d, cu.StreamWaitEvent(d->side, d->forked, 0), "a stream wait");
}

/* What the side stream has queued comes before what the main stream queues next. */
static void cuda_join(RtDevice *d)
{
	fail(d, cu.EventRecord(d->joined, d->side), "an event record");
	fail(d, cu.StreamWaitEvent(d->stream, d->joined, 0), "a stream wait");
}

/* ---- timer marks: events with timing, one per boundary between kernels ---- */

static bool cuda_timer_begin(RtDevice *d, int marks)
{
	if (!cu.EventCreate || !cu.EventRecord || !cu.EventSynchronize || !cu.EventElapsedTime || d->error[0])
		return false;
	if (marks > d->nmarks) {
		CUevent *more = realloc(d->marks, (size_t)marks * sizeof *more);
		if (!more)
			return false;
		d->marks = more;
		for (; d->nmarks < marks; d->nmarks++)
			if (cu.EventCreate(&d->marks[d->nmarks], 0) != CUDA_SUCCESS)
				return false;
	}
	rt_gate_close(&d->gate);
	if (cu.LaunchHostFunc && cu.LaunchHostFunc(d->stream, rt_gate_wait, &d->gate) != CUDA_SUCCESS)
		rt_gate_open(&d->gate); /* no gate: the marks still time the kernels */
	return true;
}

static void cuda_timer_mark(RtDevice *d, int i)
{
	fail(d, cu.EventRecord(d->marks[i], d->stream), "an event record");
}

static void cuda_timer_release(RtDevice *d)
{
	rt_gate_open(&d->gate);
}

static bool cuda_timer_read(RtDevice *d, double *ms, int marks)
{
	rt_gate_open(&d->gate);
	fail(d, cu.EventSynchronize(d->marks[marks - 1]), "a kernel");
	for (int i = 0; i + 1 < marks && !d->error[0]; i++) {
		float t = 0;
		fail(d, cu.EventElapsedTime(&t, d->marks[i], d->marks[i + 1]), "reading an event's time");
		ms[i] = t;
	}
	return !d->error[0];
}

const RtDeviceOps rt_device_cuda = {
	.name = "cuda",
	.code_kind = CODE_PTX,
	.units = "SMs",
	.count = cuda_count,
	.query = cuda_query,
	.open = cuda_open,
	.describe = cuda_describe,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.copy_in = cuda_copy_in,
	.copy_out = cuda_copy_out,
	.host_view = cuda_host_view,
	.load_code = cuda_load_code,
	.unload_code = cuda_unload_code,
	.get_kernel = cuda_get_kernel,
	.launch = cuda_launch,
	.capture_begin = cuda_capture_begin,
	.capture_end = cuda_capture_end,
	.replay = cuda_replay,
	.graph_free = cuda_graph_free,
	.synchronize = cuda_synchronize,
	.stream = cuda_stream,
	.side_stream = cuda_side_stream,
	.fork = cuda_fork,
	.join = cuda_join,
	.timer_begin = cuda_timer_begin,
	.timer_mark = cuda_timer_mark,
	.timer_release = cuda_timer_release,
	.timer_read = cuda_timer_read,
	.tensor_map = cuda_tensor_map,
	.error = cuda_error,
	.close = cuda_close,
};
