/* session.c: a bundle loaded on a device: its code object, its kernels resolved, one arena. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/rt.h"

struct Session {
	const Bundle *b;
	const RtDeviceOps *ops;
	const BundleCode *code; /* the code object this device runs */
	RtDevice *dev;
	void *arena;      /* device memory */
	uint8_t *host;    /* the host's view of the arena, NULL where the device has none */
	void *module;
	void **train, **eval; /* kernel handles in launch order */
	char info[128];
};

/* Devices in the order "auto" tries them. */
static const RtDeviceOps *const devices[] = {&rt_device_cpu};
#define NDEVICES (sizeof devices / sizeof devices[0])

static void list_choices(char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "auto");
	for (size_t i = 0; i < NDEVICES && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, ", %s", devices[i]->name);
}

static const RtDeviceOps *pick_device(const Bundle *b, const char *name, char *err, size_t errlen)
{
	bool any = !name || !*name || strcmp(name, "auto") == 0;
	for (size_t i = 0; i < NDEVICES; i++)
		if ((any && bundle_code_for(b, devices[i]->target)) || (name && strcmp(name, devices[i]->name) == 0))
			return devices[i];
	if (any)
		return devices[NDEVICES - 1]; /* the CPU: open says what code is missing */
	char choices[128];
	list_choices(choices, sizeof choices);
	snprintf(err, errlen, "unknown device '%s' (choices: %s)", name, choices);
	return NULL;
}

static void missing_code(const Bundle *b, const RtDeviceOps *ops, char *err, size_t errlen)
{
	char have[256] = "";
	size_t n = 0;
	for (int i = 0; i < b->ncode && n < sizeof have; i++)
		n += (size_t)snprintf(have + n, sizeof have - n, "%s%s", i ? ", " : "", b->code[i].target);
	snprintf(err, errlen, "the bundle has no code for the %s (it has: %s); compile it with "
		 "`netc compile --target %s`", ops->name, b->ncode ? have : "none", ops->target);
}

static void **resolve(Session *s, const BundleKernel *k, int n, char *err, size_t errlen)
{
	void **list = calloc(n ? (size_t)n : 1, sizeof *list);
	if (!list) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (!(list[i] = s->ops->get_kernel(s->dev, s->module, k[i].name, err, errlen))) {
			free(list);
			return NULL;
		}
	return list;
}

Session *rt_open(const Bundle *b, const char *device, int threads, char *err, size_t errlen)
{
	const RtDeviceOps *ops = pick_device(b, device, err, errlen);
	if (!ops)
		return NULL;
	const BundleCode *code = bundle_code_for(b, ops->target);
	if (!code) {
		missing_code(b, ops, err, errlen);
		return NULL;
	}
	Session *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->b = b;
	s->ops = ops;
	s->code = code;
	bool ok = (s->dev = ops->open(threads, err, errlen)) &&
		  (s->arena = ops->alloc(s->dev, (size_t)b->arena_bytes, err, errlen)) &&
		  (s->module = ops->load_code(s->dev, code->data, code->size, err, errlen)) &&
		  (s->train = resolve(s, code->train_kernels, code->ntrain, err, errlen)) &&
		  (s->eval = resolve(s, code->eval_kernels, code->neval, err, errlen));
	if (!ok) {
		rt_close(s);
		return NULL;
	}
	s->host = ops->host_view(s->dev, s->arena);
	ops->describe(s->dev, s->info, sizeof s->info);
	return s;
}

void rt_close(Session *s)
{
	if (!s)
		return;
	free(s->train);
	free(s->eval);
	if (s->module)
		s->ops->unload_code(s->dev, s->module);
	if (s->arena)
		s->ops->free(s->dev, s->arena);
	if (s->dev)
		s->ops->close(s->dev);
	free(s);
}

void rt_run(Session *s, int program)
{
	const BundleCode *c = s->code;
	const BundleKernel *k = program == RT_PROG_TRAIN ? c->train_kernels : c->eval_kernels;
	void **fn = program == RT_PROG_TRAIN ? s->train : s->eval;
	int n = program == RT_PROG_TRAIN ? c->ntrain : c->neval;
	if (program != RT_PROG_TRAIN && program != RT_PROG_EVAL) {
		fprintf(stderr, "%s:%d: rt_run: no program %d\n", __FILE__, __LINE__, program);
		abort();
	}
	for (int i = 0; i < n; i++)
		s->ops->launch(s->dev, fn[i], s->arena, k[i].grid);
	s->ops->synchronize(s->dev);
}

void *rt_buffer(Session *s, int buf)
{
	if (!s->host || buf < 0 || buf >= s->b->nbuf || s->b->buf[buf].offset < 0)
		return NULL;
	return s->host + s->b->buf[buf].offset;
}

static size_t clamp_bytes(const Session *s, int buf, size_t bytes)
{
	const BundleBuffer *x = &s->b->buf[buf];
	return bytes < (size_t)x->bytes ? bytes : (size_t)x->bytes;
}

void rt_write(Session *s, int buf, const void *src, size_t bytes)
{
	if (buf < 0 || buf >= s->b->nbuf || s->b->buf[buf].offset < 0)
		return;
	s->ops->copy_in(s->dev, s->arena, (size_t)s->b->buf[buf].offset, src, clamp_bytes(s, buf, bytes));
}

void rt_read(Session *s, int buf, void *dst, size_t bytes)
{
	if (buf < 0 || buf >= s->b->nbuf || s->b->buf[buf].offset < 0)
		return;
	s->ops->copy_out(s->dev, dst, s->arena, (size_t)s->b->buf[buf].offset, clamp_bytes(s, buf, bytes));
}

const Bundle *rt_bundle(const Session *s) { return s->b; }
const char *rt_device_name(const Session *s) { return s->ops->name; }
const char *rt_device_info(const Session *s) { return s->info; }
