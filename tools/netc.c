/* netc.c: the command line. Exit status 0 on success, 1 on a user error, 2 on a usage error; a
 * training run stopped by SIGINT or SIGTERM 128 + the signal (130, 143), its checkpoint saved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/launch.h"
#include "tools/model.h"
#include "tools/plot.h"
#include "tools/profile.h"
#ifndef NETC_RUNTIME_ONLY
#include "tools/report.h"
#endif

#ifndef NETC_RUNTIME_ONLY
#include "codegen/amdgpu_info.h"
#include "codegen/cg.h"
#include "codegen/targets.h"
#include "codegen/tile_cost.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "passes/passes.h"
#endif

typedef struct {
	const char *name;
	int (*run)(const Args *a, const CompileOptions *o);
	uint64_t options;
	const char *usage;
	const char *help;
} Command;

#ifndef NETC_RUNTIME_ONLY
static int cmd_print(const Args *a, const CompileOptions *o)
{
	Graph *g = model_load_graph(a->model, a->batch, a->training, o);
	if (!g)
		return 1;
	ir_print(stdout, g, 0); /* the whole graph, each node with its programs: `netc opt` reads it */
	ir_graph_free(g);
	return 0;
}

static double forward_flops(const Graph *g)
{
	double fwd = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (n->id <= g->loss && (n->programs & PROG_TRAIN) && n->grad_of < 0 && ir_ops[n->op].flops)
			fwd += ir_ops[n->op].flops(g, n);
	}
	return fwd;
}

/* One line per convolution of the training step: its op, shape and algorithm (--conv-algo). */
static void print_conv_algos(const Graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		const char *algo = conv_algo_name(g, n);
		if (!algo || !(n->programs & PROG_TRAIN))
			continue;
		char shape[96];
		printf("conv %s: %s %s, %s\n", n->name, n->grad_of >= 0 ? "gradient" : "forward",
		       shape_str(&n->shape, shape, sizeof shape), algo);
	}
}

/* The precision, and for tf32 where it differs from fp32 (passes/mixed_precision.c, gemm_gpu.c). */
static void print_precision(PrecisionKind p)
{
	printf("precision: %s", precision_name(p));
	if (p == PREC_TF32)
		printf(" (TF32 products in conv2d and matmul on NVIDIA sm_80+ through mma.sync, sm_90's wgmma and\n"
		       "  gfx942's xf32 MFMA; exactly fp32 on the host and other AMD GPUs)");
	printf("\n");
}


/* An AMD GEMM kernel's registers, LDS, scratch and occupancy, from its code object's metadata
 * (codes[c]: b->code[c] read, no kernels where it is no AMD code object): what the tiles cost
 * there (the tile cost model's inputs, docs/tuning.md). */
static void print_gemm_resources(const Bundle *b, const CgAmdCode *codes, const char *target, const char *kernel)
{
	for (int c = 0; c < b->ncode; c++) {
		const BundleCode *bc = &b->code[c];
		if (strcmp(bc->target, target) != 0)
			continue;
		CgAmdChip chip;
		bool known = cg_amd_chip(bc->arch, bc->wave, &chip);
		for (int i = 0; i < codes[c].nkernels; i++) {
			const CgAmdKernel *k = &codes[c].kernels[i];
			if (strcmp(k->name, kernel) != 0)
				continue;
			const BundleKernel *launch = bundle_launch_of(bc, kernel);
			int block = launch ? launch->block : 0;
			printf("    %s: block %d, %d VGPRs, %d AGPRs, %d SGPRs, %u B LDS, ", bc->target, block, k->vgpr, k->agpr,
			       k->sgpr, k->lds);
			if (k->scratch || k->vgpr_spill || k->sgpr_spill)
				printf("%u B scratch (%d VGPRs, %d SGPRs spilled)", k->scratch, k->vgpr_spill, k->sgpr_spill);
			else
				printf("no spills");
			if (known) {
				CgAmdOccupancy occ = cg_amd_occupancy(&chip, k, block);
				printf(", %d of %d waves/SIMD (%s)", occ.waves, chip.max_waves, occ.limit);
				const CgTargetInfo *ti = cg_target_info(bc->arch);
				int64_t filled = launch && cg_tile_cost_models(ti)
							 ? cg_tile_cost_filled_waves(ti, &chip, launch->grid, block)
							 : 0;
				if (cg_tile_cost_starved(occ.waves, filled))
					printf(", starved: the grid would fill %lld", (long long)filled);
			}
			printf("\n");
		}
	}
}

/* Every GEMM kernel's tiles and why it took them, compiled for o's targets (--target, --tuning);
 * on AMD targets with the kernel's resources. */
static bool print_gemm_tiles(const Args *a, const CompileOptions *o)
{
	CompileOptions co = *o;
	ModelGemms gm = {0};
	co.targets.gemms = &gm;
	co.targets.quiet = true;
	Bundle b;
	if (!model_compile(a->model, a->batch, &co, &b, NULL))
		return false;
	/* each AMD code object read once, not once per kernel */
	CgAmdCode *codes = calloc(b.ncode > 0 ? (size_t)b.ncode : 1, sizeof *codes);
	for (int c = 0; codes && c < b.ncode; c++) {
		char err[512];
		if (b.code[c].kind == CODE_HSACO && !cg_amd_read(b.code[c].data, b.code[c].size, &codes[c], err, sizeof err))
			cg_amd_free(&codes[c]); /* no resources shown for it */
	}
	printf("GEMM tiles (work-group tile MxN, k-block):\n");
	for (int i = 0; i < gm.n; i++) {
		char key[256], cfg[64];
		cg_tune_key_text(&gm.k[i].tiles.key, key, sizeof key);
		cg_tile_config_text(&gm.k[i].tiles.cfg, cfg, sizeof cfg);
		printf("  %s %s: %s, %s (%d candidates)%s%s\n    key %s\n", gm.k[i].target, gm.k[i].kernel, cfg,
		       gm.k[i].tiles.why, gm.k[i].tiles.ncand, gm.k[i].tiles.instr[0] ? ", " : "", gm.k[i].tiles.instr, key);
		if (codes)
			print_gemm_resources(&b, codes, gm.k[i].target, gm.k[i].kernel);
	}
	for (int c = 0; codes && c < b.ncode; c++)
		cg_amd_free(&codes[c]);
	free(codes);
	bundle_free(&b);
	free(gm.k);
	return true;
}

static int info_model(const Args *a, const CompileOptions *o)
{
	Graph *g = model_load_graph(a->model, a->batch, true, o);
	if (!g)
		return 1;
	PassTraffic t = passes_traffic(g, PROG_TRAIN);
	int64_t sum = plan_memory_sum(g);
	printf("model: %s\n", g->name);
	printf("batch: %lld\n", (long long)g->batch);
	print_precision(g->train.precision);
	printf("parameters: %lld\n", (long long)ir_param_count(g));
	printf("forward FLOPs per example: %.4g\n", forward_flops(g) / (double)g->batch);
	printf("training step FLOPs: %.4g\n", ir_flops(g, PROG_TRAIN));
	printf("training step kernels: %d\n", t.kernels);
	printf("training step traffic: %lld bytes read, %lld bytes written\n", (long long)t.read, (long long)t.written);
	printf("arena bytes: %lld\n", (long long)g->arena_bytes);
	printf("memory plan: arena %lld bytes, sum of buffers %lld bytes, ratio %.3f\n", (long long)g->arena_bytes,
	       (long long)sum, sum ? (double)g->arena_bytes / (double)sum : 1.0);
	print_conv_algos(g);
	if (a->plan)
		plan_memory_print(stdout, g);
	ir_graph_free(g);
	return (a->target || a->tuning) && !print_gemm_tiles(a, o) ? 1 : 0;
}

/* ---- netc info FILE: a bundle's plan and targets ---- */

static const char *code_kind_name(int kind)
{
	return kind == CODE_HSACO ? "AMD code object" : kind == CODE_PTX ? "PTX" : "host shared object";
}

static void print_amd_kernel(const CgAmdChip *chip, const CgAmdKernel *k, int block)
{
	printf("    %-28s %5d %5d %5d %5d %7u %7u %4d/%-4d", k->name, block, k->vgpr, k->agpr, k->sgpr, k->lds,
	       k->scratch, k->vgpr_spill, k->sgpr_spill);
	if (chip) {
		CgAmdOccupancy o = cg_amd_occupancy(chip, k, block);
		printf(" %5d/%-2d %s", o.waves, chip->max_waves, o.limit);
	}
	printf("\n");
}

/* Every kernel's registers, LDS, scratch and spills, read from the code object's metadata, and
 * the occupancy that follows. */
static bool print_amd_code(const BundleCode *c)
{
	CgAmdCode code;
	char err[512];
	if (!cg_amd_read(c->data, c->size, &code, err, sizeof err)) {
		fprintf(stderr, "netc: error: code object for %s: %s\n", c->target, err);
		return false;
	}
	CgAmdChip chip;
	bool known = cg_amd_chip(c->arch, c->wave, &chip);
	printf("  metadata: %s, code object v%d (amdhsa.version %d.%d)\n", code.target,
	       code.version[0] == 1 ? code.version[1] + 3 : code.version[0], code.version[0], code.version[1]);
	if (known)
		printf("  limits: %d VGPRs per SIMD lane (granule %d), %u LDS bytes per %s, %d waves per SIMD at most\n",
		       chip.vgpr_total, chip.vgpr_granule, chip.lds_bytes, chip.major >= 10 ? "WGP" : "CU", chip.max_waves);
	printf("    %-28s %5s %5s %5s %5s %7s %7s %9s %s\n", "kernel", "block", "vgpr", "agpr", "sgpr", "lds",
	       "scratch", "spill v/s", known ? "waves/SIMD limit" : "");
	for (int i = 0; i < code.nkernels; i++) {
		const BundleKernel *launch = bundle_launch_of(c, code.kernels[i].name);
		print_amd_kernel(known ? &chip : NULL, &code.kernels[i], launch ? launch->block : 0);
	}
	cg_amd_free(&code);
	return true;
}

static int64_t param_count(const Bundle *b)
{
	int64_t n = 0;
	for (int i = 0; i < b->nbuf; i++) {
		if (b->buf[i].role != BUF_PARAM)
			continue;
		int64_t numel = 1;
		for (int d = 0; d < b->buf[i].rank; d++)
			numel *= b->buf[i].dim[d];
		n += numel;
	}
	return n;
}

/* Whether the ranks of a data-parallel run can sum the gradients between backward and the update. */
static void print_data_parallel(const Bundle *b)
{
	if (b->update_node < 0) {
		printf("data-parallel: no (backward and the update share kernels: compile with --data-parallel)\n");
		return;
	}
	int grads = 0, backward = 0;
	for (int i = 0; i < b->nbuf; i++)
		grads += b->buf[i].role == BUF_GRAD;
	while (b->ncode && backward < b->code[0].ntrain && b->code[0].train_kernels[backward].node < b->update_node)
		backward++;
	printf("data-parallel: yes (%d gradient buffers summed after %d of %d training kernels)\n", grads, backward,
	       b->ncode ? b->code[0].ntrain : 0);
}

static int info_bundle(const Args *a, const CompileOptions *o)
{
	Bundle b;
	if (!model_compile(a->model, a->batch, o, &b, NULL))
		return 1;
	printf("model: %s\n", b.model);
	printf("batch: %lld\n", (long long)b.batch);
	print_precision(b.train.precision);
	printf("parameters: %lld\n", (long long)param_count(&b));
	printf("inputs:");
	for (int k = 0; k < b.ninputs; k++) {
		const BundleBuffer *x = &b.buf[b.inputs[k]];
		char shape[160];
		printf("%s %s %s%s", k ? "," : "", x->name, dtype_name((DType)x->dtype), rt_shape_text(x->rank, x->dim, shape, sizeof shape));
	}
	printf("\n");
	printf("training step FLOPs: %.4g\n", b.flops_per_step);
	printf("arena bytes: %lld\n", (long long)b.arena_bytes);
	print_data_parallel(&b);
	printf("targets: %d\n", b.ncode);
	int rc = 0;
	for (int i = 0; i < b.ncode; i++) {
		const BundleCode *c = &b.code[i];
		printf("target %s: %s, arch %s", c->target, code_kind_name(c->kind), c->arch);
		if (c->wave)
			printf(", wave%d", c->wave);
		printf(", %llu bytes, %d training kernels, %d evaluation kernels", (unsigned long long)c->size, c->ntrain,
		       c->neval);
		if (c->ntmaps)
			printf(", %d tensor maps", c->ntmaps);
		printf("\n");
		if (c->peak_gflops > 0)
			printf("  roofline (bench --profile): %.0f GFLOP/s, %.0f GB/s (%s)\n", c->peak_gflops, c->peak_gbs,
			       c->peak_of);
		if (c->kind == CODE_HSACO && !print_amd_code(c))
			rc = 1;
	}
	bundle_free(&b);
	return rc;
}

static int cmd_info(const Args *a, const CompileOptions *o)
{
	return model_is_bundle(a->model) ? info_bundle(a, o) : info_model(a, o);
}

static int cmd_passes(const Args *a, const CompileOptions *o)
{
	(void)a, (void)o;
	passes_list(stdout);
	return 0;
}

static int cmd_layers(const Args *a, const CompileOptions *o)
{
	(void)a, (void)o;
	fe_print_layers(stdout);
	return 0;
}

static int cmd_targets(const Args *a, const CompileOptions *o)
{
	(void)a, (void)o;
	cg_targets_print(stdout);
	return 0;
}

static int cmd_compile(const Args *a, const CompileOptions *o)
{
	if (!a->output) {
		fprintf(stderr, "netc compile: -o FILE is required\n");
		return 2;
	}
	Bundle b;
	if (!model_compile(a->model, a->batch, o, &b, NULL))
		return 1;
	char err[1024];
	int rc = 0;
	if (!bundle_write(&b, a->output, err, sizeof err)) {
		fprintf(stderr, "netc: error: %s\n", err);
		rc = 1;
	} else if (!a->quiet) {
		printf("wrote %s: %s, batch %lld, %d kernels per training step, arena %.1f MiB, targets", a->output,
		       b.model, (long long)b.batch, b.code[0].ntrain, b.arena_bytes / 1048576.0);
		for (int i = 0; i < b.ncode; i++)
			printf("%s %s", i ? "," : "", b.code[i].target);
		if (b.train.accumulate > 1)
			printf("; accumulates %lld micro-batches (%d kernels each but the last)",
			       (long long)b.train.accumulate, b.code[0].naccum);
		printf("\n");
	}
	bundle_free(&b);
	return rc;
}
#endif

static int cmd_devices(const Args *a, const CompileOptions *o)
{
	(void)a, (void)o;
	rt_devices_print(stdout);
	return 0;
}

/* The weights a run starts from: --init F, else an ONNX model's initializers when no checkpoint
 * (given) says otherwise; w stays empty without either. False after printing an error. */
static bool starting_weights(const Args *a, const char *checkpoint, RtTensors *w, const char **source)
{
	*w = (RtTensors){0};
	*source = NULL;
	if (a->init) {
		char err[1024];
		if (!rt_tensors_read(a->init, w, err, sizeof err)) {
			fprintf(stderr, "netc: error: %s\n", err);
			return false;
		}
		*source = a->init;
		return true;
	}
	if (checkpoint || !model_is_onnx(a->model))
		return true;
	*source = a->model;
	return model_onnx_weights(a->model, w);
}

/* train, eval and bench take a bundle file, or a .net file compiled now for --target (the host by
 * default) */
static int cmd_train(const Args *a, const CompileOptions *options)
{
	if (a->init && a->resume) {
		fprintf(stderr, "netc train: --init and --resume exclude each other (--resume continues a run, --init "
				"starts one from given weights)\n");
		return 2;
	}
	RtRanks ranks;
	char err[512];
	if (!rt_ranks_from_env(&ranks, err, sizeof err)) {
		fprintf(stderr, "netc train: error: %s\n", err);
		return 1;
	}
	/* ranks sum the gradients between backward and the update: a .net file is compiled so */
	CompileOptions dp = *options, *co = &dp;
	dp.passes.split_update |= ranks.launch != RT_LAUNCH_NONE;
	Bundle b;
	RtTensors init;
	const char *source;
	if (!model_compile(a->model, a->batch, co, &b, NULL))
		return 1;
	if (!starting_weights(a, a->resume, &init, &source)) {
		bundle_free(&b);
		return 1;
	}
	TrainOptions o = {
		.ranks = &ranks,
		.data_dir = a->data, .device = a->device, .threads = (int)a->threads, .steps = a->steps,
		.epochs = a->epochs, .seed = a->seed, .log_every = a->log_every, .quiet = a->quiet,
		.save = a->save, .save_every = a->save_every, .resume = a->resume, .log_csv = a->log,
		.overfit_batch = a->overfit_batch, .init = source ? &init : NULL, .init_source = source,
	};
	int rc = rt_train(&b, &o);
	rt_tensors_free(&init);
	bundle_free(&b);
	return rc;
}

static int cmd_eval(const Args *a, const CompileOptions *co)
{
	if (!a->checkpoint && !model_is_onnx(a->model)) {
		fprintf(stderr, "netc eval: --checkpoint F is required\n");
		return 2;
	}
	if (!a->input != !a->output) {
		fprintf(stderr, "netc eval: --input X.npy and -o Y.npy go together\n");
		return 2;
	}
	Bundle b;
	RtTensors init;
	const char *source;
	if (!model_compile(a->model, a->batch, co, &b, NULL))
		return 1;
	if (!starting_weights(a, a->checkpoint, &init, &source)) {
		bundle_free(&b);
		return 1;
	}
	TrainOptions o = {.data_dir = a->data, .device = a->device, .threads = (int)a->threads,
			  .seed = a->seed, .quiet = a->quiet, .resume = a->checkpoint,
			  .init = source ? &init : NULL, .init_source = source, .input = a->input, .output = a->output};
	int rc = a->input ? rt_predict(&b, &o) : rt_eval(&b, &o);
	rt_tensors_free(&init);
	bundle_free(&b);
	return rc;
}

static BenchOptions bench_options(const Args *a)
{
	BenchOptions o = {
		.device = a->device, .threads = (int)a->threads, .warmup = a->warmup ? a->warmup : 5,
		.steps = a->steps ? a->steps : 20, .repeats = a->repeats ? (int)a->repeats : 5, .seed = a->seed,
		.profile = a->profile || a->trace,
	};
	return o;
}

#ifndef NETC_RUNTIME_ONLY
/* ---- netc bench --compare: pipelines side by side ---- */

#define COMPARE_MAX 4

typedef struct {
	char name[16];
	int kernels;
	PassTraffic traffic;
	int64_t arena;
	BenchResult r;
	Graph *g;   /* kept for --report, else NULL */
	Bundle b;   /* kept for --report (its group counts), else freed */
} CompareColumn;

/* The compile options of one column: the command's, with the column's pipeline. */
static bool compare_options(const char *name, const CompileOptions *base, CompileOptions *o)
{
	*o = *base;
	if (strcmp(name, "unfused") == 0)
		o->passes.disable = "fuse";
	else if (strcmp(name, "O0") == 0)
		o->passes.O0 = true;
	else if (strcmp(name, "fused") != 0) {
		fprintf(stderr, "netc bench: --compare: unknown pipeline '%s' (unfused, fused, O0)\n", name);
		return false;
	}
	return true;
}

static bool compare_column(const Args *a, const CompileOptions *o, CompareColumn *c)
{
	Bundle b;
	Graph *g;
	BenchOptions bo = bench_options(a);
	bo.profile |= a->report != NULL; /* the report draws every kernel */
	if (!model_compile(a->model, a->batch, o, &b, &g))
		return false;
	c->kernels = b.code[0].ntrain;
	c->traffic = passes_traffic(g, PROG_TRAIN);
	c->arena = b.arena_bytes;
	int rc = rt_bench(&b, &bo, &c->r);
	if (a->report) {
		c->g = g;
		c->b = b;
	} else {
		bundle_free(&b);
		ir_graph_free(g);
	}
	return rc == 0;
}

/* Row `row` of the table below for one column. */
static double compare_value(const CompareColumn *c, int row)
{
	switch (row) {
	case 0: return c->kernels;
	case 1: return (double)c->traffic.read;
	case 2: return (double)c->traffic.written;
	case 3: return (double)c->arena;
	case 4: return c->r.ms_per_step;
	default: return c->r.examples_per_s;
	}
}

/* The table, as printed and as the report shows it. */
static ReportTable compare_table(const CompareColumn *c, int n)
{
	static const char *const rows[] = {"kernels per step", "bytes read per step", "bytes written per step",
					   "arena bytes", "ms/step", "examples/s"};
	ReportTable t = {.nrows = (int)(sizeof rows / sizeof *rows)};
	for (int row = 0; row < t.nrows; row++) {
		t.label[row] = rows[row];
		t.decimals[row] = row == 4 ? 3 : 0;
		for (int i = 0; i < n; i++)
			t.value[row][i] = compare_value(&c[i], row);
	}
	return t;
}

static void compare_print(const Args *a, const CompareColumn *c, int n, const ReportTable *t)
{
	BenchOptions bo = bench_options(a);
	printf("compare %s on %s: median of %d repeats of %lld steps\n", a->model, c[0].r.device, bo.repeats,
	       (long long)bo.steps);
	printf("%-24s", "");
	for (int i = 0; i < n; i++)
		printf(" %14s", c[i].name);
	char ratio[40];
	snprintf(ratio, sizeof ratio, "%s/%s", c[n - 1].name, c[0].name);
	printf(" %14s\n", ratio);
	for (int row = 0; row < t->nrows; row++) {
		printf("%-24s", t->label[row]);
		for (int i = 0; i < n; i++)
			printf(" %14.*f", t->decimals[row], t->value[row][i]);
		if (t->value[row][0] != 0)
			printf(" %14.3f", t->value[row][n - 1] / t->value[row][0]);
		printf("\n");
	}
}

/* The page of --report: the table, the groups and the roofline of the device the columns ran on. */
static bool compare_report(const Args *a, const CompareColumn *c, int n, const ReportTable *t)
{
	ReportColumn rc[COMPARE_MAX];
	for (int i = 0; i < n; i++)
		rc[i] = (ReportColumn){.name = c[i].name, .g = c[i].g, .b = &c[i].b, .r = &c[i].r};
	RtRoofline roof;
	profile_roofline(&c[0].b, &c[0].r, a->peak_gflops, a->peak_gbs, &roof);
	if (!report_write(a->report, a->model, c[0].r.device, rc, n, t, &roof))
		return false;
	printf("report: %s\n", a->report);
	return true;
}

static bool compare_args(const Args *a)
{
	if (model_is_bundle(a->model)) {
		fprintf(stderr, "netc bench: --compare compiles the model for each pipeline: pass the .net file, not a bundle\n");
		return false;
	}
	if (a->passes || a->disable_pass || a->O0) {
		fprintf(stderr, "netc bench: --compare sets the pipelines itself: drop --passes, --disable-pass and -O0\n");
		return false;
	}
	return true;
}

static bool report_has(const CompareColumn *c, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(c[i].name, name) == 0)
			return true;
	return false;
}

static int bench_compare(const Args *a, const CompileOptions *base)
{
	CompareColumn c[COMPARE_MAX] = {0};
	int n = 0;
	if (!compare_args(a))
		return 2;
	for (const char *p = a->compare;; p++) {
		size_t k = strcspn(p, ",");
		if (n == COMPARE_MAX || k == 0 || k >= sizeof c[0].name) {
			fprintf(stderr, "netc bench: --compare takes 2 to %d of unfused, fused, O0 (got '%s')\n", COMPARE_MAX,
				a->compare);
			return 2;
		}
		memcpy(c[n].name, p, k);
		c[n++].name[k] = 0;
		p += k;
		if (!*p)
			break;
	}
	CompileOptions o[COMPARE_MAX];
	for (int i = 0; i < n; i++)
		if (!compare_options(c[i].name, base, &o[i]))
			return 2;
	if (n < 2) {
		fprintf(stderr, "netc bench: --compare needs two pipelines or more, as in --compare unfused,fused\n");
		return 2;
	}
	if (a->report && !(report_has(c, n, "unfused") && report_has(c, n, "fused"))) {
		fprintf(stderr, "netc bench: --report draws fused groups against unfused kernels: --compare needs unfused "
				"and fused\n");
		return 2;
	}
	bool ok = true;
	int done = 0;
	for (; ok && done < n; done++)
		ok = compare_column(a, &o[done], &c[done]);
	if (ok) {
		ReportTable t = compare_table(c, n);
		compare_print(a, c, n, &t);
		ok = !a->report || compare_report(a, c, n, &t);
	}
	for (int i = 0; i < done; i++) {
		rt_bench_result_free(&c[i].r);
		if (c[i].g)
			ir_graph_free(c[i].g);
		bundle_free(&c[i].b);
	}
	return ok ? 0 : 1;
}
#endif

static int cmd_bench(const Args *a, const CompileOptions *co)
{
#ifndef NETC_RUNTIME_ONLY
	if (a->compare)
		return bench_compare(a, co);
	if (a->report) {
		fprintf(stderr, "netc bench: --report FILE.html writes the page of --compare unfused,fused: add it\n");
		return 2;
	}
#endif
	RtRanks ranks;
	char err[512];
	if (!rt_ranks_from_env(&ranks, err, sizeof err)) {
		fprintf(stderr, "netc bench: error: %s\n", err);
		return 1;
	}
	CompileOptions dp = *co;
	dp.passes.split_update |= ranks.launch != RT_LAUNCH_NONE;
	Bundle b;
	Graph *g = NULL;
	bool profile = a->profile || a->trace;
	if (!model_compile(a->model, a->batch, &dp, &b, profile ? &g : NULL))
		return 1;
	BenchOptions o = bench_options(a);
	o.ranks = &ranks;
	BenchResult r;
	int rc = rt_bench(&b, &o, &r);
	if (rc == 0 && ranks.rank == 0) {
		printf("model %s, batch %lld, %d kernels per step, %.3g GFLOP per step\n", b.model,
		       (long long)b.batch, b.code[0].ntrain, b.flops_per_step / 1e9);
		if (r.ranks)
			printf("ranks: %d (%s), gradients averaged every step; examples/s counts every rank's\n", r.ranks,
			       r.engine);
		if (r.ranks)
			printf("scaling efficiency: %.1f%% (a rank alone, all ranks timed at once: %.3f ms/step)\n",
			       100 * r.ms_alone / r.ms_per_step, r.ms_alone);
		printf("ms/step: %.3f (median of %d repeats of %lld steps; min %.3f, max %.3f)\n", r.ms_per_step,
		       o.repeats, (long long)o.steps, r.ms_min, r.ms_max);
		printf("examples/s: %.0f\n", r.examples_per_s);
		/* a step of K batches: about K times one batch's work (the update once) */
		double k = b.train.accumulate > 1 ? (double)b.train.accumulate : 1.0;
		printf("GFLOP/s: %.1f\n", k * b.flops_per_step / (r.ms_per_step * 1e6) * (r.ranks ? r.ranks : 1));
		RtRoofline roof;
		if (profile)
			profile_roofline(&b, &r, a->peak_gflops, a->peak_gbs, &roof);
		if (profile && !profile_print(stdout, &b, &r, &roof, a->trace))
			rc = 1;
	}
	rt_bench_result_free(&r);
#ifndef NETC_RUNTIME_ONLY
	if (g)
		ir_graph_free(g);
#endif
	bundle_free(&b);
	return rc;
}

#ifdef NETC_RUNTIME_ONLY
#define BENCH_COMPARE_OPTS 0
#define BENCH_COMPARE_USAGE ""
#define BENCH_COMPARE_HELP ""
#else
#define BENCH_COMPARE_OPTS OPT_COMPARE
#define BENCH_COMPARE_USAGE " [--compare unfused,fused [--report FILE.html]]"
#define BENCH_COMPARE_HELP                                                                             \
	"\n--compare unfused,fused compiles the .net file once per pipeline (unfused: without the fuse\n" \
	"pass; fused: the default; O0: -O0), times each, and prints them side by side: kernels per\n"   \
	"training step, the bytes they read and write (counted by the compiler), arena bytes, ms/step\n" \
	"and examples/s, with the ratio of the last column to the first. --report FILE.html also\n"   \
	"profiles every kernel of both and writes one self-contained page: the table, the time and\n" \
	"bytes of each fused group beside the unfused kernels it replaced, the arena, and a roofline\n" \
	"plot of the kernels (docs/profiling.md)."
#endif

/* netc tune: the runtime-only build only times candidates made elsewhere */
#define TUNE_RUN_OPTS (OPT_OUTPUT | OPT_DEVICE | OPT_THREADS | OPT_REPEATS | OPT_WARMUP | OPT_STEPS | OPT_SEED | OPT_TUNE)
#ifdef NETC_RUNTIME_ONLY
#define TUNE_OPTS TUNE_RUN_OPTS
#define TUNE_USAGE "netc tune --candidates DIR -o FILE [--device cpu|cuda|hip] [--repeats N]"
#else
#define TUNE_OPTS (TUNE_RUN_OPTS | OPT_BATCH | OPT_TARGET | OPT_PASSES)
#define TUNE_USAGE                                                                                        \
	"netc tune MODEL.net --target T -o FILE [--device cpu|cuda|hip] [--max-candidates N] [--repeats N]\n" \
	"                 [--batch N] " PASS_USAGE "\n"                                                     \
	"       netc tune MODEL.net --target gfxNNN --cost-model -o FILE [--max-candidates N]\n"            \
	"       netc tune MODEL.net --target T --emit-candidates DIR [--max-candidates N]\n"              \
	"       netc tune --candidates DIR -o FILE [--device cpu|cuda|hip] [--repeats N]"
#endif

/* train and bench compile a .net file on the fly: for the host, or for --target */
#ifdef NETC_RUNTIME_ONLY
#define RUN_TARGET_OPTS 0
#define RUN_TARGET_USAGE ""
#define RUN_TARGET_HELP ""
#else
#define RUN_TARGET_OPTS (OPT_TARGET | OPT_WAVE | OPT_COV | OPT_PASSES | OPT_TUNING)
#define RUN_TARGET_USAGE " [--target LIST] [--jobs N] [--no-cache] [--tuning FILE|none]\n"               \
	"                  [--no-matrix-units] [--packed-half] " PASS_USAGE
#define RUN_TARGET_HELP "\nA .net file is compiled first, for the host or for --target LIST (as netc compile)." COMPILE_HELP \
	PASS_HELP
#endif

/* how kernels are compiled, on every command that compiles them */
#define COMPILE_HELP                                                                                   \
	"\n--jobs N compiles kernels on N threads (default: every core); compiled kernels are kept in\n"  \
	"$NETC_CACHE_DIR (default ~/.cache/netc, at most $NETC_CACHE_MAX_MB MiB, default 2048) and\n"   \
	"reused; --no-cache compiles them all again.\n"                                                 \
	"--time-passes also prints each target's compile times and cache hits. On a terminal a\n"      \
	"progress line shows the kernels compiled so far. --tuning FILE takes GEMM tiles from the\n"  \
	"tuning file FILE (`netc tune` writes them) before the ones netc ships for the target;\n"       \
	"--tuning none takes the heuristics' tiles only (docs/tuning.md).\n"                          \
	"--no-matrix-units runs every GEMM on the vector units, also where the target has matrix\n"    \
	"units (what a GPU without them does). --packed-half: half-precision GEMMs without a matrix\n"  \
	"unit multiply on packed FMAs (fma.rn.f16x2/bf16x2, v_pk_fma_f16) and sum each k-block of 16\n" \
	"in the half type before float32: faster, fewer bits (docs/codegen.md)."

/* the pass manager's options, on every command that runs the passes */
#define PASS_USAGE "[--passes=LIST] [--disable-pass=NAME] [--print-after=NAME|all] [--time-passes] [-O0]\n" \
	"                  [--layout nchw|nhwc|auto] [--conv-algo auto|direct|winograd]\n"                        \
	"                  [--precision fp32|fp16|bf16|tf32] [--data-parallel] [--max-errors N]"
#define PASS_HELP                                                                                      \
	"\n--passes=LIST sets the pass pipeline (`netc passes` lists them; default\n"                    \
	PASSES_DEFAULT "),\n--disable-pass=NAME takes passes out, -O0 runs no optimization (no fusion, no\n"  \
	"memory reuse); --print-after=NAME|all prints the training program after those passes and\n"   \
	"--time-passes each pass's time, both on stderr. --layout picks the layout of convolutions\n"   \
	"(auto: by the first target, docs/passes.md); --conv-algo how 3x3 stride-1 convolutions are\n"  \
	"computed (direct implicit GEMM or Winograd; auto: the cost rule of docs/passes.md; `netc info`\n" \
	"shows each convolution's); --precision what forward and backward compute\n"                  \
	"in (fp16 and bf16 keep fp32 master weights; fp16 scales the loss; tf32 is fp32 with TF32\n"   \
	"products in conv and matmul on NVIDIA sm_80+ and gfx942, docs/training.md).\n"                 \
	"--data-parallel keeps the optimizer update out of backward's kernels, so that ranks can sum\n" \
	"the gradients in between (docs/distributed.md; most fp32 plans are split without it).\n"       \
	"--max-errors N prints at most N errors of a .net file (default 20; 0: all of them)."

static int run_plot(const Args *a, const CompileOptions *o)
{
	(void)o;
	return cmd_plot(a);
}

static const Command commands[] = {
#ifndef NETC_RUNTIME_ONLY
	{"print", cmd_print, OPT_TRAINING | OPT_BATCH | OPT_PASSES | OPT_ACCUMULATE,
	 "netc print MODEL.net [--training] [--batch N] [--accumulate K] " PASS_USAGE,
	 "Prints the forward graph, or with --training the compiled graph (forward, backward, optimizer\n"
	 "update, evaluation and, with --accumulate K or `accumulate = K`, the accumulation micro-batch),\n"
	 "one node per line with the programs it runs in, its fused group and arena offset: the text\n"
	 "form `netc opt` reads (docs/passes.md)." PASS_HELP},
	{"info", cmd_info, OPT_BATCH | OPT_PASSES | OPT_PLAN | OPT_TARGET | OPT_TUNING,
	 "netc info MODEL.net|FILE [--batch N] [--plan] [--target LIST [--tuning FILE|none]] " PASS_USAGE,
	 "Summarizes a model: parameters, forward FLOPs per example, training step FLOPs, kernels and\n"
	 "the bytes they read and write, arena bytes, and the memory plan: the arena against the sum of\n"
	 "all buffers without reuse. --plan also prints every block: offset, bytes, lifetime (kernel\n"
	 "positions in the training or evaluation program, or resident), the value, and whether it was\n"
	 "computed in place of an input or reuses a block an earlier value freed. On a compiled bundle\n"
	 "FILE: the model, batch and arena, the targets inside, and for each AMD target every kernel's\n"
	 "VGPRs, AGPRs, SGPRs, LDS bytes, scratch bytes per work-item and spills, read from the code\n"
	 "object's metadata, with the occupancy they allow (waves per SIMD) and the resource that limits\n"
	 "it. --target LIST: the targets a .net file is summarized for (default host); the first one\n"
	 "decides the passes' auto choices, such as each convolution's algorithm. With --target or\n"
	 "--tuning the model is compiled, and every GEMM kernel's tiles are listed with why it took them:\n"
	 "the heuristic's, or tuned from a file and line (docs/tuning.md)." PASS_HELP},
	{"compile", cmd_compile, OPT_OUTPUT | OPT_BATCH | OPT_QUIET | OPT_TARGET | OPT_WAVE | OPT_COV | OPT_EMIT | OPT_PASSES
		 | OPT_ACCUMULATE | OPT_TRACE | OPT_TUNING,
	 "netc compile MODEL.net -o FILE [--batch N] [--accumulate K] [--target LIST] [--wave32|--wave64]\n"
	 "                    [--code-object-version 4|5|6] [--emit KINDS --dump-dir DIR] [--jobs N] [--no-cache]\n"
	 "                    [--trace FILE.json] [--tuning FILE|none] [--no-matrix-units] [--packed-half]\n"
	 "                    " PASS_USAGE,
	 "Compiles the training and evaluation programs and writes the bundle FILE: the plan once, one\n"
	 "code object per target, and the training settings; `netc train` and `netc bench` run it.\n"
	 "--target LIST is comma-separated and may mix AMD architectures and product names (gfx906,\n"
	 "gfx90a:xnack-, rx580, mi300x...), NVIDIA architectures (sm_90) and host, the default; `netc\n"
	 "targets` lists them. --wave32/--wave64 pick the wave size of AMD chips that run both (gfx10 and\n"
	 "newer; default 32 there, 64 before). --code-object-version sets the AMD code object version\n"
	 "(default 5). --emit KINDS (comma-separated of hsaco, ptx, ll, asm, so) with --dump-dir DIR also\n"
	 "writes each code object, its LLVM IR and its assembly as DIR/MODEL.TARGET.EXT (':' in a target\n"
	 "becomes '_'); --dump-dir alone writes every kind the targets produce. --trace FILE.json writes\n"
	 "the compile as a Chrome trace: the frontend and passes, then every compile unit's lowering,\n"
	 "compiling (or cache hit) and each target's link, one track per thread." COMPILE_HELP PASS_HELP},
	{"dot", cmd_dot, OPT_TRAINING | OPT_OUTPUT | OPT_BATCH | OPT_PASSES | OPT_COLLAPSE,
	 "netc dot MODEL.net [--training [--collapse backward,optimizer]] -o FILE.dot [--batch N] " PASS_USAGE,
	 "Writes the graph (with --training the training step) for Graphviz: fused groups as clusters,\n"
	 "each node labelled with its op and shape. `dot -Tsvg FILE.dot -o FILE.svg` draws it.\n"
	 "--collapse backward,optimizer (either or both) draws the backward pass and the optimizer\n"
	 "update as one box each, with their node and kernel counts." PASS_HELP},
	{"opt", cmd_opt, OPT_PASSES, "netc opt FILE.ir " PASS_USAGE,
	 "Reads a graph in the text form `netc print` writes (docs/passes.md), runs exactly the passes\n"
	 "--passes lists (none without it; no pass is required, so one pass can be tested alone) and\n"
	 "prints the graph in the same form. --precision sets the graph's `train precision`."},
	{"passes", cmd_passes, OPT_NO_MODEL, "netc passes",
	 "Lists every pass the pipeline may name, what it does, whether it is required, and the default\n"
	 "pipeline. docs/passes.md says how to add one."},
	{"layers", cmd_layers, OPT_NO_MODEL, "netc layers",
	 "Lists every layer a .net file can call, as a call: its tensor inputs (x; a, b; ...), then its\n"
	 "arguments in positional order with their defaults (an argument without one is required;\n"
	 "a|b lists the words an argument takes, the first the default). docs/language.md says what\n"
	 "each computes."},
	{"targets", cmd_targets, OPT_NO_MODEL, "netc targets",
	 "Lists every target and product alias netc compiles for, with its wave size and what is known\n"
	 "about it."},
	{"check", cmd_check, OPT_BATCH | OPT_SEED | OPT_THREADS | OPT_PASSES | OPT_TUNING,
	 "netc check MODEL.net [--batch N] [--seed S] [--threads N] [--tuning FILE|none] " PASS_USAGE,
	 "Runs one training step compiled and in the float64 reference interpreter from the same inputs\n"
	 "and parameters, prints each node's largest relative error and fails if one exceeds its dtype's\n"
	 "tolerance. The batch defaults to 8 (the interpreter is slow); the inputs are fresh random\n"
	 "values unless --seed is given. The memory plan gives every value a block of its own, so each\n"
	 "can be read after the step." PASS_HELP},
#endif
#ifdef NETC_HAVE_ONNX
	{"import", cmd_import, OPT_OUTPUT | OPT_CHECKPOINT | OPT_QUIET | OPT_MAX_ERRORS,
	 "netc import MODEL.onnx -o MODEL.net [--checkpoint F]",
	 "Reads an ONNX model and writes it as a .net file (the graph's names, a train section of\n"
	 "defaults to fill in) and its initializers as a safetensors checkpoint F (default: MODEL.net's\n"
	 "name with .safetensors) that `netc train MODEL.net --init F` starts from. The .net text is\n"
	 "checked by the frontend before anything is written. `netc compile|train|check|info|eval\n"
	 "MODEL.onnx` import on the fly. docs/onnx.md lists the operators (opsets 13 to 21)."},
	{"export", cmd_export, OPT_OUTPUT | OPT_CHECKPOINT | OPT_QUIET | OPT_MAX_ERRORS,
	 "netc export MODEL.net|MODEL.onnx --checkpoint F -o OUT.onnx",
	 "Writes the model's evaluation graph (dropout off, batch norm on its running statistics) with\n"
	 "the weights of checkpoint F as an ONNX model of opset 17 (20 where gelu needs it) whose batch\n"
	 "dimension is symbolic, for onnxruntime, PyTorch or TVM. docs/onnx.md says how layers map."},
#endif
	{"tune", cmd_tune, TUNE_OPTS, TUNE_USAGE,
	 "Times candidate tile configurations of every GEMM kernel (convolutions, their gradients, dense\n"
	 "layers) and writes the fastest per key (architecture, precision class, shape) to the tuning\n"
	 "file FILE, which `netc compile --tuning FILE` uses. The model is compiled once per candidate\n"
	 "index (every GEMM takes its i-th candidate, or its heuristic's when it has fewer; at most\n"
	 "--max-candidates N indices) for the one --target, and each kernel of the step is timed on\n"
	 "--device as `bench --profile` does (median of --repeats, default 5). Where the compiler and\n"
	 "the GPU are on two machines: --emit-candidates DIR writes the candidate bundles and a\n"
	 "manifest of their kernels' keys and tiles, and `netc tune --candidates DIR --device cuda -o\n"
	 "FILE` (also in a runtime-only build) times them and writes FILE. For an AMD target with no GPU\n"
	 "at hand, --cost-model picks instead by a static model of each candidate kernel: its registers,\n"
	 "LDS and scratch as the code object reports them, the occupancy they allow, and an estimate of\n"
	 "its time (docs/tuning.md, \"The cost model\"). docs/tuning.md has the format."},
	{"devices", cmd_devices, OPT_NO_MODEL, "netc devices",
	 "Lists the devices this machine offers: every GPU the HIP and CUDA drivers find (name, gfx or\n"
	 "sm architecture, memory, wave size), why a backend finds none, and the CPU."},
	{"train", cmd_train,
	 OPT_DATA | OPT_STEPS | OPT_EPOCHS | OPT_BATCH | OPT_SEED | OPT_THREADS | OPT_DEVICE | OPT_LOG_EVERY | OPT_QUIET
		 | OPT_SAVE | OPT_RESUME | OPT_LOG | OPT_OVERFIT | OPT_ACCUMULATE | OPT_LAUNCH | RUN_TARGET_OPTS,
	 "netc train MODEL.net|FILE [--data DIR|synthetic] [--steps N | --epochs N] [--batch N] [--seed S]\n"
	 "                  [--accumulate K]\n"
	 "                  [--threads N] [--log-every N] [--log FILE.csv] [--device auto|cpu|hip|cuda[:N]]\n"
	 "                  [--devices LIST | --gpus N | --ranks N]\n"
	 "                  [--save F [--save-every N]] [--resume F | --init F] [--overfit-batch]"
	 RUN_TARGET_USAGE,
	 "Trains the model on the data set its train section names (data = mnist | cifar10 | synthetic).\n"
	 "MODEL may be an ONNX file (MODEL.onnx), imported as `netc import` does; the run starts from its\n"
	 "weights. --init F starts from the weights of the safetensors file F (`netc import` writes one;\n"
	 "every parameter by name, the step counter at 0, optimizer state fresh).\n"
	 "--steps N runs N optimizer steps, across as many epochs as they take; --epochs N runs N whole\n"
	 "epochs; the two exclude each other and override the file's `steps` and `epochs` (without\n"
	 "either, the file's steps, else its epochs). --threads is at most the machine's cores.\n"
	 "Without --data it uses the built-in generator (an MNIST-like or CIFAR-like set); --data DIR\n"
	 "reads the MNIST IDX files (plain or .gz) or the CIFAR-10 binary files in DIR; --data synthetic\n"
	 "makes ImageNet-shaped random batches of the model's image shape. On a terminal a progress bar\n"
	 "(epoch, step, loss, accuracy, examples/s, ETA) is redrawn in place; elsewhere a progress line\n"
	 "is printed every --log-every steps. --log FILE.csv writes one row per interval (step, epoch,\n"
	 "loss, accuracy, examples_per_s, elapsed_s, lr, eval_accuracy); `netc plot` draws it. The\n"
	 "held-out accuracy follows each epoch, and a summary the run. --device auto (the default) takes the\n"
	 "first GPU the bundle has code for, else the CPU. --save F writes a safetensors checkpoint\n"
	 "(parameters and optimizer state) every --save-every steps and at the end; --resume F continues\n"
	 "a run from one, step counter and schedule included (give the same --seed and --steps).\n"
	 "Ctrl-C (SIGINT) or SIGTERM ends the run after the current step, with the checkpoint (--save)\n"
	 "and the log written, and exits 130 or 143; a second Ctrl-C ends it at once.\n"
	 "--overfit-batch trains every step on the first batch (the same examples and augmentation) and\n"
	 "skips the held-out evaluation: a sanity check in which the loss must fall.\n"
	 "--accumulate K (or `accumulate = K` in the train section) averages the gradients of K batches\n"
	 "per optimizer step, as one batch K times larger; steps, epochs and the schedule count\n"
	 "optimizer steps, examples/s every batch.\n"
	 "--devices LIST (cuda:0,cuda:1 or cpu,cpu), --gpus N (the first N GPUs) or --ranks N (N CPU\n"
	 "ranks) train on one rank per device, each on its own batch of --batch examples, averaging the\n"
	 "gradients before every update: N ranks at batch B train like one process at batch N*B. CPU\n"
	 "ranks are started through Open MPI's mpirun, GPU ranks here (NCCL). Under mpirun or a launcher\n"
	 "that sets torchrun's variables (WORLD_SIZE, RANK, ...) every process is a rank by itself; only\n"
	 "rank 0 prints, logs, evaluates and saves (docs/distributed.md)."
	 RUN_TARGET_HELP},
	{"eval", cmd_eval, OPT_DATA | OPT_BATCH | OPT_SEED | OPT_THREADS | OPT_DEVICE | OPT_QUIET | OPT_CHECKPOINT | OPT_OUTPUT
		 | RUN_TARGET_OPTS,
	 "netc eval MODEL.net|MODEL.onnx|FILE --checkpoint F [--data DIR] [--input X.npy -o Y.npy]\n"
	 "                  [--device auto|cpu|hip|cuda[:N]]" RUN_TARGET_USAGE,
	 "Runs the evaluation program (dropout off) over the held-out set with the weights of the\n"
	 "checkpoint F (netc's own or a safetensors file exported from PyTorch with the same names and\n"
	 "shapes) and prints the loss and the accuracy; an ONNX model without --checkpoint runs with its\n"
	 "own weights. --input X.npy -o Y.npy instead runs it on the images in X.npy (a float32 array of\n"
	 "the image input's shape, the batch first: --batch N sets it) and writes the output as Y.npy." RUN_TARGET_HELP},
	{"plot", run_plot, OPT_OUTPUT | OPT_QUIET | OPT_LOG_Y, "netc plot LOG.csv -o FILE.svg [--log-y]",
	 "Draws the training log of `netc train --log LOG.csv` as SVG: the loss over the steps in one\n"
	 "panel, the training and held-out accuracy in another (none when the log has no accuracy, as\n"
	 "for a regression loss). --log-y draws the loss on a logarithmic axis."},
	{"bench", cmd_bench,
	 OPT_BATCH | OPT_STEPS | OPT_REPEATS | OPT_WARMUP | OPT_SEED | OPT_THREADS | OPT_DEVICE | RUN_TARGET_OPTS
		 | BENCH_COMPARE_OPTS | OPT_ACCUMULATE | OPT_LAUNCH | OPT_PROFILE | OPT_TRACE,
	 "netc bench MODEL.net|FILE [--batch N] [--accumulate K] [--steps N] [--repeats R] [--warmup W]\n"
	 "                  [--threads N] [--profile] [--trace FILE.json] [--peak-gflops X] [--peak-gbs Y]\n"
	 "                  [--device auto|cpu|hip|cuda[:N]] [--devices LIST | --gpus N | --ranks N]"
	 BENCH_COMPARE_USAGE RUN_TARGET_USAGE,
	 "Times training steps after W warm-up steps (default 5): R repeats (default 5) of N steps\n"
	 "(default 20); prints the median ms/step and examples/s. With --accumulate K a step is a whole\n"
	 "optimizer step: K batches. On ranks (--devices, --gpus, --ranks, or under mpirun, as netc\n"
	 "train) every rank first times its step alone, all at once, then the data-parallel step:\n"
	 "examples/s counts every rank's, and the scaling efficiency is the step alone over the step\n"
	 "with the all-reduce.\n"
	 "--profile then runs R more steps launching the kernels one at a time, each waited for, and\n"
	 "prints every kernel of the training step, slowest first: its fused group, the FLOPs and bytes\n"
	 "the compiler counts (a .net file; a bundle file does not record them), the median time,\n"
	 "GFLOP/s, GB/s, its share of the device's roofline and of the kernels' sum, then the kernels'\n"
	 "sum against the step. The roofline is a GPU's from the target table, the CPU's measured once and\n"
	 "kept in the cache directory; --peak-gflops and --peak-gbs replace them. --trace FILE.json\n"
	 "(implies --profile) writes that step as a Chrome trace (chrome://tracing, ui.perfetto.dev)."
	 BENCH_COMPARE_HELP RUN_TARGET_HELP},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: netc COMMAND [options]   (netc COMMAND --help for one command)\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		fprintf(out, "  %s\n", commands[i].usage);
}

#ifndef NETC_RUNTIME_ONLY
/* --layout: nchw, nhwc, or auto (the layout pass chooses from the graph, docs/passes.md) */
static int layout_of(const Args *a)
{
	if (!a->layout || strcmp(a->layout, "auto") == 0)
		return LAYOUT_AUTO;
	return strcmp(a->layout, "nhwc") == 0 ? LAYOUT_NHWC : LAYOUT_NCHW;
}

/* --conv-algo: auto (the pass's cost rule), direct or winograd */
static ConvAlgo conv_algo_of(const Args *a)
{
	if (!a->conv_algo || strcmp(a->conv_algo, "auto") == 0)
		return CONV_ALGO_AUTO;
	return strcmp(a->conv_algo, "winograd") == 0 ? CONV_ALGO_WINOGRAD : CONV_ALGO_DIRECT;
}

/* The pass options of this run for every .net file it loads, checked before anything is loaded.
 * check reads every value after a step, so its plan gives each value a block of its own. */
static bool pass_options_of(const Command *c, const Args *a, PassOptions *o)
{
	*o = (PassOptions){
		.passes = a->passes, .disable = a->disable_pass, .print_after = a->print_after,
		.time_passes = a->time_passes, .O0 = a->O0, .no_reuse = c->run == cmd_check,
		.layout = layout_of(a), .conv_algo = conv_algo_of(a), .listed_only = c->run == cmd_opt,
		.split_update = a->data_parallel,
	};
	const PassInfo *list[64];
	int n;
	char err[512];
	if ((c->options & OPT_PASSES) && !passes_resolve(o, list, 64, &n, err, sizeof err)) {
		fprintf(stderr, "netc %s: error: %s\n", c->name, err);
		return false;
	}
	return true;
}
#endif

/* Everything this run asks of the compiler, from its options. */
static bool compile_options_of(const Command *c, const Args *a, CompileOptions *o)
{
	*o = COMPILE_OPTIONS_DEFAULT;
	o->accumulate = a->accumulate;
	o->precision = a->precision;
	o->max_errors = (int)a->max_errors;
	o->targets = (ModelTargets){
		.targets = a->target, .wave = a->wave, .code_object_version = a->code_object_version,
		.no_matrix_units = a->no_matrix_units, .packed_half = a->packed_half,
		.emit = a->emit, .dump_dir = a->dump_dir, .quiet = a->quiet,
		.no_cache = a->no_cache, .jobs = (int)a->jobs, .time = a->time_passes,
		.trace = strcmp(c->name, "compile") == 0 ? a->trace : NULL, .tuning = a->tuning,
	};
#ifdef NETC_RUNTIME_ONLY
	(void)c;
	return true;
#else
	return pass_options_of(c, a, &o->passes);
#endif
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
		const Command *c = &commands[i];
		if (strcmp(argv[1], c->name) != 0)
			continue;
		Args a;
		/* every command that reads .net files runs the passes */
		uint64_t allowed = c->options | (c->options & OPT_PASSES ? OPT_MAX_ERRORS : 0);
		if (!args_parse(argc, argv, 2, allowed, c->name, &a))
			return 2;
		if (a.help) {
			printf("usage: %s\n\n%s\n", c->usage, c->help);
			return 0;
		}
		if (!a.seed_given && strcmp(c->name, "check") == 0)
			a.seed = (uint64_t)time(NULL);
		if (launch_wanted(&a))
			return launch_ranks(argc, argv, &a);
		CompileOptions o;
		if (!compile_options_of(c, &a, &o))
			return 2;
		return c->run(&a, &o);
	}
	fprintf(stderr, "netc: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
