/* o3_share.h: one O3 for the targets of one class. AMD targets of one generation (gfx803 to
 * gfx908; gfx90a and gfx942; the RDNA chips) get the same O3 result from the same LLVM IR: only
 * the functions' target attributes (target-cpu, target-features) tell them apart,
 * measured on every model and precision of tests/lit/targets/o3_share.test, whose bundles are
 * byte for byte those of a compile without sharing. So a unit whose IR is a class mate's, but
 * for those attributes, takes the mate's optimized module with its own attributes put back and
 * goes straight to code generation (codegen/cg_compile.c). The class is the target table's
 * (CgTargetInfo.o3_class); NETC_O3_SHARING=0 turns sharing off. */
#ifndef NETC_O3_SHARE_H
#define NETC_O3_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Core.h>

#include "codegen/cg.h"

/* Whether targets a and b (a's units optimized first) may share O3: the same class, kind, wave
 * and code object version, and no features named after a colon. */
bool cg_o3_mates(const CgTarget *a, const CgTarget *b);

/* The hash of mod without what tells its target: equal for class mates whose IR is the same. */
void cg_o3_shape(LLVMModuleRef mod, uint8_t key[32]);

/* The optimized module saved as bitcode (malloc'd), to be adopted by class mates. */
bool cg_o3_save(LLVMModuleRef mod, uint8_t **bc, size_t *size);

/* A class mate's optimized module (bc) in own's context, with own's target attributes on every
 * function, triple and data layout: what O3 of own would have made. NULL with a message. */
LLVMModuleRef cg_o3_adopt(LLVMModuleRef own, const uint8_t *bc, size_t size, char *err, size_t errlen);

#endif
