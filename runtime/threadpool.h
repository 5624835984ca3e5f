/* threadpool.h: persistent worker threads that split a kernel's grid of work-groups. */
#ifndef NETC_THREADPOOL_H
#define NETC_THREADPOOL_H

#include <stdint.h>

/* The kernel ABI: computes work-groups [wg_begin, wg_end) of its grid. */
typedef void (*RtKernelFn)(void *arena, int64_t wg_begin, int64_t wg_end);

typedef struct ThreadPool ThreadPool;

/* threads counts the calling thread too; 0: env NETC_THREADS, else every online core.
 * NULL when a thread cannot be started. */
ThreadPool *rt_pool_new(int threads);
void rt_pool_free(ThreadPool *p);
int rt_pool_threads(const ThreadPool *p);
/* Runs fn over work-groups [0, grid) split into one contiguous range per thread, the caller
 * taking the first; returns when every range is done. */
void rt_pool_run(ThreadPool *p, RtKernelFn fn, void *arena, int64_t grid);
/* What threads = 0 means: NETC_THREADS when it is a positive number, else the online cores. */
int rt_pool_default_threads(void);

#endif
