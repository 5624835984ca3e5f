/* args.c: "--name value", "--name=value" and "-o value"; numbers are checked. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/train_config.h"
#include "runtime/rt.h"
#include "tools/args.h"

typedef struct {
	const char *name;
	uint64_t flag;
	bool takes_value;
} Option;

static const Option options[] = {
	{"--training", OPT_TRAINING, false},
	{"-o", OPT_OUTPUT, true},
	{"--output", OPT_OUTPUT, true},
	{"--data", OPT_DATA, true},
	{"--steps", OPT_STEPS, true},
	{"--epochs", OPT_EPOCHS, true},
	{"--batch", OPT_BATCH, true},
	{"--seed", OPT_SEED, true},
	{"--threads", OPT_THREADS, true},
	{"--device", OPT_DEVICE, true},
	{"--repeats", OPT_REPEATS, true},
	{"--warmup", OPT_WARMUP, true},
	{"--log-every", OPT_LOG_EVERY, true},
	{"--quiet", OPT_QUIET, false},
	{"--target", OPT_TARGET, true},
	{"--no-cache", OPT_TARGET, false},
	{"--jobs", OPT_TARGET, true},
	{"--no-matrix-units", OPT_TARGET, false},
	{"--packed-half", OPT_TARGET, false},
	{"--wave32", OPT_WAVE, false},
	{"--wave64", OPT_WAVE, false},
	{"--code-object-version", OPT_COV, true},
	{"--emit", OPT_EMIT, true},
	{"--dump-dir", OPT_EMIT, true},
	{"--passes", OPT_PASSES, true},
	{"--disable-pass", OPT_PASSES, true},
	{"--print-after", OPT_PASSES, true},
	{"--time-passes", OPT_PASSES, false},
	{"-O0", OPT_PASSES, false},
	{"-O1", OPT_PASSES, false},
	{"--layout", OPT_PASSES, true},
	{"--precision", OPT_PASSES, true},
	{"--conv-algo", OPT_PASSES, true},
	{"--data-parallel", OPT_PASSES, false},
	{"--plan", OPT_PLAN, false},
	{"--compare", OPT_COMPARE, true},
	{"--save", OPT_SAVE, true},
	{"--save-every", OPT_SAVE, true},
	{"--resume", OPT_RESUME, true},
	{"--init", OPT_RESUME, true},
	{"--checkpoint", OPT_CHECKPOINT, true},
	{"--input", OPT_CHECKPOINT, true},
	{"--log", OPT_LOG, true},
	{"--overfit-batch", OPT_OVERFIT, false},
	{"--accumulate", OPT_ACCUMULATE, true},
	{"--log-y", OPT_LOG_Y, false},
	{"--collapse", OPT_COLLAPSE, true},
	{"--max-errors", OPT_MAX_ERRORS, true},
	{"--devices", OPT_LAUNCH, true},
	{"--gpus", OPT_LAUNCH, true},
	{"--ranks", OPT_LAUNCH, true},
	{"--profile", OPT_PROFILE, false},
	{"--peak-gflops", OPT_PROFILE, true},
	{"--peak-gbs", OPT_PROFILE, true},
	{"--report", OPT_COMPARE, true},
	{"--trace", OPT_TRACE, true},
	{"--tuning", OPT_TUNING, true},
	{"--emit-candidates", OPT_TUNE, true},
	{"--candidates", OPT_TUNE, true},
	{"--max-candidates", OPT_TUNE, true},
	{"--cost-model", OPT_TUNE, false},
};

static bool parse_count(const char *command, const char *opt, const char *s, int64_t min, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > (1ll << 40)) {
		fprintf(stderr, "netc %s: %s needs an integer from %lld up, got '%s'\n", command, opt, (long long)min, s);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_range(const char *command, const char *opt, const char *s, int64_t min, int64_t max,
			int64_t *out)
{
	if (!parse_count(command, opt, s, min, out))
		return false;
	if (*out > max) {
		fprintf(stderr, "netc %s: %s is at most %lld, got '%s'\n", command, opt, (long long)max, s);
		return false;
	}
	return true;
}

/* --peak-gflops, --peak-gbs: a positive, finite rate */
static bool parse_rate(const char *command, const char *opt, const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e12) {
		fprintf(stderr, "netc %s: %s needs a positive number, got '%s'\n", command, opt, s);
		return false;
	}
	*out = v;
	return true;
}

/* --threads: 1 up to the machine's cores; more would only share them (NETC_THREADS still may). */
static bool set_threads(const char *command, const char *v, Args *a)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (!parse_count(command, "--threads", v, 1, &a->threads))
		return false;
	if (cores > 0 && a->threads > cores) {
		fprintf(stderr, "netc %s: --threads is at most %ld (the cores of this machine), got '%s'\n", command, cores,
			v);
		return false;
	}
	return true;
}

/* --device: a name netc knows, checked before anything is compiled or loaded */
static bool set_device(const char *command, const char *v, Args *a)
{
	char err[256];
	if (!rt_device_spec_valid(v, err, sizeof err)) {
		fprintf(stderr, "netc %s: --device: %s\n", command, err);
		return false;
	}
	a->device = v;
	return true;
}

static bool set_wave(const char *command, const char *opt, Args *a)
{
	int wave = strcmp(opt, "--wave32") == 0 ? 32 : 64;
	if (a->wave && a->wave != wave) {
		fprintf(stderr, "netc %s: --wave32 and --wave64 exclude each other\n", command);
		return false;
	}
	a->wave = wave;
	return true;
}

static bool set_cov(const char *command, const char *v, Args *a)
{
	if (strcmp(v, "4") != 0 && strcmp(v, "5") != 0 && strcmp(v, "6") != 0) {
		fprintf(stderr, "netc %s: --code-object-version is 4, 5 or 6, not '%s'\n", command, v);
		return false;
	}
	a->code_object_version = v[0] - '0';
	return true;
}

/* --precision: what the forward and backward passes compute in (ir/train_config.h) */
static bool set_precision(const char *command, const char *v, Args *a)
{
	for (int p = 0; p < PREC_COUNT; p++)
		if (strcmp(v, precision_name((PrecisionKind)p)) == 0) {
			a->precision = p;
			return true;
		}
	fprintf(stderr, "netc %s: --precision is one of " PRECISION_LIST ", not '%s'\n", command, v);
	return false;
}

static bool set_pass_option(const char *command, const char *name, const char *v, Args *a)
{
	if (strcmp(name, "--precision") == 0)
		return set_precision(command, v, a);
	if (strcmp(name, "--layout") == 0) {
		if (strcmp(v, "nchw") != 0 && strcmp(v, "nhwc") != 0 && strcmp(v, "auto") != 0) {
			fprintf(stderr, "netc %s: --layout is nchw, nhwc or auto, not '%s'\n", command, v);
			return false;
		}
		a->layout = v;
	} else if (strcmp(name, "--conv-algo") == 0) {
		if (strcmp(v, "auto") != 0 && strcmp(v, "direct") != 0 && strcmp(v, "winograd") != 0) {
			fprintf(stderr, "netc %s: --conv-algo is auto, direct or winograd, not '%s'\n", command, v);
			return false;
		}
		a->conv_algo = v;
	} else if (strcmp(name, "--passes") == 0)
		a->passes = v;
	else if (strcmp(name, "--disable-pass") == 0)
		a->disable_pass = v;
	else if (strcmp(name, "--print-after") == 0)
		a->print_after = v;
	else if (strcmp(name, "--time-passes") == 0)
		a->time_passes = true;
	else if (strcmp(name, "--data-parallel") == 0)
		a->data_parallel = true;
	else
		a->O0 = strcmp(name, "-O0") == 0;
	return true;
}

static bool set_option(const Option *o, const char *command, const char *v, Args *a)
{
	int64_t n;
	switch (o->flag) {
	case OPT_TARGET:
		if (strcmp(o->name, "--no-cache") == 0)
			a->no_cache = true;
		else if (strcmp(o->name, "--jobs") == 0)
			return parse_range(command, o->name, v, 1, 1024, &a->jobs);
		else if (strcmp(o->name, "--no-matrix-units") == 0)
			a->no_matrix_units = true;
		else if (strcmp(o->name, "--packed-half") == 0)
			a->packed_half = true;
		else
			a->target = v;
		return true;
	case OPT_WAVE: return set_wave(command, o->name, a);
	case OPT_COV: return set_cov(command, v, a);
	case OPT_EMIT:
		if (strcmp(o->name, "--emit") == 0)
			a->emit = v;
		else
			a->dump_dir = v;
		return true;
	case OPT_PASSES: return set_pass_option(command, o->name, v, a);
	case OPT_PLAN: a->plan = true; return true;
	case OPT_COMPARE:
		if (strcmp(o->name, "--report") == 0)
			a->report = v;
		else
			a->compare = v;
		return true;
	case OPT_SAVE:
		if (strcmp(o->name, "--save") == 0) {
			a->save = v;
			return true;
		}
		return parse_count(command, o->name, v, 1, &a->save_every);
	case OPT_RESUME:
		if (strcmp(o->name, "--init") == 0)
			a->init = v;
		else
			a->resume = v;
		return true;
	case OPT_CHECKPOINT:
		if (strcmp(o->name, "--input") == 0)
			a->input = v;
		else
			a->checkpoint = v;
		return true;
	case OPT_LOG: a->log = v; return true;
	case OPT_OVERFIT: a->overfit_batch = true; return true;
	case OPT_ACCUMULATE: return parse_range(command, o->name, v, 1, TRAIN_MAX_ACCUMULATE, &a->accumulate);
	case OPT_TRAINING: a->training = true; return true;
	case OPT_LOG_Y: a->log_y = true; return true;
	case OPT_COLLAPSE: a->collapse = v; return true;
	case OPT_MAX_ERRORS: return parse_range(command, o->name, v, 0, INT32_MAX, &a->max_errors);
	case OPT_QUIET: a->quiet = true; return true;
	case OPT_LAUNCH:
		if (strcmp(o->name, "--devices") == 0) {
			a->devices = v;
			return true;
		}
		return parse_range(command, o->name, v, 1, 64, strcmp(o->name, "--gpus") == 0 ? &a->gpus : &a->ranks);
	case OPT_PROFILE:
		if (strcmp(o->name, "--profile") == 0) {
			a->profile = true;
			return true;
		}
		return parse_rate(command, o->name, v, strcmp(o->name, "--peak-gbs") == 0 ? &a->peak_gbs : &a->peak_gflops);
	case OPT_TRACE: a->trace = v; return true;
	case OPT_TUNING: a->tuning = v; return true;
	case OPT_TUNE:
		if (strcmp(o->name, "--max-candidates") == 0)
			return parse_range(command, o->name, v, 1, 4096, &a->max_candidates);
		if (strcmp(o->name, "--cost-model") == 0)
			a->cost_model = true;
		else if (strcmp(o->name, "--candidates") == 0)
			a->candidates = v;
		else
			a->emit_candidates = v;
		return true;
	case OPT_OUTPUT: a->output = v; return true;
	case OPT_DATA: a->data = v; return true;
	case OPT_DEVICE: return set_device(command, v, a);
	case OPT_STEPS: return parse_count(command, o->name, v, 1, &a->steps);
	case OPT_EPOCHS: return parse_range(command, o->name, v, 1, TRAIN_MAX_EPOCHS, &a->epochs);
	case OPT_BATCH: return parse_range(command, o->name, v, 1, TRAIN_MAX_BATCH, &a->batch);
	case OPT_REPEATS: return parse_count(command, o->name, v, 1, &a->repeats);
	case OPT_WARMUP: return parse_count(command, o->name, v, 0, &a->warmup);
	case OPT_LOG_EVERY: return parse_count(command, o->name, v, 1, &a->log_every);
	case OPT_THREADS: return set_threads(command, v, a);
	case OPT_SEED:
		if (!parse_count(command, o->name, v, 0, &n))
			return false;
		a->seed = (uint64_t)n;
		a->seed_given = true;
		return true;
	}
	return false;
}

bool args_parse(int argc, char **argv, int first, uint64_t allowed, const char *command, Args *a)
{
	memset(a, 0, sizeof *a);
	a->precision = -1;
	a->max_errors = -1;
	a->device = "auto";
	a->seed = 1;
	for (int i = first; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			a->help = true;
			return true;
		}
		if (arg[0] != '-' || arg[1] == 0) {
			if (allowed & OPT_NO_MODEL) {
				fprintf(stderr, "netc %s: takes no model (got '%s')\n", command, arg);
				return false;
			}
			if (a->model && (allowed & OPT_TUNE) && a->nmore_models < ARGS_MAX_MODELS - 1) {
				a->more_models[a->nmore_models++] = arg;
				continue;
			}
			if (a->model) {
				fprintf(stderr, "netc %s: one model at a time (got '%s' and '%s')\n", command, a->model, arg);
				return false;
			}
			a->model = arg;
			continue;
		}
		const char *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
		const Option *o = NULL;
		for (size_t k = 0; k < sizeof options / sizeof *options; k++)
			if (strlen(options[k].name) == len && strncmp(options[k].name, arg, len) == 0)
				o = &options[k];
		if (!o || !(o->flag & allowed)) {
			fprintf(stderr, "netc %s: unknown option '%.*s' (see netc %s --help)\n", command, (int)len, arg, command);
			return false;
		}
		const char *value = NULL;
		if (o->takes_value) {
			if (eq)
				value = eq + 1;
			else if (i + 1 < argc)
				value = argv[++i];
			else {
				fprintf(stderr, "netc %s: %s needs a value\n", command, o->name);
				return false;
			}
		} else if (eq) {
			fprintf(stderr, "netc %s: %s takes no value\n", command, o->name);
			return false;
		}
		if (!set_option(o, command, value, a))
			return false;
	}
	if (a->steps && a->epochs && (allowed & OPT_EPOCHS)) {
		fprintf(stderr, "netc %s: --steps and --epochs exclude each other (--steps N runs N steps, across "
			"epochs; --epochs N runs N whole epochs)\n", command);
		return false;
	}
	/* netc tune --candidates DIR times bundles already made */
	if (!a->model && !(allowed & OPT_NO_MODEL) && !a->candidates) {
		fprintf(stderr, "netc %s: no model given (see netc %s --help)\n", command, command);
		return false;
	}
	return true;
}
