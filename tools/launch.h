/* launch.h: `netc train` on one rank per device of this machine (tools/launch.c). */
#ifndef NETC_TOOLS_LAUNCH_H
#define NETC_TOOLS_LAUNCH_H

#include <stdbool.h>

#include "tools/args.h"

/* Whether the command line asks for ranks: --devices, --gpus or --ranks. */
bool launch_wanted(const Args *a);
/* Starts them, each running argv with --device D in place of the list, and returns the run's exit
 * status: CPU ranks exec mpirun (no return on success), GPU ranks are children waited for. */
int launch_ranks(int argc, char **argv, const Args *a);

#endif
