/* test_rt_threadpool.c: every work-group of a launch runs exactly once, in one contiguous range
 * per thread, for many grid sizes and thread counts; launches back to back and after the workers
 * have gone to sleep. */
#include <stdatomic.h>

#include "runtime/threadpool.h"
#include "tests/unit/test_util.h"

#define MAX_GRID 20000

typedef struct {
	atomic_int count[MAX_GRID];
	atomic_int calls;
	atomic_int bad_range;
} Job;

static void kernel(void *arena, int64_t begin, int64_t end)
{
	Job *j = arena;
	if (begin >= end || begin < 0 || end > MAX_GRID)
		atomic_fetch_add(&j->bad_range, 1);
	for (int64_t i = begin; i < end && i < MAX_GRID; i++)
		atomic_fetch_add(&j->count[i], 1);
	atomic_fetch_add(&j->calls, 1);
}

static void launch_and_check(ThreadPool *p, Job *j, int64_t grid)
{
	memset(j, 0, sizeof *j);
	rt_pool_run(p, kernel, j, grid);
	int wrong = 0;
	for (int64_t i = 0; i < MAX_GRID; i++)
		wrong += atomic_load(&j->count[i]) != (i < grid);
	int threads = rt_pool_threads(p);
	int calls = atomic_load(&j->calls);
	CHECK(wrong == 0, "grid %lld, %d threads: %d work-groups ran a wrong number of times",
	      (long long)grid, threads, wrong);
	CHECK(atomic_load(&j->bad_range) == 0, "grid %lld: an empty or out-of-bounds range", (long long)grid);
	CHECK(calls <= threads && (grid == 0 || calls >= 1), "grid %lld, %d threads: %d calls",
	      (long long)grid, threads, calls);
}

int main(void)
{
	tu_start("test_rt_threadpool");
	static Job job;
	const int threads[] = {1, 2, 3, 4, 7, 16};
	const int64_t grids[] = {0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 100, 1000, 4097, MAX_GRID};
	for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
		ThreadPool *p = rt_pool_new(threads[t]);
		CHECK(p && rt_pool_threads(p) == threads[t], "pool of %d", threads[t]);
		if (!p)
			continue;
		for (size_t g = 0; g < sizeof grids / sizeof *grids; g++)
			launch_and_check(p, &job, grids[g]);
		for (int k = 0; k < 200; k++)
			launch_and_check(p, &job, 1 + (int)tu_below(MAX_GRID));
		/* let the workers fall asleep on the futex, then wake them */
		usleep(20000);
		launch_and_check(p, &job, 1 + (int)tu_below(MAX_GRID));
		rt_pool_free(p);
	}

	/* many short launches in a row: the per-launch path must not lose a wake-up */
	ThreadPool *p = rt_pool_new(2);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < 20000; k++) {
		atomic_store(&job.calls, 0);
		rt_pool_run(p, kernel, &job, 8);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("20000 launches of grid 8 on 2 threads: %.2f us each\n",
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 20000 / 1e3);
	rt_pool_free(p);

	setenv("NETC_THREADS", "3", 1);
	CHECK(rt_pool_default_threads() == 3, "NETC_THREADS=3 gave %d", rt_pool_default_threads());
	p = rt_pool_new(0);
	CHECK(rt_pool_threads(p) == 3, "pool of 0 with NETC_THREADS=3 has %d", rt_pool_threads(p));
	rt_pool_free(p);
	setenv("NETC_THREADS", "zero", 1);
	CHECK(rt_pool_default_threads() >= 1, "a bad NETC_THREADS falls back to the cores");

	return tu_finish("test_rt_threadpool");
}
