/* profile.h: `netc bench --profile`: the training step kernel by kernel, and its Chrome trace. */
#ifndef NETC_TOOLS_PROFILE_H
#define NETC_TOOLS_PROFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"
#include "passes/passes.h"
#include "runtime/roofline.h"
#include "runtime/rt.h"

/* What the compiler counts of one kernel: FLOPs and bytes of its group (known: the bundle has
 * its group), and its members' ops. A group that several kernels compute (Winograd's, split-K's)
 * is counted at its first. */
typedef struct {
	bool known;
	double flops, bytes;
	char members[37];   /* as much of the list as the table's column holds */
} KernelCounts;

/* r's kernels counted from b's group counts (runtime/bundle.h); malloc'd, r->nkernels entries. */
KernelCounts *profile_counts(const Bundle *b, const BenchResult *r);

/* The roofline of the device r ran on: a GPU's peaks from the target table as b's code object
 * for it carries them, the CPU's measured once and cached (runtime/roofline.h); peak_gflops and
 * peak_gbs (0: not given) replace them. Zeros where none is known (a GPU missing from the table). */
void profile_roofline(const Bundle *b, const BenchResult *r, double peak_gflops, double peak_gbs, RtRoofline *roof);

/* Prints the table of r's kernels, slowest first: each kernel's fused group (its members' ops),
 * the compiler's FLOPs and bytes (the bundle's group counts), the median time, GFLOP/s, GB/s, its share of roof (the
 * least time its FLOPs and bytes take at the peaks over its time) and of the kernels' sum; then
 * the sum of the kernels against the step. trace (NULL: none) also gets the step as a Chrome
 * trace (profile_write_trace). */
bool profile_print(FILE *out, const Bundle *b, const BenchResult *r, const RtRoofline *roof, const char *trace);

/* The kernels' medians laid end to end in launch order, as Chrome's Trace Event format (JSON:
 * chrome://tracing and Perfetto open it): one track for the device, one complete event ("ph":
 * "X") per kernel with its group, FLOPs, bytes and roofline share as args, and one event for the whole profiled
 * step. false with a message when the file cannot be written. */
bool profile_write_trace(const char *path, const Bundle *b, const BenchResult *r, const RtRoofline *roof);

/* Where a compile's time went before the code generator: the frontend and the passes, begin and
 * end on the monotonic clock (s), and each pass within (NULL: not recorded). */
typedef struct {
	double begin, end;
	const PassSpans *passes;
} CompileFront;

#ifndef NETC_RUNTIME_ONLY
#include "codegen/cg.h"
/* A compile as a Chrome trace: on the first track the frontend (parsing and building the graph,
 * up to the first pass) and each pass as a slice of its own, then on one track per compile
 * thread every unit's lowering and hashing, its compile or cache hit, and every target's link,
 * each named by the unit's first kernel and its target. false with a message when the file
 * cannot be written. */
bool profile_write_compile_trace(const char *path, const char *model, const CgTarget *targets, const CgOutput *outs,
				 int n, const CompileFront *front);
#endif

#endif
