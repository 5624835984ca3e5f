/* link.c: object file to shared object (host) or code object (AMDGPU) by running ld.lld (no
 * shell: posix_spawn). */
#include "codegen/link.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#ifndef NETC_LLVM_BINDIR
#define NETC_LLVM_BINDIR "/usr/lib/llvm-19/bin"
#endif

static bool is_executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Looks name up in PATH; writes the full path to buf. */
static bool search_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	while (*path) {
		size_t n = strcspn(path, ":");
		if (n > 0 && (size_t)snprintf(buf, len, "%.*s/%s", (int)n, path, name) < len && is_executable(buf))
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

static bool find_lld(char *buf, size_t len)
{
	const char *env = getenv("NETC_LD_LLD");
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return is_executable(buf) || search_path(env, buf, len);
	}
	if ((size_t)snprintf(buf, len, "%s/ld.lld", NETC_LLVM_BINDIR) < len && is_executable(buf))
		return true;
	return search_path("ld.lld-19", buf, len) || search_path("ld.lld", buf, len);
}

static bool write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	bool ok = fwrite(data, 1, size, f) == size;
	return fclose(f) == 0 && ok;
}

static bool read_file(const char *path, uint8_t **out, size_t *out_size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	bool ok = false;
	long size = -1;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		*out = malloc((size_t)size);
		ok = *out && fread(*out, 1, (size_t)size, f) == (size_t)size;
		if (!ok) {
			free(*out);
			*out = NULL;
		}
	}
	fclose(f);
	*out_size = ok ? (size_t)size : 0;
	return ok;
}

/* Writes objs[0..n) as dir/u0.o, u1.o, ..., their names in paths (malloc'd, NULL where none was
 * made); false with err set when one could not be written. */
static bool write_objects(const char *dir, const CgBlob *objs, int n, char **paths, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++) {
		char p[4200];
		snprintf(p, sizeof p, "%s/u%d.o", dir, i);
		if (!(paths[i] = strdup(p))) {
			snprintf(err, errlen, "out of memory");
			return false;
		}
		if (!write_file(p, objs[i].data, objs[i].size)) {
			snprintf(err, errlen, "cannot write %s: %s", p, strerror(errno));
			return false;
		}
	}
	return true;
}

/* The first line ld.lld wrote to stderr, for the error message. */
static void first_line(const char *path, char *buf, size_t len)
{
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* Runs lld -shared -o so objs... with stderr to log; returns the exit status or -1. */
static int run_lld(const char *lld, bool gpu, char **objs, int n, const char *so, const char *log)
{
	/* a GPU code object has no loader to resolve an undefined symbol: make one an error */
	char *mode = gpu ? "--no-undefined" : "--hash-style=both";
	char **argv = calloc((size_t)n + 6, sizeof *argv);
	if (!argv)
		return -1;
	char *head[] = {(char *)lld, "-shared", mode, "-o", (char *)so};
	memcpy(argv, head, sizeof head);
	memcpy(argv + 5, objs, (size_t)n * sizeof *objs);
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0) {
		free(argv);
		return -1;
	}
	posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int rc = posix_spawnp(&pid, lld, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	free(argv);
	if (rc != 0)
		return -1;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool cg_link_shared(const CgBlob *objs, int n, bool gpu, uint8_t **out, size_t *out_size, char *err,
		    size_t errlen)
{
	char lld[4096];
	*out = NULL;
	*out_size = 0;
	if (!find_lld(lld, sizeof lld)) {
		snprintf(err, errlen, "cannot find ld.lld (install lld-19, or set NETC_LD_LLD)");
		return false;
	}
	const char *tmp = getenv("TMPDIR");
	char dir[4096], so_path[4200], log_path[4200];
	snprintf(dir, sizeof dir, "%s/netc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(err, errlen, "cannot create a temporary directory %s: %s", dir, strerror(errno));
		return false;
	}
	snprintf(so_path, sizeof so_path, "%s/kernels.so", dir);
	snprintf(log_path, sizeof log_path, "%s/lld.log", dir);

	char **paths = calloc(n ? (size_t)n : 1, sizeof *paths);
	bool ok = false;
	if (!paths) {
		snprintf(err, errlen, "out of memory");
	} else if (write_objects(dir, objs, n, paths, err, errlen)) {
		int rc = run_lld(lld, gpu, paths, n, so_path, log_path);
		if (rc != 0) {
			char line[512];
			first_line(log_path, line, sizeof line);
			if (rc < 0)
				snprintf(err, errlen, "cannot run %s", lld);
			else
				snprintf(err, errlen, "%s failed (exit %d)%s%s", lld, rc, line[0] ? ": " : "", line);
		} else if (!read_file(so_path, out, out_size)) {
			snprintf(err, errlen, "cannot read the linked %s", so_path);
		} else {
			ok = true;
		}
	}
	for (int i = 0; paths && i < n && paths[i]; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
	free(paths);
	unlink(so_path);
	unlink(log_path);
	rmdir(dir);
	return ok;
}
