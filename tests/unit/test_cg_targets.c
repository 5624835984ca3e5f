/* test_cg_targets.c: the target table's matrix and dot capabilities (CgMatrixCaps) against what
 * LLVM 19 selects for each architecture: on AMD a packed f16 fma becomes v_pk_fma_f16 exactly
 * where the row says packed f16; where a row says dot2 or MFMA, the intrinsic compiles to that
 * instruction (v_dot2_f32_f16, or its VOP2 form v_dot2c_f32_f16). (Compiling an intrinsic for a
 * chip without it is a fatal LLVM error, so the absence of dot2 and MFMA is not checked here.) On
 * NVIDIA, with the row's PTX version, fmas of f16 and bf16 pairs become fma.rn.f16x2 and
 * fma.rn.bf16x2 exactly where the row says packed f16 and packed bf16. The host target leaves
 * AVX512-FP16 off. */
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "codegen/targets.h"
#include "tests/unit/test_util.h"

static const char *const PK_FMA =
	"define amdgpu_kernel void @k(ptr addrspace(1) %p, <2 x half> %a, <2 x half> %b, <2 x half> %c) {\n"
	"  %r = call <2 x half> @llvm.fma.v2f16(<2 x half> %a, <2 x half> %b, <2 x half> %c)\n"
	"  store <2 x half> %r, ptr addrspace(1) %p\n  ret void\n}\n"
	"declare <2 x half> @llvm.fma.v2f16(<2 x half>, <2 x half>, <2 x half>)\n";

static const char *const DOT2 =
	"define amdgpu_kernel void @k(ptr addrspace(1) %p, <2 x half> %a, <2 x half> %b) {\n"
	"  %r = call float @llvm.amdgcn.fdot2(<2 x half> %a, <2 x half> %b, float 1.0, i1 false)\n"
	"  store float %r, ptr addrspace(1) %p\n  ret void\n}\n"
	"declare float @llvm.amdgcn.fdot2(<2 x half>, <2 x half>, float, i1)\n";

static const char *const MFMA =
	"define amdgpu_kernel void @k(ptr addrspace(1) %p, float %a, float %b) {\n"
	"  %r = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x4f32(float %a, float %b, <4 x float> zeroinitializer, i32 0, i32 0, i32 0)\n"
	"  store <4 x float> %r, ptr addrspace(1) %p\n  ret void\n}\n"
	"declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x4f32(float, float, <4 x float>, i32, i32, i32)\n";

static const char *const NV_PK_FMA =
	"define void @k(ptr %p, <2 x half> %a, <2 x half> %b, <2 x half> %c, <2 x bfloat> %x, <2 x bfloat> %y,\n"
	"               <2 x bfloat> %z) {\n"
	"  %r = call <2 x half> @llvm.fma.v2f16(<2 x half> %a, <2 x half> %b, <2 x half> %c)\n"
	"  store <2 x half> %r, ptr %p\n"
	"  %s = call <2 x bfloat> @llvm.fma.v2bf16(<2 x bfloat> %x, <2 x bfloat> %y, <2 x bfloat> %z)\n"
	"  %q = getelementptr <2 x half>, ptr %p, i64 1\n"
	"  store <2 x bfloat> %s, ptr %q\n  ret void\n}\n"
	"declare <2 x half> @llvm.fma.v2f16(<2 x half>, <2 x half>, <2 x half>)\n"
	"declare <2 x bfloat> @llvm.fma.v2bf16(<2 x bfloat>, <2 x bfloat>, <2 x bfloat>)\n";

/* The assembly LLVM makes of ir for triple, cpu and features, or NULL (the caller frees it). */
static char *assemble_for(const char *ir, const char *triple, const char *cpu, const char *features)
{
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "k");
	LLVMModuleRef m = NULL;
	char *msg = NULL, *text = NULL;
	LLVMTargetRef target;
	if (LLVMParseIRInContext(ctx, buf, &m, &msg) || LLVMGetTargetFromTriple(triple, &target, &msg)) {
		FAIL("%s: %s", cpu, msg);
	} else {
		LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, features,
								  LLVMCodeGenLevelDefault, LLVMRelocPIC, LLVMCodeModelDefault);
		LLVMMemoryBufferRef out;
		if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &msg, &out)) {
			FAIL("%s: %s", cpu, msg);
		} else {
			size_t n = LLVMGetBufferSize(out);
			text = malloc(n + 1);
			memcpy(text, LLVMGetBufferStart(out), n);
			text[n] = 0;
			LLVMDisposeMemoryBuffer(out);
		}
		LLVMDisposeTargetMachine(tm);
	}
	LLVMDisposeMessage(msg);
	if (m)
		LLVMDisposeModule(m);
	LLVMContextDispose(ctx);
	return text;
}

static char *assemble(const char *ir, const char *cpu) { return assemble_for(ir, "amdgcn-amd-amdhsa", cpu, ""); }

static bool selects(const char *ir, const char *cpu, const char *instruction)
{
	char *text = assemble(ir, cpu);
	bool found = text && strstr(text, instruction);
	free(text);
	return found;
}

int main(void)
{
	tu_start("test_cg_targets");
	LLVMInitializeAMDGPUTargetInfo();
	LLVMInitializeAMDGPUTarget();
	LLVMInitializeAMDGPUTargetMC();
	LLVMInitializeAMDGPUAsmPrinter();
	int n, amd = 0;
	const CgTargetInfo *t = cg_target_table(&n);
	for (int i = 0; i < n; i++) {
		if (strncmp(t[i].name, "gfx", 3) != 0)
			continue;
		amd++;
		bool pk = t[i].matrix & CG_MATRIX_PACKED_F16;
		CHECK(selects(PK_FMA, t[i].name, "v_pk_fma_f16") == pk, "%s: the table says packed f16 %s", t[i].name,
		      pk ? "yes" : "no");
		if (t[i].matrix & CG_MATRIX_DOT2)
			CHECK(selects(DOT2, t[i].name, "v_dot2"), "%s: the table says dot2", t[i].name); /* or v_dot2c */
		if (t[i].matrix & CG_MATRIX_MFMA)
			CHECK(selects(MFMA, t[i].name, "v_mfma_f32_16x16x4"), "%s: the table says MFMA", t[i].name);
	}
	CHECK(amd >= 10, "%d AMD rows", amd);
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	int nvidia = 0;
	for (int i = 0; i < n; i++) {
		if (strncmp(t[i].name, "sm_", 3) != 0)
			continue;
		nvidia++;
		char features[16];
		snprintf(features, sizeof features, "+ptx%d", t[i].ptx_version);
		char *text = assemble_for(NV_PK_FMA, "nvptx64-nvidia-cuda", t[i].name, features);
		bool f16 = t[i].matrix & CG_MATRIX_PACKED_F16, bf16 = t[i].matrix & CG_MATRIX_PACKED_BF16;
		CHECK(text && (strstr(text, "fma.rn.f16x2") != NULL) == f16, "%s: the table says packed f16 %s", t[i].name,
		      f16 ? "yes" : "no");
		CHECK(text && (strstr(text, "fma.rn.bf16x2") != NULL) == bf16, "%s: the table says packed bf16 %s",
		      t[i].name, bf16 ? "yes" : "no");
		free(text);
	}
	CHECK(nvidia >= 5, "%d NVIDIA rows", nvidia);
	/* the host never compiles with AVX512-FP16, which LLVM 19 miscompiles (codegen/target_host.c) */
	CgTarget host;
	CHECK(cg_target_host(&host), "the host target");
	CHECK(!strstr(host.features, "+avx512fp16"), "the host's features without +avx512fp16: %s", host.features);
	return tu_finish("test_cg_targets");
}
