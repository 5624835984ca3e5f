/* devices.c: which devices there are, which one a run takes, and which of a bundle's code
 * objects runs on it.
 *
 * `--device auto` tries the GPUs of every backend the bundle has code for, in the order of
 * backends[] below, and takes the first whose architecture the bundle has code for; else the CPU.
 * A bundle with host code alone never loads a GPU driver.
 * It notes why it passed over each backend, so the run's log says why it runs where it runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/rt.h"

/* GPUs first: auto prefers them; the CPU last. */
static const RtDeviceOps *const backends[] = {&rt_device_cuda, &rt_device_hip, &rt_device_cpu};
#define NBACKENDS (int)(sizeof backends / sizeof backends[0])

/* ---- matching code objects to devices ---- */

/* Every ":feature+" or ":feature-" of the code object's target that the device states agrees
 * with it: "gfx90a:xnack-" runs on "gfx90a:sramecc+:xnack-", not on "gfx90a:xnack+". */
static bool features_agree(const char *target, const char *device)
{
	for (const char *f = strchr(target, ':'); f; f = strchr(f + 1, ':')) {
		size_t n = strcspn(f + 1, ":");
		if (n < 2)
			continue;
		for (const char *g = strchr(device, ':'); g; g = strchr(g + 1, ':'))
			if (strncmp(g + 1, f + 1, n - 1) == 0 && strcspn(g + 1, ":") == n && g[n] != f[n])
				return false;
	}
	return true;
}

static int sm_number(const char *arch)
{
	return strncmp(arch, "sm_", 3) == 0 ? atoi(arch + 3) : -1;
}

const BundleCode *rt_code_for(const Bundle *b, int kind, const RtDeviceInfo *info)
{
	const BundleCode *older = NULL;
	for (int i = 0; i < b->ncode; i++) {
		const BundleCode *c = &b->code[i];
		if (c->kind != kind)
			continue;
		if (strcmp(c->arch, info->arch) == 0 && features_agree(c->target, info->full_arch))
			return c;
		/* PTX for an older GPU is compiled for a newer one by the driver: the newest such */
		int sm = sm_number(c->arch);
		if (kind == CODE_PTX && sm > 0 && sm <= sm_number(info->arch) &&
		    (!older || sm > sm_number(older->arch)))
			older = c;
	}
	return older;
}

/* "host, gfx906, sm_90" */
static void list_targets(const Bundle *b, const char *sep, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i < b->ncode && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? sep : "", b->code[i].target);
}

/* The error for a device the bundle has no code for, with the command that adds it and keeps
 * the bundle's other targets. */
static void missing_code(const Bundle *b, const char *device, const char *arch, char *err, size_t errlen)
{
	char have[256], keep[256];
	list_targets(b, ", ", have, sizeof have);
	list_targets(b, ",", keep, sizeof keep);
	snprintf(err, errlen, "%s: the bundle has no code for %s (it has: %s); compile it with "
		 "`netc compile %s.net --target %s%s%s --batch %lld -o %s.bundle`", device, arch,
		 b->ncode ? have : "none", b->model, keep, b->ncode ? "," : "", arch, (long long)b->batch,
		 b->model);
}

/* ---- choosing ---- */

static const RtDeviceOps *backend_named(const char *name, size_t len)
{
	for (int i = 0; i < NBACKENDS; i++)
		if (strlen(backends[i]->name) == len && strncmp(backends[i]->name, name, len) == 0)
			return backends[i];
	return NULL;
}

/* "cuda", "cuda:1", "hip", "cpu" into a backend and an index. */
static bool parse_spec(const char *spec, const RtDeviceOps **ops, int *index, char *err, size_t errlen)
{
	size_t n = strcspn(spec, ":");
	*ops = backend_named(spec, n);
	*index = 0;
	if (!*ops) {
		snprintf(err, errlen, "unknown device '%s' (choices: auto, cpu, cuda, cuda:N, hip, hip:N)", spec);
		return false;
	}
	if (!spec[n])
		return true;
	const char *num = spec + n + 1;
	char *end;
	long v = strtol(num, &end, 10);
	if (*ops == &rt_device_cpu) {
		snprintf(err, errlen, "device '%s': the CPU is one device: say cpu (--threads sets its threads)",
			 spec);
		return false;
	}
	if (!*num || *end || v < 0 || v > 1024 || num[0] == '+' || num[0] == '-' || num[0] == ' ') {
		snprintf(err, errlen, "device '%s': '%s' is not a device number (%s:0, %s:1, ...)", spec, num,
			 (*ops)->name, (*ops)->name);
		return false;
	}
	*index = (int)v;
	return true;
}

bool rt_device_spec_valid(const char *spec, char *err, size_t errlen)
{
	const RtDeviceOps *ops;
	int index;
	return !spec || !*spec || strcmp(spec, "auto") == 0 || parse_spec(spec, &ops, &index, err, errlen);
}

static bool bundle_has_kind(const Bundle *b, int kind)
{
	for (int i = 0; i < b->ncode; i++)
		if (b->code[i].kind == kind)
			return true;
	return false;
}

/* The device named by spec, which must have code in the bundle. */
static bool choose_named(const Bundle *b, const char *spec, RtChoice *c, char *err, size_t errlen)
{
	if (!parse_spec(spec, &c->ops, &c->index, err, errlen) ||
	    !c->ops->query(c->index, &c->info, err, errlen))
		return false;
	c->code = rt_code_for(b, c->ops->code_kind, &c->info);
	if (c->code)
		return true;
	char device[192];
	if (c->ops == &rt_device_cpu)
		snprintf(device, sizeof device, "cpu (host)");
	else
		snprintf(device, sizeof device, "%s:%d (%.80s, %.60s)", c->ops->name, c->index, c->info.name,
			 c->info.full_arch);
	missing_code(b, device, c->info.arch, err, errlen);
	return false;
}

static void note(RtChoice *c, const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(c->note);
	snprintf(c->note + n, sizeof c->note - n, fmt, n ? "; " : "", a, b);
}

/* The first GPU of ops that the bundle has code for; notes why there is none. */
static bool first_gpu(const Bundle *b, const RtDeviceOps *ops, RtChoice *c, char *passed, size_t len)
{
	char why[256];
	int n = ops->count(why, sizeof why);
	if (n <= 0)
		note(c, "%s%s: %s", ops->name, why);
	for (int i = 0; i < n; i++) {
		char err[512];
		if (!ops->query(i, &c->info, err, sizeof err)) {
			note(c, "%s%s%s", "", err);
			continue;
		}
		if ((c->code = rt_code_for(b, ops->code_kind, &c->info))) {
			c->ops = ops;
			c->index = i;
			return true;
		}
		snprintf(err, sizeof err, "%s:%d is %s", ops->name, i, c->info.arch);
		note(c, "%s%s%s", err, ", the bundle has no code for it");
		if (!passed[0])
			snprintf(passed, len, "%s:%d", ops->name, i);
	}
	return false;
}

static bool choose_auto(const Bundle *b, RtChoice *c, char *err, size_t errlen)
{
	bool gpu_code = false;
	char passed[32] = ""; /* the first GPU there was no code for */
	for (int i = 0; i < NBACKENDS && backends[i] != &rt_device_cpu; i++) {
		/* without host code, look at every GPU: one of them is what to compile for */
		if (!bundle_has_kind(b, backends[i]->code_kind) && bundle_has_kind(b, CODE_HOST))
			continue;
		gpu_code = true;
		if (first_gpu(b, backends[i], c, passed, sizeof passed))
			return true;
	}
	/* a GPU is here and the bundle can run nowhere: the fix is code for the GPU */
	if (passed[0] && !bundle_has_kind(b, CODE_HOST))
		return choose_named(b, passed, c, err, errlen);
	char why[sizeof c->note];
	snprintf(why, sizeof why, "%s", c->note);
	if (gpu_code)
		snprintf(c->note, sizeof c->note, "no GPU to run on (%.700s)", why);
	if (choose_named(b, "cpu", c, err, errlen))
		return true;
	if (gpu_code) {
		size_t n = strlen(err);
		snprintf(err + n, errlen - n, " (no GPU either: %s)", why);
	}
	return false;
}

bool rt_choose_device(const Bundle *b, const char *spec, RtChoice *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	if (!spec || !*spec || strcmp(spec, "auto") == 0)
		return choose_auto(b, c, err, errlen);
	return choose_named(b, spec, c, err, errlen);
}

/* ---- listing ---- */

int rt_device_count(const char *kind, char *why, size_t len)
{
	for (int i = 0; i < NBACKENDS; i++)
		if (strcmp(backends[i]->name, kind) == 0)
			return backends[i]->count(why, len);
	snprintf(why, len, "no device kind '%s'", kind);
	return -1;
}

int rt_devices_print(FILE *out)
{
	int found = 0;
	for (int i = 0; i < NBACKENDS; i++) {
		const RtDeviceOps *ops = backends[i];
		char why[256], line[512];
		int n = ops->count(why, sizeof why);
		if (n <= 0)
			fprintf(out, "%s: %s\n", ops->name, why);
		for (int k = 0; k < n; k++) {
			RtDeviceInfo info;
			if (!ops->query(k, &info, line, sizeof line)) {
				fprintf(out, "%s\n", line);
				continue;
			}
			rt_device_line(ops, k, &info, line, sizeof line);
			fprintf(out, "%s\n", line);
			found++;
		}
	}
	rt_engines_print(out);
	return found;
}
