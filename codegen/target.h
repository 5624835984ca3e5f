/* target.h: a target is one struct of functions and facts, in QBE's style (amd64/targ.c).
 * codegen/target_host.c, target_amdgpu.c and target_nvptx.c each fill one CgTargetOps; the
 * driver (cg_driver.c), the GPU helpers (cg_gpu.c), bundle making and the command line ask a
 * target's ops instead of branching on its kind. Adding a target: docs/architecture.md. */
#ifndef NETC_TARGET_H
#define NETC_TARGET_H

#include <llvm-c/TargetMachine.h>

#include "codegen/link.h"
#include "codegen/targets.h"

typedef struct CgTargetOps {
	bool gpu;              /* kernels run on work-items (the GPU ABI of cg.h) */
	/* kernels take buffer arguments (cg.h); without, every buffer is arena + its offset: on
	 * NVIDIA, where a kernel's loads through arguments of their own cost it more address
	 * arithmetic than the constant offsets folded into them (docs/performance.md, 2026-12-02) */
	bool buffer_args;
	int32_t code_kind;     /* BundleCode.kind of its code object: CODE_HOST, CODE_HSACO, CODE_PTX */
	const char *code_ext;  /* its code object's file extension and --emit name: "so", "hsaco", "ptx" */
	bool code_is_text;     /* the code object is the assembly (PTX): no separate assembly */
	bool amd_options;      /* --wave32/--wave64 and --code-object-version apply to it */
	unsigned shared_addrspace; /* address space of work-group-shared arrays */
	/* The GPU GEMM template may use its 128-wide tiles of 8 x 8 register tiles (64 accumulators
	 * per work-item): NVIDIA yes (255 registers per thread, two work-groups per SM); AMD no, its
	 * tiles stay at most 64 wide (4 x 4) so that 4 waves fit a SIMD without spilling. */
	bool gemm_wide_tiles;
	/* Winograd's input and output-gradient transforms stage a work-group's windows in shared
	 * memory, and work-groups take the planes channel by channel (codegen/lower_winograd.c):
	 * NVIDIA yes (measured faster on an H100, 228 KiB of shared memory per SM); AMD no: 24 KiB a
	 * work-group leaves 2 waves per SIMD of a CU's 64 KiB of LDS, and no AMD GPU is at hand to
	 * measure whether either wins. */
	bool winograd_windows;
	LLVMRelocMode reloc;

	/* LLVM initialization: registers the target with LLVM; false if LLVM lacks it */
	bool (*init_llvm)(void);
	/* Fills t's name, triple, CPU, features and wave from its table row and the features after
	 * the colon of spec (t->arch, t->cpu, t->kind and t->ops are set already). */
	bool (*configure)(const CgTargetInfo *ti, const char *spec, const CgTargetOptions *o, CgTarget *t,
			  char *err, size_t errlen);
	/* Module-wide flags and definitions (AMD: the code-object version; the host: its bf16
	 * rounding functions); may be NULL. */
	void (*module_flags)(Cg *cg);
	/* Adds kernel function `name` with the calling convention and sets cg->fn and cg->arena. */
	void (*signature)(Cg *cg, const char *name);
	/* In the entry block: sets cg->wg_begin/wg_end where the signature does not (GPU ids); may be NULL. */
	void (*kernel_entry)(Cg *cg);
	/* Closes the kernel whose lowering returned ret: its grid and block, the branch from the entry
	 * block to body, and the kernel attributes. */
	void (*kernel_finish)(Cg *cg, CgKernel *k, int64_t ret, LLVMBasicBlockRef body);
	/* Work-item and work-group ids (i32) and the work-group barrier; NULL on the host. */
	LLVMValueRef (*workitem_id)(Cg *cg);
	LLVMValueRef (*workgroup_id)(Cg *cg);
	void (*barrier)(Cg *cg);
	/* The optimized module of one compile unit (codegen/cg_compile.c) as code: an object, or the
	 * code object's text (PTX). */
	bool (*emit_unit)(LLVMTargetMachineRef tm, LLVMModuleRef mod, CgBlob *code, char *err, size_t errlen);
	/* The units' code, in kernel order, joined into the code object in out->code. */
	bool (*join)(const CgBlob *units, int n, CgOutput *out, char *err, size_t errlen);
	/* The function attribute by which a kernel asks for an occupancy (cg_gpu_waves), and the
	 * scratch bytes per work-item of one unit's code summed over its kernels: a unit that asked
	 * and spilled is compiled again without asking (codegen/cg_driver.c). NULL: none. */
	const char *occupancy_attr;
	int64_t (*scratch_bytes)(const CgBlob *code);
} CgTargetOps;

extern const CgTargetOps cg_target_host_ops;   /* codegen/target_host.c */
extern const CgTargetOps cg_target_amdgpu_ops; /* codegen/target_amdgpu.c */
extern const CgTargetOps cg_target_nvptx_ops;  /* codegen/target_nvptx.c */

/* ---- shared by the target files ---- */
/* codegen/cg_object.c: the module's code in one form (object or assembly) in a malloc'd buffer
 * with a NUL after its *size bytes. */
bool cg_emit_file(LLVMTargetMachineRef tm, LLVMModuleRef mod, LLVMCodeGenFileType type, uint8_t **data,
		  size_t *size, char *err, size_t errlen);
/* The module as an object (emit_unit of the targets that link). */
bool cg_emit_object(LLVMTargetMachineRef tm, LLVMModuleRef mod, CgBlob *code, char *err, size_t errlen);
/* The assembly of a copy of the module (code generation changes the module it runs on). */
bool cg_emit_assembly(LLVMTargetMachineRef tm, LLVMModuleRef mod, char **text, char *err, size_t errlen);
/* codegen/cg_build.c: a string function attribute on cg->fn; an enum attribute. */
void cg_fn_attr(Cg *cg, const char *key, const char *value);
void cg_enum_attr(Cg *cg, LLVMValueRef fn, unsigned index, const char *name);
/* Whether a function of mod has the string attribute key; removes it from every function; sets
 * it to value on every function that mod defines. */
bool cg_module_has_fn_attr(LLVMModuleRef mod, const char *key);
void cg_module_drop_fn_attr(LLVMModuleRef mod, const char *key);
void cg_module_set_fn_attr(LLVMModuleRef mod, const char *key, const char *value);
/* The kernel's buffer arguments (cg.h) are its parameters first..first + CG_BUFFER_ARGS - 1:
 * named b0..b15, noalias, nocapture, noundef and, when align > 0, aligned to it; its size
 * arguments s0..s3 follow them. */
void cg_buffer_params(Cg *cg, unsigned first, unsigned align);
/* codegen/cg_gpu.c: the GPU kernel signature (ptr addrspace(1) arena) with calling convention cc;
 * wg_begin/wg_end from the ids; a lowering's grid and block, closing the entry block; a call of a
 * target intrinsic that is not overloaded. */
void cg_gpu_signature(Cg *cg, const char *name, LLVMCallConv cc);
void cg_gpu_kernel_entry(Cg *cg);
void cg_gpu_launch(Cg *cg, CgKernel *k, int64_t ret, LLVMBasicBlockRef body);
LLVMValueRef cg_call_intrinsic0(Cg *cg, const char *name);
/* codegen/target_spec.c: where name[0..len) is one of the comma-separated words of list (NULL:
 * it is not), and whether it is; whether a --wave value is 0 (the default), 32 or 64. */
const char *cg_target_find_in_list(const char *list, const char *name, size_t len);
bool cg_target_in_list(const char *list, const char *name, size_t len);
bool cg_target_check_wave(int wave, char *err, size_t errlen);
/* codegen/targets.c: the LLVM target machine of t (its ops register the LLVM target), or NULL
 * with err set. */
LLVMTargetMachineRef cg_target_machine(const CgTarget *t, char *err, size_t errlen);

#endif
