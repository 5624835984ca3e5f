/* fuzz_input.c: the fuzzer's bytes as files (fuzz_input.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz/fuzz_input.h"

static void die(const char *what)
{
	perror(what);
	abort();
}

/* An in-memory file keeps the disk out of the loop: a million runs write no block. */
const char *fuzz_as_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("netc-fuzz-input", 0);
		if (fd < 0)
			die("memfd_create");
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0)
		die("ftruncate");
	for (size_t at = 0; at < size;) {
		ssize_t n = pwrite(fd, data + at, size - at, (off_t)at);
		if (n <= 0)
			die("pwrite");
		at += (size_t)n;
	}
	return path;
}

void fuzz_split(const uint8_t *data, size_t size, IdxBlob *f, int n, const char *const *names)
{
	const size_t sep = strlen(FUZZ_FILE_SEPARATOR);
	const uint8_t *p = data, *end = data + size;
	for (int i = 0; i < n; i++) {
		const uint8_t *cut = i + 1 < n ? memmem(p, (size_t)(end - p), FUZZ_FILE_SEPARATOR, sep) : NULL;
		size_t len = (size_t)((cut ? cut : end) - p);
		snprintf(f[i].name, sizeof f[i].name, "%s", names[i]);
		f[i].size = len;
		/* one byte more, so an empty file is a valid pointer as a file read would give */
		f[i].data = malloc(len + 1);
		if (!f[i].data)
			abort();
		memcpy(f[i].data, p, len);
		p = cut ? cut + sep : end;
	}
}
