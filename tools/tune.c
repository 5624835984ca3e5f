/* tune.c: `netc tune`, tuned GEMM tiles (docs/tuning.md).
 *
 * The model is compiled once per candidate index i: every GEMM kernel takes its i-th candidate
 * tiling (its heuristic's where it has fewer; codegen/tuning.h). Each compile's step is profiled
 * kernel by kernel (the machinery of `bench --profile`: medians over the repeats), and per key the
 * configuration whose kernels took the least time is written to the tuning file. A split GEMM's
 * time is its partials kernel's and its sum kernel's.
 *
 * The compile and the timing can run on two machines: `--emit-candidates DIR` writes the candidate
 * bundles and a manifest naming each bundle's GEMM kernels with their keys and configurations;
 * `--candidates DIR` (also in the runtime-only build) times them and writes the file. Keys and
 * configurations travel as the tuning file's text, so the timing side needs no compiler. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codegen/tile_cost.h"
#include "codegen/tuning.h"
#include "runtime/rt.h"
#include "tools/args.h"
#include "tools/model.h"
#include "tools/commands.h"

#define MANIFEST "manifest.tune"

/* A GEMM kernel of one candidate bundle: its key and configuration as the tuning file's text. */
typedef struct {
	char kernel[64];
	char key[256];
	char cfg[64];
	int index;        /* its candidate index (0: the heuristic's) */
	CgTuneKey k;      /* the key and configuration themselves, where this process compiled them */
	CgTileConfig c;
} TuneGemm;

typedef struct {
	char bundle[64];  /* the bundle's file name in the candidates folder */
	TuneGemm *g;
	int n;
} TuneCandidate;

/* The least time seen of a key's configuration, or (--cost-model) its modelled time and what the
 * model weighed besides. */
typedef struct {
	char key[256];
	char cfg[64];
	double ms;
	bool heuristic;
	bool modeled;
	CgCost cost;      /* --cost-model: the sum over the key's kernels (codegen/tile_cost.h) */
} Timed;

typedef struct {
	Timed *t;
	int n;
} Results;

static void *grow(void *p, int n, size_t size)
{
	p = realloc(p, (size_t)(n + 1) * size);
	if (!p)
		abort();
	return p;
}

static void add_gemm(TuneCandidate *c, const char *kernel, const char *key, const char *cfg, int index)
{
	c->g = grow(c->g, c->n, sizeof *c->g);
	TuneGemm *g = &c->g[c->n++];
	memset(g, 0, sizeof *g);
	snprintf(g->kernel, sizeof g->kernel, "%s", kernel);
	snprintf(g->key, sizeof g->key, "%s", key);
	snprintf(g->cfg, sizeof g->cfg, "%s", cfg);
	g->index = index;
}

/* The median ms of kernel name in r, with its split-K sum kernel's; -1: not launched. */
static double kernel_ms(const BenchResult *r, const char *name)
{
	char sum[80];
	snprintf(sum, sizeof sum, "%s_sum", name);
	double ms = -1;
	for (int i = 0; i < r->nkernels; i++)
		if (strcmp(r->kernels[i].name, name) == 0 || strcmp(r->kernels[i].name, sum) == 0)
			ms = (ms < 0 ? 0 : ms) + r->kernel_ms[i];
	return ms;
}

static Timed *find_timed(Results *res, const char *key, const char *cfg)
{
	for (int i = 0; i < res->n; i++)
		if (strcmp(res->t[i].key, key) == 0 && strcmp(res->t[i].cfg, cfg) == 0)
			return &res->t[i];
	return NULL;
}

/* The entry of g's key and configuration in r, added (zero) where r has none. */
static Timed *timed_entry(Results *r, const TuneGemm *g, bool modeled)
{
	Timed *t = find_timed(r, g->key, g->cfg);
	if (t)
		return t;
	r->t = grow(r->t, r->n, sizeof *r->t);
	t = &r->t[r->n++];
	*t = (Timed){.heuristic = g->index == 0, .modeled = modeled};
	snprintf(t->key, sizeof t->key, "%s", g->key);
	snprintf(t->cfg, sizeof t->cfg, "%s", g->cfg);
	return t;
}

/* Profiles bundle b and records each key's time in c (the sum over the kernels that have the
 * key) as its configuration's, where it is less than an earlier one. */
static bool time_candidate(const Args *a, const Bundle *b, const TuneCandidate *c, Results *res)
{
	BenchOptions o = {
		.device = a->device, .threads = (int)a->threads, .warmup = a->warmup ? a->warmup : 2,
		.steps = a->steps ? a->steps : 2, .repeats = a->repeats ? (int)a->repeats : 5, .seed = a->seed,
		.profile = true,
	};
	BenchResult r;
	if (rt_bench(b, &o, &r) != 0)
		return false;
	Results here = {0};
	for (int i = 0; i < c->n; i++) {
		double ms = kernel_ms(&r, c->g[i].kernel);
		if (ms < 0)
			continue; /* compiled but not launched in the training step */
		timed_entry(&here, &c->g[i], false)->ms += ms;
	}
	for (int i = 0; i < here.n; i++) {
		Timed *t = find_timed(res, here.t[i].key, here.t[i].cfg);
		if (!t) {
			res->t = grow(res->t, res->n, sizeof *res->t);
			res->t[res->n++] = here.t[i];
		} else if (here.t[i].ms < t->ms)
			t->ms = here.t[i].ms;
	}
	free(here.t);
	printf("%s: %d GEMM kernels timed on %s, step %.3f ms\n", c->bundle, c->n, r.device, r.profiled_step_ms);
	rt_bench_result_free(&r);
	return true;
}

static int cost_pick(const Results *res, const int *of, int n, int heuristic);

/* Which of the key's configurations res->t[of[0..n)] wins: the fastest timed, or the cost
 * model's pick; heuristic is the heuristic's place in of (-1: none). */
static int pick(const Results *res, const int *of, int n, int heuristic)
{
	if (res->t[of[0]].modeled)
		return cost_pick(res, of, n, heuristic);
	int best = 0;
	for (int j = 1; j < n; j++)
		if (res->t[of[j]].ms < res->t[of[best]].ms)
			best = j;
	return best;
}

/* The figures of one configuration for the file's comment. */
static void figures(const Timed *t, char *buf, size_t len)
{
	if (!t->modeled)
		snprintf(buf, len, "%.4f ms", t->ms);
	else
		snprintf(buf, len, "model %.4f ms %d waves%s", t->ms, t->cost.waves,
			 t->cost.spills ? " spills" : t->cost.starved ? " starved" : "");
}

/* Per key (in the order first timed) the winning configuration, with the figures as a comment. */
static bool write_results(const char *path, const Results *res, const char *about)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "netc tune: error: %s: cannot write: %s\n", path, strerror(errno));
		return false;
	}
	fprintf(f, "%s\n", CG_TUNING_HEADER);
	fprintf(f, "# %s\n", about);
	int keys = 0, changed = 0;
	for (int i = 0; i < res->n; i++) {
		bool first = true;
		for (int j = 0; j < i; j++)
			first &= strcmp(res->t[j].key, res->t[i].key) != 0;
		if (!first)
			continue;
		int *of = malloc((size_t)(res->n - i) * sizeof *of), configs = 0, h = -1;
		if (!of)
			abort();
		for (int j = i; j < res->n; j++)
			if (strcmp(res->t[j].key, res->t[i].key) == 0) {
				if (res->t[j].heuristic)
					h = configs;
				of[configs++] = j;
			}
		int w = pick(res, of, configs, h);
		const Timed *best = &res->t[of[w < 0 ? 0 : w]], *heur = h >= 0 ? &res->t[of[h]] : NULL;
		free(of);
		char fig[96];
		figures(best, fig, sizeof fig);
		fprintf(f, "%s : %s  # %s", best->key, best->cfg, fig);
		if (heur) {
			figures(heur, fig, sizeof fig);
			fprintf(f, ", heuristic %s %s", heur->cfg, fig);
		}
		fprintf(f, ", %d %s\n", configs, best->modeled ? "modelled" : "timed");
		keys++;
		changed += heur && best != heur;
	}
	bool ok = fclose(f) == 0;
	if (!ok)
		fprintf(stderr, "netc tune: error: %s: cannot write\n", path);
	else
		printf("wrote %s: %d keys, %d with tiles other than the heuristic's\n", path, keys, changed);
	return ok;
}

/* ---- the manifest of --emit-candidates ----
 *
 *     netc-tuning 1
 *     # comments
 *     bundle candidate-0.bundle
 *     gemm 0 k12_conv2d sm_90 f32 batch=1 m=64 ... split=1 : tile=64x128 kb=16
 */

static bool manifest_error(const char *path, int line, const char *what)
{
	fprintf(stderr, "netc tune: error: %s:%d: %s\n", path, line, what);
	return false;
}

static bool read_manifest(const char *path, TuneCandidate **out, int *nout)
{
	*out = NULL;
	*nout = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "netc tune: error: %s: cannot read the manifest: %s (--candidates DIR takes the folder "
				"that `netc tune --emit-candidates DIR` wrote)\n", path, strerror(errno));
		return false;
	}
	TuneCandidate *c = NULL;
	int n = 0, line = 0;
	char buf[1024];
	bool ok = true, header = false;
	while (ok && fgets(buf, sizeof buf, f)) {
		line++;
		buf[strcspn(buf, "\r\n")] = 0;
		if (!buf[0] || buf[0] == '#')
			continue;
		if (!header) {
			header = strcmp(buf, CG_TUNING_HEADER) == 0;
			if (!header)
				ok = manifest_error(path, line, "expected the header `" CG_TUNING_HEADER "`");
		} else if (strncmp(buf, "bundle ", 7) == 0) {
			c = grow(c, n, sizeof *c);
			memset(&c[n], 0, sizeof c[n]);
			if (strchr(buf + 7, '/') || strlen(buf + 7) >= sizeof c[n].bundle || !buf[7])
				ok = manifest_error(path, line, "expected `bundle NAME` (a file in the folder)");
			snprintf(c[n++].bundle, sizeof c->bundle, "%.63s", buf + 7);
		} else if (strncmp(buf, "gemm ", 5) == 0) {
			int index, used = 0;
			char kernel[64];
			char *sep = strstr(buf, " : ");
			if (!n || !sep || sscanf(buf + 5, "%d %63s %n", &index, kernel, &used) != 2 || index < 0 ||
			    buf + 5 + used >= sep) {
				ok = manifest_error(path, line, "expected `gemm INDEX KERNEL KEY : CONFIGURATION` after a "
								"`bundle` line");
				continue;
			}
			*sep = 0;
			add_gemm(&c[n - 1], kernel, buf + 5 + used, sep + 3, index);
		} else
			ok = manifest_error(path, line, "expected `bundle NAME` or `gemm ...`");
	}
	fclose(f);
	if (ok && !n)
		ok = manifest_error(path, line, "no bundle listed");
	*out = c;
	*nout = n;
	return ok;
}

static void free_candidates(TuneCandidate *c, int n)
{
	for (int i = 0; i < n; i++)
		free(c[i].g);
	free(c);
}

/* The run side: times every bundle of the manifest in dir. */
static int tune_candidates(const Args *a)
{
	if (!a->output) {
		fprintf(stderr, "netc tune: -o FILE is required (the tuning file to write)\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/" MANIFEST, a->candidates);
	TuneCandidate *c = NULL;
	int n = 0;
	if (!read_manifest(path, &c, &n)) {
		free_candidates(c, n);
		return 1;
	}
	Results res = {0};
	int rc = 0;
	char arch[32] = "";
	for (int i = 0; i < n && rc == 0; i++) {
		Bundle b;
		char err[1024];
		snprintf(path, sizeof path, "%s/%s", a->candidates, c[i].bundle);
		if (!bundle_read(&b, path, err, sizeof err)) {
			fprintf(stderr, "netc tune: error: %s\n", err);
			rc = 1;
			break;
		}
		snprintf(arch, sizeof arch, "%s", b.ncode ? b.code[0].target : "");
		if (!time_candidate(a, &b, &c[i], &res))
			rc = 1;
		bundle_free(&b);
	}
	if (rc == 0) {
		char about[512];
		snprintf(about, sizeof about, "netc tune --candidates %s --device %s: %d candidate bundles for %s", a->candidates,
			 a->device, n, arch);
		rc = write_results(a->output, &res, about) ? 0 : 1;
	}
	free(res.t);
	free_candidates(c, n);
	return rc;
}

#ifndef NETC_RUNTIME_ONLY
#include "codegen/cg.h"
#include "codegen/targets.h"

static int cost_pick(const Results *res, const int *of, int n, int heuristic)
{
	CgCost *cost = calloc((size_t)n, sizeof *cost);
	if (!cost)
		abort();
	for (int j = 0; j < n; j++)
		cost[j] = res->t[of[j]].cost;
	int w = cg_tile_cost_pick(cost, n, heuristic);
	free(cost);
	return w;
}

/* The bundle's kernel name, as the code object's metadata lists it (NULL: not there). */
static const CgAmdKernel *amd_kernel(const CgAmdCode *code, const char *name)
{
	for (int i = 0; i < code->nkernels; i++)
		if (strcmp(code->kernels[i].name, name) == 0)
			return &code->kernels[i];
	return NULL;
}


/* Models candidate bundle b's GEMM kernels (c) by the cost model and records each key's cost in
 * res (the sum over the kernels that have the key: every GEMM of one key takes the same
 * configuration in one candidate bundle); a configuration seen in an earlier bundle keeps its
 * figures, which are the same. */
static bool cost_candidate(const Bundle *b, const TuneCandidate *c, Results *res)
{
	const BundleCode *bc = b->ncode ? &b->code[0] : NULL;
	CgAmdCode code;
	CgAmdChip chip;
	char err[512];
	if (!bc || bc->kind != CODE_HSACO) {
		fprintf(stderr, "netc tune: error: --cost-model reads AMD code objects: the bundle has none\n");
		return false;
	}
	if (!cg_amd_chip(bc->arch, bc->wave, &chip)) {
		fprintf(stderr, "netc tune: error: %s: no occupancy rules for this architecture\n", bc->arch);
		return false;
	}
	if (!cg_amd_read(bc->data, bc->size, &code, err, sizeof err)) {
		fprintf(stderr, "netc tune: error: the code object for %s: %s\n", bc->target, err);
		return false;
	}
	const CgTargetInfo *ti = cg_target_info(bc->arch);
	Results here = {0};
	bool ok = true;
	int modeled = 0;
	for (int i = 0; ok && i < c->n; i++) {
		const CgAmdKernel *k = amd_kernel(&code, c->g[i].kernel);
		/* the kernels of training and evaluation both: a GPU runs both */
		const BundleKernel *launch = bundle_launch_of(bc, c->g[i].kernel);
		if (!k || !launch)
			continue; /* compiled but never launched */
		CgCostInput in = {.key = c->g[i].k, .cfg = c->g[i].c, .kernel = *k, .block = launch->block};
		CgCost cost;
		ok = cg_tile_cost(ti, &chip, &in, &cost, err, sizeof err);
		if (!ok) {
			fprintf(stderr, "netc tune: error: kernel %s: %s\n", c->g[i].kernel, err);
			break;
		}
		Timed *t = timed_entry(&here, &c->g[i], true);
		cg_tile_cost_add(&t->cost, &cost);
		t->ms = t->cost.ms;
		modeled++;
	}
	for (int i = 0; ok && i < here.n; i++)
		if (!find_timed(res, here.t[i].key, here.t[i].cfg)) {
			res->t = grow(res->t, res->n, sizeof *res->t);
			res->t[res->n++] = here.t[i];
		}
	free(here.t);
	cg_amd_free(&code);
	if (ok)
		printf("%s: %d GEMM kernels modelled for %s\n", c->bundle, modeled, bc->target);
	return ok;
}

/* Compiles the model with every GEMM on candidate i (no table) into b and c. */
static bool compile_candidate(const Args *a, const CompileOptions *o, int i, Bundle *b, TuneCandidate *c)
{
	CompileOptions co = *o;
	ModelGemms gm = {0};
	co.targets.gemms = &gm;
	co.targets.tuning = "none";
	co.targets.quiet = true;
	cg_tuning_candidate(i);
	bool ok = model_compile(a->model, a->batch, &co, b, NULL);
	cg_tuning_candidate(-1);
	memset(c, 0, sizeof *c);
	snprintf(c->bundle, sizeof c->bundle, "candidate-%d.bundle", i);
	for (int k = 0; ok && k < gm.n; k++) {
		char key[256], cfg[64];
		cg_tune_key_text(&gm.k[k].tiles.key, key, sizeof key);
		cg_tile_config_text(&gm.k[k].tiles.cfg, cfg, sizeof cfg);
		add_gemm(c, gm.k[k].kernel, key, cfg, gm.k[k].tiles.index);
		c->g[c->n - 1].k = gm.k[k].tiles.key;
		c->g[c->n - 1].c = gm.k[k].tiles.cfg;
	}
	free(gm.k);
	return ok;
}

static bool make_dir(const char *dir)
{
	if (mkdir(dir, 0777) == 0 || errno == EEXIST)
		return true;
	fprintf(stderr, "netc tune: error: %s: cannot make the folder: %s\n", dir, strerror(errno));
	return false;
}

/* Whether --cost-model can model target: one whose row has the model's compute units and peaks
 * (the AMD ones, whose code objects report registers, LDS and scratch); says why not. */
static bool amd_target(const char *target)
{
	CgTarget t;
	CgTargetOptions opts = {0};
	char err[512];
	if (!cg_target_lookup(target, &opts, &t, err, sizeof err)) {
		fprintf(stderr, "netc tune: error: %s\n", err);
		return false;
	}
	if (!cg_tile_cost_models(cg_target_info(t.arch))) {
		fprintf(stderr, "netc tune: --cost-model models AMD targets (their code objects report registers, LDS "
				"and scratch); time %s's candidates on its device instead (--device)\n", target);
		return false;
	}
	return true;
}

/* One target, named by --target. */
static bool one_target(const Args *a)
{
	if (!a->target || !a->target[0] || strchr(a->target, ',')) {
		fprintf(stderr, "netc tune: --target names the one target to tune for (host, sm_90, gfx906, ...)\n");
		return false;
	}
	return true;
}

/* Adds model m's results into all: a configuration's time and cost summed over the models (a key's
 * kernels in every model take the same candidates: they follow from the key). */
static void add_results(Results *all, const Results *m)
{
	for (int i = 0; i < m->n; i++) {
		Timed *t = find_timed(all, m->t[i].key, m->t[i].cfg);
		if (!t) {
			all->t = grow(all->t, all->n, sizeof *all->t);
			all->t[all->n++] = m->t[i];
			continue;
		}
		t->ms += m->t[i].ms;
		cg_tile_cost_add(&t->cost, &m->t[i].cost);
	}
}

/* Compiles model's candidate bundles: into the manifest's folder, or timed or modelled into res.
 * *count gets the candidate indices compiled. */
static bool tune_model(const Args *a, const CompileOptions *o, const char *model, FILE *manifest, Results *res,
		       int *count)
{
	Args one = *a;
	one.model = model;
	bool ok = true;
	*count = 1;
	cg_tuning_reset_seen();
	for (int i = 0; i < *count && ok; i++) {
		Bundle b;
		TuneCandidate c;
		char path[4096];
		if (!compile_candidate(&one, o, i, &b, &c))
			return false;
		if (i == 0) {
			*count = cg_tuning_candidates_seen();
			if (a->max_candidates && *count > a->max_candidates)
				*count = (int)a->max_candidates;
			printf("%s for %s: %d GEMM kernels, candidate indices 0 to %d\n", model, a->target, c.n, *count - 1);
		}
		if (manifest) {
			char err[1024];
			snprintf(path, sizeof path, "%s/%s", a->emit_candidates, c.bundle);
			if (!bundle_write(&b, path, err, sizeof err)) {
				fprintf(stderr, "netc tune: error: %s\n", err);
				ok = false;
			}
			fprintf(manifest, "bundle %s\n", c.bundle);
			for (int k = 0; k < c.n; k++)
				fprintf(manifest, "gemm %d %s %s : %s\n", c.g[k].index, c.g[k].kernel, c.g[k].key, c.g[k].cfg);
		} else if (a->cost_model ? !cost_candidate(&b, &c, res) : !time_candidate(&one, &b, &c, res))
			ok = false;
		free(c.g);
		bundle_free(&b);
	}
	return ok;
}

int cmd_tune(const Args *a, const CompileOptions *o)
{
	if (a->candidates)
		return a->model || a->emit_candidates || a->cost_model
			       ? (fprintf(stderr, "netc tune: --candidates DIR takes no model, no --emit-candidates and no "
						  "--cost-model\n"), 2)
			       : tune_candidates(a);
	if (!one_target(a))
		return 2;
	if (a->cost_model && a->emit_candidates) {
		fprintf(stderr, "netc tune: --cost-model writes the tuning file itself: no --emit-candidates\n");
		return 2;
	}
	if (a->nmore_models && !a->cost_model) {
		fprintf(stderr, "netc tune: one model at a time (got '%s' and '%s'); several models are tuned together "
				"with --cost-model\n", a->model, a->more_models[0]);
		return 2;
	}
	if (a->cost_model && !amd_target(a->target))
		return 2;
	if (!a->emit_candidates && !a->output) {
		fprintf(stderr, "netc tune: -o FILE (the tuning file) or --emit-candidates DIR is required\n");
		return 2;
	}
	if (a->emit_candidates && !make_dir(a->emit_candidates))
		return 1;
	FILE *manifest = NULL;
	char path[4096];
	if (a->emit_candidates) {
		snprintf(path, sizeof path, "%s/" MANIFEST, a->emit_candidates);
		manifest = fopen(path, "w");
		if (!manifest) {
			fprintf(stderr, "netc tune: error: %s: cannot write: %s\n", path, strerror(errno));
			return 1;
		}
		fprintf(manifest, "%s\n# candidates of %s for %s, made by netc tune --emit-candidates; time them with\n"
				  "#   netc tune --candidates DIR --device cuda|hip|cpu -o FILE\n",
			CG_TUNING_HEADER, a->model, a->target);
	}
	Results res = {0};
	int rc = 0, count = 0;
	for (int m = 0; m <= a->nmore_models && rc == 0; m++) {
		Results here = {0};
		if (!tune_model(a, o, m ? a->more_models[m - 1] : a->model, manifest, &here, &count))
			rc = 1;
		add_results(&res, &here);
		free(here.t);
	}
	if (manifest && fclose(manifest) != 0) {
		fprintf(stderr, "netc tune: error: %s/" MANIFEST ": cannot write\n", a->emit_candidates);
		rc = 1;
	}
	if (rc == 0 && manifest)
		printf("wrote %d candidate bundles and %s/" MANIFEST "\n", count, a->emit_candidates);
	if (rc == 0 && !manifest) {
		char about[512];
		if (a->cost_model && a->nmore_models)
			snprintf(about, sizeof about, "netc tune %s and %d more models --target %s --cost-model", a->model,
				 a->nmore_models, a->target);
		else if (a->cost_model)
			snprintf(about, sizeof about, "netc tune %s --target %s --cost-model: %d candidate indices", a->model,
				 a->target, count);
		else
			snprintf(about, sizeof about, "netc tune %s --target %s --device %s: %d candidate indices", a->model,
				 a->target, a->device, count);
		rc = write_results(a->output, &res, about) ? 0 : 1;
	}
	free(res.t);
	return rc;
}
#else
static int cost_pick(const Results *res, const int *of, int n, int heuristic)
{
	(void)res, (void)of, (void)n, (void)heuristic;
	return 0; /* nothing is modelled without the compiler */
}

int cmd_tune(const Args *a, const CompileOptions *o)
{
	(void)o;
	if (!a->candidates) {
		fprintf(stderr, "netc tune: this netc is runtime-only: it times candidates (--candidates DIR) that a "
				"full build wrote with --emit-candidates DIR\n");
		return 2;
	}
	return tune_candidates(a);
}
#endif
