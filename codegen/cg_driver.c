/* cg_driver.c: one compile unit (codegen/cg_unit.h): its fused group's kernels (opened, lowered
 * by the template's lowering, closed) in a module of their own, the kernel cache looked up by the
 * module's IR, else the O3 pipeline and the target's code. What differs by target is its ops
 * (codegen/target.h); codegen/cg_compile.c runs the units and joins their code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/cg_emission.h"
#include "codegen/cg_unit.h"
#include "codegen/cg_util.h"
#include "codegen/kernel_share.h"
#include "codegen/lower_table.h"
#include "codegen/o3_share.h"
#include "ir/ops.h"
#include "runtime/clock.h"

bool cg_has_kernel(const Node *n)
{
	return (unsigned)n->op < OP_COUNT && cg_lowerings[n->op] && n->programs != 0 &&
	       (n->group < 0 || n->group == n->id);
}

/* netc keeps IEEE semantics but lets LLVM fuse multiply-adds anywhere. */
static void allow_contract(LLVMValueRef fn)
{
	for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
		for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
			if (LLVMCanValueUseFastMathFlags(i))
				LLVMSetFastMathFlags(i, LLVMGetFastMathFlags(i) | LLVMFastMathAllowContract);
}

/* Appends a CgKernel for node and returns its index. */
static int kernel_add(Cg *cg, int node, const char *name)
{
	KernelState *kst = &cg->emit->kernels;
	CgOutput *out = kst->out;
	if (out->nkernels == kst->cap) {
		kst->cap = kst->cap ? 2 * kst->cap : 64;
		out->kernels = realloc(out->kernels, (size_t)kst->cap * sizeof *out->kernels);
		if (!out->kernels)
			CG_FAIL("out of memory");
	}
	CgKernel *k = &out->kernels[out->nkernels];
	memset(k, 0, sizeof *k);
	snprintf(k->name, sizeof k->name, "%s", name);
	snprintf(k->symbol, sizeof k->symbol, "%s", name);
	k->node = node;
	return out->nkernels++;
}

/* Adds kernel function `name` for node, positions the builder in its body and resets what the
 * previous kernel's lowering set. */
static void kernel_open(Cg *cg, int node, const char *name)
{
	KernelState *kst = &cg->emit->kernels;
	int index = kernel_add(cg, node, name);
	const CgKernel *k = &kst->out->kernels[index];
	const CgTargetOps *ops = cg->target->ops;
	cg->gpu_native = false;
	cg->waves = 0;
	cg->block = 0;
	cg->dyn_shared = 0;
	cg->ntmaps = 0;
	cg->buffers.n = 0;
	cg->sizes.n = 0;
	ops->signature(cg, k->name);
	LLVMSetValueName2(cg->arena, "arena", 5);
	cg_enum_attr(cg, cg->fn, LLVMAttributeFunctionIndex, "nounwind");
	cg_fn_attr(cg, "target-cpu", cg->target->cpu);
	cg_fn_attr(cg, "target-features", cg->target->features);
	cg->entry = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "entry");
	if (ops->kernel_entry)
		ops->kernel_entry(cg);
	kst->body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "body");
	LLVMPositionBuilderAtEnd(cg->b, kst->body);
}

/* Closes the kernel being emitted (the last one added), whose lowering returned grid ret. */
static void kernel_close(Cg *cg, int64_t ret)
{
	KernelState *kst = &cg->emit->kernels;
	CgKernel *k = &kst->out->kernels[kst->out->nkernels - 1];
	if (ret < 1)
		CG_FAIL("lowering of %s gave grid %lld", k->name, (long long)ret);
	LLVMBuildRetVoid(cg->b);
	k->nargs = cg->arena_only ? 0 : cg->buffers.n;
	memcpy(k->args, cg->buffers.begin, (size_t)k->nargs * sizeof *k->args);
	memcpy(k->sizes, cg->sizes.value, (size_t)cg->sizes.n * sizeof *k->sizes);
	k->ntmaps = cg->ntmaps;
	memcpy(k->tmaps, cg->tmaps, (size_t)cg->ntmaps * sizeof *k->tmaps);
	cg->target->ops->kernel_finish(cg, k, ret, kst->body);
	allow_contract(cg->fn);
}

int64_t cg_tensor_map_slot(const Cg *cg, int which)
{
	const KernelState *kst = &cg->emit->kernels;
	int64_t node = kst->out->kernels[kst->out->nkernels - 1].node;
	int64_t base = (cg->g->arena_bytes + BUNDLE_TMAP_BYTES - 1) / BUNDLE_TMAP_BYTES * BUNDLE_TMAP_BYTES;
	return base + (node * CG_TENSOR_MAPS + which) * BUNDLE_TMAP_BYTES;
}

void cg_tensor_map_add(Cg *cg, const BundleTensorMap *m)
{
	if (cg->ntmaps == CG_TENSOR_MAPS)
		CG_FAIL("more than %d tensor maps in one kernel", CG_TENSOR_MAPS);
	cg->tmaps[cg->ntmaps++] = *m;
}

void cg_kernel_next(Cg *cg, int64_t grid, const char *suffix)
{
	if (!cg->emit || !cg->emit->kernels.out || cg->emit->group.leader < 0)
		CG_FAIL("cg_kernel_next outside a lowering");
	KernelState *kst = &cg->emit->kernels;
	kernel_close(cg, grid);
	char name[64];
	if (snprintf(name, sizeof name, "%s_%s", kst->base, suffix) >= (int)sizeof name)
		CG_FAIL("kernel name %s_%s too long", kst->base, suffix);
	kernel_open(cg, cg->emit->group.leader, name);
}

static void emit_kernel(Cg *cg, const Node *n)
{
	KernelState *kst = &cg->emit->kernels;
	snprintf(kst->base, sizeof kst->base, "k%d_%s", n->id, ir_ops[n->op].name);
	kernel_open(cg, n->id, kst->base);
	const Node *tmpl = cg_group_template(cg->g, n->id);
	if (!cg_lowerings[tmpl->op])
		CG_FAIL("group %s has no lowering for %s", kst->base, ir_ops[tmpl->op].name);
	cg_group_begin(cg, n->id);
	int64_t ret = cg_lowerings[tmpl->op](cg, tmpl);
	cg_group_end(cg);
	kernel_close(cg, ret);
}

/* LLVM's diagnostics in the unit's context: its first error fails the unit (optimize_and_emit);
 * warnings, remarks and notes are not the user's to act on (an AMD kernel's "failed to meet
 * occupancy target" among them: netc info reports each kernel's waves). Without a handler LLVM
 * printed them all, and exited on an error. */
static void diagnostic(LLVMDiagnosticInfoRef info, void *ctx)
{
	Cg *cg = ctx;
	if (LLVMGetDiagInfoSeverity(info) != LLVMDSError || cg->llvm_error[0])
		return;
	char *msg = LLVMGetDiagInfoDescription(info);
	snprintf(cg->llvm_error, sizeof cg->llvm_error, "%s", msg && msg[0] ? msg : "?");
	LLVMDisposeMessage(msg);
}

static void cg_init(Cg *cg, const Graph *g, const CgTarget *t, LLVMTargetMachineRef tm)
{
	memset(cg, 0, sizeof *cg);
	cg->g = g;
	cg->target = t;
	cg->ctx = LLVMContextCreate();
	LLVMContextSetDiagnosticHandler(cg->ctx, diagnostic, cg);
	cg->mod = LLVMModuleCreateWithNameInContext(g->name[0] ? g->name : "netc", cg->ctx);
	LLVMSetTarget(cg->mod, t->triple);
	LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(cg->mod, dl);
	LLVMDisposeTargetData(dl);
	cg->b = LLVMCreateBuilderInContext(cg->ctx);
	cg->t_void = LLVMVoidTypeInContext(cg->ctx);
	cg->t_i1 = LLVMInt1TypeInContext(cg->ctx);
	cg->t_i8 = LLVMInt8TypeInContext(cg->ctx);
	cg->t_i32 = LLVMInt32TypeInContext(cg->ctx);
	cg->t_i64 = LLVMInt64TypeInContext(cg->ctx);
	cg->t_f16 = LLVMHalfTypeInContext(cg->ctx);
	cg->t_bf16 = LLVMBFloatTypeInContext(cg->ctx);
	cg->t_f32 = LLVMFloatTypeInContext(cg->ctx);
	cg->t_f64 = LLVMDoubleTypeInContext(cg->ctx);
	cg->t_ptr = LLVMPointerTypeInContext(cg->ctx, 0);
	cg->arena_only = !t->ops->buffer_args;
	if (t->ops->module_flags)
		t->ops->module_flags(cg);
}

static void cg_dispose(Cg *cg)
{
	LLVMDisposeBuilder(cg->b);
	LLVMDisposeModule(cg->mod);
	LLVMContextDispose(cg->ctx);
}

static bool optimize(Cg *cg, LLVMTargetMachineRef tm, char *err, size_t errlen)
{
	char *msg = NULL;
	if (LLVMVerifyModule(cg->mod, LLVMReturnStatusAction, &msg)) {
		snprintf(err, errlen, "internal error: invalid LLVM IR: %s", msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return false;
	}
	LLVMDisposeMessage(msg);
	LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
	LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
	LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
	LLVMPassBuilderOptionsSetLoopInterleaving(opts, 1);
	LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
	LLVMErrorRef e = LLVMRunPasses(cg->mod, "default<O3>", tm, opts);
	LLVMDisposePassBuilderOptions(opts);
	if (e) {
		char *m = LLVMGetErrorMessage(e);
		snprintf(err, errlen, "internal error: LLVM passes failed: %s", m);
		LLVMDisposeErrorMessage(m);
		return false;
	}
	return true;
}
/* The unit's kernels into u: leader's group, or none. */
static void emit_unit(Cg *cg, int leader, CgUnit *u)
{
	CgOutput out = {0};
	struct CgEmission emit = {.group = {.leader = -1}, .kernels = {.out = &out}};
	cg->emit = &emit;
	if (leader >= 0)
		emit_kernel(cg, &cg->g->node[leader]);
	cg->emit = NULL;
	free(u->kernels);
	u->kernels = out.kernels;
	u->nkernels = out.nkernels;
}

/* cg made and holding the unit's kernels (the caller disposes it): with buffer arguments, or,
 * where a buffer could not have one of its own, lowered again with every buffer at its offset. */
static void lower_unit(Cg *cg, const Graph *g, const CgTarget *t, LLVMTargetMachineRef tm, int leader, CgUnit *u)
{
	cg_init(cg, g, t, tm);
	emit_unit(cg, leader, u);
	if (!cg->buffers_clash)
		return;
	cg_dispose(cg);
	cg_init(cg, g, t, tm);
	cg->arena_only = true;
	emit_unit(cg, leader, u);
}

/* O3, or a class mate's O3 (codegen/o3_share.h); the optimized module kept for mates when asked. */
static bool optimize_unit(Cg *cg, LLVMTargetMachineRef tm, const CgUnitJob *job, CgUnit *u, char *err, size_t errlen)
{
	uint8_t shape[32];
	if (job->keep_o3 || (job->o3_from && job->o3_from->o3))
		cg_o3_shape(cg->mod, shape);
	if (job->o3_from && job->o3_from->o3 && memcmp(shape, job->o3_from->o3_shape, 32) == 0) {
		LLVMModuleRef m = cg_o3_adopt(cg->mod, job->o3_from->o3, job->o3_from->o3_size, err, errlen);
		if (!m)
			return false;
		LLVMDisposeModule(cg->mod);
		cg->mod = m;
		u->o3_shared = true;
		return true;
	}
	if (!optimize(cg, tm, err, errlen))
		return false;
	if (!cg->target->o3_class)
		return true;
	/* A class's code comes from its optimized module read back from bitcode, shared or not: so
	 * a mate's code is the same whether it took the module or optimized its own (reading back
	 * orders the values' uses as the bitcode lists them, which code generation can see). */
	uint8_t *bc;
	size_t size;
	if (!cg_o3_save(cg->mod, &bc, &size)) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	LLVMModuleRef m = cg_o3_adopt(cg->mod, bc, size, err, errlen);
	if (m) {
		LLVMDisposeModule(cg->mod);
		cg->mod = m;
	}
	if (m && job->keep_o3) {
		memcpy(u->o3_shape, shape, 32);
		u->o3 = bc;
		u->o3_size = size;
	} else
		free(bc);
	return m != NULL;
}

/* The optimized module mod as the target's code into u, with the text forms where asked for. */
static bool emit_forms(const CgTargetOps *ops, LLVMTargetMachineRef tm, LLVMModuleRef mod, bool want_ir, CgUnit *u,
		       char *err, size_t errlen)
{
	bool ok = true;
	if (want_ir) {
		char *ir = LLVMPrintModuleToString(mod);
		u->ir = strdup(ir);
		LLVMDisposeMessage(ir);
		/* where the code object is the assembly (PTX), it is emitted once */
		if (!ops->code_is_text)
			ok = cg_emit_assembly(tm, mod, &u->assembly, err, errlen);
	}
	ok = ok && ops->emit_unit(tm, mod, &u->code, err, errlen);
	if (ok && want_ir && ops->code_is_text)
		u->assembly = strndup((const char *)u->code.data, u->code.size);
	return ok;
}

static void swap_forms(CgUnit *a, CgUnit *b)
{
	CgBlob code = a->code;
	char *ir = a->ir, *assembly = a->assembly;
	a->code = b->code, a->ir = b->ir, a->assembly = b->assembly;
	b->code = code, b->ir = ir, b->assembly = assembly;
}

/* The unit's code. Kernels that ask for an occupancy (cg_gpu_waves: AMD's GEMM tiles, 4 waves
 * per SIMD) give the register allocator a budget, which some tiles overrun: a unit whose code
 * then spills is compiled again from its optimized module without the request, and the code
 * with less scratch is kept (the spills' scratch traffic on every k-block costs more than the
 * waves the backend's own register count loses). Code generation changes the module it runs
 * on, so the second try starts from a copy taken before the first. */
static bool emit_code(Cg *cg, LLVMTargetMachineRef tm, bool want_ir, CgUnit *u, char *err, size_t errlen)
{
	const CgTargetOps *ops = cg->target->ops;
	LLVMModuleRef spare = ops->occupancy_attr && cg_module_has_fn_attr(cg->mod, ops->occupancy_attr)
				      ? LLVMCloneModule(cg->mod) : NULL;
	bool ok = emit_forms(ops, tm, cg->mod, want_ir, u, err, errlen);
	int64_t scratch = ok && spare ? ops->scratch_bytes(&u->code) : 0;
	if (scratch > 0) {
		CgUnit again = {0};
		cg_module_drop_fn_attr(spare, ops->occupancy_attr);
		ok = emit_forms(ops, tm, spare, want_ir, &again, err, errlen);
		if (ok && ops->scratch_bytes(&again.code) < scratch) {
			swap_forms(u, &again);
			u->unbudgeted = true;
		}
		free(again.code.data);
		free(again.ir);
		free(again.assembly);
	}
	if (spare)
		LLVMDisposeModule(spare);
	return ok;
}

/* The float mode of the target's code (CgTarget.flush_f32_denormals: gfx8, whose only full-rate
 * float32 multiply-add, v_mad_f32/v_mac_f32, flushes denormals; with IEEE denormals LLVM splits
 * every multiply-add into v_mul_f32 and v_add_f32, half the rate). Set on the optimized module:
 * O3 stays IEEE's, so class mates still share it (codegen/o3_share.h), and code that is right
 * with IEEE denormals is right where they may be flushed (LLVM LangRef, denormal-fp-math: a
 * flushing mode allows flushing, it does not require it). */
static void float_mode(const CgTarget *t, LLVMModuleRef mod)
{
	if (t->flush_f32_denormals)
		cg_module_set_fn_attr(mod, "denormal-fp-math-f32", "preserve-sign,preserve-sign");
}

/* O3 and the target's code, with the text forms where asked for. */
static bool optimize_and_emit(Cg *cg, LLVMTargetMachineRef tm, const CgUnitJob *job, CgUnit *u, char *err,
			      size_t errlen)
{
	double t0 = rt_clock_s();
	bool ok = optimize_unit(cg, tm, job, u, err, errlen);
	if (ok)
		float_mode(cg->target, cg->mod);
	double t1 = rt_clock_s();
	u->optimize_s += t1 - t0;
	ok = ok && emit_code(cg, tm, job->want_ir, u, err, errlen);
	u->emit_s += rt_clock_s() - t1;
	if (ok && cg->llvm_error[0]) {
		snprintf(err, errlen, "internal error: LLVM: %s", cg->llvm_error);
		ok = false;
	}
	return ok;
}

void cg_unit_prepare(const Graph *g, const CgTarget *t, LLVMTargetMachineRef tm, int leader, const Sha256 *target_key,
		     CgUnit *u)
{
	double t0 = rt_clock_s();
	Cg cg;
	lower_unit(&cg, g, t, tm, leader, u);
	cg_unit_hashes(target_key, cg.mod, u, u->key, u->shape);
	u->keyed = true;
	cg_dispose(&cg);
	u->lower_s += rt_clock_s() - t0;
}

bool cg_unit_compile(const Graph *g, const CgTarget *t, LLVMTargetMachineRef tm, int leader, const CgUnitJob *job,
		     CgUnit *u, char *err, size_t errlen)
{
	if (u->keyed && job->cache && kc_get(job->cache, u->key, &u->code.data, &u->code.size)) {
		u->cached = true;
		return true;
	}
	double t0 = rt_clock_s();
	Cg cg;
	lower_unit(&cg, g, t, tm, leader, u);
	u->lower_s += rt_clock_s() - t0;
	bool ok = optimize_and_emit(&cg, tm, job, u, err, errlen);
	if (ok && u->keyed && job->cache)
		kc_put(job->cache, u->key, u->code.data, u->code.size);
	cg_dispose(&cg);
	return ok;
}

void cg_unit_free(CgUnit *u)
{
	free(u->kernels);
	free(u->code.data);
	free(u->ir);
	free(u->assembly);
	free(u->o3);
	memset(u, 0, sizeof *u);
}
