/* cg_object.c: an optimized module as code: an object or assembly in memory, the object linked by
 * ld.lld into a loadable code object. */
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

/* The assembly of a copy of the module (code generation changes the module it runs on). */
bool cg_emit_assembly(Cg *cg, LLVMTargetMachineRef tm, CgOutput *out, char *err, size_t errlen)
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

