/* isa_twins.h: one code generation for AMD targets whose machine code is the same ("ISA twins").
 * LLVM 19 gives gfx1030 and gfx1031 the same subtarget features and scheduling model, and so
 * gfx1200 and gfx1201: from the same IR their code objects differ only where the target is named,
 * the ELF header's e_flags (EF_AMDGPU_MACH) and the metadata note's amdhsa.target, measured on
 * every model of models/ (docs/performance.md) and checked by tests/lit/targets/isa_twins.test.
 * So the first target of an ISA class in a compile generates the code, and each twin takes its
 * code object with those two fields rewritten (codegen/cg_compile.c). The class is the target
 * table's (CgTargetInfo.isa_class); NETC_ISA_TWINS=0 turns twinning off. */
#ifndef NETC_ISA_TWINS_H
#define NETC_ISA_TWINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/cg.h"

/* Whether b may take a's code object renamed: the same ISA class, kind, wave, code object version
 * and matrix instructions, no features named after a colon, and names of the same length. */
bool cg_isa_twins(const CgTarget *a, const CgTarget *b);

/* code[0..size), a twin's code object, as probe's target's (a copy in *out, malloc'd): e_flags and
 * amdhsa.target as probe has them, an object LLVM made for that target (netc's unit of no
 * kernel). False with a message where the two differ in more than the target's name, or the names
 * differ in length. */
bool cg_isa_twin_code(const uint8_t *code, size_t size, const uint8_t *probe, size_t probe_size, uint8_t **out,
		      size_t *out_size, char *err, size_t errlen);

#endif
