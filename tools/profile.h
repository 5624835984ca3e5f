/* profile.h: `netc bench --profile`: the training step kernel by kernel, and its Chrome trace. */
#ifndef NETC_TOOLS_PROFILE_H
#define NETC_TOOLS_PROFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"
#include "runtime/rt.h"

/* Prints the table of r's kernels, slowest first: each kernel's fused group (its members' ops),
 * the compiler's FLOPs and bytes (from g, the compiled graph of a .net file; NULL for a bundle
 * file, which does not record them), the median time, GFLOP/s, GB/s and its share; then the sum
 * of the kernels against the step. trace (NULL: none) also gets the step as a Chrome trace
 * (profile_write_trace). */
bool profile_print(FILE *out, const Bundle *b, const Graph *g, const BenchResult *r, const char *trace);

/* The kernels' medians laid end to end in launch order, as Chrome's Trace Event format (JSON:
 * chrome://tracing and Perfetto open it): one track for the device, one complete event ("ph":
 * "X") per kernel with its group, FLOPs and bytes as args, and one event for the whole profiled
 * step. false with a message when the file cannot be written. */
bool profile_write_trace(const char *path, const Bundle *b, const Graph *g, const BenchResult *r);

#ifndef NETC_RUNTIME_ONLY
#include "codegen/cg.h"
/* A compile as a Chrome trace: the frontend and passes (load: their begin and end on the
 * monotonic clock) on the first track, then on one track per compile thread every unit's
 * lowering and hashing, its compile or cache hit, and every target's link, each named by the
 * unit's first kernel and its target. false with a message when the file cannot be written. */
bool profile_write_compile_trace(const char *path, const char *model, const CgTarget *targets, const CgOutput *outs,
				 int n, const double load[2]);
#endif

#endif
