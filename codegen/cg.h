/* cg.h: lowering graph nodes to kernels in LLVM IR, and compiling them for a target.
 *
 * Kernel ABI on the host:
 *     void k<ID>_<op>(ptr arena, i64 wg_begin, i64 wg_end, ptr b0, ..., ptr b15, i64 s0, ..., i64 s3)
 * The kernel computes work-groups [wg_begin, wg_end) of its grid. The runtime splits a kernel's
 * grid across its threads; inside a work-group LLVM vectorizes the inner loops.
 *
 * Kernel ABI on GPUs (AMDGPU; NVPTX kernels take the arena alone, CgTargetOps.buffer_args):
 *     kernel void k<ID>_<op>(ptr addrspace(1) arena, ptr addrspace(1) b0, ..., b15, i64 s0, ..., s3)
 * launched over `grid` work-groups of `block` work-items (1-D). A lowering written for GPUs sets
 * cg->gpu_native and cg->block and uses the work-item/work-group ids itself. Any other lowering
 * runs unchanged: the driver gives each work-item one of the lowering's work-groups
 * (wg_begin = global id, wg_end = wg_begin + 1, and a guard against ids past the grid).
 *
 * Every buffer is at a fixed byte offset in the one arena (Node.offset, from plan-memory);
 * assign nodes write their target's storage. A kernel reaches its buffers through its buffer
 * arguments b0..b15 (cg_ptr): one `noalias` pointer per distinct arena offset it uses, in order of
 * first use, which the launch passes as arena + CgKernel.args[i]. So kernels that differ only in
 * where their buffers are have the same IR and are compiled once (codegen/kernel_share.h). A
 * kernel whose buffers overlap at different offsets, or that uses more than 16, and every kernel
 * of a target without buffer arguments, addresses each buffer as arena + its constant offset
 * instead (nargs 0).
 *
 * Likewise a lowering may take a size (an element count) as a size argument s0..s3 (cg_size),
 * which the launch passes as CgKernel.sizes[i], so that kernels which differ only in how many
 * elements they cover are compiled once too; on a target without buffer arguments, and for a
 * unit lowered with every buffer at its offset, sizes are constants. */
#ifndef NETC_CG_H
#define NETC_CG_H

#include <llvm-c/Core.h>

#include "codegen/matrix_caps.h"
#include "codegen/tuning.h"
#include "ir/ir.h"
#include "runtime/bundle.h"

/* Which family of targets: only the target table (codegen/targets.c) and the target files
 * (codegen/target_*.c) compare it; everything else asks the target's ops (codegen/target.h). */
typedef enum { CG_HOST, CG_AMDGPU, CG_NVPTX } CgTargetKind;

struct CgTargetOps;

typedef struct {
	char name[32];     /* canonical, as bundles record it: "host", "gfx906", "gfx90a:xnack-", "sm_90" */
	char arch[32];     /* what a device reports: "host", "gfx90a", "sm_90" */
	CgTargetKind kind;
	const struct CgTargetOps *ops; /* how code for it is made (codegen/target.h) */
	unsigned matrix;   /* CgMatrixCaps bits */
	/* LDS (shared memory) of one work-group: what a kernel may declare statically, and the most
	 * it may use (NVIDIA: beyond lds_static as dynamic shared memory the launch asks for) */
	int lds_static, lds_max;
	char triple[64];
	char cpu[64];      /* LLVM CPU name: host CPU, gfxNNN, sm_NN */
	char features[1024];
	int simd_f32;      /* host: f32 lanes in one vector register (16 AVX-512, 8 AVX2, 4 else) */
	int wave;          /* wavefront/warp size: 32 or 64 on AMD, 32 on NVIDIA, 0 on the host */
	int code_object_version; /* AMD: 4, 5 or 6 */
	const char *o3_class; /* targets that share O3 (codegen/o3_share.h); NULL: none */
	const char *isa_class; /* targets that share machine code (codegen/isa_twins.h); NULL: none */
	bool flush_f32_denormals; /* code generation flushes float32 denormals (CgTargetInfo's) */
	bool packed_half;  /* half GEMMs without a matrix unit may sum a k-block in the half type on
			      packed FMAs (--packed-half; codegen/gemm_gpu.h, GPU_HALF_PACKED) */
} CgTarget;

/* Buffer arguments every kernel takes after its ABI's own, and size arguments after those (the
 * file comment). */
#define CG_BUFFER_ARGS 16
#define CG_SIZE_ARGS 4
/* Tensor maps one kernel may read (a GEMM's two operands: codegen/gemm_gpu.c, "tensor maps") */
#define CG_TENSOR_MAPS 2

typedef struct {
	char name[64];     /* k<ID>_<op> */
	char symbol[64];   /* the code it launches: its own (name), or that of the kernel of the same IR
	                    * (codegen/kernel_share.h) */
	int node;
	int64_t grid;      /* number of work-groups */
	int block;         /* work-items per work-group: 1 on the host */
	int shared;        /* dynamic shared memory bytes each work-group's launch asks for (NVIDIA) */
	CgTileNote tiles;  /* a GEMM's tiles and why it took them (source CG_TILES_NONE: no GEMM) */
	int nargs;         /* buffer arguments used: b<i> is arena + args[i] (later ones: the arena) */
	int64_t args[CG_BUFFER_ARGS];
	int64_t sizes[CG_SIZE_ARGS]; /* s<i>; 0 where unused */
	/* the tensor maps it reads (NVIDIA), each in its slot past the plan's arena
	 * (cg_tensor_map_slot), which the bundle grows the arena by */
	BundleTensorMap tmaps[CG_TENSOR_MAPS];
	int ntmaps;
} CgKernel;

/* Where one target's compile went (--time-passes). The per-unit times are summed over the units,
 * which run on several threads: they add up to more than the wall time. */
typedef struct {
	int units, cached;                  /* compile units, and those the kernel cache had */
	int copies;                         /* units that launch another's kernels, compiling nothing
	                                     * (codegen/kernel_share.h) */
	int o3_shared;                      /* units that took a class mate's O3 (codegen/o3_share.h) */
	int unbudgeted;                     /* units compiled again without their occupancy request,
	                                     * under which they spilled (codegen/cg_driver.c) */
	char twin_of[32];                   /* the target whose code object it took, renamed
	                                     * (codegen/isa_twins.h); "": its own */
	double lower_s, optimize_s, emit_s; /* building (and hashing) the IR, O3, code generation */
	double join_s;                      /* linking the units' code into the code object */
} CgCompileTimes;

/* Where and when one piece of a compile ran (a trace's slice): times in seconds on the monotonic
 * clock (runtime/clock.h), thread the worker's index from 0. */
typedef struct {
	char name[64];     /* the unit's first kernel, "link TARGET" or "twin of TARGET" */
	const char *phase; /* "lower+hash", "compile", "cache", "link", "twin" */
	int thread;
	double begin, end;
} CgSpan;

typedef struct {
	uint8_t *code;     /* the loadable code object (host: a shared object) */
	size_t size;
	CgKernel *kernels; /* one per node that owns a kernel, in node order */
	int nkernels;
	char *ir;          /* optimized LLVM IR as text, when asked for */
	char *assembly;    /* the target's assembly (PTX is the code itself), when asked for */
	CgCompileTimes times;
	CgSpan *spans;     /* what the compile of this target did, when and on which thread */
	int nspans;
} CgOutput;

typedef struct Cg {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	const Graph *g;
	const CgTarget *target;
	LLVMTypeRef t_void, t_i1, t_i8, t_i32, t_i64, t_f16, t_bf16, t_f32, t_f64, t_ptr;
	/* the kernel being emitted */
	LLVMValueRef fn, arena, wg_begin, wg_end;
	LLVMValueRef buffer_arg[CG_BUFFER_ARGS]; /* its b0..b15 (the target's signature sets them) */
	LLVMValueRef size_arg[CG_SIZE_ARGS];     /* its s0..s3 (likewise) */
	struct {
		int n;             /* buffer arguments bound */
		int64_t begin[CG_BUFFER_ARGS], end[CG_BUFFER_ARGS]; /* their arena byte ranges */
	} buffers;
	struct {
		int n;             /* size arguments bound */
		int64_t value[CG_SIZE_ARGS];
	} sizes;
	bool buffers_clash;  /* a buffer could not have an argument of its own: the unit is lowered
	                      * again with arena_only */
	bool arena_only;     /* every buffer as arena + its offset (no buffer arguments) */
	LLVMBasicBlockRef entry; /* allocas go here (cg_local) */
	bool gpu_native;   /* GPU lowerings set it: they use work-item ids themselves */
	int block;         /* GPU lowerings set it: work-items per work-group */
	int waves;         /* GPU lowerings may set it: waves to keep resident per SIMD (NVIDIA: warps per SM
			      sub-partition), so the register allocator leaves room for them (0: any) */
	int dyn_shared;    /* the kernel's dynamic shared memory bytes (cg_shared_array), 0: none */
	BundleTensorMap tmaps[CG_TENSOR_MAPS]; /* the kernel's tensor maps (CgKernel.tmaps) */
	int ntmaps;
	struct CgEmission *emit; /* the fused group and kernels being emitted (codegen/cg_emission.h) */
	char llvm_error[256]; /* the first error LLVM diagnosed in the unit's context, "" none */
} Cg;

/* A lowering emits node n's kernel body into cg->fn (builder positioned in its body, after the
 * entry block) for work-groups [cg->wg_begin, cg->wg_end) and returns the grid size. The driver
 * adds the return. Each op's lowering is named in ir/ops.def. */
typedef int64_t (*LowerFn)(Cg *cg, const Node *n);

/* ---- targets (codegen/targets.c, codegen/target_*.c) ---- */
bool cg_target_host(CgTarget *t); /* codegen/target_host.c */
typedef struct {
	int wave;                /* 0: the chip's default; 32 or 64 */
	int code_object_version; /* 0: 5 */
	bool no_matrix_units;    /* --no-matrix-units: CgTarget.matrix without CG_MATRIX_UNITS */
	bool packed_half;        /* --packed-half: CgTarget.packed_half */
} CgTargetOptions;
/* One target by name or alias ("gfx1030", "rx6800", "gfx90a:xnack-", "sm_90", "host"); an error
 * names the unknown target and says `netc targets` lists them. */
bool cg_target_lookup(const char *spec, const CgTargetOptions *o, CgTarget *t, char *err, size_t errlen);
/* Prints every target and alias with its wave size and what is known of it (`netc targets`). */
void cg_targets_print(FILE *out);

/* ---- compiling (codegen/cg_compile.c, codegen/cg_driver.c) ---- */
struct KernelCache;
typedef struct {
	int jobs;                  /* threads; 0: one per online core */
	struct KernelCache *cache; /* codegen/kernel_cache.h; NULL: none */
	bool want_ir;              /* keep the optimized IR and the assembly (bypasses the cache) */
	/* called after each compile unit with the units done and all of them, one call at a time;
	 * NULL: none */
	void (*progress)(void *ctx, int done, int total);
	void *progress_ctx;
} CgCompileOptions;
/* Compiles the graph's kernels for targets[0..n) into outs[0..n): each fused group's kernels
 * are one compile unit, lowered into a module of its own, optimized with the O3 pipeline and
 * compiled (or found in the cache) on o->jobs threads, then every target's units are joined
 * (ld.lld, or PTX text) into its code object. The code objects do not depend on the number of
 * threads or on the cache. An error names the target. */
bool cg_compile_targets(const Graph *g, const CgTarget *targets, int n, const CgCompileOptions *o, CgOutput *outs,
			char *err, size_t errlen);
/* One target, on this thread, without the cache; want_ir keeps the IR and assembly. */
bool cg_compile(const Graph *g, const CgTarget *t, bool want_ir, CgOutput *out, char *err, size_t errlen);
void cg_output_free(CgOutput *out);
/* Whether the node owns a kernel (its op has a lowering and it runs in a program). */
bool cg_has_kernel(const Node *n);

/* ---- helpers for lowerings (codegen/cg_build.c; cg_ptr, cg_load, cg_store: codegen/cg_group.c) ---- */
LLVMValueRef cg_i32(Cg *cg, int64_t v);
LLVMValueRef cg_i64(Cg *cg, int64_t v);
LLVMValueRef cg_real(Cg *cg, LLVMTypeRef t, double v);
LLVMTypeRef cg_storage_type(Cg *cg, DType t);  /* how the element is stored: half, bfloat, float... */
LLVMTypeRef cg_compute_type(Cg *cg, DType t);  /* what arithmetic uses: f32 for f16/bf16/f32 */
/* Pointer to element index (i64) of node id's buffer. */
LLVMValueRef cg_ptr(Cg *cg, int id, LLVMValueRef index);
/* Float32 element index (i64) of node owner's workspace (Node.ws_offset: the partial sums of
 * split-K GEMMs and split column sums). */
LLVMValueRef cg_ws_ptr(Cg *cg, const Node *owner, LLVMValueRef index);
/* The i64 size v (an element count, not an offset or a stride that index arithmetic would fold):
 * its size argument where the kernel can take one (cg.h), else the constant. A lowering uses it
 * where the size is all that tells two kernels apart. */
LLVMValueRef cg_size(Cg *cg, int64_t v);
/* Element of node id at linear index, in its compute type; a const node yields its constant. */
LLVMValueRef cg_load(Cg *cg, int id, LLVMValueRef index);
void cg_store(Cg *cg, int id, LLVMValueRef index, LLVMValueRef value);
/* A local variable (alloca in the entry block; SROA turns it into registers). */
LLVMValueRef cg_local(Cg *cg, LLVMTypeRef t, const char *name);
/* Calls llvm.<name> overloaded on type t (e.g. "exp", "fma", "maxnum", "sqrt"). */
LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef t, LLVMValueRef *args, int nargs);
/* Calls the intrinsic of that full name, which is not overloaded ("llvm.nvvm.f2tf32.rna"). */
LLVMValueRef cg_intrinsic_call(Cg *cg, const char *name, LLVMValueRef *args, int nargs);
/* The same for an intrinsic overloaded on types[0..ntypes) (AMD's WMMA: on its result and A). */
LLVMValueRef cg_intrinsic_call_overloaded(Cg *cg, const char *name, LLVMTypeRef *types, int ntypes,
					  LLVMValueRef *args, int nargs);

/* for (i = lo; i < hi; i++): cg_for_begin leaves the builder in the body, cg_for_end closes the
 * loop and leaves the builder after it. */
typedef struct {
	LLVMValueRef i;
	LLVMBasicBlockRef cond, body, exit;
	LLVMValueRef hi;
	LLVMValueRef var;
	LLVMValueRef back; /* the latch's branch back to cond (after cg_for_end) */
} CgLoop;
CgLoop cg_for_begin(Cg *cg, LLVMValueRef lo, LLVMValueRef hi, const char *name);
void cg_for_end(Cg *cg, CgLoop *loop);

/* ---- GPU helpers (codegen/cg_gpu.c) ---- */
bool cg_is_gpu(const Cg *cg);
LLVMValueRef cg_workitem_id(Cg *cg);  /* i32, within the work-group */
LLVMValueRef cg_workgroup_id(Cg *cg); /* i32 */
/* Work-group barrier that also orders LDS (shared memory) accesses. */
void cg_barrier(Cg *cg);
/* A work-group-shared array (LDS on AMD, shared memory on NVIDIA): a pointer in addrspace 3. */
LLVMValueRef cg_shared_array(Cg *cg, LLVMTypeRef elem, int64_t count, const char *name);

/* ---- lowerings named in ir/ops.def ---- */
int64_t cg_lower_elemwise(Cg *cg, const Node *n);            /* codegen/lower_elemwise.c */
int64_t cg_lower_reduce(Cg *cg, const Node *n);              /* codegen/lower_reduce.c */
int64_t cg_lower_softmax(Cg *cg, const Node *n);             /* codegen/lower_reduce.c */
int64_t cg_lower_loss(Cg *cg, const Node *n);                /* codegen/lower_reduce.c */
int64_t cg_lower_conv2d(Cg *cg, const Node *n);              /* codegen/lower_conv.c */
int64_t cg_lower_conv2d_grad_input(Cg *cg, const Node *n);   /* codegen/lower_conv.c */
int64_t cg_lower_conv2d_grad_weight(Cg *cg, const Node *n);  /* codegen/lower_conv.c */
int64_t cg_lower_matmul(Cg *cg, const Node *n);              /* codegen/lower_conv.c */
int64_t cg_lower_winograd_gemm(Cg *cg, const Node *n);       /* codegen/lower_conv.c */
int64_t cg_lower_winograd_input(Cg *cg, const Node *n);      /* codegen/lower_winograd.c */
int64_t cg_lower_winograd_output(Cg *cg, const Node *n);     /* codegen/lower_winograd.c */
int64_t cg_lower_winograd_output_grad(Cg *cg, const Node *n); /* codegen/lower_winograd.c */
int64_t cg_lower_winograd_weight_gemm(Cg *cg, const Node *n); /* codegen/lower_conv.c */
int64_t cg_lower_max_pool2d(Cg *cg, const Node *n);          /* codegen/lower_pool.c */
int64_t cg_lower_max_pool2d_argmax(Cg *cg, const Node *n);   /* codegen/lower_pool.c */
int64_t cg_lower_avg_pool2d(Cg *cg, const Node *n);          /* codegen/lower_pool.c */
int64_t cg_lower_max_pool2d_grad(Cg *cg, const Node *n);     /* codegen/lower_pool.c */
int64_t cg_lower_max_pool2d_tiled_grad(Cg *cg, const Node *n); /* codegen/lower_pool.c */
int64_t cg_lower_avg_pool2d_grad(Cg *cg, const Node *n);     /* codegen/lower_pool.c */

#endif
