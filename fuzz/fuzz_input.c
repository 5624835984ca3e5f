/* fuzz_input.c: the fuzzer's bytes as files (fuzz_input.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

static char dir[256];
static char made[8][300]; /* the folders and files made below dir, removed at exit */
static int nmade;

static void remove_dir(void)
{
	for (int i = nmade - 1; i >= 0; i--)
		remove(made[i]);
	rmdir(dir);
}

const char *fuzz_dir(void)
{
	if (dir[0])
		return dir;
	struct stat st;
	const char *tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/netc-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		die("mkdtemp");
	atexit(remove_dir);
	return dir;
}

/* path (below dir) remembered for removal, once */
static void remember(const char *path)
{
	for (int i = 0; i < nmade; i++)
		if (!strcmp(made[i], path))
			return;
	if (nmade == 8)
		abort();
	snprintf(made[nmade++], sizeof made[0], "%s", path);
}

void fuzz_write(const char *name, const uint8_t *data, size_t size)
{
	char path[300];
	snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
	for (char *slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			die("mkdir");
		remember(path);
		*slash = '/';
	}
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		die(path);
	remember(path);
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
