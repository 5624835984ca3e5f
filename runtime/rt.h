/* rt.h: the runtime. It knows only the bundle format: it links none of LLVM, flex or bison. */
#ifndef NETC_RT_H
#define NETC_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/bundle.h"

/* The values of PROG_* and INIT_* in ir/ir.h, which the runtime may not include: keep them equal. */
enum { RT_PROG_TRAIN = 1, RT_PROG_EVAL = 2, RT_PROG_ACCUM = 4 };
enum { RT_INIT_ZERO = 0, RT_INIT_UNIFORM = 1, RT_INIT_ONE = 2 };
/* RNG_WORDS: the dropout key is {seed, optimizer step, first row of this batch in the step's
 * global batch} (ir/philox.h) */
enum { RT_RNG_WORDS = 3 };

/* ---- sessions: a bundle loaded on a device with its arena (runtime/session.c) ---- */
typedef struct Session Session;

/* device: "auto" (or NULL: the first GPU the bundle has code for, else the CPU), "cpu", "cuda",
 * "cuda:N", "hip", "hip:N". threads: CPU threads, 0 = all cores. A device that is not there, a
 * missing driver, a GPU the bundle has no code for, a failed load or allocation: NULL with one
 * line in err. */
Session *rt_open(const Bundle *b, const char *device, int threads, char *err, size_t errlen);
void rt_close(Session *s);
/* Parameters as PyTorch initializes them by default (uniform within each buffer's bound) from
 * seed; buffers marked INIT_ONE (batch norm's weight and running variance) ones; the rest of the
 * optimizer state zero. */
void rt_init_params(Session *s, uint64_t seed);
/* Queues one program (PROG_TRAIN, PROG_EVAL or PROG_ACCUM from ir.h) over what the buffers hold.
 * On the CPU it returns when the work is done; on a GPU before, and rt_read or rt_sync wait for
 * it. False once the device has failed (rt_error says how). */
bool rt_run(Session *s, int program);
/* Waits for the queued work; false once the device has failed. */
bool rt_sync(Session *s);
/* Profiling: while seconds is not NULL, every run of the training program launches its kernels
 * one at a time and adds each one's time to seconds[i] (i: its place in the program,
 * rt_train_kernels): on a GPU from events between launches queued back to back, on the CPU its
 * wall time launched alone and waited for (runtime/launch_timing.h); NULL ends it. */
void rt_profile(Session *s, double *seconds);
/* What timed the kernels of a profiled run (runtime/launch_timing.h). */
typedef enum {
	RT_TIMED_BY_HOST,   /* launched alone and waited for, the host's clock */
	RT_TIMED_BY_EVENTS, /* the device's events between launches queued back to back */
	RT_TIMED_BY_GRAPHS, /* the device's events between graphs of each kernel's repeated launches */
} RtKernelTiming;
/* What timed the last profiled run. */
RtKernelTiming rt_profile_timing(const Session *s);
/* The training program's launches on this session's device. */
const BundleKernel *rt_train_kernels(const Session *s, int *n);
/* The device's first failure ("cuda:0: a kernel failed: ..."), NULL while there is none. GPU
 * errors surface late: check it after reading results. */
const char *rt_error(const Session *s);
/* Host view of a buffer: on the CPU the arena itself; NULL on a GPU (use rt_read/rt_write). */
void *rt_buffer(Session *s, int buf);
const Bundle *rt_bundle(const Session *s);
const char *rt_device_name(const Session *s); /* "cpu", "cuda", "hip" */
/* For the run's log: "cpu (8 threads)", "cuda:0 NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB, ...)". */
const char *rt_device_info(const Session *s);
/* Why this device, "" when there is nothing to say: "auto: no GPU the bundle has code for:
 * cuda: libcuda.so.1 not found; hip: no AMD GPU found". */
const char *rt_device_note(const Session *s);
/* The device's architecture ("host", "sm_90", "gfx90a") and model ("NVIDIA H100 80GB HBM3", the
 * CPU's model name). */
const char *rt_device_arch(const Session *s);
const char *rt_device_model(const Session *s);
/* Whether the training program runs as a captured graph (known after its first run). */
bool rt_graphs(const Session *s);
/* Copies bytes (at most the buffer's size) into or out of a buffer, on any device. rt_read waits
 * for the work queued before it. */
void rt_write(Session *s, int buf, const void *src, size_t bytes);
void rt_read(Session *s, int buf, void *dst, size_t bytes);

/* ---- data-parallel sessions (runtime/session.c, runtime/comm.h) ---- */
typedef struct RtComm RtComm;
/* From now on the training program replaces each gradient by its mean over c's ranks between
 * backward and the update (the accumulation program stays local). False with one line in err
 * when the bundle's plan fused the two, or c's buffers are not this device's memory. c must
 * outlive s, or be detached first: c NULL makes the program a plain one again. */
bool rt_set_comm(Session *s, RtComm *c, char *err, size_t errlen);
/* v[0..n) (n <= 16, host memory) summed over the ranks of the session's communicator, after the
 * work queued before it; nothing without one. A failed collective ends every rank. */
void rt_ranks_sum(Session *s, float *v, int n);
/* The stream (CUstream, hipStream_t) for NCCL to queue on, NULL on the CPU: the device's second
 * stream where it has one (the gradients' all-reduce then overlaps backward), unless
 * NETC_DP_OVERLAP=0, else its one stream. Call it before rt_set_comm. */
void *rt_comm_stream(Session *s);

/* ---- ranks (runtime/ranks.c) ---- */
typedef enum { RT_LAUNCH_NONE, RT_LAUNCH_MPI, RT_LAUNCH_TORCHRUN } RtLaunch;
typedef struct {
	RtLaunch launch;    /* who started the ranks: nobody (one process), mpirun, a torchrun-style launcher */
	int rank, size, local_rank;
	int local_size;     /* ranks on this machine (OMPI_COMM_WORLD_LOCAL_SIZE, LOCAL_WORLD_SIZE); 1 unknown */
	char master_addr[256]; /* torchrun: rank 0's host and port, where it hands out NCCL's unique id */
	int master_port;
} RtRanks;
/* The ranks this process belongs to, from Open MPI's variables (OMPI_COMM_WORLD_SIZE, _RANK,
 * _LOCAL_RANK) or torchrun's (WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT);
 * RT_LAUNCH_NONE and size 1 without either. False with one line in err for a bad value. */
bool rt_ranks_from_env(RtRanks *r, char *err, size_t errlen);
/* The device of this rank: a GPU kind without an index ("cuda", "hip"), or auto where it takes a
 * GPU for b (b may be NULL), becomes the local rank's GPU ("cuda:1"); true when it did. Anything
 * else is copied. */
bool rt_rank_device(const Bundle *b, const char *spec, const RtRanks *r, char *out, size_t len);
/* The communicator of the ranks for s's device: MPI for the CPU (under mpirun), NCCL or RCCL for
 * GPUs (their unique id from rank 0 by MPI or over TCP). NULL with one line in err. */
RtComm *rt_ranks_connect(const RtRanks *r, Session *s, char *err, size_t errlen);
/* `netc devices`: whether NCCL, RCCL and MPI are there, with their versions, one line each
 * (runtime/engines.c). */
void rt_engines_print(FILE *out);
/* Closes it, and the MPI that carried NCCL's id. */
void rt_ranks_close(RtComm *c);

/* ---- devices (runtime/devices.c) ---- */
/* Whether spec names a device netc knows (auto, cpu, cuda, cuda:N, hip, hip:N), whether or not it
 * is there; false with one line in err. The command line checks --device with it up front. */
bool rt_device_spec_valid(const char *spec, char *err, size_t errlen);
/* Devices of kind ("cpu", "cuda", "hip"): 0 or more, or -1 when the backend cannot look; why gets
 * one line whenever there is none. */
int rt_device_count(const char *kind, char *why, size_t len);
/* `netc devices`: every GPU found (name, architecture, memory, units, wave size), a line for
 * each backend that has none saying why, and the CPU. Returns the number of devices listed. */
int rt_devices_print(FILE *out);

/* ---- data sets (runtime/data_*.c) ---- */
/* One input's examples from a .npy array: size values per example, as doubles (exact for every
 * dtype an input may have). */
typedef struct {
	int64_t size;
	double *values;
} RtArray;

typedef struct Dataset Dataset;
struct Dataset {
	int64_t n;        /* examples */
	int c, h, w;      /* image shape */
	float *images;    /* n*c*h*w, normalized as the model's original script does */
	int32_t *labels;  /* n */
	int classes;
	char source[256]; /* where it came from, for the run's log */
	/* Sets kept as bytes (CIFAR-10) or made on demand (synthetic): example() writes example i as
	 * the model's input, augmented from key when train, and returns its label. NULL: images and
	 * labels hold every example as it is. */
	int32_t (*example)(const Dataset *d, int64_t i, bool train, uint64_t key, float *dst);
	uint8_t *bytes;    /* CIFAR-10: n records of a label byte and 3x32x32 pixel bytes */
	bool crop;         /* CIFAR-10: random crops, flips and per-image standardization */
	uint64_t seed;     /* synthetic: the generator's */
	bool no_holdout;   /* synthetic: there is no held-out set to evaluate on */
	int box_h, box_w;  /* image folders: the decoded images' size, from which crops are taken */
	struct RtFolderFiles *files; /* image folders: the files, decoded as batches need them */
	void (*free_files)(struct RtFolderFiles *files); /* how rt_dataset_free frees them */
	bool decode_ahead; /* example() is slow (it decodes): training makes batches ahead on worker
	                    * threads (runtime/prefetch.h) */
	/* Arrays (.npy): one per model input, in RtNpyInputs' order (the bundle's input list), each
	 * of size values per example; NULL for the other sets, which feed the image and the label. */
	RtArray *arrays;
	int narrays;
};

/* MNIST IDX files from dir (plain or .gz); dir NULL: the built-in generator writes an MNIST-like
 * set in the same IDX format in memory and the same loader reads it. Errors name the file and
 * what was expected. */
bool rt_load_mnist(const char *dir, uint64_t seed, Dataset *train, Dataset *test, char *err, size_t errlen);
void rt_dataset_free(Dataset *d);

/* CIFAR-10 binary files from dir (data_batch_1.bin ... data_batch_5.bin, test_batch.bin); dir
 * NULL: the built-in generator writes a CIFAR-like set in the same records in memory and the same
 * reader parses it. The images stay bytes; rt_dataset_example makes each the model's h x w input:
 * 32x32 whole (x/255, then mean and std 0.5), smaller sides random crops and flips in training,
 * the central crop in evaluation, standardized per image. Errors name the file. */
bool rt_load_cifar(const char *dir, uint64_t seed, int h, int w, Dataset *train, Dataset *test, char *err,
		   size_t errlen);
/* ImageNet-shaped synthetic batches of c x h x w images and labels in [0, classes), made per
 * example from seed (no arrays); the set has no held-out part (test->n is 0). */
bool rt_load_synthetic(uint64_t seed, int c, int h, int w, int classes, Dataset *train, Dataset *test);
/* An image folder (runtime/data_folder.c): DIR/train and DIR/val (or DIR/test), or DIR alone,
 * each with one folder of JPEG and PNG images per class, decoded for a model input of c (1 or 3)
 * x h x w when a batch needs them. A file that does not decode gets a warning on stderr and its
 * place goes to the next file that does; errors name the folder. */
bool rt_load_folder(const char *dir, int c, int h, int w, Dataset *train, Dataset *test, char *err, size_t errlen);
/* A model input a .npy data set binds an array to: its name, dtype and per-example shape (its
 * shape without the batch). */
typedef struct {
	const char *name;
	DType dtype;
	int rank;
	const int64_t *dim;
} RtNpyInput;
/* What a .npy data set binds to: every data input of the model, and which of them (-1: none)
 * holds class labels in [0, classes). */
typedef struct {
	const RtNpyInput *input;
	int n;
	int label;
	int64_t classes;
} RtNpyInputs;
/* DIR/train/NAME.npy and DIR/val/NAME.npy (or DIR/test), or DIR/NAME.npy alone, one array per
 * input named after it (runtime/data_npy.c). Errors name the file. */
bool rt_load_npy(const char *dir, const RtNpyInputs *in, Dataset *train, Dataset *test, char *err, size_t errlen);
/* Example i of d as the model's input in dst (c*h*w floats), augmented from key when train;
 * returns its label. */
int32_t rt_dataset_example(const Dataset *d, int64_t i, bool train, uint64_t key, float *dst);

/* ---- named tensors outside a session: weights made elsewhere (an ONNX file's initializers);
 * runtime/checkpoint.c reads and writes them as safetensors ---- */
typedef struct {
	char name[128];
	int rank;
	int64_t dim[BUNDLE_MAX_DIMS];
	float *data; /* the elements in the public order (OIHW), owned by the set */
} RtTensor;

typedef struct {
	RtTensor *t;
	int n, cap;
} RtTensors;

/* A new zeroed tensor at the end of set (NULL when out of memory or numel above 2^40). */
RtTensor *rt_tensors_add(RtTensors *set, const char *name, int rank, const int64_t *dim);
const RtTensor *rt_tensors_find(const RtTensors *set, const char *name);
int64_t rt_tensor_numel(const RtTensor *t);
/* "[d0, d1, ...]" into buf (len bytes); returns buf. */
const char *rt_shape_text(int rank, const int64_t *dim, char *buf, size_t len);
void rt_tensors_free(RtTensors *set);
/* The set as a safetensors checkpoint of model at step 0 (written as rt_checkpoint_save does). */
bool rt_tensors_save(const RtTensors *set, const char *model, const char *path, char *err, size_t errlen);
/* Every F32 tensor of a safetensors file into *set (which it starts empty), checked as
 * rt_checkpoint_load checks them. */
bool rt_tensors_read(const char *path, RtTensors *set, char *err, size_t errlen);
/* Starting weights (--init): every parameter of the bundle from set, with its shape, and the
 * non-optimizer state set has (batch norm's running statistics); the rest keeps its init. Names
 * the model lacks are listed in a warning; source names the set in messages. */
bool rt_init_from(Session *s, const RtTensors *set, const char *source, char *err, size_t errlen);

/* ---- training, evaluation, benchmarking (runtime/train.c) ---- */
typedef struct {
	const char *data_dir;  /* NULL: built-in data */
	const char *device;    /* "auto" */
	int threads;           /* 0: all cores */
	/* The run's length: steps > 0 runs that many optimizer steps, across as many epochs as they
	 * take; else epochs > 0 that many whole epochs; else the bundle's steps, else its epochs. */
	int64_t steps;
	int64_t epochs;
	uint64_t seed;
	int64_t log_every;     /* > 0: overrides the bundle's */
	bool quiet;
	const char *save;      /* checkpoint written every save_every steps and at the end */
	int64_t save_every;    /* 0: only at the end */
	const char *resume;    /* checkpoint to continue from (step counter and schedule too) */
	const RtTensors *init; /* starting weights (--init, an imported model's), not with resume */
	const char *init_source; /* the file they came from, for messages */
	const char *input;     /* rt_predict: a .npy batch of images to run the evaluation program on */
	const char *output;    /* rt_predict: the .npy file its output goes to */
	const char *log_csv;   /* --log: one CSV row per logging interval */
	bool overfit_batch;    /* every step on the first batch, augmented alike; no held-out evaluation */
	const RtRanks *ranks;  /* data-parallel: this process's rank (rt_ranks_from_env); NULL: one process */
} TrainOptions;

/* Trains and prints progress lines and a summary; returns 0, or 1 after printing a user error.
 * A SIGINT or SIGTERM during the steps ends the run after the current step, with its checkpoint
 * (--save) and log written and one line on stderr saying so: returns 128 + the signal (130, 143).
 * The first such signal restores the default action, so a second one ends the process at once. */
int rt_train(const Bundle *b, const TrainOptions *o);
/* The learning rate of a 0-based step in an epoch of a run of total steps (train.c). */
double rt_lr_at(const TrainConfig *c, int64_t step, int64_t epoch, int64_t total);

/* `netc eval`: the evaluation program over the held-out set with the weights of o->resume (else
 * o->init); prints loss and accuracy; 0, or 1 after a user error. */
int rt_eval(const Bundle *b, const TrainOptions *o);
/* `netc eval --input X.npy -o Y.npy` (runtime/predict.c): the evaluation program's output for the
 * batch of images in o->input (a .npy file of the image input's shape) with the weights of
 * o->resume, else o->init, written to o->output as .npy; 0, or 1 after a user error. */
int rt_predict(const Bundle *b, const TrainOptions *o);

/* ---- checkpoints in the safetensors format (runtime/checkpoint.c) ---- */
/* What a checkpoint's __metadata__ carries besides the tensors, so that a resumed run continues
 * exactly: the step counter and, for fp16, the dynamic loss scale's state. */
typedef struct {
	int64_t step;              /* optimizer steps done */
	bool has_loss_scale;       /* the loss_scale fields below are saved / were found */
	float loss_scale;          /* the scale the next step is seeded with */
	int64_t loss_scale_growth; /* finite steps in a row since the scale last changed */
	int64_t skipped_steps;     /* steps whose update an overflow skipped (<= step) */
} RtCheckpointMeta;

/* Parameters and optimizer state by name, with m in the metadata; written to path.tmp (a stale
 * one is replaced, never written through), fsynced, renamed over path, and the folder fsynced. */
bool rt_checkpoint_save(Session *s, const char *path, const RtCheckpointMeta *m, char *err, size_t errlen);
/* Every parameter must be in the file with the model's shape; optimizer state may be missing
 * (it stays zero; a warning says so), names the model lacks are listed in a warning. A truncated
 * or foreign file, metadata that is not a number of its kind (a step that is not an integer >= 0,
 * a loss scale that is not positive and finite) and a tensor holding NaN or Inf are errors naming
 * the file and the key or tensor. m (may be NULL): the metadata; step 0 and no loss scale for a
 * file without them (one exported from PyTorch). */
bool rt_checkpoint_load(Session *s, const char *path, RtCheckpointMeta *m, char *err, size_t errlen);

typedef struct {
	const char *device;
	int threads;
	int64_t warmup;    /* steps before timing */
	int64_t steps;     /* timed steps per repeat */
	int repeats;
	uint64_t seed;
	const RtRanks *ranks;  /* this process's rank: the step averages the gradients across the ranks */
	bool profile;      /* also time each kernel of the training step (BenchResult.kernel_ms) */
} BenchOptions;

typedef struct {
	double ms_per_step;      /* median over repeats */
	double examples_per_s;
	double ms_min, ms_max;
	char device[256];        /* rt_device_info of the device it ran on */
	char device_note[1024];   /* rt_device_note */
	char arch[32];           /* rt_device_arch */
	char model[128];         /* rt_device_model */
	int threads;             /* CPU threads it ran on (0: every core) */
	bool graphs;             /* the step ran as a captured graph */
	int ranks;               /* ranks the step averaged its gradients over; 0 in a plain run */
	double ms_alone;         /* ranks: this rank's step without the all-reduce, timed with every
	                          * rank doing the same at once (the scaling efficiency's baseline) */
	char engine[16];         /* their engine: "mpi", "nccl" */
	/* with BenchOptions.profile: the training step's launches on the device it ran on and each
	 * one's median ms over the repeats (one launch at a time, waited for); kernel_ms is malloc'd
	 * (rt_bench_result_free) */
	BundleKernel *kernels;
	double *kernel_ms;
	int nkernels;
	double profiled_step_ms; /* median ms of the profiled steps, launch by launch */
	RtKernelTiming kernel_timing; /* what timed the kernels */
} BenchResult;

void rt_bench_result_free(BenchResult *r);

int rt_bench(const Bundle *b, const BenchOptions *o, BenchResult *r);

#endif
