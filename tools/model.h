/* model.h: what the commands share: a .net file or a compiled bundle, loaded and compiled. */
#ifndef NETC_TOOLS_MODEL_H
#define NETC_TOOLS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/tuning.h"
#include "passes/passes.h"
#include "runtime/bundle.h"
#include "runtime/rt.h"

/* What to compile a .net file for, and which files to write besides the bundle. */
typedef struct {
	const char *targets;      /* comma-separated targets and aliases; NULL or "": the host */
	int wave;                 /* 32 or 64 for every AMD target that runs both; 0: each chip's default */
	int code_object_version;  /* AMD: 4, 5 or 6; 0: 5 */
	bool no_matrix_units;     /* every target's GEMMs on its vector units (CgTargetOptions) */
	bool packed_half;         /* half GEMMs on packed FMAs where a target has them (CgTargetOptions) */
	const char *emit;         /* comma-separated of hsaco,ptx,ll,asm,so; NULL: all the targets make */
	const char *dump_dir;     /* where emitted files go; NULL: none are written */
	bool quiet;               /* no line per written file */
	bool no_cache;            /* --no-cache: the kernel cache is neither read nor written */
	int jobs;                 /* compiler threads; 0: one per core */
	bool time;                /* --time-passes: each target's compile times on stderr */
	const char *trace;        /* netc compile --trace FILE.json: the compile as a Chrome trace */
	const char *tuning;       /* --tuning FILE: GEMM tiles from FILE before the shipped tables; "none":
	                           * the heuristics only; NULL: the shipped tables (docs/tuning.md) */
	struct ModelGemms *gemms; /* not NULL: gets every GEMM kernel's tiles and why */
} ModelTargets;

/* The tiles each GEMM kernel of a compile took (netc info, netc tune). */
typedef struct {
	char target[32];
	char kernel[64];
	CgTileNote tiles;
} ModelGemm;

typedef struct ModelGemms {
	ModelGemm *k;
	int n;
} ModelGemms;

/* Whether path is a bundle (a compiled artifact rather than a .net file): it starts with the
 * bundle magic, or is a truncated bundle (4 to 7 bytes of it and nothing after). */
bool model_is_bundle(const char *path);

/* Everything a command asks of the compiler, built once from the command line and passed to
 * every load: no setting lives in a file-level variable. All zero but precision = -1 and
 * max_errors = -1 (COMPILE_OPTIONS_DEFAULT): the .net file's settings, the default pipeline, the
 * host. */
typedef struct {
	PassOptions passes;   /* the pipeline and its options, the layout (passes.layout) included */
	int64_t accumulate;   /* --accumulate K: micro-batches per optimizer step in place of the file's
	                       * `accumulate`; 0 keeps the file's. A bundle file must have been compiled with K */
	int precision;        /* --precision: a PrecisionKind in place of the file's; -1 keeps the file's.
	                       * A bundle file must have been compiled with it */
	int max_errors;       /* --max-errors: errors of a .net file printed at most; -1: the default */
	ModelTargets targets; /* what to compile for and which files to write */
} CompileOptions;

#define COMPILE_OPTIONS_DEFAULT ((CompileOptions){.precision = -1, .max_errors = -1})

/* Whether path names an ONNX model (it ends in .onnx), which commands import as .net text. */
bool model_is_onnx(const char *path);

/* The weights of an ONNX model's initializers under netc's names (onnx/onnx.h), which a run of
 * the model starts from; false after printing an error. */
bool model_onnx_weights(const char *path, RtTensors *w);

/* A .net file (or an ONNX model, imported as .net text) through the frontend and the pass pipeline (training graph, planned memory).
 * training false stops at the forward graph. Prints errors and returns NULL on failure. */
Graph *model_load_graph(const char *path, int64_t batch, bool training, const CompileOptions *o);

/* A bundle from either a .net file (compiled now for o's targets) or a bundle file (o must name
 * no targets, and its accumulate and precision, where set, must be the bundle's). batch > 0 must match a bundle file's. Prints errors and returns
 * false on failure. graph_out, if not NULL, gets the graph of a .net file (NULL for a bundle
 * file); the caller frees it. */
bool model_compile(const char *path, int64_t batch, const CompileOptions *o, Bundle *b, Graph **graph_out);

#endif
