/* cg_core.c: the codegen driver (target machine, module, kernels, optimization, code objects:
 * what differs by target is its ops, codegen/target.h) and the small helpers every lowering uses. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/cg_util.h"
#include "codegen/link.h"
#include "codegen/lower_table.h"
#include "codegen/target.h"
#include "ir/ops.h"

#define CG_FAIL(...) (fprintf(stderr, "%s:%d: internal error: ", __FILE__, __LINE__), \
		      fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), abort())

/* ---- target machine ---- */

static LLVMTargetMachineRef make_machine(const CgTarget *t, char *err, size_t errlen)
{
	LLVMTargetRef target;
	char *msg = NULL;
	if (!t->ops->init_llvm()) {
		snprintf(err, errlen, "LLVM has no native target");
		return NULL;
	}
	if (LLVMGetTargetFromTriple(t->triple, &target, &msg)) {
		snprintf(err, errlen, "no LLVM target for %s: %s", t->triple, msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return NULL;
	}
	return LLVMCreateTargetMachine(target, t->triple, t->cpu, t->features, LLVMCodeGenLevelAggressive,
				       t->ops->reloc, LLVMCodeModelDefault);
}

/* ---- helpers ---- */

LLVMValueRef cg_i32(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i32, (unsigned long long)v, 1); }
LLVMValueRef cg_i64(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i64, (unsigned long long)v, 1); }
LLVMValueRef cg_real(Cg *cg, LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

LLVMTypeRef cg_storage_type(Cg *cg, DType t)
{
	switch (t) {
	case DT_F32: return cg->t_f32;
	case DT_F16: return cg->t_f16;
	case DT_BF16: return cg->t_bf16;
	case DT_F64: return cg->t_f64;
	case DT_I32: return cg->t_i32;
	default: CG_FAIL("bad dtype %d", (int)t);
	}
}

LLVMTypeRef cg_compute_type(Cg *cg, DType t)
{
	return t == DT_F16 || t == DT_BF16 ? cg->t_f32 : cg_storage_type(cg, t);
}

LLVMValueRef cg_ptr(Cg *cg, int id, LLVMValueRef index)
{
	const Node *n = &cg->g->node[id];
	if (n->offset < 0)
		CG_FAIL("node %d (%s) has no storage", id, n->name ? n->name : "?");
	LLVMValueRef off = cg_i64(cg, n->offset);
	LLVMValueRef base = LLVMBuildInBoundsGEP2(cg->b, cg->t_i8, cg->arena, &off, 1, "");
	return LLVMBuildInBoundsGEP2(cg->b, cg_storage_type(cg, n->dtype), base, &index, 1, "");
}

LLVMValueRef cg_load(Cg *cg, int id, LLVMValueRef index)
{
	/* a producer inside the kernel's group has no storage: its element is computed here */
	if (cg_in_group(cg, id))
		return cg_emit_member(cg, id, index);
	const Node *n = &cg->g->node[id];
	LLVMTypeRef ct = cg_compute_type(cg, n->dtype);
	if (n->op == OP_const)
		return n->dtype == DT_I32 ? LLVMConstInt(ct, (unsigned long long)(int64_t)ir_const_value(n), 1)
					  : cg_real(cg, ct, ir_const_value(n));
	LLVMTypeRef st = cg_storage_type(cg, n->dtype);
	LLVMValueRef v = LLVMBuildLoad2(cg->b, st, cg_ptr(cg, id, index), "");
	LLVMSetAlignment(v, (unsigned)dtype_size(n->dtype));
	return st == ct ? v : LLVMBuildFPExt(cg->b, v, ct, "");
}

LLVMValueRef cg_load_uniform(Cg *cg, int id, int64_t index)
{
	/* lowerings always build at the end of the current block */
	LLVMBasicBlockRef here = LLVMGetInsertBlock(cg->b);
	LLVMPositionBuilderAtEnd(cg->b, cg->entry);
	LLVMValueRef v = cg_load(cg, id, cg_i64(cg, index));
	LLVMPositionBuilderAtEnd(cg->b, here);
	return v;
}

void cg_store(Cg *cg, int id, LLVMValueRef index, LLVMValueRef value)
{
	const Node *n = &cg->g->node[id];
	LLVMValueRef v = cg_convert(cg, value, cg_storage_type(cg, n->dtype));
	LLVMValueRef st = LLVMBuildStore(cg->b, v, cg_ptr(cg, id, index));
	LLVMSetAlignment(st, (unsigned)dtype_size(n->dtype));
}

LLVMValueRef cg_local(Cg *cg, LLVMTypeRef t, const char *name)
{
	/* the entry block stays open (no terminator) until the driver closes the kernel */
	LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
	LLVMPositionBuilderAtEnd(b, cg->entry);
	LLVMValueRef v = LLVMBuildAlloca(b, t, name);
	LLVMDisposeBuilder(b);
	return v;
}

LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef t, LLVMValueRef *args, int nargs)
{
	char full[64];
	snprintf(full, sizeof full, "llvm.%s", name);
	unsigned id = LLVMLookupIntrinsicID(full, strlen(full));
	if (!id)
		CG_FAIL("no intrinsic %s", full);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, &t, 1);
	LLVMTypeRef ft = LLVMIntrinsicGetType(cg->ctx, id, &t, 1);
	return LLVMBuildCall2(cg->b, ft, fn, args, (unsigned)nargs, "");
}

CgLoop cg_for_begin(Cg *cg, LLVMValueRef lo, LLVMValueRef hi, const char *name)
{
	CgLoop l = {0};
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
	l.cond = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
	l.body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
	l.exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
	l.hi = hi;
	LLVMBuildBr(cg->b, l.cond);
	LLVMPositionBuilderAtEnd(cg->b, l.cond);
	l.i = l.var = LLVMBuildPhi(cg->b, cg->t_i64, name);
	LLVMAddIncoming(l.i, &lo, &pre, 1);
	LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, l.i, hi, ""), l.body, l.exit);
	LLVMPositionBuilderAtEnd(cg->b, l.body);
	return l;
}

void cg_for_end(Cg *cg, CgLoop *l) { cg_for_end_step(cg, l, cg_i64(cg, 1)); }

void cg_for_end_step(Cg *cg, CgLoop *l, LLVMValueRef step)
{
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
	LLVMValueRef next = LLVMBuildNSWAdd(cg->b, l->i, step, "");
	LLVMAddIncoming(l->i, &next, &latch, 1);
	LLVMBuildBr(cg->b, l->cond);
	LLVMPositionBuilderAtEnd(cg->b, l->exit);
}

LLVMValueRef cg_linear(Cg *cg, const Shape *s, LLVMValueRef *idx)
{
	LLVMValueRef lin = cg_i64(cg, 0);
	for (int d = 0; d < s->rank; d++) {
		lin = LLVMBuildNSWMul(cg->b, lin, cg_i64(cg, s->dim[d]), "");
		lin = LLVMBuildNSWAdd(cg->b, lin, idx[d], "");
	}
	return lin;
}

void cg_delinear(Cg *cg, const Shape *s, LLVMValueRef lin, LLVMValueRef *idx)
{
	for (int d = s->rank - 1; d >= 0; d--) {
		if (d == 0) {
			idx[d] = lin;
			break;
		}
		LLVMValueRef n = cg_i64(cg, s->dim[d]);
		idx[d] = LLVMBuildURem(cg->b, lin, n, "");
		lin = LLVMBuildUDiv(cg->b, lin, n, "");
	}
}

LLVMValueRef cg_broadcast_index(Cg *cg, const Shape *in, const Shape *out, LLVMValueRef *idx)
{
	LLVMValueRef lin = cg_i64(cg, 0);
	int skip = out->rank - in->rank;
	for (int d = 0; d < in->rank; d++) {
		if (in->dim[d] == 1)
			continue;
		lin = LLVMBuildNSWMul(cg->b, lin, cg_i64(cg, in->dim[d]), "");
		lin = LLVMBuildNSWAdd(cg->b, lin, idx[d + skip], "");
	}
	return lin;
}

LLVMValueRef cg_min_i64(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, a, b, ""), a, b, "");
}

LLVMValueRef cg_reassoc(LLVMValueRef v)
{
	if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v))
		LLVMSetFastMathFlags(v, LLVMGetFastMathFlags(v) | LLVMFastMathAllowReassoc | LLVMFastMathAllowContract);
	return v;
}

LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, LLVMTypeRef t)
{
	LLVMTypeRef from = LLVMTypeOf(v);
	if (from == t)
		return v;
	bool fi = LLVMGetTypeKind(from) == LLVMIntegerTypeKind, ti = LLVMGetTypeKind(t) == LLVMIntegerTypeKind;
	if (fi && ti)
		return LLVMBuildIntCast2(cg->b, v, t, 1, "");
	if (fi)
		return LLVMBuildSIToFP(cg->b, v, t, "");
	if (ti)
		return LLVMBuildFPToSI(cg->b, v, t, "");
	return LLVMBuildFPCast(cg->b, v, t, "");
}

int cg_axis(double attr, int rank)
{
	int a = (int)attr;
	return a < 0 ? a + rank : a;
}

/* ---- the fused group being emitted ---- */

typedef struct {
	int id;
	LLVMValueRef lin, value;
	LLVMBasicBlockRef block;
} MemoEntry;

/* The group being emitted: its members and the element values already emitted (valid where they
 * were built: same block, same index value). */
typedef struct {
	const Cg *cg;
	int leader, first;
	int *outputs, noutputs;
	MemoEntry *memo;
	int nmemo, memo_cap;
} GroupState;

/* KernelState below; the two live in the Cg being compiled (cg->emit) */
typedef struct KernelState KernelState;

static GroupState *group_of(const Cg *cg);

static bool is_member(const Graph *g, int id, int leader)
{
	return g->node[id].group == leader && g->node[id].programs != 0;
}

static void group_begin(Cg *cg, int leader)
{
	GroupState *cur = group_of(cg);
	const Graph *g = cg->g;
	cur->cg = cg;
	cur->leader = leader;
	cur->first = cg_group_first(g, leader);
	cur->nmemo = 0;
	cur->noutputs = 0;
	cur->outputs = malloc((size_t)(leader + 1) * sizeof *cur->outputs);
	if (!cur->outputs)
		CG_FAIL("out of memory");
	for (int j = 0; j <= leader; j++)
		if (is_member(g, j, leader) && (j == leader || ir_group_output(g, j)))
			cur->outputs[cur->noutputs++] = j;
}

static void group_end(Cg *cg)
{
	GroupState *cur = group_of(cg);
	free(cur->outputs);
	free(cur->memo);
	memset(cur, 0, sizeof *cur);
	cur->leader = -1;
}

bool cg_in_group(const Cg *cg, int id)
{
	GroupState *cur = group_of(cg);
	return cur->cg == cg && cur->leader >= 0 && id != cur->leader && cg->g->node[id].group == cur->leader;
}

bool cg_group_alone(const Cg *cg)
{
	GroupState *cur = group_of(cg);
	return cur->cg != cg || cur->leader < 0 || cur->first == cur->leader;
}

int cg_group_outputs(const Cg *cg, const int **ids)
{
	GroupState *cur = group_of(cg);
	*ids = cur->cg == cg ? cur->outputs : NULL;
	return cur->cg == cg ? cur->noutputs : 0;
}

int cg_group_first(const Graph *g, int leader)
{
	for (int j = 0; j < leader; j++)
		if (is_member(g, j, leader))
			return j;
	return leader;
}

LLVMValueRef cg_memo_get(Cg *cg, int id, LLVMValueRef lin)
{
	GroupState *cur = group_of(cg);
	LLVMBasicBlockRef here = LLVMGetInsertBlock(cg->b);
	for (int i = 0; cur->cg == cg && i < cur->nmemo; i++)
		if (cur->memo[i].id == id && cur->memo[i].lin == lin && cur->memo[i].block == here)
			return cur->memo[i].value;
	return NULL;
}

void cg_memo_put(Cg *cg, int id, LLVMValueRef lin, LLVMValueRef value)
{
	GroupState *cur = group_of(cg);
	if (cur->cg != cg)
		return;
	/* it grows: an anchor's value must find a place (a kernel emits a few hundred at most) */
	if (cur->nmemo == cur->memo_cap) {
		cur->memo_cap = cur->memo_cap ? 2 * cur->memo_cap : 64;
		cur->memo = realloc(cur->memo, (size_t)cur->memo_cap * sizeof *cur->memo);
		if (!cur->memo)
			CG_FAIL("out of memory");
	}
	cur->memo[cur->nmemo++] = (MemoEntry){id, lin, value, LLVMGetInsertBlock(cg->b)};
}

/* The node whose lowering emits the group's kernel: its anchor (always its first member) when it
 * has one, else the leader (a reduction, or the last of an elementwise group). */
static const Node *group_template(const Graph *g, int leader)
{
	const Node *first = &g->node[cg_group_first(g, leader)];
	return ir_ops[first->op].pattern == PAT_ANCHOR ? first : &g->node[leader];
}

/* ---- driver ---- */

bool cg_has_kernel(const Node *n)
{
	return (unsigned)n->op < OP_COUNT && cg_lowerings[n->op] && n->programs != 0 &&
	       (n->group < 0 || n->group == n->id);
}

void cg_fn_attr(Cg *cg, const char *key, const char *value)
{
	LLVMAttributeRef a = LLVMCreateStringAttribute(cg->ctx, key, (unsigned)strlen(key), value, (unsigned)strlen(value));
	LLVMAddAttributeAtIndex(cg->fn, LLVMAttributeFunctionIndex, a);
}

void cg_enum_attr(Cg *cg, LLVMValueRef fn, unsigned index, const char *name)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
	LLVMAddAttributeAtIndex(fn, index, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
}

/* netc keeps IEEE semantics but lets LLVM fuse multiply-adds anywhere. */
static void allow_contract(LLVMValueRef fn)
{
	for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
		for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
			if (LLVMCanValueUseFastMathFlags(i))
				LLVMSetFastMathFlags(i, LLVMGetFastMathFlags(i) | LLVMFastMathAllowContract);
}

/* The kernels compiled so far (a group's lowering may add several, cg_kernel_next) and the one
 * being emitted, whose body block the driver closes. */
struct KernelState {
	CgOutput *out;
	int cap;
	LLVMBasicBlockRef body;
	char base[64]; /* the group's first kernel's name */
};

struct CgEmission {
	GroupState group;
	KernelState kernels;
};

static GroupState *group_of(const Cg *cg)
{
	static GroupState none = {.leader = -1};
	return cg->emit ? &cg->emit->group : &none;
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
	cg->block = 0;
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
	cg->target->ops->kernel_finish(cg, k, ret, kst->body);
	allow_contract(cg->fn);
}

void cg_kernel_next(Cg *cg, int64_t grid, const char *suffix)
{
	GroupState *cur = group_of(cg);
	if (!cg->emit || !cg->emit->kernels.out || cur->leader < 0)
		CG_FAIL("cg_kernel_next outside a lowering");
	KernelState *kst = &cg->emit->kernels;
	kernel_close(cg, grid);
	char name[64];
	if (snprintf(name, sizeof name, "%s_%s", kst->base, suffix) >= (int)sizeof name)
		CG_FAIL("kernel name %s_%s too long", kst->base, suffix);
	kernel_open(cg, cur->leader, name);
}

static void emit_kernel(Cg *cg, const Node *n)
{
	KernelState *kst = &cg->emit->kernels;
	snprintf(kst->base, sizeof kst->base, "k%d_%s", n->id, ir_ops[n->op].name);
	kernel_open(cg, n->id, kst->base);
	const Node *tmpl = group_template(cg->g, n->id);
	if (!cg_lowerings[tmpl->op])
		CG_FAIL("group %s has no lowering for %s", kst->base, ir_ops[tmpl->op].name);
	group_begin(cg, n->id);
	int64_t ret = cg_lowerings[tmpl->op](cg, tmpl);
	group_end(cg);
	kernel_close(cg, ret);
}

static void cg_init(Cg *cg, const Graph *g, const CgTarget *t, LLVMTargetMachineRef tm)
{
	memset(cg, 0, sizeof *cg);
	cg->g = g;
	cg->target = t;
	cg->ctx = LLVMContextCreate();
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

bool cg_emit_file(LLVMTargetMachineRef tm, LLVMModuleRef mod, LLVMCodeGenFileType type, uint8_t **data,
		      size_t *size, char *err, size_t errlen)
{
	char *msg = NULL;
	LLVMMemoryBufferRef buf = NULL;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, type, &msg, &buf)) {
		snprintf(err, errlen, "internal error: LLVM code generation failed: %s", msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return false;
	}
	*size = LLVMGetBufferSize(buf);
	/* one byte more, a NUL: assembly (and PTX) is text */
	*data = malloc(*size + 1);
	if (*data) {
		memcpy(*data, LLVMGetBufferStart(buf), *size);
		(*data)[*size] = 0;
	}
	LLVMDisposeMemoryBuffer(buf);
	if (!*data)
		snprintf(err, errlen, "out of memory");
	return *data != NULL;
}

/* The assembly of a copy of the module (code generation changes the module it runs on). */
static bool emit_assembly(Cg *cg, LLVMTargetMachineRef tm, CgOutput *out, char *err, size_t errlen)
{
	LLVMModuleRef copy = LLVMCloneModule(cg->mod);
	uint8_t *text;
	size_t size;
	bool ok = cg_emit_file(tm, copy, LLVMAssemblyFile, &text, &size, err, errlen);
	LLVMDisposeModule(copy);
	out->assembly = ok ? (char *)text : NULL;
	return ok;
}

bool cg_emit_linked(Cg *cg, LLVMTargetMachineRef tm, bool gpu, CgOutput *out, char *err, size_t errlen)
{
	uint8_t *obj;
	size_t size;
	if (!cg_emit_file(tm, cg->mod, LLVMObjectFile, &obj, &size, err, errlen))
		return false;
	bool ok = cg_link_shared(obj, size, gpu, &out->code, &out->size, err, errlen);
	free(obj);
	return ok;
}

static void lower_all(Cg *cg, CgOutput *out)
{
	const Graph *g = cg->g;
	struct CgEmission emit = {.group = {.leader = -1}, .kernels = {.out = out}};
	cg->emit = &emit;
	for (int i = 0; i < g->nnodes; i++)
		if (cg_has_kernel(&g->node[i]))
			emit_kernel(cg, &g->node[i]);
	cg->emit = NULL;
}

bool cg_compile(const Graph *g, const CgTarget *t, bool want_ir, CgOutput *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	LLVMTargetMachineRef tm = make_machine(t, err, errlen);
	if (!tm)
		return false;
	Cg cg;
	cg_init(&cg, g, t, tm);
	lower_all(&cg, out);
	bool ok = optimize(&cg, tm, err, errlen);
	if (ok && want_ir) {
		char *ir = LLVMPrintModuleToString(cg.mod);
		out->ir = strdup(ir);
		LLVMDisposeMessage(ir);
	}
	/* where the code object is the assembly (PTX), it is emitted once */
	if (ok && want_ir && !t->ops->code_is_text)
		ok = emit_assembly(&cg, tm, out, err, errlen);
	ok = ok && t->ops->emit_code(&cg, tm, out, err, errlen);
	if (ok && want_ir && t->ops->code_is_text)
		out->assembly = strdup((const char *)out->code);
	cg_dispose(&cg);
	LLVMDisposeTargetMachine(tm);
	if (!ok)
		cg_output_free(out);
	return ok;
}

void cg_output_free(CgOutput *out)
{
	free(out->code);
	free(out->kernels);
	free(out->ir);
	free(out->assembly);
	memset(out, 0, sizeof *out);
}
