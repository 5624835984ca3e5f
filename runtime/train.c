/* train.c: the training loop, held-out evaluation and the step benchmark.
 *
 * The runtime owns everything around the compiled step: it shuffles the data, makes each batch
 * (augmented as the data set says) in the image and label buffers, writes the step's learning
 * rate and dropout key, runs the training program's kernels and reads the loss and the scores
 * back to report progress (runtime/progress.c).
 *
 * Data-parallel (TrainOptions.ranks): every rank runs this loop on its own shard. The step's
 * global batch is ranks x accumulate x batch examples of the epoch's order; micro-batch j of rank r
 * takes rows (j*ranks + r)*batch onwards of it, so N ranks at batch B see the examples one rank
 * at batch N*B sees, in the same places, and dropout draws by the row in the global batch
 * (ir/philox.h), so their masks agree too. The session averages the gradients (rt_set_comm); the
 * loop sums the step's loss, hits and any stop signal across the ranks, so every rank reports and
 * decides alike. Only rank 0 prints, logs, evaluates and saves. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/clock.h"
#include "runtime/comm.h"
#include "runtime/hash.h"
#include "runtime/image_dtype.h"
#include "runtime/loss_scale.h"
#include "runtime/prefetch.h"
#include "runtime/progress.h"
#include "runtime/rt.h"
#include "runtime/threadpool.h"

/* What one training or evaluation batch needs on the host. */
typedef struct {
	Session *s;
	const Bundle *b;
	int64_t batch;
	int64_t classes; /* of the scores; 0: the model has none (no accuracy to report) */
	int64_t pixels;  /* per example */
	float *images;   /* one batch, staged */
	int32_t *labels;
	float *scores;   /* one batch of the output buffer */
	uint64_t seed;
	int64_t step;    /* training steps done */
	int64_t accumulate; /* batches per step (gradient accumulation), 1 without */
	int64_t micro;   /* the batch of the run now loaded: step * accumulate + its place in the step */
	int64_t total;   /* steps of the whole run, for the schedule */
	float lr;        /* of the last step */
	RtComm *comm;    /* data-parallel: the ranks; NULL in a run of one process */
	int rank, ranks; /* 0 and 1 without */
	bool overfit;    /* --overfit-batch: one batch, augmented as at step 0, every step */
	RtLossScale scale; /* fp16: the loss scale and the steps it skipped */
	RtPrefetch *ahead; /* a data set that decodes: the batches made ahead, taken in order; NULL:
	                    * load_batch makes each batch itself */
} Loop;

/* The signal that asked the run to stop, 0 while none did. The loop reads it between steps
 * (the handler is in "stopping on SIGINT and SIGTERM" below). */
static volatile sig_atomic_t stop_signal;

/* Progress over the current logging interval. */
typedef struct {
	double loss_sum;
	int64_t hits, seen, steps;
	double t_mark;
} Interval;

/* ---- checking the bundle against the data ---- */

static const char *type_str(const BundleBuffer *x, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s[", dtype_name((DType)x->dtype));
	for (int d = 0; d < x->rank && n < len; d++)
		n += (size_t)snprintf(buf + n, len - n, "%s%lld", d ? ", " : "", (long long)x->dim[d]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
	return buf;
}

/* Whether buffer i exists and is dtype[dims...]; rank < 0 accepts any shape of one element. */
static bool has_type(const Bundle *b, int i, DType t, int rank, const int64_t *dim)
{
	if (i < 0)
		return false;
	const BundleBuffer *x = &b->buf[i];
	if (x->dtype != (int32_t)t)
		return false;
	if (rank < 0)
		return x->bytes == (int64_t)dtype_size(t);
	if (x->rank != rank)
		return false;
	for (int d = 0; d < rank; d++)
		if (x->dim[d] != dim[d])
			return false;
	return true;
}

static bool expect(const Bundle *b, int i, const char *what, DType t, int rank, const int64_t *dim,
		   char *err, size_t errlen)
{
	if (has_type(b, i, t, rank, dim))
		return true;
	char want[96] = "a scalar", got[96];
	if (rank >= 0) {
		BundleBuffer w = {.dtype = t, .rank = rank};
		memcpy(w.dim, dim, (size_t)rank * sizeof *dim);
		type_str(&w, want, sizeof want);
	}
	if (i < 0)
		snprintf(err, errlen, "the bundle has no %s buffer (the data set needs %s)", what, want);
	else
		snprintf(err, errlen, "the model's %s '%s' is %s; the data set needs %s", what,
			 b->buf[i].name, type_str(&b->buf[i], got, sizeof got), want);
	return false;
}

/* Scores as [batch, classes] f32, with room for every label of the data set. */
static bool check_scores(const Bundle *b, int i, const char *what, int classes, char *err, size_t errlen)
{
	int64_t dim[2] = {b->batch, i >= 0 ? b->buf[i].dim[1] : classes};
	if (!expect(b, i, what, DT_F32, 2, dim, err, errlen))
		return false;
	if (dim[1] < classes) {
		snprintf(err, errlen, "the model's %s has %lld classes; the data set has %d", what,
			 (long long)dim[1], classes);
		return false;
	}
	return true;
}

/* Whether the loss reads class scores [batch, classes] (alexnet_bench's does not). */
static bool has_scores(const Bundle *b, int i)
{
	return i >= 0 && b->buf[i].rank == 2 && b->buf[i].dim[0] == b->batch && b->buf[i].dtype == DT_F32;
}

static int64_t buf_elements(const BundleBuffer *x)
{
	int64_t n = 1;
	for (int d = 0; d < x->rank; d++)
		n *= x->dim[d];
	return n;
}

/* Whether the label input holds float targets (regression) rather than classes. */
static bool has_targets(const Bundle *b) { return b->label >= 0 && b->buf[b->label].dtype != DT_I32; }

/* Whether the label input holds one class per example, which accuracy is counted against. */
static bool has_classes(const Bundle *b) { return b->label >= 0 && b->buf[b->label].dtype == DT_I32 && b->buf[b->label].rank == 1; }

/* The image and label sets (all but .npy arrays) feed class labels to an i32 label input. */
static bool check_labels(const Bundle *b, char *err, size_t errlen)
{
	const int64_t label[1] = {b->batch};
	if (b->label < 0)
		return true;
	char got[96];
	if (has_targets(b)) {
		snprintf(err, errlen, "the model's label input '%s' is %s, float targets; the data set has class labels (data = npy reads targets)",
			 b->buf[b->label].name, type_str(&b->buf[b->label], got, sizeof got));
		return false;
	}
	return expect(b, b->label, "label input", DT_I32, 1, label, err, errlen);
}

/* The image and label inputs, unless the set's arrays were bound by name (and checked then);
 * a set of images feeds no more inputs than those two. */
static bool check_inputs(const Bundle *b, const Dataset *d, char *err, size_t errlen)
{
	if (d->arrays)
		return true;
	if (b->ninputs > 2) {
		snprintf(err, errlen, "the model has %d inputs ('%s' is the third); this data set feeds two (images, then labels): data = npy binds any number by name",
			 b->ninputs, b->buf[b->inputs[2]].name);
		return false;
	}
	int64_t image[4] = {b->batch, d->c, d->h, d->w};
	return expect(b, b->image, "image input", rt_image_dtype(b), 4, image, err, errlen) && check_labels(b, err, errlen);
}

/* Synthetic data fits any loss; a set with classes needs scores for them, unless the model reads
 * no labels (an autoencoder's loss compares its output with its image) or float targets. d NULL:
 * the benchmark's random batches, of the model's own shapes. */
static bool check_bundle(const Bundle *b, const Dataset *d, char *err, size_t errlen)
{
	if ((d && !check_inputs(b, d, err, errlen)) ||
	    !expect(b, b->loss, "loss", DT_F32, -1, NULL, err, errlen) ||
	    (d && !d->no_holdout && has_classes(b) && !check_scores(b, b->output, "output", d->classes, err, errlen)))
		return false;
	if (b->lr >= 0 && !expect(b, b->lr, "learning rate", DT_F32, -1, NULL, err, errlen))
		return false;
	const int64_t rng[1] = {RT_RNG_WORDS};
	return b->rng < 0 || expect(b, b->rng, "random key", DT_I32, 1, rng, err, errlen);
}

static bool has_eval(const Bundle *b)
{
	return b->eval_loss >= 0 && b->eval_output >= 0;
}

/* The model's image shape [C, H, W], when its image input is [batch, C, H, W]. */
static bool image_shape(const Bundle *b, int *c, int *h, int *w)
{
	if (b->image < 0 || b->buf[b->image].rank != 4)
		return false;
	const int64_t *dim = b->buf[b->image].dim;
	*c = (int)dim[1], *h = (int)dim[2], *w = (int)dim[3];
	return true;
}

static bool is_synthetic(const char *data_dir)
{
	return data_dir && strcmp(data_dir, "synthetic") == 0;
}

/* ImageNet-shaped batches of the model's own image shape, labels for its scores (or 1000). */
static bool load_synthetic(const Bundle *b, uint64_t seed, Dataset *train, Dataset *test, char *err,
			   size_t errlen)
{
	int c, h, w;
	if (!image_shape(b, &c, &h, &w)) {
		snprintf(err, errlen, "synthetic data needs an image input of shape [batch, C, H, W]");
		return false;
	}
	int classes = has_scores(b, b->output) ? (int)b->buf[b->output].dim[1] : 1000;
	return rt_load_synthetic(seed, c, h, w, classes, train, test);
}

/* --data names the folder of the data set's files: say so when it names something else. */
static bool check_data_dir(const char *data_dir, char *err, size_t errlen)
{
	struct stat st;
	if (stat(data_dir, &st) != 0) {
		snprintf(err, errlen, "--data %s: %s (it names the folder of the data set's files, or 'synthetic')",
			 data_dir, errno == ENOENT ? "no such directory" : strerror(errno));
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--data %s: not a directory (it names the folder of the data set's files, or "
			 "'synthetic')", data_dir);
		return false;
	}
	return true;
}

/* data = npy: an array for each input of the model, named after it; the label input's values
 * are classes of the scores when it is i32[batch]. */
static bool load_npy(const Bundle *b, const char *data_dir, Dataset *train, Dataset *test, char *err, size_t errlen)
{
	if (!data_dir) {
		snprintf(err, errlen, "%s trains on .npy arrays (data = npy): give their folder with --data DIR or data = npy(\"DIR\")", b->model);
		return false;
	}
	RtNpyInput *input = calloc((size_t)b->ninputs + 1, sizeof *input);
	if (!input) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	RtNpyInputs in = {.input = input, .n = b->ninputs, .label = -1,
			  .classes = has_scores(b, b->output) ? b->buf[b->output].dim[1] : INT32_MAX};
	bool ok = true;
	for (int k = 0; k < b->ninputs && ok; k++) {
		const BundleBuffer *x = &b->buf[b->inputs[k]];
		input[k] = (RtNpyInput){.name = x->name, .dtype = (DType)x->dtype, .rank = x->rank - 1, .dim = x->dim + 1};
		if (b->inputs[k] == b->label && has_classes(b))
			in.label = k;
		if (x->rank < 1 || x->dim[0] != b->batch) {
			char got[96];
			snprintf(err, errlen, "the model's input '%s' is %s: data = npy feeds one row per example, so its first dimension must be the batch (%lld)",
				 x->name, type_str(x, got, sizeof got), (long long)b->batch);
			ok = false;
		}
	}
	ok = ok && rt_load_npy(data_dir, &in, train, test, err, errlen);
	free(input);
	return ok;
}

/* The run's data: --data synthetic, else the bundle's data set (train.dataset) from --data DIR or
 * the built-in generator, shaped after the model's image input. */
static bool load_data(const Bundle *b, const char *data_dir, uint64_t seed, Dataset *train, Dataset *test,
		      char *err, size_t errlen)
{
	if (!data_dir && b->train.data_path[0])
		data_dir = b->train.data_path; /* data = folder("DIR"); --data overrides it */
	const char *name = b->train.dataset;
	if (is_synthetic(data_dir) || strcmp(name, "synthetic") == 0) {
		if (data_dir && !is_synthetic(data_dir)) {
			snprintf(err, errlen, "%s trains on synthetic data (data = synthetic): --data takes no folder "
				 "here, only 'synthetic'", b->model);
			return false;
		}
		return load_synthetic(b, seed, train, test, err, errlen);
	}
	if (data_dir && !check_data_dir(data_dir, err, errlen))
		return false;
	if (strcmp(name, "mnist") == 0)
		return rt_load_mnist(data_dir, seed, train, test, err, errlen);
	int c = 3, h = 32, w = 32;
	if (strcmp(name, "npy") == 0)
		return load_npy(b, data_dir, train, test, err, errlen);
	if (strcmp(name, "folder") == 0) {
		if (!data_dir) {
			snprintf(err, errlen, "%s trains on an image folder (data = folder): give it with --data DIR or data = folder(\"DIR\")", b->model);
			return false;
		}
		if (!image_shape(b, &c, &h, &w)) {
			snprintf(err, errlen, "data = folder needs an image input [batch, C, H, W]");
			return false;
		}
		return rt_load_folder(data_dir, c, h, w, train, test, err, errlen);
	}
	if (image_shape(b, &c, &h, &w) && c != 3)
		h = w = 32; /* not a color image: the check against the model names CIFAR's own shape */
	if (strcmp(name, "cifar10") == 0)
		return rt_load_cifar(data_dir, seed, h, w, train, test, err, errlen);
	snprintf(err, errlen, "unknown data set '%s' (netc knows: mnist, cifar10, synthetic, folder, npy)", name);
	return false;
}

/* ---- one batch ---- */

/* Batches per optimizer step: train.accumulate (a bundle made in memory may leave it 0). */
static int64_t batches_per_step(const Bundle *b) { return b->train.accumulate > 1 ? b->train.accumulate : 1; }

static bool loop_init(Loop *L, Session *s, uint64_t seed)
{
	const Bundle *b = rt_bundle(s);
	const BundleBuffer *img = &b->buf[b->image];
	*L = (Loop){.s = s, .b = b, .batch = b->batch, .seed = seed, .ranks = 1,
		    .classes = has_scores(b, b->output) && has_classes(b) ? b->buf[b->output].dim[1] : 0,
		    .accumulate = batches_per_step(b),
		    .pixels = buf_elements(img) / b->batch, .scale = rt_loss_scale_new(b)};
	L->images = malloc((size_t)(L->batch * L->pixels) * sizeof *L->images);
	L->labels = malloc((size_t)L->batch * sizeof *L->labels);
	L->scores = malloc((size_t)(L->batch * (L->classes ? L->classes : 1)) * sizeof *L->scores);
	return L->images && L->labels && L->scores;
}

/* Examples of one optimizer step over every rank. */
static int64_t step_examples(const Loop *L) { return L->batch * L->accumulate * L->ranks; }

static void loop_free(Loop *L)
{
	free(L->images);
	free(L->labels);
	free(L->scores);
}

/* Examples idx[0..batch) of each array into its input, and the class labels into L->labels. */
static void load_arrays(Loop *L, const Dataset *d, const int32_t *idx)
{
	for (int k = 0; k < d->narrays; k++) {
		const RtArray *a = &d->arrays[k];
		double *batch = malloc((size_t)(L->batch * a->size + 1) * sizeof *batch);
		if (!batch)
			abort();
		for (int64_t r = 0; r < L->batch; r++)
			memcpy(batch + r * a->size, a->values + idx[r] * a->size, (size_t)a->size * sizeof *batch);
		int buf = L->b->inputs[k];
		rt_write_values(L->s, buf, batch, L->batch * a->size);
		if (buf == L->b->label && has_classes(L->b))
			for (int64_t r = 0; r < L->batch; r++)
				L->labels[r] = (int32_t)batch[r];
		free(batch);
	}
}

/* The augmentation key of the training batches of optimizer step `step`. */
static uint64_t batch_key(const Loop *L, int64_t step)
{
	return rt_mix64(L->seed ^ rt_mix64((uint64_t)(L->overfit ? 0 : step) + 0xA06));
}

/* Examples idx[0..batch) of d into the input buffers; a training batch is augmented from the
 * seed, the optimizer step and each example's index, so a resumed run sees the same crops and
 * flips, and so does an example on any rank or in any micro-batch of its step. With batches made
 * ahead, the next one is that batch (the workers took the same examples and key). */
static void load_batch(Loop *L, const Dataset *d, const int32_t *idx, bool train)
{
	if (d->arrays) {
		load_arrays(L, d, idx);
		return;
	}
	if (L->ahead) {
		rt_prefetch_take(L->ahead, L->images, L->labels);
	} else {
		uint64_t key = batch_key(L, L->step);
		for (int64_t k = 0; k < L->batch; k++)
			L->labels[k] = rt_dataset_example(d, idx[k], train, key, L->images + k * L->pixels);
	}
	rt_write_image(L->s, L->b->image, L->images, L->batch * L->pixels);
	if (L->b->label >= 0)
		rt_write(L->s, L->b->label, L->labels, (size_t)L->batch * sizeof *L->labels);
}

/* Correct argmax predictions among the first rows rows of the scores. */
static int64_t count_hits(const Loop *L, int64_t rows)
{
	int64_t hits = 0;
	for (int64_t k = 0; k < rows && L->classes; k++) {
		const float *row = L->scores + k * L->classes;
		int64_t best = 0;
		for (int64_t c = 1; c < L->classes; c++)
			if (row[c] > row[best])
				best = c;
		hits += best == L->labels[k];
	}
	return hits;
}

/* Cross-entropy of one row: -log_softmax(row)[label]. The same whether the model's scores are
 * logits or already log-probabilities, since log_softmax of log-probabilities is themselves. */
static double row_nll(const float *row, int64_t classes, int32_t label)
{
	double max = row[0], sum = 0;
	for (int64_t c = 1; c < classes; c++)
		max = row[c] > max ? row[c] : max;
	for (int64_t c = 0; c < classes; c++)
		sum += exp(row[c] - max);
	return max + log(sum) - row[label];
}

/* The learning rate of step `step` (0-based) in epoch `epoch` of a run of `total` steps, as
 * PyTorch's schedulers give it: step and multistep decay per epoch (StepLR, MultiStepLR), cosine
 * anneals per step over t_max steps (CosineAnnealingLR's closed form; t_max 0: the whole run),
 * and past t_max it keeps following the cosine, rising again, as PyTorch's does. A warm-up of W
 * steps scales the first W steps' rate by (step+1)/W. */
double rt_lr_at(const TrainConfig *c, int64_t step, int64_t epoch, int64_t total)
{
	double lr = c->lr;
	double decays = 0; /* a double: epoch / step_size may be past any int */
	switch (c->schedule) {
	case SCHED_STEP:
		decays = c->step_size > 0 ? (double)(epoch / c->step_size) : 0;
		break;
	case SCHED_MULTISTEP:
		for (int i = 0; i < c->nmilestones && epoch >= c->milestones[i]; i++)
			decays++;
		break;
	case SCHED_COSINE: {
		double t_max = (double)(c->t_max > 0 ? c->t_max : total > 0 ? total : 1);
		lr = c->eta_min + (c->lr - c->eta_min) * (1 + cos(M_PI * (double)step / t_max)) / 2;
		break;
	}
	default:
		break;
	}
	lr *= pow(c->gamma, decays);
	if (c->warmup > 0 && step < c->warmup)
		lr *= (double)(step + 1) / (double)c->warmup;
	return lr;
}

/* One batch of a step on examples idx, rows [first_row, first_row + batch) of the step's global
 * batch: PROG_ACCUM adds its gradients to the accumulators, PROG_TRAIN (the step's last batch)
 * updates. Its loss, or NaN; its hits added to *hits. */
static float micro_step(Loop *L, const Dataset *d, const int32_t *idx, int64_t first_row, int program,
			int64_t *hits)
{
	load_batch(L, d, idx, true);
	int32_t key[RT_RNG_WORDS] = {(int32_t)(uint32_t)L->seed, (int32_t)L->step, (int32_t)first_row};
	rt_write(L->s, L->b->rng, key, sizeof key);
	rt_run(L->s, program);
	/* the progress line needs the loss and the scores: this read waits for the step */
	float loss;
	rt_read(L->s, L->b->loss, &loss, sizeof loss);
	if (L->classes) {
		rt_read(L->s, L->b->output, L->scores, (size_t)(L->batch * L->classes) * sizeof *L->scores);
		*hits += count_hits(L, L->batch);
	}
	return loss;
}

/* The step's loss, hits and stop signal summed over the ranks: the loss becomes the global
 * batch's mean, and a signal any rank caught stops every rank after this step. */
static float across_ranks(Loop *L, float loss, int64_t *hits)
{
	if (!L->comm)
		return loss;
	float v[3] = {loss, (float)*hits, stop_signal ? (float)stop_signal : 0.0f};
	rt_ranks_sum(L->s, v, 3);
	*hits = (int64_t)v[1];
	if (v[2] > 0 && !stop_signal)
		stop_signal = v[2] >= (float)SIGTERM ? SIGTERM : SIGINT;
	return v[0] / (float)L->ranks;
}

/* One optimizer step on the step's global batch idx (ranks x accumulate batches of examples);
 * the mean loss over all of them, or NaN. */
static float train_step(Loop *L, const Dataset *d, const int32_t *idx, int64_t epoch, int64_t *hits)
{
	/* a step that fp16 loss scaling skipped did not happen for the schedule */
	float lr = (float)rt_lr_at(&L->b->train, L->step - L->scale.skipped, epoch, L->total);
	L->lr = lr;
	rt_write(L->s, L->b->lr, &lr, sizeof lr);
	rt_loss_scale_write(&L->scale, L->s);
	double loss = 0;
	*hits = 0;
	for (int64_t j = 0; j < L->accumulate; j++) {
		L->micro = L->step * L->accumulate + j;
		int program = j + 1 < L->accumulate ? RT_PROG_ACCUM : RT_PROG_TRAIN;
		int64_t row = (j * L->ranks + L->rank) * L->batch;
		loss += micro_step(L, d, idx + row, row, program, hits);
	}
	rt_loss_scale_after_step(&L->scale, L->s);
	L->step++;
	return across_ranks(L, (float)(loss / (double)L->accumulate), hits);
}

/* ---- stopping on SIGINT and SIGTERM ---- */

/* The first signal restores the default action of both, so a second one ends the process at once
 * (sigaction is async-signal-safe). */
static void on_stop_signal(int sig)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGINT, &dfl, NULL);
	sigaction(SIGTERM, &dfl, NULL);
	stop_signal = sig;
}

/* Catches SIGINT and SIGTERM for the run's steps; old keeps what was there. SA_RESTART: a signal
 * that lands in a write or a driver call does not fail it. */
static void catch_stop_signals(struct sigaction old[2])
{
	struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	stop_signal = 0;
	sigaction(SIGINT, &sa, &old[0]);
	sigaction(SIGTERM, &sa, &old[1]);
}

static void restore_signals(const struct sigaction old[2])
{
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
}

/* ---- evaluation ---- */

/* ---- batches made ahead (data sets that decode, such as image folders) ---- */

/* What batch m of a run is made of, for the workers (runtime/prefetch.h). */
typedef struct {
	const Loop *L;
	const Dataset *d;
	int64_t per_epoch;
	int32_t *perm;  /* training: the order of epoch `epoch`, made when a batch of it is first asked */
	int64_t epoch;
} BatchOrder;

static void shuffle(int32_t *perm, int64_t n, uint64_t seed, int64_t epoch);

/* Training batch m is micro-batch m of the run: the examples and key train_step and load_batch
 * take for it (--overfit-batch: epoch 0's first step, every time). */
static void train_order(void *ctx, int64_t m, int32_t *idx, uint64_t *key, bool *train)
{
	BatchOrder *o = ctx;
	const Loop *L = o->L;
	int64_t step = m / L->accumulate, j = m % L->accumulate;
	int64_t epoch = L->overfit ? 0 : step / o->per_epoch, k = L->overfit ? 0 : step % o->per_epoch;
	if (epoch != o->epoch)
		shuffle(o->perm, o->d->n, L->seed, epoch);
	o->epoch = epoch;
	memcpy(idx, o->perm + k * step_examples(L) + (j * L->ranks + L->rank) * L->batch, (size_t)L->batch * sizeof *idx);
	*key = batch_key(L, step);
	*train = true;
}

/* Evaluation batch m: examples m * batch onwards, the last padded from the start. */
static void eval_order(void *ctx, int64_t m, int32_t *idx, uint64_t *key, bool *train)
{
	const BatchOrder *o = ctx;
	for (int64_t k = 0; k < o->L->batch; k++)
		idx[k] = (int32_t)((m * o->L->batch + k) % o->d->n);
	*key = 0;
	*train = false;
}

/* Workers making batches first .. end-1 of d three ahead; NULL (each batch made by load_batch
 * then, alike) when they cannot start. */
static RtPrefetch *start_ahead(const Loop *L, const Dataset *d, void (*order)(void *, int64_t, int32_t *, uint64_t *, bool *),
			       BatchOrder *ctx, int64_t first, int64_t end)
{
	RtPrefetchSpec spec = {.batch = L->batch, .pixels = L->pixels, .depth = 3, .workers = rt_prefetch_workers(),
			       .order = order, .ctx = ctx};
	return end > first ? rt_prefetch_start(d, &spec, first, end) : NULL;
}

/* The evaluation program over all of d; the last partial batch is padded by repeating examples
 * from the start, and only its real rows count. False when the device fails. A stop signal ends
 * it early: true, with nothing printed and *accuracy as it was. */
static bool evaluate(Loop *L, const Dataset *d, bool quiet, double *accuracy)
{
	int32_t *idx = malloc((size_t)L->batch * sizeof *idx);
	if (!idx)
		return true; /* no evaluation, no harm to the training */
	RtPrefetch *training = L->ahead;
	BatchOrder order = {.L = L, .d = d};
	L->ahead = d->decode_ahead ? start_ahead(L, d, eval_order, &order, 0, (d->n + L->batch - 1) / L->batch) : NULL;
	double loss_sum = 0;
	int64_t hits = 0;
	for (int64_t start = 0; start < d->n && !stop_signal; start += L->batch) {
		int64_t rows = d->n - start < L->batch ? d->n - start : L->batch;
		for (int64_t k = 0; k < L->batch; k++)
			idx[k] = (int32_t)((start + k) % d->n);
		load_batch(L, d, idx, false);
		rt_run(L->s, RT_PROG_EVAL);
		float loss;
		rt_read(L->s, L->b->eval_loss, &loss, sizeof loss);
		rt_read(L->s, L->b->eval_output, L->scores, (size_t)(L->batch * L->classes) * sizeof *L->scores);
		if (rt_error(L->s))
			break;
		hits += count_hits(L, rows);
		/* without class scores there are no rows to take apart: the padded batch's mean stands
		 * for its real rows' */
		if (rows == L->batch || !L->classes) {
			loss_sum += (double)loss * (double)rows;
		} else {
			/* the program's loss averages the padding too: take the real rows' own */
			for (int64_t k = 0; k < rows; k++)
				loss_sum += row_nll(L->scores + k * L->classes, L->classes, L->labels[k]);
		}
	}
	free(idx);
	rt_prefetch_stop(L->ahead);
	L->ahead = training;
	if (rt_error(L->s))
		return false;
	if (stop_signal)
		return true;
	*accuracy = L->classes ? 100.0 * (double)hits / (double)d->n : NAN;
	if (!quiet && L->classes)
		printf("eval: loss %.4f  accuracy %.2f%% (%lld examples)\n", loss_sum / (double)d->n,
		       *accuracy, (long long)d->n);
	else if (!quiet)
		printf("eval: loss %.4f (%lld examples)\n", loss_sum / (double)d->n, (long long)d->n);
	fflush(stdout);
	return true;
}

/* ---- the training loop ---- */

/* The order of epoch `epoch`: a shuffle of the identity keyed by (seed, epoch) and nothing else,
 * so that a resumed run computes any epoch's order as the straight run did. */
static void shuffle(int32_t *perm, int64_t n, uint64_t seed, int64_t epoch)
{
	uint64_t key = rt_mix64(seed ^ rt_mix64((uint64_t)epoch + 0x5EED));
	for (int64_t i = 0; i < n; i++)
		perm[i] = (int32_t)i;
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)(rt_uniform(key, (uint64_t)i) * (double)(i + 1));
		int32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}

typedef struct {
	int64_t total, per_epoch, epochs, log_every;
	int64_t first_step; /* where this run started (after --resume), for the ETA */
	int stopped_by;     /* the signal that stopped the run early, 0 when none did */
	double t0;
	double train_s;  /* time in training steps, evaluation excluded */
	double last_loss;
	double accuracy; /* held-out, NAN before the first evaluation */
	Progress prog;
} Plan;

/* Where the run stands after step L->step, over the interval iv so far. */
static ProgressRow progress_row(const Loop *L, const Plan *p, const Interval *iv, int64_t epoch)
{
	double t = rt_clock_s();
	int64_t done = L->step - p->first_step;
	return (ProgressRow){
		.step = L->step, .total = p->total, .epoch = epoch + 1, .epochs = p->epochs,
		.loss = iv->loss_sum / (double)iv->steps,
		.accuracy = L->classes ? 100.0 * (double)iv->hits / (double)iv->seen : NAN,
		.examples_per_s = (double)(iv->steps * step_examples(L)) / (t - iv->t_mark),
		.elapsed_s = t - p->t0,
		.eta_s = done > 0 ? p->train_s / (double)done * (double)(p->total - L->step) : NAN,
		.lr = L->lr, .eval_accuracy = NAN,
	};
}

/* The checkpoint after step L->step when the options ask for one (final: the run's end). */
static bool maybe_save(const Loop *L, const TrainOptions *o, bool final, char *err, size_t errlen)
{
	if (!o->save || L->rank != 0 || (!final && (o->save_every <= 0 || L->step % o->save_every)))
		return true;
	RtCheckpointMeta m = {.step = L->step};
	rt_loss_scale_to_meta(&L->scale, &m);
	if (!rt_checkpoint_save(L->s, o->save, &m, err, errlen))
		return false;
	if (!o->quiet && final && !stop_signal)
		printf("saved: %s (step %lld)\n", o->save, (long long)L->step);
	return true;
}

/* Runs the epochs from step L->step on; false with err set when the loss stops being finite. */
static bool run_epochs(Loop *L, Plan *p, const Dataset *train, const Dataset *test, const TrainOptions *o,
		       char *err, size_t errlen)
{
	bool quiet = o->quiet;
	int32_t *perm = malloc((size_t)train->n * sizeof *perm);
	p->first_step = L->step;
	if (!perm) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	BatchOrder order = {.L = L, .d = train, .per_epoch = p->per_epoch, .epoch = -1,
			    .perm = train->decode_ahead ? malloc((size_t)train->n * sizeof *order.perm) : NULL};
	if (order.perm)
		L->ahead = start_ahead(L, train, train_order, &order, L->step * L->accumulate, p->total * L->accumulate);
	Interval iv = {.t_mark = rt_clock_s()};
	bool ok = true, evaluated = false; /* at the run's last step */
	const int64_t e0 = L->step / p->per_epoch;
	bool stopping = false; /* a stop signal came: the step it came in is the last */
	for (int64_t e = e0; e < p->epochs && ok && L->step < p->total && !stopping; e++) {
		/* --overfit-batch keeps epoch 0's order and its first batch throughout */
		if (!L->overfit || e == e0)
			shuffle(perm, train->n, L->seed, L->overfit ? 0 : e);
		for (int64_t k = L->step % p->per_epoch; k < p->per_epoch && L->step < p->total && !stopping; k++) {
			double t = rt_clock_s();
			int64_t hits;
			float loss = train_step(L, train, perm + (L->overfit ? 0 : k) * step_examples(L), e, &hits);
			p->train_s += rt_clock_s() - t;
			if (rt_error(L->s)) {
				snprintf(err, errlen, "%s (at step %lld)", rt_error(L->s), (long long)L->step);
				ok = false;
				break;
			}
			if (!isfinite(loss)) {
				snprintf(err, errlen, "the training loss is %f at step %lld (epoch %lld): "
					 "try a lower learning rate", loss, (long long)L->step, (long long)e + 1);
				ok = false;
				break;
			}
			if (!(ok = maybe_save(L, o, false, err, errlen)))
				break;
			iv.loss_sum += loss;
			iv.hits += hits;
			iv.seen += step_examples(L);
			iv.steps++;
			/* a stop signal ends the interval here, without the evaluation */
			stopping = stop_signal != 0;
			bool last = L->step == p->total;
			bool eval_now = test && !stopping && (L->step % p->per_epoch == 0 || last);
			ProgressRow row = progress_row(L, p, &iv, e);
			if (L->step % p->log_every && !last && !eval_now && !stopping) {
				progress_step(&p->prog, &row);
				continue;
			}
			/* the interval ends: its line, the evaluation, then its CSV row with both */
			p->last_loss = row.loss;
			progress_interval(&p->prog, &row);
			if (eval_now) {
				progress_break(&p->prog);
				ok = evaluate(L, test, quiet, &p->accuracy);
				row.eval_accuracy = p->accuracy;
				evaluated = last;
			}
			progress_log(&p->prog, &row);
			if (!ok)
				break;
			iv = (Interval){.t_mark = rt_clock_s()}; /* the interval's rate counts training only */
		}
	}
	rt_prefetch_stop(L->ahead); /* before the final evaluation, which makes its own */
	L->ahead = NULL;
	free(order.perm);
	if (ok && test && !evaluated && !stop_signal) {
		progress_break(&p->prog);
		ok = evaluate(L, test, quiet, &p->accuracy);
	}
	p->stopped_by = stop_signal; /* one that came in the evaluation stops the run too */
	ok = ok && maybe_save(L, o, true, err, errlen);
	if (!ok && rt_error(L->s) && !strstr(err, rt_error(L->s)))
		snprintf(err, errlen, "%s (in the evaluation)", rt_error(L->s));
	free(perm);
	return ok;
}

/* The run's length in steps and epochs: --steps (N steps, across epochs) or --epochs (whole
 * epochs), which exclude each other on the command line and override the file; else the file's
 * steps, else its epochs. Every count the loop derives from them (micro-batches, examples) must
 * fit in 64 bits: absurd lengths are an error, never a wrapped count. */
static bool make_plan(const Bundle *b, const TrainOptions *o, const Dataset *train, int ranks, Plan *p,
		      char *err, size_t errlen)
{
	*p = (Plan){.accuracy = NAN, .last_loss = NAN};
	int64_t k = batches_per_step(b) * ranks, step_examples, run_examples;
	if (__builtin_mul_overflow(b->batch, k, &step_examples)) {
		snprintf(err, errlen, "a step of %lld batches of %lld examples is more than netc can count", (long long)k,
			 (long long)b->batch);
		return false;
	}
	p->per_epoch = train->n / step_examples; /* optimizer steps */
	if (p->per_epoch == 0) {
		snprintf(err, errlen, "the training set has %lld examples, fewer than one step of %lld (%lld batch%s "
			 "of %lld%s)", (long long)train->n, (long long)step_examples, (long long)k, k == 1 ? "" : "es",
			 (long long)b->batch, ranks > 1 ? " over the ranks" : "");
		return false;
	}
	int64_t steps = o->steps > 0 ? o->steps : o->epochs > 0 ? 0 : b->train.steps;
	if (steps > 0) {
		p->total = steps;
		p->epochs = (steps - 1) / p->per_epoch + 1;
	} else {
		p->epochs = o->epochs > 0 ? o->epochs : b->train.epochs > 0 ? b->train.epochs : 1;
		if (__builtin_mul_overflow(p->epochs, p->per_epoch, &p->total)) {
			snprintf(err, errlen, "%lld epochs of %lld steps are more steps than netc can count (2^63)",
				 (long long)p->epochs, (long long)p->per_epoch);
			return false;
		}
	}
	if (__builtin_mul_overflow(p->total, step_examples, &run_examples)) {
		snprintf(err, errlen, "%lld steps of %lld examples are more examples than netc can count (2^63)",
			 (long long)p->total, (long long)step_examples);
		return false;
	}
	p->log_every = o->log_every > 0 ? o->log_every : b->train.log_every > 0 ? b->train.log_every : 50;
	return true;
}

static void summary(const Plan *p, int64_t steps, int64_t batch)
{
	printf("done: %lld steps, %lld epoch%s in %.1f s; ", (long long)p->total, (long long)p->epochs,
	       p->epochs == 1 ? "" : "s", rt_clock_s() - p->t0);
	if (steps > 0)
		printf("final training loss %.4f", p->last_loss);
	else
		printf("no step left to train (resumed at step %lld)", (long long)p->total);
	if (!isnan(p->accuracy))
		printf(", held-out accuracy %.2f%%", p->accuracy);
	if (steps > 0)
		printf(", %.0f examples/s", p->train_s > 0 ? (double)(steps * batch) / p->train_s : 0.0);
	printf("\n");
}

/* --resume: the weights, the state, the step counter and fp16's loss scale, so that the schedule,
 * the shuffling, the dropout masks and the scaling continue where the run stopped. */
static bool resume(Loop *L, const TrainOptions *o, const Plan *p, char *err, size_t errlen)
{
	if (!o->resume)
		return true;
	RtCheckpointMeta m;
	if (!rt_checkpoint_load(L->s, o->resume, &m, err, errlen))
		return false;
	if (m.step > p->total) {
		snprintf(err, errlen, "%s: saved at step %lld; this run has %lld steps", o->resume,
			 (long long)m.step, (long long)p->total);
		return false;
	}
	L->step = m.step;
	rt_loss_scale_from_meta(&L->scale, &m);
	if (!o->quiet)
		printf("resumed: %s at step %lld\n", o->resume, (long long)m.step);
	return true;
}

/* The line a run stopped by a signal ends with, on stderr (even with --quiet). */
static void report_stop(int sig, const Loop *L, const Plan *p, const TrainOptions *o)
{
	fprintf(stderr, "netc: stopped by %s after step %lld of %lld; ", sig == SIGINT ? "SIGINT" : "SIGTERM",
		(long long)L->step, (long long)p->total);
	if (o->save)
		fprintf(stderr, "saved %s (--resume %s continues the run)\n", o->save, o->save);
	else
		fprintf(stderr, "nothing saved (no --save)\n");
}

/* Trains on session s; *stopped_by: the signal that stopped the run early, 0 when none did. */
static bool train_session(Session *s, RtComm *comm, const TrainOptions *o, const Dataset *train,
			  const Dataset *test, int *stopped_by, char *err, size_t errlen)
{
	const Bundle *b = rt_bundle(s);
	Plan p;
	if (!make_plan(b, o, train, comm ? comm->size : 1, &p, err, errlen))
		return false;
	rt_init_params(s, o->seed);
	Loop L;
	bool ok = loop_init(&L, s, o->seed);
	if (!ok)
		snprintf(err, errlen, "out of memory");
	ok = ok && (!o->init || rt_init_from(s, o->init, o->init_source, err, errlen));
	if (ok && o->init && !o->quiet)
		printf("weights: %s\n", o->init_source);
	L.total = p.total;
	L.overfit = o->overfit_batch;
	if (comm) {
		L.comm = comm;
		L.rank = comm->rank;
		L.ranks = comm->size;
	}
	ok = ok && resume(&L, o, &p, err, errlen);
	p.t0 = rt_clock_s();
	bool eval = has_eval(b) && !test->no_holdout && !o->overfit_batch;
	if (ok && o->overfit_batch && !o->quiet)
		printf("eval: none (--overfit-batch trains on one batch: its loss must fall)\n");
	else if (ok && !has_eval(b) && !o->quiet)
		printf("eval: none (the bundle has no evaluation program)\n");
	else if (ok && test->no_holdout && !o->quiet)
		printf("eval: none (%s has no held-out set)\n",
		       strcmp(b->train.dataset, "folder") ? "synthetic data" : "an image folder without val or test");
	/* a terminal gets the bar redrawn in place; pipes and files plain lines */
	ok = ok && progress_open(&p.prog, stdout, isatty(fileno(stdout)), o->quiet, o->log_csv, err, errlen);
	if (ok) {
		struct sigaction old[2];
		catch_stop_signals(old);
		ok = run_epochs(&L, &p, train, eval && L.rank == 0 ? test : NULL, o, err, errlen);
		restore_signals(old);
	}
	char log_err[512];
	if (!progress_close(&p.prog, log_err, sizeof log_err) && ok) {
		snprintf(err, errlen, "%s", log_err);
		ok = false;
	}
	*stopped_by = ok ? p.stopped_by : 0;
	fflush(stdout);
	if (*stopped_by && L.rank == 0)
		report_stop(*stopped_by, &L, &p, o);
	else if (ok && !o->quiet)
		summary(&p, L.step - p.first_step, step_examples(&L));
	if (ok && !o->quiet)
		rt_loss_scale_summary(&L.scale, stdout);
	loop_free(&L);
	return ok;
}

/* CPU threads of a rank: the ranks of one machine share its cores unless --threads says otherwise. */
static int rank_threads(int threads, const RtRanks *r)
{
	int local = r ? r->local_size : 1, cores = rt_pool_default_threads();
	if (threads || local <= 1)
		return threads;
	return cores / local > 1 ? cores / local : 1;
}

/* Rank r's options: only rank 0 prints, logs and saves. */
static TrainOptions rank_options(const TrainOptions *o, int rank)
{
	TrainOptions r = *o;
	r.threads = rank_threads(o->threads, o->ranks);
	if (rank != 0) {
		r.quiet = true;
		r.log_csv = NULL;
		r.save = NULL;
	}
	return r;
}

/* Data-parallel: the ranks' communicator on s, which averages the gradients from now on; NULL
 * with err set on failure, and NULL with err "" for a run of one process. */
static RtComm *join_ranks(Session *s, const TrainOptions *o, char *err, size_t errlen)
{
	err[0] = 0;
	if (!o->ranks || o->ranks->launch == RT_LAUNCH_NONE)
		return NULL;
	RtComm *c = rt_ranks_connect(o->ranks, s, err, errlen);
	if (c && !rt_set_comm(s, c, err, errlen)) {
		rt_ranks_close(c);
		return NULL;
	}
	if (c && !o->quiet && c->rank == 0)
		printf("ranks: %d (%s), %lld examples per step\n", c->size, c->ops->name,
		       (long long)(rt_bundle(s)->batch * batches_per_step(rt_bundle(s)) * c->size));
	return c;
}

int rt_train(const Bundle *b, const TrainOptions *all)
{
	char err[1024];
	Dataset train = {0}, test = {0};
	int stopped_by = 0;
	int rank = all->ranks ? all->ranks->rank : 0;
	TrainOptions opts = rank_options(all, rank), *o = &opts;
	char device[64];
	rt_rank_device(b, o->device ? o->device : "auto", all->ranks ? all->ranks : &(RtRanks){0}, device, sizeof device);
	/* the device first: one that is not there is said before a data set is built */
	Session *s = rt_open(b, device, o->threads, err, sizeof err);
	bool ok = s != NULL;
	if (ok && !o->quiet)
		printf("device: %s%s%s\n", rt_device_info(s), *rt_device_note(s) ? "; " : "", rt_device_note(s));
	RtComm *comm = ok ? join_ranks(s, o, err, sizeof err) : NULL;
	ok = ok && (comm || !err[0]);
	ok = ok && load_data(b, o->data_dir, o->seed, &train, &test, err, sizeof err);
	if (ok && !o->quiet)
		printf("data: %s\n", train.source);
	bool eval = has_eval(b) && !test.no_holdout;
	ok = ok && check_bundle(b, &train, err, sizeof err) &&
	     (!eval || !has_classes(b) || check_scores(b, b->eval_output, "evaluation output", test.classes, err, sizeof err)) &&
	     (!eval || expect(b, b->eval_loss, "evaluation loss", DT_F32, -1, NULL, err, sizeof err)) &&
	     train_session(s, comm, o, &train, &test, &stopped_by, err, sizeof err);
	fflush(stdout);
	if (!ok && all->ranks && all->ranks->size > 1)
		fprintf(stderr, "error: rank %d: %s\n", rank, err);
	else if (!ok)
		fprintf(stderr, "error: %s\n", err);
	if (!ok && comm)
		rt_comm_abort(comm, "ends the run: the other ranks cannot go on without it");
	rt_close(s);
	if (comm)
		rt_ranks_close(comm);
	rt_dataset_free(&train);
	rt_dataset_free(&test);
	return !ok ? 1 : stopped_by ? 128 + stopped_by : 0;
}

/* ---- netc eval ---- */

static bool eval_session(const Bundle *b, const TrainOptions *o, const Dataset *test, char *err, size_t errlen)
{
	Session *s = rt_open(b, o->device ? o->device : "auto", o->threads, err, errlen);
	if (!s)
		return false;
	if (!o->quiet)
		printf("device: %s\n", rt_device_info(s));
	rt_init_params(s, o->seed);
	Loop L;
	RtCheckpointMeta m;
	double accuracy;
	bool ok = loop_init(&L, s, o->seed);
	if (!ok)
		snprintf(err, errlen, "out of memory");
	if (o->resume) {
		ok = ok && rt_checkpoint_load(s, o->resume, &m, err, errlen);
		if (ok && !o->quiet)
			printf("checkpoint: %s (step %lld)\n", o->resume, (long long)m.step);
	} else {
		ok = ok && rt_init_from(s, o->init, o->init_source, err, errlen);
		if (ok && !o->quiet)
			printf("weights: %s\n", o->init_source);
	}
	if (ok && !(ok = evaluate(&L, test, false, &accuracy)))
		snprintf(err, errlen, "%s (in the evaluation)", rt_error(s));
	loop_free(&L);
	rt_close(s);
	return ok;
}

int rt_eval(const Bundle *b, const TrainOptions *o)
{
	char err[1024];
	Dataset train = {0}, test = {0};
	bool ok = load_data(b, o->data_dir, o->seed, &train, &test, err, sizeof err);
	if (ok && !has_eval(b)) {
		snprintf(err, sizeof err, "the bundle has no evaluation program");
		ok = false;
	}
	if (ok && test.no_holdout) {
		snprintf(err, sizeof err, "synthetic data has no held-out set to evaluate on: pass --data DIR "
			 "of a data set the model was trained on");
		ok = false;
	}
	if (ok && !o->quiet)
		printf("data: %s\n", test.source);
	ok = ok && check_bundle(b, &train, err, sizeof err) &&
	     (!has_classes(b) || check_scores(b, b->eval_output, "evaluation output", test.classes, err, sizeof err)) &&
	     eval_session(b, o, &test, err, sizeof err);
	fflush(stdout);
	if (!ok)
		fprintf(stderr, "error: %s\n", err);
	rt_dataset_free(&train);
	rt_dataset_free(&test);
	return ok ? 0 : 1;
}

/* ---- benchmark ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A fixed batch of random inputs, so that no loader runs in the timing: floats uniform in
 * [-1, 1), class labels of the scores, other i32 inputs (indices) in [0, 8). */
static void random_batch(Loop *L)
{
	uint64_t key = rt_mix64(L->seed ^ 0xBE1C4);
	for (int k = 0; k < L->b->ninputs; k++) {
		const int buf = L->b->inputs[k];
		const BundleBuffer *x = &L->b->buf[buf];
		int64_t n = buf_elements(x);
		double *v = malloc((size_t)(n + 1) * sizeof *v);
		if (!v)
			abort();
		uint64_t stream = key ^ (uint64_t)k;
		for (int64_t i = 0; i < n; i++) {
			double u = rt_uniform(stream, (uint64_t)i);
			if (buf == L->b->label && has_classes(L->b))
				v[i] = (double)((int64_t)(u * 10) % (L->classes ? L->classes : 1));
			else
				v[i] = x->dtype == DT_I32 ? floor(u * 8) : 2 * u - 1;
		}
		rt_write_values(L->s, buf, v, n);
		free(v);
	}
	float lr = (float)L->b->train.lr;
	int32_t rng[2] = {(int32_t)(uint32_t)L->seed, 0};
	rt_write(L->s, L->b->lr, &lr, sizeof lr);
	rt_write(L->s, L->b->rng, rng, sizeof rng);
	rt_loss_scale_write(&L->scale, L->s);
}

/* A whole optimizer step: the accumulation batches (the same random batch), then the update. */
static void bench_step(Loop *L)
{
	for (int64_t j = 1; j < L->accumulate; j++)
		rt_run(L->s, RT_PROG_ACCUM);
	rt_run(L->s, RT_PROG_TRAIN);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* repeats profiled steps: each kernel's median, and the steps' (launch by launch, so slower
 * than a step run whole; the difference to the kernels' sum is what launching costs). */
static bool profile_session(Loop *L, int repeats, BenchResult *r)
{
	int n;
	const BundleKernel *k = rt_train_kernels(L->s, &n);
	double *sec = calloc((size_t)n * (size_t)repeats + 1, sizeof *sec), *step = calloc((size_t)repeats, sizeof *step);
	r->kernels = calloc(n ? (size_t)n : 1, sizeof *r->kernels);
	r->kernel_ms = calloc(n ? (size_t)n : 1, sizeof *r->kernel_ms);
	if (!sec || !step || !r->kernels || !r->kernel_ms) {
		free(sec);
		free(step);
		return false;
	}
	memcpy(r->kernels, k, (size_t)n * sizeof *k);
	r->nkernels = n;
	for (int i = 0; i < repeats; i++) {
		rt_profile(L->s, sec + (size_t)i * n);
		double t = rt_clock_s();
		bench_step(L);
		rt_sync(L->s);
		step[i] = (rt_clock_s() - t) * 1e3;
		rt_profile(L->s, NULL);
	}
	r->kernel_timing = rt_profile_timing(L->s);
	double *col = calloc((size_t)repeats, sizeof *col);
	for (int j = 0; col && j < n; j++) {
		for (int i = 0; i < repeats; i++)
			col[i] = sec[(size_t)i * n + j] * 1e3;
		r->kernel_ms[j] = median(col, repeats);
	}
	r->profiled_step_ms = median(step, repeats);
	free(col);
	free(sec);
	free(step);
	return true;
}

void rt_bench_result_free(BenchResult *r)
{
	free(r->kernels);
	free(r->kernel_ms);
	r->kernels = NULL;
	r->kernel_ms = NULL;
	r->nkernels = 0;
}

static bool bench_session(Session *s, const BenchOptions *o, BenchResult *r)
{
	Loop L;
	int repeats = o->repeats > 0 ? o->repeats : 1;
	int64_t steps = o->steps > 0 ? o->steps : 1;
	double *ms = malloc((size_t)repeats * sizeof *ms);
	bool ok = loop_init(&L, s, o->seed) && ms;
	if (ok) {
		rt_init_params(s, o->seed);
		random_batch(&L);
		for (int64_t i = 0; i < o->warmup; i++)
			bench_step(&L);
		rt_sync(s);
		for (int k = 0; k < repeats; k++) {
			double t = rt_clock_s();
			for (int64_t i = 0; i < steps; i++)
				bench_step(&L);
			rt_sync(s); /* a GPU queues the steps: time them done */
			ms[k] = (rt_clock_s() - t) * 1e3 / (double)steps;
		}
		r->graphs = rt_graphs(s);
		qsort(ms, (size_t)repeats, sizeof *ms, cmp_double);
		r->ms_per_step = repeats % 2 ? ms[repeats / 2] : (ms[repeats / 2 - 1] + ms[repeats / 2]) / 2;
		r->ms_min = ms[0];
		r->ms_max = ms[repeats - 1];
		r->examples_per_s = (double)(L.batch * L.accumulate) * 1e3 / r->ms_per_step;
		if (o->profile)
			ok = profile_session(&L, repeats, r);
	}
	free(ms);
	loop_free(&L);
	return ok;
}

/* Data-parallel: every rank times the plain step at once (the all-reduce's baseline), then
 * rejoins the ranks. */
static bool bench_alone(Session *s, RtComm *comm, const BenchOptions *o, BenchResult *r, char *err, size_t errlen)
{
	BenchResult alone = {0};
	bool ok = rt_comm_barrier(comm, "the barrier before the benchmark") && rt_set_comm(s, NULL, err, errlen) &&
		  bench_session(s, o, &alone) && !rt_error(s) && rt_set_comm(s, comm, err, errlen) &&
		  rt_comm_barrier(comm, "the barrier after the one-rank benchmark");
	r->ms_alone = alone.ms_per_step;
	if (!ok && !err[0])
		snprintf(err, errlen, "%s", rt_error(s) ? rt_error(s) : comm->error[0] ? comm->error : "out of memory");
	return ok;
}

int rt_bench(const Bundle *b, const BenchOptions *o, BenchResult *r)
{
	char err[1024];
	memset(r, 0, sizeof *r);
	/* random batches of the model's own input shapes fit any loss, as synthetic data */
	bool ok = check_bundle(b, NULL, err, sizeof err);
	char device[64];
	rt_rank_device(b, o->device ? o->device : "auto", o->ranks ? o->ranks : &(RtRanks){0}, device, sizeof device);
	r->threads = rank_threads(o->threads, o->ranks);
	Session *s = ok ? rt_open(b, device, r->threads, err, sizeof err) : NULL;
	TrainOptions join = {.ranks = o->ranks, .quiet = true};
	RtComm *comm = s ? join_ranks(s, &join, err, sizeof err) : NULL;
	if (s && !comm && err[0])
		ok = false;
	else if (s) {
		snprintf(r->device, sizeof r->device, "%s", rt_device_info(s));
		snprintf(r->device_note, sizeof r->device_note, "%s", rt_device_note(s));
		snprintf(r->arch, sizeof r->arch, "%s", rt_device_arch(s));
		snprintf(r->model, sizeof r->model, "%s", rt_device_model(s));
		if (comm) {
			ok = bench_alone(s, comm, o, r, err, sizeof err);
			r->ranks = comm->size;
			snprintf(r->engine, sizeof r->engine, "%s", comm->ops->name);
		}
		ok = ok && bench_session(s, o, r) && !rt_error(s);
		r->examples_per_s *= comm ? comm->size : 1; /* every rank's examples */
		snprintf(err, sizeof err, "%s", rt_error(s) ? rt_error(s) : "out of memory");
	}
	rt_close(s);
	if (comm)
		rt_ranks_close(comm);
	if (!s || !ok) {
		fprintf(stderr, "error: %s\n", err);
		return 1;
	}
	return 0;
}
