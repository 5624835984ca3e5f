/* kernel_cache.h: the persistent cache of compiled kernels. An entry is the code of one compile
 * unit (a fused group's kernels, codegen/cg_compile.c) for one target, found by a key that hashes
 * everything the code depends on (the unit's LLVM IR before optimization, the target, netc's
 * code-generation version, LLVM's version). Entries are written to a temporary file and renamed,
 * so concurrent netc processes never see half an entry; each carries a SHA-256 of its code, so a
 * damaged one is a miss, compiled again and replaced. A cache that cannot be written (read-only,
 * full disk) gives one warning and netc compiles without storing; reads go on. After a compile
 * that stored entries the least recently used ones are deleted beyond a size (kc_trim). */
#ifndef NETC_KERNEL_CACHE_H
#define NETC_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct KernelCache KernelCache;

typedef struct {
	long hits, misses, corrupt, stored;
} KernelCacheStats;

/* The cache directory: $NETC_CACHE_DIR, else $XDG_CACHE_HOME/netc, else $HOME/.cache/netc; false
 * when none can be named (no HOME) or NETC_CACHE_DIR is set but empty (caching off). */
bool kc_default_dir(char *buf, size_t len);

/* A cache in dir (created on the first store). Safe to use from several threads. */
KernelCache *kc_open(const char *dir);
void kc_close(KernelCache *c);

/* The code stored under key (malloc'd, a NUL after *size bytes), or false: not there, or damaged. */
bool kc_get(KernelCache *c, const uint8_t key[32], uint8_t **data, size_t *size);
/* Stores data under key; a failure warns once (on stderr) and leaves the cache unwritten. */
void kc_put(KernelCache *c, const uint8_t key[32], const uint8_t *data, size_t size);
KernelCacheStats kc_stats(const KernelCache *c);
/* Deletes the least recently used entries (a hit counts as a use) until the entries take at most
 * max_bytes; returns how many were deleted. */
long kc_trim(KernelCache *c, uint64_t max_bytes);
/* The size kc_trim keeps the cache to: $NETC_CACHE_MAX_MB MiB, else 2 GiB. */
uint64_t kc_max_bytes(void);
const char *kc_dir(const KernelCache *c);

#endif
