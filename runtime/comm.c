/* comm.c: what every communicator does the same way: the collectives under a watchdog, the abort
 * and the close.
 *
 * A rank that dies leaves the others waiting in their next collective, and an engine may wait
 * forever. The watchdog is a thread that sleeps while no collective is under way; when one
 * outlasts the timeout it prints one line naming this rank, the collective and the wait, and
 * ends the process with status 1. It exits rather than calling the engine from its own thread
 * (MPI allows that only at MPI_THREAD_MULTIPLE): mpirun, and netc's own launcher, then end the
 * other ranks and name the one that failed. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/comm.h"

struct RtWatchdog {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool armed, quit;
	struct timespec deadline;
	char what[160];
	int rank;
	double timeout_s;
};

double rt_comm_default_timeout(void)
{
	const char *env = getenv("NETC_COMM_TIMEOUT");
	char *end;
	double t = env ? strtod(env, &end) : 0;
	return env && end != env && *end == 0 && t > 0 ? t : 300;
}

static void *watch(void *arg)
{
	struct RtWatchdog *w = arg;
	pthread_mutex_lock(&w->lock);
	while (!w->quit) {
		if (!w->armed) {
			pthread_cond_wait(&w->wake, &w->lock);
			continue;
		}
		if (pthread_cond_timedwait(&w->wake, &w->lock, &w->deadline) == ETIMEDOUT && w->armed) {
			fprintf(stderr, "netc: rank %d: %s waited %g s for the other ranks: a rank died or hangs "
				"(NETC_COMM_TIMEOUT sets the wait); ending this rank\n", w->rank, w->what, w->timeout_s);
			fflush(NULL);
			_exit(1);
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static struct RtWatchdog *watchdog_start(RtComm *c)
{
	struct RtWatchdog *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->rank = c->rank;
	w->timeout_s = c->timeout_s;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	if (pthread_create(&w->thread, NULL, watch, w) != 0) {
		free(w);
		return NULL;
	}
	return w;
}

void rt_comm_watch(RtComm *c, const char *what)
{
	if (c->timeout_s <= 0 || c->size <= 1)
		return;
	if (!c->watchdog && !(c->watchdog = watchdog_start(c)))
		return; /* no thread: no timeout, the collective still runs */
	struct RtWatchdog *w = c->watchdog;
	pthread_mutex_lock(&w->lock);
	clock_gettime(CLOCK_REALTIME, &w->deadline);
	double whole = (double)(int64_t)c->timeout_s;
	w->deadline.tv_sec += (time_t)whole;
	w->deadline.tv_nsec += (long)((c->timeout_s - whole) * 1e9);
	if (w->deadline.tv_nsec >= 1000000000L) {
		w->deadline.tv_sec++;
		w->deadline.tv_nsec -= 1000000000L;
	}
	snprintf(w->what, sizeof w->what, "%s", what);
	w->armed = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void rt_comm_unwatch(RtComm *c)
{
	struct RtWatchdog *w = c->watchdog;
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->armed = false;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

bool rt_comm_allreduce_sum(RtComm *c, float *buf, size_t n, const char *what)
{
	rt_comm_watch(c, what);
	bool ok = c->ops->allreduce_sum(c, buf, n);
	rt_comm_unwatch(c);
	return ok;
}

bool rt_comm_allreduce_mean(RtComm *c, float *buf, size_t n, const char *what)
{
	rt_comm_watch(c, what);
	bool ok = c->ops->allreduce_mean(c, buf, n);
	rt_comm_unwatch(c);
	return ok;
}

bool rt_comm_broadcast(RtComm *c, void *buf, size_t bytes, int root, const char *what)
{
	rt_comm_watch(c, what);
	bool ok = c->ops->broadcast(c, buf, bytes, root);
	rt_comm_unwatch(c);
	return ok;
}

bool rt_comm_barrier(RtComm *c, const char *what)
{
	rt_comm_watch(c, what);
	bool ok = c->ops->barrier(c);
	rt_comm_unwatch(c);
	return ok;
}

_Noreturn void rt_comm_abort(RtComm *c, const char *why)
{
	fprintf(stderr, "netc: rank %d: %s\n", c->rank, why);
	fflush(NULL);
	c->ops->abort(c, 1);
	_exit(1); /* an engine's abort that returned */
}

void rt_comm_close(RtComm *c)
{
	if (!c)
		return;
	struct RtWatchdog *w = c->watchdog;
	if (w) {
		pthread_mutex_lock(&w->lock);
		w->quit = true;
		pthread_cond_signal(&w->wake);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->thread, NULL);
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->wake);
		free(w);
		c->watchdog = NULL;
	}
	c->ops->close(c);
}
