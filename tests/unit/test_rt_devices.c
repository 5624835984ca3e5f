/* test_rt_devices.c: device choice and the GPU backends where there is no GPU. A missing CUDA
 * driver and a HIP runtime that finds no AMD GPU are each one clear line; `auto` falls back to
 * the CPU and says why, or names what to compile when the bundle has no CPU code; bad device
 * names are errors; code objects are matched on architecture and target features. */
#include "runtime/device.h"
#include "runtime/rt.h"
#include "tests/unit/test_util.h"

static bool one_line(const char *s)
{
	return s && *s && !strchr(s, '\n');
}

/* A bundle with code objects for targets[0..n) and nothing else worth running. */
static void make_bundle(Bundle *b, const char *const *targets, int n)
{
	memset(b, 0, sizeof *b);
	snprintf(b->model, sizeof b->model, "net%u", (unsigned)tu_below(1000));
	b->batch = 1 + tu_below(256);
	b->arena_bytes = 4096;
	b->ncode = n;
	b->code = calloc((size_t)n, sizeof *b->code);
	if (!b->code)
		abort();
	for (int i = 0; i < n; i++) {
		BundleCode *c = &b->code[i];
		snprintf(c->target, sizeof c->target, "%s", targets[i]);
		snprintf(c->arch, sizeof c->arch, "%.*s", (int)strcspn(targets[i], ":"), targets[i]);
		c->kind = strncmp(c->arch, "gfx", 3) == 0 ? CODE_HSACO : strncmp(c->arch, "sm_", 3) == 0 ? CODE_PTX
											       : CODE_HOST;
		c->wave = c->kind == CODE_HSACO ? 64 : c->kind == CODE_PTX ? 32 : 0;
	}
}

static void free_bundle(Bundle *b) { free(b->code); }

static void random_gfx(char *buf, size_t len)
{
	static const char *const gfx[] = {"gfx803", "gfx900", "gfx906", "gfx90a", "gfx942", "gfx1030", "gfx1100",
					  "gfx1201"};
	snprintf(buf, len, "%s", gfx[tu_below(8)]);
}

static void random_sm(char *buf, size_t len)
{
	static const char *const sm[] = {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"};
	snprintf(buf, len, "%s", sm[tu_below(6)]);
}

/* ---- the backends on this machine ---- */

static void test_cuda_missing(void)
{
	char why[256] = "";
	int n = rt_device_cuda.count(why, sizeof why);
	if (n >= 0) {
		printf("cuda: a driver is installed (%d devices): the no-driver checks do not apply\n", n);
		return;
	}
	CHECK(one_line(why) && strstr(why, "libcuda.so.1"), "why: '%s'", why);
	char gpu[32], err[1024] = "";
	random_sm(gpu, sizeof gpu);
	const char *targets[] = {gpu};
	Bundle b;
	make_bundle(&b, targets, 1);
	Session *s = rt_open(&b, tu_below(2) ? "cuda" : "cuda:0", 0, err, sizeof err);
	CHECK(!s, "opened cuda without a driver");
	CHECK(one_line(err) && strstr(err, "libcuda.so.1") && strncmp(err, "cuda", 4) == 0, "err: '%s'", err);
	rt_close(s);
	/* any index: the driver is what is missing */
	s = rt_open(&b, "cuda:7", 0, err, sizeof err);
	CHECK(!s && one_line(err) && strstr(err, "libcuda.so.1"), "cuda:7: '%s'", err);
	rt_close(s);
	free_bundle(&b);
}

static void test_hip_no_gpu(void)
{
	char why[256] = "";
	int n = rt_device_hip.count(why, sizeof why);
	if (n > 0) {
		printf("hip: %d AMD GPUs here: the no-GPU checks do not apply\n", n);
		return;
	}
	if (n < 0 && strstr(why, "not found")) {
		printf("hip: no HIP runtime installed (%s): install libamdhip64-5 to test it\n", why);
		CHECK(one_line(why) && strstr(why, "libamdhip64.so"), "why: '%s'", why);
		return;
	}
	CHECK(n == 0, "hip: count %d: '%s'", n, why);
	CHECK(one_line(why) && strstr(why, "no AMD GPU found"), "why: '%s'", why);
	char gpu[32], err[1024] = "";
	random_gfx(gpu, sizeof gpu);
	const char *targets[] = {"host", gpu};
	Bundle b;
	make_bundle(&b, targets, 2);
	Session *s = rt_open(&b, "hip", 0, err, sizeof err);
	CHECK(!s && one_line(err) && strstr(err, "no AMD GPU found") && strncmp(err, "hip", 3) == 0,
	      "err: '%s'", err);
	rt_close(s);
	free_bundle(&b);
}

/* ---- auto ---- */

/* Only GPU code and no GPU: the error is the CPU's missing code, with the command that adds it. */
static void test_auto_gpu_only(void)
{
	char gfx[32], sm[32], err[1024] = "";
	random_gfx(gfx, sizeof gfx);
	random_sm(sm, sizeof sm);
	const char *targets[] = {gfx, sm};
	Bundle b;
	make_bundle(&b, targets, 2);
	if (rt_device_cuda.count(err, sizeof err) > 0 || rt_device_hip.count(err, sizeof err) > 0) {
		printf("auto: a GPU is here: the fallback checks do not apply\n");
		free_bundle(&b);
		return;
	}
	Session *s = rt_open(&b, tu_below(2) ? "auto" : NULL, 0, err, sizeof err);
	CHECK(!s, "opened a bundle with no CPU code on the CPU");
	char want[256];
	snprintf(want, sizeof want, "`netc compile %s.net --target %s,%s,host --batch %lld -o %s.bundle`",
		 b.model, gfx, sm, (long long)b.batch, b.model);
	CHECK(one_line(err) && strstr(err, "no code for host") && strstr(err, want), "err: '%s'\nwant: %s", err,
	      want);
	CHECK(strstr(err, gfx) && strstr(err, sm) && strstr(err, "cuda") && strstr(err, "hip"),
	      "err does not say what it has and why no GPU: '%s'", err);
	rt_close(s);
	free_bundle(&b);
}

/* Host and AMD code, no AMD GPU: the CPU, with a note that says why. */
static void test_auto_host_and_gfx(void)
{
	char gfx[32], err[1024] = "";
	random_gfx(gfx, sizeof gfx);
	const char *targets[] = {gfx, "host"};
	Bundle b;
	make_bundle(&b, targets, 2);
	if (rt_device_hip.count(err, sizeof err) > 0) {
		free_bundle(&b);
		return;
	}
	RtChoice c;
	bool ok = rt_choose_device(&b, "auto", &c, err, sizeof err);
	CHECK(ok && c.ops == &rt_device_cpu && c.code == &b.code[1], "auto chose %s: %s",
	      ok ? c.ops->name : "nothing", err);
	CHECK(one_line(c.note) && strstr(c.note, "hip") && !strstr(c.note, "cuda"), "note: '%s'", c.note);
	/* host code alone: nothing to explain */
	const char *host[] = {"host"};
	free_bundle(&b);
	make_bundle(&b, host, 1);
	ok = rt_choose_device(&b, NULL, &c, err, sizeof err);
	CHECK(ok && c.ops == &rt_device_cpu && c.note[0] == 0, "host only: note '%s'", c.note);
	free_bundle(&b);
}

/* ---- names ---- */

static void expect_bad_spec(const Bundle *b, const char *spec, const char *want)
{
	char err[1024] = "";
	Session *s = rt_open(b, spec, 0, err, sizeof err);
	CHECK(!s, "'%s' opened", spec);
	CHECK(one_line(err) && strstr(err, want), "'%s': '%s' lacks '%s'", spec, err, want);
	rt_close(s);
}

static void test_bad_names(void)
{
	const char *targets[] = {"host", "sm_90", "gfx1030"};
	Bundle b;
	make_bundle(&b, targets, 3);
	expect_bad_spec(&b, "tpu", "unknown device 'tpu' (choices: auto, cpu, cuda, cuda:N, hip, hip:N)");
	expect_bad_spec(&b, "cuda:x", "'x' is not a device number");
	expect_bad_spec(&b, "hip:", "'' is not a device number");
	expect_bad_spec(&b, "cuda:-1", "not a device number");
	expect_bad_spec(&b, "cuda:1x", "not a device number");
	expect_bad_spec(&b, "cpu:1", "the CPU is one device");
	expect_bad_spec(&b, "CUDA", "unknown device");
	free_bundle(&b);
	/* the CPU named, and the bundle lacks host code */
	char gfx[32], err[1024] = "";
	random_gfx(gfx, sizeof gfx);
	const char *gpu[] = {gfx};
	make_bundle(&b, gpu, 1);
	char want[128];
	snprintf(want, sizeof want, "--target %s,host --batch %lld", gfx, (long long)b.batch);
	Session *s = rt_open(&b, "cpu", 0, err, sizeof err);
	CHECK(!s && one_line(err) && strstr(err, want) && strstr(err, "(it has: "), "cpu: '%s'", err);
	rt_close(s);
	free_bundle(&b);
}

/* ---- matching code objects ---- */

static RtDeviceInfo device(const char *arch, const char *full)
{
	RtDeviceInfo d = {.wave = 64};
	snprintf(d.arch, sizeof d.arch, "%s", arch);
	snprintf(d.full_arch, sizeof d.full_arch, "%s", full);
	return d;
}

static void test_code_for(void)
{
	const char *targets[] = {"host", "gfx90a:xnack-", "gfx1030", "sm_80", "sm_75"};
	Bundle b;
	make_bundle(&b, targets, 5);
	RtDeviceInfo d = device("gfx90a", "gfx90a:sramecc+:xnack-");
	CHECK(rt_code_for(&b, CODE_HSACO, &d) == &b.code[1], "xnack- on xnack-");
	d = device("gfx90a", "gfx90a:sramecc+:xnack+");
	CHECK(rt_code_for(&b, CODE_HSACO, &d) == NULL, "xnack- on xnack+");
	d = device("gfx90a", "gfx90a");
	CHECK(rt_code_for(&b, CODE_HSACO, &d) == &b.code[1], "xnack- where the device does not say");
	d = device("gfx1030", "gfx1030");
	CHECK(rt_code_for(&b, CODE_HSACO, &d) == &b.code[2], "gfx1030");
	CHECK(rt_code_for(&b, CODE_PTX, &d) == NULL, "gfx1030 as PTX");
	d = device("gfx1031", "gfx1031");
	CHECK(rt_code_for(&b, CODE_HSACO, &d) == NULL, "gfx1031 runs no gfx1030 code");
	/* PTX: the exact architecture, else the newest older one */
	d = device("sm_80", "sm_80");
	CHECK(rt_code_for(&b, CODE_PTX, &d) == &b.code[3], "sm_80");
	unsigned newer = 86 + (unsigned)tu_below(15);
	char arch[16];
	snprintf(arch, sizeof arch, "sm_%u", newer);
	d = device(arch, arch);
	CHECK(rt_code_for(&b, CODE_PTX, &d) == &b.code[3], "%s runs sm_80 PTX", arch);
	d = device("sm_70", "sm_70");
	CHECK(rt_code_for(&b, CODE_PTX, &d) == NULL, "sm_70 runs no newer PTX");
	free_bundle(&b);
}

/* ---- listing ---- */

static void test_devices_print(void)
{
	FILE *f = tmpfile();
	if (!f)
		abort();
	int n = rt_devices_print(f);
	char text[8192];
	rewind(f);
	size_t len = fread(text, 1, sizeof text - 1, f);
	text[len] = 0;
	fclose(f);
	printf("%s", text);
	CHECK(n >= 1, "listed %d devices", n);
	CHECK(strstr(text, "cpu ") && strstr(text, "cores"), "no CPU line:\n%s", text);
	CHECK(strncmp(text, "cuda", 4) == 0 && strstr(text, "\nhip"), "no cuda or hip line:\n%s", text);
	/* the collective engines, found or not, after the devices */
	const char *nccl = strstr(text, "\nnccl (cuda ranks): "), *rccl = strstr(text, "\nrccl (hip ranks): ");
	const char *mpi = strstr(text, "\nmpi (cpu ranks, mpirun): ");
	CHECK(nccl && rccl && mpi && strstr(text, "\ncpu ") < nccl && nccl < rccl && rccl < mpi,
	      "no line for NCCL, RCCL or MPI after the devices:\n%s", text);
}

int main(void)
{
	tu_start("test_rt_devices");
	test_cuda_missing();
	test_hip_no_gpu();
	test_auto_gpu_only();
	test_auto_host_and_gfx();
	test_bad_names();
	test_code_for();
	test_devices_print();
	return tu_finish("test_rt_devices");
}
