/* kernel_cache.c: entries are files <dir>/<first 2 hex digits of the key>/<the other 62>, each a
 * header (magic, key, code size, SHA-256 of the code) and the code. See kernel_cache.h. */
#include "codegen/kernel_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codegen/sha256.h"
#include "runtime/cache_dir.h"

#define ENTRY_MAGIC "NETCKC01"

typedef struct {
	char magic[8];
	uint8_t key[32];
	uint64_t size;
	uint8_t sum[32];
} EntryHeader;

struct KernelCache {
	char dir[4096];
	atomic_long hits, misses, corrupt, stored;
	atomic_bool unwritable; /* a store failed: warned, no more tries */
	atomic_uint serial;     /* makes temporary names unique among this process's threads */
};

bool kc_default_dir(char *buf, size_t len)
{
	return rt_cache_dir(buf, len);
}

KernelCache *kc_open(const char *dir)
{
	KernelCache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	snprintf(c->dir, sizeof c->dir, "%s", dir);
	return c;
}

void kc_close(KernelCache *c)
{
	free(c);
}

const char *kc_dir(const KernelCache *c)
{
	return c->dir;
}

KernelCacheStats kc_stats(const KernelCache *c)
{
	return (KernelCacheStats){atomic_load(&c->hits), atomic_load(&c->misses), atomic_load(&c->corrupt),
				  atomic_load(&c->stored)};
}

static void entry_path(const KernelCache *c, const uint8_t key[32], char *path, size_t len, char *sub, size_t sublen)
{
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	snprintf(sub, sublen, "%s/%.2s", c->dir, hex);
	snprintf(path, len, "%s/%.2s/%s", c->dir, hex, hex + 2);
}

bool kc_get(KernelCache *c, const uint8_t key[32], uint8_t **data, size_t *size)
{
	char path[4200], sub[4120];
	entry_path(c, key, path, sizeof path, sub, sizeof sub);
	*data = NULL;
	*size = 0;
	FILE *f = fopen(path, "rb");
	if (!f) {
		atomic_fetch_add(&c->misses, 1);
		return false;
	}
	EntryHeader h;
	bool ok = fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, ENTRY_MAGIC, 8) == 0 &&
		  memcmp(h.key, key, 32) == 0 && h.size < ((uint64_t)1 << 32);
	uint8_t *buf = ok ? malloc(h.size + 1) : NULL;
	if (buf) {
		uint8_t sum[32];
		ok = fread(buf, 1, h.size, f) == h.size && fgetc(f) == EOF;
		if (ok) {
			sha256(buf, h.size, sum);
			ok = memcmp(sum, h.sum, 32) == 0;
		}
	} else {
		ok = false;
	}
	fclose(f);
	if (!ok) {
		free(buf);
		atomic_fetch_add(&c->corrupt, 1);
		atomic_fetch_add(&c->misses, 1);
		return false;
	}
	buf[h.size] = 0;
	*data = buf;
	*size = h.size;
	atomic_fetch_add(&c->hits, 1);
	/* a use: kc_trim deletes the entries used longest ago (a read-only cache keeps its times) */
	utimensat(AT_FDCWD, path, NULL, 0);
	return true;
}

uint64_t kc_max_bytes(void)
{
	const char *env = getenv("NETC_CACHE_MAX_MB");
	char *end;
	unsigned long long mb = env ? strtoull(env, &end, 10) : 0;
	return env && *env && !*end ? (uint64_t)mb << 20 : (uint64_t)2 << 30;
}

typedef struct {
	char *path;
	struct timespec used;
	uint64_t bytes;
} Entry;

static int used_earlier(const void *a, const void *b)
{
	const Entry *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* Every entry file under dir/xx/ into *list; false when out of memory. */
static bool list_entries(const char *dir, Entry **list, size_t *n, uint64_t *total)
{
	size_t cap = 0;
	for (int sub = 0; sub < 256; sub++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%02x", dir, sub);
		DIR *d = opendir(path);
		if (!d)
			continue;
		for (struct dirent *e; (e = readdir(d));) {
			char file[4500];
			struct stat st;
			snprintf(file, sizeof file, "%s/%s", path, e->d_name);
			if (e->d_name[0] == '.' || stat(file, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			/* another process's entry being written, unless it was left an hour ago by one
			 * that died */
			if (strstr(e->d_name, ".tmp.") && time(NULL) - st.st_mtim.tv_sec < 3600)
				continue;
			if (*n == cap) {
				cap = cap ? 2 * cap : 1024;
				Entry *grown = realloc(*list, cap * sizeof **list);
				if (!grown) {
					closedir(d);
					return false;
				}
				*list = grown;
			}
			(*list)[(*n)++] = (Entry){strdup(file), st.st_mtim, (uint64_t)st.st_size};
			*total += (uint64_t)st.st_size;
		}
		closedir(d);
	}
	return true;
}

long kc_trim(KernelCache *c, uint64_t max_bytes)
{
	Entry *list = NULL;
	size_t n = 0;
	uint64_t total = 0;
	long deleted = 0;
	if (list_entries(c->dir, &list, &n, &total) && total > max_bytes) {
		qsort(list, n, sizeof *list, used_earlier);
		for (size_t i = 0; i < n && total > max_bytes; i++)
			if (list[i].path && unlink(list[i].path) == 0) {
				total -= list[i].bytes;
				deleted++;
			}
	}
	for (size_t i = 0; i < n; i++)
		free(list[i].path);
	free(list);
	return deleted;
}

/* mkdir -p of the cache directory and its subdirectory sub. */
static bool make_dirs(const char *dir, const char *sub)
{
	return rt_make_dirs(dir) && rt_make_dirs(sub);
}

static bool write_entry(const char *tmp, const EntryHeader *h, const uint8_t *data, size_t size)
{
	FILE *f = fopen(tmp, "wb");
	if (!f)
		return false;
	bool ok = fwrite(h, sizeof *h, 1, f) == 1 && fwrite(data, 1, size, f) == size;
	return (fclose(f) == 0) && ok;
}

void kc_put(KernelCache *c, const uint8_t key[32], const uint8_t *data, size_t size)
{
	if (atomic_load(&c->unwritable))
		return;
	char path[4200], sub[4120], tmp[4300];
	entry_path(c, key, path, sizeof path, sub, sizeof sub);
	EntryHeader h = {.size = size};
	memcpy(h.magic, ENTRY_MAGIC, 8);
	memcpy(h.key, key, 32);
	sha256(data, size, h.sum);
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&c->serial, 1));
	bool ok = make_dirs(c->dir, sub) && write_entry(tmp, &h, data, size) && rename(tmp, path) == 0;
	if (ok) {
		atomic_fetch_add(&c->stored, 1);
		return;
	}
	int e = errno;
	unlink(tmp);
	if (!atomic_exchange(&c->unwritable, true))
		fprintf(stderr, "netc: warning: kernel cache %s cannot be written (%s): compiling without storing "
				"kernels (--no-cache turns the cache off)\n", c->dir, strerror(e));
}
