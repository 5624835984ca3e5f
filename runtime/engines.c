/* engines.c: `netc devices`' lines on the collective engines: whether NCCL, RCCL and MPI load,
 * and their versions. */
#include <stdio.h>

#include "runtime/comm.h"
#include "runtime/rt.h"

void rt_engines_print(FILE *out)
{
	char line[512];
	static const char *const gpu[][2] = {{"nccl", "cuda"}, {"rccl", "hip"}};
	for (int i = 0; i < 2; i++) {
		rt_nccl_describe(gpu[i][1], line, sizeof line);
		fprintf(out, "%s (%s ranks): %s\n", gpu[i][0], gpu[i][1], line);
	}
	rt_comm_mpi_describe(line, sizeof line);
	fprintf(out, "mpi (cpu ranks, mpirun): %s\n", line);
}
