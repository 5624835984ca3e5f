/* cg_unit.h: a compile unit, the kernels of one fused group (a lowering may make several,
 * cg_kernel_next) in an LLVM module and context of their own, so that units compile on separate
 * threads and are cached one by one (codegen/cg_compile.c). Defined in codegen/cg_driver.c. */
#ifndef NETC_CG_UNIT_H
#define NETC_CG_UNIT_H

#include "codegen/kernel_cache.h"
#include "codegen/link.h"
#include "codegen/sha256.h"
#include "codegen/target.h"

typedef struct CgUnit CgUnit;

typedef struct {
	KernelCache *cache;  /* NULL: compile and store nothing */
	bool want_ir;        /* keep the optimized IR and the assembly */
	bool keep_o3;        /* keep the optimized module for class mates (CgUnit.o3) */
	const CgUnit *o3_from; /* a class mate's unit, optimized already: its module is taken where
	                        * the IR is the same (codegen/o3_share.h); NULL: none */
} CgUnitJob;

struct CgUnit {
	CgKernel *kernels;   /* in emission order */
	int nkernels;
	uint8_t key[32];     /* the cache key, when keyed */
	uint8_t shape[32];   /* its IR but for names, when keyed (codegen/kernel_share.h) */
	bool keyed;
	int copy_of;         /* the unit of the same shape whose kernels it launches, -1: none */
	CgBlob code;         /* the target's emit_unit */
	char *ir, *assembly; /* when want_ir */
	bool cached;         /* the code came from the cache */
	double lower_s, optimize_s, emit_s; /* building the IR (and hashing it), O3, code generation */
	CgSpan prepared, compiled; /* when and where (cg_compile.c fills them; phase NULL: not run) */
	/* with CgUnitJob.keep_o3: the IR's shape and the optimized module as bitcode (NULL when it
	 * was not compiled here) */
	uint8_t o3_shape[32];
	uint8_t *o3;
	size_t o3_size;
	bool o3_shared;      /* its O3 was a class mate's */
	bool unbudgeted;     /* compiled again without its kernels' occupancy request, which spilled */
};

/* Lowers group leader's unit (leader -1: an empty module, for a graph with no kernel) for t with
 * target machine tm, which only this thread uses, and records its kernels, its cache key (the
 * target's part target_key and the unit's IR) and its shape. Nothing is compiled. */
void cg_unit_prepare(const Graph *g, const CgTarget *t, LLVMTargetMachineRef tm, int leader, const Sha256 *target_key,
		     CgUnit *u);
/* The unit's code: from the cache when it was prepared (keyed), else lowered (again), optimized
 * and compiled, and stored in the cache when keyed. u starts zeroed or prepared. */
bool cg_unit_compile(const Graph *g, const CgTarget *t, LLVMTargetMachineRef tm, int leader, const CgUnitJob *job,
		     CgUnit *u, char *err, size_t errlen);
void cg_unit_free(CgUnit *u);

#endif
