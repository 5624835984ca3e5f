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

static int cmd_info(const Args *a)
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

static int cmd_compile(const Args *a)
{
	if (!a->output) {
		fprintf(stderr, "netc compile: -o FILE is required\n");
		return 2;
	}
	Bundle b;
	if (!model_load_bundle(a->model, a->batch, &b, NULL))
		return 1;
	char err[1024];
	int rc = 0;
	if (!bundle_write(&b, a->output, err, sizeof err)) {
		fprintf(stderr, "netc: error: %s\n", err);
		rc = 1;
	} else if (!a->quiet) {
		printf("wrote %s: %s, batch %lld, %d kernels per training step, arena %.1f MiB\n", a->output,
		       b.model, (long long)b.batch, b.code[0].ntrain, b.arena_bytes / 1048576.0);
	}
	bundle_free(&b);
	return rc;
}
#endif

static int cmd_train(const Args *a)
{
	Bundle b;
	if (!model_load_bundle(a->model, a->batch, &b, NULL))
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
	if (!model_load_bundle(a->model, a->batch, &b, NULL))
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

static const Command commands[] = {
#ifndef NETC_RUNTIME_ONLY
	{"print", cmd_print, OPT_TRAINING | OPT_BATCH, "netc print MODEL.net [--training] [--batch N]",
	 "Prints the forward graph, or with --training the training step (forward, backward, optimizer\n"
	 "update), one node per line."},
	{"info", cmd_info, OPT_BATCH, "netc info MODEL.net [--batch N]",
	 "Summarizes the model: parameters, forward FLOPs per example, training step FLOPs and kernels,\n"
	 "arena bytes."},
	{"compile", cmd_compile, OPT_OUTPUT | OPT_BATCH | OPT_QUIET, "netc compile MODEL.net -o FILE [--batch N]",
	 "Compiles the training and evaluation programs for the host CPU and writes the bundle FILE\n"
	 "(the plan, the code object and the training settings), which `netc train` and `netc bench` run."},
	{"check", cmd_check, OPT_BATCH | OPT_SEED | OPT_THREADS,
	 "netc check MODEL.net [--batch N] [--seed S] [--threads N]",
	 "Runs one training step compiled and in the float64 reference interpreter from the same inputs\n"
	 "and parameters, prints each node's largest relative error and fails if one exceeds its dtype's\n"
	 "tolerance. The batch defaults to 8 (the interpreter is slow); the inputs are fresh random\n"
	 "values unless --seed is given."},
#endif
	{"train", cmd_train,
	 OPT_DATA | OPT_STEPS | OPT_EPOCHS | OPT_BATCH | OPT_SEED | OPT_THREADS | OPT_DEVICE | OPT_LOG_EVERY | OPT_QUIET,
	 "netc train MODEL.net|FILE [--data DIR] [--steps N | --epochs N] [--batch N] [--seed S]\n"
	 "                  [--threads N] [--log-every N] [--device auto|cpu]",
	 "Trains the model. Without --data it uses the built-in MNIST-like generator; with --data DIR it\n"
	 "reads the MNIST IDX files (plain or .gz) in DIR. Prints a progress line every --log-every steps,\n"
	 "the held-out accuracy after each epoch, and a summary."},
	{"bench", cmd_bench, OPT_BATCH | OPT_STEPS | OPT_REPEATS | OPT_WARMUP | OPT_SEED | OPT_THREADS | OPT_DEVICE,
	 "netc bench MODEL.net|FILE [--batch N] [--steps N] [--repeats R] [--warmup W] [--threads N]",
	 "Times training steps after W warm-up steps (default 5): R repeats (default 5) of N steps\n"
	 "(default 20); prints the median ms/step and examples/s."},
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
