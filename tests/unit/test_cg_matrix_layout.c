/* test_cg_matrix_layout.c: the matrix instruction table (codegen/matrix_layout.c) without a GPU.
 *
 * - shapes: values per lane agree with the shape, the wave and the intrinsic's operand types;
 * - bijection: every element of A, B and C/D is held by exactly one (lane, slot), or for RDNA 3's
 *   A and B by exactly ab_copies, the lanes of one row or column 16 apart as documented;
 * - lane models: a CPU model of each instruction (tests/unit/matrix_lane_models.h: which lane
 *   and slot hold an element, as the PTX ISA's formulas and AMD's matrix instruction calculator
 *   state it) executes D = A B + C on per-lane registers; the test
 *   distributes random A, B, C tiles to the lanes with the code generator's index functions, runs
 *   the model, gathers D with them and compares with a plain GEMM (small integers exactly, random
 *   floats to 1e-12), and checks that a wrong index function is caught;
 * - LLVM: for each architecture of each row, a kernel calling the intrinsic with the row's operand
 *   types (checked against LLVM's own signature of the intrinsic) compiles, the AMD object's
 *   disassembly shows the row's mnemonic and ptxas (where installed) accepts the PTX. */
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "codegen/matrix_layout.h"
#include "codegen/target.h"
#include "tests/unit/matrix_lane_models.h"
#include "tests/unit/test_util.h"

#define MAX_LANES 64
#define MAX_SLOTS 16
#define MAX_DIM 32

typedef double Regs[MAX_LANES][MAX_SLOTS];

static bool place_ok(CgMatrixPlace p, int wave, int per_lane)
{
	return p.lane >= 0 && p.lane < wave && p.slot >= 0 && p.slot < per_lane;
}

/* The instruction as its document describes it, on per-lane registers: false where the model
 * reads outside the registers or replicated A/B values differ (the document requires them equal). */
static bool model_run(const CgMatrixInstr *mi, const CgMatrixModel *lm, Regs a, Regs b, Regs c, Regs d)
{
	for (int m = 0; m < mi->m; m++)
		for (int n = 0; n < mi->n; n++) {
			CgMatrixPlace pc = lm->d(mi, m, n);
			if (!place_ok(pc, mi->wave, mi->c_per_lane))
				return false;
			double sum = c[pc.lane][pc.slot];
			for (int k = 0; k < mi->k; k++) {
				CgMatrixPlace pa = lm->a(mi, m, k, 0), pb = lm->b(mi, k, n, 0);
				if (!place_ok(pa, mi->wave, mi->a_per_lane) || !place_ok(pb, mi->wave, mi->b_per_lane))
					return false;
				for (int copy = 1; copy < mi->ab_copies; copy++) {
					CgMatrixPlace qa = lm->a(mi, m, k, copy), qb = lm->b(mi, k, n, copy);
					if (!place_ok(qa, mi->wave, mi->a_per_lane) || !place_ok(qb, mi->wave, mi->b_per_lane) ||
					    a[qa.lane][qa.slot] != a[pa.lane][pa.slot] || b[qb.lane][qb.slot] != b[pb.lane][pb.slot])
						return false;
				}
				sum += a[pa.lane][pa.slot] * b[pb.lane][pb.slot];
			}
			d[pc.lane][pc.slot] = sum;
		}
	return true;
}

/* ---- random tiles ---- */

/* Mantissa bits the element type keeps (xf32 multiplies at tf32 precision). */
static int mantissa_bits(CgMatrixElem e)
{
	switch (e) {
	case CG_MELEM_F32: return 23;
	case CG_MELEM_XF32:
	case CG_MELEM_TF32:
	case CG_MELEM_F16: return 10;
	case CG_MELEM_BF16: return 7;
	}
	return 0;
}

/* Never zero: a small integer in ±[1, 8], or a random value exactly representable in the type. */
static double draw(CgMatrixElem e, bool integers)
{
	double sign = tu_below(2) ? -1 : 1;
	if (integers)
		return sign * (double)(1 + tu_below(8));
	int bits = mantissa_bits(e);
	double mant = 1 + (double)tu_below(1ull << bits) / (double)(1ull << bits);
	return sign * ldexp(mant, (int)tu_below(5) - 2);
}

typedef struct {
	double a[MAX_DIM][MAX_DIM], b[MAX_DIM][MAX_DIM], c[MAX_DIM][MAX_DIM];
} Tiles;

static void draw_tiles(const CgMatrixInstr *mi, bool integers, Tiles *t)
{
	for (int i = 0; i < MAX_DIM; i++)
		for (int j = 0; j < MAX_DIM; j++) {
			t->a[i][j] = draw(mi->elem, integers);
			t->b[i][j] = draw(mi->elem, integers);
			t->c[i][j] = draw(CG_MELEM_F32, integers);
		}
}

/* Distributes the tiles with the index functions (a_at may be a wrong one), runs the model,
 * gathers D; how many elements of D differ from the plain GEMM, or -1 where the model refused. */
static int run_tile(const CgMatrixInstr *mi, CgMatrixIndexFn a_at, const Tiles *t, bool exact)
{
	static Regs a, b, c, d;
	for (int lane = 0; lane < mi->wave; lane++) {
		for (int s = 0; s < mi->a_per_lane; s++) {
			CgMatrixCoord p = a_at(mi, lane, s);
			a[lane][s] = t->a[p.row][p.col];
		}
		for (int s = 0; s < mi->b_per_lane; s++) {
			CgMatrixCoord p = mi->b_at(mi, lane, s);
			b[lane][s] = t->b[p.row][p.col];
		}
		for (int s = 0; s < mi->c_per_lane; s++) {
			CgMatrixCoord p = mi->c_at(mi, lane, s);
			c[lane][s] = t->c[p.row][p.col];
		}
	}
	if (!model_run(mi, lane_model_of(mi), a, b, c, d))
		return -1;
	int wrong = 0;
	for (int lane = 0; lane < mi->wave; lane++)
		for (int s = 0; s < mi->c_per_lane; s++) {
			CgMatrixCoord p = mi->c_at(mi, lane, s);
			double want = t->c[p.row][p.col];
			for (int k = 0; k < mi->k; k++)
				want += t->a[p.row][k] * t->b[k][p.col];
			double got = d[lane][s];
			wrong += exact ? got != want : !(fabs(got - want) <= 1e-12 * fmax(1, fabs(want)));
		}
	return wrong;
}

/* A wrong A layout: the right one of the next lane. */
static CgMatrixCoord shifted_a(const CgMatrixInstr *mi, int lane, int slot)
{
	return mi->a_at(mi, (lane + 1) % mi->wave, slot);
}

static void test_lane_model(const CgMatrixInstr *mi, const char *what)
{
	CHECK(lane_model_of(mi), "%s: no lane model", what);
	if (!lane_model_of(mi))
		return;
	static Tiles t;
	for (int round = 0; round < 4; round++) {
		bool integers = round < 2;
		draw_tiles(mi, integers, &t);
		int wrong = run_tile(mi, mi->a_at, &t, integers);
		CHECK(wrong == 0, "%s: %d of D's %d elements differ from the GEMM (%s)", what, wrong, mi->m * mi->n,
		      wrong < 0 ? "the model read outside the registers or unequal copies" :
		      integers  ? "small integers, exact" : "random floats");
	}
	draw_tiles(mi, true, &t);
	CHECK(run_tile(mi, shifted_a, &t, true) != 0, "%s: the lane model misses a wrong A layout", what);
}

/* ---- shapes and bijections ---- */

static int rows_of(const CgMatrixInstr *mi, char op)
{
	return op == 'A' ? mi->m : op == 'B' ? mi->k : mi->m;
}

static int cols_of(const CgMatrixInstr *mi, char op)
{
	return op == 'A' ? mi->k : mi->n;
}

/* Every element held by `copies` (lane, slot)s; with copies > 1 lanes a group apart hold the same. */
static void check_holders(const CgMatrixInstr *mi, const char *what, char op, CgMatrixIndexFn at, int per_lane,
			  int copies)
{
	int rows = rows_of(mi, op), cols = cols_of(mi, op), count[MAX_DIM][MAX_DIM] = {{0}}, bad = 0;
	for (int lane = 0; lane < mi->wave; lane++)
		for (int s = 0; s < per_lane; s++) {
			CgMatrixCoord p = at(mi, lane, s);
			if (p.row < 0 || p.row >= rows || p.col < 0 || p.col >= cols) {
				bad++;
				continue;
			}
			count[p.row][p.col]++;
			CgMatrixCoord first = at(mi, lane % (mi->wave / copies), s);
			bad += first.row != p.row || first.col != p.col;
		}
	CHECK(bad == 0, "%s: %c: %d (lane, slot)s outside the %dx%d matrix or not a copy of the first lanes", what, op,
	      bad, rows, cols);
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
			if (count[i][j] != copies) {
				FAIL("%s: %c[%d][%d] is held %d times, want %d", what, op, i, j, count[i][j], copies);
				return;
			}
}

static void test_shape(const CgMatrixInstr *mi, const char *what)
{
	CHECK(mi->m <= MAX_DIM && mi->n <= MAX_DIM && mi->k <= MAX_DIM && mi->wave <= MAX_LANES &&
		      mi->a_per_lane <= MAX_SLOTS && mi->b_per_lane <= MAX_SLOTS && mi->c_per_lane <= MAX_SLOTS,
	      "%s: larger than the test's arrays", what);
	CHECK(mi->a_per_lane * mi->wave == mi->m * mi->k * mi->ab_copies, "%s: A per lane %d", what, mi->a_per_lane);
	CHECK(mi->b_per_lane * mi->wave == mi->k * mi->n * mi->ab_copies, "%s: B per lane %d", what, mi->b_per_lane);
	CHECK(mi->c_per_lane * mi->wave == mi->m * mi->n, "%s: C per lane %d", what, mi->c_per_lane);
	CHECK(cg_matrix_arg_values(&mi->a_type, mi->elem) == mi->a_per_lane, "%s: A's type carries %d values", what,
	      cg_matrix_arg_values(&mi->a_type, mi->elem));
	CHECK(cg_matrix_arg_values(&mi->b_type, mi->elem) == mi->b_per_lane, "%s: B's type carries %d values", what,
	      cg_matrix_arg_values(&mi->b_type, mi->elem));
	CHECK(cg_matrix_arg_values(&mi->c_type, CG_MELEM_F32) == mi->c_per_lane, "%s: C's type carries %d values", what,
	      cg_matrix_arg_values(&mi->c_type, CG_MELEM_F32));
	CHECK(cg_matrix_instr_find(mi->caps, mi->name, mi->wave) == mi, "%s: not found by its name and wave", what);
	check_holders(mi, what, 'A', mi->a_at, mi->a_per_lane, mi->ab_copies);
	check_holders(mi, what, 'B', mi->b_at, mi->b_per_lane, mi->ab_copies);
	check_holders(mi, what, 'C', mi->c_at, mi->c_per_lane, 1);
}

/* ---- LLVM: the intrinsic, its types, the instruction ---- */

static LLVMTypeRef scalar_type(LLVMContextRef ctx, CgMatrixScalar s)
{
	switch (s) {
	case CG_MSCALAR_F32: return LLVMFloatTypeInContext(ctx);
	case CG_MSCALAR_I32: return LLVMInt32TypeInContext(ctx);
	case CG_MSCALAR_F16: return LLVMHalfTypeInContext(ctx);
	case CG_MSCALAR_I16: return LLVMInt16TypeInContext(ctx);
	}
	return NULL;
}

static LLVMTypeRef arg_type(LLVMContextRef ctx, const CgMatrixArgType *t)
{
	LLVMTypeRef s = scalar_type(ctx, t->scalar);
	return t->vector == 1 ? s : LLVMVectorType(s, (unsigned)t->vector);
}

/* D: C's type, or with several C arguments a struct of them (NVIDIA). */
static LLVMTypeRef result_type(LLVMContextRef ctx, const CgMatrixInstr *mi)
{
	LLVMTypeRef c = arg_type(ctx, &mi->c_type), fields[MAX_SLOTS];
	if (mi->c_type.args == 1)
		return c;
	for (int i = 0; i < mi->c_type.args; i++)
		fields[i] = c;
	return LLVMStructTypeInContext(ctx, fields, (unsigned)mi->c_type.args, 0);
}

/* A kernel k(ptr addrspace(1) out, A args, B args, C args) storing the intrinsic's D to out;
 * NULL (with a failure counted) where LLVM's intrinsic disagrees with the row. */
static LLVMModuleRef matrix_kernel(LLVMContextRef ctx, const CgMatrixInstr *mi, const CgTarget *t, const char *what)
{
	unsigned id = LLVMLookupIntrinsicID(mi->intrinsic, strlen(mi->intrinsic));
	CHECK(id != 0, "%s: LLVM has no intrinsic %s", what, mi->intrinsic);
	if (!id)
		return NULL;
	CHECK(LLVMIntrinsicIsOverloaded(id) == mi->overloaded, "%s: %s is%s overloaded", what, mi->intrinsic,
	      mi->overloaded ? " not" : "");
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("matrix", ctx);
	LLVMSetTarget(mod, t->triple);
	LLVMTypeRef types[3] = {arg_type(ctx, &mi->a_type), arg_type(ctx, &mi->b_type), arg_type(ctx, &mi->c_type)};
	const CgMatrixArgType *ops[3] = {&mi->a_type, &mi->b_type, &mi->c_type};
	LLVMTypeRef overloads[2] = {result_type(ctx, mi), types[0]};
	LLVMValueRef decl = LLVMGetIntrinsicDeclaration(mod, id, overloads, mi->overloaded ? 2 : 0);
	LLVMTypeRef fty = LLVMGlobalGetValueType(decl);

	/* the row's types, argument by argument, against LLVM's signature */
	LLVMTypeRef params[40], want[40];
	unsigned nwant = 0;
	for (int o = 0; o < 3; o++)
		for (int i = 0; i < ops[o]->args; i++)
			want[nwant++] = types[o];
	for (int i = 0; i < mi->imm_args; i++)
		want[nwant++] = LLVMInt32TypeInContext(ctx);
	unsigned nparams = LLVMCountParamTypes(fty);
	CHECK(nparams == nwant && LLVMGetReturnType(fty) == result_type(ctx, mi),
	      "%s: %s takes %u arguments (want %u) or returns another type", what, mi->intrinsic, nparams, nwant);
	if (nparams != nwant || nparams > 40) {
		LLVMDisposeModule(mod);
		return NULL;
	}
	LLVMGetParamTypes(fty, params);
	for (unsigned i = 0; i < nparams; i++) {
		char *got = LLVMPrintTypeToString(params[i]), *exp = LLVMPrintTypeToString(want[i]);
		CHECK(params[i] == want[i], "%s: argument %u of %s is %s, the row says %s", what, i, mi->intrinsic, got, exp);
		LLVMDisposeMessage(got);
		LLVMDisposeMessage(exp);
	}

	/* the kernel: its arguments are the operands, passed straight to the intrinsic */
	LLVMTypeRef kparams[41];
	kparams[0] = LLVMPointerTypeInContext(ctx, 1);
	unsigned nvals = nwant - (unsigned)mi->imm_args;
	for (unsigned i = 0; i < nvals; i++)
		kparams[1 + i] = want[i];
	LLVMValueRef fn = LLVMAddFunction(mod, "k", LLVMFunctionType(LLVMVoidTypeInContext(ctx), kparams, 1 + nvals, 0));
	LLVMSetFunctionCallConv(fn, t->kind == CG_AMDGPU ? LLVMAMDGPUKERNELCallConv : LLVMPTXKernelCallConv);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
	LLVMValueRef args[40];
	for (unsigned i = 0; i < nvals; i++)
		args[i] = LLVMGetParam(fn, 1 + i);
	for (unsigned i = nvals; i < nwant; i++)
		args[i] = LLVMConstInt(LLVMInt32TypeInContext(ctx), 0, 0);
	LLVMValueRef r = LLVMBuildCall2(b, fty, decl, args, nwant, "d");
	LLVMBuildStore(b, r, LLVMGetParam(fn, 0));
	LLVMBuildRetVoid(b);
	LLVMDisposeBuilder(b);
	char *msg = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		FAIL("%s: the kernel does not verify: %s", what, msg);
		LLVMDisposeMessage(msg);
		LLVMDisposeModule(mod);
		return NULL;
	}
	LLVMDisposeMessage(msg);
	return mod;
}

/* What a tool says of the emitted code: llvm-objdump's disassembly of an AMD object, ptxas of PTX. */
static void check_code(const CgMatrixInstr *mi, const CgMatrixArch *on, const CgTarget *t, const char *code,
		       size_t size, const char *what)
{
	char tool[512], cmd[700];
	static char text[1 << 16];
	if (t->kind == CG_AMDGPU) {
		CHECK(tu_find_tool("llvm-objdump", tool, sizeof tool), "no llvm-objdump");
		snprintf(cmd, sizeof cmd, "%s -d --mcpu=%s", tool, on->arch);
		int rc = tu_run_on_file(cmd, code, size, text, sizeof text);
		CHECK(rc == 0 && strstr(text, on->mnemonic), "%s on %s: the disassembly lacks %s (rc %d): %.400s", what,
		      on->arch, on->mnemonic, rc, text);
		return;
	}
	CHECK(strstr(code, on->mnemonic), "%s on %s: the PTX lacks %s", what, on->arch, on->mnemonic);
	if (!tu_find_tool("ptxas", tool, sizeof tool)) {
		printf("note: no ptxas; the PTX of %s for %s is not assembled\n", mi->name, on->arch);
		return;
	}
	char as[48];
	snprintf(cmd, sizeof cmd, "%s -arch=%s -o /dev/null", tool, tu_ptx_arch(code, size, on->arch, as, sizeof as));
	int rc = tu_run_on_file(cmd, code, size, text, sizeof text);
	CHECK(rc == 0, "%s on %s: ptxas rejects the PTX: %.400s", what, on->arch, text);
}

static void test_llvm(const CgMatrixInstr *mi, const char *what)
{
	CHECK(mi->on[0].arch, "%s: no architecture has it", what);
	for (int i = 0; i < CG_MATRIX_MAX_ARCHS && mi->on[i].arch; i++) {
		const CgMatrixArch *on = &mi->on[i];
		const CgTargetInfo *ti = cg_target_info(on->arch);
		CHECK(ti && (ti->matrix & mi->caps), "%s: the target table gives %s no such matrix instructions", what,
		      on->arch);
		if (!ti || !(ti->matrix & mi->caps))
			continue;
		CgTargetOptions o = {.wave = ti->wave32 && ti->wave64 ? mi->wave : 0};
		CgTarget t;
		char err[256];
		bool ok = cg_target_lookup(on->arch, &o, &t, err, sizeof err);
		CHECK(ok && t.wave == mi->wave, "%s on %s: %s (wave %d)", what, on->arch, err, t.wave);
		if (!ok)
			continue;
		LLVMTargetMachineRef tm = cg_target_machine(&t, err, sizeof err);
		CHECK(tm, "%s on %s: %s", what, on->arch, err);
		if (!tm)
			continue;
		LLVMContextRef ctx = LLVMContextCreate();
		LLVMModuleRef mod = matrix_kernel(ctx, mi, &t, what);
		if (mod) {
			LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
			LLVMSetModuleDataLayout(mod, layout);
			LLVMDisposeTargetData(layout);
		}
		LLVMMemoryBufferRef out = NULL;
		char *msg = NULL;
		if (mod && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, t.kind == CG_AMDGPU ? LLVMObjectFile : LLVMAssemblyFile,
							       &msg, &out)) {
			FAIL("%s on %s: LLVM cannot compile it: %s", what, on->arch, msg);
			out = NULL;
		}
		LLVMDisposeMessage(msg);
		if (out) {
			size_t n = LLVMGetBufferSize(out);
			char *code = malloc(n + 1);
			memcpy(code, LLVMGetBufferStart(out), n);
			code[n] = 0;
			check_code(mi, on, &t, code, n, what);
			free(code);
			LLVMDisposeMemoryBuffer(out);
		}
		if (mod)
			LLVMDisposeModule(mod);
		LLVMContextDispose(ctx);
		LLVMDisposeTargetMachine(tm);
	}
}

int main(void)
{
	tu_start("test_cg_matrix_layout");
	int n;
	const CgMatrixInstr *table = cg_matrix_instrs(&n);
	CHECK(n >= 14, "only %d matrix instructions", n);
	for (int i = 0; i < n; i++) {
		const CgMatrixInstr *mi = &table[i];
		char what[96];
		snprintf(what, sizeof what, "%s (wave%d)", mi->name, mi->wave);
		int before = tu_failures;
		test_shape(mi, what);
		if (tu_failures == before) /* the model indexes the tiles with the row's coordinates */
			test_lane_model(mi, what);
		test_llvm(mi, what);
		printf("%s: %dx%dx%d, lanes hold %d/%d/%d values\n", what, mi->m, mi->n, mi->k, mi->a_per_lane,
		       mi->b_per_lane, mi->c_per_lane);
	}
	return tu_finish("test_cg_matrix_layout");
}
