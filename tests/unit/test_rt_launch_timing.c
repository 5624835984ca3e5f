/* test_rt_launch_timing.c: kernels timed one by one (runtime/launch_timing.h) on a stand-in
 * device that logs its calls. With timer marks (CUDA and HIP events) the launches go back to
 * back, a mark before the first and after each, with no wait between them, the gate opens after
 * RT_GATED_LAUNCHES launches or at the read, and each kernel gets the time between its marks
 * (random times, the stand-in's clock); with graphs too, each kernel captured
 * RT_REPLAYED_LAUNCHES times into a graph of its own, the graphs replayed between the marks and
 * freed, a kernel's time the graph's over its launches (a failed capture falls back to plain
 * launches); without marks each launch is waited for and timed on the host's clock. Also the
 * gate itself: a host function waiting on it returns once it opens. */
#include <pthread.h>

#include "runtime/launch_timing.h"
#include "tests/unit/test_util.h"

#define MAXN 300

/* A captured graph: the kernels launched into it. */
typedef struct {
	int kernel[RT_REPLAYED_LAUNCHES];
	int n;
} FakeGraph;

static struct {
	char log[65536];
	double clock_ms;        /* the stand-in device's clock */
	double kernel_ms[MAXN]; /* what each launch takes on it */
	double mark_ms[MAXN + 1];
	int launched, marks_made, released_after;
	FakeGraph *capturing;   /* launches go into it while capturing */
	int graphs, freed, fail_capture; /* graphs made and freed; capture that fails (-1: none) */
} dev;

static void say(const char *what, int i)
{
	size_t at = strlen(dev.log);
	snprintf(dev.log + at, sizeof dev.log - at, "%s%s%d", at ? " " : "", what, i);
}

static void fake_launch(RtDevice *d, void *kernel, void *arena, const BundleKernel *k)
{
	int i = (int)(intptr_t)kernel;
	int64_t grid = k->grid;
	int block = k->block, shared = k->shared;
	CHECK(grid == 10 + i && block == 64 && shared == 1024 * i, "kernel %d: grid %lld block %d shared %d", i,
	      (long long)grid, block, shared);
	if (dev.capturing) {
		CHECK(dev.capturing->n < RT_REPLAYED_LAUNCHES, "kernel %d launched too often into a graph", i);
		if (dev.capturing->n < RT_REPLAYED_LAUNCHES)
			dev.capturing->kernel[dev.capturing->n++] = i;
		return;
	}
	dev.clock_ms += dev.kernel_ms[i];
	dev.launched++;
	say("L", i);
}

static bool fake_capture_begin(RtDevice *d, char *err, size_t errlen)
{
	CHECK(!dev.capturing, "a capture inside a capture");
	if (dev.graphs == dev.fail_capture) {
		snprintf(err, errlen, "refused");
		return false;
	}
	dev.capturing = calloc(1, sizeof *dev.capturing);
	return true;
}

static void *fake_capture_end(RtDevice *d, char *err, size_t errlen)
{
	FakeGraph *g = dev.capturing;
	dev.capturing = NULL;
	dev.graphs++;
	return g;
}

static void fake_replay(RtDevice *d, void *graph)
{
	const FakeGraph *g = graph;
	for (int i = 0; i < g->n; i++) {
		dev.clock_ms += dev.kernel_ms[g->kernel[i]];
		dev.launched++;
	}
	say("P", g->n ? g->kernel[0] : -1);
}

static void fake_graph_free(RtDevice *d, void *graph)
{
	free(graph);
	dev.freed++;
}

static void fake_sync(RtDevice *d) { say("S", 0); }

static bool fake_begin(RtDevice *d, int marks)
{
	dev.marks_made = marks;
	say("B", marks);
	return true;
}

static void fake_mark(RtDevice *d, int i)
{
	dev.mark_ms[i] = dev.clock_ms;
	say("M", i);
}

static void fake_release(RtDevice *d)
{
	dev.released_after = dev.launched;
	say("G", dev.launched);
}

static bool fake_read(RtDevice *d, double *ms, int marks)
{
	for (int i = 0; i + 1 < marks; i++)
		ms[i] = dev.mark_ms[i + 1] - dev.mark_ms[i];
	say("R", marks);
	return true;
}

static RtDeviceOps timed = {.name = "fake", .launch = fake_launch, .synchronize = fake_sync,
			    .timer_begin = fake_begin, .timer_mark = fake_mark, .timer_release = fake_release,
			    .timer_read = fake_read};

static void run(const RtDeviceOps *ops, int n, double *seconds, RtKernelTiming *timing)
{
	void *fn[MAXN];
	BundleKernel k[MAXN];
	memset(&dev, 0, sizeof dev);
	dev.released_after = -1;
	dev.fail_capture = -1;
	for (int i = 0; i < n; i++) {
		fn[i] = (void *)(intptr_t)i;
		k[i] = (BundleKernel){.grid = 10 + i, .block = 64, .shared = 1024 * i};
		dev.kernel_ms[i] = tu_uniform(0.001, 2);
		seconds[i] = 0.5; /* added to */
	}
	*timing = rt_launch_timed(ops, NULL, NULL, fn, k, n, seconds);
}

/* Graphs: captured, replayed between the marks with no wait, freed; each kernel's time is its
 * launches' over RT_REPLAYED_LAUNCHES; a capture that fails leaves plain launches. */
static void test_graphs(void)
{
	RtDeviceOps graphs = timed;
	graphs.capture_begin = fake_capture_begin;
	graphs.capture_end = fake_capture_end;
	graphs.replay = fake_replay;
	graphs.graph_free = fake_graph_free;
	double seconds[MAXN];
	RtKernelTiming timing;
	run(&graphs, 3, seconds, &timing);
	CHECK(timing == RT_TIMED_BY_GRAPHS && dev.graphs == 3 && dev.freed == 3, "%d graphs made, %d freed", dev.graphs, dev.freed);
	CHECK(strcmp(dev.log, "B4 M0 P0 M1 P1 M2 P2 M3 R4") == 0, "%s", dev.log);
	CHECK(dev.launched == 3 * RT_REPLAYED_LAUNCHES, "%d launches", dev.launched);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(seconds[i], 0.5 + dev.kernel_ms[i] / 1e3, 1e-12);

	run(&graphs, MAXN, seconds, &timing);
	CHECK(timing == RT_TIMED_BY_GRAPHS && dev.freed == MAXN && dev.released_after == RT_GATED_LAUNCHES * RT_REPLAYED_LAUNCHES,
	      "%d freed, released after %d launches", dev.freed, dev.released_after);
	CHECK(strstr(dev.log, "S") == NULL, "a wait between timed graphs");
	for (int i = 0; i < MAXN; i++)
		CHECK_NEAR(seconds[i], 0.5 + dev.kernel_ms[i] / 1e3, 1e-12);

	/* the third capture fails: the two graphs made are freed, the kernels launched plainly */
	memset(&dev, 0, sizeof dev);
	void *fn[4];
	BundleKernel k[4];
	for (int i = 0; i < 4; i++) {
		fn[i] = (void *)(intptr_t)i;
		k[i] = (BundleKernel){.grid = 10 + i, .block = 64, .shared = 1024 * i};
		dev.kernel_ms[i] = tu_uniform(0.001, 2);
		seconds[i] = 0;
	}
	dev.fail_capture = 2;
	timing = rt_launch_timed(&graphs, NULL, NULL, fn, k, 4, seconds);
	CHECK(timing == RT_TIMED_BY_EVENTS && dev.graphs == 2 && dev.freed == 2, "%d graphs, %d freed", dev.graphs, dev.freed);
	CHECK(strcmp(dev.log, "B5 M0 L0 M1 L1 M2 L2 M3 L3 M4 R5") == 0, "%s", dev.log);
	for (int i = 0; i < 4; i++)
		CHECK_NEAR(seconds[i], dev.kernel_ms[i] / 1e3, 1e-12);
}

static void *open_later(void *gate)
{
	nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
	rt_gate_open(gate);
	return NULL;
}

int main(void)
{
	tu_start("test_rt_launch_timing");
	double seconds[MAXN];
	RtKernelTiming timing;

	run(&timed, 3, seconds, &timing);
	CHECK(timing == RT_TIMED_BY_EVENTS);
	CHECK(strcmp(dev.log, "B4 M0 L0 M1 L1 M2 L2 M3 R4") == 0, "%s", dev.log);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(seconds[i], 0.5 + dev.kernel_ms[i] / 1e3, 1e-12);

	/* many kernels: no wait between them, the gate opened after RT_GATED_LAUNCHES */
	run(&timed, MAXN, seconds, &timing);
	CHECK(timing == RT_TIMED_BY_EVENTS && dev.marks_made == MAXN + 1 && dev.launched == MAXN);
	CHECK(dev.released_after == RT_GATED_LAUNCHES, "released after %d launches", dev.released_after);
	CHECK(strstr(dev.log, "S") == NULL, "a wait between timed launches: %.80s", strstr(dev.log, "S"));
	for (int i = 0; i < MAXN; i++)
		CHECK_NEAR(seconds[i], 0.5 + dev.kernel_ms[i] / 1e3, 1e-12);

	/* a device without marks: each launch waited for, timed by the host */
	RtDeviceOps untimed = {.name = "fake", .launch = fake_launch, .synchronize = fake_sync};
	run(&untimed, 3, seconds, &timing);
	CHECK(timing == RT_TIMED_BY_HOST);
	CHECK(strcmp(dev.log, "L0 S0 L1 S0 L2 S0") == 0, "%s", dev.log);
	for (int i = 0; i < 3; i++)
		CHECK(seconds[i] >= 0.5 && seconds[i] < 1.5);

	/* a device whose marks cannot start falls back to the host's clock */
	RtDeviceOps refusing = timed;
	refusing.timer_begin = NULL;
	run(&refusing, 2, seconds, &timing);
	CHECK(timing == RT_TIMED_BY_HOST && strcmp(dev.log, "L0 S0 L1 S0") == 0, "%s", dev.log);

	test_graphs();

	/* the gate: closed, a waiter returns only after it opens */
	RtGate gate;
	rt_gate_close(&gate);
	pthread_t t;
	pthread_create(&t, NULL, open_later, &gate);
	rt_gate_wait(&gate);
	CHECK(atomic_load(&gate.open) == 1);
	pthread_join(t, NULL);
	return tu_finish("test_rt_launch_timing");
}
