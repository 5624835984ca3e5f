/* predict.c: `netc eval --input X.npy -o Y.npy`, the evaluation program on a batch of images
 * given as a file, its output written as one: what compares netc's forward pass with another
 * runtime's on the same inputs and weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/image_dtype.h"
#include "runtime/npy.h"
#include "runtime/rt.h"

static bool same_dims(int rank, const int64_t *dim, const BundleBuffer *x)
{
	if (rank != x->rank)
		return false;
	for (int d = 0; d < rank; d++)
		if (dim[d] != x->dim[d])
			return false;
	return true;
}

/* The weights: the checkpoint, else the starting set. */
static bool load_weights(Session *s, const TrainOptions *o, char *err, size_t errlen)
{
	if (o->resume)
		return rt_checkpoint_load(s, o->resume, NULL, err, errlen);
	if (o->init)
		return rt_init_from(s, o->init, o->init_source, err, errlen);
	snprintf(err, errlen, "no weights: give --checkpoint F");
	return false;
}

static bool predict(const Bundle *b, const TrainOptions *o, const float *images, char *err, size_t errlen)
{
	Session *s = rt_open(b, o->device ? o->device : "auto", o->threads, err, errlen);
	if (!s)
		return false;
	rt_init_params(s, o->seed);
	bool ok = load_weights(s, o, err, errlen);
	const BundleBuffer *img = &b->buf[b->image], *out = &b->buf[b->eval_output];
	int64_t pixels = img->bytes / (int64_t)dtype_size((DType)img->dtype);
	int32_t *labels = calloc((size_t)b->batch, sizeof *labels); /* class 0: the loss needs some label */
	float *y = malloc((size_t)out->bytes);
	if (ok && (!labels || !y))
		ok = false, snprintf(err, errlen, "out of memory");
	if (ok) {
		rt_write_image(s, b->image, images, pixels);
		if (b->label >= 0)
			rt_write(s, b->label, labels, (size_t)b->batch * sizeof *labels);
		rt_run(s, RT_PROG_EVAL);
		rt_read(s, b->eval_output, y, (size_t)out->bytes);
		if (rt_error(s))
			ok = false, snprintf(err, errlen, "%s", rt_error(s));
	}
	int64_t dim[BUNDLE_MAX_DIMS];
	memcpy(dim, out->dim, sizeof dim);
	ok = ok && rt_npy_write(o->output, out->rank, dim, y, err, errlen);
	free(labels);
	free(y);
	rt_close(s);
	return ok;
}

int rt_predict(const Bundle *b, const TrainOptions *o)
{
	char err[1024];
	int rank = 0;
	int64_t dim[NPY_MAX_DIMS];
	float *images = NULL;
	bool ok = b->image >= 0 && b->eval_output >= 0 && b->buf[b->eval_output].dtype == DT_F32;
	if (!ok)
		snprintf(err, sizeof err, "the bundle has no evaluation program with an f32 output");
	ok = ok && rt_npy_read(o->input, &rank, dim, &images, err, sizeof err);
	char got[96], want[96];
	if (ok && !same_dims(rank, dim, &b->buf[b->image])) {
		snprintf(err, sizeof err, "%s: the images are %s; the model's input is %s (--batch N sets the first)",
			 o->input, rt_shape_text(rank, dim, got, sizeof got),
			 rt_shape_text(b->buf[b->image].rank, b->buf[b->image].dim, want, sizeof want));
		ok = false;
	}
	ok = ok && predict(b, o, images, err, sizeof err);
	free(images);
	if (!ok)
		fprintf(stderr, "error: %s\n", err);
	else if (!o->quiet)
		printf("wrote %s\n", o->output);
	return ok ? 0 : 1;
}
