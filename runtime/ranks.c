/* ranks.c: how the ranks of a data-parallel run were started, and their communicator.
 *
 * Ranks come from mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE, _RANK, _LOCAL_RANK) or from a
 * launcher that sets torchrun's variables (WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR,
 * MASTER_PORT). The CPU device's ranks sum through MPI; GPU ranks through NCCL (RCCL on AMD),
 * whose unique id rank 0 makes and sends to the others by MPI_Bcast under mpirun, else over TCP
 * (runtime/rendezvous.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/comm.h"
#include "runtime/device.h"
#include "runtime/rendezvous.h"
#include "runtime/rt.h"

/* An environment variable as an integer in [lo, hi]: 1, 0 when unset, -1 (err set) when bad. */
static int env_int(const char *name, long lo, long hi, int *out, char *err, size_t errlen)
{
	const char *v = getenv(name);
	if (!v)
		return 0;
	char *end;
	long x = strtol(v, &end, 10);
	if (end == v || *end || x < lo || x > hi) {
		snprintf(err, errlen, "%s=%s: expected an integer from %ld to %ld", name, v, lo, hi);
		return -1;
	}
	*out = (int)x;
	return 1;
}

static bool from_vars(RtRanks *r, const char *size, const char *rank, const char *local, char *err, size_t errlen)
{
	int got = env_int(size, 1, 1 << 20, &r->size, err, errlen);
	if (got <= 0)
		return got == 0 ? (snprintf(err, errlen, "%s is not set", size), false) : false;
	if (env_int(rank, 0, r->size - 1, &r->rank, err, errlen) <= 0) {
		if (!getenv(rank))
			snprintf(err, errlen, "%s is set but %s is not", size, rank);
		return false;
	}
	r->local_rank = r->rank;
	return env_int(local, 0, 1 << 20, &r->local_rank, err, errlen) >= 0;
}

bool rt_ranks_from_env(RtRanks *r, char *err, size_t errlen)
{
	*r = (RtRanks){.launch = RT_LAUNCH_NONE, .size = 1, .local_size = 1};
	if (rt_comm_mpi_launched()) {
		r->launch = RT_LAUNCH_MPI;
		return from_vars(r, "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", err,
				 errlen) &&
		       env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1, 1 << 20, &r->local_size, err, errlen) >= 0;
	}
	if (!getenv("WORLD_SIZE"))
		return true;
	r->launch = RT_LAUNCH_TORCHRUN;
	if (!from_vars(r, "WORLD_SIZE", "RANK", "LOCAL_RANK", err, errlen) ||
	    env_int("LOCAL_WORLD_SIZE", 1, 1 << 20, &r->local_size, err, errlen) < 0)
		return false;
	const char *addr = getenv("MASTER_ADDR");
	snprintf(r->master_addr, sizeof r->master_addr, "%s", addr ? addr : "127.0.0.1");
	r->master_port = 29500; /* torchrun's default */
	return env_int("MASTER_PORT", 1, 65535, &r->master_port, err, errlen) >= 0;
}

bool rt_rank_device(const Bundle *b, const char *spec, const RtRanks *r, char *out, size_t len)
{
	const char *kind = spec && (strcmp(spec, "cuda") == 0 || strcmp(spec, "hip") == 0) ? spec : NULL;
	RtChoice c;
	char err[512];
	/* auto: the kind of GPU auto takes, on every rank the local rank's one */
	if ((!spec || strcmp(spec, "auto") == 0) && b && r->launch != RT_LAUNCH_NONE &&
	    rt_choose_device(b, "auto", &c, err, sizeof err) && c.ops != &rt_device_cpu)
		kind = c.ops->name;
	if (!kind || r->launch == RT_LAUNCH_NONE) {
		snprintf(out, len, "%s", spec ? spec : "auto");
		return false;
	}
	snprintf(out, len, "%s:%d", kind, r->local_rank);
	return true;
}

/* The MPI communicator that carried NCCL's unique id under mpirun: finalized with the run. */
static RtComm *bootstrap;

/* NCCL's unique id from rank 0, by MPI under mpirun, else over TCP. */
static bool share_unique_id(const RtRanks *r, const char *kind, RtNcclUniqueId *id, char *err, size_t errlen)
{
	memset(id, 0, sizeof *id);
	if (r->rank == 0 && !rt_nccl_unique_id(kind, id, err, errlen))
		return false;
	if (r->launch == RT_LAUNCH_MPI) {
		if (!(bootstrap = rt_comm_mpi_open(err, errlen)))
			return false;
		if (!rt_comm_broadcast(bootstrap, id, sizeof *id, 0, "the broadcast of NCCL's unique id")) {
			snprintf(err, errlen, "%s", bootstrap->error);
			return false;
		}
		return true;
	}
	RtRendezvous rv = {.addr = r->master_addr, .port = r->master_port, .rank = r->rank, .size = r->size,
			   .timeout_s = rt_comm_default_timeout()};
	return rt_rendezvous_share(&rv, id, sizeof *id, err, errlen);
}

RtComm *rt_ranks_connect(const RtRanks *r, Session *s, char *err, size_t errlen)
{
	const char *kind = rt_device_name(s);
	void *stream = rt_comm_stream(s);
	if (!stream) { /* the CPU: MPI on the arena */
		if (r->launch != RT_LAUNCH_MPI) {
			snprintf(err, errlen, "rank %d: the %s device's ranks sum through MPI: start them with mpirun "
				 "(torchrun's variables serve GPU ranks, through NCCL)", r->rank, kind);
			return NULL;
		}
		RtComm *c = rt_comm_mpi_open(err, errlen);
		if (c && (c->size != r->size || c->rank != r->rank)) {
			snprintf(err, errlen, "MPI says rank %d of %d, the environment rank %d of %d", c->rank, c->size,
				 r->rank, r->size);
			rt_comm_close(c);
			return NULL;
		}
		return c;
	}
	RtNcclUniqueId id;
	if (!share_unique_id(r, kind, &id, err, errlen))
		return NULL;
	return rt_comm_nccl_open(kind, &id, r->rank, r->size, stream, err, errlen);
}

void rt_ranks_close(RtComm *c)
{
	rt_comm_close(c);
	rt_comm_close(bootstrap);
	bootstrap = NULL;
}
