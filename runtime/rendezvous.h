/* rendezvous.h: rank 0's bytes to every rank over TCP (runtime/rendezvous.c). */
#ifndef NETC_RENDEZVOUS_H
#define NETC_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	const char *addr; /* rank 0's host (MASTER_ADDR) */
	int port;         /* MASTER_PORT */
	int rank, size;
	double timeout_s;
} RtRendezvous;

/* Rank 0: sends bytes[0..n) to each of the other size - 1 ranks; the others: receive them into
 * bytes. False with one line in err on a timeout or a socket error. */
bool rt_rendezvous_share(const RtRendezvous *r, void *bytes, size_t n, char *err, size_t errlen);

#endif
