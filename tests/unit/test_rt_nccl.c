/* test_rt_nccl.c: how netc calls NCCL, through a stand-in library with NCCL's ABI
 * (tests/unit/fake_nccl.c, loaded by NETC_NCCL_LIBRARY): the version read, the unique id made
 * and passed by value to ncclCommInitRank, the gradients' mean as an in-place ncclAllReduce of
 * ncclFloat32 with ncclAvg on the stream netc was given, sums with ncclSum, broadcasts of bytes,
 * groups, an error reported with NCCL's message, and the communicator destroyed at close. */
#include <dlfcn.h>

#include "runtime/comm.h"
#include "tests/unit/test_util.h"

/* An NCCL older than 2.10 (no ncclAvg) is refused by version; the engine loads once per process,
 * so in a child of its own. */
static void test_old_nccl(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("FAKE_NCCL_VERSION", "2708", 1);
		RtNcclUniqueId id = {{0}};
		char err[512] = "";
		RtComm *c = rt_comm_nccl_open("cuda", &id, 0, 1, NULL, err, sizeof err);
		_exit(!c && strcmp(err, FAKE_NCCL " is NCCL 2.7: netc's gradient means need ncclAvg, NCCL 2.10 or "
				       "newer") == 0 ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "NCCL 2.7 was not refused by version");
}

int main(void)
{
	tu_start("test_rt_nccl");
	setenv("NETC_NCCL_LIBRARY", FAKE_NCCL, 1);
	test_old_nccl();
	char msg[512], err[512];
	CHECK(rt_nccl_describe("cuda", msg, sizeof msg), "%s", msg);
	CHECK(strcmp(msg, FAKE_NCCL " (version 2.18.9)") == 0, "got '%s'", msg);
	void *lib = dlopen(FAKE_NCCL, RTLD_NOW | RTLD_NOLOAD);
	const char *(*trace)(void) = NULL;
	void *sym = lib ? dlsym(lib, "fake_nccl_trace") : NULL;
	memcpy(&trace, &sym, sizeof sym);
	CHECK(trace != NULL, "the stand-in is not the library netc loaded");
	if (!trace)
		return tu_finish("test_rt_nccl");

	RtNcclUniqueId id;
	CHECK(rt_nccl_unique_id("cuda", &id, err, sizeof err), "%s", err);
	void *stream = (void *)(uintptr_t)0x5000;
	RtComm *c = rt_comm_nccl_open("cuda", &id, 0, 1, stream, err, sizeof err);
	CHECK(c && c->rank == 0 && c->size == 1 && !c->ops->host_buffers, "%s", err);
	if (!c)
		return tu_finish("test_rt_nccl");
	float v[5] = {1, 2, 3, 4, 5};
	CHECK(c->ops->group_begin(c) && rt_comm_allreduce_mean(c, v, 5, "mean") && c->ops->group_end(c));
	CHECK(rt_comm_allreduce_sum(c, v, 2, "sum") && rt_comm_broadcast(c, v, 12, 0, "broadcast"));
	char want[1024];
	snprintf(want, sizeof want,
		 "id;init 1 0 8128;group;allreduce 5 type 7 op 4 in-place 1 stream %p comm 1;end;"
		 "allreduce 2 type 7 op 0 in-place 1 stream %p comm 1;broadcast 12 type 1 root 0 in-place 1;",
		 stream, stream);
	CHECK(strcmp(trace(), want) == 0, "calls:\n  %s\nwant:\n  %s", trace(), want);

	float w[13] = {0};
	CHECK(!rt_comm_allreduce_mean(c, w, 13, "mean"));
	CHECK(strcmp(c->error, "nccl: ncclAllReduce: internal error (fake)") == 0, "got '%s'", c->error);
	rt_comm_close(c);
	CHECK(strstr(trace(), ";destroy 1;") != NULL, "calls: %s", trace());
	return tu_finish("test_rt_nccl");
}
