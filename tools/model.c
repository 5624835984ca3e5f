/* model.c: loading models for the commands: .net files are parsed, differentiated, planned and
 * compiled for their targets (the host unless told otherwise), with the code objects, IR and
 * assembly written out on request; bundle files are read as they are. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/clock.h"
#include "tools/model.h"
#include "tools/profile.h"

#ifndef NETC_RUNTIME_ONLY
#include "codegen/gemm.h"
#include "codegen/kernel_cache.h"
#include "codegen/make_bundle.h"
#include "codegen/target.h"
#include "tools/profile.h"
#include "passes/passes.h"
#endif
#ifdef NETC_HAVE_ONNX
#include "frontend/frontend.h"
#include "onnx/onnx.h"
#endif

/* A file that starts with the magic, or with at least half of it and ends there (a truncated
 * bundle), is a bundle: bundle_read says what is wrong with it. */
bool model_is_bundle(const char *path)
{
	char magic[8];
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t n = fread(magic, 1, sizeof magic, f);
	fclose(f);
	return n >= 4 && memcmp(magic, BUNDLE_MAGIC, n) == 0;
}

bool model_is_onnx(const char *path)
{
	size_t k = strlen(path);
	return k > 5 && strcmp(path + k - 5, ".onnx") == 0;
}

/* Source text has no control characters but white space; anything else is a damaged bundle or
 * some other binary file, which the parser must not be shown (it would echo the bytes back). */
static bool is_binary_byte(int c)
{
	return (c < 0x20 && c != '\t' && c != '\n' && c != '\v' && c != '\f' && c != '\r') || c == 0x7f;
}

/* A file that is not a bundle must be .net source: an empty or binary file is an error naming the
 * file and what was found. A file that cannot be opened or read (a directory) is left to the
 * frontend's message. */
static bool looks_like_source(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return true;
	long offset = 0;
	int c;
	while ((c = getc(f)) != EOF && !is_binary_byte(c))
		offset++;
	bool unreadable = ferror(f);
	fclose(f);
	if (unreadable)
		return true;
	if (c != EOF) {
		fprintf(stderr, "netc: error: %s: not a netc bundle (bad magic) and not .net source (binary byte "
				"0x%02x at offset %ld)\n", path, c, offset);
		return false;
	}
	if (offset == 0) {
		fprintf(stderr, "netc: error: %s: empty file: neither a netc bundle nor .net source\n", path);
		return false;
	}
	return true;
}


#ifdef NETC_HAVE_ONNX
/* An ONNX model through the importer, its .net text through the frontend as if read from a file
 * of that name: the line numbers of messages are those of the file `netc import` writes. */
static Graph *load_onnx(const char *path, int64_t batch, int max_errors)
{
	OnnxImport m;
	char err[2048];
	if (!onnx_import_file(path, &m, err, sizeof err)) {
		fprintf(stderr, "netc: error: %s\n", err);
		return NULL;
	}
	Graph *g = fe_load_string(path, m.text, m.len, batch, max_errors, stderr);
	onnx_import_free(&m);
	return g;
}

bool model_onnx_weights(const char *path, RtTensors *w)
{
	OnnxImport m;
	char err[2048];
	if (!onnx_import_file(path, &m, err, sizeof err)) {
		fprintf(stderr, "netc: error: %s\n", err);
		return false;
	}
	*w = m.weights;
	m.weights = (RtTensors){0};
	onnx_import_free(&m);
	return true;
}

/* The forward graph of an ONNX model or a .net file, as the frontend builds it. */
static Graph *load_forward(const char *path, int64_t batch, const CompileOptions *o)
{
	int max_errors = o->max_errors >= 0 ? o->max_errors : DIAG_MAX_ERRORS;
	if (model_is_onnx(path))
		return load_onnx(path, batch, max_errors);
	if (!looks_like_source(path))
		return NULL;
	return fe_load_file(path, batch, max_errors, stderr);
}
#else
bool model_onnx_weights(const char *path, RtTensors *w)
{
	(void)w;
	fprintf(stderr, "netc: error: %s: this netc is a runtime-only build without the ONNX kit and cannot import "
			"ONNX models\n", path);
	return false;
}
#endif

#ifdef NETC_RUNTIME_ONLY
/* A runtime-only build with the ONNX kit has the frontend, so the forward graph (netc export's);
 * nothing compiles a training step. */
Graph *model_load_graph(const char *path, int64_t batch, bool training, const CompileOptions *o)
{
#ifdef NETC_HAVE_ONNX
	if (!training)
		return load_forward(path, batch, o);
#endif
	(void)batch, (void)training, (void)o;
	if (!looks_like_source(path))
		return NULL;
	fprintf(stderr, "netc: error: %s: this netc is a runtime-only build and cannot compile .net files; "
			"compile it with a full netc (netc compile) and pass the bundle\n", path);
	return NULL;
}
#else
/* The first target of the --target list (the host when there is none): the passes' auto choices
 * follow it (a wrong name is reported when the targets are parsed). */
static bool first_target(const ModelTargets *t, CgTarget *t0)
{
	const char *list = t->targets && t->targets[0] ? t->targets : "host";
	char spec[64], err[256];
	size_t k = strcspn(list, ",");
	if (k >= sizeof spec)
		return false;
	memcpy(spec, list, k);
	spec[k] = 0;
	CgTargetOptions plain = {0};
	return cg_target_lookup(spec, &plain, t0, err, sizeof err);
}

Graph *model_load_graph(const char *path, int64_t batch, bool training, const CompileOptions *o)
{
	Graph *g = load_forward(path, batch, o);
	if (g && o->accumulate > 0)
		g->train.accumulate = o->accumulate;
	if (g && o->precision >= 0)
		g->train.precision = (PrecisionKind)o->precision;
	if (!g || !training)
		return g;
	Diag d;
	diag_init(&d, path, NULL);
	PassOptions po = o->passes;
	CgTarget t0;
	if (first_target(&o->targets, &t0)) {
		po.gpu_first = t0.ops->gpu;
		po.copies_first = (t0.matrix & CG_MATRIX_MMA) != 0;
		po.f32_copies_first = (t0.matrix & CG_MATRIX_WGMMA) != 0;
	}
	if (!passes_run(g, &po, &d)) {
		ir_graph_free(g);
		return NULL;
	}
	return g;
}
#endif

static void free_graph(Graph *g)
{
#ifndef NETC_RUNTIME_ONLY
	ir_graph_free(g);
#endif
}

#ifdef NETC_RUNTIME_ONLY
static bool compile_graph(Graph *g, const ModelTargets *mt, Bundle *b, const CompileFront *front)
{
	(void)g, (void)mt, (void)b, (void)front;
	return false;
}
#else
/* ---- targets: the --target list ---- */

static bool lookup_target(const char *spec, const ModelTargets *t, CgTarget *out, char *err, size_t errlen)
{
	CgTargetOptions plain = {.no_matrix_units = t->no_matrix_units, .packed_half = t->packed_half};
	CgTargetOptions asked = plain;
	asked.wave = t->wave;
	asked.code_object_version = t->code_object_version;
	if (!cg_target_lookup(spec, &plain, out, err, errlen))
		return false;
	/* wave size and code-object version are AMD's: other targets keep their defaults */
	if (out->ops->amd_options && (asked.wave || asked.code_object_version))
		return cg_target_lookup(spec, &asked, out, err, errlen);
	return true;
}

/* Splits the list into targets (*out, malloc'd): unknown names, empty entries and repeats are
 * errors. */
static bool parse_targets(const ModelTargets *t, CgTarget **out, int *n)
{
	const char *list = t->targets && t->targets[0] ? t->targets : "host";
	size_t len = strlen(list);
	*out = calloc(len + 1, sizeof **out);
	if (!*out)
		abort();
	*n = 0;
	bool amd = false;
	for (const char *p = list;; p++) {
		size_t k = strcspn(p, ",");
		char spec[64], err[512];
		if (k == 0 || k >= sizeof spec) {
			fprintf(stderr, "netc: error: --target '%s': %s\n", list, k ? "a target name is too long" : "empty entry");
			return false;
		}
		memcpy(spec, p, k);
		spec[k] = 0;
		CgTarget *c = &(*out)[*n];
		if (!lookup_target(spec, t, c, err, sizeof err)) {
			fprintf(stderr, "netc: error: %s\n", err);
			return false;
		}
		for (int i = 0; i < *n; i++)
			if (strcmp((*out)[i].name, c->name) == 0) {
				fprintf(stderr, "netc: error: --target '%s' names %s twice\n", list, c->name);
				return false;
			}
		amd |= c->ops->amd_options;
		(*n)++;
		p += k;
		if (!*p)
			break;
	}
	if ((t->wave || t->code_object_version) && !amd) {
		fprintf(stderr, "netc: error: %s applies to AMD targets, and '%s' has none\n",
			t->wave ? (t->wave == 32 ? "--wave32" : "--wave64") : "--code-object-version", list);
		return false;
	}
	return true;
}

/* ---- emit: which files to write ---- */

enum { EMIT_HSACO = 1, EMIT_PTX = 2, EMIT_LL = 4, EMIT_ASM = 8, EMIT_SO = 16 };

static const struct {
	const char *name;
	unsigned bit;
	const char *what;
} emit_kinds[] = {
	{"hsaco", EMIT_HSACO, "AMD code objects (an AMD target such as gfx1030)"},
	{"ptx", EMIT_PTX, "PTX (an NVIDIA target such as sm_90)"},
	{"ll", EMIT_LL, "LLVM IR"},
	{"asm", EMIT_ASM, "assembly"},
	{"so", EMIT_SO, "host shared objects (the target host)"},
};

/* The kinds of file that the target produces: its code object (named as its extension) and the
 * text forms. */
static unsigned emit_made_by(const CgTarget *t)
{
	unsigned made = EMIT_LL | EMIT_ASM;
	for (size_t e = 0; e < sizeof emit_kinds / sizeof *emit_kinds; e++)
		if (strcmp(emit_kinds[e].name, t->ops->code_ext) == 0)
			made |= emit_kinds[e].bit;
	return made;
}

static bool parse_emit(const char *list, const CgTarget *tg, int n, unsigned *out)
{
	unsigned made = 0;
	for (int i = 0; i < n; i++)
		made |= emit_made_by(&tg[i]);
	*out = made;
	if (!list)
		return true;
	*out = 0;
	for (const char *p = list;; p++) {
		size_t k = strcspn(p, ",");
		size_t e = 0, count = sizeof emit_kinds / sizeof *emit_kinds;
		while (e < count && (strlen(emit_kinds[e].name) != k || strncmp(emit_kinds[e].name, p, k) != 0))
			e++;
		if (e == count) {
			fprintf(stderr, "netc: error: --emit: unknown kind '%.*s' (kinds: hsaco, ptx, ll, asm, so)\n", (int)k, p);
			return false;
		}
		if (!(made & emit_kinds[e].bit)) {
			fprintf(stderr, "netc: error: --emit %s: no target in the list produces %s\n", emit_kinds[e].name,
				emit_kinds[e].what);
			return false;
		}
		*out |= emit_kinds[e].bit;
		p += k;
		if (!*p)
			break;
	}
	return true;
}

/* ---- dump: <dir>/<model>.<target>.<ext> ---- */

static bool write_file(const char *path, const void *data, size_t size, bool quiet)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(data, 1, size, f) == size;
	if (f && fclose(f) != 0)
		ok = false;
	if (!ok) {
		fprintf(stderr, "netc: error: cannot write %s: %s\n", path, strerror(errno));
		return false;
	}
	if (!quiet)
		printf("wrote %s\n", path);
	return true;
}

static bool dump_one(const char *dir, const char *model, const CgTarget *t, const char *ext,
		     const void *data, size_t size, bool quiet)
{
	char safe[sizeof t->name], path[4096];
	/* "gfx90a:xnack-" -> "gfx90a_xnack-": ':' has no place in a file name on every system */
	for (size_t i = 0; i < sizeof safe; i++) {
		char c = t->name[i];
		safe[i] = c == ':' || c == '/' ? '_' : c;
		if (!c)
			break;
	}
	if ((size_t)snprintf(path, sizeof path, "%s/%s.%s.%s", dir, model, safe, ext) >= sizeof path) {
		fprintf(stderr, "netc: error: --dump-dir '%s': path too long\n", dir);
		return false;
	}
	return write_file(path, data, size, quiet);
}

static bool dump_target(const ModelTargets *mt, const char *model, const CgTarget *t, const CgOutput *o, unsigned emit)
{
	const char *dir = mt->dump_dir;
	/* PTX is NVIDIA's assembly: where the code is the assembly, asking for either writes the
	 * one code file */
	unsigned code = emit_made_by(t) & (EMIT_HSACO | EMIT_PTX | EMIT_SO);
	if (t->ops->code_is_text && (emit & EMIT_ASM))
		emit = (emit | code) & ~(unsigned)EMIT_ASM;
	unsigned own = emit & code;
	const char *code_ext = t->ops->code_ext;
	size_t code_size = o->size;
	/* text: the file ends where the text does */
	if (t->ops->code_is_text)
		code_size = strnlen((const char *)o->code, o->size);
	if (own && !dump_one(dir, model, t, code_ext, o->code, code_size, mt->quiet))
		return false;
	if ((emit & EMIT_LL) && o->ir && !dump_one(dir, model, t, "ll", o->ir, strlen(o->ir), mt->quiet))
		return false;
	if ((emit & EMIT_ASM) && o->assembly && !dump_one(dir, model, t, "s", o->assembly, strlen(o->assembly), mt->quiet))
		return false;
	return true;
}

static bool make_dump_dir(const char *dir)
{
	if (mkdir(dir, 0777) == 0 || errno == EEXIST)
		return true;
	fprintf(stderr, "netc: error: --dump-dir %s: %s\n", dir, strerror(errno));
	return false;
}

/* ---- compile ---- */

/* The progress line on a terminal: redrawn in place at most ten times a second, erased at the end. */
typedef struct {
	double last;
	bool drawn;
} CompileProgress;

static void draw_progress(void *ctx, int done, int total)
{
	CompileProgress *p = ctx;
	double now = rt_clock_s();
	if (done < total && now - p->last < 0.1)
		return;
	p->last = now;
	p->drawn = true;
	fprintf(stderr, "\rnetc: compiling kernels %d/%d (%d%%)", done, total, (int)(100.0 * done / total));
	fflush(stderr);
}

static void end_progress(CompileProgress *p)
{
	if (p->drawn)
		fprintf(stderr, "\r\033[K");
}

/* --time-passes: where each target's compile went (the unit times are summed over threads). */
static void print_compile_times(const CgTarget *tg, const CgOutput *outs, int n, int jobs, double wall,
				const KernelCache *cache)
{
	fprintf(stderr, "compile: %.3f s wall on %d thread%s, kernel cache %s\n", wall, jobs, jobs == 1 ? "" : "s",
		cache ? kc_dir(cache) : "off");
	fprintf(stderr, "  %-16s %6s %6s %6s %6s %6s %9s %9s %9s %9s  %s\n", "target", "units", "cached", "copies",
		"O3 of", "again", "lower", "optimize", "codegen", "link", "twin of");
	for (int i = 0; i < n; i++) {
		const CgCompileTimes *t = &outs[i].times;
		fprintf(stderr, "  %-16s %6d %6d %6d %6d %6d %9.3f %9.3f %9.3f %9.3f  %s\n", tg[i].name, t->units, t->cached,
			t->copies, t->o3_shared, t->unbudgeted, t->lower_s, t->optimize_s, t->emit_s, t->join_s, t->twin_of[0] ? t->twin_of : "-");
	}
	if (cache) {
		KernelCacheStats st = kc_stats(cache);
		fprintf(stderr, "  kernel cache: %ld hits, %ld misses (%ld damaged), %ld stored\n", st.hits, st.misses,
			st.corrupt, st.stored);
	}
}

static int compile_jobs(const ModelTargets *mt)
{
	if (mt->jobs > 0)
		return mt->jobs;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* The tuning tables the compile looks GEMMs up in: --tuning's file, then each target's shipped
 * table unless --tuning none. false after printing an error. */
static bool use_tuning(const ModelTargets *mt, const CgTarget *tg, int n, CgTuning *file)
{
	const CgTuning *tables[8];
	int count = 0;
	bool none = mt->tuning && strcmp(mt->tuning, "none") == 0;
	if (mt->tuning && !none) {
		char err[600];
		if (!cg_tuning_load(mt->tuning, file, err, sizeof err)) {
			fprintf(stderr, "netc: error: %s\n", err);
			return false;
		}
		tables[count++] = file;
	}
	for (int i = 0; i < n && !none && count < 8; i++) {
		char arch[80];
		cg_gemm_tune_arch(&tg[i], arch, sizeof arch);
		const CgTuning *t = cg_tuning_shipped_for(arch);
		if (t)
			tables[count++] = t;
	}
	cg_tuning_use(tables, count);
	return true;
}

/* Every GEMM kernel's tiles into mt->gemms. */
static void note_gemms(const ModelTargets *mt, const CgTarget *tg, int n, const CgOutput *outs)
{
	ModelGemms *gm = mt->gemms;
	for (int t = 0; t < n; t++)
		for (int k = 0; k < outs[t].nkernels; k++) {
			if (outs[t].kernels[k].tiles.source == CG_TILES_NONE)
				continue;
			gm->k = realloc(gm->k, (size_t)(gm->n + 1) * sizeof *gm->k);
			if (!gm->k)
				abort();
			ModelGemm *x = &gm->k[gm->n++];
			snprintf(x->target, sizeof x->target, "%s", tg[t].name);
			snprintf(x->kernel, sizeof x->kernel, "%s", outs[t].kernels[k].name);
			x->tiles = outs[t].kernels[k].tiles;
		}
}

static bool compile_all(Graph *g, const ModelTargets *mt, const CgTarget *tg, int n, unsigned emit, CgOutput *outs,
			const CompileFront *front)
{
	CgTuning file = {0};
	if (!use_tuning(mt, tg, n, &file))
		return false;
	bool want_text = mt->dump_dir && (emit & (EMIT_LL | EMIT_ASM));
	char dir[4096];
	KernelCache *cache = !mt->no_cache && kc_default_dir(dir, sizeof dir) ? kc_open(dir) : NULL;
	CompileProgress progress = {0};
	bool tty = isatty(fileno(stderr)) && !mt->quiet;
	CgCompileOptions o = {
		.jobs = compile_jobs(mt), .cache = cache, .want_ir = want_text,
		.progress = tty ? draw_progress : NULL, .progress_ctx = &progress,
	};
	char err[1200];
	double t0 = rt_clock_s();
	bool ok = cg_compile_targets(g, tg, n, &o, outs, err, sizeof err);
	cg_tuning_use(NULL, 0);
	cg_tuning_free(&file);
	end_progress(&progress);
	if (ok && mt->gemms)
		note_gemms(mt, tg, n, outs);
	if (!ok)
		fprintf(stderr, "netc: error: %s\n", err);
	if (ok && mt->time)
		print_compile_times(tg, outs, n, o.jobs, rt_clock_s() - t0, cache);
	if (ok && mt->trace)
		ok = profile_write_compile_trace(mt->trace, g->name, tg, outs, n, front);
	if (cache && kc_stats(cache).stored > 0)
		kc_trim(cache, kc_max_bytes());
	if (cache)
		kc_close(cache);
	for (int i = 0; ok && i < n; i++)
		if (mt->dump_dir && !dump_target(mt, g->name, &tg[i], &outs[i], emit))
			return false;
	return ok;
}

static bool compile_graph(Graph *g, const ModelTargets *mt, Bundle *b, const CompileFront *front)
{
	CgTarget *tg = NULL;
	int n = 0;
	unsigned emit = 0;
	bool ok = parse_targets(mt, &tg, &n) && parse_emit(mt->emit, tg, n, &emit);
	PrecisionKind p = (PrecisionKind)g->train.precision;
	if (ok && mt->packed_half && p != PREC_FP16 && p != PREC_BF16) {
		/* the precision may come from the train section, so it is known only here */
		fprintf(stderr, "netc: error: --packed-half applies to --precision fp16 or bf16, and %s trains in %s\n",
			g->name[0] ? g->name : "the model", precision_name(p));
		ok = false;
	}
	if (ok && mt->emit && !mt->dump_dir) {
		fprintf(stderr, "netc: error: --emit needs --dump-dir DIR to write the files to\n");
		ok = false;
	}
	ok = ok && (!mt->dump_dir || make_dump_dir(mt->dump_dir));
	CgOutput *outs = calloc(n ? (size_t)n : 1, sizeof *outs);
	if (!outs)
		abort();
	ok = ok && compile_all(g, mt, tg, n, emit, outs, front);
	if (ok)
		cg_make_bundle(g, tg, outs, n, b);
	for (int i = 0; i < n; i++)
		cg_output_free(&outs[i]);
	free(outs);
	free(tg);
	return ok;
}
#endif

static bool read_bundle(const char *path, int64_t batch, const CompileOptions *o, Bundle *b)
{
	char err[1024];
	const ModelTargets *t = &o->targets;
	int64_t accumulate = o->accumulate;
	int precision = o->precision;
	if (((t->targets && t->targets[0]) || t->wave || t->code_object_version || t->emit || t->dump_dir)) {
		fprintf(stderr, "netc: error: %s is a compiled bundle: its targets were fixed by `netc compile`; "
				"pass the .net file to compile for other targets\n", path);
		return false;
	}
	if (!bundle_read(b, path, err, sizeof err)) {
		fprintf(stderr, "netc: error: %s\n", err);
		return false;
	}
	if (batch > 0 && batch != b->batch) {
		fprintf(stderr, "netc: error: %s was compiled for batch %lld, not %lld; compile it again "
				"with `netc compile MODEL.net --batch %lld -o FILE`\n",
			path, (long long)b->batch, (long long)batch, (long long)batch);
		bundle_free(b);
		return false;
	}
	if (accumulate > 0 && accumulate != b->train.accumulate) {
		fprintf(stderr, "netc: error: %s was compiled to accumulate %lld micro-batches, not %lld; compile it "
				"again with `netc compile MODEL.net --accumulate %lld -o FILE`\n",
			path, (long long)b->train.accumulate, (long long)accumulate, (long long)accumulate);
		bundle_free(b);
		return false;
	}
	if (precision >= 0 && precision != (int)b->train.precision) {
		fprintf(stderr, "netc: error: %s was compiled for --precision %s, not %s; compile it again with "
				"`netc compile MODEL.net --precision %s -o FILE`\n",
			path, precision_name(b->train.precision), precision_name((PrecisionKind)precision),
			precision_name((PrecisionKind)precision));
		bundle_free(b);
		return false;
	}
	return true;
}

bool model_compile(const char *path, int64_t batch, const CompileOptions *o, Bundle *b, Graph **graph_out)
{
	if (graph_out)
		*graph_out = NULL;
	if (model_is_bundle(path))
		return read_bundle(path, batch, o, b);
	PassSpans spans; /* the frontend and each pass, for a trace */
	CompileOptions traced = *o;
	traced.passes.spans = o->targets.trace ? &spans : NULL;
	CompileFront front = {.begin = rt_clock_s(), .passes = traced.passes.spans};
	Graph *g = model_load_graph(path, batch, true, &traced);
	if (!g)
		return false;
	front.end = rt_clock_s();
	bool ok = compile_graph(g, &o->targets, b, &front);
	if (ok && graph_out)
		*graph_out = g;
	else
		free_graph(g);
	return ok;
}
