/* test_cg_kernel_cache.c: SHA-256 against FIPS 180-4's examples and against itself fed in random
 * pieces; the kernel cache's entries: a stored entry read back whole, a missing one a miss, a
 * damaged one (any byte of the code or the header) a miss counted as damaged, concurrent writers
 * of one key leaving a whole entry, a directory that cannot be made leaving the cache unwritten,
 * and trimming deleting the entries used longest ago.
 * Data are random; the seed is printed (NETC_TEST_SEED=n replays a run). */
#include <pthread.h>

#include "codegen/kernel_cache.h"
#include "codegen/sha256.h"
#include "tests/unit/test_util.h"

static void hex(const uint8_t d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_sha256_vectors(void)
{
	static const struct {
		const char *msg;
		const char *digest;
	} v[] = {
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	};
	for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
		uint8_t d[32];
		char h[65];
		sha256(v[i].msg, strlen(v[i].msg), d);
		hex(d, h);
		CHECK(strcmp(h, v[i].digest) == 0, "sha256('%s') = %s", v[i].msg, h);
	}
	/* a million 'a's, fed in pieces that straddle the 64-byte blocks */
	Sha256 s;
	sha256_init(&s);
	char a[1000];
	memset(a, 'a', sizeof a);
	for (int i = 0; i < 1000; i++)
		sha256_update(&s, a, sizeof a);
	uint8_t d[32];
	char h[65];
	sha256_final(&s, d);
	hex(d, h);
	CHECK(strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "a million a: %s", h);
}

static void test_sha256_pieces(void)
{
	for (int round = 0; round < 200; round++) {
		size_t len = (size_t)tu_below(3000);
		uint8_t *data = malloc(len + 1), whole[32], parts[32];
		for (size_t i = 0; i < len; i++)
			data[i] = (uint8_t)tu_below(256);
		sha256(data, len, whole);
		Sha256 s;
		sha256_init(&s);
		for (size_t at = 0; at < len;) {
			size_t k = 1 + (size_t)tu_below(130);
			k = k < len - at ? k : len - at;
			sha256_update(&s, data + at, k);
			at += k;
		}
		sha256_final(&s, parts);
		CHECK(memcmp(whole, parts, 32) == 0, "length %zu: pieces differ from one call", len);
		free(data);
	}
}

static void random_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)tu_below(256);
}

/* The one entry file under dir (the cache makes dir/xx/rest). */
static bool entry_file(const char *dir, const uint8_t key[32], char *path, size_t len)
{
	char h[65];
	hex(key, h);
	snprintf(path, len, "%s/%.2s/%s", dir, h, h + 2);
	return access(path, F_OK) == 0;
}

static void test_cache_entries(const char *dir)
{
	KernelCache *c = kc_open(dir);
	for (int round = 0; round < 20; round++) {
		uint8_t key[32], *data, *got;
		size_t size = 1 + (size_t)tu_below(5000), got_size;
		random_bytes(key, 32);
		data = malloc(size);
		random_bytes(data, size);
		CHECK(!kc_get(c, key, &got, &got_size), "an entry before it was stored");
		kc_put(c, key, data, size);
		CHECK(kc_get(c, key, &got, &got_size) && got_size == size && memcmp(got, data, size) == 0 && got[size] == 0,
		      "round %d: the entry read back differs", round);
		free(got);
		/* one byte anywhere in the file flipped: header or code */
		char path[4200];
		CHECK(entry_file(dir, key, path, sizeof path), "no file %s", path);
		FILE *f = fopen(path, "r+b");
		fseek(f, 0, SEEK_END);
		long at = (long)tu_below((uint64_t)ftell(f));
		fseek(f, at, SEEK_SET);
		int byte = fgetc(f);
		fseek(f, at, SEEK_SET);
		fputc(byte ^ (1 << tu_below(8)), f);
		fclose(f);
		KernelCacheStats before = kc_stats(c);
		CHECK(!kc_get(c, key, &got, &got_size), "round %d: byte %ld flipped, the entry still read", round, at);
		CHECK(kc_stats(c).corrupt == before.corrupt + 1, "round %d: the damage was not counted", round);
		/* stored again, it is whole */
		kc_put(c, key, data, size);
		CHECK(kc_get(c, key, &got, &got_size) && got_size == size && memcmp(got, data, size) == 0,
		      "round %d: the entry stored over a damaged one differs", round);
		free(got);
		free(data);
	}
	kc_close(c);
}

typedef struct {
	KernelCache *c;
	const uint8_t *key, *data;
	size_t size;
	int bad;
} Writer;

static void *write_and_read(void *arg)
{
	Writer *w = arg;
	for (int i = 0; i < 50; i++) {
		kc_put(w->c, w->key, w->data, w->size);
		uint8_t *got;
		size_t n;
		if (!kc_get(w->c, w->key, &got, &n) || n != w->size || memcmp(got, w->data, n) != 0)
			w->bad++;
		if (n)
			free(got);
	}
	return NULL;
}

/* Four threads store and read one key at once: every read sees a whole entry. */
static void test_cache_concurrent(const char *dir)
{
	KernelCache *c = kc_open(dir);
	uint8_t key[32], data[20000];
	random_bytes(key, 32);
	random_bytes(data, sizeof data);
	Writer w[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (Writer){c, key, data, sizeof data, 0};
		pthread_create(&t[i], NULL, write_and_read, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].bad == 0, "thread %d read %d torn or missing entries", i, w[i].bad);
	}
	kc_close(c);
}

/* A cache under a regular file cannot be made: stores fail quietly after one warning, reads miss. */
static void test_cache_unwritable(const char *dir)
{
	char file[4200], under[4300];
	snprintf(file, sizeof file, "%s/a-file", dir);
	fclose(fopen(file, "w"));
	snprintf(under, sizeof under, "%s/cache", file);
	KernelCache *c = kc_open(under);
	uint8_t key[32], data[100], *got;
	size_t n;
	random_bytes(key, 32);
	random_bytes(data, sizeof data);
	kc_put(c, key, data, sizeof data);
	kc_put(c, key, data, sizeof data);
	CHECK(!kc_get(c, key, &got, &n), "an entry in a cache that cannot be made");
	CHECK(kc_stats(c).stored == 0, "stored %ld entries", kc_stats(c).stored);
	kc_close(c);
}

/* Ten entries of 10 KB stored, the first five read again (used) later: trimmed to 60 KB, the
 * five unused go first and the used ones stay. */
static void test_cache_trim(const char *parent)
{
	char dir[200];
	snprintf(dir, sizeof dir, "%.150s/trim", parent);
	KernelCache *c = kc_open(dir);
	uint8_t keys[10][32], data[10000], *got;
	size_t n;
	for (int i = 0; i < 10; i++) {
		random_bytes(keys[i], 32);
		random_bytes(data, sizeof data);
		kc_put(c, keys[i], data, sizeof data);
	}
	struct timespec pause = {0, 20000000};
	nanosleep(&pause, NULL);
	for (int i = 0; i < 5; i++) {
		CHECK(kc_get(c, keys[i], &got, &n), "entry %d", i);
		free(got);
	}
	long deleted = kc_trim(c, 60000);
	CHECK(deleted == 5, "deleted %ld entries, not 5", deleted);
	char path[4200];
	for (int i = 0; i < 10; i++)
		CHECK(entry_file(dir, keys[i], path, sizeof path) == (i < 5), "entry %d %s", i,
		      i < 5 ? "was used but deleted" : "was not used but kept");
	CHECK(kc_trim(c, 60000) == 0, "a second trim deleted more");
	kc_close(c);
}

int main(void)
{
	tu_start("test_cg_kernel_cache");
	test_sha256_vectors();
	test_sha256_pieces();
	/* a fresh cache directory under TMPDIR (default /tmp) */
	char dir[512];
	snprintf(dir, sizeof dir, "%s/netc-cache-test-XXXXXX", tu_tmpdir());
	CHECK(mkdtemp(dir) != NULL, "mkdtemp in %s", dir);
	test_cache_entries(dir);
	test_cache_concurrent(dir);
	test_cache_unwritable(dir);
	test_cache_trim(dir);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "%s", cmd);
	return tu_finish("test_cg_kernel_cache");
}
