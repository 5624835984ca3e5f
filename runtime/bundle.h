/* bundle.h: the compiled artifact, the one format the compiler and the runtime share.
 * A bundle holds the plan once (buffers at arena offsets, the kernel launch lists of the training
 * and evaluation programs, parameter initialization) and one code object per target. */
#ifndef NETC_BUNDLE_H
#define NETC_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/dtype.h"
#include "ir/train_config.h"

#define BUNDLE_MAGIC "NETCBNDL"
#define BUNDLE_VERSION 12
/* Buffer arguments every kernel takes after the arena, and size arguments after those
 * (CG_BUFFER_ARGS and CG_SIZE_ARGS, codegen/cg.h). */
#define BUNDLE_BUFFER_ARGS 16
#define BUNDLE_SIZE_ARGS 4
#define BUNDLE_MAX_DIMS 6

typedef enum {
	BUF_ACTIVATION, /* computed by a kernel */
	BUF_IMAGE,      /* data input, written by the runtime before a step */
	BUF_LABEL,      /* i32 labels, written by the runtime */
	BUF_PARAM,      /* trainable, initialized by the runtime */
	BUF_STATE,      /* optimizer state, zero at the start */
	BUF_LR,         /* f32 scalar: the learning rate of this step */
	BUF_RNG,        /* i32[2]: seed, step; dropout's Philox key and counter */
	BUF_ALIAS,      /* no storage of its own: offset is its target's (assign) */
	BUF_LOSS_SCALE, /* f32 scalar: the fp16 loss scale of this step, written by the runtime */
	BUF_GRAD,       /* a parameter's gradient as the update reads it: data-parallel runs sum it
	                 * across the ranks between backward and the update */
	BUF_INPUT       /* a data input past the first two (image, label), written by the runtime
	                 * from the data set's array of its name */
} BufferRole;

typedef struct {
	char name[96];
	int32_t node;        /* graph node id */
	int32_t role;        /* BufferRole */
	int32_t dtype;       /* DType */
	int32_t rank;
	int64_t dim[BUNDLE_MAX_DIMS];
	int64_t offset;      /* bytes into the arena; -1 for a value with no storage (a constant) */
	int64_t bytes;
	int32_t init;        /* params and state: INIT_ZERO, INIT_UNIFORM or INIT_ONE (ir.h) */
	double bound;        /* INIT_UNIFORM draws from [-bound, bound) */
	int32_t programs;    /* PROG_* bits of the node */
	/* Stored axis d holds public axis perm[d] (the layout pass may store a weight as OHWI where
	 * checkpoints keep OIHW); dim[] is the stored shape; identity for most buffers. */
	int32_t perm[BUNDLE_MAX_DIMS];
	/* The node that leads the fused group whose kernel writes it (BundleKernel.node), -1 for
	 * leaves: data-parallel runs reduce a gradient as soon as that kernel has run. */
	int32_t group;
} BundleBuffer;

typedef struct {
	char name[64];       /* the kernel's: k<node>_<op> */
	char symbol[64];     /* what it launches in the code object: its own, or a kernel of the same
	                      * code's (codegen/kernel_share.h) */
	int32_t node;
	int64_t grid;        /* work-groups */
	int32_t block;       /* work-items per work-group (1 on the host) */
	int32_t shared;      /* dynamic shared memory bytes of a launch (CUDA; 0 elsewhere) */
	/* The kernel's buffer arguments (codegen/cg.h): b<i> is the arena plus args[i] bytes for i <
	 * nargs, the arena itself past them; kernels of the same code take different ones. */
	int32_t nargs;
	int64_t args[BUNDLE_BUFFER_ARGS];
	/* Its size arguments s<i> (element counts; 0 where unused): kernels of the same code may
	 * cover different numbers of elements. */
	int64_t sizes[BUNDLE_SIZE_ARGS];
} BundleKernel;

/* A kernel's buffer arguments at `arena` (a device address on a GPU): arena + args[i] for i <
 * nargs, the arena itself past them (codegen/cg.h). */
static inline void bundle_buffer_args(void *arena, int nargs, const int64_t *args, void *out[BUNDLE_BUFFER_ARGS])
{
	for (int i = 0; i < BUNDLE_BUFFER_ARGS; i++)
		out[i] = i < nargs ? (void *)((uintptr_t)arena + (uintptr_t)args[i]) : arena;
}

/* What the compiler counts of one fused group of the training program, for `bench --profile`
 * (tools/profile.c) on any machine, one with a runtime-only netc included. */
typedef struct {
	int32_t node;        /* the group's leader: BundleKernel.node of the kernel(s) computing it */
	double flops;        /* its nodes' FLOPs (the ops' counts) */
	int64_t bytes;       /* what its kernels read and write (passes/traffic.c) */
	char members[96];    /* its nodes' ops in order, "conv2d+bias_add+relu" ("..." when cut) */
} BundleGroup;

typedef enum {
	CODE_HOST,           /* a shared object for the CPU */
	CODE_HSACO,          /* an AMDGPU code object */
	CODE_PTX             /* PTX text for the CUDA driver */
} CodeKind;

/* A tensor map of NVIDIA's Tensor Memory Accelerator (sm_90 and newer; runtime/tensor_map.h): a
 * tensor in the arena that kernels copy boxes of into shared memory with one instruction. The
 * map's 128 bytes are the driver's encoding, which depends on the arena's device address, so the
 * runtime encodes each map when a session opens and stores it at `at` in the arena, where the
 * kernels find it (a global-memory tensor map). */
#define BUNDLE_TMAP_DIMS 5
#define BUNDLE_TMAP_BYTES 128
typedef struct {
	int64_t at;          /* arena offset of the map's 128 bytes (a multiple of 128) */
	int64_t tensor;      /* arena offset of the tensor's element 0 (a multiple of 16) */
	int32_t dtype;       /* DType of its elements */
	int32_t rank;        /* 1..BUNDLE_TMAP_DIMS */
	int64_t dim[BUNDLE_TMAP_DIMS];    /* elements along each dimension, innermost first */
	int64_t stride[BUNDLE_TMAP_DIMS]; /* bytes from one index to the next, dimension 1 on
					     (dimension 0's elements are contiguous) */
	int32_t box[BUNDLE_TMAP_DIMS];    /* elements one copy takes along each dimension */
	int32_t swizzle;     /* bytes of the shared-memory swizzle span: 0 (none), 32, 64, 128 */
} BundleTensorMap;

/* One code object per target, with the launch lists of its kernels (grids differ per target). */
typedef struct {
	char target[32];     /* as compiled: "host", "gfx906", "gfx90a:xnack-", "sm_90" */
	char arch[32];       /* what a device reports: "host", "gfx90a", "sm_90" */
	int32_t kind;        /* CodeKind */
	int32_t wave;        /* wavefront or warp size; 0 on the host */
	/* The roofline of `bench --profile`: the target table's fp32 vector peak and memory bandwidth
	 * of one product of the architecture (peak_of); zeros on the host, whose peaks are measured. */
	double peak_gflops, peak_gbs;
	char peak_of[48];
	uint64_t size;
	uint8_t *data;
	BundleKernel *train_kernels; /* launch order of one training step */
	int32_t ntrain;
	BundleKernel *eval_kernels;  /* launch order of one evaluation batch */
	int32_t neval;
	BundleKernel *accum_kernels; /* launch order of one accumulating micro-batch (PROG_ACCUM) */
	int32_t naccum;
	BundleTensorMap *tmaps;      /* the tensor maps its kernels read (CODE_PTX only) */
	int32_t ntmaps;
} BundleCode;

typedef struct {
	char model[64];
	int64_t batch;
	int64_t arena_bytes;
	TrainConfig train;
	double flops_per_step;  /* training program, counted by the compiler */
	/* indices into buf[], -1 when absent */
	int32_t image, label, loss, output, eval_loss, eval_output, lr, rng;
	/* fp16 dynamic loss scaling: the scale the runtime writes, and an f32 scalar the step sets to
	 * 1 when every gradient was finite (the update ran) and 0 when it skipped the update */
	int32_t loss_scale, finite;
	/* The graph node that leads the training program's first update kernel: kernels of a node
	 * below it are backward, the rest the update, and every BUF_GRAD buffer is written before it
	 * (ir_update_split). -1 when the plan fused the two (compile with --data-parallel). */
	int32_t update_node;
	/* The network's data inputs in declaration order, as indices into buf[] (image and label, when
	 * present, are the first two): name, dtype and shape are their buffers'. */
	int32_t *inputs;
	int32_t ninputs;
	BundleBuffer *buf;
	int32_t nbuf;
	BundleCode *code;
	int32_t ncode;
	BundleGroup *groups;  /* the training program's groups, one per leader */
	int32_t ngroups;
} Bundle;

/* runtime/bundle.c */
bool bundle_write(const Bundle *b, const char *path, char *err, size_t errlen);
/* A truncated, foreign or newer file is an error naming the file and what was expected. */
bool bundle_read(Bundle *b, const char *path, char *err, size_t errlen);
void bundle_free(Bundle *b);
int bundle_find_buffer(const Bundle *b, const char *name); /* index or -1 */
/* The code object for a device architecture ("host", "gfx1030", "sm_90"), or NULL. */
const BundleCode *bundle_code_for(const Bundle *b, const char *arch);
/* The group counts of the group node leads, or NULL. */
const BundleGroup *bundle_group_of(const Bundle *b, int32_t node);
/* How c launches kernel name, in training or else in evaluation (NULL: never). */
const BundleKernel *bundle_launch_of(const BundleCode *c, const char *name);

#endif
