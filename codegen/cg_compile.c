/* cg_compile.c: compiling a graph for its targets (cg.h), in phases, each a parallel loop over
 * its tasks on o->jobs threads (the calling thread one of them):
 *   1. every (target, unit) lowered and hashed to its key and shape (cg_unit_prepare): with a
 *      cache, first those of every target, and a target whose code object the cache has (keyed by
 *      its units' keys) is done; then those of the targets left that are no ISA twins (phase 4);
 *      on each target, a unit of the shape of one before it is a copy (codegen/kernel_share.h);
 *   2. every (target, unit) of the other targets but the copies: its code from the cache, else
 *      compiled: first
 *      the targets that optimize for their class (codegen/o3_share.h), keeping their optimized
 *      modules, then their class mates, which take those modules where their IR is the same;
 *   3. every such target's units joined into its code object, in unit order (stored in the cache);
 *   4. each ISA twin of such a target (codegen/isa_twins.h) takes its code object, renamed.
 * Each thread keeps its own target machine per target, and each unit has its own LLVM context
 * (codegen/cg_driver.c), so nothing LLVM owns is shared between threads; the code objects are the
 * same whatever the number of threads and whatever the cache held. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>

#include "codegen/cg_unit.h"
#include "codegen/isa_twins.h"
#include "codegen/kernel_share.h"
#include "codegen/o3_share.h"
#include "runtime/clock.h"

/* Part of every kernel-cache key. Bump it when a change of netc alters the code of a kernel
 * without altering its LLVM IR before O3: the pass pipeline and its options, emit_unit, join,
 * the target machine's options. */
#define NETC_CODEGEN_VERSION "netc-codegen-4"

typedef struct Work Work;
typedef struct {
	Work *w;
	int index;             /* the thread's, from 0: its track in a trace */
	LLVMTargetMachineRef *tms;
} Worker;
typedef void (*TaskFn)(Worker *me, int task);

struct Work {
	const Graph *g;
	const CgTarget *targets;
	int ntargets;
	const CgCompileOptions *o;
	CgOutput *outs;
	int *leaders;          /* the units' group leaders */
	int nunits;
	CgUnit *units;         /* [target * nunits + unit] */
	Sha256 *keys;          /* per target: its part of the cache key */
	bool *done;            /* per target: its code object is made (or came from the cache) */
	int *o3_from;          /* per target: the class mate whose units' O3 it takes, -1: none */
	bool *o3_keep;         /* per target: a class mate takes its units' O3 */
	int *twin_of;          /* per target: the ISA twin whose code object it takes, -1: none */
	CgSpan *links;         /* per target: its join */
	int *tasks;            /* the phase's tasks, each a (target * nunits + unit) or a target */
	int ntasks;
	TaskFn run;

	pthread_mutex_t lock;
	int next;              /* the phase's next task */
	int finished, total;   /* units finished (compiled or found), all units */
	bool failed;
	char err[1024];
};

static void fail(Work *w, const CgTarget *t, const char *msg)
{
	pthread_mutex_lock(&w->lock);
	if (!w->failed)
		snprintf(w->err, sizeof w->err, "%s: %.960s", t->name, msg);
	w->failed = true;
	pthread_mutex_unlock(&w->lock);
}

static void report(Work *w, int units)
{
	pthread_mutex_lock(&w->lock);
	w->finished += units;
	if (w->o->progress)
		w->o->progress(w->o->progress_ctx, w->finished, w->total);
	pthread_mutex_unlock(&w->lock);
}

/* The thread's target machine for target i, made on first use. */
static LLVMTargetMachineRef machine(Work *w, int i, LLVMTargetMachineRef *tms)
{
	char err[512];
	if (!tms[i] && !(tms[i] = cg_target_machine(&w->targets[i], err, sizeof err)))
		fail(w, &w->targets[i], err);
	return tms[i];
}

/* The span of a piece of work that began at begin on this thread. */
static void span(CgSpan *s, const Worker *me, const char *phase, double begin)
{
	s->phase = phase;
	s->thread = me->index;
	s->begin = begin;
	s->end = rt_clock_s();
}

static void prepare_task(Worker *me, int task)
{
	Work *w = me->w;
	int target = task / w->nunits;
	LLVMTargetMachineRef tm = machine(w, target, me->tms);
	double t0 = rt_clock_s();
	if (tm)
		cg_unit_prepare(w->g, &w->targets[target], tm, w->leaders[task % w->nunits], &w->keys[target],
				&w->units[task]);
	span(&w->units[task].prepared, me, "lower+hash", t0);
}

static void compile_task(Worker *me, int task)
{
	Work *w = me->w;
	int target = task / w->nunits;
	LLVMTargetMachineRef tm = machine(w, target, me->tms);
	if (!tm)
		return;
	int from = w->o3_from[target], unit = task % w->nunits;
	CgUnitJob job = {w->o->want_ir ? NULL : w->o->cache, w->o->want_ir, w->o3_keep[target],
			 from >= 0 ? &w->units[from * w->nunits + unit] : NULL};
	char err[1024];
	double t0 = rt_clock_s();
	CgUnit *u = &w->units[task];
	if (!cg_unit_compile(w->g, &w->targets[target], tm, w->leaders[task % w->nunits], &job, u, err, sizeof err)) {
		fail(w, &w->targets[target], err);
		return;
	}
	span(&u->compiled, me, u->cached ? "cache" : "compile", t0);
	report(w, 1);
}

static void *worker(void *arg)
{
	Worker *me = arg;
	Work *w = me->w;
	me->tms = calloc((size_t)w->ntargets, sizeof *me->tms);
	if (!me->tms)
		fail(w, &w->targets[0], "out of memory");
	for (;;) {
		pthread_mutex_lock(&w->lock);
		int i = w->failed || !me->tms ? w->ntasks : w->next++;
		pthread_mutex_unlock(&w->lock);
		if (i >= w->ntasks)
			break;
		w->run(me, w->tasks[i]);
	}
	for (int i = 0; me->tms && i < w->ntargets; i++)
		if (me->tms[i])
			LLVMDisposeTargetMachine(me->tms[i]);
	free(me->tms);
	return NULL;
}

/* Runs fn on every task of tasks[0..n) on the threads; false when one failed. */
static bool parallel(Work *w, TaskFn fn, int *tasks, int n)
{
	w->run = fn;
	w->tasks = tasks;
	w->ntasks = n;
	w->next = 0;
	int jobs = w->o->jobs > 0 ? w->o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (jobs > n)
		jobs = n;
	pthread_t *threads = calloc(jobs > 0 ? (size_t)jobs : 1, sizeof *threads);
	Worker *workers = calloc(jobs > 0 ? (size_t)jobs : 1, sizeof *workers);
	if (!threads || !workers)
		abort();
	for (int i = 0; i < (jobs > 0 ? jobs : 1); i++)
		workers[i] = (Worker){.w = w, .index = i};
	int started = 0;
	/* this thread works too (index 0): jobs - 1 more */
	while (started < jobs - 1 && pthread_create(&threads[started], NULL, worker, &workers[started + 1]) == 0)
		started++;
	worker(&workers[0]);
	for (int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	free(workers);
	return !w->failed;
}

/* The units' assembly, one after the other (a copy has none: it compiled nothing). */
static char *join_assembly(const CgUnit *units, int n)
{
	size_t len = 1;
	for (int i = 0; i < n; i++)
		len += units[i].assembly ? strlen(units[i].assembly) : 0;
	char *text = malloc(len), *p = text;
	for (int i = 0; text && i < n; i++) {
		if (!units[i].assembly)
			continue;
		size_t k = strlen(units[i].assembly);
		memcpy(p, units[i].assembly, k);
		p += k;
	}
	if (text)
		*p = 0;
	return text;
}

/* The units' optimized IR as one module (LLVM's linker renames internal names that clash), so
 * that the text is IR that LLVM reads back. */
static char *join_ir(const CgUnit *units, int n, char *err, size_t errlen)
{
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef all = NULL;
	bool ok = true;
	for (int i = 0; ok && i < n; i++) {
		if (!units[i].ir)
			continue; /* a copy */
		LLVMMemoryBufferRef buf =
			LLVMCreateMemoryBufferWithMemoryRangeCopy(units[i].ir, strlen(units[i].ir), "unit");
		LLVMModuleRef m = NULL;
		char *msg = NULL;
		if (LLVMParseIRInContext(ctx, buf, &m, &msg)) {
			snprintf(err, errlen, "internal error: a unit's IR does not parse: %s", msg ? msg : "?");
			LLVMDisposeMessage(msg);
			ok = false;
		} else if (!all) {
			all = m;
		} else if (LLVMLinkModules2(all, m)) {
			snprintf(err, errlen, "internal error: the units' IR does not link");
			ok = false;
		}
	}
	char *text = NULL;
	if (ok) {
		char *ir = LLVMPrintModuleToString(all);
		text = strdup(ir);
		LLVMDisposeMessage(ir);
	}
	if (all)
		LLVMDisposeModule(all);
	LLVMContextDispose(ctx);
	return text;
}

/* The target's code object's cache key: its part of the key and its units' keys, in order. */
static void code_key(const Work *w, int target, uint8_t key[32])
{
	Sha256 s = w->keys[target];
	sha256_update(&s, "code object", 12);
	for (int i = 0; i < w->nunits; i++)
		sha256_update(&s, w->units[target * w->nunits + i].key, 32);
	sha256_final(&s, key);
}

/* The target's code object kept in the cache, when its units were keyed. */
static void store_code_object(Work *w, int target)
{
	if (!w->units[target * w->nunits].keyed || !w->o->cache)
		return;
	uint8_t key[32];
	code_key(w, target, key);
	kc_put(w->o->cache, key, w->outs[target].code, w->outs[target].size);
}

/* The target's code object from its units (kept in the cache when they were keyed). */
static bool join_target(Work *w, int target, char *err, size_t errlen)
{
	const CgTarget *t = &w->targets[target];
	CgUnit *units = &w->units[target * w->nunits];
	CgOutput *out = &w->outs[target];
	CgBlob *code = calloc((size_t)w->nunits, sizeof *code);
	if (!code) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	int n = 0;
	for (int i = 0; i < w->nunits; i++)
		if (units[i].copy_of < 0)
			code[n++] = units[i].code;
	double t0 = rt_clock_s();
	bool ok = t->ops->join(code, n, out, err, errlen);
	out->times.join_s = rt_clock_s() - t0;
	free(code);
	if (ok && w->o->want_ir) {
		out->ir = join_ir(units, w->nunits, err, errlen);
		out->assembly = join_assembly(units, w->nunits);
		ok = out->ir && out->assembly;
		if (out->ir && !out->assembly)
			snprintf(err, errlen, "out of memory");
	}
	if (ok)
		store_code_object(w, target);
	return ok;
}

static void join_task(Worker *me, int target)
{
	Work *w = me->w;
	char err[1024];
	double t0 = rt_clock_s();
	if (!join_target(w, target, err, sizeof err))
		fail(w, &w->targets[target], err);
	span(&w->links[target], me, "link", t0);
	snprintf(w->links[target].name, sizeof w->links[target].name, "link %s", w->targets[target].name);
}

/* A twin's code object: its ISA twin's, with the target named as in the object LLVM makes for the
 * twin from the unit of no kernel; kept in the cache under the twin's own key, so that a hit gives
 * what compiling the twin alone gives. */
static void twin_task(Worker *me, int target)
{
	Work *w = me->w;
	const CgTarget *t = &w->targets[target];
	int from = w->twin_of[target];
	LLVMTargetMachineRef tm = machine(w, target, me->tms);
	if (!tm)
		return;
	double t0 = rt_clock_s();
	char err[1024];
	CgUnit probe = {0};
	CgUnitJob job = {0};
	CgOutput *out = &w->outs[target];
	bool ok = cg_unit_compile(w->g, t, tm, -1, &job, &probe, err, sizeof err) &&
		  cg_isa_twin_code(w->outs[from].code, w->outs[from].size, probe.code.data, probe.code.size, &out->code,
				   &out->size, err, sizeof err);
	cg_unit_free(&probe);
	if (!ok) {
		fail(w, t, err);
		return;
	}
	store_code_object(w, target);
	out->times.join_s = rt_clock_s() - t0;
	snprintf(out->times.twin_of, sizeof out->times.twin_of, "%s", w->targets[from].name);
	span(&w->links[target], me, "twin", t0);
	snprintf(w->links[target].name, sizeof w->links[target].name, "twin of %s", w->targets[from].name);
	report(w, w->nunits);
}

/* A target whose code object the cache has is done: its units are not compiled. */
static void find_code_object(Work *w, int target)
{
	uint8_t key[32];
	code_key(w, target, key);
	CgOutput *out = &w->outs[target];
	if (!kc_get(w->o->cache, key, &out->code, &out->size))
		return;
	w->done[target] = true;
	out->times.cached = w->nunits;
	report(w, w->nunits);
}

/* Everything besides a unit's IR that its code depends on. */
static void target_key(const CgTarget *t, Sha256 *s)
{
	unsigned major, minor, patch;
	LLVMGetVersion(&major, &minor, &patch);
	char head[256];
	int n = snprintf(head, sizeof head, "%s\nllvm %u.%u.%u\n%d %d %d %d %d %d\n", NETC_CODEGEN_VERSION, major,
			 minor, patch, (int)t->ops->code_kind, (int)t->ops->reloc, t->wave, t->code_object_version,
			 (int)cg_kernel_sharing(), (int)t->flush_f32_denormals);
	sha256_init(s);
	sha256_update(s, head, (size_t)n);
	const char *fields[] = {t->name, t->triple, t->cpu, t->features};
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
		sha256_update(s, fields[i], strlen(fields[i]) + 1);
}

/* The units' leaders: every node that owns a kernel; a graph with none gets one empty unit. */
static int list_units(const Graph *g, int *leaders)
{
	int n = 0;
	for (int i = 0; i < g->nnodes; i++)
		if (cg_has_kernel(&g->node[i]))
			leaders[n++] = i;
	if (n == 0)
		leaders[n++] = -1;
	return n;
}

/* The target's spans: its units' phases that ran, and its link. */
static bool collect_spans(Work *w, int t)
{
	CgOutput *out = &w->outs[t];
	out->spans = calloc(2 * (size_t)w->nunits + 1, sizeof *out->spans);
	if (!out->spans)
		return false;
	for (int i = 0; i < w->nunits; i++) {
		CgUnit *u = &w->units[t * w->nunits + i];
		CgSpan *pieces[] = {&u->prepared, &u->compiled};
		for (int k = 0; k < 2; k++) {
			if (!pieces[k]->phase)
				continue;
			CgSpan *s = &out->spans[out->nspans++];
			*s = *pieces[k];
			snprintf(s->name, sizeof s->name, "%s", u->nkernels ? u->kernels[0].name : "(no kernel)");
		}
	}
	if (w->links[t].phase)
		out->spans[out->nspans++] = w->links[t];
	return true;
}

/* Each target's kernels (in unit order), times and spans from its units. */
static bool collect(Work *w)
{
	for (int t = 0; t < w->ntargets; t++) {
		CgOutput *out = &w->outs[t];
		CgUnit *units = &w->units[t * w->nunits];
		/* a twin's kernels are its ISA twin's: lowered the same (units of a twin compiled
		 * without the cache were never lowered) */
		const CgUnit *lowered = &w->units[(w->twin_of[t] >= 0 ? w->twin_of[t] : t) * w->nunits];
		if (!collect_spans(w, t))
			return false;
		int nkernels = 0;
		for (int i = 0; i < w->nunits; i++)
			nkernels += lowered[i].nkernels;
		out->kernels = calloc(nkernels ? (size_t)nkernels : 1, sizeof *out->kernels);
		if (!out->kernels)
			return false;
		CgCompileTimes *tm = &out->times;
		tm->units = w->nunits;
		for (int i = 0; i < w->nunits; i++) {
			CgKernel *k = out->kernels + out->nkernels;
			memcpy(k, lowered[i].kernels, (size_t)lowered[i].nkernels * sizeof *k);
			/* a copy launches the kernels of the unit it copies, one for one */
			for (int j = 0; lowered[i].copy_of >= 0 && j < lowered[i].nkernels; j++)
				memcpy(k[j].symbol, lowered[lowered[i].copy_of].kernels[j].symbol, sizeof k[j].symbol);
			out->nkernels += lowered[i].nkernels;
			tm->cached += units[i].cached;
			tm->copies += units[i].copy_of >= 0;
			tm->o3_shared += units[i].o3_shared;
			tm->unbudgeted += units[i].unbudgeted;
			tm->lower_s += units[i].lower_s;
			tm->optimize_s += units[i].optimize_s;
			tm->emit_s += units[i].emit_s;
		}
	}
	return true;
}

/* Whether target t's units are compiled: its code object is neither cached nor an ISA twin's. */
static bool compiles(const Work *w, int t)
{
	return !w->done[t] && w->twin_of[t] < 0;
}

/* A target still to make takes the code object of the first target before it of its ISA class
 * (compiled or from the cache), except where the units' IR and assembly are wanted as text. */
static void find_isa_twins(Work *w)
{
	for (int t = 0; t < w->ntargets; t++) {
		w->twin_of[t] = -1;
		for (int s = 0; s < t && w->twin_of[t] < 0 && !w->done[t] && !w->o->want_ir; s++)
			if (w->twin_of[s] < 0 && cg_isa_twins(&w->targets[s], &w->targets[t]))
				w->twin_of[t] = s;
	}
}

/* Each target still to compile takes its units' O3 from the first such target of its class. */
static void find_o3_mates(Work *w)
{
	for (int t = 0; t < w->ntargets; t++) {
		w->o3_from[t] = -1;
		for (int s = 0; s < t && w->o3_from[t] < 0 && compiles(w, t); s++)
			if (compiles(w, s) && w->o3_from[s] < 0 && cg_o3_mates(&w->targets[s], &w->targets[t]))
				w->o3_from[t] = s;
		if (w->o3_from[t] >= 0)
			w->o3_keep[w->o3_from[t]] = true;
	}
}

/* Phase 1's tasks: the units of the targets that pass `which` into tasks. */
static int unit_tasks(const Work *w, bool (*which)(const Work *w, int t), int *tasks)
{
	int k = 0;
	for (int i = 0; i < w->ntargets * w->nunits; i++)
		if (which(w, i / w->nunits))
			tasks[k++] = i;
	return k;
}

static bool any_target(const Work *w, int t)
{
	(void)w, (void)t;
	return true;
}

/* Whether target t's units are still to be lowered: it compiles, and they were not (no cache). */
static bool unprepared(const Work *w, int t)
{
	return compiles(w, t) && !w->units[t * w->nunits].keyed;
}

/* Each compiling target's copies (codegen/kernel_share.h), counted as finished. */
static void share_units(Work *w)
{
	for (int t = 0; t < w->ntargets; t++)
		if (w->units[t * w->nunits].keyed) {
			int copies = cg_share_units(&w->units[t * w->nunits], w->nunits);
			if (compiles(w, t))
				report(w, copies);
		}
}

/* The phases of the file comment. */
static bool run_phases(Work *w)
{
	int n = w->ntargets, all = n * w->nunits;
	int *tasks = malloc(((size_t)all + 1) * sizeof *tasks);
	if (!tasks)
		return false;
	bool ok = true;
	if (w->o->cache && !w->o->want_ir) {
		ok = parallel(w, prepare_task, tasks, unit_tasks(w, any_target, tasks));
		for (int t = 0; ok && t < n; t++)
			find_code_object(w, t);
	}
	find_isa_twins(w);
	find_o3_mates(w);
	ok = ok && parallel(w, prepare_task, tasks, unit_tasks(w, unprepared, tasks));
	if (ok)
		share_units(w);
	for (int mates = 0; mates < 2; mates++) { /* the classes' own O3 first, then their mates */
		int k = 0;
		for (int i = 0; i < all; i++)
			if (compiles(w, i / w->nunits) && (w->o3_from[i / w->nunits] >= 0) == mates &&
			    w->units[i].copy_of < 0)
				tasks[k++] = i;
		ok = ok && parallel(w, compile_task, tasks, k);
	}
	int k = 0;
	for (int t = 0; t < n; t++)
		if (compiles(w, t))
			tasks[k++] = t;
	ok = ok && parallel(w, join_task, tasks, k);
	k = 0;
	for (int t = 0; t < n; t++)
		if (!w->done[t] && w->twin_of[t] >= 0)
			tasks[k++] = t;
	ok = ok && parallel(w, twin_task, tasks, k);
	free(tasks);
	return ok;
}

bool cg_compile_targets(const Graph *g, const CgTarget *targets, int n, const CgCompileOptions *o, CgOutput *outs,
			char *err, size_t errlen)
{
	memset(outs, 0, (size_t)n * sizeof *outs);
	/* LLVM's targets are registered here, before any thread uses them */
	for (int i = 0; i < n; i++) {
		char e[512];
		LLVMTargetMachineRef tm = cg_target_machine(&targets[i], e, sizeof e);
		if (!tm) {
			snprintf(err, errlen, "%s: %s", targets[i].name, e);
			return false;
		}
		LLVMDisposeTargetMachine(tm);
	}
	Work w = {.g = g, .targets = targets, .ntargets = n, .o = o, .outs = outs};
	w.leaders = malloc(((size_t)g->nnodes + 1) * sizeof *w.leaders);
	w.nunits = w.leaders ? list_units(g, w.leaders) : 0;
	w.units = calloc((size_t)n * (size_t)w.nunits + 1, sizeof *w.units);
	w.keys = calloc((size_t)n, sizeof *w.keys);
	w.done = calloc((size_t)n, sizeof *w.done);
	w.links = calloc((size_t)n, sizeof *w.links);
	w.o3_from = calloc((size_t)n, sizeof *w.o3_from);
	w.o3_keep = calloc((size_t)n, sizeof *w.o3_keep);
	w.twin_of = calloc((size_t)n, sizeof *w.twin_of);
	if (!w.leaders || !w.units || !w.keys || !w.done || !w.links || !w.o3_from || !w.o3_keep || !w.twin_of)
		abort();
	for (int i = 0; i < n * w.nunits; i++)
		w.units[i].copy_of = -1;
	for (int i = 0; i < n; i++)
		target_key(&targets[i], &w.keys[i]);
	w.total = n * w.nunits;
	pthread_mutex_init(&w.lock, NULL);

	bool ok = run_phases(&w) && collect(&w);
	if (!ok)
		snprintf(err, errlen, "%s", w.failed ? w.err : "out of memory");
	for (int i = 0; i < n * w.nunits; i++)
		cg_unit_free(&w.units[i]);
	for (int i = 0; !ok && i < n; i++)
		cg_output_free(&outs[i]);
	pthread_mutex_destroy(&w.lock);
	free(w.leaders);
	free(w.units);
	free(w.keys);
	free(w.done);
	free(w.links);
	free(w.o3_from);
	free(w.o3_keep);
	free(w.twin_of);
	return ok;
}

bool cg_compile(const Graph *g, const CgTarget *t, bool want_ir, CgOutput *out, char *err, size_t errlen)
{
	CgCompileOptions o = {.jobs = 1, .want_ir = want_ir};
	return cg_compile_targets(g, t, 1, &o, out, err, errlen);
}

void cg_output_free(CgOutput *out)
{
	free(out->code);
	free(out->kernels);
	free(out->ir);
	free(out->assembly);
	free(out->spans);
	memset(out, 0, sizeof *out);
}
