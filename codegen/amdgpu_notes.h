/* amdgpu_notes.h: one metadata note for an AMDGPU code object linked from several objects. */
#ifndef NETC_AMDGPU_NOTES_H
#define NETC_AMDGPU_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ld.lld keeps every object's NT_AMDGPU_METADATA note, and loaders read the first: rewrites the
 * linked code object elf[0..size) in place so that its note section holds one metadata note, the
 * first object's map with every object's amdhsa.kernels in link order. A code object with one
 * metadata note is left as it is. */
bool cg_amd_merge_notes(uint8_t *elf, size_t size, char *err, size_t errlen);

#endif
