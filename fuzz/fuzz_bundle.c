/* fuzz_bundle.c: bytes through the bundle reader, and the lookups the runtime makes on a bundle it
 * accepted. A crash, a sanitizer report or a leak is a finding; a clean error message is not. */
#include <stdlib.h>

#include "fuzz/fuzz_input.h"
#include "runtime/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Bundle b;
	char err[1024];
	if (!bundle_read(&b, fuzz_as_file(data, size), err, sizeof err))
		return 0;
	/* what rt_open and the training loop look up first */
	bundle_code_for(&b, "host");
	for (int i = 0; i < b.nbuf; i++)
		if (bundle_find_buffer(&b, b.buf[i].name) < 0)
			abort();
	bundle_free(&b);
	return 0;
}
