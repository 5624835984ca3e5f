/* kernel_share.h: kernels compiled once. A kernel reaches its buffers through its buffer
 * arguments (cg.h), so units that differ only in where their buffers are in the arena, and in the
 * names of their kernels, have the same IR once the names are set aside: their "shape". On each
 * target the first unit of a shape is compiled, and every later one (a copy) compiles nothing: its
 * kernels launch the first one's, with their own buffer arguments, grids and nodes
 * (codegen/cg_compile.c). NETC_KERNEL_SHARING=0 turns sharing off. */
#ifndef NETC_KERNEL_SHARE_H
#define NETC_KERNEL_SHARE_H

#include "codegen/cg_unit.h"

/* The unit's cache key (the target's part target_key, the module and the kernels' names) and its
 * shape (the module with every name that begins with its first kernel's set aside, and the
 * kernels' work-group sizes and shared memory, which launches take from the copy's own). The
 * module's names may be changed. */
void cg_unit_hashes(const Sha256 *target_key, LLVMModuleRef mod, const CgUnit *u, uint8_t key[32],
		    uint8_t shape[32]);

/* Whether sharing is on (NETC_KERNEL_SHARING is not 0): a part of every code object's cache key,
 * as a copy's kernels are named after its original. */
bool cg_kernel_sharing(void);

/* units[i].copy_of: the first unit before it of the same shape, -1: none (or sharing is off).
 * Returns the number of copies. */
int cg_share_units(CgUnit *units, int n);

#endif
