/* fake_nccl.c: a stand-in for libnccl.so.2 with NCCL's ABI (nccl.h's signatures, the id by
 * value), for one rank in host memory: it records each call, so that test_rt_nccl.c can check how
 * netc calls NCCL where there is no GPU. A count of 13 fails with ncclInternalError (3). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	char internal[128];
} ncclUniqueId;

static char trace[4096];
static size_t used;
static int comm_token;

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (used < sizeof trace)
		used += (size_t)vsnprintf(trace + used, sizeof trace - used, fmt, ap);
	va_end(ap);
	if (used < sizeof trace)
		trace[used++] = ';';
	trace[used < sizeof trace ? used : sizeof trace - 1] = 0;
}

const char *fake_nccl_trace(void) { return trace; }

/* FAKE_NCCL_VERSION: another version number (an old NCCL) */
int ncclGetVersion(int *v)
{
	const char *env = getenv("FAKE_NCCL_VERSION");
	*v = env ? atoi(env) : 21809;
	return 0;
}

int ncclGetUniqueId(ncclUniqueId *id)
{
	for (int i = 0; i < 128; i++)
		id->internal[i] = (char)i;
	note("id");
	return 0;
}

int ncclCommInitRank(void **comm, int nranks, ncclUniqueId id, int rank)
{
	int sum = 0;
	for (int i = 0; i < 128; i++)
		sum += (unsigned char)id.internal[i];
	*comm = &comm_token;
	note("init %d %d %d", nranks, rank, sum);
	return 0;
}

int ncclCommDestroy(void *comm)
{
	note("destroy %d", comm == &comm_token);
	return 0;
}

int ncclCommAbort(void *comm)
{
	note("abort");
	return 0;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, void *comm, void *stream)
{
	note("allreduce %zu type %d op %d in-place %d stream %p comm %d", count, type, op, send == recv, stream,
	     comm == &comm_token);
	return count == 13 ? 3 : 0;
}

int ncclBroadcast(const void *send, void *recv, size_t count, int type, int root, void *comm, void *stream)
{
	note("broadcast %zu type %d root %d in-place %d", count, type, root, send == recv);
	return 0;
}

int ncclGroupStart(void)
{
	note("group");
	return 0;
}

int ncclGroupEnd(void)
{
	note("end");
	return 0;
}

const char *ncclGetErrorString(int rc) { return rc == 3 ? "internal error (fake)" : "no error"; }
