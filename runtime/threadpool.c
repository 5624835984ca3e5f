/* threadpool.c: persistent workers for kernel launches.
 *
 * A training step launches some 40 kernels, many of them short, so a launch must cost
 * microseconds: the job is published by bumping a generation counter that idle workers spin on
 * for a while before they sleep on it with a futex; the caller runs the first range itself and
 * then waits on a count of the workers still busy, the same way. */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/threadpool.h"

#define SPIN_ITERS (1 << 14) /* about 10-50 us of polling before a futex sleep */
#define MAX_THREADS 256

typedef struct {
	ThreadPool *pool;
	int index;
} Worker;

struct ThreadPool {
	int n;            /* threads, the caller included */
	pthread_t *thread;
	Worker *worker;
	int started;      /* workers running */
	int spin;         /* polls before a futex sleep: none when threads outnumber cores */
	/* the job, published by the increment of gen */
	RtKernelFn fn;
	void *arena;
	int64_t grid;
	atomic_int gen;
	atomic_int pending;  /* workers still on the current job */
	atomic_int sleepers; /* workers asleep on gen */
	atomic_int waiting;  /* 1 while the caller sleeps on pending */
	atomic_int stop;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static void futex_wait(atomic_int *a, int val)
{
	syscall(SYS_futex, (int *)a, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(atomic_int *a)
{
	syscall(SYS_futex, (int *)a, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Polls before sleeping, yielding now and then so that a thread which is not running (more
 * threads than free cores) gets the core it needs to finish. */
static bool poll_until(atomic_int *a, int old, bool until_differs, int spin)
{
	for (int i = 0; i < spin; i++) {
		if ((atomic_load(a) != old) == until_differs)
			return true;
		if (i % 256 == 255)
			sched_yield();
		else
			cpu_relax();
	}
	return false;
}

/* Waits until *a differs from old and returns the new value. Announcing the sleep in *sleepers
 * before checking *a again (both sequentially consistent) means a waker that bumped *a either
 * sees the sleeper or the sleeper sees the new value. */
static int await_change(atomic_int *a, int old, atomic_int *sleepers, int spin)
{
	int v;
	if (poll_until(a, old, true, spin))
		return atomic_load(a);
	atomic_fetch_add(sleepers, 1);
	while ((v = atomic_load(a)) == old)
		futex_wait(a, old);
	atomic_fetch_sub(sleepers, 1);
	return v;
}

/* Waits until *a is zero, announcing a sleep in *waiting the same way. */
static void await_zero(atomic_int *a, atomic_int *waiting, int spin)
{
	if (poll_until(a, 0, false, spin))
		return;
	atomic_store(waiting, 1);
	int v;
	while ((v = atomic_load(a)) != 0)
		futex_wait(a, v);
	atomic_store(waiting, 0);
}

/* Thread i's contiguous share of [0, grid): the first grid % n threads take one more. */
static void run_range(ThreadPool *p, int i)
{
	int64_t q = p->grid / p->n, r = p->grid % p->n;
	int64_t begin = i * q + (i < r ? i : r);
	int64_t end = begin + q + (i < r);
	if (begin < end)
		p->fn(p->arena, begin, end);
}

static void *worker_main(void *arg)
{
	Worker *w = arg;
	ThreadPool *p = w->pool;
	int seen = 0;
	for (;;) {
		seen = await_change(&p->gen, seen, &p->sleepers, p->spin);
		if (atomic_load(&p->stop))
			return NULL;
		run_range(p, w->index);
		if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->waiting))
			futex_wake(&p->pending);
	}
}

int rt_pool_default_threads(void)
{
	const char *env = getenv("NETC_THREADS");
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (*end == 0 && v > 0)
			return v < MAX_THREADS ? (int)v : MAX_THREADS;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores < 1)
		return 1;
	return cores < MAX_THREADS ? (int)cores : MAX_THREADS;
}

static void publish(ThreadPool *p)
{
	atomic_fetch_add(&p->gen, 1);
	if (atomic_load(&p->sleepers))
		futex_wake(&p->gen);
}

ThreadPool *rt_pool_new(int threads)
{
	ThreadPool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->n = threads > 0 ? (threads < MAX_THREADS ? threads : MAX_THREADS) : rt_pool_default_threads();
	p->spin = p->n <= sysconf(_SC_NPROCESSORS_ONLN) ? SPIN_ITERS : 0;
	p->thread = calloc((size_t)p->n, sizeof *p->thread);
	p->worker = calloc((size_t)p->n, sizeof *p->worker);
	if (!p->thread || !p->worker) {
		rt_pool_free(p);
		return NULL;
	}
	for (int i = 1; i < p->n; i++) {
		p->worker[i] = (Worker){p, i};
		if (pthread_create(&p->thread[i], NULL, worker_main, &p->worker[i]) != 0) {
			rt_pool_free(p);
			return NULL;
		}
		p->started = i;
	}
	return p;
}

void rt_pool_free(ThreadPool *p)
{
	if (!p)
		return;
	if (p->started) {
		atomic_store(&p->stop, 1);
		publish(p);
		for (int i = 1; i <= p->started; i++)
			pthread_join(p->thread[i], NULL);
	}
	free(p->thread);
	free(p->worker);
	free(p);
}

int rt_pool_threads(const ThreadPool *p) { return p->n; }

void rt_pool_run(ThreadPool *p, RtKernelFn fn, void *arena, int64_t grid)
{
	if (grid <= 0)
		return;
	/* one work-group or one thread: no one to share it with */
	if (grid == 1 || p->n == 1) {
		fn(arena, 0, grid);
		return;
	}
	p->fn = fn;
	p->arena = arena;
	p->grid = grid;
	atomic_store(&p->pending, p->n - 1);
	publish(p);
	run_range(p, 0);
	await_zero(&p->pending, &p->waiting, p->spin);
}
