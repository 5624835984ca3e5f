/* test_rt_comm.c: the communicators' contracts without a second machine: NCCL's ABI as netc
 * declares it (the unique id's size, the enum values of nccl.h), one clear line when NCCL or MPI
 * is missing, the single rank's identities, the watchdog ending a rank whose collective hangs,
 * and rank 0's TCP rendezvous on loopback. */
#include <pthread.h>
#include <signal.h>

#include "runtime/comm.h"
#include "runtime/rendezvous.h"
#include "runtime/rt.h"
#include "tests/unit/test_util.h"

/* nccl.h (NCCL 2.x, the same in RCCL): ncclUniqueId is {char internal[NCCL_UNIQUE_ID_BYTES]}
 * with NCCL_UNIQUE_ID_BYTES 128, passed by value; ncclDataType_t ncclUint8 = 1, ncclFloat32 =
 * ncclFloat = 7; ncclRedOp_t ncclSum = 0, ncclAvg = 4; ncclResult_t ncclSuccess = 0,
 * ncclInProgress = 7. */
static void test_nccl_abi(void)
{
	CHECK(sizeof(RtNcclUniqueId) == 128 && RT_NCCL_UNIQUE_ID_BYTES == 128, "ncclUniqueId is %zu bytes",
	      sizeof(RtNcclUniqueId));
	CHECK(_Alignof(RtNcclUniqueId) == 1, "ncclUniqueId is a char array: alignment %zu", _Alignof(RtNcclUniqueId));
	CHECK(RT_NCCL_UINT8 == 1 && RT_NCCL_FLOAT32 == 7);
	CHECK(RT_NCCL_SUM == 0 && RT_NCCL_AVG == 4);
	CHECK(RT_NCCL_SUCCESS == 0 && RT_NCCL_IN_PROGRESS == 7);
	CHECK(strcmp(rt_nccl_library("cuda"), "libnccl.so.2") == 0 && strcmp(rt_nccl_library("hip"), "librccl.so.1") == 0);
	CHECK(rt_nccl_library("cpu") == NULL);
}

/* The engines load once per process, so the missing ones are asked for first. */
static void test_missing_libraries(void)
{
	char why[512] = "", err[512] = "";
	setenv("NETC_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
	CHECK(!rt_nccl_available("cuda", why, sizeof why));
	CHECK(strcmp(why, "/nonexistent/libnccl.so.2 not found") == 0, "got '%s'", why);
	RtNcclUniqueId id;
	CHECK(!rt_nccl_unique_id("cuda", &id, err, sizeof err) && strcmp(err, why) == 0, "got '%s'", err);
	CHECK(!rt_comm_nccl_open("cuda", &id, 0, 1, NULL, err, sizeof err) && strcmp(err, why) == 0, "got '%s'", err);
	CHECK(!strchr(why, '\n'), "one line");
	/* RCCL is named by its own variable: NCCL's does not load for HIP ranks */
	unsetenv("NETC_RCCL_LIBRARY");
	CHECK(!rt_nccl_available("hip", why, sizeof why) && strstr(why, "librccl.so.1") && !strstr(why, "libnccl"),
	      "got '%s'", why);

	setenv("NETC_MPI_LIBRARY", "/nonexistent/libmpi.so.40", 1);
	CHECK(!rt_comm_mpi_open(err, sizeof err));
	CHECK(strcmp(err, "mpi: /nonexistent/libmpi.so.40 not found (netc's MPI is Open MPI: apt-get install "
		      "openmpi-bin libopenmpi-dev)") == 0, "got '%s'", err);
}

static void test_single(void)
{
	RtComm *c = rt_comm_single();
	float v[5];
	for (int i = 0; i < 5; i++)
		v[i] = (float)tu_uniform(-2, 2);
	float w[5];
	memcpy(w, v, sizeof v);
	CHECK(c->ops->rank(c) == 0 && c->ops->size(c) == 1);
	CHECK(rt_comm_allreduce_sum(c, v, 5, "sum") && rt_comm_allreduce_mean(c, v, 5, "mean") &&
	      rt_comm_broadcast(c, v, sizeof v, 0, "broadcast") && rt_comm_barrier(c, "barrier"));
	CHECK(memcmp(v, w, sizeof v) == 0, "one rank's collectives change nothing");
	rt_comm_close(c);
}

/* A backend whose all-reduce never returns: the other rank is gone. */
static bool hang(RtComm *c, float *buf, size_t n)
{
	sleep(30);
	return true;
}

static void test_watchdog(void)
{
	int fd[2];
	CHECK(pipe(fd) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		RtCommOps ops = {.name = "hung", .allreduce_sum = hang};
		RtComm c = {.ops = &ops, .rank = 1, .size = 2, .timeout_s = 0.2};
		float x = 1;
		rt_comm_allreduce_sum(&c, &x, 1, "the all-reduce of gradient 'fc1.weight'");
		_exit(0); /* not reached: the watchdog ends the process */
	}
	close(fd[1]);
	char out[512] = "";
	ssize_t n = 0, k;
	while ((k = read(fd[0], out + n, sizeof out - 1 - (size_t)n)) > 0)
		n += k;
	close(fd[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
	CHECK(strstr(out, "netc: rank 1: the all-reduce of gradient 'fc1.weight' waited 0.2 s for the other ranks: "
			  "a rank died or hangs") != NULL, "got '%s'", out);
}

typedef struct {
	RtRendezvous r;
	unsigned char bytes[RT_NCCL_UNIQUE_ID_BYTES];
	bool ok;
	char err[256];
} Party;

static void *party(void *arg)
{
	Party *p = arg;
	p->ok = rt_rendezvous_share(&p->r, p->bytes, sizeof p->bytes, p->err, sizeof p->err);
	return NULL;
}

static void test_rendezvous(void)
{
	enum { RANKS = 3 };
	int port = 20000 + (int)tu_uniform(0, 20000);
	Party p[RANKS];
	pthread_t t[RANKS];
	memset(p, 0, sizeof p);
	for (size_t i = 0; i < sizeof p[0].bytes; i++)
		p[0].bytes[i] = (unsigned char)tu_uniform(0, 256);
	/* the others first: they retry until rank 0 listens */
	for (int r = RANKS - 1; r >= 0; r--) {
		p[r].r = (RtRendezvous){.addr = "127.0.0.1", .port = port, .rank = r, .size = RANKS, .timeout_s = 20};
		pthread_create(&t[r], NULL, party, &p[r]);
	}
	for (int r = 0; r < RANKS; r++)
		pthread_join(t[r], NULL);
	for (int r = 0; r < RANKS; r++) {
		CHECK(p[r].ok, "rank %d on port %d: %s", r, port, p[r].err);
		CHECK(memcmp(p[r].bytes, p[0].bytes, sizeof p[0].bytes) == 0, "rank %d got other bytes", r);
	}

	/* no rank 0: a clear error within the timeout */
	Party lone = {.r = {.addr = "127.0.0.1", .port = port + 1, .rank = 2, .size = 3, .timeout_s = 0.3}};
	party(&lone);
	CHECK(!lone.ok && strstr(lone.err, "rank 2 found no rank 0 at 127.0.0.1:") &&
	      strstr(lone.err, "(MASTER_ADDR, MASTER_PORT)"), "got '%s'", lone.err);
}

/* torchrun's and mpirun's variables; a bad value is named. */
static void test_ranks_from_env(void)
{
	char err[256];
	RtRanks r;
	unsetenv("OMPI_COMM_WORLD_SIZE");
	unsetenv("WORLD_SIZE");
	CHECK(rt_ranks_from_env(&r, err, sizeof err) && r.launch == RT_LAUNCH_NONE && r.size == 1);
	setenv("WORLD_SIZE", "4", 1);
	setenv("RANK", "2", 1);
	setenv("LOCAL_RANK", "0", 1);
	setenv("MASTER_ADDR", "node0", 1);
	setenv("MASTER_PORT", "29400", 1);
	CHECK(rt_ranks_from_env(&r, err, sizeof err), "%s", err);
	CHECK(r.launch == RT_LAUNCH_TORCHRUN && r.size == 4 && r.rank == 2 && r.local_rank == 0 && r.local_size == 1 &&
	      strcmp(r.master_addr, "node0") == 0 && r.master_port == 29400);
	setenv("LOCAL_WORLD_SIZE", "2", 1);
	CHECK(rt_ranks_from_env(&r, err, sizeof err) && r.local_size == 2, "%s", err);
	char dev[32];
	CHECK(rt_rank_device(NULL, "cuda", &r, dev, sizeof dev) && strcmp(dev, "cuda:0") == 0, "%s", dev);
	CHECK(!rt_rank_device(NULL, "cpu", &r, dev, sizeof dev) && strcmp(dev, "cpu") == 0, "%s", dev);
	setenv("RANK", "4", 1);
	CHECK(!rt_ranks_from_env(&r, err, sizeof err) && strcmp(err, "RANK=4: expected an integer from 0 to 3") == 0,
	      "got '%s'", err);
	unsetenv("WORLD_SIZE");
	setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
	CHECK(rt_ranks_from_env(&r, err, sizeof err) && r.launch == RT_LAUNCH_MPI && r.rank == 1 && r.local_rank == 1 &&
	      r.local_size == 2);
	unsetenv("OMPI_COMM_WORLD_SIZE");
}

int main(void)
{
	tu_start("test_rt_comm");
	test_nccl_abi();
	test_missing_libraries();
	test_single();
	test_watchdog();
	test_rendezvous();
	test_ranks_from_env();
	return tu_finish("test_rt_comm");
}
