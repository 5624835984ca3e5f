/* rendezvous.c: rank 0 hands a few bytes (NCCL's unique id) to every other rank over TCP, at
 * MASTER_ADDR:MASTER_PORT, the way torchrun's launchers and llm.c do. Rank 0 listens and sends the
 * bytes to each rank that connects; the others connect, retrying while rank 0 is not up yet, and
 * read them. Both sides give up after a timeout with a message naming the address. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runtime/clock.h"
#include "runtime/rendezvous.h"

static bool send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		c += k;
		n -= (size_t)k;
	}
	return true;
}

/* Waits for fd to be readable until deadline; false on timeout. */
static bool wait_readable(int fd, double deadline)
{
	for (;;) {
		double left = deadline - rt_clock_s();
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, (int)(left * 1000) + 1);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
	}
}

static bool recv_all(int fd, void *p, size_t n, double deadline)
{
	char *c = p;
	while (n) {
		if (!wait_readable(fd, deadline))
			return false;
		ssize_t k = recv(fd, c, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		c += k;
		n -= (size_t)k;
	}
	return true;
}

static struct addrinfo *resolve(const char *addr, int port, bool passive, char *err, size_t errlen)
{
	char service[16];
	snprintf(service, sizeof service, "%d", port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(passive ? NULL : addr, service, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "rendezvous: cannot resolve %s:%d: %s", addr, port, gai_strerror(rc));
		return NULL;
	}
	return res;
}

static bool serve(const RtRendezvous *r, const void *bytes, size_t n, char *err, size_t errlen)
{
	struct addrinfo *res = resolve(r->addr, r->port, true, err, errlen);
	if (!res)
		return false;
	int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol), one = 1;
	bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
		  bind(fd, res->ai_addr, res->ai_addrlen) == 0 && listen(fd, r->size) == 0;
	freeaddrinfo(res);
	if (!ok) {
		snprintf(err, errlen, "rendezvous: rank 0 cannot listen on port %d: %s", r->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	double deadline = rt_clock_s() + r->timeout_s;
	int served = 0;
	while (ok && served < r->size - 1) {
		if (!wait_readable(fd, deadline)) {
			snprintf(err, errlen, "rendezvous: rank 0 waited %.0f s on port %d for %d of the other %d ranks",
				 r->timeout_s, r->port, r->size - 1 - served, r->size - 1);
			ok = false;
			break;
		}
		int c = accept(fd, NULL, NULL);
		if (c < 0)
			continue;
		if (send_all(c, bytes, n))
			served++;
		close(c);
	}
	close(fd);
	return ok;
}

static bool fetch(const RtRendezvous *r, void *bytes, size_t n, char *err, size_t errlen)
{
	double deadline = rt_clock_s() + r->timeout_s;
	while (rt_clock_s() < deadline) {
		struct addrinfo *res = resolve(r->addr, r->port, false, err, errlen);
		if (!res)
			return false;
		int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
		bool connected = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0;
		freeaddrinfo(res);
		if (connected) {
			bool ok = recv_all(fd, bytes, n, deadline);
			close(fd);
			if (ok)
				return true;
		} else if (fd >= 0) {
			close(fd);
		}
		struct timespec pause = {0, 100 * 1000 * 1000}; /* rank 0 may not listen yet */
		nanosleep(&pause, NULL);
	}
	snprintf(err, errlen, "rendezvous: rank %d found no rank 0 at %s:%d within %.0f s (MASTER_ADDR, MASTER_PORT)",
		 r->rank, r->addr, r->port, r->timeout_s);
	return false;
}

bool rt_rendezvous_share(const RtRendezvous *r, void *bytes, size_t n, char *err, size_t errlen)
{
	if (r->size <= 1)
		return true;
	return r->rank == 0 ? serve(r, bytes, n, err, errlen) : fetch(r, bytes, n, err, errlen);
}
