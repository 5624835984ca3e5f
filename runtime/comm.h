/* comm.h: the ranks of a data-parallel run, as a small vtable like the device's (device.h).
 *
 * One process per device; every process runs the same bundle on its own shard of each global
 * batch and the ranks sum their gradients before the update. The collectives come from the
 * engines people already run, loaded with dlopen so that the build needs none of them:
 *
 *   single  one rank, every collective the identity (comm_single.c)
 *   mpi     Open MPI's libmpi.so.40, host buffers: the CPU device's ranks (comm_mpi.c)
 *   nccl    libnccl.so.2 (CUDA) or librccl.so.1 (HIP, the same API), device buffers on the
 *           device's stream (comm_nccl.c)
 *
 * A collective that fails, or waits longer than the communicator's timeout for the other ranks,
 * ends the run on every rank with a message naming the rank and the cause (comm.c's watchdog). */
#ifndef NETC_COMM_H
#define NETC_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct RtComm RtComm;

typedef struct {
	const char *name; /* "single", "mpi", "nccl" (RCCL included) */
	/* Whether buffers are host memory (single, mpi) or device memory on the stream (nccl). */
	bool host_buffers;
	int (*rank)(RtComm *c);
	int (*size)(RtComm *c);
	/* buf[0..n) summed over the ranks, in place, on every rank. NCCL: device memory, queued on
	 * the stream given at open (it returns before the sum is done, and a captured graph may hold
	 * it); MPI and single: host memory, done on return. False with c's error set. */
	bool (*allreduce_sum)(RtComm *c, float *buf, size_t n);
	/* The same, divided by the number of ranks: the gradient of a loss that is a mean over the
	 * global batch (NCCL's ncclAvg; MPI sums, then scales on the host). */
	bool (*allreduce_mean)(RtComm *c, float *buf, size_t n);
	/* bytes of buf from root to every rank, in place. */
	bool (*broadcast)(RtComm *c, void *buf, size_t bytes, int root);
	/* Optional (NULL where calls cannot be fused): the collectives between them go to the engine
	 * as one (ncclGroupStart/End), which buckets small gradients together. */
	bool (*group_begin)(RtComm *c);
	bool (*group_end)(RtComm *c);
	bool (*barrier)(RtComm *c);
	/* Ends every rank now (the engine's own abort), with status. */
	void (*abort)(RtComm *c, int status);
	void (*close)(RtComm *c);
} RtCommOps;

/* What every backend's state starts with; the backend's own fields follow in its struct. */
struct RtComm {
	const RtCommOps *ops;
	int rank, size;
	double timeout_s;   /* a collective waiting longer than this ends the run; <= 0: never */
	char error[512];    /* the first failure, "" while there is none */
	struct RtWatchdog *watchdog;
};

extern const RtCommOps rt_comm_single_ops, rt_comm_mpi_ops, rt_comm_nccl_ops;

/* ---- opening (comm_single.c, comm_mpi.c, comm_nccl.c) ---- */
RtComm *rt_comm_single(void);
/* MPI_Init (or the MPI the process already initialized) on MPI_COMM_WORLD. Missing library:
 * NULL with one line in err ("libmpi.so.40 not found: ..."). */
RtComm *rt_comm_mpi_open(char *err, size_t errlen);
/* `netc devices`: "libmpi.so.40 (Open MPI v4.1.4)" and true, or why it is not there and false. */
bool rt_comm_mpi_describe(char *buf, size_t len);
/* Whether this process was started by Open MPI's mpirun (OMPI_COMM_WORLD_SIZE is set). */
bool rt_comm_mpi_launched(void);

/* NCCL's unique id: 128 opaque bytes that rank 0 makes and every rank needs (nccl.h's
 * NCCL_UNIQUE_ID_BYTES). */
#define RT_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[RT_NCCL_UNIQUE_ID_BYTES];
} RtNcclUniqueId;
/* The values of nccl.h's ncclDataType_t, ncclRedOp_t and ncclResult_t that netc uses: part of
 * NCCL's ABI (and RCCL's), checked by tests/unit/test_rt_comm.c. */
enum {
	RT_NCCL_FLOAT32 = 7, /* ncclFloat32 = ncclFloat */
	RT_NCCL_UINT8 = 1,   /* ncclUint8 */
	RT_NCCL_SUM = 0,     /* ncclSum */
	RT_NCCL_AVG = 4,     /* ncclAvg (NCCL 2.10 and newer) */
	RT_NCCL_SUCCESS = 0, /* ncclSuccess */
	RT_NCCL_IN_PROGRESS = 7,
};
/* Which engine a GPU kind uses: "cuda" → libnccl.so.2, "hip" → librccl.so.1; NULL for others. */
const char *rt_nccl_library(const char *device_kind);
/* Loads the engine of device_kind; false with one line in why ("libnccl.so.2 not found"). */
bool rt_nccl_available(const char *device_kind, char *why, size_t len);
/* `netc devices`: "libnccl.so.2 (version 2.18.3)" and true, or why it is not there and false. */
bool rt_nccl_describe(const char *device_kind, char *buf, size_t len);
/* Rank 0's new unique id (ncclGetUniqueId). */
bool rt_nccl_unique_id(const char *device_kind, RtNcclUniqueId *id, char *err, size_t errlen);
/* ncclCommInitRank on the current device (the caller's context is current), collectives queued
 * on stream (a CUstream or hipStream_t). */
RtComm *rt_comm_nccl_open(const char *device_kind, const RtNcclUniqueId *id, int rank, int size, void *stream,
			  char *err, size_t errlen);

/* ---- every backend (comm.c) ---- */
/* The collectives through the watchdog: a call that outlasts c->timeout_s prints
 * "netc: rank R: <what> waited S s for the other ranks ..." and aborts every rank. On failure,
 * c->error says what failed. */
bool rt_comm_allreduce_sum(RtComm *c, float *buf, size_t n, const char *what);
bool rt_comm_allreduce_mean(RtComm *c, float *buf, size_t n, const char *what);
bool rt_comm_broadcast(RtComm *c, void *buf, size_t bytes, int root, const char *what);
bool rt_comm_barrier(RtComm *c, const char *what);
/* The watchdog around a wait that is not a collective call (a GPU stream holding one). */
void rt_comm_watch(RtComm *c, const char *what);
void rt_comm_unwatch(RtComm *c);
/* Ends every rank after printing "netc: rank R: why" (the ranks' own engines end the others). */
_Noreturn void rt_comm_abort(RtComm *c, const char *why);
void rt_comm_close(RtComm *c);
/* The timeout of collectives: NETC_COMM_TIMEOUT (seconds) when set, else 300. */
double rt_comm_default_timeout(void);

#endif
