/* model.h: what the commands share: a .net file or a compiled bundle, loaded and compiled. */
#ifndef NETC_TOOLS_MODEL_H
#define NETC_TOOLS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/bundle.h"

typedef struct Graph Graph;
struct PassOptions;

/* What to compile a .net file for, and which files to write besides the bundle. */
typedef struct {
	const char *targets;      /* comma-separated targets and aliases; NULL or "": the host */
	int wave;                 /* 32 or 64 for every AMD target that runs both; 0: each chip's default */
	int code_object_version;  /* AMD: 4, 5 or 6; 0: 5 */
	const char *emit;         /* comma-separated of hsaco,ptx,ll,asm,so; NULL: all the targets make */
	const char *dump_dir;     /* where emitted files go; NULL: none are written */
	bool quiet;               /* no line per written file */
} ModelTargets;

/* Whether path is a bundle (a compiled artifact rather than a .net file): it starts with the
 * bundle magic, or is a truncated bundle (4 to 7 bytes of it and nothing after). */
bool model_is_bundle(const char *path);

/* The pass options (passes/passes.h) the loads below use from now on; NULL: the default
 * pipeline. The command line sets them once from its options; o must outlive the loads. */
void model_set_pass_options(const struct PassOptions *o);

/* --accumulate K for the loads below: the micro-batches per optimizer step, in place of the .net
 * file's `accumulate`; 0 keeps the file's. A bundle file must have been compiled with K. */
void model_set_accumulate(int64_t k);

/* --precision for the loads below: a PrecisionKind in place of the .net file's `precision`; -1
 * keeps the file's. A bundle file must have been compiled with it. */
void model_set_precision(int precision);

/* A .net file through the frontend and the pass pipeline (training graph, planned memory).
 * training false stops at the forward graph. Prints errors and returns NULL on failure. */
Graph *model_load_graph(const char *path, int64_t batch, bool training);

/* A bundle from either a .net file (compiled now for t's targets; t NULL: the host) or a bundle
 * file (t must name no targets). batch > 0 must match a bundle file's. Prints errors and returns
 * false on failure. graph_out, if not NULL, gets the graph of a .net file (NULL for a bundle
 * file); the caller frees it. */
bool model_compile(const char *path, int64_t batch, const ModelTargets *t, Bundle *b, Graph **graph_out);
/* model_compile for the host. */
bool model_load_bundle(const char *path, int64_t batch, Bundle *b, Graph **graph_out);

#endif
