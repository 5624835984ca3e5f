/* o3_share.c: one O3 for the targets of one class (o3_share.h). */
#include "codegen/o3_share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>

#include "codegen/sha256.h"

bool cg_o3_mates(const CgTarget *a, const CgTarget *b)
{
	const char *off = getenv("NETC_O3_SHARING");
	if (off && strcmp(off, "0") == 0)
		return false;
	return a->o3_class && b->o3_class && strcmp(a->o3_class, b->o3_class) == 0 && a->kind == b->kind &&
	       a->wave == b->wave && a->code_object_version == b->code_object_version &&
	       a->packed_half == b->packed_half && strcmp(a->name, a->arch) == 0 && strcmp(b->name, b->arch) == 0;
}

/* The function attributes that name the target. The amdgpu-* ones netc sets (occupancy, work-group
 * size) stay in the shape: mates share only where those are the same, and O3 adds more of them
 * (amdgpu-no-*) from the IR, which the mate's module then has as its own O3 would. */
static bool target_attribute(const char *key, unsigned len)
{
	return (len == 10 && memcmp(key, "target-cpu", 10) == 0) || (len == 15 && memcmp(key, "target-features", 15) == 0);
}

/* fn's function attributes; *n of them, malloc'd. */
static LLVMAttributeRef *attributes(LLVMValueRef fn, unsigned *n)
{
	*n = LLVMGetAttributeCountAtIndex(fn, LLVMAttributeFunctionIndex);
	LLVMAttributeRef *a = malloc((*n + 1) * sizeof *a);
	if (!a)
		abort();
	LLVMGetAttributesAtIndex(fn, LLVMAttributeFunctionIndex, a);
	return a;
}

static void strip(LLVMValueRef fn)
{
	unsigned n;
	LLVMAttributeRef *a = attributes(fn, &n);
	for (unsigned i = 0; i < n; i++) {
		unsigned len;
		const char *key = LLVMIsStringAttribute(a[i]) ? LLVMGetStringAttributeKind(a[i], &len) : NULL;
		if (key && target_attribute(key, len))
			LLVMRemoveStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, key, len);
	}
	free(a);
}

/* from's target attributes onto to (another module of the same context). */
static void copy_target_attributes(LLVMContextRef ctx, LLVMValueRef from, LLVMValueRef to)
{
	unsigned n;
	LLVMAttributeRef *a = attributes(from, &n);
	for (unsigned i = 0; i < n; i++) {
		unsigned len, vlen;
		if (!LLVMIsStringAttribute(a[i]))
			continue;
		const char *key = LLVMGetStringAttributeKind(a[i], &len);
		if (!target_attribute(key, len))
			continue;
		const char *value = LLVMGetStringAttributeValue(a[i], &vlen);
		LLVMAddAttributeAtIndex(to, LLVMAttributeFunctionIndex, LLVMCreateStringAttribute(ctx, key, len, value, vlen));
	}
	free(a);
}

static void hash_bitcode(LLVMModuleRef mod, uint8_t key[32])
{
	LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
	Sha256 s;
	sha256_init(&s);
	sha256_update(&s, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
	sha256_final(&s, key);
	LLVMDisposeMemoryBuffer(bc);
}

void cg_o3_shape(LLVMModuleRef mod, uint8_t key[32])
{
	LLVMModuleRef m = LLVMCloneModule(mod);
	for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn))
		strip(fn);
	LLVMSetTarget(m, "");
	hash_bitcode(m, key);
	LLVMDisposeModule(m);
}

bool cg_o3_save(LLVMModuleRef mod, uint8_t **bc, size_t *size)
{
	LLVMMemoryBufferRef buf = LLVMWriteBitcodeToMemoryBuffer(mod);
	*size = LLVMGetBufferSize(buf);
	*bc = malloc(*size ? *size : 1);
	if (*bc)
		memcpy(*bc, LLVMGetBufferStart(buf), *size);
	LLVMDisposeMemoryBuffer(buf);
	return *bc != NULL;
}

LLVMModuleRef cg_o3_adopt(LLVMModuleRef own, const uint8_t *bc, size_t size, char *err, size_t errlen)
{
	LLVMContextRef ctx = LLVMGetModuleContext(own);
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)bc, size, "o3");
	LLVMModuleRef m = NULL;
	bool bad = LLVMParseBitcodeInContext2(ctx, buf, &m);
	LLVMDisposeMemoryBuffer(buf);
	if (bad) {
		snprintf(err, errlen, "internal error: a class mate's optimized module does not read back");
		return NULL;
	}
	for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn)) {
		size_t len;
		const char *name = LLVMGetValueName2(fn, &len);
		LLVMValueRef mine = LLVMGetNamedFunction(own, name);
		strip(fn);
		if (mine)
			copy_target_attributes(ctx, mine, fn);
	}
	LLVMSetTarget(m, LLVMGetTarget(own));
	LLVMSetDataLayout(m, LLVMGetDataLayoutStr(own));
	size_t len; /* the object's file symbol names the module */
	const char *id = LLVMGetModuleIdentifier(own, &len);
	LLVMSetModuleIdentifier(m, id, len);
	id = LLVMGetSourceFileName(own, &len);
	LLVMSetSourceFileName(m, id, len);
	return m;
}
