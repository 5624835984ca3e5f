/* comm_mpi.c: ranks through MPI, loaded from Open MPI's libmpi.so.40 with dlopen.
 *
 * MPI's handles are not part of a standard ABI; Open MPI's are the addresses of exported globals
 * (MPI_COMM_WORLD is &ompi_mpi_comm_world, MPI_FLOAT &ompi_mpi_float, MPI_SUM &ompi_mpi_op_sum),
 * so dlsym gives them directly and netc declares only the few functions it calls. Open MPI
 * (Debian's openmpi-bin and libopenmpi-dev) is the one MPI supported; MPICH's handles are
 * integers and would need a backend of their own. Buffers are host memory: this is the CPU
 * device's all-reduce, and one way to start ranks on a cluster. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/comm.h"
#include "runtime/dynlib.h"

typedef void *MPI_Handle; /* MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler: pointers in Open MPI */

enum { MPI_SUCCESS = 0, MPI_MAX_ERROR_STRING = 256 };
#define OMPI_IN_PLACE ((void *)1) /* Open MPI's MPI_IN_PLACE */

#define MPI_FUNCS(X)                                                                             \
	X(Initialized, "MPI_Initialized", (int *flag))                                           \
	X(Finalized, "MPI_Finalized", (int *flag))                                               \
	X(Init, "MPI_Init", (int *argc, char ***argv))                                           \
	X(Finalize, "MPI_Finalize", (void))                                                      \
	X(CommRank, "MPI_Comm_rank", (MPI_Handle comm, int *rank))                               \
	X(CommSize, "MPI_Comm_size", (MPI_Handle comm, int *size))                               \
	X(CommSetErrhandler, "MPI_Comm_set_errhandler", (MPI_Handle comm, MPI_Handle handler))   \
	X(Allreduce, "MPI_Allreduce",                                                            \
	  (const void *send, void *recv, int count, MPI_Handle type, MPI_Handle op, MPI_Handle comm)) \
	X(Bcast, "MPI_Bcast", (void *buf, int count, MPI_Handle type, int root, MPI_Handle comm)) \
	X(Barrier, "MPI_Barrier", (MPI_Handle comm))                                             \
	X(Abort, "MPI_Abort", (MPI_Handle comm, int status))                                     \
	X(ErrorString, "MPI_Error_string", (int code, char *s, int *len))

#define MPI_HANDLES(X)                                      \
	X(comm_world, "ompi_mpi_comm_world")                \
	X(type_float, "ompi_mpi_float")                     \
	X(type_byte, "ompi_mpi_byte")                       \
	X(op_sum, "ompi_mpi_op_sum")                        \
	X(errors_return, "ompi_mpi_errors_return")

#define FN_FIELD(f, sym, params) int(*f) params;
#define FN_SYM(f, sym, params) {sym, &mpi.f, false},
#define H_FIELD(f, sym) MPI_Handle f;
#define H_SYM(f, sym) {sym, &mpi.f, false},

static struct {
	MPI_FUNCS(FN_FIELD)
	MPI_HANDLES(H_FIELD)
	int (*GetLibraryVersion)(char *version, int *len); /* MPI 3.0; callable before MPI_Init */
} mpi;

#define LIBMPI "libmpi.so.40"

static struct {
	bool tried, ok;
	char why[384];
} lib;

/* NETC_MPI_LIBRARY names the library to load instead (Open MPI installed elsewhere). */
static void mpi_load(void)
{
	lib.tried = true;
	const char *own = getenv("NETC_MPI_LIBRARY");
	const char *const names[] = {own && *own ? own : LIBMPI};
	const char *loaded;
	void *h = rt_dlopen_first_global(names, 1, &loaded, lib.why, sizeof lib.why);
	if (!h) {
		size_t n = strlen(lib.why);
		snprintf(lib.why + n, sizeof lib.why - n, " (netc's MPI is Open MPI: apt-get install openmpi-bin "
			 "libopenmpi-dev)");
		return;
	}
	const RtSymbol syms[] = {
		MPI_FUNCS(FN_SYM) MPI_HANDLES(H_SYM){"MPI_Get_library_version", &mpi.GetLibraryVersion, true},
	};
	lib.ok = rt_dlsyms(h, names[0], syms, (int)(sizeof syms / sizeof syms[0]), lib.why, sizeof lib.why);
}

typedef struct {
	RtComm c;
	bool finalize; /* netc initialized MPI, so it finalizes it */
} MpiComm;

/* False with "mpi: what: MPI's message" in c's error when rc is an error. */
static bool mpi_ok(RtComm *c, int rc, const char *what)
{
	if (rc == MPI_SUCCESS)
		return true;
	char msg[MPI_MAX_ERROR_STRING] = "";
	int len = 0;
	if (mpi.ErrorString(rc, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof msg, "error %d", rc);
	if (!c->error[0])
		snprintf(c->error, sizeof c->error, "mpi: %s: %s", what, msg);
	return false;
}

static int mpi_rank(RtComm *c) { return c->rank; }
static int mpi_size(RtComm *c) { return c->size; }

/* MPI counts are ints: a buffer past 2^31 elements goes in pieces. */
static bool mpi_allreduce(RtComm *c, float *buf, size_t n)
{
	for (size_t at = 0; at < n; at += INT_MAX) {
		int count = n - at < INT_MAX ? (int)(n - at) : INT_MAX;
		if (!mpi_ok(c, mpi.Allreduce(OMPI_IN_PLACE, buf + at, count, mpi.type_float, mpi.op_sum, mpi.comm_world),
			    "MPI_Allreduce"))
			return false;
	}
	return true;
}

static bool mpi_allreduce_mean(RtComm *c, float *buf, size_t n)
{
	if (!mpi_allreduce(c, buf, n))
		return false;
	float scale = 1.0f / (float)c->size;
	for (size_t i = 0; i < n; i++)
		buf[i] *= scale;
	return true;
}

static bool mpi_broadcast(RtComm *c, void *buf, size_t bytes, int root)
{
	for (size_t at = 0; at < bytes; at += INT_MAX) {
		int count = bytes - at < INT_MAX ? (int)(bytes - at) : INT_MAX;
		if (!mpi_ok(c, mpi.Bcast((char *)buf + at, count, mpi.type_byte, root, mpi.comm_world), "MPI_Bcast"))
			return false;
	}
	return true;
}

static bool mpi_barrier(RtComm *c) { return mpi_ok(c, mpi.Barrier(mpi.comm_world), "MPI_Barrier"); }

static void mpi_abort(RtComm *c, int status) { mpi.Abort(mpi.comm_world, status); }

static void mpi_close(RtComm *c)
{
	int done = 0;
	if (((MpiComm *)c)->finalize && mpi.Finalized(&done) == MPI_SUCCESS && !done)
		mpi.Finalize();
	free(c);
}

const RtCommOps rt_comm_mpi_ops = {
	.name = "mpi",
	.rank = mpi_rank,
	.size = mpi_size,
	.host_buffers = true,
	.allreduce_sum = mpi_allreduce,
	.allreduce_mean = mpi_allreduce_mean,
	.broadcast = mpi_broadcast,
	.barrier = mpi_barrier,
	.abort = mpi_abort,
	.close = mpi_close,
};

bool rt_comm_mpi_describe(char *buf, size_t len)
{
	if (!lib.tried)
		mpi_load();
	if (!lib.ok) {
		snprintf(buf, len, "%s", lib.why);
		return false;
	}
	char version[3072] = ""; /* MPI_MAX_LIBRARY_VERSION_STRING is 256 in Open MPI, 8192 in MPICH */
	int n = 0;
	if (mpi.GetLibraryVersion && mpi.GetLibraryVersion(version, &n) == MPI_SUCCESS)
		version[strcspn(version, ",\n")] = 0; /* "Open MPI v4.1.4, package: ..." */
	snprintf(buf, len, "%s%s%s%s", LIBMPI, version[0] ? " (" : "", version, version[0] ? ")" : "");
	return true;
}

bool rt_comm_mpi_launched(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") != NULL;
}

RtComm *rt_comm_mpi_open(char *err, size_t errlen)
{
	if (!lib.tried)
		mpi_load();
	if (!lib.ok) {
		snprintf(err, errlen, "mpi: %s", lib.why);
		return NULL;
	}
	MpiComm *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	RtComm *c = &m->c;
	c->ops = &rt_comm_mpi_ops;
	c->timeout_s = rt_comm_default_timeout();
	int ready = 0;
	bool ok = mpi_ok(c, mpi.Initialized(&ready), "MPI_Initialized");
	if (ok && !ready) {
		ok = mpi_ok(c, mpi.Init(NULL, NULL), "MPI_Init");
		m->finalize = ok;
	}
	/* errors come back as codes, so netc can say which collective failed on which rank */
	ok = ok && mpi_ok(c, mpi.CommSetErrhandler(mpi.comm_world, mpi.errors_return), "MPI_Comm_set_errhandler") &&
	     mpi_ok(c, mpi.CommRank(mpi.comm_world, &c->rank), "MPI_Comm_rank") &&
	     mpi_ok(c, mpi.CommSize(mpi.comm_world, &c->size), "MPI_Comm_size");
	if (!ok) {
		snprintf(err, errlen, "%s", c->error);
		mpi_close(c);
		return NULL;
	}
	return c;
}
