/* device_cpu.c: the CPU device. Memory is host memory, a code object is a shared object loaded
 * with dlopen, and a launch splits the grid over the thread pool. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/bundle.h"
#include "runtime/device.h"
#include "runtime/host_kernel.h"
#include "runtime/threadpool.h"

struct RtDevice {
	ThreadPool *pool;
};

static int cpu_count(char *why, size_t len) { return 1; }

/* The "model name" line of /proc/cpuinfo, else the machine's name from uname. */
static void cpu_model(char *buf, size_t len)
{
	snprintf(buf, len, "CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) == 0 && colon) {
			colon += 1 + strspn(colon + 1, " \t");
			snprintf(buf, len, "%.*s", (int)strcspn(colon, "\n"), colon);
			break;
		}
	}
	if (f)
		fclose(f);
}

static bool cpu_query(int index, RtDeviceInfo *info, char *err, size_t errlen)
{
	memset(info, 0, sizeof *info);
	cpu_model(info->name, sizeof info->name);
	snprintf(info->arch, sizeof info->arch, "host");
	snprintf(info->full_arch, sizeof info->full_arch, "host");
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	info->memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	info->units = rt_pool_default_threads();
	return true;
}

static RtDevice *cpu_open(int index, int threads, char *err, size_t errlen)
{
	RtDevice *d = calloc(1, sizeof *d);
	if (d)
		d->pool = rt_pool_new(threads);
	if (!d || !d->pool) {
		snprintf(err, errlen, "cpu: cannot start the worker threads");
		free(d);
		return NULL;
	}
	return d;
}

static void cpu_describe(RtDevice *d, char *buf, size_t len)
{
	int n = rt_pool_threads(d->pool);
	snprintf(buf, len, "cpu (%d thread%s)", n, n == 1 ? "" : "s");
}

static void *cpu_alloc(RtDevice *d, size_t bytes, char *err, size_t errlen)
{
	size_t size = (bytes + 63) / 64 * 64;
	void *p = aligned_alloc(64, size ? size : 64);
	if (!p) {
		char want[32];
		rt_format_bytes(bytes, want, sizeof want);
		snprintf(err, errlen, "cpu: cannot allocate the arena of %s", want);
		return NULL;
	}
	memset(p, 0, size ? size : 64);
	return p;
}

static void cpu_free(RtDevice *d, void *mem) { free(mem); }

static void cpu_copy_in(RtDevice *d, void *mem, size_t offset, const void *src, size_t bytes)
{
	memcpy((char *)mem + offset, src, bytes);
}

static void cpu_copy_out(RtDevice *d, void *dst, const void *mem, size_t offset, size_t bytes)
{
	memcpy(dst, (const char *)mem + offset, bytes);
}

static void *cpu_host_view(RtDevice *d, void *mem) { return mem; }

static bool write_all(int fd, const void *data, size_t size)
{
	const char *p = data;
	while (size) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		size -= (size_t)n;
	}
	return true;
}

/* dlopen needs a file: the shared object goes to a private temporary file that is unlinked as
 * soon as it is mapped, so nothing is left behind even if the run is killed. */
static void *cpu_load_code(RtDevice *d, const void *code, size_t size, char *err, size_t errlen)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/netc-code-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0) {
		snprintf(err, errlen, "cpu: cannot create a temporary file in %s: %s",
			 dir && *dir ? dir : "/tmp", strerror(errno));
		return NULL;
	}
	bool ok = write_all(fd, code, size);
	ok = (close(fd) == 0) && ok;
	if (!ok) {
		snprintf(err, errlen, "cpu: cannot write the code object to %s", path);
		unlink(path);
		return NULL;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	unlink(path);
	if (!h) {
		const char *why = dlerror();
		snprintf(err, errlen, "cpu: cannot load the code object: %s", why ? why : "dlopen failed");
	}
	return h;
}

static void cpu_unload_code(RtDevice *d, void *module)
{
	if (module)
		dlclose(module);
}

static void *cpu_get_kernel(RtDevice *d, void *module, const char *name, int shared, char *err, size_t errlen)
{
	void *k = dlsym(module, name);
	if (!k)
		snprintf(err, errlen, "cpu: the code object has no kernel '%s'", name);
	return k;
}

/* One launch as the thread pool runs it: its ranges of work-groups go to the kernel. */
typedef struct {
	void *kernel, *arena;
	const BundleKernel *k;
} HostLaunch;

static void host_range(void *launch, int64_t wg_begin, int64_t wg_end)
{
	const HostLaunch *l = launch;
	rt_host_kernel_call(l->kernel, l->arena, wg_begin, wg_end, l->k->nargs, l->k->args, l->k->sizes);
}

static void cpu_launch(RtDevice *d, void *kernel, void *arena, const BundleKernel *k)
{
	HostLaunch l = {kernel, arena, k};
	rt_pool_run(d->pool, host_range, &l, k->grid);
}

/* Launches return when their work is done, and nothing fails after them. */
static void cpu_synchronize(RtDevice *d) {}
static const char *cpu_error(RtDevice *d) { return NULL; }

static void cpu_close(RtDevice *d)
{
	if (!d)
		return;
	rt_pool_free(d->pool);
	free(d);
}

const RtDeviceOps rt_device_cpu = {
	.name = "cpu",
	.code_kind = CODE_HOST,
	.units = "cores",
	.count = cpu_count,
	.query = cpu_query,
	.open = cpu_open,
	.describe = cpu_describe,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.copy_in = cpu_copy_in,
	.copy_out = cpu_copy_out,
	.host_view = cpu_host_view,
	.load_code = cpu_load_code,
	.unload_code = cpu_unload_code,
	.get_kernel = cpu_get_kernel,
	.launch = cpu_launch,
	.synchronize = cpu_synchronize,
	.error = cpu_error,
	.close = cpu_close,
};
