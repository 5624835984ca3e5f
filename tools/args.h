/* args.h: command-line options shared by the netc commands. */
#ifndef NETC_TOOLS_ARGS_H
#define NETC_TOOLS_ARGS_H

#include <stdbool.h>
#include <stdint.h>

enum {
	OPT_TRAINING = 1 << 0,
	OPT_OUTPUT = 1 << 1,
	OPT_DATA = 1 << 2,
	OPT_STEPS = 1 << 3,
	OPT_EPOCHS = 1 << 4,
	OPT_BATCH = 1 << 5,
	OPT_SEED = 1 << 6,
	OPT_THREADS = 1 << 7,
	OPT_DEVICE = 1 << 8,
	OPT_REPEATS = 1 << 9,
	OPT_WARMUP = 1 << 10,
	OPT_LOG_EVERY = 1 << 11,
	OPT_QUIET = 1 << 12,
	OPT_TARGET = 1 << 13,   /* --target LIST */
	OPT_WAVE = 1 << 14,     /* --wave32, --wave64 */
	OPT_COV = 1 << 15,      /* --code-object-version N */
	OPT_EMIT = 1 << 16,     /* --emit LIST, --dump-dir DIR */
	OPT_NO_MODEL = 1 << 17, /* the command takes no model */
	OPT_PASSES = 1 << 18,   /* --passes, --disable-pass, --print-after, --time-passes, -O0, -O1 */
	OPT_PLAN = 1 << 19,     /* --plan */
	OPT_COMPARE = 1 << 20,  /* --compare LIST, --report FILE.html */
	OPT_SAVE = 1 << 21,     /* --save F, --save-every N */
	OPT_RESUME = 1 << 22,   /* --resume F, --init F: what a run starts from */
	OPT_CHECKPOINT = 1 << 23, /* --checkpoint F, --input F: netc eval's weights and images */
	OPT_LOG = 1 << 24,      /* --log FILE.csv */
	OPT_OVERFIT = 1 << 25,  /* --overfit-batch */
	OPT_ACCUMULATE = 1 << 26, /* --accumulate K */
	OPT_LOG_Y = 1 << 27,    /* --log-y (netc plot) */
	OPT_COLLAPSE = 1 << 28, /* --collapse LIST (netc dot) */
	OPT_MAX_ERRORS = 1 << 29, /* --max-errors N (commands that read .net files) */
	OPT_LAUNCH = 1u << 30,  /* --devices LIST, --gpus N, --ranks N (netc train) */
	OPT_PROFILE = 1u << 31,   /* --profile, --peak-gflops, --peak-gbs (netc bench) */
};
/* past the enum's 32 bits (an enum constant is an int) */
#define OPT_TRACE (UINT64_C(1) << 32) /* --trace FILE.json (netc bench: the step; netc compile: the compile) */
#define OPT_TUNING (UINT64_C(1) << 33) /* --tuning FILE|none (commands that compile a .net file) */
#define OPT_TUNE (UINT64_C(1) << 34)   /* --emit-candidates DIR, --candidates DIR, --max-candidates N (netc tune) */

enum { ARGS_MAX_MODELS = 32 }; /* netc tune --cost-model: the models tuned together */

typedef struct {
	const char *model;
	const char *more_models[ARGS_MAX_MODELS - 1]; /* netc tune: the models after the first */
	int nmore_models;
	const char *output;
	const char *data;
	const char *device;
	const char *target;    /* --target: comma-separated targets; NULL: host */
	const char *emit;      /* --emit: comma-separated kinds of file */
	const char *dump_dir;  /* --dump-dir */
	int wave;              /* --wave32/--wave64: 32 or 64; 0: each chip's default */
	int code_object_version; /* --code-object-version: 4, 5 or 6; 0: the default (5) */
	bool no_matrix_units;  /* --no-matrix-units: GEMMs on the vector units even beside matrix units */
	bool packed_half;      /* --packed-half: half GEMMs on packed FMAs, a k-block's sums in the half type */
	const char *passes;      /* --passes: the pass pipeline, comma-separated */
	const char *disable_pass; /* --disable-pass: passes to take out, comma-separated */
	const char *print_after; /* --print-after: passes (or "all") after which the IR is printed */
	bool time_passes;        /* --time-passes */
	bool no_cache;           /* --no-cache: compile every kernel, store none */
	bool profile;            /* --profile: time each kernel of the step */
	const char *trace;       /* --trace FILE.json: the profiled step as a Chrome trace */
	double peak_gflops, peak_gbs; /* --peak-gflops, --peak-gbs: the roofline, instead of the device's */
	const char *report;      /* --report FILE.html: bench --compare's page */
	int64_t jobs;            /* --jobs N: compiler threads; 0: one per core */
	bool O0;                 /* -O0: no optimization passes, no memory reuse */
	bool data_parallel;      /* --data-parallel: the update apart from backward (PassOptions.split_update) */
	const char *layout;      /* --layout nchw|nhwc|auto; NULL: auto */
	const char *conv_algo;   /* --conv-algo auto|direct|winograd; NULL: auto */
	bool plan;               /* --plan: print the memory plan */
	const char *compare;     /* --compare: pipelines to run side by side ("unfused,fused") */
	const char *save;        /* --save: checkpoint file */
	int64_t save_every;      /* --save-every: steps between checkpoints */
	const char *resume;      /* --resume: checkpoint to continue from */
	const char *init;        /* --init: starting weights (a checkpoint of weights, step 0) */
	const char *checkpoint;  /* --checkpoint: weights for netc eval and netc export */
	const char *input;       /* --input: netc eval's images as .npy */
	const char *log;         /* --log: the training log, CSV */
	bool overfit_batch;      /* --overfit-batch: train on the first batch every step */
	int64_t accumulate;      /* --accumulate: micro-batches per optimizer step; 0: the .net file's */
	int precision;           /* --precision fp32|fp16|bf16: a PrecisionKind; -1: the .net file's */
	bool log_y;              /* --log-y: netc plot's loss axis is logarithmic */
	const char *collapse;    /* --collapse: parts netc dot draws as one box each, comma-separated */
	int64_t max_errors;      /* --max-errors: .net errors printed before stopping; 0: all; -1: the default */
	bool training, quiet, help, seed_given;
	int64_t steps, epochs, batch, repeats, warmup, log_every;
	int64_t threads;
	uint64_t seed;
	const char *devices;     /* --devices: one rank per device, comma-separated (tools/launch.c) */
	int64_t gpus, ranks;     /* --gpus N: the first N GPUs; --ranks N: N CPU ranks */
	const char *tuning;      /* --tuning FILE|none: tiles from FILE; none: not even the shipped ones */
	const char *emit_candidates; /* netc tune --emit-candidates DIR: the candidate bundles, not timed */
	const char *candidates;  /* netc tune --candidates DIR: time the bundles --emit-candidates wrote */
	int64_t max_candidates;  /* netc tune --max-candidates N: candidate indices tried; 0: all */
	bool cost_model;         /* netc tune --cost-model: tiles picked by the static cost model, not timed */
} Args;

/* Parses argv[first..argc) allowing the options in `allowed`. On a usage error prints it and
 * returns false. */
bool args_parse(int argc, char **argv, int first, uint64_t allowed, const char *command, Args *a);

#endif
