/* cache_dir.c: the cache directory (cache_dir.h). */
#include "runtime/cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

bool rt_cache_dir(char *buf, size_t len)
{
	const char *env = getenv("NETC_CACHE_DIR");
	if (env)
		return *env && (size_t)snprintf(buf, len, "%s", env) < len;
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (xdg && *xdg)
		return (size_t)snprintf(buf, len, "%s/netc", xdg) < len;
	const char *home = getenv("HOME");
	return home && *home && (size_t)snprintf(buf, len, "%s/.cache/netc", home) < len;
}

static bool make_dir(const char *path)
{
	return mkdir(path, 0777) == 0 || errno == EEXIST;
}

bool rt_make_dirs(const char *path)
{
	char buf[4200];
	if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf)
		return false;
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (!make_dir(buf))
				return false;
			*p = '/';
		}
	return make_dir(buf);
}
