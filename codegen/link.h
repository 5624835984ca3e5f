/* link.h: turning an object file into a loadable shared object with ld.lld. */
#ifndef NETC_CG_LINK_H
#define NETC_CG_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An object file's bytes. */
typedef struct {
	uint8_t *data;
	size_t size;
} CgBlob;

/* Links the objects objs[0..n) (in that order) with `ld.lld -shared` and returns the shared object
 * in *out (malloc'd, *out_size bytes). gpu links an AMDGPU code object (.hsaco): an undefined symbol is
 * then an error, as no loader resolves one. The temporaries are deleted on every path. ld.lld is
 * found through the NETC_LD_LLD environment variable, then LLVM's bindir, then ld.lld-19 and
 * ld.lld in PATH. */
bool cg_link_shared(const CgBlob *objs, int n, bool gpu, uint8_t **out, size_t *out_size, char *err,
		    size_t errlen);

#endif
