/* args.h: command-line options shared by the netc commands. */
#ifndef NETC_TOOLS_ARGS_H
#define NETC_TOOLS_ARGS_H

#include <stdbool.h>
#include <stdint.h>

enum {
	OPT_TRAINING = 1 << 0,
	OPT_OUTPUT = 1 << 1,
	OPT_DATA = 1 << 2,
	OPT_STEPS = 1 << 3,
	OPT_EPOCHS = 1 << 4,
	OPT_BATCH = 1 << 5,
	OPT_SEED = 1 << 6,
	OPT_THREADS = 1 << 7,
	OPT_DEVICE = 1 << 8,
	OPT_REPEATS = 1 << 9,
	OPT_WARMUP = 1 << 10,
	OPT_LOG_EVERY = 1 << 11,
	OPT_QUIET = 1 << 12,
};

typedef struct {
	const char *model;
	const char *output;
	const char *data;
	const char *device;
	bool training, quiet, help, seed_given;
	int64_t steps, epochs, batch, repeats, warmup, log_every;
	int64_t threads;
	uint64_t seed;
} Args;

/* Parses argv[first..argc) allowing the options in `allowed`. On a usage error prints it and
 * returns false. */
bool args_parse(int argc, char **argv, int first, unsigned allowed, const char *command, Args *a);

#endif
