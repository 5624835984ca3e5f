/* profile.c: `netc bench --profile` and `--trace` (profile.h). The runtime times each kernel of
 * the training step launched alone (runtime/train.c, profile_session); this file names them by
 * their fused groups and sets the compiler's counts beside the times. */
#include "tools/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_dir.h"
#include "runtime/launch_timing.h"

/* members cut to fit KernelCounts.members: whole ops, then "..." */
static void fit_members(char *dst, size_t len, const char *members)
{
	size_t n = strlen(members);
	if (n < len) {
		memcpy(dst, members, n + 1);
		return;
	}
	size_t cut = len - 4; /* room for "..." and the NUL */
	while (cut > 0 && members[cut - 1] != '+')
		cut--;
	memcpy(dst, members, cut);
	memcpy(dst + cut, "...", 4);
}

KernelCounts *profile_counts(const Bundle *b, const BenchResult *r)
{
	KernelCounts *c = calloc(r->nkernels ? (size_t)r->nkernels : 1, sizeof *c);
	bool *counted = calloc(b->ngroups ? (size_t)b->ngroups : 1, sizeof *counted);
	if (!c || !counted)
		abort();
	for (int k = 0; k < r->nkernels; k++) {
		const BundleGroup *x = bundle_group_of(b, r->kernels[k].node);
		if (!x || counted[x - b->groups])
			continue;
		counted[x - b->groups] = true;
		c[k].known = true;
		c[k].flops = x->flops;
		c[k].bytes = (double)x->bytes;
		fit_members(c[k].members, sizeof c[k].members, x->members);
	}
	free(counted);
	return c;
}

/* The device's peaks: a GPU's from its row of the target table (which the bundle's code object
 * carries), the CPU's measured (and cached); either replaced by --peak-gflops / --peak-gbs. 0
 * where none is known. */
void profile_roofline(const Bundle *b, const BenchResult *r, double peak_gflops, double peak_gbs, RtRoofline *roof)
{
	memset(roof, 0, sizeof *roof);
	if (strcmp(r->arch, "host") == 0 && !(peak_gflops > 0 && peak_gbs > 0)) {
		char dir[4096];
		if (!rt_host_roofline(r->model, r->threads, rt_cache_dir(dir, sizeof dir) ? dir : NULL, roof))
			memset(roof, 0, sizeof *roof);
	}
	const BundleCode *code = bundle_code_for(b, r->arch);
	if (code && code->peak_gflops > 0) {
		roof->gflops = code->peak_gflops;
		roof->gbs = code->peak_gbs;
		snprintf(roof->source, sizeof roof->source, "%s's row of the target table: %s", code->arch, code->peak_of);
	}
	if (peak_gflops > 0 || peak_gbs > 0) {
		roof->gflops = peak_gflops > 0 ? peak_gflops : roof->gflops;
		roof->gbs = peak_gbs > 0 ? peak_gbs : roof->gbs;
		snprintf(roof->source, sizeof roof->source, "%s%s%s", peak_gflops > 0 ? "--peak-gflops" : "",
			 peak_gflops > 0 && peak_gbs > 0 ? " and " : "", peak_gbs > 0 ? "--peak-gbs" : "");
	}
	if (!(roof->gflops > 0 && roof->gbs > 0))
		memset(roof, 0, sizeof *roof);
}

static const BenchResult *sort_by;
static int slower_first(const void *a, const void *b)
{
	double x = sort_by->kernel_ms[*(const int *)a], y = sort_by->kernel_ms[*(const int *)b];
	return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

bool profile_print(FILE *out, const Bundle *b, const BenchResult *r, const RtRoofline *roof, const char *trace)
{
	KernelCounts *c = profile_counts(b, r);
	int *order = malloc((r->nkernels ? (size_t)r->nkernels : 1) * sizeof *order);
	if (!order)
		abort();
	double sum = 0;
	for (int k = 0; k < r->nkernels; k++) {
		order[k] = k;
		sum += r->kernel_ms[k];
	}
	sort_by = r;
	qsort(order, (size_t)r->nkernels, sizeof *order, slower_first);
	fprintf(out, "%-28s %-36s %9s %9s %9s %9s %8s %6s %6s\n", "kernel", "group", "GFLOP", "MB", "ms", "GFLOP/s",
		"GB/s", "roof", "share");
	for (int i = 0; i < r->nkernels; i++) {
		int k = order[i];
		double ms = r->kernel_ms[k];
		fprintf(out, "%-28s %-36s ", r->kernels[k].name, c[k].known ? c[k].members : "-");
		if (c[k].known)
			fprintf(out, "%9.4f %9.2f ", c[k].flops / 1e9, c[k].bytes / 1e6);
		else
			fprintf(out, "%9s %9s ", "-", "-");
		fprintf(out, "%9.4f ", ms);
		if (c[k].known && ms > 0)
			fprintf(out, "%9.1f %8.1f ", c[k].flops / (ms * 1e6), c[k].bytes / (ms * 1e6));
		else
			fprintf(out, "%9s %8s ", "-", "-");
		double share = c[k].known ? rt_roofline_share(roof, c[k].flops, c[k].bytes, ms / 1e3) : 0;
		if (share > 0)
			fprintf(out, "%5.1f%% ", 100 * share);
		else
			fprintf(out, "%6s ", "-");
		fprintf(out, "%5.1f%%\n", sum > 0 ? 100 * ms / sum : 0);
	}
	bool graphs = r->kernel_timing == RT_TIMED_BY_GRAPHS;
	fprintf(out, "kernels: %d, their sum %.3f ms (medians); the step %s %.3f ms; run whole %.3f ms/step\n",
		r->nkernels, sum, graphs ? "profiled (each kernel's graph captured and replayed)" : "launched kernel by kernel",
		r->profiled_step_ms, r->ms_per_step);
	if (graphs)
		fprintf(out, "kernels timed by the device's events, each over a graph of %d of its launches, the graphs queued "
			     "back to back on one stream\n", RT_REPLAYED_LAUNCHES);
	else if (r->kernel_timing == RT_TIMED_BY_EVENTS)
		fprintf(out, "kernels timed by the device's events, queued back to back on one stream\n");
	static const char *const gap[] = {
		[RT_TIMED_BY_HOST] = "launching and waiting for each kernel alone, the thread pool's start and join per launch",
		[RT_TIMED_BY_EVENTS] = "the gaps between launches that a captured graph closes",
		[RT_TIMED_BY_GRAPHS] = "the step graph's start, how its kernels' ends and starts meet",
	};
	fprintf(out, "sum of kernels / step run whole: %.1f%% (the difference: %s, %s)\n",
		r->ms_per_step > 0 ? 100 * sum / r->ms_per_step : 0, gap[r->kernel_timing],
		b->train.accumulate > 1 ? "the accumulation micro-batches, which are not profiled" : "writing the step's inputs");
	if (roof->gflops > 0)
		fprintf(out, "roofline: %.1f GFLOP/s, %.1f GB/s (%s); roof: the least time the kernel's FLOPs and bytes take "
			     "at those peaks over its time\n", roof->gflops, roof->gbs, roof->source);
	else
		fprintf(out, "roofline: not known for %s (--peak-gflops and --peak-gbs give it)\n", r->arch);
	free(order);
	free(c);
	return !trace || profile_write_trace(trace, b, r, roof);
}

/* A JSON string: the names netc makes need no escapes but a quote or backslash would. */
static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

static FILE *open_trace(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "netc: error: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static bool close_trace(FILE *f, const char *path)
{
	bool ok = !ferror(f);
	if (fclose(f) != 0 || !ok) {
		fprintf(stderr, "netc: error: cannot write %s: %s\n", path, strerror(errno));
		return false;
	}
	return true;
}

#ifndef NETC_RUNTIME_ONLY
/* One complete event of the compile's first track, ts from the compile's start. */
static void front_slice(FILE *f, const char *name, const char *cat, double begin, double end, double origin,
			const char *model)
{
	fprintf(f, ",\n{\"name\": ");
	json_string(f, name);
	fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": 1, "
		   "\"args\": {\"model\": ", cat, (begin - origin) * 1e6, (end - begin) * 1e6);
	json_string(f, model);
	fprintf(f, "}}");
}

bool profile_write_compile_trace(const char *path, const char *model, const CgTarget *targets, const CgOutput *outs,
				 int n, const CompileFront *front)
{
	FILE *f = open_trace(path);
	if (!f)
		return false;
	int threads = 1;
	for (int t = 0; t < n; t++)
		for (int i = 0; i < outs[t].nspans; i++)
			threads = outs[t].spans[i].thread + 1 > threads ? outs[t].spans[i].thread + 1 : threads;
	fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
	fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": ");
	json_string(f, "netc compile");
	fprintf(f, "}}");
	for (int i = 0; i < threads; i++)
		fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"args\": {\"name\": "
			   "\"compile thread %d%s\"}}", i + 1, i, i == 0 ? " (main)" : "");
	const PassSpans *ps = front->passes;
	bool passes = ps && ps->n > 0;
	front_slice(f, passes ? "frontend" : "frontend and passes", "frontend", front->begin,
		    passes ? ps->span[0].begin : front->end, front->begin, model);
	for (int i = 0; passes && i < ps->n; i++)
		front_slice(f, ps->span[i].name, "pass", ps->span[i].begin, ps->span[i].end, front->begin, model);
	for (int t = 0; t < n; t++)
		for (int i = 0; i < outs[t].nspans; i++) {
			const CgSpan *s = &outs[t].spans[i];
			char name[128];
			snprintf(name, sizeof name, "%s %s", s->name, targets[t].name);
			fprintf(f, ",\n{\"name\": ");
			json_string(f, name);
			fprintf(f, ", \"cat\": ");
			json_string(f, s->phase);
			fprintf(f, ", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": %d, \"args\": "
				   "{\"target\": ", (s->begin - front->begin) * 1e6, (s->end - s->begin) * 1e6, s->thread + 1);
			json_string(f, targets[t].name);
			fprintf(f, "}}");
		}
	fprintf(f, "\n]}\n");
	return close_trace(f, path);
}
#endif

bool profile_write_trace(const char *path, const Bundle *b, const BenchResult *r, const RtRoofline *roof)
{
	FILE *f = open_trace(path);
	if (!f)
		return false;
	KernelCounts *c = profile_counts(b, r);
	fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
	fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": ");
	json_string(f, b->model);
	fprintf(f, "}},\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"kernels\"}},");
	fprintf(f, "\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": \"step\"}}");
	double ts = 0; /* microseconds */
	for (int k = 0; k < r->nkernels; k++) {
		double dur = r->kernel_ms[k] * 1e3;
		fprintf(f, ",\n{\"name\": ");
		json_string(f, r->kernels[k].name);
		fprintf(f, ", \"cat\": \"kernel\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": 1, "
			   "\"args\": {\"group\": ", ts, dur);
		json_string(f, c[k].known ? c[k].members : "");
		if (c[k].known)
			fprintf(f, ", \"flops\": %.0f, \"bytes\": %.0f", c[k].flops, c[k].bytes);
		double share = c[k].known ? rt_roofline_share(roof, c[k].flops, c[k].bytes, r->kernel_ms[k] / 1e3) : 0;
		if (share > 0)
			fprintf(f, ", \"roofline_share\": %.4f", share);
		fprintf(f, ", \"grid\": %lld}}", (long long)r->kernels[k].grid);
		ts += dur;
	}
	fprintf(f, ",\n{\"name\": \"training step\", \"cat\": \"step\", \"ph\": \"X\", \"ts\": 0, \"dur\": %.3f, "
		   "\"pid\": 1, \"tid\": 2, \"args\": {\"ms_per_step\": %.4f}}\n]}\n", ts, r->ms_per_step);
	free(c);
	return close_trace(f, path);
}
