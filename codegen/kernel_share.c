/* kernel_share.c: kernels compiled once (codegen/kernel_share.h). */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitWriter.h>

#include "codegen/kernel_share.h"

/* Every global value whose name begins with prefix is renamed "K" and the rest of its name: the
 * kernels and what the lowerings name after them (tables, shared arrays). */
static void set_names_aside(LLVMModuleRef mod, const char *prefix)
{
	size_t plen = strlen(prefix);
	LLVMValueRef firsts[] = {LLVMGetFirstFunction(mod), LLVMGetFirstGlobal(mod)};
	for (int kind = 0; kind < 2; kind++)
		for (LLVMValueRef v = firsts[kind]; v; v = kind ? LLVMGetNextGlobal(v) : LLVMGetNextFunction(v)) {
			size_t len;
			const char *name = LLVMGetValueName2(v, &len);
			if (len < plen || memcmp(name, prefix, plen) != 0)
				continue;
			char *aside = malloc(len - plen + 2);
			if (!aside)
				abort();
			aside[0] = 'K';
			memcpy(aside + 1, name + plen, len - plen + 1);
			LLVMSetValueName2(v, aside, len - plen + 1);
			free(aside);
		}
}

void cg_unit_hashes(const Sha256 *target_key, LLVMModuleRef mod, const CgUnit *u, uint8_t key[32],
		    uint8_t shape[32])
{
	Sha256 k = *target_key, s;
	sha256_init(&s);
	for (int i = 0; i < u->nkernels; i++) {
		const CgKernel *kn = &u->kernels[i];
		sha256_update(&k, kn->name, strlen(kn->name) + 1);
		int launch[2] = {kn->block, kn->shared};
		sha256_update(&s, launch, sizeof launch);
	}
	if (u->nkernels)
		set_names_aside(mod, u->kernels[0].name);
	/* bitcode, which LLVM writes several times faster than text and which holds the same module */
	LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
	sha256_update(&k, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
	sha256_update(&s, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
	LLVMDisposeMemoryBuffer(bc);
	sha256_final(&k, key);
	sha256_final(&s, shape);
}

bool cg_kernel_sharing(void)
{
	const char *e = getenv("NETC_KERNEL_SHARING");
	return !e || strcmp(e, "0") != 0;
}

/* An open-addressing table of the shapes seen, by their first bytes. */
int cg_share_units(CgUnit *units, int n)
{
	for (int i = 0; i < n; i++)
		units[i].copy_of = -1;
	if (!cg_kernel_sharing() || n < 2)
		return 0;
	size_t cap = 1;
	while (cap < 2 * (size_t)n)
		cap *= 2;
	int *slot = malloc(cap * sizeof *slot);
	if (!slot)
		abort();
	for (size_t i = 0; i < cap; i++)
		slot[i] = -1;
	int copies = 0;
	for (int i = 0; i < n; i++) {
		if (!units[i].keyed || !units[i].nkernels)
			continue;
		uint64_t h;
		memcpy(&h, units[i].shape, sizeof h);
		for (size_t at = h & (cap - 1);; at = (at + 1) & (cap - 1)) {
			int j = slot[at];
			if (j < 0) {
				slot[at] = i;
				break;
			}
			if (memcmp(units[j].shape, units[i].shape, 32) == 0 && units[j].nkernels == units[i].nkernels) {
				units[i].copy_of = j;
				copies++;
				break;
			}
		}
	}
	free(slot);
	return copies;
}
