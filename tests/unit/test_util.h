/* test_util.h: what every unit test shares (header only, static functions).
 *
 *     tu_start("test_foo");             // seed from the time, NETC_TEST_SEED=n replays it; printed
 *     CHECK(n == 3, "n is %d", n);      // on failure: counts it, prints file, line, condition, message
 *     CHECK(ok);                        // the message is optional
 *     CHECK_NEAR(got, want, 1e-12);     // |got - want| <= tol * max(1, |want|)
 *     double x = tu_uniform(-1, 1);     // splitmix64 numbers from the seed
 *     return tu_finish("test_foo");     // "test_foo: ok" or the failure count; the exit status
 *
 * Messages go to stdout, line buffered from tu_start on, so that they stay in order with the
 * test's other output and on record if the test crashes. Tests built on cg_harness.h take their
 * seed from ch_start and use the failure count, CHECK and tu_finish from here. */
#ifndef NETC_TEST_UTIL_H
#define NETC_TEST_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* header-only: a test uses what it needs */
#define TU_API static __attribute__((unused))

static int tu_failures __attribute__((unused));
static unsigned long long tu_seed __attribute__((unused));
static uint64_t tu_state __attribute__((unused));

/* An empty message is allowed: CHECK(cond) passes "" as the format. */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			_Pragma("GCC diagnostic push")                                             \
			_Pragma("GCC diagnostic ignored \"-Wformat-zero-length\"")                 \
			tu_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__);                        \
			_Pragma("GCC diagnostic pop")                                              \
		}                                                                                  \
	} while (0)

#define CHECK_NEAR(got, want, tol) tu_check_near((got), (want), (tol), __FILE__, __LINE__, #got)

/* A failure without a condition to show (the test decided it). */
#define FAIL(...) tu_fail(__FILE__, __LINE__, NULL, __VA_ARGS__)

TU_API __attribute__((format(printf, 4, 5))) void tu_fail(const char *file, int line, const char *what,
							   const char *fmt, ...)
{
	tu_failures++;
	printf("FAIL %s:%d: %s%s", file, line, what ? what : "", what && *fmt ? ": " : "");
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

TU_API void tu_check_near(double got, double want, double tol, const char *file, int line, const char *what)
{
	double scale = fabs(want) > 1 ? fabs(want) : 1;
	if (!(fabs(got - want) <= tol * scale))
		tu_fail(file, line, NULL, "%s = %.12g, want %.12g (tolerance %g)", what, got, want, tol);
}

/* The seed: NETC_TEST_SEED when set (to replay a run), else from the time and the process. */
TU_API unsigned long long tu_start(const char *test)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *env = getenv("NETC_TEST_SEED");
	tu_seed = env && *env ? strtoull(env, NULL, 10)
			      : (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 16);
	tu_state = tu_seed;
	printf("%s: seed %llu (NETC_TEST_SEED=%llu replays it)\n", test, tu_seed, tu_seed);
	return tu_seed;
}

/* The summary line and the exit status. */
TU_API int tu_finish(const char *test)
{
	if (tu_failures)
		printf("%s: FAIL: %d failure%s\n", test, tu_failures, tu_failures == 1 ? "" : "s");
	else
		printf("%s: ok\n", test);
	return tu_failures != 0;
}

/* splitmix64 */
TU_API uint64_t tu_next(void)
{
	uint64_t z = (tu_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. */
TU_API uint64_t tu_below(uint64_t n) { return tu_next() % n; }

/* Uniform in [lo, hi). */
TU_API double tu_uniform(double lo, double hi)
{
	return lo + (hi - lo) * (double)(tu_next() >> 11) * (1.0 / 9007199254740992.0);
}

TU_API void *tu_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		abort();
	return p;
}

/* $TMPDIR, or /tmp where it is unset or empty. */
TU_API const char *tu_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	return t && *t ? t : "/tmp";
}

/* A file of the source tree ($NETC_SOURCE_DIR, which ctest sets, else the working directory). */
TU_API void tu_source_path(const char *rel, char *path, size_t len)
{
	const char *dir = getenv("NETC_SOURCE_DIR");
	snprintf(path, len, "%s/%s", dir && *dir ? dir : ".", rel);
}

/* A tool from LLVM 19, CUDA or /usr/bin, else the PATH; false when there is none. */
TU_API bool tu_find_tool(const char *name, char *path, size_t len)
{
	static const char *const dirs[] = {"/usr/lib/llvm-19/bin", "/usr/local/cuda/bin", "/usr/bin"};
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		snprintf(path, len, "%s/%s", dirs[i], name);
		if (access(path, X_OK) == 0)
			return true;
	}
	char cmd[256];
	snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", name);
	snprintf(path, len, "%s", name);
	return system(cmd) == 0;
}

/* Runs `cmd FILE` with data written to a temporary FILE; its output (up to len - 1 bytes) into
 * buf. The exit status, or -1 where it could not run. */
TU_API int tu_run_on_file(const char *cmd, const void *data, size_t size, char *buf, size_t len)
{
	char path[1024], line[4096];
	snprintf(path, sizeof path, "%s/netc-test-XXXXXX", tu_tmpdir());
	buf[0] = 0;
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	bool ok = write(fd, data, size) == (ssize_t)size;
	close(fd);
	snprintf(line, sizeof line, "%s %s 2>&1", cmd, path);
	FILE *p = ok ? popen(line, "r") : NULL;
	int rc = -1;
	if (p) {
		size_t n = fread(buf, 1, len - 1, p);
		buf[n] = 0;
		while (fread(line, 1, sizeof line, p) > 0)
			; /* the rest, so the command does not die of a closed pipe */
		int status = pclose(p);
		rc = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	unlink(path);
	return rc;
}

/* The architecture ptxas assembles PTX text for: arch, or its architecture-specific form (sm_90a
 * for sm_90: wgmma) where the PTX declares that; into buf. */
TU_API const char *tu_ptx_arch(const void *ptx, size_t size, const char *arch, char *buf, size_t len)
{
	char specific[48];
	snprintf(specific, sizeof specific, ".target %sa", arch);
	size_t n = strnlen((const char *)ptx, size), slen = strlen(specific);
	bool found = false;
	for (size_t i = 0; i + slen <= n && !found; i++)
		found = !memcmp((const char *)ptx + i, specific, slen);
	snprintf(buf, len, "%s%s", arch, found ? "a" : "");
	return buf;
}

#endif
