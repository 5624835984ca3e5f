/* manager.c: the pass table and pipelines.
 *
 * A pipeline is a comma-separated string of pass names run in order over the forward graph, the
 * default PASSES_DEFAULT. --disable-pass and -O0 take passes out; a pipeline without a required
 * pass, or with passes out of the order their rows ask, is an error before anything runs. The
 * graph is verified after every pass, so a broken pass is caught where it broke the graph. */
#include <string.h>
#include <time.h>

#include "passes/passes.h"

#define PASSES_MAX 64

/* One row per pass: name, function, what it does, required, optimization, must come after. */
static const PassInfo table[] = {
	{"layout", pass_layout, "convs in NHWC, weights stored OHWI, transposes where layouts meet (--layout, auto: strided nets)",
	 false, true, NULL},
	{"mixed-precision", pass_mixed_precision,
	 "--precision fp16|bf16: half-precision forward and backward, f32 master weights, fp16 loss scaling",
	 false, false, "layout"},
	{"make-eval", pass_make_eval, "the evaluation program: the forward nodes again, without dropout",
	 false, false, "layout,mixed-precision"},
	{"autodiff", pass_autodiff, "gradients by each op's rule, as graph nodes", true, false,
	 "layout,mixed-precision,make-eval"},
	{"unscale-gradients", pass_unscale_gradients, "fp16: every gradient divided by the loss scale", true, false,
	 "autodiff"},
	{"accumulate-gradients", pass_accumulate_gradients,
	 "accumulate K > 1: gradient sums over micro-batches, their mean is what the update reads", true, false,
	 "autodiff,unscale-gradients"},
	{"check-finite", pass_check_finite, "fp16: whether every gradient is finite (an overflowing step is skipped)",
	 true, false, "autodiff,unscale-gradients,accumulate-gradients"},
	{"optimizer", pass_optimizer, "the update of every parameter from its gradient (grad_of)", true, false,
	 "autodiff,unscale-gradients,accumulate-gradients,check-finite"},
	{"accumulation-program", pass_accumulation_program,
	 "accumulate K > 1: the micro-batch program, forward and backward adding to the sums", true, false,
	 "accumulate-gradients,optimizer"},
	{"conv-algo", pass_conv_algo, "each convolution's algorithm: direct implicit GEMM or Winograd (--conv-algo)",
	 false, false, "autodiff,optimizer,accumulation-program"},
	{"fuse", pass_fuse, "groups of nodes that one kernel computes (TVM FuseOps rules)", false, true, NULL},
	{"share-eval", pass_share_eval, "evaluation runs training's forward kernels where they compute the same values",
	 false, true, "make-eval,conv-algo,fuse"},
	{"plan-memory", pass_plan_memory, "arena offsets: liveness, in-place and best-fit reuse of blocks",
	 true, false, "make-eval,autodiff,optimizer,accumulation-program,fuse,share-eval"},
};

#define NPASSES ((int)(sizeof table / sizeof *table))

const PassInfo *passes_lookup(const char *name)
{
	for (int i = 0; i < NPASSES; i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

/* "make-eval, autodiff, fuse, plan-memory" */
static void names(char *buf, size_t len)
{
	buf[0] = 0;
	for (int i = 0; i < NPASSES; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", table[i].name);
}

void passes_list(FILE *out)
{
	fprintf(out, "passes (default pipeline %s):\n", PASSES_DEFAULT);
	for (int i = 0; i < NPASSES; i++)
		fprintf(out, "  %-20s %-9s %s%s\n", table[i].name, table[i].required ? "required" : "",
			table[i].what, table[i].optimization ? " (-O0 leaves it out)" : "");
}

/* ---- lists of names ---- */

/* The next name of a comma-separated list into buf; false at the end. An empty or overlong
 * entry is returned as "" so the caller reports it. */
static bool next_name(const char **p, char *buf, size_t len)
{
	if (!*p)
		return false;
	size_t k = strcspn(*p, ",");
	if (k >= len)
		k = 0;
	memcpy(buf, *p, k);
	buf[k] = 0;
	*p = (*p)[strcspn(*p, ",")] ? *p + strcspn(*p, ",") + 1 : NULL;
	return true;
}

static bool unknown(const char *what, const char *name, char *err, size_t errlen)
{
	char all[256];
	names(all, sizeof all);
	if (!name[0])
		snprintf(err, errlen, "%s: an empty or overlong pass name (passes: %s)", what, all);
	else
		snprintf(err, errlen, "%s: unknown pass '%s' (passes: %s)", what, name, all);
	return false;
}

static bool in_list(const PassInfo *const *list, int n, const PassInfo *p)
{
	for (int i = 0; i < n; i++)
		if (list[i] == p)
			return true;
	return false;
}

/* ---- resolving the options into a pipeline ---- */

static bool parse_pipeline(const char *spec, const PassInfo **list, int max, int *n, char *err, size_t errlen)
{
	char name[64];
	*n = 0;
	for (const char *p = spec; next_name(&p, name, sizeof name);) {
		const PassInfo *pass = passes_lookup(name);
		if (!pass)
			return unknown("--passes", name, err, errlen);
		if (in_list(list, *n, pass)) {
			snprintf(err, errlen, "--passes: pass '%s' appears twice", name);
			return false;
		}
		if (*n == max) {
			snprintf(err, errlen, "--passes: more than %d passes", max);
			return false;
		}
		list[(*n)++] = pass;
	}
	return true;
}

static bool disable(const char *spec, const PassInfo **list, int *n, char *err, size_t errlen)
{
	char name[64];
	for (const char *p = spec; next_name(&p, name, sizeof name);) {
		const PassInfo *pass = passes_lookup(name);
		if (!pass)
			return unknown("--disable-pass", name, err, errlen);
		if (pass->required) {
			snprintf(err, errlen, "--disable-pass: pass '%s' is required; the pipeline cannot run without it", name);
			return false;
		}
		int k = 0;
		for (int i = 0; i < *n; i++)
			if (list[i] != pass)
				list[k++] = list[i];
		*n = k;
	}
	return true;
}

static bool check_required(const PassInfo *const *list, int n, char *err, size_t errlen)
{
	char missing[256] = "";
	int count = 0;
	for (int i = 0; i < NPASSES; i++)
		if (table[i].required && !in_list(list, n, &table[i])) {
			snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s'%s'", count ? ", " : "",
				 table[i].name);
			count++;
		}
	if (count)
		snprintf(err, errlen, "the pipeline lacks the required pass%s %s", count > 1 ? "es" : "", missing);
	return count == 0;
}

static bool check_order(const PassInfo *const *list, int n, char *err, size_t errlen)
{
	char name[64];
	for (int i = 0; i < n; i++)
		for (const char *p = list[i]->after; next_name(&p, name, sizeof name);)
			for (int j = i + 1; j < n; j++)
				if (strcmp(list[j]->name, name) == 0) {
					snprintf(err, errlen, "pass '%s' must come after '%s'", list[i]->name, name);
					return false;
				}
	return true;
}

static bool check_print_after(const char *spec, const PassInfo *const *list, int n, char *err, size_t errlen)
{
	char name[64];
	if (spec && strcmp(spec, "all") == 0)
		return true;
	for (const char *p = spec; next_name(&p, name, sizeof name);) {
		const PassInfo *pass = passes_lookup(name);
		if (!pass)
			return unknown("--print-after", name, err, errlen);
		if (!in_list(list, n, pass)) {
			snprintf(err, errlen, "--print-after: pass '%s' is not in the pipeline", name);
			return false;
		}
	}
	return true;
}

bool passes_resolve(const PassOptions *o, const PassInfo **list, int max, int *n, char *err, size_t errlen)
{
	static const PassOptions plain = {0};
	if (!o)
		o = &plain;
	*n = 0;
	if ((o->passes || !o->listed_only) &&
	    !parse_pipeline(o->passes ? o->passes : PASSES_DEFAULT, list, max, n, err, errlen))
		return false;
	if (!disable(o->disable, list, n, err, errlen))
		return false;
	if (o->O0) {
		int k = 0;
		for (int i = 0; i < *n; i++)
			if (!list[i]->optimization)
				list[k++] = list[i];
		*n = k;
	}
	return (o->listed_only || check_required(list, *n, err, errlen)) && check_order(list, *n, err, errlen) &&
	       check_print_after(o->print_after, list, *n, err, errlen);
}

/* ---- running ---- */

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static bool wants_print(const PassOptions *o, const char *pass)
{
	char name[64];
	if (!o->print_after)
		return false;
	if (strcmp(o->print_after, "all") == 0)
		return true;
	for (const char *p = o->print_after; next_name(&p, name, sizeof name);)
		if (strcmp(name, pass) == 0)
			return true;
	return false;
}

/* The training program once there is one, else every node. */
static void print_ir(FILE *out, const Graph *g, const char *pass)
{
	unsigned prog = 0;
	for (int i = 0; i < g->nnodes && !prog; i++)
		prog = g->node[i].programs & PROG_TRAIN;
	fprintf(out, "; IR after %s\n", pass);
	ir_print(out, g, prog);
}

static void print_times(FILE *out, const PassInfo *const *list, const double *ms, int n)
{
	double total = 0;
	fprintf(out, "pass times (ms):\n");
	for (int i = 0; i < n; i++) {
		fprintf(out, "  %-14s %10.3f\n", list[i]->name, ms[i]);
		total += ms[i];
	}
	fprintf(out, "  %-14s %10.3f\n", "total", total);
}

bool passes_run(Graph *g, const PassOptions *o, Diag *d)
{
	static const PassOptions plain = {0};
	if (!o)
		o = &plain;
	const PassInfo *list[PASSES_MAX];
	double ms[PASSES_MAX];
	int n;
	char err[512];
	if (!passes_resolve(o, list, PASSES_MAX, &n, err, sizeof err)) {
		diag_error(d, (SrcLoc){0, 0}, "%s", err);
		return false;
	}
	FILE *log = o->log ? o->log : stderr;
	if (o->spans)
		o->spans->n = 0;
	for (int i = 0; i < n; i++) {
		double start = now_ms();
		if (!list[i]->run(g, o, d))
			return false;
		ms[i] = now_ms() - start;
		if (o->spans && o->spans->n < PASS_SPANS_MAX)
			o->spans->span[o->spans->n++] = (PassSpan){list[i]->name, start / 1e3, (start + ms[i]) / 1e3};
		if (!ir_verify(g, err, sizeof err)) {
			diag_error(d, (SrcLoc){0, 0}, "internal error after pass '%s': %s", list[i]->name, err);
			return false;
		}
		if (wants_print(o, list[i]->name))
			print_ir(log, g, list[i]->name);
	}
	if (o->time_passes)
		print_times(log, list, ms, n);
	return true;
}

bool passes_run_default(Graph *g, Diag *d) { return passes_run(g, NULL, d); }
