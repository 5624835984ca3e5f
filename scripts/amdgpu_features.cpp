// amdgpu_features.cpp: the subtarget features LLVM turns on for AMD GPUs, and whether they share
// a scheduling model: what decides whether targets may be ISA twins (docs/targets.md, "ISA
// classes"). Build and run with the LLVM netc builds with:
//   g++ -std=c++17 scripts/amdgpu_features.cpp -I/usr/lib/llvm-19/include -L/usr/lib/llvm-19/lib
//       -lLLVM-19 -o /tmp/amdgpu_features && /tmp/amdgpu_features gfx1200 gfx1201
// It prints the features of the first CPU, then for each other CPU the features it has and the
// first lacks (+) and the other way round (-), and whether its scheduling model is the first's.
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>

#include <cstdio>
#include <memory>
#include <string>

using namespace llvm;

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GFX... (gfx1200 gfx1201)\n", argv[0]);
		return 2;
	}
	LLVMInitializeAMDGPUTargetInfo();
	LLVMInitializeAMDGPUTargetMC();
	std::string err;
	const char *triple = "amdgcn-amd-amdhsa";
	const Target *target = TargetRegistry::lookupTarget(triple, err);
	if (!target) {
		fprintf(stderr, "no AMDGPU target in this LLVM: %s\n", err.c_str());
		return 1;
	}
	std::unique_ptr<MCSubtargetInfo> first(target->createMCSubtargetInfo(triple, argv[1], ""));
	if (!first->isCPUStringValid(argv[1])) {
		fprintf(stderr, "LLVM does not know %s\n", argv[1]);
		return 1;
	}
	for (const SubtargetFeatureKV &kv : first->getAllProcessorFeatures())
		if (first->getFeatureBits().test(kv.Value))
			printf("%s %s\n", argv[1], kv.Key);
	for (int i = 2; i < argc; i++) {
		std::unique_ptr<MCSubtargetInfo> other(target->createMCSubtargetInfo(triple, argv[i], ""));
		if (!other->isCPUStringValid(argv[i])) {
			fprintf(stderr, "LLVM does not know %s\n", argv[i]);
			return 1;
		}
		int differ = 0;
		for (const SubtargetFeatureKV &kv : first->getAllProcessorFeatures()) {
			bool a = first->getFeatureBits().test(kv.Value), b = other->getFeatureBits().test(kv.Value);
			if (a != b) {
				printf("%s %c%s\n", argv[i], b ? '+' : '-', kv.Key);
				differ++;
			}
		}
		bool same_model = &first->getSchedModel() == &other->getSchedModel();
		printf("%s: %d features differ from %s's; scheduling model %s\n", argv[i], differ, argv[1],
		       same_model ? "the same" : "another");
	}
	return 0;
}
