/* comm_nccl.c: ranks on GPUs through NCCL (libnccl.so.2, with CUDA) or RCCL (librccl.so.1, with
 * HIP), which share one API; loaded with dlopen, so the build needs neither.
 *
 * Only the few types and functions netc uses are declared, with NCCL's ABI: ncclUniqueId is 128
 * bytes passed by value, the enums are ints (comm.h lists the values, which the unit tests check
 * against nccl.h's), streams and communicators are pointers. Collectives are queued on the stream
 * the communicator was opened with, so they order with the device's kernels and a captured
 * step graph records them (NCCL 2.9 and newer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/comm.h"
#include "runtime/dynlib.h"

typedef int ncclResult_t;
typedef struct ncclComm *ncclComm_t;
typedef void *ncclStream; /* cudaStream_t, hipStream_t: the driver's CUstream is the same handle */

#define NCCL_FUNCS(X)                                                                            \
	X(GetVersion, "ncclGetVersion", (int *version))                                          \
	X(GetUniqueId, "ncclGetUniqueId", (RtNcclUniqueId *id))                                  \
	X(CommInitRank, "ncclCommInitRank", (ncclComm_t *comm, int nranks, RtNcclUniqueId id, int rank)) \
	X(CommDestroy, "ncclCommDestroy", (ncclComm_t comm))                                     \
	X(CommAbort, "ncclCommAbort", (ncclComm_t comm))                                         \
	X(AllReduce, "ncclAllReduce",                                                            \
	  (const void *send, void *recv, size_t count, int type, int op, ncclComm_t comm, ncclStream s)) \
	X(Broadcast, "ncclBroadcast",                                                            \
	  (const void *send, void *recv, size_t count, int type, int root, ncclComm_t comm, ncclStream s)) \
	X(GroupStart, "ncclGroupStart", (void))                                                  \
	X(GroupEnd, "ncclGroupEnd", (void))

#define FN_FIELD(f, sym, params) ncclResult_t(*f) params;

typedef struct {
	NCCL_FUNCS(FN_FIELD)
	const char *(*GetErrorString)(ncclResult_t rc);
} NcclApi;

/* One engine per GPU kind; each is loaded once and stays loaded. */
typedef struct {
	const char *kind, *library;
	const char *env; /* the variable that names another library to load */
	bool tried, ok;
	int version;
	char why[320];
	NcclApi api;
} Engine;

static Engine engines[] = {
	{.kind = "cuda", .library = "libnccl.so.2", .env = "NETC_NCCL_LIBRARY"},
	{.kind = "hip", .library = "librccl.so.1", .env = "NETC_RCCL_LIBRARY"},
};

static Engine *engine_of(const char *kind)
{
	for (size_t i = 0; kind && i < sizeof engines / sizeof engines[0]; i++)
		if (strcmp(engines[i].kind, kind) == 0)
			return &engines[i];
	return NULL;
}

const char *rt_nccl_library(const char *device_kind)
{
	Engine *e = engine_of(device_kind);
	return e ? e->library : NULL;
}

/* NETC_NCCL_LIBRARY (NCCL) or NETC_RCCL_LIBRARY (RCCL) names the library to load instead (a build
 * of one's own, a path). */
static void load(Engine *e)
{
	e->tried = true;
	const char *loaded, *own = getenv(e->env);
	if (own && *own)
		e->library = own;
	void *lib = rt_dlopen_first(&e->library, 1, &loaded, e->why, sizeof e->why);
	if (!lib)
		return;
#define FN_SYM(f, sym, params) {sym, &e->api.f, false},
	const RtSymbol syms[] = {NCCL_FUNCS(FN_SYM){"ncclGetErrorString", &e->api.GetErrorString, false}};
#undef FN_SYM
	if (!rt_dlsyms(lib, e->library, syms, (int)(sizeof syms / sizeof syms[0]), e->why, sizeof e->why))
		return;
	e->ok = e->api.GetVersion(&e->version) == RT_NCCL_SUCCESS;
	if (!e->ok)
		snprintf(e->why, sizeof e->why, "%s: ncclGetVersion failed", e->library);
}

bool rt_nccl_available(const char *device_kind, char *why, size_t len)
{
	Engine *e = engine_of(device_kind);
	if (!e) {
		snprintf(why, len, "no NCCL engine for the %s device", device_kind ? device_kind : "(none)");
		return false;
	}
	if (!e->tried)
		load(e);
	if (!e->ok)
		snprintf(why, len, "%s", e->why);
	return e->ok;
}

static void message(const Engine *e, ncclResult_t rc, const char *what, char *err, size_t errlen)
{
	const char *s = e->api.GetErrorString ? e->api.GetErrorString(rc) : NULL;
	snprintf(err, errlen, "%s: %s: %s", e->kind[0] == 'h' ? "rccl" : "nccl", what, s ? s : "unknown error");
}

/* ncclGetVersion's number: major * 10000 + minor * 100 + patch from 2.9 on, * 1000 and * 100
 * before. */
static void version_of(const Engine *e, int *major, int *minor)
{
	int v = e->version;
	*major = v >= 10000 ? v / 10000 : v / 1000;
	*minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
}

bool rt_nccl_describe(const char *device_kind, char *buf, size_t len)
{
	if (!rt_nccl_available(device_kind, buf, len))
		return false;
	const Engine *e = engine_of(device_kind);
	int major, minor;
	version_of(e, &major, &minor);
	snprintf(buf, len, "%s (version %d.%d.%d)", e->library, major, minor, e->version % 100);
	return true;
}

bool rt_nccl_unique_id(const char *device_kind, RtNcclUniqueId *id, char *err, size_t errlen)
{
	Engine *e = engine_of(device_kind);
	if (!rt_nccl_available(device_kind, err, errlen))
		return false;
	ncclResult_t rc = e->api.GetUniqueId(id);
	if (rc != RT_NCCL_SUCCESS)
		message(e, rc, "ncclGetUniqueId", err, errlen);
	return rc == RT_NCCL_SUCCESS;
}

typedef struct {
	RtComm c;
	Engine *e;
	ncclComm_t comm;
	ncclStream stream;
} NcclComm;

static bool nccl_ok(RtComm *c, ncclResult_t rc, const char *what)
{
	if (rc == RT_NCCL_SUCCESS)
		return true;
	if (!c->error[0])
		message(((NcclComm *)c)->e, rc, what, c->error, sizeof c->error);
	return false;
}

static int nccl_rank(RtComm *c) { return c->rank; }
static int nccl_size(RtComm *c) { return c->size; }

static bool nccl_allreduce(RtComm *c, float *buf, size_t n)
{
	NcclComm *x = (NcclComm *)c;
	return nccl_ok(c, x->e->api.AllReduce(buf, buf, n, RT_NCCL_FLOAT32, RT_NCCL_SUM, x->comm, x->stream),
		       "ncclAllReduce");
}

static bool nccl_allreduce_mean(RtComm *c, float *buf, size_t n)
{
	NcclComm *x = (NcclComm *)c;
	return nccl_ok(c, x->e->api.AllReduce(buf, buf, n, RT_NCCL_FLOAT32, RT_NCCL_AVG, x->comm, x->stream),
		       "ncclAllReduce");
}

static bool nccl_broadcast(RtComm *c, void *buf, size_t bytes, int root)
{
	NcclComm *x = (NcclComm *)c;
	return nccl_ok(c, x->e->api.Broadcast(buf, buf, bytes, RT_NCCL_UINT8, root, x->comm, x->stream),
		       "ncclBroadcast");
}

static bool nccl_group_begin(RtComm *c) { return nccl_ok(c, ((NcclComm *)c)->e->api.GroupStart(), "ncclGroupStart"); }
static bool nccl_group_end(RtComm *c) { return nccl_ok(c, ((NcclComm *)c)->e->api.GroupEnd(), "ncclGroupEnd"); }

/* NCCL has no barrier of its own, and netc needs none on GPUs: the step's all-reduce orders the
 * ranks. */
static bool nccl_barrier(RtComm *c) { return true; }

static void nccl_abort(RtComm *c, int status)
{
	NcclComm *x = (NcclComm *)c;
	if (x->comm)
		x->e->api.CommAbort(x->comm);
	exit(status);
}

static void nccl_close(RtComm *c)
{
	NcclComm *x = (NcclComm *)c;
	if (x->comm)
		x->e->api.CommDestroy(x->comm);
	free(x);
}

const RtCommOps rt_comm_nccl_ops = {
	.name = "nccl",
	.rank = nccl_rank,
	.size = nccl_size,
	.allreduce_sum = nccl_allreduce,
	.allreduce_mean = nccl_allreduce_mean,
	.broadcast = nccl_broadcast,
	.group_begin = nccl_group_begin,
	.group_end = nccl_group_end,
	.barrier = nccl_barrier,
	.abort = nccl_abort,
	.close = nccl_close,
};

RtComm *rt_comm_nccl_open(const char *device_kind, const RtNcclUniqueId *id, int rank, int size, void *stream,
			  char *err, size_t errlen)
{
	Engine *e = engine_of(device_kind);
	if (!rt_nccl_available(device_kind, err, errlen))
		return NULL;
	int major, minor;
	version_of(e, &major, &minor);
	if (e->version < 21000) { /* ncclAvg came with 2.10 */
		snprintf(err, errlen, "%s is NCCL %d.%d: netc's gradient means need ncclAvg, NCCL 2.10 or newer",
			 e->library, major, minor);
		return NULL;
	}
	NcclComm *x = calloc(1, sizeof *x);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	x->c = (RtComm){.ops = &rt_comm_nccl_ops, .rank = rank, .size = size, .timeout_s = rt_comm_default_timeout()};
	x->e = e;
	x->stream = stream;
	ncclResult_t rc = e->api.CommInitRank(&x->comm, size, *id, rank);
	if (rc != RT_NCCL_SUCCESS) {
		message(e, rc, "ncclCommInitRank", err, errlen);
		free(x);
		return NULL;
	}
	return &x->c;
}
