/* fuzz_checkpoint.c: bytes through the checkpoint (safetensors) reader into a CPU session of
 * fuzz/ckpt.bundle (compiled from fuzz/ckpt.net with --layout nhwc, so loading transposes a
 * weight). A crash, a sanitizer report or a leak is a finding; a clean error message is not. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/fuzz_input.h"
#include "runtime/rt.h"

static Bundle bundle;
static Session *session;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[1024];
	if (!bundle_read(&bundle, NETC_FUZZ_CKPT_BUNDLE, err, sizeof err) ||
	    !(session = rt_open(&bundle, "cpu", 1, err, sizeof err))) {
		fprintf(stderr, "fuzz_checkpoint: %s\n", err);
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RtCheckpointMeta meta;
	char err[1024];
	rt_checkpoint_load(session, fuzz_as_file(data, size), &meta, err, sizeof err);
	return 0;
}
