/* train_config.h: the training section of a .net file, as the compiler reads it and the runtime
 * uses it (header only: the runtime links none of the compiler). */
#ifndef NETC_TRAIN_CONFIG_H
#define NETC_TRAIN_CONFIG_H

#include <stdint.h>

/* New kinds go last: bundles store these numbers. */
typedef enum { OPT_SGD, OPT_ADADELTA, OPT_ADAM, OPT_ADAMW, OPT_COUNT } OptimizerKind;
typedef enum { SCHED_NONE, SCHED_STEP, SCHED_MULTISTEP, SCHED_COSINE, SCHED_COUNT } ScheduleKind;
/* What the forward and backward passes compute in; weights and optimizer state stay f32.
 * tf32 stores and computes as fp32, but GEMM-shaped kernels (conv2d, its gradients, matmul)
 * multiply in TF32 (10-bit mantissa products, f32 accumulation) on targets with matrix units for
 * it (NVIDIA sm_80+); elsewhere it is exactly fp32. */
typedef enum { PREC_FP32, PREC_FP16, PREC_BF16, PREC_TF32, PREC_COUNT } PrecisionKind;
/* The names of --precision and the train section's `precision`, by PrecisionKind. */
#define PRECISION_NAMES {"fp32", "fp16", "bf16", "tf32"}
#define PRECISION_LIST "fp32, fp16, bf16, tf32"

static inline const char *precision_name(PrecisionKind p)
{
	static const char *const names[PREC_COUNT] = PRECISION_NAMES;
	return p >= 0 && p < PREC_COUNT ? names[p] : "?";
}

#define TRAIN_MAX_MILESTONES 6
/* The most micro-batches one step accumulates: more is surely a typo, not a plan. */
#define TRAIN_MAX_ACCUMULATE 4096
/* The largest batch and number of epochs: the frontend, the command line and the bundle reader
 * agree, so whatever compiles also reads back, and epochs times a data set's examples (u32
 * counts) stays below 2^63 in the training loop. */
#define TRAIN_MAX_BATCH (INT64_C(1) << 24)
#define TRAIN_MAX_EPOCHS (INT64_C(1) << 31)
/* Steps, intervals, milestones: a .net file's integer limit (frontend/ast.h's FE_MAX_INT). */
#define TRAIN_MAX_COUNT (INT64_C(1) << 40)

/* How the frontend reads a train-section key's value (the parse column of ir/train_fields.def). */
typedef enum {
	TP_NONE,     /* no key of its own: set by another key, such as optimizer(lr=...) */
	TP_POSITIVE, /* a whole number in [1, hi] */
	TP_NONNEG,   /* a whole number in [0, hi] */
	TP_OPTIMIZER,
	TP_SCHEDULE,
	TP_DATA,
	TP_PRECISION,
} TrainParse;

/* Every member has its row in ir/train_fields.def, which the train section, the bundle writer and
 * the bundle reader are generated from. */
typedef struct {
	OptimizerKind optimizer;
	double lr;
	double momentum;     /* sgd */
	double dampening;    /* sgd */
	int nesterov;        /* sgd */
	double weight_decay; /* sgd, adadelta, adam (L2 in the gradient), adamw (decoupled) */
	double rho;          /* adadelta */
	double eps;          /* adadelta, adam, adamw */
	double beta1, beta2; /* adam, adamw */

	ScheduleKind schedule;
	int64_t step_size; /* step schedule: epochs between decays */
	double gamma;      /* step, multistep: factor per decay */
	int64_t milestones[TRAIN_MAX_MILESTONES]; /* multistep: epochs at which lr *= gamma */
	int nmilestones;
	int64_t t_max;     /* cosine: steps of one half period; 0: the run's length */
	double eta_min;    /* cosine: the lowest learning rate */
	int64_t warmup;    /* any schedule: steps of linear warm-up from lr/warmup to lr */

	int64_t batch;
	int64_t epochs;
	int64_t steps;    /* 0: run whole epochs */
	char dataset[32]; /* "mnist" */
	int64_t log_every; /* steps between progress lines */
	int64_t accumulate; /* micro-batches whose gradients one optimizer step averages */
	PrecisionKind precision;
	/* data = folder("DIR") or npy("DIR"): the folder, resolved against the .net file's directory;
	 * "" when --data gives it (which overrides this one) */
	char data_path[512];
} TrainConfig;

static inline TrainConfig train_config_default(void)
{
	TrainConfig c = {0};
	c.optimizer = OPT_SGD;
	c.lr = 0.01;
	c.rho = 0.9;
	c.eps = 1e-6;
	c.beta1 = 0.9;
	c.beta2 = 0.999;
	c.schedule = SCHED_NONE;
	c.step_size = 1;
	c.gamma = 1.0;
	c.batch = 64;
	c.epochs = 1;
	c.log_every = 50;
	c.accumulate = 1;
	c.precision = PREC_FP32;
	c.dataset[0] = 'm', c.dataset[1] = 'n', c.dataset[2] = 'i', c.dataset[3] = 's', c.dataset[4] = 't';
	return c;
}

#endif
