/* lower_lrn.h: the elemental emitter of lrn and lrn_grad (codegen/lower_lrn.c), which the
 * elementwise kernel (codegen/lower_elemwise.c) calls for each element. */
#ifndef NETC_LOWER_LRN_H
#define NETC_LOWER_LRN_H

#include "codegen/cg.h"

/* Node n's element at linear index lin, whose channel (axis 1) is c, in n's compute type. Inputs
 * are read through cg_load, which computes a fused producer at the index read. */
LLVMValueRef cg_emit_lrn(Cg *cg, const Node *n, LLVMValueRef lin, LLVMValueRef c);

#endif
