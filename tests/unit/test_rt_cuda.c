/* test_rt_cuda.c: the CUDA backend on a real GPU, with hand-written PTX, so that it needs no
 * compiler: a program of two kernels runs through a session (captured as a graph, then
 * replayed) and its results are checked on the host, across changes of the inputs and of the
 * learning rate that the graph reads from fixed places in the arena. Also a missing kernel and an
 * arena too large for the GPU are clear errors. Profiling (rt_profile) times the two kernels with
 * CUDA events, each a positive time, and still computes the same results. Without an NVIDIA GPU
 * it says so and passes. */
#include "runtime/device.h"
#include "runtime/rt.h"
#include "tests/unit/test_util.h"

/* The arena: x f32[N] | y f32[N] | out f32[N] | lr f32. */
enum { X, Y, OUT, LR, NBUF };

/* k0_axpy: out = 2 x + y.  k1_scale: out *= lr.  One element per thread, guarded. */
static const char ptx_format[] =
	".version 7.0\n.target sm_70\n.address_size 64\n"
	".visible .entry k0_axpy(.param .u64 arena)\n{\n"
	"\t.reg .pred %%p;\n\t.reg .b32 %%r<5>;\n\t.reg .f32 %%f<4>;\n\t.reg .b64 %%rd<4>;\n"
	"\tld.param.u64 %%rd1, [arena];\n\tcvta.to.global.u64 %%rd1, %%rd1;\n"
	"\tmov.u32 %%r1, %%ctaid.x;\n\tmov.u32 %%r2, %%ntid.x;\n\tmov.u32 %%r3, %%tid.x;\n"
	"\tmad.lo.s32 %%r4, %%r1, %%r2, %%r3;\n\tsetp.ge.s32 %%p, %%r4, %d;\n\t@%%p bra DONE;\n"
	"\tmul.wide.s32 %%rd2, %%r4, 4;\n\tadd.s64 %%rd3, %%rd1, %%rd2;\n"
	"\tld.global.f32 %%f1, [%%rd3];\n\tld.global.f32 %%f2, [%%rd3+%d];\n"
	"\tfma.rn.f32 %%f3, %%f1, 0f40000000, %%f2;\n\tst.global.f32 [%%rd3+%d], %%f3;\n"
	"DONE:\n\tret;\n}\n"
	".visible .entry k1_scale(.param .u64 arena)\n{\n"
	"\t.reg .pred %%p;\n\t.reg .b32 %%r<5>;\n\t.reg .f32 %%f<4>;\n\t.reg .b64 %%rd<4>;\n"
	"\tld.param.u64 %%rd1, [arena];\n\tcvta.to.global.u64 %%rd1, %%rd1;\n"
	"\tmov.u32 %%r1, %%ctaid.x;\n\tmov.u32 %%r2, %%ntid.x;\n\tmov.u32 %%r3, %%tid.x;\n"
	"\tmad.lo.s32 %%r4, %%r1, %%r2, %%r3;\n\tsetp.ge.s32 %%p, %%r4, %d;\n\t@%%p bra DONE;\n"
	"\tld.global.f32 %%f2, [%%rd1+%d];\n"
	"\tmul.wide.s32 %%rd2, %%r4, 4;\n\tadd.s64 %%rd3, %%rd1, %%rd2;\n"
	"\tld.global.f32 %%f1, [%%rd3+%d];\n\tmul.rn.f32 %%f3, %%f1, %%f2;\n\tst.global.f32 [%%rd3+%d], %%f3;\n"
	"DONE:\n\tret;\n}\n";

static void make_bundle(Bundle *b, int n, int block, const char *arch)
{
	memset(b, 0, sizeof *b);
	snprintf(b->model, sizeof b->model, "cudatest");
	b->batch = 1;
	b->nbuf = NBUF;
	b->buf = calloc(NBUF, sizeof *b->buf);
	b->code = calloc(1, sizeof *b->code);
	BundleCode *c = b->code;
	c->train_kernels = calloc(2, sizeof *c->train_kernels);
	char *ptx = malloc(sizeof ptx_format + 64);
	if (!b->buf || !b->code || !c->train_kernels || !ptx)
		abort();
	for (int i = 0; i < NBUF; i++) {
		b->buf[i].offset = (int64_t)i * n * 4;
		b->buf[i].bytes = i == LR ? 4 : (int64_t)n * 4;
		b->buf[i].dtype = DT_F32;
	}
	b->arena_bytes = (int64_t)NBUF * n * 4;
	b->image = b->label = b->loss = b->output = b->eval_loss = b->eval_output = b->lr = b->rng = -1;
	b->ncode = 1;
	snprintf(c->target, sizeof c->target, "%s", arch);
	snprintf(c->arch, sizeof c->arch, "%s", arch);
	c->kind = CODE_PTX;
	c->wave = 32;
	int len = snprintf(ptx, sizeof ptx_format + 64, ptx_format, n, 4 * n, 8 * n, n, 12 * n, 8 * n, 8 * n);
	c->data = (uint8_t *)ptx;
	c->size = (uint64_t)len; /* no NUL: the backend must add it */
	c->ntrain = 2;
	for (int k = 0; k < 2; k++) {
		snprintf(c->train_kernels[k].name, sizeof c->train_kernels[k].name, k ? "k1_scale" : "k0_axpy");
		snprintf(c->train_kernels[k].symbol, sizeof c->train_kernels[k].symbol, "%s", c->train_kernels[k].name);
		c->train_kernels[k].grid = (n + block - 1) / block;
		c->train_kernels[k].block = block;
	}
}

static void free_bundle(Bundle *b)
{
	free(b->buf);
	free(b->code->data);
	free(b->code->train_kernels);
	free(b->code);
}

/* Three steps with new inputs and learning rates each: out = (2x + y) lr, exactly in f32, where
 * check (a profiled step runs each kernel several times, runtime/launch_timing.h, so only its
 * running is checked). */
static void run_steps(Session *s, int n, bool check)
{
	float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *out = malloc((size_t)n * 4);
	if (!x || !y || !out)
		abort();
	for (int step = 0; step < 3; step++) {
		for (int i = 0; i < n; i++) {
			x[i] = (float)tu_uniform(-2, 2);
			y[i] = (float)tu_uniform(-2, 2);
		}
		float lr = (float)tu_uniform(0.25, 1.25);
		rt_write(s, X, x, (size_t)n * 4);
		rt_write(s, Y, y, (size_t)n * 4);
		rt_write(s, LR, &lr, 4);
		CHECK(rt_run(s, RT_PROG_TRAIN), "run: %s", rt_error(s));
		rt_read(s, OUT, out, (size_t)n * 4);
		CHECK(!rt_error(s), "step %d: %s", step, rt_error(s));
		if (!check)
			continue;
		int bad = 0;
		for (int i = 0; i < n; i++) {
			float want = fmaf(x[i], 2.0f, y[i]) * lr;
			if (out[i] != want && bad++ < 3)
				fprintf(stderr, "step %d: out[%d] = %g, want %g\n", step, i, out[i], want);
		}
		CHECK(bad == 0, "step %d: %d of %d wrong", step, bad, n);
	}
	free(x);
	free(y);
	free(out);
}

static void test_session(const char *device, const char *arch, int n, int block)
{
	Bundle b;
	make_bundle(&b, n, block, arch);
	char err[1024] = "";
	Session *s = rt_open(&b, device, 0, err, sizeof err);
	CHECK(s != NULL, "open %s with %s code: %s", device, arch, err);
	if (s) {
		printf("%s: %s%s%s\n", arch, rt_device_info(s), *rt_device_note(s) ? "; " : "", rt_device_note(s));
		run_steps(s, n, true);
		printf("  %d elements, block %d: %s\n", n, block, rt_graphs(s) ? "graph replay" : "launches");
		double sec[2] = {0, 0};
		rt_profile(s, sec);
		run_steps(s, n, false);
		rt_profile(s, NULL);
		CHECK(rt_profile_timing(s) == RT_TIMED_BY_GRAPHS, "CUDA events time the kernels' graphs");
		CHECK(sec[0] > 0 && sec[1] > 0 && sec[0] < 1 && sec[1] < 1, "kernel times %g s, %g s", sec[0], sec[1]);
		printf("  profiled over 3 steps: k0 %.1f us, k1 %.1f us\n", sec[0] * 1e6, sec[1] * 1e6);
	}
	rt_close(s);
	free_bundle(&b);
}

static void test_errors(const char *arch)
{
	Bundle b;
	char err[1024] = "";
	make_bundle(&b, 1000, 128, arch);
	snprintf(b.code->train_kernels[1].symbol, sizeof b.code->train_kernels[1].symbol, "k9_missing");
	Session *s = rt_open(&b, "cuda", 0, err, sizeof err);
	CHECK(!s && strstr(err, "no kernel 'k9_missing'") && !strchr(err, '\n'), "missing kernel: '%s'", err);
	rt_close(s);
	free_bundle(&b);

	make_bundle(&b, 1000, 128, arch);
	b.arena_bytes = (int64_t)1 << 50; /* a petabyte */
	s = rt_open(&b, "cuda:0", 0, err, sizeof err);
	CHECK(!s && strstr(err, "cannot allocate") && !strchr(err, '\n'), "huge arena: '%s'", err);
	printf("%s\n", err);
	rt_close(s);
	free_bundle(&b);

	make_bundle(&b, 1000, 128, arch);
	b.code->size = b.code->size / 2; /* PTX cut in the middle */
	s = rt_open(&b, "cuda:0", 0, err, sizeof err);
	CHECK(!s && strstr(err, "cannot load the PTX") && !strchr(err, '\n'), "broken PTX: '%s'", err);
	printf("%s\n", err);
	rt_close(s);
	free_bundle(&b);
}

int main(void)
{
	tu_start("test_rt_cuda");
	char why[256];
	if (rt_device_cuda.count(why, sizeof why) <= 0) {
		printf("skipped: no NVIDIA GPU (%s)\n", why);
		return 0;
	}
	RtDeviceInfo info;
	char err[512];
	CHECK(rt_device_cuda.query(0, &info, err, sizeof err), "query: %s", err);
	int n = 1000 + (int)tu_below(100000), block = 32 << tu_below(5);
	test_session("cuda", info.arch, n, block);
	test_session("auto", "sm_70", n, 256); /* older PTX, compiled for this GPU by the driver */
	setenv("NETC_GRAPHS", "0", 1);
	test_session("cuda:0", info.arch, n, block);
	unsetenv("NETC_GRAPHS");
	test_errors(info.arch);
	return tu_finish("test_rt_cuda");
}
