/* isa_twins.c: a twin's code object from its ISA class mate's (isa_twins.h). */
#include "codegen/isa_twins.h"

#include <elf.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/amdgpu_info.h"

/* e_flags' processor bits (LLVM's llvm/BinaryFormat/ELF.h); the others (xnack, sramecc, ABI)
 * must be the same for twins. */
#define EF_AMDGPU_MACH 0x0ffu

bool cg_isa_twins(const CgTarget *a, const CgTarget *b)
{
	const char *off = getenv("NETC_ISA_TWINS");
	if (off && strcmp(off, "0") == 0)
		return false;
	return a->isa_class && b->isa_class && strcmp(a->isa_class, b->isa_class) == 0 && a->kind == b->kind &&
	       a->wave == b->wave && a->code_object_version == b->code_object_version && a->matrix == b->matrix &&
	       a->packed_half == b->packed_half &&
	       strcmp(a->name, a->arch) == 0 && strcmp(b->name, b->arch) == 0 && strlen(a->name) == strlen(b->name);
}

/* The target id ("amdgcn-amd-amdhsa--gfx1201") of a code object's metadata note, in buf. */
static bool target_id(const uint8_t *elf, size_t size, char *buf, size_t len, const char *what, char *err,
		      size_t errlen)
{
	CgAmdCode code;
	char why[256];
	if (!cg_amd_read(elf, size, &code, why, sizeof why)) {
		snprintf(err, errlen, "internal error: %s: %s", what, why);
		return false;
	}
	snprintf(buf, len, "%s", code.target);
	cg_amd_free(&code);
	if (!buf[0])
		snprintf(err, errlen, "internal error: %s names no target (amdhsa.target)", what);
	return buf[0] != 0;
}

/* s as msgpack writes a string (its header, then its bytes), in *buf. */
static void pack_string(const char *s, msgpack_sbuffer *buf)
{
	msgpack_packer pk;
	msgpack_sbuffer_init(buf);
	msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
	msgpack_pack_str(&pk, strlen(s));
	msgpack_pack_str_body(&pk, s, strlen(s));
}

/* Replaces the one occurrence of from in note[0..len) by to (as long); false where there is not
 * exactly one. */
static bool replace_once(uint8_t *note, size_t len, const msgpack_sbuffer *from, const msgpack_sbuffer *to)
{
	uint8_t *at = NULL;
	for (size_t i = 0; i + from->size <= len; i++)
		if (memcmp(note + i, from->data, from->size) == 0) {
			if (at)
				return false;
			at = note + i;
		}
	if (at)
		memcpy(at, to->data, to->size);
	return at != NULL;
}

/* The ELF headers of code and probe agree but for the processor bits of e_flags. */
static bool same_header(const uint8_t *code, const uint8_t *probe, char *err, size_t errlen)
{
	Elf64_Ehdr a, b;
	memcpy(&a, code, sizeof a);
	memcpy(&b, probe, sizeof b);
	if (memcmp(a.e_ident, b.e_ident, EI_NIDENT) != 0 || a.e_machine != b.e_machine ||
	    ((a.e_flags ^ b.e_flags) & ~EF_AMDGPU_MACH) != 0) {
		snprintf(err, errlen, "internal error: ISA twins whose code objects differ in more than the target "
				      "(e_flags %#x and %#x; NETC_ISA_TWINS=0 compiles each alone)", a.e_flags, b.e_flags);
		return false;
	}
	return true;
}

bool cg_isa_twin_code(const uint8_t *code, size_t size, const uint8_t *probe, size_t probe_size, uint8_t **out,
		      size_t *out_size, char *err, size_t errlen)
{
	char from[96], to[96];
	*out = NULL;
	*out_size = 0;
	if (!target_id(code, size, from, sizeof from, "the ISA twin's code object", err, errlen) ||
	    !target_id(probe, probe_size, to, sizeof to, "the target's empty object", err, errlen) ||
	    !same_header(code, probe, err, errlen))
		return false;
	if (strlen(from) != strlen(to)) {
		snprintf(err, errlen, "internal error: ISA twins %s and %s: names of different lengths", from, to);
		return false;
	}
	uint8_t *copy = malloc(size);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	memcpy(copy, code, size);
	Elf64_Ehdr eh, ph;
	memcpy(&eh, copy, sizeof eh);
	memcpy(&ph, probe, sizeof ph);
	eh.e_flags = ph.e_flags;
	memcpy(copy, &eh, sizeof eh);
	const uint8_t *desc;
	uint32_t desc_len;
	if (!cg_amd_metadata_note(copy, size, &desc, &desc_len, err, errlen)) {
		free(copy);
		return false;
	}
	msgpack_sbuffer a, b;
	pack_string(from, &a);
	pack_string(to, &b);
	bool ok = replace_once(copy + (desc - copy) /* desc, writable */, desc_len, &a, &b);
	msgpack_sbuffer_destroy(&a);
	msgpack_sbuffer_destroy(&b);
	if (!ok) {
		snprintf(err, errlen, "internal error: the metadata note of the ISA twin's code object does not name %s once",
			 from);
		free(copy);
		return false;
	}
	*out = copy;
	*out_size = size;
	return true;
}
