/* netc.c: the command line. Exit status 0 on success, 1 on a user error, 2 on a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/model.h"

#ifndef NETC_RUNTIME_ONLY
#include "codegen/amdgpu_info.h"
#include "codegen/cg.h"
#include "ir/ir.h"
#endif

typedef struct {
	const char *name;
	int (*run)(const Args *a);
	unsigned options;
	const char *usage;
	const char *help;
} Command;

#ifndef NETC_RUNTIME_ONLY
static int cmd_print(const Args *a)
{
	Graph *g = model_load_graph(a->model, a->batch, a->training);
	if (!g)
		return 1;
	ir_print(stdout, g, a->training ? PROG_TRAIN : 0);
	ir_graph_free(g);
	return 0;
}

static int info_model(const Args *a)
{
	Graph *g = model_load_graph(a->model, a->batch, true);
	if (!g)
		return 1;
	int kernels = 0, nodes = 0;
	for (int i = 0; i < g->nnodes; i++) {
		nodes += (g->node[i].programs & PROG_TRAIN) != 0;
		kernels += (g->node[i].programs & PROG_TRAIN) && !ir_is_leaf(g->node[i].op);
	}
	double fwd = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (n->id <= g->loss && (n->programs & PROG_TRAIN) && n->grad_of < 0 && ir_ops[n->op].flops)
			fwd += ir_ops[n->op].flops(g, n);
	}
	printf("model: %s\n", g->name);
	printf("batch: %lld\n", (long long)g->batch);
	printf("parameters: %lld\n", (long long)ir_param_count(g));
	printf("forward FLOPs per example: %.4g\n", fwd / (double)g->batch);
	printf("training step FLOPs: %.4g\n", ir_flops(g, PROG_TRAIN));
	printf("training step kernels: %d\n", kernels);
	printf("arena bytes: %lld\n", (long long)g->arena_bytes);
	ir_graph_free(g);
	return 0;
}

/* ---- netc info FILE: a bundle's plan and targets ---- */

static const char *code_kind_name(int kind)
{
	return kind == CODE_HSACO ? "AMD code object" : kind == CODE_PTX ? "PTX" : "host shared object";
}

/* The work-group size the bundle launches kernel name with (0: not launched). */
static int launch_block(const BundleCode *c, const char *name)
{
	for (int i = 0; i < c->ntrain; i++)
		if (strcmp(c->train_kernels[i].name, name) == 0)
			return c->train_kernels[i].block;
	for (int i = 0; i < c->neval; i++)
		if (strcmp(c->eval_kernels[i].name, name) == 0)
			return c->eval_kernels[i].block;
	return 0;
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
	for (int i = 0; i < code.nkernels; i++)
		print_amd_kernel(known ? &chip : NULL, &code.kernels[i], launch_block(c, code.kernels[i].name));
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

static int info_bundle(const Args *a)
{
	Bundle b;
	if (!model_load_bundle(a->model, a->batch, &b, NULL))
		return 1;
	printf("model: %s\n", b.model);
	printf("batch: %lld\n", (long long)b.batch);
	printf("parameters: %lld\n", (long long)param_count(&b));
	printf("training step FLOPs: %.4g\n", b.flops_per_step);
	printf("arena bytes: %lld\n", (long long)b.arena_bytes);
	printf("targets: %d\n", b.ncode);
	int rc = 0;
	for (int i = 0; i < b.ncode; i++) {
		const BundleCode *c = &b.code[i];
		printf("target %s: %s, arch %s", c->target, code_kind_name(c->kind), c->arch);
		if (c->wave)
			printf(", wave%d", c->wave);
		printf(", %llu bytes, %d training kernels, %d evaluation kernels\n", (unsigned long long)c->size,
		       c->ntrain, c->neval);
		if (c->kind == CODE_HSACO && !print_amd_code(c))
			rc = 1;
	}
	bundle_free(&b);
	return rc;
}

static int cmd_info(const Args *a)
{
	return model_is_bundle(a->model) ? info_bundle(a) : info_model(a);
}

static int cmd_targets(const Args *a)
{
	(void)a;
	cg_targets_print(stdout);
	return 0;
}

static ModelTargets targets_of(const Args *a)
{
	ModelTargets t = {
		.targets = a->target, .wave = a->wave, .code_object_version = a->code_object_version,
		.emit = a->emit, .dump_dir = a->dump_dir, .quiet = a->quiet,
	};
	return t;
}

static int cmd_compile(const Args *a)
{
	if (!a->output) {
		fprintf(stderr, "netc compile: -o FILE is required\n");
		return 2;
	}
	Bundle b;
	ModelTargets t = targets_of(a);
	if (!model_compile(a->model, a->batch, &t, &b, NULL))
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
		printf("\n");
	}
	bundle_free(&b);
	return rc;
}
#endif

static int cmd_devices(const Args *a)
{
	(void)a;
	rt_devices_print(stdout);
	return 0;
}

/* train and bench: a bundle file, or a .net file compiled now for --target (the host by default) */
static bool load_for_run(const Args *a, Bundle *b)
{
#ifdef NETC_RUNTIME_ONLY
	return model_load_bundle(a->model, a->batch, b, NULL);
#else
	ModelTargets t = targets_of(a);
	return model_compile(a->model, a->batch, &t, b, NULL);
#endif
}

static int cmd_train(const Args *a)
{
	Bundle b;
	if (!load_for_run(a, &b))
		return 1;
	TrainOptions o = {
		.data_dir = a->data, .device = a->device, .threads = (int)a->threads, .steps = a->steps,
		.epochs = a->epochs, .seed = a->seed, .log_every = a->log_every, .quiet = a->quiet,
	};
	int rc = rt_train(&b, &o);
	bundle_free(&b);
	return rc;
}

static int cmd_bench(const Args *a)
{
	Bundle b;
	if (!load_for_run(a, &b))
		return 1;
	BenchOptions o = {
		.device = a->device, .threads = (int)a->threads, .warmup = a->warmup ? a->warmup : 5,
		.steps = a->steps ? a->steps : 20, .repeats = a->repeats ? (int)a->repeats : 5, .seed = a->seed,
	};
	BenchResult r;
	int rc = rt_bench(&b, &o, &r);
	if (rc == 0) {
		printf("model %s, batch %lld, %d kernels per step, %.3g GFLOP per step\n", b.model,
		       (long long)b.batch, b.code[0].ntrain, b.flops_per_step / 1e9);
		printf("ms/step: %.3f (median of %d repeats of %lld steps; min %.3f, max %.3f)\n", r.ms_per_step,
		       o.repeats, (long long)o.steps, r.ms_min, r.ms_max);
		printf("examples/s: %.0f\n", r.examples_per_s);
		printf("GFLOP/s: %.1f\n", b.flops_per_step / (r.ms_per_step * 1e6));
	}
	bundle_free(&b);
	return rc;
}

/* train and bench compile a .net file on the fly: for the host, or for --target */
#ifdef NETC_RUNTIME_ONLY
#define RUN_TARGET_OPTS 0
#define RUN_TARGET_USAGE ""
#define RUN_TARGET_HELP ""
#else
#define RUN_TARGET_OPTS (OPT_TARGET | OPT_WAVE | OPT_COV)
#define RUN_TARGET_USAGE " [--target LIST]"
#define RUN_TARGET_HELP "\nA .net file is compiled first, for the host or for --target LIST (as netc compile)."
#endif

static const Command commands[] = {
#ifndef NETC_RUNTIME_ONLY
	{"print", cmd_print, OPT_TRAINING | OPT_BATCH, "netc print MODEL.net [--training] [--batch N]",
	 "Prints the forward graph, or with --training the training step (forward, backward, optimizer\n"
	 "update), one node per line."},
	{"info", cmd_info, OPT_BATCH, "netc info MODEL.net|FILE [--batch N]",
	 "Summarizes a model: parameters, forward FLOPs per example, training step FLOPs and kernels,\n"
	 "arena bytes. On a compiled bundle FILE: the model, batch and arena, the targets inside, and for\n"
	 "each AMD target every kernel's VGPRs, AGPRs, SGPRs, LDS bytes, scratch bytes per work-item and\n"
	 "spills, read from the code object's metadata, with the occupancy they allow (waves per SIMD)\n"
	 "and the resource that limits it."},
	{"compile", cmd_compile, OPT_OUTPUT | OPT_BATCH | OPT_QUIET | OPT_TARGET | OPT_WAVE | OPT_COV | OPT_EMIT,
	 "netc compile MODEL.net -o FILE [--batch N] [--target LIST] [--wave32|--wave64]\n"
	 "                    [--code-object-version 4|5|6] [--emit KINDS --dump-dir DIR]",
	 "Compiles the training and evaluation programs and writes the bundle FILE: the plan once, one\n"
	 "code object per target, and the training settings; `netc train` and `netc bench` run it.\n"
	 "--target LIST is comma-separated and may mix AMD architectures and product names (gfx906,\n"
	 "gfx90a:xnack-, rx580, mi300x...), NVIDIA architectures (sm_90) and host, the default; `netc\n"
	 "targets` lists them. --wave32/--wave64 pick the wave size of AMD chips that run both (gfx10 and\n"
	 "newer; default 32 there, 64 before). --code-object-version sets the AMD code object version\n"
	 "(default 5). --emit KINDS (comma-separated of hsaco, ptx, ll, asm, so) with --dump-dir DIR also\n"
	 "writes each code object, its LLVM IR and its assembly as DIR/MODEL.TARGET.EXT (':' in a target\n"
	 "becomes '_'); --dump-dir alone writes every kind the targets produce."},
	{"targets", cmd_targets, OPT_NO_MODEL, "netc targets",
	 "Lists every target and product alias netc compiles for, with its wave size and what is known\n"
	 "about it."},
	{"check", cmd_check, OPT_BATCH | OPT_SEED | OPT_THREADS,
	 "netc check MODEL.net [--batch N] [--seed S] [--threads N]",
	 "Runs one training step compiled and in the float64 reference interpreter from the same inputs\n"
	 "and parameters, prints each node's largest relative error and fails if one exceeds its dtype's\n"
	 "tolerance. The batch defaults to 8 (the interpreter is slow); the inputs are fresh random\n"
	 "values unless --seed is given."},
#endif
	{"devices", cmd_devices, OPT_NO_MODEL, "netc devices",
	 "Lists the devices this machine offers: every GPU the HIP and CUDA drivers find (name, gfx or\n"
	 "sm architecture, memory, wave size), why a backend finds none, and the CPU."},
	{"train", cmd_train,
	 OPT_DATA | OPT_STEPS | OPT_EPOCHS | OPT_BATCH | OPT_SEED | OPT_THREADS | OPT_DEVICE | OPT_LOG_EVERY | OPT_QUIET
		 | RUN_TARGET_OPTS,
	 "netc train MODEL.net|FILE [--data DIR] [--steps N | --epochs N] [--batch N] [--seed S]\n"
	 "                  [--threads N] [--log-every N] [--device auto|cpu|hip|cuda[:N]]"
	 RUN_TARGET_USAGE,
	 "Trains the model. Without --data it uses the built-in MNIST-like generator; with --data DIR it\n"
	 "reads the MNIST IDX files (plain or .gz) in DIR. Prints a progress line every --log-every steps,\n"
	 "the held-out accuracy after each epoch, and a summary. --device auto (the default) takes the\n"
	 "first GPU the bundle has code for, else the CPU." RUN_TARGET_HELP},
	{"bench", cmd_bench,
	 OPT_BATCH | OPT_STEPS | OPT_REPEATS | OPT_WARMUP | OPT_SEED | OPT_THREADS | OPT_DEVICE | RUN_TARGET_OPTS,
	 "netc bench MODEL.net|FILE [--batch N] [--steps N] [--repeats R] [--warmup W] [--threads N]\n"
	 "                  [--device auto|cpu|hip|cuda[:N]]" RUN_TARGET_USAGE,
	 "Times training steps after W warm-up steps (default 5): R repeats (default 5) of N steps\n"
	 "(default 20); prints the median ms/step and examples/s." RUN_TARGET_HELP},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: netc COMMAND [options]   (netc COMMAND --help for one command)\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		fprintf(out, "  %s\n", commands[i].usage);
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
		if (!args_parse(argc, argv, 2, c->options, c->name, &a))
			return 2;
		if (a.help) {
			printf("usage: %s\n\n%s\n", c->usage, c->help);
			return 0;
		}
		if (!a.seed_given && strcmp(c->name, "check") == 0)
			a.seed = (uint64_t)time(NULL);
		return c->run(&a);
	}
	fprintf(stderr, "netc: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
