/* cg_object.c: an optimized module as code: an object or assembly in memory. */
#include <stdlib.h>
#include <string.h>

#include "codegen/link.h"
#include "codegen/target.h"

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

bool cg_emit_object(LLVMTargetMachineRef tm, LLVMModuleRef mod, CgBlob *code, char *err, size_t errlen)
{
	return cg_emit_file(tm, mod, LLVMObjectFile, &code->data, &code->size, err, errlen);
}

bool cg_emit_assembly(LLVMTargetMachineRef tm, LLVMModuleRef mod, char **text, char *err, size_t errlen)
{
	LLVMModuleRef copy = LLVMCloneModule(mod);
	uint8_t *data;
	size_t size;
	bool ok = cg_emit_file(tm, copy, LLVMAssemblyFile, &data, &size, err, errlen);
	LLVMDisposeModule(copy);
	*text = ok ? (char *)data : NULL;
	return ok;
}
