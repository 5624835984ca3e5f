/* dynlib.c: dlopen with messages a user can act on. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "runtime/dynlib.h"

/* The library itself is not installed (a missing dependency of it names the dependency). */
static bool is_missing(const char *name, const char *msg)
{
	size_t n = strlen(name);
	return !msg || (strncmp(msg, name, n) == 0 && strstr(msg + n, "No such file"));
}

static void *open_first(const char *const *names, int n, int mode, const char **loaded, char *why, size_t len)
{
	char broken[512] = "";
	for (int i = 0; i < n; i++) {
		void *lib = dlopen(names[i], RTLD_NOW | mode);
		if (lib) {
			*loaded = names[i];
			return lib;
		}
		const char *msg = dlerror();
		if (!broken[0] && !is_missing(names[i], msg))
			snprintf(broken, sizeof broken, "cannot load %s: %s", names[i], msg);
	}
	if (broken[0]) {
		snprintf(why, len, "%s", broken);
		return NULL;
	}
	size_t k = 0;
	for (int i = 0; i < n && k < len; i++)
		k += (size_t)snprintf(why + k, len - k, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
				      names[i]);
	if (k < len)
		snprintf(why + k, len - k, " not found");
	return NULL;
}

void *rt_dlopen_first(const char *const *names, int n, const char **loaded, char *why, size_t len)
{
	return open_first(names, n, RTLD_LOCAL, loaded, why, len);
}

void *rt_dlopen_first_global(const char *const *names, int n, const char **loaded, char *why, size_t len)
{
	return open_first(names, n, RTLD_GLOBAL, loaded, why, len);
}

bool rt_dlsyms(void *lib, const char *libname, const RtSymbol *syms, int n, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++) {
		void *sym = dlsym(lib, syms[i].name);
		if (!sym && !syms[i].optional) {
			snprintf(err, errlen, "%s has no %s: the library is too old", libname, syms[i].name);
			return false;
		}
		/* POSIX: a function pointer and void * have the same representation */
		memcpy(syms[i].slot, &sym, sizeof sym);
	}
	return true;
}
