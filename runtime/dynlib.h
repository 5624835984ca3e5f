/* dynlib.h: driver libraries loaded at run time, so that netc needs no GPU toolkit to build and
 * one binary runs on any machine. */
#ifndef NETC_DYNLIB_H
#define NETC_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	const char *name; /* the exported symbol, "cuMemAlloc_v2" */
	void *slot;       /* address of the function pointer it fills */
	bool optional;    /* absent in older drivers: the slot stays NULL */
} RtSymbol;

/* The first of names[0..n) that loads, its name in *loaded. NULL with one line in why: "NAME not
 * found" when none is installed, else the loader's own message for the first that is there but
 * fails. */
void *rt_dlopen_first(const char *const *names, int n, const char **loaded, char *why, size_t len);
/* The same, with the library's symbols global: for libraries that dlopen plugins of their own
 * which expect them (Open MPI's components). */
void *rt_dlopen_first_global(const char *const *names, int n, const char **loaded, char *why, size_t len);
/* Fills every slot; false with a message naming the first required symbol lib lacks. */
bool rt_dlsyms(void *lib, const char *libname, const RtSymbol *syms, int n, char *err, size_t errlen);

#endif
