/* cache_dir.h: where netc keeps what it computes once: compiled kernels (codegen/kernel_cache.c)
 * and the host's measured roofline (runtime/roofline.c). */
#ifndef NETC_CACHE_DIR_H
#define NETC_CACHE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* $NETC_CACHE_DIR, else $XDG_CACHE_HOME/netc, else $HOME/.cache/netc; false when none can be
 * named (no HOME) or NETC_CACHE_DIR is set but empty (caching off). */
bool rt_cache_dir(char *buf, size_t len);
/* mkdir -p path; false when a part cannot be made. */
bool rt_make_dirs(const char *path);

#endif
