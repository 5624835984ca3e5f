/* amdgpu_info.h: what an AMDGPU code object (.hsaco) says about its kernels, and the occupancy
 * (waves per SIMD) that follows from it on the chip it was compiled for.
 *
 * The resources come from the code object's NT_AMDGPU_METADATA note (a msgpack map, code object
 * v3 and later); the occupancy rules are the hardware's, as LLVM's AMDGPU backend models them:
 * VGPRs per SIMD lane and their allocation granule by generation and wave size, SGPRs on gfx8/9,
 * LDS per CU (per WGP on gfx10+), the work-group size, and the waves a SIMD holds at most. */
#ifndef NETC_AMDGPU_INFO_H
#define NETC_AMDGPU_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
	char name[64];          /* .name */
	int vgpr, agpr, sgpr;   /* .vgpr_count, .agpr_count, .sgpr_count (VCC and other extra SGPRs
	                         * included); on gfx90a/gfx94x .vgpr_count counts the AGPRs too */
	int vgpr_spill, sgpr_spill;
	uint32_t lds;           /* .group_segment_fixed_size: LDS bytes per work-group */
	uint32_t scratch;       /* .private_segment_fixed_size: scratch bytes per work-item */
	int wave;               /* .wavefront_size */
	int max_wg;             /* .max_flat_workgroup_size */
} CgAmdKernel;

typedef struct {
	char target[96];        /* amdhsa.target: "amdgcn-amd-amdhsa--gfx90a:xnack-" */
	int version[2];         /* amdhsa.version */
	CgAmdKernel *kernels;
	int nkernels;
} CgAmdCode;

/* Reads the metadata note of the ELF code object in elf[0..size). A file that is not one, or is
 * damaged, is an error that says what is wrong. */
bool cg_amd_read(const uint8_t *elf, size_t size, CgAmdCode *code, char *err, size_t errlen);
void cg_amd_free(CgAmdCode *code);
/* The first NT_AMDGPU_METADATA note's msgpack bytes in elf[0..size) (*desc points into elf), or
 * false with the reason. */
bool cg_amd_metadata_note(const uint8_t *elf, size_t size, const uint8_t **desc, uint32_t *desc_len, char *err,
			  size_t errlen);

/* The limits of one chip at one wave size. */
typedef struct {
	int major;              /* gfx generation: 8, 9, 10, 11, 12 */
	int wave;
	int max_waves;          /* waves per SIMD at most */
	int vgpr_total;         /* VGPRs per SIMD lane (with AGPRs where they are unified) */
	int vgpr_granule;       /* allocation granule */
	bool unified_agpr;      /* gfx90a, gfx94x: VGPRs and AGPRs share one file */
	int simds;              /* SIMDs sharing a work-group's LDS: 4 per CU, or per WGP on gfx10+ */
	uint32_t lds_bytes;     /* LDS per CU (per WGP on gfx10+) */
	int max_barriers;       /* work-groups of more than one wave per CU/WGP */
} CgAmdChip;

/* Limits of arch ("gfx906", "gfx90a", "gfx1100"; a target id such as "gfx90a:xnack-" works too)
 * at wave size wave (32 or 64); false for an architecture netc does not know. */
bool cg_amd_chip(const char *arch, int wave, CgAmdChip *chip);

typedef struct {
	int by_vgpr, by_sgpr, by_lds, by_wg; /* waves per SIMD each resource alone allows */
	int waves;                           /* the least of them */
	const char *limit;                   /* which one: "vgpr", "sgpr", "lds", "work-group", "max" */
} CgAmdOccupancy;

/* Occupancy of a kernel with these resources on chip, launched with wg_size work-items per
 * work-group (0: the kernel's max_flat_workgroup_size). */
CgAmdOccupancy cg_amd_occupancy(const CgAmdChip *chip, const CgAmdKernel *k, int wg_size);

#endif
