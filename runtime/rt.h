/* rt.h: the runtime. It knows only the bundle format: it links none of LLVM, flex or bison. */
#ifndef NETC_RT_H
#define NETC_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/bundle.h"

/* The values of PROG_* and INIT_* in ir/ir.h, which the runtime may not include: keep them equal. */
enum { RT_PROG_TRAIN = 1, RT_PROG_EVAL = 2 };
enum { RT_INIT_ZERO = 0, RT_INIT_UNIFORM = 1 };

/* ---- sessions: a bundle loaded on a device with its arena (runtime/session.c) ---- */
typedef struct Session Session;

/* device: "auto" or "cpu" for now. threads: 0 = all cores. */
Session *rt_open(const Bundle *b, const char *device, int threads, char *err, size_t errlen);
void rt_close(Session *s);
/* Parameters as PyTorch initializes them by default (uniform within each buffer's bound) from
 * seed; optimizer state zero. */
void rt_init_params(Session *s, uint64_t seed);
/* Runs one program (PROG_TRAIN or PROG_EVAL from ir.h) over what the buffers hold. */
void rt_run(Session *s, int program);
/* Host view of a buffer (on the CPU, the arena itself). */
void *rt_buffer(Session *s, int buf);
const Bundle *rt_bundle(const Session *s);
const char *rt_device_name(const Session *s);
/* For the run's log: "cpu (8 threads)". */
const char *rt_device_info(const Session *s);
/* Copies bytes (at most the buffer's size) into or out of a buffer, on any device. */
void rt_write(Session *s, int buf, const void *src, size_t bytes);
void rt_read(Session *s, int buf, void *dst, size_t bytes);

/* ---- data sets (runtime/data_*.c) ---- */
typedef struct {
	int64_t n;        /* examples */
	int c, h, w;      /* image shape */
	float *images;    /* n*c*h*w, normalized as the model's original script does */
	int32_t *labels;  /* n */
	int classes;
	char source[256]; /* where it came from, for the run's log */
} Dataset;

/* MNIST IDX files from dir (plain or .gz); dir NULL: the built-in generator writes an MNIST-like
 * set in the same IDX format in memory and the same loader reads it. Errors name the file and
 * what was expected. */
bool rt_load_mnist(const char *dir, uint64_t seed, Dataset *train, Dataset *test, char *err, size_t errlen);
void rt_dataset_free(Dataset *d);

/* ---- training, evaluation, benchmarking (runtime/train.c) ---- */
typedef struct {
	const char *data_dir;  /* NULL: built-in data */
	const char *device;    /* "auto" */
	int threads;           /* 0: all cores */
	int64_t steps;         /* > 0: stop after this many steps */
	int64_t epochs;        /* > 0: overrides the bundle's */
	uint64_t seed;
	int64_t log_every;     /* > 0: overrides the bundle's */
	bool quiet;
} TrainOptions;

/* Trains and prints progress lines and a summary; returns 0, or 1 after printing a user error. */
int rt_train(const Bundle *b, const TrainOptions *o);

typedef struct {
	const char *device;
	int threads;
	int64_t warmup;    /* steps before timing */
	int64_t steps;     /* timed steps per repeat */
	int repeats;
	uint64_t seed;
} BenchOptions;

typedef struct {
	double ms_per_step;      /* median over repeats */
	double examples_per_s;
	double ms_min, ms_max;
} BenchResult;

int rt_bench(const Bundle *b, const BenchOptions *o, BenchResult *r);

#endif
